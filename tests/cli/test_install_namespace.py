"""An install into another namespace than params/cluster.yaml's (`--namespace`, ARGO_NAMESPACE) renders for that
namespace (issue 38 item 15): the UI launchers bake the install's settings into their render step
(workflows/launcher.py settings_text), and a launcher that says `namespace: infersweep` renders every UI
launch's Prometheus queries and RBAC-facing names for a namespace the run is not in."""

from __future__ import annotations

import re

import yaml

from infersweep.cli import main
from infersweep.cluster_settings import load_cluster_settings
from tests.cli.test_dgd_api_install import _launch
from tests.support.argo_server_standin import NS, argo  # noqa: F401 (the fixture)
from workflows.launcher import EXPERIMENT_LAUNCHER, RECIPE_LAUNCHER

DEFAULT_NS = load_cluster_settings().namespace
BAKED = re.compile(rf"(namespace: {DEFAULT_NS}\b|namespace=\\?\"{DEFAULT_NS}\\?\")")


def _baked_settings(wt: dict) -> dict:
    args = next(t for t in wt["spec"]["templates"] if t["name"] == "render")["container"]["args"]
    return yaml.safe_load(args[args.index("--settings") + 1])


def test_the_launchers_of_an_install_into_another_namespace_name_that_namespace(argo, tmp_path):  # noqa: F811
    assert NS != DEFAULT_NS
    assert main(["install"]) == 0  # ARGO_NAMESPACE=bench, as `argo` takes it
    for name in (RECIPE_LAUNCHER, EXPERIMENT_LAUNCHER):
        wt = argo.store[("workflow-templates", NS, name)]
        assert _baked_settings(wt)["namespace"] == NS, name
        assert not BAKED.search(yaml.safe_dump(wt, width=100_000)), name
    # a UI launch from there renders its run for that namespace (the scrape's queries included)
    run = _launch(argo.store[("workflow-templates", NS, RECIPE_LAUNCHER)], {"recipe": "demo-prefix-rr"}, tmp_path)
    text = yaml.safe_dump(run, width=100_000)
    assert not BAKED.search(text), BAKED.search(text)


def test_a_dry_run_with_namespace_renders_every_object_for_it(capsys, monkeypatch, tmp_path):
    for var in ("ARGO_SERVER", "ARGO_TOKEN", "ARGO_NAMESPACE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("INFERSWEEP_CONFIG", str(tmp_path / "none.yaml"))
    assert main(["install", "--dry-run", "--namespace", "team-a"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    launchers = [d for d in docs if d["metadata"]["name"] in (RECIPE_LAUNCHER, EXPERIMENT_LAUNCHER)]
    assert len(launchers) == 2 and all(_baked_settings(d)["namespace"] == "team-a" for d in launchers)
    namespaces = {d["metadata"].get("namespace") for d in docs if d["metadata"].get("namespace")}
    namespaces |= {s.get("namespace") for d in docs for s in d.get("subjects") or [] if s.get("namespace")}
    assert namespaces == {"team-a"}
