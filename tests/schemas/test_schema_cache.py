"""infersweep.schemas' on-disk caches: prepared schemas (pickles keyed by source + code) and documents that
passed (keyed by the document + the schemas). Neither may change a verdict: a bad document fails every time,
a changed document is checked again, and a broken cache is rebuilt, never trusted."""

from __future__ import annotations

import copy

import pytest
import yaml

from infersweep.schemas import SchemaError, validate_document
from infersweep.schemas import core as schemas
from tests.conftest import FIXTURES


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERSWEEP_CACHE_DIR", str(tmp_path))
    for fn in (schemas._argo_definitions, schemas._argo_validator, schemas._dgd_validators):
        fn.cache_clear()
    yield tmp_path
    for fn in (schemas._argo_definitions, schemas._argo_validator, schemas._dgd_validators):
        fn.cache_clear()


def dgd() -> dict:
    return yaml.safe_load((FIXTURES / "dynamo" / "templates-1.6.1-vllm-agg.yaml").read_text())


def test_prepared_schemas_are_written_once_and_read_back_equal(cache):
    validate_document(dgd())
    (pickle_file,) = cache.glob("dgd-*.pickle")
    built = schemas._dgd_schemas(schemas.reference_dir() / "dynamo/crds/nvidia.com_dynamographdeployments.yaml")
    schemas._dgd_validators.cache_clear()
    read = {v: validator.schema for v, validator in schemas._dgd_validators(str(schemas.reference_dir())).items()}
    assert read == built and list(cache.glob("dgd-*.pickle")) == [pickle_file]


def test_a_corrupt_cache_file_is_rebuilt_not_trusted(cache):
    validate_document(dgd())
    (pickle_file,) = cache.glob("dgd-*.pickle")
    pickle_file.write_bytes(b"not a pickle")
    schemas._dgd_validators.cache_clear()
    bad = dgd()
    bad["spec"]["components"][0]["replicaz"] = 1
    with pytest.raises(SchemaError, match=r"replicaz: unknown field"):
        validate_document(bad)
    assert pickle_file.read_bytes() != b"not a pickle"


def test_a_failing_document_fails_every_time_and_a_changed_one_is_checked_again(cache):
    good = dgd()
    validate_document(good)
    (passed,) = cache.glob("passed-*")
    assert len(list(passed.iterdir())) == 1
    bad = copy.deepcopy(good)
    bad["spec"]["components"][0]["replicaz"] = 1
    for _ in range(2):
        with pytest.raises(SchemaError, match=r"replicaz: unknown field"):
            validate_document(bad)
    assert len(list(passed.iterdir())) == 1, "a failure is never remembered"
    validate_document(good)  # remembered: no new marker
    assert len(list(passed.iterdir())) == 1


def test_a_remembered_pass_is_per_argo_version_set(cache):
    wf = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"generateName": "x-"},
        "spec": {
            "entrypoint": "main",
            "templates": [{"name": "main", "container": {"image": "a", "command": ["true"]}}],
        },
    }
    validate_document(wf, argo_versions=["v4.1.2"])
    validate_document(wf)
    (passed,) = cache.glob("passed-*")
    assert len(list(passed.iterdir())) == 2


def test_off_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERSWEEP_CACHE_DIR", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    validate_document(dgd())
    assert schemas.cache_dir() is None and not any(tmp_path.iterdir())
