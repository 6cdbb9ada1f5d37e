"""What the DGD steps do once their arguments are parsed: deploy, wait-ready, teardown, ensure-pvc.

Each function is one step's work through the adapter the environment selects (infersweep.platform.select),
printing the step's progress lines. A refusal or failure raises a PlatformError (the step exits 1 with
its message), unusable input a BadInput (exit 2); anything else is left to steps/transient.py.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from pathlib import Path

import yaml

from infersweep.platform.dgd import dgd_name, for_run, lane_labels, workflow_owner
from infersweep.platform.dgd_policy import POLICY_ENV, DgdPolicy, violations
from infersweep.platform.protocol import BadInput, NotServing, Platform, PlatformError
from infersweep.platform.select import get_platform


def _write(path: str | Path, text: str) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


# How long deploy waits for a lane's earlier DGDs to go: the exit handler's teardown starts when the span
# ends (a minute or two), the reaper deletes a terminated run's DGD within its period (2 minutes) plus the
# operator's cleanup. Past it, deploy fails naming the DGDs (the lane is held by something else).
LANE_WAIT_S = 600.0
LANE_POLL_S = 5.0


class LaneHeld(PlatformError):
    """Other DGDs of the run's GPU lane are still there after LANE_WAIT_S."""


def wait_for_lane(
    platform: Platform, dgd: dict, namespace: str, *, timeout_s: float = LANE_WAIT_S, poll_s: float = LANE_POLL_S
) -> float:
    """Wait until, for each GPU-guard lane the DGD is labelled with, fewer other DGDs than the lane's runs
    carry the label; seconds waited. Why: Argo releases a template's lock when its node is fulfilled
    (argo-workflows v4.1.2 workflow/controller/operator.go executeTemplate -> syncManager.Release) and wakes
    the next waiter, but the previous run's DGD is deleted later, by its exit handler's teardown (or by the
    reaper after `argo terminate`): deploying at once puts pods on GPUs still held (Unschedulable)."""
    lanes = lane_labels(dgd)
    if not lanes:
        return 0.0
    me, version = dgd["metadata"]["name"], dgd["apiVersion"].split("/", 1)[1]
    start = time.monotonic()
    for polls in itertools.count():
        held = {k: [n for n in platform.list_dgds(namespace, version, k) if n != me] for k in lanes}
        full = {k: names for k, names in held.items() if len(names) >= lanes[k]}
        waited = time.monotonic() - start if polls else 0.0
        if not full:
            if polls:
                print(f"lane free after {waited:.0f} s")
            return waited
        if waited >= timeout_s:
            raise LaneHeld(
                "GPU lane "
                + "; ".join(
                    f"{k.split('/', 1)[1]} (runs {lanes[k]}) still has DGD(s) {', '.join(v)}"
                    for k, v in sorted(full.items())
                )
                + f" after {timeout_s:.0f} s: their runs hold no lock but were not torn down, or their pods are "
                "still terminating (teardown deletes in the foreground: a DGD stays listed until its pods have "
                f"stopped); delete them (kubectl delete dynamographdeployment -n {namespace} NAME) or check the "
                "reaper and the pods"
            )
        if not polls:
            print(
                "waiting for the GPU lane: "
                + "; ".join(f"{k.split('/', 1)[1]} has {', '.join(v)}" for k, v in sorted(full.items())),
                flush=True,
            )
        time.sleep(poll_s)


class DgdRefused(BadInput):
    """The DGD asks for more than the installed policy allows (infersweep/platform/dgd_policy.py); nothing is applied."""


def installed_policy() -> DgdPolicy:
    """The policy the deploy template carries (env INFERSWEEP_DGD_POLICY, fixed at install from the cluster
    settings: a Workflow cannot change a referenced template's container), else the step image's settings."""
    text = os.environ.get(POLICY_ENV)
    if text:
        return DgdPolicy.from_json(text)
    from infersweep.cluster_settings import load_cluster_settings

    return DgdPolicy.from_settings(load_cluster_settings())


def check_dgd(dgd: dict, policy: DgdPolicy | None = None) -> None:
    """DgdRefused naming every field of `dgd` the policy refuses (the DGD is a workflow parameter, so its
    submitter could otherwise ask the operator for any pod)."""
    bad = violations(dgd, policy or installed_policy())
    if bad:
        raise DgdRefused(
            "refused DynamoGraphDeployment: "
            + "; ".join(bad)
            + " (render it from a recipe: infersweep render; docs/security.md)"
        )


def deploy(
    *,
    dgd_text: str | None,
    dgd_file: str | None,
    namespace: str,
    run_id: str = "",
    owner_name: str = "",
    owner_uid: str = "",
    url_param: str = "",
    save: str = "",
    ensure: bool = False,
    model: str = "",
    timeout_s: float = 1800.0,
    lane_wait_s: float = LANE_WAIT_S,
    policy: DgdPolicy | None = None,
) -> str:
    """Apply the run's DGD (the rendered YAML renamed for `run_id`, or as this run's deploy saved it) and
    return the frontend URL, also written to `url_param`. With `ensure`: never patch, and wait until it
    serves `model` (NotServing when it does not). DGDOwnedElsewhere: another Workflow's DGD has the name."""
    if dgd_file and not Path(dgd_file).is_file():
        raise BadInput(f"--dgd-file {dgd_file}: no such file (the run's deploy step saves it there)")
    dgd = yaml.safe_load(Path(dgd_file).read_text() if dgd_file else dgd_text)
    if not isinstance(dgd, dict) or dgd.get("kind") != "DynamoGraphDeployment":
        raise BadInput("--dgd is not a DynamoGraphDeployment document")
    if ensure and not model:
        raise BadInput("--ensure needs --model (what the deployment must serve)")
    check_dgd(dgd, policy)  # the saved file too: the workdir volume is writable by every step of the run
    if dgd_file:  # saved by this run's deploy: already renamed and owned
        owner = workflow_owner(dgd)
    else:
        dgd = for_run(dgd, run_id)
        owner = {"name": owner_name, "uid": owner_uid} if owner_uid else None
    name, version = dgd["metadata"]["name"], dgd["apiVersion"].split("/", 1)[1]
    platform = get_platform()
    wait_for_lane(platform, dgd, namespace, timeout_s=lane_wait_s)
    url = platform.apply_dgd(dgd, namespace, owner, patch_own=not ensure)
    if url_param:  # an Argo output parameter
        _write(url_param, url)
    if save:
        _write(save, yaml.safe_dump(dgd, sort_keys=False))
    print(f"applied {dgd['apiVersion']} DynamoGraphDeployment {namespace}/{name}; frontend {url}")
    if ensure:
        try:
            took = platform.wait_ready(name, namespace, model, timeout_s, api_version=version)
        except (TimeoutError, RuntimeError) as e:
            raise NotServing(f"{namespace}/{name} is not serving: {e}") from e
        print(f"{namespace}/{name} serves {model} (checked in {took:.1f} s)")
    return url


def wait_ready(
    *,
    name: str,
    run_id: str,
    namespace: str,
    model: str,
    timeout_s: float,
    api_version: str,
    bundle: str = "",
    images: str = "",
    failure: str = "",
    ensure_from: str = "",
    ready_file: str = "",
) -> float:
    """Wait until the run's DGD serves `model`; seconds waited. When it will not: the reason goes to
    `failure` (the verdict quotes it), the debug bundle to `bundle`, and NotServing is raised. Once ready,
    the images the pods run go to `images` and the time-to-ready record to `ready_file`.
    `ensure_from` (the DGD this run's deploy saved) is re-created first when missing: a UI Retry of a
    failed wait-ready re-runs it after the exit handler deleted the DGD."""
    dgd = dgd_name(name, run_id)
    platform = get_platform()
    if ensure_from and Path(ensure_from).is_file():
        saved = yaml.safe_load(Path(ensure_from).read_text())
        check_dgd(saved)
        platform.apply_dgd(saved, namespace, workflow_owner(saved), patch_own=False)
    try:
        took = platform.wait_ready(
            dgd, namespace, model, timeout_s, api_version=api_version, bundle_path=Path(bundle) if bundle else None
        )
    except (TimeoutError, RuntimeError) as e:
        message = f"{namespace}/{dgd} is not serving: {e}"
        if failure:
            _write(failure, message + "\n")
        raise NotServing(message) from e
    print(f"{namespace}/{dgd} serves {model} after {took:.1f} s")
    if images:
        ran = platform.image_ids(dgd, namespace)
        _write(images, json.dumps(ran, indent=2, sort_keys=True) + "\n")
        for image, image_id in sorted(ran.items()):
            print(f"  runs {image} = {image_id}")
    if ready_file:
        write_ready_file(platform, Path(ready_file), dgd, namespace, api_version, waited_s=took)
    return took


def write_ready_file(
    platform: Platform, path: Path, name: str, namespace: str, api_version: str, *, waited_s: float
) -> None:
    """The deployment's time-to-ready (from the DGD's creation to serving), a context column of the results
    table (infersweep.results.context READY_FILE)."""
    ready_at = time.time()
    try:
        applied_at = platform.applied_at(name, namespace, api_version)
    except Exception as e:  # the record enriches a run: never fail a served deployment over it
        print(f"wait-ready: cannot read when {name} was applied: {e}", file=sys.stderr)
        applied_at = None
    try:
        # Where the workers register (status.components[*].runtimeNamespace): the scrape step scopes the
        # worker queries to it (infersweep.results.server_metrics.worker_namespaces).
        runtime = platform.runtime_namespaces(name, namespace, api_version)
    except Exception as e:
        print(f"wait-ready: cannot read the runtime namespaces of {name}: {e}", file=sys.stderr)
        runtime = {}
    record = {
        "dgd": name,
        "applied_at": applied_at,
        "ready_at": ready_at,
        "waited_s": round(waited_s, 3),
        "time_to_ready_s": round(ready_at - applied_at, 3) if applied_at else None,
        "runtime_namespaces": runtime,
    }
    _write(path, json.dumps(record) + "\n")


def teardown(*, name: str, run_id: str, namespace: str, api_version: str, owner_uid: str = "") -> bool:
    """Delete the run's DGD (idempotent: False when it is already gone). DGDOwnedElsewhere: with `owner_uid`,
    a DGD of that name owned by another Workflow is left alone."""
    dgd = dgd_name(name, run_id)
    deleted = get_platform().delete_dgd(dgd, namespace, api_version, owner_uid=owner_uid)
    print(f"DGD {namespace}/{dgd}: {'deleted' if deleted else 'already gone'}")
    return deleted


def ensure_pvc(*, name: str, namespace: str, size: str, storage_class: str = "", bound_timeout_s: float = 300.0) -> str:
    """Make sure the model-cache PVC exists and is Bound (or binds on first use); PVCNotBound when it will not."""
    state = get_platform().ensure_pvc(name, namespace, size, storage_class, bound_timeout_s=bound_timeout_s)
    print(f"pvc {namespace}/{name}: {state}")
    return state
