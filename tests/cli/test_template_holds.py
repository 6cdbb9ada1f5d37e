"""install / experiment submit never change a WorkflowTemplate a live run reads (infersweep/template_holds.py).

Argo v4.1.2 (16a52d6) workflow/controller/operator.go setStoredWfSpec (:4628-4643): under
`templateReferencing: Secure` a reconcile that finds the referenced WorkflowTemplate changed errors the run
("WorkflowSpec may not change during execution"), before its DAG and exit handler (:235-238)."""

from __future__ import annotations

from infersweep.cli import main
from infersweep.install_version import HASH_LABEL
from infersweep.template_holds import held_templates, split_updates
from tests.support.argo_server_standin import NS, RECIPE, argo  # noqa: F401 (the fixture)


def _older_checkout(srv, name: str) -> None:
    """The installed template as an older checkout left it (another content hash)."""
    srv.store[("workflow-templates", NS, name)]["metadata"]["labels"][HASH_LABEL] = "0123456789abcdef"


def test_install_defers_the_templates_a_running_run_reads_and_says_so(argo, capsys):  # noqa: F811 (the fixture)
    assert main(["install"]) == 0
    assert main(["submit", RECIPE]) == 0
    capsys.readouterr()
    (wf,) = argo.objects("workflows")
    wf["status"] = {"phase": "Running"}
    _older_checkout(argo, "infersweep-vllm-agg")  # the run's pipeline
    _older_checkout(argo, "infersweep-deploy")  # a step template the pipeline reaches by templateRef
    _older_checkout(argo, "infersweep-experiment-verdict")  # no run reads it
    before = len(argo.requests)

    assert main(["install"]) == 1
    cap = capsys.readouterr()
    puts = {p.rsplit("/", 1)[1] for m, p in argo.requests[before:] if m == "PUT"}
    assert "infersweep-vllm-agg" not in puts and "infersweep-deploy" not in puts
    assert "infersweep-sglang-agg" not in puts  # no run reads it, but it calls the held deploy step
    assert "infersweep-experiment-verdict" in puts  # not held: updated
    assert "infersweep-wait-ready" in puts  # held but unchanged: an identical update is harmless
    assert f"deferred WorkflowTemplate/infersweep-vllm-agg: live Workflow(s) {wf['metadata']['name']}" in cap.out
    assert "install` again once those runs end" in cap.err

    # the run ends (the controller's completed label): the next install updates everything
    wf["metadata"]["labels"]["workflows.argoproj.io/completed"] = "true"
    wf["status"]["phase"] = "Succeeded"
    assert main(["install"]) == 0
    assert "deferred" not in capsys.readouterr().out


def test_experiment_submit_refuses_to_change_the_template_of_its_running_run(argo, capsys):  # noqa: F811 (the fixture)
    assert main(["install"]) == 0
    assert main(["experiment", "submit", "nemotron-rr-vs-kv"]) == 0
    (wf,) = argo.objects("workflows")
    name = wf["spec"]["workflowTemplateRef"]["name"]
    # submit stamps the template as install does: a second submit of the same checkout is not a change
    assert main(["experiment", "submit", "nemotron-rr-vs-kv"]) == 0
    capsys.readouterr()
    _older_checkout(argo, name)
    before = len(argo.requests)
    assert main(["experiment", "submit", "nemotron-rr-vs-kv"]) == 2
    err = capsys.readouterr().err
    assert f"WorkflowTemplate/{name}: live Workflow(s)" in err and "wait for them to end" in err
    assert [m for m, _ in argo.requests[before:] if m in ("PUT", "POST")] == []


def _wt(name, refs=(), h="h"):
    tasks = [{"name": r, "templateRef": {"name": r, "template": "main"}} for r in refs]
    return {
        "kind": "WorkflowTemplate",
        "metadata": {"name": name, "labels": {HASH_LABEL: h}},
        "spec": {"templates": [{"name": "main", "dag": {"tasks": tasks}}]},
    }


def test_holds_follow_template_refs_transitively_and_skip_finished_runs():
    installed = [_wt("pipe", ["step-a"]), _wt("step-a", ["step-b"]), _wt("step-b"), _wt("other")]
    live = {"metadata": {"name": "run-1"}, "spec": {"workflowTemplateRef": {"name": "pipe"}}}
    done = {
        "metadata": {"name": "run-0", "labels": {"workflows.argoproj.io/completed": "true"}},
        "spec": {"workflowTemplateRef": {"name": "other"}},
    }
    assert held_templates([live, done], installed) == {"pipe": ["run-1"], "step-a": ["run-1"], "step-b": ["run-1"]}
    # step-b changed: it is deferred, and so is everything that reaches it (a new caller on an old callee)
    new_b = _wt("step-b", h="new")
    cron = {
        "kind": "CronWorkflow",
        "metadata": {"name": "c"},
        "spec": {"workflowSpec": {"workflowTemplateRef": {"name": "step-b"}}},
    }
    from infersweep.install_version import stamp

    docs = [stamp(_wt("pipe", ["step-a"])), stamp(_wt("step-a", ["step-b"])), stamp(new_b), cron, stamp(_wt("other"))]
    now, later = split_updates(docs, installed, [live, done])
    assert [d["metadata"]["name"] for d in now] == ["other"]
    assert sorted(d["metadata"]["name"] for d, _ in later) == ["c", "pipe", "step-a", "step-b"]
