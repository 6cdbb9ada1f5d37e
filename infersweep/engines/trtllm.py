"""TensorRT-LLM (dynamo.trtllm): its rules beside the typed model of params/engines/trtllm.yaml.

Arithmetic: attention DP spans the whole TP group (--enable-attention-dp), so dp is 1 or TP and GPUs per
replica = TP; ep must divide TP.
"""

from __future__ import annotations

import json
from typing import ClassVar, Literal

from infersweep.engines.base import (
    BackendFramework,
    EngineSpeculative,
    InsideTpGroupEngine,
    Problem,
    inside_tp_group_problem,
)
from infersweep.engines.views import KvOffload, ResolvedRecipe, Workers

# dynamo.trtllm's switches for KV events (ai-dynamo 1.6.1 dynamo/trtllm/backend_args.py, default False).
_KV_EVENT_SWITCHES = (
    "--publish-kv-events",
    "--no-publish-kv-events",
    "--publish-events-and-metrics",
    "--no-publish-events-and-metrics",
)


class TrtllmSpeculative(EngineSpeculative):
    style: Literal["trtllm-override"]  # a speculative_config inside --override-engine-args


class Trtllm(InsideTpGroupEngine):
    name: ClassVar[str] = "trtllm"

    ep_flag: str
    speculative: TrtllmSpeculative

    label: ClassVar[str] = "TRT-LLM"
    backend_framework: ClassVar[BackendFramework] = "trtllm"
    dp_adds_gpus: ClassVar[bool] = False
    # dynamo.trtllm's argument parsing needs TensorRT-LLM, which does not install on a CPU machine, so the
    # engine-parser tier does not check its recipes yet.
    parser_tier: ClassVar[Literal["yes", "pending", "no"]] = "pending"
    warmup_s: ClassVar[float] = 300.0

    def parallelism_problem(self, w: Workers) -> Problem | None:
        if w.dp not in (1, w.tp):
            return "dp", f"TRT-LLM attention DP spans the whole TP group; set dp to 1 or {w.tp} (TP)"
        return inside_tp_group_problem(self, w)

    def offload_problem(self, off: KvOffload) -> Problem | None:
        if off.cpu_gib is not None:
            return "kv_offload.cpu_gib", f"{self.name} has no CPU offload size; remove kv_offload"
        for key in ("hicache_ratio", "write_policy"):
            if getattr(off, key) is not None:
                return f"kv_offload.{key}", f"HiCache is SGLang's; {self.name} has none; remove kv_offload"
        return "kv_offload", f"{self.name} has no CPU KV tier here; remove kv_offload"

    def offload_args(self, r: ResolvedRecipe, role: str) -> list[str]:
        return []  # no CPU KV tier (offload_problem refuses kv_offload)

    def speculative_args(self, r: ResolvedRecipe) -> list[str]:
        spec, style = r.recipe.speculative, self.speculative
        if not spec or spec.mode == "none":
            return []
        # Engine-args override: MTP reuses the model's NextN layers, Eagle needs the draft dir.
        spec_config: dict = {"decoding_type": style.methods[spec.mode]}
        if spec.mode == "mtp":
            spec_config["num_nextn_predict_layers"] = spec.num_tokens
        else:
            spec_config |= {"max_draft_len": spec.num_tokens, "speculative_model_dir": r.draft_model}
        return [style.flag, json.dumps({"speculative_config": spec_config}, separators=(",", ":"))]

    def offload_host_gib(self, r: ResolvedRecipe, w: Workers, args: list[str]) -> float:
        return 0.0

    def publishes_kv_events(self, args: list[str], env: dict[str, str]) -> bool:
        # Only with --publish-kv-events (the last of the switches wins) or DYN_TRTLLM_PUBLISH_KV_EVENTS
        # (ai-dynamo 1.6.1 dynamo/trtllm/backend_args.py, default False).
        last = [a for a in args if a in _KV_EVENT_SWITCHES]
        if last:
            return not last[-1].startswith("--no-")
        return env.get("DYN_TRTLLM_PUBLISH_KV_EVENTS", "").lower() in ("1", "true", "yes", "on")

    def aic_parallelism(self, w: Workers) -> tuple[int, int]:
        # Attention DP inside the TP group: AIConfigurator's tp_size (attention TP) is tp/dp.
        return max(1, w.tp // w.dp), w.dp


ENGINE = Trtllm
