"""Overhead ratio: a local run of a recipe at 4 concurrency points of ~20 s of measurement each.

Runs the recipe's rendered workflow with `run_local` (real Dynamo mocker, real AIPerf, real S3 server)
and reports total wall time, the time AIPerf spent measuring (each point's profiling phase, from
result.json's profiling_start_ns/profiling_end_ns) and their ratio (goal <= 1.25), then where the rest
went: before the workflow (toy model, render, S3 server start), each step, each point's fixed cost
(AIPerf start-up incl. tokenizer load, and wind-down), after the workflow.

It also counts the pods the rendered *cluster* workflow creates and prices each with the fixed costs
measured here (process start of each step, AIPerf start-up and wind-down per point).

    .venv/bin/python benchmarks/overhead.py [--recipe NAME] [--seconds 20] [--levels 1,2,4,8]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from _common import OUT, REPO, Figure, Timer, report, table

from infersweep.local.profile import load_local_profile
from infersweep.local.run import run_local
from infersweep.local.scale import scaled_lengths
from infersweep.recipe import load_recipe

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"
# Requests per second the local mocker deployment (2 workers, ISL 256 / OSL 64) sustains at each
# concurrency on this machine, measured with this script (points/c*/result.json). Request counts are
# sized from them so each point measures ~--seconds; they drift with the machine's load.
RATE_PER_S = {1: 2.3, 2: 5.0, 4: 9.3, 8: 17.4}


def points_for(levels: list[int], seconds: float) -> list[dict[str, int]]:
    rate = lambda c: (
        RATE_PER_S.get(c) or RATE_PER_S[max(k for k in RATE_PER_S if k <= c)] * c / max(k for k in RATE_PER_S if k <= c)
    )
    return [{"concurrency": c, "requests": max(8, round(rate(c) * seconds)), "warmup": min(4, c)} for c in levels]


_LOG_TS = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d{3}) ")


def _log_times(log: Path, day_of: float) -> dict[str, float]:
    """Epoch times of AIPerf's milestones, from its console log (HH:MM:SS.mmm local time)."""
    marks = {"first_line": None, "tokenizer_s": None, "configured": None}
    day = datetime.fromtimestamp(day_of).date()
    for line in log.read_text(errors="replace").splitlines() if log.exists() else []:
        mt = _LOG_TS.match(line)
        if not mt:
            continue
        h, m, s, ms = map(int, mt.groups())
        t = datetime(day.year, day.month, day.day, h, m, s, ms * 1000).timestamp()
        if marks["first_line"] is None:
            marks["first_line"] = t
        if "Tokenizer(s) configured in" in line:
            marks["tokenizer_s"] = float(re.search(r"configured in ([\d.]+) seconds", line).group(1))
        if "tokenizer cached" in line or "Prefetching" in line:
            marks.setdefault("prefetch_start", t)
        if "AIPerf System is CONFIGURED" in line:
            marks["configured"] = t
    return marks


def import_seconds(python: str, module: str) -> float:
    """Wall time of `python -c 'import module'`: the process start a step pays in every pod."""
    t0 = time.perf_counter()
    subprocess.run([python, "-c", f"import {module}"], cwd=REPO, check=True, capture_output=True)
    return time.perf_counter() - t0


def measure(recipe: str, levels: list[int], seconds: float) -> dict:
    r = load_recipe(recipe)
    isl, osl = scaled_lengths(r, load_local_profile())
    workload = r.recipe.workload.aiperf_workload() | {"isl": isl, "osl": osl}
    points = points_for(levels, seconds)
    overrides = {
        "points": json.dumps(points, separators=(",", ":")),
        "workload": json.dumps(workload, separators=(",", ":")),
    }
    nodes: list[dict] = []

    def on_event(kind, node):
        if kind == "end":
            nodes.append(
                {
                    "name": node.name,
                    "template": node.template,
                    "phase": node.phase,
                    "started": node.started,
                    "finished": node.finished,
                    "leaf": not node.children,
                }
            )

    t0 = time.time()
    res = run_local(recipe, out_root=OUT / "runs", overrides=overrides, on_event=on_event)
    t1 = time.time()
    pts = []
    for p in points:
        d = res.results_dir / "points" / f"c{p['concurrency']}"
        result = json.loads((d / "result.json").read_text())
        node = next(
            n for n in nodes if n["template"] == "aiperf-point" and f"concurrency={p['concurrency']}," in n["name"]
        )
        marks = _log_times(d / "aiperf.log", node["started"])
        start_s, end_s = result["profiling_start_ns"] / 1e9, result["profiling_end_ns"] / 1e9
        pts.append(
            {
                "concurrency": p["concurrency"],
                "requests": p["requests"],
                "status": result["status"],
                "wall_s": node["finished"] - node["started"],
                "measuring_s": end_s - start_s,
                "to_first_log_s": (marks["first_line"] or start_s) - node["started"],
                "tokenizer_s": marks["tokenizer_s"],
                "to_profiling_s": start_s - node["started"],
                "after_profiling_s": node["finished"] - end_s,
            }
        )
    return {
        "phase": res.phase,
        "message": res.message,
        "run_dir": str(res.run_dir),
        "wall_s": t1 - t0,
        "call_start": t0,
        "call_end": t1,
        "nodes": nodes,
        "points": pts,
    }


def breakdown(m: dict) -> list[tuple[str, float]]:
    """Where the wall time went, in order; sums to the wall time."""
    leaves = sorted((n for n in m["nodes"] if n["leaf"] and n["started"]), key=lambda n: n["started"])
    rows = [("before the workflow (toy model, render, S3 start)", leaves[0]["started"] - m["call_start"])]
    prev_end = leaves[0]["started"]
    for n in leaves:
        short = n["name"].split(".", 1)[1] if "." in n["name"] else n["name"]
        gap = n["started"] - prev_end
        if gap > 0.05:
            rows.append(("  (between steps: interpreter)", gap))
        if n["template"] == "aiperf-point":
            p = next(p for p in m["points"] if f"concurrency={p['concurrency']}," in n["name"])
            rows.append((f"point c={p['concurrency']}: measuring", p["measuring_s"]))
            rows.append(
                (
                    f"point c={p['concurrency']}: AIPerf start-up (python import {p['to_first_log_s']:.1f} s, "
                    f"tokenizer {p['tokenizer_s'] or 0:.1f} s, warmup)",
                    p["to_profiling_s"],
                )
            )
            rows.append(
                (f"point c={p['concurrency']}: AIPerf wind-down (server-metrics flush, export)", p["after_profiling_s"])
            )
        else:
            rows.append((short, n["finished"] - n["started"]))
        prev_end = n["finished"]
    rows.append(("after the workflow (listing, S3 stop)", m["call_end"] - prev_end))
    return rows


def cluster_model(recipe: str, m: dict) -> tuple[list[Figure], list[list[str]]]:
    """Pods of the rendered cluster workflow for this recipe, each priced with costs measured here."""
    from infersweep.cluster_settings import load_cluster_settings
    from workflows.render import render_recipe
    from workflows.steps_library import STEP_BY_NAME

    r = load_recipe(recipe)
    bundle = render_recipe(r, load_cluster_settings())
    args = {p["name"]: p.get("value") for p in bundle.workflow["spec"]["arguments"]["parameters"]}
    n_points = len(json.loads(args["points"]))
    pipeline = next(t for t in bundle.templates if t["metadata"]["labels"].get("infersweep.io/kind") == "pipeline")
    dags = {t["name"]: t for t in pipeline["spec"]["templates"]}
    steps_pods = [t["name"] for t in dags["pipeline"]["dag"]["tasks"] if "templateRef" in t]
    exit_pods = [t["name"] for t in dags["exit-handler"]["dag"]["tasks"]]
    imports = {
        s: import_seconds(str(REPO / ".venv/bin/python"), f"steps.{STEP_BY_NAME[s].module}")
        for s in sorted(set(steps_pods + exit_pods))
    }
    aiperf_up = sum(p["to_profiling_s"] for p in m["points"]) / len(m["points"])
    aiperf_down = sum(p["after_profiling_s"] for p in m["points"]) / len(m["points"])
    tok = [p["tokenizer_s"] for p in m["points"] if p["tokenizer_s"]]
    rows = [[s, "1", f"{imports[s]:.2f}"] for s in steps_pods] + [
        ["exit-handler teardown", "1", f"{imports['teardown']:.2f}"]
    ]
    rows.append(
        [
            f"aiperf-point (x{n_points}, one pod per point)",
            str(n_points),
            f"{aiperf_up:.1f} up + {aiperf_down:.1f} down",
        ]
    )
    pods = len(steps_pods) + len(exit_pods) + n_points
    # GPUs are held from deploy to teardown: what a point adds beyond its measurement is its pod start
    # (not measurable here: image cached on the node, typically 1-3 s) + AIPerf start-up + wind-down.
    figs = [
        Figure(
            "overhead",
            "cluster: pods per recipe workflow",
            pods,
            "pods",
            note=f"{len(steps_pods)} pipeline steps + {len(exit_pods)} exit teardown + {n_points} points",
        ),
        Figure(
            "overhead",
            "cluster: fixed GPU-held cost per point (AIPerf start-up + wind-down)",
            aiperf_up + aiperf_down,
            "s",
            note=f"+ pod start (image cached: ~1-3 s, not measured here); "
            f"tokenizer load {sum(tok) / len(tok) if tok else 0:.1f} s of it",
        ),
        Figure(
            "overhead",
            "cluster: GPU-held fixed cost of the recipe's sweep",
            n_points * (aiperf_up + aiperf_down),
            "s",
            note=f"{n_points} points x per-point cost",
        ),
    ]
    return figs, rows


def main(argv: list[str] | None = None) -> list[Figure]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recipe", default=RECIPE)
    ap.add_argument("--seconds", type=float, default=20.0, help="measurement per point")
    ap.add_argument("--levels", default="1,2,4,8", help="concurrency levels")
    a = ap.parse_args(argv)
    levels = [int(x) for x in a.levels.split(",")]
    with Timer():
        m = measure(a.recipe, levels, a.seconds)
    if m["phase"] != "Succeeded":
        print(f"run {m['phase']}: {m['message']} ({m['run_dir']})", file=sys.stderr)
    measuring = sum(p["measuring_s"] for p in m["points"])
    rows = breakdown(m)
    points_wall = sum(p["wall_s"] for p in m["points"])
    aiperf_fixed = points_wall - measuring
    ours = m["wall_s"] - points_wall
    print(f"\nwhere the wall time of {m['run_dir']} went:")
    print(table([[name, f"{s:.1f}", f"{100 * s / m['wall_s']:.0f}%"] for name, s in rows], ["part", "s", "share"]))
    held_from = min(n["started"] for n in m["nodes"] if n["name"].endswith(".deploy"))
    held_to = min(n["started"] for n in m["nodes"] if n["name"].endswith(".teardown"))
    figs = [
        Figure("overhead", "local: wall time", m["wall_s"], "s", note=f"{len(levels)} points, recipe {a.recipe}"),
        Figure(
            "overhead",
            "local: AIPerf measuring (profiling phases)",
            measuring,
            "s",
            note=", ".join(f"c{p['concurrency']}={p['measuring_s']:.1f}s" for p in m["points"]),
        ),
        Figure(
            "overhead",
            "local: wall / measuring",
            m["wall_s"] / measuring,
            "x",
            "<= 1.25",
            f"AIPerf's own fixed cost {aiperf_fixed:.0f} s ({aiperf_fixed / len(levels):.1f} s/point), the rest {ours:.0f} s",
        ),
        Figure(
            "overhead",
            "local: (measuring + everything outside AIPerf) / measuring",
            (measuring + ours) / measuring,
            "x",
            "<= 1.25",
            "the pipeline's own overhead: steps, interpreter, S3/Prometheus start, publish",
        ),
        Figure(
            "overhead",
            "local: deployment-held / measuring",
            (held_to - held_from) / measuring,
            "x",
            note="deploy start -> teardown start: what GPU time would be in a cluster",
        ),
    ]
    cfigs, crows = cluster_model(a.recipe, m)
    print("\ncluster pods of the rendered workflow and their measured fixed costs (process import / AIPerf):")
    print(table(crows, ["pod", "count", "fixed cost s"]))
    return report(
        "overhead",
        figs + cfigs,
        {"breakdown": rows, "points": m["points"], "run_dir": m["run_dir"], "nodes": m["nodes"]},
    )


if __name__ == "__main__":
    main()
