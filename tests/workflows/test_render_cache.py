"""The render cache (workflows/render_cache.py) never changes what is rendered: a changed recipe, params file,
--set or line of rendering code renders anew, with the new output; a corrupt entry is ignored; output is the
same bytes with and without it; it can be turned off, and nothing uses it unless asked (the golden files
render without it). Speed is measured by benchmarks/startup.py, not here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infersweep.cluster_settings import load_cluster_settings
from infersweep.recipe import load_recipe
from tests.support.paths import REPO
from workflows import render_cache
from workflows.render import _Dumper, render_recipe

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"
RECIPE_FILE = Path("recipes/cluster-report/nemotron-3-nano-fp8-vllm-agg-kv.yaml")


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("INFERSWEEP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("INFERSWEEP_RENDER_CACHE", raising=False)
    return tmp_path / "cache" / "render"


@pytest.fixture
def params(tmp_path, monkeypatch) -> Path:
    """A copy of params/ that a test may edit (INFERSWEEP_PARAMS points at it)."""
    pdir = shutil.copytree(REPO / "params", tmp_path / "params")
    monkeypatch.setenv("INFERSWEEP_PARAMS", str(pdir))
    return pdir


def entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("*/*.json"))


def render(recipe=RECIPE, **kw):
    return render_recipe(load_recipe(recipe), load_cluster_settings(), cache=True, **kw)


def docs(bundle) -> list[dict]:
    return bundle.documents()


def test_a_second_render_reads_the_entry_and_gives_the_same_documents(cache):
    first = render()
    (entry,) = entries(cache)
    second = render()
    assert docs(second) == docs(first) == docs(render_recipe(load_recipe(RECIPE), load_cluster_settings()))
    assert entries(cache) == [entry]


def test_a_changed_recipe_renders_anew(cache, params):
    render()
    f = params / RECIPE_FILE
    f.write_text(f.read_text().replace("replicas: 8, tp: 1", "replicas: 4, tp: 1").replace("count: 8", "count: 4"))
    b = render()
    workers = [c for c in b.dgd["spec"]["components"] if c["type"] == "worker"]
    assert workers[0]["replicas"] == 4 and len(entries(cache)) == 2


def test_a_changed_params_file_renders_anew(cache, params):
    render()
    model = params / "models" / "nemotron-3-nano-30b-a3b-fp8.yaml"
    data = yaml.safe_load(model.read_text())
    data["revision"] = "0" * 40
    model.write_text(yaml.safe_dump(data))
    args = {p["name"]: p.get("value") for p in render().workflow["spec"]["arguments"]["parameters"]}
    assert args["model-revision"] == "0" * 40 and len(entries(cache)) == 2


def test_any_params_file_is_part_of_the_key(params):
    r, settings = load_recipe(RECIPE), load_cluster_settings()
    key = lambda: render_cache.bundle_key(
        r, settings, dgd_api="v1beta1", namespace=None, overrides=None, workflow_name=None
    )
    before = key()
    (params / "local.yaml").write_text((params / "local.yaml").read_text() + "\n# changed\n")
    assert key() != before  # a file no recipe field names: whatever a renderer reads from params/ counts


def test_a_changed_set_renders_anew(cache):
    a = render(overrides={"s3-prefix": "runs/a"})
    b = render(overrides={"s3-prefix": "runs/b"})
    value = lambda bundle: next(
        p["value"] for p in bundle.workflow["spec"]["arguments"]["parameters"] if p["name"] == "s3-prefix"
    )
    assert (value(a), value(b)) == ("runs/a", "runs/b") and len(entries(cache)) == 2
    assert value(render(overrides={"s3-prefix": "runs/a"})) == "runs/a"


def test_options_are_part_of_the_key(cache):
    assert render(dgd_api="v1alpha1").dgd["apiVersion"] == "nvidia.com/v1alpha1"
    assert render().dgd["apiVersion"] == "nvidia.com/v1beta1"
    assert render(namespace="team-a").workflow["metadata"]["namespace"] == "team-a"
    assert render(workflow_name="run-1").workflow["metadata"]["name"] == "run-1"
    assert len(entries(cache)) == 4


def test_a_corrupt_or_foreign_entry_is_ignored_and_replaced(cache):
    good = docs(render())
    (entry,) = entries(cache)
    for bad in ("{not json", json.dumps({"key": "another", "documents": {}}), '{"key": "%s"}' % entry.stem, ""):
        entry.write_text(bad)
        assert docs(render()) == good
        assert json.loads(entry.read_text())["key"] == entry.stem


def test_an_entry_is_used_only_when_asked(cache, monkeypatch):
    """Proof that a hit is read: a doctored entry comes back with cache=True; without it (the default, as
    for the golden files and tests), with --no-cache, or with INFERSWEEP_RENDER_CACHE=off, the recipe renders."""
    render()
    (entry,) = entries(cache)
    data = json.loads(entry.read_text())
    data["documents"]["dgd"]["metadata"]["name"] = "doctored"
    entry.write_text(json.dumps(data))
    assert render().dgd["metadata"]["name"] == "doctored"
    assert render_recipe(load_recipe(RECIPE), load_cluster_settings()).dgd["metadata"]["name"] == RECIPE
    monkeypatch.setenv("INFERSWEEP_RENDER_CACHE", "off")
    assert render().dgd["metadata"]["name"] == RECIPE
    monkeypatch.setenv("INFERSWEEP_RENDER_CACHE", "")
    monkeypatch.setenv("INFERSWEEP_CACHE_DIR", "off")
    assert render().dgd["metadata"]["name"] == RECIPE


def test_the_golden_writer_never_uses_the_cache(tmp_path, monkeypatch):
    # tests/support/golden.py renders with render_recipe's default (no cache): the golden files never come from it.
    from tests.support.golden import golden_documents

    monkeypatch.setenv("INFERSWEEP_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("INFERSWEEP_RENDER_CACHE", raising=False)
    assert golden_documents()
    assert not list(tmp_path.rglob("*.json"))


def test_off_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("INFERSWEEP_CACHE_DIR", raising=False)
    monkeypatch.setenv("INFERSWEEP_RENDER_CACHE", "off")
    render()
    assert not (tmp_path / "infersweep" / "render").exists()
    monkeypatch.delenv("INFERSWEEP_RENDER_CACHE")
    render()
    assert len(list((tmp_path / "infersweep" / "render").glob("*/*.json"))) == 1  # XDG_CACHE_HOME is respected


def test_strings_are_written_as_hera_writes_them():
    """A bundle from the cache is written without importing Hera; its YAML dumper has Hera's str rule
    (hera/_yaml.py str_presenter) as its own, so both write the same bytes."""
    import hera._yaml  # noqa: F401  (registers Hera's rule on PyYAML's SafeRepresenter)

    doc = {"a": "one\ntwo\n", "b": "y", "c": "N", "d": "yes", "e": "plain", "f": ["n", "x\ny"], "g": "{{inputs.x}}"}
    assert yaml.dump(doc, Dumper=_Dumper, sort_keys=False) == yaml.safe_dump(doc, sort_keys=False)


def _cli(root: Path, cache_dir: Path, out: Path, *extra: str, check_hera: bool = False) -> str:
    code = (
        "import sys; from infersweep.cli import main; rc = main(sys.argv[1:]); "
        "print('HERA', 'hera.workflows' in sys.modules); raise SystemExit(rc)"
    )
    env = os.environ | {"PYTHONPATH": str(root), "INFERSWEEP_CACHE_DIR": str(cache_dir)}
    env.pop("INFERSWEEP_RENDER_CACHE", None)
    res = subprocess.run(
        [sys.executable, "-c", code, "render", RECIPE, "--out", str(out), *extra],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout.strip().splitlines()[-1]


def _tree(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_cli_output_is_byte_identical_with_and_without_the_cache_and_a_hit_skips_hera(tmp_path):
    cache_dir = tmp_path / "cache"
    assert _cli(REPO, cache_dir, tmp_path / "miss") == "HERA True"
    assert _cli(REPO, cache_dir, tmp_path / "hit") == "HERA False"
    _cli(REPO, cache_dir, tmp_path / "none", "--no-cache")
    assert _tree(tmp_path / "hit") == _tree(tmp_path / "miss") == _tree(tmp_path / "none")
    assert len(_tree(tmp_path / "hit")) >= 4
    s3 = ("--set", "s3-prefix=runs/x")
    assert _cli(REPO, cache_dir, tmp_path / "set-miss", *s3) == "HERA True"
    assert _cli(REPO, cache_dir, tmp_path / "set-hit", *s3) == "HERA False"  # --set checked without Hera too
    assert _tree(tmp_path / "set-hit") == _tree(tmp_path / "set-miss") != _tree(tmp_path / "miss")


def test_a_changed_code_file_renders_anew(tmp_path):
    """A copy of the code, rendered once, then one line of workflows/ changed: the next render is a miss and
    shows the change."""
    root = tmp_path / "code"
    for pkg in ("infersweep", "steps", "workflows"):
        shutil.copytree(REPO / pkg, root / pkg, ignore=shutil.ignore_patterns("__pycache__", "golden"))
    shutil.copytree(REPO / "params", root / "params")
    cache_dir = tmp_path / "cache"
    _cli(root, cache_dir, tmp_path / "before")
    pipeline = root / "workflows" / "pipeline.py"
    old = '"description": description'  # every template parameter's description (infersweep/pipeline_params.py)
    assert old in pipeline.read_text()
    pipeline.write_text(
        pipeline.read_text().replace(old, '"description": description.replace("Prometheus", "CHANGED Prometheus")')
    )
    assert _cli(root, cache_dir, tmp_path / "after") == "HERA True"  # rendered, not read
    template = next((tmp_path / "after" / "templates").glob("infersweep-vllm-agg.yaml")).read_text()
    assert "CHANGED Prometheus base URL" in template
    assert "CHANGED" not in next((tmp_path / "before" / "templates").glob("infersweep-vllm-agg.yaml")).read_text()
