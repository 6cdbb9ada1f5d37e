#!/usr/bin/env python3
"""Assemble an infersweep GPU bundle on the host: verify every part, unpack, check the imports.

Standard library only: it runs on the GPU host before anything is installed there.

    python3 assemble.py --parts DIR [--into /opt/infersweep] [--follow [--timeout-s N]] [--venv] [--check]

DIR holds ``<site>.manifest.json`` and its ``.partNN`` files (several manifests may share it). A missing or
corrupt part is named with its expected size and checksum; nothing is unpacked until every part verifies.
``--follow`` starts with the manifests alone and unpacks while the parts are still arriving: it waits for each
part in order, verifies it the moment it is there and feeds it to the one decompress-and-untar stream, so the
unpacking is done soon after the last part lands instead of starting then. A part that has not appeared
``--timeout-s`` seconds after the last progress is named; on a corrupt or missing part the half-unpacked site
folder is removed. Parts must appear whole (``gpu_host.sh stash`` copies to a hidden name and renames).
``--check`` then imports each module the profile names with the site first on ``PYTHONPATH`` and prints the
``export PYTHONPATH=...`` line to use. ``--venv`` also makes ``<into>/venv-<site>``: a virtual environment over
the host's Python (``--system-site-packages``) whose ``.pth`` puts the site before the host's own packages
(site.addsitedir processes a venv's .pth files before the base prefix's site-packages), with the site's
console scripts (``aiperf``, ...) written for that interpreter. A manifest's ``hide_host_modules`` are made
unimportable in that venv (a ``.pth`` sets ``sys.modules[name] = None``, so ``importlib.util.find_spec`` returns
None and ``import`` raises ImportError, CPython Lib/importlib/util.py find_spec).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import lzma
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import time
from pathlib import Path


class PartsReader(io.RawIOBase):
    """The parts, read in order as one stream, hashed as they go."""

    def __init__(self, paths: list[Path]):
        self.paths = list(paths)
        self.cur: io.BufferedIOBase | None = None
        self.whole = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        while True:
            if self.cur is None:
                if not self.paths:
                    return 0
                self.cur = self.paths.pop(0).open("rb")
            n = self.cur.readinto(buf)
            if n:
                self.whole.update(memoryview(buf)[:n])
                return n
            self.cur.close()
            self.cur = None


def _corrupt(part: dict, size: int, digest: str) -> str | None:
    if size == part["bytes"] and digest == part["sha256"]:
        return None
    return (
        f"{part['name']}: corrupt ({size} bytes, sha256 {digest[:12]}; "
        f"expected {part['bytes']} bytes, {part['sha256'][:12]}); copy it again"
    )


def verify(manifest: dict, parts_dir: Path) -> list[str]:
    problems = []
    for part in manifest["parts"]:
        path = parts_dir / part["name"]
        if not path.is_file():
            problems.append(f"{part['name']}: missing (expected {part['bytes']} bytes); copy it into {parts_dir}")
            continue
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        problem = _corrupt(part, path.stat().st_size, h.hexdigest())
        if problem:
            problems.append(problem)
    return problems


class FollowedParts(PartsReader):
    """The parts as they arrive, one remote call apart: when the current part is used up, wait for the next one
    in manifest order (polling: it is copied in by a later call, a minute or more away), verify it, then read it.
    The decompressor and the untar block on this wait, so they run while the transfers go on. Only whole files
    are ever seen here: the stash step copies each part to a hidden name and renames it into place."""

    POLL_S = 0.2

    def __init__(self, manifest: dict, parts_dir: Path, timeout_s: float):
        super().__init__([])
        self.todo = list(manifest["parts"])
        self.parts_dir = parts_dir
        self.timeout_s = timeout_s

    def readinto(self, buf) -> int:
        while True:
            if self.cur is None and self.todo:
                self.cur = self._arrived(self.todo.pop(0))
            n = super().readinto(buf)  # 0: this part is used up; on to the next one, once it is there
            if n or not self.todo:
                return n

    def _arrived(self, part: dict) -> io.BytesIO:
        path = self.parts_dir / part["name"]
        deadline = time.monotonic() + self.timeout_s  # from the last progress: the previous part's end
        while not path.is_file():
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"assemble: {part['name']}: missing after {self.timeout_s:g} s of waiting "
                    f"(expected {part['bytes']} bytes); copy it into {self.parts_dir} (gpu_host.sh stash)"
                )
            time.sleep(self.POLL_S)
        data = path.read_bytes()  # ~53 MiB: held once, so the bytes verified are the bytes unpacked
        problem = _corrupt(part, len(data), hashlib.sha256(data).hexdigest())
        if problem:
            raise SystemExit("assemble: " + problem)
        return io.BytesIO(data)


def assemble(manifest_path: Path, into: Path, follow: bool = False, timeout_s: float = 1200.0) -> Path:
    manifest = json.loads(manifest_path.read_text())
    parts_dir = manifest_path.parent
    site = into / manifest["site"]
    reader: PartsReader
    if follow:
        reader = FollowedParts(manifest, parts_dir, timeout_s)
    else:
        problems = verify(manifest, parts_dir)
        if problems:
            raise SystemExit("assemble: " + manifest["site"] + " not unpacked:\n  " + "\n  ".join(problems))
        reader = PartsReader([parts_dir / p["name"] for p in manifest["parts"]])
    into.mkdir(parents=True, exist_ok=True)
    try:
        with lzma.open(io.BufferedReader(reader, 1 << 20)) as xz, tarfile.open(fileobj=xz, mode="r|") as tar:
            tar.extractall(into, filter="data")
        # The tar ends at its end-of-archive blocks: read what follows (padding, the xz index) into the checksum,
        # and, following, wait for a last part that holds nothing else.
        rest = bytearray(1 << 20)
        while reader.readinto(rest):
            pass
        if reader.whole.hexdigest() != manifest["whole_sha256"]:
            raise SystemExit(f"assemble: {manifest['site']}: the joined parts do not match the bundle's checksum")
    except BaseException:
        if follow:  # half unpacked: gone, so that nothing left behind looks usable
            shutil.rmtree(site, ignore_errors=True)
        raise
    return site


def make_venv(site: Path, hide: list[str] | tuple[str, ...] = ()) -> Path:
    venv = site.parent / f"venv-{site.name}"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    purelib = Path(
        subprocess.run(
            [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # The site first, then the packages of the interpreter that runs this (on the GPU host that is itself a
    # venv, /opt/torch/.venv, whose packages --system-site-packages would not see: only the base Python's).
    host = sysconfig.get_paths()["purelib"]
    (purelib / "_infersweep_bundle.pth").write_text(f"{site}\n{host}\n")
    # Hidden host modules: AIPerf's transformers 5.x imports torch whenever find_spec finds it
    # (transformers/modeling_rope_utils.py, utils/import_utils.py _is_package_available), in each of its spawned
    # processes; AIPerf never uses it. A .pth's `import` line runs at every start of this venv's interpreter.
    hidden = purelib / "_infersweep_hide.pth"
    if hide:
        hidden.write_text(f"import sys; sys.modules.update(dict.fromkeys({sorted(hide)!r}))\n")
    elif hidden.exists():
        hidden.unlink()
    python = venv / "bin" / "python"
    for ep_file in site.glob("*.dist-info/entry_points.txt"):
        section = None
        for line in ep_file.read_text().splitlines():
            line = line.strip()
            if line.startswith("["):
                section = line.strip("[]")
            elif section == "console_scripts" and "=" in line:
                name, target = (x.strip() for x in line.split("=", 1))
                module, _, attr = target.partition(":")
                script = venv / "bin" / name
                script.write_text(
                    f"#!{python}\nimport sys\nfrom {module} import {attr.split('.')[0]}\nsys.exit({attr}())\n"
                )
                script.chmod(0o755)
    return venv


def smoke(site: Path, modules: list[str]) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(":")}
    failed = []
    for mod in modules:
        proc = subprocess.run([sys.executable, "-c", f"import {mod}"], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            failed.append(f"import {mod}: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", type=Path, default=Path(__file__).parent, help="folder with manifests and parts")
    ap.add_argument("--into", type=Path, default=Path("/opt/infersweep"), help="where the site folders go")
    ap.add_argument("--check", action="store_true", help="import the profile's modules afterwards")
    ap.add_argument("--venv", action="store_true", help="also make <into>/venv-<site> over the host's Python")
    ap.add_argument("--follow", action="store_true", help="unpack each part as it arrives (manifests first)")
    ap.add_argument("--timeout-s", type=float, default=1200.0, help="--follow: wait this long for a part")
    args = ap.parse_args(argv)
    manifests = sorted(args.parts.glob("*.manifest.json"))
    if not manifests:
        print(f"assemble: no *.manifest.json in {args.parts}", file=sys.stderr)
        return 2
    for m in manifests:
        site = assemble(m, args.into, args.follow, args.timeout_s)
        manifest = json.loads(m.read_text())
        print(f"assemble: {site} ({len(manifest['parts'])} parts verified)", flush=True)
        if args.venv:
            hide = manifest.get("hide_host_modules") or []
            venv = make_venv(site, hide)
            print(
                f"assemble: {venv}/bin/python has {site.name} first on its path" + (f", hides {hide}" if hide else "")
            )
        if args.check:
            failed = smoke(site, manifest.get("smoke", []))
            if failed:
                print("assemble: " + "; ".join(failed), file=sys.stderr)
                return 1
            print(f"assemble: imports ok; export PYTHONPATH={site}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
