"""Which engine process gets which GPU: the process plan of local mode's real workers (``--workers gpu``).

A DGD's worker components become real engine workers here (``python -m dynamo.vllm`` with the rendered
flags as they are), one process per replica, instead of Dynamo's mocker. This module only plans: every
rule is a pure function of the DGD's components and the GPUs found, so the CPU-only test tier checks it.

- GPUs per replica: tensor x pipeline x data parallel size, from the engine's own flags (vLLM
  ``--tensor-parallel-size``/``-tp``, ``--pipeline-parallel-size``/``-pp``, ``--data-parallel-size``/``-dp``;
  SGLang ``--tp-size``/``--tp``, ``--pp-size``, ``--dp-size``/``--dp``). SGLang's DP attention
  (``--enable-dp-attention``) runs its DP ranks inside the TP group: TP x PP GPUs (sglang 0.5.14
  srt/managers/data_parallel_controller.py: launch_dp_schedulers gives each DP rank tp_size x pp_size GPUs,
  launch_dp_attention_schedulers one TP group). A multinode replica's ranks are all on this host.
- The interpreter: ``python -m dynamo.<engine>`` runs in the interpreter given for its engine (``pythons``:
  e.g. the GPU bundle's venv-site-sglang for dynamo.sglang, $INFERSWEEP_GPU_PYTHON_SGLANG: SGLang and vLLM
  pin different transformers/xgrammar, so each has its own site), else the default one.
- Sharing: a worker that states its memory fraction (vLLM ``--gpu-memory-utilization``, SGLang
  ``--mem-fraction-static``) may share GPUs with others as long as the fractions on each GPU add up to at
  most 1; a worker without one owns its GPUs (vLLM's default fraction is 0.9: a second engine on that GPU
  would fail at start, after minutes).
- Not enough GPUs: one error naming the components, the GPUs they need and the GPUs here, and the fix,
  before any process starts.
- The model: ``--model`` (vLLM) / ``--model-path`` (SGLang) points at the local model folder; the name
  clients use stays the recipe's (``--served-model-name``). Random weights of the real architecture
  (``--load-format dummy`` over a config-only folder) give real kernels without a weights download.
- KV events: each worker publishes on a port of its own (several engines on one host would all bind the
  rendered ``tcp://*:20080``); the rest of the rendered ``--kv-events-config`` is kept.
- SGLang PD: each prefill worker gets a bootstrap port of its own (the rendered ``12345`` is one port per
  pod); its decode peers learn it from the prefill's own server args through Dynamo (ai-dynamo 1.3.1
  dynamo/sglang/_disagg.py reads ``server_args.disaggregation_bootstrap_port``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from infersweep.local.gpu.engine_flags import drop_flags, flag_value
from infersweep.platform.protocol import BadInput

# Flags that size a replica (engine spellings; the value is an integer).
TP_FLAGS = ("--tensor-parallel-size", "-tp", "--tp-size", "--tp")
PP_FLAGS = ("--pipeline-parallel-size", "-pp", "--pp-size")
DP_FLAGS = ("--data-parallel-size", "-dp", "--dp-size", "--dp")
MEM_FRACTION_FLAGS = ("--gpu-memory-utilization", "--mem-fraction-static")
MODEL_FLAGS = ("--model", "--model-path")
SERVED_NAME_FLAGS = ("--served-model-name",)
LOAD_FORMAT_FLAGS = ("--load-format",)
KV_EVENTS_FLAG = "--kv-events-config"
DP_INSIDE_TP_SWITCH = "--enable-dp-attention"  # SGLang: DP attention ranks share the TP group's GPUs
BOOTSTRAP_PORT_FLAG = "--disaggregation-bootstrap-port"  # SGLang PD: where a prefill worker's peers connect
# The interpreter per engine module: $INFERSWEEP_GPU_PYTHON_<ENGINE> (e.g. ..._SGLANG for dynamo.sglang).
ENGINE_PYTHON_ENV = "INFERSWEEP_GPU_PYTHON_"
WEIGHTS = ("dummy", "cache")  # random weights of the real architecture | the weights in the model folder
EPS = 1e-6


class GpuShortfall(BadInput):
    """The recipe's workers do not fit this machine's GPUs; the message says what is missing and the fix."""


@dataclass(frozen=True)
class GpuWorkers:
    """Local mode's real-engine workers (``--workers gpu``): which interpreter runs Dynamo and the engine
    (one that has ai-dynamo + the engine, e.g. the GPU bundle's venv-site-vllm), the weights, and where the
    engine's compile caches live (kept between runs: the cluster analogue is a compile cache on the model PVC)."""

    python: str
    weights: str = "dummy"
    engine_cache: str | None = None
    gpus: tuple = ()  # Gpu; empty: detect with nvidia-smi
    # INFERSWEEP_FAKE_GPU (infersweep.local.gpu.fake_gpu): the fake GPUs' type; each engine process is replaced by
    # Dynamo's mocker at spawn, everything else runs as for real GPUs. None: real GPUs.
    fake_gpu_type: str | None = None


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    memory_mib: int


@dataclass
class WorkerProcess:
    """One engine process: a replica of a DGD component on its GPUs."""

    name: str  # <component>-<replica>
    component: str
    role: str
    gpus: list[int]
    memory_fraction: float | None
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    kv_events_port: int | None = None


def _int_flag(args: Sequence[str], names: Sequence[str], what: str, component: str) -> int:
    raw = flag_value(args, *names)
    if raw is None:
        return 1
    try:
        n = int(raw)
    except ValueError:
        raise BadInput(f"component {component}: {names[0]} {raw!r} is not an integer ({what})") from None
    if n < 1:
        raise BadInput(f"component {component}: {names[0]} {n} must be at least 1 ({what})")
    return n


def gpus_per_replica(args: Sequence[str], component: str = "?") -> int:
    tp_pp = _int_flag(args, TP_FLAGS, "tensor parallel size", component) * _int_flag(
        args, PP_FLAGS, "pipeline parallel size", component
    )
    dp = _int_flag(args, DP_FLAGS, "data parallel size", component)
    return tp_pp if DP_INSIDE_TP_SWITCH in args else tp_pp * dp


def engine_pythons(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """dynamo.<engine> -> the interpreter its workers run in, from $INFERSWEEP_GPU_PYTHON_<ENGINE>."""
    env = os.environ if environ is None else environ
    return {
        f"dynamo.{k[len(ENGINE_PYTHON_ENV) :].lower()}": v
        for k, v in env.items()
        if k.startswith(ENGINE_PYTHON_ENV) and len(k) > len(ENGINE_PYTHON_ENV) and v
    }


def memory_fraction(args: Sequence[str], component: str = "?") -> float | None:
    raw = flag_value(args, *MEM_FRACTION_FLAGS)
    if raw is None:
        return None
    try:
        f = float(raw)
    except ValueError:
        raise BadInput(f"component {component}: memory fraction {raw!r} is not a number") from None
    if not 0 < f <= 1:
        raise BadInput(f"component {component}: memory fraction {f} must be in (0, 1]")
    return f


def assign_gpus(demands: list[tuple[str, int, float | None]], gpus: Sequence[Gpu]) -> list[list[int]]:
    """GPU indices for each (name, gpus needed, memory fraction or None) in order, first fit.

    A replica's GPUs are the first `n` GPUs that each still have room for its fraction (exclusive: 1.0).
    Raises GpuShortfall naming every demand that did not fit and how to make it fit.
    """
    free = {g.index: 1.0 for g in gpus}
    out: list[list[int]] = []
    missing: list[str] = []
    for name, n, frac in demands:
        need = 1.0 if frac is None else frac
        picks = [i for i in sorted(free) if free[i] + EPS >= need][:n]
        if len(picks) < n:
            missing.append(
                f"{name} needs {n} GPU{'s' if n > 1 else ''} with "
                f"{'the whole GPU' if frac is None else f'a {frac:g} memory fraction'} each"
            )
            out.append([])
            continue
        for i in picks:
            free[i] -= need
        out.append(picks)
    if missing:
        total = sum(n * (1.0 if f is None else f) for _, n, f in demands)
        here = ", ".join(f"{g.index}: {g.name}" for g in gpus) or "none"
        hint = (
            "give the workers a memory fraction (vLLM --gpu-memory-utilization, SGLang --mem-fraction-static) "
            "so that they share GPUs, e.g. 0.45 for two per GPU, or run on a host with more GPUs"
            if any(f is None for _, _, f in demands)
            else "lower the workers' memory fraction or run on a host with more GPUs"
        )
        raise GpuShortfall(
            f"the workers need {total:g} GPUs' worth and this machine has {len(gpus)} "
            f"({here}): {'; '.join(missing)}; {hint}"
        )
    return out


def kv_events_config(raw: str, port: int) -> str:
    """The rendered --kv-events-config with its endpoint on `port` (same publisher, topic and switch)."""
    try:
        cfg = json.loads(raw)
    except json.JSONDecodeError:
        raise BadInput(f"{KV_EVENTS_FLAG} {raw!r} is not JSON") from None
    endpoint = str(cfg.get("endpoint") or "tcp://*:20080")
    head = endpoint.rsplit(":", 1)[0] if endpoint.count(":") >= 2 else "tcp://*"
    cfg["endpoint"] = f"{head}:{port}"
    return json.dumps(cfg, separators=(",", ":"))


def worker_argv(
    module: str,
    args: Sequence[str],
    *,
    python: str,
    model_dir: str,
    served_name: str,
    weights: str,
    kv_port: int | None,
    bootstrap_port: int | None = None,
) -> list[str]:
    """The engine command line: the rendered args with the model, weights, KV-events port and (SGLang
    prefill) bootstrap port made local."""
    if weights not in WEIGHTS:
        raise BadInput(f"--weights {weights!r}: choose one of {', '.join(WEIGHTS)}")
    model_flag = next((f for f in MODEL_FLAGS if flag_value(args, f) is not None), MODEL_FLAGS[0])
    kv_raw = flag_value(args, KV_EVENTS_FLAG)
    local = (*MODEL_FLAGS, *SERVED_NAME_FLAGS, *LOAD_FORMAT_FLAGS, KV_EVENTS_FLAG)
    rest = drop_flags(args, local + ((BOOTSTRAP_PORT_FLAG,) if bootstrap_port is not None else ()))
    argv = [python, "-m", module, model_flag, model_dir, "--served-model-name", served_name, *rest]
    if weights == "dummy":
        argv += ["--load-format", "dummy"]  # vLLM and SGLang both name random weights so (LoadFormat.DUMMY)
    if kv_raw is not None and kv_port is not None:
        argv += [KV_EVENTS_FLAG, kv_events_config(kv_raw, kv_port)]
    if bootstrap_port is not None:
        argv += [BOOTSTRAP_PORT_FLAG, str(bootstrap_port)]
    return argv


def _sglang_prefill(module: str, args: Sequence[str]) -> bool:
    return module == "dynamo.sglang" and flag_value(args, "--disaggregation-mode") == "prefill"


def system_port(low: int = 20000, high: int = 32767) -> int:
    """A TCP port free right now in [low, high): what Dynamo's system server accepts (an i16)."""
    import random
    import socket

    for port in random.sample(range(low, high), 200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise BadInput(f"no free TCP port in [{low}, {high}) for a worker's system server")


@dataclass(frozen=True)
class EngineLaunch:
    """How every engine worker starts here: the interpreter (`pythons`: module -> the interpreter of that engine's
    workers, engine_pythons(); else `python`), the model folder it loads, the weights (WEIGHTS)."""

    python: str
    model_dir: str
    weights: str
    pythons: Mapping[str, str] | None = None


def plan_workers(
    components: Sequence,
    gpus: Sequence[Gpu],
    launch: EngineLaunch,
    *,
    base_env: dict[str, str],
    free_port: Callable[[], int],
    served_name_of: Callable[[object], str],
) -> list[WorkerProcess]:
    """One WorkerProcess per replica of every non-frontend component, GPUs assigned first fit.

    `components` are infersweep.local.dynamo.dgd_reader.Component (name, role, replicas, node_count, module, args, env).
    """
    workers = [c for c in components if c.role != "frontend"]
    for c in workers:
        if not c.module:
            raise BadInput(
                f"component {c.name}: its container runs no `python -m dynamo.<engine>` that local "
                "mode can start on a GPU"
            )
        if c.module == "dynamo.mocker":
            raise BadInput(f"component {c.name} is a mocker: --workers gpu starts engine workers; use --workers mocker")
    demands, replicas = [], []
    for c in workers:
        n = gpus_per_replica(c.args, c.name) * (c.node_count if c.node_count > 1 else 1)
        frac = memory_fraction(c.args, c.name)
        for r in range(c.replicas):
            demands.append((f"{c.name}[{r}]", n, frac))
            replicas.append((c, r, frac))
    assigned = assign_gpus(demands, gpus)
    plan = []
    for (c, r, frac), gpu_ids in zip(replicas, assigned, strict=True):
        kv_port = free_port() if flag_value(c.args, KV_EVENTS_FLAG) is not None else None
        bootstrap = free_port() if _sglang_prefill(c.module, c.args) else None
        argv = worker_argv(
            c.module,
            c.args,
            python=(launch.pythons or {}).get(c.module, launch.python),
            model_dir=launch.model_dir,
            served_name=served_name_of(c),
            weights=launch.weights,
            kv_port=kv_port,
            bootstrap_port=bootstrap,
        )
        env = dict(base_env)
        # The rendered container env (e.g. HF_HOME pointing at the PVC mount) does not exist here: the
        # local model folder and caches replace it, so only engine tuning variables are kept.
        env.update({k: v for k, v in c.env.items() if k.startswith(("VLLM_", "SGLANG_", "NCCL_", "UCX_"))})
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in gpu_ids)
        # The worker's /metrics and /health (prefix-cache counters). Dynamo reads DYN_SYSTEM_PORT as an i16
        # ("invalid value unsigned int `34603`, expected i16 for key SYSTEM_PORT", seen with 1.6.1): below
        # 32768, so not from the kernel's ephemeral range.
        env["DYN_SYSTEM_PORT"] = str(system_port())
        plan.append(WorkerProcess(f"{c.name}-{r}", c.name, c.role, gpu_ids, frac, argv, env, kv_port))
    return plan


def detect_gpus(nvidia_smi: str = "nvidia-smi") -> list[Gpu]:
    """The GPUs this process can see (nvidia-smi's CSV query); [] without a driver. (Fake GPUs under
    $INFERSWEEP_FAKE_GPU replace this call in its callers: infersweep.local.gpu.fake_gpu.)"""
    exe = shutil.which(nvidia_smi)
    if not exe:
        return []
    proc = subprocess.run(
        [exe, "--query-gpu=index,name,memory.total", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if proc.returncode != 0:
        return []
    return parse_nvidia_smi(proc.stdout)


def parse_nvidia_smi(text: str) -> list[Gpu]:
    gpus = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0].isdigit():
            gpus.append(Gpu(int(parts[0]), parts[1], int(float(parts[2]))))
    return gpus
