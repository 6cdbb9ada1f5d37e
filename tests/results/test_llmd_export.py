"""`infersweep export --format llm-d RUN` (issue 21 item 5): llm-d benchmark reports v0.2.1, validated
against llm-d-benchmark's own JSON Schema and pydantic model (vendored with their commit in
tests/fixtures/llmd_benchmark_report/SOURCE.md). On main there was no export."""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import uuid
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
import yaml

from infersweep.cli import main as cli_main
from tests.support.paths import FIXTURES, REPO

VENDORED = FIXTURES / "llmd_benchmark_report"
MEASURED = REPO / "benchmarks" / "measured" / "h200-2026-12-01" / "qwen3-32b-bf16-sweep"


@pytest.fixture(scope="module")
def llmd():
    """(JSON Schema validator, their pydantic BenchmarkReportV021) from the vendored files."""
    sys.path.insert(0, str(VENDORED.parent))
    try:
        model = importlib.import_module("llmd_benchmark_report.schema_v0_2_1").BenchmarkReportV021
    finally:
        sys.path.remove(str(VENDORED.parent))
    schema = json.loads((VENDORED / "br_v0_2_1_json_schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    # the validator is the real one: their own example passes, a broken copy does not
    example = yaml.safe_load((VENDORED / "br_v0_2_1_example.yaml").read_text())
    validator.validate(example)
    model(**example)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**example, "run": {}})
    return validator, model


def check(validator, model, path: Path) -> dict:
    report = yaml.safe_load(path.read_text())
    validator.validate(report)
    model(**report)  # units per statistic, integer concurrency: what the JSON Schema cannot say
    return report


def valid_copy(tmp_path: Path) -> Path:
    """The measured H200 sweep with its points marked valid (every point of it is invalid: unsteady)."""
    run = tmp_path / "run"
    shutil.copytree(MEASURED / "summary", run / "summary")
    t = pd.read_parquet(run / "summary" / "results.parquet")
    t["valid"], t["validity_reasons"] = True, ""
    t.to_parquet(run / "summary" / "results.parquet", index=False)
    return run


def test_every_exported_point_validates_against_llm_ds_schema_and_model(llmd, tmp_path, capsys):
    validator, model = llmd
    out = tmp_path / "out"
    assert cli_main(["export", "--format", "llm-d", str(valid_copy(tmp_path)), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "wrote 6 llm-d benchmark report(s) (version 0.2.1" in text
    assert "benchmark_report_c64.yaml: not exported: the point cancelled" in text  # a failed point: listed
    files = sorted(out.glob("*.yaml"))
    assert [f.name for f in files] == [f"benchmark_report_c{c}.yaml" for c in (1, 16, 2, 32, 4, 8)]
    table = pd.read_parquet(MEASURED / "summary" / "results.parquet").set_index("concurrency")
    for f in files:
        r = check(validator, model, f)
        c = r["scenario"]["load"]["standardized"]["concurrency"]
        agg = r["results"]["request_performance"]["aggregate"]
        # llm-d's AIPerf mapping (native_to_br0_2.py import_aiperf): ms -> s, avg -> mean
        assert agg["latency"]["time_to_first_token"]["units"] == "s"
        assert agg["latency"]["time_to_first_token"]["p50"] == pytest.approx(table.at[c, "ttft_ms_p50"] / 1000)
        assert agg["latency"]["inter_token_latency"]["mean"] == pytest.approx(table.at[c, "itl_ms_avg"] / 1000)
        assert agg["throughput"]["output_token_rate"]["mean"] == pytest.approx(table.at[c, "output_tok_s"])
        assert agg["requests"]["total"] == table.at[c, "requests_ok"] + table.at[c, "requests_failed"]
        engine = r["scenario"]["stack"][0]["standardized"]
        assert (engine["model"]["name"], engine["accelerator"]["model"], engine["role"]) == (
            "Qwen/Qwen3-32B",
            "H200",
            "replica",
        )
        assert r["run"]["eid"] == str(uuid.uuid5(uuid.NAMESPACE_URL, table.at[c, "run_id"]))


def test_invalid_points_are_not_exported_unless_asked_and_then_say_so(llmd, tmp_path, capsys):
    validator, model = llmd
    out = tmp_path / "out"
    assert cli_main(["export", "--format", "llm-d", str(MEASURED), "--out", str(out)]) == 1
    text = capsys.readouterr().out
    assert "benchmark_report_c16.yaml: not exported: invalid measurement (unsteady" in text
    assert "nothing exported" in text and not out.exists()
    assert cli_main(["export", "--format", "llm-d", str(MEASURED), "--out", str(out), "--include-invalid"]) == 0
    r = check(validator, model, out / "benchmark_report_c16.yaml")
    assert "INVALID measurement: unsteady" in r["run"]["description"]


def test_an_unknown_format_is_one_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli_main(["export", "--format", "mlperf", str(MEASURED)])
    assert e.value.code == 2 and "invalid choice: 'mlperf'" in capsys.readouterr().err


def test_a_simulated_run_says_simulated_in_every_report_and_names_no_gpu_as_measured(llmd, tmp_path, capsys):
    """Issue 38 item 2: a mocker run exported `accelerator: {model: H100, count: 2}` and nothing said simulated."""
    validator, model = llmd
    run = valid_copy(tmp_path)
    t = pd.read_parquet(run / "summary" / "results.parquet")
    t["source"] = "simulated (built-in timing)"
    t.to_parquet(run / "summary" / "results.parquet", index=False)
    out = tmp_path / "out"
    assert cli_main(["export", "--format", "llm-d", str(run), "--out", str(out)]) == 0
    assert "note: Simulated run: simulated (built-in timing)" in capsys.readouterr().out
    for f in sorted(out.glob("*.yaml")):
        r = check(validator, model, f)  # still a valid llm-d report
        assert r["run"]["description"].startswith("SIMULATED, not a measurement (simulated (built-in timing)): ")
        assert r["scenario"]["stack"][0]["standardized"]["accelerator"]["model"] == "H200 (simulated: no GPU ran)"
