"""Golden YAML: the exact documents the code renders, committed beside it (as Hera does for its examples).

`python -m tests.support.golden` rewrites them; tests/workflows/test_golden.py fails when rendering drifts from them,
so every change to what reaches a cluster shows up in review as a YAML diff. The writer is a tool over
render and lives beside the tests, and so do the files (tests/golden/, marked generated in .gitattributes): they
are test data, not part of the package setuptools ships.
"""

from __future__ import annotations

import sys

import yaml

from infersweep.cluster_settings import load_cluster_settings
from infersweep.recipe import ResolvedRecipe, all_recipe_paths, load_recipe
from tests.support.paths import TESTS
from workflows.render import library_templates, render_recipe

GOLDEN_DIR = TESTS / "golden"


def _dump(doc: dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False, width=120)


def dgd_shape(r: ResolvedRecipe) -> tuple:
    """What changes the structure of a rendered DGD (not just its values)."""
    roles = r.recipe.topology.roles().values()
    return (
        r.recipe.engine,
        r.recipe.topology.mode,
        any(w.nodes > 1 for w in roles),
        any(w.autoscaling for w in roles),
        bool(r.transport and r.transport.resources),
        bool(r.transport and r.transport.networks),
    )


def golden_documents() -> dict[str, str]:
    """Relative file name -> YAML text: every recipe's v1beta1 DGD and Workflow, the v1alpha1 DGD of the
    first recipe of each DGD shape (the v1alpha1 mapping is per shape, so one each keeps the set reviewable),
    and the templates of every pipeline shape."""
    settings = load_cluster_settings()
    out: dict[str, str] = {}
    shapes, dgd_shapes = set(), set()
    for path in all_recipe_paths():
        r = load_recipe(path)
        shapes.add((r.recipe.engine, r.recipe.topology.mode))
        b = render_recipe(r, settings)
        out[f"recipes/{r.name}/dgd-v1beta1.yaml"] = _dump(b.dgd)
        out[f"recipes/{r.name}/workflow.yaml"] = _dump(b.workflow)
        if b.scaled_objects:
            out[f"recipes/{r.name}/scaledobjects.yaml"] = "---\n".join(_dump(so) for so in b.scaled_objects)
        if dgd_shape(r) not in dgd_shapes:
            dgd_shapes.add(dgd_shape(r))
            out[f"recipes/{r.name}/dgd-v1alpha1.yaml"] = _dump(render_recipe(r, settings, dgd_api="v1alpha1").dgd)
    for engine, mode in sorted(shapes):
        for t in library_templates(settings, engine, mode):
            out[f"templates/{t['metadata']['name']}.yaml"] = _dump(t)
    return out


def main(argv: list[str] | None = None) -> int:
    docs = golden_documents()
    for rel, text in docs.items():
        f = GOLDEN_DIR / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    stale = [p for p in GOLDEN_DIR.rglob("*.yaml") if str(p.relative_to(GOLDEN_DIR)) not in docs]
    for p in stale:
        p.unlink()
    print(f"wrote {len(docs)} golden files to {GOLDEN_DIR} (removed {len(stale)} stale)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
