"""A recipe or experiment file from a Git repository at one pinned commit: checked before anything is fetched,
then fetched into a scratch folder with the `git` client and verified to be exactly that commit.

A branch or tag would make a Resubmit (or a Retry of the launcher) render whatever the branch points to
then, so only a full 40-hex commit id is taken: the launcher's parameters then name one file content for
good, as a catalog recipe of the step image does.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from infersweep.launcher.git_credentials import GitCredentials, auth_env, denial, denied_message
from infersweep.params_files import RecipeError

COMMIT_RE = re.compile(r"^[0-9a-fA-F]{40}$")
# https, ssh and file transports, and scp-like `git@host:org/repo.git`; never `ext::` or other remote helpers
# (git-remote-ext runs a command: gitremote-helpers(7)).
REPO_RE = re.compile(r"^(https?://[^\s]+|ssh://[^\s]+|file:///[^\s]*|[\w.-]+@[\w.-]+:[^\s]+)$")
# scheme://user:password@host: a token in the URL would be in the UI's form, the run's annotation and git's
# messages. It goes into the Secret of the cluster setting git_credentials_secret instead.
PASSWORD_IN_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@:]*:[^/@]*@")
# scp-like `user:token@host:path` (git's scp syntax has no password: connect.c parse_connect_url takes the
# user up to '@', so the token would go to ssh as part of the login name and into the annotation).
PASSWORD_IN_SCP_RE = re.compile(r"^[^/@:]*:[^/@]*@[^/]*:")
GIT_TIMEOUT_S = 300


@dataclass(frozen=True)
class GitSource:
    repo: str
    commit: str
    path: str  # the file inside the repository, e.g. params/recipes/demo/demo-prefix-rr.yaml

    def describe(self) -> str:
        return f"{self.repo}@{self.commit}:{self.path}"


def _without_userinfo(repo: str) -> str:
    """The URL as an error may show it: anything before an '@' (a user name, a token) replaced by '***'."""
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)?[^/]*@", lambda m: (m.group(1) or "") + "***@", repo)


def check_git_source(repo: str, commit: str, path: str) -> GitSource:
    """The three launcher parameters, or one RecipeError per call naming each bad one and its fix."""
    repo, commit, path = repo.strip(), commit.strip(), path.strip()
    errors = []
    if not repo:
        errors.append("git-repo: empty; give the repository URL (https://github.com/org/repo.git)")
    elif PASSWORD_IN_URL_RE.match(repo) or ("://" not in repo and PASSWORD_IN_SCP_RE.match(repo)):
        errors.append(
            "git-repo: has a password or token in the URL, which the UI and the logs would show; give the URL "
            "without it and put username and password into the Secret of the cluster setting "
            "git_credentials_secret (docs/ui.md)"
        )
    elif "://" in repo and "@" in repo.split("://", 1)[1].split("/", 1)[0] and not repo.startswith("ssh://"):
        errors.append(
            "git-repo: has a user name in the URL (a token there would be in the UI's form, the run's "
            "annotation and git's output); give the URL without it and put username and password into the "
            "Secret of the cluster setting git_credentials_secret (docs/ui.md)"
        )
    elif not REPO_RE.match(repo):
        errors.append(
            f"git-repo {_without_userinfo(repo)!r}: not a Git URL; give https://..., ssh://..., git@host:org/repo.git or file:///path"
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


def _git(args: list[str], cwd: Path, auth: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # A fixed environment: no GIT_TRACE/GIT_CURL_VERBOSE of the pod (they would print the Authorization
    # header), no system gitconfig (its credential helpers or URL rewrites), never a prompt.
    env = {
        "HOME": str(cwd),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        **(auth or {}),
    }
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            env=env,
        )
    except FileNotFoundError:
        raise RecipeError(
            "git: the client is not installed in this image (images/steps.Dockerfile installs it)"
        ) from None
    except subprocess.TimeoutExpired:
        raise RecipeError(
            f"git {args[0]}: no answer within {GIT_TIMEOUT_S} s; check git-repo and the cluster's egress"
        ) from None


def refuse_links_out(clone: Path, src: GitSource) -> None:
    """Refuse a checkout with a symbolic link that leads out of it. The recipe, and the models, workloads and
    engine facts of the clone's params/, are read by path: a link to /var/run/secrets/... or the Git Secret's
    folder would be read, and a parse error would echo its content. Every link is checked, not only the
    recipe's (any file of params/ may be read), and only its name is said, never where it points."""
    root = clone.resolve()
    for folder, dirs, files in os.walk(clone):  # does not descend into linked folders (followlinks=False)
        if folder == str(clone):
            dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            link = Path(folder) / name
            if link.is_symlink() and not link.resolve().is_relative_to(root):
                rel = link.relative_to(clone).as_posix()
                raise RecipeError(
                    f"git-repo {src.repo} at {src.commit}: {rel} is a symbolic link to a file outside the "
                    "repository; refused (commit the file itself in its place)"
                )


def checkout(src: GitSource, dest: Path, creds: GitCredentials | None = None, work: Path | None = None) -> Path:
    """Fetch exactly `src.commit` into `dest` (a fresh folder) and return the file's path there. `creds`: the
    mounted Git credentials Secret (infersweep/launcher/git_credentials.py); `work`: a private folder outside
    `dest` for what they need on disk (default: next to `dest`)."""
    dest.mkdir(parents=True, exist_ok=True)
    auth = auth_env(src.repo, creds, work or dest.with_name(dest.name + "-auth"))
    for args in (["init", "-q"], ["remote", "add", "origin", src.repo]):
        res = _git(args, dest)
        if res.returncode:
            raise RecipeError(f"git {args[0]}: {res.stderr.strip()}")

    def fetch(*refspecs: str) -> subprocess.CompletedProcess:
        res = _git(["fetch", "-q", *refspecs], dest, auth)
        if res.returncode and (why := denial(res.stderr)):  # no second try: the same server says the same
            raise RecipeError(denied_message(src.repo, creds, why))
        return res

    # Fetching one commit by id needs the server to allow it (GitHub and GitLab do:
    # uploadpack.allowReachableSHA1InWant); otherwise fetch the branches and tags and find it among them.
    res = fetch("--depth", "1", "origin", src.commit)
    if res.returncode:
        res = fetch("origin", "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*")
        if res.returncode:
            raise RecipeError(f"git-repo {src.repo}: could not fetch: {res.stderr.strip().splitlines()[-1:]}")
    res = _git(["checkout", "-q", "--detach", src.commit], dest)
    if res.returncode:
        raise RecipeError(f"git-commit {src.commit}: not in {src.repo} ({res.stderr.strip()})")
    head = _git(["rev-parse", "HEAD"], dest).stdout.strip()
    if head != src.commit:  # a tag or branch of that name would have been checked out instead
        raise RecipeError(f"git-commit {src.commit}: {src.repo} resolved it to {head}")
    refuse_links_out(dest, src)
    f = dest / src.path
    if not f.is_file():
        raise RecipeError(f"git-path {src.path}: no such file in {src.repo} at {src.commit}")
    return f
