"""Issue 42, High 1 and 6/7: a forged DGD is refused before anything is applied, by the deploy step and by the
shipped ValidatingAdmissionPolicy alike; every DGD infersweep renders is allowed, its pods meet Pod Security
"baseline" except the stated RDMA capability exemption, and none carries a Secret.

The forged DGDs are the reviewer's: hostNetwork, hostPID, a hostPath of `/`, privileged, another
ServiceAccount, an image from another registry, capabilities beyond RDMA's, the HF token as envFrom. On the
old code `deploy` applied every one of them as given (the recording adapter's `applied` list)."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from infersweep.cluster_settings import load_cluster_settings
from infersweep.dgd import deployable_dgd
from infersweep.platform import operations
from infersweep.platform.dgd_policy import DgdPolicy, violations
from infersweep.platform.operations import DeployRequest
from infersweep.recipe import all_recipe_paths, load_recipe
from tests.support.paths import REPO
from workflows.admission import admission_policy

RECIPE = "qwen3-32b-fp8-vllm-agg"
from tests.support.recording_platform import RecordingPlatform

RDMA_RECIPE = "lightning-vllm-disagg-h200-dspark"  # transport capabilities IPC_LOCK + SYS_RESOURCE


@pytest.fixture(scope="module")
def settings():
    return load_cluster_settings()


@pytest.fixture(scope="module")
def policy(settings):
    return DgdPolicy.from_settings(settings)


def _dgd(settings, api="v1beta1", recipe=RECIPE):
    return deployable_dgd(load_recipe(recipe), settings, api_version=api)


def _pod(dgd):
    if "components" in dgd["spec"]:
        return dgd["spec"]["components"][-1]["podTemplate"]["spec"]
    return list(dgd["spec"]["services"].values())[-1]["extraPodSpec"]


def _main(dgd):
    pod = _pod(dgd)
    return pod["containers"][0] if "containers" in pod else pod["mainContainer"]


def _forge(settings, api, how):
    dgd = copy.deepcopy(_dgd(settings, api))
    how(dgd)
    return dgd


FORGED = {
    "hostNetwork": lambda d: _pod(d).update(hostNetwork=True),
    "hostPID": lambda d: _pod(d).update(hostPID=True),
    "hostPath /": lambda d: _pod(d).setdefault("volumes", []).append({"name": "root", "hostPath": {"path": "/"}}),
    "another PVC": lambda d: (
        _pod(d).setdefault("volumes", []).append({"name": "x", "persistentVolumeClaim": {"claimName": "someone-elses"}})
    ),
    "privileged": lambda d: _main(d).setdefault("securityContext", {}).update(privileged=True),
    "escalation": lambda d: _main(d).setdefault("securityContext", {}).update(allowPrivilegeEscalation=True),
    "SYS_ADMIN": lambda d: _main(d).setdefault("securityContext", {}).update(capabilities={"add": ["SYS_ADMIN"]}),
    "foreign ServiceAccount": lambda d: _pod(d).update(serviceAccountName="infersweep-launcher"),
    "nodeName": lambda d: _pod(d).update(nodeName="gpu-node-7"),
    "image elsewhere": lambda d: _main(d).update(image="docker.io/attacker/evil:latest"),
    "HF token envFrom": lambda d: _main(d).setdefault("envFrom", []).append({"secretRef": {"name": "hf-token-secret"}}),
    "secretKeyRef": lambda d: (
        _main(d)
        .setdefault("env", [])
        .append({"name": "T", "valueFrom": {"secretKeyRef": {"name": "infersweep-s3", "key": "k"}}})
    ),
    "unconfined seccomp": lambda d: _pod(d).update(securityContext={"seccompProfile": {"type": "Unconfined"}}),
}
API_VERSIONS = ("v1beta1", "v1alpha1")


@pytest.mark.parametrize("api", API_VERSIONS)
@pytest.mark.parametrize("what", sorted(FORGED))
def test_deploy_refuses_a_forged_dgd_and_applies_nothing(settings, policy, monkeypatch, what, api):
    fake = RecordingPlatform()
    monkeypatch.setattr(operations, "get_platform", lambda: fake)
    forged = _forge(settings, api, FORGED[what])
    with pytest.raises(operations.DgdRefused, match="refused DynamoGraphDeployment"):
        operations.deploy(DeployRequest("ns", dgd_text=yaml.safe_dump(forged), run_id="r1"), policy=policy)
    assert fake.applied == []


def test_deploy_step_takes_its_policy_from_the_template_env(settings, monkeypatch, tmp_path):
    """The installed deploy template carries the policy (env): a stricter installed registry list refuses the
    catalog's own image, whatever the DGD parameter says."""
    fake = RecordingPlatform()
    monkeypatch.setattr(operations, "get_platform", lambda: fake)
    monkeypatch.setenv("INFERSWEEP_DGD_POLICY", DgdPolicy(("registry.example/only/",), "model-cache").to_json())
    with pytest.raises(operations.DgdRefused, match="registry.example/only/"):
        operations.deploy(DeployRequest("ns", dgd_text=yaml.safe_dump(_dgd(settings)), run_id="r1"))
    # and the re-deploy from the saved file (the points' ensure-deployed) is checked too
    saved = tmp_path / "dgd.yaml"
    saved.write_text(yaml.safe_dump(operations.for_run(_dgd(settings), "r1")))
    with pytest.raises(operations.DgdRefused):
        operations.deploy(DeployRequest("ns", dgd_file=str(saved), ensure=True, model="m"))
    assert fake.applied == []


def test_the_deploy_templates_pin_the_installed_policy(settings):
    from workflows.install_set import install_set

    argo, _ = install_set(settings)
    by_name = {d["metadata"]["name"]: d for d in argo}
    want = DgdPolicy.from_settings(settings).to_json()
    for name, container_of in (
        ("infersweep-deploy", lambda t: t["container"]),
        ("infersweep-wait-ready", lambda t: t["container"]),
        ("infersweep-aiperf-point", lambda t: t["initContainers"][0]),
    ):
        tmpl = by_name[name]["spec"]["templates"][0]
        env = {e["name"]: e.get("value") for e in container_of(tmpl).get("env", [])}
        assert env["INFERSWEEP_DGD_POLICY"] == want, name
        assert "INFERSWEEP_DGD_POLICY" not in {p["name"] for p in tmpl.get("inputs", {}).get("parameters", [])}


def _all_rendered(settings):
    for p in all_recipe_paths():
        r = load_recipe(p)
        for api in API_VERSIONS:
            yield f"{r.name}-{api}", deployable_dgd(r, settings, api_version=api)


def test_every_rendered_dgd_is_allowed(settings, policy):
    bad = {name: violations(d, policy) for name, d in _all_rendered(settings)}
    assert {k: v for k, v in bad.items() if v} == {}
    assert len(bad) >= 100


# Pod Security Standards (kubernetes.io/docs/concepts/security/pod-security-standards, v1.30+) "Baseline"
# capabilities row: what may be added without an exemption.
BASELINE_ADD = {
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
}


def _pods_of(dgd):
    spec = dgd["spec"]
    for c in spec.get("components") or []:
        pod = c["podTemplate"]["spec"]
        yield c["type"], pod, pod["containers"], c
    for svc in (spec.get("services") or {}).values():
        yield svc["componentType"], svc["extraPodSpec"], [svc["extraPodSpec"]["mainContainer"]], svc


def test_dgd_pods_meet_baseline_with_only_the_rdma_exemption(settings):
    for name, dgd in _all_rendered(settings):
        for kind, pod, containers, comp in _pods_of(dgd):
            assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", name
            for c in containers:
                sc = c["securityContext"]
                assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"], name
                beyond = set(sc["capabilities"].get("add", [])) - BASELINE_ADD
                # the stated exemption (docs/security.md): RDMA transports' workers only
                assert beyond <= {"IPC_LOCK", "SYS_RESOURCE", "NET_RAW"}, name
                if beyond:
                    assert kind != "frontend" and load_recipe(name.rsplit("-", 1)[0]).transport.capabilities
                resources = c.get("resources") or comp.get("resources")
                assert resources and resources.get("requests"), f"{name} {kind}: no resources"


def test_no_dgd_pod_gets_a_secret(settings):
    for name, dgd in _all_rendered(settings):
        text = yaml.safe_dump(dgd)
        assert settings.hf_token_secret not in text and "secretRef" not in text and "envFromSecret" not in text, name


# ------------------------------------------------------------------------------- the admission policy
def _cel_python() -> str | None:
    """An interpreter with cel-python: $INFERSWEEP_CEL_PYTHON, else the checkov side environment's."""
    for cand in (os.environ.get("INFERSWEEP_CEL_PYTHON"), str(REPO / ".venv-checkov" / "bin" / "python")):
        if cand and Path(cand).exists():
            ok = subprocess.run([cand, "-c", "import celpy"], capture_output=True).returncode == 0
            if ok:
                return cand
    return None


def _cel(vap: dict, objects: list[dict]) -> list[list]:
    python = _cel_python()
    if python is None or shutil.which(python) is None and not Path(python).exists():
        pytest.skip("no interpreter with cel-python (pip install cel-python; INFERSWEEP_CEL_PYTHON=...)")
    data = {
        "variables": [[v["name"], v["expression"]] for v in vap["spec"]["variables"]],
        "validations": [v["expression"] for v in vap["spec"]["validations"]],
        "objects": objects,
    }
    out = subprocess.run(
        [python, str(REPO / "tests" / "support" / "cel_eval.py")],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_the_admission_policy_is_bound_to_the_namespace_and_covers_both_apis(settings):
    vap, binding = admission_policy(settings)
    rule = vap["spec"]["matchConstraints"]["resourceRules"][0]
    assert rule["resources"] == ["dynamographdeployments"] and set(rule["apiVersions"]) == set(API_VERSIONS)
    assert vap["spec"]["failurePolicy"] == "Fail" and binding["spec"]["validationActions"] == ["Deny"]
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": settings.namespace
    }


def test_the_admission_policy_cel_agrees_with_the_deploy_check(settings, policy):
    """Each forged DGD is refused by at least one validation and every rendered one passes all of them: the
    same verdicts as infersweep.platform.dgd_policy.violations, evaluated with cel-python."""
    vap = admission_policy(settings)[0]
    forged = [(f"{w}-{api}", _forge(settings, api, FORGED[w])) for w in sorted(FORGED) for api in API_VERSIONS]
    rendered = list(_all_rendered(settings))
    rdma = [(f"{RDMA_RECIPE}-{a}", _dgd(settings, a, RDMA_RECIPE)) for a in API_VERSIONS]

    # capabilities on the frontend (no device): the Python check refuses it, so must the policy
    def caps_on_frontend(d):
        pod = d["spec"]["components"][0]["podTemplate"]["spec"] if "components" in d["spec"] else None
        c = pod["containers"][0] if pod else d["spec"]["services"]["Frontend"]["extraPodSpec"]["mainContainer"]
        c["securityContext"]["capabilities"]["add"] = ["IPC_LOCK"]

    forged += [(f"frontend-caps-{a}", _forge(settings, a, caps_on_frontend)) for a in API_VERSIONS]
    objects = forged + rendered + rdma
    results = _cel(vap, [o for _, o in objects])
    for (name, obj), verdicts in zip(objects, results, strict=True):
        errors = [v for v in verdicts if v is not True and v is not False]
        assert not errors, f"{name}: {errors[:2]}"
        allowed = all(v is True for v in verdicts)
        assert allowed == (not violations(obj, policy)), f"{name}: CEL {verdicts}, Python {violations(obj, policy)}"
    assert all(violations(o, policy) for _, o in forged)


def test_install_out_ships_the_admission_policy_outside_the_kustomization(settings, tmp_path):
    from infersweep.commands.install import ADMISSION_FILE, write_admission_policy

    f = write_admission_policy(tmp_path, settings)
    assert f == tmp_path / ADMISSION_FILE
    docs = list(yaml.safe_load_all(f.read_text()))
    assert [d["kind"] for d in docs] == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
    assert docs[0] == admission_policy(settings)[0]
