"""Restart classes: what moving a running deployment from one treatment to the next forces.

The classes, cheapest first, follow what the Dynamo operator does when a DGD's spec changes (read in
ai-dynamo/dynamo, docs/pages/kubernetes/rolling-update.md and the worker hash
`ComputeDGDWorkersSpecHash` in deploy/operator/internal/dynamo/graph.go, later api/v1alpha1):

- LOAD: the rendered DGDs are identical; only the AIPerf side changes (workload, concurrencies, SLOs).
- FRONTEND: only the frontend component differs (the router mode is a frontend argument,
  infersweep/dgd/render.py frontend_args). The worker hash covers worker components only ("Only worker components
  (prefill, decode, worker) are included in the hash"); "Non-worker components like frontend are updated
  in-place": the frontend pod is replaced, the GPU workers keep running.
- SCALE: only worker `replicas` differ. The hash strips "Replicas: scaling, not pod template" (and the
  scaling adapter), so a replica change does not roll the workers: the DGD is patched, pods are added or
  removed, and only added pods load the model.
- WORKER: anything of a worker component the worker hash covers differs: all of it but replicas, the
  scaling adapter, modelRef, eppConfig and topologyConstraint (the pod template: engine arguments, CPU KV
  offload, speculative decoding, transport env/resources, KV-event flags that a router change adds for some
  engines; and beside it sharedMemorySize, ...), or the DGD-wide spec.env. The hash "covers all worker
  services together — changing any single worker's spec triggers a rolling update for all workers": every
  worker restarts and loads the model again, the frontend and the deployment's other objects stay.
- FULL: a different deployment: model (a different model cache and MDC), engine or image, the set of
  components (aggregated <-> disaggregated), or GPUs per pod (TP/DP/nodes). A rolling update cannot
  change GPUs per pod on GPUs the experiment holds exactly (default maxSurge 25 % needs spare GPUs, and
  old and new generations would both hold them), and a different model or engine shares nothing with the
  running workers, so the experiment deletes the DGD and applies the new one.

The class is judged on the v1beta1 DGDs as they are applied (infersweep.dgd.deployable_dgd, same name for
both), so whatever the renderer and the scheduling step put into a worker's pod template decides, not a list
of recipe fields kept beside it: under Kueue, for one, a replica change also changes the pod group's
total-count annotation on every pod template, which the worker hash covers, so it is a worker restart.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from infersweep.cluster_settings import ClusterSettings
from infersweep.recipe import ResolvedRecipe


class RestartClass(enum.IntEnum):
    LOAD = 0
    FRONTEND = 1
    SCALE = 2
    WORKER = 3
    FULL = 4

    @property
    def label(self) -> str:
        return {0: "load only", 1: "frontend only", 2: "scale in place", 3: "worker restart", 4: "full redeploy"}[
            self.value
        ]


@dataclass(frozen=True)
class Transition:
    cls: RestartClass
    reasons: tuple[str, ...]  # what differs, e.g. "router: round-robin -> kv"


_DGD_NAME = "experiment"  # both sides are rendered under one name: the experiment keeps one DGD


def _applied(r: ResolvedRecipe, settings: ClusterSettings | None) -> dict[str, Any]:
    """The DGD the experiment applies for `r`. The rollout annotations are left at the operator's default
    here: the experiment makes one choice for every treatment (infersweep.dgd.pool_is_exact), so they never
    tell two treatments apart."""
    from infersweep.dgd import deployable_dgd

    if settings is None:
        from infersweep.cluster_settings import load_cluster_settings

        settings = load_cluster_settings()
    return deployable_dgd(r, settings, name=_DGD_NAME, exact_pool=False)


def _components(r: ResolvedRecipe, settings: ClusterSettings | None) -> tuple[str, dict[str, dict[str, Any]], Any]:
    spec = _applied(r, settings)["spec"]
    return spec["backendFramework"], {c["name"]: c for c in spec["components"]}, spec.get("env")


def _gpus_per_pod(comp: dict[str, Any]) -> Any:
    limits = comp["podTemplate"]["spec"]["containers"][0].get("resources", {}).get("limits", {})
    return {k: v for k, v in limits.items() if k.endswith("/gpu")}


# What the operator's worker hash leaves out of a v1beta1 worker component (deploy/operator/api/v1beta1
# ComputeDGDWorkersSpecHash -> workerHashInputForSpec: "Excluded fields (do not affect worker pod contents):
# Replicas, ScalingAdapter, ModelRef, EPPConfig, TopologyConstraint"). Everything else of the component is
# hashed (podTemplate, sharedMemorySize, multinode, frontendSidecar, compilationCache, experimental, ...),
# with spec.backendFramework and spec.env: a change to any of it rolls every worker.
_NOT_HASHED = frozenset({"replicas", "scalingAdapter", "modelRef", "eppConfig", "topologyConstraint"})


def _pod(comp: dict[str, Any]) -> Any:
    """The part of a worker component the operator's worker hash covers."""
    return {k: v for k, v in comp.items() if k not in _NOT_HASHED}


def _field_changes(a: ResolvedRecipe, b: ResolvedRecipe) -> list[str]:
    skip = {"name", "description", "status", "baseline", "regression"}
    da = a.recipe.model_dump(exclude=skip, exclude_none=True)
    db = b.recipe.model_dump(exclude=skip, exclude_none=True)
    out: list[str] = []

    def walk(x: Any, y: Any, where: str) -> None:
        if isinstance(x, dict) and isinstance(y, dict):
            for k in list(x) + [k for k in y if k not in x]:
                walk(x.get(k), y.get(k), f"{where}.{k}" if where else k)
        elif x != y:
            out.append(f"{where}: {_short(x)} -> {_short(y)}")

    walk(da, db, "")
    return out


def _short(v: Any) -> str:
    import json

    text = "none" if v is None else v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
    return text if len(text) <= 40 else text[:37] + "..."


def dgd_class(a: dict[str, Any], b: dict[str, Any]) -> RestartClass:
    """The class of applying DGD `b` over a running DGD `a` (v1beta1 documents), by the operator's rules."""
    sa, sb = a["spec"], b["spec"]
    ca = {c["name"]: c for c in sa["components"]}
    cb = {c["name"]: c for c in sb["components"]}
    if sa.get("backendFramework") != sb.get("backendFramework") or {n: c["type"] for n, c in ca.items()} != {
        n: c["type"] for n, c in cb.items()
    }:
        return RestartClass.FULL
    workers = [n for n, c in ca.items() if c["type"] != "frontend"]
    for n in workers:
        image = [x["podTemplate"]["spec"]["containers"][0].get("image") for x in (ca[n], cb[n])]
        if (
            _gpus_per_pod(ca[n]) != _gpus_per_pod(cb[n])
            or ca[n].get("multinode") != cb[n].get("multinode")
            or image[0] != image[1]
        ):
            return RestartClass.FULL
    if sa.get("env") != sb.get("env") or any(_pod(ca[n]) != _pod(cb[n]) for n in workers):
        return RestartClass.WORKER
    if any(
        ca[n]["replicas"] != cb[n]["replicas"] or ca[n].get("scalingAdapter") != cb[n].get("scalingAdapter")
        for n in workers
    ):
        return RestartClass.SCALE
    if any(c != cb[n] for n, c in ca.items() if c["type"] == "frontend"):
        return RestartClass.FRONTEND
    return RestartClass.LOAD


def classify(a: ResolvedRecipe, b: ResolvedRecipe, settings: ClusterSettings | None = None) -> Transition:
    """What going from deployment `a` to deployment `b` forces (see the module docstring); `settings`: the
    cluster's (default params/cluster.yaml), whose GPU guard decides the pods' queue labels."""
    reasons = tuple(_field_changes(a, b))
    ra, rb = a.recipe, b.recipe
    if (ra.model, ra.engine, a.image, ra.gpu.type) != (rb.model, rb.engine, b.image, rb.gpu.type):
        return Transition(RestartClass.FULL, reasons)  # a new model cache / MDC: nothing carries over
    return Transition(dgd_class(_applied(a, settings), _applied(b, settings)), reasons)


def deployment_keys(r: ResolvedRecipe, settings: ClusterSettings | None = None) -> tuple[str, str, str, str]:
    """Keys whose equality means "no change of that class or above": (full, worker, scale, frontend).

    Two recipes with the same full key differ by at most a worker restart; with the same full and worker
    keys by at most a scale; and so on. The plan groups treatments by these keys, outermost first.
    """
    import json

    framework, comps, env = _components(r, settings)
    workers = {n: c for n, c in comps.items() if c["type"] != "frontend"}
    full = json.dumps(
        [
            r.recipe.model,
            r.recipe.engine,
            r.image,
            r.recipe.gpu.type,
            framework,
            {n: [c["type"], _gpus_per_pod(c), c.get("multinode")] for n, c in comps.items()},
        ],
        sort_keys=True,
    )
    worker = json.dumps([env, {n: _pod(c) for n, c in workers.items()}], sort_keys=True)
    scale = json.dumps({n: [c["replicas"], c.get("scalingAdapter")] for n, c in workers.items()}, sort_keys=True)
    frontend = json.dumps({n: c for n, c in comps.items() if c["type"] == "frontend"}, sort_keys=True)
    return full, worker, scale, frontend
