"""Every pod a run creates is admitted by a namespace enforcing Pod Security "restricted".

The rules are the Kubernetes Pod Security Standards (https://kubernetes.io/docs/concepts/security/
pod-security-standards/, "Baseline" and "Restricted" tables, policy version v1.30+), checked on the pod
spec Argo builds from each container template: argo-workflows v4.1.2 workflow/controller/workflowpod.go
createWorkflowPod takes the pod securityContext from the template (`tmpl.SecurityContext`) or else the
workflow spec (`wfSpec.SecurityContext`), the containers from the template's `container` and
`initContainers`, and the volumes from the workflow's `volumes`, its `volumeClaimTemplates` (as PVC
volumes) and the template's own. Argo's own executor containers (init/wait) take their securityContext
from the controller's `executor.securityContext` setting; docs/cluster.md "Pod Security \"restricted\"" gives the
setting an operator applies once, it is not part of what we render.

Every rendered document is covered: the whole `infersweep install --dry-run` set (step templates,
pipelines, nightly CronWorkflows, the reaper) and one recipe's Workflow.
"""

from __future__ import annotations

import re

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.commands.install import install_set
from tests.support.paths import REPO

# Restricted: "Volume Types" row.
ALLOWED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}
# Baseline "Capabilities" row (restricted narrows `add` further to NET_BIND_SERVICE).
RESTRICTED_ADD = {"NET_BIND_SERVICE"}


def _specs(doc: dict) -> list[dict]:
    if doc["kind"] == "CronWorkflow":
        return [doc["spec"]["workflowSpec"]]
    if doc["kind"] in ("Workflow", "WorkflowTemplate"):
        return [doc["spec"]]
    return []


def pods(docs: list[dict], caller_spec: dict | None = None) -> list[tuple[str, dict]]:
    """(where, pod spec) for every container template, as workflowpod.go would build the pod."""
    out = []
    for doc in docs:
        for spec in _specs(doc):
            wf_spec = caller_spec if (doc["kind"] == "WorkflowTemplate" and "entrypoint" not in spec) else spec
            for t in spec.get("templates", []):
                if "container" not in t:
                    continue
                volumes = list((wf_spec or {}).get("volumes", [])) + list(t.get("volumes", []))
                volumes += [
                    {"name": c["metadata"]["name"], "persistentVolumeClaim": {"claimName": "x"}}
                    for c in (wf_spec or {}).get("volumeClaimTemplates", [])
                ]
                out.append(
                    (
                        f"{doc['kind']}/{doc['metadata']['name']}:{t['name']}",
                        {
                            "securityContext": t.get("securityContext") or (wf_spec or {}).get("securityContext") or {},
                            "containers": [t["container"]],
                            "initContainers": t.get("initContainers", []),
                            "volumes": volumes,
                            "hostNetwork": t.get("hostNetwork", False),
                        },
                    )
                )
    return out


def restricted_violations(pod: dict) -> list[str]:
    bad = []
    psc = pod["securityContext"]
    containers = pod["containers"] + pod["initContainers"]
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            bad.append(f"{key} (baseline: Host Namespaces)")
    for v in pod["volumes"]:
        kinds = set(v) - {"name"}
        if not kinds <= ALLOWED_VOLUMES:
            bad.append(f"volume {v['name']} of type {kinds - ALLOWED_VOLUMES} (restricted: Volume Types)")
    for c in containers:
        sc = c.get("securityContext") or {}
        name = c.get("name", "main")
        if sc.get("privileged"):
            bad.append(f"{name}: privileged (baseline: Privileged Containers)")
        if sc.get("allowPrivilegeEscalation") is not False:
            bad.append(f"{name}: allowPrivilegeEscalation must be false (restricted: Privilege Escalation)")
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            bad.append(f"{name}: capabilities must drop ALL (restricted: Capabilities)")
        if set(caps.get("add") or []) - RESTRICTED_ADD:
            bad.append(f"{name}: adds {set(caps['add']) - RESTRICTED_ADD} (restricted: Capabilities)")
        if not (
            sc.get("runAsNonRoot") is True or (psc.get("runAsNonRoot") is True and sc.get("runAsNonRoot") is not False)
        ):
            bad.append(f"{name}: runAsNonRoot must be true (restricted: Running as Non-root)")
        if sc.get("runAsUser", psc.get("runAsUser")) == 0:
            bad.append(f"{name}: runAsUser 0 (restricted: Running as Non-root user)")
        seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            bad.append(f"{name}: seccompProfile must be RuntimeDefault or Localhost (restricted: Seccomp)")
        for port in c.get("ports") or []:
            if port.get("hostPort"):
                bad.append(f"{name}: hostPort (baseline: Host Ports)")
    return bad


@pytest.fixture(scope="module")
def rendered():
    settings = load_cluster_settings()
    argo, _ = install_set(settings)
    pipeline = next(
        d for d in argo if d["kind"] == "WorkflowTemplate" and d["metadata"]["name"] == "infersweep-vllm-agg"
    )
    return argo, pipeline["spec"]


def test_every_step_pod_is_admitted_by_restricted(rendered):
    argo, pipeline_spec = rendered
    found = pods(argo, caller_spec=pipeline_spec)
    names = {w.split(":")[1] for w, _ in found}
    # the scan reaches every step (and the reaper): otherwise it proves nothing
    assert {"deploy", "aiperf-point", "publish", "teardown", "verdict", "reap"} <= names, names
    problems = {where: v for where, pod in found if (v := restricted_violations(pod))}
    assert not problems, "\n".join(f"{w}: {v}" for w, v in problems.items())


def test_the_checker_rejects_what_restricted_rejects():
    # The same pod without our securityContext (how every step rendered before) fails on each rule.
    pod = {
        "securityContext": {},
        "containers": [{"name": "main"}],
        "initContainers": [],
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
    }
    v = " ".join(restricted_violations(pod))
    for rule in ("Privilege Escalation", "Capabilities", "Running as Non-root", "Seccomp", "Volume Types"):
        assert rule in v


def test_pods_run_as_the_images_user():
    # fsGroup/runAsUser must be the USER the images are built with, or a fresh PVC is not writable.
    sec = load_cluster_settings().steps.security
    for dockerfile in sorted((REPO / "images").glob("*.Dockerfile")):
        text = dockerfile.read_text()
        user = re.findall(r"^USER\s+(\d+)", text, re.M)
        assert user == [str(sec.run_as_user)], f"{dockerfile.name}: USER {user}"
        assert f"--uid {sec.run_as_user}" in text
    assert sec.run_as_group == sec.fs_group == sec.run_as_user  # useradd's user group has the uid's number


def test_workflow_level_security_context(rendered):
    argo, pipeline_spec = rendered
    psc = pipeline_spec["securityContext"]
    assert (
        psc["runAsNonRoot"] is True and psc["fsGroup"] == 1000 and psc["seccompProfile"] == {"type": "RuntimeDefault"}
    )
    reaper = next(d for d in argo if d["metadata"]["name"] == "infersweep-reaper" and d["kind"] == "WorkflowTemplate")
    assert reaper["spec"]["securityContext"]["runAsNonRoot"] is True
