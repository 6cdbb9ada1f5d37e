"""A local run checks, before it deploys, that AIPerf and the Dynamo interpreter start (infersweep.local.toolchain):
one line naming what is missing and the fix, exit 2, nothing started or written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from infersweep.local.toolchain import check_aiperf, script_interpreter
from tests.support.paths import REPO


def _env(folder: Path, shebang: str) -> Path:
    """A side environment's bin/: a `python` that starts, and an `aiperf` console script with this shebang."""
    bin_ = folder / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "python").symlink_to(sys.executable)
    (bin_ / "aiperf").write_text(f"#!{shebang}\nimport sys\nsys.exit(0)\n")
    (bin_ / "aiperf").chmod(0o755)
    return bin_ / "python"


def test_an_aiperf_entry_point_whose_interpreter_is_gone_is_reported(tmp_path):
    python = _env(tmp_path / "env", "/gone/first-clone/.venv-aiperf/bin/python")
    why = check_aiperf(str(python))
    assert why and "/gone/first-clone/.venv-aiperf/bin/python" in why and "does not exist" in why


def test_a_working_aiperf_entry_point_passes(tmp_path):
    python = _env(tmp_path / "env", sys.executable)
    assert check_aiperf(str(python)) is None


def test_pips_long_path_form_is_read():
    script = "#!/bin/sh\n'''exec' '/very/long/path/bin/python' \"$0\" \"$@\"\n' '''\nimport sys\n"
    p = Path(os.environ.get("TMPDIR", "/tmp")) / f"pip-long-form-{os.getpid()}"
    p.write_text(script)
    try:
        assert script_interpreter(p) == "/very/long/path/bin/python"
    finally:
        p.unlink()


def test_run_local_refuses_in_one_line_before_deploying(tmp_path):
    python = _env(tmp_path / "env", "/gone/first-clone/.venv-aiperf/bin/python")
    env = {**os.environ, "INFERSWEEP_AIPERF_PYTHON": str(python), "PYTHONPATH": str(REPO)}
    out = tmp_path / "runs"
    proc = subprocess.run(
        [sys.executable, "-m", "infersweep", "run", "--local", "nemotron-3-nano-fp8-vllm-agg-kv", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "AIPerf" in lines[0] and "scripts/setup.sh" in lines[0], proc.stderr
    assert not out.exists() or not any(out.iterdir()), "nothing is written before the tools are known to start"
