"""One grammar per Kubernetes field type (infersweep/k8s_types.py, after k8s.io/apimachinery quantity.go and
validation.go): the recipe's placement and the cluster settings accept the same quantities, and no name or
quantity passes with a trailing newline (a `$`-anchored pattern with re.match let "64Gi\\n" through)."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from infersweep import k8s_types
from infersweep.cluster_settings import ModelCache
from infersweep.names import is_dns_label, is_label_value
from infersweep.recipe.facts import Placement
from tests.support.paths import REPO

GOOD = ["64Gi", "500Mi", "1.5Ti", ".5Gi", "1e9", "128G", "2E3", "1.", "0.5"]
BAD = ["64Gi\n", "64 Gi", "64GB", "-1Gi", "0", "0Gi", "Gi", "1e", "64gi", ""]


def recipe_accepts(q: str) -> bool:
    try:
        Placement(memory=q)
        return True
    except ValidationError:
        return False


def settings_accept(q: str) -> bool:
    try:
        ModelCache(pvc="models", size=q)
        return True
    except (ValidationError, ValueError):
        return False


@pytest.mark.parametrize("q", GOOD + BAD)
def test_recipe_and_cluster_settings_agree_on_quantities(q):
    assert recipe_accepts(q) == settings_accept(q) == (q in GOOD), q


def test_the_quantity_grammar_is_the_crd_pattern():
    """controller-gen writes resource.Quantity's pattern into every CRD: the Dynamo CRD's equals ours."""
    crds = list((REPO / "infersweep" / "reference").rglob("*dynamographdeployments*"))
    text = "\n".join(p.read_text() for p in crds) if crds else ""
    if not text:
        pytest.skip("no Dynamo CRD shipped under infersweep/reference")
    patterns = set(re.findall(r"pattern: (\^\(\\\+\|-\)\?\S+)", text))
    assert patterns, "the CRD carries no quantity pattern"
    for pat in patterns:
        for q in GOOD + BAD + ["+1Gi", "-1Gi", "1e-3", "5m", "3u"]:
            assert (re.search(pat, q) is not None and "\n" not in q) == k8s_types.is_quantity(q), (pat, q)


@pytest.mark.parametrize("check", [is_dns_label, is_label_value, k8s_types.is_dns_label, k8s_types.is_dns_subdomain])
def test_no_name_passes_with_a_trailing_newline(check):
    assert check("frontend") and not check("frontend\n")
