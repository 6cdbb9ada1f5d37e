"""Local mode publishes KV events only where the rendered worker would (issue 11).

The 1.6.1 mocker publishes KV events whenever its prefix cache is on (dynamo/mocker/config.py
build_runtime_config), while a real vLLM/SGLang worker publishes none without --kv-events-config. Local
mode derives the mocker's behaviour from the rendered worker args (infersweep.local.dynamo
publishes_kv_events), so a KV recipe without events shows load-based routing locally, not a false win.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from infersweep.dgd.render import render_dgd
from infersweep.local.dynamo.command_lines import mocker_argv, publishes_kv_events
from infersweep.local.dynamo.deploy import deploy_local
from infersweep.local.dynamo.deployment import teardown_local
from infersweep.local.dynamo.dgd_reader import Component, read_components
from infersweep.local.dynamo.wait import wait_ready_local
from infersweep.local.toolchain import default_dynamo_python
from infersweep.recipe import load_recipe

VLLM_EVENTS = '{"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:20080","enable_kv_cache_events":true}'


def comp(module: str, args: list[str], role: str = "worker", env: dict | None = None) -> Component:
    return Component("W", role, 1, 1, module, args, env or {})


def argv(c: Component) -> list[str]:
    return mocker_argv(c, python="python", model_dir=Path("/m"), num_workers=1, engine="vllm")


@pytest.mark.parametrize(
    "module,args,env,expected",
    [
        ("dynamo.vllm", ["--kv-events-config", VLLM_EVENTS], {}, True),
        ("dynamo.vllm", [], {}, False),
        # vLLM's KVEventsConfig defaults enable_kv_cache_events to False: a config without it publishes nothing.
        ("dynamo.vllm", ["--kv-events-config", '{"publisher":"zmq","endpoint":"tcp://*:1"}'], {}, False),
        ("dynamo.vllm", ["--kv-events-config", VLLM_EVENTS, "--no-enable-prefix-caching"], {}, False),
        ("dynamo.sglang", ["--kv-events-config", '{"publisher":"zmq","endpoint":"tcp://*:5557"}'], {}, True),
        ("dynamo.sglang", ["--kv-events-config", '{"endpoint":"tcp://*:5557"}'], {}, False),  # publisher null
        ("dynamo.sglang", [], {}, False),
        ("dynamo.trtllm", ["--publish-kv-events"], {}, True),
        ("dynamo.trtllm", [], {}, False),
        ("dynamo.trtllm", [], {"DYN_TRTLLM_PUBLISH_KV_EVENTS": "true"}, True),
        ("dynamo.trtllm", ["--publish-kv-events", "--no-publish-kv-events"], {}, False),
    ],
)
def test_kv_events_follow_the_engine_rules(module, args, env, expected):
    c = comp(module, args, env=env)
    assert publishes_kv_events(c) is expected
    assert ("--no-enable-prefix-caching" in argv(c)) is (not expected)


def test_decode_workers_and_mocker_components_keep_their_own_behaviour():
    assert "--no-enable-prefix-caching" not in argv(comp("dynamo.vllm", [], role="decode"))
    assert publishes_kv_events(comp("dynamo.mocker", [])) is None
    assert "--no-enable-prefix-caching" not in argv(comp("dynamo.mocker", ["--model-name", "m"]))


def test_under_a_non_kv_router_the_worker_keeps_its_prefix_cache():
    """Events are read only by the KV router; a round-robin worker still caches prefixes on a cluster."""
    c = comp("dynamo.vllm", [])
    rr = mocker_argv(c, python="python", model_dir=Path("/m"), num_workers=1, engine="vllm", kv_router=False)
    assert "--no-enable-prefix-caching" not in rr


def test_catalog_kv_recipes_get_publishing_mockers():
    for name in ("nemotron-3-nano-fp8-vllm-agg-kv", "qwen3-32b-fp8-sglang-disagg-6p2d-kv", "demo-prefix-kv"):
        for c in read_components(render_dgd(load_recipe(name))):
            if c.role in ("worker", "prefill"):
                assert publishes_kv_events(c) is True, (name, c.role)
                assert "--no-enable-prefix-caching" not in argv(c)


AGG_KV = {
    "apiVersion": "nvidia.com/v1beta1",
    "kind": "DynamoGraphDeployment",
    "metadata": {"name": "agg-kv"},
    "spec": {
        "components": [
            {
                "name": "Frontend",
                "type": "frontend",
                "replicas": 1,
                "podTemplate": {
                    "spec": {
                        "containers": [
                            {
                                "name": "main",
                                "image": "x",
                                "command": ["python3", "-m", "dynamo.frontend"],
                                "args": ["--router-mode", "kv"],
                            }
                        ]
                    }
                },
            },
            {
                "name": "VllmWorker",
                "type": "worker",
                "replicas": 1,
                "podTemplate": {
                    "spec": {
                        "containers": [
                            {
                                "name": "main",
                                "image": "x",
                                "command": ["python3", "-m", "dynamo.vllm"],
                                "args": ["--model", "m/kv", "--block-size", "16"],
                            }
                        ]
                    }
                },
            },
        ]
    },
}


def _advertised_kv_events(state_dir: Path) -> list[bool]:
    """What each running mocker put in its model card (runtime_config.kv_event_publishing_enabled): the
    flag the real KV router reads, as written by the real mocker to the file discovery backend."""
    cards = [
        json.loads(p.read_text()) for p in (state_dir / "discovery").rglob("*") if p.is_file() and "/mdc/" in str(p)
    ]
    return [c["card_json"]["runtime_config"]["kv_event_publishing_enabled"] for c in cards]


@pytest.mark.e2e
@pytest.mark.skipif(not Path(default_dynamo_python()).exists(), reason="needs the .venv-dynamo interpreter")
@pytest.mark.parametrize("with_events", [True, False])
def test_the_real_mocker_advertises_what_the_worker_would(tmp_path, with_events):
    dgd = copy.deepcopy(AGG_KV)
    if with_events:
        dgd["spec"]["components"][1]["podTemplate"]["spec"]["containers"][0]["args"] += [
            "--kv-events-config",
            VLLM_EVENTS,
        ]
    state = tmp_path / "state"
    try:
        deploy_local(dgd, model_dir=tmp_path / "model", state_dir=state)
        wait_ready_local(state, timeout_s=120)
        assert _advertised_kv_events(state) == [with_events]
    finally:
        teardown_local(state, grace_s=2)
