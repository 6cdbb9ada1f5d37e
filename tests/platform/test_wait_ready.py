"""wait-ready fails fast, names the reason and leaves a debug bundle; tested through the real `kubernetes` client.

There is no Kubernetes API here. A local HTTP server serves the objects a cluster would: the DGD at
/apis/nvidia.com/v1beta1/..., pods (selected by the `nvidia.com/dynamo-graph-deployment-name` label, the
selector Dynamo's recipes README uses), events and pod logs, as JSON in the shape the API server returns
(`kubectl get -o json`: apiVersion/kind/metadata/spec/status, PodList/EventList wrappers, logs as text).
The same server answers the frontend's /v1/models and /v1/chat/completions. The client is the real
`kubernetes` package (CoreV1Api, CustomObjectsApi) pointed at it by a Configuration, so deserialisation,
query parameters and paths are the real ones. One test per failure kind, each asserting the bound.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from kubernetes import client

from infersweep.platform.readiness import POD_LABEL, NotReady, WaitOptions, wait_dgd_ready

NS, DGD, MODEL = "bench", "nemo-agg", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8"
POLL_S = 0.1


def dgd(state: str, ready: bool = False, message: str = "") -> dict:
    conds = [
        {
            "type": "Ready",
            "status": "True" if ready else "False",
            "reason": "AllReady" if ready else "NotReady",
            "message": message,
            "lastTransitionTime": "2025-01-01T00:00:00Z",
        }
    ]
    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": DGD, "namespace": NS, "uid": "d-1", "resourceVersion": "7", "generation": 1},
        "spec": {"components": []},
        "status": {"state": state, "conditions": conds, "observedGeneration": 1},
    }


def pod(name: str, *, phase="Running", waiting=None, restarts=0, last_terminated=None, unschedulable=None) -> dict:
    state = (
        {"waiting": {"reason": waiting[0], "message": waiting[1]}}
        if waiting
        else {"running": {"startedAt": "2025-01-01T00:00:10Z"}}
    )
    cs = {
        "name": "main",
        "image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1",
        "imageID": "",
        "ready": False,
        "restartCount": restarts,
        "started": not waiting,
        "state": state,
        "lastState": {},
    }
    if last_terminated:
        cs["lastState"] = {
            "terminated": {
                "exitCode": last_terminated[1],
                "reason": last_terminated[0],
                "startedAt": "2025-01-01T00:00:10Z",
                "finishedAt": "2025-01-01T00:01:10Z",
            }
        }
    status = {
        "phase": phase,
        "qosClass": "Burstable",
        "startTime": "2025-01-01T00:00:05Z",
        "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2025-01-01T00:00:05Z"}],
        "containerStatuses": [cs],
    }
    if unschedulable:
        status = {
            "phase": "Pending",
            "qosClass": "Burstable",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": unschedulable,
                    "lastTransitionTime": "2025-01-01T00:00:05Z",
                }
            ],
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": f"u-{name}", "labels": {POD_LABEL: DGD}},
        "spec": {"containers": [{"name": "main", "image": cs["image"]}], "nodeName": "gpu-node-1"},
        "status": status,
    }


def event(obj: str, reason: str, message: str, type_: str = "Warning") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{obj}.1812", "namespace": NS},
        "involvedObject": {"kind": "Pod", "name": obj, "namespace": NS, "apiVersion": "v1"},
        "reason": reason,
        "message": message,
        "type": type_,
        "count": 3,
        "firstTimestamp": "2025-01-01T00:00:05Z",
        "lastTimestamp": "2025-01-01T00:00:30Z",
    }


class FakeCluster:
    def __init__(self, dgd_obj: dict, pods: list[dict], events=(), logs=None, models=(MODEL,)) -> None:
        self.dgd, self.pods, self.events, self.logs, self.models = dgd_obj, pods, list(events), logs or {}, list(models)
        self.log_queries: list[dict] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def _handler(self):
        fc = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, body, ctype="application/json"):
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                u = urlparse(self.path)
                q = parse_qs(u.query)
                p = u.path
                if p == f"/apis/nvidia.com/v1beta1/namespaces/{NS}/dynamographdeployments/{DGD}":
                    return self._send(200, fc.dgd)
                if p == f"/api/v1/namespaces/{NS}/pods":
                    sel = q.get("labelSelector", [""])[0]
                    items = [x for x in fc.pods if sel == f"{POD_LABEL}={DGD}"]
                    return self._send(
                        200,
                        {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": items},
                    )
                if p == f"/api/v1/namespaces/{NS}/events":
                    return self._send(
                        200, {"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": fc.events}
                    )
                if p.startswith(f"/api/v1/namespaces/{NS}/pods/") and p.endswith("/log"):
                    name = p.split("/")[-2]
                    fc.log_queries.append({"pod": name, **{k: v[0] for k, v in q.items()}})
                    return self._send(200, fc.logs.get(name, ""), "text/plain")
                if p == "/v1/models":
                    return self._send(
                        200, {"object": "list", "data": [{"id": m, "object": "model"} for m in fc.models]}
                    )
                return self._send(
                    404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}
                )

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path == "/v1/chat/completions":
                    return self._send(
                        200,
                        {
                            "id": "c",
                            "object": "chat.completion",
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": "po"},
                                    "finish_reason": "length",
                                }
                            ],
                        },
                    )
                return self._send(404, {})

        return H

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def cluster_factory():
    made = []

    def make(*a, **kw):
        fc = FakeCluster(*a, **kw)
        made.append(fc)
        return fc

    yield make
    for fc in made:
        fc.close()


def wait(fc: FakeCluster, tmp_path, timeout_s=20.0, **kw):
    api = client.ApiClient(client.Configuration(host=fc.url))
    t0 = time.monotonic()
    try:
        took = wait_dgd_ready(
            client.CoreV1Api(api),
            client.CustomObjectsApi(api),
            DGD,
            NS,
            MODEL,
            timeout_s,
            options=WaitOptions(poll_s=POLL_S, base_url=fc.url, bundle_path=tmp_path / "bundle.json", **kw),
        )
        return took, None, time.monotonic() - t0
    except (NotReady, TimeoutError) as e:
        return None, e, time.monotonic() - t0


def bundle(tmp_path) -> dict:
    return json.loads((tmp_path / "bundle.json").read_text())


def test_ready_deployment_serving_the_model_passes(cluster_factory, tmp_path):
    fc = cluster_factory(dgd("successful", ready=True), [pod("nemo-agg-frontend-0"), pod("nemo-agg-worker-0")])
    took, err, _ = wait(fc, tmp_path)
    assert err is None and took < 2
    assert not (tmp_path / "bundle.json").exists()


def test_dgd_state_failed(cluster_factory, tmp_path):
    fc = cluster_factory(dgd("failed", message="component VllmWorker: invalid spec"), [pod("nemo-agg-worker-0")])
    _, err, secs = wait(fc, tmp_path)
    assert isinstance(err, NotReady) and "DGD state is failed" in str(err) and "invalid spec" in str(err)
    assert secs < 2
    assert bundle(tmp_path)["dgd_status"]["state"] == "failed"


def test_image_pull_backoff(cluster_factory, tmp_path):
    msg = 'Back-off pulling image "nvcr.io/nvidia/ai-dynamo/vllm-runtime:9.9"'
    fc = cluster_factory(
        dgd("pending"),
        [pod("nemo-agg-worker-0", phase="Pending", waiting=("ImagePullBackOff", msg))],
        events=[event("nemo-agg-worker-0", "Failed", "Failed to pull image: not found")],
    )
    _, err, secs = wait(fc, tmp_path)
    assert isinstance(err, NotReady) and "ImagePullBackOff" in str(err) and "vllm-runtime:9.9" in str(err)
    assert secs < 2
    b = bundle(tmp_path)
    assert b["events"][0]["message"] == "Failed to pull image: not found"
    assert b["pods"][0]["containers"][0]["state"]["waiting"]["reason"] == "ImagePullBackOff"


def test_crash_loop_backoff_bundles_the_previous_log(cluster_factory, tmp_path):
    fc = cluster_factory(
        dgd("pending"),
        [
            pod(
                "nemo-agg-worker-0",
                waiting=("CrashLoopBackOff", "back-off 40s restarting"),
                restarts=3,
                last_terminated=("Error", 1),
            )
        ],
        logs={"nemo-agg-worker-0": "loading model\nValueError: unknown flag --enable-foo\n"},
    )
    _, err, secs = wait(fc, tmp_path)
    assert isinstance(err, NotReady) and "CrashLoopBackOff" in str(err)
    assert secs < 2
    assert bundle(tmp_path)["logs"]["nemo-agg-worker-0/main"][-1] == "ValueError: unknown flag --enable-foo"
    assert fc.log_queries[0]["previous"].lower() == "true" and fc.log_queries[0]["tailLines"] == "50"


def test_unschedulable_insufficient_gpus_after_the_grace(cluster_factory, tmp_path):
    why = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available"
    fc = cluster_factory(
        dgd("pending"),
        [pod("nemo-agg-worker-0", unschedulable=why)],
        events=[event("nemo-agg-worker-0", "FailedScheduling", why)],
    )
    _, err, secs = wait(fc, tmp_path, unschedulable_grace_s=1.0)
    assert isinstance(err, NotReady) and "unschedulable" in str(err) and "Insufficient nvidia.com/gpu" in str(err)
    assert 1.0 <= secs < 3, "not before the autoscaler grace, not long after it"


def test_unschedulable_while_the_workers_roll_is_not_a_failure(cluster_factory, tmp_path):
    """A rolling update (status.rollingUpdate.phase Pending/InProgress: DynamoGraphDeployment CRD,
    docs/pages/kubernetes/rolling-update.md) starts new worker pods while the old ones still hold the GPUs:
    Unschedulable then is the rollout's pace. The grace counts only once the rollout is over."""
    why = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    rolling = dgd("pending")
    rolling["status"]["rollingUpdate"] = {"phase": "InProgress", "startTime": "2025-01-01T00:00:00Z"}
    fc = cluster_factory(rolling, [pod("nemo-agg-worker-0", unschedulable=why)])

    def finish():  # the rollout ends (old pods gone) and the new pod is scheduled and serves
        time.sleep(1.5)
        fc.dgd = dgd("successful", ready=True) | {
            "status": dgd("successful", ready=True)["status"] | {"rollingUpdate": {"phase": "Completed"}}
        }
        fc.pods = [pod("nemo-agg-worker-0")]

    threading.Thread(target=finish, daemon=True).start()
    took, err, _ = wait(fc, tmp_path, timeout_s=10, unschedulable_grace_s=0.5)
    assert err is None and took >= 1.5, err


def test_unschedulable_after_the_rollout_completed_still_fails(cluster_factory, tmp_path):
    why = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    done = dgd("pending")
    done["status"]["rollingUpdate"] = {"phase": "Completed"}
    fc = cluster_factory(done, [pod("nemo-agg-worker-0", unschedulable=why)])
    _, err, secs = wait(fc, tmp_path, unschedulable_grace_s=0.5)
    assert isinstance(err, NotReady) and "unschedulable" in str(err) and secs < 3


def test_a_pod_restarting(cluster_factory, tmp_path):
    fc = cluster_factory(dgd("pending"), [pod("nemo-agg-worker-0", restarts=1, last_terminated=("OOMKilled", 137))])
    _, err, secs = wait(fc, tmp_path)
    assert isinstance(err, NotReady) and "restarted 1 times" in str(err) and "OOMKilled" in str(err)
    assert secs < 2


def test_ready_but_model_not_listed_times_out_with_the_reason(cluster_factory, tmp_path):
    fc = cluster_factory(dgd("successful", ready=True), [pod("nemo-agg-worker-0")], models=["other/model"])
    _, err, secs = wait(fc, tmp_path, timeout_s=1.0)
    assert isinstance(err, TimeoutError) and "lists ['other/model']" in str(err)
    assert 1.0 <= secs < 2.5
    assert bundle(tmp_path)["reason"].startswith("not ready after 1 s")
