"""A recipe from a private Git repository (infersweep/launcher/git_credentials.py, git_source.py): the UI
launcher's render step (steps/launcher.py) fetches with the Secret of the cluster setting
`git_credentials_secret`, mounted as files, and refuses with one line naming the setting and its keys when
the server says no; the token is never printed. Real git against a real smart-HTTP server
(tests/support/git_http_server.py: `git http-backend` behind basic auth on 127.0.0.1), no network.

No sshd on this machine: the SSH path is checked as far as the ssh client goes (its effective options with
`ssh -G`, the key copy with `ssh-keygen -y`), not against a server.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.commands.install import install_set
from infersweep.launcher.git_credentials import (
    GitCredentials,
    auth_env,
    denial,
    denied_message,
    ssh_command,
)
from infersweep.launcher.git_source import check_git_source
from infersweep.paths import params_dir
from infersweep.recipe import RecipeError
from infersweep.schemas import validate_document
from infersweep.step_declarations import LAUNCHER_STEP
from steps import launcher as step
from steps.runner import run
from tests.support.git_http_server import GitHttpServer
from workflows.launcher import FROM_GIT, GIT_CREDENTIALS, RECIPE_LAUNCHER, settings_text

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git client")

USER = "ci-bot"
TOKEN = "glpat-PLANTEDgitToken0123456789"
SECRET = "team-git"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def private_repo(tmp_path):
    """A bare repository served behind basic auth, with the demo recipe at recipes/mine.yaml: (server, commit)."""
    work = tmp_path / "work"
    (work / "recipes").mkdir(parents=True)
    shutil.copy(params_dir() / "recipes" / "demo" / "demo-prefix-rr.yaml", work / "recipes" / "mine.yaml")
    _git(work, "init", "-q")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "a recipe")
    commit = _git(work, "rev-parse", "HEAD")
    (tmp_path / "srv").mkdir()
    _git(tmp_path, "clone", "-q", "--bare", str(work), str(tmp_path / "srv" / "recipes.git"))
    with GitHttpServer(tmp_path / "srv", USER, TOKEN) as server:
        yield server, commit


def _secret(folder: Path, **keys: str) -> Path:
    """The Secret's volume as the kubelet writes it: one file per key, group-readable (defaultMode 0440)."""
    folder.mkdir(parents=True)
    for k, v in keys.items():
        (folder / k).write_text(v)
        (folder / k).chmod(0o440)
    return folder


def _listing(*hosts: str):
    """The settings with the Secret and the hosts its token may go to (trust.git_credential_hosts)."""
    base = load_cluster_settings()
    trust = base.trust.model_dump() | {"git_credential_hosts": list(hosts)}
    return base.changed(git_credentials_secret=SECRET, trust=trust)


def _argv(tmp_path, repo, commit, settings, creds: Path | None):
    argv = [
        "--kind",
        "recipe",
        f"--name={FROM_GIT}",
        f"--git-repo={repo}",
        f"--git-commit={commit}",
        "--git-path=recipes/mine.yaml",
        "--namespace",
        "bench",
        "--launcher",
        "infersweep-launch-x1y2z",
        "--settings",
        settings_text(settings),
        "--out",
        str(tmp_path / "out" / "manifest.json"),
        "--scratch",
        str(tmp_path / "scratch"),
    ]
    return argv + ([f"--git-credentials={creds}"] if creds else [])


def _refusal(tmp_path, capfd, argv) -> str:
    rc = run(lambda: step.main(argv), LAUNCHER_STEP)
    out, err = capfd.readouterr()
    assert rc == 1 and not (tmp_path / "out" / "manifest.json").exists()
    assert TOKEN not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err  # the runner's one line (steps/runner.py), nothing of git's output around it
    return lines[0]


def test_a_private_recipe_renders_with_the_secrets_username_and_token(private_repo, tmp_path, capfd):
    server, commit = private_repo
    settings = _listing(server.url)
    creds = _secret(tmp_path / "secret", username=USER, password=TOKEN + "\n")  # kubectl --from-file's newline
    repo = f"{server.url}/recipes.git"
    assert step.main(_argv(tmp_path, repo, commit, settings, creds)) == 0
    doc = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert doc["kind"] == "Workflow"
    assert doc["metadata"]["annotations"]["infersweep.io/source"] == f"{repo}@{commit}:recipes/mine.yaml"
    out, err = capfd.readouterr()
    assert f"(from {repo}@{commit}:recipes/mine.yaml)" in out
    assert TOKEN not in out + err + json.dumps(doc)
    assert any(a.startswith("Basic ") for a in server.authorizations)  # the helper's answer was sent


def test_a_wrong_token_is_one_line_naming_the_secret_and_its_keys(private_repo, tmp_path, capfd):
    server, commit = private_repo
    settings = _listing(server.url)
    wrong = TOKEN[:-4] + "XXXX"
    creds = _secret(tmp_path / "secret", username=USER, password=wrong)
    line = _refusal(tmp_path, capfd, _argv(tmp_path, f"{server.url}/recipes.git", commit, settings, creds))
    assert line.startswith(f"launcher: git-repo {server.url}/recipes.git: access denied (HTTP 401) with the Secret")
    assert f"{SECRET} (cluster setting git_credentials_secret, keys username, password)" in line
    assert wrong not in line


def test_no_credentials_says_which_setting_and_keys_a_private_repository_needs(private_repo, tmp_path, capfd):
    server, commit = private_repo
    line = _refusal(
        tmp_path, capfd, _argv(tmp_path, f"{server.url}/recipes.git", commit, load_cluster_settings(), None)
    )
    assert "access denied (HTTP 401); a private repository needs the cluster setting git_credentials_secret" in line
    assert "keys username and password (a token) for https://, or ssh-privatekey and known_hosts for ssh" in line


def test_a_secret_not_created_yet_is_named_not_a_stuck_pod(private_repo, tmp_path, capfd):
    """optional: true mounts a missing Secret as an empty folder: the fetch says so."""
    server, commit = private_repo
    settings = _listing(server.url)
    empty = _secret(tmp_path / "secret")
    line = _refusal(tmp_path, capfd, _argv(tmp_path, f"{server.url}/recipes.git", commit, settings, empty))
    assert (
        f"the Secret {SECRET} (cluster setting git_credentials_secret) is missing from the namespace or empty" in line
    )


def test_a_token_in_the_url_is_refused_before_any_fetch():
    with pytest.raises(RecipeError, match="git-repo: has a password or token in the URL") as e:
        check_git_source(f"https://{USER}:{TOKEN}@git.example.com/team/recipes.git", "a" * 40, "r.yaml")
    assert TOKEN not in str(e.value)
    assert check_git_source("ssh://git@git.example.com:22/team/recipes.git", "a" * 40, "r.yaml")


def test_the_helper_is_scoped_to_the_repositorys_host_and_nothing_secret_is_in_the_environment(tmp_path):
    creds = GitCredentials(
        SECRET, _secret(tmp_path / "secret", username=USER, password=TOKEN), ("git.example.com:8443",)
    )
    env = auth_env("https://git.example.com:8443/team/recipes.git", creds, tmp_path / "work")
    assert env["GIT_CONFIG_KEY_0"] == "credential.helper" and env["GIT_CONFIG_VALUE_0"] == ""
    assert env["GIT_CONFIG_KEY_1"] == "credential.https://git.example.com:8443.helper"
    assert TOKEN not in json.dumps(env) and USER not in json.dumps(env)
    assert auth_env("https://git.example.com/r.git", None, tmp_path / "w") == {}


# --------------------------------------------------------------------------------------------- SSH


def test_the_ssh_command_uses_only_the_secrets_key_and_known_hosts(tmp_path):
    if shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        pytest.skip("needs the OpenSSH client")
    gen = tmp_path / "gen"
    gen.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(gen / "id")], check=True)
    key = (gen / "id").read_text().rstrip("\n")  # `kubectl create secret --from-literal` drops the newline
    kh = "git.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
    folder = tmp_path / "secret"
    folder.mkdir()
    (folder / "ssh-privatekey").write_text(key)
    (folder / "ssh-privatekey").chmod(0o644)  # readable by others: ssh refuses its user's file like this
    (folder / "known_hosts").write_text(kh)
    refused = subprocess.run(["ssh-keygen", "-y", "-f", str(folder / "ssh-privatekey")], capture_output=True, text=True)
    assert refused.returncode != 0
    creds = GitCredentials(SECRET, folder)
    cmd = auth_env("git@git.example.com:team/recipes.git", creds, tmp_path / "work")["GIT_SSH_COMMAND"]
    copy = tmp_path / "work" / "ssh-privatekey"
    assert (copy.stat().st_mode & 0o777) == 0o600
    assert subprocess.run(["ssh-keygen", "-y", "-f", str(copy)], capture_output=True).returncode == 0
    # What ssh makes of the options (ssh -G prints the effective configuration and connects nowhere).
    effective = subprocess.run(
        [*cmd.split(), "-G", "git.example.com"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert f"identityfile {copy}" in effective
    assert "identitiesonly yes" in effective
    assert "stricthostkeychecking true" in effective
    assert "batchmode yes" in effective
    assert any(ln.startswith("userknownhostsfile ") and str(folder / "known_hosts") in ln for ln in effective)
    # Without a Secret: still no prompt and no unknown host accepted.
    assert ssh_command(None, tmp_path / "w2") == "ssh -o BatchMode=yes -o StrictHostKeyChecking=yes"


@pytest.mark.parametrize(
    "stderr, says",
    [
        (
            "git@git.example.com: Permission denied (publickey).\r\nfatal: Could not read from remote repository.",
            "access denied (ssh: Permission denied (publickey)) with the Secret team-git",
        ),
        (
            "No ED25519 host key is known for git.example.com and you have requested strict checking.\r\n"
            "Host key verification failed.\r\nfatal: Could not read from remote repository.",
            "the SSH host key of git.example.com is not known; add the host (`ssh-keyscan git.example.com`) to the "
            "key known_hosts of the Secret team-git",
        ),
    ],
)
def test_ssh_refusals_name_the_secret_and_the_fix(tmp_path, stderr, says):
    creds = GitCredentials(SECRET, _secret(tmp_path / "secret", **{"ssh-privatekey": "k", "known_hosts": "h"}))
    line = denied_message("git@git.example.com:team/recipes.git", creds, denial(stderr))
    assert says in line and "\n" not in line


# ----------------------------------------------------------------------------------- the template


def _render_template(settings) -> dict:
    argo, _ = install_set(settings)
    wt = next(d for d in argo if d["kind"] == "WorkflowTemplate" and d["metadata"]["name"] == RECIPE_LAUNCHER)
    validate_document(wt)  # the strict schemas the install set is held to (tests/cli/test_install_gitops.py)
    return wt


def test_the_launcher_mounts_the_secret_only_when_the_setting_names_one():
    settings = load_cluster_settings()
    assert settings.git_credentials_secret == ""
    plain = _render_template(settings)
    render = next(t for t in plain["spec"]["templates"] if t["name"] == "render")
    assert [v["name"] for v in plain["spec"]["volumes"]] == ["scratch"]
    assert not any(a.startswith("--git-credentials") for a in render["container"]["args"])

    wt = _render_template(settings.changed(git_credentials_secret=SECRET))
    vol = next(v for v in wt["spec"]["volumes"] if v["name"] == "git-credentials")
    assert vol["secret"] == {"secretName": SECRET, "optional": True, "defaultMode": 0o440}
    render = next(t for t in wt["spec"]["templates"] if t["name"] == "render")
    assert {"name": "git-credentials", "mountPath": GIT_CREDENTIALS, "readOnly": True} in render["container"][
        "volumeMounts"
    ]
    assert f"--git-credentials={GIT_CREDENTIALS}" in render["container"]["args"]
    # only the render pod: the create-run pod has no business with the token
    assert all("volumeMounts" not in t.get("container", {}) or t["name"] == "render" for t in wt["spec"]["templates"])


def test_a_secret_without_the_password_key_says_which_key_is_missing(private_repo, tmp_path, capfd):
    server, commit = private_repo
    settings = _listing(server.url)
    creds = _secret(tmp_path / "secret", username=USER)
    line = _refusal(tmp_path, capfd, _argv(tmp_path, f"{server.url}/recipes.git", commit, settings, creds))
    assert f"the Secret {SECRET} (cluster setting git_credentials_secret) has no key password; it needs keys" in line


# ------------------------------------------------------------------ issue 42 High 2: only listed https hosts
def _helper(folder: Path, hosts: str, asked: str) -> str:
    from infersweep.launcher.git_credentials import HELPER

    return subprocess.run(
        ["python3", str(HELPER), str(folder), hosts, "get"], input=asked, capture_output=True, text=True, check=True
    ).stdout


def test_the_helper_answers_only_an_https_request_for_a_listed_host(tmp_path):
    folder = _secret(tmp_path / "secret", username=USER, password=TOKEN)
    assert TOKEN in _helper(folder, "git.example.com", "protocol=https\nhost=git.example.com\n")
    assert _helper(folder, "git.example.com", "protocol=http\nhost=git.example.com\n") == ""
    assert _helper(folder, "git.example.com", "protocol=https\nhost=evil.example.net\n") == ""
    assert _helper(folder, "", "protocol=https\nhost=git.example.com\n") == ""


def test_no_helper_for_an_unlisted_or_http_host(tmp_path):
    creds = GitCredentials(SECRET, _secret(tmp_path / "secret", username=USER, password=TOKEN), ("github.com",))
    assert auth_env("https://github.com/org/r.git", creds, tmp_path / "w")
    assert auth_env("http://github.com/org/r.git", creds, tmp_path / "w") == {}
    assert auth_env("https://attacker.example/org/r.git", creds, tmp_path / "w") == {}
    assert auth_env("https://github.com/org/r.git", GitCredentials(SECRET, creds.folder), tmp_path / "w") == {}


def test_a_listener_on_an_unlisted_host_receives_no_token(private_repo, tmp_path, capfd):
    """The reviewer's reproduction: a launch from a URL the UI user typed handed the Secret's token to that
    server (Authorization: Basic). Unlisted, the server sees no Authorization at all."""
    server, commit = private_repo
    settings = _listing("git.example.com")  # the token is for another host
    creds = _secret(tmp_path / "secret", username=USER, password=TOKEN)
    _refusal(tmp_path, capfd, _argv(tmp_path, f"{server.url}/recipes.git", commit, settings, creds))
    assert server.authorizations == [] or not any(a.startswith("Basic ") for a in server.authorizations)


def test_a_user_name_in_an_https_url_is_refused():
    with pytest.raises(RecipeError, match="user name in the URL") as e:
        check_git_source("https://ghp_PLANTED0123@github.com/org/r.git", "a" * 40, "r.yaml")
    assert "ghp_PLANTED0123" not in str(e.value)
