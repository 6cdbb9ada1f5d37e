"""The pipeline's parameters are declared once (infersweep/pipeline_params.py): every rendered pipeline
template has exactly the declared parameters, with their help and defaults, and every declared check refuses a
bad `--set` with one line naming the key."""

from __future__ import annotations

import pytest

from infersweep.cli_util import check_sets, parse_sets
from infersweep.cluster_settings import load_cluster_settings
from infersweep.params_files import RecipeError
from infersweep.pipeline_params import BY_NAME, PARAMS, RUN_PARAMS
from infersweep.recipe import all_recipe_paths, load_recipe
from workflows.pipeline import pipeline_defaults
from workflows.render import library_templates

ALL = [p.name for p in PARAMS]


@pytest.fixture(scope="module")
def settings():
    return load_cluster_settings()


@pytest.fixture(scope="module")
def pipeline_templates(settings):
    shapes = set()
    for path in all_recipe_paths():
        r = load_recipe(path)
        shapes.add((r.recipe.engine, r.recipe.topology.mode))
    out = [
        t
        for engine, mode in sorted(shapes)
        for t in library_templates(settings, engine, mode)
        if t["metadata"].get("labels", {}).get("infersweep.io/kind") == "pipeline"
    ]
    assert len(out) == len(shapes) > 1
    return out


def test_every_template_parameter_has_exactly_one_declaration(pipeline_templates, settings):
    assert len(ALL) == len(set(ALL))  # one declaration per name
    defaults = pipeline_defaults(settings)
    for t in pipeline_templates:
        params = t["spec"]["arguments"]["parameters"]
        assert [p["name"] for p in params] == ALL, t["metadata"]["name"]  # each declared one is there, nothing else
        for p in params:
            d = BY_NAME[p["name"]]
            assert p["description"] == d.help
            assert p.get("enum") == (list(d.enum) if d.enum else None)
            assert p.get("value") == defaults.get(d.name)
            # a default is declared (literally or as a cluster setting) exactly when the template has one
            assert ("value" in p) == (d.default is not None or d.setting is not None), d.name


# A value each declared check refuses. A new check without a bad value here fails the test below.
BAD = {
    "recipe": "Bad_Name",
    "dgd-name": "-starts-with-a-dash",
    "dgd-api-version": "v2",
    "model": "Qwen/Qwen3 0.6B",
    "model-revision": "abc def",
    "model-source": "s3://bucket/model",
    "model-cache-pvc": "Model_Cache",
    "model-cache-size": "lots",
    "storage-class": "Not A Class",
    "ready-timeout-s": "0",
    "points": '{"concurrency": 1}',
    "workload": '{"islx": 1024}',
    "max-error-rate": "1.5",
    "point-timeout-s": "nan",
    "gpu-count": "1.5",
    "slo": '{"ttft_ms": -1}',
    "prometheus-url": "not a url",
    "s3-bucket": "Bad_Bucket",
    "s3-prefix": "runs/../etc",
}


def test_every_declared_check_has_a_bad_value_here():
    assert set(BAD) == {p.name for p in PARAMS if p.check or p.setting}


@pytest.mark.parametrize("key", sorted(BAD))
def test_a_bad_value_is_refused_with_one_line_naming_the_key(key):
    with pytest.raises(RecipeError) as e:
        check_sets({key: BAD[key]}, ALL)
    msg = str(e.value)
    assert msg.startswith(f"--set {key}") and "\n" not in msg, msg


@pytest.mark.parametrize("key", [p.name for p in PARAMS if not p.multiline])
def test_a_one_line_parameter_refuses_a_newline(key):
    with pytest.raises(RecipeError, match=f"^--set {key}=...: a value may not contain a newline or NUL$"):
        check_sets({key: "a\nb"}, ALL)


def test_each_default_passes_its_own_check(settings):
    sets = {k: str(v) for k, v in pipeline_defaults(settings).items()}
    check_sets(dict(sets), ALL)
    check_sets({"dgd": "apiVersion: x\nkind: DynamoGraphDeployment\n"}, ALL)  # the DGD's YAML has newlines


def test_run_parameters_pass_through_a_set_and_others_do_not(settings):
    assert RUN_PARAMS == (
        "model-source",
        "model-cache-pvc",
        "model-cache-size",
        "storage-class",
        "ready-timeout-s",
        "prometheus-url",
        "s3-bucket",
        "s3-prefix",
        "baseline-prefix",
    )
    assert parse_sets(["ready-timeout-s=600"]).params == {"ready-timeout-s": "600"}
    with pytest.raises(RecipeError, match=r"^--set gpu-count: cannot be set: the GPU count follows from the topology"):
        parse_sets(["gpu-count=1"])
