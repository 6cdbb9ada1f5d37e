"""The run context records the images the deployment's pods actually ran (digests), not only the tags
that were rendered: wait-ready reads each container's `imageID` from pod status (what the kubelet pulled)
and summarize puts them in the context (`images_ran`), so a moved tag cannot hide a changed engine."""

from __future__ import annotations

import json
from pathlib import Path

from infersweep.results.context import IMAGES_RAN_FILE, build_context

DIGEST = "sha256:" + "ab" * 32


def _pod(name: str, image: str, image_id: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "bench", "labels": {"nvidia.com/dynamo-graph-deployment-name": "d"}},
        "spec": {"containers": [{"name": "main", "image": image}]},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "main",
                    "image": image,
                    "imageID": image_id,
                    "ready": True,
                    "restartCount": 0,
                    "state": {"running": {}},
                }
            ],
        },
    }


def test_pod_image_ids_through_the_kubernetes_client(tmp_path):
    from kubernetes import client, config

    from infersweep.platform.readiness import pod_image_ids
    from tests.support.k8s_standin import K8sStandin

    with K8sStandin() as api:
        api.objects[("", "v1", "bench", "pods", "w0")] = _pod(
            "w0",
            "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1",
            f"docker-pullable://nvcr.io/nvidia/ai-dynamo/vllm-runtime@{DIGEST}",
        )
        api.objects[("", "v1", "bench", "pods", "f0")] = _pod("f0", "frontend:1", f"frontend@{DIGEST}")
        config.load_kube_config(str(api.kubeconfig(tmp_path)))
        ids = pod_image_ids(client.CoreV1Api(), "d", "bench")
    assert ids == {
        "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1": f"nvcr.io/nvidia/ai-dynamo/vllm-runtime@{DIGEST}",
        "frontend:1": f"frontend@{DIGEST}",
    }


def test_summarize_context_carries_the_images_that_ran(tmp_path):
    f = tmp_path / IMAGES_RAN_FILE
    f.parent.mkdir(parents=True)
    f.write_text(json.dumps({"vllm-runtime:1.6.1": f"vllm-runtime@{DIGEST}"}))
    ctx = build_context(tmp_path, given={"recipe": "x", "recipe_hash": "h"}, title="x", gpu_count=1, slo={}, points=[])
    assert ctx["images_ran"] == {"vllm-runtime:1.6.1": f"vllm-runtime@{DIGEST}"}
    assert (
        build_context(Path(tmp_path / "none"), given={"recipe_hash": "h"}, title="x", gpu_count=1, slo={}, points=[])[
            "images_ran"
        ]
        is None
    )
