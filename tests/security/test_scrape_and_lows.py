"""Issue 42 Medium 5 and the lows: the scrape talks only to the configured Prometheus and never echoes what a
server answered; S3 keys stay under their destination."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest

from infersweep.results import server_metrics
from infersweep.results.s3 import UnsafeKey, contained
from infersweep.results.server_metrics import ScopeError, check_prometheus_url

PROM = "http://prometheus-operated.monitoring.svc.cluster.local:9090"


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/#",
        "http://169.254.169.254",
        "http://attacker.example:9090",
        PROM + "/?x=1",
        PROM + "#",
        "http://user:pw@prometheus-operated.monitoring.svc.cluster.local:9090",
        "file:///etc/passwd",
    ],
)
def test_the_scrape_refuses_any_url_but_the_configured_prometheus(url, monkeypatch):
    monkeypatch.delenv("INFERSWEEP_PLATFORM", raising=False)
    with pytest.raises(ScopeError, match="prometheus-url"):
        check_prometheus_url(url, configured=PROM)


def test_the_configured_prometheus_and_local_modes_own_are_allowed(monkeypatch):
    check_prometheus_url(PROM + "/", configured=PROM)
    with pytest.raises(ScopeError):
        check_prometheus_url("http://127.0.0.1:9090", configured="", platform="cluster")
    check_prometheus_url("http://127.0.0.1:9090", configured="", platform="local")


class _Leaky(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        body = b'{"status":"error","errorType":"bad_data","error":"SECRET-AccessKeyId-AKIAPLANTED"}'
        self.send_response(400 if "err" in self.path else 200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body if "err" not in self.path else b"SECRET-AccessKeyId-AKIAPLANTED")

    def log_message(self, *a):
        pass


def test_a_failing_prometheus_answer_is_never_echoed(tmp_path):
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Leaky)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_port}"
    try:
        with pytest.raises(RuntimeError) as e:
            server_metrics.range_query(base, "up", 0, 1, 1)
        assert "AKIAPLANTED" not in str(e.value) and "bad_data" in str(e.value)
        with pytest.raises(Exception) as e2:
            server_metrics.range_query(base + "/err", "up", 0, 1, 1)
        assert "AKIAPLANTED" not in server_metrics._failure(e2.value)
    finally:
        srv.shutdown()


@pytest.mark.parametrize("rel", ["../../home/u/.bashrc", "a/../../x", "/etc/passwd", ""])
def test_an_s3_key_cannot_leave_the_destination(tmp_path, rel):
    with pytest.raises(UnsafeKey):
        contained(tmp_path / "dest", rel)


def test_a_plain_key_lands_under_the_destination(tmp_path):
    assert (
        contained(tmp_path / "dest", "points/c8/result.json") == (tmp_path / "dest" / "points/c8/result.json").resolve()
    )
    assert isinstance(contained(tmp_path, "x"), Path)
