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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class DeployRequest:
    """The deploy step's arguments (infersweep.step_declarations DEPLOY, by option name; `dgd_text` is --dgd)."""

    namespace: str
    dgd_text: str | None = None  # the rendered YAML, renamed for `run_id`
    dgd_file: str | None = None  # or the DGD this run's deploy saved (used as is)
    run_id: str = ""
    owner_name: str = ""
    owner_uid: str = ""
    url_param: str = ""  # the frontend URL, an Argo output parameter
    save: str = ""  # the DGD as applied
    ensure: bool = False  # never patch, and wait until it serves `model`
    model: str = ""
    timeout_s: float = 1800.0


@dataclass(frozen=True)
class WaitReadyRequest:
    """The wait-ready step's arguments (infersweep.step_declarations WAIT_READY, by option name); the last five
    are files it writes ('' = none) or reads (`ensure_from`)."""

    name: str
    run_id: str
    namespace: str
    model: str
    timeout_s: float
    api_version: str
    bundle: str = ""
    images: str = ""
    failure: str = ""
    ensure_from: str = ""
    ready_file: str = ""


def _run_dgd(req: DeployRequest, policy: DgdPolicy | None) -> tuple[dict, dict[str, str] | None]:
    """The DGD to apply and its owner: the saved file as is, or the rendered YAML renamed for the run."""
    if req.dgd_file and not Path(req.dgd_file).is_file():
        raise BadInput(f"--dgd-file {req.dgd_file}: no such file (the run's deploy step saves it there)")
    dgd = yaml.safe_load(Path(req.dgd_file).read_text() if req.dgd_file else req.dgd_text)
    if not isinstance(dgd, dict) or dgd.get("kind") != "DynamoGraphDeployment":
        raise BadInput("--dgd is not a DynamoGraphDeployment document")
    if req.ensure and not req.model:
        raise BadInput("--ensure needs --model (what the deployment must serve)")
    check_dgd(dgd, policy)  # the saved file too: the workdir volume is writable by every step of the run
    if req.dgd_file:  # saved by this run's deploy: already renamed and owned
        return dgd, workflow_owner(dgd)
    owner = {"name": req.owner_name, "uid": req.owner_uid} if req.owner_uid else None
    return for_run(dgd, req.run_id), owner


def deploy(req: DeployRequest, *, lane_wait_s: float = LANE_WAIT_S, policy: DgdPolicy | None = None) -> str:
    """Apply the run's DGD (the rendered YAML renamed for `run_id`, or as this run's deploy saved it) and
    return the frontend URL, also written to `url_param`. With `ensure`: never patch, and wait until it
    serves `model` (NotServing when it does not). DGDOwnedElsewhere: another Workflow's DGD has the name."""
    dgd, owner = _run_dgd(req, policy)
    namespace = req.namespace
    name, version = dgd["metadata"]["name"], dgd["apiVersion"].split("/", 1)[1]
    platform = get_platform()
    wait_for_lane(platform, dgd, namespace, timeout_s=lane_wait_s)
    url = platform.apply_dgd(dgd, namespace, owner, patch_own=not req.ensure)
    if req.url_param:  # an Argo output parameter
        _write(req.url_param, url)
    if req.save:
        _write(req.save, yaml.safe_dump(dgd, sort_keys=False))
    print(f"applied {dgd['apiVersion']} DynamoGraphDeployment {namespace}/{name}; frontend {url}")
    if req.ensure:
        took = _serving(platform, name, namespace, req.model, req.timeout_s, version)
        print(f"{namespace}/{name} serves {req.model} (checked in {took:.1f} s)")
    return url


def _serving(
    platform: Platform, dgd: str, namespace: str, model: str, timeout_s: float, api_version: str, **kw: Any
) -> float:
    """Seconds until the DGD serves `model`; NotServing naming it and why when it will not."""
    try:
        return platform.wait_ready(dgd, namespace, model, timeout_s, api_version=api_version, **kw)
    except (TimeoutError, RuntimeError) as e:
        raise NotServing(f"{namespace}/{dgd} is not serving: {e}") from e


def wait_ready(req: WaitReadyRequest) -> float:
    """Wait until the run's DGD serves `model`; seconds waited. When it will not: the reason goes to
    `failure` (the verdict quotes it), the debug bundle to `bundle`, and NotServing is raised. Once ready,
    the images the pods run go to `images` and the time-to-ready record to `ready_file`.
    `ensure_from` (the DGD this run's deploy saved) is re-created first when missing: a UI Retry of a
    failed wait-ready re-runs it after the exit handler deleted the DGD."""
    dgd, namespace = dgd_name(req.name, req.run_id), req.namespace
    platform = get_platform()
    if req.ensure_from and Path(req.ensure_from).is_file():
        saved = yaml.safe_load(Path(req.ensure_from).read_text())
        check_dgd(saved)
        platform.apply_dgd(saved, namespace, workflow_owner(saved), patch_own=False)
    bundle = Path(req.bundle) if req.bundle else None
    try:
        took = _serving(platform, dgd, namespace, req.model, req.timeout_s, req.api_version, bundle_path=bundle)
    except NotServing as e:
        if req.failure:
            _write(req.failure, f"{e}\n")
        raise
    print(f"{namespace}/{dgd} serves {req.model} after {took:.1f} s")
    if req.images:
        ran = platform.image_ids(dgd, namespace)
        _write(req.images, json.dumps(ran, indent=2, sort_keys=True) + "\n")
        for image, image_id in sorted(ran.items()):
            print(f"  runs {image} = {image_id}")
    if req.ready_file:
        write_ready_file(platform, Path(req.ready_file), dgd, namespace, req.api_version, waited_s=took)
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
