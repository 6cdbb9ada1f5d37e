"""Every recipe says which seed row or upstream recipe it follows and how it deliberately differs; `recipes
show` prints it; the README's catalog table is generated from it and is current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from infersweep.catalog import BEGIN, END, markdown_table, readme_with_table
from infersweep.engines.registry import all_engines
from infersweep.paths import params_dir
from infersweep.recipe import RecipeError, all_recipe_paths, load_recipe, parse_recipe, recipe_data
from infersweep.recipe_context import recipe_hash
from tests.conftest import shared_dir

REPO = Path(__file__).resolve().parents[1]


def test_every_recipe_states_its_provenance():
    for p in all_recipe_paths():
        r = load_recipe(p)
        assert r.recipe.provenance is not None, f"{p}: add a provenance block (follows + differences)"
        assert r.recipe.provenance.follows.strip(), p


def test_upstream_recipes_named_as_followed_exist():
    ref = shared_dir() / "reference" / "dynamo"
    if not ref.is_dir():
        pytest.skip(f"{ref} absent (shared/ reference set not here)")
    for p in all_recipe_paths():
        follows = load_recipe(p).recipe.provenance.follows
        if follows.startswith("ai-dynamo/dynamo recipes/"):
            rel = follows.removeprefix("ai-dynamo/dynamo ").split(" ", 1)[0]
            assert (ref / rel).is_file(), f"{p}: follows {rel}, which is not in the reference set"


def test_recipes_show_prints_what_it_follows_and_every_difference():
    r = load_recipe("qwen3-32b-fp8-vllm-disagg-4p4d-kv-offload")
    out = subprocess.run([sys.executable, "-m", "infersweep.cli", "recipes", "show", r.name], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"# follows: {r.recipe.provenance.follows}" in out.stdout
    # the folder's shared differences and the recipe's own, each on its line
    assert set(r.recipe.provenance.differences) >= {"image", "benchmark", "trace", "memory", "fabric"}
    for topic, why in r.recipe.provenance.differences.items():
        assert f"# differs ({topic}): {why}" in out.stdout


def test_provenance_is_validated_like_the_rest_of_the_recipe():
    r = load_recipe("qwen3-32b-fp8-vllm-agg")
    data = recipe_data(r.path)
    with pytest.raises(RecipeError, match="provenance.follows: required field is missing"):
        parse_recipe({**data, "provenance": {"differences": {"x": "y"}}}, r.path)
    with pytest.raises(RecipeError, match="provenance.source: unknown field"):
        parse_recipe({**data, "provenance": {**data["provenance"], "source": "x"}}, r.path)


def test_provenance_does_not_change_the_recipe_hash():
    # The hash identifies what was deployed (nightly baselines compare on it); provenance is documentation.
    r = load_recipe("qwen3-32b-fp8-vllm-agg")
    data = recipe_data(r.path)
    other = parse_recipe({**data, "provenance": {"follows": "something else"}}, r.path)
    assert recipe_hash(other) == recipe_hash(r)
    changed = parse_recipe({**data, "router": "kv"}, r.path)
    assert recipe_hash(changed) != recipe_hash(r)


def test_parser_column_follows_the_engine():
    table = markdown_table()
    for p in all_recipe_paths():
        r = load_recipe(p)
        line = next(l for l in table.splitlines() if l.startswith(f"| `{r.name}` |"))
        assert line.split(" | ")[4] == r.engine.parser_tier
    # dynamo.trtllm's parser needs TensorRT-LLM, which does not install on a CPU machine (tests/engine_parsers)
    assert {n: e.parser_tier for n, e in all_engines(params_dir()).items()} == \
        {"vllm": "yes", "sglang": "yes", "trtllm": "pending"}


def test_readme_catalog_table_is_current():
    readme = (REPO / "README.md").read_text()
    assert readme_with_table(readme, markdown_table()) == readme, \
        "README.md's catalog table is stale: run `infersweep recipes --markdown --write-readme`"
    section = readme.split(BEGIN, 1)[1].split(END, 1)[0]
    assert "checked by engine parser" in section and "differs from upstream because ..." in section
    assert section.count("\n| `") == len(all_recipe_paths())


def test_readme_without_markers_is_one_clear_error():
    with pytest.raises(ValueError, match="no catalog markers"):
        readme_with_table("# README\n", "| a |\n")
