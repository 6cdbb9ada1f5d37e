"""Every retried step's backoff.maxDuration lets each of its attempts run its whole deadline.

Argo v4.1.2 (16a52d6) workflow/controller/operator.go processNodeRetries counts maxDuration from the first
attempt's start: past it no retry starts (:1078-1092) and a retry that does start is killed at first start +
maxDuration (executionDeadline :1146-1147 -> ARGO_DEADLINE, workflowpod.go getDeadline; the local executor
follows it: tests/conformance/retry-maxduration-bounds-late-attempt.yaml)."""

from __future__ import annotations

import math

from infersweep.cluster_settings import load_cluster_settings
from infersweep.local.argo.templates import parse_duration
from workflows.install_set import step_templates


def _retried(settings):
    for wt in step_templates(settings, []):
        for t in wt["spec"]["templates"]:
            if t.get("retryStrategy"):
                yield wt["metadata"]["name"], t


def test_every_attempt_of_a_retried_step_may_run_its_whole_deadline():
    settings = load_cluster_settings()
    seen = {}
    for name, t in _retried(settings):
        rs, deadline = t["retryStrategy"], int(t["activeDeadlineSeconds"])
        limit, b = int(rs["limit"]), rs["backoff"]
        waits = sum(parse_duration(b["duration"]) * int(b["factor"]) ** i for i in range(limit))
        # the last attempt starts after `limit` full-deadline attempts and every backoff, and runs a deadline
        need = (limit + 1) * deadline + math.ceil(waits)
        assert parse_duration(b["maxDuration"]) >= need, (name, b["maxDuration"], need)
        seen[name] = parse_duration(b["maxDuration"])
    assert seen["infersweep-model-cache"] >= 4 * 21600  # 6 h download deadline, 3 retries
    assert seen["infersweep-deploy"] < seen["infersweep-model-cache"]  # per step, not one value for all


def test_an_explicit_max_duration_only_lengthens_it():
    from workflows.steps_library import retry_max_duration_s

    s = load_cluster_settings().steps
    derived = retry_max_duration_s(600, s)
    assert derived == 4 * 600 + 10 + 20 + 40
    longer = s.model_copy(update={"retry": s.retry.model_copy(update={"max_duration": "48h"})})
    shorter = s.model_copy(update={"retry": s.retry.model_copy(update={"max_duration": "10m"})})
    assert retry_max_duration_s(600, longer) == 48 * 3600
    assert retry_max_duration_s(600, shorter) == derived
