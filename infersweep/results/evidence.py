"""One rule for what counts as evidence: every "best" and every verdict (report, compare, summarize, regress,
experiment report, slo-search) is made with it.

1. Only valid points count (infersweep.results.validity): a row whose verdict is invalid is left out and
   listed; a row of a table written before the verdict existed (no `valid`, or an empty one) is kept, its
   validity unknown, not bad.
2. `slo_pass` is never True for an invalid point: it is NA (not judged), and `slo_detail` says why
   (`judge_slo`, applied when the table is built and again whenever a table is read, `enforce`).
3. "Best" is the valid point meeting every SLO with the most tok/s per GPU (`best_point`).
4. A claim judged on invalid points only is inconclusive, never supported or refuted (`why_not_counted`
   names the points and their reasons).
5. A run given as an experiment treatment must carry the treatment's recipe hash (`check_recipe_hash`).

    kept, left_out = counted(df)               # the rows that count, one line per row left out
    top = best_point(df)                       # a per-point row (medians over repetitions), or None
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from infersweep.errors import UserError

MEASURED_STATUSES = ("ok", "partial")  # = infersweep.results.table.OK_STATUSES (not imported: table imports this)


def is_invalid(value: Any) -> bool:
    """A `valid` cell that says invalid (False); None / NA = unknown, which is not invalid."""
    return (
        value is not None
        and value is not pd.NA
        and not (isinstance(value, float) and math.isnan(value))
        and not bool(value)
    )


def judge_slo(passed: bool | None, detail: str, valid: Any, reasons: str = "") -> tuple[bool | None, str]:
    """The SLO verdict a table carries: an invalid point's is None (not judged), whatever its numbers."""
    if not is_invalid(valid):
        return passed, detail
    return None, f"not judged: invalid point ({reasons or 'invalid'}); its numbers: {detail}"


def enforce(df: pd.DataFrame) -> pd.DataFrame:
    """slo_pass NA on every invalid row (tables written before this rule may say True there)."""
    if df.empty or "valid" not in df.columns or "slo_pass" not in df.columns:
        return df
    bad = df["valid"].astype("object").map(is_invalid).astype(bool)
    if not (bad & df["slo_pass"].notna()).any():
        return df
    df = df.copy()
    df["slo_pass"] = df["slo_pass"].astype("boolean")
    if "slo_detail" in df.columns:
        reasons = df["validity_reasons"] if "validity_reasons" in df.columns else pd.Series("", index=df.index)
        judged = bad & df["slo_pass"].notna()
        df.loc[judged, "slo_detail"] = [
            judge_slo(None, str(d), False, str(r or ""))[1]
            for d, r in zip(df.loc[judged, "slo_detail"], reasons[judged], strict=True)
        ]
    df.loc[bad, "slo_pass"] = pd.NA
    return df


def counted(df: pd.DataFrame, include_invalid: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """(the rows that count, one line per measured row left out as invalid). `include_invalid` keeps them
    (compare/regress --include-invalid); failed points are not measurements and are left to the callers."""
    if include_invalid or "valid" not in df.columns or df.empty:
        return df, []
    measured = df["status"].isin(MEASURED_STATUSES) if "status" in df.columns else True
    bad = measured & df["valid"].astype("object").map(is_invalid).astype(bool)
    left = []
    for _, r in df[bad].iterrows():
        who = f"{r['recipe']}@{r['run_id']}" if r.get("run_id") else str(r.get("recipe"))
        left.append(
            f"left out {who} concurrency {r['concurrency']} repetition {r['repetition']}: "
            f"{r.get('validity_reasons') or 'invalid'}"
        )
    return df[~bad], left


def best_point(df: pd.DataFrame) -> pd.Series | None:
    """The valid point (repetitions reduced to their median) meeting every SLO with the most tok/s per GPU,
    then goodput; None when no valid point meets them."""
    kept, _ = counted(enforce(df))
    pts = per_point(kept)
    if pts.empty:
        return None
    ok = pts[pts["slo_pass"].astype("boolean").fillna(False).astype(bool)]
    if ok.empty:
        return None
    cols = [c for c in ("output_throughput_tok_s_per_gpu", "goodput_req_s") if c in ok.columns]
    return ok.sort_values(cols, ascending=False).iloc[0] if cols else ok.iloc[0]


def why_not_counted(df: pd.DataFrame, concurrency: int, label: str) -> str:
    """Why the measured rows of `label` at `concurrency` do not count: their validity reasons, one line."""
    rows = (
        df[(df["concurrency"] == concurrency) & df["status"].isin(MEASURED_STATUSES)]
        if "status" in df.columns
        else df[df["concurrency"] == concurrency]
    )
    reasons = sorted({str(r) for r in rows.get("validity_reasons", pd.Series(dtype=object)).dropna() if str(r)})
    return f"{label} c{concurrency} is not a valid measurement ({'; '.join(reasons) or 'invalid'})"


class RecipeHashMismatch(UserError, ValueError):
    """A run given for a treatment is of another recipe (or records no recipe hash)."""


def check_recipe_hash(treatment: str, run: str, run_hash: str | None, expected: str, asked_by: str = "") -> None:
    """Refuse a run whose recipe hash is not the treatment's: one line naming the run and both hashes (after
    `asked_by`, the command that asks, when given)."""
    if run_hash == expected:
        return
    got = run_hash or "none recorded"
    raise RecipeHashMismatch(
        (f"{asked_by}: " if asked_by else "")
        + f"treatment {treatment}: run {run} has recipe hash {got}, expected {expected} "
        f"(the treatment's recipe as params/ resolves it now): a run of another recipe, "
        f"or of this one before it changed, is not evidence for it"
    )


# The statuses whose numbers are measurements (infersweep.results.table.OK_STATUSES, which imports this module).
MEASURED_STATUSES = ("ok", "partial")


def per_point(df: pd.DataFrame) -> pd.DataFrame:
    """Measured rows, one per load (concurrency; and request rate in a rate sweep, whose points share the
    concurrency cap): the median over repetitions of every numeric column."""
    ok = df[df["status"].isin(MEASURED_STATUSES)]
    if ok.empty:
        return ok
    numeric = ok.select_dtypes("number").drop(columns=["repetition"], errors="ignore")
    numeric = numeric.astype("float64")
    rates = "request_rate" in ok and bool((ok["request_rate"].fillna(0) > 0).any())
    keys = [ok["concurrency"].astype("int64")] + ([ok["request_rate"].fillna(0).astype("float64")] if rates else [])
    numeric = numeric.drop(columns=["concurrency", "request_rate"], errors="ignore")
    out = numeric.groupby(keys).median()
    out["slo_pass"] = ok.groupby(keys)["slo_pass"].agg(
        lambda s: bool(s.fillna(False).all()) if s.notna().any() else pd.NA  # type: ignore[type-var]  # NA: no verdict
    )
    out = out.reset_index()
    return out.sort_values(["concurrency", "request_rate"] if rates else "concurrency").reset_index(drop=True)
