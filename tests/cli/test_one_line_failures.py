"""Every failure a new user meets is one line with exit 2, and a run id is looked for where `run --local`
put it (issue 38 item 11)."""

from __future__ import annotations

import json

import pytest

from infersweep.cli import main as cli_main
from tests.support.aws_env import forget_aws


@pytest.fixture
def new_user(monkeypatch, tmp_path):
    """A fresh shell in an empty folder: no AWS credentials, no store configured."""
    forget_aws(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_runs_without_a_store_or_credentials_is_one_line_naming_the_local_store(new_user, capsys):
    (new_user / "runs" / "store").mkdir(parents=True)
    assert cli_main(["runs"]) == 2
    err = _one_line(capsys)
    assert "could not be read" in err and "--store runs/store" in err


def test_runs_of_a_store_folder_that_does_not_exist_is_an_error_not_no_runs(new_user, capsys):
    assert cli_main(["runs", "--store", str(new_user / "nonexistent")]) == 2
    assert "no such folder" in _one_line(capsys)


@pytest.mark.parametrize(
    "argv",
    [
        ["render", "demo-prefix-kv", "--out", "/etc/passwd"],
        ["render", "demo-prefix-kv", "--out", "/proc/nope"],
        ["run", "--local", "demo-prefix-kv", "--out", "/proc/nope"],
        ["experiment", "run", "--local", "nemotron-rr-vs-kv", "--out", "/proc/nope"],
        ["experiment", "render", "nemotron-rr-vs-kv", "--out", "/etc/passwd"],
    ],
)
def test_an_out_folder_that_cannot_be_written_is_one_line(new_user, capsys, argv):
    assert cli_main(argv) == 2
    err = _one_line(capsys)
    assert err.startswith(f"infersweep: --out {argv[-1]}: ")


def test_logs_of_a_missing_folder_says_so_not_argo_server(new_user, capsys):
    assert cli_main(["logs", "runs/nosuchdir"]) == 2
    err = _one_line(capsys)
    assert "no such run folder" in err and "Argo Server" not in err


def test_logs_and_report_find_a_run_id_under_runs(new_user, capsys):
    run = new_user / "runs" / "demo-20261203-000000"
    run.mkdir(parents=True)
    (run / "status.json").write_text(json.dumps({"nodes": {}}))
    assert cli_main(["logs", run.name]) == 0
    capsys.readouterr()
    # the folder is found (it was never summarized: that is what the one line says), not the S3 store
    assert cli_main(["report", run.name]) == 2
    err = _one_line(capsys)
    assert err.startswith(f"infersweep: runs/{run.name}: ") and "s3://" not in err
