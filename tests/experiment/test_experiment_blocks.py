"""A KV-aware vs round-robin experiment that can decide (issue 32): `blocks: N` ABBA blocks in sequence, a
warm-up after every reset that touches every shared prefix, and the claim judged on the blocks' paired
differences with a Student-t interval (supported / refuted / inconclusive with the blocks it would take)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import yaml

from infersweep.aiperf.point import WARMUP_ROUNDS, Point
from infersweep.experiment.order import order_findings
from infersweep.experiment.paired import Block, blocks_to_decide, judge_paired, paired_claim
from infersweep.experiment.plan import make_plan
from infersweep.experiment.report import experiment_report
from infersweep.experiment.spec import load_experiment
from infersweep.experiment.warmup import after_reset_warmup, prefix_cover_requests
from infersweep.paths import params_dir
from infersweep.recipe import RecipeError
from infersweep.results.noise import t_ppf


def _experiment(tmp_path, name: str = "gpu-kv-vs-rr", **over):
    spec = yaml.safe_load((params_dir() / "experiments" / f"{name}.yaml").read_text())
    spec.update(over)
    spec = {k: v for k, v in spec.items() if v is not None}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return load_experiment(path)


# ---------------------------------------------------------------- the plan


@pytest.mark.parametrize(
    "blocks, names",
    [
        (1, ["rr", "kv", "kv-2", "rr-2"]),
        (2, ["rr", "kv", "kv-2", "rr-2", "rr-3", "kv-3", "kv-4", "rr-4"]),
        (3, ["rr", "kv", "kv-2", "rr-2", "rr-3", "kv-3", "kv-4", "rr-4", "rr-5", "kv-5", "kv-6", "rr-6"]),
    ],
)
def test_blocks_run_abba_in_sequence_each_run_named_and_after_a_reset(tmp_path, blocks, names):
    plan = make_plan(_experiment(tmp_path, blocks=blocks))
    assert [s.treatment.name for s in plan.steps] == names
    assert [s.base for s in plan.steps] == ["rr", "kv", "kv", "rr"] * blocks
    assert [s.block for s in plan.steps] == [b for b in range(1, blocks + 1) for _ in range(4)]
    assert [s.order_pass for s in plan.steps] == [1, 1, 2, 2] * blocks
    assert [s.cache for s in plan.steps] == ["fresh"] + ["reset"] * (4 * blocks - 1)


def test_blocks_without_a_balanced_order_is_one_error_naming_the_field(tmp_path):
    with pytest.raises(RecipeError) as err:
        _experiment(tmp_path, blocks=2, order="planned")
    msg = str(err.value)
    assert "blocks:" in msg and "order: balanced" in msg and msg.count("\n") == 0


def test_a_treatment_named_report_is_refused_it_would_publish_onto_the_experiments_report(tmp_path):
    spec = yaml.safe_load((params_dir() / "experiments" / "gpu-kv-vs-rr.yaml").read_text())
    spec["factors"]["router"] = {"rr": {"router": "round-robin"}, "report": {"router": "kv"}}
    spec.pop("claim"), spec.pop("seed")
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(RecipeError, match="'report' is where the experiment's report is published") as err:
        load_experiment(path)
    assert str(err.value).count("\n") == 0 and "rename that treatment" in str(err.value)


def test_a_treatment_named_like_a_repeat_is_refused(tmp_path):
    spec = yaml.safe_load((params_dir() / "experiments" / "gpu-kv-vs-rr.yaml").read_text())
    spec["factors"]["router"] = {"rr": {"router": "round-robin"}, "rr-3": {"router": "kv"}}
    spec.pop("claim"), spec.pop("seed")
    spec["blocks"] = 2
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(RecipeError, match="'rr-3' is also the name of a repeat"):
        load_experiment(path)


# ---------------------------------------------------------------- the warm-up after a reset


def test_the_warm_up_covers_every_prefix_with_high_probability():
    assert prefix_cover_requests(16) == 150  # 16 draws cover all 16 prefixes with probability 16!/16^16
    for p in (2, 16, 64):
        w = prefix_cover_requests(p)
        assert w >= p and p * (1 - 1 / p) ** w <= 1e-3  # union bound on a prefix never drawn


def test_after_a_reset_the_warm_up_is_also_at_least_the_default_rounds():
    """Few prefixes are covered in a handful of requests, but the window still must not open on the start burst's
    echo: at least WARMUP_ROUNDS rounds at the point's concurrency (2 prefixes at c16: 64, not their cover of 11);
    a recipe that asks for more keeps it."""
    assert prefix_cover_requests(2) < 64
    assert after_reset_warmup(Point(16, 192, 0), 2) == WARMUP_ROUNDS * 16 == 64
    assert after_reset_warmup(Point(16, 192, 100), 2) == 100


def _sweep_points(plan) -> list[list[dict]]:
    from infersweep.cluster_settings import load_cluster_settings
    from workflows.experiment import experiment_template

    wf = experiment_template(plan, load_cluster_settings()).to_dict()
    tasks = {t["name"]: t for tpl in wf["spec"]["templates"] if tpl.get("dag") for t in tpl["dag"]["tasks"]}
    out = []
    for i in range(len(plan.steps)):
        params = {p["name"]: p["value"] for p in tasks[f"t{i}-sweep"]["arguments"]["parameters"]}
        out.append(json.loads(params["points"]))
    return out


def test_every_run_on_emptied_caches_warms_every_prefix_before_its_window(tmp_path):
    e = _experiment(tmp_path, blocks=2)
    assert e.treatments[0].recipe.recipe.workload.warmup_requests == 0  # the recipe asks for none
    points = _sweep_points(make_plan(e))
    assert len(points) == 8
    for run in points:
        assert [p["warmup"] for p in run] == [150]  # 16 prefixes at c16: the prefix cover, above 4 rounds (64)


def test_runs_on_inherited_caches_keep_the_recipes_warm_up(tmp_path):
    plan = make_plan(_experiment(tmp_path, "gpu-kv-vs-rr-no-reset"))
    warmups = [[p["warmup"] for p in run] for run in _sweep_points(plan)]
    # the first run is a fresh deploy (empty caches); the others inherit what the one before left
    assert warmups == [[150]] + [[0]] * 11


# ---------------------------------------------------------------- the paired verdict


def _table(ttft: float, valid: bool = True, reasons: str = "") -> pd.DataFrame:
    """One run: three repetitions at +-0.5 % around `ttft` (its median), so a pass on its own can decide
    (one repetition per point decides nothing: infersweep.experiment.report)."""
    return pd.DataFrame(
        [
            {
                "concurrency": 16,
                "repetition": rep,
                "status": "ok",
                "valid": valid,
                "ttft_avg_ms": ttft * spread,
                "validity_reasons": reasons,
                # the other columns the report's per-concurrency comparison reads
                "itl_avg_ms": 10.0,
                "request_latency_avg_ms": ttft + 1000,
                "request_throughput_req_s": 10.0,
                "output_throughput_tok_s_per_gpu": 100.0,
                "output_throughput_p50_tok_s_per_user": 50.0,
                "goodput_req_s": 10.0,
                "slo_pass": True if valid else None,
            }
            for rep, spread in enumerate((1.0, 0.995, 1.005))
        ]
    )


def _tables(pairs: list[tuple[float, float]]) -> dict[str, pd.DataFrame]:
    """Per block (rr, kv) TTFTs; each side's two runs in the block straddle its value by +-2 %."""
    out = {}
    for b, (rr, kv) in enumerate(pairs, 1):
        k1, k2 = 2 * b - 1, 2 * b
        name = lambda t, k: t if k == 1 else f"{t}-{k}"  # noqa: E731
        out[name("rr", k1)], out[name("rr", k2)] = _table(rr * 1.02), _table(rr * 0.98)
        out[name("kv", k1)], out[name("kv", k2)] = _table(kv * 0.98), _table(kv * 1.02)
    return out


def test_blocks_that_agree_well_beyond_the_threshold_support_the_claim(tmp_path):
    e = _experiment(tmp_path, blocks=3)  # claim: kv beats rr on ttft_avg_ms at c16 by at least 20 %
    p = paired_claim(e, _tables([(400, 200), (420, 205), (380, 195)]))
    assert p.verdict == "supported" and p.n == 3
    assert p.low > 0.20 and [b.block for b in p.blocks] == [1, 2, 3]
    assert p.blocks[1].runs == {"kv": ["kv-3", "kv-4"], "rr": ["rr-3", "rr-4"]}
    # the pair means: rr-3 and rr-4 straddle 420 ms
    assert p.blocks[1].baseline == pytest.approx(420) and p.blocks[1].improvement == pytest.approx(1 - 205 / 420)
    assert "supported" in p.line() and "n=3" in p.line()


def test_blocks_that_agree_on_no_difference_refute_the_claim(tmp_path):
    e = _experiment(tmp_path, blocks=3)
    p = paired_claim(e, _tables([(400, 396), (420, 424), (380, 378)]))
    assert p.verdict == "refuted" and p.high < 0.20


def test_blocks_that_disagree_are_inconclusive_with_the_blocks_it_would_take(tmp_path):
    e = _experiment(tmp_path, blocks=3)
    # improvements 35 %, 10 %, 30 %: a mean above 20 % but a spread the interval cannot clear in 3 blocks
    p = paired_claim(e, _tables([(400, 260), (400, 360), (400, 280)]))
    assert p.verdict == "inconclusive" and p.low < 0.20 < p.high
    assert p.more_blocks is not None and p.more_blocks >= 1
    assert f"about {p.more_blocks} more block" in p.line()
    # at that many blocks, the same mean and spread give an interval that clears the threshold
    m = p.blocks_needed
    assert m == p.n + p.more_blocks
    assert p.mean - t_ppf(0.975, m - 1) * p.sd / math.sqrt(m) > 0.20
    assert blocks_to_decide(p.mean - 0.20, p.sd) == m


def test_one_block_decides_nothing_and_says_so():
    from infersweep.experiment.spec import Comparison

    claim = Comparison(metric="ttft_avg_ms", concurrency=16, treatment="kv", baseline="rr", better_by_pct=20)
    p = judge_paired(claim, [Block(1, {}, 100.0, 400.0, 0.75)], [])
    assert p.verdict == "inconclusive" and "no spread between blocks" in p.line()


def test_a_block_with_an_invalid_run_is_left_out_and_the_report_says_so(tmp_path):
    e = _experiment(tmp_path, blocks=3)
    tables = _tables([(400, 200), (420, 205), (380, 195)])
    tables["kv-4"] = _table(150, valid=False, reasons="unsteady: throughput by thirds differs 40 %")
    p = paired_claim(e, tables)
    assert [b.block for b in p.blocks] == [1, 3] and p.n == 2
    assert len(p.dropped) == 1 and p.dropped[0].startswith("block 2") and "unsteady" in p.dropped[0]
    text = experiment_report(e, tables).text()
    assert "## Claim" in text and "block 2 (" in text and "left out" in text and "n=2" in text


def test_the_report_verdict_is_the_paired_one(tmp_path):
    e = _experiment(tmp_path, blocks=2)
    tables = _tables([(400, 260), (400, 360)])
    report = experiment_report(e, tables)
    assert report.paired is not None and report.verdict[0] == report.paired.verdict
    assert report.verdict[1].startswith(report.paired.verdict + ": kv beats rr") and "paired" in report.verdict[1]
    assert "first pass alone" in report.text()
    # a report given only each treatment's one run (experiment report TREATMENT=RUN) keeps the per-point check
    only_first = {n: tables[n] for n in ("rr", "kv")}
    assert experiment_report(e, only_first).paired is None


def test_order_findings_name_every_block_and_pass(tmp_path):
    e = _experiment(tmp_path, blocks=2)
    f = order_findings(e, _tables([(400, 200), (420, 205)]))
    assert list(f.verdicts) == ["block 1 pass 1", "block 1 pass 2", "block 2 pass 1", "block 2 pass 2", "pooled"]
    assert any(label.startswith("block 2 pass 2 (kv-4 -> rr-4)") for label, _ in f.passes)


def test_a_local_resume_keeps_each_runs_block_and_reset(tmp_path):
    from infersweep.local.experiment_run import _replan

    plan = make_plan(_experiment(tmp_path, blocks=2))
    left = _replan(plan, {"rr", "kv", "kv-2"})
    assert [s.treatment.name for s in left.steps] == ["rr-2", "rr-3", "kv-3", "kv-4", "rr-4"]
    assert [s.cache for s in left.steps] == ["fresh"] + ["reset"] * 4
    assert [(s.block, s.order_pass, s.base) for s in left.steps][:2] == [(1, 2, "rr"), (2, 1, "rr")]


def test_passes_that_differ_over_several_blocks_are_not_called_the_orders_doing(tmp_path):
    e = _experiment(tmp_path, blocks=2)
    f = order_findings(e, _tables([(400, 200), (400, 360)]))
    assert len(set(f.verdicts.values())) > 1
    assert "the order decided" not in f.text() and "the paired interval weighs" in f.text()


def test_the_plan_says_how_many_runs_and_blocks(tmp_path):
    assert (
        make_plan(_experiment(tmp_path, blocks=3))
        .text()
        .startswith("experiment gpu-kv-vs-rr: 12 runs of 2 treatments (3 ABBA blocks)")
    )
