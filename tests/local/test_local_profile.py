"""params/local.yaml is typed (infersweep.local.profile.LocalProfile): a typo or a wrong value is refused in one
error naming the file, the field and what it should be, before anything starts. Before, the file was read as a
plain dict and a misspelt key surfaced as a bare KeyError from deep inside the scaling code, mid-run."""

from __future__ import annotations

import shutil

import pytest

from infersweep.local.profile import load_local_profile
from infersweep.local.workers import LocalWorkers
from infersweep.paths import params_dir
from infersweep.recipe import RecipeError


def _local_yaml(tmp_path, monkeypatch, text: str) -> None:
    shutil.copytree(params_dir(), tmp_path / "params")
    (tmp_path / "params" / "local.yaml").write_text(text)
    monkeypatch.setenv("INFERSWEEP_PARAMS", str(tmp_path / "params"))


def test_the_shipped_profile_loads_typed():
    prof = load_local_profile()
    assert prof.max_concurrency >= 1 and prof.max_isl >= prof.max_osl >= 1


def test_a_misspelt_field_is_refused_naming_the_file_and_the_field(tmp_path, monkeypatch):
    text = (params_dir() / "local.yaml").read_text().replace("max_concurrency:", "max_concurency:")
    _local_yaml(tmp_path, monkeypatch, text)
    with pytest.raises(RecipeError) as e:
        load_local_profile()
    assert "local.yaml" in str(e.value) and "max_concurency" in str(e.value) and "max_concurrency" in str(e.value)


def test_a_run_with_a_bad_profile_stops_before_anything_starts(tmp_path, monkeypatch):
    text = (params_dir() / "local.yaml").read_text().replace("max_points: 3", "max_points: three")
    _local_yaml(tmp_path, monkeypatch, text)
    from infersweep.local.run import run_local

    with pytest.raises(RecipeError, match=r"local\.yaml.*max_points"):
        run_local("demo-prefix-kv", out_root=tmp_path / "runs", cache_root=tmp_path / "cache")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cache").exists()


def test_an_unknown_worker_kind_is_one_error_naming_the_choices():
    with pytest.raises(RecipeError, match=r"--workers 'gpus': choose mocker .* or gpu"):
        LocalWorkers("gpus")
