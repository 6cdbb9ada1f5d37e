"""What local mode changed in the recipe, said before the run: a laptop run is a scaled-down copy of the
cluster recipe (params/local.yaml), and its numbers mean that copy, not the recipe as written."""

from __future__ import annotations

from typing import Any

from infersweep.aiperf.point import Point
from infersweep.local.profile import LocalProfile
from infersweep.recipe import ResolvedRecipe


def _levels(values: list[Any]) -> str:
    return "[" + ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values) + "]"


def scale_note(
    r: ResolvedRecipe, prof: LocalProfile, workload: dict[str, Any], points: list[Point], max_workers: int
) -> list[str]:
    """Lines that compare the recipe's sweep, lengths and workers with what this run measures."""
    w = r.recipe.workload
    reps = 1 + max((p.repetition for p in points), default=0)
    points = [p for p in points if p.repetition == 0]  # one per load; the repetitions have their own row
    lines = [f"local mode runs a scaled-down copy of {r.name} (params/local.yaml); on a cluster it runs as written:"]

    def row(what: str, cluster: str, here: str) -> None:
        lines.append(f"  {what:<12} {cluster:<32} -> {here}" + ("" if cluster != here else "  (unchanged)"))

    if w.request_rate:
        row("request rate", _levels(sorted(w.request_rate)), _levels([p.request_rate for p in points]))
        row("cap", str(w.concurrency[0]), str(points[0].concurrency) if points else "-")
    else:
        row("concurrency", _levels(w.concurrency), _levels([p.concurrency for p in points]))
    row("requests", _levels([p.requests for p in w.points()]), _levels([p.requests for p in points]))
    row(
        "repetitions",
        str(r.recipe.regression.repetitions),
        f"{reps}"
        + (" (a simulated point is not a result; --set regression.repetitions=N for more)" if reps == 1 else ""),
    )
    if workload.get("trace"):
        row("workload", "trace", f"trace {workload['trace']} (replayed as is)")
    else:
        if w.trace is not None:
            # infersweep.local.scale.local_workload replays only a trace on this machine whose prompts fit max_isl
            f = w.trace.local_file()
            why = (
                "a download; local mode replays only a trace file on this machine"
                if f is None or not f.is_file()
                else f"its prompts are longer than params/local.yaml max_isl {prof.max_isl}"
            )
            row("workload", f"trace ({w.trace.type})", f"synthetic prompts: the trace is NOT replayed ({why})")
            lines.append(
                "  the trace's shared prefixes are gone with it: cache hits and KV routing here say nothing "
                "of the trace's"
            )
        if w.isl and w.osl:
            # the prompt AIPerf really sends: a shared prefix prepended to `isl` own tokens (RecipeWorkload._shape)
            own, prefix = workload.get("isl"), workload.get("prefix_tokens")
            here = f"{(own or 0) + (prefix or 0) or '?'} / {workload.get('osl', '?')}"
            if prefix:
                here += f" (a {prefix}-token prefix shared by {workload.get('num_prefixes', '?')} prompts + {own} own)"
            row("isl / osl", f"{w.isl} / {w.osl}", here)
    for role, spec in r.recipe.topology.roles().items():
        here = min(spec.replicas * spec.nodes, max_workers)
        row(f"{role}", f"{spec.replicas} x {spec.gpus_per_replica} GPU", f"{here} mocker worker{'s' * (here != 1)}")
    if "turn_delay_ms" in workload:
        lines.append(f"  think time between turns capped at {prof.max_turn_delay_ms} ms")
    return lines
