"""`infersweep report RUN`: a self-contained HTML report of a run folder built from real AIPerf artifacts,
with server metrics shaped as steps.scrape writes them."""

from __future__ import annotations

import base64
import re

import pandas as pd

from infersweep.cli import main as cli_main
from tests.support.run_folders import make_run_folder, summarize


def add_server_metrics(run):
    """metrics/server_metrics.parquet with steps.scrape's columns: two metrics over two point windows."""
    rows = []
    for conc, t0 in ((4, 1000.0), (8, 1030.0)):
        for i in range(6):
            for worker in ("w0", "w1"):
                rows.append(
                    {
                        "concurrency": conc,
                        "metric": "kv_cache_usage",
                        "labels": f'{{"worker": "{worker}"}}',
                        "ts": t0 + 5 * i,
                        "value": 0.1 * conc + 0.01 * i,
                    }
                )
            rows.append(
                {
                    "concurrency": conc,
                    "metric": "requests_running",
                    "labels": "{}",
                    "ts": t0 + 5 * i,
                    "value": float(conc),
                }
            )
    (run / "metrics").mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(run / "metrics" / "server_metrics.parquet", index=False)


def test_report_of_a_run_folder_has_every_section_inlined(tmp_path, aiperf_ref):
    run = make_run_folder(tmp_path, aiperf_ref)
    add_server_metrics(run)
    summarize(run)
    out = tmp_path / "report"
    assert cli_main(["report", str(run), "--out", str(out), "--title", "demo report"]) == 0
    html = (out / "report.html").read_text()
    for heading in (
        "Run context",
        "SLOs",
        "Results",
        "Pareto frontier",
        "TTFT, ITL and request latency",
        "Error rates",
        "Failed or partial points",
        "Server metrics over time",
    ):
        assert f"<h2>{heading}" in html, heading
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert len(images) == 4  # pareto, latency, errors, server metrics
    assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in images)
    # Self-contained: nothing fetched from anywhere.
    assert not re.search(r'(src|href)="(?!data:)', html) and "<script" not in html and "@import" not in html
    for png in ("pareto.png", "latency.png", "errors.png", "server_metrics.png"):
        assert (out / png).stat().st_size > 5_000
    assert "all 16" in html or "HTTP 500" in html  # the partial point's reason is shown


def test_report_says_why_server_metrics_are_missing(tmp_path, aiperf_ref):
    run = make_run_folder(tmp_path, aiperf_ref, failed=False)
    (run / "metrics").mkdir()
    (run / "metrics" / "SKIPPED").write_text("no Prometheus URL was given (parameter prometheus-url)\n")
    summarize(run)
    html = (run / "summary" / "report.html").read_text()
    assert "No server metrics: no Prometheus URL was given" in html


def test_report_of_a_missing_run_is_one_line(tmp_path, capsys):
    assert cli_main(["report", str(tmp_path / "nope"), "--store", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no run" in err and "Traceback" not in err


def test_report_says_when_a_points_window_is_shorter_than_two_query_steps(tmp_path, aiperf_ref):
    """Issue 38 item 6: server-metric charts showed frontend_inflight = 0 through a c4 point whose window was
    shorter than two query steps; metrics/NOTES said so, the report did not."""
    run = make_run_folder(tmp_path, aiperf_ref)
    add_server_metrics(run)  # samples 5 s apart
    summarize(run)
    table = pd.read_parquet(run / "summary" / "results.parquet")
    durations = dict(zip(table["concurrency"].astype(int), table["duration_s"], strict=False))
    out = tmp_path / "report"
    assert cli_main(["report", str(run), "--out", str(out)]) == 0
    html = (out / "report.html").read_text()
    for c, d in durations.items():
        said = f"c{c}: its window ({d:.1f} s) is shorter than 2 query steps (2 x 5 s)"
        assert (said in html) == (d < 10), (c, d)
    assert any(d < 10 for d in durations.values())  # the fixture's points are short: one is named
