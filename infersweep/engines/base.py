"""What an engine is: the typed model of its data file (params/engines/<name>.yaml, flag spellings) and the
rules that only code can state (DP/EP/TP arithmetic, invariants, how flags are built).

One class per engine (infersweep/engines/<name>.py), a subclass of `Engine`: pydantic validates the data
file against it (unknown fields are errors; an engine may tighten a field to required), and every rule is
an abstract method or property here, so an engine module that forgets one fails when the registry loads
it, naming the engine and the missing rules (infersweep.engines.registry), never by silently inheriting
another engine's behaviour.

Rules return data, not errors: a `Problem` is (field, message) and the recipe's resolution prefixes it with
the recipe file. What a rule reads of a recipe is a shape (infersweep/engines/views.py), not an import: the
engines sit below the recipe package (which calls them while it resolves a recipe).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal

from infersweep.engines.views import KvOffload, ResolvedRecipe, Speculative, Transport, Workers
from infersweep.params_files import Strict

Problem = tuple[str, str]  # (field of the recipe, what is wrong and the fix)
SpecMode = Literal["mtp", "eagle", "dflash", "dspark"]
BackendFramework = Literal["sglang", "vllm", "trtllm"]


class EngineSpeculative(Strict):
    # How the engine takes speculative decoding (one JSON config, algorithm flags, an engine-args override):
    # the engine's speculative_args renders its own style, and its module may pin `style` to it.
    style: str
    flag: str
    # mode -> the engine's own name for the method; a mode missing here is not supported by the engine.
    methods: dict[SpecMode, str]


class EngineOffload(Strict):
    # How the engine spells a CPU KV tier; which keys a recipe may use follows from the engine's offload_problem.
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


class Engine(Strict, ABC):
    """An engine: its data file's fields (below) and its rules (the abstract members).

    The field set is the same for every engine (the recipe hash covers the dump of an engine's facts, so
    it stays comparable across engines and releases); an engine's class may narrow a field's type or make
    it required. `name` is set by the engine's module and must equal its data file's name.
    """

    name: ClassVar[str]

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
    kv_router_args: list[str] = []  # what a worker needs so the KV router sees its cache (KV events)
    # what a worker needs to export the engine's own first-token / inter-token histograms (SGLang's are off by
    # default), which the validity check reads beside the client's (infersweep.results.server_figures)
    metrics_args: list[str] = []
    speculative: EngineSpeculative | None = None
    offload: EngineOffload = EngineOffload()

    # ------------------------------------------------------------ facts only code states

    @property
    @abstractmethod
    def label(self) -> str:
        """The engine's name in messages (vLLM, SGLang)."""

    @property
    @abstractmethod
    def backend_framework(self) -> BackendFramework:
        """The DGD's spec.backendFramework: the Dynamo operator knows these three backends only (enum in both
        versions of infersweep/reference/dynamo/crds/nvidia.com_dynamographdeployments.yaml) and derives the
        multinode launch flags from it; a further engine says which one its workers launch like."""

    @property
    @abstractmethod
    def dp_adds_gpus(self) -> bool:
        """Whether DP ranks add GPUs (GPUs per replica = TP x DP) or live inside the TP group (= TP)."""

    @property
    @abstractmethod
    def parser_tier(self) -> Literal["yes", "pending", "no"]:
        """Whether the engine-parser test tier runs this engine's rendered workers through its real parser."""

    @property
    @abstractmethod
    def warmup_s(self) -> float:
        """Seconds from weights loaded to serving (CUDA graphs, compilation): the experiment cost model's estimate."""

    # ------------------------------------------------------------ invariants (checked before rendering)

    @abstractmethod
    def parallelism_problem(self, w: Workers) -> Problem | None:
        """What is wrong with a role's tp/dp/ep for this engine (field relative to the role: "dp", "ep")."""

    @abstractmethod
    def offload_problem(self, off: KvOffload) -> Problem | None:
        """What is wrong with a recipe's kv_offload block for this engine."""

    @abstractmethod
    def speculative_problem(self, spec: Speculative) -> Problem | None:
        """What is wrong with a recipe's speculative block beyond the modes (params' `methods`) and drafts."""

    @abstractmethod
    def transport_problem(self, t: Transport) -> Problem | None:
        """What is wrong with a recipe's transport for this engine's KV transfer."""

    # ------------------------------------------------------------ flags (infersweep/dgd/render.py worker_args)

    @abstractmethod
    def parallelism_args(self, w: Workers) -> list[str]:
        """DP/EP flags of one role as the engine spells them."""

    @abstractmethod
    def kv_transfer_args(self, r: ResolvedRecipe) -> list[str]:
        """The KV transfer config a disaggregated prefill/decode worker gets besides prefill_args/decode_args."""

    @abstractmethod
    def offload_args(self, r: ResolvedRecipe, role: str) -> list[str]:
        """The CPU KV tier's flags for one role ("worker", "prefill", "decode")."""

    @abstractmethod
    def speculative_args(self, r: ResolvedRecipe) -> list[str]:
        """Speculative-decoding flags (the same on every role)."""

    # ------------------------------------------------------------ what the flags mean elsewhere

    @abstractmethod
    def offload_host_gib(self, r: ResolvedRecipe, w: Workers, args: list[str]) -> float:
        """Host memory (GiB) the CPU KV tier of one worker pod takes (infersweep/dgd/pod_extras.py memory request)."""

    @abstractmethod
    def publishes_kv_events(self, args: list[str], env: dict[str, str]) -> bool:
        """Whether the real Dynamo worker started with these args/env publishes KV events to the router
        (local mode's stand-in must be as strict: infersweep/local/dynamo/command_lines.py)."""

    @abstractmethod
    def aic_parallelism(self, w: Workers) -> tuple[int, int]:
        """AIConfigurator's (tp_size, attention_dp_size) for a role (infersweep/predict/target.py)."""

    def worker_env(self, args: list[str]) -> list[dict[str, Any]]:
        """Environment a worker started with these args needs that Dynamo does not set itself
        (Kubernetes env entries; `valueFrom` allowed). None by default."""
        return []


# ---------------------------------------------------------------- helpers engines share (not rules)


def inside_tp_group_problem(e: Engine, w: Workers) -> Problem | None:
    """For an engine that runs DP attention and splits experts inside the TP group (SGLang, TRT-LLM): dp and ep
    must divide TP."""
    if w.tp % w.dp:
        return "dp", (
            f"{e.label} runs DP attention inside the TP group, so dp must divide TP={w.tp}; raise tp "
            "or lower dp (GPUs per replica = TP)"
        )
    if w.tp % w.ep:
        return (
            "ep",
            f"{e.label} splits experts inside the TP group, so ep must divide TP={w.tp}; set ep to a divisor of {w.tp}",
        )
    return None


class InsideTpGroupEngine(Engine):
    """The rules SGLang and TRT-LLM share: DP attention and experts inside the TP group, no speculative_config
    key, UCX as the only KV transport, DP/EP spelled as flags, and the transfer settings in prefill_args /
    decode_args (no separate KV transfer flag)."""

    def parallelism_problem(self, w: Workers) -> Problem | None:
        return inside_tp_group_problem(self, w)

    def speculative_problem(self, spec: Speculative) -> Problem | None:
        return no_speculative_config(spec)

    def transport_problem(self, t: Transport) -> Problem | None:
        return ucx_transport_only(self, t)

    def parallelism_args(self, w: Workers) -> list[str]:
        return spelled_parallelism_args(self, w)

    def kv_transfer_args(self, r: ResolvedRecipe) -> list[str]:
        return []  # the transfer settings are in prefill_args / decode_args


def no_speculative_config(spec: Speculative) -> Problem | None:
    """The rule of an engine without a speculative config object (only vLLM's --speculative-config takes one)."""
    if spec.engine_config:
        return "speculative.engine_config", "only vLLM takes a speculative config object; remove engine_config"
    return None


def ucx_transport_only(e: Engine, t: Transport) -> Problem | None:
    """The rule of an engine whose rendered transfer backend is fixed to UCX (other NIXL backends are set
    through vLLM's NIXL connector only)."""
    if t.nixl_backend != "UCX":
        return (
            "transport.nixl_backend",
            f"{t.nixl_backend} is rendered for vLLM's NIXL connector only; use UCX for {e.name}",
        )
    return None


def spelled_parallelism_args(e: Engine, w: Workers) -> list[str]:
    """DP as `dp_flag N` plus `dp_switches`, EP as `ep_flag N` or `ep_switch`, each only when > 1."""
    args: list[str] = []
    if w.dp > 1:
        args += [e.dp_flag, str(w.dp)] if e.dp_flag else []
        args += e.dp_switches
    if w.ep > 1:
        args += [e.ep_flag, str(w.ep)] if e.ep_flag else [e.ep_switch] if e.ep_switch else []
    return args


def flag_value(args: list[str], name: str) -> str | None:
    """Value of the last `--name value` / `--name=value`, else None (argparse's last-wins)."""
    value = None
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value


def json_flag(args: list[str], name: str) -> dict[str, Any]:
    """A flag whose value is a JSON object ({} when absent or not an object)."""

    value = flag_value(args, name)
    try:
        parsed = json.loads(value) if value else {}
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
