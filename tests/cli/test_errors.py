"""One root for the errors a user can fix (infersweep/errors.py UserError): the CLI shows those as one line with
exit 2, and everything else as the bug it is (traceback, exit 70), never disguised as bad input."""

from __future__ import annotations

import pytest

from infersweep import errors
from infersweep.cli import main

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"


def test_a_bug_is_not_shown_as_bad_input(tmp_path, monkeypatch, capsys):
    """Before issue 22 any KeyError (a bug's dict lookup included) printed `infersweep: <key>` and exited 2."""
    import workflows.render

    def buggy(*a, **k):
        return {}["gpu_pools"]  # a lookup bug deep in rendering

    monkeypatch.setattr(workflows.render, "render_recipe", buggy)
    assert main(["render", RECIPE, "--out", str(tmp_path)]) == errors.BUG_EXIT == 70
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "KeyError: 'gpu_pools'" in err
    assert "internal error (a bug in infersweep, not in your input)" in err


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["render", RECIPE, "--out", str(tmp_path), "--set", "no-such-parameter=1"]) == errors.USAGE_EXIT == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("infersweep: --set no-such-parameter") and "Traceback" not in err


@pytest.mark.parametrize(
    "cls",
    [
        "infersweep.params_files.RecipeError",
        "infersweep.schemas.SchemaError",
        "infersweep.local.argo.errors.WorkflowError",
        "infersweep.cluster_settings.ClusterSettingsError",
    ],
)
def test_every_bad_input_error_is_a_user_error(cls):
    import importlib

    mod, name = cls.rsplit(".", 1)
    assert issubclass(getattr(importlib.import_module(mod), name), errors.UserError)


def test_a_misspelt_recipe_field_says_what_was_meant(tmp_path):
    """One formatter (infersweep/model_errors.py) for every typed data file: a recipe's unknown field names the
    field it is closest to and the valid ones, as params/cluster.yaml's did (before: "remove it or fix its
    spelling" only)."""
    from infersweep.recipe import RecipeError, find_recipe, load_recipe

    text = find_recipe(RECIPE).read_text()
    assert "\nslo:" in text
    bad = tmp_path / f"{RECIPE}.yaml"
    bad.write_text(text.replace("\nslo:", "\nsol:", 1))
    with pytest.raises(RecipeError) as e:
        load_recipe(str(bad))
    assert f"{bad}: sol: unknown field; did you mean `slo`? valid fields here: name, " in str(e.value)


def test_every_data_file_model_has_the_one_strict_base():
    from infersweep import cluster_settings
    from infersweep.experiment import spec
    from infersweep.params_files import Strict
    from infersweep.recipe import facts, models

    for mod in (cluster_settings, spec, facts, models):
        assert issubclass(mod._Strict, Strict), mod.__name__
