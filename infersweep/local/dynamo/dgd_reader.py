"""What local mode reads from a DynamoGraphDeployment: its components (role, replicas, nodes, the main
container's command line with its env expanded), each one's engine, served model name and router mode.
Both API versions (v1beta1, v1alpha1) read the same; infersweep/local/dynamo/deploy.py builds the processes from it.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from infersweep.engines.registry import engine_by_module
from infersweep.local.gpu.engine_flags import flag_value as _flag
from infersweep.local.gpu.engine_flags import has_switch as _has_switch
from infersweep.paths import params_dir

DEFAULT_MODEL_NAME = "infersweep/toy-model"
ROLES = ("frontend", "worker", "prefill", "decode")
# Router modes the 1.6.1 frontend accepts; anything else falls back to its default.
ROUTER_MODES = ("round-robin", "random", "power-of-two", "kv", "direct", "least-loaded", "device-aware-weighted")
SHELLS = ("sh", "bash", "dash", "ash", "zsh")
SHELL_SEPARATORS = ("&&", "||", ";", "|", "&")


@dataclass
class Component:
    """What local mode needs from one DGD component, whatever the API version."""

    name: str
    role: str  # frontend | worker | prefill | decode
    replicas: int
    node_count: int  # 1 unless multinode
    module: str | None  # "dynamo.vllm", ... (None: image entrypoint, no command)
    args: list[str]  # the args after `-m <module>`
    env: dict[str, str] = field(default_factory=dict)  # the container's literal env values


def _env_map(*env_lists: Any) -> dict[str, str]:
    """Merge K8s env lists ([{name, value}]) in order; valueFrom entries cannot be resolved here."""
    env: dict[str, str] = {}
    for env_list in env_lists:
        for item in env_list or []:
            if "value" in item:
                env[item["name"]] = str(item["value"])
    return env


def _expand(text: str, env: dict[str, str], shell: bool) -> str:
    """Kubelet's $(VAR) expansion, plus $VAR/${VAR} when a shell will run the string."""
    text = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m[1], m[0]), text)
    if shell:
        text = re.sub(
            r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)", lambda m: env.get(m[1] or m[2], ""), text
        )
    return text


def command_line(container: dict, env: dict[str, str]) -> tuple[str | None, list[str]]:
    """(module, args) of the `python -m dynamo.X ...` a container runs.

    Handles exec form (command: [python3, -m, dynamo.vllm], args: [...]) and shell form
    (command: [/bin/sh, -c], args: ["python3 -m dynamo.vllm --model $MODEL_PATH ..."]).
    """
    tokens = [str(t) for t in (container.get("command") or []) + (container.get("args") or [])]
    if tokens and os.path.basename(tokens[0]) in SHELLS and "-c" in tokens:
        script = tokens[tokens.index("-c") + 1] if tokens.index("-c") + 1 < len(tokens) else ""
        tokens = shlex.split(_expand(script.replace("\\\n", " "), env, shell=True))
    else:
        tokens = [_expand(t, env, shell=False) for t in tokens]
    for i, token in enumerate(tokens[:-1]):
        if token == "-m" and tokens[i + 1].startswith("dynamo."):
            rest = tokens[i + 2 :]
            for j, arg in enumerate(rest):
                if arg in SHELL_SEPARATORS:
                    rest = rest[:j]
                    break
            return tokens[i + 1], rest
    return None, tokens


def _count(value: Any, default: int) -> int:
    return default if value is None else int(value)


def _node_count(multinode: dict | None) -> int:
    if not multinode:
        return 1
    return _count(multinode.get("nodeCount"), 2)  # CRD default is 2


def _main_container(containers: list[dict]) -> dict:
    for container in containers:
        if container.get("name") == "main":
            return container
    return containers[0] if containers else {}


def read_components(dgd: dict) -> list[Component]:
    """The frontend/worker/prefill/decode components of a v1beta1 or v1alpha1 DGD.

    Planner, EPP and untyped components are skipped: local mode does not run them.
    """
    spec = dgd.get("spec") or {}
    found: list[Component] = []
    if "components" in spec:  # nvidia.com/v1beta1
        for comp in spec["components"]:
            containers = ((comp.get("podTemplate") or {}).get("spec") or {}).get("containers")
            container = _main_container(containers or [])
            env = _env_map(spec.get("env"), container.get("env"))
            module, args = command_line(container, env)
            found.append(
                Component(
                    comp["name"],
                    comp.get("type") or "",
                    _count(comp.get("replicas"), 1),
                    _node_count(comp.get("multinode")),
                    module,
                    args,
                    env,
                )
            )
    elif "services" in spec:  # nvidia.com/v1alpha1
        for name, svc in spec["services"].items():
            container = (svc.get("extraPodSpec") or {}).get("mainContainer") or {}
            env = _env_map(spec.get("envs"), svc.get("envs"), container.get("env"))
            module, args = command_line(container, env)
            role = svc.get("componentType") or ""
            if role == "worker" and svc.get("subComponentType") in ("prefill", "decode"):
                role = svc["subComponentType"]
            found.append(
                Component(
                    name, role, _count(svc.get("replicas"), 1), _node_count(svc.get("multinode")), module, args, env
                )
            )
    else:
        raise ValueError(
            f"DGD {dgd.get('apiVersion')!r} has neither spec.components (v1beta1) nor spec.services (v1alpha1)"
        )

    components = []
    for comp in found:
        if comp.role == "worker":  # plain workers may still say their role in the args
            mode = _flag(comp.args, "--disaggregation-mode")
            if mode in ("prefill", "decode"):
                comp.role = mode
            elif _has_switch(comp.args, "--is-prefill-worker"):
                comp.role = "prefill"
            elif _has_switch(comp.args, "--is-decode-worker"):
                comp.role = "decode"
        if comp.role in ROLES and comp.replicas > 0:
            components.append(comp)
    roles = {c.role for c in components}
    if "prefill" not in roles:
        # A lone "decode" component (e.g. the mocker agg example) is an aggregated worker:
        # started as decode it would wait forever for prefill workers.
        for comp in components:
            if comp.role == "decode":
                comp.role = "worker"
    elif "decode" not in roles:
        raise ValueError("DGD has prefill workers but no decode workers")
    if not any(c.role != "frontend" for c in components):
        raise ValueError("DGD has no worker, prefill or decode component to run")
    return components


def engine_of(comp: Component, backend_framework: str | None = None) -> str:
    if comp.module == "dynamo.mocker":
        return _flag(comp.args, "--engine-type") or "vllm"
    engine = engine_by_module(comp.module or "", params_dir())  # dynamo.vllm -> vllm (params/engines/*.yaml module)
    return engine.name if engine else backend_framework or "vllm"


def served_model_name(comp: Component) -> str:
    """The name clients must request: what the engine would register for these args."""
    return (
        _flag(comp.args, "--served-model-name", "--model-name")
        or _flag(comp.args, "--model", "--model-path")
        or DEFAULT_MODEL_NAME
    )


def router_mode_of(frontend: Component | None) -> str:
    mode = _flag(frontend.args, "--router-mode") if frontend else None
    return mode if mode in ROUTER_MODES else "round-robin"
