"""Each point and repetition gets its own recorded AIPerf seed unless the workload reuses prompts on purpose
(shared prefixes, multi-turn, a trace), and its result says what the prefix cache held at its start."""

from __future__ import annotations

from infersweep.aiperf import build_argv, choose_seed
from steps.aiperf_point import parse_args

BASE = ["--url", "http://h:1", "--model", "m", "--tokenizer", "/t", "--requests", "8", "--out", "/tmp/x"]


def _args(conc: int, *extra: str):
    return parse_args(BASE + ["--concurrency", str(conc), *extra])


def _seed_in_argv(args) -> int:
    argv = build_argv(args)
    return int(argv[argv.index("--random-seed") + 1])


def test_every_point_and_repetition_has_its_own_seed_and_it_is_reproducible():
    seeds = {
        (c, r): choose_seed(_args(c, "--isl", "64", "--osl", "8", "--repetition", str(r)))
        for c in (1, 4, 16)
        for r in (0, 1)
    }
    assert len({s for s, _, _ in seeds.values()}) == 6  # all different
    assert {p for _, p, _ in seeds.values()} == {"per-point"}
    assert {c for _, _, c in seeds.values()} == {"fresh-prompts"}
    again = _args(4, "--isl", "64", "--osl", "8", "--repetition", "1")
    assert _seed_in_argv(again) == seeds[(4, 1)][0]  # a rerun sends the same prompts


def test_a_workload_that_reuses_prompts_keeps_one_seed():
    shared = [
        choose_seed(_args(c, "--workload", '{"isl":64,"osl":8,"prefix_tokens":32,"num_prefixes":2}')) for c in (1, 8)
    ]
    assert shared[0][0] == shared[1][0]
    assert shared[0][1].startswith("shared: the workload reuses prompts (num_prefixes, prefix_tokens)")
    assert shared[0][2] == "reused-prompts"
    turns = choose_seed(_args(2, "--workload", '{"isl":64,"osl":8,"turns":3}'))
    assert turns[2] == "reused-prompts" and "turns" in turns[1]


def test_a_given_seed_is_used_but_the_cache_state_is_then_unknown():
    seed, policy, cache = choose_seed(_args(4, "--isl", "64", "--osl", "8", "--seed", "7"))
    assert (seed, policy, cache) == (7, "given (--seed)", "unknown")
    assert _seed_in_argv(_args(4, "--isl", "64", "--osl", "8", "--seed", "7")) == 7


def test_result_json_records_the_seed_aiperf_got_and_the_cache_state(tmp_path, aiperf_ref):
    """aiperf_point with the stand-in AIPerf of test_aiperf_results (it copies the real 0.13.0 reference run)."""
    import json

    from steps import aiperf_point
    from tests.aiperf.test_aiperf_results import fake_aiperf

    out = tmp_path / "c4"
    fake = fake_aiperf(tmp_path, "good", aiperf_ref / "dynamo-mocker-c4")
    args = [
        "--url",
        "http://h:1",
        "--model",
        "m",
        "--tokenizer",
        str(tmp_path),
        "--concurrency",
        "4",
        "--requests",
        "40",
        "--isl",
        "64",
        "--osl",
        "8",
        "--out",
        str(out),
        "--aiperf",
        str(fake),
        "--repetition",
        "2",
    ]
    assert aiperf_point.main(args) == 0
    # a repetition after the first has a folder of its own (c<N>-r<K>), so it never keeps the first's result
    assert not (out / "result.json").exists()
    result = json.loads((tmp_path / "c4-r2" / "result.json").read_text())
    called = json.loads((tmp_path / "called.json").read_text())["argv"]
    assert int(called[called.index("--random-seed") + 1]) == result["seed"]
    assert (result["seed_policy"], result["cache_state"], result["repetition"]) == ("per-point", "fresh-prompts", 2)
