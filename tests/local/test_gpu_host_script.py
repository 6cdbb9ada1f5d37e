"""scripts/gpu_host.sh, the offline GPU host's entry point: which interpreter runs infersweep or pytest, and which
engine interpreters it hands them (the SGLang one only once that site is assembled). A stand-in interpreter
prints what it was given; nothing else runs."""

from __future__ import annotations

import json
import os
import subprocess

from infersweep.gpu_bundle.build import pack
from tests.support.paths import REPO

SCRIPT = REPO / "scripts" / "gpu_host.sh"


def _fake_python(path):
    path.parent.mkdir(parents=True)
    path.write_text(
        '#!/bin/sh\necho "$0 $*"\n'
        'echo "gpu=$INFERSWEEP_GPU_PYTHON aiperf=$INFERSWEEP_AIPERF_PYTHON sglang=${INFERSWEEP_GPU_PYTHON_SGLANG:-none}"\n'
    )
    path.chmod(0o755)


def _call(sites, *args):
    env = {**os.environ, "SITES": str(sites)}
    for name in ("INFERSWEEP_GPU_PYTHON", "INFERSWEEP_GPU_PYTHON_SGLANG"):
        env.pop(name, None)
    return subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True, check=True).stdout


def test_run_and_test_use_the_tool_site_with_the_engine_interpreters_of_the_bundle(tmp_path):
    tool = tmp_path / "venv-site-tool" / "bin" / "python"
    _fake_python(tool)
    out = _call(tmp_path, "run", "run", "--local", "--workers", "gpu", "r")
    assert out.splitlines()[0] == f"{tool} -m infersweep run --local --workers gpu r"
    assert f"gpu={tmp_path}/venv-site-vllm/bin/python aiperf={tmp_path}/venv-site-aiperf/bin/python" in out
    assert "sglang=none" in out  # no SGLang site assembled: no SGLang interpreter is handed on
    out = _call(tmp_path, "test", "-m", "gpu", "-q")
    assert out.splitlines()[0] == f"{tool} -m pytest -m gpu -q"
    _fake_python(tmp_path / "venv-site-sglang" / "bin" / "python")
    assert f"sglang={tmp_path}/venv-site-sglang/bin/python" in _call(tmp_path, "test", "-m", "gpu")


def test_a_host_sent_the_sglang_bundle_alone_runs_the_frontend_in_the_sglang_site(tmp_path):
    """Without a vLLM site the GPU interpreter (frontend, KV-reset client) is the SGLang site's; with both, vLLM's."""
    _fake_python(tmp_path / "venv-site-tool" / "bin" / "python")
    sglang = tmp_path / "venv-site-sglang" / "bin" / "python"
    _fake_python(sglang)
    assert f"gpu={sglang} " in _call(tmp_path, "test", "-m", "gpu")
    _fake_python(tmp_path / "venv-site-vllm" / "bin" / "python")
    assert f"gpu={tmp_path}/venv-site-vllm/bin/python " in _call(tmp_path, "test", "-m", "gpu")


def test_stash_renames_whole_parts_into_place_and_a_follower_started_first_unpacks_them(tmp_path):
    """The manifest is stashed, `assemble --follow` starts the background follower and returns, the parts come in
    a later stash (each copied to a hidden name and renamed: no partial name is left), `assembled` waits for it."""
    site = tmp_path / "src" / "site-demo"
    (site / "demo_pkg").mkdir(parents=True)
    (site / "demo_pkg" / "__init__.py").write_text("VALUE = 42\n")
    (site / "blob.bin").write_bytes(os.urandom(50_000))
    manifest_dir, parts_dir = tmp_path / "call1", tmp_path / "call2"
    manifest_dir.mkdir()
    parts_dir.mkdir()
    parts = pack(site, parts_dir, part_bytes=20_000)
    whole = parts.pop()["whole_sha256"]
    manifest = {"site": site.name, "parts": parts, "whole_sha256": whole, "smoke": ["demo_pkg"]}
    (manifest_dir / "site-demo.manifest.json").write_text(json.dumps(manifest))
    sites, stash = tmp_path / "sites", tmp_path / "parts"
    env = {**os.environ, "SITES": str(sites), "PARTS": str(stash)}

    def call(*args):
        return subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60)

    assert call("stash", str(manifest_dir)).returncode == 0
    started = call("assemble", "--follow")
    assert started.returncode == 0 and "background" in started.stdout, started.stderr
    stashed = call("stash", str(parts_dir))
    assert stashed.returncode == 0 and "partial" not in stashed.stdout
    assert not [n for n in os.listdir(stash) if "partial" in n]
    done = call("assembled")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "imports ok" in done.stdout and (sites / "site-demo" / "demo_pkg" / "__init__.py").is_file()


def test_an_unknown_verb_prints_the_usage_and_fails():
    proc = subprocess.run([str(SCRIPT), "bogus"], capture_output=True, text=True)
    assert proc.returncode == 2 and "gpu_host.sh test ARGS" in proc.stdout
