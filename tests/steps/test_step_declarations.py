"""A step is declared once (infersweep/step_declarations.py): its WorkflowTemplate and its parser follow.

What a new step touches: steps/<module>.py (its `main()` parses with `<STEP>.parser()`), its declaration
in infersweep/step_declarations.py (added to DECLARED), the task that composes it in workflows/pipeline.py
(`step_task`), and its test. The step image copies all of steps/ and workflows/ (images/steps.Dockerfile);
the local executor runs whatever container the rendered template names; params/cluster.yaml may set the
step's resources and deadline, and the declaration's defaults apply when it does not.

The property here: every container the install set renders that runs `python -m steps.<module>` (step
templates, the points' init container, the reaper CronWorkflow) has args that the step's *own* parser
(the one its `main()` builds) accepts, with every required option given and every input parameter landing
on the option declared for it. The stub test shows a new step declared in a test renders a template Argo's
schema accepts and a parser that accepts the rendered args.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.commands.install import install_set
from infersweep.step_declarations import DECLARED, WORKDIR
from infersweep.step_interface import Option, Step, json_object
from tests.support.paths import REPO

BY_MODULE = {s.module: s for s in DECLARED}
INPUT_REF = re.compile(r"\{\{inputs\.parameters\.([\w-]+)\}\}")
WORKFLOW_VARS = {"{{workflow.name}}": "wf-abc12", "{{workflow.namespace}}": "bench", "{{workflow.uid}}": "uid-1"}
# What a UI user types into a launcher's parameter (workflows/launcher.py): a value that starts with a dash
# must still reach its option as a value.
UI_PARAMETER = re.compile(r"\{\{workflow\.parameters\.[a-z0-9-]+\}\}")
UI_TYPED = "-typed in the UI"


class _Parsed(Exception):
    pass


def own_parser(module: str, argv: list[str], monkeypatch) -> argparse.ArgumentParser:
    """The parser steps.<module>.main() builds: main runs until it parses, and is stopped there."""
    seen: list[argparse.ArgumentParser] = []

    def capture(self, args=None, namespace=None):
        seen.append(self)
        raise _Parsed

    mod = importlib.import_module(f"steps.{module}")
    with monkeypatch.context() as mp:
        mp.setattr(argparse.ArgumentParser, "parse_args", capture)
        with pytest.raises(_Parsed):
            mod.main(argv)
    return seen[0]


def declared_flags(step: Step) -> set[str]:
    return {o.flag for o in step.options}


def parser_flags(parser: argparse.ArgumentParser) -> set[str]:
    return {
        (a.option_strings[-1] if a.option_strings else a.dest)
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction)
    }


def placeholder(option: Option | None) -> str:
    """A value of the option's declared type, for an input parameter that feeds it."""
    if option is None:
        return "x"
    if option.choices:
        return option.choices[-1]
    if option.type is int:
        return "7"
    if option.type is float:
        return "0.5"  # valid for every float option (a fraction, a rate, seconds)
    if option.type is json_object:
        return '{"isl": 64, "osl": 8}'
    return f"value-of-{option.input_name}"


def typed(option: Option, text: str):
    return json.loads(text) if option.type is json_object else (option.type or str)(text)


def step_containers() -> list[tuple[str, str, dict, Step]]:
    """(where, module, container, the Step whose template holds it) for every steps.* container rendered."""
    argo, _ = install_set(load_cluster_settings())
    found = []
    for doc in argo:
        spec = doc["spec"].get("workflowSpec", doc["spec"])
        for t in spec.get("templates", []):
            owner = next((s for s in DECLARED if s.name == t["name"]), None)
            for c in [t.get("container")] + list(t.get("initContainers") or []):
                if c and c.get("command", [])[:2] == ["python", "-m"] and c["command"][2].startswith("steps."):
                    found.append(
                        (
                            f"{doc['metadata']['name']}:{t['name']}:{c.get('name', 'main')}",
                            c["command"][2].split(".", 1)[1],
                            c,
                            owner,
                        )
                    )
    return found


CONTAINERS = step_containers()


def test_the_walk_reaches_every_rendered_step():
    modules = {m for _, m, _, _ in CONTAINERS}
    assert {s.module for s in DECLARED if s.template} | {"reap"} <= modules, modules
    assert any("ensure-deployed" in w for w, *_ in CONTAINERS), "the points' init container"


@pytest.mark.parametrize("where,module,container,owner", CONTAINERS, ids=[w for w, *_ in CONTAINERS])
def test_rendered_args_parse_with_the_steps_own_parser(where, module, container, owner, monkeypatch):
    step = BY_MODULE[module]
    # an input's placeholder has the type of the option this container passes it to (the init container
    # passes aiperf-point's ready-timeout-s to deploy's --timeout-s), else of the one its template feeds
    feeds = {o.input_name: o for o in (owner or step).options if o.input_name}
    by_flag = {o.flag: o for o in step.options}
    raw = container.get("args", [])
    for flag, value in zip(raw, raw[1:], strict=False):
        if flag in by_flag and (whole := INPUT_REF.fullmatch(value)):
            feeds[whole.group(1)] = by_flag[flag]
    args = []
    for arg in container.get("args", []):
        for var, value in WORKFLOW_VARS.items():
            arg = arg.replace(var, value)
        arg = UI_PARAMETER.sub(UI_TYPED, arg)
        args.append(INPUT_REF.sub(lambda mt: placeholder(feeds.get(mt.group(1))), arg))
    assert not any("{{" in a for a in args), f"{where}: an expression the test does not know: {args}"

    parser = own_parser(module, args, monkeypatch)
    assert parser_flags(parser) == declared_flags(step), f"steps/{module}.py parses options its declaration lacks"
    try:
        ns = parser.parse_args(args)
    except SystemExit:
        pytest.fail(f"{where}: steps.{module} refuses its rendered args {args}")
    if module == "aiperf_point":  # its own checks after parsing (lengths or a trace, bounds)
        importlib.import_module("steps.aiperf_point").parse_args(args)
    if owner is step:  # the template's inputs land on the options declared for them
        for o in step.options:
            if o.input_name:
                assert getattr(ns, o.dest) == typed(o, placeholder(o)), (where, o.flag)


@pytest.mark.parametrize("step", DECLARED, ids=[s.name for s in DECLARED])
def test_each_step_parses_with_its_declaration_and_nothing_else(step, monkeypatch):
    parser = own_parser(step.module, [], monkeypatch)
    assert parser_flags(parser) == declared_flags(step)
    required = {a.option_strings[-1] if a.option_strings else a.dest for a in parser._actions if a.required}
    declared_required = {o.flag for o in step.options if o.required or o.positional}
    assert required == declared_required
    if step.template:  # the template gives every option the parser requires
        rendered = step.template_args()
        for flag in declared_required - {o.flag for o in step.options if o.positional}:
            assert flag in rendered, f"{step.name}: the template leaves out the required {flag}"


def test_every_template_input_is_used():
    # an input neither the args nor the pod use is a parameter someone fills for nothing
    for s in DECLARED:
        if not s.template:
            continue
        used = {n for a in s.template_args() for n in INPUT_REF.findall(a)} | {n for n, _ in s.extra_inputs}
        # mark-start and record-ready take nothing: they stamp the run folder the workdir volume holds
        assert ([n for n, _ in s.template_inputs()] or s.name in ("mark-start", "record-ready")) and used == {
            n for n, _ in s.template_inputs()
        }, s.name


STUB = Step(
    "stub-step",
    "stub_step",
    "A step declared only in this test.",
    (
        Option("--model", "model to look at", required=True, input=True, note="(a Hugging Face id)"),
        Option("--tries", "how many times", type=int, default=1, input=True),
        Option("--namespace", "namespace", required=True, value="{{workflow.namespace}}"),
        Option("--out", "where to write", required=True, value=f"{WORKDIR}/run/stub.json"),
        Option("--answer-param", "the answer (Argo output parameter)", output="answer"),
        Option("--dry-run", "change nothing", switch=True, value=True),
        Option("--verbose", "say more", switch=True),
    ),
    read_only_root=True,
)


def test_a_stub_step_declared_here_renders_a_valid_template_and_parses_its_args(monkeypatch):
    from hera.workflows import DAG, WorkflowTemplate

    from infersweep.schemas import validate_document
    from workflows import steps_library
    from workflows.steps_library import Images, step_container, step_task

    settings = load_cluster_settings()
    with WorkflowTemplate(
        name="infersweep-stub-step", entrypoint="stub-step", service_account_name=settings.service_account
    ) as wt:
        step_container(STUB, Images(steps="steps:1", aiperf="aiperf:1"), settings=settings.steps)
    doc = wt.to_dict()
    validate_document(doc)  # Argo's schema, unknown fields forbidden
    t = doc["spec"]["templates"][0]
    assert [p["name"] for p in t["inputs"]["parameters"]] == ["model", "tries"]
    # the help is the input's description in the Argo UI; the note is for --help only
    assert t["inputs"]["parameters"][0]["description"] == "model to look at"
    assert "model to look at (a Hugging Face id)" in " ".join(STUB.parser().format_help().split())
    assert t["outputs"]["parameters"] == [{"name": "answer", "valueFrom": {"path": "/tmp/outputs/answer"}}]
    assert t["container"]["command"] == ["python", "-m", "steps.stub_step"]
    assert t["activeDeadlineSeconds"] == STUB.deadline_s  # no entry in params/cluster.yaml: the declaration's
    args = [
        INPUT_REF.sub(lambda mt: {"model": "m", "tries": "3"}[mt.group(1)], a).replace("{{workflow.namespace}}", "ns")
        for a in t["container"]["args"]
    ]
    ns = STUB.parser().parse_args(args)
    assert (ns.model, ns.tries, ns.namespace, ns.dry_run, ns.verbose) == ("m", 3, "ns", True, False)
    assert ns.answer_param == "/tmp/outputs/answer" and ns.out == "/work/run/stub.json"

    # composing it: a task's arguments must be exactly the step's inputs
    monkeypatch.setitem(steps_library.STEP_BY_NAME, STUB.name, STUB)
    with WorkflowTemplate(name="p", entrypoint="d"), DAG(name="d"):
        task = step_task("stub-step", name="s", arguments={"model": "x", "tries": "2"})
    assert task.template_ref.name == "infersweep-stub-step"
    with pytest.raises(ValueError, match=r"unknown: \['tries-count'\]; missing: \['tries'\]"):
        step_task("stub-step", name="s", arguments={"model": "x", "tries-count": "2"})
    with pytest.raises(ValueError, match="no step 'stub'"):
        step_task("stub", name="s", arguments={})


def test_declaration_mistakes_fail_when_declared_or_rendered():
    with pytest.raises(ValueError, match="at most one of input, value, output"):
        Option("--x", input=True, value="v")
    with pytest.raises(ValueError, match="declared twice"):
        Step("s", "s", "", (Option("--x"), Option("--x")))
    with pytest.raises(ValueError, match="--model is required"):
        STUB.argv({"namespace": "n", "out": "o"})
    with pytest.raises(ValueError, match="no option"):
        STUB.argv({"model": "m", "namespace": "n", "out": "o", "colour": "red"})
    group = Step("g", "g", "", (Option("--a", one_of="src"), Option("--b", one_of="src")))
    with pytest.raises(ValueError, match="exactly one of the src options"):
        group.argv({"a": "1", "b": "2"})
    with pytest.raises(ValueError, match="no option"):
        STUB.parser(colour=str)


def test_a_bad_value_is_one_usage_error_naming_the_option(capsys):
    with pytest.raises(SystemExit) as e:
        STUB.parser().parse_args(["--model", "m", "--namespace", "n", "--out", "o", "--tries", "three"])
    assert e.value.code == 2 and "argument --tries: invalid int value: 'three'" in capsys.readouterr().err
    with pytest.raises(argparse.ArgumentTypeError, match="must be a JSON object"):
        json_object("[1]")


def _image_copies(dockerfile: Path) -> list[tuple[list[str], str]]:
    copies = []
    for line in dockerfile.read_text().splitlines():
        parts = line.split()
        if parts[:1] == ["COPY"] and not any(p.startswith("images/") for p in parts[1:-1]):
            copies.append((parts[1:-1], parts[-1]))
    return copies


def test_the_aiperf_image_holds_what_its_steps_import(tmp_path):
    """images/aiperf.Dockerfile copies a few files beside AIPerf (whose own environment pins other
    libraries): with only those files and the standard library (python -S: no site-packages), both AIPerf
    steps import and build their parsers."""
    root = tmp_path / "opt"
    for sources, dest in _image_copies(REPO / "images" / "aiperf.Dockerfile"):
        target = root / dest.lstrip("/").removeprefix("opt/infersweep/")
        target.mkdir(parents=True, exist_ok=True)
        for src in sources:
            shutil.copy(REPO / src, target)
    for module in ("steps.aiperf_point", "steps.aiperf_results"):
        p = subprocess.run(
            [sys.executable, "-S", "-m", module, "--help"],
            cwd=root,
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
            timeout=60,
        )
        assert p.returncode == 0 and p.stdout.startswith("usage:"), (module, p.stderr[-800:])
