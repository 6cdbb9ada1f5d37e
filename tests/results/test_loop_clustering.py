"""benchmarks/loop_clustering.py: how synchronised a closed loop ran (the share of the loop started within a tenth of
a request's latency before each start), on synthetic loops whose answer is known and on the committed H200 runs
(docs/measured-h200.md, "Why SGLang's c64 TTFT is higher")."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.loop_clustering import clustering, main, thirds

REPO = Path(__file__).resolve().parents[2]
FOLDER = REPO / "benchmarks" / "measured" / "h200-2026-12-04" / "sglang-qwen3-32b-bf16-c1-c64"


def _loop(users: int, rounds: int, latency_s: float, offsets: list[float]) -> list[dict]:
    """A closed loop: user u starts at offsets[u] and again every latency_s."""
    return [
        {
            "metadata": {"request_start_ns": int((offsets[u] + k * latency_s) * 1e9)},
            "metrics": {"request_latency": {"value": latency_s * 1000}, "time_to_first_token": {"value": 100.0}},
        }
        for u in range(users)
        for k in range(rounds)
    ]


def test_a_lockstep_loop_reads_one_and_an_evenly_spread_loop_a_tenth():
    users, latency = 64, 13.0
    lockstep = _loop(users, 10, latency, [0.001 * u for u in range(users)])  # a round starts within 64 ms
    spread = _loop(users, 10, latency, [latency * u / users for u in range(users)])
    assert clustering(lockstep, users) == pytest.approx(1.0, abs=0.1)  # every request of a round sees the whole round
    assert clustering(spread, users) == pytest.approx(0.1, abs=0.03)
    # halfway: two bursts a round
    halves = _loop(users, 10, latency, [0.0 if u % 2 else latency / 2 for u in range(users)])
    assert clustering(halves, users) == pytest.approx(0.5, abs=0.05)


def test_a_loop_that_desynchronises_while_measured_shows_it_by_thirds():
    """Lockstep for the first 3 of 9 rounds, evenly spread after: the first third reads about 1, the last about a
    tenth (and TTFT, given per request, is averaged the same way)."""
    users, latency = 64, 13.0
    records = []
    for k in range(9):
        for u in range(users):
            offset = 0.001 * u if k < 3 else latency * u / users
            records.append(
                {
                    "metadata": {"request_start_ns": int((offset + k * latency) * 1e9)},
                    "metrics": {
                        "request_latency": {"value": latency * 1000},
                        "time_to_first_token": {"value": 3000.0 if k < 3 else 1000.0},
                    },
                }
            )
    (first, t1), (_, _), (last, t3) = thirds(records, users)
    assert first == pytest.approx(1.0, abs=0.1) and last == pytest.approx(0.1, abs=0.03)
    assert (t1, t3) == (3000.0, 1000.0)


def test_the_committed_c64_clustering_is_what_the_script_prints(capsys):
    """The SGLang folder's loop-clustering-c64.txt: its command, rerun, prints the same; SGLang's c64 loop ran in
    lockstep (0.97), vLLM's spread out (0.28, against 0.1 for evenly spread starts; its r1, judged unsteady, left
    out)."""
    command, _, expected = (FOLDER / "loop-clustering-c64.txt").read_text().strip().partition("\n")
    argv = command.split("benchmarks/loop_clustering.py ", 1)[1].split()
    main([str(REPO / a) if a.startswith("benchmarks/") else a for a in argv])
    out = capsys.readouterr().out.strip()
    assert out == expected.strip()
    judged, by_thirds = out.split("\n\n")
    vllm, sglang = (line for line in judged.splitlines() if line.startswith(("vllm", "sglang")))
    assert "0.28 ± 0.04 (n=2)" in vllm and "r1 left out (invalid)" in vllm
    assert "0.97 ± 0.02 (n=3)" in sglang
    # vLLM's windows open on the warm-up's synchronised loop and spread out; r1 (invalid) locked up again
    thirds_of = {}
    for line in by_thirds.splitlines()[2:]:
        cells = line.split()
        thirds_of[(cells[0], cells[3])] = [float(x) for x in cells[5:10:2]]  # engine, version, c64, rN, verdict
    for rep in ("r0", "r2"):
        first, _, last = thirds_of[("vllm", rep)]
        assert first > 0.4 and last < 0.25
    assert thirds_of[("vllm", "r1")][2] > 0.4
    assert all(min(v) > 0.9 for (engine, _), v in thirds_of.items() if engine == "sglang")
