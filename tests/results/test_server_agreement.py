"""Client vs server (issue 32 item 1): a client TTFT that is not the server's first token makes the point invalid,
naming both figures; a figure the server did not give is not judged; local GPU runs are judged as a cluster's."""

from __future__ import annotations

import math

import pytest

from infersweep.results.validity import load_thresholds, server_agreement_reasons


def _m(**kw):
    base = {
        "client_ttft_avg_ms": 122.0,
        "server_ttft_avg_ms": 118.0,
        "client_itl_avg_ms": 18.3,
        "server_itl_avg_ms": 18.2,
        "client_output_tokens": 8192.0,
        "server_output_tokens": 8200.0,
        "server_figures_source": "engine",
    }
    return base | kw


def test_agreeing_figures_pass():
    assert server_agreement_reasons(_m(), load_thresholds(None)) == []


def test_the_first_visible_chunk_is_caught():
    """The H200's c1 before the full-vocabulary tokenizer: 175 ms at the client, ~120 ms first token (+45 %)."""
    (why,) = server_agreement_reasons(_m(client_ttft_avg_ms=175.0, server_ttft_avg_ms=120.0), load_thresholds(None))
    assert "TTFT mean 175.0ms by the client, 120.0ms by the engine" in why and "+46%" in why


def test_tokens_the_client_did_not_see_are_caught():
    """54 visible chunks per 256 server-counted tokens: a client count 5x short."""
    why = server_agreement_reasons(_m(client_output_tokens=1728.0, server_output_tokens=8192.0), load_thresholds(None))
    assert len(why) == 1 and "output tokens" in why[0]


@pytest.mark.parametrize("missing", [None, math.nan])
def test_no_server_figure_is_not_judged(missing):
    m = _m(server_ttft_avg_ms=missing, server_itl_avg_ms=missing, server_output_tokens=missing)
    assert server_agreement_reasons(m, load_thresholds(None)) == []


def test_the_mocker_profile_leaves_it_out_and_local_gpu_runs_are_judged_as_a_cluster(monkeypatch):
    monkeypatch.setenv("INFERSWEEP_PLATFORM", "local")
    monkeypatch.delenv("INFERSWEEP_FAKE_GPU", raising=False)
    monkeypatch.setenv("INFERSWEEP_LOCAL_WORKERS", "mocker")
    mocker = load_thresholds()
    assert mocker["profile"] == "local" and server_agreement_reasons(_m(client_ttft_avg_ms=500.0), mocker) == []
    monkeypatch.setenv("INFERSWEEP_LOCAL_WORKERS", "gpu")
    gpu = load_thresholds()
    default = load_thresholds(None)
    assert gpu["profile"] == "local-gpu"
    assert gpu["min_requests"] == default["min_requests"] and gpu["cache"] == default["cache"]
    assert server_agreement_reasons(_m(client_ttft_avg_ms=500.0), gpu)
    monkeypatch.setenv("INFERSWEEP_FAKE_GPU", "1")  # a fake GPU's engines are the mocker: simulated
    assert load_thresholds()["profile"] == "local"


def _warmup_record(start_s: float, ttft_ms: float, gaps_ms: list[float], tokens: int, phase: str = "warmup") -> dict:
    """One profile_export.jsonl record as AIPerf 0.13 writes it: start/end in ns, TTFT and the inter-chunk gaps."""
    end_s = start_s + (ttft_ms + sum(gaps_ms)) / 1000
    return {
        "metadata": {
            "benchmark_phase": phase,
            "request_start_ns": int(start_s * 1e9),
            "request_end_ns": int(end_s * 1e9),
        },
        "metrics": {
            "time_to_first_token": {"value": ttft_ms, "unit": "ms"},
            "inter_chunk_latency": {"value": gaps_ms, "unit": "ms"},
            "output_sequence_length": {"value": tokens, "unit": "tokens"},
        },
    }


def test_the_warmups_tails_inside_a_seamless_window_count_on_the_clients_side(tmp_path):
    """A seamless window opens while the warm-up's last requests still generate: the server counts their tokens
    after the start, so the client's side must too (H200 SGLang c64: 63 warm-up requests in flight at the start,
    ~9,000 of their tokens inside the window, and two steady points refused at -7 %)."""
    import json

    from infersweep.aiperf.steadiness import read_window, warmup_tokens_after, window_measures

    records = tmp_path / "profile_export.jsonl"
    rows = [
        # 11 chunks, 10 ms apart from t = 100.1 s: 6 (100.15 .. 100.2 s) arrive after the window opens at 100.1455 s
        _warmup_record(100.0, 100.0, [10.0] * 10, 22),
        _warmup_record(99.0, 50.0, [10.0] * 3, 4),  # ended before the start: nothing
        _warmup_record(100.2, 30.0, [10.0], 2),  # first token inside: all of it
        _warmup_record(100.1455, 20.0, [10.0], 2, phase="profiling"),  # a measured request: the client's own count
    ]
    records.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert warmup_tokens_after(read_window(records)[1], int(100.1455e9)) == pytest.approx(22 * 6 / 11 + 2)
    # window_measures counts them from its window's first measured request, in its one pass over the records
    assert window_measures(records, 1)["client_warmup_tail_tokens"] == pytest.approx(22 * 6 / 11 + 2)
    assert window_measures(tmp_path / "none.jsonl", 1)["client_warmup_tail_tokens"] == 0.0
    # the agreement check names them when it still fails
    why = server_agreement_reasons(
        _m(client_output_tokens=9000.0, client_warmup_tail_tokens=500.0, server_output_tokens=12000.0),
        load_thresholds(None),
    )
    assert "of them 500 from warm-up requests inside the window" in why[0]
