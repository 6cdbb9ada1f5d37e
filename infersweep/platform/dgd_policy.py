"""What a DGD may ask of the cluster: the check the deploy step runs before it applies one.

The pipeline takes the DGD as a workflow parameter (workflows/pipeline.py), so whoever can submit a Workflow
could hand the deploy step any pod spec, and the Dynamo operator would create it. The deploy step therefore
checks every DGD against this policy (steps/deploy.py, infersweep.platform.operations.deploy) and the install
set ships the same rules as a Kubernetes ValidatingAdmissionPolicy for everyone else (workflows/admission.py).

The rules, each a line of `violations` (and a validation of the admission policy):
  * no host namespaces (hostNetwork, hostPID, hostIPC), no nodeName (it bypasses the scheduler and the GPU
    guard), no hostPort;
  * volumes: only emptyDir and the model cache PVC of the settings (no hostPath, no other claim, no Secret);
  * no serviceAccountName / serviceAccount (the operator's own account for the component), no secret in env
    or envFrom (the HF token is the model-cache step's only: workers run HF_HUB_OFFLINE=1);
  * no privileged container, no allowPrivilegeEscalation: true, no Unconfined seccomp or AppArmor profile
    (field or annotation), no procMount Unmasked;
  * capabilities added only from what an RDMA transport needs (infersweep/recipe/facts.py Transport
    .capabilities: IPC_LOCK, SYS_RESOURCE, NET_RAW), and only on an engine container, one that asks for a
    device (a GPU, rdma/ib, vpc.amazonaws.com/efa ...); a frontend or a helper container gets none. (Not
    "only with a fabric resource": upstream GB200 recipes add IPC_LOCK for NVLink transfers without one.)
  * every image from one of the settings' registries (params/cluster.yaml trust.image_registries).

Both DGD apiVersions are walked: v1beta1 `spec.components[].podTemplate` and v1alpha1 `spec.services.X`
(`extraPodSpec` with its `mainContainer`, `extraPodMetadata`, `envFromSecret`, `volumeMounts`, `pvcs`), read
from the CRD in infersweep/reference/dynamo/crds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator

# infersweep/recipe/facts.py Transport.capabilities: what RDMA memory registration (IPC_LOCK, SYS_RESOURCE for
# the locked-memory rlimit) and raw RoCE sockets (NET_RAW) need; nothing else is ever added.
RDMA_CAPABILITIES = ("IPC_LOCK", "NET_RAW", "SYS_RESOURCE")
# Resources that are not a device's: a container asking only for these runs no engine.
PLAIN_RESOURCES = ("cpu", "memory", "ephemeral-storage")
ALLOWED_VOLUMES = ("emptyDir", "persistentVolumeClaim")
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
POLICY_ENV = "INFERSWEEP_DGD_POLICY"  # the deploy template's copy of the installed policy (JSON)


@dataclass(frozen=True)
class DgdPolicy:
    image_registries: tuple[str, ...]  # prefixes ending in '/', e.g. nvcr.io/nvidia/ai-dynamo/
    pvc: str  # the model cache PVC, the only claim a DGD may mount

    @classmethod
    def from_settings(cls, settings: Any) -> DgdPolicy:
        return cls(tuple(settings.trust.image_registries), settings.model_cache.pvc)

    def to_json(self) -> str:
        return json.dumps({"image_registries": list(self.image_registries), "pvc": self.pvc}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> DgdPolicy:
        data = json.loads(text)
        return cls(tuple(data["image_registries"]), data["pvc"])


def is_device_resource(name: str) -> bool:
    """A GPU (nvidia.com/gpu; v1alpha1 `gpu`) or a fabric device (rdma/ib, vpc.amazonaws.com/efa)."""
    return name not in PLAIN_RESOURCES and not name.startswith("hugepages-")


@dataclass
class _Pod:
    where: str
    spec: dict[str, Any]
    annotations: dict[str, Any]
    containers: list[tuple[str, dict[str, Any], bool]]  # (where, container, asks for a device)
    extra: list[str]  # findings of the apiVersion's own fields


def _device(resources: Any) -> bool:
    names: set[str] = set()
    for side in ("limits", "requests"):
        part = (resources or {}).get(side) or {}
        names |= set(part)
        names |= set(part.get("custom") or {}) if isinstance(part.get("custom"), dict) else set()
    return any(is_device_resource(n) for n in names - {"custom"})


def _containers(spec: dict[str, Any], where: str) -> list[tuple[str, dict[str, Any], bool]]:
    out = []
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(key) or []):
            out.append((f"{where}.{key}[{i}]", c or {}, _device((c or {}).get("resources"))))
    return out


def _pods(dgd: dict[str, Any], policy: DgdPolicy) -> Iterator[_Pod]:
    spec = dgd.get("spec") or {}
    for i, comp in enumerate(spec.get("components") or []):
        where = f"spec.components[{i}]"
        tmpl = comp.get("podTemplate") or {}
        pod = tmpl.get("spec") or {}
        yield _Pod(
            where,
            pod,
            (tmpl.get("metadata") or {}).get("annotations") or {},
            _containers(pod, f"{where}.podTemplate.spec"),
            [],
        )
    for pvc in spec.get("pvcs") or []:
        if pvc.get("name") != policy.pvc or pvc.get("create"):
            yield _Pod("spec.pvcs", {}, {}, [], [f"spec.pvcs: only the model cache PVC {policy.pvc}, create: false"])
    for name, svc in (spec.get("services") or {}).items():
        where = f"spec.services.{name}"
        pod = svc.get("extraPodSpec") or {}
        containers = _containers(pod, f"{where}.extraPodSpec")
        if pod.get("mainContainer"):
            # v1alpha1: the service's `resources` are the main container's (gpu, custom: the fabric's)
            containers.append(
                (f"{where}.extraPodSpec.mainContainer", pod["mainContainer"], _device(svc.get("resources")))
            )
        extra = []
        if svc.get("envFromSecret"):
            extra.append(f"{where}.envFromSecret: no Secret reaches a DGD pod (workers run from the model cache)")
        extra += [
            f"{where}.volumeMounts[{j}]: only the model cache PVC {policy.pvc}"
            for j, v in enumerate(svc.get("volumeMounts") or [])
            if v.get("name") != policy.pvc
        ]
        yield _Pod(where, pod, (svc.get("extraPodMetadata") or {}).get("annotations") or {}, containers, extra)


def _unconfined(sc: dict[str, Any]) -> bool:
    return (sc.get("seccompProfile") or {}).get("type") == "Unconfined" or (sc.get("appArmorProfile") or {}).get(
        "type"
    ) == "Unconfined"


def _container_findings(where: str, c: dict[str, Any], device: bool, policy: DgdPolicy) -> list[str]:
    bad = []
    image = c.get("image") or ""
    if not any(image.startswith(r) for r in policy.image_registries):
        bad.append(
            f"{where}.image {image!r}: not from the cluster's registries {list(policy.image_registries)} "
            "(params/cluster.yaml trust.image_registries)"
        )
    sc = c.get("securityContext") or {}
    if sc.get("privileged"):
        bad.append(f"{where}.securityContext.privileged: refused")
    if sc.get("allowPrivilegeEscalation"):
        bad.append(f"{where}.securityContext.allowPrivilegeEscalation: must be false")
    if _unconfined(sc):
        bad.append(f"{where}.securityContext: an Unconfined seccomp/AppArmor profile is refused")
    if sc.get("procMount") not in (None, "Default"):
        bad.append(f"{where}.securityContext.procMount: only Default")
    added = list((sc.get("capabilities") or {}).get("add") or [])
    beyond = [a for a in added if a not in RDMA_CAPABILITIES]
    if beyond:
        bad.append(f"{where}.securityContext.capabilities.add {beyond}: only {list(RDMA_CAPABILITIES)} (RDMA)")
    elif added and not device:
        bad.append(
            f"{where}.securityContext.capabilities.add {added}: only an engine container (one asking for a GPU "
            "or an RDMA/EFA device) gets the transport's capabilities"
        )
    for j, p in enumerate(c.get("ports") or []):
        if p.get("hostPort"):
            bad.append(f"{where}.ports[{j}].hostPort: refused")
    for j, e in enumerate(c.get("env") or []):
        if "secretKeyRef" in (e.get("valueFrom") or {}):
            bad.append(f"{where}.env[{j}] ({e.get('name')}): no Secret reaches a DGD pod")
    for j, e in enumerate(c.get("envFrom") or []):
        if "secretRef" in e:
            bad.append(f"{where}.envFrom[{j}]: no Secret reaches a DGD pod (workers run from the model cache)")
    return bad


def violations(dgd: dict[str, Any], policy: DgdPolicy) -> list[str]:
    """Every way `dgd` asks for more than infersweep renders, one line each naming the field; [] = allowed."""
    bad: list[str] = []
    for pod in _pods(dgd, policy):
        bad += pod.extra
        s, w = pod.spec, pod.where
        for key in ("hostNetwork", "hostPID", "hostIPC"):
            if s.get(key):
                bad.append(f"{w}: {key} is refused (a DGD pod shares no host namespace)")
        for key in ("nodeName", "serviceAccountName", "serviceAccount"):
            if s.get(key):
                bad.append(f"{w}: {key} is refused (the scheduler places pods; the operator names their account)")
        if _unconfined(s.get("securityContext") or {}):
            bad.append(f"{w}.securityContext: an Unconfined seccomp/AppArmor profile is refused")
        for k, v in pod.annotations.items():
            if str(k).startswith(APPARMOR_ANNOTATION) and v != "runtime/default":
                bad.append(f"{w} annotation {k}: only runtime/default")
        for j, v in enumerate(s.get("volumes") or []):
            kinds = [k for k in v if k != "name"]
            if any(k not in ALLOWED_VOLUMES for k in kinds):
                bad.append(f"{w}.volumes[{j}] ({', '.join(kinds)}): only emptyDir and the model cache PVC")
            claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
            if "persistentVolumeClaim" in v and claim != policy.pvc:
                bad.append(f"{w}.volumes[{j}]: claim {claim!r} is not the model cache PVC {policy.pvc}")
        for where, c, device in pod.containers:
            bad += _container_findings(where, c, device, policy)
    return bad
