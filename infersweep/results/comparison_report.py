"""The comparison report across runs: one self-contained HTML page (`infersweep compare A B C --html F`).

What it shows, per candidate (a run; labels as `compare` gives them):
- the Pareto plot of tok/s/GPU against tok/s/user, every measured point: valid points filled, invalid ones
  hollow (and never on a frontier: only valid points count, infersweep.results.evidence), each candidate's
  valid frontier as a line (plots.pareto_frontier), the winner ringed;
- the winner at the SLOs: the valid point meeting every SLO with the most tok/s per GPU over all candidates
  (compare.best_meeting_slo, i.e. evidence.best_point per run), named only when its repetitions tell it
  apart from the others (compare.decide_best); otherwise the tie, and how many repetitions would decide;
- the per-concurrency changes against the first candidate (compare.compare_runs): each change with its
  95 % interval, the judged metrics' verdicts marked both ways (green * = the candidate better, red ! =
  the baseline better), the other metrics described without verdict;
- each candidate's validity: points measured, valid, invalid (with their reasons), failed;
- $/Mtok where the GPU type has a price (params/gpus.yaml `usd_per_gpu_hour`): GPU-hours per million output
  tokens, price / 3600 / (tok/s/GPU) * 1e6, the formula of params/metrics.yaml's
  cost_usd_per_million_output_tokens with AIPerf's measured tokens; energy per output token where the run
  measured GPU energy (`energy_j_per_output_token`, infersweep.results.gpu_telemetry); NA otherwise.

No external assets: the plot is inline SVG, the style inline CSS, so the file can be mailed or attached to
an issue and still reads the same.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from infersweep.results.compare import MARK, METRICS, Comparison, compare_runs, family_text
from infersweep.results.evidence import counted, is_invalid, per_point
from infersweep.results.plots import pareto_frontier

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
X, Y = "output_throughput_p50_tok_s_per_user", "output_throughput_tok_s_per_gpu"  # infersweep.metrics names


def _num(v: Any, fmt: str = "{:.1f}") -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "NA"
    return fmt.format(f) if math.isfinite(f) else "NA"


def simulated(run) -> bool:
    """No GPU ran (local mode's mocker, fake GPUs): a GPU's list price does not apply to its numbers."""
    from infersweep.predict.source import is_simulated

    sources = list(run.table["source"].dropna().unique()) if "source" in run.table else []
    return any(is_simulated(str(s)) for s in sources + [(run.context or {}).get("source")])


def _price(run) -> float | None:
    from infersweep.results.server_metrics import gpu_price  # params/gpus.yaml

    if simulated(run):
        return None  # the mocker's tok/s priced at an H100's hour would read as a real cost
    try:
        return gpu_price((run.context or {}).get("gpu_type"))
    except (OSError, ValueError):
        return None


def usd_per_mtok(tok_s_per_gpu: float, usd_per_gpu_hour: float | None) -> float:
    """$ per million output tokens at `tok_s_per_gpu` (nan without a price or throughput)."""
    if not usd_per_gpu_hour or not tok_s_per_gpu or not math.isfinite(tok_s_per_gpu) or tok_s_per_gpu <= 0:
        return math.nan
    return usd_per_gpu_hour / 3600 / tok_s_per_gpu * 1e6


def candidate_points(run) -> pd.DataFrame:
    """One row per measured load (median over repetitions), with `valid` (False when any repetition is
    invalid), `n` (repetitions), `reasons`, `usd_per_mtok` and `energy_j_per_output_token` (NA if unknown)."""
    df = run.table
    kept, _ = counted(df)
    frames = []
    for ok, part in ((True, kept), (False, df.drop(kept.index))):
        pts = per_point(part)
        if pts.empty:
            continue
        pts = pts.copy()
        pts["valid"] = ok
        measured = part[part["status"].isin(("ok", "partial"))]
        by = measured.groupby(measured["concurrency"].astype("int64"))
        pts["n"] = pts["concurrency"].map(by.size()).fillna(0).astype(int)
        reasons = (
            by["validity_reasons"].agg(lambda s: "; ".join(sorted({str(r) for r in s.dropna() if str(r)})))
            if "validity_reasons" in measured.columns
            else pd.Series(dtype=object)
        )
        pts["reasons"] = pts["concurrency"].map(reasons).fillna("") if not ok else ""
        frames.append(pts)
    if not frames:
        return pd.DataFrame(columns=["concurrency", X, Y, "valid", "n", "reasons"])
    out = pd.concat(frames, ignore_index=True).sort_values("concurrency").reset_index(drop=True)
    price = _price(run)
    out["usd_per_mtok"] = [usd_per_mtok(float(v), price) for v in out.get(Y, pd.Series(math.nan, index=out.index))]
    if "energy_j_per_output_token" not in out.columns:
        out["energy_j_per_output_token"] = math.nan
    return out


def validity_summary(run) -> dict[str, Any]:
    """Points measured / valid / invalid / failed, and the invalid points' reasons, of one candidate."""
    df = run.table
    measured = df[df["status"].isin(("ok", "partial"))] if "status" in df.columns else df
    bad = (
        measured["valid"].astype("object").map(is_invalid).astype(bool)
        if "valid" in measured.columns
        else pd.Series(False, index=measured.index)
    )
    return {
        "rows": len(df),
        "measured": len(measured),
        "valid": int((~bad).sum()),
        "invalid": int(bad.sum()),
        "failed": len(df) - len(measured),
        "reasons": sorted(
            {f"c{int(r['concurrency'])}: {r.get('validity_reasons') or 'invalid'}" for _, r in measured[bad].iterrows()}
        ),
    }


# ---------------------------------------------------------------------------------------------------- SVG
def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    span = hi - lo or abs(hi) or 1.0
    step = 10 ** math.floor(math.log10(span / n))
    for m in (1, 2, 5, 10):
        if span / (m * step) <= n:
            step *= m
            break
    start = math.floor(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step) + 2) if start + i * step <= hi + 1e-9]


def legend_labels(labels: list[str], width: int = 26) -> dict[str, str]:
    """Each label as the legend shows it, at most `width` characters and never two alike: a long one keeps its
    start and its end (recipe names differ at the end: lightning-trtllm-agg-b200-bf16 / -b200-mtp-bf16, which
    cutting at 26 made one string); the full name is the entry's tooltip."""
    head = (width - 1) // 2
    out = {lab: lab if len(lab) <= width else f"{lab[:head]}…{lab[-(width - head - 1) :]}" for lab in labels}
    seen: dict[str, int] = {}
    for lab in labels:  # still alike (same start and end): number them in order
        seen[out[lab]] = seen.get(out[lab], 0) + 1
        if list(out.values()).count(out[lab]) > 1:
            out[lab] = f"{out[lab][: width - 3]}#{seen[out[lab]]}"
    return out


def pareto_svg(
    points: Mapping[str, pd.DataFrame], winner: tuple[str, int] | None, width: int = 760, height: int = 460
) -> str:
    """Inline SVG: tok/s/GPU (y) against tok/s/user (x), per candidate; filled = valid, hollow = invalid."""
    ml, mr, mt, mb = 70, 190, 20, 50
    allp = pd.concat(
        [p[[X, Y]] for p in points.values() if not p.empty and X in p and Y in p]
        or [pd.DataFrame({X: [0.0, 1.0], Y: [0.0, 1.0]})]
    ).dropna()
    if allp.empty:
        allp = pd.DataFrame({X: [0.0, 1.0], Y: [0.0, 1.0]})
    x0, x1 = 0.0, float(allp[X].max()) * 1.08 or 1.0
    y0, y1 = 0.0, float(allp[Y].max()) * 1.08 or 1.0
    pw, ph = width - ml - mr, height - mt - mb

    short = legend_labels(list(points))

    def sx(v: float) -> float:
        return ml + (v - x0) / (x1 - x0) * pw

    def sy(v: float) -> float:
        return mt + ph - (v - y0) / (y1 - y0) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'role="img" aria-label="Pareto: tok/s/GPU against tok/s/user" font-family="sans-serif" font-size="11">',
        f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>',
    ]
    for t in _ticks(x0, x1):
        out.append(
            f'<line x1="{sx(t):.1f}" y1="{mt}" x2="{sx(t):.1f}" y2="{mt + ph}" stroke="#eee"/>'
            f'<text x="{sx(t):.1f}" y="{mt + ph + 15}" text-anchor="middle">{t:g}</text>'
        )
    for t in _ticks(y0, y1):
        out.append(
            f'<line x1="{ml}" y1="{sy(t):.1f}" x2="{ml + pw}" y2="{sy(t):.1f}" stroke="#eee"/>'
            f'<text x="{ml - 6}" y="{sy(t) + 4:.1f}" text-anchor="end">{t:g}</text>'
        )
    out.append(
        f'<text x="{ml + pw / 2}" y="{height - 10}" text-anchor="middle">tok/s/user (p50; interactivity)</text>'
        f'<text x="16" y="{mt + ph / 2}" text-anchor="middle" transform="rotate(-90 16 {mt + ph / 2})">'
        "tok/s/GPU (throughput per GPU)</text>"
    )
    for i, (label, pts) in enumerate(points.items()):
        color = PALETTE[i % len(PALETTE)]
        if pts.empty or X not in pts or Y not in pts:
            continue
        front = pareto_frontier(pts[pts["valid"]]) if pts["valid"].any() else pts.iloc[:0]
        if len(front) > 1:
            path = " ".join(f"{sx(r[X]):.1f},{sy(r[Y]):.1f}" for _, r in front.iterrows())
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        for _, r in pts.dropna(subset=[X, Y]).iterrows():
            fill = color if r["valid"] else "white"
            state = "valid" if r["valid"] else f"INVALID: {r['reasons'] or 'invalid'}"
            tip = html.escape(
                f"{label} c{int(r['concurrency'])}: {r[Y]:.1f} tok/s/GPU, {r[X]:.1f} tok/s/user, "
                f"n={int(r['n'])}; {state}"
            )
            out.append(
                f'<circle cx="{sx(r[X]):.1f}" cy="{sy(r[Y]):.1f}" r="5" fill="{fill}" stroke="{color}" '
                f'stroke-width="2"><title>{tip}</title></circle>'
                f'<text x="{sx(r[X]) + 7:.1f}" y="{sy(r[Y]) - 6:.1f}" fill="{color}" font-size="9">'
                f"c{int(r['concurrency'])}</text>"
            )
            if winner and winner == (label, int(r["concurrency"])) and r["valid"]:
                out.append(
                    f'<circle cx="{sx(r[X]):.1f}" cy="{sy(r[Y]):.1f}" r="10" fill="none" stroke="black" '
                    'stroke-width="1.5"><title>winner at the SLOs</title></circle>'
                )
        ly = mt + 14 + 18 * i
        out.append(
            f'<circle cx="{ml + pw + 18}" cy="{ly - 4}" r="5" fill="{color}" stroke="{color}"/>'
            f'<text x="{ml + pw + 28}" y="{ly}">{html.escape(short[label])}<title>{html.escape(label)}</title></text>'
        )
    ly = mt + 14 + 18 * len(points) + 10
    out.append(
        f'<circle cx="{ml + pw + 18}" cy="{ly - 4}" r="5" fill="#555" stroke="#555"/>'
        f'<text x="{ml + pw + 28}" y="{ly}">valid point</text>'
        f'<circle cx="{ml + pw + 18}" cy="{ly + 14}" r="5" fill="white" stroke="#555" stroke-width="2"/>'
        f'<text x="{ml + pw + 28}" y="{ly + 18}">invalid (not counted)</text>'
        f'<circle cx="{ml + pw + 18}" cy="{ly + 32}" r="9" fill="none" stroke="black"/>'
        f'<text x="{ml + pw + 32}" y="{ly + 36}">winner at the SLOs</text>'
    )
    out.append("</svg>")
    return "\n".join(out)


# --------------------------------------------------------------------------------------------------- HTML
CSS = (
    "body{font-family:sans-serif;margin:24px;max-width:1200px;color:#222}table{border-collapse:collapse;"
    "margin:8px 0 18px}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:right}"
    "th{background:#f3f3f3}td.l,th.l{text-align:left}.bad{color:#b00}.note{color:#555;font-size:13px}"
    ".win{background:#e9f7e9}td.better{background:#e9f7e9;color:#060}td.worse{background:#fbeaea;color:#900}"
)


def _table(head: list[str], rows: list[list[str]], left: int = 1, classes: list[str] | None = None) -> str:
    th = "".join(f'<th class="l">{h}</th>' if i < left else f"<th>{h}</th>" for i, h in enumerate(head))
    body = "".join(
        f'<tr class="{(classes or [""] * len(rows))[k]}">'
        + "".join(f'<td class="l">{c}</td>' if i < left else f"<td>{c}</td>" for i, c in enumerate(r))
        + "</tr>"
        for k, r in enumerate(rows)
    )
    return f"<table><tr>{th}</tr>{body}</table>"


def changes_html(cmp: Comparison) -> str:
    """Per candidate, the % change of every metric per concurrency with its 95 % interval; judged cells
    marked both ways (class better / worse and * / !), described ones plain."""
    esc = html.escape
    names = dict(METRICS)
    parts = []
    for label in cmp.changes["run"].unique() if not cmp.changes.empty else []:
        sub = cmp.changes[cmp.changes["run"] == label]
        metrics = list(dict.fromkeys(sub["metric"]))
        judged = set(sub[sub["judged"]]["metric"])
        head = ["load", "n"] + [esc(names.get(m, m)) + (" <b>[judged]</b>" if m in judged else "") for m in metrics]
        body = []
        for c, g in sub.groupby("concurrency"):
            by = g.set_index("metric")
            n = f"{int(g['n_baseline'].min())}/{int(g['n'].min())}"
            cells = []
            for m in metrics:
                pct, ci, better = by.at[m, "pct_change"], by.at[m, "ci95_pct"], by.at[m, "better"]
                text = "NA" if not math.isfinite(pct) else f"{pct:+.1f}%" + (f" ±{ci:.1f}" if math.isfinite(ci) else "")
                decided = better is not None and not pd.isna(better)
                cls = ("better" if bool(better) else "worse") if decided else ""
                title = esc(
                    f"{by.at[m, 'verdict']}; p={by.at[m, 'p_value']:.2g}"
                    if math.isfinite(by.at[m, "p_value"])
                    else by.at[m, "verdict"]
                )
                cells.append(f'<td class="{cls}" title="{title}">{text}{MARK[bool(better)] if decided else ""}</td>')
            body.append(f'<tr><td class="l">c{int(c)}</td><td>{n}</td>{"".join(cells)}</tr>')
        th = "".join(f'<th class="l">{h}</th>' if i == 0 else f"<th>{h}</th>" for i, h in enumerate(head))
        parts.append(
            f"<h3>{esc(label)} against {esc(cmp.baseline)}</h3><table><tr>{th}</tr>{''.join(body)}</table>"
            f'<p class="note">* (green) = {esc(label)} better, ! (red) = {esc(cmp.baseline)} better, beyond noise on '
            f"a judged metric; ± = 95 % interval (Student's t on the point's own repetitions); n = repetitions "
            f"{esc(cmp.baseline)}/{esc(label)}. {esc(family_text(cmp, label))}.</p>"
        )
    return "<h2>Changes per concurrency</h2>" + "".join(parts) if parts else ""


def comparison_html(runs: Mapping[str, Any], notes: list[str] | None = None, cmp: Comparison | None = None) -> str:
    """The page for `runs` (label -> Run: .table, .context, .run_id); `cmp`: their comparison (computed
    here when not given)."""
    esc = html.escape
    points = {label: candidate_points(run) for label, run in runs.items()}
    if cmp is None:
        cmp = compare_runs({label: run.table for label, run in runs.items()})
    choice = cmp.best_choice
    top = cmp.best.iloc[0] if choice is not None and choice.winner else None
    winner = (str(top["run"]), int(top["concurrency"])) if top is not None else None
    slos = {
        esc(", ".join(f"{k}={v:g}" for k, v in sorted(run.context["slo"].items())) or "none")
        for run in runs.values()
        if isinstance(run.context.get("slo"), dict)
    }
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>infersweep comparison: "
        f"{esc(', '.join(runs))}</title><style>{CSS}</style></head><body>",
        f"<h1>Comparison of {len(runs)} runs</h1>",
    ]
    from infersweep.predict.source import banner

    sources = sorted({str(x) for run in runs.values() if "source" in run.table for x in run.table["source"].dropna()})
    # a simulated candidate says so above the numbers, as each run's own report does
    parts += [f'<p class="note bad">{esc(b)}</p>' for b in map(banner, sources) if b]
    parts += [f'<p class="note">note: {esc(n)}</p>' for n in notes or []]
    parts.append(_winner_html(points, cmp, winner, slos))
    parts.append(
        "<h2>Pareto: tok/s/GPU against tok/s/user</h2>"
        + pareto_svg(points, winner)
        + '<p class="note">Each point is the median over its repetitions; filled = valid, hollow = invalid '
        "(measured, but not a valid measurement: hover for why); lines join each candidate's valid "
        "Pareto frontier.</p>"
    )
    parts.append(changes_html(cmp))
    parts.append(_candidates_html(runs, points, cmp.best, winner))
    parts += [_points_html(label, run, points[label]) for label, run in runs.items()]
    parts.append(_prices_html(runs) + "</body></html>")
    return "\n".join(parts)


def _winner_html(points: Mapping[str, Any], cmp: Comparison, winner: tuple[str, int] | None, slos: set[str]) -> str:
    """The winner at the SLOs: the run and load, none told apart, or none."""
    esc = html.escape
    choice = cmp.best_choice
    if winner:
        pts = points[winner[0]]
        row = pts[(pts["concurrency"] == winner[1]) & pts["valid"]].iloc[0]
        return (
            f"<h2>Winner at the SLOs</h2><p><b>{esc(winner[0])}</b> at concurrency {winner[1]}: "
            f"{_num(row[Y])} tok/s/GPU, {_num(row[X])} tok/s/user, n={int(row['n'])} repetition(s), "
            f"{_num(row['usd_per_mtok'], '${:.2f}')}/Mtok, {_num(row['energy_j_per_output_token'], '{:.3g}')} "
            f"J/token. The valid point meeting every SLO ({' / '.join(slos) or 'none recorded'}) with the "
            "most tok/s per GPU over all candidates; invalid points are never candidates.</p>"
        )
    if choice is not None and choice.tied:
        return (
            f"<h2>Winner at the SLOs</h2><p><b>none told apart</b>: {esc(choice.line)}. SLOs: "
            f"{' / '.join(slos) or 'none recorded'}.</p>"
        )
    return (
        "<h2>Winner at the SLOs</h2><p><b>none</b>: no candidate has a valid point meeting the SLOs "
        f"({' / '.join(slos) or 'none recorded'}).</p>"
    )


def _candidates_html(
    runs: Mapping[str, Any], points: Mapping[str, Any], best: Any, winner: tuple[str, int] | None
) -> str:
    """One row per candidate: its run, model, GPUs, valid points and its best point at the SLOs."""
    esc = html.escape
    rows, classes = [], []
    for label, run in runs.items():
        v = validity_summary(run)
        b = best[best["run"] == label].iloc[0] if (best["run"] == label).any() else None
        pts = points[label]
        at = (
            pts[(pts["concurrency"] == b["concurrency"]) & pts["valid"]].iloc[0]
            if b is not None and b["meets_slo"]
            else None
        )
        ctx = run.context or {}
        rows.append(
            [
                esc(label),
                esc(str(run.run_id)),
                esc(str(ctx.get("source") or "NA")),
                esc(str(ctx.get("model") or "NA")),
                esc(f"{ctx.get('gpu_count') or 'NA'}x {ctx.get('gpu_type') or 'NA'}"),
                f"{v['valid']} of {v['measured']}"
                + (f' <span class="bad">({v["invalid"]} invalid)</span>' if v["invalid"] else "")
                + (f' <span class="bad">{v["failed"]} failed</span>' if v["failed"] else ""),
                f"c{int(b['concurrency'])}" if b is not None and at is not None else "none",
                _num(at[Y]) if at is not None else "NA",
                _num(at["usd_per_mtok"], "${:.2f}") if at is not None else "NA",
                _num(at["energy_j_per_output_token"], "{:.3g}") if at is not None else "NA",
            ]
        )
        classes.append("win" if winner and winner[0] == label else "")
    return "<h2>Candidates</h2>" + _table(
        [
            "candidate",
            "run",
            "source",
            "model",
            "GPUs",
            "valid points",
            "best at the SLOs",
            "tok/s/GPU there",
            "$/Mtok there",
            "J/token there",
        ],
        rows,
        left=5,
        classes=classes,
    )


def _points_html(label: str, run: Any, pts: Any) -> str:
    """A candidate's points: load, repetitions, validity, throughput, latency, SLOs, cost, energy."""
    esc = html.escape
    v = validity_summary(run)
    parts = [f"<h3>{esc(label)}</h3>"]
    prows = [
        [
            f"c{int(r['concurrency'])}",
            str(int(r["n"])),
            "yes" if r["valid"] else f'<span class="bad">NO: {esc(r["reasons"] or "invalid")}</span>',
            _num(r.get(Y)),
            _num(r.get(X)),
            _num(r.get("ttft_p50_ms")),
            _num(r.get("itl_p50_ms"), "{:.2f}"),
            (
                "NA (invalid)"
                if not r["valid"]
                else "yes"
                if r["slo_pass"] is True
                else "no"
                if r["slo_pass"] is False
                else "NA"
            ),
            _num(r["usd_per_mtok"], "${:.2f}"),
            _num(r["energy_j_per_output_token"], "{:.3g}"),
        ]
        for _, r in pts.iterrows()
    ]
    parts.append(
        _table(
            [
                "load",
                "n",
                "valid",
                "tok/s/GPU",
                "tok/s/user",
                "TTFT p50 ms",
                "ITL p50 ms",
                "meets SLOs",
                "$/Mtok",
                "J/token",
            ],
            prows,
            left=3,
        )
    )
    if v["failed"]:
        parts.append(f'<p class="note bad">{v["failed"]} point(s) failed (no measurement).</p>')
    return "\n".join(parts)  # the page's parts are joined by newlines


def _prices_html(runs: Mapping[str, Any]) -> str:
    """How $/Mtok and J/token were computed, with the GPU prices used and the runs without one."""
    esc = html.escape
    price_note = "; ".join(
        sorted(
            {
                f"{run.context.get('gpu_type')}: ${_price(run):g}/GPU-hour"
                for run in runs.values()
                if run.context.get("gpu_type") and _price(run)
            }
        )
    )
    unpriced = sorted(name for name, run in runs.items() if simulated(run))
    if unpriced:
        price_note = "; ".join(
            ([price_note] if price_note else []) + [f"no price for simulated runs: {', '.join(unpriced)}"]
        )
    return (
        '<p class="note">$/Mtok = usd_per_gpu_hour / 3600 / (tok/s/GPU) x 1e6, with the prices of '
        f"params/gpus.yaml ({esc(price_note) or 'none known for these GPU types'}); J/token = GPU energy "
        "over the point's window / its output tokens, where the run measured GPU energy. NA = not "
        "known.</p>"
    )


def write_comparison_report(
    runs: Mapping[str, Any], path: Path, notes: list[str] | None = None, cmp: Comparison | None = None
) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(comparison_html(runs, notes, cmp), encoding="utf-8")
    return path
