"""Results written by AIPerf 0.10.0-0.13.0 read correctly (infersweep.aiperf.read_point).

The artifact dirs under tests/fixtures/aiperf/<version>/ are real runs of that AIPerf version (installed
from pip into /work/venvs/aiperf-<version>) against a local Dynamo 1.6.1 frontend with a mocker worker;
server_metrics_export.* were removed to keep them small (the reader does not use them). 0.13.0 is read
from the reference set (the `aiperf_ref` fixture). How each was made: tests/fixtures/aiperf/README.md.
"""

from __future__ import annotations

import json

import pytest

from infersweep.aiperf import read_point
from tests.conftest import copy_tree
from tests.support.paths import TESTS

FIXTURES = TESTS / "fixtures" / "aiperf"
# AIPerf releases' folders (0.10.0, ...); import/ holds the import command's layouts (tests/results/test_import_aiperf013.py)
VERSIONS = (
    sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "0.13.0" and p.name[0].isdigit())
    if FIXTURES.is_dir()
    else []
)


def _cases(kind: str) -> list:
    return [
        pytest.param(v, c, id=f"{v}-{c}")
        for v in VERSIONS
        for c in sorted(p.name for p in (FIXTURES / v).iterdir() if p.is_dir())
        if (kind == "good") == (c.startswith("c") and c[1:].isdigit())
    ]


@pytest.mark.parametrize("version,case", _cases("good"))
def test_a_complete_error_free_run_reads_as_ok_and_complete(version, case):
    r = read_point(FIXTURES / version / case, exit_code=0)
    conc = int(case[1:])
    assert r["aiperf_version"] == version
    assert r["status"] == "ok", r["reason"]
    assert r["is_complete"] is True
    assert r["requests_ok"] == 10 * conc and r["requests_failed"] == 0 and r["error_rate"] == 0.0
    assert r["metrics"]["ttft_p50_ms"] > 0 and r["metrics"]["output_throughput_tok_s"] > 0
    if version < "0.13":  # these versions write no is_complete: the reader says how it decided
        assert r["is_complete_source"].startswith(f"inferred (AIPerf {version} writes no is_complete): {10 * conc} of")


@pytest.mark.parametrize("version,case", _cases("bad"))
def test_a_failed_run_reads_as_failed_with_its_cause(version, case):
    console = FIXTURES / version / f"{case}.console.txt"
    r = read_point(FIXTURES / version / case, exit_code=1, console_log=console if console.exists() else None)
    assert r["status"] == "failed"
    assert r["requests_ok"] == 0 and r["requests_failed"] == 10
    if case.startswith("wrongmodel"):
        assert r["errors"][0]["code"] == 404 and "Model not found" in r["errors"][0]["message"]
    if case.startswith("unreachable"):
        assert r["errors"][0]["type"] == "ClientConnectorError"


def test_the_0_13_reference_still_reads_as_complete_from_its_own_field(aiperf_ref):
    r = read_point(aiperf_ref / "dynamo-mocker-c4", exit_code=0)
    assert (r["status"], r["is_complete"], r["is_complete_source"]) == ("ok", True, "aiperf")


def test_a_cancelled_old_run_is_not_complete(tmp_path):
    """0.10 without is_complete: was_cancelled decides, the profiling target is not reached."""
    src = FIXTURES / "0.10.0" / "c4"
    if not src.exists():
        pytest.skip("no 0.10.0 fixture")
    d = copy_tree(src, tmp_path / "c4")
    summary = json.loads((d / "profile_export_aiperf.json").read_text())
    summary["was_cancelled"] = True
    (d / "profile_export_aiperf.json").write_text(json.dumps(summary))
    r = read_point(d)
    assert r["status"] == "cancelled" and r["is_complete"] is False
