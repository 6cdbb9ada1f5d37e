"""A deployment that served and lost its workers' discovery entries fails the wait in seconds, naming why.

Measured on the H200 (benchmarks/measured/h200-2026-12-01/qwen3-32b-bf16-lost-registration): with every
process alive the frontend stopped listing the model after its file discovery entry expired, and the next
point's `deploy --ensure` waited for its 1800 s ready timeout. The frontend here is a real HTTP server that
answers as Dynamo's does after the expiry (an empty model list, logging the expiry)."""

import http.server
import json
import sys
import threading
import time

import pytest

from infersweep.local.dynamo import procs, wait
from infersweep.local.dynamo.deployment import LocalDeployment, LocalDeploymentError
from infersweep.local.dynamo.wait import wait_ready_local

pytestmark = pytest.mark.slow  # real servers or subprocesses, seconds each: outside the inner loop

EXPIRED = (
    "2026-12-01T13:58:03.322400Z  INFO dynamo_runtime::storage::kv::file: Expired "
    'path="/tmp/x/discovery/v1/instances/dynamo%2Fbackend%2Fgenerate%2F796f627bad1494f7"'
)


class _NoModels(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # /v1/models after the expiry: 200, no model
        body = json.dumps({"object": "list", "data": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def frontend():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NoModels)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _deployment(tmp_path, url, *, ready_before_start: bool) -> LocalDeployment:
    log = tmp_path / "Frontend.log"
    log.write_text("\x1b[2mstarting\x1b[0m\n" + EXPIRED + "\n" + "http response sent status=200\n" * 3000)
    group = procs.ProcessGroup(tmp_path)
    group.spawn("Frontend", [sys.executable, "-c", "import time; time.sleep(120)"], {}, log)
    started = procs.read_records(tmp_path)[0]["started_at"]
    dep = LocalDeployment(
        name="qwen-b535ca",
        state_dir=str(tmp_path),
        frontend_url=url,
        model_name="Qwen/Qwen3-32B",
        router_mode="round-robin",
        model_dir=str(tmp_path),
        processes=procs.read_records(tmp_path),
        components=[],
        created_at=started,
        ready_at=started + 60 if ready_before_start else 0.0,
    )
    dep.save()
    return dep


def test_a_deployment_that_served_and_lost_its_registration_fails_fast_and_says_why(tmp_path, frontend, monkeypatch):
    monkeypatch.setattr(wait, "LOST_REGISTRATION_GRACE_S", 1.0)
    _deployment(tmp_path, frontend, ready_before_start=True)
    t0 = time.monotonic()
    try:
        with pytest.raises(LocalDeploymentError) as e:
            wait_ready_local(tmp_path, timeout_s=60)
    finally:
        procs.stop_all(tmp_path, grace_s=1)
    assert time.monotonic() - t0 < 20, "it waited for the ready timeout instead of saying what happened"
    text = str(e.value)
    assert "every process is still running" in text and "discovery" in text and "--resume" in text
    assert "Expired" in text and "\x1b" not in text  # the evidence from the log, without colour codes


def test_a_deployment_still_starting_is_not_called_lost(tmp_path, frontend, monkeypatch):
    """Never served yet (or restarted since it served, as a reconfigure does): the ordinary timeout applies."""
    monkeypatch.setattr(wait, "LOST_REGISTRATION_GRACE_S", 0.5)
    _deployment(tmp_path, frontend, ready_before_start=False)
    try:
        with pytest.raises(TimeoutError):
            wait_ready_local(tmp_path, timeout_s=3)
    finally:
        procs.stop_all(tmp_path, grace_s=1)
