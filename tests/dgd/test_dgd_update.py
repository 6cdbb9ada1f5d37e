"""A retried deploy (or the next treatment's apply) over the run's own DGD (issue 34 item 11): the spec
becomes exactly the rendered one (a key the new rendering drops is gone, which a JSON merge patch would keep:
RFC 7386 merges objects key by key), and replicas a scaling adapter owns are sent back as the live ones,
since Dynamo's webhook refuses a change to them from the step's account (ai-dynamo/dynamo deploy/operator/
internal/webhook/validation/dynamographdeployment.go validateReplicasChanges). The real kubernetes client
against tests/support/k8s_standin.py, the deploy step as a process."""

from __future__ import annotations

import copy
import os
import subprocess
import sys

import yaml

from infersweep.cluster_settings import load_cluster_settings
from infersweep.recipe import load_recipe
from tests.support.k8s_standin import K8sStandin, merge_patch
from tests.support.paths import REPO
from workflows.render import render_recipe

KEDA_RECIPE = "qwen36-35b-a3b-fp8-sglang-agg-keda"


def _deploy(dgd: dict, env: dict) -> subprocess.CompletedProcess:
    args = ["--dgd", yaml.safe_dump(dgd), "--namespace", "bench", "--owner-name", "wf-1", "--owner-uid", "uid-wf-1"]
    return subprocess.run(
        [sys.executable, "-m", "steps.deploy", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def _env(api, tmp_path) -> dict:
    env = dict(os.environ, KUBECONFIG=str(api.kubeconfig(tmp_path)), PYTHONPATH=str(REPO))
    for k in ("KUBERNETES_SERVICE_HOST", "INFERSWEEP_PLATFORM", "INFERSWEEP_PLATFORM_ADAPTER"):
        env.pop(k, None)
    return env


def test_the_standin_patches_as_rfc_7386():
    assert merge_patch({"a": {"b": 1, "c": 2}, "l": [1, 2]}, {"a": {"c": None, "d": 3}, "l": [3]}) == {
        "a": {"b": 1, "d": 3},
        "l": [3],
    }


def test_a_v1alpha1_key_the_next_rendering_drops_is_gone(tmp_path):
    dgd = render_recipe(load_recipe("demo-prefix-rr"), load_cluster_settings(), dgd_api="v1alpha1").dgd
    first = copy.deepcopy(dgd)  # an earlier rendering (a treatment) that set one more key
    worker = next(n for n, s in first["spec"]["services"].items() if s.get("componentType") == "worker")
    first["spec"]["services"][worker]["resources"]["limits"]["memory"] = "64Gi"
    with K8sStandin() as api:
        env = _env(api, tmp_path)
        assert _deploy(first, env).returncode == 0
        p = _deploy(dgd, env)
        assert p.returncode == 0, p.stderr
        ((key, live),) = [(k, o) for k, o in api.objects.items() if k[3] == "dynamographdeployments"]
        assert key[1] == "v1alpha1"
        assert live["spec"] == dgd["spec"]  # exactly the rendered spec: no memory limit left over
        assert live["metadata"]["ownerReferences"][0]["uid"] == "uid-wf-1"  # the live metadata is kept


def test_replicas_the_scaling_adapter_owns_are_not_changed(tmp_path):
    dgd = render_recipe(load_recipe(KEDA_RECIPE), load_cluster_settings()).dgd
    with K8sStandin() as api:
        env = _env(api, tmp_path)
        assert _deploy(dgd, env).returncode == 0
        ((key, live),) = [(k, o) for k, o in api.objects.items() if k[3] == "dynamographdeployments"]
        scaled = [c for c in live["spec"]["components"] if "scalingAdapter" in c]
        assert scaled
        for c in scaled:  # KEDA scaled the adapter; the operator wrote the replicas through
            c["replicas"] = int(c.get("replicas", 1)) + 2
        # the retried deploy step: accepted by the webhook, and the scaled replicas stay
        p = _deploy(dgd, env)
        assert p.returncode == 0, p.stderr
        after = {c["name"]: c for c in api.objects[key]["spec"]["components"]}
        assert all(after[c["name"]]["replicas"] == c["replicas"] for c in scaled)
