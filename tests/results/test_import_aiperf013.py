"""`infersweep import` on folders real AIPerf 0.13.0 wrote (tests/fixtures/aiperf/import/, README there: a plain run
with phases/, a `--concurrency 2,4 --num-profile-runs 3` tree, a prefix-prompt run): a run is one point, a multi-run
tree's trials are repetitions, the workload and what is known of the deployment come from the artifact, and AIPerf's
own confidence intervals are shown beside infersweep's."""

from __future__ import annotations

import json
import shutil

from infersweep.cli import main as cli_main
from infersweep.results.import_context import provenance
from infersweep.results.import_layout import find_runs
from infersweep.results.llmd_export import export_run
from infersweep.results.store import RunStore
from tests.conftest import copy_tree
from tests.support.paths import FIXTURES, REPO

IMPORT = FIXTURES / "aiperf" / "import"
RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"  # serves nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8, as AIPerf asked for
OTHER_RECIPE = "qwen3-32b-fp8-vllm-agg"  # serves Qwen/Qwen3-32B-FP8


def _import(capsys, folder, store, run_id, *extra, recipe=RECIPE) -> tuple[int, str, str]:
    rc = cli_main(["import", str(folder), "--recipe", recipe, "--run-id", run_id, "--store", str(store), *extra])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_a_plain_013_run_is_one_point_its_phases_are_part_of_it(tmp_path, capsys):
    rc, out, _ = _import(capsys, IMPORT / "plain-c4", tmp_path / "store", "plain")
    assert rc == 0
    assert "found 1 AIPerf run(s)" in out and "2 per-phase summaries under phases/ read as part of their run" in out
    assert "-> 1 concurrency(ies), 1 point(s): c4" in out
    run = RunStore(tmp_path / "store").load("plain")
    assert len(run.table) == 1
    row = run.table.iloc[0]
    # the run's own summary: the 24 profiling requests, not the 4 of its warm-up phase
    assert (row["concurrency"], row["repetition"], row["requests_ok"]) == (4, 0, 24)


def test_a_multi_run_tree_is_two_concurrencies_of_three_repetitions(tmp_path, capsys):
    rc, out, _ = _import(capsys, IMPORT / "multirun-c2-c4", tmp_path / "store", "multi")
    assert rc == 0
    assert "2 multi-run variation(s) (concurrency_2, concurrency_4) x 3 trial(s), each trial a repetition" in out
    assert "-> 2 concurrency(ies), 6 point(s): c2 x3, c4 x3" in out
    t = RunStore(tmp_path / "store").load("multi").table
    assert {c: sorted(g["repetition"]) for c, g in t.groupby("concurrency")} == {2: [0, 1, 2], 4: [0, 1, 2]}
    assert set(t["requests_ok"]) == {12}  # each trial's profiling phase, never a warm-up


def test_the_same_tree_one_folder_up_groups_the_same(tmp_path, capsys):
    root = tmp_path / "team"
    copy_tree(IMPORT / "multirun-c2-c4", root / "nightly" / "multirun-c2-c4")
    layout = find_runs(root)
    assert sorted({r.variation for r in layout.runs}) == [
        "nightly/multirun-c2-c4/concurrency_2",
        "nightly/multirun-c2-c4/concurrency_4",
    ]
    assert sorted(r.trial for r in layout.runs) == [1, 1, 2, 2, 3, 3]
    assert len(layout.aggregates) == 2  # aggregate/concurrency_N/, AIPerf's own


def test_other_013_multi_run_layouts_group_by_variation(tmp_path):
    """The layouts of aiperf/orchestrator/orchestrator.py _resolve_artifact_dir, built from one real run each."""
    run = IMPORT / "plain-c4"
    for trial in (1, 2):
        copy_tree(run, tmp_path / "indep" / "concurrency_4" / "profile_runs" / f"trial_{trial:04d}")
        copy_tree(run, tmp_path / "single" / "profile_runs" / f"run_{trial:04d}")
    indep = find_runs(tmp_path / "indep")
    assert {(r.variation, r.trial) for r in indep.runs} == {("concurrency_4", 1), ("concurrency_4", 2)}
    single = find_runs(tmp_path / "single")
    assert {(r.variation, r.trial) for r in single.runs} == {("", 1), ("", 2)}
    assert indep.phases_skipped == single.phases_skipped == 4
    # a sweep without repetitions: <base>/concurrency_C/, one point each
    copy_tree(run, tmp_path / "sweep" / "concurrency_4")
    sweep = find_runs(tmp_path / "sweep")
    assert [(r.variation, r.trial, r.kind) for r in sweep.runs] == [("concurrency_4", None, "folder")]


def test_the_import_page_shows_what_import_prints(tmp_path, capsys):
    """docs/import.md's examples are the command's own first lines on these fixtures."""
    page = (REPO / "docs" / "import.md").read_text()
    for folder in ("plain-c4", "multirun-c2-c4"):
        rc, out, _ = _import(capsys, IMPORT / folder, tmp_path / "store", folder)
        assert rc == 0
        assert out.splitlines()[0].replace(str(IMPORT / folder), folder) in page, folder


def test_a_013_run_without_its_own_summary_is_a_failed_point_never_its_warm_up(tmp_path, capsys):
    run = copy_tree(IMPORT / "plain-c4", tmp_path / "stopped-c4")
    (run / "profile_export_aiperf.json").unlink()
    (run / "profile_export.jsonl").unlink()  # what is left: phase_manifest.json and phases/
    layout = find_runs(tmp_path / "stopped-c4")
    assert [r.folder for r in layout.runs] == [run] and layout.phases_skipped == 2
    rc, _, _ = _import(capsys, run, tmp_path / "store", "stopped")
    assert rc == 0
    t = RunStore(tmp_path / "store").load("stopped").table
    assert len(t) == 1 and t.iloc[0]["status"] == "failed"


def test_a_prefix_prompt_workload_is_reuse_on_purpose_not_a_warm_cache(tmp_path, capsys):
    store = tmp_path / "store"
    rc, out, _ = _import(capsys, IMPORT / "prefix-c4", store, "prefix")
    assert rc == 0
    assert "workload (from AIPerf's input_config): isl=64, osl=16, prefix_tokens=48, num_prefixes=2" in out
    run = RunStore(store).load("prefix")
    assert run.context["workload"] == {"isl": 64, "osl": 16, "prefix_tokens": 48, "num_prefixes": 2}
    row = run.table.iloc[0]
    assert row["prompt_cache_read_pct"] > 40  # the shared prefixes were served from the cache, as meant
    assert row["cache_state"] == "reused-prompts"
    assert "reuses no prompts" not in row["validity_reasons"]
    # the plain run's cache hits (its warm-up prompts sent again) are still called out
    assert _import(capsys, IMPORT / "plain-c4", store, "plain")[0] == 0
    assert "though the workload reuses no prompts" in RunStore(store).load("plain").table.iloc[0]["validity_reasons"]


def test_compare_refuses_two_imports_of_different_isl(tmp_path, capsys, aiperf_ref):
    store = tmp_path / "store"
    assert _import(capsys, IMPORT / "plain-c4", store, "isl64")[0] == 0
    # AIPerf 0.13.0's reference run at c4: --isl 128 --osl 32, model tiny-mock
    assert _import(capsys, aiperf_ref / "dynamo-mocker-c4", store, "isl128", "--model-mismatch-ok")[0] == 0
    rc = cli_main(
        ["compare", "isl64", "isl128", "--store", str(store), "--include-invalid", "--allow-different", "model"]
    )
    err = capsys.readouterr().err
    assert rc == 2
    assert "different workload" in err and "isl=64" in err and "isl=128" in err


def test_a_model_mismatch_is_refused_in_one_line_or_recorded_when_accepted(tmp_path, capsys):
    store = tmp_path / "store"
    rc, _, err = _import(capsys, IMPORT / "plain-c4", store, "mm", recipe=OTHER_RECIPE)
    assert rc == 2
    assert err.strip().count("\n") == 0
    assert "'nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8'" in err and "'Qwen/Qwen3-32B-FP8'" in err
    assert "--model-mismatch-ok" in err

    rc, out, _ = _import(capsys, IMPORT / "plain-c4", store, "mm", "--model-mismatch-ok", recipe=OTHER_RECIPE)
    assert rc == 0
    run = RunStore(store).load("mm")
    assert run.context["model"] == "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8"  # what AIPerf measured
    imported = run.context["imported"]
    assert imported["model_mismatch_ok"] is True and imported["recipe_model"] == "Qwen/Qwen3-32B-FP8"
    assert "accepted as a mismatch (--model-mismatch-ok)" in out


def test_hardware_engine_and_router_are_unknown_unless_stated(tmp_path, capsys):
    store = tmp_path / "store"
    rc, out, _ = _import(capsys, IMPORT / "plain-c4", store, "bare")
    assert rc == 0
    ctx = RunStore(store).load("bare").context
    assert (ctx["gpu_type"], ctx["gpu_count"], ctx["engine_image"], ctx["router"]) == (
        "unknown",
        None,
        "unknown",
        "unknown",
    )
    assert ctx["imported"]["recipe_said"]["gpu_type"] == "H100"  # what the recipe meant, kept apart
    assert "unknown (not in the artifact, not stated): engine_image, gpu_count, gpu_type, router" in out

    rc, _, _ = _import(
        capsys,
        IMPORT / "plain-c4",
        store,
        "stated",
        "--gpu-type",
        "H200",
        "--gpu-count",
        "1",
        "--router",
        "round-robin",
    )
    assert rc == 0
    run = RunStore(store).load("stated")
    ctx = run.context
    assert (ctx["gpu_type"], ctx["gpu_count"], ctx["router"], ctx["engine_image"]) == (
        "H200",
        1,
        "round-robin",
        "unknown",
    )
    assert ctx["imported"]["sources"]["gpu_type"] == "--gpu-type"
    assert run.table.iloc[0]["output_throughput_tok_s_per_gpu"] > 0  # a stated count divides; unknown leaves NA


def test_the_report_and_the_export_of_an_import_say_so_and_what_was_unknown(tmp_path, capsys):
    store = tmp_path / "store"
    assert _import(capsys, IMPORT / "plain-c4", store, "bare")[0] == 0
    said = (
        "imported from AIPerf artifacts; unknown (not in the artifact, not stated): engine_image, gpu_count, gpu_type"
    )
    assert said in (store / RECIPE / "bare" / "summary" / "report.html").read_text()
    assert said in (store / RECIPE / "bare" / "summary" / "results.md").read_text()
    reports, _ = export_run(RunStore(store).load("bare"), include_invalid=True)
    assert reports and all(said in r["run"]["description"] for r in reports.values())


def test_gpus_come_from_aiperf_telemetry_when_the_summary_has_some():
    """AIPerf's telemetry_data shape (aiperf/operator/runs_index.py _summarize_telemetry reads it so); no GPU here
    to make a real one, so the summary is the plain run's with two GPUs' telemetry added."""
    summary = json.loads((IMPORT / "plain-c4" / "profile_export_aiperf.json").read_text())
    gpus = {f"GPU-{i}": {"gpu_name": "NVIDIA H200", "gpu_index": i} for i in range(2)}
    summary["telemetry_data"] = {"endpoints": {"http://node:9401/metrics": {"gpus": gpus}}}
    ctx = provenance(
        [summary],
        {"recipe": RECIPE, "model": summary["input_config"]["models"]["items"][0]["name"]},
        stated={},
        model_mismatch_ok=False,
    )
    assert (ctx["gpu_type"], ctx["gpu_count"]) == ("NVIDIA H200", 2)
    assert ctx["imported"]["sources"]["gpu_type"] == "AIPerf GPU telemetry"
    assert ctx["imported"]["unknown"] == ["engine_image", "router"]


def test_aiperf_0_11_and_0_12_folders_keep_importing(tmp_path, capsys):
    root = tmp_path / "team"
    copy_tree(FIXTURES / "aiperf" / "0.11.0" / "c2", root / "c2")
    copy_tree(FIXTURES / "aiperf" / "0.12.0" / "c4", root / "c4")
    rc, out, _ = _import(capsys, root, tmp_path / "store", "old", "--model-mismatch-ok")  # they asked for model "x"
    assert rc == 0
    assert "-> 2 concurrency(ies), 2 point(s): c2, c4" in out and "(AIPerf 0.11.0, 0.12.0;" in out
    assert RunStore(tmp_path / "store").load("old").context["workload"] == {"isl": 64, "osl": 16}


def test_aiperf_confidence_intervals_are_shown_beside_infersweeps(tmp_path, capsys):
    store = tmp_path / "store"
    rc, out, _ = _import(capsys, IMPORT / "multirun-c2-c4", store, "multi")
    assert rc == 0
    agg = json.loads(
        (IMPORT / "multirun-c2-c4/aggregate/concurrency_2/profile_export_aiperf_aggregate.json").read_text()
    )
    ttft = agg["metrics"]["time_to_first_token_p50"]
    shown = f"{ttft['mean']:.2f} ± {(ttft['ci_high'] - ttft['ci_low']) / 2:.2f} (95%, n=3)"
    assert f"c2 TTFT p50 ms: AIPerf {shown}; infersweep {ttft['mean']:.2f} ±" in out
    assert "c2: AIPerf's intervals match infersweep's over the same runs" in out
    where = store / RECIPE / "multi"
    for page in ("summary/results.md", "summary/report.html"):
        text = (where / page).read_text()
        assert "AIPerf's own confidence intervals" in text and shown in text, page


def test_a_trial_left_out_makes_the_intervals_disagree_and_says_why(tmp_path, capsys):
    tree = copy_tree(IMPORT / "multirun-c2-c4", tmp_path / "tree")
    shutil.rmtree(tree / "profile_runs" / "trial_0003" / "concurrency_4")
    rc, out, _ = _import(capsys, tree, tmp_path / "store", "two")
    assert rc == 0
    assert "c4: AIPerf's and infersweep's intervals over the same runs disagree beyond rounding on" in out
    assert "AIPerf aggregated 3 run(s), 2 were imported measured" in out


def test_runs_of_different_workloads_under_one_import_are_refused(tmp_path, capsys):
    root = tmp_path / "mixed"
    copy_tree(IMPORT / "plain-c4", root / "plain-c4")
    copy_tree(IMPORT / "prefix-c4", root / "prefix-c4")
    rc, _, err = _import(capsys, root, tmp_path / "store", "mixed")
    assert rc == 2
    assert "measured different workloads" in err and "import each workload as a run of its own" in err
