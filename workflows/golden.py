"""Golden YAML: the exact documents the code renders, committed beside it (as Hera does for its examples).

`python -m workflows.golden` rewrites them; tests/test_golden.py fails when rendering drifts from them,
so every change to what reaches a cluster shows up in review as a YAML diff.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from infersweep.platform_config import load_platform
from infersweep.recipe import all_recipe_paths, load_recipe
from infersweep.render import library_templates, render_recipe

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


def _dump(doc: dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False, width=120)


def golden_documents() -> dict[str, str]:
    """Relative file name -> YAML text, for every pipeline shape and every recipe."""
    platform = load_platform()
    out: dict[str, str] = {}
    shapes = set()
    for path in all_recipe_paths():
        r = load_recipe(path)
        shapes.add((r.recipe.engine, r.recipe.topology.mode))
        for api in ("v1beta1", "v1alpha1"):
            b = render_recipe(r, platform, dgd_api=api)
            out[f"recipes/{r.name}/dgd-{api}.yaml"] = _dump(b.dgd)
        out[f"recipes/{r.name}/workflow.yaml"] = _dump(render_recipe(r, platform).workflow)
    for engine, mode in sorted(shapes):
        for t in library_templates(platform, engine, mode):
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
