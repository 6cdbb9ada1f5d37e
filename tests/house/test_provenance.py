"""Every recipe says which seed row or upstream recipe it follows and how it deliberately differs; `recipes
show` prints it; docs/catalog.md is generated from it and is current."""

from __future__ import annotations

import subprocess
import sys

import pytest

from infersweep.catalog import catalog_markdown, differences, folders, row, shared_differences, table
from infersweep.engines.registry import all_engines
from infersweep.paths import params_dir
from infersweep.recipe import RecipeError, all_recipe_paths, load_recipe, parse_recipe, recipe_data
from infersweep.recipe_context import recipe_hash
from tests.conftest import shared_dir
from tests.support.paths import REPO


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
    out = subprocess.run(
        [sys.executable, "-m", "infersweep.cli", "recipes", "show", r.name],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
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
    text = catalog_markdown()
    for p in all_recipe_paths():
        r = load_recipe(p)
        line = next(l for l in text.splitlines() if l.startswith(f"| `{r.name}` |"))
        assert line.split(" | ")[4] == r.engine.parser_tier
    # dynamo.trtllm's parser needs TensorRT-LLM, which does not install on a CPU machine (tests/engine_parsers)
    assert {n: e.parser_tier for n, e in all_engines(params_dir()).items()} == {
        "vllm": "yes",
        "sglang": "yes",
        "trtllm": "pending",
    }


def test_the_catalog_doc_is_current():
    doc = (REPO / "docs" / "catalog.md").read_text()
    assert doc == catalog_markdown(), "docs/catalog.md is stale: run `infersweep recipes --markdown --write`"
    assert "checked by engine parser" in doc and "differs from upstream because ..." in doc
    assert doc.count("\n| `") == len(all_recipe_paths())  # every recipe has its row


def test_a_folder_states_its_shared_differences_once():
    """Issue 22: the catalog repeated the folder defaults' differences in every row (33 KB of the README)."""
    by_folder = folders()
    report = by_folder["cluster-report"]
    shared = shared_differences(report)
    assert "image" in shared and "benchmark" in shared  # from cluster-report/_defaults.yaml
    text = table(report, shared)
    assert shared["benchmark"][:40] not in text  # not repeated in the rows
    assert catalog_markdown().count(shared["benchmark"][:40]) == 1
    own = [r for r in report if set(differences(r)) - set(shared)]
    assert own and all(row(r, shared)[5] != "-" for r in own)  # what is a row's own stays in its row
