"""Every data file under params/ is read through the guarded loader (infersweep/params_files.py
read_yaml_mapping: no YAML aliases, a size cap, one line naming the file), never a bare yaml.safe_load."""

from __future__ import annotations

import ast

import pytest

from infersweep.params_files import RecipeError
from tests.support.paths import REPO

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b]\n"


def test_no_module_reads_params_with_a_bare_yaml_load():
    """A call `yaml.safe_load(...)`/`yaml.load(...)` whose argument names params (params_dir(), PROFILES, a
    params/ path) bypasses the guard; the guarded loader is the one place that parses them."""
    found = []
    for f in (REPO / "infersweep").rglob("*.py"):
        if f.name == "params_files.py":
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "yaml"
                and node.func.attr in ("safe_load", "load", "safe_load_all")
            ):
                arg = ast.unparse(node.args[0]) if node.args else ""
                if "params" in arg or "PROFILES" in arg:
                    found.append(f"{f.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


@pytest.mark.parametrize("reader", ["load_local_profile", "local_grid", "gpu_price"])
def test_a_params_file_with_aliases_is_refused_naming_the_file(reader, tmp_path, monkeypatch):
    """Before, params/local.yaml and params/gpus.yaml went through a bare yaml.safe_load: an alias bomb was
    expanded; now the file is refused in one line that names it."""
    (tmp_path / "local.yaml").write_text(BOMB)
    (tmp_path / "gpus.yaml").write_text(BOMB)
    monkeypatch.setenv("INFERSWEEP_PARAMS", str(tmp_path))
    if reader == "load_local_profile":
        from infersweep.local.profile import load_local_profile as call
    elif reader == "local_grid":
        from infersweep.predict.local_timing import local_grid

        def call():
            return local_grid(1)
    else:
        from infersweep.results.server_metrics import gpu_price

        def call():
            return gpu_price("H100")

    with pytest.raises(RecipeError, match=r"\.yaml: not valid YAML: aliases \(\*a\) are not allowed"):
        call()
