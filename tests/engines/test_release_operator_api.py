"""Which DGD apiVersions each release's operator serves (issue 34 item 10), from the release's own parts:
the operator's CRD where it is kept here (infersweep/reference/dynamo/crds, Dynamo 1.6.1), and the apiVersion
the release's own planner talks to its operator in (dynamo/planner/connectors/.../kubernetes_api.py
DYNAMO_API_VERSION in the installed ai-dynamo wheel of that release). The premise that an operator before
1.6 serves only v1alpha1 was wrong: ai-dynamo 1.3.1's planner patches v1beta1 DGDs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from infersweep.recipe.release import releases
from tests.support.paths import REPO

CRD = REPO / "infersweep" / "reference" / "dynamo" / "crds" / "nvidia.com_dynamographdeployments.yaml"
# release -> where its ai-dynamo wheel is installed here (tests/engine_parsers/release_flags.py OVERLAYS)
WHEELS = {"dynamo-1.3.1": REPO / ".venv-engines-1.3", "dynamo-1.6.1": REPO / ".venv-dynamo"}


def _planner_api(root: Path, version: str) -> str | None:
    if not any(root.glob(f"**/ai_dynamo-{version}.dist-info")):
        return None
    for f in root.glob("**/dynamo/planner/connectors/**/kubernetes_api.py"):
        m = re.search(r'^DYNAMO_API_VERSION = "(v1\w+)"', f.read_text(), re.M)
        if m:
            return m.group(1)
    return None


def test_the_1_6_1_release_serves_what_its_crd_serves():
    crd = next(d for d in yaml.safe_load_all(CRD.read_text()) if d)
    served = sorted(v["name"] for v in crd["spec"]["versions"] if v.get("served"))
    assert sorted(releases()["dynamo-1.6.1"].operator_serves) == served == ["v1alpha1", "v1beta1"]


@pytest.mark.parametrize("name", sorted(WHEELS))
def test_each_release_serves_the_api_its_own_planner_uses(name):
    rel = releases()[name]
    api = _planner_api(WHEELS[name], rel.dynamo)
    if api is None:
        pytest.skip(f"ai-dynamo {rel.dynamo} is not installed under {WHEELS[name]} (scripts/setup.sh --engines)")
    assert api in rel.operator_serves, f"{name}: its planner uses {api}, the release says {rel.operator_serves}"
    assert rel.dgd_api in rel.operator_serves
