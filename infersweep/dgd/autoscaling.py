"""The autoscaling annotation a recipe's DGD carries: render time. The deploy step turns it into KEDA
ScaledObjects (infersweep/platform/keda.py, which explains the scaling), so the DGD alone says how it scales.
"""

from __future__ import annotations

import json
import re

from infersweep.platform.keda import ANNOTATION as ANNOTATION  # re-exported: dgd/render.py reads autoscaling.ANNOTATION
from infersweep.recipe import RecipeError, ResolvedRecipe


def autoscaling_annotation(
    r: ResolvedRecipe, component_names: dict[str, str], prometheus_url: str | None = None
) -> str | None:
    """The recipe's autoscaled roles as the DGD annotation's JSON (None when nothing autoscales)."""
    comps = {}
    for role, w in r.recipe.topology.roles().items():
        a = w.autoscaling
        if a:
            comps[component_names[role]] = {
                "min_replicas": a.min_replicas,
                "max_replicas": a.max_replicas,
                "metric": a.metric,
                "target_per_replica": a.target_per_replica,
            }
    if not comps:
        return None
    if prometheus_url is None:
        from infersweep.cluster_settings import load_cluster_settings

        prometheus_url = load_cluster_settings().autoscaling.prometheus_url
    if not re.fullmatch(r"https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~/-]*)?", prometheus_url or ""):
        raise RecipeError(
            f"recipe {r.name}: autoscaling needs the Prometheus KEDA queries; set autoscaling.prometheus_url "
            f"in params/cluster.yaml to its in-cluster http(s):// address (got {prometheus_url!r})"
        )
    return json.dumps({"prometheus": prometheus_url, "components": comps}, separators=(",", ":"), sort_keys=True)
