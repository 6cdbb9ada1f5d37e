"""The HTML report of one run: self-contained (PNGs inlined as data URIs, inline CSS, no JS, nothing
fetched), so it opens from the Argo UI, an S3 console or a mail attachment alike. The PNGs are also
written beside it.

Sections: run context, SLOs, the results table, Pareto frontier (tok/s/GPU vs tok/s/user, SLO region),
TTFT/ITL/latency vs concurrency, error rates (with every failed point's reason), server metrics over time.
"""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path

import pandas as pd

from infersweep.results import plots
from infersweep.results.context import WHAT_RAN
from infersweep.results.evidence import best_point
from infersweep.results.run import Run

TABLE_COLUMNS = [
    ("concurrency", "conc."),
    ("repetition", "rep"),
    ("status", "status"),
    ("ttft_p50_ms", "TTFT p50 ms"),
    ("ttft_p99_ms", "TTFT p99 ms"),
    ("ttft_avg_ms", "TTFT mean ms"),
    ("itl_p50_ms", "ITL p50 ms"),
    ("itl_p99_ms", "ITL p99 ms"),
    ("request_latency_p50_ms", "latency p50 ms"),
    ("request_latency_p99_ms", "latency p99 ms"),
    ("output_throughput_tok_s", "output tok/s"),
    ("output_throughput_tok_s_per_gpu", "tok/s/GPU"),
    ("output_throughput_p50_tok_s_per_user", "tok/s/user p50"),
    ("request_throughput_req_s", "req/s"),
    ("goodput_req_s", "goodput req/s"),
    ("goodput_ratio", "good %"),
    ("error_ratio", "errors %"),
    ("slo_pass", "SLO"),
    ("valid", "valid"),
    ("validity_reasons", "why not valid"),
]
CONTEXT_ROWS = [
    *WHAT_RAN,
    "workload",
    "aiperf_version",
    "aiperf_image",
    "run_start",
    "run_end",
    "context_source",
    "source",
    "prediction",
    "imported",
]

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px;margin-bottom:4px} h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;font-size:12.5px} td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}
th{background:#f4f4f4} td.l,th.l{text-align:left} tr.bad td{background:#fff3f3}
.pass{color:#137333;font-weight:600} .fail{color:#b3261e;font-weight:600} .muted{color:#777}
img{max-width:100%;border:1px solid #eee;margin:6px 0} code{background:#f4f4f4;padding:1px 4px}
"""


def _fmt(value, col: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value is pd.NaT:
        return "NA"
    if col == "valid":
        return '<span class="pass">valid</span>' if bool(value) else '<span class="fail">invalid</span>'
    if col == "slo_pass":
        return '<span class="pass">pass</span>' if bool(value) else '<span class="fail">fail</span>'
    if col in ("error_ratio", "goodput_ratio"):
        return f"{100 * float(value):.1f}"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3g}"
    return html.escape(str(value))


def results_table_html(df: pd.DataFrame) -> str:
    cols = [(c, h) for c, h in TABLE_COLUMNS if c in df.columns]
    head = "".join(
        f'<th class="{"l" if c in ("status", "validity_reasons") else ""}">{html.escape(h)}</th>' for c, h in cols
    )
    body = []
    for _, r in df.iterrows():
        cls = "" if r["status"] == "ok" else ' class="bad"'
        cells = "".join(
            f'<td class="{"l" if c in ("status", "validity_reasons") else ""}">{_fmt(r.get(c), c)}</td>'
            for c, _ in cols
        )
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def by_load_html(df: pd.DataFrame) -> str:
    """Each load's mean over its valid repetitions, ± the 95 % Student-t half-width, n in every cell
    (infersweep.results.repetitions)."""
    from infersweep.results.repetitions import METRICS, by_load

    t = by_load(df)
    if t.empty:
        return '<p class="muted">No points.</p>'
    shown = [(c, label) for c, label in METRICS if f"{c}_text" in t.columns]
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ["concurrency", "n valid"] + [lb for _, lb in shown])
    body = []
    for _, r in t.iterrows():
        n = f"{int(r['n'])}" + (f" ({int(r['left_out'])} left out)" if r["left_out"] else "")
        cells = [str(int(r["concurrency"])), n] + [str(r[f"{c}_text"]) for c, _ in shown]
        body.append("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in cells) + "</tr>")
    return (
        '<p class="muted">Mean ± half-width of the 95 % Student-t confidence interval over the valid repetitions '
        "of each load; n = how many (n=1: one measurement, no interval).</p>"
        f"<table><tr>{head}</tr>{''.join(body)}</table>"
    )


def _context_html(run: Run) -> str:
    rows = []
    for key in CONTEXT_ROWS:
        value = run.context.get(key)
        if key == "run_id":
            value = value or run.run_id
        if key == "imported" and value:  # where each fact came from, in words (its aggregate has a section)
            from infersweep.results.import_context import provenance_text

            value = f"{provenance_text(value)}. {value.get('layout') or ''}".strip()
        if isinstance(value, (dict, list)):
            value = json.dumps(value, sort_keys=True)
        shown = html.escape(str(value)) if value not in (None, "") else '<span class="muted">not recorded</span>'
        rows.append(f'<tr><th class="l">{key}</th><td class="l">{shown}</td></tr>')
    return f"<table>{''.join(rows)}</table>"


def _slo_html(run: Run) -> str:
    slo = run.context.get("slo") or plots.slo_of(run.table)
    if not slo:
        return '<p class="muted">No SLOs were given: SLO pass/fail and goodput are not judged.</p>'
    items = ", ".join(f"<code>{html.escape(k)} = {v:g}</code>" for k, v in slo.items())
    top = best_point(run.table)  # valid points only (infersweep.results.evidence)
    if top is None:
        best = '<span class="fail">no valid measured point meets them</span>'
    else:
        best = (
            f'<span class="pass">best valid point meeting them: concurrency {int(top["concurrency"])}</span>, '
            f"{top['output_throughput_tok_s_per_gpu']:.1f} tok/s/GPU at {top['output_throughput_p50_tok_s_per_user']:.1f} tok/s/user"
        )
    return f"<p>SLOs: {items}. {best}. Goodput counts the requests that met them (per request).</p>"


def _failures_html(df: pd.DataFrame) -> str:
    bad = df[df["status"] != "ok"]
    if bad.empty:
        return (
            "<p>Every point completed with all requests succeeding (or within the allowed error rate).</p>"
            + _invalid_html(df)
        )
    items = "".join(
        f"<li>concurrency {html.escape(str(r['concurrency']))}: <b>{html.escape(str(r['status']))}</b> — "
        f"{html.escape(str(r['reason']))}</li>"
        for _, r in bad.iterrows()
    )
    return f"<ul>{items}</ul>" + _invalid_html(df)


def _invalid_html(df: pd.DataFrame) -> str:
    """Why measured points are not valid (infersweep.results.validity): shown, never hidden."""
    if "valid" not in df.columns:
        return ""
    bad = df[df["status"].isin(("ok", "partial")) & (df["valid"] == False)]  # noqa: E712
    if bad.empty:
        return ""
    items = "".join(
        f"<li>concurrency {html.escape(str(r['concurrency']))}: {html.escape(str(r['validity_reasons']))}</li>"
        for _, r in bad.iterrows()
    )
    return (
        f"<p>Measured but not valid (no SLO verdict, never the best point; compare and regress leave these out "
        f"by default):</p><ul>{items}</ul>"
    )


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def simulated_banner_html(source: str | None) -> list[str]:
    """A visible banner above a simulated run's numbers (infersweep.predict.source.banner); none if measured."""
    from infersweep.predict.source import banner

    text = banner(source)
    return (
        [
            f'<p class="simulated" style="background:#fff3cd;border:1px solid #d4a000;padding:8px 12px">'
            f"{html.escape(text)}</p>"
        ]
        if text
        else []
    )


def predicted_html(run: Run) -> str:
    """Measured vs predicted per point, and the points the physics check flagged (infersweep.predict.beside)."""
    from infersweep.predict.beside import implausible_rows, side_by_side

    note = run.context.get("prediction")
    head, rows = side_by_side(run.table)
    parts = []
    if rows:
        th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
        parts.append(f"<table><tr>{th}</tr>{body}</table>")
        parts.append(
            f'<p class="muted">Predicted: {html.escape(str(note))}. Ratio = measured / predicted. '
            "Disaggregated TTFT predictions are zero-queue.</p>"
        )
    else:
        why = note or "this run was summarized before predictions were recorded"
        parts.append(f'<p class="muted">No prediction beside these points: {html.escape(str(why))}</p>')
    flagged = implausible_rows(run.table)
    if flagged:
        items = "".join(f"<li>concurrency {html.escape(str(c))}: {html.escape(str(why))}</li>" for c, why in flagged)
        parts.append(
            f'<p class="fail">Physically implausible points (faster than the hardware allows):</p><ul>{items}</ul>'
        )
    return "".join(parts)


def _imported_html(run: Run) -> list[str]:
    """An imported run says so above everything, with what was unknown or stated (import_context)."""
    from infersweep.results.import_context import provenance_text

    text = provenance_text(run.context.get("imported"))
    return [f"<p><b>{html.escape(text)}</b></p>"] if text else []


def _aiperf_intervals_html(run: Run) -> list[str]:
    """AIPerf's own intervals of an imported multi-run tree beside infersweep's (import_aggregate)."""
    from infersweep.results.import_aggregate import html_section

    section = html_section(run.table, (run.context.get("imported") or {}).get("aiperf_aggregate"))
    return ["<h2>AIPerf's own confidence intervals</h2>", section] if section else []


def short_window_notes(table: pd.DataFrame, metrics: pd.DataFrame) -> list[str]:
    """One line per point whose window is shorter than two query steps: a rate() needs two samples inside its
    range (prometheus promql/functions.go extrapolatedRate), so such a point's server-metric values (e.g.
    frontend_inflight = 0) may mean nothing (infersweep.results.server_metrics MIN_RESOLVABLE_STEPS; the scrape
    says it in metrics/NOTES, and the chart must not say otherwise). The step is the samples' own spacing."""
    from infersweep.results.server_metrics import MIN_RESOLVABLE_STEPS

    if "duration_s" not in table or metrics.empty:
        return []
    gaps = (
        metrics.sort_values("ts").groupby(["concurrency", "metric", "labels"])["ts"].diff().dropna()
        if {"concurrency", "metric", "labels", "ts"} <= set(metrics.columns)
        else pd.Series(dtype=float)
    )
    gaps = gaps[gaps > 0]
    if gaps.empty:
        return []
    step = float(gaps.median())
    durations = table.dropna(subset=["duration_s"]).groupby(table["concurrency"].astype("int64"))["duration_s"].median()
    return [
        f"c{c}: its window ({d:.1f} s) is shorter than {MIN_RESOLVABLE_STEPS} query steps "
        f"({MIN_RESOLVABLE_STEPS} x {step:g} s): Prometheus may hold no rate() sample in it, so its server-metric "
        "values above (0 included) may not describe it"
        for c, d in durations.items()
        if float(d) < MIN_RESOLVABLE_STEPS * step
    ]


def write_report(run: Run, out_dir: Path, title: str | None = None) -> Path:
    """Write report.html and its PNGs into out_dir; return the HTML path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    title = title or run.label
    runs = {run.label: run.table}
    figures = [
        ("Pareto frontier: throughput per GPU vs per user", plots.pareto_plot(runs, out_dir / "pareto.png", title)),
        ("TTFT, ITL and request latency vs concurrency", plots.latency_plot(runs, out_dir / "latency.png", title)),
        ("Error rates", plots.error_plot(runs, out_dir / "errors.png", title)),
    ]
    if run.server_metrics is not None and not run.server_metrics.empty:
        metrics_html = _img(
            plots.server_metrics_plot(run.server_metrics, out_dir / "server_metrics.png", title), "server metrics"
        ) + "".join(f'<p class="muted">{html.escape(n)}</p>' for n in short_window_notes(run.table, run.server_metrics))
    else:
        why = run.metrics_note or "no metrics/server_metrics.parquet in this run"
        metrics_html = f'<p class="muted">No server metrics: {html.escape(why)}</p>'
    sections = [
        f"<h1>{html.escape(title)}</h1>",
        *simulated_banner_html(run.context.get("source")),
        f'<p class="muted">run {html.escape(run.run_id)} · {html.escape(run.source)}</p>',
        *_imported_html(run),
        "<h2>Run context</h2>",
        _context_html(run),
        "<h2>SLOs</h2>",
        _slo_html(run),
        "<h2>Results over repetitions</h2>",
        by_load_html(run.table),
        *_aiperf_intervals_html(run),
        "<h2>Each repetition</h2>",
        results_table_html(run.table),
        "<h2>Measured vs predicted</h2>",
        predicted_html(run),
    ]
    for heading, png in figures:
        sections += [f"<h2>{html.escape(heading)}</h2>", _img(png, heading)]
    sections += [
        "<h2>Failed or partial points</h2>",
        _failures_html(run.table),
        "<h2>Server metrics over time</h2>",
        metrics_html,
    ]
    doc = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
        + "\n".join(sections)
        + "</body></html>\n"
    )
    path = out_dir / "report.html"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(doc, encoding="utf-8")
    tmp.replace(path)  # a reader never sees half a report
    return path
