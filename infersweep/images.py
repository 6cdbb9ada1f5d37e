"""The step and AIPerf images: built from images/*.Dockerfile, pushed to the registry the user names, and the
pushed digests written into params/cluster.yaml (`images.steps` / `images.aiperf` as REF:TAG@sha256:...), so
every render afterwards pins exactly what was pushed (a tag can be moved; a digest cannot).

The commands are the Docker CLI's own: `docker build -f FILE -t REF .` (context: the checkout, which the
Dockerfiles COPY from), `docker push REF`, and `docker image inspect --format '{{index .RepoDigests 0}}' REF`,
which after a push holds REPO@sha256:<the manifest digest the registry stored> (docker/cli
cli/command/image/push.go prints the same digest; RepoDigests are recorded by the daemon on push).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from infersweep.cluster_settings import ClusterSettingsError, settings_path
from infersweep.install_version import package_version
from infersweep.paths import REPO_ROOT

_REGISTRY = re.compile(r"[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*")
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def aiperf_version() -> str:
    text = (REPO_ROOT / "images" / "aiperf.requirements.txt").read_text()
    m = re.search(r"^aiperf==([0-9A-Za-z.+-]+)", text, re.M)
    if not m:
        raise ClusterSettingsError("images/aiperf.requirements.txt: no `aiperf==VERSION` line to tag the image with")
    return m.group(1)


@dataclass(frozen=True)
class Image:
    key: str  # the field under `images:` in params/cluster.yaml
    dockerfile: str  # relative to the checkout
    tag: str

    def ref(self, registry: str) -> str:
        return f"{registry.rstrip('/')}/{self.key}:{self.tag}"


def images(tag: str | None = None) -> list[Image]:
    return [
        Image("steps", "images/steps.Dockerfile", tag or package_version()),
        Image("aiperf", "images/aiperf.Dockerfile", tag or aiperf_version()),
    ]


def unpinned_bases(tag: str | None = None) -> list[str]:
    """A line per image whose Dockerfile builds FROM a tag rather than a digest: the tag can be moved to
    another image between two builds, so what `images build` pushes would differ under the same digest pin
    of ours. The digest cannot be checked without a registry, so it is the user's to write there."""
    out = []
    for img in images(tag):
        for line in (REPO_ROOT / img.dockerfile).read_text().splitlines():
            parts = line.split()
            if parts[:1] == ["FROM"] and len(parts) > 1 and not _DIGEST.search(parts[1]):
                out.append(
                    f"{img.dockerfile}: FROM {parts[1]} is a tag, not a digest; pin it as "
                    f"FROM {parts[1]}@sha256:<digest> (`docker buildx imagetools inspect {parts[1]}` prints it; "
                    "docs/security.md)"
                )
    return out


def check_registry(registry: str) -> str:
    if not _REGISTRY.fullmatch(registry or ""):
        raise ClusterSettingsError(
            f"--registry {registry!r}: give a registry and path like ghcr.io/my-org or "
            "registry.example.com:5000/team (no scheme, no tag)"
        )
    return registry.rstrip("/")


def commands(registry: str, tag: str | None = None, push: bool = True) -> list[tuple[Image, list[list[str]]]]:
    """Per image, the docker commands that build (and push) it."""
    registry = check_registry(registry)
    out = []
    for img in images(tag):
        ref = img.ref(registry)
        cmds = [["docker", "build", "-f", img.dockerfile, "-t", ref, "."]]
        if push:
            cmds.append(["docker", "push", ref])
        out.append((img, cmds))
    return out


def docker_problem() -> str | None:
    """Why docker cannot build here (no CLI, no daemon), or None."""
    exe = shutil.which("docker")
    if exe is None:
        return "docker is not installed"
    res = subprocess.run([exe, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["docker info failed"])[-1]
        return f"docker cannot reach its daemon ({last})"
    return None


def pushed_digest(ref: str) -> str:
    """REF@sha256:... of the image just pushed (the tag kept for readers, the digest for the kubelet)."""
    res = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{index .RepoDigests 0}}", ref],
        capture_output=True,
        text=True,
        timeout=60,
    )
    digest = res.stdout.strip()
    m = re.search(r"@sha256:[0-9a-f]{64}$", digest)
    if res.returncode != 0 or not m:
        raise ClusterSettingsError(
            f"{ref}: no pushed digest (`docker image inspect` said {res.stderr.strip() or digest!r}); was it pushed?"
        )
    return f"{ref}{m.group(0)}"


def pin(refs: dict[str, str], path: Path | None = None) -> Path:
    """Write `images.<key>: REF@sha256:...` into params/cluster.yaml, keeping every comment and other line;
    refuse a reference without a digest (what it pins could change under the same tag)."""
    path = path or settings_path()
    for key, ref in refs.items():
        if key not in ("steps", "aiperf"):
            raise ClusterSettingsError(f"images pin {key}=...: the images are `steps` and `aiperf`")
        if not _DIGEST.search(ref):
            raise ClusterSettingsError(
                f"images pin {key}={ref}: give the pushed digest, REF@sha256:<64 hex> "
                "(docker image inspect --format '{{index .RepoDigests 0}}' REF)"
            )
    lines = path.read_text().splitlines(keepends=True)
    in_images, done = False, set()
    for i, line in enumerate(lines):
        if re.match(r"^images:\s*(#.*)?$", line):
            in_images = True
            continue
        if in_images and re.match(r"^\S", line):
            in_images = False
        m = re.match(r"^(\s+)(steps|aiperf):(\s*)\S+(.*)$", line.rstrip("\n")) if in_images else None
        if m and m.group(2) in refs:
            comment = m.group(4) if m.group(4).lstrip().startswith("#") else ""
            lines[i] = f"{m.group(1)}{m.group(2)}: {refs[m.group(2)]}{comment}\n"
            done.add(m.group(2))
    missing = set(refs) - done
    if missing:
        raise ClusterSettingsError(f"{path}: no `images: {sorted(missing)[0]}:` line to write the digest into")
    path.write_text("".join(lines))
    return path
