"""infersweep.aiperf (read_point), steps.aiperf_results and steps.aiperf_point on real AIPerf 0.13.0 artifact dirs.

The fixtures in tests/fixtures/aiperf/0.13.0 were measured: a good run and four ways a run
goes wrong while AIPerf (mostly) exits 0. The point-step tests use a fake `aiperf` program so
the signal handling can be checked in a second, not in a real benchmark.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infersweep.aiperf import iter_profiling_records, read_point
from steps import aiperf_point
from tests.conftest import copy_tree
from tests.support.paths import REPO

# ---------------------------------------------------------------- read_point on the fixtures


def test_good_run_is_ok_with_its_numbers(aiperf_ref):
    r = read_point(aiperf_ref / "dynamo-mocker-c4")
    assert r["status"] == "ok", r["reason"]
    assert (r["requests_ok"], r["requests_failed"], r["error_rate"]) == (40, 0, 0.0)
    assert r["is_complete"] is True and r["was_cancelled"] is False
    m = r["metrics"]
    assert m["ttft_p50_ms"] == pytest.approx(37.2, abs=0.01)
    assert m["ttft_p99_ms"] == pytest.approx(64.05, abs=0.01)
    assert m["itl_p50_ms"] == pytest.approx(1.3455, abs=1e-3)
    assert m["request_latency_avg_ms"] == pytest.approx(61.46, abs=0.01)
    assert m["ttst_max_ms"] == pytest.approx(45.53, abs=0.01)
    assert (m["isl_avg_tok"], m["osl_p50_tok"]) == (128.0, 32.0)
    assert m["output_throughput_tok_s"] == pytest.approx(1837.31, abs=0.01)
    assert m["request_throughput_req_s"] == pytest.approx(57.42, abs=0.01)
    assert m["output_throughput_p50_tok_s_per_user"] == pytest.approx(708.95, abs=0.01)
    for key in (
        "output_throughput_avg_tok_s_per_user",
        "input_throughput_tok_s",
        "total_throughput_tok_s",
        "ttft_std_ms",
        "itl_p90_ms",
    ):
        assert key in m
    # Profiling window comes from phase_manifest.json, not the warmup requests.
    assert r["profiling_start_ns"] == 1795971233607409927
    assert r["profiling_end_ns"] == 1795971234304079846
    assert r["duration_s"] == pytest.approx(0.6926, abs=1e-4)
    assert r["start_time"] == "2026-11-29T16:53:53.607410" and r["aiperf_version"] == "0.13.0"
    json.dumps(r, allow_nan=False)  # goes into result.json and Argo parameters as is


def test_warmup_records_are_not_profiling_records(aiperf_ref):
    path = aiperf_ref / "dynamo-mocker-c4" / "profile_export.jsonl"
    assert len(path.read_text().splitlines()) == 44
    records = list(iter_profiling_records(path))
    assert len(records) == 40
    assert {rec["metadata"]["benchmark_phase"] for rec in records} == {"profiling"}


def test_truncated_last_jsonl_line_is_skipped(aiperf_ref, tmp_path):
    data = (aiperf_ref / "dynamo-mocker-c4" / "profile_export.jsonl").read_bytes()
    torn = tmp_path / "profile_export.jsonl"
    torn.write_bytes(data[:-200])  # AIPerf killed mid-write
    assert len(list(iter_profiling_records(torn))) == 39


def test_http_500s_make_a_partial_point(aiperf_ref):
    r = read_point(aiperf_ref / "partial_500s_rc0", exit_code=0)
    assert r["status"] == "partial"
    assert (r["requests_ok"], r["requests_failed"]) == (14, 16)
    assert r["error_rate"] == pytest.approx(16 / 30)
    assert "16 of 30 requests failed" in r["reason"] and "HTTP 500" in r["reason"]
    assert r["errors"][0]["code"] == 500 and r["errors"][0]["count"] == 16
    assert r["metrics"]["ttft_p50_ms"] == pytest.approx(31.76, abs=0.01)  # successful requests still count


def test_error_rate_within_tolerance_is_ok(aiperf_ref):
    r = read_point(aiperf_ref / "partial_500s_rc0", max_error_rate=0.6)
    assert r["status"] == "ok"
    assert "16 failed" in r["reason"]


def test_nonzero_exit_downgrades_a_complete_summary(aiperf_ref):
    r = read_point(aiperf_ref / "dynamo-mocker-c4", exit_code=1)
    assert r["status"] == "partial" and "code 1" in r["reason"]


def test_failed_request_threshold_is_cancelled(aiperf_ref):
    r = read_point(aiperf_ref / "failed_threshold_cancelled_rc0", exit_code=0)
    assert r["status"] == "cancelled"
    assert r["was_cancelled"] is True and r["is_complete"] is False
    assert "10 of 60 requests" in r["reason"]
    assert "--failed-request-threshold exceeded" in r["reason"]
    assert r["requests_ok"] == 6 and "ttft_p50_ms" in r["metrics"]


def test_sigint_is_cancelled_and_keeps_its_104_requests(aiperf_ref):
    r = read_point(aiperf_ref / "sigint_cancelled_rc0", exit_code=0)
    assert r["status"] == "cancelled"
    assert r["requests_ok"] == 104 and r["requests_failed"] == 0
    assert "SIGINT" in r["reason"]
    assert r["metrics"]["ttft_p50_ms"] == pytest.approx(32.19, abs=0.01)
    assert r["metrics"]["output_throughput_tok_s"] == pytest.approx(274.72, abs=0.01)
    # No phase_manifest.json here: the window comes from the profiling records.
    starts = [
        rec["metadata"]["request_start_ns"]
        for rec in iter_profiling_records(aiperf_ref / "sigint_cancelled_rc0" / "profile_export.jsonl")
    ]
    assert r["profiling_start_ns"] == min(starts)


def test_unreachable_is_failed_with_the_log_error(aiperf_ref):
    r = read_point(aiperf_ref / "unreachable_rc1", exit_code=1)
    assert r["status"] == "failed"
    assert r["reason"] == (
        "AIPerf wrote no summary (exit code 1): All 10 inference request(s) failed; "
        "no successful responses were collected."
    )
    assert (r["requests_ok"], r["requests_failed"]) == (0, 10)
    assert r["errors"][0]["type"] == "ClientConnectorError"


def test_truncated_summary_is_failed_not_an_exception(aiperf_ref, tmp_path):
    run = copy_tree(aiperf_ref / "dynamo-mocker-c4", tmp_path / "run")
    summary = run / "profile_export_aiperf.json"
    summary.write_bytes(summary.read_bytes()[:5000])
    (run / "phase_manifest.json").write_text('{"phases": [')
    r = read_point(run)
    assert r["status"] == "failed"
    assert "unreadable" in r["reason"]
    json.dumps(r, allow_nan=False)


def test_empty_dir_is_failed(tmp_path):
    r = read_point(tmp_path / "never-created", exit_code=-9)
    assert r["status"] == "failed" and r["reason"] == "AIPerf wrote no summary (exit code -9)"


def test_no_aiperf_log_falls_back_to_the_console_output(tmp_path):
    # What AIPerf 0.13.0 prints (and nothing else) for a bad flag: no artifact dir at all.
    console = tmp_path / "aiperf.log"
    console.write_text(
        "╭─ Error ─────────────────────╮\n│ Unknown option: --bogus-flag. │\n╰─────────────────────────────╯\n"
    )
    r = read_point(tmp_path / "aiperf", exit_code=1, console_log=console)
    assert r["status"] == "failed"
    assert r["reason"] == "AIPerf wrote no summary (exit code 1): Unknown option: --bogus-flag."


def test_cli_prints_the_result(aiperf_ref):
    out = subprocess.run(
        [sys.executable, "-m", "steps.aiperf_results", str(aiperf_ref / "partial_500s_rc0")],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout)["status"] == "partial"


# ---------------------------------------------------------------- aiperf_point with a fake AIPerf

FAKE = """\
#!{python}
# A stand-in for `aiperf profile`: records how it was called, then acts out MODE.
import json, os, signal, sys, time
from pathlib import Path

MODE, SRC, MARKS = {mode!r}, {src!r}, Path({marks!r})
argv = sys.argv[1:]
out = Path(argv[argv.index("--artifact-dir") + 1])
(MARKS / "called.json").write_text(json.dumps({{"argv": argv, "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE")}}))

def write_summary():
    for root, _dirs, files in os.walk(SRC):
        target = out / Path(root).relative_to(SRC)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            (target / name).write_bytes((Path(root) / name).read_bytes())

def on_sigint(signum, frame):
    (MARKS / "got_sigint").write_text("1")
    if MODE == "sigint":
        write_summary()
        sys.exit(0)

if MODE == "fail":
    sys.exit(1)
if MODE == "good":
    write_summary()
    sys.exit(0)
signal.signal(signal.SIGINT, on_sigint)   # "sigint": partial summary; "stubborn": ignore it
(MARKS / "started").write_text("1")
time.sleep(60)
"""


def fake_aiperf(tmp_path: Path, mode: str, src: Path | str = "") -> Path:
    path = tmp_path / f"fake-aiperf-{mode}"
    path.write_text(FAKE.format(python=sys.executable, mode=mode, src=str(src), marks=str(tmp_path)))
    path.chmod(0o755)
    return path


def point_args(out: Path, aiperf: Path, *extra: str) -> list[str]:
    return [
        "--url",
        "http://127.0.0.1:9",
        "--model",
        "tiny-mock",
        "--tokenizer",
        str(out.parent),
        "--concurrency",
        "4",
        "--requests",
        "40",
        "--warmup",
        "4",
        "--isl",
        "128",
        "--osl",
        "32",
        "--out",
        str(out),
        "--aiperf",
        str(aiperf),
        *extra,
    ]


def test_good_point_is_kept_and_aiperf_not_run(tmp_path):
    out = tmp_path / "c4"
    out.mkdir()
    good = {"status": "ok", "reason": "all 40 requests succeeded", "concurrency": 4, "attempt": 1}
    (out / "result.json").write_text(json.dumps(good))
    before = (out / "result.json").read_bytes()
    param = tmp_path / "param.json"

    code = aiperf_point.main(point_args(out, fake_aiperf(tmp_path, "fail"), "--result-param", str(param)))

    assert code == 0
    assert not (tmp_path / "called.json").exists(), "AIPerf ran although a good point existed"
    assert (out / "result.json").read_bytes() == before
    assert not (out / "attempts").exists()
    assert json.loads(param.read_text()) == {"concurrency": 4, "status": "ok", "reason": "all 40 requests succeeded"}


def test_failed_attempt_is_moved_aside_and_redone(aiperf_ref, tmp_path):
    out = tmp_path / "c4"
    (out / "aiperf").mkdir(parents=True)
    (out / "aiperf" / "stale.txt").write_text("from attempt 1")
    (out / "aiperf.log").write_text("attempt 1 log")
    (out / "result.json").write_text(json.dumps({"status": "failed", "reason": "no summary", "attempt": 1}))

    code = aiperf_point.main(point_args(out, fake_aiperf(tmp_path, "good", aiperf_ref / "dynamo-mocker-c4")))

    assert code == 0
    old = out / "attempts" / "1"
    assert json.loads((old / "result.json").read_text())["status"] == "failed"
    assert (old / "aiperf" / "stale.txt").read_text() == "from attempt 1"
    assert (old / "aiperf.log").read_text() == "attempt 1 log"
    new = json.loads((out / "result.json").read_text())
    assert (new["status"], new["attempt"], new["requests_ok"], new["concurrency"]) == ("ok", 2, 40, 4)
    assert not (out / "aiperf" / "stale.txt").exists()


def test_failing_aiperf_exits_2_and_says_why(tmp_path):
    out = tmp_path / "c4"
    param = tmp_path / "param.json"
    code = aiperf_point.main(point_args(out, fake_aiperf(tmp_path, "fail"), "--result-param", str(param)))
    assert code == 2
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "failed" and result["exit_code"] == 1
    assert "exit code 1" in result["reason"]
    assert json.loads(param.read_text())["status"] == "failed"


def test_argv_is_a_list_and_recipe_values_never_reach_a_shell(aiperf_ref, tmp_path):
    out = tmp_path / "c4"
    evil = f"m; touch {tmp_path / 'pwned'}"
    args = point_args(
        out,
        fake_aiperf(tmp_path, "good", aiperf_ref / "dynamo-mocker-c4"),
        "--extra-inputs",
        "ignore_eos:true",
        "min_tokens:32",
    )
    args[args.index("tiny-mock")] = evil
    assert aiperf_point.main(args) == 0
    called = json.loads((tmp_path / "called.json").read_text())["argv"]
    assert not (tmp_path / "pwned").exists()
    flags = dict(zip(called, called[1:], strict=False))
    assert called[0] == "profile"
    assert flags["--model"] == evil
    assert flags["--endpoint-type"] == "chat" and "--streaming" in called
    assert (flags["--concurrency"], flags["--request-count"], flags["--warmup-request-count"]) == ("4", "40", "4")
    assert (flags["--isl"], flags["--osl"], flags["--ui-type"]) == ("128", "32", "none")
    assert flags["--artifact-dir"] == str(out / "aiperf")
    # the tokenizer folder goes as a hub id of a private offline HF cache (no second load by AIPerf's cache
    # warming); result.json names the folder
    assert flags["--tokenizer"] == "infersweep-local/tokenizer"
    assert json.loads((out / "result.json").read_text())["tokenizer_dir"] == str(tmp_path)
    assert [called[i + 1] for i, a in enumerate(called) if a == "--extra-inputs"] == [
        "ignore_eos:true",
        "min_tokens:32",
    ]


def test_sigterm_reaches_aiperf_as_sigint_and_keeps_partial_results(aiperf_ref, tmp_path):
    out = tmp_path / "c2"
    fake = fake_aiperf(tmp_path, "sigint", aiperf_ref / "sigint_cancelled_rc0")
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    point = subprocess.Popen(
        [sys.executable, "-m", "steps.aiperf_point", *point_args(out, fake)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "started").exists():
            assert point.poll() is None, point.communicate()
            assert time.monotonic() < deadline, "fake AIPerf never started"
            time.sleep(0.05)
        point.send_signal(signal.SIGTERM)  # what Argo sends when the workflow is stopped
        _stdout, stderr = point.communicate(timeout=30)
    finally:
        if point.poll() is None:
            point.kill()

    assert (tmp_path / "got_sigint").exists(), "AIPerf did not get SIGINT"
    assert point.returncode == 2
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "cancelled"
    assert result["stopped_by"] == "SIGTERM" and "SIGTERM" in result["reason"]
    assert result["requests_ok"] == 104
    assert result["metrics"]["ttft_p50_ms"] == pytest.approx(32.19, abs=0.01)
    assert "cancelled" in stderr
    # offline mode reaches AIPerf only with the tokenizer folder as a hub id of its private cache, which it can load
    called = json.loads((tmp_path / "called.json").read_text())
    assert called["HF_HUB_OFFLINE"] == "1" and "infersweep-local/tokenizer" in called["argv"]


def test_timeout_sends_sigint_then_sigkill(tmp_path):
    out = tmp_path / "c4"
    started = time.monotonic()
    code = aiperf_point.main(point_args(out, fake_aiperf(tmp_path, "stubborn"), "--timeout-s", "1", "--grace-s", "1"))
    assert time.monotonic() - started < 15
    assert code == 2
    assert (tmp_path / "got_sigint").exists()
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "failed" and result["exit_code"] == -signal.SIGKILL
    assert result["stopped_by"] == "timeout, then SIGKILL after 1 s"
    assert "--timeout-s 1" in result["reason"]


# ---------------------------------------------------------------- the real AIPerf, once

AIPERF_BIN = REPO / ".venv-aiperf" / "bin" / "aiperf"


class _StreamingChat:
    """A loopback OpenAI-style streaming chat server: just enough for AIPerf to measure."""

    def __enter__(self):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for _ in range(body.get("max_completion_tokens") or 4):
                    time.sleep(0.002)
                    event = {
                        "object": "chat.completion.chunk",
                        "model": body.get("model"),
                        "choices": [{"index": 0, "delta": {"content": " word"}, "finish_reason": None}],
                    }
                    self._chunk(f"data: {json.dumps(event)}\n\n")
                self._chunk("data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")

            def _chunk(self, text):
                data = text.encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *_exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.e2e
@pytest.mark.skipif(not AIPERF_BIN.exists(), reason="needs the AIPerf env at .venv-aiperf")
def test_real_aiperf_accepts_our_argv_and_measures(tmp_path):
    from infersweep.local.dynamo.toy_model import build_toy_model

    tokenizer = build_toy_model(tmp_path / "toy")
    out = tmp_path / "c2"
    with _StreamingChat() as url:
        code = aiperf_point.main(
            [
                "--url",
                url,
                "--model",
                "toy",
                "--tokenizer",
                str(tokenizer),
                "--concurrency",
                "2",
                "--requests",
                "10",
                "--warmup",
                "2",
                "--isl",
                "16",
                "--osl",
                "4",
                "--out",
                str(out),
                "--aiperf",
                str(AIPERF_BIN),
                "--extra-inputs",
                "ignore_eos:true",
                "--timeout-s",
                "120",
            ]
        )
    result = json.loads((out / "result.json").read_text())
    assert code == 0, result["reason"]
    assert result["status"] == "ok" and result["requests_ok"] == 10
    assert result["metrics"]["osl_avg_tok"] == 4.0 and result["metrics"]["ttft_p50_ms"] > 0
    assert result["profiling_start_ns"] < result["profiling_end_ns"]


@pytest.mark.parametrize("exit_code, signal_name", [(130, "SIGINT"), (-2, "SIGINT"), (143, "SIGTERM")])
def test_an_interrupted_aiperf_says_interrupted_not_its_last_log_line(tmp_path, exit_code, signal_name):
    """Issue 38 item 12: Ctrl-C during AIPerf's start reported "AIPerf wrote no summary (exit code 130): ...
    Prefetching 1 tokenizer" as the failure."""
    console = tmp_path / "aiperf.log"
    console.write_text("INFO     Prefetching 1 tokenizer(s)\\n")
    r = read_point(tmp_path / "aiperf", exit_code=exit_code, console_log=console)
    assert r["status"] == "cancelled"
    assert r["reason"] == f"interrupted by {signal_name} (exit code {exit_code}) before AIPerf wrote a summary"
