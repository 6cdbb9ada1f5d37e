"""The point step judges steadiness as summarize does (issue 32 item 4: a point is extended "until it is steady and
its confidence interval is within a target"): one rule (infersweep.aiperf.steadiness) with the run profile's
thresholds (params/validity.yaml) sent in the workload of a point with a budget; an unsteady window with budget
left is measured again, longer, and one still unsteady when the budget is spent says so and stays invalid."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from infersweep.aiperf.adaptive import decide
from infersweep.aiperf.flags import STEADY_KEYS
from infersweep.cluster_settings import load_cluster_settings
from infersweep.pipeline_params import check_value
from infersweep.recipe import RecipeError, load_recipe
from infersweep.results.validity import judge_point, load_thresholds, point_measures
from infersweep.validity_thresholds import step_steadiness
from steps import aiperf_point
from tests.aiperf.test_aiperf_contract import image_root, run_isolated  # noqa: F401  (image_root: a fixture)
from tests.conftest import FIXTURES
from tests.results.test_steady_state import closed_loop
from workflows.pipeline import recipe_run

MEASURED = Path(__file__).resolve().parents[2] / "benchmarks" / "measured"
# every committed H200 window measured to its end, with its records (2026-12-01 and -02; the step judges only those,
# summarize refuses the others as not measured): steady ones, and unsteady ones of the kinds the rule names
# (drift of output tok/s or of TTFT, in a sweep's and an experiment's points)
POINTS = sorted(
    p.parent
    for p in MEASURED.glob("h200-2026-12-0[12]/**/result.json")
    if (p.parent / "aiperf" / "profile_export.jsonl").is_file() and json.loads(p.read_text())["status"] == "ok"
)


def _rendered_workload(**overrides) -> str:
    """The workload argument the pipeline renders for demo-prefix-rr with these recipe overrides."""
    r = load_recipe("demo-prefix-rr", overrides=overrides)
    return recipe_run(r, load_cluster_settings()).arguments["workload"]


def test_a_point_with_a_budget_is_sent_the_run_profiles_steadiness_thresholds():
    workload = json.loads(_rendered_workload(**{"workload.max_requests_per_concurrency": 24}))
    default = load_thresholds(None, env={})  # a cluster's steps set no INFERSWEEP_PLATFORM
    assert {k: workload[k] for k in STEADY_KEYS} == {k: default[b][n] for k, (b, n) in STEADY_KEYS.items()}
    # without a budget nothing is added: the workload renders as before
    assert not set(STEADY_KEYS) & set(json.loads(_rendered_workload()))
    # local mode's steps select the local profile (its TTFT allowance for a busy machine), and get its figures
    local = step_steadiness({"max_requests_factor": 2}, env={"INFERSWEEP_PLATFORM": "local"})
    assert local["steady_max_ttft_drift"] == load_thresholds("local")["steady_state"]["max_ttft_drift"] == 0.5


def test_the_step_refuses_part_of_the_thresholds_naming_what_is_missing(capsys):
    workload = {"isl": 8, "osl": 8, "max_requests_factor": 2, "steady_max_throughput_drift": 0.15}
    with pytest.raises(SystemExit):
        aiperf_point.parse_args(
            [
                *("--url", "http://f:8000", "--model", "m", "--tokenizer", "/tok", "--out", "/tmp/p/c1"),
                *("--concurrency", "1", "--requests", "8", "--workload", json.dumps(workload)),
            ]
        )
    err = capsys.readouterr().err
    assert "steadiness thresholds come together" in err and "steady_min_cycles" in err
    # and `--set workload=...` refuses it before anything is submitted (the CLI's check of a run parameter)
    with pytest.raises(RecipeError, match="--set workload=.*steadiness thresholds come together.*steady_min_cycles"):
        check_value("workload", json.dumps(workload))
    complete = workload | step_steadiness(workload, env={})
    assert check_value("workload", json.dumps(complete)) is None


def test_the_step_judges_every_committed_h200_window_as_summarize_does(image_root):  # noqa: F811
    """The step's verdict, computed in the AIPerf env with only the image's files and the workload the pipeline
    renders, against summarize's (judge_point with the default profile) on the same records."""
    workload = _rendered_workload(**{"workload.max_requests_per_concurrency": 24})
    windows = []
    for d in POINTS:
        r = json.loads((d / "result.json").read_text())
        windows.append([str(d / "aiperf" / "profile_export.jsonl"), r["concurrency"], r.get("request_rate") or 0.0])
    code = (
        "import json\n"
        "from infersweep.aiperf.point_run import workload_json\n"
        "from infersweep.aiperf.steadiness import steady_state_reasons, thresholds_from_workload, window_measures\n"
        "t = thresholds_from_workload(workload_json(sys.argv[1]))\n"
        "out = [steady_state_reasons(window_measures(p, c, rate), t) for p, c, rate in json.loads(sys.argv[2])]\n"
        "tops = {m.split('.')[0] for m in sys.modules}\n"
        "foreign = sorted(x for x in tops if x not in sys.stdlib_module_names and not x.startswith('_')"
        " and x not in ('infersweep', 'orjson'))\n"
        "print(json.dumps({'reasons': out, 'foreign': foreign}))\n"
    )
    proc = run_isolated(image_root, code, workload, json.dumps(windows))
    assert proc.returncode == 0, proc.stderr
    ran = json.loads(proc.stdout)
    assert ran["foreign"] == []
    default = load_thresholds(None, env={})
    steady = []
    for d, step_reasons in zip(POINTS, ran["reasons"], strict=True):
        r = json.loads((d / "result.json").read_text())
        _, reasons = judge_point(point_measures(d, r), default)
        summarize_says = [x for x in reasons if x.startswith(("unsteady", "overloaded", "cannot tell steady"))]
        assert step_reasons == summarize_says, d
        steady.append(not step_reasons)
    # both verdicts are there to agree on: 8 steady windows and 16 unsteady ones
    assert (steady.count(True), steady.count(False)) == (8, 16)


def test_an_unsteady_window_is_extended_and_says_why():
    s = {"ttft": [1000.0] * 96, "latency": [5000.0] * 96}  # an interval well within target
    why = "unsteady: TTFT p50 drifted -46% from the first cycle to the last"
    d = decide(s, 16, steady=False, requests_done=96, budget_requests=192, unsteady_because=why)
    assert (d.stop_reason, d.more_requests) == ("extend", 96) and why in d.detail
    spent = decide(s, 16, steady=False, requests_done=192, budget_requests=192, unsteady_because=why)
    assert spent.stop_reason == "budget spent" and why in spent.detail and "still not steady" in spent.detail
    # steady, the same interval meets the target
    assert decide(s, 16, steady=True, requests_done=96, budget_requests=192).stop_reason == "target met"


# A stand-in for `aiperf profile`: a real AIPerf 0.13.0 run's artifacts (its summary: status ok) with the records of
# a synthetic closed loop of --request-count requests, from the file the test wrote for that count.
FAKE_AIPERF = """\
#!{python}
import shutil, sys
argv = sys.argv[1:]
out = argv[argv.index("--artifact-dir") + 1]
shutil.copytree({src!r}, out, dirs_exist_ok=True)
shutil.copyfile({records!r} + "/" + argv[argv.index("--request-count") + 1] + ".jsonl", out + "/profile_export.jsonl")
"""


def _run_point(
    tmp_path: Path, windows: dict[int, list[dict]], *, requests: int, thresholds: bool = True
) -> tuple[dict, Path]:
    """The point step (steps.aiperf_point) at c4 with a budget of 2x and the default profile's thresholds as the
    pipeline renders them (none without `thresholds`), AIPerf faked: a window of N requests gets windows[N]'s
    records."""
    records = tmp_path / "records"
    records.mkdir()
    for n, recs in windows.items():
        (records / f"{n}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    fake = tmp_path / "aiperf"
    src = FIXTURES / "aiperf" / "0.13.0" / "dynamo-mocker-c4"
    fake.write_text(FAKE_AIPERF.format(python=sys.executable, src=str(src), records=str(records)))
    fake.chmod(0o755)
    (tmp_path / "tok").mkdir()
    workload = {"isl": 32, "osl": 256, "max_requests_factor": 2, "ci95_target": 0.5}
    workload |= step_steadiness(workload, env={}) if thresholds else {}
    out = tmp_path / "points" / "c4"
    code = aiperf_point.main(
        [
            *("--url", "http://127.0.0.1:9", "--model", "m", "--tokenizer", str(tmp_path / "tok")),
            *("--concurrency", "4", "--requests", str(requests), "--warmup", "4", "--timeout-s", "600"),
            *("--workload", json.dumps(workload), "--out", str(out), "--aiperf", str(fake)),
        ]
    )
    assert code == 0
    return json.loads((out / "result.json").read_text()), out


def test_a_point_whose_first_window_is_unsteady_is_measured_again_longer(tmp_path):
    # 10 rounds of 4 on a server slowing down by a fifth, then 20 steady rounds: the longer window settles it
    result, out = _run_point(
        tmp_path, {40: closed_loop(4, 10, 0.2, slowdown=0.2), 80: closed_loop(4, 20, 0.2)}, requests=40
    )
    assert (result["requests"], result["requests_extended"], result["stop_reason"]) == (80, 40, "target met")
    assert result["steady_reasons"] == []
    [pilot] = result["pilots"]
    assert pilot["steady_reasons"] and pilot["steady_reasons"][0].startswith("unsteady: output tok/s drifted -")
    pilot_result = json.loads((out / pilot["folder"] / "result.json").read_text())
    assert (
        pilot_result["stop_reason"] == "extend"
        and "not steady (unsteady: output tok/s" in pilot_result["adaptive_detail"]
    )


def test_a_point_still_unsteady_when_its_budget_is_spent_says_so_and_stays_invalid(tmp_path):
    slow = {40: closed_loop(4, 10, 0.2, slowdown=0.2), 80: closed_loop(4, 20, 0.2, slowdown=0.2, seed=1)}
    result, out = _run_point(tmp_path, slow, requests=40)
    assert (result["requests"], result["stop_reason"]) == (80, "budget spent")
    assert "not steady (unsteady: output tok/s drifted -" in result["adaptive_detail"]
    assert "still not steady when the budget was spent" in result["adaptive_detail"]
    # summarize judges the final window with the same rule and thresholds: invalid, for the reasons the step saw
    m = point_measures(out, result | {"duration_s": 60.0, "requests_ok": 80, "error_rate": 0.0})
    valid, reasons = judge_point(m, load_thresholds(None, env={}))
    assert not valid and set(result["steady_reasons"]) <= set(reasons)


def test_a_point_without_thresholds_is_judged_at_summarize_time_only(tmp_path):
    """A workflow rendered before the step judged steadiness (no steady_* keys): the step decides as it did."""
    result, _ = _run_point(tmp_path, {40: closed_loop(4, 10, 0.2, slowdown=0.2)}, requests=40, thresholds=False)
    assert "steady_reasons" not in result and result["stop_reason"] == "target met"
