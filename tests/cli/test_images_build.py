"""`infersweep images build / pin` (issue 23 item 2, step 1): the registry is a setting of the command, the
pushed digests land in params/cluster.yaml, and every render afterwards pins them.

A stand-in `docker` on PATH records what it is asked and answers `image inspect` with a RepoDigest, as the
Docker CLI does after a push; the real docker CLI of this machine (no daemon) gives the one-line refusal.
"""

from __future__ import annotations

import os
import shutil

import pytest
import yaml

from infersweep.cli import main
from infersweep.cluster_settings import _load, load_cluster_settings
from infersweep.paths import REPO_ROOT

DIGEST = "sha256:" + "ab" * 32
FAKE_DOCKER = f"""#!/bin/sh
echo "$@" >> "$DOCKER_LOG"
case "$1" in
  info) echo 28.2.2 ;;
  image) ref="$(eval echo \\${{$#}})"; echo "${{ref%:*}}@{DIGEST}" ;;
esac
"""


@pytest.fixture
def params(tmp_path, monkeypatch):
    d = tmp_path / "params"
    d.mkdir()
    for entry in (REPO_ROOT / "params").iterdir():
        if entry.name != "cluster.yaml":
            (d / entry.name).symlink_to(entry)
    shutil.copy(REPO_ROOT / "params" / "cluster.yaml", d / "cluster.yaml")
    monkeypatch.setenv("INFERSWEEP_PARAMS", str(d))
    _load.cache_clear()
    yield d
    _load.cache_clear()


@pytest.fixture
def docker(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "docker"
    exe.write_text(FAKE_DOCKER)
    exe.chmod(0o755)
    log = tmp_path / "docker.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DOCKER_LOG", str(log))
    return log


def test_dry_run_prints_the_commands_with_the_registry(params, capsys):
    assert main(["images", "build", "--registry", "registry.example.com:5000/team", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:4] == [
        "docker build -f images/steps.Dockerfile -t registry.example.com:5000/team/steps:0.1.0 .",
        "docker push registry.example.com:5000/team/steps:0.1.0",
        "docker build -f images/aiperf.Dockerfile -t registry.example.com:5000/team/aiperf:0.13.0 .",
        "docker push registry.example.com:5000/team/aiperf:0.13.0",
    ]
    assert "infersweep images pin steps=" in out[4]
    assert (params / "cluster.yaml").read_text() == (REPO_ROOT / "params" / "cluster.yaml").read_text()


def test_build_pushes_and_records_the_digests_that_renders_then_use(params, docker, capsys, tmp_path):
    assert main(["images", "build", "--registry", "ghcr.io/acme"]) == 0
    calls = docker.read_text().splitlines()
    assert calls == [
        "info --format {{.ServerVersion}}",
        "build -f images/steps.Dockerfile -t ghcr.io/acme/steps:0.1.0 .",
        "push ghcr.io/acme/steps:0.1.0",
        "image inspect --format {{index .RepoDigests 0}} ghcr.io/acme/steps:0.1.0",
        "build -f images/aiperf.Dockerfile -t ghcr.io/acme/aiperf:0.13.0 .",
        "push ghcr.io/acme/aiperf:0.13.0",
        "image inspect --format {{index .RepoDigests 0}} ghcr.io/acme/aiperf:0.13.0",
    ]
    text = (params / "cluster.yaml").read_text()
    assert f"  steps: ghcr.io/acme/steps:0.1.0@{DIGEST}\n" in text and "# Where the pipeline's own pieces" in text
    _load.cache_clear()
    s = load_cluster_settings()
    assert s.images.aiperf == f"ghcr.io/acme/aiperf:0.13.0@{DIGEST}"
    # what a render sends: the step templates pin the pushed digests
    out = tmp_path / "r"
    assert main(["render", "nemotron-3-nano-fp8-vllm-agg-kv", "--out", str(out), "--no-cache"]) == 0
    point = yaml.safe_load((out / "templates" / "infersweep-aiperf-point.yaml").read_text())
    assert point["spec"]["templates"][0]["container"]["image"] == s.images.aiperf
    deploy = yaml.safe_load((out / "templates" / "infersweep-deploy.yaml").read_text())
    assert deploy["spec"]["templates"][0]["container"]["image"] == s.images.steps


def test_pin_refuses_a_reference_without_a_digest(params, capsys):
    assert main(["images", "pin", "steps=ghcr.io/acme/steps:0.1.0"]) == 2
    assert "give the pushed digest, REF@sha256:<64 hex>" in capsys.readouterr().err
    assert main(["images", "pin", f"steps=ghcr.io/acme/steps:0.1.0@{DIGEST}"]) == 0
    assert load_cluster_settings().images.steps.endswith(DIGEST)


@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker CLI here")
def test_without_a_docker_daemon_it_is_one_line_and_nothing_is_recorded(params, capsys, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")  # the real CLI, no daemon behind it
    assert main(["images", "build", "--registry", "ghcr.io/acme"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "docker cannot reach its daemon" in err and "--dry-run" in err
    assert (params / "cluster.yaml").read_text() == (REPO_ROOT / "params" / "cluster.yaml").read_text()


def test_a_bad_registry_is_one_line(params, capsys):
    assert main(["images", "build", "--registry", "https://ghcr.io/acme", "--dry-run"]) == 2
    assert "--registry 'https://ghcr.io/acme': give a registry and path" in capsys.readouterr().err
