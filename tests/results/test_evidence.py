"""One rule for "best" and every verdict (infersweep.results.evidence): only valid points count, an invalid
point meets no SLO, a claim on invalid points only is inconclusive, a run of another recipe is no treatment's
evidence, and run-lookup mistakes are one line. Each test is a wrong answer that was reported (issue 21)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from infersweep.aiperf import read_point
from infersweep.cli import main as cli_main
from infersweep.experiment.report import check, experiment_report
from infersweep.experiment.spec import load_experiment
from infersweep.recipe_context import recipe_hash
from infersweep.results.compare import compare_runs
from infersweep.results.regression import judge_run
from infersweep.results.report import write_report
from infersweep.results.run import Run
from infersweep.results.summarize import markdown_table
from infersweep.results.table import build_table, finish_table
from infersweep.results.validity import load_thresholds
from infersweep.slo_bisect import bisect
from tests.support.aws_env import forget_aws
from tests.support.paths import TESTS

FIXTURES = TESTS / "fixtures" / "validity"
SLO = {"ttft_p50_ms": 2000, "output_throughput_p50_tok_s_per_user": 20}
INVALID = "client-bound: AIPerf sent requests 912 ms (p99) after issuing them (> max_send_delay_ms_p99 250)"


def table(recipe: str, points: dict[int, dict], slo=SLO, context: dict | None = None) -> pd.DataFrame:
    """A results table as summarize writes it, with the verdict columns (valid, validity_reasons, slo_pass)
    as a table written before the evidence rule carries them: slo_pass True on an invalid row too."""
    rows = []
    for c, p in points.items():
        rows.append(
            {
                "run_id": f"wf-{recipe}",
                "recipe": recipe,
                "concurrency": c,
                "repetition": 0,
                "status": "ok",
                "reason": "",
                "error_ratio": 0.0,
                "ttft_p50_ms": p.get("ttft", 100.0),
                "ttft_avg_ms": p.get("ttft", 100.0),
                "itl_p50_ms": 5.0,
                "itl_avg_ms": 5.0,
                "request_latency_avg_ms": 900.0,
                "request_latency_p50_ms": 900.0,
                "output_throughput_tok_s": p["tok"],
                "request_throughput_req_s": p["tok"] / 100,
                "output_throughput_tok_s_per_gpu": p["tok"] / 2,
                "output_throughput_p50_tok_s_per_user": 50.0,
                "goodput_req_s": p["tok"] / 100,
                "slo_pass": p.get("slo", True),
                "slo_detail": "meets ttft_p50_ms, output_throughput_p50_tok_s_per_user",
                "valid": p["valid"],
                "validity_reasons": "" if p["valid"] else INVALID,
            }
        )
    return finish_table(pd.DataFrame(rows), {"recipe": recipe, "slo": slo, **(context or {})})


# The README's main job locally: c4 the highest throughput, but measured client-bound (invalid).
MAIN = table("nemotron-3-nano-fp8-vllm-agg-kv", {1: {"tok": 100, "valid": True}, 4: {"tok": 380, "valid": False}})
# demo-prefix-kv locally: every point invalid, every point's numbers inside the SLOs.
DEMO = table("demo-prefix-kv", {4: {"tok": 300, "valid": False}, 8: {"tok": 500, "valid": False}})


def _slo_sentence(run: Run, tmp: Path) -> str:
    html = write_report(run, tmp).read_text()
    return html.split("<h2>SLOs</h2>", 1)[1].split("</p>", 1)[0]


def test_report_best_point_is_never_an_invalid_point(tmp_path):
    sentence = _slo_sentence(Run("wf-main", MAIN, {"slo": SLO}, "test"), tmp_path)
    assert "concurrency 4" not in sentence
    assert "best valid point meeting them: concurrency 1" in sentence


def test_report_and_compare_agree_when_no_point_counts(tmp_path):
    sentence = _slo_sentence(Run("wf-demo", DEMO, {"slo": SLO}, "test"), tmp_path)
    assert "best" not in sentence and "no valid measured point meets them" in sentence
    cmp = compare_runs({"a": DEMO, "b": DEMO.assign(recipe="b")})
    assert cmp.best["meets_slo"].sum() == 0
    assert "none of the runs has a valid point meeting them" in cmp.text()
    # --include-invalid compares the invalid points; it does not make one of them "best"
    everything = compare_runs({"a": DEMO, "b": DEMO.assign(recipe="b")}, include_invalid=True)
    assert everything.best["meets_slo"].sum() == 0


def test_slo_pass_is_never_true_on_an_invalid_row(tmp_path):
    # A real client-starved AIPerf point whose numbers meet a generous SLO: built fresh ...
    point = tmp_path / "points" / "c8"
    shutil.copytree(FIXTURES / "client-starved-c8", point / "aiperf")
    result = read_point(point / "aiperf") | {
        "concurrency": 8,
        "seed": 1,
        "seed_policy": "per-point",
        "cache_state": "fresh-prompts",
    }
    (point / "result.json").write_text(json.dumps(result))
    row = build_table(tmp_path / "points", 1, {"ttft_p50_ms": 1e9}, {"recipe": "r"}, load_thresholds("local")).iloc[0]
    assert not row["valid"]
    assert row["slo_pass"] is not True and pd.isna(row["slo_pass"])
    assert row["slo_detail"].startswith("not judged: invalid point (") and "client-bound" in row["slo_detail"]
    # ... and read from a table written before the rule (slo_pass True on invalid rows)
    assert pd.isna(Run("wf-main", MAIN, {}, "test").table.set_index("concurrency").at[4, "slo_pass"])


def test_results_md_shows_valid_and_why_and_na_as_na():
    # NaN in one row only: a column NaN in every row is left out (test_a_column_empty_in_every_row_is_left_out)
    text = markdown_table(MAIN.assign(ttft_p99_ms=[float("nan") if c == 4 else 100.0 for c in MAIN["concurrency"]]))
    head, _, row1, row4 = text.strip().splitlines()[:4]
    assert "| valid |" in head and "| validity_reasons |" in head
    cells4 = dict(zip([c.strip() for c in head.split("|")], [c.strip() for c in row4.split("|")], strict=False))
    assert cells4["valid"] == "False" and cells4["validity_reasons"].startswith("client-bound")
    assert cells4["slo_pass"] == "NA"  # an invalid point: not judged
    assert cells4["ttft_p99_ms"] == "NA"
    assert "nan" not in text and "<NA>" not in text


# ---------------------------------------------------------------- the experiment report


@pytest.fixture(scope="module")
def nemotron():
    return load_experiment("nemotron-rr-vs-kv")  # claim: kv mean TTFT at c128 at least 20 % below rr


def _treatments(kv_c8_valid: bool) -> dict[str, pd.DataFrame]:
    # Locally the sweep stops at c8, the claim is judged there; kv's c8 is no better than rr's.
    rr = table(
        "rr",
        {
            1: {"tok": 100, "ttft": 100, "valid": True},
            4: {"tok": 300, "ttft": 110, "valid": True},
            8: {"tok": 500, "ttft": 200, "valid": True},
        },
    )
    kv = table(
        "kv",
        {
            1: {"tok": 100, "ttft": 60, "valid": True},
            4: {"tok": 300, "ttft": 70, "valid": True},
            8: {"tok": 500, "ttft": 210, "valid": kv_c8_valid},
        },
    )
    return {"rr": rr, "kv": kv}


def test_a_claim_judged_on_invalid_points_is_inconclusive_not_refuted(nemotron):
    judged = check(nemotron.spec.claim, _treatments(kv_c8_valid=True))  # valid: judged (n=1 at c8: it leans only)
    assert judged.why == "" and judged.leans == "refuted"
    c = check(nemotron.spec.claim, _treatments(kv_c8_valid=False))
    assert c.verdict == "inconclusive"
    assert "kv c8 is not a valid measurement (client-bound" in c.line() and "only valid points count" in c.line()
    r = experiment_report(nemotron, _treatments(kv_c8_valid=False))
    assert dict((x.metric, v) for x, v in r.seed)["ttft_avg_ms"].startswith("inconclusive")
    assert "refuted" not in r.text()


def _run_folder(root: Path, name: str, df: pd.DataFrame, context: dict) -> str:
    folder = root / name
    (folder / "summary").mkdir(parents=True)
    df.to_parquet(folder / "summary" / "results.parquet")
    (folder / "summary" / "run.json").write_text(json.dumps({"context": {"run_id": f"wf-{name}", **context}}))
    return str(folder)


def test_experiment_report_refuses_a_run_of_another_recipe(nemotron, tmp_path, capsys):
    t = _treatments(kv_c8_valid=True)
    rr = _run_folder(tmp_path, "rr", t["rr"], {"recipe_hash": recipe_hash(nemotron.treatment("rr").recipe)})
    other = _run_folder(tmp_path, "other", t["kv"], {"recipe_hash": "0" * 64})
    assert cli_main(["experiment", "report", "nemotron-rr-vs-kv", f"rr={rr}", f"kv={other}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert (
        f"treatment kv: run {other} (wf-other) has recipe hash {'0' * 64}, expected "
        f"{recipe_hash(nemotron.treatment('kv').recipe)}" in err
    )


def test_experiment_report_with_a_treatment_without_run_is_an_error(nemotron, tmp_path, capsys):
    t = _treatments(kv_c8_valid=True)
    rr = _run_folder(tmp_path, "rr", t["rr"], {"recipe_hash": recipe_hash(nemotron.treatment("rr").recipe)})
    assert cli_main(["experiment", "report", "nemotron-rr-vs-kv", f"rr={rr}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no run given for treatment(s) kv" in err


def test_experiment_report_of_matching_runs_exits_0(nemotron, tmp_path, capsys):
    t = _treatments(kv_c8_valid=True)
    refs = [
        f"{n}=" + _run_folder(tmp_path, n, t[n], {"recipe_hash": recipe_hash(nemotron.treatment(n).recipe)})
        for n in ("rr", "kv")
    ]
    assert cli_main(["experiment", "report", "nemotron-rr-vs-kv", *refs]) == 0
    assert "inconclusive: kv beats rr on ttft_avg_ms" in capsys.readouterr().out  # n=1, judged at c8


# ---------------------------------------------------------------- regress and slo-search


def test_regress_on_invalid_points_only_is_inconclusive():
    v = judge_run(DEMO, DEMO)
    assert v.verdict == "inconclusive" and "no valid concurrency point measured in both runs" in v.report


def test_slo_search_counts_an_invalid_probe_as_a_miss_and_says_so():
    def measure(load):  # c1..c3 meet the SLOs; from c4 the points are client-bound (no verdict)
        return (True, "meets ttft_p50_ms") if load < 4 else (None, f"not judged: invalid point ({INVALID})")

    s = bisect(measure, 1, 8)
    assert s.best == 3 and s.first_miss == 4
    assert "counted as misses, no valid verdict: 8: not judged: invalid point" in s.summary()


# ---------------------------------------------------------------- run lookup mistakes


@pytest.fixture
def no_aws(monkeypatch, tmp_path):
    forget_aws(monkeypatch, tmp_path)


@pytest.mark.parametrize("command", [["report"], ["compare", "runs/wf-main"], ["regress", "--baseline", "wf-main"]])
def test_a_run_id_without_aws_credentials_is_one_line(no_aws, capsys, command):
    assert cli_main([*command, "wf-typo-123"]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert "no run folder 'wf-typo-123' under" in err or "no run folder 'runs/wf-main' under" in err
    # The store's failure is named in the same line: NoCredentialsError alone, or, when an earlier test of the
    # suite left an endpoint or credentials behind in botocore's caches, the connection error.
    assert "s3://" in err and "could not be read" in err


def test_a_file_given_as_a_run_is_one_line(no_aws, tmp_path, capsys):
    f = tmp_path / "results.parquet"
    f.write_bytes(b"x")
    assert cli_main(["compare", str(f), str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [
        f"infersweep: {f}: a file, not a run: give a run folder (runs/<run-id>, with summary/ "
        "inside) or a run id / RECIPE/RUN_ID in --store"
    ]


def test_a_typo_in_a_folder_store_names_the_store(tmp_path, capsys):
    assert cli_main(["report", "wf-typo", "--store", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"no run 'wf-typo' in the results store {tmp_path}" in err


def test_compare_with_invalid_points_marks_them_in_its_table():
    cmp = compare_runs({"a": MAIN, "b": MAIN.assign(recipe="b")}, include_invalid=True)
    text = cmp.text()
    head = next(line for line in text.splitlines() if line.startswith("concurrency"))
    assert head.split()[:2] == ["concurrency", "valid"]
    c4 = next(line for line in text.splitlines() if line.startswith("4 "))
    assert "NO (see below)" in c4
    assert "compared 2 invalid point(s) too (--include-invalid); not valid because:" in text
    assert f"concurrency 4 repetition 0: {INVALID}" in text
    assert set(cmp.changes[cmp.changes["concurrency"] == 4]["valid"]) == {False}


def test_experiment_run_prints_commands_that_read_its_treatments_again(nemotron, tmp_path, capsys):
    """Issue 38 item 13: `experiment run` printed no report or compare command for its treatments."""
    import shlex

    from infersweep.commands.experiment import treatment_commands

    t = _treatments(kv_c8_valid=True)
    root = tmp_path / "runs" / "exp-1" / "volumes" / "workdir" / "treatments"
    for n in ("rr", "kv"):
        _run_folder(root, n, t[n], {"recipe_hash": recipe_hash(nemotron.treatment(n).recipe)})
    lines = treatment_commands("nemotron-rr-vs-kv", tmp_path / "runs" / "exp-1", ["rr", "kv"])
    commands = {ln.split(":", 1)[0]: ln.split(":", 1)[1].strip() for ln in lines if not ln.startswith("results")}
    assert set(commands) == {"report", "compare"}
    for command in commands.values():  # each works when pasted
        assert cli_main(shlex.split(command)[1:]) == 0, command
    assert "inconclusive: kv beats rr" in capsys.readouterr().out


def test_a_column_empty_in_every_row_is_left_out_and_named():
    """Issue 38 item 15: the local console table printed columns that are NA in every row (no prediction, no
    GPU power on a laptop)."""
    text = markdown_table(MAIN.assign(predicted_itl_avg_ms=float("nan"), implausible=None))
    head = text.splitlines()[0]
    assert "predicted_itl_avg_ms" not in head and "implausible" not in head and "| valid |" in head
    assert "No value in any row (left out here, kept in results.csv): " in text
    assert "predicted_itl_avg_ms, implausible" in text.splitlines()[-1]
