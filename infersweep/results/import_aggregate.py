"""AIPerf's own confidence intervals of a multi-run tree, set beside infersweep's.

`aiperf profile --num-profile-runs N` (N > 1) writes, per variation, `profile_export_aiperf_aggregate.json`:
metadata (`aggregation_type: confidence`, `confidence_level`, `num_profile_runs`, `num_successful_runs`,
`failed_runs`, `variation_values`) and per metric `<metric>_<stat>` its mean, std, se, `ci_low`/`ci_high` and
`t_critical` over the runs (aiperf 0.13.0 aiperf/orchestrator/aggregation/confidence.py; written by
aiperf/cli_runner/_aggregate.py aggregate_and_export). The importer keeps the headline metrics of it in the
run context (`imported.aiperf_aggregate`); reports show them beside infersweep's Student-t interval over
the same repetitions (infersweep.results.repetitions, valid repetitions only) and say where the two
disagree beyond rounding: another confidence level, runs infersweep left out as invalid, or runs AIPerf
counted that were not imported.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from infersweep.metrics import ALIASES
from infersweep.results.repetitions import LEVEL, METRICS, interval

# Two intervals agree when their means and half-widths match to this relative precision: the per-run values
# are the same numbers (AIPerf's summary of each run is the table's row), so only rounding may differ.
ROUNDING = 0.005


def read_aggregate(path: Path) -> dict[str, Any]:
    """The headline metrics (infersweep's names, repetitions.METRICS) of one AIPerf aggregate JSON."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    meta = data.get("metadata") or {}
    metrics = data.get("metrics") or {}
    wanted = {name for name, _ in METRICS}
    out: dict[str, Any] = {}
    for key, stats in metrics.items():
        metric, _, stat = key.rpartition("_")
        canonical = ALIASES.get(f"{metric}__{stat}")
        if canonical in wanted and isinstance(stats, dict) and stats.get("mean") is not None:
            out[canonical] = {k: stats.get(k) for k in ("mean", "std", "ci_low", "ci_high")}
    return {
        "file": str(path),
        "confidence_level": meta.get("confidence_level"),
        "runs": meta.get("num_profile_runs"),
        "successful_runs": meta.get("num_successful_runs"),
        "failed_runs": meta.get("failed_runs") or [],
        "variation": meta.get("variation_values") or {},
        "metrics": out,
    }


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=ROUNDING, abs_tol=1e-9)


def _text(mean: float, half: float, digits: int) -> str:
    return f"{mean:.{digits}f} ± {half:.{digits}f}" if math.isfinite(half) else f"{mean:.{digits}f}"


def side_by_side(table: pd.DataFrame, aggregates: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (concurrency, metric): AIPerf's interval; infersweep's own (its valid repetitions, as the
    report's per-load table) and infersweep's over the same measured runs AIPerf aggregated; `agree` whether
    AIPerf's and infersweep's over the same runs match to rounding, `note` why not or why the own one differs."""
    rows = []
    for conc_text, agg in sorted(aggregates.items(), key=lambda kv: int(kv[0])):
        conc = int(conc_text)
        group = table[table["concurrency"] == conc] if "concurrency" in table.columns else table.iloc[0:0]
        measured = group[group["status"].isin(["ok", "partial"])] if "status" in group.columns else group
        valid = group[group["valid"].fillna(False).astype(bool)] if "valid" in group.columns else group.iloc[0:0]
        level = agg.get("confidence_level")
        n_aiperf = agg.get("successful_runs") or agg.get("runs") or 0
        for col, label in METRICS:
            stats = agg["metrics"].get(col)
            if not stats or col not in group.columns:
                continue
            mean, low, high = (
                float(stats[k]) if stats.get(k) is not None else math.nan for k in ("mean", "ci_low", "ci_high")
            )
            half = (high - low) / 2 if math.isfinite(low) and math.isfinite(high) else math.nan
            own = interval(pd.to_numeric(valid[col], errors="coerce"))
            same = interval(pd.to_numeric(measured[col], errors="coerce"))
            digits = 2 if abs(mean) < 100 else 1
            why = []
            if level is not None and not _close(float(level), LEVEL):
                why.append(f"AIPerf's level is {float(level):.0%}, infersweep's {LEVEL:.0%}")
            if same.n != n_aiperf:
                why.append(f"AIPerf aggregated {n_aiperf} run(s), {same.n} were imported measured")
            agree = same.n >= 1 and _close(same.mean, mean) and (same.n < 2 or _close(same.half, half))
            note = "" if agree else ("; ".join(why) or "the intervals differ beyond rounding over the same runs")
            if own.n < same.n:
                left = f"infersweep's own interval counts {own.n} of the {same.n} runs (the rest judged invalid)"
                note = f"{note}; {left}" if note else left
            rows.append(
                {
                    "concurrency": conc,
                    "metric": col,
                    "label": label,
                    "aiperf": _text(mean, half, digits) + f" ({float(level or 0):.0%}, n={n_aiperf})",
                    "same_runs": same.text(digits),
                    "infersweep": own.text(digits),
                    "agree": agree,
                    "note": note,
                }
            )
    return rows


def notes(rows: list[dict[str, Any]]) -> list[str]:
    """One line per concurrency: where AIPerf's and infersweep's intervals disagree beyond rounding (and why),
    and where infersweep's own interval leaves runs out."""
    out = []
    for conc in sorted({r["concurrency"] for r in rows}):
        rs = [r for r in rows if r["concurrency"] == conc]
        off = [r for r in rs if not r["agree"]]
        if off:
            out.append(
                f"c{conc}: AIPerf's and infersweep's intervals over the same runs disagree beyond rounding on "
                f"{', '.join(r['label'] for r in off)} ({off[0]['note']})"
            )
        elif any(r["note"] for r in rs):
            out.append(f"c{conc}: AIPerf's intervals match infersweep's over the same runs; {rs[0]['note']}")
    return out


HEAD = (
    "AIPerf's own confidence intervals (its aggregate over --num-profile-runs) beside infersweep's: mean ± "
    "half-width of the 95 % Student-t interval over the same runs, and over the valid repetitions only (the "
    "per-load table's)"
)
COLUMNS = ("concurrency", "metric", "AIPerf", "infersweep, same runs", "infersweep, valid only", "agree")


def _cells(r: dict[str, Any]) -> list[str]:
    return [
        str(r["concurrency"]),
        r["label"],
        r["aiperf"],
        r["same_runs"],
        r["infersweep"],
        "yes" if r["agree"] else "no",
    ]


def markdown(table: pd.DataFrame, aggregates: dict[str, dict[str, Any]] | None) -> str:
    rows = side_by_side(table, aggregates or {})
    if not rows:
        return ""
    lines = [HEAD + ".", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    return "\n".join(lines + [""] + [f"- {n}" for n in notes(rows)]) + "\n"


def html_section(table: pd.DataFrame, aggregates: dict[str, dict[str, Any]] | None) -> str:
    rows = side_by_side(table, aggregates or {})
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in _cells(r)) + "</tr>" for r in rows)
    extra = "".join(f"<p>{html.escape(n)}</p>" for n in notes(rows))
    return f'<p class="muted">{html.escape(HEAD)}.</p><table><tr>{head}</tr>{body}</table>{extra}'
