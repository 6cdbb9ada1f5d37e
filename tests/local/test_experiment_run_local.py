"""`infersweep experiment run --local`: the experiment's one rendered Workflow run by the local Argo executor
with real Dynamo frontend + mocker processes, real AIPerf and a real local S3 (infersweep/local/experiment_run.py).

Fast tests: the resume plan and the cluster-side readiness of a patched DGD. Two e2e tests (mark e2e):
- the Nemotron RR-vs-KV study end to end: the workers are started once, the frontend twice, the report
  has the claim's verdict and each treatment's time-to-ready (about 1.5-2.5 min here);
- a treatment whose worker dies does not stop the next one, and `--resume` runs only the unfinished
  treatment, keeping the finished one's results byte for byte, and every treatment's results carry the
  commit its model cache resolved (about 1.5-2 min).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from infersweep.experiment.plan import make_plan
from infersweep.experiment.restart import RestartClass
from infersweep.experiment.spec import load_experiment
from tests.support.run_failure import why_failed


def test_resume_plan_runs_only_unfinished_treatments_and_starts_with_a_fresh_deploy(tmp_path):
    from infersweep.local.experiment_run import _replan, finished_treatments

    plan = make_plan(load_experiment("qwen3-32b-mooncake"))
    names = [s.treatment.name for s in plan.steps]
    run = tmp_path / "run"
    for n in names[:2]:
        (run / "volumes/workdir/treatments" / n / "summary").mkdir(parents=True)
    import pandas as pd

    pd.DataFrame({"status": ["ok", "failed"]}).to_parquet(
        run / f"volumes/workdir/treatments/{names[0]}/summary/results.parquet"
    )
    # names[1] failed before measuring: its summary is an empty table; it runs again
    pd.DataFrame({"status": pd.Series([], dtype=str)}).to_parquet(
        run / f"volumes/workdir/treatments/{names[1]}/summary/results.parquet"
    )
    (run / f"volumes/workdir/treatments/{names[2]}").mkdir()  # archived with no summary at all
    assert finished_treatments(run) == [names[0]]
    left = _replan(plan, {names[0]})
    assert [s.treatment.name for s in left.steps] == names[1:]
    assert left.steps[0].transition.cls is RestartClass.FULL  # nothing is running when a resume starts


def test_wait_ready_does_not_take_an_older_generations_ready_for_the_patched_spec():
    from infersweep.platform.readiness import dgd_ready

    ready = {"state": "successful", "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}]}
    assert dgd_ready({"metadata": {"generation": 1}, "status": {**ready, "observedGeneration": 1}}) == (True, None)
    # patched to generation 2, the operator has not reconciled it yet: the old Ready is not the new spec's
    assert dgd_ready({"metadata": {"generation": 2}, "status": {**ready, "observedGeneration": 1}}) == (False, None)
    only_conditions = {"conditions": ready["conditions"], "observedGeneration": 2}
    assert dgd_ready({"metadata": {"generation": 2}, "status": only_conditions}) == (False, None)
    assert dgd_ready({"metadata": {}, "status": {"state": "successful"}}) == (True, None)  # older operators


def _dynamo_or_skip():
    from infersweep.local.toolchain import default_dynamo_python

    if not Path(default_dynamo_python()).exists():
        pytest.skip(f"no Dynamo interpreter at {default_dynamo_python()}")


def _applies(run_dir: Path, step: str) -> list[tuple[str, dict[str, int]]]:
    """(what the local apply did, {process: pid}) per deploy of the treatment step `step` (e.g. t0)."""
    out = []
    for log in sorted(run_dir.glob(f"nodes/*.{step}-deploy_*/main.log")):
        m = re.search(r"local apply: ([a-z ]+); processes (.*)", log.read_text())
        assert m, log
        out.append((m.group(1), {k: int(v) for k, v in (p.split("=") for p in m.group(2).split(", "))}))
    return out


@pytest.mark.e2e
@pytest.mark.timeout(1500)  # minutes of real AIPerf points on a 2-core machine shared by others
def test_nemotron_rr_vs_kv_runs_with_one_worker_deploy_and_two_frontends(tmp_path):
    _dynamo_or_skip()
    from infersweep.local.experiment_run import run_experiment_local

    res = run_experiment_local("nemotron-rr-vs-kv", out_root=tmp_path / "runs", cache_root=tmp_path / "cache")
    assert res.phase == "Succeeded", why_failed(res)
    assert [(s.treatment.name, s.transition.cls) for s in res.plan.steps] == [
        ("rr", RestartClass.FULL),
        ("kv", RestartClass.FRONTEND),
    ]
    ((rr_did, rr_procs),) = _applies(res.run_dir, "t0")
    ((kv_did, kv_procs),) = _applies(res.run_dir, "t1")
    assert (rr_did, kv_did) == ("created", "frontend only")
    # kv_cache: reset (the default) empties the kept worker's cache before kv: a mocker's simulated cache is
    # emptied by restarting the mocker (infersweep.local.dynamo.reconfigure.reset_kv_caches); nothing else redeploys.
    kv_log = next(res.run_dir.glob("nodes/*.t1-deploy_*/main.log")).read_text()
    assert "KV caches reset (mocker workers restarted: VllmWorker)" in kv_log
    assert kv_procs["Frontend"] != rr_procs["Frontend"]  # two frontends
    report = res.report
    assert report["missing"] == []
    assert report["claim"]["verdict"] in ("supported", "refuted", "inconclusive")
    assert "not measured" not in report["claim"]["line"]  # judged on measured points (at the local sweep's top)
    assert set(report["time_to_ready"]) == {"rr", "kv"} and all(
        v["seconds"] > 0 for v in report["time_to_ready"].values()
    )
    assert "## Claim" in res.report_text and "## Time to ready" in res.report_text
    # the treatments are runs of their recipes in runs/store, read through pointers: uploaded once, under
    # experiments/ (infersweep/results/index.py), never a second copy under the recipe's folder
    from infersweep.results.store import RunStore

    store = RunStore(res.run_dir.parent / "store")
    listed = store.runs()
    assert sorted(r.rsplit("-", 1)[1] for r in listed["run_id"]) == ["kv", "rr"], listed  # <workflow>-<treatment>
    for recipe, run_id in zip(listed["recipe"], listed["run_id"], strict=True):
        assert store.pointer(recipe, run_id) is not None
        assert not list((store.backend.root / recipe / run_id).glob("summary"))
        assert store.load(run_id).context["treatment"] == run_id.rsplit("-", 1)[1]


def _treatment_context(run_dir: Path, treatment: str) -> dict:
    from infersweep.local.experiment_run import TREATMENTS

    return json.loads((run_dir / TREATMENTS / treatment / "summary" / "run.json").read_text())["context"]


def _cache_commit(run_dir: Path) -> str:
    """The commit the (last) workflow's model-cache task output, as the local executor recorded it."""
    nodes = json.loads((run_dir / "status.json").read_text())["nodes"].values()
    (commit,) = {
        p["value"]
        for n in nodes
        if n["displayName"].startswith("model-cache-") and n["type"] == "Pod"
        for p in n["outputs"]["parameters"]
        if p["name"] == "commit"
    }
    return commit


FAILING = """
name: tiny-rr-vs-kv
base: nemotron-3-nano-fp8-vllm-agg-kv
set:
  workload: {isl: 128, osl: 16}
factors:
  router:
    rr: {router: round-robin}
    kv: {router: kv}
question:
  metrics: [ttft_avg_ms, request_throughput_req_s]
  concurrency: [1]
baseline: rr
claim: {metric: ttft_avg_ms, concurrency: 1, treatment: kv, baseline: rr}
"""


@pytest.mark.e2e
@pytest.mark.timeout(1500)  # minutes of real AIPerf points on a 2-core machine shared by others
def test_a_failed_treatment_does_not_stop_the_next_and_resume_runs_only_it(tmp_path):
    _dynamo_or_skip()
    from infersweep.local.dynamo import procs
    from infersweep.local.experiment_run import TREATMENTS, run_experiment_local

    spec = tmp_path / "tiny-rr-vs-kv.yaml"
    spec.write_text(FAILING)
    killed = []

    def kill_worker_after_first_deploy(kind, node):
        # A real fault that does not heal: rr's worker process dies once it served, and the DGD its deploy
        # saved is unreadable, so the points' ensure-deployed init container (which would otherwise bring
        # the deployment back, as after a UI Retry) fails too.
        if kind == "end" and re.search(r"\.t0-wait-ready(\(\d+\))?$", node.name) and not killed:
            run_dir = Path(node.log).parents[2]
            state = next(run_dir.glob("state/dgd/*"))
            worker = next(r for r in procs.alive(state) if r["name"] == "VllmWorker")
            procs._signal_group(worker, 9)
            (run_dir / "volumes" / "workdir" / "run" / "deploy" / "dgd.yaml").write_text("{not: [a dgd\n")
            killed.append(worker["pid"])

    first = run_experiment_local(
        spec, out_root=tmp_path / "runs", cache_root=tmp_path / "cache", on_event=kill_worker_after_first_deploy
    )
    assert killed
    assert first.report["missing"] == ["rr"]  # rr failed, kv still ran and was measured
    kv_table = first.run_dir / TREATMENTS / "kv" / "summary" / "results.parquet"
    kv_digest = hashlib.sha256(kv_table.read_bytes()).hexdigest()
    assert first.report["claim"]["verdict"] == "inconclusive"
    # kv ran after rr's archive moved /work/run (and the commit file model-cache wrote there) away: its
    # results still carry the commit the model cache resolved.
    assert _treatment_context(first.run_dir, "kv")["model_commit"] == _cache_commit(first.run_dir)

    again = run_experiment_local(None, resume=first.run_dir, cache_root=tmp_path / "cache")
    assert again.kept == ["kv"]
    assert [s.treatment.name for s in again.plan.steps] == ["rr"]  # only the unfinished treatment ran
    assert again.phase == "Succeeded", why_failed(again)
    assert again.report["missing"] == []
    assert hashlib.sha256(kv_table.read_bytes()).hexdigest() == kv_digest  # kv's results kept as they were
    assert (first.run_dir / TREATMENTS / "rr.attempts" / "1").is_dir()  # the failed attempt kept, not overwritten
    assert "not measured" not in again.report["claim"]["line"]
    assert _treatment_context(first.run_dir, "rr")["model_commit"] == _cache_commit(first.run_dir)


def test_experiment_run_says_what_it_scaled_down_before_running():
    """Issue 38 item 1: `experiment run --local` printed no scale-down: a claim about c128 judged on c1-c4 said
    nothing of it before the verdict."""
    from infersweep.local.experiment_run import experiment_scale_note
    from infersweep.local.profile import load_local_profile

    lines = experiment_scale_note(make_plan(load_experiment("nemotron-rr-vs-kv")), load_local_profile())
    text = "\n".join(lines)
    assert [ln.split(":")[0] for ln in lines if ln.startswith("treatment ")] == ["treatment rr", "treatment kv"]
    assert "a scaled-down copy of" in text
    concurrency = next(ln for ln in lines if ln.strip().startswith("concurrency"))
    assert "128]" in concurrency.split("->")[0] and "128" not in concurrency.split("->")[1]
