"""The DGD adapter for a cluster: the Kubernetes API (the Dynamo operator realises the DGD).

Readiness (pods, events, the frontend's answer) is infersweep.platform.readiness. Every API call made here
is granted to the account of the step that makes it (workflows/cluster.py STEP_RULES), and
tests/house/test_least_privilege.py derives that from the steps' call graph.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infersweep.platform.dgd import DELETE_PROPAGATION, DGD_GROUP, DGD_PLURAL, frontend_url
from infersweep.platform.keda import DGD_LABEL, scaled_objects
from infersweep.platform.keda import GROUP as KEDA_GROUP
from infersweep.platform.keda import PLURAL as KEDA_PLURAL
from infersweep.platform.keda import VERSION as KEDA_VERSION
from infersweep.platform.kubeconfig import load_cluster_config
from infersweep.platform.protocol import DGDOwnedElsewhere, PVCNotBound
from infersweep.platform.readiness import WaitOptions, pod_image_ids, wait_dgd_ready


class KubernetesPlatform:
    def __init__(self) -> None:
        from kubernetes import client

        load_cluster_config()
        self.core = client.CoreV1Api()
        self.custom = client.CustomObjectsApi()

    def ensure_pvc(
        self,
        name: str,
        namespace: str,
        size: str,
        storage_class: str,
        *,
        bound_timeout_s: float = 300.0,
        poll_s: float = 2.0,
    ) -> str:
        from kubernetes.client.exceptions import ApiException

        state = "exists"
        try:
            self.core.read_namespaced_persistent_volume_claim(name, namespace)
        except ApiException as e:
            if e.status != 404:
                raise
            body: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
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
                raise PVCNotBound(
                    f"PVC {namespace}/{name} is Lost (its volume is gone): recreate it or set --set model-cache-pvc=OTHER"
                )
            events = self.core.list_namespaced_event(
                namespace, field_selector=f"involvedObject.kind=PersistentVolumeClaim,involvedObject.name={name}"
            ).items
            events = sorted(events, key=lambda e: str(e.last_timestamp or e.event_time or ""))
            reasons = {e.reason for e in events}
            if "WaitForFirstConsumer" in reasons:
                return f"{state}, Pending until its first consumer (storage class binds on first use)"
            if "ProvisioningFailed" in reasons:
                last = [e for e in events if e.reason == "ProvisioningFailed"][-1]
                raise PVCNotBound(
                    f"PVC {namespace}/{name} cannot be provisioned: {last.message}; "
                    f"fix the storage class (--set storage-class=...) or create the PVC yourself"
                )
            if time.monotonic() >= deadline:
                last = f"; last event: {events[-1].reason}: {events[-1].message}" if events else "; no events"
                raise PVCNotBound(
                    f"PVC {namespace}/{name} is still {phase} after {timeout_s:.0f} s{last}; "
                    f"check that the storage class exists and can provision ReadWriteMany volumes"
                )
            time.sleep(poll_s)

    def apply_dgd(
        self, dgd: dict[str, Any], namespace: str, owner: dict[str, str] | None, *, patch_own: bool = True
    ) -> str:
        from kubernetes.client.exceptions import ApiException

        version = dgd["apiVersion"].split("/", 1)[1]
        name = dgd["metadata"]["name"]
        if owner and owner.get("uid"):
            # Owned by the Workflow: deleting the workflow garbage-collects the deployment and its GPUs,
            # and the reaper (infersweep/platform/reaper.py) finds the run a DGD belongs to.
            dgd["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": "argoproj.io/v1alpha1",
                    "kind": "Workflow",
                    "name": owner["name"],
                    "uid": owner["uid"],
                    "blockOwnerDeletion": False,
                    "controller": False,
                }
            ]
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
                f"if nothing uses it, or submit again (each run names its own DGD)"
            )
        if patch_own:
            # A retried deploy step finds the DGD its own earlier attempt created: bring it to the rendered spec,
            # by a replace that keeps adapter-owned replicas (infersweep/platform/dgd_update.py says why).
            self._replace_dgd(existing, dgd, namespace)
        self.apply_scaled_objects(dgd, namespace)
        return frontend_url(name, namespace)

    def _replace_dgd(self, live: dict[str, Any], dgd: dict[str, Any], namespace: str, attempts: int = 3) -> None:
        """PUT the rendered DGD over `live`; on a 409 (the operator wrote the object in between: its
        resourceVersion moved) read it again and retry, as the API server's optimistic concurrency asks."""
        from kubernetes.client.exceptions import ApiException

        from infersweep.platform.dgd_update import replacement

        version, name = dgd["apiVersion"].split("/", 1)[1], dgd["metadata"]["name"]
        for attempt in range(attempts):
            try:
                self.custom.replace_namespaced_custom_object(
                    DGD_GROUP, version, namespace, DGD_PLURAL, name, replacement(live, dgd)
                )
                return
            except ApiException as e:
                if e.status != 409 or attempt == attempts - 1:
                    raise
            live = self.custom.get_namespaced_custom_object(DGD_GROUP, version, namespace, DGD_PLURAL, name)

    def apply_scaled_objects(self, dgd: dict[str, Any], namespace: str) -> int:
        """KEDA ScaledObjects of the DGD's autoscaled roles (infersweep/platform/keda.py), owned by the DGD so the
        API server's garbage collector deletes them with it whoever deletes it."""
        from kubernetes.client.exceptions import ApiException

        from infersweep.schemas import validate_document

        objs = scaled_objects(dgd, namespace)
        if not objs:
            return 0
        version = dgd["apiVersion"].split("/", 1)[1]
        live = self.custom.get_namespaced_custom_object(
            DGD_GROUP, version, namespace, DGD_PLURAL, dgd["metadata"]["name"]
        )
        owner = {
            "apiVersion": dgd["apiVersion"],
            "kind": "DynamoGraphDeployment",
            "name": dgd["metadata"]["name"],
            "uid": (live.get("metadata") or {}).get("uid", ""),
            "blockOwnerDeletion": False,
            "controller": False,
        }
        for so in objs:
            if owner["uid"]:
                so["metadata"]["ownerReferences"] = [owner]
            validate_document(so)  # strict, against the KEDA CRD shipped in infersweep/reference
            try:
                self.custom.create_namespaced_custom_object(KEDA_GROUP, KEDA_VERSION, namespace, KEDA_PLURAL, so)
            except ApiException as e:
                if e.status == 404:
                    raise RuntimeError(
                        f"the recipe autoscales but the cluster has no {KEDA_GROUP}/{KEDA_VERSION} "
                        f"{KEDA_PLURAL}: install KEDA, or remove autoscaling from the recipe"
                    ) from None
                if e.status != 409:
                    raise
                self.custom.patch_namespaced_custom_object(
                    KEDA_GROUP, KEDA_VERSION, namespace, KEDA_PLURAL, so["metadata"]["name"], {"spec": so["spec"]}
                )
        return len(objs)

    def delete_scaled_objects(self, dgd_name: str, namespace: str) -> int:
        """Delete the DGD's ScaledObjects (found by their infersweep.io/dgd label); none, or no KEDA, is fine."""
        from kubernetes.client.exceptions import ApiException

        try:
            found = self.custom.list_namespaced_custom_object(
                KEDA_GROUP, KEDA_VERSION, namespace, KEDA_PLURAL, label_selector=f"{DGD_LABEL}={dgd_name}"
            )
        except ApiException as e:
            if e.status == 404:  # KEDA not installed: nothing of ours can exist
                return 0
            raise
        deleted = 0
        for item in found.get("items", []):
            try:
                self.custom.delete_namespaced_custom_object(
                    KEDA_GROUP, KEDA_VERSION, namespace, KEDA_PLURAL, item["metadata"]["name"]
                )
                deleted += 1
            except ApiException as e:
                if e.status != 404:
                    raise
        return deleted

    def image_ids(self, name: str, namespace: str) -> dict[str, str]:
        return pod_image_ids(self.core, name, namespace)

    def wait_ready(
        self,
        name: str,
        namespace: str,
        model: str,
        timeout_s: float,
        *,
        api_version: str = "v1beta1",
        bundle_path: Path | None = None,
    ) -> float:
        return wait_dgd_ready(
            self.core,
            self.custom,
            name,
            namespace,
            model,
            timeout_s,
            api_version=api_version,
            options=WaitOptions(bundle_path=bundle_path),
        )

    def applied_at(self, name: str, namespace: str, api_version: str) -> float | None:
        """When the DGD was created: the API server's metadata.creationTimestamp (RFC 3339, whole seconds)."""
        from datetime import datetime

        dgd = self.custom.get_namespaced_custom_object(DGD_GROUP, api_version, namespace, DGD_PLURAL, name)
        stamp = (dgd.get("metadata") or {}).get("creationTimestamp")
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else None

    def list_dgds(self, namespace: str, api_version: str, label_selector: str) -> list[str]:
        """Names of the DGDs with the label selector (one being deleted included: its pods may still hold GPUs)."""
        found = self.custom.list_namespaced_custom_object(
            DGD_GROUP, api_version, namespace, DGD_PLURAL, label_selector=label_selector
        )
        return sorted(item["metadata"]["name"] for item in found.get("items", []))

    def runtime_namespaces(self, name: str, namespace: str, api_version: str) -> dict[str, str]:
        """Component -> Dynamo runtime namespace, from the DGD's status (infersweep.platform.dgd.runtime_namespaces)."""
        from infersweep.platform.dgd import runtime_namespaces

        return runtime_namespaces(
            self.custom.get_namespaced_custom_object(DGD_GROUP, api_version, namespace, DGD_PLURAL, name)
        )

    def delete_dgd(self, name: str, namespace: str, api_version: str, *, owner_uid: str = "") -> bool:
        from kubernetes.client.exceptions import ApiException

        try:
            if owner_uid:
                existing = self.custom.get_namespaced_custom_object(DGD_GROUP, api_version, namespace, DGD_PLURAL, name)
                owners = [
                    o for o in existing.get("metadata", {}).get("ownerReferences") or [] if o.get("kind") == "Workflow"
                ]
                if not any(o.get("uid") == owner_uid for o in owners):
                    held_by = ", ".join(f"Workflow {o.get('name')}" for o in owners) or "no Workflow"
                    raise DGDOwnedElsewhere(
                        f"DynamoGraphDeployment {namespace}/{name} belongs to {held_by}, "
                        f"not to this run: not deleting it"
                    )
            self.delete_scaled_objects(name, namespace)  # first, so KEDA stops scaling a DGD on its way out
            # Foreground: the DGD stays listed until its pods are gone (infersweep/platform/dgd.py DELETE_PROPAGATION)
            self.custom.delete_namespaced_custom_object(
                DGD_GROUP, api_version, namespace, DGD_PLURAL, name, body={"propagationPolicy": DELETE_PROPAGATION}
            )
            return True
        except ApiException as e:
            if e.status == 404:
                return False
            raise
