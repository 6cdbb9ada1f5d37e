"""Waiting for a local deployment to serve: every worker registered, the model listed, one chat completion
answered; a process that exits, or a registration that is lost, fails the wait at once with the evidence.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path

from infersweep.local.dynamo import procs
from infersweep.local.dynamo.deployment import (
    ADOPTIONS_FILE,
    LocalDeployment,
    LocalDeploymentError,
    UnownedDiscoveryEntries,
    load_local,
)


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
        from infersweep.local.dynamo.discovery_owners import unowned_entries

        checked_at = time.time()
        unowned = unowned_entries(Path(state_dir) / "discovery", since=min(fresh))
        if unowned:
            raise UnownedDiscoveryEntries(deployment.name, unowned)
        from infersweep.local.dynamo.discovery_keeper import read_adoptions

        for a in read_adoptions(Path(state_dir) / ADOPTIONS_FILE):
            print(
                f"local deploy: {deployment.name}: discovery entry {a['entry']} was lost by its living writer "
                f"({a['age_s']} s without a touch) and is kept alive by infersweep's keeper "
                "(infersweep/local/dynamo/discovery_keeper.py)"
            )
        deployment.owners_checked_at = checked_at
        deployment.save()
    return time.monotonic() - start
