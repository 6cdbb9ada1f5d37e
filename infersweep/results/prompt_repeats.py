"""Measured requests the prefix cache served a prompt it had seen before in the same run, and where it was sent first.

AIPerf 0.13 builds each synthetic prompt as a window at a random offset of its tokenized corpus
(aiperf/dataset/generator/prompt.py sample_tokens_from_corpus: `start = rng_to_use.randrange(corpus_len)`), so two
prompts are the same text when two draws hit one offset, whatever their seeds: about once per corpus-size pairs
(963,106 tokens with the GPU runs' tokenizer). infersweep gives every warm-up and measured request its own dataset
entry (infersweep.aiperf.flags dataset_entries), which keeps the warm-up's prompts out of the window but cannot
keep two entries from coinciding. On the H200 (2026-12-05, SGLang c2-c8) one c4 request read 1,027 of its 1,028
prompt tokens from the radix cache: the prompt c8 had measured five minutes before (benchmarks/prompt_collisions.py
regenerated both with AIPerf). Such a point still fails the cache check (the cached request ran a shorter prefill
and its round's TTFT with it); this says why, so that a reader does not look for a warm-up replay.

Read from each point's AIPerf artifacts: inputs.json (each session's request bodies, as AIPerf sent them) and
profile_export.jsonl (each request's session, turn, phase, start and the engine's cached-token count). A point
without inputs.json (a committed snapshot drops them) takes no part.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from infersweep.aiperf.artifacts import RECORDS_FILE, iter_records

INPUTS_FILE = "inputs.json"  # AIPerf's own name for the request bodies it sends (in the artifact dir)


def payload_digests(inputs: Path) -> dict[tuple[str, int], str]:
    """{(session id, turn): digest of the request body} of one inputs.json (equal bodies, equal digests)."""
    data = json.loads(inputs.read_text(encoding="utf-8")).get("data") or []
    return {
        (str(s.get("session_id")), turn): hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest()
        for s in data
        for turn, body in enumerate(s.get("payloads") or [])
    }


def _value(metrics: dict, name: str) -> float:
    v = (metrics.get(name) or {}).get("value") if isinstance(metrics.get(name), dict) else metrics.get(name)
    return float(v) if isinstance(v, (int, float)) else 0.0


def sent_requests(records: Path) -> list[tuple[int, str, int, Any, float, float]]:
    """(start ns, session, turn, phase, cached tokens, prompt tokens) of each request of a profile_export.jsonl."""
    out = []
    for phase, rec in iter_records(records):
        meta, metrics = rec.get("metadata") or {}, rec.get("metrics") or {}
        start = meta.get("request_start_ns")
        if isinstance(start, int):
            cached, total = _value(metrics, "usage_prompt_cache_read_tokens"), _value(metrics, "usage_prompt_tokens")
            out.append(
                (start, str(meta.get("conversation_id")), int(meta.get("turn_index") or 0), phase, cached, total)
            )
    return out


def repeated_prompts(point_dirs: list[Path], min_cached_share: float = 0.5) -> dict[str, list[dict[str, Any]]]:
    """{point folder name: [{session, cached, prompt_tokens, first_point, first_session, first_phase}]}: each
    measured request that read more than `min_cached_share` of its prompt from the cache and whose body had been
    sent before in the run (any point, warm-up or measured, by send time)."""
    arts = [Path(d) / "aiperf" for d in point_dirs]
    arts = [a for a in arts if (a / INPUTS_FILE).is_file() and (a / RECORDS_FILE).is_file()]
    requests = {a: sent_requests(a / RECORDS_FILE) for a in arts}

    def served_from_cache(phase: Any, cached: float, total: float) -> bool:
        return phase == "profiling" and 0 < min_cached_share * total < cached

    if not any(served_from_cache(*r[3:]) for reqs in requests.values() for r in reqs):
        return {}  # the common case: no prompt's bodies (megabytes a point at c128) need reading
    sent: list[tuple[int, str, str, str, Any, float, float]] = []
    for art, reqs in requests.items():
        digests = payload_digests(art / INPUTS_FILE)
        sent += [(t, digests[(s, k)], art.parent.name, s, ph, c, n) for t, s, k, ph, c, n in reqs if (s, k) in digests]
    first: dict[str, tuple[str, str, Any]] = {}
    out: dict[str, list[dict[str, Any]]] = {}
    for _, digest, point, session, phase, cached, total in sorted(sent):
        earlier = first.setdefault(digest, (point, session, phase))
        if earlier[:2] == (point, session) or not served_from_cache(phase, cached, total):
            continue
        out.setdefault(point, []).append(
            {
                "session": session,
                "cached": int(cached),
                "prompt_tokens": int(total),
                "first_point": earlier[0],
                "first_session": earlier[1],
                "first_phase": earlier[2],
            }
        )
    return out


def repeats_line(point: str, repeats: list[dict[str, Any]]) -> str:
    """The words the cache check adds to its reason (infersweep.results.validity): where each cached prompt was
    sent first, and whether that was this point's own warm-up (a replay) or a chance repeat."""

    def first(r: dict[str, Any]) -> str:
        own_warmup = r["first_point"] == point and r["first_phase"] == "warmup"
        return f"{r['session']} as {r['first_point']} {r['first_session']}" + (
            " (this point's warm-up)" if own_warmup else ""
        )

    replays = sum(r["first_point"] == point and r["first_phase"] == "warmup" for r in repeats)
    where = ", ".join(first(r) for r in repeats[:3]) + (f" and {len(repeats) - 3} more" if len(repeats) > 3 else "")
    why = (
        f"{replays} replayed this point's warm-up"
        if replays
        else "AIPerf's synthetic prompts are windows at random offsets of its corpus and can coincide: not a "
        "warm-up replay"
    )
    return f"{len(repeats)} measured prompt(s) had been sent before in this run ({where}); {why}"
