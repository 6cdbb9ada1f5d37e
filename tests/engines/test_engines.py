"""Adding an engine is one data file plus one module; forgetting either, or a rule, fails loudly.

The stub engine here is written exactly as a user would add a fourth engine: params/engines/stub.yaml (in a
temporary copy of params/) and stub.py in a directory on $INFERSWEEP_ENGINES_PATH (the registry's documented
discovery mechanism, infersweep/engines/registry.py). Nothing else is edited, and its recipe renders to a DGD
that passes the DGD CRD's schema.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from infersweep.dgd.render import render_dgd
from infersweep.engines.base import Engine
from infersweep.engines.registry import ENGINES_PATH_ENV, all_engines
from infersweep.params_files import RecipeError
from infersweep.paths import params_dir
from infersweep.recipe import load_recipe
from infersweep.schemas import validate_dgd

STUB_DATA = {
    "image": "ghcr.io/example/stub-runtime:0.1",
    "module": "dynamo.stub",
    "model_flag": "--stub-model",
    "tp_flag": "--stub-tp",
    "working_dir": "/workspace",
    "prefill_args": ["--stub-role", "prefill"],
    "decode_args": ["--stub-role", "decode"],
    "kv_router_args": ["--stub-kv-events"],
    "dp_flag": "--stub-dp",
}

# Every rule of infersweep.engines.base.Engine, the simplest way: DP inside TP, no offload, no speculation.
STUB_RULES = {
    "label": '    label: ClassVar[str] = "Stub"\n',
    "backend_framework": '    backend_framework: ClassVar[str] = "vllm"  # launched like vLLM by the operator\n',
    "dp_adds_gpus": "    dp_adds_gpus: ClassVar[bool] = False\n",
    "parser_tier": '    parser_tier: ClassVar[str] = "no"\n',
    "warmup_s": "    warmup_s: ClassVar[float] = 60.0\n",
    "parallelism_problem": """
    def parallelism_problem(self, w):
        return ("dp", f"Stub runs DP inside TP; dp must divide TP={w.tp}") if w.tp % w.dp else None
""",
    "offload_problem": '    def offload_problem(self, off):\n        return "kv_offload", "Stub has no CPU KV tier; remove kv_offload"\n',
    "speculative_problem": "    def speculative_problem(self, spec):\n        return None\n",
    "transport_problem": "    def transport_problem(self, t):\n        return None\n",
    "parallelism_args": "    def parallelism_args(self, w):\n        return spelled_parallelism_args(self, w)\n",
    "kv_transfer_args": "    def kv_transfer_args(self, r):\n        return []\n",
    "offload_args": "    def offload_args(self, r, role):\n        return []\n",
    "speculative_args": "    def speculative_args(self, r):\n        return []\n",
    "offload_host_gib": "    def offload_host_gib(self, r, w, args):\n        return 0.0\n",
    "publishes_kv_events": '    def publishes_kv_events(self, args, env):\n        return "--stub-kv-events" in args\n',
    "aic_parallelism": "    def aic_parallelism(self, w):\n        return max(1, w.tp // w.dp), w.dp\n",
}

STUB_RECIPE = {
    "name": "stub-agg-kv",
    "model": "nemotron-3-nano-30b-a3b-fp8",
    "engine": "stub",
    "gpu": {"type": "H100", "count": 4},
    "topology": {"workers": {"replicas": 2, "tp": 2, "dp": 2}},
    "router": "kv",
    "workload": {"isl": 128, "osl": 16, "concurrency": [1, 4]},
}


def _stub_module(leave_out: tuple[str, ...] = ()) -> str:
    body = "".join(code for rule, code in STUB_RULES.items() if rule not in leave_out)
    return (
        textwrap.dedent("""\
        from typing import ClassVar

        from infersweep.engines.base import Engine, spelled_parallelism_args


        class Stub(Engine):
            name: ClassVar[str] = "stub"
        """)
        + body
        + "\n\nENGINE = Stub\n"
    )


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A copy of params/ and an engines directory on $INFERSWEEP_ENGINES_PATH: (params dir, engines dir)."""
    pdir, edir = tmp_path / "params", tmp_path / "engines"
    shutil.copytree(params_dir(), pdir)
    edir.mkdir()
    monkeypatch.setenv(ENGINES_PATH_ENV, str(edir))
    return pdir, edir


def _add_stub(pdir: Path, edir: Path, data: dict | None = None, leave_out: tuple[str, ...] = ()) -> Path:
    (pdir / "engines" / "stub.yaml").write_text(yaml.safe_dump(data or STUB_DATA, sort_keys=False))
    (edir / "stub.py").write_text(_stub_module(leave_out))
    recipe = pdir.parent / "stub-agg-kv.yaml"
    recipe.write_text(yaml.safe_dump(STUB_RECIPE, sort_keys=False))
    return recipe


def _one_line_error(recipe: Path, pdir: Path) -> str:
    with pytest.raises(RecipeError) as e:
        load_recipe(recipe, pdir)
    msg = str(e.value)
    assert "\n" not in msg, msg
    return msg


def test_a_stub_engine_is_one_data_file_and_one_module_and_renders_a_valid_dgd(world):
    pdir, edir = world
    r = load_recipe(_add_stub(pdir, edir), pdir)
    assert isinstance(r.engine, Engine) and r.engine.name == "stub"
    assert r.gpu_count == 4  # the stub's own DP rule: DP inside TP, 2 replicas x TP=2
    # v1alpha1 renders the Dynamo 1.3.1 release, which names the images of each engine it renders
    # (params/engines/releases/, docs/engine-releases.md): a new engine is refused there until it is listed.
    with pytest.raises(RecipeError, match="Dynamo 1.3.1 .* has no stub here; add engines.stub to"):
        render_dgd(r, api_version="v1alpha1")
    release = pdir / "engines" / "releases" / "dynamo-1.3.1.yaml"
    data = yaml.safe_load(release.read_text())
    data["engines"]["stub"] = {"version": "0.1"}
    release.write_text(yaml.safe_dump(data))
    for api in ("v1beta1", "v1alpha1"):
        dgd = render_dgd(r, api_version=api)
        validate_dgd(dgd)  # the DGD CRD's schema, unknown fields forbidden
        assert dgd["spec"]["backendFramework"] == "vllm"
    comp = next(c for c in render_dgd(r)["spec"]["components"] if c["type"] == "worker")
    main = comp["podTemplate"]["spec"]["containers"][0]
    assert main["command"] == ["python3", "-m", "dynamo.stub"] and main["image"] == STUB_DATA["image"]
    # the data file's spellings, the module's flag rule (dp > 1), and the KV router's events (router: kv)
    assert main["args"] == [
        "--stub-model",
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8",
        "--stub-tp",
        "2",
        "--stub-dp",
        "2",
        "--stub-kv-events",
    ]
    assert set(all_engines(pdir)) == {"sglang", "stub", "trtllm", "vllm"}


def test_the_stub_engines_own_invariant_is_checked(world):
    pdir, edir = world
    recipe = _add_stub(pdir, edir)
    data = yaml.safe_load(recipe.read_text())
    data["topology"]["workers"]["dp"] = 3
    recipe.write_text(yaml.safe_dump(data))
    assert _one_line_error(recipe, pdir).endswith("topology.workers.dp: Stub runs DP inside TP; dp must divide TP=2")


def test_a_data_file_without_its_module_fails_naming_the_file_and_the_module_to_add(world):
    pdir, _ = world
    (pdir / "engines" / "orphan.yaml").write_text(yaml.safe_dump(STUB_DATA))
    # any recipe fails, not only one naming the engine: a half-added engine is never silently ignored
    msg = _one_line_error(pdir / "recipes" / "demo" / "demo-prefix-kv.yaml", pdir)
    assert msg.startswith(
        f"{pdir / 'engines' / 'orphan.yaml'}: no engine module for it; add infersweep/engines/orphan.py"
    )
    assert ENGINES_PATH_ENV in msg


def test_a_module_without_its_data_file_fails_naming_the_file_to_add(world):
    pdir, edir = world
    (edir / "lonely.py").write_text(_stub_module().replace('"stub"', '"lonely"'))
    msg = _one_line_error(pdir / "recipes" / "demo" / "demo-prefix-kv.yaml", pdir)
    assert msg == (
        f"{edir / 'lonely.py'}: engine module without a data file; add {pdir / 'engines' / 'lonely'}.yaml "
        "(its image, module and flag spellings) or remove the module"
    )


def test_a_module_missing_a_rule_fails_naming_the_engine_and_every_missing_rule(world):
    pdir, edir = world
    recipe = _add_stub(pdir, edir, leave_out=("publishes_kv_events", "parallelism_problem"))
    msg = _one_line_error(recipe, pdir)
    assert msg == (
        f"{edir / 'stub.py'}: engine 'stub' does not implement the rules parallelism_problem, "
        "publishes_kv_events; implement each (their contracts: infersweep/engines/base.py Engine)"
    )


def test_a_module_missing_a_rule_that_is_a_fact_fails_too(world):
    pdir, edir = world
    msg = _one_line_error(_add_stub(pdir, edir, leave_out=("dp_adds_gpus",)), pdir)
    assert "engine 'stub' does not implement the rules dp_adds_gpus;" in msg


def test_a_data_file_with_an_unknown_field_fails_naming_the_file_and_the_field(world):
    pdir, edir = world
    recipe = _add_stub(pdir, edir, data={**STUB_DATA, "flavour": "fast"})
    assert _one_line_error(recipe, pdir).startswith(
        f"{(pdir / 'engines' / 'stub.yaml').resolve()}: flavour: unknown "
        "field; valid fields here: image, module, model_flag, "
    )


def test_a_data_file_missing_a_field_its_engine_requires_fails(world):
    # vLLM's class makes its NIXL connector spelling required: a vllm.yaml without it is refused, not rendered
    # into disaggregated workers that cannot move KV.
    pdir, _ = world
    f = pdir / "engines" / "vllm.yaml"
    data = yaml.safe_load(f.read_text())
    del data["kv_transfer_config"]
    f.write_text(yaml.safe_dump(data))
    msg = _one_line_error(pdir / "recipes" / "demo" / "demo-prefix-kv.yaml", pdir)
    assert msg.endswith("vllm.yaml: kv_transfer_config: required field is missing; add it")


def test_the_builtin_engines_are_each_a_data_file_paired_with_a_module():
    engines = all_engines(params_dir())
    assert {n: type(e).__module__ for n, e in engines.items()} == {
        "sglang": "infersweep.engines.sglang",
        "trtllm": "infersweep.engines.trtllm",
        "vllm": "infersweep.engines.vllm",
    }
    assert {n: (e.dp_adds_gpus, e.backend_framework) for n, e in engines.items()} == {
        "sglang": (False, "sglang"),
        "trtllm": (False, "trtllm"),
        "vllm": (True, "vllm"),
    }


def test_the_stub_engine_validates_through_the_cli_in_another_process(world):
    # The discovery is environment, so the CLI and every subprocess local mode starts see the same engines:
    # `infersweep validate` renders the DGD, the Workflow and its WorkflowTemplates and checks each schema.
    pdir, edir = world
    recipe = _add_stub(pdir, edir)
    env = {**os.environ, "INFERSWEEP_PARAMS": str(pdir), ENGINES_PATH_ENV: str(edir)}
    res = subprocess.run(
        [sys.executable, "-m", "infersweep.cli", "validate", str(recipe)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0 and "1 valid, 0 invalid" in res.stdout, res.stdout + res.stderr
