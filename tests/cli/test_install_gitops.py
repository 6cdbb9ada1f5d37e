"""`infersweep install --out DIR` (issue 23 item 4): the install set for a GitOps repository.

One object per file, a kustomization.yaml listing exactly them, no run Workflows, no namespace anywhere (an
overlay, `kubectl apply -n` or the Argo CD destination gives it), each object valid against the strict schemas,
and `kubectl kustomize` (kustomize v5 built into kubectl) assembling it, with an overlay's namespace reaching
every object and the RoleBinding subjects. Every Argo object carries the version labels submit checks.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml

from infersweep.cli import main
from infersweep.cluster_settings import load_cluster_settings
from infersweep.install_version import HASH_LABEL, VERSION_LABEL, package_version, template_hash
from infersweep.schemas import validate_document
from workflows.install_set import install_set

KUBECTL = shutil.which("kubectl")


@pytest.fixture
def out(tmp_path, capsys):
    d = tmp_path / "gitops"
    assert main(["install", "--out", str(d)]) == 0
    assert "no namespace, no run Workflows" in capsys.readouterr().out
    return d


def _docs(d):
    kust = yaml.safe_load((d / "kustomization.yaml").read_text())
    return kust, {f: list(yaml.safe_load_all((d / f).read_text())) for f in kust["resources"]}


def test_one_valid_object_per_file_without_namespace_or_run_workflows(out):
    kust, files = _docs(out)
    assert kust["kind"] == "Kustomization" and "namespace" not in kust
    assert sorted(kust["resources"]) == sorted(p.name for p in out.glob("*.yaml") if p.name != "kustomization.yaml")
    kinds = {}
    for f, docs in files.items():
        assert len(docs) == 1, f
        (doc,) = docs
        validate_document(doc)
        assert f == f"{doc['kind'].lower()}-{doc['metadata']['name']}.yaml"
        assert "namespace" not in doc["metadata"]
        kinds[doc["kind"]] = kinds.get(doc["kind"], 0) + 1
        for s in doc.get("subjects") or []:
            assert "namespace" not in s
    argo, manifests = install_set(load_cluster_settings())
    expected: dict[str, int] = {}
    for d in argo + manifests:
        expected[d["kind"]] = expected.get(d["kind"], 0) + 1
    assert kinds == expected  # every object of the install set, one file each
    # Secret: the executor account's token Secret (workflows/cluster.py executor_token_secret), no data of ours
    assert {"WorkflowTemplate", "CronWorkflow", "ServiceAccount", "Secret", "Role", "RoleBinding", "ConfigMap"} == set(
        kinds
    )
    ns = load_cluster_settings().namespace
    for f, (doc,) in files.items():
        assert f"namespaces/{ns}/" not in json.dumps(doc) and f"{ns}.svc" not in json.dumps(doc), f
        if doc["kind"] in ("WorkflowTemplate", "CronWorkflow"):
            labels = doc["metadata"]["labels"]
            assert labels[VERSION_LABEL] == package_version() and labels[HASH_LABEL] == template_hash(doc)


def test_a_second_write_removes_objects_no_longer_in_the_set(out):
    stale = out / "workflowtemplate-infersweep-gone.yaml"
    stale.write_text(
        yaml.safe_dump(
            {
                "kind": "WorkflowTemplate",
                "metadata": {"name": "infersweep-gone", "labels": {"app.kubernetes.io/managed-by": "infersweep"}},
            }
        )
    )
    mine = out / "my-notes.yaml"
    mine.write_text("a: 1\n")
    assert main(["install", "--out", str(out)]) == 0
    assert not stale.exists() and mine.exists()  # only our own objects are removed


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (the structure test above still runs)")
def test_kubectl_kustomize_assembles_it_and_an_overlay_sets_the_namespace(out, tmp_path):
    base = subprocess.run([KUBECTL, "kustomize", str(out)], capture_output=True, text=True, timeout=120)
    assert base.returncode == 0, base.stderr
    docs = [d for d in yaml.safe_load_all(base.stdout) if d]
    assert len(docs) == sum(len(x) for x in install_set(load_cluster_settings())) and all(
        "namespace" not in d["metadata"] for d in docs
    )
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(f"namespace: team-a\nresources: [../{out.name}]\n")
    res = subprocess.run([KUBECTL, "kustomize", str(overlay)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    docs = [d for d in yaml.safe_load_all(res.stdout) if d]
    assert {d["metadata"]["namespace"] for d in docs} == {"team-a"}
    for rb in (d for d in docs if d["kind"] == "RoleBinding"):
        assert [s["namespace"] for s in rb["subjects"]] == ["team-a"]
    for d in docs:
        validate_document(d)


def test_out_and_dry_run_together_is_one_line(tmp_path, capsys):
    assert main(["install", "--out", str(tmp_path), "--dry-run"]) == 2
    assert "not both" in capsys.readouterr().err


def test_install_warns_while_the_images_are_the_checkouts_placeholders(tmp_path, capsys):
    """Issue 38 item 14: `install` said nothing while params/cluster.yaml still named the placeholder images."""
    assert main(["install", "--out", str(tmp_path / "g")]) == 0
    err = capsys.readouterr().err
    for image in ("steps", "aiperf"):
        assert f"install: warning: images.{image} is ghcr.io/infersweep/{image}:" in err
    assert "infersweep images build --registry R" in err
