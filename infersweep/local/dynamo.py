"""Realise a DynamoGraphDeployment (DGD) on this machine: real Dynamo processes, no GPU, no K8s.

One `dynamo.frontend` stands in for the Frontend component; each worker/prefill/decode component
becomes one `dynamo.mocker` process running `--num-workers N` simulated engines that serve the
recipe's model name from a local toy model dir. Discovery goes through a per-deployment
directory (`DYN_FILE_KV`), the request plane is TCP on 127.0.0.1 with OS-assigned ports and the
HTTP port is picked free, so several deployments and test runs never meet.

Everything a later step needs is in `<state_dir>/deployment.json` (+ `processes.json` from
`procs`), so deploy, readiness, benchmark and teardown can run in different processes.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from infersweep.engines.registry import engine_by_module
from infersweep.errors import UserError
from infersweep.local import procs
from infersweep.local.dgd_reader import (  # noqa: F401 (the names callers import from here)
    Component,
    command_line,
    engine_of,
    read_components,
    router_mode_of,
    served_model_name,
)
from infersweep.local.engine_flags import flag_value as _flag
from infersweep.local.engine_flags import has_switch as _has_switch
from infersweep.local.toy_model import build_toy_model
from infersweep.paths import params_dir

DEPLOYMENT_FILE = "deployment.json"

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


class LocalDeploymentError(UserError, RuntimeError):
    """A local deployment could not start or died while starting (the message has the log tail): the run
    failed, exit 1."""

    exit_code = 1


class UnownedDiscoveryEntries(LocalDeploymentError):
    """A fresh deployment serves, but some of its discovery entries have no owner keeping them alive: they
    expire at 10 s and take their worker (or its KV-reset endpoint) out of the frontend
    (infersweep.local.discovery_owners). A restart of the deployment registers them afresh."""

    def __init__(self, name: str, entries: list[str]) -> None:
        self.entries = entries
        super().__init__(
            f"{name}: {len(entries)} discovery entr{'y' if len(entries) == 1 else 'ies'} written at start "
            f"{'is' if len(entries) == 1 else 'are'} kept alive by no process and will expire 10 s after "
            f"{'its' if len(entries) == 1 else 'their'} write (Dynamo's file store touches each owned entry "
            f"every 3.3 s; lib/runtime/src/storage/kv/file.rs): {', '.join(entries)}"
        )


def default_dynamo_python() -> str:
    """The interpreter with ai-dynamo installed: $INFERSWEEP_DYNAMO_PYTHON or <repo>/.venv-dynamo."""
    repo = Path(__file__).resolve().parents[2]
    return os.environ.get("INFERSWEEP_DYNAMO_PYTHON") or str(repo / ".venv-dynamo/bin/python")


# ---------------------------------------------------------------- building command lines


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


# ---------------------------------------------------------------- the deployment


@dataclass
class LocalDeployment:
    name: str
    state_dir: str
    frontend_url: str
    model_name: str
    router_mode: str
    model_dir: str
    processes: list[dict] = field(default_factory=list)  # procs records
    components: list[dict] = field(default_factory=list)  # what each mocker realises
    created_at: float = 0.0
    ready_at: float = 0.0  # when wait_ready_local first saw it serve (time to ready = ready_at - spawn)
    # Real engine deployments: after serving, check that every discovery entry has a living owner
    # (infersweep.local.discovery_owners; 8.3 s, next to starts of 1-4 minutes). Mocker runs skip it.
    check_owners: bool = False
    owners_checked_at: float = 0.0  # processes started after this have entries not yet checked
    restarts: list[dict] = field(default_factory=list)  # earlier starts of this deployment given up, and why

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "LocalDeployment":
        return cls(**data)

    def save(self) -> Path:
        path = Path(self.state_dir) / DEPLOYMENT_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        os.replace(tmp, path)
        return path


@dataclass(frozen=True)
class GpuWorkers:
    """Local mode's real-engine workers (``--workers gpu``): which interpreter runs Dynamo and the engine
    (one that has ai-dynamo + the engine, e.g. the GPU bundle's venv-site-vllm), the weights, and where the
    engine's compile caches live (kept between runs: the cluster analogue is a compile cache on the model PVC)."""

    python: str
    weights: str = "dummy"
    engine_cache: str | None = None
    gpus: tuple = ()  # infersweep.local.gpu_workers.Gpu; empty: detect with nvidia-smi
    # INFERSWEEP_FAKE_GPU (infersweep.local.fake_gpu): the fake GPUs' type; each engine process is replaced by
    # Dynamo's mocker at spawn, everything else runs as for real GPUs. None: real GPUs.
    fake_gpu_type: str | None = None


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


def deploy_local(
    dgd: dict,
    *,
    model_dir: Path,
    state_dir: Path,
    max_workers_per_component: int = 2,
    python: str | None = None,
    gpu: GpuWorkers | None = None,
    check_owners: bool | None = None,
) -> LocalDeployment:
    """Start the frontend and one mocker process per worker component (or, with `gpu`, one real engine
    process per replica on its GPUs: infersweep.local.gpu_workers); do not wait for ready.

    `check_owners` (default: with `gpu`) makes wait_ready_local check, once it serves, that every discovery
    entry has a living owner (LocalDeployment.check_owners).

    `model_dir` is built as a toy model if it has no config.json. Raises if processes recorded
    under `state_dir` still run (teardown first); with `gpu`, raises GpuShortfall before starting
    anything when the workers do not fit the GPUs here.
    """
    python = gpu.python if gpu else (python or default_dynamo_python())
    if not (Path(python).exists() or shutil.which(python)):
        raise LocalDeploymentError(
            f"no Dynamo interpreter at {python}: create .venv-dynamo or set INFERSWEEP_DYNAMO_PYTHON"
        )
    state_dir, model_dir = Path(state_dir).resolve(), Path(model_dir).resolve()
    if procs.alive(state_dir):
        raise LocalDeploymentError(f"{state_dir} still has live processes; teardown_local first")
    procs.stop_all(state_dir)  # forget records of dead processes
    components = read_components(dgd)
    if not (model_dir / "config.json").exists():
        build_toy_model(model_dir)

    # Stale registrations of dead workers would be routed to: start from empty discovery.
    discovery_dir = state_dir / "discovery"
    shutil.rmtree(discovery_dir, ignore_errors=True)
    discovery_dir.mkdir(parents=True)
    logs = state_dir / "logs"
    env = dynamo_env(discovery_dir, pin_loopback=gpu is None)
    backend = (dgd.get("spec") or {}).get("backendFramework")

    frontend = next((c for c in components if c.role == "frontend"), None)
    workers = [c for c in components if c.role != "frontend"]
    # Clients ask for the decode/aggregated worker's name; prefill workers serve the same one.
    main = next((c for c in workers if c.role != "prefill"), workers[0])
    http_port = frontend_port(state_dir)
    deployment = LocalDeployment(
        name=(dgd.get("metadata") or {}).get("name", "dgd"),
        state_dir=str(state_dir),
        frontend_url=f"http://127.0.0.1:{http_port}",
        model_name=served_model_name(main),
        router_mode=router_mode_of(frontend),
        model_dir=str(model_dir),
        created_at=time.time(),
        check_owners=gpu is not None if check_owners is None else check_owners,
    )
    group = procs.ProcessGroup(state_dir)
    if gpu is not None:
        return _deploy_gpu(
            deployment,
            group,
            frontend,
            workers,
            env,
            logs,
            gpu=gpu,
            model_dir=model_dir,
            http_port=http_port,
            state_dir=state_dir,
        )
    try:
        if deployment.check_owners:
            _spawn_discovery_keeper(group, state_dir, env, logs)
        for comp in workers:
            # A multinode replica spans nodeCount pods; each counts as a worker here.
            num_workers = max(1, min(comp.replicas * comp.node_count, max_workers_per_component))
            engine = engine_of(comp, backend)
            argv = mocker_argv(
                comp,
                python=python,
                model_dir=model_dir,
                num_workers=num_workers,
                kv_router=router_mode_of(frontend) == "kv",
                engine=engine,
            )
            from infersweep.predict.local_timing import timing_table_args  # calibrated timing (issue 15)

            argv += timing_table_args(dgd, comp.role, state_dir)
            group.spawn(comp.name, argv, env, logs / f"{comp.name}.log", cwd=state_dir)
            deployment.components.append(
                {
                    "name": comp.name,
                    "role": comp.role,
                    "engine": engine,
                    "module": comp.module,
                    "replicas": comp.replicas,
                    "node_count": comp.node_count,
                    "num_workers": num_workers,
                    "model_name": served_model_name(comp),
                    "kv_events": publishes_kv_events(comp),
                }
            )
        name = frontend.name if frontend else "Frontend"
        argv = frontend_argv(frontend, python=python, http_port=http_port)
        group.spawn(name, argv, env, logs / f"{name}.log", cwd=state_dir)
    except BaseException:
        procs.stop_all(state_dir, grace_s=2)
        raise
    deployment.processes = group.records()
    deployment.save()
    return deployment


DISCOVERY_KEEPER = "DiscoveryKeeper"
ADOPTIONS_FILE = "discovery-adoptions.jsonl"


def _spawn_discovery_keeper(group: "procs.ProcessGroup", state_dir: Path, env: dict[str, str], logs: Path) -> None:
    """The deployment's keeper of discovery entries its living workers lost (infersweep.local.discovery_keeper:
    ai-dynamo 1.3.1's file store orphaned one in 5 of 5 H200 starts). A process of the deployment like the others:
    torn down with them, and its exit fails the wait like theirs."""
    from infersweep.local import discovery_keeper

    (state_dir / ADOPTIONS_FILE).unlink(missing_ok=True)  # a fresh store: nothing of it adopted yet
    argv = [
        sys.executable,
        discovery_keeper.__file__,  # standard library only: runs as a script under the tool's interpreter
        "--store",
        str(state_dir / "discovery"),
        "--adoptions",
        str(state_dir / ADOPTIONS_FILE),
    ]
    group.spawn(DISCOVERY_KEEPER, argv, env, logs / f"{DISCOVERY_KEEPER}.log", cwd=state_dir)


def _deploy_gpu(
    deployment: LocalDeployment,
    group: "procs.ProcessGroup",
    frontend: Component | None,
    workers: list[Component],
    env: dict[str, str],
    logs: Path,
    *,
    gpu: GpuWorkers,
    model_dir: Path,
    http_port: int,
    state_dir: Path,
) -> LocalDeployment:
    from infersweep.local.fake_gpu import fake_gpu_count, fake_gpus
    from infersweep.local.gpu_workers import detect_gpus, engine_pythons, plan_workers

    if gpu.gpus:
        gpus = list(gpu.gpus)
    else:  # a step's deploy: the GPUs here, or the fake ones the run was started with
        gpus = fake_gpus(fake_gpu_count(), gpu.fake_gpu_type) if gpu.fake_gpu_type else detect_gpus()
    base_env = env | engine_cache_env(gpu.engine_cache) | {"HF_HOME": str(state_dir / "hf-home")}
    plan = plan_workers(
        workers,
        gpus,
        python=gpu.python,
        model_dir=str(model_dir),
        weights=gpu.weights,
        base_env=base_env,
        free_port=free_port,
        served_name_of=served_model_name,
        pythons=engine_pythons(),
    )
    try:
        # After the plan: a GpuShortfall above has started nothing, the keeper included.
        if deployment.check_owners:
            _spawn_discovery_keeper(group, state_dir, env, logs)
        by_name = {c.name: c for c in workers}
        runs = {w.name: w.argv for w in plan}
        if gpu.fake_gpu_type:
            # The last moment: the rendered engine command stays recorded (rendered_argv) as what would have run.
            runs = {w.name: fake_engine_argv(by_name[w.component], w.argv, model_dir, frontend) for w in plan}
        for w in plan:
            group.spawn(w.name, runs[w.name], w.env, logs / f"{w.name}.log", cwd=state_dir)
        for comp in workers:
            mine = [w for w in plan if w.component == comp.name]
            deployment.components.append(
                {
                    "name": comp.name,
                    "role": comp.role,
                    "engine": engine_of(comp),
                    "module": comp.module,
                    "replicas": comp.replicas,
                    "node_count": comp.node_count,
                    "num_workers": len(mine),
                    "model_name": served_model_name(comp),
                    "kv_events": publishes_kv_events(comp),
                    "workers": [
                        {
                            "name": w.name,
                            "gpus": w.gpus,
                            "memory_fraction": w.memory_fraction,
                            "system_port": int(w.env["DYN_SYSTEM_PORT"]),
                            "kv_events_port": w.kv_events_port,
                            "weights": gpu.weights,
                        }
                        | (
                            {
                                "fake_gpu": True,
                                "rendered_argv": w.argv,
                                "cuda_visible_devices": w.env["CUDA_VISIBLE_DEVICES"],
                            }
                            if gpu.fake_gpu_type
                            else {}
                        )
                        for w in mine
                    ],
                }
            )
        name = frontend.name if frontend else "Frontend"
        group.spawn(
            name,
            frontend_argv(frontend, python=gpu.python, http_port=http_port),
            env,
            logs / f"{name}.log",
            cwd=state_dir,
        )
    except BaseException:
        procs.stop_all(state_dir, grace_s=10)
        raise
    deployment.processes = group.records()
    deployment.save()
    return deployment


def fake_engine_argv(comp: Component, rendered: list[str], model_dir: Path, frontend: Component | None) -> list[str]:
    """Under INFERSWEEP_FAKE_GPU: the rendered engine command of one replica replaced by Dynamo's mocker (one
    simulated engine, the component's engine flags translated) behind infersweep/local/fake_engine.py."""
    from infersweep.local.fake_gpu import engine_launcher

    python = default_dynamo_python()
    mocker = mocker_argv(
        comp,
        python=python,
        model_dir=Path(model_dir),
        num_workers=1,
        kv_router=router_mode_of(frontend) == "kv",
        engine=engine_of(comp),
    )
    return engine_launcher(comp.role, rendered, mocker, python=python)


def load_local(state_dir: Path) -> LocalDeployment:
    path = Path(state_dir) / DEPLOYMENT_FILE
    if not path.exists():
        raise FileNotFoundError(f"no local deployment in {state_dir} ({DEPLOYMENT_FILE} missing)")
    return LocalDeployment.from_dict(json.loads(path.read_text()))


def teardown_local(state_dir: Path, grace_s: float = 5) -> list[dict]:
    """Stop every process of the deployment (idempotent). Returns the records stopped."""
    return procs.stop_all(state_dir, grace_s=grace_s)


def _fail_if_any_exited(deployment: LocalDeployment) -> None:
    for record in deployment.processes:
        if not procs.record_alive(record):
            code = procs.exit_code(record)
            how = "" if code is None else f" with code {code}"
            raise LocalDeploymentError(
                f"{record['name']} (pid {record['pid']}) exited{how} before "
                f"{deployment.name} was ready: {shlex.join(record['argv'])}\n"
                + procs.format_tails([record["log_path"]], lines=40)
            )


def registered_workers(state_dir: Path) -> int | None:
    """Worker model cards in the deployment's file discovery store, one per running engine.

    Relies on Dynamo 1.6's store layout (`v1/mdc/...`); None when that layout is not there, so a
    future layout change skips this check instead of blocking readiness.
    """
    cards = Path(state_dir) / "discovery" / "v1" / "mdc"
    if not cards.is_dir():
        return None
    return sum(1 for p in cards.rglob("*") if p.is_file())


LOST_REGISTRATION_GRACE_S = 30.0  # three times Dynamo's file discovery TTL (10 s)


def lost_registration_message(deployment: LocalDeployment) -> str:
    """Why a deployment that served stopped serving with every process alive, with the evidence."""
    expired = []
    for r in deployment.processes:
        try:
            with open(r["log_path"], "rb") as f:  # the whole log: the line is early, polls follow it
                expired += [
                    procs.strip_ansi(line.decode("utf-8", "replace")).strip()[:300] for line in f if b"Expired" in line
                ]
        except OSError:
            continue
    pids = ", ".join(f"{r['name']}={r['pid']}" for r in deployment.processes)
    return (
        f"{deployment.name} served {deployment.model_name} before, every process is still running ({pids}), "
        f"but the frontend no longer serves it after {LOST_REGISTRATION_GRACE_S:.0f}s: the workers' discovery "
        "entries expired (Dynamo's file discovery store drops an entry not touched for 10 s). Tear the "
        "deployment down and run again (--resume keeps the points measured so far)."
        + ("\nfrom the logs: " + "\n  ".join(expired[-3:]) if expired else "")
    )


def wait_ready_local(state_dir: Path, timeout_s: float = 60) -> float:
    """Wait until every worker has registered, the frontend lists the model and answers one
    chat completion. Returns the seconds it took.

    Fails at once (LocalDeploymentError, with the log tail) if a process of the deployment has
    exited; TimeoutError after `timeout_s` otherwise.
    """
    deployment = load_local(state_dir)
    start = time.monotonic()
    logs = [r["log_path"] for r in deployment.processes]
    expected = sum(c["num_workers"] for c in deployment.components)

    def remaining() -> float:
        return max(0.0, timeout_s - (time.monotonic() - start))

    # A benchmark that starts while one of two workers is still registering measures the wrong
    # deployment: wait for all of them (the frontend alone would be content with one).
    while (count := registered_workers(state_dir)) is not None and count < expected:
        _fail_if_any_exited(deployment)
        if remaining() <= 0:
            raise TimeoutError(
                f"only {count}/{expected} workers of {deployment.name} registered "
                f"after {timeout_s:.0f}s\n" + procs.format_tails(logs)
            )
        time.sleep(0.1)

    # Serving before, every process alive and none restarted since, yet the model is gone: the workers'
    # discovery entries expired. Dynamo's file discovery store deletes an entry its owner has not touched
    # for 10 s, from any process (lib/runtime/src/storage/kv/file.rs: DEFAULT_TTL, Directory.keep_alive,
    # delete_expired_files); measured on the H200 with ai-dynamo 1.3.1 (benchmarks/measured/h200-2026-12-01/
    # qwen3-32b-bf16-lost-registration): the frontend logged "Expired" 10.5 s after the worker registered,
    # answered 503 to every request, and the next point waited for its 1800 s ready timeout. Nothing comes
    # back by itself, so say so after three TTLs instead of waiting. (Why the keep-alive skipped it is not
    # established; docs/measured-h200.md reads file.rs's check-then-insert of a bucket's Directory as a race.)
    lost = bool(deployment.ready_at) and all(r.get("started_at", 0) < deployment.ready_at for r in deployment.processes)

    def check() -> None:
        _fail_if_any_exited(deployment)
        if lost and time.monotonic() - start > LOST_REGISTRATION_GRACE_S:
            raise LocalDeploymentError(lost_registration_message(deployment))

    procs.wait_http(
        f"{deployment.frontend_url}/v1/models",
        remaining(),
        lambda answer: any(m.get("id") == deployment.model_name for m in (answer or {}).get("data", [])),
        log_paths=logs,
        check=check,
    )
    # Listed is not yet servable (disagg waits for prefill activation): retry one real request.
    procs.wait_http(
        f"{deployment.frontend_url}/v1/chat/completions",
        remaining(),
        lambda answer: bool((answer or {}).get("choices")),
        body={
            "model": deployment.model_name,
            "max_tokens": 4,
            "stream": False,
            "messages": [{"role": "user", "content": "are you ready ?"}],
        },
        log_paths=logs,
        check=check,
    )
    if not deployment.ready_at:
        deployment.ready_at = time.time()
        deployment.save()
    fresh = deployment.check_owners and [
        r["started_at"] for r in deployment.processes if r.get("started_at", 0) > deployment.owners_checked_at
    ]
    if fresh:
        from infersweep.local.discovery_owners import unowned_entries

        checked_at = time.time()
        unowned = unowned_entries(Path(state_dir) / "discovery", since=min(fresh))
        if unowned:
            raise UnownedDiscoveryEntries(deployment.name, unowned)
        from infersweep.local.discovery_keeper import read_adoptions

        for a in read_adoptions(Path(state_dir) / ADOPTIONS_FILE):
            print(
                f"local deploy: {deployment.name}: discovery entry {a['entry']} was lost by its living writer "
                f"({a['age_s']} s without a touch) and is kept alive by infersweep's keeper "
                "(infersweep/local/discovery_keeper.py)"
            )
        deployment.owners_checked_at = checked_at
        deployment.save()
    return time.monotonic() - start
