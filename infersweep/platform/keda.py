"""KEDA ScaledObjects for the autoscaled roles of a DGD (the seed's Qwen3.6 agg run: 1-8 workers on
`dynamo_frontend_active_requests`, 16 active requests per worker): built at deploy time from the DGD itself.

How Dynamo 1.6 is scaled from outside: a component with `scalingAdapter` gets a
DynamoGraphDeploymentScalingAdapter (DGDSA) named `<dgd>-<lowercased component name>` (ai-dynamo/dynamo
deploy/operator/internal/controller, generateAdapterName) that owns the component's replicas and implements
the scale subresource (`+kubebuilder:subresource:scale:specpath=.spec.replicas`, deploy/operator/api/
dynamo/v1beta1/dynamographdeploymentscalingadapter_types.go). KEDA, HPA or the Planner scale the adapter,
never the DGD (docs/kubernetes/autoscaling.md, "Autoscaling with KEDA": scaleTargetRef apiVersion
nvidia.com/v1alpha1, kind DynamoGraphDeploymentScalingAdapter, name <dgd>-<service>).

The trigger is KEDA's Prometheus scaler with metricType AverageValue (KEDA's default, kedacore/keda
pkg/scalers/scaler.go GetMetricTargetType), so the HPA KEDA creates asks for ceil(sum / threshold)
replicas (kubernetes pkg/controller/podautoscaler/replica_calculator.go, GetExternalPerPodMetricReplicas):
threshold = the recipe's target per replica. The query sums the gauge over this DGD's frontend pods only:
the Dynamo 1.6.1 frontend exports it with a `model` label alone (shared/reference/dynamo/
frontend-metrics-1.6.1.txt), so the deployment is told apart by the target labels every Prometheus
Kubernetes scrape adds (`namespace`, `pod`); the frontend pod is `<dgd>-frontend-<rs>-<id>` (Deployment) or
`<dgd>-0-frontend-<id>` (Grove PodClique), and the anchored regex below matches exactly those.

The DGD carries what the ScaledObjects need as one JSON annotation (ANNOTATION; rendered from the recipe by
infersweep/dgd/autoscaling.py autoscaling_annotation), so the deploy step builds them from the DGD it applies, whatever
name that DGD was given for the run; they are applied with the DGD, owned by it (garbage-collected with it)
and deleted with it (infersweep/platform/kube.py). Here, beside the adapters, so that infersweep/platform
imports nothing from workflows/ (pyproject.toml import-linter contracts).
"""

from __future__ import annotations

import json
from typing import Any

ANNOTATION = "infersweep.io/autoscaling"
# The ScaledObject custom resource (its CRD: infersweep/reference/keda/keda.sh_scaledobjects.yaml).
GROUP, VERSION, PLURAL = "keda.sh", "v1alpha1", "scaledobjects"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "ScaledObject"
# DGDSA: nvidia.com/v1alpha1 is served by every operator that has adapters (1.6 stores v1alpha1).
ADAPTER_REF = {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeploymentScalingAdapter"}
DGD_LABEL = "infersweep.io/dgd"  # on each ScaledObject: the DGD it scales (teardown finds them by it)


def adapter_name(dgd_name: str, component: str) -> str:
    return f"{dgd_name}-{component.lower()}"


def frontend_query(metric: str, dgd_name: str, namespace: str) -> str:
    # DGD names are DNS-1123 subdomains: '.' is the only regex metacharacter they can hold. PromQL string
    # literals take backslash escapes, hence the doubled backslash.
    pods = dgd_name.replace(".", "\\\\.") + "-(0-)?frontend-[a-z0-9]+(-[a-z0-9]+)?"
    return f'sum({metric}{{namespace="{namespace}",pod=~"{pods}"}})'


def scaled_objects(dgd: dict[str, Any], namespace: str) -> list[dict[str, Any]]:
    """The ScaledObjects a DGD's autoscaling annotation asks for (none without the annotation)."""
    meta = dgd.get("metadata") or {}
    raw = (meta.get("annotations") or {}).get(ANNOTATION)
    if not raw:
        return []
    spec, name = json.loads(raw), meta["name"]
    labels = {k: v for k, v in (meta.get("labels") or {}).items()} | {DGD_LABEL: name}
    out = []
    for component, a in sorted(spec["components"].items()):
        adapter = adapter_name(name, component)
        out.append(
            {
                "apiVersion": API_VERSION,
                "kind": KIND,
                "metadata": {"name": adapter, "namespace": namespace, "labels": labels},
                "spec": {
                    "scaleTargetRef": {**ADAPTER_REF, "name": adapter},
                    "minReplicaCount": a["min_replicas"],
                    "maxReplicaCount": a["max_replicas"],
                    "triggers": [
                        {
                            "type": "prometheus",
                            "metricType": "AverageValue",
                            "metadata": {
                                "serverAddress": spec["prometheus"],
                                "query": frontend_query(a["metric"], name, namespace),
                                "threshold": f"{a['target_per_replica']:g}",
                            },
                        }
                    ],
                },
            }
        )
    return out
