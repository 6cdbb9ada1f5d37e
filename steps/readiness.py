"""Readiness of a DGD in a cluster, failing fast.

Waiting on `status.state` alone hangs until the timeout when a pod crash-loops (the DGD stays `pending`),
so each poll also reads the deployment's pods and fails at once on a state that will not heal by itself.
Once Ready, the frontend must list the model in /v1/models and answer one short completion.
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

from steps.platform import DGD_GROUP, DGD_PLURAL, frontend_url

# Waiting reasons that never heal without a human: fail now, not at the timeout.
FATAL_WAITING = {"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CrashLoopBackOff",
                 "CreateContainerConfigError", "CreateContainerError"}
MAX_RESTARTS = 2
POD_LABEL = "nvidia.com/dynamo-graph-deployment-name"


def pod_problem(pod: Any) -> str | None:
    """The reason this pod will not become ready on its own, or None."""
    name = pod.metadata.name
    for cond in pod.status.conditions or []:
        if cond.type == "PodScheduled" and cond.status == "False" and cond.reason == "Unschedulable":
            return f"pod {name} is unschedulable: {cond.message}"
    for cs in (pod.status.container_statuses or []) + (pod.status.init_container_statuses or []):
        waiting = cs.state.waiting if cs.state else None
        if waiting and waiting.reason in FATAL_WAITING:
            return f"pod {name} container {cs.name}: {waiting.reason}: {waiting.message or ''}".strip()
        if cs.restart_count and cs.restart_count > MAX_RESTARTS:
            return f"pod {name} container {cs.name} restarted {cs.restart_count} times"
    if pod.status.phase == "Failed":
        return f"pod {name} failed: {pod.status.reason or ''} {pod.status.message or ''}".strip()
    return None


def dgd_ready(dgd: dict[str, Any]) -> tuple[bool, str | None]:
    status = dgd.get("status") or {}
    if status.get("state") == "failed":
        msgs = [c.get("message", "") for c in status.get("conditions", []) if c.get("status") == "False"]
        return False, "DGD state is failed: " + "; ".join(m for m in msgs if m)
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", []))
    return ready, None


def http_ready(base_url: str, model: str, timeout_s: float = 10) -> str | None:
    """None when /v1/models lists the model and a one-token completion answers; else why not."""
    try:
        with urllib.request.urlopen(f"{base_url}/v1/models", timeout=timeout_s) as r:
            ids = [m.get("id") for m in json.load(r).get("data", [])]
        if model not in ids:
            return f"/v1/models lists {ids}, not {model}"
        body = json.dumps({"model": model, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 2}).encode()
        req = urllib.request.Request(f"{base_url}/v1/chat/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            if not json.load(r).get("choices"):
                return "chat completion returned no choices"
    except Exception as e:  # connection refused, 503 while workers register, ...
        return f"{type(e).__name__}: {e}"
    return None


def wait_dgd_ready(platform: Any, name: str, namespace: str, model: str, timeout_s: float,
                   poll_s: float = 2.0, base_url: str | None = None) -> float:
    start = time.monotonic()
    base_url = base_url or frontend_url(name, namespace)
    last = "no status yet"
    while time.monotonic() - start < timeout_s:
        version = "v1beta1"
        dgd = platform.custom.get_namespaced_custom_object(DGD_GROUP, version, namespace, DGD_PLURAL, name)
        ready, fatal = dgd_ready(dgd)
        if fatal:
            raise RuntimeError(fatal)
        pods = platform.core.list_namespaced_pod(namespace, label_selector=f"{POD_LABEL}={name}").items
        for pod in pods:
            problem = pod_problem(pod)
            if problem:
                raise RuntimeError(problem)
        if ready:
            last = http_ready(base_url, model) or ""
            if not last:
                return time.monotonic() - start
        else:
            last = f"DGD state {(dgd.get('status') or {}).get('state', 'unknown')}, {len(pods)} pods"
        time.sleep(poll_s)
    raise TimeoutError(f"not ready after {timeout_s:.0f} s (last: {last})")
