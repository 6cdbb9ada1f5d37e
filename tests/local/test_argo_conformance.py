"""Conformance: every Workflow under tests/conformance/ runs through the local executor and must end with
the node phases and workflow phase Argo v4.1.2 gives (stated in its `conformance/expect` annotation, with
the Argo source it follows in `conformance/source`). Containers run `sh -c` on this host.

Expectation keys: phase, message (substring), nodes {displayName: phase | null = never created},
node_messages {displayName: substring}, outputs {displayName: {param: value}}, rejected (validation error
substring), stop {after, strategy}, runs (concurrent copies sharing one lock state), max/min_concurrent
(from the steps' start/end trace), counts {step name: times started}, elapsed_min/max (seconds),
retry / resubmit (the same keys, for `argo retry` / `argo resubmit` of the finished run).
"""

from __future__ import annotations

import copy
import threading
import time
from pathlib import Path

import pytest
import yaml

from infersweep.commands.argo import load_documents
from infersweep.local.argo import LocalArgo, LocalCluster, WorkflowError
from infersweep.local.argo.retry import RetryError, formulate_resubmit, formulate_retry
from tests.support.paths import TESTS

CASES = sorted((TESTS / "conformance").glob("*.yaml"))


def test_there_are_at_least_40_cases():
    assert len(CASES) >= 40


def _cluster(work: Path, cms, state: Path) -> LocalCluster:
    return LocalCluster(
        pythons={},
        pvc_dirs=lambda c: work / "pvc" / c,
        run_dir=work,
        cwd=work,
        env={"PATH": "/usr/bin:/bin"},
        unmapped_on_host=True,
        configmaps=cms,
        state_dir=state,
    )


def _with_trace(wf: dict, trace: Path, name: str | None = None) -> dict:
    wf = copy.deepcopy(wf)
    if name:
        wf["metadata"]["name"] = name
    for p in wf["spec"]["arguments"]["parameters"]:
        if p["name"] == "trace":
            p["value"] = str(trace)
    return wf


def _trace_stats(trace: Path) -> tuple[int, dict[str, int]]:
    cur = peak = 0
    counts: dict[str, int] = {}
    for line in trace.read_text().splitlines() if trace.exists() else []:
        kind, _, name = line.partition(" ")
        if kind == "start":
            cur += 1
            peak = max(peak, cur)
            counts[name] = counts.get(name, 0) + 1
        elif kind == "end":
            cur -= 1
    return peak, counts


def _check(argo: LocalArgo, exp: dict, trace: Path, elapsed: float, label: str) -> None:
    st = argo.status()
    by_display = {n["displayName"]: n for n in st["nodes"].values()}
    summary = {d: n["phase"] for d, n in by_display.items()}
    assert st["phase"] == exp["phase"], f"{label}: workflow {st['phase']} ({st.get('message')}), nodes {summary}"
    if "message" in exp:
        assert exp["message"] in st.get("message", ""), f"{label}: message {st.get('message')!r}"
    for disp, phase in (exp.get("nodes") or {}).items():
        if phase is None:
            assert disp not in by_display, f"{label}: {disp} should never have been created: {summary}"
        else:
            assert disp in by_display, f"{label}: no node {disp}: {summary}"
            assert by_display[disp]["phase"] == phase, (
                f"{label}: {disp} is {by_display[disp]['phase']} "
                f"({by_display[disp].get('message')}), expected {phase}; {summary}"
            )
    for disp, text in (exp.get("node_messages") or {}).items():
        assert text in by_display[disp].get("message", ""), (
            f"{label}: {disp} message {by_display[disp].get('message')!r}"
        )
    for disp, params in (exp.get("outputs") or {}).items():
        got = {p["name"]: p["value"] for p in by_display[disp].get("outputs", {}).get("parameters", [])}
        assert got == params, f"{label}: outputs of {disp}"
    peak, counts = _trace_stats(trace)
    if "max_concurrent" in exp:
        assert peak <= exp["max_concurrent"], f"{label}: {peak} ran at once"
    if "min_concurrent" in exp:
        assert peak >= exp["min_concurrent"], f"{label}: only {peak} ran at once"
    for name, n in (exp.get("counts") or {}).items():
        assert counts.get(name, 0) == n, f"{label}: {name} started {counts.get(name, 0)} times: {counts}"
    if "elapsed_min" in exp:
        assert elapsed >= exp["elapsed_min"], f"{label}: took {elapsed:.2f} s"
    if "elapsed_max" in exp:
        assert elapsed <= exp["elapsed_max"], f"{label}: took {elapsed:.2f} s"


def _run(wf, templates, cms, work: Path, state: Path, status=None, stop=None) -> tuple[LocalArgo, float]:
    argo = LocalArgo(wf, templates, _cluster(work, cms, state), status=status)
    if stop:
        threading.Timer(stop["after"], argo.stop, kwargs={"strategy": stop["strategy"]}).start()
    t0 = time.monotonic()
    argo.run()
    return argo, time.monotonic() - t0


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_conformance(case: Path, tmp_path: Path):
    wf, templates, cms = load_documents(case, None)
    exp = yaml.safe_load(wf["metadata"]["annotations"]["conformance/expect"])
    assert wf["metadata"]["annotations"].get("conformance/source"), "each case names the Argo source it follows"
    trace = tmp_path / "trace"
    state = tmp_path / "state"  # shared by the concurrent runs of one case, as by local runs of one machine
    wf = _with_trace(wf, trace)
    if "rejected" in exp:
        with pytest.raises(WorkflowError) as e:
            LocalArgo(wf, templates, _cluster(tmp_path / "w", cms, state))
        assert exp["rejected"] in str(e.value)
        assert not trace.exists(), "nothing may run when the workflow is rejected"
        return
    runs = exp.get("runs", 1)
    if runs > 1:
        results: list = [None] * runs

        def one(i: int) -> None:
            results[i] = _run(
                _with_trace(wf, trace, f"{wf['metadata']['name']}-{i}"), templates, cms, tmp_path / f"w{i}", state
            )

        threads = [threading.Thread(target=one, args=(i,)) for i in range(runs)]
        t0 = time.monotonic()
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=60)
        for i, (argo, _) in enumerate(results):
            _check(
                argo,
                {k: v for k, v in exp.items() if k not in ("max_concurrent", "min_concurrent")},
                trace,
                time.monotonic() - t0,
                f"run {i}",
            )
        _check(
            results[0][0],
            {k: exp[k] for k in ("phase", "max_concurrent", "min_concurrent") if k in exp},
            trace,
            0,
            "all runs",
        )
        return
    argo, elapsed = _run(wf, templates, cms, tmp_path / "w", state, stop=exp.get("stop"))
    _check(argo, exp, trace, elapsed, "run")
    for again in ("retry", "resubmit"):
        if again not in exp:
            continue
        want = exp[again]
        if again == "retry":
            try:
                status = formulate_retry(argo.name, argo.status())
            except RetryError as e:
                assert want.get("rejected", "<retry should have been possible>") in str(e)
                continue
            argo2, elapsed2 = _run(wf, templates, cms, tmp_path / "w", state, status=status)
        else:
            argo2, elapsed2 = _run(formulate_resubmit(wf), templates, cms, tmp_path / "w2", state)
        _check(argo2, want, trace, elapsed2, again)
