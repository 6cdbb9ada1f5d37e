"""Fabric, placement and host resources of the rendered worker pods (infersweep/dgd/pod_extras.py).

Every DGD here is validated against the DGD CRD (unknown fields forbidden, infersweep.schemas), in both
apiVersions. Scheduling is judged by evaluating the rendered node affinity the way the kube-scheduler does
(required terms are ORed, expressions inside a term ANDed; operator In = the label exists with one of the
values: kubernetes/kubernetes staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/
nodeaffinity.go, NodeSelectorRequirementsAsSelector + nodeSelectorTerms.Match), against the labels GPU
Feature Discovery puts on real nodes.
"""

from __future__ import annotations

import copy

import pytest
import yaml

from infersweep.dgd.pod_extras import MULTUS_NETWORKS
from infersweep.dgd.render import render_dgd
from infersweep.recipe import RecipeError, all_recipe_paths, load_recipe, parse_recipe, recipe_data
from infersweep.schemas import validate_dgd
from tests.conftest import shared_dir

# Node labels as GPU Feature Discovery sets them (nvidia.com/gpu.product) on an H100 SXM and a B200 node.
H100_NODE = {
    "kubernetes.io/hostname": "gpu05",
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    "nvidia.com/gpu.count": "8",
}
B200_NODE = {"kubernetes.io/hostname": "b200-01", "nvidia.com/gpu.product": "NVIDIA-B200", "nvidia.com/gpu.count": "8"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}


def _requirement_matches(req: dict, labels: dict[str, str]) -> bool:
    op, key, values = req["operator"], req["key"], req.get("values", [])
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raise AssertionError(f"operator {op} not modelled")


def schedulable(pod_spec: dict, labels: dict[str, str], taints: list[dict]) -> bool:
    """Whether the scheduler's NodeAffinity, NodeSelector and TaintToleration filters admit the node."""
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required and not any(
        all(_requirement_matches(req, labels) for req in term.get("matchExpressions", []))
        for term in required["nodeSelectorTerms"]
    ):
        return False
    for taint in taints:  # NoSchedule taints must each be tolerated (v1.Toleration.ToleratesTaint)
        if not any(
            t["key"] == taint["key"]
            and t.get("effect") in (None, taint["effect"])
            and (t.get("operator") == "Exists" or t.get("value") == taint["value"])
            for t in pod_spec.get("tolerations") or []
        ):
            return False
    return True


def worker_pods(dgd: dict) -> dict[str, dict]:
    """Component name -> what the pod gets: pod spec, main container, annotations, resources, shm."""
    out = {}
    if "components" in dgd["spec"]:
        for c in dgd["spec"]["components"]:
            spec = c["podTemplate"]["spec"]
            main = spec["containers"][0]
            out[c["name"]] = {
                "type": c["type"],
                "spec": spec,
                "main": main,
                "annotations": c["podTemplate"].get("metadata", {}).get("annotations", {}),
                "requests": main.get("resources", {}).get("requests", {}),
                "shm": c.get("sharedMemorySize"),
            }
    else:
        for name, s in dgd["spec"]["services"].items():
            extra = s["extraPodSpec"]
            requests = dict((s.get("resources") or {}).get("requests", {}))
            requests |= requests.pop("custom", {})
            out[name] = {
                "type": s.get("subComponentType") or s["componentType"],
                "spec": extra,
                "main": extra["mainContainer"] | {"env": s.get("envs", [])},
                "annotations": s.get("extraPodMetadata", {}).get("annotations", {}),
                "requests": requests,
                "shm": (s.get("sharedMemory") or {}).get("size"),
            }
    return out


def env_of(pod: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in pod["main"].get("env", [])}


API_VERSIONS = ("v1beta1", "v1alpha1")


def render(r, api: str) -> dict:
    dgd = render_dgd(r, api_version=api)
    validate_dgd(dgd)  # strict: a field the CRD does not have would fail here, not vanish on apply
    return dgd


@pytest.mark.parametrize("api", API_VERSIONS)
def test_every_recipe_renders_a_valid_dgd_with_its_pod_extras(api):
    for path in all_recipe_paths():
        render(load_recipe(path), api)


@pytest.mark.parametrize("api", API_VERSIONS)
def test_an_h100_recipe_never_lands_on_a_b200_node(api):
    # Issue 10 item 6: before, workers asked only for nvidia.com/gpu and any GPU node would do.
    r = load_recipe("qwen3-32b-fp8-vllm-disagg-4p4d-kv")
    pods = worker_pods(render(r, api))
    workers = {n: p for n, p in pods.items() if p["type"] != "frontend"}
    assert workers
    for name, pod in workers.items():
        assert schedulable(pod["spec"], H100_NODE, [GPU_TAINT]), f"{name} cannot run on an H100 node"
        assert not schedulable(pod["spec"], B200_NODE, [GPU_TAINT]), f"{name} could run on a B200 node"
    # ... and a B200 recipe the other way round
    b = load_recipe("lightning-vllm-agg-b200-mtp-bf16")
    for pod in (p for p in worker_pods(render(b, api)).values() if p["type"] != "frontend"):
        assert schedulable(pod["spec"], B200_NODE, [GPU_TAINT]) and not schedulable(pod["spec"], H100_NODE, [GPU_TAINT])


def test_every_catalog_worker_is_pinned_to_its_gpu_type():
    by_type = {"H100": H100_NODE, "B200": B200_NODE}
    for path in all_recipe_paths():
        r = load_recipe(path)
        for pod in (p for p in worker_pods(render_dgd(r)).values() if p["type"] != "frontend"):
            terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            assert terms["nodeSelectorTerms"], r.name
            for gpu, node in by_type.items():
                assert schedulable(pod["spec"], node, [GPU_TAINT]) == (r.recipe.gpu.type == gpu), (r.name, gpu)


@pytest.mark.parametrize("api", API_VERSIONS)
@pytest.mark.parametrize(
    "name",
    [
        "qwen3-32b-fp8-vllm-disagg-4p4d-kv",
        "qwen36-35b-a3b-fp8-sglang-disagg-dpep-offload",
        "llama-3-1-8b-vllm-tp16-multinode",
        "glm-5-2-fp8-vllm-tp16-multinode",
    ],
)
def test_recipes_that_move_data_between_pods_get_the_roce_data_path(name, api):
    """The seed's fix for RoCE: rdma/ib plus a Multus/MacVLAN interface, IPC_LOCK and UCX on mlx5_8:1.
    Disaggregated recipes move KV between pods; the TP=16 recipes spread one replica over two nodes."""
    pods = worker_pods(render(load_recipe(name), api))
    workers = [p for p in pods.values() if p["type"] != "frontend"]
    assert workers
    for pod in workers:
        assert pod["annotations"][MULTUS_NETWORKS] == "roce-macvlan"
        assert pod["main"]["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
        env = env_of(pod)
        assert env["UCX_NET_DEVICES"] == "mlx5_8:1" and "cuda_ipc" in env["UCX_TLS"]
        assert pod["requests"]["rdma/ib"] == "1"
    frontend = next(p for p in pods.values() if p["type"] == "frontend")
    assert MULTUS_NETWORKS not in frontend["annotations"]
    assert "add" not in frontend["main"]["securityContext"]["capabilities"]  # the transport is the workers'


@pytest.mark.parametrize("api", API_VERSIONS)
def test_a_single_node_aggregated_recipe_asks_for_no_fabric(api):
    for pod in worker_pods(render(load_recipe("qwen3-32b-fp8-vllm-agg"), api)).values():
        assert MULTUS_NETWORKS not in pod["annotations"]
        assert "rdma/ib" not in pod["requests"] and "add" not in pod["main"]["securityContext"]["capabilities"]
        assert "UCX_NET_DEVICES" not in env_of(pod)


def test_a_recipe_transport_replaces_the_pool_fabric():
    # The Lightning H100 targets run on AWS (EFA/libfabric), not on the report's RoCE pool.
    pods = worker_pods(render(load_recipe("lightning-vllm-disagg-h100-dspark"), "v1beta1"))
    for pod in (p for p in pods.values() if p["type"] != "frontend"):
        assert MULTUS_NETWORKS not in pod["annotations"]
        assert pod["requests"]["vpc.amazonaws.com/efa"] == "4" and "rdma/ib" not in pod["requests"]
        assert env_of(pod)["FI_PROVIDER"] == "efa" and "UCX_NET_DEVICES" not in env_of(pod)
        assert pod["main"]["securityContext"]["capabilities"]["add"] == ["IPC_LOCK", "SYS_RESOURCE"]


@pytest.mark.parametrize("api", API_VERSIONS)
def test_memory_request_follows_the_cpu_kv_tier(api):
    # Exp 5: 32 GiB CPU KV tier per engine -> 32 GiB tier + 32 GiB runtime = 64Gi; without a tier, none.
    for pod in (
        p
        for p in worker_pods(render(load_recipe("qwen3-32b-fp8-vllm-disagg-4p4d-kv-offload"), api)).values()
        if p["type"] != "frontend"
    ):
        assert pod["requests"]["memory"] == "64Gi"
    for pod in worker_pods(render(load_recipe("qwen3-32b-fp8-vllm-disagg-4p4d-kv"), api)).values():
        # the frontend asks for its own (pod_extras.FRONTEND_RESOURCES), a worker without a tier none
        assert ("memory" in pod["requests"]) == (pod["type"] == "frontend")


def test_hicache_memory_goes_only_where_hicache_is_on():
    r = load_recipe("qwen36-35b-a3b-fp8-sglang-disagg-dpep-offload")
    for pod in (p for p in worker_pods(render(r, "v1beta1")).values() if p["type"] != "frontend"):
        hicache_on = "--enable-hierarchical-cache" in pod["main"]["args"]
        assert ("memory" in pod["requests"]) == hicache_on
        if hicache_on:  # host pool = ratio x device KV pool (upper bound), + runtime
            assert int(pod["requests"]["memory"].removesuffix("Gi")) > 32


def _with(name: str, **fields) -> object:
    r = load_recipe(name)
    data = recipe_data(r.path)
    data.update(copy.deepcopy(fields))
    return parse_recipe(data, r.path)


@pytest.mark.parametrize("api", API_VERSIONS)
def test_recipe_placement_sets_secrets_memory_shm_and_tolerations(api):
    r = _with(
        "qwen3-32b-fp8-vllm-agg",
        placement={
            "image_pull_secrets": ["nvcr-pull"],
            "memory": "96Gi",
            "shared_memory": "40Gi",
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "bench", "effect": "NoSchedule"}],
        },
    )
    pods = worker_pods(render(r, api))
    for pod in pods.values():
        assert pod["spec"]["imagePullSecrets"] == [{"name": "nvcr-pull"}]  # the frontend pulls the same image
    worker = next(p for p in pods.values() if p["type"] != "frontend")
    assert worker["requests"]["memory"] == "96Gi" and worker["shm"] == "40Gi"
    # The recipe's tolerations replace the pool's: a node tainted only nvidia.com/gpu is no longer tolerated.
    assert schedulable(worker["spec"], H100_NODE, [{"key": "dedicated", "value": "bench", "effect": "NoSchedule"}])
    assert not schedulable(worker["spec"], H100_NODE, [GPU_TAINT])
    # The GPU type's node affinity stays: the recipe did not set gpu_product.
    assert not schedulable(worker["spec"], B200_NODE, [])


def test_lightning_workers_get_upstreams_memory_and_shm():
    for pod in (
        p
        for p in worker_pods(render(load_recipe("lightning-vllm-agg-h200-dspark"), "v1beta1")).values()
        if p["type"] != "frontend"
    ):
        assert pod["requests"]["memory"] == "128Gi" and pod["shm"] == "40Gi"


@pytest.mark.parametrize(
    "field, value, expect",
    [
        ("placement", {"tolerations": [{"key": "a", "operator": "Exists", "value": "x"}]}, "placement.tolerations.0"),
        ("placement", {"memory": "lots"}, "placement.memory: 'lots' is not a memory quantity"),
        ("placement", {"gpu_product": ["NVIDIA H100"]}, "placement.gpu_product"),
        ("transport", {"pod_annotations": {"k8s.v1.cni.cncf.io/networks": "x"}}, "give Multus networks as `networks"),
        ("transport", {"networks": ["Bad_Name"]}, "transport.networks"),
        ("transport", {"capabilities": ["SYS_ADMIN"]}, "transport.capabilities.0"),
        ("transport", {"env": {"1BAD": "x"}}, "transport.env"),
    ],
)
def test_bad_placement_or_transport_is_one_clear_error(field, value, expect):
    with pytest.raises(RecipeError, match=expect.replace("(", r"\(").replace("[", r"\[")):
        _with("qwen3-32b-fp8-vllm-agg", **{field: value})


# ---- compared with upstream (skipped without the shared reference set)


def _upstream_dgd(rel: str) -> dict:
    path = shared_dir() / "reference" / "dynamo" / "recipes" / rel
    if not path.is_file():
        pytest.skip(f"upstream recipe {path} not present (shared/ reference set absent)")
    return next(d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == "DynamoGraphDeployment")


@pytest.mark.parametrize(
    "ours, theirs",
    [
        ("lightning-vllm-disagg-h200-dspark", "nemotron-3.5-lightning/vllm/disagg-h200-dspark/deploy.yaml"),
        ("lightning-vllm-disagg-h100-dflash", "nemotron-3.5-lightning/vllm/disagg-h100-dflash/deploy.yaml"),
        ("lightning-vllm-disagg-gb200-dspark-bf16", "nemotron-3.5-lightning/vllm/disagg-gb200-dspark/deploy.yaml"),
    ],
)
def test_pod_extras_match_upstream_lightning(ours, theirs):
    """Same fabric and placement as upstream's DGD: node affinity values, GPU toleration, capabilities,
    fabric resources, UCX/libfabric env, memory request, /dev/shm size."""
    up = worker_pods(_upstream_dgd(theirs))
    mine = worker_pods(render(load_recipe(ours), "v1beta1"))
    for role in ("prefill", "decode"):
        u = next(p for p in up.values() if p["type"] == role)
        m = next(p for p in mine.values() if p["type"] == role)
        for node in (
            H100_NODE,
            B200_NODE,
            {"nvidia.com/gpu.product": "NVIDIA-H200"},
            {"nvidia.com/gpu.product": "NVIDIA-GB200"},
        ):
            assert schedulable(m["spec"], node, [GPU_TAINT]) == schedulable(u["spec"], node, [GPU_TAINT]), node
        assert set(m["main"]["securityContext"]["capabilities"]["add"]) == set(
            u["main"]["securityContext"]["capabilities"]["add"]
        )
        fabric = {k: v for k, v in u["requests"].items() if k not in ("nvidia.com/gpu", "memory")}
        assert {k: v for k, v in m["requests"].items() if k not in ("nvidia.com/gpu", "memory")} == fabric
        transport_env = {
            k: v for k, v in env_of(u).items() if k.startswith(("UCX_", "FI_", "NIXL_LIBFABRIC", "NCCL_IB"))
        }
        transport_env.pop("UCX_RCACHE_MAX_UNRELEASED", None)  # a tuning knob of upstream's, not the data path
        assert {k: v for k, v in env_of(m).items() if k in transport_env} == transport_env
        assert m["requests"]["memory"] == u["requests"]["memory"] and m["shm"] == u["shm"]
