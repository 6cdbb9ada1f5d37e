"""A run summarized without the pipeline's --context still says what it measured: the context of the recipe
of its name, computed on the recipe side (infersweep.recipe_context, as at render time) and marked
`recipe-lookup`; a name no recipe has gets no invented context."""

from __future__ import annotations

from infersweep.recipe import all_recipe_paths, load_recipe
from infersweep.recipe_context import named_recipe_context, recipe_hash
from infersweep.results.context import build_context


def test_a_run_without_context_gets_its_recipes_render_time_context(tmp_path):
    resolved = load_recipe(all_recipe_paths()[0])
    ctx = build_context(tmp_path, given={}, title=resolved.name, gpu_count=1, slo={}, points=[])
    assert ctx["context_source"] == "recipe-lookup"
    assert ctx["recipe_hash"] == recipe_hash(resolved) and ctx["engine"] == resolved.recipe.engine
    assert ctx["gpu_count"] == 1  # what the run itself says wins over the recipe's


def test_a_name_no_recipe_has_gets_no_invented_context(tmp_path):
    assert named_recipe_context("no-such-recipe") == {}
    ctx = build_context(tmp_path, given={}, title="no-such-recipe", gpu_count=2, slo={}, points=[])
    assert ctx["context_source"] == "none" and ctx["recipe_hash"] is None and ctx["recipe"] == "no-such-recipe"
