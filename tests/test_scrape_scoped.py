"""Scoped server metrics: every query of params/metrics.yaml reads only this run's deployment.

Two real Dynamo 1.6.1 frontends (+ mocker workers) are scraped by one real Prometheus, labelled as
Dynamo's PodMonitor labels a cluster's frontends (steps/platform.py writes the same target labels in local
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

from infersweep.local.prometheus import BINARY, LocalPrometheus
from infersweep.paths import params_dir
from steps import scrape as scrape_step

SPEC = yaml.safe_load((params_dir() / "metrics.yaml").read_text())
need_prometheus = pytest.mark.skipif(not Path(BINARY).exists(), reason=f"no Prometheus at {BINARY} (apt-get install prometheus)")


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
    queries, _ = scrape_step.scoped_queries(SPEC, namespace="team-a", dgd="sweep-7", usd_per_gpu_hour=2.5)
    assert set(queries) == set(SPEC["queries"])
    for name, q in queries.items():
        assert 'namespace="team-a"' in q, name
        assert "$" not in q, f"{name}: a placeholder left unfilled: {q}"
        assert 'dynamo_namespace="team-a-sweep-7"' in q or 'pod=~"sweep-7-.+"' in q, name


def test_cost_query_is_left_out_with_a_note_when_the_gpu_type_has_no_price():
    queries, notes = scrape_step.scoped_queries(SPEC, namespace="ns", dgd="d", usd_per_gpu_hour=None)
    assert "cost_usd_per_million_output_tokens" not in queries
    assert any("cost_usd_per_million_output_tokens" in n and "usd_per_gpu_hour" in n for n in notes)
    assert scrape_step.gpu_price("H100") is not None and scrape_step.gpu_price("no-such-gpu") is None


@pytest.mark.parametrize("spec, message", [
    ({"selectors": {"frontend": 'namespace="${namespace}"'}, "queries": {"q": "sum(up)"}}, "whole cluster"),
    ({"selectors": {"frontend": 'x="${cluster}"'}, "queries": {"q": "up{${frontend}}"}}, "selectors.frontend"),
    ({"selectors": {"frontend": 'x="${dgd}"'}, "queries": {"q": "up{${frontend}} * ${price}"}}, "queries.q"),
])
def test_an_unscoped_or_misspelt_query_is_one_clear_error(spec, message):
    with pytest.raises(scrape_step.ScopeError, match=message):
        scrape_step.scoped_queries(spec, namespace="ns", dgd="d")


def test_a_name_that_would_break_out_of_the_matcher_is_refused_before_querying(tmp_path):
    rc = scrape_step.main(["--run-dir", str(tmp_path), "--prometheus-url", "http://127.0.0.1:9",
                           "--namespace", "ns", "--dgd-name", 'x",namespace=~".*'])
    assert rc == 2 and not (tmp_path / "metrics" / "server_metrics.parquet").exists()


# ---------------------------------------------------------------- two real deployments, one Prometheus


@pytest.mark.e2e
@need_prometheus
def test_two_local_deployments_scraped_by_one_prometheus_each_see_only_their_traffic(tmp_path):
    from infersweep.local.dynamo import default_dynamo_python, deploy_local, teardown_local, wait_ready_local
    from infersweep.local import procs

    if not Path(default_dynamo_python()).exists():
        pytest.skip(f"no Dynamo interpreter at {default_dynamo_python()}")
    from tests.test_local_dynamo import AGG_KV

    namespace, sent = "bench", {"run-a": 2, "run-b": 5}
    deps = {}
    try:
        for name in sent:
            dgd = json.loads(json.dumps(AGG_KV))
            dgd["metadata"]["name"] = name
            deps[name] = deploy_local(dgd, model_dir=tmp_path / "model", state_dir=tmp_path / name,
                                      max_workers_per_component=1)
        for name in sent:
            wait_ready_local(tmp_path / name, timeout_s=60)
        prom = LocalPrometheus(tmp_path / "targets.json")
        with prom:
            # The labels steps/platform.py gives a local frontend target (as Dynamo's PodMonitor does on a cluster).
            _write_groups(prom.targets_file, [
                (deps[n].frontend_url.removeprefix("http://"),
                 {"namespace": namespace, "dynamo_namespace": f"{namespace}-{n}", "pod": f"{n}-frontend-local"})
                for n in sent])

            def scoped_count(name: str) -> float | None:
                count_q = {"selectors": SPEC["selectors"],
                           "queries": {"n": "sum(dynamo_frontend_requests_total{${frontend}})"}}
                q = scrape_step.scoped_queries(count_q, namespace=namespace, dgd=name)[0]["n"]
                result = _instant(prom.url, q)
                return float(result[0]["value"][1]) if result else None

            def unscoped_count() -> float:
                result = _instant(prom.url, "sum(dynamo_frontend_requests_total)")
                return float(result[0]["value"][1]) if result else 0.0

            # wait-ready's own probe requests are already counted: measure from here.
            before = _wait_for(lambda: (lambda c: c if None not in c.values() else None)(
                {n: scoped_count(n) for n in sent}), 30, "both frontends scraped")
            start = time.time()
            for name, count in sent.items():
                for i in range(count):
                    procs.http_json(f"{deps[name].frontend_url}/v1/chat/completions", {
                        "model": deps[name].model_name, "max_tokens": 4,
                        "messages": [{"role": "user", "content": f"hello {i}"}]})
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
                (point / "result.json").write_text(json.dumps({
                    "concurrency": 1, "profiling_start_ns": int(start * 1e9), "profiling_end_ns": int(time.time() * 1e9)}))
                assert scrape_step.main(["--run-dir", str(run), "--prometheus-url", prom.url,
                                         "--namespace", namespace, "--dgd-name", name]) == 0
                df = pd.read_parquet(run / "metrics" / "server_metrics.parquet")
                rate = df[df["metric"] == "frontend_requests_per_s"]
                assert len(rate) and (rate["value"] > 0).any(), name
            # A DGD nobody deployed reads as empty, not as the cluster's traffic.
            run = tmp_path / "out-nobody"
            (run / "points" / "c1").mkdir(parents=True)
            (run / "points" / "c1" / "result.json").write_text(json.dumps({
                "concurrency": 1, "profiling_start_ns": int(start * 1e9), "profiling_end_ns": int(time.time() * 1e9)}))
            assert scrape_step.main(["--run-dir", str(run), "--prometheus-url", prom.url,
                                     "--namespace", namespace, "--dgd-name", "run-c"]) == 0
            assert pd.read_parquet(run / "metrics" / "server_metrics.parquet").empty
    finally:
        for name in deps:
            teardown_local(tmp_path / name, grace_s=2)
