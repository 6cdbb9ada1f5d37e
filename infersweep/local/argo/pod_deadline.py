"""A pod's deadlines as Argo v4.1.2 sets them when it creates the pod (workflow/controller/workflowpod.go).

* The pod's `activeDeadlineSeconds` is clamped to the time left to the workflow deadline
  (podBuilder.build :449-467): `int64(wfDeadline.Sub(now).Seconds())`, whole seconds truncated; when that is
  0 or less no pod is created at all (`return nil, nil`, :460-461; createWorkflowPod :389-393 "build determined
  no pod should be created"), and the node stays Pending until `failNodesWithoutCreatedPodsAfterDeadlineOrShutdown`
  (operator.go :1425-1430) fails it "Step exceeded its deadline" once the deadline has passed. So a step that
  becomes ready with less than a second left never runs, however short it is. Exit-handler pods are not clamped
  (:455, "ignore the workflow deadline for exit handler so they still run if the deadline has passed").
* `ARGO_DEADLINE` (:647, getDeadline :993-1001): the workflow deadline (not for exit-handler pods) or a retry
  attempt's executionDeadline, whichever is earlier; RFC 3339 in UTC, Go's zero time when there is none.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

GO_ZERO_TIME = "0001-01-01T00:00:00Z"  # time.Time{}.Format(time.RFC3339)


def workflow_seconds_left(wf_deadline: float | None, now: float, on_exit: bool) -> int | None:
    """The workflow's part of the pod's activeDeadlineSeconds: whole seconds left (Go truncates toward zero),
    None when the workflow has no deadline or the pod belongs to the exit handler."""
    if wf_deadline is None or on_exit:
        return None
    return math.trunc(wf_deadline - now)


def creates_pod(wf_deadline: float | None, now: float, on_exit: bool) -> bool:
    """False where Argo builds no pod: under one whole second left to the workflow deadline."""
    left = workflow_seconds_left(wf_deadline, now, on_exit)
    return left is None or left > 0


def clamped_pod_deadline(
    template_deadline: float | None, wf_deadline: float | None, now: float, on_exit: bool
) -> float | None:
    """When the pod's own deadline kills it: the template's, or the workflow deadline where that is sooner.

    Argo writes the clamp as whole seconds from the controller's `now`, and the kubelet counts them from the
    pod's StartTime (later than `now`: scheduling, sandbox); locally a pod starts at `now`, so the clamp is
    taken at the workflow deadline itself, where the executor's ARGO_DEADLINE fires too and names the kill
    "Step exceeded its deadline" (workflow/executor/executor.go monitorDeadline)."""
    if workflow_seconds_left(wf_deadline, now, on_exit) is None:
        return template_deadline
    assert wf_deadline is not None
    return wf_deadline if template_deadline is None else min(template_deadline, wf_deadline)


def argo_deadline_env(wf_deadline: float | None, exec_deadline: float | None, on_exit: bool) -> str:
    """The ARGO_DEADLINE a pod's containers see (workflowpod.go getDeadline)."""
    found = None if on_exit else wf_deadline
    if exec_deadline is not None and (found is None or exec_deadline < found):
        found = exec_deadline
    if found is None:
        return GO_ZERO_TIME
    return datetime.fromtimestamp(math.floor(found), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
