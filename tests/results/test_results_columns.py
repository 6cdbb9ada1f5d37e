"""The results model (issue 21 item 4): one canonical name per metric, a column dictionary generated from the
code (docs/columns.md), a schema version that changes with the columns, a reader for the previous versions,
and one key spelling for SLOs and tolerances."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from infersweep.metrics import ALIASES, METRICS, SLO_KEYS, canonical, normalize_tolerances
from infersweep.results import columns
from infersweep.results.columns import OPTIONAL, SCHEMA_VERSION, SUMMARY_COLUMNS, columns_fingerprint
from tests.support.paths import REPO

MEASURED = REPO / "benchmarks" / "measured" / "h200-2026-12-01"

# Every schema version and the fingerprint of its columns (columns.columns_fingerprint). Changing a column
# changes the fingerprint: give the table a new SCHEMA_VERSION, add it here, and teach
# infersweep.results.legacy to read the version before it.
PINNED = {
    "infersweep.results/v3": "26c775ef6111f669d4fbc0c09ab02093aaa5a84046af011b5fd3729aa9291545",
    "infersweep.results/v4": "0081651a2d8a6aecce34eb39777d07aad8c52c7bc8f56e38dc5b425ed25b25ee",  # + server_ttft_avg_ms, server_itl_avg_ms, server_output_tokens, server_figures_source
    "infersweep.results/v5": "43acd1a6cb464acf0aacc8544f8e042f0a5563246a2cddf36c340c9c20677af1",  # + stop_reason, requests_extended
    "infersweep.results/v6": "df6cacaea51d39e9fd9401d8bd74b84526bdca3c80a0ae3b1153799973498b69",  # + warmup_requests, warmup_mode
    "infersweep.results/v7": "1dd9d299fb770c59e361c854122bf5017f82c3087a2bd59f5e10d2cd1ad14cd2",  # + steady_throughput_trend_p, steady_ttft_trend_p
}


def test_the_column_dictionary_in_the_docs_is_generated_and_fresh():
    doc = REPO / "docs" / "columns.md"
    assert doc.read_text(encoding="utf-8") == columns.markdown(), (
        "docs/columns.md is stale: run `python -m infersweep.results.columns --write`"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "infersweep.results.columns", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def test_stale_docs_are_caught(tmp_path, monkeypatch):
    stale = tmp_path / "columns.md"
    stale.write_text(columns.markdown().replace("ttft_p50_ms", "ttft_ms_p50", 1))
    monkeypatch.setattr(columns, "DOC", stale)
    assert columns.main(["--check"]) == 1


def test_columns_cannot_change_without_a_schema_version_bump():
    assert SCHEMA_VERSION in PINNED, f"new schema version {SCHEMA_VERSION}: pin its fingerprint in PINNED"
    assert PINNED[SCHEMA_VERSION] == columns_fingerprint() == columns.COLUMNS_FINGERPRINT, (
        "the results table's columns changed without a new SCHEMA_VERSION (infersweep/results/columns.py): "
        f"bump it, set COLUMNS_FINGERPRINT = {columns_fingerprint()!r}, and pin it here"
    )
    assert len(set(PINNED.values())) == len(PINNED)  # a version's columns are never another version's


def test_a_renamed_column_changes_the_fingerprint(monkeypatch):
    before = columns_fingerprint()
    renamed = [
        columns.Column("ttft_p50_msec", c.dtype, c.unit, c.group, c.description) if c.name == "ttft_p50_ms" else c
        for c in columns.SUMMARY
    ]
    monkeypatch.setattr(columns, "SUMMARY", renamed)
    assert columns_fingerprint() != before


def test_one_name_per_metric_each_ending_in_its_unit():
    assert len(SUMMARY_COLUMNS) == len(set(SUMMARY_COLUMNS)) and len(SUMMARY_COLUMNS) < 120
    for name, m in METRICS.items():
        assert name.endswith("_" + m.unit), name
        assert name in SUMMARY_COLUMNS
    # the three names of TTFT p50 and both tok/s/user columns of the v2 table resolve to one name each
    assert {canonical(n) for n in ("ttft_ms_p50", "ttft_p50_ms", "time_to_first_token__p50")} == {"ttft_p50_ms"}
    assert canonical("tok_s_per_user") == canonical("tok_s_per_user_p50") == "output_throughput_p50_tok_s_per_user"
    assert canonical("tok_s_per_user_avg") == "output_throughput_avg_tok_s_per_user"
    assert not set(ALIASES) & set(SUMMARY_COLUMNS)  # an old spelling is never a column of the new table


def test_an_unknown_metric_names_the_nearest_ones():
    with pytest.raises(ValueError, match=r"ttft_p50ms: unknown metric; did you mean 'ttft_p50_ms'"):
        canonical("ttft_p50ms")
    with pytest.raises(ValueError, match="in the raw table"):
        canonical("ttft_p95_ms")


def test_the_table_has_exactly_the_dictionarys_columns_in_order_and_type(tmp_path, aiperf_ref):
    from tests.support.run_folders import make_run_folder, summarize

    df = summarize(make_run_folder(tmp_path, aiperf_ref))
    assert list(df.columns) == [c for c in SUMMARY_COLUMNS if c not in OPTIONAL or c in df.columns]
    for name in df.columns:
        want = columns.BY_NAME[name].dtype
        got = str(df[name].dtype)
        if want == "string":
            assert got in ("str", "string", "object"), (name, got)
        elif want.startswith("timestamp"):
            assert got.endswith(", UTC]"), (name, got)
        else:
            assert got == want, (name, got, want)


@pytest.mark.parametrize(
    "run",
    [
        "qwen3-32b-bf16-sweep",
        "gpu-kv-vs-rr/treatments/kv",
        "gpu-kv-vs-rr/treatments/rr",
        "gpu-kv-vs-rr/treatments/kv-2",
        "gpu-kv-vs-rr/treatments/rr-2",
    ],
)
def test_the_measured_gpu_runs_v2_tables_read_under_the_new_names(run):
    from infersweep.results.run import load_run_folder

    folder = MEASURED / run
    old = pd.read_parquet(folder / "summary" / "results.parquet")
    assert set(old["schema_version"]) == {"infersweep.results/v2"} and len(old.columns) > 700
    r = load_run_folder(folder)
    t = r.table
    assert t.attrs["upgraded_from"] == "infersweep.results/v2" and set(t["schema_version"]) == {SCHEMA_VERSION}
    assert list(t.columns) == [c for c in SUMMARY_COLUMNS if c in t.columns]
    assert not [c for c in t.columns if "__" in c or c in ALIASES]
    # the same numbers under their one name
    pd.testing.assert_series_equal(t["ttft_p50_ms"], old["ttft_ms_p50"], check_names=False)
    pd.testing.assert_series_equal(
        t["output_throughput_p50_tok_s_per_user"], old["tok_s_per_user_p50"], check_names=False
    )
    pd.testing.assert_series_equal(t["output_throughput_tok_s_per_gpu"], old["tok_s_per_gpu"], check_names=False)
    assert (t["error_ratio"] == old["error_rate"]).all()
    assert str(t["point_start"].dt.tz) == "UTC" and t["point_start"].iloc[0] == pd.Timestamp(
        old["point_start"].iloc[0], tz="UTC"
    )
    assert set(eval_slo(t)) <= set(SLO_KEYS)  # the run's SLO under the new keys (it said tok_s_user_min)
    # every AIPerf statistic of the wide table is in the raw table
    stats = [c for c in old.columns if "__" in c]
    assert len(r.raw) == int(old[stats].notna().sum().sum())
    p50 = r.raw[(r.raw["metric"] == "time_to_first_token") & (r.raw["stat"] == "p50")]
    assert list(p50["value"]) == list(old["time_to_first_token__p50"])
    assert set(p50["column"]) == {"ttft_p50_ms"}


def eval_slo(t: pd.DataFrame) -> dict:
    import json

    return json.loads(t["slo"].iloc[0])


def test_an_unreadable_version_is_one_clear_error():
    from infersweep.results.legacy import upgrade_table

    df = pd.DataFrame(
        {
            "run_id": ["r"],
            "recipe": ["x"],
            "concurrency": [1],
            "repetition": [0],
            "status": ["ok"],
            "schema_version": ["infersweep.results/v9"],
        }
    )
    with pytest.raises(ValueError, match=r"schema_version \['infersweep.results/v9'\], this reader knows"):
        upgrade_table(df, "t.parquet")


def test_recipe_slo_keys_are_metric_names_and_the_old_spelling_is_deprecated():
    from infersweep.recipe.models import Slo

    assert Slo(output_throughput_p50_tok_s_per_user=20).output_throughput_p50_tok_s_per_user == 20
    with pytest.warns(
        FutureWarning, match="'tok_s_user_min' is the old spelling of 'output_throughput_p50_tok_s_per_user'"
    ):
        old = Slo.model_validate({"tok_s_user_min": 20, "ttft_p50_ms": 100})
    assert old.output_throughput_p50_tok_s_per_user == 20
    with pytest.raises(ValueError, match="did you mean 'ttft_p50_ms'"):
        Slo.model_validate({"ttft_p50ms": 100})
    with pytest.raises(ValueError, match="not an SLO metric"):
        Slo.model_validate({"isl_avg_tok": 100})


def test_the_key_rename_leaves_recipe_hashes_alone():
    """A recipe written with the old SLO and baseline keys hashes as with the new ones, so runs measured
    before the rename (benchmarks/measured/) still carry their recipe's hash."""
    from infersweep.recipe import find_recipe
    from infersweep.recipe.loading import parse_recipe, recipe_data
    from infersweep.recipe_context import recipe_hash

    path = find_recipe("lightning-vllm-agg-h200-mtp")  # slo from its folder's _defaults, a baseline of its own
    from infersweep.recipe import load_recipe

    new = load_recipe(path)
    data = recipe_data(Path(path))  # with its folder's _defaults merged in
    b = data["baseline"]
    b["output_tok_s_per_gpu"] = b.pop("output_throughput_tok_s_per_gpu")
    b["tok_s_per_user"] = b.pop("output_throughput_p50_tok_s_per_user")
    data["slo"] = {
        "ttft_p50_ms": new.recipe.slo.ttft_p50_ms,
        "tok_s_user_min": new.recipe.slo.output_throughput_p50_tok_s_per_user,
    }
    with pytest.warns(FutureWarning):
        old = parse_recipe(data, path)
    assert old.recipe.model_dump() == new.recipe.model_dump()
    assert recipe_hash(old) == recipe_hash(new)
    # the hash keeps the first spelling: the measured run of this recipe family was hashed with it, warming up
    # one round (workload.warmup_rounds 1, how every point warmed up before the field); the new default of 4
    # rounds measures differently, and hashes differently
    data["workload"]["warmup_rounds"] = 1
    with pytest.warns(FutureWarning):
        one_round = parse_recipe(data, path)
    assert recipe_hash(one_round) == "a62ea4dfaed2e5c080265dbb49efd9313ab7bf958fb77f18ad4e4e773cd6dd4a"
    assert recipe_hash(new) != recipe_hash(one_round)


def test_tolerance_keys_are_the_same_metric_names():
    assert set(normalize_tolerances({})) <= set(METRICS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert normalize_tolerances({"ttft_p50_ms": 0.2})["ttft_p50_ms"] == {"rel": 0.2}
    with pytest.warns(FutureWarning, match="'ttft_ms_p50' is the old spelling of 'ttft_p50_ms'"):
        assert normalize_tolerances({"ttft_ms_p50": 0.2}, warn=True)["ttft_p50_ms"] == {"rel": 0.2}
    from infersweep.recipe.tolerances import Regression

    with pytest.warns(FutureWarning):
        assert Regression(tolerances={"error_rate": {"abs": 0.02}}).tolerances == {"error_ratio": {"abs": 0.02}}
    with pytest.raises(ValueError, match="did you mean 'output_throughput_tok_s'"):
        Regression(tolerances={"output_throughput_toks": {"rel": 0.1}})


def test_a_v1_table_without_a_validity_verdict_reads_with_valid_na(tmp_path):
    """v1 (before the validity verdict) reads too: its points' validity is NA (unknown), shown as NA."""
    from infersweep.results.legacy import upgrade_table
    from infersweep.results.summarize import markdown_table

    v2 = pd.read_parquet(MEASURED / "qwen3-32b-bf16-sweep" / "summary" / "results.parquet")
    v1 = v2.drop(columns=["valid", "validity_reasons", "validity_profile"]).assign(
        schema_version="infersweep.results/v1", slo_pass=True
    )
    path = tmp_path / "results.parquet"
    v1.to_parquet(path)
    t = upgrade_table(pd.read_parquet(path), str(path))
    assert t.attrs["upgraded_from"] == "infersweep.results/v1"
    assert t["valid"].isna().all() and str(t["valid"].dtype) == "boolean"
    assert (t["ttft_p50_ms"] == v2["ttft_ms_p50"]).all()
    md = markdown_table(t)
    head = md.splitlines()[0]
    assert "| valid |" in head and "validity_reasons" in head
    assert "| NA |" in md.splitlines()[2]
