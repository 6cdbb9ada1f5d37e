"""Side environments outlive the checkout that built them (scripts/setup_envs.sh, issue 33).

setup.sh once built each cached side environment through the checkout's link, so pip wrote that checkout's path
into every console script (`#!<first clone>/.venv-aiperf/bin/python`): once the first clone was deleted, every
other checkout's `aiperf` failed with "No such file or directory" although the file was there. These tests run
setup's own functions with a real `python -m venv` and a real `pip install` of a small wheel (no network).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.paths import REPO

LIB = REPO / "scripts" / "setup_envs.sh"
PY = shutil.which("python3.11") or sys.executable
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _tiny_wheel(folder: Path) -> Path:
    """A one-module wheel with a console script (`tinytool`), written by hand: pip needs no network for it."""
    whl = folder / "tinytool-1.0-py3-none-any.whl"
    files = {
        "tinytool.py": "def main():\n    print('tinytool ok')\n",
        "tinytool-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinytool\nVersion: 1.0\n",
        "tinytool-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "tinytool-1.0.dist-info/entry_points.txt": "[console_scripts]\ntinytool = tinytool:main\n",
    }
    with zipfile.ZipFile(whl, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
        z.writestr(
            "tinytool-1.0.dist-info/RECORD", "".join(f"{n},,\n" for n in [*files, "tinytool-1.0.dist-info/RECORD"])
        )
    return whl


def _setup(checkout: Path, cache: Path, wheel: Path) -> subprocess.CompletedProcess:
    """What setup.sh does for one side environment, in `checkout`: build or reuse `.venv-tiny`, then start it."""
    checkout.mkdir(parents=True, exist_ok=True)
    (checkout / "tiny.requirements.txt").write_text("tinytool==1.0\n")
    script = f"""set -euo pipefail
cd {checkout}
PY={PY}; ENV_CACHE={cache}; SETUP_PIP_UPGRADE=0
source {LIB}
if venv .venv-tiny tiny.requirements.txt; then
  "$V/bin/pip" install -q --disable-pip-version-check --no-index {wheel}
  done_venv
fi
.venv-tiny/bin/tinytool
"""
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=240)


def test_an_environment_built_from_one_clone_starts_from_a_second_after_the_first_is_deleted(tmp_path):
    cache, wheel = tmp_path / "cache", _tiny_wheel(tmp_path)
    first = _setup(tmp_path / "clone-1", cache, wheel)
    assert first.returncode == 0 and "setup: building .venv-tiny" in first.stdout, first.stdout + first.stderr
    shutil.rmtree(tmp_path / "clone-1")
    second = _setup(tmp_path / "clone-2", cache, wheel)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "setup: .venv-tiny from" in second.stdout and "tinytool ok" in second.stdout


def test_a_cached_environment_whose_scripts_name_a_deleted_checkout_is_rebuilt(tmp_path):
    cache, wheel = tmp_path / "cache", _tiny_wheel(tmp_path)
    assert _setup(tmp_path / "clone-1", cache, wheel).returncode == 0
    (env,) = cache.iterdir()
    script = env / "bin" / "tinytool"
    # What the old setup.sh left: the entry point starts the first clone's link, which is gone.
    script.write_text(script.read_text().replace(f"#!{env}/bin/python", "#!/gone/clone-1/.venv-tiny/bin/python", 1))
    second = _setup(tmp_path / "clone-2", cache, wheel)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "starts another environment's python: rebuilding" in second.stderr
    assert "setup: building .venv-tiny" in second.stdout and "tinytool ok" in second.stdout


@pytest.mark.parametrize("name", ["aiperf", "dynamo", "aic", "checkov", "engines"])
def test_this_checkouts_side_environments_name_only_their_own_interpreter(name):
    """The environments setup.sh linked here: no console script names this checkout (or any other path)."""
    from infersweep.local.toolchain import script_interpreter

    link = REPO / f".venv-{name}"
    if not link.exists():
        pytest.skip(f".venv-{name} is not built here (scripts/setup.sh{' --engines' if name == 'engines' else ''})")
    target = link.resolve()
    wrong = []
    for script in sorted((target / "bin").iterdir()):
        if script.is_symlink() or not script.is_file():
            continue
        interp = script_interpreter(script)
        if interp and "python" in interp and not interp.startswith(f"{target}/bin/"):
            wrong.append(f"{script.name} -> {interp}")
    assert not wrong, f"{target}: console scripts start another environment's python: {wrong[:5]}"
