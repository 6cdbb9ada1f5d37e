"""Scoped server metrics: every query of params/metrics.yaml reads only this run's deployment.

Two real Dynamo 1.6.1 frontends (+ mocker workers) are scraped by one real Prometheus, labelled as
Dynamo's PodMonitor labels a cluster's frontends (infersweep/local/dynamo/adapter.py writes the same target labels in local
mode); each run's numbers must hold its own traffic only. The GPU queries and the derived energy/cost
figures are checked on synthetic DCGM + frontend series served by a tiny exporter to the same real
Prometheus: the expected values are computed from the series fed in, never written down.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest
import yaml

from infersweep.local.standins.prometheus import BINARY, LocalPrometheus
from infersweep.paths import params_dir
from infersweep.results import server_metrics
from steps import scrape as scrape_step
from tests.support.paths import TESTS

SPEC = yaml.safe_load((params_dir() / "metrics.yaml").read_text())
need_prometheus = pytest.mark.skipif(
    not Path(BINARY).exists(), reason=f"no Prometheus at {BINARY} (apt-get install prometheus)"
)


def _instant(url: str, query: str) -> list[dict]:
    qs = urllib.parse.urlencode({"query": query})
    body = json.load(urllib.request.urlopen(f"{url}/api/v1/query?{qs}", timeout=10))
    assert body["status"] == "success", body
    return body["data"]["result"]


def _write_groups(path: Path, groups: list[tuple[str, dict]]) -> None:
    # file_sd format (Prometheus docs, <file_sd_config>): a list of {targets, labels} groups.
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([{"targets": [t], "labels": labels} for t, labels in groups]))
    tmp.replace(path)


def _wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


# ---------------------------------------------------------------- the placeholders (no Prometheus needed)


def test_every_query_names_the_runs_namespace_and_dgd():
    queries, _ = server_metrics.scoped_queries(SPEC, namespace="team-a", dgd="sweep-7", usd_per_gpu_hour=2.5)
    assert set(queries) == set(SPEC["queries"])
    for name, q in queries.items():
        assert 'namespace="team-a"' in q, name
        assert "$" not in q, f"{name}: a placeholder left unfilled: {q}"
        assert (
            'dynamo_namespace="team-a-sweep-7"' in q
            or 'dynamo_namespace=~"team-a-sweep-7"' in q
            or 'pod=~"sweep-7-.+"' in q
        ), name


# ---------------------------------------------------------------- workers' runtime namespaces (issue 20, item 5)


def test_worker_queries_use_the_runtime_namespaces_the_dgd_reports(tmp_path):
    """Deployment-backed workers register in `<ns>-<dgd>-<worker hash>` (the operator's
    DYN_NAMESPACE_WORKER_SUFFIX, appended by ai-dynamo 1.6.1 dynamo/common/utils/namespace.py
    get_worker_namespace; reported as status.components[*].runtimeNamespace), and label their series with it.
    The frontend stays in the base namespace."""
    from infersweep.platform.dgd import runtime_namespaces

    status = {
        "status": {
            "state": "successful",
            "components": {
                "Frontend": {
                    "componentKind": "Deployment",
                    "replicas": 1,
                    "updatedReplicas": 1,
                    "runtimeNamespace": "team-a-sweep-7",
                },
                "VllmDecodeWorker": {
                    "componentKind": "Deployment",
                    "replicas": 1,
                    "updatedReplicas": 1,
                    "runtimeNamespace": "team-a-sweep-7-1a2b3c4d",
                },
                "VllmPrefillWorker": {
                    "componentKind": "Deployment",
                    "replicas": 1,
                    "updatedReplicas": 1,
                    "runtimeNamespace": "team-a-sweep-7-1a2b3c4d",
                },
            },
        }
    }
    ready = runtime_namespaces(status)
    assert ready["VllmDecodeWorker"] == "team-a-sweep-7-1a2b3c4d"
    (tmp_path / "ready.json").write_text(json.dumps({"dgd": "sweep-7", "runtime_namespaces": ready}))
    found = server_metrics.worker_namespaces(tmp_path, "team-a", "sweep-7")
    assert "team-a-sweep-7-1a2b3c4d" in found
    queries, _ = server_metrics.scoped_queries(SPEC, namespace="team-a", dgd="sweep-7", runtime_namespaces=found)
    assert 'dynamo_namespace=~"team-a-sweep-7|team-a-sweep-7-1a2b3c4d"' in queries["worker_requests_per_s"]
    assert 'dynamo_namespace="team-a-sweep-7"' in queries["frontend_requests_per_s"]
    # v1alpha1 reports the same under status.services
    assert runtime_namespaces({"status": {"services": status["status"]["components"]}}) == ready
    # no record (an operator before 1.6, local mode): the base namespace
    assert server_metrics.worker_namespaces(tmp_path / "none", "team-a", "sweep-7") == ["team-a-sweep-7"]


class _FakePrometheus:
    """/api/v1/query_range answering one series only for queries that contain `needle`: a Prometheus whose
    worker series carry the runtime namespace and nothing else."""

    def __init__(self, needles: list[str]):
        self.queries: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)["query"][0]
                fake.queries.append(q)
                start = float(urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)["start"][0])
                result = [{"metric": {}, "values": [[start, "1"]]}] if any(n in q for n in needles) else []
                body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _run_dir(tmp_path: Path, runtime: dict[str, str] | None, window_s: float = 10) -> Path:
    run = tmp_path / "run"
    (run / "points" / "c1").mkdir(parents=True)
    now = time.time()
    (run / "points" / "c1" / "result.json").write_text(
        json.dumps(
            {"concurrency": 1, "profiling_start_ns": int((now - window_s) * 1e9), "profiling_end_ns": int(now * 1e9)}
        )
    )
    if runtime is not None:
        (run / "ready.json").write_text(json.dumps({"dgd": "sweep-7", "runtime_namespaces": runtime}))
    return run


def test_worker_series_in_the_runtime_namespace_are_scraped(tmp_path, monkeypatch):
    monkeypatch.delenv("INFERSWEEP_PLATFORM", raising=False)
    prom = _FakePrometheus(['dynamo_namespace="team-a-sweep-7"', "team-a-sweep-7-1a2b3c4d"])
    monkeypatch.setenv("INFERSWEEP_PROMETHEUS_URL", prom.url)  # the installed scrape template's
    try:
        run = _run_dir(tmp_path, {"Frontend": "team-a-sweep-7", "VllmWorker": "team-a-sweep-7-1a2b3c4d"})
        rc = scrape_step.main(
            ["--run-dir", str(run), "--prometheus-url", prom.url, "--namespace", "team-a", "--dgd-name", "sweep-7"]
        )
    finally:
        prom.close()
    assert rc == 0
    df = pd.read_parquet(run / "metrics" / "server_metrics.parquet")
    assert {"worker_requests_per_s", "worker_inflight", "frontend_requests_per_s"} <= set(df["metric"])


def test_a_required_query_with_no_series_fails_the_scrape_and_names_it(tmp_path, monkeypatch, capsys):
    """The workers' series are in the hashed runtime namespace, the record is missing: the worker queries
    find nothing, and the step says so instead of saving an empty column."""
    monkeypatch.delenv("INFERSWEEP_PLATFORM", raising=False)
    prom = _FakePrometheus(['dynamo_namespace="team-a-sweep-7"'])  # the frontend only
    monkeypatch.setenv("INFERSWEEP_PROMETHEUS_URL", prom.url)  # the installed scrape template's
    try:
        run = _run_dir(tmp_path, None)
        rc = scrape_step.main(
            ["--run-dir", str(run), "--prometheus-url", prom.url, "--namespace", "team-a", "--dgd-name", "sweep-7"]
        )
    finally:
        prom.close()
    assert rc == 1
    err = capsys.readouterr().err
    assert "worker_requests_per_s" in err and "worker_inflight" in err
    missing = (run / "metrics" / "MISSING").read_text()
    assert "worker_requests_per_s: " in missing and "frontend_requests_per_s" not in missing
    assert (run / "metrics" / "server_metrics.parquet").exists()  # what was scraped is kept


def test_points_too_short_for_prometheus_do_not_fail_the_scrape_and_say_so(tmp_path, monkeypatch, capsys):
    """A sub-second point (local mode's one-point runs) may fall between two scrapes: no rate() sample in its
    window proves nothing about the scoping, so the required check waits for a point Prometheus can resolve."""
    monkeypatch.delenv("INFERSWEEP_PLATFORM", raising=False)
    prom = _FakePrometheus(['dynamo_namespace="team-a-sweep-7"'])  # the frontend only, as in the test above
    monkeypatch.setenv("INFERSWEEP_PROMETHEUS_URL", prom.url)  # the installed scrape template's
    try:
        run = _run_dir(tmp_path, None, window_s=0.8)
        rc = scrape_step.main(
            ["--run-dir", str(run), "--prometheus-url", prom.url, "--namespace", "team-a", "--dgd-name", "sweep-7"]
        )
    finally:
        prom.close()
    assert rc == 0
    assert not (run / "metrics" / "MISSING").exists()
    notes = (run / "metrics" / "NOTES").read_text()
    assert "required series not checked" in notes and "10 s" in notes
    assert "required series not checked" in capsys.readouterr().out


def test_local_mode_requires_only_what_its_prometheus_scrapes():
    queries, _ = server_metrics.scoped_queries(SPEC, namespace="ns", dgd="d")
    assert server_metrics.required_queries(SPEC, queries, "local") == ["frontend_requests_per_s"]
    assert "worker_requests_per_s" in server_metrics.required_queries(SPEC, queries, "cluster")


def test_cost_query_is_left_out_with_a_note_when_the_gpu_type_has_no_price():
    queries, notes = server_metrics.scoped_queries(SPEC, namespace="ns", dgd="d", usd_per_gpu_hour=None)
    assert "cost_usd_per_million_output_tokens" not in queries
    assert any("cost_usd_per_million_output_tokens" in n and "usd_per_gpu_hour" in n for n in notes)
    assert server_metrics.gpu_price("H100") is not None and server_metrics.gpu_price("no-such-gpu") is None


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"selectors": {"frontend": 'namespace="${namespace}"'}, "queries": {"q": "sum(up)"}}, "whole cluster"),
        ({"selectors": {"frontend": 'x="${cluster}"'}, "queries": {"q": "up{${frontend}}"}}, "selectors.frontend"),
        ({"selectors": {"frontend": 'x="${dgd}"'}, "queries": {"q": "up{${frontend}} * ${price}"}}, "queries.q"),
    ],
)
def test_an_unscoped_or_misspelt_query_is_one_clear_error(spec, message):
    with pytest.raises(server_metrics.ScopeError, match=message):
        server_metrics.scoped_queries(spec, namespace="ns", dgd="d")


def test_a_name_that_would_break_out_of_the_matcher_is_refused_before_querying(tmp_path):
    rc = scrape_step.main(
        [
            "--run-dir",
            str(tmp_path),
            "--prometheus-url",
            "http://127.0.0.1:9",
            "--namespace",
            "ns",
            "--dgd-name",
            'x",namespace=~".*',
        ]
    )
    assert rc == 2 and not (tmp_path / "metrics" / "server_metrics.parquet").exists()


def test_a_bad_context_is_one_clear_error_before_querying(tmp_path, capsys):
    """--context prices the GPU-hours: unreadable, it stops the step (exit 2) naming the option, with no query
    sent (port 9 would refuse it, which would be recorded as metrics/SKIPPED instead)."""
    rc = scrape_step.main(
        [
            "--run-dir",
            str(tmp_path),
            "--prometheus-url",
            "http://127.0.0.1:9",
            "--namespace",
            "ns",
            "--dgd-name",
            "d",
            "--context",
            "{not json",
        ]
    )
    assert rc == 2 and capsys.readouterr().err.startswith("scrape: --context: not JSON")
    assert not (tmp_path / "metrics" / "SKIPPED").exists()


# ---------------------------------------------------------------- two real deployments, one Prometheus


@pytest.mark.e2e
@need_prometheus
def test_two_local_deployments_scraped_by_one_prometheus_each_see_only_their_traffic(tmp_path, monkeypatch):
    from infersweep.local.dynamo import procs
    from infersweep.local.dynamo.deploy import deploy_local
    from infersweep.local.dynamo.deployment import teardown_local
    from infersweep.local.dynamo.wait import wait_ready_local
    from infersweep.local.toolchain import default_dynamo_python

    if not Path(default_dynamo_python()).exists():
        pytest.skip(f"no Dynamo interpreter at {default_dynamo_python()}")
    from tests.local.test_local_dynamo import AGG_KV

    namespace, sent = "bench", {"run-a": 2, "run-b": 5}
    monkeypatch.setenv("INFERSWEEP_PLATFORM", "local")  # local frontends: metrics.yaml required.local applies
    deps = {}
    try:
        for name in sent:
            dgd = json.loads(json.dumps(AGG_KV))
            dgd["metadata"]["name"] = name
            deps[name] = deploy_local(
                dgd, model_dir=tmp_path / "model", state_dir=tmp_path / name, max_workers_per_component=1
            )
        for name in sent:
            wait_ready_local(tmp_path / name, timeout_s=60)
        prom = LocalPrometheus(tmp_path / "targets.json")
        with prom:
            # The labels infersweep/local/dynamo/adapter.py gives a local frontend target (as Dynamo's PodMonitor does on a cluster).
            _write_groups(
                prom.targets_file,
                [
                    (
                        deps[n].frontend_url.removeprefix("http://"),
                        {"namespace": namespace, "dynamo_namespace": f"{namespace}-{n}", "pod": f"{n}-frontend-local"},
                    )
                    for n in sent
                ],
            )

            def scoped_count(name: str) -> float | None:
                count_q = {
                    "selectors": SPEC["selectors"],
                    "queries": {"n": "sum(dynamo_frontend_requests_total{${frontend}})"},
                }
                q = server_metrics.scoped_queries(count_q, namespace=namespace, dgd=name)[0]["n"]
                result = _instant(prom.url, q)
                return float(result[0]["value"][1]) if result else None

            def unscoped_count() -> float:
                result = _instant(prom.url, "sum(dynamo_frontend_requests_total)")
                return float(result[0]["value"][1]) if result else 0.0

            # wait-ready's own probe requests are already counted: measure from here.
            before = _wait_for(
                lambda: (lambda c: c if None not in c.values() else None)({n: scoped_count(n) for n in sent}),
                30,
                "both frontends scraped",
            )
            start = time.time()
            for name, count in sent.items():
                for i in range(count):
                    procs.http_json(
                        f"{deps[name].frontend_url}/v1/chat/completions",
                        {
                            "model": deps[name].model_name,
                            "max_tokens": 4,
                            "messages": [{"role": "user", "content": f"hello {i}"}],
                        },
                    )
            total = sum(before.values()) + sum(sent.values())
            _wait_for(lambda: unscoped_count() >= total, 30, "both frontends' requests in Prometheus")
            # The old, unscoped query mixes the two deployments: this is what scoping fixes.
            assert unscoped_count() == total
            for name, count in sent.items():
                assert scoped_count(name) - before[name] == count, f"{name}: another deployment's requests counted"

            for name in sent:
                # The scrape step itself, over a point window that covers the traffic.
                run = tmp_path / f"out-{name}"
                point = run / "points" / "c1"
                point.mkdir(parents=True)
                (point / "result.json").write_text(
                    json.dumps(
                        {
                            "concurrency": 1,
                            "profiling_start_ns": int(start * 1e9),
                            "profiling_end_ns": int(time.time() * 1e9),
                        }
                    )
                )
                assert (
                    scrape_step.main(
                        [
                            "--run-dir",
                            str(run),
                            "--prometheus-url",
                            prom.url,
                            "--namespace",
                            namespace,
                            "--dgd-name",
                            name,
                        ]
                    )
                    == 0
                )
                df = pd.read_parquet(run / "metrics" / "server_metrics.parquet")
                rate = df[df["metric"] == "frontend_requests_per_s"]
                assert len(rate) and (rate["value"] > 0).any(), name
            # A DGD nobody deployed reads as empty, not as the cluster's traffic, and the step says so (over a
            # window long enough for Prometheus to resolve: server_metrics.MIN_RESOLVABLE_STEPS).
            run = tmp_path / "out-nobody"
            (run / "points" / "c1").mkdir(parents=True)
            (run / "points" / "c1" / "result.json").write_text(
                json.dumps(
                    {
                        "concurrency": 1,
                        "profiling_start_ns": int(min(start, time.time() - 12) * 1e9),
                        "profiling_end_ns": int(time.time() * 1e9),
                    }
                )
            )
            assert (
                scrape_step.main(
                    [
                        "--run-dir",
                        str(run),
                        "--prometheus-url",
                        prom.url,
                        "--namespace",
                        namespace,
                        "--dgd-name",
                        "run-c",
                    ]
                )
                == 1
            )
            assert pd.read_parquet(run / "metrics" / "server_metrics.parquet").empty
            assert "frontend_requests_per_s" in (run / "metrics" / "MISSING").read_text()
    finally:
        for name in deps:
            teardown_local(tmp_path / name, grace_s=2)


# ---------------------------------------------------------------- GPUs and the derived figures, synthetic series


class _Exporter:
    """Serves fixed DCGM gauges and a frontend output-token counter growing at a fixed rate, in the
    Prometheus text format, for the real Prometheus to scrape."""

    def __init__(self, gauges: list[tuple[str, dict, float]], counters: list[tuple[str, dict, float]]):
        self.t0 = time.time()
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                lines = []
                for name, labels, value in gauges:
                    lines.append(f"{name}{{{_labels(labels)}}} {value}")
                for name, labels, per_s in counters:
                    lines.append(f"{name}{{{_labels(labels)}}} {per_s * (time.time() - exporter.t0):.3f}")
                body = ("\n".join(lines) + "\n").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _labels(labels: dict) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


@pytest.mark.e2e  # ~15 s: waits for a full rate() range of scrapes
@need_prometheus
def test_gpu_queries_and_energy_and_cost_read_only_the_dgds_gpus(tmp_path, monkeypatch):
    ns, dgd = "bench", "sweep-a"
    # The DGD's two GPUs; a GPU of another DGD in the same namespace; one of a same-named DGD elsewhere.
    mine = [
        (
            {"gpu": "0", "UUID": "GPU-a0", "namespace": ns, "pod": f"{dgd}-vllmworker-0", "container": "main"},
            {"util": 90.0, "fb": 70000.0, "power": 610.0},
        ),
        (
            {"gpu": "1", "UUID": "GPU-a1", "namespace": ns, "pod": f"{dgd}-vllmworker-1", "container": "main"},
            {"util": 80.0, "fb": 65000.0, "power": 540.0},
        ),
    ]
    others = [
        (
            {"gpu": "2", "UUID": "GPU-b0", "namespace": ns, "pod": "sweep-b-vllmworker-0", "container": "main"},
            {"util": 10.0, "fb": 1000.0, "power": 100.0},
        ),
        (
            {"gpu": "0", "UUID": "GPU-c0", "namespace": "other", "pod": f"{dgd}-vllmworker-0", "container": "main"},
            {"util": 5.0, "fb": 500.0, "power": 90.0},
        ),
    ]
    field = {"util": "DCGM_FI_DEV_GPU_UTIL", "fb": "DCGM_FI_DEV_FB_USED", "power": "DCGM_FI_DEV_POWER_USAGE"}
    gauges = [(field[k], labels, v) for labels, values in mine + others for k, v in values.items()]
    tok_per_s = {dgd: 250.0, "sweep-b": 4000.0}
    monkeypatch.delenv("INFERSWEEP_PLATFORM", raising=False)  # a cluster's series: required.cluster applies
    counters = [
        (
            "dynamo_frontend_output_tokens_total",
            {"namespace": ns, "dynamo_namespace": f"{ns}-{name}", "model": "m"},
            rate,
        )
        for name, rate in tok_per_s.items()
    ]
    # What the required queries read: the frontend's requests, the worker's (in its runtime namespace).
    worker = {"namespace": ns, "dynamo_namespace": f"{ns}-{dgd}", "dynamo_component_type": "worker"}
    counters += [
        ("dynamo_frontend_requests_total", {"namespace": ns, "dynamo_namespace": f"{ns}-{dgd}", "model": "m"}, 2.0),
        ("dynamo_component_requests_total", worker, 2.0),
    ]
    gauges_extra = [("dynamo_component_inflight_requests", worker, 3.0)]
    exporter = _Exporter(gauges + gauges_extra, counters)
    try:
        prom = LocalPrometheus(tmp_path / "targets.json")
        with prom:
            _write_groups(prom.targets_file, [(exporter.address, {})])
            monkeypatch.setenv("INFERSWEEP_PROMETHEUS_URL", prom.url)  # the installed scrape template's

            # rate(...[30s]) divides the increase it sees by the whole range (Prometheus extrapolates only ~1
            # scrape interval past the first sample), so a rate is right once the counters span its range. The
            # queries here are params/metrics.yaml's with a 6 s range instead of 30 s: the same scoping and
            # arithmetic, and 8 s of scrapes to wait for instead of 32.
            queries = tmp_path / "metrics.yaml"
            text = (params_dir() / "metrics.yaml").read_text()
            assert text.count("[30s]") >= 5
            queries.write_text(text.replace("[30s]", "[6s]"))

            def spans_range() -> bool:
                series = _instant(prom.url, "dynamo_frontend_output_tokens_total[20s]")
                return len(series) == 2 and all(s["values"][-1][0] - s["values"][0][0] >= 8 for s in series)

            _wait_for(spans_range, 60, "8 s of scrapes of the exporter")
            run = tmp_path / "run"
            (run / "points" / "c8").mkdir(parents=True)
            now = time.time()
            (run / "points" / "c8" / "result.json").write_text(
                json.dumps(
                    {"concurrency": 8, "profiling_start_ns": int((now - 2) * 1e9), "profiling_end_ns": int(now * 1e9)}
                )
            )
            rc = scrape_step.main(
                [
                    "--run-dir",
                    str(run),
                    "--prometheus-url",
                    prom.url,
                    "--namespace",
                    ns,
                    "--dgd-name",
                    dgd,
                    "--context",
                    json.dumps({"gpu_type": "H100"}),
                    "--queries",
                    str(queries),
                ]
            )
            assert rc == 0
    finally:
        exporter.close()
    df = pd.read_parquet(run / "metrics" / "server_metrics.parquet")

    def per_gpu(metric: str) -> dict[str, float]:
        rows = df[df["metric"] == metric]
        return {json.loads(l)["UUID"]: v for l, v in rows.groupby("labels")["value"].last().items()}

    want = {labels["UUID"]: values for labels, values in mine}
    assert per_gpu("gpu_utilization_pct") == {u: v["util"] for u, v in want.items()}
    assert per_gpu("gpu_memory_used_mib") == {u: v["fb"] for u, v in want.items()}
    assert per_gpu("gpu_power_w") == {u: v["power"] for u, v in want.items()}

    def last(metric: str) -> float:
        # The last sample inside the point's window: the step pads the window by a query step, and a rate
        # evaluated past the last scrape sees less than its full range.
        rows = df[(df["metric"] == metric) & (df["ts"] <= now)].dropna(subset=["value"])
        assert len(rows), f"no {metric} samples"
        return float(rows["value"].iloc[-1])

    watts = sum(v["power"] for v in want.values())
    assert last("gpu_power_total_w") == watts
    assert last("gpu_count") == len(want)
    # J per output token = W / (tokens/s); $ per 1e6 tokens = GPUs x $/GPU-h / 3600 s/h / (tokens/s) x 1e6.
    assert last("energy_j_per_output_token") == pytest.approx(watts / tok_per_s[dgd], rel=0.03)
    price = server_metrics.gpu_price("H100")
    assert last("cost_usd_per_million_output_tokens") == pytest.approx(
        len(want) * price / 3600 / tok_per_s[dgd] * 1e6, rel=0.03
    )


def test_wait_ready_records_the_runtime_namespaces_for_the_scrape(tmp_path):
    """wait-ready writes what the adapter read from the DGD's status into ready.json; the scrape reads it."""
    from infersweep.platform.operations import write_ready_file

    class Stub:
        def applied_at(self, name, namespace, api_version):
            return time.time() - 5

        def runtime_namespaces(self, name, namespace, api_version):
            return {"Frontend": "team-a-sweep-7", "VllmWorker": "team-a-sweep-7-1a2b3c4d"}

    write_ready_file(Stub(), tmp_path / "ready.json", "sweep-7", "team-a", "v1beta1", waited_s=3.0)
    assert server_metrics.worker_namespaces(tmp_path, "team-a", "sweep-7") == [
        "team-a-sweep-7",
        "team-a-sweep-7-1a2b3c4d",
    ]


def test_a_failed_scrape_still_lets_the_run_be_summarised_and_published():
    """The exit handler: a scrape that fails loudly (exit 1) must not cost the run its results table."""
    yml = yaml.safe_load((TESTS / "golden/templates/infersweep-vllm-agg.yaml").read_text())
    handler = next(t for t in yml["spec"]["templates"] if t["name"] == "exit-handler")
    tasks = {t["name"]: t for t in handler["dag"]["tasks"]}
    assert tasks["summarize"]["depends"] == "scrape.Succeeded || scrape.Failed || scrape.Errored"
