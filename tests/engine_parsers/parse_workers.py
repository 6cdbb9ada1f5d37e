"""Run rendered Dynamo command lines through the real parsers, in a batch (runs inside .venv-engines).

stdin: a JSON list of {"id", "module", "args"}; stdout (last line): a JSON list of
{"id", "ok", "error", "facts"}, where facts are what the parsed configuration says (KV events, the KV
transfer connectors in effect, offload, speculative decoding, parallelism) for the test to assert on.

Parsers (ai-dynamo 1.6.1 as installed; engine versions as its extras pin them):
- dynamo.vllm: dynamo/vllm/args.py parse_args (Dynamo's flags + vLLM 0.31's own AsyncEngineArgs parser,
  from_cli_args, Dynamo's validate/cross_validate/update_engine_config_with_dynamo). vLLM's
  create_engine_config needs the model's HF config (no hub here), so the engine-level step run is the one
  that decides the connectors: VllmConfig._post_init_kv_transfer_config on the parsed CacheConfig /
  KVTransferConfig (what --kv-offloading-size does to kv_connector), plus KVTransferConfig / KVEventsConfig
  construction (pydantic validation) inside from_cli_args.
- dynamo.sglang: dynamo/sglang/args.py parse_args, which builds SGLang 0.5.21's ServerArgs and Dynamo's
  derived use_kv_events, then SGLang's own resolution hooks that do not need an accelerator (see
  parse_sglang).
- dynamo.trtllm: dynamo/trtllm/args.py parse_args, when tensorrt_llm imports (see the test's docstring).
- dynamo.frontend: dynamo/frontend/main.py parse_args (FrontendArgGroup + validate).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import sys
import traceback

logging.disable(logging.CRITICAL)
# Workers run with HF_HUB_OFFLINE=1 and HF_HOME on the model-cache PVC (infersweep/dgd/render.py _worker_env), where
# the model-cache step has put the snapshot. vLLM then resolves --model to that snapshot folder in
# EngineArgs.__post_init__ (vllm/transformers_utils/repo_utils.py get_model_path). The same layout is laid
# out here for every model id the batch names, without the weights (parsing never reads them).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


def _model_cache(items: list[dict]) -> None:
    import tempfile
    from pathlib import Path

    home = Path(tempfile.mkdtemp(prefix="infersweep-hf-"))
    os.environ["HF_HOME"] = str(home)
    os.environ["HF_HUB_CACHE"] = str(home / "hub")
    flags = ("--model", "--model-path", "--speculative-draft-model-path")
    ids = set()
    for item in items:
        args = item["args"]
        for i, a in enumerate(args[:-1]):
            if a in flags:
                ids.add(args[i + 1])
            if a == "--speculative-config":
                ids.add(json.loads(args[i + 1]).get("model") or "")
    for model_id in filter(lambda m: m.count("/") == 1, ids):
        repo = home / "hub" / ("models--" + model_id.replace("/", "--"))
        (repo / "snapshots" / ("0" * 40)).mkdir(parents=True, exist_ok=True)
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text("0" * 40)


def _cpu_platform() -> None:
    # A CUDA-built vLLM wheel on a host without a GPU detects no platform and AsyncEngineArgs crashes in
    # DeviceConfig.__post_init__; Dynamo's own frontend coerces CpuPlatform for parsing the same way
    # (dynamo/frontend/main.py parse_args). Argument parsing does not depend on the device otherwise.
    import vllm.platforms

    if vllm.platforms.current_platform.device_type == "":
        from vllm.platforms.cpu import CpuPlatform

        vllm.platforms.current_platform = CpuPlatform()


def _connectors(cfg) -> list[dict]:
    """The KV connectors in effect: one, or the members of a MultiConnector."""
    if cfg is None or not cfg.kv_connector:
        return []
    extra = cfg.kv_connector_extra_config or {}
    if cfg.kv_connector == "MultiConnector":
        return [
            {
                "kv_connector": c.get("kv_connector"),
                "kv_role": c.get("kv_role"),
                "extra": c.get("kv_connector_extra_config") or {},
            }
            for c in extra.get("connectors", [])
        ]
    return [{"kv_connector": cfg.kv_connector, "kv_role": cfg.kv_role, "extra": extra}]


def parse_vllm(args: list[str]) -> dict:
    _cpu_platform()
    from types import SimpleNamespace

    from dynamo.vllm.args import parse_args
    from vllm.config import VllmConfig

    config = parse_args(list(args))
    ea = config.engine_args
    cache = ea.create_cache_config() if hasattr(ea, "create_cache_config") else None
    if cache is None:
        from vllm.config import CacheConfig

        cache = CacheConfig(kv_offloading_size=ea.kv_offloading_size, kv_offloading_backend=ea.kv_offloading_backend)
    from vllm.config import KVTransferConfig

    transfer = ea.kv_transfer_config
    if transfer is None and ea.kv_offloading_size is not None:
        transfer = KVTransferConfig()
    holder = SimpleNamespace(
        cache_config=cache,
        kv_transfer_config=transfer,
        parallel_config=SimpleNamespace(
            tensor_parallel_size=ea.tensor_parallel_size, pipeline_parallel_size=ea.pipeline_parallel_size
        ),
    )
    VllmConfig._post_init_kv_transfer_config(holder)  # what --kv-offloading-size does to the connector
    from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory

    connectors = _connectors(holder.kv_transfer_config)
    unknown = [c["kv_connector"] for c in connectors if c["kv_connector"] not in KVConnectorFactory._registry]
    if unknown:
        raise ValueError(f"KV connector(s) {unknown} are not registered in vLLM's KVConnectorFactory")
    events = ea.kv_events_config
    spec = ea.speculative_config or {}
    return {
        "kv_events": bool(config.use_kv_events),
        "kv_events_endpoint": getattr(events, "endpoint", None),
        "prefix_caching": bool(ea.enable_prefix_caching),
        "connectors": connectors,
        "disaggregation_mode": str(getattr(config.disaggregation_mode, "value", config.disaggregation_mode)),
        "speculative": {k: spec.get(k) for k in ("method", "model", "num_speculative_tokens")} if spec else None,
        "tp": ea.tensor_parallel_size,
        "dp": ea.data_parallel_size,
        "expert_parallel": bool(ea.enable_expert_parallel),
        "model": config.model,
    }


def _sglang_eager_post_init() -> bool:
    """SGLang 0.5.14 (ai-dynamo 1.3.1's pin) resolves everything in ServerArgs.__post_init__, eagerly, at
    parse time: after its accelerator-free prefix it asks for the device (get_device raises without one) and
    reads the model's HF config (absent here). Its own prefix is what a "dummy" model runs (server_args.py
    ServerArgs.__post_init__: load-balance method, multimodal/SSL/ASR validation, handle_pd_disaggregation
    -- a decode server's radix cache is forced off --, legacy CP aliases, prefill-only checks, then `if
    self.model_path.lower() in ["none", "dummy"]: return`). So for 0.5.14 that prefix runs as SGLang wrote it
    (the model path set to "dummy" for the call only), then the two later steps this tier checks that need
    no accelerator: _handle_hicache and _handle_cache_compatibility (HiCache without a radix cache is
    refused). dynamo/sglang/args.py parse_args (1.3.1) then asks get_model_config().is_multimodal, which
    reads the HF config: not multimodal here. Returns False for SGLang >= 0.5.21 (lazy resolution hooks)."""
    try:
        import sglang.srt.arg_groups.resolution_hooks  # noqa: F401  (0.5.21: resolution is deferred)

        return False
    except ImportError:
        pass
    from types import SimpleNamespace

    from sglang.srt.server_args import ServerArgs

    if getattr(ServerArgs, "_infersweep_prefix_only", False):
        return True
    post_init = ServerArgs.__post_init__

    def prefix_then_cache_checks(self) -> None:
        path = self.model_path
        self.model_path = "dummy"
        try:
            post_init(self)
        finally:
            self.model_path = path
        self._handle_hicache()
        self._handle_cache_compatibility()

    ServerArgs.__post_init__ = prefix_then_cache_checks
    ServerArgs.get_model_config = lambda self: SimpleNamespace(is_multimodal=False)
    ServerArgs._infersweep_prefix_only = True
    return True


def parse_sglang(args: list[str]) -> dict:
    eager = _sglang_eager_post_init()
    from dynamo.sglang.args import parse_args

    config = asyncio.run(parse_args(list(args)))
    sa, da = config.server_args, config.dynamo_args
    if eager:
        return _sglang_facts(sa, da)
    # The worker's sglang Engine resolves its arguments first when it starts (sglang/srt/entrypoints/engine.py
    # _launch_subprocesses: ServerArgs.resolve_once -> arg_groups/pipeline.py run_resolution_pipeline). The
    # whole pipeline needs an accelerator (serving_hook.handle_missing_default_values calls get_device()),
    # so the hooks that decide what this tier checks run here, in the pipeline's order and through its
    # run_hook: the HiCache ratio default, PD disaggregation (a decode server's radix cache is forced off)
    # and KV cache compatibility (HiCache without a radix cache is refused).
    from sglang.srt.arg_groups.hicache_hook import handle_hicache_ratio_default
    from sglang.srt.arg_groups.kv_cache_hook import handle_cache_compatibility
    from sglang.srt.arg_groups.pd_disaggregation_hook import handle_pd_disaggregation
    from sglang.srt.arg_groups.resolution_hooks import run_hook

    sa._input_frozen = True
    try:
        for hook in (handle_hicache_ratio_default, handle_pd_disaggregation, handle_cache_compatibility):
            run_hook(hook, sa)
    finally:
        sa._input_frozen = False
    return _sglang_facts(sa, da)


def _sglang_facts(sa, da) -> dict:
    spec = None
    if sa.speculative_algorithm:
        spec = {
            "method": sa.speculative_algorithm,
            "model": sa.speculative_draft_model_path,
            "num_steps": sa.speculative_num_steps,
            "num_draft_tokens": sa.speculative_num_draft_tokens,
        }
    return {
        "kv_events": bool(da.use_kv_events),
        "disaggregation_mode": sa.disaggregation_mode,
        "transfer_backend": sa.disaggregation_transfer_backend,
        "hicache": bool(sa.enable_hierarchical_cache),
        "radix_cache": not sa.disable_radix_cache,
        "speculative": spec,
        "tp": sa.tp_size,
        "dp": sa.dp_size,
        "ep": sa.ep_size,
        "dp_attention": bool(sa.enable_dp_attention),
        "model": sa.model_path,
    }


def parse_trtllm(args: list[str]) -> dict:
    from dynamo.trtllm.args import parse_args

    config = parse_args(list(args))
    override = json.loads(config.override_engine_args) if config.override_engine_args else {}
    return {
        "kv_events": bool(config.publish_kv_events),
        "disaggregation_mode": str(getattr(config.disaggregation_mode, "value", config.disaggregation_mode)),
        "speculative": override.get("speculative_config"),
        "tp": config.tensor_parallel_size,
        "ep": config.expert_parallel_size,
        "attention_dp": bool(getattr(config, "enable_attention_dp", False)),
        "model": config.model_path,
    }


def parse_frontend(args: list[str]) -> dict:
    from dynamo.frontend.main import parse_args

    saved = sys.argv
    sys.argv = ["dynamo.frontend", *args]
    try:
        config, _, _ = parse_args()
    finally:
        sys.argv = saved
    return {"router_mode": str(getattr(config.router_mode, "value", config.router_mode))}


def list_flags(args: list[str]) -> dict:
    """Not a command line: the flags each worker module accepts (list_flags.py), in this batch's process."""
    from list_flags import sglang_flags, vllm_flags  # beside this file, on sys.path as the script's folder

    return {"dynamo.vllm": vllm_flags(), "dynamo.sglang": sglang_flags()}


PARSERS = {
    "dynamo.vllm": parse_vllm,
    "dynamo.sglang": parse_sglang,
    "dynamo.trtllm": parse_trtllm,
    "dynamo.frontend": parse_frontend,
    "flags": list_flags,
}


def main() -> None:
    items = json.load(sys.stdin)
    _model_cache(items)
    results = []
    for item in items:
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                facts = PARSERS[item["module"]](item["args"])
            results.append({"id": item["id"], "ok": True, "error": None, "facts": facts})
        except SystemExit as e:  # argparse: the message went to stderr
            results.append(
                {
                    "id": item["id"],
                    "ok": False,
                    "facts": None,
                    "error": f"exit {e.code}: {out.getvalue().strip()[-2000:]}",
                }
            )
        except BaseException as e:  # noqa: BLE001 - every failure is reported per item
            results.append(
                {
                    "id": item["id"],
                    "ok": False,
                    "facts": None,
                    "error": f"{type(e).__name__}: {e}\n{traceback.format_exc()[-3000:]}",
                }
            )
    sys.stdout.write("\n" + json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
