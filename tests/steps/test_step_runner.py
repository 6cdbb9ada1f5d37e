"""Every step leaves through the one runner (steps/runner.py), which alone maps what a step raised to the exit
code its WorkflowTemplate acts on: 75 is retried (`asInt(lastRetry.exitCode) == 75`, workflows/steps_library.py;
Argo v4.1.2 operator.go processNodeRetries), anything else fails at once."""

from __future__ import annotations

import ast

import pytest

from infersweep.platform.protocol import BadInput, DGDOwnedElsewhere, PlatformError
from infersweep.results.publish import PublishConflict, PublishError
from infersweep.step_declarations import DECLARED, PUBLISH
from steps.runner import exit_code, run
from steps.transient import TRANSIENT_EXIT
from tests.support.paths import REPO

STEPS_DIR = REPO / "steps"


def _unreachable() -> Exception:
    try:
        raise ConnectionRefusedError("connection refused")
    except ConnectionRefusedError as e:
        return e


@pytest.mark.parametrize(
    "exc,code",
    [
        (PublishError("s3 down", causes=[ConnectionRefusedError(), TimeoutError()]), TRANSIENT_EXIT),  # S3 unreachable
        (PublishError("denied", causes=[ConnectionRefusedError(), PermissionError("AccessDenied")]), 1),  # not all
        (PublishError("no causes"), 1),
        (PublishConflict("other bytes"), 2),
        (BadInput("--dgd: not YAML"), 2),
        (DGDOwnedElsewhere("owned by wf-x"), 1),
        (ConnectionResetError("reset"), TRANSIENT_EXIT),
        (KeyError("bug"), 1),
    ],
)
def test_the_runner_maps_errors_to_exit_codes(exc, code):
    assert exit_code(exc) == code


def test_a_refusal_stays_a_refusal_when_an_api_error_caused_it():
    # deploy refusing a DGD owned by another Workflow must not be retried because the GET before it hiccuped
    try:
        raise PlatformError("DGD x belongs to another Workflow") from _unreachable()
    except PlatformError as e:
        assert exit_code(e) == 1


def test_publish_with_s3_unreachable_exits_75_through_the_runner(capsys):
    def main():
        raise PublishError(
            "publishing s3://b/p failed: local copy at /work/run is intact",
            causes=[ConnectionRefusedError("connect")] * 3,
        )

    assert run(main, PUBLISH) == TRANSIENT_EXIT
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == "publish (transient: Argo retries it): publishing s3://b/p failed: local copy at /work/run is intact"


def test_a_bug_names_its_type_and_fails_without_retry(capsys):
    assert run(lambda: {}["missing"], "summarize") == 1
    assert capsys.readouterr().err.strip() == "summarize (not transient): KeyError: 'missing'"


def _main_block(tree: ast.Module) -> str:
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return ast.unparse(node)
    return ""


def test_every_step_module_leaves_through_the_runner():
    modules = {s.module for s in DECLARED}
    files = {p.stem: p for p in STEPS_DIR.glob("*.py") if p.stem not in ("__init__", "runner", "transient")}
    assert set(files) == modules  # a module for every declaration, a declaration for every module
    for name, path in files.items():
        block = _main_block(ast.parse(path.read_text()))
        assert "main_of(main," in block, f"steps/{name}.py: end with `main_of(main, STEP)` (steps/runner.py)"
        assert "exit(" not in block.replace("main_of", ""), name


def test_the_results_library_knows_no_exit_codes():
    # the mapping lives in the runner; publish_run raises (its errors carry their causes) or returns a summary
    import inspect

    from infersweep.results import publish

    assert "transient" not in inspect.signature(publish.publish_run).parameters
    source = inspect.getsource(publish.publish_run)
    assert not any(f"return {n}" in source for n in (0, 1, 2, 75))
