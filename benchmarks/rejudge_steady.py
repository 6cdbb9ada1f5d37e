"""Re-judge every committed measured point (benchmarks/measured/*: each sweep point and each experiment
treatment's point) with this tree's validity rules, beside the rules of an earlier commit, and print the
before/after table as markdown (docs/measured-h200.md, "Re-judged with the cycle-aligned steadiness rule").

    PYTHONPATH=$PWD .venv/bin/python benchmarks/rejudge_steady.py [--before COMMIT]

"Before" is infersweep/results/validity.py and params/validity.yaml as they were at COMMIT (default: the
commit before the cycle-aligned rule), read with `git show`; both judge the same committed records and
result.json with the profile each run's table was judged with (a local GPU run is judged with `local-gpu`: real engines, judged as a cluster's are).
Only the per-point rules run (judge_point): saturation compares points across a run and is left out here.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MEASURED = REPO / "benchmarks" / "measured"
BEFORE = "d38ca3f"  # the halves-of-[first start, last start] rule


def _git_show(commit: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def _old_rules(commit: str, profile: str):
    """(module, thresholds) of the validity rules at `commit`."""
    tmp = Path(tempfile.mkdtemp(prefix="rejudge-"))
    src = tmp / "validity_before.py"
    src.write_text(_git_show(commit, "infersweep/results/validity.py"))
    spec = importlib.util.spec_from_file_location("validity_before", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yml = tmp / "validity.yaml"
    yml.write_text(_git_show(commit, "params/validity.yaml"))
    return mod, mod.load_thresholds(profile, path=yml)


def point_dirs() -> list[Path]:
    found = sorted(MEASURED.glob("*/*/points/c*")) + sorted(MEASURED.glob("*/*/treatments/*/points/c*"))
    return [d for d in found if (d / "result.json").exists()]


def rejudge(before: str = BEFORE, profile: str | None = "local-gpu") -> list[dict]:
    from infersweep.results.table import read_result
    from infersweep.results.validity import judge_point, load_thresholds, point_measures

    old, old_t = _old_rules(before, profile)
    new_t = load_thresholds(profile)
    rows = []
    for d in point_dirs():
        result = read_result(d)
        conc = result.get("concurrency") or int(d.name[1:])
        result = {**result, "concurrency": conc}
        stats = _summary_stats(d)
        run = d.parent.parent / "summary" / "run.json"
        ctx = json.loads(run.read_text()).get("context", {}) if run.exists() else {}
        m0 = old.point_measures(d, result, stats)
        m0["kv_cache_state"] = ctx.get("kv_cache_state")  # both rules see what the run recorded
        ok0, why0 = old.judge_point(m0, old_t)
        m = point_measures(d, result, stats)
        m["kv_cache_state"] = ctx.get("kv_cache_state")
        ok1, why1 = judge_point(m, new_t)
        rows.append(
            {
                "point": str(d.relative_to(MEASURED)).replace("/points/", " ").replace("/treatments/", " "),
                "before": ok0,
                "before_why": why0,
                "after": ok1,
                "after_why": why1,
                "m": m,
            }
        )
    return rows


def _summary_stats(d: Path) -> dict:
    from infersweep.results.table import SUMMARY_FILE, aiperf_statistics

    return aiperf_statistics(d / "aiperf" / SUMMARY_FILE)


def _verdict(ok: bool, why: list[str]) -> str:
    if ok:
        return "valid"
    return "invalid: " + "; ".join(w.split(" (")[0] for w in why)


def markdown(rows: list[dict], before: str = BEFORE, changed_only: bool = False) -> str:
    out = [
        f"| point | before ({before}) | after (this tree) | cycles x size | "
        "rate drift (trend p) | TTFT drift (trend p) | first cycle's TTFT weight |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        m = r["m"]
        if changed_only and _verdict(r["before"], r["before_why"]) == _verdict(r["after"], r["after_why"]):
            continue

        def pct(x):
            return f"{x:+.1%}" if x == x and abs(x) != float("inf") else str(x)

        def p(x):
            return f"p = {x:.2g}" if isinstance(x, float) and x == x else "p n/a"

        out.append(
            f"| {r['point']} | {_verdict(r['before'], r['before_why'])} | {_verdict(r['after'], r['after_why'])} "
            f"| {m['steady_cycles']} x {m['steady_cycle_size']} | {pct(m['steady_throughput_change'])} "
            f"({p(m.get('steady_throughput_trend_p'))}) | {pct(m['steady_ttft_change'])} "
            f"({p(m.get('steady_ttft_trend_p'))}) | {pct(m['steady_first_cycle_ttft_excess'])} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=BEFORE, help="the commit whose rules judge 'before'")
    ap.add_argument("--profile", default="local-gpu", help="params/validity.yaml profile (the H200 runs: local-gpu)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON instead of markdown")
    ap.add_argument("--changed", action="store_true", help="only the points whose verdict or reasons changed")
    args = ap.parse_args(argv)
    rows = rejudge(args.before, None if args.profile == "default" else args.profile)
    if args.json:
        print(json.dumps([{k: v for k, v in r.items() if k != "m"} for r in rows], indent=1))
    else:
        print(markdown(rows, args.before, args.changed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
