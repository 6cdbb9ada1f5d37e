"""vLLM (dynamo.vllm): its rules beside the typed model of params/engines/vllm.yaml.

Arithmetic: each DP rank is its own engine of TP GPUs, so GPUs per replica = TP x DP; EP
(--enable-expert-parallel) shards experts over all TP x DP ranks, so ep is 1 or TP x DP.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from infersweep.engines.base import (
    BackendFramework,
    Engine,
    EngineOffload,
    EngineSpeculative,
    Problem,
    json_flag,
    spelled_parallelism_args,
)
from infersweep.engines.views import KvOffload, ResolvedRecipe, Speculative, Transport, Workers


class VllmSpeculative(EngineSpeculative):
    style: Literal["vllm-config"]  # one JSON --speculative-config


class VllmOffload(EngineOffload):
    cpu_gib_flag: str  # --kv-offloading-size
    cpu_connector: str  # the same tier as a MultiConnector entry next to NIXL


class Vllm(Engine):
    name: ClassVar[str] = "vllm"

    kv_transfer_flag: str
    kv_transfer_config: dict[str, Any]
    dp_flag: str
    ep_switch: str
    speculative: VllmSpeculative
    offload: VllmOffload

    label: ClassVar[str] = "vLLM"
    backend_framework: ClassVar[BackendFramework] = "vllm"
    dp_adds_gpus: ClassVar[bool] = True
    # tests/engine_parsers: ai-dynamo 1.6.1's own dynamo.vllm argument parsing runs on a CPU machine.
    parser_tier: ClassVar[Literal["yes", "pending", "no"]] = "yes"
    warmup_s: ClassVar[float] = 150.0

    def parallelism_problem(self, w: Workers) -> Problem | None:
        if w.ep not in (1, w.tp * w.dp):
            return "ep", (
                f"vLLM shards experts over all TP x DP ranks; set ep to 1 or {w.tp * w.dp} (TP={w.tp} x DP={w.dp})"
            )
        return None

    def offload_problem(self, off: KvOffload) -> Problem | None:
        for key in ("hicache_ratio", "write_policy"):
            if getattr(off, key) is not None:
                return f"kv_offload.{key}", f"HiCache is SGLang's; {self.name} has none; use cpu_gib for vLLM"
        if off.cpu_gib is None:
            return "kv_offload", "say how big the CPU tier is; add cpu_gib"
        return None

    def speculative_problem(self, spec: Speculative) -> Problem | None:
        return None  # engine_config keys go into the one JSON config as they are

    def transport_problem(self, t: Transport) -> Problem | None:
        return None  # the NIXL connector takes the backend (kv_transfer_args)

    def parallelism_args(self, w: Workers) -> list[str]:
        return spelled_parallelism_args(self, w)

    def kv_transfer_args(self, r: ResolvedRecipe) -> list[str]:
        """The NIXL connector config, with the transport's NIXL backend when it is not the default UCX.

        With a CPU KV tier as well, the two connectors are combined in vLLM's MultiConnector: vLLM's own
        `--kv-offloading-size` would *replace* kv_connector with the OffloadingConnector (vllm/config/vllm.py
        VllmConfig._post_init_kv_transfer_config), leaving no NIXL path from prefill to decode.
        """
        config = dict(self.kv_transfer_config)
        t = r.transport  # the recipe's, or its GPU pool's fabric
        if t and t.nixl_backend != "UCX":
            config["kv_connector_extra_config"] = {"backends": [t.nixl_backend]}
        tier = self.cpu_offload_connector(r)
        if tier:
            config = {
                "kv_connector": "MultiConnector",
                "kv_role": config["kv_role"],
                "kv_connector_extra_config": {"connectors": [config, tier]},
            }
        return [self.kv_transfer_flag, json.dumps(config, separators=(",", ":"))]

    def cpu_offload_connector(self, r: ResolvedRecipe) -> dict[str, Any] | None:
        """The CPU KV tier as a connector entry (what `--kv-offloading-size N --kv-offloading-backend native`
        sets up: vllm/config/vllm.py VllmConfig._post_init_kv_transfer_config), for a MultiConnector."""
        off, spell = r.recipe.kv_offload, self.offload
        if not (off and off.cpu_gib is not None):
            return None
        extra = {spell.cpu_connector_size_key: int(off.cpu_gib * (1 << 30))}
        return {"kv_connector": spell.cpu_connector, "kv_role": "kv_both", "kv_connector_extra_config": extra}

    def offload_args(self, r: ResolvedRecipe, role: str) -> list[str]:
        off, spell = r.recipe.kv_offload, self.offload
        if not off or off.cpu_gib is None:
            return []
        if role in ("prefill", "decode"):
            return []  # rendered inside the MultiConnector next to NIXL (kv_transfer_args)
        return [spell.cpu_gib_flag, f"{off.cpu_gib:g}", *spell.cpu_args]

    def speculative_args(self, r: ResolvedRecipe) -> list[str]:
        spec, style = r.recipe.speculative, self.speculative
        if not spec or spec.mode == "none":
            return []
        config: dict = {"method": style.methods[spec.mode], "num_speculative_tokens": spec.num_tokens}
        if r.draft_model:
            config["model"] = r.draft_model
        config |= spec.engine_config
        return [style.flag, json.dumps(config, separators=(",", ":"))]

    def offload_host_gib(self, r: ResolvedRecipe, w: Workers, args: list[str]) -> float:
        off = r.recipe.kv_offload
        # cpu_gib per engine; a pod runs one engine per DP rank.
        return off.cpu_gib * w.dp if off and off.cpu_gib is not None else 0.0

    def publishes_kv_events(self, args: list[str], env: dict[str, str]) -> bool:
        # Only with a --kv-events-config that enables events, and prefix caching on (ai-dynamo 1.6.1
        # dynamo/vllm/args.py create_kv_events_config; dynamo/vllm/main.py setup_kv_event_publisher).
        cfg = json_flag(args, "--kv-events-config")
        return (
            bool(cfg.get("enable_kv_cache_events"))
            and cfg.get("publisher") != "null"
            and "--no-enable-prefix-caching" not in args
        )

    def aic_parallelism(self, w: Workers) -> tuple[int, int]:
        return w.tp, w.dp  # a replica is TP x DP engines' GPUs

    def worker_env(self, args: list[str]) -> list[dict[str, Any]]:
        """VLLM_NIXL_SIDE_CHANNEL_HOST = the pod IP (downward API) where NIXL sits where Dynamo does not look.

        vLLM's NixlConnector advertises VLLM_NIXL_SIDE_CHANNEL_HOST to its peers (default "localhost",
        vllm/envs.py). ai-dynamo 1.6.1 sets it only when `_uses_nixl_connector` says so
        (dynamo/vllm/args.py: update_engine_config -> ensure_side_channel_host), and that looks at the top-level
        kv_connector and inside a `PdConnector` only: NIXL inside a MultiConnector (our CPU-offload
        disaggregated workers, kv_transfer_args) leaves it at localhost, so decode cannot reach prefill.
        """
        cfg = json_flag(args, self.kv_transfer_flag)
        if nixl_nested(cfg) and not dynamo_sets_side_channel_host(cfg):
            return [{"name": NIXL_SIDE_CHANNEL_HOST, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
        return []


NIXL_SIDE_CHANNEL_HOST = "VLLM_NIXL_SIDE_CHANNEL_HOST"


def nixl_nested(cfg: dict[str, Any]) -> bool:
    """Whether a --kv-transfer-config uses the NixlConnector, at the top or inside any wrapper's
    kv_connector_extra_config.connectors (MultiConnector, PdConnector), at any depth."""
    if cfg.get("kv_connector") == "NixlConnector":
        return True
    inner = (cfg.get("kv_connector_extra_config") or {}).get("connectors") or []
    return any(isinstance(c, dict) and nixl_nested(c) for c in inner)


def dynamo_sets_side_channel_host(cfg: dict[str, Any]) -> bool:
    """ai-dynamo 1.6.1 dynamo/vllm/args.py `_uses_nixl_connector`, on the JSON: NixlConnector at the top level,
    or as a direct entry of a PdConnector's kv_connector_extra_config.connectors; nothing else."""
    if cfg.get("kv_connector") == "NixlConnector":
        return True
    if cfg.get("kv_connector") == "PdConnector":
        inner = (cfg.get("kv_connector_extra_config") or {}).get("connectors") or []
        return any(isinstance(c, dict) and c.get("kv_connector") == "NixlConnector" for c in inner)
    return False


ENGINE = Vllm
