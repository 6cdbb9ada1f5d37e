"""The column dictionary of the results tables: every column's name, type, unit and meaning, in table order.

The metric names come from the registry infersweep.metrics (one canonical name per metric, `<metric>_<stat>_<unit>`);
this module adds the columns that are not metrics (keys, the point's status and validity, SLO verdict, run
context, GPU telemetry, predictions) and the raw table's columns. infersweep.results.table writes exactly
SUMMARY_COLUMNS (tests/results/test_results_columns.py holds it to that) and SCHEMA_VERSION changes whenever they
do: COLUMNS_FINGERPRINT is pinned beside the version, so a column change without a version bump fails.

`python -m infersweep.results.columns --write` writes docs/columns.md from this module; the test fails when
the file is stale.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

from infersweep.metrics import ALIASES, METRICS, SLO_KEYS, UNITS

# The results table's schema version (summary/results.parquet: the `schema_version` column and the parquet's
# key-value metadata). v3: canonical metric names with units, the raw AIPerf statistics moved to
# results_raw.parquet, UTC timestamps as timestamp types. v1/v2 tables still read (infersweep.results.legacy).
SCHEMA_VERSION = "infersweep.results/v7"
# sha256 of the summary table's names and types (columns_fingerprint()): a column added, removed, renamed or
# retyped changes it, and tests/results/test_results_columns.py then asks for a new SCHEMA_VERSION with this value.
COLUMNS_FINGERPRINT = "1dd9d299fb770c59e361c854122bf5017f82c3087a2bd59f5e10d2cd1ad14cd2"
RAW_SCHEMA_VERSION = "infersweep.results-raw/v1"


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str  # pandas dtype the table carries: string, Int64, float64, boolean, timestamp[UTC]
    unit: str  # "" when the column has no unit (a key, a label, text)
    group: str
    description: str


def _metric_columns() -> list[Column]:
    out = []
    for m in METRICS.values():
        source = f" (AIPerf {m.aiperf[0]} {m.aiperf[1]})" if m.aiperf else ""
        better = f"; {m.better} is better" if m.better else ""
        out.append(Column(m.name, "float64", m.unit, "metric", f"{m.description}{source}{better}"))
    return out


TS = "timestamp[UTC]"
KEY = [
    Column("run_id", "string", "", "key", "the run (Argo workflow name, or the local run's id)"),
    Column("recipe", "string", "", "key", "the recipe the run benchmarked"),
    Column("concurrency", "Int64", "", "key", "requests in flight AIPerf keeps (an open-loop point's cap)"),
    Column("repetition", "Int64", "", "key", "which repetition of the point (0, 1, ...)"),
    Column("request_rate", "float64", "req_s", "key", "an open-loop point's arrival rate; 0 for a closed loop"),
    Column("arrival", "string", "", "key", "an open-loop point's arrival pattern (poisson, constant); NA closed loop"),
]
POINT = [
    Column("status", "string", "", "point", "ok / partial / cancelled / failed (infersweep.aiperf)"),
    Column("reason", "string", "", "point", "why the point has that status"),
    Column("valid", "boolean", "", "validity", "the validity verdict (infersweep.results.validity); NA: not judged"),
    Column("validity_reasons", "string", "", "validity", "why the point is not valid ('' when it is)"),
    Column("validity_profile", "string", "", "validity", "which params/validity.yaml profile judged it"),
    Column("requests_ok", "Int64", "", "point", "successful requests of the profiling phase"),
    Column("requests_failed", "Int64", "", "point", "failed requests of the profiling phase"),
    Column(
        "stop_reason",
        "string",
        "",
        "point",
        "why the point measured no more: target met / budget spent (its round-mean 95 % interval against the "
        "target, infersweep.aiperf.adaptive) / extension failed (the pilot kept); NA: not recorded",
    ),
    Column(
        "requests_extended",
        "Int64",
        "",
        "point",
        "requests the point measured beyond its recipe count, as one longer window "
        "(workload.max_requests_per_concurrency); NA: no budget to extend",
    ),
    Column("warmup_requests", "Int64", "", "point", "warm-up requests sent before the window; NA: not recorded"),
    Column(
        "warmup_mode",
        "string",
        "",
        "point",
        "how the window followed the warm-up: seamless (on a running loop, AIPerf's seamless phase; throughputs over "
        "the requests' span: infersweep/aiperf/phase_overlap.py) / seamless-ramped (the same, after a warm-up whose "
        "users started one after another: workload.warmup_ramp_s) / drained (AIPerf's default: the window opens with "
        "`concurrency` requests sent together) / none; NA: not recorded",
    ),
    Column("duration_s", "float64", "s", "point", "AIPerf's benchmark duration"),
    Column("point_start", TS, "", "point", "when AIPerf started the point (UTC)"),
    Column("point_end", TS, "", "point", "when AIPerf ended the point (UTC)"),
    Column("aiperf_version", "string", "", "point", "the AIPerf version that measured the point"),
]
VERDICT = [
    Column("goodput_source", "string", "", "slo", "where goodput came from: records / point / no-slo / no measurement"),
    Column("slo_pass", "boolean", "", "slo", "the point meets every SLO bound; NA: no SLO, no data, or not valid"),
    Column("slo_detail", "string", "", "slo", "which bound decided slo_pass"),
]
VALIDITY_MEASURES = [
    Column("delivered_concurrency", "float64", "", "validity", "requests in flight AIPerf really kept, mean"),
    Column(
        "steady_throughput_change",
        "float64",
        "ratio",
        "validity",
        "output throughput change along the line through the window's whole cycles, first to last",
    ),
    Column(
        "steady_ttft_change",
        "float64",
        "ratio",
        "validity",
        "TTFT p50 change along the line through the window's whole cycles, first to last",
    ),
    Column(
        "steady_throughput_trend_p",
        "float64",
        "",
        "validity",
        "two-sided p-value of that throughput line's slope against the cycles' scatter (a drift counts below "
        "steady_state.trend_alpha); NA: not recorded",
    ),
    Column(
        "steady_ttft_trend_p",
        "float64",
        "",
        "validity",
        "two-sided p-value of that TTFT line's slope against the cycles' scatter; NA: not recorded",
    ),
    Column("send_delay_p99_ms", "float64", "ms", "validity", "AIPerf's delay from issuing to sending a request, p99"),
    Column("aiperf_high_cpu_warnings", "Int64", "", "validity", "AIPerf's high-CPU warnings in its log"),
    Column(
        "prompt_cache_read_pct",
        "float64",
        "pct",
        "validity",
        "prompt tokens served from the engine's prefix cache, percent (AIPerf overall_usage_prompt_cache_read_pct; "
        "where no response carried cached_tokens, the Dynamo frontend's dynamo_frontend_cached_tokens over "
        "dynamo_frontend_input_sequence_tokens in AIPerf's server_metrics_export.json; NA when neither exists)",
    ),
    Column("seed", "Int64", "", "validity", "AIPerf --random-seed of the point"),
    Column("seed_policy", "string", "", "validity", "how the seed was chosen"),
    Column(
        "cache_state", "string", "", "validity", "prefix-cache state at point start: fresh-prompts / reused-prompts"
    ),
    Column("osl_requested", "float64", "tok", "validity", "output tokens the workload asked for"),
    Column("osl_delivered", "float64", "tok", "validity", "output tokens the server returned, mean"),
]
# The server's own figures over the point's window, beside the client's (infersweep.results.server_figures):
# window means from the engine's (or the Dynamo frontend's) cumulative histograms.
SERVER = [
    Column(
        "server_ttft_avg_ms",
        "float64",
        "ms",
        "server",
        "mean time to first token the server measured (beside ttft_avg_ms)",
    ),
    Column(
        "server_itl_avg_ms",
        "float64",
        "ms",
        "server",
        "mean inter-token latency the server measured (beside itl_avg_ms)",
    ),
    Column(
        "server_output_tokens",
        "Int64",
        "tok",
        "server",
        "output tokens the server counted in the point's window: the Dynamo frontend's streamed count where it was "
        "scraped (an engine's own counter may count a request only when it finishes), else the source's",
    ),
    Column(
        "server_figures_source",
        "string",
        "",
        "server",
        "whose histograms: engine (vllm:/sglang:), frontend (dynamo_frontend_ via Prometheus, else via AIPerf's export), and the first tokens counted",
    ),
]
CONTEXT = [
    Column("recipe_hash", "string", "", "context", "sha256 of the resolved recipe (infersweep.recipe_context)"),
    Column("engine", "string", "", "context", "vllm / sglang / trtllm"),
    Column("engine_image", "string", "", "context", "the engine image rendered"),
    Column("model", "string", "", "context", "Hugging Face model id"),
    Column("model_revision", "string", "", "context", "model revision asked for"),
    Column("model_commit", "string", "", "context", "model commit served"),
    Column("topology", "string", "", "context", "roles, replicas and TP, e.g. 2xworker(tp=1)"),
    Column("router", "string", "", "context", "Dynamo router mode"),
    Column("gpu_type", "string", "", "context", "GPU type of the recipe"),
    Column("gpu_count", "Int64", "", "context", "GPUs of the deployment (the per-GPU divisor)"),
    Column("aiperf_image", "string", "", "context", "the AIPerf image rendered"),
    Column("step_image", "string", "", "context", "the steps image rendered"),
    Column("run_start", TS, "", "context", "first point start (UTC)"),
    Column("run_end", TS, "", "context", "last point end (UTC)"),
    Column("workload", "string", "", "context", "the workload, JSON"),
    Column("slo", "string", "", "context", "the SLO bounds, JSON, canonical metric names"),
    Column("context_source", "string", "", "context", "where the context came from"),
    Column("source", "string", "", "context", "measured / simulated (...) / imported"),
    Column("images_ran", "string", "", "context", "image -> digest the pods ran, JSON"),
    Column("prediction", "string", "", "prediction", "where the predicted columns come from"),
    Column("experiment", "string", "", "context", "the experiment of a treatment's run"),
    Column("treatment", "string", "", "context", "the treatment of an experiment run"),
    Column("restart_class", "string", "", "context", "what the treatment restarts"),
    Column("levels", "string", "", "context", "the treatment's factor levels, JSON"),
    Column("kv_cache_state", "string", "", "context", "KV-cache state the treatment started from"),
    Column("order_pass", "Int64", "", "context", "the treatment's pass in a balanced order"),
    Column("base_treatment", "string", "", "context", "the treatment a repeat belongs to"),
    Column("time_to_ready_s", "float64", "s", "context", "DGD creation to serving (wait-ready)"),
]
TELEMETRY = [
    Column("gpu_power_w", "float64", "w", "telemetry", "mean power per GPU over the point, watts"),
    Column("gpu_power_total_w", "float64", "w", "telemetry", "summed power of the deployment's GPUs, watts"),
    Column("gpu_utilization_pct", "float64", "pct", "telemetry", "SM utilization, percent"),
    Column("gpu_memory_util_pct", "float64", "pct", "telemetry", "memory bandwidth utilization, percent"),
    Column("gpu_memory_used_mib", "float64", "mib", "telemetry", "GPU memory used, MiB, max"),
    Column("gpu_energy_j", "float64", "j", "telemetry", "energy drawn over the point, joules"),
    Column("energy_j_per_output_token", "float64", "J per output token", "telemetry", "joules per output token"),
    Column("telemetry_samples", "float64", "", "telemetry", "NVML samples inside the point's window"),
]
PREDICTION = [
    Column("predicted_ttft_avg_ms", "float64", "ms", "prediction", "predicted TTFT (beside ttft_avg_ms)"),
    Column("predicted_itl_avg_ms", "float64", "ms", "prediction", "predicted ITL (beside itl_avg_ms)"),
    Column(
        "predicted_output_throughput_tok_s",
        "float64",
        "tok_s",
        "prediction",
        "predicted output throughput (beside output_throughput_tok_s)",
    ),
    Column("itl_floor_ms", "float64", "ms", "prediction", "the physics floor of ITL (memory bandwidth)"),
    Column("implausible", "boolean", "", "prediction", "ITL below the physics floor"),
    Column("implausible_reason", "string", "", "prediction", "why (or why not judged)"),
]
TAIL = [Column("schema_version", "string", "", "key", f"the table's schema version ({SCHEMA_VERSION})")]

SUMMARY: list[Column] = (
    KEY + POINT + _metric_columns() + VERDICT + VALIDITY_MEASURES + SERVER + CONTEXT + TELEMETRY + PREDICTION + TAIL
)
SUMMARY_COLUMNS = [c.name for c in SUMMARY]
BY_NAME = {c.name: c for c in SUMMARY}
# Optional columns: present only when their source ran (GPU telemetry in local GPU mode, predictions).
OPTIONAL = {c.name for c in TELEMETRY + PREDICTION} | {"prediction"}

# The raw table: every statistic AIPerf reported, one row per (point, metric, stat); keyed to the summary by
# RAW_KEY (= the summary's key without recipe and arrival).
RAW_KEY = ["run_id", "concurrency", "repetition", "request_rate"]
RAW: list[Column] = [c for c in KEY if c.name in RAW_KEY] + [
    Column("metric", "string", "", "raw", "AIPerf's metric name (e.g. time_to_first_token)"),
    Column("stat", "string", "", "raw", "AIPerf's statistic (avg, p50, p99, ...)"),
    Column("value", "float64", "", "raw", "the value, in `unit`"),
    Column("unit", "string", "", "raw", "AIPerf's unit of the metric (ms, tokens/sec, ...)"),
    Column("column", "string", "", "raw", "the summary column holding the same number, when there is one"),
    Column("schema_version", "string", "", "key", f"the raw table's schema version ({RAW_SCHEMA_VERSION})"),
]
RAW_COLUMNS = [c.name for c in RAW]


def columns_fingerprint() -> str:
    """sha256 of the summary table's column names and types, in order."""
    text = (
        "\n".join(f"{c.name}:{c.dtype}" for c in SUMMARY) + "\n--raw\n" + "\n".join(f"{c.name}:{c.dtype}" for c in RAW)
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _table(cols: list[Column]) -> str:
    rows = ["| column | type | unit | group | meaning |", "|---|---|---|---|---|"]
    for c in cols:
        unit = f"{c.unit} ({UNITS[c.unit]})" if c.unit in UNITS else c.unit
        rows.append(f"| `{c.name}` | {c.dtype} | {unit} | {c.group} | {c.description.replace('|', '/')} |")
    return "\n".join(rows)


def markdown() -> str:
    """docs/columns.md: the column dictionary, generated from this module."""
    aliases = ["| old name | canonical name |", "|---|---|"] + [
        f"| `{o}` | `{n}` |" for o, n in sorted(ALIASES.items())
    ]
    units = ["| suffix | unit |", "|---|---|"] + [f"| `_{k}` | {v} |" for k, v in UNITS.items()]
    return f"""# Results columns

<!-- Generated by `python -m infersweep.results.columns --write` from infersweep/results/columns.py and
infersweep/metrics.py; tests/results/test_results_columns.py fails when this file is stale. Do not edit by hand. -->

A run's `summary/` holds two tables, readable with plain pandas (`pd.read_parquet`):

- `results.parquet`: one row per (run, concurrency point, request rate, repetition), {len(SUMMARY)} columns,
  schema `{SCHEMA_VERSION}` (the `schema_version` column and the parquet metadata key `infersweep.schema_version`).
- `results_raw.parquet`: every statistic AIPerf reported, long format (one row per point, metric and stat),
  schema `{RAW_SCHEMA_VERSION}`; join it to the summary on {", ".join(f"`{k}`" for k in RAW_KEY)}.

Beside them, `results_by_load.csv` reduces each load's repetitions (a run measures each point
`regression.repetitions` times, default 3, in interleaved rounds) to `n` (valid repetitions), `left_out`, and per
headline metric its mean, `<metric>_ci95` (half-width of the 95 % Student-t interval; empty when n < 2) and the
cell `results.md` shows (infersweep/results/repetitions.py).

Metric names follow `<metric>_<stat>_<unit>` (a distribution's statistic: `ttft_p50_ms`) or `<metric>_<unit>`
(one number per point: `output_throughput_tok_s`). The unit is always the last part. Timestamps are UTC
(`timestamp[us, tz=UTC]` in parquet). Missing values are NA (null in parquet), shown as `NA` in printed tables.

Recipes use the same names: `slo:` keys ({", ".join(f"`{k}`" for k in SLO_KEYS)};
a bound is a maximum for a lower-is-better metric and a minimum otherwise) and `regression.tolerances` keys.
An old spelling (below) is still accepted there with a deprecation warning naming the new one; an unknown
name is refused with the nearest names. Tables written before `{SCHEMA_VERSION}` read through
`infersweep.results.legacy.upgrade_table` (every reader uses it: `load_run_folder`, the run store), which renames their columns to these.

Reading them:

```python
import pandas as pd

from infersweep.results.run import load_run_folder

summary = pd.read_parquet("summary/results.parquet")
raw = pd.read_parquet("summary/results_raw.parquet")
# every AIPerf statistic of a point beside its summary row
wide = raw.pivot_table(
    index=[{", ".join(f'"{k}"' for k in RAW_KEY)}], columns=["metric", "stat"], values="value"
)
# a run folder of any schema version, under these names (the raw table from a v1/v2 table's columns too)
run = load_run_folder("runs/<run-id>")  # run.table, run.raw
```

Changing a column (name, type, added, removed) changes the schema fingerprint: tests/results/test_results_columns.py
then fails until `SCHEMA_VERSION` is bumped, the new fingerprint pinned, and infersweep.results.legacy taught
to read the version before.

## Unit suffixes

{chr(10).join(units)}

## results.parquet

{_table(SUMMARY)}

## results_raw.parquet

{_table(RAW)}

## Old names

{chr(10).join(aliases)}
"""


DOC = Path(__file__).resolve().parents[2] / "docs" / "columns.md"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--write"]:
        DOC.write_text(markdown(), encoding="utf-8")
        print(f"wrote {DOC}")
        return 0
    if argv == ["--check"]:
        ok = DOC.exists() and DOC.read_text(encoding="utf-8") == markdown()
        print(
            "docs/columns.md is up to date"
            if ok
            else "docs/columns.md is stale: run `python -m infersweep.results.columns --write`",
            file=sys.stdout if ok else sys.stderr,
        )
        return 0 if ok else 1
    print(markdown(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
