"""Two runs of one recipe never share a DGD: a nightly and an ad-hoc run side by side.

The DGD is named per run (infersweep.names.dgd_run_name: `<recipe, cut>-<hash of the workflow name>`,
at most 45 characters, the limit older Dynamo operators enforce), every step derives the name from
`{{workflow.name}}`, and deploy refuses to adopt (patch) a DGD owned by another Workflow; teardown
refuses to delete one. Checked through the real `kubernetes` client against tests/support/k8s_standin.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infersweep.cluster_settings import load_cluster_settings
from infersweep.dgd.render import render_dgd
from infersweep.names import DGD_NAME_MAX, dgd_run_name, is_dns_label
from infersweep.recipe import all_recipe_paths, load_recipe
from tests.support.paths import REPO
from workflows.pipeline import recipe_run

RECIPE = "qwen36-35b-a3b-fp8-sglang-disagg-dpep-prefix32k"  # 47 characters: over the budget on its own
DGD = ("nvidia.com", "v1beta1", "bench", "dynamographdeployments")


def test_every_catalog_dgd_name_fits_the_operator_budget_per_run():
    settings = load_cluster_settings()
    for path in all_recipe_paths():
        r = load_recipe(path)
        base = recipe_run(r, settings).arguments["dgd-name"]
        assert render_dgd(r)["metadata"]["name"] == base
        for run in (f"{r.name[:40]}-x7k2p", f"nightly-{r.name}-1764464400"):
            name = dgd_run_name(base, run)
            assert len(name) <= DGD_NAME_MAX and is_dns_label(name), (r.name, name)


def test_names_differ_per_run_and_are_stable_within_one():
    a, b = dgd_run_name(RECIPE, "wf-aaaaa"), dgd_run_name(RECIPE, "wf-bbbbb")
    assert a != b and a == dgd_run_name(RECIPE, "wf-aaaaa")
    with pytest.raises(ValueError):
        dgd_run_name(RECIPE, "")


def _step(module: str, args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", f"steps.{module}", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )


def _deploy(dgd_yaml: str, run: str, uid: str, env: dict, tmp: Path) -> subprocess.CompletedProcess:
    return _step(
        "deploy",
        [
            "--dgd",
            dgd_yaml,
            "--namespace",
            "bench",
            "--run-id",
            run,
            "--owner-name",
            run,
            "--owner-uid",
            uid,
            "--url-param",
            str(tmp / f"url-{run}"),
            "--save",
            str(tmp / f"{run}.yaml"),
        ],
        env,
    )


def test_nightly_and_adhoc_runs_of_one_recipe_side_by_side(tmp_path):
    from tests.support.k8s_standin import K8sStandin

    r = load_recipe(RECIPE)
    dgd = yaml.safe_load(recipe_run(r, load_cluster_settings()).arguments["dgd"])
    # Both runs hold the whole pool: the deploy step would wait for the other's DGD to go (its lane labels,
    # tests/platform/test_lane_wait.py), as the GPU locks keep them apart on a cluster. Here only their names and
    # owners are at stake, so the DGD goes without its lane labels.
    labels = dgd["metadata"].get("labels") or {}
    for k in [k for k in labels if k.startswith("gpu-lane.infersweep.io/")]:
        del labels[k]
    dgd_yaml = yaml.safe_dump(dgd, sort_keys=False)
    base = dgd["metadata"]["name"]
    nightly, adhoc = "nightly-qwen36-35b-a3b-fp8-sglang-disagg-dpe-1764464400", f"{RECIPE[:40]}-q8z2m"
    with K8sStandin() as api:
        env = dict(os.environ, KUBECONFIG=str(api.kubeconfig(tmp_path)), PYTHONPATH=str(REPO))
        env.pop("KUBERNETES_SERVICE_HOST", None)
        for run, uid in ((nightly, "uid-nightly"), (adhoc, "uid-adhoc")):
            p = _deploy(dgd_yaml, run, uid, env, tmp_path)
            assert p.returncode == 0, p.stderr
        names = {k[4]: o for k, o in api.objects.items() if k[:4] == DGD}
        assert set(names) == {dgd_run_name(base, nightly), dgd_run_name(base, adhoc)}
        assert {o["metadata"]["ownerReferences"][0]["uid"] for o in names.values()} == {"uid-nightly", "uid-adhoc"}
        assert all(len(n) <= DGD_NAME_MAX for n in names)
        # each run's URL names its own frontend
        assert (tmp_path / f"url-{nightly}").read_text().startswith(f"http://{dgd_run_name(base, nightly)}-frontend.")
        # the nightly ends: its teardown deletes its DGD only; the ad-hoc run's deployment is untouched
        p = _step(
            "teardown", ["--name", base, "--run-id", nightly, "--owner-uid", "uid-nightly", "--namespace", "bench"], env
        )
        assert p.returncode == 0, p.stderr
        assert {k[4] for k in api.objects if k[:4] == DGD} == {dgd_run_name(base, adhoc)}
        # no request ever patched a DGD
        assert not [req for req in api.requests if req[0] in ("PATCH", "PUT")]


def test_deploy_refuses_to_adopt_a_dgd_owned_by_another_workflow(tmp_path):
    from tests.support.k8s_standin import K8sStandin

    dgd_yaml = recipe_run(load_recipe(RECIPE), load_cluster_settings()).arguments["dgd"]
    base = yaml.safe_load(dgd_yaml)["metadata"]["name"]
    with K8sStandin() as api:
        env = dict(os.environ, KUBECONFIG=str(api.kubeconfig(tmp_path)), PYTHONPATH=str(REPO))
        env.pop("KUBERNETES_SERVICE_HOST", None)
        assert _deploy(dgd_yaml, "wf-one", "uid-one", env, tmp_path).returncode == 0
        before = dict(api.objects[(*DGD, dgd_run_name(base, "wf-one"))])
        # a second Workflow that (by a name clash) computes the same DGD name: refused, nothing patched
        p = _step(
            "deploy",
            [
                "--dgd",
                yaml.safe_dump(yaml.safe_load((tmp_path / "wf-one.yaml").read_text())),
                "--namespace",
                "bench",
                "--owner-name",
                "wf-two",
                "--owner-uid",
                "uid-two",
            ],
            env,
        )
        assert p.returncode == 1 and "belongs to Workflow wf-one" in p.stderr and "refusing to adopt" in p.stderr
        assert not [req for req in api.requests if req[0] in ("PATCH", "PUT")]
        assert api.objects[(*DGD, dgd_run_name(base, "wf-one"))] == before
        # ... and its teardown does not delete it either
        p = _step(
            "teardown", ["--name", dgd_run_name(base, "wf-one"), "--owner-uid", "uid-two", "--namespace", "bench"], env
        )
        assert p.returncode == 1 and "not deleting" in p.stderr
        assert (*DGD, dgd_run_name(base, "wf-one")) in api.objects
        # the same run retrying its deploy step adopts its own DGD (replaced by the rendered spec:
        # infersweep/platform/dgd_update.py)
        assert _deploy(dgd_yaml, "wf-one", "uid-one", env, tmp_path).returncode == 0
        assert [req[0] for req in api.requests].count("PUT") == 1


def test_set_dgd_name_renames_the_deployment_every_step_uses():
    # deploy takes the name from the DGD YAML, wait-ready and teardown from `dgd-name`: one name for both
    args = recipe_run(load_recipe(RECIPE), load_cluster_settings(), overrides={"dgd-name": "my-dgd"}).arguments
    assert yaml.safe_load(args["dgd"])["metadata"]["name"] == args["dgd-name"] == "my-dgd"
