"""Start-up: the fixed cost every `infersweep` command pays, in fresh processes (median of --repeat runs).

  * cold import: `python -c "import infersweep.cli"` (what every command loads first);
  * `infersweep --help` (every command's parser: the most imports a command can need);
  * render one recipe (`infersweep render RECIPE --out DIR`, every document validated):
      - all caches cold (a fresh INFERSWEEP_CACHE_DIR each run: the first run on a machine),
      - render cache off, schema cache warm (INFERSWEEP_RENDER_CACHE=off: a recipe, params file, --set or
        code changed since the last render, so the bundle is rendered again),
      - warm (the recipe was rendered before from the same inputs: the usual case; bound < 1.5 s),
      - warm, with one `--set` (the --set check needs workflows.pipeline's parameter list, hence Hera);
  * `infersweep validate RECIPE_FILE` and `infersweep submit RECIPE` against a refused Argo Server (all the
    work submit does before its first request), warm. submit sends through Hera's WorkflowsService and
    converts the Workflow to Hera's model first (infersweep/argo_server.py), so it pays Hera's import anyway;
  * the whole catalog (`render --all`), warm and with the render cache off.

Wall time and CPU time (user + sys of the child, from wait4) are both shown: on a shared machine wall time is
inflated by other work, CPU time much less. `--before DIR` measures another checkout (e.g. `git archive` of
the commit before a change, run with this interpreter) in the same rounds, alternating with this one, and
prints both columns. An env var an older checkout does not know (INFERSWEEP_RENDER_CACHE) is ignored there:
it has no render cache, so its "warm" and "render cache off" rows measure the same thing.

    .venv/bin/python benchmarks/startup.py [--repeat 5] [--before DIR] [--tree DIR] [--recipe NAME] [--only WORDS]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, Figure, report, table

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"
RECIPE_FILE = "params/recipes/cluster-report/nemotron-3-nano-fp8-vllm-agg-kv.yaml"
BOUND_RENDER_ONE_S = 1.5
REFUSED_SERVER = "127.0.0.1:9"  # the discard port: nothing listens, the connection is refused at once


def timed(cmd: list[str], tree: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """(wall s, CPU s, exit code) of one run of cmd in a fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


class Case:
    def __init__(
        self,
        name: str,
        args: list[str],
        *,
        cache: str = "warm",
        extra_env: dict[str, str] | None = None,
        bound: str = "",
        expect_fail: bool = False,
    ):
        self.name, self.args, self.cache, self.extra_env = name, args, cache, extra_env or {}
        self.bound, self.expect_fail = bound, expect_fail


def run_case(case: Case, tree: Path, warm_dir: Path) -> tuple[float, float, int]:
    env = {k: v for k, v in os.environ.items() if k != "INFERSWEEP_RENDER_CACHE"}
    env |= {"PYTHONPATH": str(tree)} | case.extra_env
    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        env["INFERSWEEP_CACHE_DIR"] = str(Path(tmp) / "cache") if case.cache == "cold" else str(warm_dir)
        cmd = [sys.executable] + [a.replace("{OUT}", str(Path(tmp) / "out")) for a in case.args]
        return timed(cmd, tree, env)


def main(argv: list[str] | None = None) -> list[Figure]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tree", type=Path, default=REPO, help="checkout to measure (default: this one)")
    ap.add_argument("--before", type=Path, help="a checkout from before a change, measured alongside")
    ap.add_argument("--recipe", default=RECIPE)
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="WORDS",
        help="measure only the cases whose name contains WORDS (repeatable)",
    )
    a = ap.parse_args(argv)
    trees = {"after": a.tree.resolve()} | ({"before": a.before.resolve()} if a.before else {})
    cli = ["-m", "infersweep.cli"]
    render_one = cli + ["render", a.recipe, "--out", "{OUT}"]
    off = {"INFERSWEEP_RENDER_CACHE": "off"}
    cases = [
        Case("cold import (import infersweep.cli)", ["-c", "import infersweep.cli"]),
        Case("infersweep --help", cli + ["--help"]),
        Case(f"render one ({a.recipe}), all caches cold", render_one, cache="cold"),
        Case("render one, render cache off (schema cache warm)", render_one, extra_env=off),
        Case("render one, warm", render_one, bound=f"< {BOUND_RENDER_ONE_S}"),
        Case("render one --set s3-prefix=runs/x, warm", render_one + ["--set", "s3-prefix=runs/x"]),
        Case("validate one recipe file, warm", cli + ["validate", RECIPE_FILE]),
        Case(
            "submit one, warm (to a refused server: the work before the request)",
            cli + ["submit", a.recipe, "--argo-server", REFUSED_SERVER],
            expect_fail=True,
        ),
        Case("render --all (whole catalog), warm", cli + ["render", "--all", "--out", "{OUT}"]),
        Case("render --all, render cache off", cli + ["render", "--all", "--out", "{OUT}"], extra_env=off),
    ]
    cases = [c for c in cases if not a.only or any(w in c.name for w in a.only)]
    warm = {label: Path(tempfile.mkdtemp(prefix=f"startup-warm-{label}-")) for label in trees}
    try:
        for label, tree in trees.items():  # fill each checkout's caches (schemas, passed markers, bundles)
            for case in cases:
                if case.cache == "warm":
                    run_case(case, tree, warm[label])
        samples: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
        for _ in range(a.repeat):  # rounds alternate the checkouts, so both see the same machine load
            for case in cases:
                for label, tree in trees.items():
                    samples.setdefault((case.name, label), []).append(run_case(case, tree, warm[label]))
    finally:
        for d in warm.values():
            shutil.rmtree(d, ignore_errors=True)

    figs, rows = [], []
    for case in cases:
        row = [case.name]
        for label in ("before", "after"):
            if label not in trees:
                continue
            runs = samples[(case.name, label)]
            wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
            bad = [r[2] for r in runs if (r[2] != 0) != case.expect_fail]
            print(
                f"  {label:6} {case.name}: wall {[round(r[0], 2) for r in runs]} cpu {[round(r[1], 2) for r in runs]}",
                file=sys.stderr,
            )
            row += [f"{wall:.2f}", f"{cpu:.2f}" + (f" (exit {bad[0]}!)" if bad else "")]
            if label == "after":
                note = f"CPU {cpu:.2f} s" + (f"; unexpected exit {bad[0]}" if bad else "")
                if "before" in trees:
                    before = statistics.median(r[0] for r in samples[(case.name, "before")])
                    note += f"; before {before:.2f} s wall"
                figs.append(Figure("startup", case.name + " (median wall)", round(wall, 3), "s", case.bound, note))
        rows.append(row)
    header = ["command"] + [
        f"{label} {kind}" for label in ("before", "after") if label in trees for kind in ("wall s", "CPU s")
    ]
    print(f"\nmedian of {a.repeat} fresh processes each; " + ", ".join(f"{k}: {v}" for k, v in trees.items()))
    print(table(rows, header) + "\n")
    return report("startup", figs, {"trees": {k: str(v) for k, v in trees.items()}, "repeat": a.repeat})


if __name__ == "__main__":
    main()
