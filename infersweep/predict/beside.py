"""Measured rows carry their prediction and a physics verdict (added by steps/summarize.py).

Columns added to the results table:

- `predicted_ttft_avg_ms`, `predicted_itl_avg_ms`, `predicted_output_throughput_tok_s`: AIConfigurator's estimate for the
  row's recipe at the row's concurrency (infersweep.predict.curve), read from the estimate cache only
  (`infersweep predict RECIPE` fills it). Summarizing never starts AIConfigurator: it may be absent (a
  step image has no .venv-aic) and an estimate takes seconds. Empty when there is no cached estimate, the
  recipe is not modelled, or the run is a simulation; the run context's `prediction` says which.
- `implausible` (boolean), `implausible_reason`, `itl_floor_ms`: the physics check (infersweep.predict.physics)
  of each measured row's mean ITL against the recipe's hardware floor. True: faster than reading the
  weights allows, so the row did not come from the deployment it names. NA when not judged (the reason
  says why: no facts, speculative decoding, a simulated run, no recipe).

Where the table has the validity verdict (`valid`, `validity_reasons`: infersweep.results.validity, schema
v2), an implausible row is also made invalid with the physics reason appended.
Nothing here raises: a row without a prediction or verdict is still a result.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import pandas as pd

from infersweep.predict.source import is_simulated

# predicted column (infersweep.results.columns) -> the prediction's field (infersweep.predict.curve.Point)
PREDICTED_COLUMNS = {
    "predicted_ttft_avg_ms": "ttft_ms",
    "predicted_itl_avg_ms": "itl_ms",
    "predicted_output_throughput_tok_s": "output_tok_s",
}
# measured column -> predicted column, as the report sets them side by side (ratio = measured / predicted)
SIDE_BY_SIDE = [
    ("ttft_avg_ms", "predicted_ttft_avg_ms", "TTFT mean ms"),
    ("itl_avg_ms", "predicted_itl_avg_ms", "ITL mean ms"),
    ("output_throughput_tok_s", "predicted_output_throughput_tok_s", "output tok/s"),
]
MEASURED_STATUSES = ("ok", "partial")  # = results.table.OK_STATUSES (predict/ does not import results/)


def _resolve(ctx: dict[str, Any], lookup: Callable[[dict[str, Any]], Any] | None = None):
    """(the run's recipe from params/, None) or (None, why not). `lookup(ctx)` is tried first (steps/summarize
    passes the experiment-treatment lookup: predict/ cannot import experiment/ without a cycle). A recipe
    whose hash differs from the run's is not the one that ran."""
    from infersweep.recipe import RecipeError, find_recipe, load_recipe
    from infersweep.recipe_context import recipe_hash

    name = ctx.get("recipe")
    if not name:
        return None, "the run names no recipe"
    if lookup is not None:
        try:
            r = lookup(ctx)
        except (RecipeError, OSError, ValueError, StopIteration) as e:
            return None, f"recipe {name}: the lookup failed: {e or type(e).__name__}"[:300]
        if r is not None:
            return r, None
    try:
        if find_recipe(name) is None:
            return (
                None,
                f"recipe {name} is not in this checkout's params/ (an experiment treatment or a renamed recipe)",
            )
        r = load_recipe(name)
    except (RecipeError, OSError, ValueError) as e:
        return None, f"recipe {name} does not load: {e}"[:300]
    if ctx.get("recipe_hash") and ctx["recipe_hash"] != recipe_hash(r):
        return None, f"recipe {name} in params/ has changed since the run (recipe_hash differs)"
    return r, None


def _predicted(r, concurrencies: list[int]) -> tuple[dict[int, Any], str]:
    """{concurrency: PredictedPoint} from the cache, and the note for the run context."""
    from pathlib import Path

    from infersweep.predict import aic
    from infersweep.predict.curve import predict_recipe

    found: dict[int, Any] = {}
    database = None
    for c in concurrencies:
        try:
            pred = predict_recipe(r, [c], cache_only=True)
        except aic.NotCached:
            continue
        except aic.AicError as e:
            return {}, f"not added: {e}"
        if pred.unsupported:
            return {}, f"not added: {r.name} is not modelled: {pred.unsupported}"
        p = pred.points[0]
        if p.error is None:
            found[c] = p
            database = pred.target.database
    missing = [c for c in concurrencies if c not in found]
    if not found:
        env = "" if Path(aic.aic_python()).exists() else " (and no AIConfigurator environment here)"
        return {}, (
            f"not added: no cached prediction for {r.name} at c{', c'.join(map(str, concurrencies))}{env}; "
            f"`infersweep predict {r.name}` before the run stores one"
        )
    note = f"{database}, cached estimates"
    if missing:
        note += f"; none cached at c{', c'.join(map(str, missing))}"
    return found, note


def annotate(
    df: pd.DataFrame, ctx: dict[str, Any], lookup: Callable[[dict[str, Any]], Any] | None = None
) -> tuple[pd.DataFrame, str]:
    """The table with the prediction and physics columns, and the run context's `prediction` note.
    `lookup(ctx)`: the run's ResolvedRecipe when the catalog does not have it (None: ask the catalog)."""
    df = df.copy()
    for col in PREDICTED_COLUMNS:
        df[col] = pd.Series([math.nan] * len(df), index=df.index, dtype="float64")
    df["itl_floor_ms"] = pd.Series([math.nan] * len(df), index=df.index, dtype="float64")
    df["implausible"] = pd.Series([pd.NA] * len(df), index=df.index, dtype="boolean")
    df["implausible_reason"] = pd.Series([""] * len(df), index=df.index, dtype="object")
    if df.empty:
        return df, "not added: no points"
    if is_simulated(ctx.get("source")):
        why = f"not added: a simulated run ({ctx.get('source')}) on local mode's workload, not the recipe's"
        df["implausible_reason"] = "not judged: a simulated run is not a measurement of the hardware"
        return df, why
    r, why = _resolve(ctx, lookup)
    if r is None:
        df["implausible_reason"] = f"not judged: {why}"
        return df, f"not added: {why}"
    _judge(df, r)
    concurrencies = sorted({int(c) for c in df["concurrency"].dropna()})
    points, note = _predicted(r, concurrencies)
    for i, row in df.iterrows():
        p = points.get(int(row["concurrency"])) if pd.notna(row["concurrency"]) else None
        if p is not None:
            for col, attr in PREDICTED_COLUMNS.items():
                v = getattr(p, attr)
                df.at[i, col] = math.nan if v is None else float(v)
    return df, note


def _judge(df: pd.DataFrame, r) -> None:
    from infersweep.predict.physics import check_recipe_itl

    for i, row in df.iterrows():
        itl = row.get("itl_avg_ms")
        if row.get("status") not in MEASURED_STATUSES or itl is None or not math.isfinite(float(itl)):
            df.at[i, "implausible_reason"] = "not judged: no measured ITL"
            continue
        v = check_recipe_itl(r, float(itl))
        if v.floor_ms is not None:
            df.at[i, "itl_floor_ms"] = round(v.floor_ms, 3)
        if v.plausible is None:
            df.at[i, "implausible_reason"] = v.message
        else:
            df.at[i, "implausible"] = not v.plausible
            df.at[i, "implausible_reason"] = "" if v.plausible else v.message
            if not v.plausible and "valid" in df.columns and "validity_reasons" in df.columns:
                # The validity verdict (infersweep.results.validity, results schema v2) gets the reason too:
                # compare and regress leave invalid points out, and an impossible number must not be compared.
                df.at[i, "valid"] = False
                prior = df.at[i, "validity_reasons"]
                prior = "" if prior is None or (isinstance(prior, float) and math.isnan(prior)) else str(prior)
                df.at[i, "validity_reasons"] = "; ".join(x for x in (prior, v.message) if x)


def side_by_side(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of measured vs predicted per measured row with a prediction: measured, predicted and
    measured / predicted for TTFT, ITL and output tok/s, then the physics verdict."""
    head = ["concurrency", "rep"]
    for _, _, label in SIDE_BY_SIDE:
        head += [f"{label} measured", "predicted", "ratio"]
    head.append("physics")
    rows = []
    if "predicted_itl_avg_ms" not in df.columns:
        return head, rows
    for _, r in df.iterrows():
        if r.get("status") not in MEASURED_STATUSES or all(pd.isna(r.get(p)) for _, p, _ in SIDE_BY_SIDE):
            continue
        cells = [str(r["concurrency"]), str(r.get("repetition", ""))]
        for m, p, _ in SIDE_BY_SIDE:
            mv, pv = r.get(m), r.get(p)
            ok_m, ok_p = mv is not None and pd.notna(mv), pv is not None and pd.notna(pv)
            cells += [
                f"{mv:.4g}" if ok_m else "–",
                f"{pv:.4g}" if ok_p else "–",
                f"{mv / pv:.2f}" if ok_m and ok_p and pv else "–",
            ]
        flag = r.get("implausible")
        cells.append(
            "IMPLAUSIBLE"
            if flag is True or (pd.notna(flag) and bool(flag))
            else ("plausible" if pd.notna(flag) else "not judged")
        )
        rows.append(cells)
    return head, rows


def implausible_rows(df: pd.DataFrame) -> list[tuple[Any, str]]:
    """(concurrency, reason) of every row the physics check flagged."""
    if "implausible" not in df.columns:
        return []
    flagged = df[df["implausible"].fillna(False).astype(bool)]
    return [(r["concurrency"], r["implausible_reason"]) for _, r in flagged.iterrows()]
