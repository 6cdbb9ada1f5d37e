"""`infersweep import DIR --recipe R`: AIPerf artifact folders kept one per concurrency (real AIPerf 0.10.0
runs from tests/fixtures/aiperf/0.10.0, and the 0.13.0 reference run) become runs in a results store that
`compare` reads like any other run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infersweep.cli import main as cli_main
from infersweep.results.importer import ArtifactImportError, detect_concurrency, stage_run
from infersweep.results.store import RunStore
from tests.conftest import copy_tree
from tests.support.paths import FIXTURES

V010 = FIXTURES / "aiperf" / "0.10.0"
RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"


def _team_folder(tmp: Path) -> Path:
    """As a team keeps them: one folder per concurrency, named as they liked."""
    root = tmp / "team-runs"
    copy_tree(V010 / "c2", root / "bench_conc2")
    copy_tree(V010 / "c4", root / "bench_conc4")
    return root


def test_import_then_compare_with_another_run(tmp_path, capsys, aiperf_ref):
    store = tmp_path / "store"
    assert (
        cli_main(
            [
                "import",
                str(_team_folder(tmp_path)),
                "--recipe",
                RECIPE,
                "--run-id",
                "team-010",
                "--store",
                str(store),
                "--model-mismatch-ok",  # these AIPerf runs asked the mocker for model "x"
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"imported 2 point(s) of {RECIPE} as run team-010 (AIPerf 0.10.0;" in out

    run = RunStore(store).load("team-010")
    t = run.table.set_index("concurrency")
    assert sorted(t.index) == [2, 4]
    assert set(t["status"]) == {"ok"} and set(t["aiperf_version"]) == {"0.10.0"}
    assert set(t["source"]) == {"imported"} and run.context["source"] == "imported"
    assert t.at[2, "seed"] == 102 and t.at[4, "seed"] == 11  # as AIPerf recorded them in input_config
    assert set(t["cache_state"]) == {"fresh-prompts"}  # a seed each: no point's prompts were sent before
    assert t["valid"].notna().all() and t["validity_reasons"].str.len().gt(0).all()  # judged, reasons given
    assert run.manifest["source"] == "imported"

    other = tmp_path / "new-run"
    copy_tree(aiperf_ref / "dynamo-mocker-c4", other / "c4")
    assert (
        cli_main(
            [
                "import",
                str(other),
                "--recipe",
                RECIPE,
                "--run-id",
                "new-013",
                "--store",
                str(store),
                "--model-mismatch-ok",
            ]
        )
        == 0
    )
    capsys.readouterr()
    # the imported sweep has c2 and c4, the new run c4 only: another workload, compared only when asked
    assert cli_main(["compare", "team-010", "new-013", "--store", str(store), "--include-invalid"]) == 2
    assert "different workload" in capsys.readouterr().err
    assert (
        cli_main(
            [
                "compare",
                "team-010",
                "new-013",
                "--store",
                str(store),
                "--include-invalid",
                "--allow-different",
                "workload",
                "--allow-different",
                "model",  # "x" and "tiny-mock", each accepted with --model-mismatch-ok
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "note: different workload, allowed by --allow-different workload" in text
    assert "vs" in text and "% change per concurrency" in text
    assert "4 " in text.split("% change per concurrency")[1]  # c4 measured in both, compared
    assert "has no valid measured point at concurrency [2]" in text


def test_importing_the_same_run_twice_is_refused(tmp_path, capsys):
    root, store = _team_folder(tmp_path), tmp_path / "store"
    argv = ["import", str(root), "--recipe", RECIPE, "--store", str(store), "--model-mismatch-ok"]
    assert cli_main(argv) == 0
    capsys.readouterr()
    assert cli_main(argv) == 2
    assert "already exists (imported before?)" in capsys.readouterr().err


def test_same_seed_at_every_point_means_a_warm_cache(tmp_path):
    root = tmp_path / "r"
    for c in (2, 4):
        d = copy_tree(V010 / f"c{c}", root / f"c{c}")
        s = json.loads((d / "profile_export_aiperf.json").read_text())
        s["input_config"]["datasets"][0]["random_seed"] = 1  # AIPerf's default when a team gives none... the same
        (d / "profile_export_aiperf.json").write_text(json.dumps(s))
    results = {r["concurrency"]: r for r in stage_run(root, tmp_path / "run")}
    assert results[4]["start_time"] < results[2]["start_time"]  # these were run c4 first
    assert results[4]["cache_state"] == "fresh-prompts"
    assert results[2]["cache_state"] == "warm-from-c4-same-seed"


def test_concurrency_from_the_folder_name_and_a_clear_error_without_one(tmp_path):
    d = copy_tree(V010 / "wrongmodel-c2", tmp_path / "c16")  # no summary: the folder name is all there is
    assert detect_concurrency(d) == (16, "folder name")
    odd = copy_tree(V010 / "wrongmodel-c2", tmp_path / "mystery")
    with pytest.raises(ArtifactImportError, match="cannot tell its concurrency .* rename the folder c<N>"):
        detect_concurrency(odd)


def test_an_unknown_recipe_is_one_clear_error(tmp_path, capsys):
    assert cli_main(["import", str(_team_folder(tmp_path)), "--recipe", "no-such", "--store", str(tmp_path / "s")]) == 2
    assert "--recipe 'no-such': no such recipe" in capsys.readouterr().err
