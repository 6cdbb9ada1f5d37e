"""A recipe or experiment file from a Git repository at one pinned commit: checked before anything is fetched,
then fetched into a scratch folder with the `git` client and verified to be exactly that commit.

A branch or tag would make a Resubmit (or a Retry of the launcher) render whatever the branch points to
then, so only a full 40-hex commit id is taken: the launcher's parameters then name one file content for
good, as a catalog recipe of the step image does.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from infersweep.params_files import RecipeError

COMMIT_RE = re.compile(r"^[0-9a-fA-F]{40}$")
# https, ssh and file transports, and scp-like `git@host:org/repo.git`; never `ext::` or other remote helpers
# (git-remote-ext runs a command: gitremote-helpers(7)).
REPO_RE = re.compile(r"^(https?://[^\s]+|ssh://[^\s]+|file:///[^\s]*|[\w.-]+@[\w.-]+:[^\s]+)$")
GIT_TIMEOUT_S = 300


@dataclass(frozen=True)
class GitSource:
    repo: str
    commit: str
    path: str  # the file inside the repository, e.g. params/recipes/demo/demo-prefix-rr.yaml

    def describe(self) -> str:
        return f"{self.repo}@{self.commit}:{self.path}"


def check_git_source(repo: str, commit: str, path: str) -> GitSource:
    """The three launcher parameters, or one RecipeError per call naming each bad one and its fix."""
    repo, commit, path = repo.strip(), commit.strip(), path.strip()
    errors = []
    if not repo:
        errors.append("git-repo: empty; give the repository URL (https://github.com/org/repo.git)")
    elif not REPO_RE.match(repo):
        errors.append(
            f"git-repo {repo!r}: not a Git URL; give https://..., ssh://..., git@host:org/repo.git or file:///path"
        )
    if not COMMIT_RE.match(commit):
        errors.append(
            f"git-commit {commit!r}: must be a full commit id (40 hex characters, `git rev-parse HEAD`); "
            "a branch, tag or short id would render something else on a Resubmit"
        )
    p = PurePosixPath(path)
    if not path:
        errors.append(
            "git-path: empty; give the recipe file inside the repository (e.g. params/recipes/demo/demo-prefix-rr.yaml)"
        )
    elif p.is_absolute() or ".." in p.parts or p.suffix not in (".yaml", ".yml"):
        errors.append(f"git-path {path!r}: must be a relative path to a .yaml file inside the repository, without '..'")
    if errors:
        raise RecipeError("; ".join(errors))
    return GitSource(repo, commit.lower(), path)


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            env={"HOME": str(cwd), "GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin:/usr/local/bin"},
        )
    except FileNotFoundError:
        raise RecipeError(
            "git: the client is not installed in this image (images/steps.Dockerfile installs it)"
        ) from None
    except subprocess.TimeoutExpired:
        raise RecipeError(
            f"git {args[0]}: no answer within {GIT_TIMEOUT_S} s; check git-repo and the cluster's egress"
        ) from None


def checkout(src: GitSource, dest: Path) -> Path:
    """Fetch exactly `src.commit` into `dest` (a fresh folder) and return the file's path there."""
    dest.mkdir(parents=True, exist_ok=True)
    for args in (["init", "-q"], ["remote", "add", "origin", src.repo]):
        res = _git(args, dest)
        if res.returncode:
            raise RecipeError(f"git {args[0]}: {res.stderr.strip()}")
    # Fetching one commit by id needs the server to allow it (GitHub and GitLab do:
    # uploadpack.allowReachableSHA1InWant); otherwise fetch the branches and tags and find it among them.
    res = _git(["fetch", "-q", "--depth", "1", "origin", src.commit], dest)
    if res.returncode:
        res = _git(["fetch", "-q", "origin", "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"], dest)
        if res.returncode:
            raise RecipeError(f"git-repo {src.repo}: could not fetch: {res.stderr.strip().splitlines()[-1:]}")
    res = _git(["checkout", "-q", "--detach", src.commit], dest)
    if res.returncode:
        raise RecipeError(f"git-commit {src.commit}: not in {src.repo} ({res.stderr.strip()})")
    head = _git(["rev-parse", "HEAD"], dest).stdout.strip()
    if head != src.commit:  # a tag or branch of that name would have been checked out instead
        raise RecipeError(f"git-commit {src.commit}: {src.repo} resolved it to {head}")
    f = dest / src.path
    if not f.is_file():
        raise RecipeError(f"git-path {src.path}: no such file in {src.repo} at {src.commit}")
    return f
