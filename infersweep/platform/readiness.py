"""Readiness of a DGD in a cluster, failing fast and saying why.

Waiting on `status.state` alone hangs until the timeout when a pod crash-loops (the DGD stays `pending`),
so each poll also reads the deployment's pods (label `nvidia.com/dynamo-graph-deployment-name=<dgd>`, the
selector Dynamo's own recipes README uses with `kubectl wait`) and the namespace's events, and fails at
once on a state that will not heal by itself. Polling (not a watch stream) keeps every bound simple: a
failure is noticed within one poll interval, whatever the API server does with long-lived connections.
Once the DGD is ready, the frontend must list the model in /v1/models and answer one short completion.
Before failing, a debug bundle (DGD status, pod statuses, events, last log lines) is written to a file
the wait-ready template declares as an optional output artifact.
"""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infersweep.platform.dgd import DGD_GROUP, DGD_PLURAL, frontend_url
from infersweep.platform.protocol import NotReady

# Waiting reasons that never heal without a human: fail now, not at the timeout. (ErrImagePull alone is
# left out: one registry hiccup is retried by the kubelet; it becomes ImagePullBackOff when it persists.)
FATAL_WAITING = {
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "CreateContainerError",
}
# An LLM worker that restarted has crashed (OOM, bad flag, NCCL): it will not serve what we measure.
MAX_RESTARTS = 0
# A pod may be unschedulable for a moment while a cluster autoscaler adds a node; not for longer.
UNSCHEDULABLE_GRACE_S = 120.0
POD_LABEL = "nvidia.com/dynamo-graph-deployment-name"
LOG_LINES = 50


def pod_problem(pod: Any, unschedulable_for_s: float, grace_s: float) -> str | None:
    """The reason this pod will not become ready on its own, or None."""
    name = pod.metadata.name
    for cond in pod.status.conditions or []:
        if (
            cond.type == "PodScheduled"
            and cond.status == "False"
            and cond.reason == "Unschedulable"
            and unschedulable_for_s >= grace_s
        ):
            return f"pod {name} is unschedulable: {cond.message}"
    for cs in (pod.status.init_container_statuses or []) + (pod.status.container_statuses or []):
        waiting = cs.state.waiting if cs.state else None
        if waiting and waiting.reason in FATAL_WAITING:
            return f"pod {name} container {cs.name}: {waiting.reason}: {waiting.message or ''}".strip()
        if cs.restart_count and cs.restart_count > MAX_RESTARTS:
            last = cs.last_state.terminated if cs.last_state else None
            why = f" (last exit: {last.reason or ''} code {last.exit_code})" if last else ""
            return f"pod {name} container {cs.name} restarted {cs.restart_count} times{why}"
    if pod.status.phase == "Failed":
        return f"pod {name} failed: {pod.status.reason or ''} {pod.status.message or ''}".strip()
    return None


def is_unschedulable(pod: Any) -> bool:
    return any(
        c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
        for c in pod.status.conditions or []
    )


# status.rollingUpdate.phase of a DGD whose Deployment-backed workers are being replaced (DynamoGraphDeployment CRD,
# nvidia.com_dynamographdeployments.yaml, both versions; docs/pages/kubernetes/rolling-update.md): the operator
# scales the new generation up within maxSurge while the old one still holds its GPUs, so a new pod may wait
# for the scheduler until an old one is gone. That is the rollout's pace, not a pool that cannot hold the run.
ROLLOUT_PHASES = {"Pending", "InProgress"}


def rollout_in_progress(dgd: dict[str, Any] | None) -> bool:
    return ((dgd or {}).get("status") or {}).get("rollingUpdate", {}).get("phase") in ROLLOUT_PHASES


def dgd_ready(dgd: dict[str, Any]) -> tuple[bool, str | None]:
    status = dgd.get("status") or {}
    if status.get("state") == "failed":
        msgs = [c.get("message", "") for c in status.get("conditions", []) if c.get("status") == "False"]
        return False, "DGD state is failed: " + ("; ".join(m for m in msgs if m) or "no condition message")
    # A patched DGD (an experiment's next treatment) still shows the old spec's Ready until the operator
    # has seen the new generation: status.observedGeneration ("the most recent generation observed by the
    # controller", DynamoGraphDeployment CRD, nvidia.com_dynamographdeployments.yaml) below
    # metadata.generation means the status describes an older spec. Absent (an older operator): as before.
    observed, generation = status.get("observedGeneration"), (dgd.get("metadata") or {}).get("generation")
    if observed is not None and generation is not None and int(observed) < int(generation):
        return False, None
    ready = status.get("state") == "successful" or any(
        c.get("type") == "Ready"
        and c.get("status") == "True"
        # a condition set for an older generation is out of date (metav1.Condition.observedGeneration)
        and (
            generation is None or c.get("observedGeneration") is None or int(c["observedGeneration"]) >= int(generation)
        )
        for c in status.get("conditions", [])
    )
    return ready, None


def http_ready(base_url: str, model: str, timeout_s: float = 10) -> str | None:
    """None when /v1/models lists the model and a two-token completion answers; else why not."""
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


def _pod_summary(pod: Any) -> dict[str, Any]:
    st = pod.status
    return {
        "name": pod.metadata.name,
        "phase": st.phase,
        "reason": st.reason,
        "message": st.message,
        "conditions": [
            {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message} for c in st.conditions or []
        ],
        "containers": [
            {
                "name": cs.name,
                "ready": cs.ready,
                "restarts": cs.restart_count,
                "state": cs.state.to_dict() if cs.state else None,
                "last_state": cs.last_state.to_dict() if cs.last_state else None,
            }
            for cs in (st.init_container_statuses or []) + (st.container_statuses or [])
        ],
    }


def debug_bundle(
    core: Any, dgd: dict[str, Any] | None, pods: list[Any], namespace: str, name: str, reason: str
) -> dict[str, Any]:
    """What an operator needs to see why the deployment failed, collected best-effort (never raises)."""
    bundle: dict[str, Any] = {
        "dgd": f"{namespace}/{name}",
        "reason": reason,
        "dgd_status": (dgd or {}).get("status"),
        "pods": [],
        "events": [],
        "logs": {},
    }
    for pod in pods:
        try:
            bundle["pods"].append(_pod_summary(pod))
        except Exception as e:  # a malformed pod must not cost us the rest of the bundle
            bundle["pods"].append({"name": getattr(pod.metadata, "name", "?"), "error": str(e)})
    names = {name} | {p.metadata.name for p in pods}
    try:
        for ev in core.list_namespaced_event(namespace).items:
            if ev.involved_object and ev.involved_object.name in names:
                bundle["events"].append(
                    {
                        "object": f"{ev.involved_object.kind}/{ev.involved_object.name}",
                        "type": ev.type,
                        "reason": ev.reason,
                        "message": ev.message,
                        "count": ev.count,
                    }
                )
    except Exception as e:
        bundle["events_error"] = f"{type(e).__name__}: {e}"
    for pod in pods:
        for cs in pod.status.container_statuses or []:
            key = f"{pod.metadata.name}/{cs.name}"
            try:
                # A restarted container's useful lines are in the previous instance's log. Raw bytes
                # (_preload_content=False): kubernetes 36 returns a text/plain log as the repr of bytes.
                resp = core.read_namespaced_pod_log(
                    pod.metadata.name,
                    namespace,
                    container=cs.name,
                    tail_lines=LOG_LINES,
                    previous=bool(cs.restart_count),
                    _preload_content=False,
                )
                bundle["logs"][key] = resp.data.decode("utf-8", "replace").splitlines()
            except Exception as e:
                bundle["logs"][key] = [f"(no log: {type(e).__name__}: {getattr(e, 'reason', e)})"]
    return bundle


def scheduling_events(core: Any, namespace: str, pod_names: set[str]) -> str | None:
    """`FailedScheduling ... Insufficient nvidia.com/gpu` is the scheduler's own explanation."""
    for ev in core.list_namespaced_event(namespace).items:
        if ev.reason == "FailedScheduling" and ev.involved_object and ev.involved_object.name in pod_names:
            return ev.message
    return None


@dataclass(frozen=True)
class WaitOptions:
    """How wait_dgd_ready watches: its poll period, the frontend to ask (default: the DGD's Service), where the
    debug bundle goes when it fails, and how long a pod may stay Unschedulable."""

    poll_s: float = 2.0
    base_url: str | None = None
    bundle_path: Path | None = None
    unschedulable_grace_s: float = UNSCHEDULABLE_GRACE_S


def wait_dgd_ready(
    core: Any,
    custom: Any,
    name: str,
    namespace: str,
    model: str,
    timeout_s: float,
    *,
    api_version: str = "v1beta1",
    options: WaitOptions = WaitOptions(),
) -> float:
    """Seconds until the DGD served `model`; raises NotReady (fatal state) or TimeoutError."""
    start = time.monotonic()
    poll_s, bundle_path, unschedulable_grace_s = options.poll_s, options.bundle_path, options.unschedulable_grace_s
    base_url = options.base_url or frontend_url(name, namespace)
    last = "no status yet"
    dgd: dict[str, Any] | None = None
    pods: list[Any] = []
    unschedulable_since: dict[str, float] = {}

    def fail(reason: str, exc: type[Exception] = NotReady) -> Exception:
        if bundle_path:
            bundle_path.parent.mkdir(parents=True, exist_ok=True)
            bundle_path.write_text(
                json.dumps(debug_bundle(core, dgd, pods, namespace, name, reason), indent=1, default=str)
            )
        return exc(reason)

    while True:
        now = time.monotonic()
        if now - start >= timeout_s:
            raise fail(f"not ready after {timeout_s:.0f} s (last: {last})", TimeoutError)
        dgd = custom.get_namespaced_custom_object(DGD_GROUP, api_version, namespace, DGD_PLURAL, name)
        ready, fatal = dgd_ready(dgd)
        if fatal:
            raise fail(fatal)
        pods = core.list_namespaced_pod(namespace, label_selector=f"{POD_LABEL}={name}").items
        rolling = rollout_in_progress(dgd)
        for pod in pods:
            pname = pod.metadata.name
            if rolling:  # Unschedulable while the workers roll is not counted; the grace starts after the rollout
                unschedulable_since.pop(pname, None)
            elif is_unschedulable(pod):
                unschedulable_since.setdefault(pname, now)
            else:
                unschedulable_since.pop(pname, None)
            problem = pod_problem(
                pod, now - unschedulable_since.get(pname, now), float("inf") if rolling else unschedulable_grace_s
            )
            if problem:
                if "unschedulable" in problem:
                    detail = scheduling_events(core, namespace, {pname})
                    problem += f" (scheduler: {detail})" if detail and detail not in problem else ""
                raise fail(problem)
        if ready:
            last = http_ready(base_url, model) or ""
            if not last:
                return time.monotonic() - start
        else:
            last = f"DGD state {(dgd.get('status') or {}).get('state', 'unknown')}, {len(pods)} pods"
        time.sleep(min(poll_s, max(0.0, timeout_s - (time.monotonic() - start))))


def pod_image_ids(core: Any, name: str, namespace: str) -> dict[str, str]:
    """Image -> imageID (`docker-pullable://repo@sha256:...` or `repo@sha256:...`) of every container
    of the DGD's pods, from pod status: what the kubelet actually pulled, whatever the tag says now."""
    out: dict[str, str] = {}
    for pod in core.list_namespaced_pod(namespace, label_selector=f"{POD_LABEL}={name}").items:
        for cs in (pod.status.init_container_statuses or []) + (pod.status.container_statuses or []):
            if cs.image_id:
                out[cs.image] = cs.image_id.split("://", 1)[-1]
    return out
