"""SGLang (dynamo.sglang): its rules beside the typed model of params/engines/sglang.yaml.

Arithmetic: DP is DP-attention inside the TP group (--enable-dp-attention --dp N), so GPUs per replica = TP,
and dp and ep must divide TP (the seed's Qwen3.6 4P+4D TP=2 DP=2 EP=2 = 16 GPUs).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from infersweep.engines.base import (
    BackendFramework,
    EngineOffload,
    EngineSpeculative,
    InsideTpGroupEngine,
    Problem,
    json_flag,
)
from infersweep.engines.views import KvOffload, ResolvedRecipe, Workers

# SGLang sizes its HiCache host pool as hicache_ratio x the device KV pool (sglang python/sglang/srt/
# mem_cache/memory_pool_host.py, HostKVCache.__init__: `self.size = int(device_pool.size *
# host_to_device_ratio)`). The device pool is what mem_fraction_static leaves after the weights; 0.9 is
# an upper bound of SGLang's default fraction, so the request is never below what HiCache allocates.
SGLANG_MEM_FRACTION_BOUND = 0.9


class SglangSpeculative(EngineSpeculative):
    style: Literal["sglang-flags"]  # --speculative-algorithm and its step/draft-token flags


class SglangOffload(EngineOffload):
    hicache_switch: str
    hicache_ratio_flag: str
    hicache_write_policy_flag: str


class Sglang(InsideTpGroupEngine):
    name: ClassVar[str] = "sglang"

    dp_flag: str
    ep_flag: str
    speculative: SglangSpeculative
    offload: SglangOffload

    label: ClassVar[str] = "SGLang"
    backend_framework: ClassVar[BackendFramework] = "sglang"
    dp_adds_gpus: ClassVar[bool] = False
    # tests/engine_parsers: ai-dynamo 1.6.1's own dynamo.sglang argument parsing runs on a CPU machine.
    parser_tier: ClassVar[Literal["yes", "pending", "no"]] = "yes"
    # The longest warm-up: the seed notes SGLang's start-up is slow "even with a shared model-cache".
    warmup_s: ClassVar[float] = 420.0

    def offload_problem(self, off: KvOffload) -> Problem | None:
        if off.cpu_gib is not None:
            return (
                "kv_offload.cpu_gib",
                f"{self.name} has no CPU offload size; use hicache_ratio (+ write_policy) for SGLang",
            )
        if off.hicache_ratio is None:
            return "kv_offload", "say how big the CPU tier is; add hicache_ratio"
        return None

    def offload_args(self, r: ResolvedRecipe, role: str) -> list[str]:
        off, spell = r.recipe.kv_offload, self.offload
        if not off:
            return []
        if role == "decode" and spell.hicache_prefill_only:
            # SGLang forces the radix cache off on a PD decode server and refuses HiCache there
            # (sglang/srt/server_args.py ServerArgs: disaggregation decode disables radix cache; hierarchical
            # cache requires it): the host tier belongs on prefill, where prompts are cached.
            return []
        args = [spell.hicache_switch]
        if off.hicache_ratio is not None:
            args += [spell.hicache_ratio_flag, f"{off.hicache_ratio:g}"]
        if off.write_policy:
            args += [spell.hicache_write_policy_flag, off.write_policy]
        return args

    def speculative_args(self, r: ResolvedRecipe) -> list[str]:
        spec, style = r.recipe.speculative, self.speculative
        if not spec or spec.mode == "none":
            return []
        n, draft = spec.num_tokens, r.draft_model
        args = [
            style.flag,
            style.methods[spec.mode],
            "--speculative-num-steps",
            str(n),
            "--speculative-num-draft-tokens",
            str(n + 1),
            "--speculative-eagle-topk",
            "1",
        ]
        return args + (["--speculative-draft-model-path", draft] if draft else [])

    def offload_host_gib(self, r: ResolvedRecipe, w: Workers, args: list[str]) -> float:
        off = r.recipe.kv_offload
        if not off or off.hicache_ratio is None or self.offload.hicache_switch not in args:
            return 0.0  # HiCache is not on in this role (SGLang's PD decode cannot run it)
        gpus = w.gpus_per_replica // w.nodes
        kv_per_gpu = max(0.0, r.gpu_type.memory_gib * SGLANG_MEM_FRACTION_BOUND - r.model.size_gib / w.gpus_per_replica)
        return off.hicache_ratio * kv_per_gpu * gpus

    def publishes_kv_events(self, args: list[str], env: dict[str, str]) -> bool:
        # Only with a --kv-events-config whose "publisher" is given and not "null" (ai-dynamo 1.6.1
        # dynamo/sglang/args.py parse_args derives use_kv_events so), and the radix cache on (nothing to
        # report without it).
        cfg = json_flag(args, "--kv-events-config")
        return cfg.get("publisher", "null") != "null" and "--disable-radix-cache" not in args

    def aic_parallelism(self, w: Workers) -> tuple[int, int]:
        # DP is attention-DP inside the TP group: AIConfigurator's tp_size (attention TP) is tp/dp.
        return max(1, w.tp // w.dp), w.dp


ENGINE = Sglang
