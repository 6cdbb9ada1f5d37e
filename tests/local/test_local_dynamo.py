"""Local realisation of DGDs as real Dynamo processes (frontend + mockers). No mocks."""

from __future__ import annotations

import dataclasses
import json
import socket
import time
import urllib.request
from pathlib import Path

import pytest

from infersweep.local.dynamo import procs
from infersweep.local.dynamo.deploy import deploy_local
from infersweep.local.dynamo.deployment import LocalDeploymentError, load_local, teardown_local
from infersweep.local.dynamo.toy_model import MARKER, build_toy_model
from infersweep.local.dynamo.wait import registered_workers, wait_ready_local
from infersweep.local.toolchain import default_dynamo_python

pytestmark = pytest.mark.e2e

if not Path(default_dynamo_python()).exists():
    pytest.skip(f"no Dynamo interpreter at {default_dynamo_python()}", allow_module_level=True)


def _container(command: list[str], args: list[str], **extra) -> dict:
    return {"name": "main", "image": "unused-locally", "command": command, "args": args, **extra}


# v1beta1, aggregated, KV router; 4 replicas are capped to 2 local workers.
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
                    "spec": {"containers": [_container(["python3"], ["-m", "dynamo.frontend", "--router-mode", "kv"])]}
                },
            },
            {
                "name": "VllmWorker",
                "type": "worker",
                "replicas": 4,
                "podTemplate": {
                    "spec": {
                        "containers": [
                            _container(
                                ["python3", "-m", "dynamo.vllm"],
                                ["--model", "Qwen/Qwen3-0.6B", "--block-size", "16", "--tensor-parallel-size", "1"],
                            )
                        ]
                    }
                },
            },
        ]
    },
}

# v1alpha1, disaggregated, shell-form commands with env vars (as the upstream recipes write them).
DISAGG = {
    "apiVersion": "nvidia.com/v1alpha1",
    "kind": "DynamoGraphDeployment",
    "metadata": {"name": "disagg"},
    "spec": {
        "services": {
            "Frontend": {
                "componentType": "frontend",
                "replicas": 1,
                "extraPodSpec": {
                    "mainContainer": _container(
                        ["/bin/sh", "-c"], ["python3 -m dynamo.frontend --router-mode round-robin --http-port 8000"]
                    )
                },
            },
            "SglangPrefill": {
                "componentType": "worker",
                "subComponentType": "prefill",
                "replicas": 1,
                "multinode": {"nodeCount": 2},
                "extraPodSpec": {
                    "mainContainer": _container(
                        ["/bin/sh", "-c"],
                        [
                            'python3 -m dynamo.sglang --model-path "${MODEL}" '
                            '--served-model-name "$MODEL" --disaggregation-mode prefill --tp 16'
                        ],
                        env=[{"name": "MODEL", "value": "deepseek-ai/DeepSeek-R1"}],
                    )
                },
            },
            "SglangDecode": {
                "componentType": "worker",
                "subComponentType": "decode",
                "replicas": 1,
                "extraPodSpec": {
                    "mainContainer": _container(
                        ["python3", "-m", "dynamo.sglang"],
                        [
                            "--model-path",
                            "$(MODEL)",
                            "--served-model-name",
                            "$(MODEL)",
                            "--disaggregation-mode",
                            "decode",
                        ],
                        env=[{"name": "MODEL", "value": "deepseek-ai/DeepSeek-R1"}],
                    )
                },
            },
        }
    },
}

# A mocker worker whose args make it exit at once (argparse error).
CRASHING = {
    "apiVersion": "nvidia.com/v1beta1",
    "kind": "DynamoGraphDeployment",
    "metadata": {"name": "crashing"},
    "spec": {
        "components": [
            {"name": "Frontend", "type": "frontend", "replicas": 1},
            {
                "name": "BrokenWorker",
                "type": "worker",
                "replicas": 1,
                "podTemplate": {
                    "spec": {
                        "containers": [
                            _container(["python3", "-m", "dynamo.mocker"], ["--model-name", "m", "--no-such-flag"])
                        ]
                    }
                },
            },
        ]
    },
}


@pytest.fixture
def dirs(tmp_path: Path):
    """(model_dir, state_dir); whatever a test starts is stopped even if it fails."""
    state_dir = tmp_path / "state"
    yield tmp_path / "model", state_dir
    teardown_local(state_dir, grace_s=2)


def stream_chat(base_url: str, model: str, content: str, max_tokens: int = 16) -> str:
    """Text of a streamed (SSE) chat completion."""
    body = {
        "model": model,
        "stream": True,
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": content}],
    }
    request = urllib.request.Request(
        f"{base_url}/v1/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    text = []
    with urllib.request.urlopen(request, timeout=30) as response:
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data:"):
                continue
            data = line[len("data:") :].strip()
            if data == "[DONE]":
                break
            for choice in json.loads(data).get("choices", []):
                text.append((choice.get("delta") or {}).get("content") or "")
    return "".join(text)


def port_open(url: str) -> bool:
    host, port = url.rsplit("//", 1)[1].split(":")
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, int(port))) == 0


def test_aggregated_kv_router(dirs):
    model_dir, state_dir = dirs
    deployment = deploy_local(AGG_KV, model_dir=model_dir, state_dir=state_dir)
    assert deployment.router_mode == "kv"
    assert deployment.model_name == "Qwen/Qwen3-0.6B"
    assert [c["num_workers"] for c in deployment.components] == [2]
    frontend = next(p for p in deployment.processes if p["name"] == "Frontend")
    assert "--router-mode" in frontend["argv"] and "kv" in frontend["argv"]

    # A later step in another process only has the state dir.
    ready_s = wait_ready_local(state_dir, timeout_s=25)
    assert ready_s < 25
    assert registered_workers(state_dir) == 2
    loaded = load_local(state_dir)
    assert loaded.ready_at >= deployment.created_at  # readiness records when it first served
    assert dataclasses.replace(loaded, ready_at=0.0) == deployment

    models = procs.http_json(f"{loaded.frontend_url}/v1/models")
    assert [m["id"] for m in models["data"]] == ["Qwen/Qwen3-0.6B"]
    text = stream_chat(loaded.frontend_url, loaded.model_name, "tell me a story about the sea")
    assert text.strip()

    pids = [p["pid"] for p in loaded.processes]
    started = {p["pid"]: p["start_time"] for p in loaded.processes}
    stopped = teardown_local(state_dir)
    assert sorted(r["pid"] for r in stopped) == sorted(pids)
    assert procs.alive(state_dir) == []
    for pid in pids:
        # gone (or a zombie), or the pid already reused by a process started after the teardown: the kernel
        # wraps pids on a busy machine (seen in a fresh-clone run, where /proc/<pid> existed again)
        stat = procs._proc_stat(pid)
        assert stat is None or stat[0] == "Z" or stat[2] != started[pid], f"pid {pid} still runs"
    assert not port_open(loaded.frontend_url)


def test_disaggregated_prefill_decode(dirs):
    model_dir, state_dir = dirs
    deployment = deploy_local(DISAGG, model_dir=model_dir, state_dir=state_dir)
    roles = {c["name"]: (c["role"], c["engine"], c["num_workers"]) for c in deployment.components}
    # nodeCount 2 x 1 replica = 2 workers; the decode side has 1.
    assert roles == {"SglangPrefill": ("prefill", "sglang", 2), "SglangDecode": ("decode", "sglang", 1)}
    assert deployment.model_name == "deepseek-ai/DeepSeek-R1"
    assert deployment.router_mode == "round-robin"

    wait_ready_local(state_dir, timeout_s=25)
    answer = procs.http_json(
        f"{deployment.frontend_url}/v1/chat/completions",
        {
            "model": deployment.model_name,
            "max_tokens": 8,
            "messages": [{"role": "user", "content": "what is the time ?"}],
        },
    )
    assert answer["choices"][0]["message"]["content"].strip()
    teardown_local(state_dir)
    assert procs.alive(state_dir) == []


def test_crashing_worker_fails_fast(dirs):
    model_dir, state_dir = dirs
    deploy_local(CRASHING, model_dir=model_dir, state_dir=state_dir)
    start = time.monotonic()
    with pytest.raises(LocalDeploymentError) as error:
        wait_ready_local(state_dir, timeout_s=60)
    assert time.monotonic() - start < 20, "should fail on the exit, not on the timeout"
    message = str(error.value)
    assert "BrokenWorker" in message
    assert "--no-such-flag" in message  # from the argv and from argparse's complaint in the log
    assert "unrecognized arguments" in message


def test_toy_model_is_deterministic_and_built_once(tmp_path: Path):
    first = build_toy_model(tmp_path / "a")
    second = build_toy_model(tmp_path / "b")
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json", "generation_config.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes()
    vocab = json.loads((first / "tokenizer.json").read_text())["model"]["vocab"]
    assert len(vocab) == 32000 and vocab["[UNK]"] == 0
    config = json.loads((first / "config.json").read_text())
    assert config["max_position_embeddings"] == 32768 and config["vocab_size"] == 32000
    assert "chat_template" in json.loads((first / "tokenizer_config.json").read_text())

    (first / "config.json").write_text("{}")  # the marker says done: no rebuild
    assert (first / MARKER).exists()
    build_toy_model(first)
    assert (first / "config.json").read_text() == "{}"


def test_stop_all_is_idempotent(tmp_path: Path):
    state_dir = tmp_path / "state"
    assert procs.stop_all(state_dir) == []  # nothing ever started

    group = procs.ProcessGroup(state_dir)
    # A child that forks a grandchild: the process-group kill must reach both.
    group.spawn("forker", ["sh", "-c", "sleep 60 & sleep 60"], {"PATH": "/usr/bin:/bin"}, tmp_path / "forker.log")
    # Ignores SIGTERM (sleep inherits the ignored disposition): needs the SIGKILL fallback.
    group.spawn(
        "stubborn", ["sh", "-c", "trap '' TERM; sleep 60"], {"PATH": "/usr/bin:/bin"}, tmp_path / "stubborn.log"
    )
    # Already gone before stop_all runs.
    group.spawn("quick", ["true"], {"PATH": "/usr/bin:/bin"}, tmp_path / "quick.log")
    time.sleep(0.3)
    assert sorted(r["name"] for r in procs.alive(state_dir)) == ["forker", "stubborn"]
    pgids = [r["pgid"] for r in group.records()]

    start = time.monotonic()
    stopped = procs.stop_all(state_dir, grace_s=0.5)
    assert time.monotonic() - start < 5
    assert sorted(r["name"] for r in stopped) == ["forker", "quick", "stubborn"]
    assert procs.alive(state_dir) == [] and procs.read_records(state_dir) == []
    for pgid in pgids:
        assert procs._group_members(pgid) == []  # grandchildren too

    assert procs.stop_all(state_dir) == []
    assert procs.stop_all(state_dir, grace_s=0) == []


def test_a_recreated_deployment_serves_at_the_url_the_points_were_given(dirs):
    """Issue 38 item 7: `run --local --retry` after a Ctrl-C keeps the succeeded deploy and its frontend-url
    output; the points' ensure-deployed recreates the deployment, and AIPerf is sent to that URL. A cluster's
    Service keeps its name; locally the frontend must come back on the same port."""
    model_dir, state_dir = dirs
    first = deploy_local(AGG_KV, model_dir=model_dir, state_dir=state_dir)
    wait_ready_local(state_dir, timeout_s=60)
    # the points talked to it: connections the frontend closed linger in TIME_WAIT on its port
    for _ in range(3):
        procs.http_json(f"{first.frontend_url}/v1/models")
    teardown_local(state_dir)  # what the exit handler's teardown does after a Ctrl-C
    again = deploy_local(AGG_KV, model_dir=model_dir, state_dir=state_dir)
    try:
        assert again.frontend_url == first.frontend_url
        wait_ready_local(state_dir, timeout_s=60)
        models = procs.http_json(f"{first.frontend_url}/v1/models")
        assert [m["id"] for m in models["data"]] == ["Qwen/Qwen3-0.6B"]
    finally:
        teardown_local(state_dir)
