"""A closed-loop point can open on a spread-out loop: the recipe's `workload.warmup_ramp_s` starts the warm-up's
users one after another (AIPerf 0.13 --warmup-concurrency-ramp-duration), and the seamless window takes over the
spread (infersweep/aiperf/flags.py RAMP_KEY).

Why: on the H200 SGLang's c64 loop ran in lockstep for its whole window (0.97 of it started within a tenth of a
latency of each start) while vLLM's opened locked and spread out as it ran, so how the loop started decided a
72.7 % TTFT difference as much as the engines did (docs/measured-h200.md, benchmarks/loop_clustering.py)."""

from __future__ import annotations

import json

import pytest

from infersweep import aiperf as aiperf_contract
from infersweep.aiperf.flags import PHASES_FILE, RAMP_FLAG, write_phases_file
from infersweep.recipe import RecipeError, load_recipe
from infersweep.recipe.models import Workload
from infersweep.recipe_context import recipe_hash
from steps import aiperf_point
from tests.support.aiperf_resolve import resolved
from tests.support.mocker_point import AIPERF_BIN, c4_point, peak_in_flight, record_metadata

BASE = {"isl": 64, "osl": 16, "concurrency": [4, 16]}
H200 = "qwen3-32b-bf16-vllm-h200-tp1"


def _args(out, workload: dict, *extra: str, warmup: int = 64):
    return aiperf_point.parse_args(
        [
            *("--url", "http://127.0.0.1:9", "--model", "m", "--tokenizer", "gpt2", "--out", str(out)),
            *("--requests", "192", "--warmup", str(warmup), "--concurrency", "16"),
            *("--workload", json.dumps(workload), *extra),
        ]
    )


def test_the_ramp_reaches_every_point_of_a_closed_loop_sweep():
    w = Workload(**BASE, warmup_ramp_s=12.5)
    assert w.aiperf_workload()["warmup_ramp_s"] == 12.5
    # a scaled local run on the mocker leaves it out: its seconds are one latency at the recipe's scale
    assert "warmup_ramp_s" not in w.synthetic_workload(32, 8)
    assert "warmup_ramp_s" not in Workload(**BASE).aiperf_workload()


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"concurrency": [16], "request_rate": [2.0]}, "remove it, or use a concurrency sweep"),
        ({"warmup_requests": 0}, "warmup_requests above 0"),
        ({"warmup_ramp_s": 0}, "greater than 0"),
        ({"warmup_ramp_s": 7200}, "less than or equal to 3600"),
    ],
)
def test_a_ramp_that_could_not_spread_a_measured_loop_is_one_clear_recipe_error(extra, message):
    with pytest.raises(ValueError, match=message):
        Workload(**{**BASE, "warmup_ramp_s": 10.0, **extra})


def test_a_ramp_beside_a_trace_is_refused_with_the_field_named():
    with pytest.raises(RecipeError, match=r"warmup_ramp_s.*no trace"):
        load_recipe("qwen3-32b-fp8-vllm-disagg-6p2d", overrides={"workload.warmup_ramp_s": 5})


def test_only_a_recipe_that_sets_a_ramp_changes_its_hash():
    """Unset, the recipe keeps the hash its measured runs and baselines carry (recipe_context
    LATER_WORKLOAD_DEFAULTS); set, it measures differently and hashes differently."""
    plain = load_recipe(H200)
    assert recipe_hash(plain) == recipe_hash(load_recipe(H200, overrides={"workload.warmup_ramp_s": None}))
    ramped = load_recipe(H200, overrides={"workload.warmup_ramp_s": 12.5})
    assert recipe_hash(ramped) != recipe_hash(plain)
    assert ramped.recipe.workload.aiperf_workload()["warmup_ramp_s"] == 12.5


def test_a_seamless_point_asks_aiperf_to_ramp_its_warmup(tmp_path):
    argv = aiperf_contract.build_argv(_args(tmp_path / "c16", {"isl": 128, "osl": 16, "warmup_ramp_s": 12.5}))
    assert argv[argv.index(RAMP_FLAG) + 1] == "12.5"
    assert "--config" in argv  # the window follows the ramped warm-up seamlessly
    assert RAMP_FLAG not in aiperf_contract.build_argv(_args(tmp_path / "c16", {"isl": 128, "osl": 16}))


@pytest.mark.parametrize(
    "workload, extra, warmup",
    [
        ({"isl": 128, "osl": 16, "warmup_ramp_s": 5}, (), 0),
        ({"isl": 128, "osl": 16, "warmup_ramp_s": 5}, ("--request-rate", "4"), 64),
        ({"trace": "/data/t.jsonl", "trace_type": "mooncake_trace", "warmup_ramp_s": 5}, (), 64),
        ({"isl": 128, "osl": 16, "warmup_ramp_s": -1}, (), 64),
        ({"isl": 128, "osl": 16, "warmup_ramp_s": "soon"}, (), 64),
    ],
    ids=["no-warmup", "rate-point", "trace", "negative", "not-a-number"],
)
def test_the_point_step_refuses_a_ramp_it_could_not_honour_before_aiperf_runs(
    tmp_path, capsys, workload, extra, warmup
):
    with pytest.raises(SystemExit) as e:
        _args(tmp_path / "c16", workload, *extra, warmup=warmup)
    assert e.value.code == 2
    assert "warmup_ramp_s" in capsys.readouterr().err


@pytest.mark.skipif(not AIPERF_BIN.exists(), reason="needs the AIPerf env at .venv-aiperf")
def test_aiperf_resolves_the_ramp_onto_the_warmup_phase_alone(tmp_path):
    """AIPerf's own resolver puts the ramp on the warm-up phase (concurrency_ramp, linear) and changes nothing else:
    the profiling phase starts with every slot the warm-up frees (`seamless`), without a ramp of its own."""
    out = tmp_path / "c16"
    out.mkdir()
    write_phases_file(out)
    shape = {"isl": 128, "osl": 16, "server_token_count": True}
    [ramped] = resolved(aiperf_contract.build_argv(_args(out, shape | {"warmup_ramp_s": 12.5})), tmp_path)
    [plain] = resolved(aiperf_contract.build_argv(_args(out, shape)), tmp_path)
    phases = {p["name"]: p for p in ramped["phases"]}
    assert phases["warmup"]["concurrency_ramp"]["duration"] == 12.5
    assert phases["warmup"]["concurrency_ramp"]["strategy"] == "linear"
    assert phases["profiling"]["concurrency_ramp"] is None and phases["profiling"]["seamless"] is True
    phases["warmup"]["concurrency_ramp"] = None
    assert ramped == plain


@pytest.mark.e2e
def test_a_ramped_warmup_starts_its_users_one_after_another_on_a_real_frontend(tmp_path):
    """A real Dynamo frontend + mocker and real AIPerf, c4 with a 3 s ramp: in the ramp's first third AIPerf lets
    one user send (all at once, four would start together), the loop then holds four, and the row says how the
    window started. AIPerf's ramp waits with asyncio.sleep (aiperf/timing/ramping.py Ramper._run_discrete), so a
    slow machine can delay the later users but never start one early: the count cannot depend on load."""
    from infersweep.results.summarize import summarize

    ramp_s = 3.0
    run = tmp_path / "run"
    out = run / "points" / "c4"
    workload = {"isl": 64, "osl": 256, "warmup_ramp_s": ramp_s}
    result = c4_point(tmp_path, out, "--requests", "16", "--warmup", "16", "--workload", json.dumps(workload))
    assert (result["warmup_mode"], result["warmup_ramp_s"]) == ("seamless-ramped", ramp_s)
    assert (out / PHASES_FILE).is_file() and result["argv"][result["argv"].index(RAMP_FLAG) + 1] == "3"
    metas = record_metadata(out)
    phases = {p["phase_kind"]: p for p in json.loads((out / "aiperf" / "phase_manifest.json").read_text())["phases"]}
    ramp_start = phases["warmup"]["start_ns"]
    first_third = [m for m in metas if m["request_start_ns"] < ramp_start + ramp_s / 3 * 1e9]
    assert len(first_third) == 1, [m["request_start_ns"] - ramp_start for m in metas]
    assert peak_in_flight(metas) == 4  # the ramp reached the point's concurrency
    [row] = summarize(run, gpu_count=1, slo={}, title="ramped").to_dict("records")
    assert row["warmup_mode"] == "seamless-ramped"
