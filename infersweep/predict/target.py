"""Map a recipe onto AIConfigurator's database, or say exactly why it cannot be.

AIConfigurator (0.12.0) estimates from kernels measured per (system, backend, backend version) and
states what it covers in its support matrix (aiconfigurator_core/systems/support_matrix/<system>.csv,
one row per HuggingFace id x backend x version x mode with PASS / FAIL / HW_INCOMPATIBLE). A recipe is
modelled when its GPU type has a system, its engine is a backend, the model's checkpoint (or a checkpoint
with the same architecture, PROXIES, with our weight precision set explicitly) has a PASS row for that system, backend and mode, and
nothing it does lies outside the estimator (draft-model speculative decoding, NVFP4 on Hopper).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from infersweep.predict import aic
from infersweep.recipe import ResolvedRecipe
from infersweep.recipe.models import seq_dist_pairs

# Our GPU types (params/gpus.yaml) -> AIConfigurator systems (aiconfigurator_core/systems/*.yaml).
# All cluster GPUs here are SXM/NVL boards; PCIe variants would be separate types.
SYSTEMS = {"H100": "h100_sxm", "H200": "h200_sxm", "B200": "b200_sxm", "GB200": "gb200"}
HOPPER = ("h100_sxm", "h200_sxm")


@dataclass(frozen=True)
class Proxy:
    """A database checkpoint that stands for ours: same config.json architecture and sizes (compared in
    aiconfigurator_core/model_configs/), our weight precision set through cli_estimate's quant modes."""

    model_path: str
    why: str
    quant: tuple[tuple[str, str], ...] = ()


PROXIES = {
    # Fine-tuning changes no kernel.
    "meta-llama/Llama-3.1-8B-Instruct": Proxy("meta-llama/Meta-Llama-3.1-8B", "same architecture (instruct tune)"),
    # model_configs: nvidia--Qwen3.6-35B-A3B-NVFP4 and Qwen--Qwen3.5-35B-A3B have the same
    # Qwen3_5MoeForConditionalGeneration text config (40 layers, hidden 2048, 256 experts, 8 active, linear
    # attention every 3 of 4 layers); the matrix has the BF16 checkpoint, ours is FP8 (128x128 blocks).
    "Qwen/Qwen3.6-35B-A3B-FP8": Proxy(
        "Qwen/Qwen3.5-35B-A3B",
        "same architecture as Qwen3.5-35B-A3B, FP8-block weights",
        (("gemm_quant_mode", "fp8_block"), ("moe_quant_mode", "fp8_block")),
    ),
    # model_configs: the Lightning and Nemotron-3-Nano NemotronH configs agree in every size (52 layers,
    # hidden 2688, 128 experts, 6 active, Mamba heads 64); both BF16.
    "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16": Proxy(
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "same NemotronH architecture as Nemotron-3-Nano-30B-A3B"
    ),
}


@dataclass
class Worker:
    """One role's engine as AIConfigurator parameterises it (cli_estimate's tp/attention_dp/moe args)."""

    replicas: int
    tp_size: int
    attention_dp_size: int = 1
    moe_tp_size: int | None = None
    moe_ep_size: int | None = None

    def kwargs(self) -> dict[str, Any]:
        """AIConfigurator's parallelism keywords, as named here."""
        return {k: getattr(self, k) for k in ("tp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")}

    def label(self) -> str:
        s = f"TP={self.tp_size}"
        if self.attention_dp_size > 1:
            s += f" attnDP={self.attention_dp_size}"
        if self.moe_ep_size and self.moe_ep_size > 1:
            s += f" EP={self.moe_ep_size}"
        return s


@dataclass
class Target:
    """Where a recipe lands in AIConfigurator's database."""

    model_path: str
    system: str
    backend: str
    version: str
    mode: str  # "agg" | "disagg"
    precision: str
    isl: int
    osl: int
    prefix: int
    workers: dict[str, Worker]  # role -> worker ("worker" for agg, "prefill" + "decode" for disagg)
    notes: list[str] = field(default_factory=list)
    quant: dict[str, str] = field(default_factory=dict)  # cli_estimate quant modes a proxy needs

    @property
    def database(self) -> str:
        return f"AIConfigurator {aic.aic_version()} {self.system} {self.backend} {self.version}"


@dataclass
class Unsupported:
    reason: str


def workload_lengths(r: ResolvedRecipe) -> tuple[int, int, int, list[str]]:
    """(isl, osl, prefix, notes): what the estimate assumes about request lengths."""
    w = r.recipe.workload
    notes = []
    if w.trace is not None:
        notes.append(f"trace replay modelled at its average lengths ({w.trace.avg_isl}/{w.trace.avg_osl})")
        isl, osl = w.trace.avg_isl, w.trace.avg_osl
    elif w.seq_dist:
        pairs = seq_dist_pairs(w.seq_dist)
        total = sum(p for _, _, p in pairs)
        isl = round(sum(i * p for i, _, p in pairs) / total)
        osl = round(sum(o * p for _, o, p in pairs) / total)
        notes.append(f"sequence mix modelled at its weighted mean ({isl}/{osl})")
    else:
        isl, osl = w.isl, w.osl
    prefix = w.prefix.tokens if w.prefix else 0
    if w.multi_turn:
        notes.append("multi-turn reuse not modelled")
    return isl, osl, prefix, notes


def _worker(r: ResolvedRecipe, w, is_moe: bool) -> Worker:
    """Our topology fields -> AIConfigurator's. vLLM: a replica is TP x DP engines' GPUs and EP spans them
    all (infersweep/engines/vllm.py); SGLang/TRT-LLM: DP is attention-DP inside the TP group, so AIConfigurator's
    tp_size (attention TP) is tp/dp and attention_dp_size is dp; MoE layers span every GPU of the replica
    as moe_tp x moe_ep."""
    tp, dp = r.engine.aic_parallelism(w)  # the engine's rule (infersweep/engines/<name>.py)
    gpus = tp * dp
    if not is_moe:
        return Worker(w.replicas, tp, dp)
    ep = w.ep if w.ep > 1 else 1
    return Worker(w.replicas, tp, dp, moe_tp_size=gpus // ep, moe_ep_size=ep)


def map_recipe(r: ResolvedRecipe, *, is_moe: bool | None = None, cache_only: bool = False) -> Target | Unsupported:
    """The recipe's place in the database, or why it has none. Consults AIConfigurator's support matrix
    (a subprocess into .venv-aic, cached)."""
    rec = r.recipe
    reasons = []  # every reason, not just the first: fixing one should not reveal the next
    system = SYSTEMS.get(rec.gpu.type)
    if system is None:
        reasons.append(f"GPU type {rec.gpu.type} has no AIConfigurator system (known: {sorted(SYSTEMS)})")
    precision = r.model.precision.lower()
    if precision in ("nvfp4", "fp4") and system in HOPPER:
        reasons.append(
            f"{precision.upper()} on {rec.gpu.type}: Hopper (SM90) has no FP4 tensor cores (the engine runs "
            "it weight-only, W4A16); AIConfigurator's support matrix marks FP4 checkpoints HW_INCOMPATIBLE "
            "on SM90"
        )
    spec = rec.speculative
    if spec and spec.mode == "mtp":
        reasons.append(
            "speculative decoding MTP: AIConfigurator needs an acceptance rate per draft token "
            "(nextn_accepted) that the recipe and its source do not give"
        )
    elif spec and spec.mode != "none":
        reasons.append(
            f"speculative decoding {spec.mode.upper()} (a draft model): AIConfigurator models "
            "speculation only as MTP next-n heads, not a separate draft model"
        )
    proxy = PROXIES.get(r.model.id)
    model_path = proxy.model_path if proxy else r.model.id
    mode = "disagg" if rec.topology.mode == "disagg" else "agg"
    passing: list[dict] = []
    if system is not None:
        found = aic.support_rows(
            [{"model": model_path, "system": system, "backend": rec.engine}], cache_only=cache_only
        )[0]
        rows = found["rows"]
        passing = [x for x in rows if x["Mode"] == mode and x["Status"] == "PASS"]
        if not rows:
            near = f"; it has {', '.join(found['similar'])}" if found["similar"] else ""
            reasons.append(
                f"{r.model.id} is outside AIConfigurator {aic.aic_version()}'s support matrix for "
                f"{system}/{rec.engine}{near}"
            )
        elif not passing:
            why = (
                next((x["ErrMsg"] for x in rows if x["Mode"] == mode and x["ErrMsg"]), "")
                or ", ".join(sorted({f"{x['Version']} {x['Status']}" for x in rows if x["Mode"] == mode}))
                or "no row"
            )
            reasons.append(f"{r.model.id} on {system}/{rec.engine} {mode}: not supported by AIConfigurator ({why})")
    if reasons:
        return Unsupported("; ".join(reasons))
    version = max((x["Version"] for x in passing), key=_version_key)
    isl, osl, prefix, notes = workload_lengths(r)
    if is_moe is None:
        is_moe = _looks_moe(r)
    workers = {role: _worker(r, w, is_moe) for role, w in rec.topology.roles().items()}
    for role, w in rec.topology.roles().items():
        if w.autoscaling:
            notes.append(f"{role}: autoscaled, modelled at {w.replicas} replicas")
        if w.nodes > 1:
            notes.append(f"{role}: TP over {w.nodes} nodes, inter-node links as in {system}.yaml")
    if proxy:
        notes.append(f"{r.model.id} modelled as {model_path}: {proxy.why}")
    if rec.kv_offload:
        notes.append("CPU KV offload not modelled")
    if rec.router == "kv" and (rec.workload.prefix or rec.workload.multi_turn or rec.workload.trace):
        notes.append("KV-aware routing's cache hits not modelled")
    return Target(
        model_path,
        system,
        rec.engine,
        version,
        mode,
        precision,
        isl,
        osl,
        prefix,
        workers,
        notes,
        dict(proxy.quant) if proxy else {},
    )


def _version_key(v: str) -> tuple:
    import re

    return tuple((int(x), "") if x.isdigit() else (-1, x) for x in re.split(r"[.]|(?<=\d)(?=rc)", v))


def _looks_moe(r: ResolvedRecipe) -> bool:
    """MoE checkpoints by name (`-A3B`, `-A22B`, DeepSeek/GLM): AIConfigurator needs moe_tp/moe_ep for
    them and refuses them for dense models."""
    import re

    mid = r.model.id
    return bool(re.search(r"-A\d+B", mid)) or any(k in mid for k in ("DeepSeek", "GLM-5", "Mixtral", "gpt-oss"))
