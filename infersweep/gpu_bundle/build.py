"""Build an offline bundle of a serving stack for a GPU host without internet.

On a machine with internet: walk the profile's roots against the host's ``pip freeze`` (dependency_walk.py),
install the missing wheels into one site folder as the host's Python would (``pip install --target --no-deps``
with the host's platform tags), drop what the host's GPU architecture never loads, pack it as one tar.xz split
into parts of a given size, and write a manifest with each part's sha256. ``assemble.py`` (copied beside the
parts, standard library only) verifies and unpacks them on the host.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import parse_wheel_filename

from infersweep.params_files import RecipeError, read_yaml_mapping

from .dependency_walk import PLATFORMS, BundleError, Walk, read_freeze

PROFILES = Path(__file__).resolve().parents[2] / "params" / "gpu-bundles"
ASSEMBLE = Path(__file__).with_name("assemble.py")
PROFILE_KEYS = {"site", "roots", "exclude", "overrides", "trim", "smoke", "hide_host_modules"}


@dataclass(frozen=True)
class Profile:
    name: str
    site: str
    roots: list[str]
    exclude: dict[str, str]
    overrides: dict[str, tuple[str, str]]
    trim: dict[str, list[dict[str, str]]]
    smoke: list[str]
    # Host modules the site's venv must not see (assemble.py make_venv): a site that never needs them, where
    # their mere presence costs a start (AIPerf's transformers imports the host's torch when it can find it).
    hide_host_modules: list[str] = field(default_factory=list)


def load_profile(name_or_path: str) -> Profile:
    path = Path(name_or_path)
    if not path.is_file():  # a name ("vllm-0.23-dynamo-1.3") rather than a file
        path = PROFILES / f"{name_or_path}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in PROFILES.glob("*.yaml"))
        raise BundleError(f"--profile {name_or_path}: no such profile; known: {', '.join(known)}")
    try:
        data = read_yaml_mapping(path)
    except RecipeError as e:
        raise BundleError(str(e)) from None
    unknown = set(data) - PROFILE_KEYS
    missing = {"site", "roots"} - set(data)
    if unknown or missing:
        raise BundleError(
            f"{path}: unknown keys {sorted(unknown)} / missing keys {sorted(missing)}; "
            f"a profile has {sorted(PROFILE_KEYS)}"
        )
    overrides = {k: (v[0], v[1]) for k, v in (data.get("overrides") or {}).items()}
    return Profile(
        path.stem,
        data["site"],
        list(data["roots"]),
        dict(data.get("exclude") or {}),
        overrides,
        dict(data.get("trim") or {}),
        list(data.get("smoke") or []),
        list(data.get("hide_host_modules") or []),
    )


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def install_site(wheels: list[Path], site: Path) -> None:
    """Unpack the wheels as the host's pip would (its platform tags, no dependency resolution)."""
    shutil.rmtree(site, ignore_errors=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--no-compile",
        "--no-index",
        "--only-binary=:all:",
        "--python-version",
        "3.12",
        "--implementation",
        "cp",
        "--target",
        str(site),
    ]
    for p in PLATFORMS:
        cmd += ["--platform", p]
    subprocess.run(cmd + [str(w) for w in wheels], check=True)


def trim_site(site: Path, rules: list[dict[str, str]]) -> list[dict[str, object]]:
    """Delete what each rule's glob matches under `site`; one record per rule: how many files, how many bytes,
    the first few paths and why (a rule over a kernel library can match thousands of files)."""
    dropped = []
    for rule in rules:
        paths = [p for p in sorted(site.glob(rule["path"])) if p.is_file()]
        size = 0
        for path in paths:
            size += path.stat().st_size
            path.unlink()
        dropped.append(
            {
                "path": rule["path"],
                "files": len(paths),
                "bytes": size,
                "examples": [str(p.relative_to(site)) for p in paths[:3]],
                "why": rule["why"],
            }
        )
    return dropped


def pack(site: Path, out: Path, part_bytes: int, preset: int = 6) -> list[dict[str, object]]:
    """tar.xz of the site folder (named by its folder name) in parts of at most part_bytes each."""
    whole = out / f"{site.name}.tar.xz"
    with lzma.open(whole, "wb", preset=preset) as xz, tarfile.open(fileobj=xz, mode="w|") as tar:
        tar.add(site, arcname=site.name)
    whole_sha = sha256_file(whole)
    parts = split(whole, out, site.name, part_bytes)
    parts.append({"whole_sha256": whole_sha})
    return parts


def split(whole: Path, folder: Path, site: str, part_bytes: int) -> list[dict[str, object]]:
    """Cut `whole` into <site>.tar.xz.partNN files of at most part_bytes, each with its sha256; `whole` goes."""
    parts = []
    with whole.open("rb") as f:
        for i, block in enumerate(iter(lambda: f.read(part_bytes), b"")):
            part = folder / f"{site}.tar.xz.part{i:02d}"
            part.write_bytes(block)
            parts.append({"name": part.name, "bytes": len(block), "sha256": hashlib.sha256(block).hexdigest()})
    whole.unlink()
    return parts


def build(profile: Profile, host_packages: Path, arch: str, part_bytes: int, out: Path, cache: Path) -> dict:
    if arch not in profile.trim and profile.trim:
        raise BundleError(f"--arch {arch}: profile {profile.name} knows {sorted(profile.trim)}; add its trim rules")
    host = read_freeze(host_packages)
    walk = Walk(host=host, wheels_dir=cache / profile.name, exclude=profile.exclude, overrides=profile.overrides)
    fetched = walk.run(profile.roots)
    wheels = sorted(fetched.values())
    out.mkdir(parents=True, exist_ok=True)
    site = cache / "sites" / profile.site
    install_site(wheels, site)
    dropped = trim_site(site, profile.trim.get(arch, []))
    parts = pack(site, out, part_bytes)
    whole = parts.pop()
    manifest = {
        "profile": profile.name,
        "site": profile.site,
        "arch": arch,
        "python": "3.12",
        "host_packages_sha256": sha256_file(host_packages),
        "wheels": [
            {
                "file": w.name,
                "name": str(parse_wheel_filename(w.name)[0]),
                "version": str(parse_wheel_filename(w.name)[1]),
                "sha256": sha256_file(w),
            }
            for w in wheels
        ],
        "excluded": profile.exclude,
        "overrides": {k: {"spec": v[0], "why": v[1]} for k, v in profile.overrides.items()},
        "host_provides": dict(sorted(walk.skipped.items())),
        "trimmed": dropped,
        "parts": parts,
        "whole_sha256": whole["whole_sha256"],
        "smoke": profile.smoke,
        "hide_host_modules": profile.hide_host_modules,
    }
    (out / f"{profile.site}.manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    shutil.copy(ASSEMBLE, out / "assemble.py")
    return manifest


def parse_size(text: str) -> int:
    units = {"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "k": 1000, "m": 1000**2, "g": 1000**3, "": 1}
    low = text.strip().lower()
    num = low.rstrip("kmgib")
    unit = low[len(num) :]
    if unit not in units or not num.replace(".", "", 1).isdigit():
        raise BundleError(f"--part-size {text}: give a size like 60MiB or 500M")
    return int(float(num) * units[unit])


def resplit(manifest_path: Path, part_bytes: int) -> dict:
    """Cut an existing bundle's parts again at another size (what one transfer takes), checksums anew."""
    manifest = json.loads(manifest_path.read_text())
    folder = manifest_path.parent
    old = [folder / p["name"] for p in manifest["parts"]]
    whole = folder / f"{manifest['site']}.tar.xz"
    with whole.open("wb") as out:
        for p in old:
            out.write(p.read_bytes())
    if sha256_file(whole) != manifest["whole_sha256"]:
        whole.unlink()
        raise BundleError(f"{manifest_path}: the parts do not join to the bundle's checksum; build it again")
    for p in old:
        p.unlink()
    manifest["parts"] = split(whole, folder, manifest["site"], part_bytes)
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest
