"""The physics check on measured ITL (weights read per token / HBM bandwidth), on the cluster report's
TP=1 vs TP=2 figures (params/measured/cluster-report-tp1-vs-tp2.yaml). Pure arithmetic: milliseconds."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from infersweep.paths import params_dir
from infersweep.predict.physics import check_itl, check_recipe_itl, check_results, itl_floor_ms
from infersweep.recipe import load_recipe
from infersweep.recipe.facts import GpuType, Model
from infersweep.recipe.resolve import gpu_types

FIGURES = yaml.safe_load((params_dir() / "measured" / "cluster-report-tp1-vs-tp2.yaml").read_text())
H100 = gpu_types()["H100"]


def _model(name: str) -> Model:
    return Model.model_validate(yaml.safe_load((params_dir() / "models" / f"{name}.yaml").read_text()))


def _c1(tp: int) -> float:
    return next(p["itl_ms"] for p in FIGURES["points"] if p["tp"] == tp and p["concurrency"] == 1)


def test_dense_32b_fp8_cannot_decode_in_4ms_on_one_h100():
    qwen32 = _model("qwen3-32b-fp8")
    assert itl_floor_ms(qwen32, H100, 1) == pytest.approx(32.8 / 3.35, rel=1e-3)  # ~9.8 ms per token
    v = check_itl(qwen32, H100, 1, _c1(1), gpu_name="H100")
    assert v.plausible is False and "implausible" in v.message and "9.79 ms" in v.message
    assert check_itl(qwen32, H100, 2, _c1(2)).plausible is False  # TP=2: floor 4.9 ms > 3.52 ms
    assert check_itl(qwen32, H100, 2, 19.7).plausible is True  # what AIConfigurator predicts for it


def test_the_tp_paragraph_fits_only_a_3b_active_moe_and_its_deployment_is_qwen36():
    fits = {}
    for f in sorted((params_dir() / "models").glob("*.yaml")):
        m = _model(f.stem)
        verdicts = [check_itl(m, H100, 1, _c1(1)).plausible, check_itl(m, H100, 2, _c1(2)).plausible]
        fits[f.stem] = verdicts
    plausible = {k for k, v in fits.items() if v == [True, True]}
    assert "qwen3-32b-fp8" not in plausible and "qwen3-235b-a22b-fp8" not in plausible
    assert FIGURES["deployment"]["model"] in plausible  # qwen3.6-35b-a3b-fp8
    assert plausible <= {
        "qwen3.6-35b-a3b-fp8",
        "nemotron-3-nano-30b-a3b-fp8",
        "nemotron-3.5-lightning-30b-a3b-bf16",
        "nemotron-3.5-lightning-30b-a3b-nvfp4",
        "llama-3.1-8b-instruct",
    }
    # Of the report's 4P+4D deployments (both in the catalog), only the Qwen3.6 one is physically possible.
    four_four = [p.stem for p in (params_dir() / "recipes" / "cluster-report").glob("*4p4d*.yaml")] + [
        p.stem for p in (params_dir() / "recipes" / "cluster-report").glob("qwen36-*disagg*.yaml")
    ]
    models = {load_recipe(n).recipe.model for n in four_four}
    assert {m for m in models if fits[m] == [True, True]} == {"qwen3.6-35b-a3b-fp8"}


def test_missing_facts_are_named_not_guessed():
    v = check_itl(_model("glm-5.2-fp8"), H100, 16, 1.0)
    assert v.plausible is None and "active_params_b" in v.message
    v = check_itl(_model("qwen3-32b-fp8"), GpuType(per_node=8, memory_gib=80), 1, 1.0)
    assert v.plausible is None and "mem_bw_tb_s" in v.message


def test_results_rows_are_judged_and_speculative_recipes_are_not():
    r = load_recipe("qwen3-32b-fp8-vllm-agg")  # 8 x TP=2: floor 4.9 ms
    df = pd.DataFrame(
        [
            {"concurrency": 1, "status": "ok", "itl_avg_ms": 3.52},
            {"concurrency": 8, "status": "ok", "itl_avg_ms": 20.1},
            {"concurrency": 16, "status": "failed", "itl_avg_ms": 1.0},
        ]
    )
    verdicts = dict(check_results(df, r))
    assert verdicts[1].plausible is False and verdicts[8].plausible is True and 16 not in verdicts
    spec = load_recipe("lightning-vllm-agg-b200-mtp-bf16")
    assert check_recipe_itl(spec, 0.1).plausible is None  # several tokens per step: not judged
