"""The experiment's WorkflowTemplate: strict-valid against the Argo schemas, every container a step template by
reference, the GPU guard on the treatments only, one deploy per treatment with teardowns only at full
redeploys, a failed treatment not stopping the next; and its workdir steps (time-to-ready, archive) and
comparison step on real results tables."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from infersweep.cluster_settings import load_cluster_settings
from infersweep.experiment.plan import make_plan
from infersweep.experiment.spec import all_experiment_paths, load_experiment
from infersweep.schemas import validate_document


def render(name: str) -> dict:
    from workflows.experiment import experiment_template

    return experiment_template(make_plan(load_experiment(name)), load_cluster_settings()).to_dict()


def tasks(doc: dict, template: str = "treatments") -> dict[str, dict]:
    t = next(t for t in doc["spec"]["templates"] if t["name"] == template)
    return {x["name"]: x for x in t["dag"]["tasks"]}


@pytest.mark.parametrize("path", all_experiment_paths(), ids=lambda p: p.stem)
def test_every_study_renders_strict_valid_with_step_templates_by_reference(path):
    from workflows.steps_library import STEP_BY_NAME, step_template_name

    doc = render(path.stem)
    validate_document(doc)  # Argo v4.1.2 and v3.7.18, unknown fields forbidden
    installed = {step_template_name(s) for s in STEP_BY_NAME.values()}
    own = {t["name"] for t in doc["spec"]["templates"]}
    for tmpl in doc["spec"]["templates"]:
        assert "container" not in tmpl and "script" not in tmpl, tmpl["name"]  # every container is a declared step
        for task in tmpl.get("dag", {}).get("tasks", []):
            if "templateRef" in task:
                assert task["templateRef"]["name"] in installed, task["name"]
            else:
                assert task["template"] in own, task["name"]
    # The GPU guard is held by the treatments only: not through the model downloads, not through the report.
    assert "synchronization" not in doc["spec"]
    held = {t["name"] for t in doc["spec"]["templates"] if t.get("synchronization")}
    assert held == {"treatments"}
    assert not any(n.startswith("model-cache") or n in ("compare", "publish-report") for n in tasks(doc))
    outer = tasks(doc, "experiment")
    assert {n for n in outer if n.startswith("model-cache")} <= set(outer["treatments"]["depends"].split(" && "))


def test_nemotron_deploys_workers_once_and_swaps_the_frontend():
    doc = render("nemotron-rr-vs-kv")
    ts = tasks(doc)
    assert [n for n in ts if n.endswith("-teardown")] == []  # no redeploy between rr and kv
    d0, d1 = (yaml.safe_load(ts[f"t{i}-deploy"]["arguments"]["parameters"][0]["value"]) for i in (0, 1))
    assert d0["metadata"]["name"] == d1["metadata"]["name"]  # the same DGD, patched
    fe = [[c for c in d["spec"]["components"] if c["type"] == "frontend"][0] for d in (d0, d1)]
    assert fe[0]["podTemplate"]["spec"]["containers"][0]["args"] == ["--router-mode", "round-robin"]
    assert fe[1]["podTemplate"]["spec"]["containers"][0]["args"] == ["--router-mode", "kv"]
    # The workers' spec is the same but for the KV-cache reset token of the second treatment (kv_cache:
    # reset, the default): the operator restarts them, which on a cluster is what empties their caches.
    from infersweep.experiment.kv_reset import reset_token, without_reset

    assert reset_token(d0) is None and reset_token(d1) == "1"
    workers = [[c for c in without_reset(d)["spec"]["components"] if c["type"] != "frontend"] for d in (d0, d1)]
    assert workers[0] == workers[1]  # nothing else in the worker pods changes


def test_mooncake_tears_down_once_and_a_failed_treatment_does_not_stop_the_next():
    doc = render("qwen3-32b-mooncake")
    ts = tasks(doc)
    assert [n for n in ts if n.endswith("-teardown")] == ["t1-teardown"]  # agg -> disagg only
    # t1 starts after t0's archive whatever its outcome (a failed deploy omits its sweep, still archives)
    assert "t0-archive.Failed" in ts["t1-teardown"]["depends"] and "t0-archive.Omitted" in ts["t1-teardown"]["depends"]
    assert "t1-archive.Omitted" in ts["t2-mark-start"]["depends"] and "t2-mark-start" in ts["t2-deploy"]["depends"]
    assert "t0-publish.Omitted" in ts["t0-archive"]["depends"]
    assert "treatments.Failed" in tasks(doc, "experiment")["compare"]["depends"]
    assert ts["t0-mark-start"].get("depends") is None and "t4-archive" in ts
    sweep = next(t for t in doc["spec"]["templates"] if t["name"] == "sweep")
    assert sweep["dag"]["failFast"] is False and sweep["parallelism"] == 1
    exit_tasks = tasks(doc, "exit-handler")
    assert sorted(t["arguments"]["parameters"][0]["value"] for t in exit_tasks.values()) == [
        "qwen3-32b-mooncake-0",
        "qwen3-32b-mooncake-1",
    ]


def test_workdir_steps_record_ready_and_keep_earlier_attempts(tmp_path):
    from infersweep.experiment.workdir import MARK, record_ready
    from steps import archive, mark_start
    from steps import record_ready as record_ready_step

    def main(argv):
        action, rest = argv[0], argv[1:]
        if action == "archive":  # --to DIR/NAME is the step's --treatments-dir DIR --treatment NAME
            to = rest.pop(rest.index("--to") + 1)
            rest.remove("--to")
            rest += ["--treatments-dir", to.rsplit("/", 1)[0], "--treatment", to.rsplit("/", 1)[1]]
        return {"mark-start": mark_start, "record-ready": record_ready_step, "archive": archive}[action].main(rest)

    run = tmp_path / "run"
    assert main(["mark-start", "--out", str(run)]) == 0
    assert main(["record-ready", "--out", str(run)]) == 0
    assert 0 <= json.loads((run / "time-to-ready.json").read_text())["seconds"] < 60
    (run / MARK).write_text("2026-11-30T10:00:00+00:00")
    assert record_ready(run, finished="2026-11-30T10:04:05+00:00") == 245
    (run / "points").mkdir()
    (run / "points" / "good").write_text("1")
    assert main(["archive", "--run-dir", str(run), "--to", str(tmp_path / "treatments" / "kv")]) == 0
    assert not run.exists() and (tmp_path / "treatments" / "kv" / "points" / "good").is_file()
    run.mkdir()
    (run / "retry").write_text("2")
    main(["archive", "--run-dir", str(run), "--to", str(tmp_path / "treatments" / "kv")])
    assert (tmp_path / "treatments" / "kv" / "retry").is_file()
    assert (tmp_path / "treatments" / "kv.attempts" / "1" / "points" / "good").is_file()  # never overwritten


def test_compare_step_writes_the_report_from_treatment_folders(tmp_path):
    from infersweep.results.columns import SCHEMA_VERSION
    from steps.compare import main
    from tests.experiment.test_experiment_report import table

    cs = [1, 4, 16, 32, 64, 128]
    for name, v in (("rr", 1000.0), ("kv", 550.0)):
        folder = tmp_path / "treatments" / name
        (folder / "summary").mkdir(parents=True)
        # as the summarize step writes it: with the table's schema version (infersweep.results.legacy reads by it)
        table({c: [v, v * 1.01, v * 0.99] for c in cs}).assign(
            schema_version=SCHEMA_VERSION, run_id=f"r-{name}", recipe=name
        ).to_parquet(folder / "summary" / "results.parquet")
        (folder / "time-to-ready.json").write_text(json.dumps({"seconds": 240.0 if name == "rr" else 21.0}))
    spec = load_experiment("nemotron-rr-vs-kv").path.read_text()
    assert (
        main(["--experiment", spec, "--treatments-dir", str(tmp_path / "treatments"), "--out", str(tmp_path / "out")])
        == 0
    )
    text = (tmp_path / "out" / "experiment-report.md").read_text()
    assert "supported: kv beats rr on ttft_avg_ms at c128" in text
    assert "- kv: 21 s" in text
    data = json.loads((tmp_path / "out" / "experiment-report.json").read_text())
    assert data["claim"]["verdict"] == "supported" and data["missing"] == []


def test_cli_render_writes_a_valid_workflow(tmp_path, capsys):
    from infersweep.cli import main

    assert main(["experiment", "render", "qwen36-hicache-policy", "--out", str(tmp_path)]) == 0
    doc = yaml.safe_load((tmp_path / "experiment-qwen36-hicache-policy.yaml").read_text())
    template = yaml.safe_load((tmp_path / "experiment-qwen36-hicache-policy.template.yaml").read_text())
    validate_document(doc)
    validate_document(template)
    assert doc["spec"] == {"workflowTemplateRef": {"name": template["metadata"]["name"]}}
    assert "worker restart" in capsys.readouterr().out


@pytest.mark.parametrize("path", all_experiment_paths(), ids=lambda p: p.stem)
def test_every_summarize_step_gets_a_context_the_summarize_step_accepts(path):
    # The summarize step refuses unknown --context keys (infersweep.results.context); an experiment-only
    # key there failed every treatment's summary in a local run.
    from infersweep.results.context import parse_context_arg as parse_context

    summaries = [t for n, t in tasks(render(path.stem)).items() if n.endswith("-summarize")]
    assert summaries
    for t in summaries:
        ctx = next(p["value"] for p in t["arguments"]["parameters"] if p["name"] == "context")
        assert parse_context(ctx)["recipe"].startswith(path.stem)


@pytest.mark.parametrize("path", all_experiment_paths(), ids=lambda p: p.stem)
def test_every_treatment_is_summarized_with_the_commit_its_model_cache_resolved(path):
    # Through a declared input (the context): the commit file model-cache writes into /work/run leaves with
    # the first treatment's archive, and Argo drops an argument the template does not declare
    # (workflow/common/util.go ProcessArgs). Argo resolves {{tasks.X.outputs...}} only for X an ancestor
    # of the task (workflow/validate/validate.go validateDAG: the scope holds the task's ancestry).
    from infersweep.results.context import parse_context_arg
    from infersweep.step_declarations import MODEL_CACHE_STEP

    assert "commit" in {o.output for o in MODEL_CACHE_STEP.options}
    doc = render(path.stem)
    ts, outer = tasks(doc), tasks(doc, "experiment")

    for name in [n for n in ts if n.endswith("-summarize")]:
        ctx = parse_context_arg(next(p["value"] for p in ts[name]["arguments"]["parameters"] if p["name"] == "context"))
        # the treatments template takes each cache's commit as an input, from the cache task before it
        given = re.fullmatch(r"\{\{inputs\.parameters\.(commit-\d+)\}\}", ctx["model_commit"])
        assert given, (name, ctx["model_commit"])
        passed = {p["name"]: p["value"] for p in outer["treatments"]["arguments"]["parameters"]}[given.group(1)]
        cache = re.fullmatch(r"\{\{tasks\.(model-cache-\d+)\.outputs\.parameters\.commit\}\}", passed)
        assert cache, passed
        cache_args = {p["name"]: p["value"] for p in outer[cache.group(1)]["arguments"]["parameters"]}
        assert (cache_args["model"], cache_args["revision"]) == (ctx["model"], ctx["model_revision"])
        assert cache.group(1) in outer["treatments"]["depends"].split(" && ")


@pytest.mark.parametrize("path", all_experiment_paths(), ids=lambda p: p.stem)
def test_every_treatment_of_a_study_renders_the_same_rollout_choice(path):
    """The rollout annotations (infersweep/dgd/render.rollout_annotations) sit in the pod template the operator's worker
    hash covers: if two treatments differed in them, a scale-in-place between them would roll every worker."""
    from infersweep.dgd.render import ROLLING_MAX_SURGE, ROLLING_MAX_UNAVAILABLE

    keys = (ROLLING_MAX_SURGE, ROLLING_MAX_UNAVAILABLE)
    seen = set()
    for name, task in tasks(render(path.stem)).items():
        if not name.endswith("-deploy"):
            continue
        dgd = yaml.safe_load(next(p["value"] for p in task["arguments"]["parameters"] if p["name"] == "dgd"))
        for comp in dgd["spec"]["components"]:
            if comp["type"] == "frontend" or comp.get("multinode"):
                continue
            ann = (comp["podTemplate"].get("metadata") or {}).get("annotations") or {}
            seen.add(tuple(ann.get(k) for k in keys))
    assert len(seen) <= 1, seen
