"""The benchmark AIPerf's own CLI resolves a command line to, with nothing sent: the check that a flag of ours
lands where AIPerf reads it (tests/aiperf/test_seamless_warmup.py, test_warmup_ramp.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.support.mocker_point import AIPERF_BIN

# aiperf/cli_commands/profile.py resolves the config before run_benchmark, which is replaced here by a print
RESOLVE = """
import json, sys
import aiperf.cli_runner as runner
def show(plan):
    print(json.dumps([c.model_dump(mode="json") for c in plan.configs], sort_keys=True, default=str))
    raise SystemExit(0)
runner.run_benchmark = show
from aiperf.cli import app
app(sys.argv[1:])
"""


def resolved(argv: list[str], cwd: Path) -> list[dict]:
    """AIPerf's resolved configs for `argv` (argv[0] the aiperf binary, dropped), run in the AIPerf env."""
    proc = subprocess.run(
        [str(AIPERF_BIN.parent / "python"), "-c", RESOLVE, *argv[1:]],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
