"""A local deployment's record and settings: `<state_dir>/deployment.json` (+ `processes.json` from procs), so
deploy, readiness, benchmark and teardown can run in different processes; the errors a deployment raises; the
real-engine settings (`--workers gpu`) the adapter hands the deploy.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from infersweep.errors import UserError
from infersweep.local.dynamo import procs
from infersweep.local.gpu.workers import GpuWorkers

DEPLOYMENT_FILE = "deployment.json"

DISCOVERY_KEEPER = "DiscoveryKeeper"  # the deployment's keeper process (infersweep.local.dynamo.discovery_keeper)
ADOPTIONS_FILE = "discovery-adoptions.jsonl"  # what the keeper adopted, read after the wait


class LocalDeploymentError(UserError, RuntimeError):
    """A local deployment could not start or died while starting (the message has the log tail): the run
    failed, exit 1."""

    exit_code = 1


class UnownedDiscoveryEntries(LocalDeploymentError):
    """A fresh deployment serves, but some of its discovery entries have no owner keeping them alive: they
    expire at 10 s and take their worker (or its KV-reset endpoint) out of the frontend
    (infersweep.local.dynamo.discovery_owners). A restart of the deployment registers them afresh."""

    def __init__(self, name: str, entries: list[str]) -> None:
        self.entries = entries
        super().__init__(
            f"{name}: {len(entries)} discovery entr{'y' if len(entries) == 1 else 'ies'} written at start "
            f"{'is' if len(entries) == 1 else 'are'} kept alive by no process and will expire 10 s after "
            f"{'its' if len(entries) == 1 else 'their'} write (Dynamo's file store touches each owned entry "
            f"every 3.3 s; lib/runtime/src/storage/kv/file.rs): {', '.join(entries)}"
        )


@dataclass(frozen=True)
class WorkerStart:
    """How a deployment's workers start, as each of its (re)starts needs to know: mocker workers, at most
    `max_workers` per component (params/local.yaml), Dynamo from `python` (default: .venv-dynamo); or with `gpu`,
    real engine workers on this machine's GPUs."""

    max_workers: int = 2
    python: str | None = None
    gpu: GpuWorkers | None = None


MOCKERS = WorkerStart()  # the default: mocker workers, two per component at most, Dynamo from .venv-dynamo


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
    # (infersweep.local.dynamo.discovery_owners; 8.3 s, next to starts of 1-4 minutes). Mocker runs skip it.
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


def load_local(state_dir: Path) -> LocalDeployment:
    path = Path(state_dir) / DEPLOYMENT_FILE
    if not path.exists():
        raise FileNotFoundError(f"no local deployment in {state_dir} ({DEPLOYMENT_FILE} missing)")
    return LocalDeployment.from_dict(json.loads(path.read_text()))


def teardown_local(state_dir: Path, grace_s: float = 5) -> list[dict]:
    """Stop every process of the deployment (idempotent). Returns the records stopped."""
    return procs.stop_all(state_dir, grace_s=grace_s)
