"""The shared facts a recipe names by name: its model (params/models/), its GPU type (params/gpus.yaml)
with the pool's placement and fabric, and the transport/placement types a recipe may override.

An engine's facts are its own module's data model (infersweep/engines/).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, TypeVar

from pydantic import Field, field_validator, model_validator

from infersweep.k8s_types import DNS_LABEL, is_label_value, is_quantity
from infersweep.params_files import Strict as _Strict

PositiveInt = Annotated[int, Field(gt=0)]
# A Kubernetes extended resource name (`rdma/ib`, `vpc.amazonaws.com/efa`).
RESOURCE_RE = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$")


class Model(_Strict):
    id: str = Field(description="Hugging Face repository id")
    revision: str = Field(description="commit SHA (pinned) or branch/tag")
    precision: str
    size_gib: float = Field(gt=0)
    draft_models: dict[Literal["eagle", "dflash", "dspark"], str] = Field(
        default={}, description="speculative-decoding mode -> Hugging Face id of its draft model"
    )
    # Physics check (infersweep.predict.physics); excluded from dumps so recipe hashes do not change.
    active_params_b: float | None = Field(
        default=None, gt=0, exclude=True, description="billions of parameters read per decoded token (MoE: active)"
    )

    @property
    def pinned(self) -> bool:
        return bool(re.fullmatch(r"[0-9a-f]{40}", self.revision))


# A Multus network reference: `name` or `namespace/name` of a NetworkAttachmentDefinition (\Z: no trailing newline).
NETWORK_RE = re.compile(rf"^({DNS_LABEL}/)?{DNS_LABEL}\Z")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")

N = TypeVar("N", list[str], dict[str, str])


def names_matching(names: N, pattern: re.Pattern[str], what: str) -> N:
    """`names` (a list, or a dict's keys) when `pattern` matches each; else a ValueError naming the first that
    does not ("'x' is not <what>")."""
    bad = next((n for n in names if not pattern.match(n)), None)
    if bad is not None:
        raise ValueError(f"{bad!r} is not {what}")
    return names


class Toleration(_Strict):
    key: str = Field(min_length=1)
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None

    @model_validator(mode="after")
    def _value(self) -> "Toleration":
        if self.operator == "Exists" and self.value is not None:
            raise ValueError("a toleration with operator Exists takes no value; remove value")
        return self


class Placement(_Strict):
    """Where worker pods may run and what host resources they hold (per GPU type in params/gpus.yaml,
    per recipe on top: a recipe's field replaces the GPU type's, lists and maps included).

    `gpu_product` lists values of the `nvidia.com/gpu.product` node label that NVIDIA GPU Feature Discovery
    puts on every GPU node (e.g. NVIDIA-H100-80GB-HBM3; upstream Dynamo recipes select on it the same way,
    shared/reference/dynamo/recipes/nemotron-3.5-lightning/vllm/*/deploy.yaml): rendered as required node
    affinity, so an H100 recipe can never be scheduled on a B200 node."""

    gpu_product: list[str] | None = None
    node_selector: dict[str, str] | None = None
    tolerations: list[Toleration] | None = None
    image_pull_secrets: list[str] | None = None
    memory: str | None = Field(
        default=None,
        description="host memory each worker pod requests (e.g. 64Gi); default: derived from the recipe's CPU KV tier",
    )
    shared_memory: str | None = Field(default=None, description="size of the /dev/shm tmpfs (operator default 8Gi)")

    @field_validator("memory", "shared_memory")
    @classmethod
    def _quantity(cls, v: str | None) -> str | None:
        if v is not None and not is_quantity(v, positive=True):
            raise ValueError(f"{v!r} is not a memory quantity like 64Gi")
        return v

    @field_validator("gpu_product", "image_pull_secrets")
    @classmethod
    def _label_values(cls, v: list[str] | None) -> list[str] | None:
        for item in v or []:
            if not item or not is_label_value(item):
                raise ValueError(f"{item!r} is not a label value / object name (<=63 alnum, '-', '_', '.')")
        return v

    def over(self, base: "Placement | None") -> "Placement":
        """This placement with the fields it leaves unset taken from `base`."""
        if base is None:
            return self
        return Placement(
            **{
                k: getattr(self, k) if getattr(self, k) is not None else getattr(base, k)
                for k in Placement.model_fields
            }
        )


class Transport(_Strict):
    """How prefill hands KV to decode (NIXL backend) and what the fabric needs in each worker pod.

    The cluster report's RoCE data path (seeds/000): `rdma/ib` alone was not enough; pods also needed a
    pod-native RoCE interface (a Multus/MacVLAN secondary network whose addresses come from an NV-IPAM pool)
    and UCX pinned to the right HCA. So a transport states the extra resources, the Multus networks (pod
    annotation `k8s.v1.cni.cncf.io/networks`), the container capabilities RDMA needs (IPC_LOCK: pinning
    memory for registration) and the UCX/NIXL environment (UCX_NET_DEVICES, UCX_TLS, ...)."""

    nixl_backend: Literal["UCX", "LIBFABRIC"] = "UCX"  # LIBFABRIC for AWS EFA
    resources: dict[str, PositiveInt] = Field(default={}, description="extra pod resources, e.g. rdma/ib: 1")
    env: dict[str, str] = {}
    networks: list[str] = Field(default=[], description="Multus NetworkAttachmentDefinitions: name or namespace/name")
    capabilities: list[Literal["IPC_LOCK", "SYS_RESOURCE", "NET_RAW"]] = []
    pod_annotations: dict[str, str] = {}

    @field_validator("resources")
    @classmethod
    def _resource_names(cls, v: dict[str, int]) -> dict[str, int]:
        for name in v:
            if not RESOURCE_RE.match(name) or name in ("cpu", "memory") or name.endswith("/gpu"):
                raise ValueError(f"{name!r} is not an extra resource name like rdma/ib or vpc.amazonaws.com/efa")
        return v

    @field_validator("networks")
    @classmethod
    def _networks(cls, v: list[str]) -> list[str]:
        return names_matching(v, NETWORK_RE, "a NetworkAttachmentDefinition name (name or namespace/name)")

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        return names_matching(v, ENV_NAME_RE, "an environment variable name")

    @field_validator("pod_annotations")
    @classmethod
    def _annotations(cls, v: dict[str, str]) -> dict[str, str]:
        if "k8s.v1.cni.cncf.io/networks" in v:
            raise ValueError("give Multus networks as `networks: [name, ...]`, not as a raw annotation")
        return v


class GpuType(_Strict):
    per_node: int = Field(gt=0)
    memory_gib: float = Field(gt=0)
    resource: str = "nvidia.com/gpu"
    mem_bw_tb_s: float | None = Field(
        default=None, gt=0, exclude=True, description="HBM bandwidth per GPU (physics check)"
    )
    usd_per_gpu_hour: float | None = Field(
        default=None, gt=0, exclude=True, description="price of one GPU-hour (steps.scrape cost per million tokens)"
    )
    placement: Placement | None = None
    # The pool's inter-pod data path, used by every recipe of this GPU type that moves data between pods
    # (disaggregated KV transfer, TP across nodes) and states no `transport` of its own.
    fabric: Transport | None = None
