"""Start-up: the fixed cost every `infersweep` command pays, in fresh processes (median of --repeat runs).

  * cold import: `python -c "import infersweep.cli"` (what every command loads first);
  * `infersweep --help` (every command's parser: the most imports a command can need);
  * render one recipe (`infersweep render RECIPE --out DIR`, every document validated), with the schema
    cache warm (the usual case) and cold (a fresh INFERSWEEP_CACHE_DIR each run: first run on a machine);
  * render the whole catalog (`infersweep render --all --out DIR`).

Wall time and CPU time (user + sys of the child, from wait4) are both shown: on a shared machine wall time
is inflated by other work, CPU time much less. `--tree DIR` measures another checkout (e.g. the commit
before a change) with the same interpreter, for before/after figures.

    .venv/bin/python benchmarks/startup.py [--repeat 5] [--tree DIR] [--recipe NAME]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, Figure, report

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"
BOUND_RENDER_ONE_S = 1.5


def timed(cmd: list[str], tree: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """(wall s, CPU s, exit code) of one run of cmd in a fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


def measure(name: str, cmd: list[str], tree: Path, repeat: int, fresh_cache: bool = False) -> tuple[float, float, int]:
    walls, cpus, code = [], [], 0
    for _ in range(repeat):
        env = os.environ | {"PYTHONPATH": str(tree)}
        with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
            if fresh_cache:
                env["INFERSWEEP_CACHE_DIR"] = str(Path(tmp) / "cache")
            wall, cpu, code = timed([c.replace("{OUT}", str(Path(tmp) / "out")) for c in cmd], tree, env)
        walls.append(wall)
        cpus.append(cpu)
    print(f"  {name}: wall {[round(w, 2) for w in walls]} cpu {[round(c, 2) for c in cpus]} exit {code}", file=sys.stderr)
    return statistics.median(walls), statistics.median(cpus), code


def main(argv: list[str] | None = None) -> list[Figure]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tree", type=Path, default=REPO, help="checkout to measure (default: this one)")
    ap.add_argument("--recipe", default=RECIPE)
    a = ap.parse_args(argv)
    tree = a.tree.resolve()
    py = sys.executable
    cli = [py, "-m", "infersweep.cli"]
    render_one = cli + ["render", a.recipe, "--out", "{OUT}"]
    timed(render_one[:-1] + [tempfile.mkdtemp(prefix="startup-warm-")], tree, os.environ | {"PYTHONPATH": str(tree)})  # warm the cache
    cases = [
        ("cold import (import infersweep.cli)", [py, "-c", "import infersweep.cli"], False, ""),
        ("infersweep --help", cli + ["--help"], False, ""),
        (f"render one ({a.recipe}), schema cache warm", render_one, False, f"< {BOUND_RENDER_ONE_S}"),
        (f"render one ({a.recipe}), schema cache cold", render_one, True, ""),
        ("render --all (whole catalog)", cli + ["render", "--all", "--out", "{OUT}"], False, ""),
    ]
    figs = []
    for name, cmd, fresh, bound in cases:
        wall, cpu, code = measure(name, cmd, tree, a.repeat, fresh)
        note = f"CPU {cpu:.2f} s" + ("" if code == 0 else f"; exit {code}")
        figs.append(Figure("startup", name + " (median wall)", round(wall, 3), "s", bound, note))
    return report("startup", figs, {"tree": str(tree), "repeat": a.repeat})


if __name__ == "__main__":
    main()
