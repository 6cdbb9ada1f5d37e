"""A real Prometheus (the Debian package's /usr/bin/prometheus) for local runs and tests.

It scrapes every second whatever a file_sd targets file lists. The local platform writes that file when
it deploys a DGD (the frontend's port is only known then), so the runner starts Prometheus first and
passes its URL to the run as the `prometheus-url` parameter, exactly as a cluster run gets its
Prometheus. TSDB in a temporary folder, gone after stop().
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

BINARY = os.environ.get("INFERSWEEP_PROMETHEUS", "/usr/bin/prometheus")
JOB = "dynamo-frontend"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_targets(
    path: Path,
    targets: list[str],
    labels: dict[str, str] | None = None,
    more: list[tuple[list[str], dict[str, str]]] = (),
) -> None:
    """Atomically (re)write a file_sd file: Prometheus must never read half of it. `more`: further target groups
    (targets, labels), e.g. each real engine worker's system port."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    groups = [{"targets": targets, "labels": labels or {}}] + [{"targets": t, "labels": lb} for t, lb in more]
    tmp.write_text(json.dumps(groups))
    tmp.replace(path)


class LocalPrometheus:
    def __init__(
        self,
        targets_file: Path,
        scrape_interval_s: float = 1.0,
        binary: str = BINARY,
        port: int | None = None,
        jobs: tuple[str, ...] = (JOB,),
    ) -> None:
        # `port` may be chosen before start: a run renders the Prometheus URL into its parameters first.
        self.targets_file = Path(targets_file)
        self.interval = f"{int(scrape_interval_s * 1000)}ms"
        self.binary = binary
        self.port: int | None = port
        # Scrape job names (each over the targets file); a test of `preflight` names them as the Prometheus
        # Operator names a PodMonitor's jobs, podMonitor/<namespace>/<name>/<endpoint index>.
        self.jobs = tuple(jobs)
        self.proc: subprocess.Popen | None = None
        self.dir: Path | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("LocalPrometheus not started")
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30) -> "LocalPrometheus":
        if not Path(self.binary).exists():
            raise FileNotFoundError(
                f"{self.binary} not found: apt-get install prometheus (or set INFERSWEEP_PROMETHEUS)"
            )
        self.dir = Path(tempfile.mkdtemp(prefix="infersweep-prom-"))
        if not self.targets_file.exists():
            write_targets(self.targets_file, [])
        config = {
            "global": {
                "scrape_interval": self.interval,
                "scrape_timeout": self.interval,
                "evaluation_interval": self.interval,
            },
            # honor_labels as Dynamo's PodMonitor dynamo-frontend sets it (platform chart,
            # templates/prometheus.yaml): the frontend's own labels win over the target's.
            "scrape_configs": [
                {
                    "job_name": job,
                    "honor_labels": True,
                    "file_sd_configs": [{"files": [str(self.targets_file)], "refresh_interval": "1s"}],
                }
                for job in self.jobs
            ],
        }
        (self.dir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.port = self.port or free_port()
        self.log = open(self.dir / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            [
                self.binary,
                f"--config.file={self.dir / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.dir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                raise RuntimeError(f"prometheus exited at start: {self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise TimeoutError(f"prometheus not ready after {timeout_s} s: {self.tail()}")

    def tail(self, limit: int = 1500) -> str:
        f = self.dir / "prometheus.log" if self.dir else None
        return f.read_text(errors="replace")[-limit:] if f and f.exists() else ""

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # Prometheus shuts down cleanly (TSDB closed) on TERM
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None
        if getattr(self, "log", None):
            self.log.close()
            self.log = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> "LocalPrometheus":
        return self.start()

    def __exit__(self, *exc) -> bool:
        self.stop()
        return False
