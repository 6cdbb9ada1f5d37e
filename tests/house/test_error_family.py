"""One error family (issue 40 item 3): every error a user can cause derives from `infersweep.errors.UserError`,
which the CLI's one handler (infersweep/cli.py main) prints as one line with the kind's exit code; anything else
reaching the CLI is a bug (exit 70, with its traceback). So no command translates errors on their way out
(the old `clean_errors` turned every ValueError and FileNotFoundError into a RecipeError, a bug's included).

The scan covers every exception class defined at the top level of a module in infersweep/, workflows/ and steps/:
it is a UserError, or it is listed in INTERNAL with why a user never sees it."""

from __future__ import annotations

import ast
import builtins
import importlib
from pathlib import Path

import pytest

from infersweep.cli import main as cli_main
from infersweep.errors import BUG_EXIT, EXIT_CODES, INTERRUPTED_EXIT, USAGE_EXIT, UserError
from tests.support.paths import REPO

PACKAGES = ("infersweep", "workflows", "steps")

# Exceptions no command lets reach the user, each with the reason. A new error class goes here only with one.
INTERNAL = {
    # A DGD operation's outcome on the cluster: a step fails with it (exit 1, steps/runner.py reads exit_code)
    # and the run records the failure; a user sees the failed run, not this error.
    "infersweep.platform.protocol.PlatformError": "a step's failure, exit 1 through steps/runner.py",
    "infersweep.platform.protocol.PVCNotBound": "a PlatformError",
    "infersweep.platform.protocol.DGDOwnedElsewhere": "a PlatformError",
    "infersweep.platform.protocol.NotReady": "a PlatformError",
    "infersweep.platform.protocol.NotServing": "a PlatformError",
    "infersweep.platform.operations.LaneHeld": "a PlatformError",
    # The model-cache step's download failure: steps/transient.py reads its cause to retry a hub hiccup.
    "infersweep.model_cache.ModelNotCached": "the model-cache step's failure, retried when transient",
    # The scrape step's loud failure when Prometheus answered without the series a run needs.
    "infersweep.results.server_metrics.MissingSeries": "the scrape step's failure (steps/scrape.py)",
    # The local executor's own control flow: each is caught inside it and becomes a node's failure message
    # (dag.py, steps.py, operator.py, local/run.py), as Argo's controller records it; never raised to the CLI.
    "infersweep.local.argo.errors.ParallelismReached": "operator.go ErrParallelismReached: try on the next pass",
    "infersweep.local.argo.sync.SyncError": "caught by the operator: the node waits or fails with it",
    "infersweep.local.argo.when.WhenError": "caught by dag.py/steps.py: the node fails with the message",
    "infersweep.local.argo.when._ParseError": "when.py's parser, turned into WhenError",
    "infersweep.local.argo.when._EvalError": "when.py's evaluator, turned into WhenError",
    "infersweep.local.argo.expr.ExprError": "caught by dag.py/operator.py: the node fails with the message",
    "infersweep.local.argo.retry.RetryError": "caught by local/run.py (a retry Argo would refuse)",
}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).with_suffix("")
            parts = list(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
            out.append((".".join(parts), path))
    return out


def _exception_classes() -> dict[str, type]:
    """Every exception class defined at the top level of a module of the three packages, by qualified name."""
    found: dict[str, type] = {}
    for name, path in _modules():
        tree = ast.parse(path.read_text())
        classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
        if not classes:
            continue
        module = importlib.import_module(name)
        for cls_name in classes:
            cls = getattr(module, cls_name, None)
            if isinstance(cls, type) and issubclass(cls, BaseException) and cls.__module__ == name:
                found[f"{name}.{cls_name}"] = cls
    return found


CLASSES = _exception_classes()


def test_every_error_a_user_can_cause_is_a_user_error():
    outside = sorted(q for q, cls in CLASSES.items() if not issubclass(cls, UserError) and q not in INTERNAL)
    assert not outside, (
        f"exception classes outside the UserError family and not listed as internal: {outside}; derive each that "
        "a user can cause from infersweep.errors.UserError (with its exit_code), or list it in INTERNAL with why "
        "a user never sees it"
    )


def test_the_internal_list_names_only_internal_classes_that_exist():
    stale = sorted(q for q in INTERNAL if q not in CLASSES or issubclass(CLASSES[q], UserError))
    assert not stale, f"INTERNAL lists classes that are gone or are UserErrors: {stale}"


def test_every_user_error_exits_with_a_documented_code():
    codes = {q: getattr(cls, "exit_code", USAGE_EXIT) for q, cls in CLASSES.items() if issubclass(cls, UserError)}
    wrong = {q: c for q, c in codes.items() if c not in EXIT_CODES or c in (0, BUG_EXIT, INTERRUPTED_EXIT)}
    assert not wrong, f"UserError kinds whose exit code is not a documented failure code (docs/errors.md): {wrong}"


# Handlers in the command layer that still catch a family member, with why (each rewords with what only the
# command knows; none turns a bug into bad input).
MAY_CATCH = {
    ("validate.py", "run"): "one line per refused recipe and a count: validating many is its job",
    ("predict.py", "run"): "a name that is neither a recipe nor an experiment: the message names both catalogs",
    ("cli_common.py", "load_run"): "RunNotFound knows the store only; load_run adds the folder it looked in first",
    ("cli_common.py", "reading_store"): "the S3 client's errors (botocore's) as one line; anything else re-raised",
}
CONVERSIONS = {"int", "float", "fromisoformat"}  # a builtin parse whose ValueError a handler may reword


def _caught(handler: ast.ExceptHandler) -> list[type]:
    """The classes a handler names, where the name is a builtin or one of the packages' exception classes."""
    nodes = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type] if handler.type else []
    by_name = {q.rsplit(".", 1)[1]: cls for q, cls in CLASSES.items()}
    out = []
    for node in nodes:
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
        cls = getattr(builtins, name, None) or by_name.get(name)
        if isinstance(cls, type):
            out.append(cls)
    return out


def _is_conversion(body: list[ast.stmt]) -> bool:
    calls = [n for s in body for n in ast.walk(s) if isinstance(n, ast.Call)]
    return bool(calls) and all(
        (c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", "")) in CONVERSIONS for c in calls
    )


def _raises_ours(node: ast.Raise) -> bool:
    """`raise SomeUserError(...)` (by name: the class is often imported inside the function)."""
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    name = exc.attr if isinstance(exc, ast.Attribute) else getattr(exc, "id", "")
    return any(q.rsplit(".", 1)[1] == name and issubclass(cls, UserError) for q, cls in CLASSES.items())


def _translations() -> list[str]:
    """Handlers in infersweep/commands/ and results/cli_common.py that catch a UserError kind, or catch a broad
    builtin (ValueError, FileNotFoundError, LookupError, Exception) or one of our classes, and raise a UserError
    in its place: what clean_errors and the one-off blocks did."""
    paths = sorted((REPO / "infersweep" / "commands").glob("*.py")) + [REPO / "infersweep/results/cli_common.py"]
    found = []
    for path in paths:
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or (path.name, fn.name) in MAY_CATCH:
                continue
            for node in ast.walk(fn):
                if not isinstance(node, ast.Try):
                    continue
                for h in node.handlers:
                    caught = _caught(h)
                    if any(issubclass(c, UserError) for c in caught):
                        found.append(f"{path.name}:{h.lineno} ({fn.name}) catches a UserError kind")
                        continue
                    ours_or_broad = [
                        c
                        for c in caught
                        if c.__module__.split(".")[0] in PACKAGES
                        or c in (ValueError, FileNotFoundError, LookupError, KeyError, Exception)
                    ]
                    raises = [n for s in h.body for n in ast.walk(s) if isinstance(n, ast.Raise) and _raises_ours(n)]
                    if ours_or_broad and raises and not _is_conversion(node.body):
                        found.append(f"{path.name}:{h.lineno} ({fn.name}) turns {ours_or_broad} into another error")
    return found


def test_no_command_translates_errors_on_their_way_out():
    found = _translations()
    assert not found, (
        "raise the right UserError where the mistake is found, and let it reach infersweep/cli.py's one "
        f"handler: {found}"
    )


@pytest.mark.parametrize(
    "kind,code",
    [
        ("infersweep.results.publish.PublishError", 1),
        ("infersweep.results.publish.PublishConflict", 2),
        ("infersweep.results.comparable.NotComparable", 2),
        ("infersweep.aiperf.point.PointError", 2),
        ("infersweep.results.store.RunNotFound", 2),
        ("infersweep.results.manifest.ChecksumError", 2),
        ("infersweep.predict.aic.AicError", 1),
    ],
)
def test_a_user_error_is_one_line_with_its_exit_code(kind, code, monkeypatch, capsys):
    import infersweep.commands.recipes as recipes

    cls = CLASSES[kind]

    def refuses(_a):
        raise cls("x.yaml: field: what is wrong; the fix")

    monkeypatch.setattr(recipes, "run", refuses)
    assert cli_main(["recipes"]) == code
    assert capsys.readouterr().err == "infersweep: x.yaml: field: what is wrong; the fix\n"


def test_a_user_error_a_dropped_connection_caused_is_still_retried_in_a_step():
    # The base sets no exit_code: steps/runner.py reads the cause and retries (75), as before the family.
    from infersweep.results.cli_common import RunLookupError
    from steps.runner import exit_code
    from steps.transient import TRANSIENT_EXIT

    try:
        try:
            raise ConnectionResetError("reset by peer")
        except ConnectionResetError as e:
            raise RunLookupError("the results store s3://b/p could not be read") from e
    except RunLookupError as e:
        assert exit_code(e) == TRANSIENT_EXIT
