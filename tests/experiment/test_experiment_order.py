"""Treatments that do not contaminate each other: KV-cache resets between treatments that keep the workers,
a balanced order (rr, kv, kv-2, rr-2), the cache state of every treatment, and the report's order verdicts."""

from __future__ import annotations

import pandas as pd

from infersweep.dgd.render import render_dgd
from infersweep.experiment.kv_reset import RESET_ANNOTATION, mark_reset, reset_token, without_reset
from infersweep.experiment.order import order_findings
from infersweep.experiment.plan import make_plan
from infersweep.experiment.restart import RestartClass, dgd_class
from infersweep.experiment.spec import load_experiment


def test_a_balanced_order_runs_abba_with_resets_where_workers_are_kept():
    plan = make_plan(load_experiment("gpu-kv-vs-rr"))  # 3 blocks (tests/experiment/test_experiment_blocks.py)
    first = plan.steps[:4]
    assert [s.treatment.name for s in first] == ["rr", "kv", "kv-2", "rr-2"]
    assert [s.cache for s in first] == ["fresh", "reset", "reset", "reset"]
    assert [s.order_pass for s in first] == [1, 1, 2, 2]
    assert [s.base for s in first] == ["rr", "kv", "kv", "rr"]


def test_kept_caches_are_named_as_inherited():
    plan = make_plan(load_experiment("gpu-kv-vs-rr-no-reset"))
    assert [s.cache for s in plan.steps][:5] == [
        "fresh",
        "warm after rr",
        "warm after kv",
        "warm after kv-2",
        "warm after rr-2",
    ]


def test_a_reset_is_a_worker_restart_for_the_operator_and_nothing_else_changes():
    r = make_plan(load_experiment("gpu-kv-vs-rr")).steps[0].treatment.recipe
    dgd = render_dgd(r, name="x")
    marked = mark_reset(dgd, "2")
    assert reset_token(marked) == "2" and reset_token(dgd) is None
    workers = [c for c in marked["spec"]["components"] if c["type"] == "worker"]
    assert all(c["podTemplate"]["metadata"]["annotations"][RESET_ANNOTATION] == "2" for c in workers)
    frontend = next(c for c in marked["spec"]["components"] if c["type"] == "frontend")
    assert RESET_ANNOTATION not in str(frontend)
    # the operator restarts workers on a pod-template change: on a cluster, the reset is that restart
    assert dgd_class(dgd, marked) is RestartClass.WORKER
    assert without_reset(marked) == dgd
    assert dgd_class(without_reset(dgd), without_reset(mark_reset(dgd, "3"))) is RestartClass.LOAD


def test_the_experiment_workflow_marks_reset_treatments_and_states_their_cache():
    import json

    import yaml

    from infersweep.cluster_settings import load_cluster_settings
    from workflows.experiment import experiment_template

    plan = make_plan(load_experiment("gpu-kv-vs-rr"))
    wf = experiment_template(plan, load_cluster_settings()).to_dict()
    tasks = {t["name"]: t for tpl in wf["spec"]["templates"] if tpl.get("dag") for t in tpl["dag"]["tasks"]}

    def arg(task, name):
        return next(p["value"] for p in tasks[task]["arguments"]["parameters"] if p["name"] == name)

    assert reset_token(yaml.safe_load(arg("t0-deploy", "dgd"))) is None
    assert [reset_token(yaml.safe_load(arg(f"t{i}-deploy", "dgd"))) for i in (1, 2, 3)] == ["1", "2", "3"]
    ctx = json.loads(arg("t3-summarize", "context"))
    assert ctx["kv_cache_state"] == "reset" and ctx["order_pass"] == 2 and ctx["base_treatment"] == "rr"


def _table(ttft: float) -> pd.DataFrame:
    """One run: three repetitions at +-0.5 % around `ttft`, so a pass on its own can decide (one repetition
    per point decides nothing: infersweep.experiment.report)."""
    return pd.DataFrame(
        [
            {
                "concurrency": 16,
                "repetition": rep,
                "status": "ok",
                "valid": True,
                "ttft_avg_ms": ttft * spread,
                "validity_reasons": "",
            }
            for rep, spread in enumerate((1.0, 0.995, 1.005))
        ]
    )


def test_passes_that_disagree_say_the_order_decided():
    e = load_experiment("gpu-kv-vs-rr-no-reset")
    # pass 1: kv beats rr (it inherited rr's cache); pass 2: rr-2 beats kv-2 (it inherited kv-2's)
    tables = {"rr": _table(400.0), "kv": _table(100.0), "kv-2": _table(300.0), "rr-2": _table(120.0)}
    f = order_findings(e, tables)
    assert f.confounded[:3] == ["kv", "kv-2", "rr-2"]  # and every later run of the 3 blocks
    assert "order-confounded" in f.text() and "the order decided the verdict" in f.text()
    assert f.verdicts["block 1 pass 1"] != f.verdicts["block 1 pass 2"]  # 3 blocks: each pass named by its block


def test_reset_passes_that_agree_are_not_confounded():
    e = load_experiment("gpu-kv-vs-rr")
    tables = {"rr": _table(400.0), "kv": _table(100.0), "kv-2": _table(110.0), "rr-2": _table(390.0)}
    f = order_findings(e, tables)
    assert f.confounded == []
    assert "not order-confounded" in f.text() and "decided" not in f.text()
    assert len({f.verdicts[k] for k in ("block 1 pass 1", "block 1 pass 2", "pooled")}) == 1
