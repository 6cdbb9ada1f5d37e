"""Deploy waits for its GPU lane to be free of other DGDs (issue 20, item 1).

Argo releases a template's lock as soon as its node is fulfilled (argo-workflows v4.1.2
workflow/controller/operator.go executeTemplate: `if node.Fulfilled() { syncManager.Release(...) }`) and
wakes the next waiter (workflow/sync/semaphore.go release -> notifyWaiters). The gpu-span ends with its
last point; teardown runs later in the exit handler (or, after `argo terminate`, the reaper deletes the
DGD minutes later). So the next run of the lane holds the lock while the previous DGD still holds the GPUs:
deploy must wait, bounded, until no other DGD of the lane is left (operations.wait_for_lane)."""

from __future__ import annotations

import pytest
import yaml

from infersweep.cluster_settings import load_cluster_settings
from infersweep.platform import operations
from infersweep.platform.dgd import LANE_LABEL_PREFIX, lane_labels
from infersweep.platform.operations import DeployRequest
from infersweep.recipe import all_recipe_paths, load_recipe
from workflows import gpu_guard
from workflows.render import render_recipe

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"  # 8 x H100: the 8-GPU lane
LANE8 = LANE_LABEL_PREFIX + "h100-8gpu"


class Fake:
    """DGDs by name with their labels; `gone_after` list calls remove the earlier run's DGDs."""

    def __init__(self, dgds: dict[str, dict[str, str]], gone_after: int | None = None):
        self.dgds, self.gone_after, self.lists, self.applied = dgds, gone_after, 0, []

    def list_dgds(self, namespace, api_version, label_selector):
        self.lists += 1
        if self.gone_after is not None and self.lists > self.gone_after:
            self.dgds = {n: l for n, l in self.dgds.items() if n.startswith("mine")}
        return sorted(n for n, labels in self.dgds.items() if label_selector in labels)

    def apply_dgd(self, dgd, namespace, owner, *, patch_own=True):
        self.applied.append(dgd["metadata"]["name"])
        return "http://x"


@pytest.fixture(scope="module")
def settings():
    return load_cluster_settings()


def _dgd(settings, recipe=RECIPE):
    return yaml.safe_load(yaml.safe_dump(render_recipe(load_recipe(recipe), settings).dgd))


def test_every_rendered_dgd_is_labelled_with_the_lanes_its_run_holds(settings):
    for p in all_recipe_paths():
        r = load_recipe(p)
        adm = gpu_guard.recipe_admission(r, settings)
        labels = lane_labels(render_recipe(r, settings).dgd)
        assert set(labels) == {LANE_LABEL_PREFIX + k for k in adm.lane_keys}, r.name
        pool = settings.guard.pools[r.recipe.gpu.type]
        assert all(labels[LANE_LABEL_PREFIX + gpu_guard.lane_key(adm.gpu_type, s)] == pool.lanes[s] for s in adm.lanes)


def test_deploy_waits_until_the_previous_runs_dgd_of_the_lane_is_gone(settings, monkeypatch):
    dgd = _dgd(settings)
    fake = Fake({"prev-run-abc": {LANE8: "1"}, "other-lane": {LANE_LABEL_PREFIX + "h100-4gpu": "1"}}, gone_after=3)
    monkeypatch.setattr(operations, "get_platform", lambda: fake)
    monkeypatch.setattr(operations.time, "sleep", lambda s: None)
    operations.deploy(DeployRequest("ns", dgd_text=yaml.safe_dump(dgd), run_id="mine-1"))
    assert fake.lists == 4 and fake.applied and fake.applied[0].startswith(dgd["metadata"]["name"][:10])


def test_deploy_gives_up_after_the_bound_naming_the_dgd(settings, monkeypatch):
    dgd = _dgd(settings)
    fake = Fake({"prev-run-abc": {LANE8: "1"}})
    monkeypatch.setattr(operations, "get_platform", lambda: fake)
    clock = iter(range(0, 10_000, 5))
    monkeypatch.setattr(operations.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(operations.time, "sleep", lambda s: None)
    with pytest.raises(operations.LaneHeld, match="h100-8gpu .*prev-run-abc after 600 s"):
        operations.deploy(DeployRequest("ns", dgd_text=yaml.safe_dump(dgd), run_id="mine-1"))
    assert not fake.applied


def test_its_own_dgd_does_not_count_so_retry_and_ensure_redeploy(settings, monkeypatch):
    dgd = _dgd(settings)
    mine = operations.for_run(dict(dgd), "mine-1")["metadata"]["name"]
    fake = Fake({mine: {LANE8: "1"}})
    monkeypatch.setattr(operations, "get_platform", lambda: fake)
    assert operations.wait_for_lane(fake, operations.for_run(_dgd(settings), "mine-1"), "ns") == 0.0


def test_a_lane_of_several_runs_waits_only_when_it_is_full(settings):
    dgd = {
        "apiVersion": "nvidia.com/v1beta1",
        "metadata": {"name": "me", "labels": {LANE_LABEL_PREFIX + "h200-1gpu": "4"}},
    }
    three = Fake({f"r{i}": {LANE_LABEL_PREFIX + "h200-1gpu": "4"} for i in range(3)})
    assert operations.wait_for_lane(three, dgd, "ns") == 0.0
    four = Fake({f"r{i}": {LANE_LABEL_PREFIX + "h200-1gpu": "4"} for i in range(4)})
    with pytest.raises(operations.LaneHeld):
        operations.wait_for_lane(four, dgd, "ns", timeout_s=0)


def test_a_whole_pool_run_waits_for_any_lane_of_its_pool(settings):
    big = next(p for p in all_recipe_paths() if load_recipe(p).gpu_capacity == 16)
    dgd = operations.for_run(_dgd(settings, big), "mine-2")
    assert len(lane_labels(dgd)) == len(settings.guard.pools["H100"].lanes)
    fake = Fake({"small-run": {LANE_LABEL_PREFIX + "h100-1gpu": "1"}})
    with pytest.raises(operations.LaneHeld, match="h100-1gpu"):
        operations.wait_for_lane(fake, dgd, "ns", timeout_s=0)


def test_deploys_pod_deadline_outlasts_its_lane_wait(settings):
    """The kubelet kills a pod at its activeDeadlineSeconds; deploy's must leave LaneHeld time to name the DGDs
    (issue 34, item 4: both were 600 s)."""
    from workflows.install_set import step_templates
    from workflows.steps_library import DEPLOY_AFTER_LANE_S, step_deadline_s

    (deploy,) = [t for t in step_templates(settings, []) if t["metadata"]["name"] == "infersweep-deploy"]
    (tmpl,) = [t for t in deploy["spec"]["templates"] if t.get("container")]
    assert tmpl["activeDeadlineSeconds"] >= operations.LANE_WAIT_S + DEPLOY_AFTER_LANE_S
    # a cluster.yaml that sets it shorter is refused, naming the field and the value that works
    from infersweep.step_declarations import DEPLOY

    short = settings.steps.model_copy(update={"deadlines_s": {**settings.steps.deadlines_s, "deploy": 600}})
    with pytest.raises(ValueError, match=r"steps.deadlines_s.deploy: 600 s .* at least 720"):
        step_deadline_s(DEPLOY, short)
