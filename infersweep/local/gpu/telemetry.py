"""NVML samples of this machine's GPUs while a local GPU run goes on: what DCGM gives a cluster run.

One thread in the `run --local --workers gpu` process reads, every `period_s`, each GPU's power draw
(nvmlDeviceGetPowerUsage, mW), its energy counter since the driver loaded (nvmlDeviceGetTotalEnergyConsumption,
mJ: Volta and later), SM and memory utilisation over the driver's last sample period
(nvmlDeviceGetUtilizationRates, %) and memory used (nvmlDeviceGetMemoryInfo), and appends one JSON line per
sample to a file. The summarize step turns the samples inside each point's window into the table's GPU
columns (infersweep.results.gpu_telemetry). NVML comes from nvidia-ml-py (`import pynvml`).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

# The engine counters a KV-routing comparison needs, from each worker's /metrics (vLLM 0.23
# v1/metrics/loggers.py PrometheusStatLogger: prefix cache queries and hits, in tokens; requests), through
# the Dynamo worker's system server (DYN_SYSTEM_PORT).
WORKER_METRICS = (
    "vllm:prefix_cache_queries",
    "vllm:prefix_cache_hits",
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:prompt_tokens",
    "vllm:generation_tokens",
    "vllm:request_success",
)


def worker_ports(workers_dir: Path) -> list[tuple[str, int]]:
    """(worker name, system port) of every GPU worker recorded under <state>/dgd/*/deployment.json."""
    out = []
    for f in sorted(Path(workers_dir).glob("*/deployment.json")):
        try:
            dep = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        for comp in dep.get("components", []):
            for w in comp.get("workers", []):
                if w.get("system_port"):
                    out.append((f"{f.parent.name}/{w['name']}", int(w["system_port"])))
    return out


def scrape_worker(port: int, timeout_s: float = 2.0) -> dict[str, float]:
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout_s) as r:
        text = r.read().decode(errors="replace")
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        base = name.removesuffix("_total")
        if base in WORKER_METRICS:
            try:
                out[base] = out.get(base, 0.0) + float(line.rsplit(" ", 1)[1])
            except ValueError:
                continue
    return out


def _fields(nv, h) -> dict[str, float]:
    """One GPU's readings; a field this GPU or driver does not report stays absent."""
    out: dict[str, float] = {}

    def take(read) -> None:
        try:
            out.update(read())
        except nv.NVMLError:
            pass

    take(lambda: {"power_w": nv.nvmlDeviceGetPowerUsage(h) / 1000.0})
    take(lambda: {"energy_j": nv.nvmlDeviceGetTotalEnergyConsumption(h) / 1000.0})
    take(lambda: (lambda u: {"sm_util_pct": u.gpu, "mem_util_pct": u.memory})(nv.nvmlDeviceGetUtilizationRates(h)))
    take(lambda: {"mem_used_mib": nv.nvmlDeviceGetMemoryInfo(h).used / 2**20})
    return out


class NvmlSampler:
    def __init__(
        self,
        out: Path,
        period_s: float = 0.25,
        gpus: list[int] | None = None,
        workers_dir: Path | None = None,
        workers_out: Path | None = None,
        workers_period_s: float = 2.0,
    ):
        self.out = Path(out)
        self.period_s = period_s
        self.gpus = gpus
        self.workers_dir, self.workers_out, self.workers_period_s = workers_dir, workers_out, workers_period_s
        self._last_workers = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None
        self.samples = 0

    def start(self, nvml=None) -> "NvmlSampler":
        """`nvml`: the NVML binding (default: nvidia-ml-py's pynvml); infersweep.local.gpu.fake_gpu.FakeNvml for fake GPUs,
        whose samples say `"fake": true`."""
        if nvml is None:
            import pynvml as nvml  # nvidia-ml-py: the host's NVML binding
        pynvml = nvml
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        self._handles = [
            (i, pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(count) if self.gpus is None or i in self.gpus
        ]
        self._nvml = pynvml
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._run, name="nvml-sampler", daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> list[dict]:
        nv = self._nvml
        now = time.time_ns()
        rows = []
        for i, h in self._handles:
            row = {"t_ns": now, "gpu": i} | ({"fake": True} if getattr(nv, "FAKE", False) else {})
            row.update(_fields(nv, h))
            rows.append(row)
        return rows

    def _workers(self) -> None:
        if not (self.workers_dir and self.workers_out) or time.monotonic() - self._last_workers < self.workers_period_s:
            return
        self._last_workers = time.monotonic()
        rows = []
        for name, port in worker_ports(self.workers_dir):
            try:
                rows.append({"t_ns": time.time_ns(), "worker": name} | scrape_worker(port))
            except Exception:  # a worker still starting, or gone: no row this time
                continue
        if rows:
            with self.workers_out.open("a") as f:
                f.write("".join(json.dumps(r) + "\n" for r in rows))

    def _run(self) -> None:
        with self.out.open("a") as f:
            while not self._stop.is_set():
                try:
                    for row in self._sample():
                        f.write(json.dumps(row) + "\n")
                        self.samples += 1
                    f.flush()
                    self._workers()
                except Exception as e:  # telemetry enriches a run, it never stops one
                    self.error = str(e)
                    return
                self._stop.wait(self.period_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        try:
            self._nvml.nvmlShutdown()
        except Exception:
            pass
