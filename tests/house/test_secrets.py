"""No secret leaks: the HF token and S3 credentials reach steps only as environment (Secrets in a cluster,
the local environment here) and appear in no output.

Rendered YAML: every credential-using step takes them with envFrom a Secret; no value, parameter or arg
carries one. End to end: a local run with a planted HF_TOKEN and planted AWS credentials in its
environment (the S3 server is started with those same credentials, so they are really used), then every
file under the run folder (logs, node outputs, results, rendered YAML, process records) and every object in
both buckets is searched for the planted values.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from infersweep.cluster_settings import load_cluster_settings
from infersweep.local.run import ARTIFACT_BUCKET, run_local
from infersweep.local.standins.s3server import LocalS3
from tests.support.run_failure import why_failed

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"
HF_TOKEN = "hf_PLANTEDhfTokenDoNotLeak0123456789"
AWS_KEY_ID = "AKIAPLANTEDKEYID0001"
AWS_SECRET = "PLANTEDaws/Secret+Key0123456789abcdefXYZ"
SECRET_VARS = {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}


def _rendered():
    from infersweep.recipe import load_recipe
    from workflows.render import render_recipe

    return render_recipe(load_recipe(RECIPE), load_cluster_settings())


def _credential_like(name: str) -> bool:
    return bool(re.search(r"(^|[-_])(token|secret|password|access-key|key-id)($|[-_])", name.lower()))


def test_credentials_reach_steps_only_through_secret_env_from():
    b = _rendered()
    settings = load_cluster_settings()
    secret_names = {settings.hf_token_secret, settings.s3.credentials_secret}
    users = {}
    for t in b.templates:
        for tmpl in t["spec"].get("templates", []):
            c = tmpl.get("container")
            if not c:
                continue
            for e in c.get("env", []):
                assert e["name"] not in SECRET_VARS or "valueFrom" in e, f"{tmpl['name']}: {e['name']} given as a value"
            for src in c.get("envFrom", []):
                users[tmpl["name"]] = src["secretRef"]["name"]
            params = [p["name"] for p in tmpl.get("inputs", {}).get("parameters", [])]
            assert not [p for p in params if _credential_like(p)], params
    # Steps that need credentials get them from the Secrets; only the model download sees the HF token.
    assert users["model-cache"] == settings.hf_token_secret
    assert users["publish"] == settings.s3.credentials_secret
    assert set(users.values()) <= secret_names
    assert [n for n, sec in users.items() if sec == settings.hf_token_secret] == ["model-cache"]
    assert not {"aiperf-point", "deploy", "wait-ready", "teardown", "summarize", "scrape"} & users.keys()
    wf_params = [p["name"] for p in b.workflow["spec"]["arguments"]["parameters"]]
    assert not [p for p in wf_params if _credential_like(p)], wf_params
    # The DGD's workers never get the HF token (they run HF_HUB_OFFLINE=1 from the cache): no Secret, no literal.
    text = yaml.safe_dump(b.dgd)
    assert settings.hf_token_secret not in text and "secretRef" not in text and "envFromSecret" not in text
    assert "hf_" not in text.replace("hf_token", "")


class PlantedS3(LocalS3):
    """The local S3 server, reached with the planted credentials (moto accepts any)."""

    def env(self) -> dict[str, str]:
        return super().env() | {"AWS_ACCESS_KEY_ID": AWS_KEY_ID, "AWS_SECRET_ACCESS_KEY": AWS_SECRET}


def _hits(data: bytes) -> list[str]:
    return [
        name
        for name, v in (
            ("HF_TOKEN", HF_TOKEN),
            ("AWS_ACCESS_KEY_ID", AWS_KEY_ID),
            ("AWS_SECRET_ACCESS_KEY", AWS_SECRET),
        )
        if v.encode() in data
    ]


@pytest.mark.e2e
def test_planted_secrets_appear_in_no_output_of_a_local_run(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", HF_TOKEN)
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", HF_TOKEN)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    bucket = load_cluster_settings().s3.bucket
    with PlantedS3(buckets=[bucket, ARTIFACT_BUCKET]) as s3:
        res = run_local(
            RECIPE,
            out_root=tmp_path / "runs",
            cache_root=tmp_path / "cache",
            s3=s3,
            overrides={"points": json.dumps([{"concurrency": 1, "requests": 8, "warmup": 0}])},
        )
        assert res.phase == "Succeeded", why_failed(res)
        assert res.s3_keys, "nothing was published: the planted credentials were not exercised"
        leaks = []
        files = [p for p in res.run_dir.rglob("*") if p.is_file() and not p.is_symlink()]
        assert len(files) > 20
        for f in files:
            hits = _hits(f.read_bytes())
            if hits:
                leaks.append((str(f.relative_to(res.run_dir)), hits))
        client = s3.client()
        n_objects = 0
        for b in (bucket, ARTIFACT_BUCKET):
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=b):
                for o in page.get("Contents", []):
                    n_objects += 1
                    obj = client.get_object(Bucket=b, Key=o["Key"])
                    hits = _hits(obj["Body"].read() + json.dumps(obj.get("Metadata", {})).encode())
                    if hits:
                        leaks.append((f"s3://{b}/{o['Key']}", hits))
        assert n_objects >= 10
    assert leaks == [], f"planted secrets found in outputs: {leaks}"
