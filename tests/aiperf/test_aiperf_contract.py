"""The AIPerf contract runs with only the files images/aiperf.Dockerfile copies, in the AIPerf environment.

The AIPerf image has no infersweep install: it gets infersweep/aiperf/ and the two AIPerf steps
copied in by COPY lines. Here those exact files (read from the Dockerfile, so a forgotten COPY fails this
test) go into an empty folder, and the AIPerf env's interpreter runs them isolated (`python -I`: no
PYTHONPATH, no user site, no current folder), so nothing of this repository or the main env can help.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infersweep.paths import venv_python
from tests.conftest import FIXTURES
from tests.support.paths import REPO

DOCKERFILE = REPO / "images" / "aiperf.Dockerfile"
IMAGE_ROOT = "/opt/infersweep"  # the image's PYTHONPATH


def image_files() -> dict[str, str]:
    """{repo path: path under IMAGE_ROOT} of every COPY into IMAGE_ROOT in the AIPerf Dockerfile."""
    out = {}
    for line in DOCKERFILE.read_text().splitlines():
        parts = line.split()
        if parts[:1] == ["COPY"] and parts[-1].startswith(IMAGE_ROOT + "/"):
            dest = parts[-1][len(IMAGE_ROOT) + 1 :]
            for src in parts[1:-1]:
                out[src] = f"{dest.rstrip('/')}/{Path(src).name}" if dest.endswith("/") else dest
    return out


@pytest.fixture
def image_root(tmp_path: Path) -> Path:
    root = tmp_path / "opt-infersweep"
    for src, dest in image_files().items():
        (root / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / src, root / dest)
    return root


def run_isolated(root: Path, code: str, *args: str) -> subprocess.CompletedProcess:
    python = venv_python("aiperf")
    if not Path(python).exists():
        pytest.skip(f"{python} is missing (scripts/setup.sh builds the AIPerf env)")
    # -I ignores PYTHONPATH, so the image's PYTHONPATH is put on sys.path by hand.
    prog = f"import sys; sys.path.insert(0, {str(root)!r})\n" + code
    return subprocess.run(
        [python, "-I", "-c", prog, *args], capture_output=True, text=True, timeout=120, cwd=root.parent
    )


def test_the_dockerfile_copies_the_contract_and_the_aiperf_steps():
    files = image_files()
    assert files["infersweep/aiperf/artifacts.py"] == "infersweep/aiperf/artifacts.py"
    # every file of the package: the image imports infersweep.aiperf, whose __init__ imports its files
    assert {f"infersweep/aiperf/{p.name}" for p in (REPO / "infersweep" / "aiperf").glob("*.py")} <= set(files)
    assert files["infersweep/__init__.py"] == "infersweep/__init__.py"
    assert files["steps/aiperf_point.py"] == "steps/aiperf_point.py"
    assert files["infersweep/aiperf/point_run.py"] == "infersweep/aiperf/point_run.py"  # the point's run logic


def test_the_point_step_starts_with_only_the_image_files(image_root):
    proc = run_isolated(
        image_root, "import runpy; runpy.run_module('steps.aiperf_point', run_name='__main__')", "--help"
    )
    assert proc.returncode == 0, proc.stderr
    assert "--concurrency" in proc.stdout and "--workload" in proc.stdout


def test_a_real_aiperf_dir_is_read_with_only_the_image_files_and_the_standard_library(image_root):
    """A real AIPerf 0.13.0 run read in the AIPerf env; every module it loaded is stdlib, orjson or ours."""
    art = FIXTURES / "aiperf" / "0.13.0" / "dynamo-mocker-c4"
    code = (
        "import json\n"
        "from infersweep.aiperf import read_point\n"
        f"r = read_point({str(art)!r})\n"
        "tops = {m.split('.')[0] for m in sys.modules}\n"
        "foreign = sorted(t for t in tops if t not in sys.stdlib_module_names and not t.startswith('_')"
        " and t not in ('infersweep', 'orjson'))\n"
        "print(json.dumps({'status': r['status'], 'requests_ok': r['requests_ok'], 'foreign': foreign,"
        " 'file': sys.modules['infersweep.aiperf.artifacts'].__file__}))\n"
    )
    proc = run_isolated(image_root, code)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "ok" and out["requests_ok"] > 0
    assert out["foreign"] == []
    assert out["file"].startswith(str(image_root))  # the copy, not the repository's


# A stand-in for `aiperf profile` that leaves a real AIPerf 0.13.0 run's artifacts where it is told to.
COPYING_AIPERF = """\
#!{python}
import shutil, sys
argv = sys.argv[1:]
shutil.copytree({src!r}, argv[argv.index("--artifact-dir") + 1], dirs_exist_ok=True)
"""


def test_a_whole_point_runs_with_only_the_image_files(image_root, tmp_path):
    """The step's main (parser, run_point, the child AIPerf, result.json) end to end in the AIPerf env with only
    the image's files: an import the --help path does not reach (the runner's) would fail here."""
    fake = tmp_path / "aiperf"
    fake.write_text(
        COPYING_AIPERF.format(
            python=venv_python("aiperf"), src=str(FIXTURES / "aiperf" / "0.13.0" / "dynamo-mocker-c4")
        )
    )
    fake.chmod(0o755)
    out = tmp_path / "points" / "c4"
    code = (
        "import json\n"
        "from steps.aiperf_point import main\n"
        "code = main(sys.argv[1:])\n"
        "tops = {m.split('.')[0] for m in sys.modules}\n"
        "foreign = sorted(t for t in tops if t not in sys.stdlib_module_names and not t.startswith('_')"
        " and t not in ('infersweep', 'steps', 'workflows', 'orjson'))\n"
        "print(json.dumps({'code': code, 'foreign': foreign,"
        " 'file': sys.modules['infersweep.aiperf.point_run'].__file__}))\n"
    )
    proc = run_isolated(
        image_root,
        code,
        "--url",
        "http://127.0.0.1:9",
        "--model",
        "m",
        "--tokenizer",
        str(tmp_path),
        "--concurrency",
        "4",
        "--requests",
        "40",
        "--isl",
        "128",
        "--osl",
        "32",
        "--out",
        str(out),
        "--aiperf",
        str(fake),
    )
    assert proc.returncode == 0, proc.stderr
    ran = json.loads(proc.stdout.splitlines()[-1])
    assert ran["code"] == 0 and ran["foreign"] == [] and ran["file"].startswith(str(image_root))
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "ok" and result["attempt"] == 1 and result["argv"][0] == str(fake)
    # every measured point records why it stopped where it did (infersweep.aiperf.adaptive)
    assert result["stop_reason"] in ("target met", "budget spent") and "adaptive_ci_rel" in result


def _top_modules(nodes) -> set[str]:
    out = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


@pytest.mark.parametrize(
    "name",
    [
        "__init__.py",
        "flags.py",
        "artifacts.py",
        "point.py",
        "adaptive.py",
        "steadiness.py",
        "phase_overlap.py",
        "student_t.py",
    ],
)
def test_the_contract_imports_only_the_standard_library(name):
    """Its import statements, read from the source. orjson is tried and optional (AIPerf brings it)."""
    tree = ast.parse((REPO / "infersweep" / "aiperf" / name).read_text())
    optional = _top_modules(
        n
        for t in ast.walk(tree)
        if isinstance(t, ast.Try)
        and any(isinstance(h.type, ast.Name) and h.type.id == "ImportError" for h in t.handlers)
        for n in ast.walk(t)
    )
    foreign = {
        m
        for m in _top_modules(ast.walk(tree))
        if m not in sys.stdlib_module_names and m not in ("__future__", "infersweep")
    }
    ours = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module.startswith("infersweep")}
    assert optional == ({"orjson"} if name == "artifacts.py" else set())
    # infersweep.errors: the error family's UserError (standard library only; images/aiperf.Dockerfile copies it)
    assert foreign == optional and ours <= {
        "infersweep.aiperf.flags",
        "infersweep.aiperf.artifacts",
        "infersweep.aiperf.phase_overlap",
        "infersweep.aiperf.student_t",
        "infersweep.errors",
    }


def test_the_point_runner_imports_only_the_standard_library_and_the_contract():
    """infersweep/aiperf/point_run.py, from its source: the standard library and, of ours, only the contract and
    the step interface (standard library only too; images/aiperf.Dockerfile copies both)."""
    tree = ast.parse((REPO / "infersweep" / "aiperf" / "point_run.py").read_text())
    ours = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module.startswith("infersweep")}
    foreign = {m for m in _top_modules(ast.walk(tree)) if m not in sys.stdlib_module_names and m != "__future__"}
    assert ours == {
        "infersweep.aiperf.flags",
        "infersweep.aiperf.artifacts",
        "infersweep.aiperf.adaptive",
        "infersweep.aiperf.steadiness",
        "infersweep.step_interface",
    }
    assert foreign == {"infersweep"}


def test_the_metric_vocabulary_names_exactly_what_read_point_gives():
    """infersweep.metrics (recipe tolerances, experiment claims, the results table) and the contract's reader
    speak one vocabulary: a real run's metrics are the table's headline columns, none missing, none extra."""
    from infersweep.aiperf import DISTRIBUTIONS, SCALARS, STATS, read_point
    from infersweep.metrics import HEADLINE, direction

    metrics = read_point(FIXTURES / "aiperf" / "0.13.0" / "dynamo-mocker-c4")["metrics"]
    assert set(HEADLINE) <= set(metrics)  # every headline column is read from the run
    # and every name read_point gives follows the scheme: <metric>_<stat>_<unit>, or <metric>_<unit>
    scheme = {f"{m}_{s}_{u}" for m, u in DISTRIBUTIONS.values() for s in STATS} | set(SCALARS)
    assert set(metrics) <= scheme, sorted(set(metrics) - scheme)
    assert direction("ttft_p99_ms") == "lower" and direction("output_throughput_tok_s") == "higher"
