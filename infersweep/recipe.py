"""Recipes as data: load a recipe file from params/, resolve the shared facts it names, validate it.

A recipe states only what is particular to one deployment (topology, router, workload, SLOs); the model,
engine and GPU type it names are looked up in params/models, params/engines and params/gpus.yaml so that a
fact lives once. Two more ways keep a recipe short: a `_defaults.yaml` in a recipe's folder (or any parent
folder under params/recipes) is deep-merged under every recipe there, and `workload.preset: NAME` merges
params/workloads/NAME.yaml under the recipe's workload. Every mistake is reported as one `RecipeError`
naming the file, the field and the fix, before anything is rendered or touches a cluster.
"""

from __future__ import annotations

import math
import re
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from infersweep.paths import params_dir

MAX_RECIPE_BYTES = 256 * 1024  # a recipe is a page of YAML; anything larger is a mistake or an attack
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# Shared facts are files, not Kubernetes names: dots allowed (qwen3.6-35b-a3b-fp8), slashes not.
SHARED_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
DEFAULTS_FILE = "_defaults.yaml"
# A Kubernetes extended resource name (`rdma/ib`, `vpc.amazonaws.com/efa`).
RESOURCE_RE = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$")
SEQ_DIST_RE = re.compile(r"^\d+,\d+:\d+(\.\d+)?(;\d+,\d+:\d+(\.\d+)?)*$")
SPEC_MODES_WITH_DRAFT = ("eagle", "dflash", "dspark")  # MTP drafts with the model's own heads


class RecipeError(ValueError):
    """A recipe that cannot run. The message names the file, the field and the fix."""


class _Strict(BaseModel):
    # Unknown fields are mistakes (a typo would otherwise silently fall back to a default).
    model_config = ConfigDict(extra="forbid", frozen=True)


PositiveInt = Annotated[int, Field(gt=0)]
# A trace shipped in this repository (params/workloads/*.jsonl): local mode replays it from the clone. On a
# cluster the AIPerf step must find it at that path, so it is a local-mode workload (the step says so).
PARAMS_TRACE_PREFIX = "params:"
MAX_REQUEST_RATE = 100_000.0  # requests/s; above this a typo is likelier than a benchmark

# ---------------------------------------------------------------- shared facts


class Model(_Strict):
    id: str = Field(description="Hugging Face repository id")
    revision: str = Field(description="commit SHA (pinned) or branch/tag")
    precision: str
    size_gib: float = Field(gt=0)
    draft_models: dict[Literal["eagle", "dflash", "dspark"], str] = Field(
        default={}, description="speculative-decoding mode -> Hugging Face id of its draft model")
    # Physics check (infersweep.predict.physics); excluded from dumps so recipe hashes do not change.
    active_params_b: float | None = Field(default=None, gt=0, exclude=True,
                                          description="billions of parameters read per decoded token (MoE: active)")

    @property
    def pinned(self) -> bool:
        return bool(re.fullmatch(r"[0-9a-f]{40}", self.revision))


class EngineSpeculative(_Strict):
    # How the engine takes speculative decoding: one JSON config (vLLM), algorithm flags (SGLang), or an
    # engine-args override (TRT-LLM); workflows/dgd.py renders each style.
    style: Literal["vllm-config", "sglang-flags", "trtllm-override"]
    flag: str
    # mode -> the engine's own name for the method; a mode missing here is not supported by the engine.
    methods: dict[Literal["mtp", "eagle", "dflash", "dspark"], str]


class EngineOffload(_Strict):
    # How the engine spells a CPU KV tier; which keys a recipe may use follows from which flags exist.
    cpu_gib_flag: str | None = None  # vLLM: CPU tier size in GiB per engine
    cpu_args: list[str] = []  # ...and what else the tier needs (its backend)
    # The same tier as a connector entry, for disaggregated workers whose transfer connector must stay
    # (vLLM: OffloadingConnector inside a MultiConnector next to NIXL) and the extra-config key of its size.
    cpu_connector: str | None = None
    cpu_connector_size_key: str = "cpu_bytes_to_use"
    hicache_switch: str | None = None  # SGLang: HiCache on, then ratio + write policy
    hicache_ratio_flag: str | None = None
    hicache_write_policy_flag: str | None = None
    hicache_prefill_only: bool = False  # SGLang: a PD decode server refuses HiCache


class Engine(_Strict):
    image: str
    module: str
    model_flag: str
    tp_flag: str
    working_dir: str
    prefill_args: list[str] = []
    decode_args: list[str] = []
    # vLLM's NIXL connector is one JSON flag on both sides; other engines put their transfer flags in
    # prefill_args / decode_args.
    kv_transfer_flag: str | None = None
    kv_transfer_config: dict[str, Any] | None = None
    dp_flag: str | None = None
    dp_switches: list[str] = []  # added when dp > 1 (SGLang's --enable-dp-attention)
    ep_flag: str | None = None  # EP size as a value...
    ep_switch: str | None = None  # ...or a switch whose size follows from TP x DP (vLLM)
    kv_router_args: list[str] = []  # what a worker needs so the KV router sees its cache (TRT-LLM events)
    speculative: EngineSpeculative | None = None
    offload: EngineOffload = EngineOffload()


QUANTITY_RE = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
_QUANTITY_BYTES = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
                   "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
# A Kubernetes label value / annotation-free name: what node labels and Secret names must look like.
LABEL_VALUE_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
# A Multus network reference: `name` or `namespace/name` of a NetworkAttachmentDefinition.
NETWORK_RE = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def quantity_bytes(q: str) -> float:
    """Bytes of a Kubernetes memory quantity like 128Gi (the forms QUANTITY_RE accepts)."""
    m = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", q)
    assert m, q
    return float(m.group(1)) * _QUANTITY_BYTES[m.group(2)]


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
    memory: str | None = Field(default=None, description="host memory each worker pod requests (e.g. 64Gi); "
                                                         "default: derived from the recipe's CPU KV tier")
    shared_memory: str | None = Field(default=None, description="size of the /dev/shm tmpfs (operator default 8Gi)")

    @field_validator("memory", "shared_memory")
    @classmethod
    def _quantity(cls, v: str | None) -> str | None:
        if v is not None and not QUANTITY_RE.match(v):
            raise ValueError(f"{v!r} is not a memory quantity like 64Gi")
        return v

    @field_validator("gpu_product", "image_pull_secrets")
    @classmethod
    def _label_values(cls, v: list[str] | None) -> list[str] | None:
        for item in v or []:
            if not item or len(item) > 63 or not LABEL_VALUE_RE.match(item):
                raise ValueError(f"{item!r} is not a label value / object name (<=63 alnum, '-', '_', '.')")
        return v

    def over(self, base: "Placement | None") -> "Placement":
        """This placement with the fields it leaves unset taken from `base`."""
        if base is None:
            return self
        return Placement(**{k: getattr(self, k) if getattr(self, k) is not None else getattr(base, k)
                            for k in Placement.model_fields})


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
        for n in v:
            if not NETWORK_RE.match(n):
                raise ValueError(f"{n!r} is not a NetworkAttachmentDefinition name (name or namespace/name)")
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for k in v:
            if not ENV_NAME_RE.match(k):
                raise ValueError(f"{k!r} is not an environment variable name")
        return v

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
    mem_bw_tb_s: float | None = Field(default=None, gt=0, exclude=True, description="HBM bandwidth per GPU (physics check)")
    usd_per_gpu_hour: float | None = Field(default=None, gt=0, exclude=True,
                                           description="price of one GPU-hour (steps.scrape cost per million tokens)")
    placement: Placement | None = None
    # The pool's inter-pod data path, used by every recipe of this GPU type that moves data between pods
    # (disaggregated KV transfer, TP across nodes) and states no `transport` of its own.
    fabric: Transport | None = None


# ---------------------------------------------------------------- the recipe


class Gpu(_Strict):
    type: str
    count: int = Field(gt=0, le=4096, description="GPUs the deployment needs (at max replicas when autoscaled)")


class Autoscaling(_Strict):
    # The DGD is rendered with replicas = min_replicas and a scaling adapter; an external autoscaler (KEDA,
    # HPA) owns the range. The range is recorded on the DGD as an annotation.
    min_replicas: int = Field(ge=1, le=512)
    max_replicas: int = Field(ge=1, le=512)
    metric: str = Field(default="dynamo_frontend_active_requests", description="what the autoscaler watches")
    target_per_replica: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _range(self) -> "Autoscaling":
        if self.max_replicas < self.min_replicas:
            raise ValueError(f"max_replicas {self.max_replicas} is below min_replicas {self.min_replicas}; swap them")
        return self


class Workers(_Strict):
    replicas: int = Field(ge=1, le=512)
    tp: int = Field(default=1, ge=1, le=64)
    dp: int = Field(default=1, ge=1, le=64, description="data-parallel ranks per replica (see DP/EP rules)")
    ep: int = Field(default=1, ge=1, le=64, description="expert-parallel size per replica (see DP/EP rules)")
    nodes: int = Field(default=1, ge=1, le=64, description="nodes per replica (multinode TP)")
    autoscaling: Autoscaling | None = None
    # Set by Recipe from the engine's DP rule: whether DP ranks add GPUs (vLLM) or live inside TP.
    dp_adds_gpus: bool = Field(default=False, exclude=True, repr=False)

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * (self.dp if self.dp_adds_gpus else 1)

    @property
    def max_replicas(self) -> int:
        return self.autoscaling.max_replicas if self.autoscaling else self.replicas


class Topology(_Strict):
    workers: Workers | None = None
    prefill: Workers | None = None
    decode: Workers | None = None

    @model_validator(mode="after")
    def _one_shape(self) -> "Topology":
        if self.workers and (self.prefill or self.decode):
            raise ValueError("give either `workers` (aggregated) or `prefill` + `decode` (disaggregated), not both")
        if not self.workers and not (self.prefill and self.decode):
            missing = "decode" if self.prefill else "prefill" if self.decode else "workers"
            raise ValueError(f"a disaggregated recipe needs both `prefill` and `decode`; add `{missing}`"
                             if missing != "workers" else "add `workers` (aggregated) or `prefill` + `decode`")
        return self

    @property
    def mode(self) -> Literal["agg", "disagg"]:
        return "agg" if self.workers else "disagg"

    def roles(self) -> dict[str, Workers]:
        if self.workers:
            return {"worker": self.workers}
        return {"prefill": self.prefill, "decode": self.decode}  # type: ignore[dict-item]


class Trace(_Strict):
    url: str = Field(description="https:// URL or path (inside the AIPerf step) of the trace file")
    type: Literal["mooncake_trace"] = "mooncake_trace"
    # The trace's average lengths: what local mode substitutes when it cannot replay the trace itself (a
    # download, or prompts longer than params/local.yaml max_isl), and what the sweep's ISL:OSL scaling keeps.
    avg_isl: int = Field(gt=0)
    avg_osl: int = Field(gt=0)
    # Replay the trace's own timestamps (AIPerf --fixed-schedule) instead of sending its requests as fast
    # as the point's concurrency allows: one point, at the trace's arrival times.
    fixed_schedule: bool = False
    block_size: int | None = Field(default=None, gt=0, le=4096,
                                   description="tokens per hash_id block (AIPerf --isl-block-size; Mooncake's default 512)")

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if v.startswith(PARAMS_TRACE_PREFIX):
            if not re.fullmatch(r"params:workloads/[A-Za-z0-9._-]+\.jsonl", v) or ".." in v:
                raise ValueError("a shipped trace is params:workloads/<file>.jsonl")
            return v
        if not re.fullmatch(r"(https://|/)[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]+", v):
            raise ValueError("give an https:// URL, an absolute path, or params:workloads/<file>.jsonl")
        return v

    def local_file(self, pdir: Path | None = None) -> Path | None:
        """The trace as a file on this machine, if it is one: a shipped params:workloads/ trace or a path."""
        if self.url.startswith(PARAMS_TRACE_PREFIX):
            return (pdir or params_dir()) / self.url[len("params:"):]
        return Path(self.url) if self.url.startswith("/") else None


class Prefix(_Strict):
    tokens: int = Field(gt=0, description="shared prefix length, part of the request's isl")
    count: int = Field(gt=0, le=100_000, description="how many distinct prefixes")


class MultiTurn(_Strict):
    # An integer: AIPerf 0.13 parses --conversation-turn-mean with parse_int_or_int_list
    # (aiperf/config/flags/cli_config.py, CLIConfig.conversation_turn_mean) and refuses "8.0".
    turns: int = Field(ge=1, le=1000, description="mean turns per session (a whole number, as AIPerf takes it)")
    delay_ms: float = Field(default=0, ge=0, description="mean pause between a response and the next turn")
    sessions: int | None = Field(default=None, gt=0)


class Workload(_Strict):
    """One of three kinds: synthetic (`isl` + `osl`), a mix (`seq_dist`), or a trace replay (`trace`).

    `isl`/`osl` are always set after validation: a mix fills them with its weighted means and a trace with
    its averages, so every kind has the lengths a scaled-down run and the ISL:OSL ratio need.
    """

    isl: int = Field(gt=0, le=1_048_576, description="input tokens per request (including a shared prefix)")
    osl: int = Field(gt=0, le=262_144, description="output tokens per request")
    seq_dist: str | None = Field(default=None, description="ISL,OSL:percent;... e.g. 1024,256:60;4096,512:40")
    trace: Trace | None = None
    prefix: Prefix | None = None
    multi_turn: MultiTurn | None = None
    concurrency: list[PositiveInt] = Field(min_length=1, max_length=64)
    # Open loop: requests arrive at a rate whatever the server does (AIPerf --request-rate with
    # --arrival-pattern; aiperf/config/flags/cli_config.py, CLIConfig.request_rate / arrival_pattern). A rate
    # sweep's points carry the rate; `concurrency` is then one value, the in-flight cap AIPerf keeps.
    request_rate: list[float] | None = Field(default=None, min_length=1, max_length=64,
                                             description="requests/s per point (open loop) instead of a concurrency sweep")
    # None means poisson; not a default value, so a dumped-and-reloaded recipe (experiments, exclude_none) does
    # not read as one that set arrival without request_rate
    arrival: Literal["poisson", "constant"] | None = Field(default=None, description="arrival pattern of a request_rate sweep (default poisson)")
    requests_per_concurrency: int = Field(default=10, gt=0, le=10_000)
    min_requests: int = Field(default=32, gt=0)
    warmup_requests: int = Field(default=8, ge=0)
    request_timeout_s: int = Field(default=1200, gt=0)
    max_error_rate: float = Field(default=0.0, ge=0, le=1, description="fraction of failed requests a point may have and still count")
    point_timeout_s: int = Field(default=3600, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        given = [k for k in ("seq_dist", "trace") if data.get(k) is not None]
        if len(given) > 1 or (given and ("isl" in data or "osl" in data)):
            raise ValueError("give one workload kind: `isl` + `osl`, `seq_dist`, or `trace`; not several")
        data = dict(data)
        if given == ["seq_dist"] and isinstance(data["seq_dist"], str) and SEQ_DIST_RE.match(data["seq_dist"].replace(" ", "")):
            pairs = _seq_dist_pairs(data["seq_dist"])
            total = sum(p for _, _, p in pairs)
            if abs(total - 100) > 0.01:
                raise ValueError(f"seq_dist percentages add up to {total:g}, not 100; fix the weights")
            data["isl"] = round(sum(i * p for i, _, p in pairs) / 100)
            data["osl"] = round(sum(o * p for _, o, p in pairs) / 100)
        elif given == ["seq_dist"]:
            data |= {"isl": 1, "osl": 1}  # placeholders: the seq_dist validator reports the malformed mix itself
        elif given == ["trace"] and isinstance(data["trace"], dict):
            data.setdefault("isl", data["trace"].get("avg_isl"))
            data.setdefault("osl", data["trace"].get("avg_osl"))
        return data

    @field_validator("seq_dist")
    @classmethod
    def _seq_dist(cls, v: str | None) -> str | None:
        if v is not None and not SEQ_DIST_RE.match(v.replace(" ", "")):
            raise ValueError("write it as ISL,OSL:percent;ISL,OSL:percent (e.g. 1024,256:60;4096,512:40)")
        return v.replace(" ", "") if v else v

    @field_validator("concurrency")
    @classmethod
    def _distinct(cls, v: list[int]) -> list[int]:
        if len(set(v)) != len(v):
            dup = sorted({c for c in v if v.count(c) > 1})
            raise ValueError(f"concurrency values repeat: {dup}; list each level once")
        return v

    @field_validator("request_rate")
    @classmethod
    def _rates(cls, v: list[float] | None) -> list[float] | None:
        if v is None:
            return v
        bad = [r for r in v if not (isinstance(r, (int, float)) and r == r and 0 < r <= MAX_REQUEST_RATE)]
        if bad:
            raise ValueError(f"request_rate values {bad} are not rates; give requests/s above 0 and at most {MAX_REQUEST_RATE:g}")
        if len(set(v)) != len(v):
            raise ValueError(f"request_rate values repeat: {sorted({r for r in v if v.count(r) > 1})}; list each rate once")
        return v

    @model_validator(mode="after")
    def _combinations(self) -> "Workload":
        if self.request_rate and len(self.concurrency) != 1:
            raise ValueError(f"a request_rate sweep takes one concurrency, the in-flight cap (e.g. concurrency: "
                             f"[{max(self.concurrency)}]); got {self.concurrency}")
        if self.arrival is not None and not self.request_rate:
            raise ValueError("arrival applies to a request_rate sweep; add request_rate or remove arrival")
        if self.prefix and (self.seq_dist or self.trace):
            raise ValueError("prefix sharing goes with a synthetic `isl` + `osl` workload; remove `prefix` or use isl/osl")
        if self.prefix and self.prefix.tokens >= self.isl:
            raise ValueError(f"prefix.tokens {self.prefix.tokens} must be below isl {self.isl} (the prefix is part of the input)")
        if self.multi_turn and self.trace:
            raise ValueError("a trace brings its own sessions; remove `multi_turn`")
        if self.trace and self.trace.fixed_schedule and (self.request_rate or len(self.concurrency) != 1):
            raise ValueError("trace.fixed_schedule replays the trace's timestamps: one point, so give one concurrency "
                             "(the in-flight cap) and no request_rate")
        return self

    @property
    def kind(self) -> Literal["synthetic", "seq_dist", "trace"]:
        return "trace" if self.trace else "seq_dist" if self.seq_dist else "synthetic"

    def _shape(self, isl: int, osl: int) -> dict[str, Any]:
        # AIPerf prepends the prefix prompt to a user prompt of --isl tokens: send the part after the prefix.
        out: dict[str, Any] = {}
        if self.prefix:
            prefix = max(1, round(self.prefix.tokens * isl / self.isl))
            out |= {"isl": max(1, isl - prefix), "osl": osl, "prefix_tokens": prefix, "num_prefixes": self.prefix.count}
        else:
            out |= {"isl": isl, "osl": osl}
        if self.multi_turn:
            out |= {"turns": self.multi_turn.turns, "turn_delay_ms": self.multi_turn.delay_ms,
                    "sessions": self.multi_turn.sessions}
        return {k: v for k, v in out.items() if v is not None}

    def aiperf_workload(self) -> dict[str, Any]:
        """What the benchmark-point step sends (keys of steps.aiperf_point.WORKLOAD_FLAGS + trace, trace_type)."""
        arrival = {"arrival": self.arrival or "poisson"} if self.request_rate else {}
        if self.trace:
            fixed = {"fixed_schedule": True} if self.trace.fixed_schedule else {}
            if self.trace.block_size:
                fixed["block_size"] = self.trace.block_size
            return {"trace": self.trace.url, "trace_type": self.trace.type} | fixed | arrival
        if self.seq_dist:
            shape = {"seq_dist": self.seq_dist}
            if self.multi_turn:
                shape |= {k: v for k, v in self._shape(self.isl, self.osl).items() if k not in ("isl", "osl")}
            return shape | arrival
        return self._shape(self.isl, self.osl) | arrival

    def synthetic_workload(self, isl: int, osl: int) -> dict[str, Any]:
        """The synthetic stand-in local mode runs at (scaled) `isl`/`osl`: a trace it cannot replay (see
        infersweep.local.run.local_workload) or a mix becomes its average lengths (a mix's 32K-token buckets
        do not fit a laptop); a shared prefix keeps its share of the input."""
        return self._shape(isl, osl) | ({"arrival": self.arrival or "poisson"} if self.request_rate else {})

    @property
    def load(self) -> Literal["concurrency", "request_rate"]:
        return "request_rate" if self.request_rate else "concurrency"

    def points(self) -> list[dict[str, Any]]:
        """The sweep as data: one item per concurrency level (closed loop, request_rate 0) or per rate
        (open loop at the one concurrency cap), in the recipe's order. A rate point sends
        rate x requests_per_concurrency requests (that many seconds of arrivals), at least min_requests."""
        if self.request_rate:
            cap = self.concurrency[0]
            return [{"concurrency": cap, "request_rate": r,
                     "requests": max(self.min_requests, math.ceil(r * self.requests_per_concurrency)),
                     "warmup": min(self.warmup_requests, cap * 4)} for r in self.request_rate]
        return [{"concurrency": c, "request_rate": 0, "requests": max(self.min_requests, c * self.requests_per_concurrency),
                 "warmup": min(self.warmup_requests, max(c, 1) * 4)} for c in self.concurrency]


def _seq_dist_pairs(text: str) -> list[tuple[int, int, float]]:
    pairs = []
    for item in text.replace(" ", "").split(";"):
        lengths, pct = item.split(":")
        isl, osl = lengths.split(",")
        pairs.append((int(isl), int(osl), float(pct)))
    return pairs


class Slo(_Strict):
    ttft_p50_ms: float | None = Field(default=None, gt=0, description="TTFT p50 must stay below this")
    ttft_p99_ms: float | None = Field(default=None, gt=0)
    itl_p50_ms: float | None = Field(default=None, gt=0)
    tok_s_user_min: float | None = Field(default=None, gt=0, description="output tok/s per user must reach this")


class Baseline(_Strict):
    """Performance the seed publishes for this deployment, kept to compare our runs with."""

    concurrency: PositiveInt
    ttft_p50_ms: float | None = Field(default=None, gt=0)
    output_tok_s_per_gpu: float | None = Field(default=None, gt=0)
    tok_s_per_user: float | None = Field(default=None, gt=0)
    source: str = Field(min_length=1, description="where the numbers come from")


class KvOffload(_Strict):
    """A CPU KV tier. vLLM: `cpu_gib` per engine. SGLang: HiCache `hicache_ratio` (host = ratio x GPU
    KV) and `write_policy` (write_back is the seed's recommendation; write_through streams every page)."""

    cpu_gib: float | None = Field(default=None, gt=0, le=4096)
    hicache_ratio: float | None = Field(default=None, gt=0, le=100)
    write_policy: Literal["write_back", "write_through", "write_through_selective"] | None = None


class Speculative(_Strict):
    mode: Literal["none", "mtp", "eagle", "dflash", "dspark"]
    num_tokens: int = Field(default=3, ge=1, le=16, description="draft tokens per step")
    draft_model: str | None = Field(default=None, description="Hugging Face id; default: the model's draft_models")
    # Further keys of vLLM's speculative config (e.g. upstream Lightning's attention_backend: TRITON_ATTN).
    engine_config: dict[str, str | int | float | bool] = {}


class Provenance(_Strict):
    """Which seed row or upstream recipe this recipe follows, and every deliberate difference from it.

    `differences` maps a topic (image, workload, transport, ...) to the reason we differ; it is a mapping so
    a folder's _defaults.yaml can state what all its recipes share and a recipe adds its own topics."""

    follows: str = Field(min_length=1, description="seed row or upstream recipe path")
    differences: dict[str, str] = {}


class Regression(_Strict):
    """How a nightly run is judged against its baseline (infersweep.results.regression.judge_run).

    `tolerances` maps a results metric (e.g. ttft_ms_p50, output_tok_s) to `{rel: 0.1}` (10 %),
    `{abs: 0.01}`, or null to leave it unchecked; unnamed metrics keep the defaults. A change counts only
    when it is beyond its tolerance AND more than `z` standard errors of the run-to-run noise."""

    tolerances: dict[str, dict[Literal["rel", "abs"], float] | None] = {}
    z: float = Field(default=3.0, gt=0, le=10)
    repetitions: int = Field(default=1, ge=1, le=20, description="runs per point, reduced to the median")

    @field_validator("tolerances")
    @classmethod
    def _known_metrics(cls, v: dict) -> dict:
        from infersweep.metrics import normalize_tolerances

        try:
            normalize_tolerances(v)
        except ValueError as e:
            raise ValueError(str(e)) from None
        return v

    def for_judge(self) -> dict[str, Any]:
        return {**self.tolerances, "z": self.z}


class Recipe(_Strict):
    name: str = Field(min_length=1, max_length=52, description="DNS-1123 label: lowercase letters, digits, '-'")
    description: str = ""
    status: Literal["working", "experimental"] = "working"
    model: str
    engine: Literal["vllm", "sglang", "trtllm"]
    image: str | None = None
    gpu: Gpu
    topology: Topology
    router: Literal["kv", "round-robin", "random"] = "round-robin"
    engine_args: list[str] = []
    # Environment every worker container gets besides HF_HOME/HF_HUB_OFFLINE (e.g. PYTHONHASHSEED=0, which
    # upstream Lightning workers set so prefix hashes agree across processes).
    worker_env: dict[str, str] = {}
    kv_offload: KvOffload | None = None
    speculative: Speculative | None = None
    transport: Transport | None = None
    placement: Placement | None = None
    provenance: Provenance | None = None
    workload: Workload
    slo: Slo = Slo()
    baseline: Baseline | None = None
    regression: Regression = Regression()

    @model_validator(mode="before")
    @classmethod
    def _dp_rule(cls, data: Any) -> Any:
        # DP/EP rules, per engine (checked in `resolve`, where the error can name the role's field):
        # - vLLM: each DP rank is its own engine of TP GPUs, so GPUs per replica = TP x DP; EP
        #   (--enable-expert-parallel) shards experts over all TP x DP ranks, so ep is 1 or TP x DP.
        # - SGLang: DP is DP-attention inside the TP group (--enable-dp-attention --dp N), so GPUs per
        #   replica = TP, and dp and ep must divide TP (the seed's Qwen3.6 4P+4D TP=2 DP=2 EP=2 = 16 GPUs).
        # - TRT-LLM: attention DP spans the whole TP group (--enable-attention-dp), so dp is 1 or TP and
        #   GPUs per replica = TP; ep must divide TP.
        topo = data.get("topology") if isinstance(data, dict) else None
        for role, w in (topo or {}).items() if isinstance(topo, dict) else ():
            if isinstance(w, dict) and "dp_adds_gpus" in w:
                raise ValueError(f"topology.{role}.dp_adds_gpus: unknown field (it follows from the engine); remove it")
        if isinstance(data, dict) and data.get("engine") == "vllm" and isinstance(topo, dict):
            data = dict(data)
            data["topology"] = {role: ({**w, "dp_adds_gpus": True} if isinstance(w, dict) else w)
                                for role, w in data["topology"].items()}
        return data

    @field_validator("name")
    @classmethod
    def _dns_name(cls, v: str) -> str:
        # The name becomes a DGD name, pod names and label values: it must be a DNS-1123 label and leave
        # room for the operator's suffixes (`-frontend`, `-decode-0`...), hence 52 and not 63.
        if not NAME_RE.match(v):
            raise ValueError("use lowercase letters, digits and '-', starting and ending with a letter or digit")
        return v

    @field_validator("image")
    @classmethod
    def _image(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[a-z0-9][a-z0-9._/:@-]*", v):
            raise ValueError("not a container image reference (registry/name:tag)")
        return v

    @field_validator("worker_env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for name in v:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"{name!r} is not an environment variable name (letters, digits, '_')")
            if name in ("HF_HOME", "HF_HUB_OFFLINE"):
                raise ValueError(f"{name} is set by infersweep (workers read the model cache offline); remove it")
        return v

    @field_validator("engine_args")
    @classmethod
    def _args(cls, v: list[str]) -> list[str]:
        for a in v:
            if "\n" in a or "\x00" in a:
                raise ValueError("an engine argument may not contain a newline or NUL")
        return v


class ResolvedRecipe:
    """A validated recipe together with the shared facts it names."""

    def __init__(self, recipe: Recipe, model: Model, engine: Engine, gpu_type: GpuType, path: Path | None):
        self.recipe, self.model, self.engine, self.gpu_type, self.path = recipe, model, engine, gpu_type, path

    @property
    def name(self) -> str:
        return self.recipe.name

    @property
    def image(self) -> str:
        return self.recipe.image or self.engine.image

    @cached_property
    def gpu_count(self) -> int:
        """GPUs of the deployment as rendered (an autoscaled role at its min_replicas)."""
        return sum(w.replicas * w.gpus_per_replica for w in self.recipe.topology.roles().values())

    @cached_property
    def gpu_capacity(self) -> int:
        """GPUs the deployment may claim (an autoscaled role at its max_replicas)."""
        return sum(w.max_replicas * w.gpus_per_replica for w in self.recipe.topology.roles().values())

    @property
    def needs_fabric(self) -> bool:
        """Whether data moves between worker pods: KV from prefill to decode, or TP ranks across nodes."""
        roles = self.recipe.topology.roles().values()
        return self.recipe.topology.mode == "disagg" or any(w.nodes > 1 for w in roles)

    @property
    def transport(self) -> Transport | None:
        """The recipe's own transport, else its GPU pool's fabric when the recipe moves data between pods."""
        if self.recipe.transport is not None:
            return self.recipe.transport
        return self.gpu_type.fabric if self.needs_fabric else None

    @property
    def placement(self) -> Placement:
        """The recipe's placement over its GPU type's (a field the recipe sets wins)."""
        return (self.recipe.placement or Placement()).over(self.gpu_type.placement)

    @property
    def draft_model(self) -> str | None:
        spec = self.recipe.speculative
        if not spec or spec.mode in ("none", "mtp"):
            return None
        return spec.draft_model or self.model.draft_models.get(spec.mode)  # type: ignore[arg-type]


def _format_pydantic(path: Path | str, err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            msg = "unknown field; remove it or fix its spelling"
        elif e["type"] == "missing":
            msg = "required field is missing; add it"
        elif e["type"] == "literal_error":
            msg = f"{e['msg'].replace('Input should be', 'must be one of')} (got {_short(e['input'])})"
        else:
            msg = e["msg"].removeprefix("Value error, ")
        lines.append(f"{path}: {loc}: {msg}")
    return "\n".join(lines)


_CLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: ~10x faster on the catalog


def _safe_load_no_aliases(text: str) -> Any:
    """YAML without anchors/aliases: a recipe never needs them, and aliases are how a 1 KB file
    ("billion laughs") expands into gigabytes in memory or in an error message. The event scan is cheap
    (no objects are built), so the check costs little next to the load itself."""
    for event in yaml.parse(text, Loader=_CLoader):
        if isinstance(event, yaml.AliasEvent):
            raise yaml.YAMLError(f"aliases (*{event.anchor}) are not allowed in a recipe; write the value out "
                                 f"(line {event.start_mark.line + 1})")
    return yaml.load(text, Loader=_CLoader)  # noqa: S506 (a safe loader)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _read_yaml_mapping(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise RecipeError(f"{path}: no such file")
    if path.stat().st_size > MAX_RECIPE_BYTES:
        raise RecipeError(f"{path}: file is {path.stat().st_size} bytes; a recipe is at most {MAX_RECIPE_BYTES} bytes")
    try:
        data = _safe_load_no_aliases(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise RecipeError(f"{path}: not valid YAML: {' '.join(str(e).split())}") from None
    except UnicodeDecodeError:
        raise RecipeError(f"{path}: not UTF-8 text") from None
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: the top level must be a mapping of fields (got {type(data).__name__})")
    return data


def _load_shared(kind: str, name: str, model_cls: type[BaseModel], recipe_path: Path | str, field: str, pdir: Path):
    if not isinstance(name, str) or not SHARED_NAME_RE.match(name) or ".." in name:
        raise RecipeError(f"{recipe_path}: {field}: {name!r} is not a valid {kind} name (a file in params/{kind}s/)")
    f = pdir / f"{kind}s" / f"{name}.yaml"
    if not f.is_file():
        known = sorted(p.stem for p in (pdir / f"{kind}s").glob("*.yaml"))
        raise RecipeError(f"{recipe_path}: {field}: unknown {kind} {name!r}; use one of {known} "
                          f"or add params/{kind}s/{name}.yaml")
    try:
        return model_cls.model_validate(_read_yaml_mapping(f))
    except ValidationError as e:
        raise RecipeError(_format_pydantic(f, e)) from None


def gpu_types(pdir: Path | None = None) -> dict[str, GpuType]:
    pdir = pdir or params_dir()
    raw = _read_yaml_mapping(pdir / "gpus.yaml")
    try:
        return {k: GpuType.model_validate(v) for k, v in raw.items()}
    except ValidationError as e:
        raise RecipeError(_format_pydantic(pdir / "gpus.yaml", e)) from None


def _role_field(role: str) -> str:
    return f"topology.{'workers' if role == 'worker' else role}"


def _check_parallelism(recipe: Recipe, gt: GpuType, path: Path | str) -> None:
    """GPU arithmetic per role: the engine's DP/EP rule (see Recipe._dp_rule), TP against the node size."""
    for role, w in recipe.topology.roles().items():
        field = _role_field(role)
        if recipe.engine == "vllm":
            if w.ep not in (1, w.tp * w.dp):
                raise RecipeError(f"{path}: {field}.ep: vLLM shards experts over all TP x DP ranks; set ep to 1 or "
                                  f"{w.tp * w.dp} (TP={w.tp} x DP={w.dp})")
        else:
            engine = "SGLang" if recipe.engine == "sglang" else "TRT-LLM"
            if recipe.engine == "trtllm" and w.dp not in (1, w.tp):
                raise RecipeError(f"{path}: {field}.dp: TRT-LLM attention DP spans the whole TP group; set dp to 1 "
                                  f"or {w.tp} (TP)")
            if w.tp % w.dp:
                raise RecipeError(f"{path}: {field}.dp: {engine} runs DP attention inside the TP group, so dp must "
                                  f"divide TP={w.tp}; raise tp or lower dp (GPUs per replica = TP)")
            if w.tp % w.ep:
                raise RecipeError(f"{path}: {field}.ep: {engine} splits experts inside the TP group, so ep must divide "
                                  f"TP={w.tp}; set ep to a divisor of {w.tp}")
        gpus = w.gpus_per_replica
        if gpus > gt.per_node * w.nodes:
            what = f"TP={w.tp}" + (f" x DP={w.dp}" if w.dp_adds_gpus and w.dp > 1 else "")
            raise RecipeError(f"{path}: {field}.tp: {what} needs {gpus} GPUs, larger than {w.nodes} node(s) of "
                              f"{gt.per_node} {recipe.gpu.type}; set nodes: {-(-gpus // gt.per_node)} or lower tp")
        if w.nodes > 1 and gpus % w.nodes:
            raise RecipeError(f"{path}: {field}.nodes: {gpus} GPUs per replica do not split evenly over {w.nodes} nodes")
        if w.nodes > 1 and gpus // w.nodes > gt.per_node:
            raise RecipeError(f"{path}: {field}.nodes: {gpus // w.nodes} GPUs per node exceed {gt.per_node}; raise nodes")
        a = w.autoscaling
        if a and w.replicas != a.min_replicas:
            raise RecipeError(f"{path}: {field}.replicas: an autoscaled role starts at autoscaling.min_replicas; "
                              f"set replicas: {a.min_replicas}")


def _check_features(r: ResolvedRecipe, path: Path | str) -> None:
    """Options that only some engines have, and what they need."""
    recipe, engine = r.recipe, r.engine
    off = recipe.kv_offload
    if off:
        if off.cpu_gib is not None and not engine.offload.cpu_gib_flag:
            hint = "use hicache_ratio (+ write_policy) for SGLang" if engine.offload.hicache_switch else "remove kv_offload"
            raise RecipeError(f"{path}: kv_offload.cpu_gib: {recipe.engine} has no CPU offload size; {hint}")
        for key in ("hicache_ratio", "write_policy"):
            if getattr(off, key) is not None and not engine.offload.hicache_switch:
                hint = "use cpu_gib for vLLM" if engine.offload.cpu_gib_flag else "remove kv_offload"
                raise RecipeError(f"{path}: kv_offload.{key}: HiCache is SGLang's; {recipe.engine} has none; {hint}")
        if off.cpu_gib is None and off.hicache_ratio is None:
            need = "cpu_gib" if engine.offload.cpu_gib_flag else "hicache_ratio"
            raise RecipeError(f"{path}: kv_offload: say how big the CPU tier is; add {need}")
    spec = recipe.speculative
    if spec and spec.mode != "none":
        methods = engine.speculative.methods if engine.speculative else {}
        if spec.mode not in methods:
            raise RecipeError(f"{path}: speculative.mode: {recipe.engine} has no {spec.mode!r} decoding here; use one of "
                              f"{sorted(methods) + ['none']} or add it to params/engines/{recipe.engine}.yaml")
        if spec.mode in SPEC_MODES_WITH_DRAFT and not r.draft_model:
            raise RecipeError(f"{path}: speculative.draft_model: {spec.mode} needs a draft model; set "
                              f"speculative.draft_model or draft_models.{spec.mode} in params/models/{recipe.model}.yaml")
        if spec.engine_config and (not engine.speculative or engine.speculative.style != "vllm-config"):
            raise RecipeError(f"{path}: speculative.engine_config: only vLLM takes a speculative config object; "
                              "remove engine_config")
        if spec.mode == "mtp" and spec.draft_model:
            raise RecipeError(f"{path}: speculative.draft_model: MTP drafts with the model's own heads; remove draft_model")
    for role, w in recipe.topology.roles().items():
        a = w.autoscaling
        if a and a.target_per_replica is None:
            raise RecipeError(f"{path}: {_role_field(role)}.autoscaling.target_per_replica: KEDA scales on a target "
                              "per replica (the seed's 16 active requests per worker); add it")
        if a and not a.metric.startswith("dynamo_frontend_"):
            raise RecipeError(f"{path}: {_role_field(role)}.autoscaling.metric: the ScaledObject queries this DGD's "
                              f"frontend; use a dynamo_frontend_* metric (got {a.metric!r})")
    t = recipe.transport
    if t and t.nixl_backend != "UCX" and not engine.kv_transfer_config:
        raise RecipeError(f"{path}: transport.nixl_backend: {t.nixl_backend} is rendered for vLLM's NIXL connector "
                          f"only; use UCX for {recipe.engine}")
    if t and t.nixl_backend != "UCX" and recipe.topology.mode == "agg":
        raise RecipeError(f"{path}: transport.nixl_backend: an aggregated recipe moves no KV between workers; remove it")
    b = recipe.baseline
    if b and b.concurrency not in recipe.workload.concurrency:
        raise RecipeError(f"{path}: baseline.concurrency: {b.concurrency} is not in workload.concurrency; add it so "
                          "the sweep measures the published point")


def resolve(recipe: Recipe, path: Path | str = "<recipe>", pdir: Path | None = None) -> ResolvedRecipe:
    pdir = pdir or params_dir()
    model = _load_shared("model", recipe.model, Model, path, "model", pdir)
    engine = _load_shared("engine", recipe.engine, Engine, path, "engine", pdir)
    gpus = gpu_types(pdir)
    if recipe.gpu.type not in gpus:
        raise RecipeError(f"{path}: gpu.type: unknown GPU type {recipe.gpu.type!r}; use one of {sorted(gpus)} "
                          "or add it to params/gpus.yaml")
    gt = gpus[recipe.gpu.type]
    _check_parallelism(recipe, gt, path)
    resolved = ResolvedRecipe(recipe, model, engine, gt, Path(path) if isinstance(path, (str, Path)) else None)
    if resolved.gpu_capacity != recipe.gpu.count:
        parts = " + ".join(f"{w.max_replicas} {r} x {w.gpus_per_replica} GPU" for r, w in recipe.topology.roles().items())
        scaled = " at max replicas" if resolved.gpu_capacity != resolved.gpu_count else ""
        raise RecipeError(f"{path}: gpu.count: the topology uses {resolved.gpu_capacity} GPUs{scaled} ({parts}) but "
                          f"gpu.count is {recipe.gpu.count}; make them agree")
    for role, w in recipe.topology.roles().items():
        # Weights alone must fit the replica's GPUs (the KV cache needs room on top).
        if model.size_gib > 0.9 * w.gpus_per_replica * gt.memory_gib:
            raise RecipeError(f"{path}: {_role_field(role)}.tp: {model.id} needs {model.size_gib:g} GiB of weights but "
                              f"{w.gpus_per_replica} {recipe.gpu.type} hold {w.gpus_per_replica * gt.memory_gib:g} GiB; raise tp")
    _check_features(resolved, path)
    return resolved


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _with_workload_preset(data: dict[str, Any], path: Path | str, pdir: Path) -> dict[str, Any]:
    w = data.get("workload")
    if not isinstance(w, dict) or "preset" not in w:
        return data
    name = w["preset"]
    if not isinstance(name, str) or not SHARED_NAME_RE.match(name) or ".." in name:
        raise RecipeError(f"{path}: workload.preset: {name!r} is not a workload name (a file in params/workloads/)")
    f = pdir / "workloads" / f"{name}.yaml"
    if not f.is_file():
        known = sorted(p.stem for p in (pdir / "workloads").glob("*.yaml"))
        raise RecipeError(f"{path}: workload.preset: unknown workload {name!r}; use one of {known} "
                          f"or add params/workloads/{name}.yaml")
    own = {k: v for k, v in w.items() if k != "preset"}
    return {**data, "workload": _deep_merge(_read_yaml_mapping(f), own)}


def parse_recipe(data: Any, path: Path | str = "<recipe>", pdir: Path | None = None) -> ResolvedRecipe:
    pdir = pdir or params_dir()
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: the top level must be a mapping of fields (got {type(data).__name__})")
    data = _with_workload_preset(data, path, pdir)
    try:
        recipe = Recipe.model_validate(data)
    except ValidationError as e:
        raise RecipeError(_format_pydantic(path, e)) from None
    return resolve(recipe, path, pdir)


def folder_defaults(path: Path, pdir: Path | None = None) -> dict[str, Any]:
    """The `_defaults.yaml` files from params/recipes down to the recipe's folder, merged (nearer wins)."""
    root = ((pdir or params_dir()) / "recipes").resolve()
    folder = path.resolve().parent
    if folder != root and root not in folder.parents:
        return {}  # a recipe file outside the catalog stands alone
    chain = [folder, *[p for p in folder.parents if p == root or root in p.parents]]
    merged: dict[str, Any] = {}
    for d in reversed(chain):
        if (d / DEFAULTS_FILE).is_file():
            merged = _deep_merge(merged, _read_yaml_mapping(d / DEFAULTS_FILE))
    return merged


def recipe_data(path: Path, pdir: Path | None = None) -> dict[str, Any]:
    """A recipe file's fields with its folder defaults merged under them (what `recipes show` prints)."""
    own = _read_yaml_mapping(path)
    merged = _deep_merge(folder_defaults(path, pdir), own)
    return {k: merged[k] for k in own} | merged  # the recipe's own order first


def find_recipe(name: str, pdir: Path | None = None) -> Path | None:
    for p in all_recipe_paths(pdir):
        if p.stem == name:
            return p
    return None


def load_recipe(ref: str | Path, pdir: Path | None = None) -> ResolvedRecipe:
    """Load a recipe by file path or by name (a file <name>.yaml anywhere under params/recipes)."""
    pdir = pdir or params_dir()
    path = Path(ref)
    if not path.suffix and not path.exists():
        candidate = find_recipe(str(ref), pdir) if NAME_RE.match(str(ref)) else None
        if candidate is None:
            raise RecipeError(f"{ref}: no recipe file or recipe name; `infersweep recipes` lists the names")
        path = candidate
    data = recipe_data(path, pdir)
    r = parse_recipe(data, path, pdir)
    if _in_catalog(path, pdir) and path.stem != r.name:  # names are looked up by file name
        raise RecipeError(f"{path}: name: {r.name!r} differs from the file name; rename the file to {r.name}.yaml")
    return r


def _in_catalog(path: Path, pdir: Path) -> bool:
    root = (pdir / "recipes").resolve()
    return root in path.resolve().parents


def all_recipe_paths(pdir: Path | None = None) -> list[Path]:
    pdir = pdir or params_dir()
    return sorted(p for p in (pdir / "recipes").rglob("*.yaml") if p.name != DEFAULTS_FILE)
