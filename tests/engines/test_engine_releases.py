"""Engine releases (params/engines/releases/, infersweep/recipe/release.py): `--dgd-api` picks the Dynamo
release whose images and flags a DGD renders with; a recipe flag the release's parser lacks is refused."""

from __future__ import annotations

import json

import pytest
import yaml

from infersweep.cluster_settings import load_cluster_settings
from infersweep.dgd.render import render_dgd
from infersweep.params_files import RecipeError
from infersweep.recipe import load_recipe
from infersweep.recipe.release import _releases, accepted, for_dgd_api, release_flags

RECIPES = {
    "vllm": "qwen3-32b-fp8-vllm-disagg-4p4d-kv",
    "sglang": "qwen3-32b-fp8-sglang-disagg-6p2d-kv",
    "trtllm": "lightning-trtllm-agg-h200-mtp",
}
RUNTIME = {"vllm": "vllm-runtime", "sglang": "sglang-runtime", "trtllm": "tensorrtllm-runtime"}


def images(dgd: dict) -> set[str]:
    if dgd["apiVersion"].endswith("v1alpha1"):
        return {s["extraPodSpec"]["mainContainer"]["image"] for s in dgd["spec"]["services"].values()}
    return {c["podTemplate"]["spec"]["containers"][0]["image"] for c in dgd["spec"]["components"]}


@pytest.mark.parametrize("engine", sorted(RECIPES))
def test_v1alpha1_renders_the_dynamo_1_3_images_and_v1beta1_the_1_6_ones(engine):
    """A 1.3 operator gets DGD v1alpha1 with Dynamo 1.3.1's runtime images (frontend and workers), not 1.6.1's."""
    r = load_recipe(RECIPES[engine])
    assert images(render_dgd(r, api_version="v1alpha1")) == {f"nvcr.io/nvidia/ai-dynamo/{RUNTIME[engine]}:1.3.1"}
    assert images(render_dgd(r, api_version="v1beta1")) == {f"nvcr.io/nvidia/ai-dynamo/{RUNTIME[engine]}:1.6.1"}


def test_a_recipes_own_image_wins_in_every_release():
    r = load_recipe(RECIPES["vllm"])
    r.recipe = r.recipe.model_copy(update={"image": "registry.example/vllm-runtime:1.3.0"})
    assert images(render_dgd(r, api_version="v1alpha1")) == {"registry.example/vllm-runtime:1.3.0"}


def test_the_run_context_carries_the_releases_image_and_hash():
    """What the results rows say was deployed: the 1.3.1 image, and a recipe hash other than the 1.6.1 one."""
    from workflows.render import render_recipe

    settings = load_cluster_settings()
    r = load_recipe("nemotron-3-nano-fp8-vllm-agg-kv")

    def context(api: str) -> dict:
        wf = render_recipe(r, settings, dgd_api=api).workflow
        params = {p["name"]: p["value"] for p in wf["spec"]["arguments"]["parameters"]}
        return json.loads(params["context"])

    old, new = context("v1beta1"), context("v1alpha1")
    assert new["engine_image"] == "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1"
    assert old["engine_image"] == "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1"
    assert new["recipe_hash"] != old["recipe_hash"]


def test_a_1_6_only_flag_is_refused_for_the_1_3_release():
    """vLLM 0.31's --max-num-queued-reqs does not exist in vLLM 0.23 (ai-dynamo 1.3.1): the 1.3.1 worker would
    exit at start-up on the cluster. One error names the field, the flag, the release and the fix."""
    r = load_recipe(RECIPES["vllm"])
    r.recipe = r.recipe.model_copy(update={"engine_args": ["--max-num-queued-reqs", "64"]})
    render_dgd(r, api_version="v1beta1")  # Dynamo 1.6.1 has it
    with pytest.raises(RecipeError) as e:
        render_dgd(r, api_version="v1alpha1")
    msg = str(e.value)
    assert "engine_args: --max-num-queued-reqs is not a flag of dynamo.vllm in Dynamo 1.3.1 (vLLM 0.23.0)" in msg
    assert "Dynamo 1.6.1's (--dgd-api v1beta1)" in msg


def test_a_1_3_only_flag_is_refused_for_the_1_6_release_and_a_typo_for_both():
    r = load_recipe(RECIPES["sglang"])
    r.recipe = r.recipe.model_copy(update={"engine_args": ["--stream-output"]})  # SGLang 0.5.14's, gone in 0.5.21
    render_dgd(r, api_version="v1alpha1")
    with pytest.raises(
        RecipeError,
        match=r"--stream-output is not a flag of dynamo.sglang in Dynamo 1.6.1 .*"
        r"Dynamo 1.3.1's \(--dgd-api v1alpha1\)",
    ):
        render_dgd(r, api_version="v1beta1")
    r.recipe = r.recipe.model_copy(update={"engine_args": ["--mem-fraction-statik", "0.8"]})
    for api in ("v1beta1", "v1alpha1"):
        with pytest.raises(RecipeError, match="--mem-fraction-statik is not a flag .* check its spelling"):
            render_dgd(r, api_version=api)


def test_flags_are_read_the_way_the_parsers_read_them():
    """`--a=b`, vLLM's `--a_b` and `--a.key`, and unambiguous prefixes (argparse allow_abbrev) are flags."""
    r = load_recipe(RECIPES["vllm"])
    r.recipe = r.recipe.model_copy(
        update={"engine_args": ["--max_num_seqs=8", "--compilation-config.level", "3", "--gpu-memory-util", "0.8"]}
    )
    render_dgd(r, api_version="v1alpha1")
    sglang = release_flags("dynamo-1.3.1")["dynamo.sglang"]
    assert accepted("--tp", sglang)  # params/engines/sglang.yaml's tp_flag, a prefix of --tp-size only
    assert not accepted("--enable", sglang)  # ambiguous: argparse refuses it


def test_the_same_release_twice_is_the_same_object():
    r = load_recipe(RECIPES["vllm"])
    once = for_dgd_api(r, "v1alpha1")
    assert once.release == "dynamo-1.3.1" and for_dgd_api(once, "v1alpha1") is once
    assert r.release is None and r.engine.image.endswith(":1.6.1")  # the resolved recipe is not changed


def test_two_releases_for_one_dgd_api_are_refused(tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump({"dynamo": name, "dgd_api": "v1alpha1", "engines": {}}))
    with pytest.raises(RecipeError, match="dgd_api: v1alpha1 is already the release a's; one release per DGD"):
        _releases(tmp_path, (0,))


def test_an_experiment_under_v1alpha1_deploys_the_1_3_images():
    from infersweep.experiment.plan import make_plan
    from infersweep.experiment.spec import load_experiment
    from workflows.experiment import experiment_template

    plan = make_plan(load_experiment("qwen3-32b-tp1-vs-tp2"))
    # the experiment's template holds what it deploys (its Workflow only references it: docs/experiment-templates.md)
    doc = experiment_template(plan, load_cluster_settings(), dgd_api="v1alpha1").to_dict()
    deployed = [
        yaml.safe_load(p["value"])
        for t in doc["spec"]["templates"]
        for task in t.get("dag", {}).get("tasks", [])
        if task["name"].endswith("-deploy")
        for p in task["arguments"]["parameters"]
        if p["name"] == "dgd"
    ]
    assert deployed and all(images(d) == {"nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1"} for d in deployed)
    contexts = [
        json.loads(p["value"])
        for t in doc["spec"]["templates"]
        for task in t.get("dag", {}).get("tasks", [])
        if task["name"].endswith("-summarize")
        for p in task["arguments"]["parameters"]
        if p["name"] == "context"
    ]
    assert contexts and {c["engine_image"] for c in contexts} == {"nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1"}


def test_an_engine_a_release_does_not_list_is_refused_outside_the_base_release(monkeypatch):
    import infersweep.recipe.release as release

    older = release.Release(
        dynamo="1.3.1", dgd_api="v1alpha1", engines={"vllm": release.ReleaseEngine(version="0.23.0")}
    )
    monkeypatch.setattr(release, "release_for_api", lambda api, pdir=None: ("dynamo-1.3.1", older))
    with pytest.raises(RecipeError, match="engine: Dynamo 1.3.1 .* has no trtllm here; add engines.trtllm"):
        for_dgd_api(load_recipe(RECIPES["trtllm"]), "v1alpha1")
