"""The reaper (step steps/reap.py of the `infersweep-reaper` CronWorkflow): delete every infersweep DGD
whose run is over.

`argo terminate` (and UI Terminate) skips the exit handler (argo-workflows v4.1.2 workflow/controller/
operator.go: on a Terminate shutdown the onExit node is not run), so the teardown never happens and the
DGD would hold its GPUs until the Workflow is deleted (ownerReference garbage collection, after the TTL).
The reaper closes that gap: every few minutes it lists the DGDs that carry a run label (the deploy step
labels and owns each one) and deletes those whose owning Workflow is gone, has another uid (a new run of
the same name), or is no longer Pending/Running. A DGD without a Workflow owner was not made by a run
and is left alone. Idempotent; a 404 on delete (teardown got there first) is fine.

Its API calls are granted by workflows/cluster.py reaper_role() (tests/house/test_least_privilege.py).
"""

from __future__ import annotations

from typing import Any

from infersweep.platform.dgd import DELETE_PROPAGATION, DGD_GROUP, DGD_PLURAL, RUN_LABEL

WORKFLOW_GROUP = "argoproj.io"
WORKFLOW_VERSION = "v1alpha1"
WORKFLOW_PLURAL = "workflows"
LIVE_PHASES = {"", "Pending", "Running"}  # a Workflow the controller has not picked up yet has no phase


def stale_dgds(dgds: list[dict[str, Any]], workflows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(DGD name, why) for each DGD whose owning run is over."""
    by_uid = {w["metadata"].get("uid"): w for w in workflows}
    out = []
    for d in dgds:
        owners = [o for o in d["metadata"].get("ownerReferences") or [] if o.get("kind") == "Workflow"]
        if not owners:
            continue
        wf = by_uid.get(owners[0].get("uid"))
        if wf is None:
            out.append((d["metadata"]["name"], f"its Workflow {owners[0].get('name')} no longer exists"))
            continue
        # a metadata-only list (_metadata_page) carries no status: the controller's phase label stands for it
        phase = (wf.get("status") or {}).get("phase") or (wf["metadata"].get("labels") or {}).get(PHASE_LABEL) or ""
        if (wf["metadata"].get("labels") or {}).get("workflows.argoproj.io/completed") == "true" and not phase:
            phase = "completed"
        if phase not in LIVE_PHASES:
            out.append((d["metadata"]["name"], f"its Workflow {owners[0].get('name')} is {phase}"))
    return out


# The controller labels every Workflow it reconciles with its phase and `completed` (argo-workflows v4.1.2
# workflow/controller/operator.go markWorkflowPhase :2775-2777 "false" on the first phase, :2830 "true" on
# Succeeded/Failed/Error; workflow/common/common.go LabelKeyCompleted, LabelKeyPhase). `!=true` also selects a
# Workflow not reconciled yet (no label): live.
LIVE_WORKFLOWS = "workflows.argoproj.io/completed!=true"
PHASE_LABEL = "workflows.argoproj.io/phase"
PAGE = 50  # Workflows per list request (limit/continue): a running Workflow's status can be megabytes


# Only the Workflows' metadata: the API server answers a list whose Accept asks for it as a
# PartialObjectMetadataList (k8s.io/apiserver pkg/endpoints/handlers/response.go transformResponseObject /
# asPartialObjectMetadataList; client-go's metadata client sends exactly this media type,
# k8s.io/client-go/metadata PartialObjectMetadataListMimeTypes). Each item is apiVersion/kind/metadata: no
# spec, no status (a running Workflow's status.nodes is the bulk). stale_dgds needs the uid and the
# controller's phase / completed labels only.
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
# the generated method's keyword -> the API's query parameter (custom_objects_api.py query_params)
_QUERY = {
    "label_selector": "labelSelector",
    "field_selector": "fieldSelector",
    "limit": "limit",
    "_continue": "continue",
}


def _metadata_page(custom: Any, namespace: str, query: dict[str, Any]) -> dict[str, Any]:
    """One page of the Workflow list as metadata only.

    Not through `list_namespaced_custom_object(..., _headers=...)`: kubernetes 36.0.3's
    client/api/custom_objects_api.py list_namespaced_custom_object_with_http_info copies `_headers` into
    header_params (:3133) and then sets `header_params['Accept'] = select_header_accept([...])` (:3140-3141),
    which is always 'application/json' (api_client.py select_header_accept :508-522), so the caller's Accept
    never reaches the server. ApiClient.call_api, which that method ends in (:3151), sends header_params as
    given; the path, auth setting and query are the generated method's own."""
    return custom.api_client.call_api(
        "/apis/{group}/{version}/namespaces/{namespace}/{plural}",
        "GET",
        {"group": WORKFLOW_GROUP, "version": WORKFLOW_VERSION, "namespace": namespace, "plural": WORKFLOW_PLURAL},
        [(_QUERY[k], v) for k, v in query.items()],
        {"Accept": METADATA_LIST_ACCEPT},
        response_types_map={200: "object"},
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
    )


def _pages(custom: Any, namespace: str, **selectors: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    token = None
    while True:
        page = _metadata_page(
            custom, namespace, {"limit": PAGE, **selectors, **({"_continue": token} if token else {})}
        )
        items += page.get("items", [])
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return items


def owner_workflows(custom: Any, namespace: str, dgds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Workflows `stale_dgds` needs: the live ones (by the controller's `completed` label, paginated),
    and by name each DGD owner that is not among them (to tell completed from gone). Never every Workflow:
    with a week of retained runs, full objects would not fit the reaper's 256Mi, and an OOM-killed reaper
    reaps nothing."""
    live = _pages(custom, namespace, label_selector=LIVE_WORKFLOWS)
    have = {w["metadata"].get("uid") for w in live}
    out = list(live)
    for d in dgds:
        for o in d["metadata"].get("ownerReferences") or []:
            if o.get("kind") == "Workflow" and o.get("uid") not in have and o.get("name"):
                found = _pages(custom, namespace, field_selector=f"metadata.name={o['name']}")
                out += found
                have |= {w["metadata"].get("uid") for w in found} | {o.get("uid")}
    return out


def reap(custom: Any, namespace: str, api_version: str) -> list[str]:
    from kubernetes.client.exceptions import ApiException

    try:
        dgds = custom.list_namespaced_custom_object(
            DGD_GROUP, api_version, namespace, DGD_PLURAL, label_selector=RUN_LABEL
        )["items"]
    except ApiException as e:
        if e.status == 404:  # the CRD does not serve this version: every run's DGD would be left holding GPUs
            raise SystemExit(
                f"reaper: the cluster serves no {DGD_GROUP}/{api_version} {DGD_PLURAL} (404); re-install with "
                "the apiVersion its Dynamo operator serves: infersweep install --dgd-api v1alpha1|v1beta1"
            ) from e
        raise
    if not dgds:
        return []
    workflows = owner_workflows(custom, namespace, dgds)
    deleted = []
    for name, why in stale_dgds(dgds, workflows):
        try:
            # Foreground, as teardown's: listed until its pods are gone (infersweep/platform/dgd.py DELETE_PROPAGATION)
            custom.delete_namespaced_custom_object(
                DGD_GROUP, api_version, namespace, DGD_PLURAL, name, body={"propagationPolicy": DELETE_PROPAGATION}
            )
        except ApiException as e:
            if e.status != 404:
                raise
        print(f"reaped DGD {namespace}/{name}: {why}")
        deleted.append(name)
    return deleted


def reap_namespace(namespace: str, api_version: str) -> list[str]:
    """Reap `namespace` through the cluster's API (in-cluster config, else the kubeconfig); the DGDs deleted."""
    from kubernetes import client

    from infersweep.platform.kubeconfig import load_cluster_config

    load_cluster_config()
    deleted = reap(client.CustomObjectsApi(), namespace, api_version)
    print(f"reaper: {len(deleted)} DGD(s) deleted in {namespace}")
    return deleted
