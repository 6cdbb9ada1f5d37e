"""The cluster settings a real cluster needs beyond the defaults (issue 23 item 2): an S3-compatible endpoint
(MinIO), the Secrets' names reaching the step templates, where Dynamo's PodMonitors are."""

from __future__ import annotations

import pytest

from infersweep.cluster_settings import ClusterSettingsError, load_cluster_settings
from workflows.install_set import step_templates


def _container(templates, name):
    (t,) = [t for t in templates if t["metadata"]["name"] == f"infersweep-{name}"]
    return t["spec"]["templates"][0]["container"]


def test_a_minio_endpoint_reaches_the_s3_steps_only():
    s = load_cluster_settings()
    minio = s.changed(
        s3={
            **s.s3.model_dump(),
            "endpoint": "minio.minio.svc.cluster.local:9000",
            "insecure": True,
            "region": "eu-west-1",
        }
    )
    assert minio.s3.endpoint_url == "http://minio.minio.svc.cluster.local:9000"
    wts = step_templates(minio, [], "v1beta1")
    for step in ("publish", "regression-check"):
        env = {e["name"]: e["value"] for e in _container(wts, step)["env"]}
        assert env["AWS_ENDPOINT_URL"] == "http://minio.minio.svc.cluster.local:9000"
        assert env["AWS_DEFAULT_REGION"] == "eu-west-1"
    assert "AWS_ENDPOINT_URL" not in {e["name"] for e in _container(wts, "deploy")["env"]}
    # AWS (the default): nothing added, the rendered templates are as before
    assert "AWS_ENDPOINT_URL" not in {e["name"] for e in _container(step_templates(s, [], "v1beta1"), "publish")["env"]}


def test_the_secret_names_of_the_settings_reach_the_step_templates():
    """Before: the step templates named hf-token-secret / infersweep-s3 whatever params/cluster.yaml said."""
    s = load_cluster_settings()
    other = s.changed(hf_token_secret="team-hf", s3={**s.s3.model_dump(), "credentials_secret": "team-s3"})
    wts = step_templates(other, [], "v1beta1")
    assert _container(wts, "model-cache")["envFrom"] == [{"secretRef": {"name": "team-hf", "optional": True}}]
    assert _container(wts, "publish")["envFrom"] == [{"secretRef": {"name": "team-s3", "optional": True}}]


@pytest.mark.parametrize(
    "section, value, expected",
    [
        ("s3", {"endpoint": "http://minio:9000"}, "s3.endpoint: give the S3 endpoint as host[:port] without a scheme"),
        ("s3", {"insecure": "yes"}, "s3.insecure: must be true or false"),
        ("pod_monitors", {"namespace": "Dynamo"}, "pod_monitors.namespace: must be a Kubernetes name"),
        ("pod_monitors", {"names": []}, "pod_monitors.names: must not be empty"),
    ],
)
def test_a_bad_new_field_is_one_line_naming_it(section, value, expected):
    s = load_cluster_settings()
    base = s.s3.model_dump() if section == "s3" else s.pod_monitors.model_dump()
    with pytest.raises(ClusterSettingsError) as e:
        s.changed(**{section: {**base, **value}})
    assert expected in str(e.value) and str(e.value).count("\n") == 0


def test_the_shipped_file_names_every_field_a_cluster_needs():
    s = load_cluster_settings()
    assert (s.s3.endpoint, s.s3.insecure, s.prometheus_url) == ("", False, "")
    assert s.pod_monitors.namespace == "dynamo-system" and s.pod_monitors.names == ["dynamo-frontend", "dynamo-worker"]
    assert s.model_cache.storage_class == "" and s.gpu_guard.scheduler == "argo"
