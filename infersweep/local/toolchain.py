"""Before a local run deploys anything: do AIPerf, the Dynamo processes and Prometheus start here?

A side environment whose console scripts name an interpreter that is gone (`#!<deleted checkout>/.venv-aiperf/
bin/python`: what scripts/setup.sh built through a checkout's link before it built at the cache path) made every
point fail with "could not start AIPerf: [Errno 2] No such file or directory: 'aiperf'" while the file was
there. The check here finds that before the deployment starts, in one line naming what is missing and the
command that fixes it.

- AIPerf: its interpreter starts, and its `aiperf` console script's interpreter (the shebang: the kernel's
  execve, or pip's `/bin/sh` trampoline for long paths) exists. The aiperf step runs `aiperf` from that folder
  (local/argo/pod.py puts the interpreter's folder first on PATH).
- Dynamo: the interpreter that runs `python -m dynamo.frontend` / `dynamo.mocker` (or, with `--workers gpu`,
  the engine's) starts.
- Prometheus: the binary is there. Without it a run still measures (server metrics are skipped, and the
  results say so), so it is a warning line, not an error.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from infersweep.errors import UserError
from infersweep.paths import REPO_ROOT

SETUP_FIX = "run scripts/setup.sh (it rebuilds a side environment whose entry points do not start)"


class ToolMissing(UserError):
    """A tool a local run needs does not start; the message names it and the fix."""


def script_interpreter(script: Path) -> str | None:
    """The interpreter a console script runs under: its `#!` line, or pip's `/bin/sh` + `'''exec' PY` form."""
    try:
        head = script.read_bytes()[:512].decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    if not head or not head[0].startswith("#!"):
        return None
    first = head[0][2:].strip().split()
    if first and first[0] == "/bin/sh" and len(head) > 1 and head[1].startswith("'''exec' "):
        return head[1].split()[1].strip("'\"")  # pip's form for an interpreter path longer than the kernel takes
    return first[0] if first else None


def _starts(python: str) -> str | None:
    """None when `python -c pass` runs; else why not (one phrase)."""
    if not Path(python).exists():
        return f"{python} does not exist"
    try:
        proc = subprocess.run([python, "-c", "pass"], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        return f"{python} does not start ({exc.strerror})"
    if proc.returncode != 0:
        return f"{python} does not start ({(proc.stderr.strip().splitlines() or ['exit ' + str(proc.returncode)])[-1]})"
    return None


def default_dynamo_python() -> str:
    """The interpreter with ai-dynamo installed: $INFERSWEEP_DYNAMO_PYTHON or <repo>/.venv-dynamo."""
    return os.environ.get("INFERSWEEP_DYNAMO_PYTHON") or str(REPO_ROOT / ".venv-dynamo/bin/python")


def check_aiperf(python: str) -> str | None:
    why = _starts(python)
    if why:
        return f"AIPerf: {why}"
    script = Path(python).parent / "aiperf"
    if not script.is_file():
        return f"AIPerf: no `aiperf` entry point beside {python}"
    interp = script_interpreter(script)
    if interp is None or not os.access(interp, os.X_OK):
        return f"AIPerf: {script} starts {interp or 'no interpreter'}, which does not exist"
    return None


def check_dynamo(python: str, what: str = "Dynamo") -> str | None:
    why = _starts(python)
    return f"{what}: {why}" if why else None


def check_local_tools(*, aiperf_python: str, dynamo_python: str, engine_python: str | None = None) -> None:
    """Raise ToolMissing (one line: each missing tool and the fix) when AIPerf or Dynamo would not start."""
    problems = [p for p in (check_aiperf(aiperf_python), check_dynamo(dynamo_python)) if p]
    if engine_python is not None:
        problems += [p for p in [check_dynamo(engine_python, "the GPU engine interpreter")] if p]
    if problems:
        raise ToolMissing(f"{'; '.join(problems)}: {SETUP_FIX}")


def check_before_deploying(gpu_python: str | None) -> None:
    """What run / experiment run / slo-search call before they deploy: AIPerf and the Dynamo interpreter
    (the engine's with `--workers gpu`, which runs the frontend too: infersweep/local/dynamo/deploy.py deploy_local)."""
    from infersweep.paths import venv_python

    check_local_tools(aiperf_python=venv_python("aiperf"), dynamo_python=gpu_python or default_dynamo_python())


def prometheus_warning(binary: str) -> str | None:
    """A one-line warning when the Prometheus binary is absent (server metrics are then skipped)."""
    if Path(binary).exists():
        return None
    return (
        f"prometheus not found at {binary}: server metrics will be skipped "
        "(apt-get install prometheus, or set INFERSWEEP_PROMETHEUS)"
    )
