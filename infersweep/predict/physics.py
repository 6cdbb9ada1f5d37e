"""A physics check on measurements: a decode step cannot be faster than reading the weights it needs.

Every decoded token reads at least the parameters that token uses (all of a dense model; the active
experts + shared layers of a MoE: `active_params_b` in params/models/) from HBM, spread at best evenly over
the replica's GPUs, each at most `mem_bw_tb_s` (params/gpus.yaml). So

    ITL >= active_params x bytes_per_param / (gpus_per_replica x bandwidth)

is a hard floor (KV-cache reads, activations, kernel launches and communication only add to it). A
measured inter-token latency below it did not come from the deployment it is attributed to: a different
model, speculative decoding (several tokens per step: the floor is per step, not per token), a
mislabelled TP, or a units error. Speculative recipes are therefore not judged.
"""

from __future__ import annotations

from dataclasses import dataclass

from infersweep.recipe import ResolvedRecipe
from infersweep.recipe.facts import GpuType, Model

# Bytes per weight as stored: NVFP4 is 4-bit values plus one FP8 scale per 16 (4.5 bits).
BYTES_PER_PARAM = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "nvfp4": 0.5625,
    "fp4": 0.5,
    "int4": 0.5,
}


@dataclass
class Verdict:
    plausible: bool | None  # None: the facts to judge are missing (say which)
    floor_ms: float | None
    message: str


def itl_floor_ms(model: Model, gpu: GpuType, gpus_per_replica: int) -> float | None:
    """The least time one decode step can take, or None when the model or GPU lacks the facts."""
    bpp = BYTES_PER_PARAM.get(model.precision.lower())
    if model.active_params_b is None or gpu.mem_bw_tb_s is None or bpp is None:
        return None
    bytes_per_step = model.active_params_b * 1e9 * bpp
    return bytes_per_step / (gpus_per_replica * gpu.mem_bw_tb_s * 1e12) * 1000.0


def check_itl(model: Model, gpu: GpuType, gpus_per_replica: int, itl_ms: float, *, gpu_name: str = "GPU") -> Verdict:
    floor = itl_floor_ms(model, gpu, gpus_per_replica)
    if floor is None:
        missing = [
            n
            for n, v in (
                ("active_params_b in the model file", model.active_params_b),
                ("mem_bw_tb_s in params/gpus.yaml", gpu.mem_bw_tb_s),
                (f"bytes per {model.precision} weight", BYTES_PER_PARAM.get(model.precision.lower())),
            )
            if v is None
        ]
        return Verdict(None, None, f"not judged: no {', '.join(missing)}")
    what = (
        f"{model.id} ({model.active_params_b:g}B params read per token, {model.precision}) on {gpus_per_replica} "
        f"{gpu_name} ({gpu.mem_bw_tb_s:g} TB/s each) needs >= {floor:.2f} ms per decode step"
    )
    if itl_ms < floor:
        return Verdict(False, floor, f"implausible: ITL {itl_ms:.2f} ms < floor; {what}")
    return Verdict(True, floor, f"plausible: ITL {itl_ms:.2f} ms; {what}")


def decode_gpus(r: ResolvedRecipe) -> int:
    """GPUs one decode step of the recipe runs on (its decode or aggregated role's replica)."""
    roles = r.recipe.topology.roles()
    w = roles.get("decode") or roles.get("worker") or next(iter(roles.values()))
    return w.gpus_per_replica


def check_recipe_itl(r: ResolvedRecipe, itl_ms: float) -> Verdict:
    """Judge a measured ITL as coming from this recipe's deployment."""
    spec = r.recipe.speculative
    if spec and spec.mode != "none":
        return Verdict(None, None, f"not judged: speculative decoding ({spec.mode}) emits several tokens per step")
    return check_itl(r.model, r.gpu_type, decode_gpus(r), itl_ms, gpu_name=r.recipe.gpu.type)


def check_results(df, r: ResolvedRecipe) -> list[tuple[int, Verdict]]:
    """(concurrency, verdict) for every measured row of a results table with an ITL."""
    out = []
    for _, row in df.iterrows():
        itl = row.get("itl_avg_ms")
        if itl is None or itl != itl or row.get("status") not in ("ok", "partial"):
            continue
        out.append((int(row["concurrency"]), check_recipe_itl(r, float(itl))))
    return out
