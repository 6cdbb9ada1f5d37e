"""The offline GPU bundle: what the host lacks (the requirement walk against its pip freeze), and the parts it
travels in (checksummed, joined and unpacked on the host by the stdlib-only assemble.py). No network: the walk's
decisions are checked on requirement lines, the packing on a small site folder."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from packaging.version import Version

from infersweep.gpu_bundle import assemble
from infersweep.gpu_bundle.build import load_profile, pack, parse_size, resplit, trim_site
from infersweep.gpu_bundle.dependency_walk import BundleError, Walk, read_freeze
from tests.support.paths import REPO

HOST = REPO / "images" / "gpu-host" / "h200-python-packages.txt"


def walk(**kw) -> Walk:
    return Walk(host=read_freeze(HOST), wheels_dir=Path("/nonexistent"), **kw)


def test_what_the_host_has_is_not_fetched_and_what_it_lacks_is():
    w = walk()
    assert w.add("torch==2.11.0") is None and w.skipped["torch"] == "host has 2.11.0"
    assert w.add("numpy>=2") is None
    assert w.add("vllm==0.23.0") == "vllm"  # the host has no vLLM
    assert w.add("pydantic>=2.12") == "pydantic"  # nor pydantic


def test_a_cuda_package_the_host_has_in_another_version_is_an_error_naming_who_wants_it():
    w = walk()
    with pytest.raises(BundleError, match=r"cuda-bindings.*host has 13.3.1.*required by cuda_python-13.4.4"):
        w.add("cuda-bindings~=13.4.4", parent="cuda_python-13.4.4-py3-none-any.whl")
    assert walk().add("nvidia-cudnn-frontend>=1.19.1") == "nvidia-cudnn-frontend"  # one the host lacks is fetched


def test_markers_extras_exclusions_and_overrides_follow_the_host():
    w = walk(exclude={"aisimulate": "downloads at install"}, overrides={"apache-tvm-ffi": (">=0.1.15,<0.2", "why")})
    assert w.add('pywin32; sys_platform == "win32"') is None
    assert w.add('sglang==0.5.14; extra == "sglang"') is None  # an extra nobody asked for
    assert w.add('blake3>=1; extra == "vllm"', {"vllm"}) == "blake3"
    assert w.add("aisimulate") is None and "aisimulate" in w.skipped
    assert w.add("apache-tvm-ffi==0.1.9") == "apache-tvm-ffi"
    assert str(w.specs["apache-tvm-ffi"]) == "<0.2,>=0.1.15"  # the override replaces the conflicting pin


def test_the_freeze_is_read_as_the_host_reports_it():
    host = read_freeze(HOST)
    assert host["torch"] == Version("2.11.0") and host["huggingface-hub"] == Version("1.33.0")


def test_profiles_are_data_and_a_typo_is_named():
    p = load_profile("vllm-0.23-dynamo-1.3")
    assert "vllm==0.23.0" in p.roots and "flashinfer-cubin" in p.exclude and "sm90" in p.trim
    with pytest.raises(BundleError, match="no such profile; known: .*aiperf-0.13"):
        load_profile("vllm-9")
    assert parse_size("53MiB") == 53 * 2**20
    with pytest.raises(BundleError, match="--part-size"):
        parse_size("lots")


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "src" / "site-demo"
    (site / "demo_pkg").mkdir(parents=True)
    (site / "demo_pkg" / "__init__.py").write_text("VALUE = 42\n")
    (site / "vllm" / "vllm_flash_attn").mkdir(parents=True)
    (site / "vllm" / "vllm_flash_attn" / "_vllm_fa2_C.abi3.so").write_bytes(b"x" * 1000)
    (site / "blob.bin").write_bytes(os.urandom(100_000))  # what xz cannot shrink: several parts
    return site


def test_a_rule_over_a_kernel_library_drops_only_the_other_architectures_and_is_one_record(tmp_path):
    # flashinfer-cubin 0.6.12 ships 15,241 Blackwell-only cubins (Sm100a/Sm100f/Sm103a in their names) beside
    # DeepGEMM's, which carry no architecture in theirs: the sglang profile's sm90 rule keeps those.
    cubins = tmp_path / "site" / "flashinfer_cubin" / "cubins" / "158f"
    names = ["fmha/trtllm-gen/fmhaSm100fKernel_Q.cubin", "gemm/Gemm_Bfloat16_sm100f.cubin", "fmha/x_Sm103aKernel.cubin"]
    keep = ["deep-gemm/kernel.fp8_m_grouped_gemm.ed11.cubin", "fmha/cute-dsl/x86_64/sm_100a/checksums.txt"]
    for n in names + keep:
        (cubins / n).parent.mkdir(parents=True, exist_ok=True)
        (cubins / n).write_bytes(b"k" * 10)
    rule = load_profile("sglang-0.5.14-dynamo-1.3").trim["sm90"][0]
    (record,) = trim_site(tmp_path / "site", [rule])
    assert (record["files"], record["bytes"], len(record["examples"])) == (3, 30, 3)
    assert all((cubins / n).exists() for n in keep) and not any((cubins / n).exists() for n in names)


def test_parts_verify_join_and_unpack_and_a_corrupt_part_is_named(tmp_path):
    site = _site(tmp_path)
    dropped = trim_site(site, [{"path": "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so", "why": "FA2: not on sm90"}])
    assert [(d["path"], d["files"], d["bytes"]) for d in dropped] == [
        ("vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so", 1, 1000)
    ]
    out = tmp_path / "bundle"
    out.mkdir()
    parts = pack(site, out, part_bytes=20_000)
    whole = parts.pop()["whole_sha256"]
    manifest = {"site": site.name, "parts": parts, "whole_sha256": whole, "smoke": ["demo_pkg"]}
    mpath = out / f"{site.name}.manifest.json"
    mpath.write_text(json.dumps(manifest))
    assert len(parts) > 1
    resplit(mpath, 30_000)  # cut again for another transfer size: same bytes, new checksums
    got = assemble.assemble(mpath, tmp_path / "host")
    assert (got / "demo_pkg" / "__init__.py").read_text() == "VALUE = 42\n"
    assert not (got / "vllm" / "vllm_flash_attn" / "_vllm_fa2_C.abi3.so").exists()
    assert assemble.smoke(got, ["demo_pkg"]) == [] and assemble.smoke(got, ["no_such_mod"])
    first = out / json.loads(mpath.read_text())["parts"][0]["name"]
    first.write_bytes(b"garbage" + first.read_bytes()[7:])
    with pytest.raises(SystemExit, match=r"part00: corrupt .*copy it again"):
        assemble.assemble(mpath, tmp_path / "host2")
    first.unlink()
    with pytest.raises(SystemExit, match=r"part00: missing"):
        assemble.assemble(mpath, tmp_path / "host3")


def _bundle(tmp_path: Path) -> tuple[Path, list[Path]]:
    """A tiny site packed into several parts beside its manifest: (manifest, parts in order)."""
    out = tmp_path / "bundle"
    out.mkdir()
    site = _site(tmp_path)
    parts = pack(site, out, part_bytes=20_000)
    whole = parts.pop()["whole_sha256"]
    mpath = out / f"{site.name}.manifest.json"
    mpath.write_text(json.dumps({"site": site.name, "parts": parts, "whole_sha256": whole, "smoke": ["demo_pkg"]}))
    return mpath, [out / str(p["name"]) for p in parts]


def _drop(part: Path, into: Path) -> None:
    """As `gpu_host.sh stash` does: a hidden name first, renamed into place whole."""
    tmp = into / f".{part.name}.partial"
    shutil.copyfile(part, tmp)
    os.replace(tmp, into / part.name)


def test_a_follower_unpacks_the_parts_as_they_arrive(tmp_path):
    """Started with the manifest and the first part alone, it unpacks that part at once; the rest are dropped in
    by another thread only once the site folder is there (the unpacking began before they existed)."""
    mpath, parts = _bundle(tmp_path)
    assert len(parts) >= 4
    host = tmp_path / "host"
    later = tmp_path / "later"
    later.mkdir()
    for p in parts[1:]:
        p.rename(later / p.name)

    def transfers():
        deadline = time.monotonic() + 10  # a safety net only: the follower's own timeout is as long
        while not (host / "site-demo").is_dir() and time.monotonic() < deadline:
            time.sleep(0.01)
        for p in parts[1:]:
            _drop(later / p.name, mpath.parent)

    thread = threading.Thread(target=transfers)
    thread.start()
    try:
        got = assemble.assemble(mpath, host, follow=True, timeout_s=10)
    finally:
        thread.join()
    assert (got / "demo_pkg" / "__init__.py").read_text() == "VALUE = 42\n"
    assert (got / "blob.bin").read_bytes() == (tmp_path / "src" / "site-demo" / "blob.bin").read_bytes()


def test_a_follower_names_a_corrupt_or_missing_part_and_leaves_no_site_behind(tmp_path):
    mpath, parts = _bundle(tmp_path)
    host = tmp_path / "host"
    good = parts[2].read_bytes()
    parts[2].write_bytes(b"garbage" + good[7:])
    with pytest.raises(SystemExit, match=r"part02: corrupt .*copy it again"):
        assemble.assemble(mpath, host, follow=True, timeout_s=5)
    assert not (host / "site-demo").exists()  # parts 00 and 01 had been unpacked into it
    parts[2].write_bytes(good)
    size = parts[3].stat().st_size
    parts[3].unlink()
    expected = rf"part03: missing after 0.3 s .*expected {size} bytes.*copy it into {mpath.parent}"
    with pytest.raises(SystemExit, match=expected):
        assemble.assemble(mpath, host, follow=True, timeout_s=0.3)
    assert not (host / "site-demo").exists()


def test_a_site_venv_hides_the_host_modules_its_profile_names(tmp_path):
    """The AIPerf site's venv cannot import the host's torch (transformers would import it in every AIPerf
    process); the other sites' venvs see the host's modules as before."""
    import subprocess

    assert load_profile("aiperf-0.13").hide_host_modules == ["torch"]
    assert load_profile("vllm-0.23-dynamo-1.3").hide_host_modules == []
    site = tmp_path / "site-demo"
    site.mkdir()
    probe = "import importlib.util, sys; print(importlib.util.find_spec(sys.argv[1]) is not None)"
    host_module = "sqlite3"  # on every host, and nothing imports it at start-up
    venv = assemble.make_venv(site, [host_module])
    run = [str(venv / "bin" / "python"), "-c", probe, host_module]
    assert subprocess.run(run, capture_output=True, text=True, check=True).stdout.strip() == "False"
    failed = subprocess.run([str(venv / "bin" / "python"), "-c", f"import {host_module}"], capture_output=True)
    assert failed.returncode != 0 and b"ModuleNotFoundError" in failed.stderr  # an ImportError: callers fall back
    assemble.make_venv(site)  # assembled again without the rule: the host's module is back
    assert subprocess.run(run, capture_output=True, text=True, check=True).stdout.strip() == "True"


def test_the_sglang_profile_is_its_own_site_and_keeps_the_hosts_torch():
    """SGLang 0.5.14's pins (transformers 5.8.1, xgrammar 0.2.1) are not vLLM 0.23.0's: a site of its own. Its
    torch==2.11.0 is the host's (not fetched); transformers 5.8.1 is fetched over the host's 5.17."""
    p = load_profile("sglang-0.5.14-dynamo-1.3")
    assert p.site == "site-sglang" != load_profile("vllm-0.23-dynamo-1.3").site
    assert "sglang==0.5.14" in p.roots and "ai-dynamo==1.3.1" in p.roots and "dynamo.sglang" in p.smoke
    w = walk(exclude=p.exclude, overrides=p.overrides)
    assert w.add("torch==2.11.0") is None and w.skipped["torch"] == "host has 2.11.0"
    assert w.add("transformers==5.8.1") == "transformers"
    assert w.add("cuda-python>=13.0") is None  # the host's cuda-bindings/-core/-pathfinder serve it
    assert w.add("quack-kernels>=0.4.1") == "quack-kernels" and str(w.specs["quack-kernels"]) == "==0.5.0"
