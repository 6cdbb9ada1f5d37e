"""What a GPU host without internet lacks: a dependency walk against that host's own package list.

pip cannot resolve for another machine's installed set (``pip install --dry-run --target`` ignores what the
host has and then fails on the host's own pins, e.g. torch 2.11.0's ``nvidia-nccl-cu13==2.28.9``), so this
walks Requires-Dist itself: a requirement the host already satisfies (name and version from its
``pip freeze``) is dropped, anything else is fetched as a wheel for the host's Python and platform with
``pip download --no-deps`` and its own requirements are walked in turn. Markers are evaluated for the host
(CPython 3.12 on Linux x86-64), extras only where a requirement names them.

Packages the host must keep its own copy of (torch and the CUDA wheels built against it) are never fetched
again: a requirement on one the host has, that the host's version does not meet, is an error naming the
package, since a second torch or CUDA runtime on the path would shadow the host's build. A CUDA package the
host lacks altogether (e.g. ``nvidia-cudnn-frontend``) is fetched like any other.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from infersweep.errors import UserError

# The host's interpreter and platform (the GPU machine: CPython 3.12.3, glibc 2.39, x86-64).
HOST_MARKERS = {
    **default_environment(),
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
}
# pip matches manylinux_2_N exactly: list every N a wheel we need is tagged with (glibc 2.39 takes them all).
PLATFORMS = ["manylinux_2_%d_x86_64" % n for n in (39, 35, 34, 31, 28, 27, 24, 17)] + [
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
    "linux_x86_64",
]
# Built against the host's CUDA torch: the host's copy is the only one that may load.
HOST_ONLY = re.compile(r"^(torch|torchvision|torchaudio|triton|nvidia-.*|cuda-.*)$")


class BundleError(UserError):
    """A requirement the bundle cannot meet; the message names the package and the fix."""


def read_freeze(path: Path) -> dict[str, Version]:
    """``pip freeze`` lines (``name==version``) as canonical name -> version."""
    out: dict[str, Version] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "==" not in line:
            continue
        name, version = line.split("==", 1)
        out[canonicalize_name(name)] = Version(version.split("+")[0])
    return out


def wheel_requirements(wheel: Path) -> list[str]:
    """The Requires-Dist lines of a wheel's METADATA."""
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(meta).decode()
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]


def applies(req: Requirement, extras: set[str]) -> bool:
    if req.marker is None:
        return True
    if not extras:
        return req.marker.evaluate({**HOST_MARKERS, "extra": ""})
    return any(req.marker.evaluate({**HOST_MARKERS, "extra": e}) for e in extras)


@dataclass
class Walk:
    host: dict[str, Version]
    wheels_dir: Path
    exclude: dict[str, str] = field(default_factory=dict)  # canonical name -> why it is left out
    # canonical name -> (specifier, why): replaces every requirement on it (two pins that cannot both hold).
    overrides: dict[str, tuple[str, str]] = field(default_factory=dict)
    pip: list[str] = field(default_factory=lambda: [sys.executable, "-m", "pip"])
    specs: dict[str, SpecifierSet] = field(default_factory=dict)
    extras: dict[str, set[str]] = field(default_factory=dict)
    fetched: dict[str, Path] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # name -> why (host has it / excluded)
    required_by: dict[str, list[str]] = field(default_factory=dict)  # name -> "parent: line" (for errors)

    def add(self, line: str, parent_extras: set[str] | None = None, parent: str = "(root)") -> str | None:
        """Record one requirement; returns the name when it (still) needs fetching."""
        req = Requirement(line)
        if not applies(req, parent_extras or set()):
            return None
        name = canonicalize_name(req.name)
        self.required_by.setdefault(name, []).append(f"{parent}: {line}")
        if name in self.exclude:
            self.skipped[name] = self.exclude[name]
            return None
        if name in self.overrides:
            spec = SpecifierSet(self.overrides[name][0])
        else:
            spec = self.specs.get(name, SpecifierSet()) & req.specifier
        self.specs[name] = spec
        new_extras = set(req.extras) - self.extras.get(name, set())
        self.extras.setdefault(name, set()).update(req.extras)
        have = self.host.get(name)
        if have is not None and spec.contains(have, prereleases=True):
            # The host's copy is used as it is (its extras' own requirements are not walked: the host's
            # metadata is not here; a missing one shows up as an ImportError in the host smoke check).
            self.skipped[name] = f"host has {have}"
            return None
        if have is not None and HOST_ONLY.match(name):
            raise BundleError(
                f"{name}: the bundle needs {name}{spec} but the host has {have or 'none'}; {name} is built against "
                "the host's CUDA and is never bundled: pin the requiring package to a release built for the host "
                f"(required by {'; '.join(self.required_by[name])})"
            )
        got = self.fetched.get(name)
        if got is not None and spec.contains(parse_wheel_filename(got.name)[1], prereleases=True) and not new_extras:
            return None
        return name

    def fetch(self, name: str) -> Path:
        spec = str(self.specs[name])
        target = f"{name}{spec}"
        base = [*self.pip, "download", "-q", "--no-deps", "-d", str(self.wheels_dir)]
        binary = [
            "--only-binary=:all:",
            "--python-version",
            "3.12",
            "--implementation",
            "cp",
            "--abi",
            "cp312",
            "--abi",
            "abi3",
            "--abi",
            "none",
        ]
        for p in PLATFORMS:
            binary += ["--platform", p]
        # Each fetch gets its own folder: parallel downloads must not see each other's files.
        scratch = self.wheels_dir / f".fetch-{name}"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        base[base.index("-d") + 1] = str(scratch)
        proc = subprocess.run([*base, *binary, target], capture_output=True, text=True)
        if proc.returncode != 0:
            # A pure-Python project published as an sdist only: build its wheel here (it runs anywhere).
            proc = subprocess.run(
                [*self.pip, "wheel", "-q", "--no-deps", "-w", str(scratch), target], capture_output=True, text=True
            )
            if proc.returncode != 0:
                tail = proc.stderr.strip().splitlines()[-1:] or ["?"]
                raise BundleError(
                    f"{target}: no wheel for CPython 3.12 x86-64 ({tail[0]}; required by "
                    f"{'; '.join(self.required_by.get(name, []))})"
                )
        for got in sorted(scratch.glob("*.whl")):
            n, v, _, _ = parse_wheel_filename(got.name)
            if canonicalize_name(n) == name and self.specs[name].contains(v, prereleases=True):
                old = self.fetched.get(name)
                if old is not None and old.name != got.name:
                    old.unlink(missing_ok=True)  # a later, stricter requirement replaced it: keep one version
                whl = self.wheels_dir / got.name
                got.replace(whl)
                shutil.rmtree(scratch, ignore_errors=True)
                self.fetched[name] = whl
                return whl
        raise BundleError(f"{target}: pip reported success but left no matching wheel in {self.wheels_dir}")

    def run(self, roots: list[str], jobs: int = 6) -> dict[str, Path]:
        self.wheels_dir.mkdir(parents=True, exist_ok=True)
        todo = {n for n in (self.add(r) for r in roots) if n}
        with ThreadPoolExecutor(jobs) as pool:
            while todo:
                names = sorted(todo)
                todo = set()
                for name, whl in zip(names, pool.map(self.fetch, names), strict=True):
                    for line in wheel_requirements(whl):
                        nxt = self.add(line, self.extras.get(name, set()), parent=whl.name)
                        if nxt:
                            todo.add(nxt)
        return self.fetched
