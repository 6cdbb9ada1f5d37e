"""The command lines and environment of a local deployment's Dynamo processes.

One `dynamo.frontend` stands in for the Frontend component; each worker/prefill/decode component becomes one
`dynamo.mocker` process running `--num-workers N` simulated engines that serve the recipe's model name from a
local toy model dir. Discovery goes through a per-deployment directory (`DYN_FILE_KV`), the request plane is
TCP on 127.0.0.1 with OS-assigned ports and the HTTP port is picked free, so several deployments and test runs
never meet.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from infersweep.engines.registry import engine_by_module
from infersweep.local.dynamo.deployment import DEPLOYMENT_FILE
from infersweep.local.dynamo.dgd_reader import Component, router_mode_of, served_model_name
from infersweep.local.gpu.engine_flags import flag_value as _flag
from infersweep.local.gpu.engine_flags import has_switch as _has_switch
from infersweep.paths import params_dir

# Mocker flags local mode sets itself (or that point into the recipe's image / pin ports):
# dropped from a dynamo.mocker component's own args. Value = takes an argument.
MOCKER_OWNED_FLAGS = {
    "--model-path": True,
    "--model-name": True,
    "--num-workers": True,
    "--discovery-backend": True,
    "--request-plane": True,
    "--response-plane": True,
    "--event-plane": True,
    "--disaggregation-mode": True,
    "--engine-type": True,
    "--planner-profile-data": True,
    "--extra-engine-args": True,
    "--response-replay-trace-path": True,
    "--bootstrap-ports": True,
    "--zmq-kv-events-ports": True,
    "--zmq-replay-ports": True,
    "--is-prefill-worker": False,
    "--is-decode-worker": False,
}

# Engine flags (vLLM / SGLang / TRT-LLM spellings) with a mocker equivalent that shapes scheduling
# or KV routing (the block size sets the KV router's block hashing): (engine flags) -> mocker flag.
ENGINE_FLAG_MAP = [
    (("--block-size", "--page-size", "--kv-block-size"), "--block-size"),
    (("--max-num-seqs", "--max-running-requests", "--max-batch-size"), "--max-num-seqs"),
    (("--max-num-batched-tokens", "--max-num-tokens"), "--max-num-batched-tokens"),
    # vLLM's spelling: lets a recipe (or a local demo) size the simulated KV cache in blocks.
    (("--num-gpu-blocks-override",), "--num-gpu-blocks-override"),
]
ENGINE_SWITCH_MAP = [
    (("--no-enable-prefix-caching", "--disable-radix-cache"), "--no-enable-prefix-caching"),
]


def publishes_kv_events(comp: Component) -> bool | None:
    """Whether the real Dynamo 1.6.1 worker these args start would publish KV events to the router
    (None: not an engine worker we know; the mocker's own flags decide). Each engine states its own rule,
    with the Dynamo source it follows (Engine.publishes_kv_events in infersweep/engines/<name>.py)."""
    engine = engine_by_module(comp.module or "", params_dir())
    return engine.publishes_kv_events(comp.args, comp.env) if engine else None


def _mocker_passthrough(comp: Component, kv_router: bool = True) -> list[str]:
    """Args of the component that still mean something for a mocker."""
    if comp.module == "dynamo.mocker":
        kept, skip = [], False
        for arg in comp.args:
            if skip:
                skip = False
                continue
            flag = arg.split("=", 1)[0]
            if flag in MOCKER_OWNED_FLAGS:
                skip = MOCKER_OWNED_FLAGS[flag] and "=" not in arg
                continue
            kept.append(arg)
        return kept
    out: list[str] = []
    for engine_flags, mocker_flag in ENGINE_FLAG_MAP:
        value = _flag(comp.args, *engine_flags)
        if value is not None:
            out += [mocker_flag, value]
    for engine_flags, mocker_flag in ENGINE_SWITCH_MAP:
        if _has_switch(comp.args, *engine_flags):
            out.append(mocker_flag)
    if (
        kv_router
        and comp.role in ("worker", "prefill")
        and publishes_kv_events(comp) is False
        and "--no-enable-prefix-caching" not in out
    ):
        # The 1.6.1 mocker publishes KV events whenever its prefix cache is on and it is not a decode
        # worker (dynamo/mocker/config.py build_runtime_config: kv_event_publishing_enabled =
        # enable_prefix_caching and not is_decode); it has no other switch. A worker that would publish
        # nothing must not let the local KV router see a cache: the KV recipe then behaves like load-based
        # routing, as it would on a cluster. (Its own prefix cache goes too: local results are, if
        # anything, pessimistic for such a recipe, never a false KV win.) Under any other router the events
        # are never read, and the worker's own prefix cache stays, as on a cluster.
        out.append("--no-enable-prefix-caching")
    return out


def mocker_argv(
    comp: Component, *, python: str, model_dir: Path, num_workers: int, kv_router: bool = True, engine: str
) -> list[str]:
    argv = [
        python,
        "-m",
        "dynamo.mocker",
        "--model-path",
        str(model_dir),
        "--model-name",
        served_model_name(comp),
        "--discovery-backend",
        "file",
        "--request-plane",
        "tcp",
        "--num-workers",
        str(num_workers),
        "--engine-type",
        engine,
    ]
    if comp.role in ("prefill", "decode"):
        argv += ["--disaggregation-mode", comp.role]
    return argv + _mocker_passthrough(comp, kv_router)


def frontend_argv(
    frontend: Component | None, *, python: str, http_port: int, http_host: str = "127.0.0.1"
) -> list[str]:
    argv = [
        python,
        "-m",
        "dynamo.frontend",
        "--discovery-backend",
        "file",
        "--request-plane",
        "tcp",
        "--router-mode",
        router_mode_of(frontend),
        "--http-host",
        http_host,
        "--http-port",
        str(http_port),
    ]
    # KV router without worker KV events (approximate mode) changes routing: keep that choice.
    if frontend and _has_switch(frontend.args, "--no-kv-events", "--no-router-kv-events"):
        argv.append("--no-router-kv-events")
    return argv


# Dynamo 1.3.1 (the GPU stack) reads one of these as a network interface name: its frontend refused the
# worker with "build_preprocessed_routing: Generic error: Interface not found: 127.0.0.1" (measured on the
# H200, 2026-12-01). Its defaults bind every address of a host that, there, has no network.
LOOPBACK_HOST_VARS = ("DYN_TCP_RPC_HOST", "DYN_TCP_RESPONSE_STREAM_HOST", "DYN_EVENT_PLANE_HOST", "DYN_HTTP_RPC_HOST")


def dynamo_env(discovery_dir: Path, *, pin_loopback: bool = True) -> dict[str, str]:
    """Environment for every Dynamo process of one deployment. `pin_loopback` binds and advertises 127.0.0.1
    (LOOPBACK_HOST_VARS); the GPU stack (ai-dynamo 1.3.1) runs without it, see there."""
    env = {
        k: v
        for k, v in os.environ.items()
        # Inherited DYN_* settings (ports, namespaces, backends) would break isolation;
        # the caller's PYTHONPATH/PYTHONHOME must not leak into the dynamo venv.
        if not (k.startswith("DYN_") and not k.startswith("DYN_LOG"))
        and k not in ("ETCD_ENDPOINTS", "NATS_SERVER", "PYTHONPATH", "PYTHONHOME")
    }
    env.update(
        {
            "DYN_FILE_KV": str(discovery_dir),  # discovery root, one per deployment
            "DYN_DISCOVERY_BACKEND": "file",
            "DYN_REQUEST_PLANE": "tcp",
            "DYN_SELF_HOST_METADATA": "0",  # needs a system port; shared-storage MDC works locally
            "HF_HUB_OFFLINE": "1",  # the toy model is local; never reach for the hub
            "TRANSFORMERS_OFFLINE": "1",
            "DYN_SDK_DISABLE_ANSI_LOGGING": "1",  # plain log files, readable tails
            "PYTHONUNBUFFERED": "1",
        }
    )
    if pin_loopback:  # bind/advertise loopback only; ports stay OS-assigned (system port stays off)
        env.update({name: "127.0.0.1" for name in LOOPBACK_HOST_VARS})
    return env


def free_port(host: str = "127.0.0.1") -> int:
    """A port free right now (the kernel's pick). A race is possible but shows up fast:
    the frontend exits with 'address in use' and wait_ready_local fails at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def frontend_port(state_dir: Path, host: str = "127.0.0.1") -> int:
    """The port of this deployment's frontend: the one it had before when its state dir records one and the
    port is free, else a fresh one. A cluster's frontend keeps its address when its DGD is recreated (the
    Service `<dgd>-frontend` is named by the DGD), and the workflow passes the deploy step's URL to every
    point (workflows/pipeline.py `tasks.deploy.outputs.parameters.frontend-url`); a `--retry` keeps the
    succeeded deploy and its output, so the points' ensure-deployed must bring the frontend back where it was."""
    try:
        earlier = json.loads((Path(state_dir) / DEPLOYMENT_FILE).read_text())["frontend_url"]
        port = int(str(earlier).rsplit(":", 1)[1])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return free_port(host)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # as the frontend binds (Rust's std TcpListener sets SO_REUSEADDR on Unix): TIME_WAIT does not block it
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return free_port(host)  # taken by another process: the retried points will say they cannot reach it
    return port


def engine_cache_env(engine_cache: str | None) -> dict[str, str]:
    """Every compile cache of a vLLM start in one folder: vLLM's own (VLLM_CACHE_ROOT: torch.compile
    artifacts, vllm/envs.py), Inductor's and Triton's kernels."""
    if not engine_cache:
        return {}
    root = Path(engine_cache)
    return {
        "VLLM_CACHE_ROOT": str(root / "vllm"),
        "TORCHINDUCTOR_CACHE_DIR": str(root / "inductor"),
        "TRITON_CACHE_DIR": str(root / "triton"),
    }
