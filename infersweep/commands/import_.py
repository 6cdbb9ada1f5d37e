"""`infersweep import DIR --recipe R [--run-id ID] [--store S] [--gpu-type T --gpu-count N --engine-image I
--router M] [--model-mismatch-ok]`: AIPerf artifact folders (any AIPerf 0.10-0.13, as AIPerf wrote them: one
folder per concurrency, a 0.13 sweep or multi-run tree) into the results store as a run of recipe R
(infersweep.results.importer)."""

from __future__ import annotations

import argparse


def run(a: argparse.Namespace) -> int:
    from pathlib import Path

    from infersweep.results.cli_common import default_store
    from infersweep.results.import_aggregate import notes
    from infersweep.results.import_context import provenance_text
    from infersweep.results.importer import import_run

    stated = {"gpu_type": a.gpu_type, "gpu_count": a.gpu_count, "engine_image": a.engine_image, "router": a.router}
    out = import_run(  # ArtifactImportError: one line naming the folder and the fix (a UserError)
        Path(a.dir),
        a.recipe,
        a.store or default_store(),
        a.run_id,
        stated=stated,
        model_mismatch_ok=a.model_mismatch_ok,
    )
    import pandas as pd

    df = out["table"]
    print(out["layout"])
    print(
        f"imported {out['points']} point(s) of {out['recipe']} as run {out['run_id']} "
        f"(AIPerf {', '.join(out['aiperf_versions'])}; {out['valid_points']} valid) into {out['where']}"
    )
    workload = out["workload"]
    print(
        "workload (from AIPerf's input_config): "
        + (", ".join(f"{k}={v}" for k, v in workload.items()) if workload else "not recorded")
    )
    print(provenance_text(out["imported"]))
    for _, r in df.iterrows():
        valid = r["valid"]
        verdict = (
            "valid: NA (not judged)"
            if valid is None or valid is pd.NA
            else "valid"
            if bool(valid)
            else f"invalid: {r['validity_reasons']}"
        )
        print(f"  c{r['concurrency']} r{r['repetition']}: {r['status']}; {verdict}")
    rows = out["aggregate_rows"]
    if rows:
        print("AIPerf's own confidence intervals beside infersweep's (over the same runs; over the valid ones):")
        for r in rows:
            print(
                f"  c{r['concurrency']} {r['label']}: AIPerf {r['aiperf']}; infersweep {r['same_runs']}; "
                f"valid only {r['infersweep']}"
            )
        for n in notes(rows):
            print(f"note: {n}")
    print(f"compare it: infersweep compare {out['run_id']} <other run> --store {a.store or default_store()}")
    return 0


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number of GPUs, 1 or more")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    from infersweep.results.cli_common import add_store_arg

    p = sub.add_parser(
        "import",
        help="bring AIPerf artifact folders (per concurrency, a 0.13 sweep or multi-run tree) into the results store",
    )
    p.add_argument("dir", help="a folder holding AIPerf artifact folders (or one of them)")
    p.add_argument("--recipe", required=True, help="the recipe these runs measured (files the run under it)")
    p.add_argument("--run-id", default=None, help="the run's id (default: imported-<hash of the files>)")
    known = p.add_argument_group(
        "what the artifact does not say (default: unknown, or AIPerf's GPU telemetry where it has some)"
    )
    known.add_argument("--gpu-type", default=None, help="the GPU type the runs were measured on, e.g. H100")
    known.add_argument("--gpu-count", type=_positive, default=None, help="GPUs of the deployment (per-GPU divisor)")
    known.add_argument("--engine-image", default=None, help="the engine image that served")
    known.add_argument("--router", default=None, help="the Dynamo router mode it ran with (kv, round-robin, ...)")
    p.add_argument(
        "--model-mismatch-ok",
        action="store_true",
        help="import although AIPerf's model differs from the recipe's (recorded as AIPerf's model)",
    )
    add_store_arg(p)
    p.set_defaults(fn=run)
