"""Whether runs may be set against each other: the same workload, model, SLOs and source, or a flag that
says otherwise (and the output says so).

`compare`, `regress`, `experiment report` and the nightly regression check all draw a verdict from the
difference between runs; that difference means what its header says only when the runs measured the same
thing. Four dimensions:

- workload: what the AIPerf points ran (the run context's `workload`, read back from the points' command
  lines: ISL/OSL, shared prefix, trace/dataset, arrival) and the loads swept (concurrencies, request rates,
  from the results table's rows, failed points included);
- model: the served model id (and its revision when both runs record one);
- slo: the SLO bounds the points were judged against (a point "meets the SLOs" only relative to them);
- source: measured, simulated with the mocker's built-in timing, or simulated on a calibrated timing table
  (infersweep.predict.source.source_class).

A dimension a run does not record (a table from before the context existed) is not checked and is named
in the notes. A difference is refused with one line per dimension naming both sides and the flag
(`--allow-different DIM`); allowed, it is returned as a note the command prints above its verdict.

    notes = check_comparable({"A": run_a, "B": run_b}, allow={"workload"})   # Run-like: .context, .table
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Protocol

import pandas as pd

from infersweep.errors import UserError

DIMENSIONS = ("workload", "model", "slo", "source")
FLAG = "--allow-different"


class RunLike(Protocol):
    context: dict[str, Any]
    table: pd.DataFrame


class NotComparable(UserError, ValueError):
    """Runs that differ in a dimension the caller did not allow: the message names each difference."""


def _loads(table: pd.DataFrame) -> tuple:
    """The loads a run swept: its concurrencies (and request rates of an open-loop sweep), every row."""
    if table is None or table.empty or "concurrency" not in table.columns:
        return ()
    conc = sorted({int(c) for c in table["concurrency"].dropna()})
    rates = (
        sorted({float(r) for r in table["request_rate"].dropna() if float(r) > 0})
        if "request_rate" in table.columns
        else []
    )
    return (tuple(conc), tuple(rates))


def _loads_text(loads: tuple) -> str:
    conc, rates = loads
    text = "concurrency " + ",".join(map(str, conc))
    return text + (f" at request rate {','.join(f'{r:g}' for r in rates)}/s" if rates else "")


def _workload_text(w: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={json.dumps(v) if isinstance(v, (dict, list)) else v}" for k, v in sorted(w.items()))


def identity(run: RunLike) -> dict[str, tuple[Any, str] | None]:
    """{dimension: (the value compared, how it reads) or None when the run does not record it}."""
    ctx = run.context or {}
    table = run.table if run.table is not None else pd.DataFrame()
    out: dict[str, tuple[Any, str] | None] = {}
    workload = ctx.get("workload")
    loads = _loads(table)
    if workload or loads:  # (the shape, None when not recorded; the loads swept)
        w = dict(workload or {})
        out["workload"] = (
            (json.dumps(w, sort_keys=True, default=str) if w else None, loads),
            "; ".join(x for x in (_workload_text(w) if w else "", _loads_text(loads) if loads else "") if x),
        )
    else:
        out["workload"] = None
    model = ctx.get("model") or (
        str(table["model"].dropna().iloc[0]) if "model" in table.columns and table["model"].notna().any() else None
    )
    out["model"] = (model, model) if model else None
    slo = ctx.get("slo")
    out["slo"] = (json.dumps(slo, sort_keys=True), _workload_text(slo) or "none") if slo is not None else None
    from infersweep.predict.source import source_class  # measured / built-in / calibrated

    src = ctx.get("source")
    out["source"] = (source_class(src), str(src)) if source_class(src) else None
    return out


def _differs(dim: str, values: dict[str, tuple[Any, str]], *, lost_points_ok: bool) -> bool:
    keys = {label: v[0] for label, v in values.items()}
    if dim != "workload":
        return len(set(map(json.dumps, keys.values()))) > 1
    shapes = {shape for shape, _ in keys.values() if shape is not None}  # a run without one is not checked
    if len(shapes) > 1:
        return True
    loads = [l for _, l in keys.values() if l]
    if lost_points_ok and len(loads) == 2:
        # regress: a point the current run lost (no result at all) is a regression judged there, not
        # another workload: the current run's loads may be a subset of the baseline's.
        (cur_c, cur_r), (base_c, base_r) = loads
        return not (set(cur_c) <= set(base_c) and set(cur_r) <= set(base_r))
    return len({json.dumps(l) for l in loads}) > 1


def check_comparable(
    runs: Mapping[str, RunLike],
    allow: Iterable[str] = (),
    *,
    lost_points_ok: bool = False,
    why_allowed: Mapping[str, str] | None = None,
    asked_by: str = "",
) -> list[str]:
    """Refuse (NotComparable) runs that differ in a dimension not in `allow`; return the notes to print: each
    allowed difference (both sides) and each dimension a run does not record. `lost_points_ok`: the first
    run is judged against the second (regress), and may have swept fewer loads. `why_allowed`: dimension ->
    why it is allowed (default: the flag). `asked_by`: the command that asks, said first in the refusal
    (`experiment report NAME`), so the user's one line says where it came from."""
    head = f"{asked_by}: " if asked_by else ""
    allow = set(allow)
    unknown = allow - set(DIMENSIONS)
    if unknown:
        raise NotComparable(
            f"{head}{FLAG} {', '.join(sorted(unknown))}: not a dimension; choose from {', '.join(DIMENSIONS)}"
        )
    ids = {label: identity(run) for label, run in runs.items()}
    refused, notes = [], []
    for dim in DIMENSIONS:
        values = {label: v for label, i in ids.items() if (v := i[dim]) is not None}
        missing = [
            label for label, i in ids.items() if (v := i[dim]) is None or (dim == "workload" and v[0][0] is None)
        ]
        if missing:
            what = "workload shape (ISL/OSL, prefix, dataset)" if dim == "workload" else dim
            notes.append(f"not checked: {', '.join(missing)} record{'s' if len(missing) == 1 else ''} no {what}")
        if len(values) < 2 or not _differs(dim, values, lost_points_ok=lost_points_ok):
            continue
        sides = "; ".join(f"{label}: {text}" for label, (_, text) in values.items())
        what = "different sources (a simulation is not a measurement)" if dim == "source" else f"different {dim}"
        if dim in allow:
            why = (why_allowed or {}).get(dim, f"allowed by {FLAG} {dim}")
            notes.insert(0, f"{what}, {why}: {sides}")
        else:
            refused.append((dim, f"{what}: {sides}"))
    if refused:
        flags = " ".join(f"{FLAG} {d}" + (" (or --mix-sources)" if d == "source" else "") for d, _ in refused)
        raise NotComparable(
            f"{head}these runs did not measure the same thing, so their difference is not a result: "
            + " | ".join(line for _, line in refused)
            + f". Compare runs of one workload, model, SLOs and source, or pass {flags} to compare "
            "them anyway"
        )
    return notes


def add_allow_arg(p, what: str = "compare", mix_sources: bool = False) -> None:
    """The CLI flag: `--allow-different DIM` (repeatable); `mix_sources`: also its older spelling for the source,
    `--mix-sources` (compare, regress)."""
    if mix_sources:
        p.add_argument("--mix-sources", action="store_true", help=f"= {FLAG} source")
    p.add_argument(
        FLAG,
        action="append",
        default=[],
        choices=DIMENSIONS,
        metavar="DIM",
        dest="allow_different",
        help=f"{what} runs that differ in DIM anyway ({', '.join(DIMENSIONS)}; repeatable); the output "
        "says what differs",
    )


def allowed(a) -> set[str]:
    """The dimensions the command line allows to differ (`--mix-sources` is `--allow-different source`)."""
    return set(getattr(a, "allow_different", None) or []) | ({"source"} if getattr(a, "mix_sources", False) else set())
