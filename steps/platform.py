"""Where a DGD is realised: the Kubernetes API (in a cluster) or Dynamo processes on this machine.

The workflow steps (deploy, wait-ready, teardown, ensure-pvc) are the same code in both places; only this
adapter differs. In a cluster it is chosen by default; `infersweep run --local` sets
INFERSWEEP_PLATFORM=local and INFERSWEEP_LOCAL_STATE for every step it runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from infersweep.dynamo_api import DGD_GROUP, DGD_PLURAL, frontend_url  # noqa: F401 (moved there; re-exported)
KEDA_GROUP, KEDA_VERSION, KEDA_PLURAL = "keda.sh", "v1alpha1", "scaledobjects"
RUN_LABEL = "infersweep.io/run"


class PVCNotBound(RuntimeError):
    """The model-cache PVC will not bind; the message names the PVC, its phase and the cause."""


class DGDOwnedElsewhere(RuntimeError):
    """A DGD of this name exists and belongs to another Workflow (or to nobody): never adopt or patch it."""


def dgd_name(base: str, run_id: str) -> str:
    """The DGD name every step of a run uses (infersweep.names.dgd_run_name); no run id: `base` as given."""
    from infersweep.names import dgd_run_name

    return dgd_run_name(base, run_id) if run_id else base


def for_run(dgd: dict[str, Any], run_id: str) -> dict[str, Any]:
    """The rendered DGD renamed for one run and labelled with the run id (so the reaper and a human can
    find the run a deployment belongs to)."""
    from infersweep.names import label_value

    if not run_id:
        return dgd
    meta = dgd.setdefault("metadata", {})
    meta["name"] = dgd_name(meta["name"], run_id)
    meta.setdefault("labels", {})[RUN_LABEL] = label_value(run_id)
    return dgd


class Platform(Protocol):
    def ensure_pvc(self, name: str, namespace: str, size: str, storage_class: str, *,
                   bound_timeout_s: float = 300.0, poll_s: float = 2.0) -> str: ...
    def apply_dgd(self, dgd: dict[str, Any], namespace: str, owner: dict[str, str] | None, *,
                  patch_own: bool = True) -> str: ...
    def image_ids(self, name: str, namespace: str) -> dict[str, str]: ...
    def wait_ready(self, name: str, namespace: str, model: str, timeout_s: float, *,
                   api_version: str = "v1beta1", bundle_path: Path | None = None) -> float: ...
    def delete_dgd(self, name: str, namespace: str, api_version: str, *, owner_uid: str = "") -> bool: ...
    def applied_at(self, name: str, namespace: str, api_version: str) -> float | None: ...


class KubernetesPlatform:
    def __init__(self) -> None:
        from kubernetes import client, config

        try:
            config.load_incluster_config()
        except config.ConfigException:
            config.load_kube_config()
        self.core = client.CoreV1Api()
        self.custom = client.CustomObjectsApi()

    def ensure_pvc(self, name: str, namespace: str, size: str, storage_class: str, *,
                   bound_timeout_s: float = 300.0, poll_s: float = 2.0) -> str:
        from kubernetes.client.exceptions import ApiException

        state = "exists"
        try:
            self.core.read_namespaced_persistent_volume_claim(name, namespace)
        except ApiException as e:
            if e.status != 404:
                raise
            body: dict[str, Any] = {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "infersweep"}},
                # ReadWriteMany: every worker pod on every node mounts the same cache.
                "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": size}}},
            }
            if storage_class:
                body["spec"]["storageClassName"] = storage_class
            try:
                self.core.create_namespaced_persistent_volume_claim(namespace, body)
                state = "created"
            except ApiException as e:
                if e.status != 409:  # created by a concurrent run in between: that is fine
                    raise
        return self._wait_bound(name, namespace, state, bound_timeout_s, poll_s)

    def _wait_bound(self, name: str, namespace: str, state: str, timeout_s: float, poll_s: float) -> str:
        """Wait until the PVC is Bound, so the model download does not sit in a pod stuck Pending.

        A storage class with `volumeBindingMode: WaitForFirstConsumer` binds only when a pod uses the
        claim (the PVC controller says so in a `WaitForFirstConsumer` event): that is accepted at once,
        the model-cache pod is that consumer. `ProvisioningFailed` fails at once with the provisioner's
        message; anything else fails at the timeout naming the PVC, its phase and its last event.
        """
        import time

        deadline = time.monotonic() + timeout_s
        while True:
            pvc = self.core.read_namespaced_persistent_volume_claim(name, namespace)
            phase = (pvc.status.phase if pvc.status else None) or "Pending"
            if phase == "Bound":
                return f"{state}, Bound"
            if phase == "Lost":
                raise PVCNotBound(f"PVC {namespace}/{name} is Lost (its volume is gone): recreate it or set --set model-cache-pvc=OTHER")
            events = self.core.list_namespaced_event(
                namespace, field_selector=f"involvedObject.kind=PersistentVolumeClaim,involvedObject.name={name}").items
            events = sorted(events, key=lambda e: str(e.last_timestamp or e.event_time or ""))
            reasons = {e.reason for e in events}
            if "WaitForFirstConsumer" in reasons:
                return f"{state}, Pending until its first consumer (storage class binds on first use)"
            if "ProvisioningFailed" in reasons:
                last = [e for e in events if e.reason == "ProvisioningFailed"][-1]
                raise PVCNotBound(f"PVC {namespace}/{name} cannot be provisioned: {last.message}; "
                                  f"fix the storage class (--set storage-class=...) or create the PVC yourself")
            if time.monotonic() >= deadline:
                last = f"; last event: {events[-1].reason}: {events[-1].message}" if events else "; no events"
                raise PVCNotBound(f"PVC {namespace}/{name} is still {phase} after {timeout_s:.0f} s{last}; "
                                  f"check that the storage class exists and can provision ReadWriteMany volumes")
            time.sleep(poll_s)

    def apply_dgd(self, dgd: dict[str, Any], namespace: str, owner: dict[str, str] | None, *,
                  patch_own: bool = True) -> str:
        from kubernetes.client.exceptions import ApiException

        version = dgd["apiVersion"].split("/", 1)[1]
        name = dgd["metadata"]["name"]
        if owner and owner.get("uid"):
            # Owned by the Workflow: deleting the workflow garbage-collects the deployment and its GPUs,
            # and the reaper (steps/reap.py) finds the run a DGD belongs to.
            dgd["metadata"]["ownerReferences"] = [{
                "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "name": owner["name"],
                "uid": owner["uid"], "blockOwnerDeletion": False, "controller": False,
            }]
        try:
            self.custom.create_namespaced_custom_object(DGD_GROUP, version, namespace, DGD_PLURAL, dgd)
            self.apply_scaled_objects(dgd, namespace)
            return frontend_url(name, namespace)
        except ApiException as e:
            if e.status != 409:
                raise
        existing = self.custom.get_namespaced_custom_object(DGD_GROUP, version, namespace, DGD_PLURAL, name)
        owners = [o for o in existing.get("metadata", {}).get("ownerReferences") or [] if o.get("kind") == "Workflow"]
        if not (owner and owner.get("uid") and any(o.get("uid") == owner["uid"] for o in owners)):
            held_by = ", ".join(f"Workflow {o.get('name')} (uid {o.get('uid')})" for o in owners) or "no Workflow"
            raise DGDOwnedElsewhere(
                f"DynamoGraphDeployment {namespace}/{name} already exists and belongs to {held_by}, not to this run; "
                f"refusing to adopt it. Delete it (kubectl delete dynamographdeployment -n {namespace} {name}) "
                f"if nothing uses it, or submit again (each run names its own DGD)")
        if patch_own:
            # A retried deploy step finds the DGD its own earlier attempt created: bring it to the rendered spec.
            self.custom.patch_namespaced_custom_object(DGD_GROUP, version, namespace, DGD_PLURAL, name,
                                                       {"spec": dgd["spec"], "metadata": {"labels": dgd["metadata"].get("labels", {})}})
        self.apply_scaled_objects(dgd, namespace)
        return frontend_url(name, namespace)

    def apply_scaled_objects(self, dgd: dict[str, Any], namespace: str) -> int:
        """KEDA ScaledObjects of the DGD's autoscaled roles (workflows/keda.py), owned by the DGD so the
        API server's garbage collector deletes them with it whoever deletes it."""
        from kubernetes.client.exceptions import ApiException

        from infersweep.schemas import validate_document
        from workflows.keda import scaled_objects

        objs = scaled_objects(dgd, namespace)
        if not objs:
            return 0
        version = dgd["apiVersion"].split("/", 1)[1]
        live = self.custom.get_namespaced_custom_object(DGD_GROUP, version, namespace, DGD_PLURAL, dgd["metadata"]["name"])
        owner = {"apiVersion": dgd["apiVersion"], "kind": "DynamoGraphDeployment", "name": dgd["metadata"]["name"],
                 "uid": (live.get("metadata") or {}).get("uid", ""), "blockOwnerDeletion": False, "controller": False}
        for so in objs:
            if owner["uid"]:
                so["metadata"]["ownerReferences"] = [owner]
            validate_document(so)  # strict, against the KEDA CRD shipped in infersweep/reference
            try:
                self.custom.create_namespaced_custom_object(KEDA_GROUP, KEDA_VERSION, namespace, KEDA_PLURAL, so)
            except ApiException as e:
                if e.status == 404:
                    raise RuntimeError(f"the recipe autoscales but the cluster has no {KEDA_GROUP}/{KEDA_VERSION} "
                                       f"{KEDA_PLURAL}: install KEDA, or remove autoscaling from the recipe") from None
                if e.status != 409:
                    raise
                self.custom.patch_namespaced_custom_object(KEDA_GROUP, KEDA_VERSION, namespace, KEDA_PLURAL,
                                                           so["metadata"]["name"], {"spec": so["spec"]})
        return len(objs)

    def delete_scaled_objects(self, dgd_name: str, namespace: str) -> int:
        """Delete the DGD's ScaledObjects (found by their infersweep.io/dgd label); none, or no KEDA, is fine."""
        from kubernetes.client.exceptions import ApiException

        from workflows.keda import DGD_LABEL

        try:
            found = self.custom.list_namespaced_custom_object(KEDA_GROUP, KEDA_VERSION, namespace, KEDA_PLURAL,
                                                              label_selector=f"{DGD_LABEL}={dgd_name}")
        except ApiException as e:
            if e.status == 404:  # KEDA not installed: nothing of ours can exist
                return 0
            raise
        deleted = 0
        for item in found.get("items", []):
            try:
                self.custom.delete_namespaced_custom_object(KEDA_GROUP, KEDA_VERSION, namespace, KEDA_PLURAL,
                                                            item["metadata"]["name"])
                deleted += 1
            except ApiException as e:
                if e.status != 404:
                    raise
        return deleted

    def image_ids(self, name: str, namespace: str) -> dict[str, str]:
        from steps.readiness import pod_image_ids

        return pod_image_ids(self.core, name, namespace)

    def wait_ready(self, name: str, namespace: str, model: str, timeout_s: float, *,
                   api_version: str = "v1beta1", bundle_path: Path | None = None) -> float:
        from steps.readiness import wait_dgd_ready

        return wait_dgd_ready(self.core, self.custom, name, namespace, model, timeout_s,
                              api_version=api_version, bundle_path=bundle_path)

    def applied_at(self, name: str, namespace: str, api_version: str) -> float | None:
        """When the DGD was created: the API server's metadata.creationTimestamp (RFC 3339, whole seconds)."""
        from datetime import datetime

        dgd = self.custom.get_namespaced_custom_object(DGD_GROUP, api_version, namespace, DGD_PLURAL, name)
        stamp = (dgd.get("metadata") or {}).get("creationTimestamp")
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else None

    def delete_dgd(self, name: str, namespace: str, api_version: str, *, owner_uid: str = "") -> bool:
        from kubernetes.client.exceptions import ApiException

        try:
            if owner_uid:
                existing = self.custom.get_namespaced_custom_object(DGD_GROUP, api_version, namespace, DGD_PLURAL, name)
                owners = [o for o in existing.get("metadata", {}).get("ownerReferences") or [] if o.get("kind") == "Workflow"]
                if not any(o.get("uid") == owner_uid for o in owners):
                    held_by = ", ".join(f"Workflow {o.get('name')}" for o in owners) or "no Workflow"
                    raise DGDOwnedElsewhere(f"DynamoGraphDeployment {namespace}/{name} belongs to {held_by}, "
                                            f"not to this run: not deleting it")
            self.delete_scaled_objects(name, namespace)  # first, so KEDA stops scaling a DGD on its way out
            self.custom.delete_namespaced_custom_object(DGD_GROUP, api_version, namespace, DGD_PLURAL, name)
            return True
        except ApiException as e:
            if e.status == 404:
                return False
            raise


class LocalPlatform:
    """A DGD realised as a Dynamo frontend + mocker workers on this machine (no GPU, no Kubernetes)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir

    def _dgd_dir(self, name: str) -> Path:
        return self.state_dir / "dgd" / name

    def ensure_pvc(self, name: str, namespace: str, size: str, storage_class: str, *,
                   bound_timeout_s: float = 300.0, poll_s: float = 2.0) -> str:
        # Locally the "PVC" is a folder the runner mounts at the cache path; nothing to create.
        return "local"

    def apply_dgd(self, dgd: dict[str, Any], namespace: str, owner: dict[str, str] | None, *,
                  patch_own: bool = True) -> str:
        """Apply `dgd` as the operator would: created afresh when nothing runs; over a running deployment
        of the same name, reconciled by what changed (infersweep.local.reconfigure.apply_local: same spec
        -> nothing, as for a retried deploy step; router -> frontend swap on the same port; engine
        arguments -> worker restart; model/TP/topology -> full redeploy). apply_local returns after the
        change is made, so the wait-ready that follows never sees the old processes as the new spec.
        `patch_own` (the cluster adapter's: patch a DGD this run already owns) changes nothing here: a
        running deployment of this run's name is this run's."""
        from infersweep.local.dynamo import load_local, teardown_local
        from infersweep.local.reconfigure import apply_local

        d = self._dgd_dir(dgd["metadata"]["name"])
        if (d / "deployment.json").exists():
            from infersweep.local import procs

            try:
                dep = load_local(d)
                healthy = bool(dep.processes) and all(procs.record_alive(r) for r in dep.processes)
            except Exception:
                healthy = False
            if not healthy:
                # A resumed run finds the deployment its first attempt tore down (or one with a dead
                # process): stop what is left and start afresh rather than hand out a dead URL.
                teardown_local(d)
        model_dir = Path(os.environ["INFERSWEEP_LOCAL_MODEL_DIR"])
        max_workers = int(os.environ.get("INFERSWEEP_LOCAL_MAX_WORKERS", "2"))
        # No KEDA here: build and validate the ScaledObjects all the same, so a bad one fails locally too.
        from infersweep.schemas import validate_document
        from workflows.keda import scaled_objects

        for so in scaled_objects(dgd, namespace):
            validate_document(so)
        dep, cls = apply_local(dgd, model_dir=model_dir, state_dir=d, max_workers_per_component=max_workers)
        print(f"local apply: {'created' if cls is None else cls.label}; processes "
              + ", ".join(f"{r['name']}={r['pid']}" for r in dep.processes), flush=True)
        targets = os.environ.get("INFERSWEEP_LOCAL_PROM_TARGETS")
        if targets:
            # The local Prometheus scrapes the frontend's /metrics from now on (file_sd, refreshed each second).
            from infersweep.local.prometheus import write_targets

            # Target labels as Dynamo's PodMonitor dynamo-frontend gives a cluster's frontend (the Prometheus
            # Operator's namespace/pod, dynamo_namespace from the pod label the operator sets to
            # "<namespace>-<dgd>"): see params/metrics.yaml, so the same scoped queries work here.
            name = dgd["metadata"]["name"]
            write_targets(Path(targets), [dep.frontend_url.removeprefix("http://")],
                          {"namespace": namespace, "dynamo_namespace": f"{namespace}-{name}",
                           "pod": f"{name}-frontend-local"})
        return dep.frontend_url

    def wait_ready(self, name: str, namespace: str, model: str, timeout_s: float, *,
                   api_version: str = "v1beta1", bundle_path: Path | None = None) -> float:
        # Local processes have no API objects to bundle: the runner keeps their logs under the run dir.
        from infersweep.local.dynamo import wait_ready_local

        return wait_ready_local(self._dgd_dir(name), timeout_s)

    def image_ids(self, name: str, namespace: str) -> dict[str, str]:
        return {}  # processes on this machine: no images, no digests

    def applied_at(self, name: str, namespace: str, api_version: str) -> float | None:
        """When the local deploy started the DGD's processes (deployment.json created_at)."""
        from infersweep.local.dynamo import load_local

        return load_local(self._dgd_dir(name)).created_at or None

    def delete_dgd(self, name: str, namespace: str, api_version: str, *, owner_uid: str = "") -> bool:
        from infersweep.local.dynamo import teardown_local

        d = self._dgd_dir(name)
        if not (d / "deployment.json").exists():
            return False
        teardown_local(d)
        return True


def get_platform() -> Platform:
    if os.environ.get("INFERSWEEP_PLATFORM") == "local":
        return LocalPlatform(Path(os.environ["INFERSWEEP_LOCAL_STATE"]))
    return KubernetesPlatform()
