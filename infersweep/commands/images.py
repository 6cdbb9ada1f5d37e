"""`infersweep images build --registry R [--tag T] [--dry-run]` and `infersweep images pin KEY=REF@sha256:...`.

build: `docker build` + `docker push` of the step and AIPerf images (images/*.Dockerfile), then the pushed
digests written into params/cluster.yaml. --dry-run prints the commands (for a CI job, or a machine with
docker) and touches nothing; pin records digests pushed elsewhere. See infersweep/images.py.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys

from infersweep.cli_util import key_values
from infersweep.recipe import RecipeError


def _build(a: argparse.Namespace) -> int:
    from infersweep import images

    if not a.registry:
        raise RecipeError("images build: give --registry, e.g. --registry ghcr.io/my-org")
    plan = images.commands(a.registry, a.tag, push=not a.no_push)

    def warn_unpinned_bases() -> None:  # only once it builds (or prints the build): a failure stays one line
        for line in images.unpinned_bases(a.tag):
            print(f"images build: warning: {line}", file=sys.stderr)

    if a.dry_run:
        warn_unpinned_bases()
        for _img, cmds in plan:
            for c in cmds:
                print(shlex.join(c))
        refs = " ".join(f"{img.key}={img.ref(images.check_registry(a.registry))}@sha256:..." for img, _ in plan)
        print(f"# then record the pushed digests: infersweep images pin {refs}")
        return 0
    why = images.docker_problem()
    if why:
        raise RecipeError(
            f"images build: {why}; run `infersweep images build --registry {a.registry} --dry-run` "
            "for the commands, run them where docker works, then `infersweep images pin "
            "steps=REF@sha256:... aiperf=REF@sha256:...`"
        )
    warn_unpinned_bases()
    pinned = {}
    for img, cmds in plan:
        for c in cmds:
            print("+ " + shlex.join(c), flush=True)
            res = subprocess.run(c, cwd=images.REPO_ROOT)
            if res.returncode != 0:
                raise RecipeError(f"images build: `{shlex.join(c)}` exited {res.returncode}; nothing was recorded")
        if not a.no_push:
            pinned[img.key] = images.pushed_digest(img.ref(images.check_registry(a.registry)))
    if pinned:
        path = images.pin(pinned)
        for k, v in pinned.items():
            print(f"images.{k}: {v}   (written to {path})")
    return 0


def _pin(a: argparse.Namespace) -> int:
    from infersweep import images
    from infersweep.cluster_settings import load_cluster_settings

    refs = key_values(a.refs, "images pin", "KEY=REF@sha256:..., KEY steps or aiperf")
    path = images.pin(refs)
    from infersweep.cluster_settings import _load

    _load.cache_clear()
    load_cluster_settings()  # the file still loads (one line per mistake if not)
    for k, v in refs.items():
        print(f"images.{k}: {v}   (written to {path})")
    return 0


def run(a: argparse.Namespace) -> int:
    return _build(a) if a.action == "build" else _pin(a)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("images", help="build and push the step and AIPerf images; record their digests")
    p.add_argument("action", choices=["build", "pin"])
    p.add_argument("refs", nargs="*", metavar="KEY=REF@sha256:...", help="pin: the pushed references")
    p.add_argument("--registry", help="build: where to push, e.g. ghcr.io/my-org")
    p.add_argument(
        "--tag",
        help="build: tag of both images (default: the package version for steps, the AIPerf version for aiperf)",
    )
    p.add_argument("--dry-run", action="store_true", help="build: print the docker commands, run nothing")
    p.add_argument("--no-push", action="store_true", help="build: build only (nothing recorded)")
    p.set_defaults(fn=run)
