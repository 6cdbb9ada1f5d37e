"""The layers of the code (pyproject.toml [tool.importlinter]) hold: `lint-imports` keeps every contract, and
it does catch a breach (a copy of the code with one upward import added fails, naming the contract)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO

LINT = Path(sys.executable).with_name("lint-imports")


def lint(root: Path) -> subprocess.CompletedProcess:
    # grimp finds the packages through the import path: the tree under test must come first.
    env = os.environ | {"PYTHONPATH": str(root)}
    return subprocess.run([str(LINT), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_every_import_contract_is_kept():
    res = lint(REPO)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 broken" in res.stdout


def test_no_contract_lists_an_exception():
    """Issue 14 removed every ignore_imports entry; a new one would hide exactly the plumbing it fixed."""
    import tomllib

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert len(contracts) >= 7
    assert {c["name"]: c["ignore_imports"] for c in contracts if c.get("ignore_imports")} == {}


def test_every_python_file_compiles():
    """Benchmarks and scripts are imported by no test: a broken line there would otherwise reach a user."""
    files = [
        p
        for d in ("infersweep", "steps", "workflows", "tests", "benchmarks", "scripts")
        for p in (REPO / d).rglob("*.py")
        if "fixtures" not in p.parts
    ]
    assert len(files) > 100
    for f in files:
        compile(f.read_text(), str(f), "exec")  # SyntaxError names the file and line


def copy_code(dst: Path) -> Path:
    for pkg in ("infersweep", "steps", "workflows"):
        shutil.copytree(REPO / pkg, dst / pkg, ignore=shutil.ignore_patterns("__pycache__", "golden", "reference"))
    shutil.copy(REPO / "pyproject.toml", dst / "pyproject.toml")
    return dst


def test_an_upward_import_breaks_a_contract(tmp_path):
    root = copy_code(tmp_path)
    workflow_dgd = root / "workflows" / "pipeline.py"
    workflow_dgd.write_text(workflow_dgd.read_text() + "\n\ndef _late():\n    import steps.publish  # noqa\n")
    res = lint(root)
    assert res.returncode == 1
    assert "steps/ is the end of the line" in res.stdout and "workflows.pipeline -> steps.publish" in res.stdout


def test_the_dgd_adapters_importing_local_mode_breaks_a_contract(tmp_path):
    """Local mode's adapter is named in the steps' environment (infersweep/platform/select.py), never imported
    by infersweep/platform: an import that sneaks in (even inside a function) is caught."""
    root = copy_code(tmp_path)
    select = root / "infersweep" / "platform" / "select.py"
    select.write_text(
        select.read_text() + "\n\ndef _late():\n    from infersweep.local.dynamo.adapter import from_env  # noqa\n"
    )
    res = lint(root)
    assert res.returncode == 1
    assert "infersweep/platform (the DGD adapters) does not import local mode" in res.stdout, res.stdout
    assert "infersweep.platform.select -> infersweep.local.dynamo.adapter" in res.stdout, res.stdout


def test_a_cycle_hidden_in_a_function_breaks_the_acyclic_contract(tmp_path):
    root = copy_code(tmp_path)
    paths = root / "infersweep" / "paths.py"  # imported by infersweep/recipe.py; now imports it back
    paths.write_text(paths.read_text() + "\n\ndef _late():\n    from infersweep import recipe  # noqa\n")
    res = lint(root)
    assert res.returncode == 1 and "No cycles are allowed in infersweep" in res.stdout, res.stdout
    assert ".paths -> .recipe" in res.stdout or ".recipe -> .paths" in res.stdout, res.stdout


# Every strongly connected set of modules of the import graph (Tarjan, iterative), imports inside functions and
# under TYPE_CHECKING counted: grimp reads every import statement of a module's AST. Run in a child process, so
# grimp finds the tree under test first on the import path.
_CYCLES = r"""
import json, sys, grimp
g = grimp.build_graph("infersweep", "steps", "workflows", include_external_packages=False,
                      exclude_type_checking_imports=False, cache_dir=None)
adj = {m: sorted(g.find_modules_directly_imported_by(m)) for m in sorted(g.modules)}
index, low, on, stack, sccs, n = {}, {}, set(), [], [], 0
for root in adj:
    if root in index:
        continue
    work = [(root, 0)]
    while work:
        v, i = work.pop()
        if i == 0:
            index[v] = low[v] = n; n += 1; stack.append(v); on.add(v)
        for j in range(i, len(adj[v])):
            w = adj[v][j]
            if w not in index:
                work += [(v, j + 1), (w, 0)]
                break
            if w in on:
                low[v] = min(low[v], index[w])
        else:
            if low[v] == index[v]:
                scc = []
                while True:
                    w = stack.pop(); on.discard(w); scc.append(w)
                    if w == v:
                        break
                if len(scc) > 1:
                    sccs.append(sorted(scc))
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
print(json.dumps(sccs))
"""


def module_cycles(root: Path) -> list[list[str]]:
    import json

    res = subprocess.run(
        [sys.executable, "-c", _CYCLES],
        cwd=root,
        env=os.environ | {"PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_no_module_imports_itself_back():
    """Issue 22: zero import cycles among modules (not only between sibling packages), counting imports inside
    functions and under TYPE_CHECKING. Today's main had two: local.argo <-> local.argo_validate and
    engines.base <-> recipe.resolved (a TYPE_CHECKING import)."""
    assert module_cycles(REPO) == []


def test_a_type_checking_import_back_is_a_cycle(tmp_path):
    root = copy_code(tmp_path)
    base = root / "infersweep" / "engines" / "base.py"
    base.write_text(
        base.read_text()
        .replace(
            "from infersweep.params_files import Strict\n",
            "from infersweep.params_files import Strict\n\nif TYPE_CHECKING:\n"
            "    from infersweep.recipe.resolved import ResolvedRecipe  # noqa\n",
            1,
        )
        .replace("from typing import ", "from typing import TYPE_CHECKING, ", 1)
    )
    assert ["infersweep.engines.base", "infersweep.recipe.resolved"] in module_cycles(root)
    res = lint(root)  # the layers contract counts it too (exclude_type_checking_imports = false)
    assert res.returncode == 1 and "infersweep.engines.base -> infersweep.recipe.resolved" in res.stdout, res.stdout


def test_the_cli_imports_only_the_command_it_runs():
    """`infersweep render` must not pay for pandas (report/compare) or the Argo Server client: start-up."""
    code = (
        "import sys; from infersweep.cli import main; "
        "main(['render', 'nemotron-3-nano-fp8-vllm-agg-kv', '--out', sys.argv[1]]); "
        "print(sorted(m for m in ('pandas', 'infersweep.results.run', 'infersweep.argo_server', 'matplotlib') "
        "if m in sys.modules))"
    )
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        res = subprocess.run(
            [sys.executable, "-c", code, out],
            cwd=REPO,
            env=os.environ | {"PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "[]"


def test_top_level_help_still_lists_every_command():
    from infersweep.cli import build_parser, command_names

    def choices(argv):
        return sorted(next(a for a in build_parser(argv)._actions if a.dest == "cmd").choices)

    assert choices(["--help"]) == choices(["-h", "render"]) == choices(["no-such-command"]) == command_names()
    assert "report" in command_names() and choices(["render", "x", "--out", "y"]) == ["render"]


def test_the_dgd_adapters_import_nothing_from_rendering():
    """infersweep/platform applies a DGD from what the DGD carries (its KEDA annotation: infersweep/platform/keda.py);
    an import of workflows/ there would also put workflows under results/ (results -> platform.select -> kube)."""
    import tomllib

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (name,) = [
        c["name"]
        for c in contracts
        if c["type"] == "forbidden"
        and c["source_modules"] == ["infersweep.platform"]
        and c["forbidden_modules"] == ["workflows"]
    ]
    res = lint(REPO)
    assert f"{name} KEPT" in " ".join(res.stdout.split()), res.stdout  # lint-imports wraps long names


def test_the_dgd_package_importing_hera_breaks_a_contract(tmp_path):
    """infersweep/dgd is how a recipe becomes a DGD, with no Argo in it: the pipeline, the experiment, restart
    classes and the benchmarks all call it; an import of Hera (even inside a function) is caught."""
    root = copy_code(tmp_path)
    render = root / "infersweep" / "dgd" / "render.py"
    render.write_text(render.read_text() + "\n\ndef _late():\n    from hera.workflows import models  # noqa\n")
    res = lint(root)
    assert res.returncode == 1
    assert "infersweep/dgd (how a recipe becomes a DGD) imports no Hera" in " ".join(res.stdout.split()), res.stdout
    assert "infersweep.dgd.render -> hera" in res.stdout, res.stdout


def test_the_experiment_model_importing_workflows_breaks_a_contract(tmp_path):
    root = copy_code(tmp_path)
    restart = root / "infersweep" / "experiment" / "restart.py"
    restart.write_text(
        restart.read_text() + "\n\ndef _late():\n    from workflows.pipeline import points_json  # noqa\n"
    )
    res = lint(root)
    assert res.returncode == 1
    assert "infersweep/experiment imports no workflows/" in " ".join(res.stdout.split()), res.stdout


def test_a_domain_module_importing_workflows_breaks_a_contract(tmp_path):
    """Issue 40: only the application tier (commands, local mode, the launcher, the API) imports workflows/.
    A domain module that reaches up for a renderer (even inside a function) is caught, naming the rule."""
    root = copy_code(tmp_path)
    context = root / "infersweep" / "recipe_context.py"
    context.write_text(
        context.read_text() + "\n\ndef _late():\n    from workflows.render import render_recipe  # noqa\n"
    )
    res = lint(root)
    assert res.returncode == 1
    text = " ".join(res.stdout.split())
    assert "only the application tier (commands, local mode, the launcher, the API) imports workflows/" in text, text
    assert "infersweep.recipe_context -> workflows.render" in res.stdout, res.stdout


def test_rendering_lives_in_workflows():
    """The modules that turn a recipe into Argo objects sit beside pipeline.py, not in infersweep/ (issue 40)."""
    assert (REPO / "workflows" / "render.py").is_file() and (REPO / "workflows" / "render_cache.py").is_file()
    assert not (REPO / "infersweep" / "render.py").exists() and not (REPO / "infersweep" / "render_cache.py").exists()
