"""The recipe catalog as the README's Markdown table, generated from the recipes so it cannot drift.

`infersweep recipes --markdown` prints it; `--write-readme` puts it between the markers in README.md;
tests/test_provenance.py fails when the committed README differs from what the recipes say.
"""

from __future__ import annotations

from pathlib import Path

from infersweep.recipe import ResolvedRecipe, all_recipe_paths, load_recipe

BEGIN = "<!-- catalog:begin (generated: infersweep recipes --markdown --write-readme) -->"
END = "<!-- catalog:end -->"
HEADER = ("recipe", "engine", "GPUs", "follows", "checked by engine parser", "differs from upstream because ...")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def gpus_text(r: ResolvedRecipe) -> str:
    """GPUs of a recipe: a count, or min-max when it autoscales."""
    return str(r.gpu_count) if r.gpu_count == r.gpu_capacity else f"{r.gpu_count}-{r.gpu_capacity}"


def row(r: ResolvedRecipe) -> tuple[str, ...]:
    p = r.recipe.provenance
    follows = p.follows if p else "(no provenance)"
    diffs = "; ".join(f"{k}: {v}" for k, v in p.differences.items()) if p and p.differences else "-"
    return (f"`{r.name}`", r.recipe.engine, f"{gpus_text(r)} {r.recipe.gpu.type}", follows,
            r.engine.parser_tier, diffs)  # whether the engine-parser tier checks it (infersweep/engines/<name>.py)


def markdown_table() -> str:
    rows = [row(load_recipe(p)) for p in all_recipe_paths()]
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def readme_with_table(readme: str, table: str) -> str:
    if BEGIN not in readme or END not in readme:
        raise ValueError(f"README has no catalog markers; add a line {BEGIN!r} and a line {END!r}")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table}{END}{tail}"


def write_readme(path: Path) -> bool:
    """Rewrite the README's catalog table; True when it changed."""
    old = path.read_text()
    new = readme_with_table(old, markdown_table())
    if new != old:
        path.write_text(new)
    return new != old
