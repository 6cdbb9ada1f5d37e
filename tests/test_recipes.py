"""Recipes as data: the real params/ load, and each mistake gives one error naming file, field and fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from infersweep.recipe import RecipeError, load_recipe, parse_recipe
from infersweep.paths import params_dir

NEMOTRON = "nemotron-3-nano-fp8-vllm-agg-kv"


def base() -> dict:
    return yaml.safe_load((params_dir() / "recipes" / f"{NEMOTRON}.yaml").read_text())


def test_walking_skeleton_recipe_matches_the_cluster_report():
    r = load_recipe(NEMOTRON)
    assert r.model.id == "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8"
    assert r.recipe.engine == "vllm" and r.recipe.router == "kv"
    assert r.recipe.topology.mode == "agg"
    assert (r.recipe.topology.workers.replicas, r.recipe.topology.workers.tp) == (8, 1)
    assert r.gpu_count == 8 and r.recipe.gpu.type == "H100"
    assert r.recipe.slo.tok_s_user_min == 50


def _error(data, tmp_path: Path) -> str:
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    with pytest.raises(RecipeError) as e:
        load_recipe(f)
    return str(e.value)


@pytest.mark.parametrize("mutate, field, words", [
    (lambda d: d.update(routr="kv"), "routr", "unknown field"),
    (lambda d: d["topology"]["workers"].update(tpp=2), "topology.workers.tpp", "unknown field"),
    (lambda d: d.update(engine="tgi"), "engine", "must be one of"),
    (lambda d: d["gpu"].update(count=16), "gpu.count", "topology uses 8 GPUs"),
    (lambda d: d["topology"]["workers"].update(tp=16, replicas=1) or d["gpu"].update(count=16), "topology.workers.tp", "larger than 1 node"),
    (lambda d: d.update(topology={"prefill": {"replicas": 4, "tp": 2}}), "topology", "add `decode`"),
    (lambda d: d.update(name="Nemotron_Nano"), "name", "lowercase"),
    (lambda d: d["workload"].update(concurrency=[1, 4, 4]), "workload.concurrency", "repeat"),
    (lambda d: d["workload"].update(concurrency=[0, 4]), "workload.concurrency.0", "greater than 0"),
    (lambda d: d["workload"].update(concurrency="1,4,16"), "workload.concurrency", "list"),
    (lambda d: d.update(model="no-such-model"), "model", "unknown model"),
    (lambda d: d["gpu"].update(type="A100"), "gpu.type", "unknown GPU type"),
    (lambda d: d.pop("workload"), "workload", "missing"),
])
def test_each_mistake_is_named_with_its_field(tmp_path, mutate, field, words):
    d = base()
    mutate(d)
    msg = _error(d, tmp_path)
    assert "bad.yaml" in msg and f"{field}:" in msg and words in msg, msg
    assert len(msg.splitlines()) == 1, msg


@pytest.mark.parametrize("text, words", [
    ("- a\n- b\n", "must be a mapping"),
    ("name: [unclosed\n", "not valid YAML"),
    ("", "must be a mapping"),
])
def test_files_that_are_not_recipes(tmp_path, text, words):
    assert words in _error(text, tmp_path)


def test_a_huge_file_is_refused_before_parsing(tmp_path):
    f = tmp_path / "huge.yaml"
    f.write_text("a: " + "x" * 300_000)
    with pytest.raises(RecipeError, match="at most"):
        load_recipe(f)


def test_unknown_recipe_name_says_how_to_list_them():
    with pytest.raises(RecipeError, match="infersweep recipes"):
        load_recipe("no-such-recipe")


def test_sweep_points_carry_requests_and_warmup():
    points = parse_recipe(base()).recipe.workload.points()
    assert [p["concurrency"] for p in points] == base()["workload"]["concurrency"]
    assert all(p["requests"] >= 10 * p["concurrency"] for p in points)
