"""Accuracy of `infersweep predict` (AIConfigurator 0.12.0) against the numbers the seeds measured.

Cases:
- the Nemotron-3.5-Lightning expected-performance table (seeds/004; each recipe's `baseline`): TTFT p50,
  output tok/s per GPU, tok/s per user at the published concurrency, Mooncake trace modelled at its
  averages (9300 / 339 tokens: the page names no trace, see the folder's _defaults.yaml);
- the H200 runs infersweep itself measured (benchmarks/measured/h200-*: vLLM 0.23 or SGLang 0.5.14 + ai-dynamo
  1.3.1, random weights): every valid point of `qwen3-32b-bf16-vllm-h200-tp1` and of its SGLang twin
  `qwen3-32b-bf16-sglang-h200-tp1`, TTFT and ITL means and output tok/s; TTFT
  both against the static (zero-queue) estimate and the closed loop's lockstep queue, and whether it lies in
  the band between them (infersweep.predict.queueing);
- the cluster report's TP=1 vs TP=2 paragraph (seeds/000; params/measured/cluster-report-tp1-vs-tp2.yaml):
  Qwen3.6-35B-A3B FP8 on SGLang, 4P+4D at TP=1 and TP=2 (plain TP; the workload is not stated: modelled
  at the report's sequence mix, weighted mean 6502 / 512 tokens).

Every case the database cannot model is listed with the reason. ratio = measured / predicted.

    .venv/bin/python benchmarks/predict_accuracy.py          # ~1-3 min the first time, seconds once cached
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from infersweep.cli_util import table  # noqa: E402
from infersweep.paths import params_dir  # noqa: E402
from infersweep.predict.curve import predict_recipe  # noqa: E402
from infersweep.recipe import all_recipe_paths, load_recipe, parse_recipe, recipe_data  # noqa: E402


def _ratio(measured, predicted) -> str:
    return f"{measured / predicted:.2f}" if measured and predicted else "-"


def _fmt(v) -> str:
    return "-" if v is None else f"{v:,.1f}" if v >= 100 else f"{v:.2f}"


def lightning_rows() -> list[tuple]:
    rows = []
    for p in all_recipe_paths():
        if "nemotron-3.5-lightning" not in str(p):
            continue
        r = load_recipe(p)
        b = r.recipe.baseline
        if b is None:
            continue
        pred = predict_recipe(r, [b.concurrency])
        case = f"{r.name} c{b.concurrency}"
        if pred.unsupported:
            rows.append((case, "-", "-", "-", "-", f"not modelled: {pred.unsupported}"))
            continue
        pt = pred.points[0]
        if pt.error:
            rows.append((case, "-", "-", "-", "-", f"estimate failed: {pt.error}"))
            continue
        note = "; ".join(pred.target.notes)
        for metric, measured, predicted in (
            ("TTFT p50 ms", b.ttft_p50_ms, pt.ttft_ms),
            ("output tok/s/GPU", b.output_throughput_tok_s_per_gpu, pt.tok_s_per_gpu),
            ("tok/s/user", b.output_throughput_p50_tok_s_per_user, pt.tok_s_per_user),
        ):
            rows.append((case, metric, _fmt(measured), _fmt(predicted), _ratio(measured, predicted), note))
            note = ""
    return rows


def tp_rows() -> list[tuple]:
    fig = yaml.safe_load((params_dir() / "measured" / "cluster-report-tp1-vs-tp2.yaml").read_text())
    base_path = next(p for p in all_recipe_paths() if p.stem == "qwen36-35b-a3b-fp8-sglang-disagg-dpep-offload")
    base = recipe_data(base_path)
    rows = []
    for tp in (1, 2):
        data = copy.deepcopy(base)
        data["name"] = f"qwen36-sglang-4p4d-tp{tp}"
        data["topology"] = {role: {"replicas": 4, "tp": tp} for role in ("prefill", "decode")}
        data["gpu"] = {**data["gpu"], "count": 8 * tp}
        data.pop("kv_offload", None)
        points = [p for p in fig["points"] if p["tp"] == tp]
        data["workload"] = {**data["workload"], "concurrency": sorted({p["concurrency"] for p in points})}
        r = parse_recipe(data, base_path)
        pred = predict_recipe(r)
        if pred.unsupported:
            rows.append((f"cluster report TP={tp}", "-", "-", "-", "-", f"not modelled: {pred.unsupported}"))
            continue
        by_c = {p.concurrency: p for p in pred.points}
        note = "; ".join(pred.target.notes) + "; zero-queue TTFT"
        for m in points:
            pt = by_c[m["concurrency"]]
            for key, metric, predicted in (
                ("itl_ms", "ITL ms", pt.itl_ms),
                ("ttft_ms", "TTFT ms", pt.ttft_ms),
                ("ttft_ms", "TTFT ms, lockstep queue", pt.ttft_lockstep_ms),
                ("output_tok_s", "output tok/s", pt.output_tok_s),
            ):
                if key in m:
                    rows.append(
                        (
                            f"cluster report 4P+4D TP={tp} c{m['concurrency']}",
                            metric,
                            _fmt(m[key]),
                            _fmt(predicted),
                            _ratio(m[key], predicted),
                            note,
                        )
                    )
                    note = ""
    return rows


def physics_rows() -> list[tuple]:
    """The TP paragraph's c1 ITLs judged as each candidate model's (infersweep.predict.physics)."""
    from infersweep.predict.physics import check_itl
    from infersweep.recipe.facts import Model
    from infersweep.recipe.resolve import gpu_types

    fig = yaml.safe_load((params_dir() / "measured" / "cluster-report-tp1-vs-tp2.yaml").read_text())
    h100 = gpu_types()["H100"]
    rows = []
    for name in ("qwen3-32b-fp8", "qwen3.6-35b-a3b-fp8"):
        m = Model.model_validate(yaml.safe_load((params_dir() / "models" / f"{name}.yaml").read_text()))
        for p in (p for p in fig["points"] if "itl_ms" in p):
            v = check_itl(m, h100, p["tp"], p["itl_ms"], gpu_name="H100")
            rows.append(
                (
                    f"TP={p['tp']} c{p['concurrency']} as {name}",
                    p["itl_ms"],
                    f"{v.floor_ms:.2f}",
                    "plausible" if v.plausible else "IMPLAUSIBLE",
                )
            )
    return rows


H200_RECIPES = ("qwen3-32b-bf16-vllm-h200-tp1", "qwen3-32b-bf16-sglang-h200-tp1")


def h200_rows() -> list[tuple]:
    """Every valid point of the H200 sweeps (the runs' own summaries) beside its recipe's prediction: per recipe,
    session folder and load, the mean over its valid repetitions (n). From 2026-12-03 on TTFT is the first token
    and no warm-up prompt is measured; the older sessions' TTFT is the first visible chunk (docs/measured-h200.md)."""
    import pandas as pd

    from infersweep.results.legacy import upgrade_table

    measured = Path(__file__).resolve().parent / "measured"
    tables = sorted({*measured.glob("h200-*/*/summary/results.parquet"), *measured.glob("h200-*/summary/results.parquet"),
                     *measured.glob("h200-*/summary/*/results.parquet"),
                     *measured.glob("h200-*/*/summary/*/results.parquet")})  # fmt: skip
    # Older sessions' tables are schema v2: read through the upgrade every reader uses.
    frames = []
    for f in tables:
        t = upgrade_table(pd.read_parquet(f), str(f))
        frames.append(t.assign(session=f.relative_to(measured).parts[0]))
    df = pd.concat([f for f in frames if f["recipe"].isin(H200_RECIPES).any()])
    df = df[df["recipe"].isin(H200_RECIPES) & (df["valid"] == True)]  # noqa: E712
    cols = ["ttft_avg_ms", "itl_avg_ms", "output_throughput_tok_s"]
    keys = ["recipe", "session", "concurrency"]
    agg = df.groupby(keys)[cols].mean().join(df.groupby(keys).size().rename("n"))
    rows = []
    for recipe in H200_RECIPES:
        mine = agg.loc[recipe] if recipe in agg.index.get_level_values(0) else None
        if mine is None:
            continue
        pred = predict_recipe(load_recipe(recipe), sorted({int(c) for c in mine.index.get_level_values("concurrency")}))
        by_c = {p.concurrency: p for p in pred.points}
        for (session, conc), m in mine.sort_index(level=1).iterrows():
            pt = by_c[int(conc)]
            band = pt.ttft_band()
            method = "first token" if session >= "h200-2026-12-03" else "first visible chunk (older method)"
            note = f"{session}, n = {int(m['n'])} valid, TTFT at the {method}; {'; '.join(pred.target.notes)}"
            for metric, value, predicted in (
                ("TTFT mean ms", m["ttft_avg_ms"], pt.ttft_ms),
                ("TTFT mean ms, lockstep queue", m["ttft_avg_ms"], pt.ttft_lockstep_ms),
                ("ITL mean ms", m["itl_avg_ms"], pt.itl_ms),
                ("output tok/s", m["output_throughput_tok_s"], pt.output_tok_s),
            ):
                if metric.endswith("lockstep queue") and band is not None:
                    v = float(value)
                    where = "inside" if band.contains(v) else "above" if v > band.high_ms else "below"
                    note = f"closed-loop band {band.text()} ms: measured {where}"
                rows.append((f"H200 {recipe} c{int(conc)}", metric, _fmt(value), _fmt(predicted),
                             _ratio(value, predicted), note))  # fmt: skip
                note = ""
    return rows


def main() -> int:
    rows = h200_rows() + tp_rows() + lightning_rows()
    print(table(["case", "metric", "measured", "predicted", "ratio", "note"], rows))
    modelled = [r for r in rows if r[4] != "-"]
    print(f"{len(modelled)} comparisons, {sum(1 for r in rows if r[5].startswith('not modelled'))} cases not modelled")
    print()
    print("physics check of the TP paragraph's ITL (floor = active weight bytes / (GPUs x HBM bandwidth)):")
    print(table(["figure", "ITL ms", "floor ms", "verdict"], physics_rows()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
