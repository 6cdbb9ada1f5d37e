"""The DGD admission policy: the deploy step's check (infersweep/platform/dgd_policy.py) as a Kubernetes
ValidatingAdmissionPolicy, so a DGD created by anyone in the namespace (kubectl, another tool, a forged
Workflow that skips the deploy step) meets the same rules.

Optional: ValidatingAdmissionPolicy is admissionregistration.k8s.io/v1 from Kubernetes 1.30, and it and its
binding are cluster-scoped, so a cluster admin applies them (`infersweep install --out DIR` writes them to
DIR/optional/, outside the kustomization; docs/security.md). Without them the deploy step's check still holds
for every infersweep run.

Each validation is one rule of infersweep/platform/dgd_policy.py with the same meaning; tests/house/test_dgd_policy.py
evaluates these CEL expressions (cel-python, when installed) on the same forged and rendered DGDs as the Python
check and requires the same verdicts. CEL kept to the standard macros (has, all, exists, startsWith) so that
evaluator and the API server read it alike.
"""

from __future__ import annotations

import json
from typing import Any

from infersweep.platform.dgd_policy import ALLOWED_VOLUMES, APPARMOR_ANNOTATION, RDMA_CAPABILITIES, DgdPolicy

NAME = "infersweep-dgd-policy"

# The pods of the object, as a list of {spec, annotations, containers} views, for both apiVersions.
# v1beta1: spec.components[].podTemplate; v1alpha1: spec.services.<name>.extraPodSpec (+ mainContainer).
_PODS = (
    "(has(object.spec.components) ? object.spec.components.map(c, has(c.podTemplate) && has(c.podTemplate.spec)"
    " ? c.podTemplate.spec : {}) : [])"
    " + (has(object.spec.services) ? object.spec.services.map(k, has(object.spec.services[k].extraPodSpec)"
    " ? object.spec.services[k].extraPodSpec : {}) : [])"
)
_META = (
    "(has(object.spec.components) ? object.spec.components.map(c, has(c.podTemplate) && has(c.podTemplate.metadata)"
    " && has(c.podTemplate.metadata.annotations) ? c.podTemplate.metadata.annotations : {}) : [])"
    " + (has(object.spec.services) ? object.spec.services.map(k, has(object.spec.services[k].extraPodMetadata)"
    " && has(object.spec.services[k].extraPodMetadata.annotations)"
    " ? object.spec.services[k].extraPodMetadata.annotations : {}) : [])"
)


_PLAIN = (
    "(has(p.containers) ? p.containers : []) + (has(p.initContainers) ? p.initContainers : [])"
    " + (has(p.ephemeralContainers) ? p.ephemeralContainers : [])"
)


def _device(res: str) -> str:
    """CEL: the resources map `res` asks for a device (anything beyond cpu, memory, ephemeral-storage, hugepages)."""
    plain = "['cpu', 'memory', 'ephemeral-storage', 'custom']"
    return (
        f"({res}.exists(side, (side == 'limits' || side == 'requests') && "
        f"({res}[side].exists(n, !(n in {plain}) && !n.startsWith('hugepages-')) || "
        f"(has({res}[side].custom) && size({res}[side].custom) > 0))))"
    )


def _every_container(rule: str, device: str | None = None) -> str:
    """CEL: `rule` (over `c`) holds for every container of every pod, v1alpha1 main containers included;
    `device` is the CEL of "c asks for a device" where the rule uses it (v1alpha1: the service's resources)."""
    pod_rule = rule.replace("DEVICE", f"(has(c.resources) && {_device('c.resources')})")
    main_rule = rule.replace("DEVICE", f"(has(s.resources) && {_device('s.resources')})")
    return (
        f"variables.pods.all(p, ({_PLAIN}).all(c, {pod_rule}))"
        f" && variables.mains.all(s, [s.extraPodSpec.mainContainer].all(c, {main_rule}))"
    )


def _unconfined(x: str) -> str:
    return (
        f"((has({x}.seccompProfile) && {x}.seccompProfile.type == 'Unconfined') || "
        f"(has({x}.appArmorProfile) && {x}.appArmorProfile.type == 'Unconfined'))"
    )


def cel_rules(policy: DgdPolicy) -> list[tuple[str, str]]:
    """(expression, message) of each validation; an expression is true when the DGD is allowed."""
    regs = json.dumps(list(policy.image_registries))
    caps = json.dumps(list(RDMA_CAPABILITIES))
    vols = json.dumps(list(ALLOWED_VOLUMES))
    pvc = json.dumps(policy.pvc)
    sc = "(has(c.securityContext) ? c.securityContext : {})"
    added = f"(has({sc}.capabilities) && has({sc}.capabilities.add) ? {sc}.capabilities.add : [])"
    return [
        (
            "variables.pods.all(p, !(has(p.hostNetwork) && p.hostNetwork) && !(has(p.hostPID) && p.hostPID)"
            " && !(has(p.hostIPC) && p.hostIPC))",
            "a DGD pod shares no host namespace (hostNetwork, hostPID, hostIPC)",
        ),
        (
            "variables.pods.all(p, !has(p.nodeName) && !has(p.serviceAccountName) && !has(p.serviceAccount))",
            "nodeName and serviceAccountName are refused: the scheduler places pods, the operator names their account",
        ),
        (
            f"variables.pods.all(p, !has(p.volumes) || p.volumes.all(v, v.all(k, k == 'name' || k in {vols})"
            f" && (!has(v.persistentVolumeClaim) || v.persistentVolumeClaim.claimName == {pvc})))",
            f"volumes: only emptyDir and the model cache PVC {policy.pvc} (no hostPath, no other claim, no Secret)",
        ),
        (
            f"!has(object.spec.pvcs) || object.spec.pvcs.all(v, v.name == {pvc} && !(has(v.create) && v.create))",
            f"spec.pvcs: only the model cache PVC {policy.pvc}, create: false",
        ),
        (
            "!has(object.spec.services) || object.spec.services.all(k, !has(object.spec.services[k].envFromSecret)"
            f" && (!has(object.spec.services[k].volumeMounts) || object.spec.services[k].volumeMounts.all(m,"
            f" m.name == {pvc})))",
            "no Secret reaches a DGD pod (envFromSecret), and only the model cache PVC is mounted",
        ),
        (
            f"variables.pods.all(p, !has(p.securityContext) || !{_unconfined('p.securityContext')})",
            "an Unconfined seccomp or AppArmor profile is refused",
        ),
        (
            f"variables.annotations.all(a, a.all(k, !k.startsWith('{APPARMOR_ANNOTATION}')"
            " || a[k] == 'runtime/default'))",
            "AppArmor annotations: only runtime/default",
        ),
        (
            _every_container(f"has(c.image) && {regs}.exists(r, c.image.startsWith(r))"),
            f"every image must come from the cluster's registries {list(policy.image_registries)}",
        ),
        (
            _every_container(
                f"!(has({sc}.privileged) && {sc}.privileged)"
                f" && !(has({sc}.allowPrivilegeEscalation) && {sc}.allowPrivilegeEscalation)"
                f" && !(has({sc}.procMount) && {sc}.procMount != 'Default') && !{_unconfined(sc)}"
            ),
            "no privileged container, no privilege escalation, no Unmasked procMount, no Unconfined profile",
        ),
        (
            _every_container(f"{added}.all(a, a in {caps})"),
            f"capabilities.add: only {list(RDMA_CAPABILITIES)} (what an RDMA transport needs)",
        ),
        (
            _every_container(f"size({added}) == 0 || DEVICE"),
            "capabilities are added only to an engine container (one asking for a GPU or an RDMA/EFA device)",
        ),
        (
            _every_container(
                "(!has(c.ports) || c.ports.all(hp, !has(hp.hostPort) || hp.hostPort == 0))"
                " && (!has(c.env) || c.env.all(e, !has(e.valueFrom) || !has(e.valueFrom.secretKeyRef)))"
                " && (!has(c.envFrom) || c.envFrom.all(e, !has(e.secretRef)))"
            ),
            "no hostPort, and no Secret in a container's env or envFrom",
        ),
    ]


def cel_variables() -> list[tuple[str, str]]:
    """The policy's variables (evaluated in order; each may use the earlier ones)."""
    return [
        ("pods", _PODS),
        ("annotations", _META),
        (
            "mains",
            "has(object.spec.services) ? object.spec.services.filter(k, has(object.spec.services[k].extraPodSpec)"
            " && has(object.spec.services[k].extraPodSpec.mainContainer))"
            ".map(k, object.spec.services[k]) : []",
        ),
    ]


def admission_policy(settings: Any) -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy and its binding (to the settings' namespace), cluster-scoped."""
    policy = DgdPolicy.from_settings(settings)
    labels = {"app.kubernetes.io/managed-by": "infersweep"}
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": NAME, "labels": labels},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": ["nvidia.com"],
                            "apiVersions": ["v1alpha1", "v1beta1"],
                            "operations": ["CREATE", "UPDATE"],
                            "resources": ["dynamographdeployments"],
                        }
                    ]
                },
                "variables": [{"name": n, "expression": e} for n, e in cel_variables()],
                "validations": [{"expression": e, "message": m} for e, m in cel_rules(policy)],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": NAME, "labels": labels},
            "spec": {
                "policyName": NAME,
                "validationActions": ["Deny"],
                "matchResources": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": settings.namespace}}
                },
            },
        },
    ]
