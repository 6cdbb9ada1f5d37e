"""Summarize raw GPU-run snapshots (`*-snapshot.tar.xz` in a measured folder) with the tool's own summarize step,
as the pipeline would have, and write the summaries beside them.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/summarize_snapshots.py [benchmarks/measured/h200-2026-12-03]

Each snapshot holds one local GPU run (`tier/<run-id>/`: volumes/workdir/run/points, rendered/workflow.yaml,
telemetry/). The run never reached its scrape and summarize steps, so this runs `python -m steps.summarize` on
the unpacked run with the arguments the rendered workflow gives that step (--gpu-count, --slo, --title = the
recipe, --run-id = the workflow's name, --context, --model-commit-file: the infersweep-summarize template) and the
environment local mode gives a GPU run's steps (INFERSWEEP_PLATFORM=local + INFERSWEEP_LOCAL_WORKERS=gpu: the
`local-gpu` validity profile; the NVML samples, the measured-on words and what ran, from telemetry/stack.json:
infersweep/local/gpu/run.py start_gpu_side, infersweep/local/dynamo/adapter.py step_env). Written to
<folder>/summary/<snapshot name>/: results.parquet, results.csv, results.md, results_by_load.csv, run.json (the
report, its plots and results_raw.parquet are left out to keep the folder small; this command remakes them under
a temporary folder).

Server figures: the run's Prometheus data were not kept, so the table's server_* columns are empty and the
client-vs-server check is not judged. AIPerf 0.13 scraped the Dynamo frontend's /metrics itself during each
point (aiperf/server_metrics_export.json, per phase); `frontend_figures.csv` sets the frontend's TTFT, ITL, output
tokens and cached prompt tokens over the profiling phase beside the client's, judged with the tool's own
agreement rule (infersweep.results.validity.server_agreement_reasons, params/validity.yaml server_agreement). That
file is this script's, not the summarize step's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

DEFAULT_FOLDER = REPO / "benchmarks" / "measured" / "h200-2026-12-03"
KEPT = ("results.parquet", "results.csv", "results.md", "results_by_load.csv", "run.json")
FRONTEND_FILE = "frontend_figures.csv"
RUN_DIR = Path("volumes") / "workdir" / "run"  # the run's /work volume inside a local run's folder


def snapshot_name(tarball: Path) -> str:
    return tarball.name.removesuffix(".tar.xz").removesuffix("-snapshot")


def unpack(tarball: Path, dest: Path) -> Path:
    """The run folder (tier/<run-id>) of a snapshot, unpacked under dest."""
    with tarfile.open(tarball) as tf:
        tf.extractall(dest, filter="data")
    runs = sorted(p.parent.parent.parent for p in dest.glob("*/*/volumes/workdir/run"))
    if len(runs) != 1:
        raise SystemExit(f"{tarball}: expected one run folder */<run-id>/volumes/workdir/run, found {len(runs)}")
    return runs[0]


def workflow_parameters(run: Path) -> dict[str, str]:
    wf = yaml.safe_load((run / "rendered" / "workflow.yaml").read_text())
    return {p["name"]: p.get("value") for p in wf["spec"]["arguments"]["parameters"]}


def step_command(run: Path) -> tuple[list[str], dict[str, str]]:
    """The summarize step's argv and environment for this run, as the rendered workflow and local mode give them."""
    from infersweep.platform.select import LOCAL_WORKERS_ENV, PLATFORM_ENV
    from infersweep.predict.source import ENGINE_RAN_ENV, MEASURED_ON_ENV
    from infersweep.results.gpu_telemetry import GPU_TELEMETRY_ENV

    params = workflow_parameters(run)
    stack = json.loads((run / "telemetry" / "stack.json").read_text())
    work = run / RUN_DIR
    argv = [
        sys.executable,
        "-m",
        "steps.summarize",
        "--run-dir",
        str(work),
        "--gpu-count",
        params["gpu-count"],
        "--slo",
        params["slo"],
        "--title",
        params["recipe"],
        "--run-id",
        run.name,
        "--context",
        params["context"],
        "--model-commit-file",
        str(work / "context" / "model-commit.txt"),
    ]
    env = {
        PLATFORM_ENV: "local",
        LOCAL_WORKERS_ENV: "gpu",
        GPU_TELEMETRY_ENV: str(run / "telemetry" / "gpu-samples.jsonl"),
        MEASURED_ON_ENV: stack["measured_on"],
        ENGINE_RAN_ENV: json.dumps(stack["engine_ran"]),
    }
    return argv, env


def _stat(metrics: dict, name: str, key: str) -> float | None:
    """A statistic of one metric in AIPerf's server-metrics export, summed over its label sets (None: absent)."""
    series = (metrics.get(name) or {}).get("series") or []
    vals = [s["stats"].get(key) for s in series if s.get("stats", {}).get(key) is not None]
    return float(sum(vals)) if vals else None


def frontend_figures(points_dir: Path) -> list[dict]:
    """Per point with a result.json: the client's TTFT / ITL / output tokens (AIPerf's summary) beside the Dynamo
    frontend's histograms over the profiling phase (AIPerf's own server_metrics_export.json), and the verdict of
    the tool's agreement rule on them."""
    from infersweep.aiperf.server_export import frontend_token_figures
    from infersweep.results.table import SUMMARY_FILE, aiperf_statistics, point_dirs, point_identity, read_result
    from infersweep.results.validity import load_thresholds, server_agreement_reasons

    t = load_thresholds("local-gpu")
    rows = []
    for d in point_dirs(points_dir):
        result = read_result(d)
        conc, rep = point_identity(d, result)
        stats = aiperf_statistics(d / "aiperf" / SUMMARY_FILE)
        export = json.loads((d / "aiperf" / "server_metrics_export.json").read_text())
        metrics = export["metrics"]  # the profiling phase (export["metrics_phase"])
        fig = frontend_token_figures(d / "aiperf") or {}
        m = {
            "client_ttft_avg_ms": stats.get("time_to_first_token__avg"),
            "client_itl_avg_ms": stats.get("inter_token_latency__avg"),
            "client_output_tokens": stats.get("total_output_tokens__avg"),
            "server_ttft_avg_ms": fig.get("ttft_avg_ms"),
            "server_itl_avg_ms": fig.get("itl_avg_ms"),
            "server_output_tokens": _stat(metrics, "dynamo_frontend_output_tokens", "total"),
            "server_figures_source": "Dynamo frontend via AIPerf's server_metrics_export.json",
        }
        # Behind a seamless window AIPerf's profiling phase opens before the first measured request
        # (infersweep/aiperf/phase_overlap.py), so the export's token total holds warm-up tails the client's
        # count has no span for: shown, not judged (infersweep.aiperf.server_export.frontend_token_figures).
        judged = m if not str(result.get("warmup_mode")).startswith("seamless") else {**m, "server_output_tokens": None}
        reasons = server_agreement_reasons(judged, t)
        rows.append(
            {
                "concurrency": conc,
                "repetition": rep,
                "metrics_phase": export.get("metrics_phase"),
                **{k: v for k, v in m.items() if k != "server_figures_source"},
                "frontend_first_tokens": fig.get("first_tokens"),
                "frontend_cached_tokens_requests": _stat(metrics, "dynamo_frontend_cached_tokens", "count"),
                # an empty histogram exports its count only
                "frontend_cached_tokens_sum": _stat(metrics, "dynamo_frontend_cached_tokens", "sum") or 0.0,
                "agree": not reasons,
                "disagreement": "; ".join(reasons),
            }
        )
    return rows


def summarize_snapshot(tarball: Path, out_root: Path, keep_all: Path | None = None) -> Path:
    """Summarize one snapshot into out_root/<name>/; keep_all: also copy the step's whole summary/ there."""
    import pandas as pd

    with tempfile.TemporaryDirectory(prefix="snapshot-") as tmp:
        run = unpack(tarball, Path(tmp))
        argv, env = step_command(run)
        subprocess.run(
            argv,
            cwd=REPO,
            env=os.environ | env | {"PYTHONPATH": str(REPO)},
            check=True,
            stdout=subprocess.DEVNULL,
        )
        summary = run / RUN_DIR / "summary"
        out = out_root / snapshot_name(tarball)
        out.mkdir(parents=True, exist_ok=True)
        for name in KEPT:
            shutil.copy2(summary / name, out / name)
        pd.DataFrame(frontend_figures(run / RUN_DIR / "points")).to_csv(out / FRONTEND_FILE, index=False)
        if keep_all:
            shutil.copytree(summary, keep_all / snapshot_name(tarball), dirs_exist_ok=True)
    return out


# ---------------------------------------------------------------- the docs' table, over every snapshot

DOC_METRICS = [
    ("ttft_avg_ms", "TTFT mean ms", 0),
    ("ttft_p99_ms", "TTFT p99 ms", 0),
    ("itl_avg_ms", "ITL mean ms", 2),
    ("output_throughput_tok_s", "output tok/s", 1),
    ("request_latency_avg_ms", "request latency mean ms", 0),
]


def load_table(folder: Path):
    """Every repetition of every summarized snapshot in `folder`, one table."""
    import pandas as pd

    frames = [pd.read_parquet(p) for p in sorted((folder / "summary").glob("*/results.parquet"))]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def docs_markdown(folder: Path) -> str:
    """Per load: mean ± 95 % Student-t half-width over its repetitions, n, and how many were valid
    (infersweep.results.repetitions.interval: the same interval the summarize step prints over valid repetitions)."""
    from infersweep.results.repetitions import interval

    df = load_table(folder)
    head = ["c", "repetitions (valid)"] + [label for _, label, _ in DOC_METRICS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for conc, g in df.groupby("concurrency"):
        valid = int(g["valid"].fillna(False).astype(bool).sum())
        cells = [str(int(conc)), f"{len(g)} ({valid})"]
        for col, _, digits in DOC_METRICS:
            iv = interval(g[col])
            cells.append(
                f"{iv.mean:.{digits}f} (n = 1, no interval)"
                if iv.n == 1
                else f"{iv.mean:.{digits}f} ± {iv.half:.{digits}f} (n = {iv.n})"
            )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", type=Path, default=DEFAULT_FOLDER, help="a measured folder with snapshots")
    ap.add_argument("--keep-all", type=Path, help="also keep each step's whole summary/ (report, plots) here")
    ap.add_argument("--markdown", action="store_true", help="only print the per-load table of the summaries there")
    a = ap.parse_args(argv)
    if not a.markdown:
        tarballs = sorted(a.folder.glob("*-snapshot.tar.xz"))
        if not tarballs:
            ap.error(f"{a.folder}: no *-snapshot.tar.xz")
        for tb in tarballs:
            print(
                f"{tb.name} -> {summarize_snapshot(tb, a.folder.resolve() / 'summary', a.keep_all).relative_to(REPO)}"
            )
    print(docs_markdown(a.folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
