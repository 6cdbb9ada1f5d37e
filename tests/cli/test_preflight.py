"""`infersweep preflight` (issue 23 item 2): the cluster checked before any GPU is held, one line per problem.

Against the Kubernetes API stand-in (tests/support/k8s_standin.py, through the real `kubernetes` client), the real
local S3 server (moto_server, infersweep/local/standins/s3server.py) and the real Prometheus local mode runs
(infersweep/local/standins/prometheus.py), whose scrape jobs are named as the Prometheus Operator names a
PodMonitor's (podMonitor/<namespace>/<name>/<endpoint index>).
"""

from __future__ import annotations

import base64
import copy
import json
import shutil
import time
import urllib.request

import pytest

from infersweep.argo_kube import KubeArgo
from infersweep.cli import main
from infersweep.cluster_settings import load_cluster_settings
from infersweep.install_version import HASH_LABEL
from infersweep.local.standins.prometheus import BINARY, LocalPrometheus
from infersweep.local.standins.s3server import ACCESS_KEY, SECRET_KEY, LocalS3
from infersweep.preflight import Reach, preflight
from tests.support.k8s_standin import K8sStandin

pytestmark = pytest.mark.skipif(
    not shutil.which(BINARY) and not __import__("os").path.exists(BINARY), reason="no prometheus binary"
)
pytestmark = [pytestmark, pytest.mark.slow]  # real servers or subprocesses: outside the inner loop
PM_NS = "dynamo-system"


def _b64(v: str) -> str:
    return base64.b64encode(v.encode()).decode()


@pytest.fixture(scope="module")
def s3():
    s = load_cluster_settings()
    with LocalS3(buckets=[s.s3.bucket, s.artifact_repository.bucket]) as server:
        yield server


def _pools_loaded(p: LocalPrometheus, n: int) -> LocalPrometheus:
    """Prometheus creates a job's scrape pool when discovery first reports (its discovery manager sends
    updates at most every 5 s): wait for it, as a long-running cluster Prometheus has long done."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{p.url}/api/v1/scrape_pools", timeout=5) as r:
            if len(json.loads(r.read())["data"]["scrapePools"]) >= n:
                return p
        time.sleep(0.2)
    raise TimeoutError(p.tail())


@pytest.fixture(scope="module")
def prom(tmp_path_factory):
    jobs = tuple(f"podMonitor/{PM_NS}/{n}/0" for n in ("dynamo-frontend", "dynamo-worker"))
    with LocalPrometheus(tmp_path_factory.mktemp("prom") / "targets.json", jobs=jobs) as p:
        yield _pools_loaded(p, 2)


LABELS = {"labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}
H100_NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "status": {"allocatable": {"cpu": "190", "memory": "2000Gi", "nvidia.com/gpu": "8", "rdma/ib": "63"}},
}


@pytest.fixture
def cluster(monkeypatch, tmp_path, capsys):
    """A cluster set up as docs/cluster.md says: the install set, both Secrets, Dynamo's PodMonitors."""
    for var in ("ARGO_SERVER", "ARGO_TOKEN", "ARGO_NAMESPACE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("INFERSWEEP_CONFIG", str(tmp_path / "none.yaml"))
    with K8sStandin() as api:
        monkeypatch.setenv("KUBECONFIG", str(api.kubeconfig(tmp_path)))
        settings = load_cluster_settings()
        assert main(["install"]) == 0  # kube mode: RBAC and ConfigMaps too
        kube = KubeArgo(str(tmp_path / "kubeconfig"), settings.namespace)
        # as `kubectl create secret generic NAME --from-literal=K=V` stores them: base64 under data
        for name, data in (
            (settings.hf_token_secret, {"HF_TOKEN": "hf_test"}),
            (settings.s3.credentials_secret, {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}),
        ):
            api.objects[("", "v1", settings.namespace, "secrets", name)] = {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "Opaque",
                "metadata": {"name": name},
                "data": {k: _b64(v) for k, v in data.items()},
            }
        for name in ("dynamo-frontend", "dynamo-worker"):
            api.objects[("monitoring.coreos.com", "v1", PM_NS, "podmonitors", name)] = {
                "apiVersion": "monitoring.coreos.com/v1",
                "kind": "PodMonitor",
                "metadata": {"name": name, "namespace": PM_NS},
            }
        # the seed cluster's H100 pool as params/gpus.yaml describes it: GFD's product label, GPUs and the RDMA
        # Shared Device Plugin's rdma/ib allocatable, and the Network Operator's roce-macvlan network
        for i in range(2):
            api.objects[("", "v1", "", "nodes", f"h100-{i}")] = copy.deepcopy(H100_NODE) | {
                "metadata": {"name": f"h100-{i}", **copy.deepcopy(LABELS)}
            }
        api.objects[("k8s.cni.cncf.io", "v1", settings.namespace, "network-attachment-definitions", "roce-macvlan")] = {
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": "roce-macvlan", "namespace": settings.namespace},
        }
        capsys.readouterr()
        yield api, kube, settings


def test_a_ready_cluster_passes(cluster, s3, prom, capsys):
    assert main(["preflight", "--s3-endpoint", s3.endpoint_url, "--prometheus-url", prom.url]) == 0
    out = capsys.readouterr()
    assert out.err == "" and "\npreflight: ok:" in out.out and "dynamo-frontend, dynamo-worker" in out.out
    # the probe object was deleted again
    assert s3.client().list_objects_v2(Bucket=cluster[2].s3.bucket).get("KeyCount", 0) == 0


def test_an_empty_namespace_is_one_line_per_problem(monkeypatch, tmp_path, s3, prom, capsys):
    monkeypatch.delenv("ARGO_SERVER", raising=False)
    with K8sStandin() as api:
        monkeypatch.setenv("KUBECONFIG", str(api.kubeconfig(tmp_path)))
        assert main(["preflight", "--s3-endpoint", s3.endpoint_url, "--prometheus-url", prom.url]) == 1
    err = capsys.readouterr().err.splitlines()
    assert all(line.startswith("preflight: ") for line in err)
    text = "\n".join(err)
    assert (
        "Secret infersweep/hf-token-secret (the Hugging Face token): missing; create it: kubectl -n infersweep "
        "create secret generic hf-token-secret --from-literal=HF_TOKEN=hf_..." in text
    )
    assert "Secret infersweep/infersweep-s3 (the S3 credentials): missing" in text
    assert (
        "ConfigMap infersweep/infersweep-gpu-pools: missing" in text
        and "RoleBinding infersweep/infersweep-steps: missing" in text
    )
    assert "WorkflowTemplate infersweep/infersweep-vllm-agg: not installed" in text
    assert "CronWorkflow infersweep/infersweep-reaper: not installed" in text
    assert "PodMonitor dynamo-system/dynamo-frontend: missing" in text
    assert err[-1].startswith(f"preflight: {len(err) - 1} problem(s)")


def test_each_broken_part_is_named_with_its_fix(cluster, s3, prom):
    api, kube, settings = cluster
    reach = Reach(s3_endpoint_url=s3.endpoint_url, prometheus_url=prom.url)
    assert preflight(kube, settings, reach, install=_install(settings)) == []

    key = ("argoproj.io", "v1alpha1", settings.namespace, "workflowtemplates", "infersweep-vllm-agg")
    api.objects[key]["metadata"]["labels"][HASH_LABEL] = "0000000000000000"  # left by an older checkout
    cm = ("", "v1", settings.namespace, "configmaps", "infersweep-gpu-pools")
    api.objects[cm]["data"] = {**api.objects[cm]["data"], "h100-8gpu": "7"}  # edited by hand
    sec = ("", "v1", settings.namespace, "secrets", settings.hf_token_secret)
    api.objects[sec]["data"] = {"HUGGING_FACE_HUB_TOKEN": _b64("x")}  # the wrong key
    lines = preflight(kube, settings, reach, install=_install(settings))
    assert len(lines) == 3, lines
    assert "infersweep-vllm-agg: installed at" in lines[2] and "0000000000000000" in lines[2]
    assert lines[1].startswith("ConfigMap infersweep/infersweep-gpu-pools: keys h100-8gpu differ")
    assert lines[0].startswith("Secret infersweep/hf-token-secret (the Hugging Face token): no value for HF_TOKEN")


def test_s3_not_writable_and_prometheus_problems(cluster, s3, prom, tmp_path):
    api, kube, settings = cluster
    other = settings.changed(s3={**settings.s3.model_dump(), "bucket": "no-such-bucket"})
    lines = preflight(
        kube, other, Reach(s3_endpoint_url=s3.endpoint_url, prometheus_url=prom.url), install=_install(settings)
    )
    assert len(lines) == 1 and lines[0].startswith("S3 results bucket s3://no-such-bucket/runs at http://127.0.0.1:")
    assert "NoSuchBucket" in lines[0]

    # a Prometheus whose podMonitorSelector does not select dynamo-worker: no scrape pool for it
    with LocalPrometheus(tmp_path / "t.json", jobs=(f"podMonitor/{PM_NS}/dynamo-frontend/0",)) as only_frontend:
        _pools_loaded(only_frontend, 1)
        lines = preflight(
            kube,
            settings,
            Reach(s3_endpoint_url=s3.endpoint_url, prometheus_url=only_frontend.url),
            install=_install(settings),
        )
    assert lines == [
        f"PodMonitor {PM_NS}/dynamo-worker: not selected by the Prometheus at {only_frontend.url} (no "
        f"scrape pool podMonitor/{PM_NS}/dynamo-worker/*); give it the labels of the Prometheus' "
        "podMonitorSelector (Dynamo chart: dynamo.metrics.podMonitors.labels) and allow its namespace "
        "in podMonitorNamespaceSelector"
    ]

    lines = preflight(
        kube,
        settings,
        Reach(s3_endpoint_url=s3.endpoint_url, prometheus_url="http://127.0.0.1:1"),
        install=_install(settings),
    )
    assert len(lines) == 1 and lines[0].startswith("Prometheus at http://127.0.0.1:1: not answering")


def test_a_query_prometheus_refuses_is_named(cluster, s3, prom, monkeypatch):
    from infersweep import preflight as pf

    api, kube, settings = cluster
    monkeypatch.setattr(pf, "required_queries", lambda s: {"frontend_requests_per_s": "sum(rate(x[30s])"})
    lines = preflight(
        kube, settings, Reach(s3_endpoint_url=s3.endpoint_url, prometheus_url=prom.url), install=_install(settings)
    )
    assert len(lines) == 1 and "query frontend_requests_per_s (params/metrics.yaml) fails: bad_data" in lines[0]


def test_the_required_queries_are_the_scrape_steps():
    from infersweep.preflight import required_queries

    q = required_queries(load_cluster_settings())
    assert set(q) == {"frontend_requests_per_s", "worker_requests_per_s", "worker_inflight"}
    assert 'namespace="infersweep"' in q["frontend_requests_per_s"] and "${" not in "".join(q.values())


def _install(settings):
    from workflows.install_set import install_set

    return install_set(settings)


def test_a_gpu_pool_the_recipes_cannot_use_is_named_before_any_gpu_is_held(cluster):
    """Issue 38 item 14: disagg and multinode recipes render the seed cluster's roce-macvlan network, rdma/ib and
    H100 product label; on another cluster their pods sit Pending while the GPU lock is held."""
    from infersweep.preflight import check_gpu_pools

    api, kube, settings = cluster
    disagg = "qwen3-32b-fp8-vllm-disagg-4p4d-kv"
    assert check_gpu_pools(kube, settings, [disagg]) == []  # the seed cluster: it fits
    api.objects.pop(("k8s.cni.cncf.io", "v1", settings.namespace, "network-attachment-definitions", "roce-macvlan"))
    for i in range(2):
        del api.objects[("", "v1", "", "nodes", f"h100-{i}")]["status"]["allocatable"]["rdma/ib"]
    lines = check_gpu_pools(kube, settings, [disagg])
    assert any("no node of its placement offers rdma/ib: 1" in ln and "params/gpus.yaml" in ln for ln in lines)
    assert any(f"NetworkAttachmentDefinition {settings.namespace}/roce-macvlan missing" in ln for ln in lines)
    # another cluster: A100 nodes only. The recipe asked for is named; the catalogue check says it once.
    for i in range(2):
        api.objects[("", "v1", "", "nodes", f"h100-{i}")]["metadata"]["labels"] = {
            "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"
        }
    lines = check_gpu_pools(kube, settings, [disagg])
    assert lines and all("no node matches its placement" in ln for ln in lines)
    assert "['NVIDIA-A100-SXM4-80GB']" in lines[0]
    (line,) = check_gpu_pools(kube, settings)
    assert line.startswith("GPU pools: no node matches the placement of any GPU type in params/gpus.yaml")


def test_preflight_says_which_catalogue_recipes_it_skipped_and_checks_them_on_request(cluster, s3, prom, capsys):
    """Decision on issue 38: by default the catalogue check skips recipes with their own transport and recipes
    of a GPU type no node has, and says so, one line per skipped recipe with its reason; --all-recipes checks
    them too (on this H100 cluster the other pools' recipes then have no node)."""
    args = ["preflight", "--s3-endpoint", s3.endpoint_url, "--prometheus-url", prom.url]
    assert main(args) == 0
    out = capsys.readouterr().out
    efa = "lightning-vllm-disagg-h100-dspark"
    assert f"preflight: skipped recipe {efa}: its own transport (" in out
    assert f"check it with --recipe {efa} or --all-recipes" in out
    h200 = [ln for ln in out.splitlines() if "no node has its GPU type (H200)" in ln]
    assert h200 and all(ln.startswith("preflight: skipped recipe ") for ln in h200)
    assert main([*args, "--all-recipes"]) == 1
    out = capsys.readouterr()
    assert "skipped recipe" not in out.out
    assert "(H200)" in out.err and "no node matches its placement" in out.err
