"""Every result says where it came from: `source` in the results table and run.json, decided by what the
local deployment's mocker workers ran with (timing.json, written by infersweep.predict.local_timing), found
through the environment local mode gives its steps (infersweep.local.dynamo.adapter.step_env).
Cheap: no AIConfigurator estimate (one support-matrix lookup when .venv-aic exists), no Dynamo process."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from infersweep.dgd.render import render_dgd
from infersweep.local.dynamo.adapter import deployments_dir, step_env
from infersweep.predict import aic
from infersweep.predict.local_timing import timing_table_args
from infersweep.predict.source import BUILTIN, MEASURED, SIMULATED_DEPLOYMENTS_ENV, banner, calibrated, result_source
from infersweep.recipe import load_recipe
from tests.support.run_folders import make_run_folder, summarize

pytestmark = pytest.mark.slow  # AIConfigurator in its own environment, a subprocess per call: outside the inner loop

DB = "AIConfigurator 0.12.0 h100_sxm vllm 0.24.0"


def _timing(state: Path, dgd: str, roles: dict) -> None:
    d = deployments_dir(state) / dgd  # where the local adapter keeps the deployment (and local_timing writes)
    d.mkdir(parents=True, exist_ok=True)
    (d / "timing.json").write_text(json.dumps(roles))


def _local_env(state: Path) -> dict[str, str]:
    return step_env(state_dir=state, model_dir=state / "model", max_workers=1)


def _enter_local_mode(monkeypatch, state: Path) -> None:
    for k, v in _local_env(state).items():
        monkeypatch.setenv(k, v)


def _leave_local_mode(monkeypatch) -> None:
    for k in _local_env(Path("state")):
        monkeypatch.delenv(k, raising=False)


def test_source_follows_the_platform_and_the_workers_timing(tmp_path):
    assert result_source({}) == MEASURED  # a cluster run: nothing says the deployment is simulated
    local = _local_env(tmp_path)  # what local mode gives every step
    assert result_source(local) == BUILTIN  # nothing recorded: the mocker's own timing
    _timing(tmp_path, "a", {"worker": {"timing": "calibrated", "database": DB}})
    assert result_source(local) == calibrated(DB) == f"simulated (calibrated: {DB})"
    # One role on built-in timing makes the whole run built-in: a half-calibrated run is not calibrated.
    _timing(
        tmp_path,
        "b",
        {"prefill": {"timing": "calibrated", "database": DB}, "decode": {"timing": "built-in", "reason": "x"}},
    )
    assert result_source(local) == BUILTIN


def test_any_simulator_says_where_its_deployments_are_and_nothing_else(tmp_path):
    # The result source knows one variable and the timing record, not local mode's names or its state layout:
    # a simulator that keeps its deployments elsewhere (one folder each) is read the same way.
    sim = tmp_path / "elsewhere"
    (sim / "deployment-a").mkdir(parents=True)
    (sim / "deployment-a" / "timing.json").write_text(json.dumps({"worker": {"timing": "calibrated", "database": DB}}))
    assert result_source({SIMULATED_DEPLOYMENTS_ENV: str(sim)}) == calibrated(DB)
    assert result_source({SIMULATED_DEPLOYMENTS_ENV: ""}) == BUILTIN  # simulated, timing unknown: not calibrated
    # Naming the platform alone is not a simulation (a platform adapter may drive real GPUs).
    assert result_source({"INFERSWEEP_PLATFORM": "local"}) == MEASURED


def test_results_table_and_run_json_carry_the_source(tmp_path, aiperf_ref, monkeypatch):
    state = tmp_path / "state"
    _timing(state, "qwen", {"worker": {"timing": "calibrated", "database": DB}})
    _enter_local_mode(monkeypatch, state)
    run = make_run_folder(tmp_path, aiperf_ref)
    df = summarize(run)
    assert set(df["source"]) == {calibrated(DB)}
    assert set(pd.read_csv(run / "summary" / "results.csv")["source"]) == {calibrated(DB)}
    assert json.loads((run / "summary" / "run.json").read_text())["context"]["source"] == calibrated(DB)
    # ... and the markdown table and the HTML report show a banner above the numbers.
    assert f"> Simulated run: {calibrated(DB)}" in (run / "summary" / "results.md").read_text()
    report = (run / "summary" / "report.html").read_text()
    assert 'class="simulated"' in report and "AIConfigurator 0.12.0 h100_sxm vllm 0.24.0" in report
    # Re-summarized elsewhere with the context the run was given: the given source stands.
    _leave_local_mode(monkeypatch)
    df = summarize(run, extra=["--context", json.dumps({"source": BUILTIN})])
    assert set(df["source"]) == {BUILTIN}
    df = summarize(run)  # a measured run: no banner
    assert set(df["source"]) == {MEASURED} and "Simulated" not in (run / "summary" / "results.md").read_text()
    assert 'class="simulated"' not in (run / "summary" / "report.html").read_text()


def test_banner_only_for_simulated_runs():
    assert banner(MEASURED) is None and banner(None) is None
    assert "shapes and direction only" in banner(BUILTIN)
    assert DB in banner(calibrated(DB)) and "scaled-down" in banner(calibrated(DB))


def test_local_timing_says_why_it_kept_the_builtin_timing(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERSWEEP_PREDICT_CACHE", str(tmp_path / "cache"))
    dgd = {"metadata": {"name": "x"}}
    assert timing_table_args(dgd, "worker", tmp_path / "a") == []
    assert "names no infersweep recipe" in json.loads((tmp_path / "a" / "timing.json").read_text())["worker"]["reason"]
    monkeypatch.setenv("INFERSWEEP_CALIBRATED", "0")
    assert timing_table_args(render_dgd(load_recipe("qwen3-32b-fp8-vllm-agg")), "worker", tmp_path / "b") == []
    assert json.loads((tmp_path / "b" / "timing.json").read_text())["worker"]["reason"] == "INFERSWEEP_CALIBRATED=0"
    monkeypatch.delenv("INFERSWEEP_CALIBRATED")
    monkeypatch.setenv("INFERSWEEP_AIC_PYTHON", "/nonexistent/python")
    assert timing_table_args(render_dgd(load_recipe("qwen3-32b-fp8-vllm-agg")), "worker", tmp_path / "c") == []
    assert "scripts/setup.sh" in json.loads((tmp_path / "c" / "timing.json").read_text())["worker"]["reason"]


@pytest.mark.skipif(not Path(aic.aic_python()).exists(), reason="no .venv-aic (AIConfigurator): run scripts/setup.sh")
def test_local_timing_of_an_unmodelled_recipe_records_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERSWEEP_PREDICT_CACHE", str(tmp_path / "cache"))
    dgd = render_dgd(load_recipe("nemotron-3-nano-fp8-vllm-agg-kv"))
    assert timing_table_args(dgd, "worker", tmp_path) == []
    entry = json.loads((tmp_path / "timing.json").read_text())["worker"]
    assert entry["timing"] == "built-in" and "outside AIConfigurator" in entry["reason"]


def test_the_local_table_covers_what_local_mode_sends():
    import yaml

    from infersweep.paths import params_dir
    from infersweep.predict.local_timing import local_grid

    prof = yaml.safe_load((params_dir() / "local.yaml").read_text())
    reach = prof["max_isl"] + prof["max_osl"]
    for replicas in (1, 2, 8):
        g = local_grid(replicas)
        workers = min(replicas, prof["max_workers_per_component"])
        assert g.isl[-1] >= reach and g.context[-1] >= reach  # the longest local request is inside the design
        assert g.batch[-1] >= -(-prof["max_concurrency"] // workers)  # so is the fullest local batch
        assert len(g.isl) + len(g.batch) * len(g.context) <= 14  # and it stays ~40 s to build


def test_compare_and_regress_never_mix_sources_unless_asked(tmp_path, aiperf_ref, monkeypatch, capsys):
    from infersweep.cli import main

    measured = make_run_folder(tmp_path / "m", aiperf_ref)
    summarize(measured, extra=["--run-id", "run-measured"])
    state = tmp_path / "state"
    _timing(state, "x", {"worker": {"timing": "calibrated", "database": DB}})
    _enter_local_mode(monkeypatch, state)
    simulated = make_run_folder(tmp_path / "s", aiperf_ref)
    summarize(simulated, extra=["--run-id", "run-simulated"])
    _leave_local_mode(monkeypatch)
    capsys.readouterr()
    assert main(["compare", str(measured), str(simulated)]) == 2
    err = capsys.readouterr().err
    assert "different sources" in err and "--mix-sources" in err and calibrated(DB) in err
    assert main(["compare", str(measured), str(simulated), "--mix-sources"]) == 0
    assert main(["regress", str(simulated), "--baseline", str(measured)]) == 2
    assert "--mix-sources" in capsys.readouterr().err
    assert main(["regress", str(simulated), "--baseline", str(measured), "--mix-sources"]) in (0, 1, 3, 4)
    other = make_run_folder(tmp_path / "s2", aiperf_ref)
    _enter_local_mode(monkeypatch, state)
    summarize(other, extra=["--run-id", "run-simulated-2"])
    _leave_local_mode(monkeypatch)
    assert main(["compare", str(simulated), str(other)]) == 0  # one source: compared as before
