"""Git credentials of the launcher's render step: the Secret named by the cluster setting
`git_credentials_secret`, mounted read-only (workflows/launcher.py), turned into what `git fetch` needs, and
the one line the step prints when the server says no.

The Secret's keys are those of Kubernetes' typed Secrets (kubernetes.io/docs/concepts/configuration/secret/
"Secret types"; pkg/apis/core/validation/validation.go ValidateSecret checks them, other keys may be added):
  * kubernetes.io/basic-auth: `username` and `password` (a token) for https:// repositories. They reach git
    through a credential helper (gitcredentials(7) "CUSTOM HELPERS", protocol in git-credential(1)):
    infersweep/launcher/git_credential_helper.py reads the two files and writes them to git's pipe. The
    token is never in the URL, an argument, the environment or the step's output. A credential helper and
    not GIT_ASKPASS (git(1) ENVIRONMENT): an askpass program is asked by prompt text, for whatever host
    the prompt names, while a helper is configured for one URL (`credential.<url>.helper`) and git asks it
    for nothing else (a redirect to another host gets no token).
  * kubernetes.io/ssh-auth: `ssh-privatekey`, plus `known_hosts` (ssh-keyscan's lines for the Git host),
    for ssh:// and git@host:path repositories, through GIT_SSH_COMMAND (git(1) ENVIRONMENT). Unknown hosts
    are refused (StrictHostKeyChecking=yes, ssh_config(5)): the Secret pins the host key.

One Secret may hold both pairs (type Opaque): the repository URL picks the pair.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

SETTING = "git_credentials_secret"
HTTPS_KEYS = ("username", "password")
SSH_KEYS = ("ssh-privatekey", "known_hosts")
HELPER = Path(__file__).with_name("git_credential_helper.py")
NEEDS = f"keys {' and '.join(HTTPS_KEYS)} (a token) for https://, or {' and '.join(SSH_KEYS)} for ssh; see docs/ui.md"


@dataclass(frozen=True)
class GitCredentials:
    secret: str  # the Secret's name, for messages
    folder: Path  # where the render pod mounts it
    # https hosts ([host[:port]]) the username and token are given to: params/cluster.yaml
    # trust.git_credential_hosts. None listed: the token goes nowhere (a URL the UI user types is not trusted).
    hosts: tuple[str, ...] = ()


LOOPBACK = ("127.0.0.1", "localhost")


def credential_host(repo: str) -> str | None:
    """The key the listed hosts are matched with: host[:port] of an https:// URL, lowercased; None for any
    other scheme (http:// would send the token in clear, to whoever answers), except a server on this
    machine's loopback, listed as http://127.0.0.1:PORT (local mode and the tests: nothing leaves the host)."""
    parts = urlsplit(repo)
    if not parts.hostname:
        return None
    host = parts.hostname.lower() + (f":{parts.port}" if parts.port else "")
    if parts.scheme.lower() == "https":
        return host
    if parts.scheme.lower() == "http" and parts.hostname in LOOPBACK:
        return f"http://{host}"
    return None


def transport(repo: str) -> str:
    """'https' (http too), 'ssh' (ssh:// and scp-like user@host:path) or 'file'."""
    scheme = repo.split("://", 1)[0].lower() if "://" in repo else "ssh"
    return {"http": "https", "https": "https", "ssh": "ssh"}.get(scheme, "file")


def _host(repo: str) -> str:
    if "://" in repo:
        return urlsplit(repo).hostname or ""
    return repo.split("@", 1)[-1].split(":", 1)[0]  # git@host:org/repo.git


def _present(creds: GitCredentials | None, keys: tuple[str, ...]) -> list[str]:
    return [k for k in keys if creds is not None and (creds.folder / k).is_file()]


def auth_env(repo: str, creds: GitCredentials | None, work: Path) -> dict[str, str]:
    """The environment that makes `git fetch` of `repo` use the mounted Secret (and refuse unknown SSH
    hosts, with or without one). `work`: a private scratch folder (the copied SSH key goes there)."""
    kind = transport(repo)
    if kind == "https":
        if len(_present(creds, HTTPS_KEYS)) < len(HTTPS_KEYS):
            return {}
        host = credential_host(repo)
        if host is None or host not in creds.hosts:
            return {}  # http://, or a host the cluster settings do not list: fetched without credentials
        # gitcredentials(7) "CREDENTIAL CONTEXTS": credential.<url>.helper applies to that scheme, host and
        # port only. The first entry, an empty helper, "resets the helper list to empty" (gitcredentials(7)
        # "credential.helper"): no helper of a system gitconfig gets asked or told. GIT_CONFIG_COUNT/KEY/VALUE
        # (git-config(1) ENVIRONMENT): command-line scope, without putting anything on git's command line.
        helper = "!" + shlex.join([sys.executable, str(HELPER), str(creds.folder), ",".join(creds.hosts)])
        return {
            "GIT_CONFIG_COUNT": "2",
            "GIT_CONFIG_KEY_0": "credential.helper",
            "GIT_CONFIG_VALUE_0": "",
            "GIT_CONFIG_KEY_1": f"credential.{host if host.startswith('http://') else 'https://' + host}.helper",
            "GIT_CONFIG_VALUE_1": helper,
        }
    if kind != "ssh":
        return {}
    return {"GIT_SSH_COMMAND": ssh_command(creds, work)}


def ssh_command(creds: GitCredentials | None, work: Path) -> str:
    """ssh with the Secret's key only, its known_hosts only, and no prompt (BatchMode: a passphrase or an
    unknown host fails at once instead of hanging until the step's deadline)."""
    cmd = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"]
    have = _present(creds, SSH_KEYS)
    if "ssh-privatekey" in have:
        cmd += ["-i", str(private_key_copy(creds.folder / "ssh-privatekey", work)), "-o", "IdentitiesOnly=yes"]
    if "known_hosts" in have:
        cmd += ["-o", f"UserKnownHostsFile={creds.folder / 'known_hosts'}"]
    elif creds is not None:
        cmd += ["-o", "UserKnownHostsFile=/dev/null"]  # the pins are the Secret's or none
    return shlex.join(cmd)


def private_key_copy(mounted: Path, work: Path) -> Path:
    """The key as a 0600 file of the step's user. The Secret volume's files belong to root, group fsGroup,
    mode defaultMode | 0440 (kubelet pkg/volume/volume_linux.go SetVolumeOwnership, read-only volumes), and
    ssh refuses a key file of its user that others can read (openssh authfile.c sshkey_perm_ok,
    "UNPROTECTED PRIVATE KEY FILE"); a copy in the pod's scratch is the step's own, whatever the mode was.
    OpenSSH also wants the key's last line to end with a newline, which `kubectl --from-literal` drops."""
    work.mkdir(parents=True, exist_ok=True, mode=0o700)
    dest = work / "ssh-privatekey"
    data = mounted.read_bytes()
    if not data.endswith(b"\n"):
        data += b"\n"
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(dest, 0o600)
    return dest


# What git and ssh print when the server says no (nothing of it is echoed: a fixed reason is named).
_REASONS = (
    (re.compile(r"Host key verification failed|host key is known|HOST IDENTIFICATION HAS CHANGED"), "host key"),
    (re.compile(r"Permission denied \(publickey"), "ssh: Permission denied (publickey)"),
    (re.compile(r"returned error: 403|HTTP 403"), "HTTP 403"),
    (re.compile(r"returned error: 401|Authentication failed|could not read (Username|Password)"), "HTTP 401"),
)


def denial(stderr: str) -> str | None:
    """The reason when git's stderr says the fetch was refused for want of credentials, else None."""
    for rx, reason in _REASONS:
        if rx.search(stderr):
            return reason
    return None


def denied_message(repo: str, creds: GitCredentials | None, reason: str) -> str:
    """One line: what was refused, the cluster setting and the keys its Secret needs."""
    kind = transport(repo)
    keys = HTTPS_KEYS if kind == "https" else SSH_KEYS
    if reason == "host key":
        host = _host(repo)
        where = (
            f"the key known_hosts of the Secret {creds.secret} (cluster setting {SETTING})"
            if creds
            else f"the key known_hosts of a Secret named by the cluster setting {SETTING}, with ssh-privatekey"
        )
        return (
            f"git-repo {repo}: refused, the SSH host key of {host} is not known; add the host "
            f"(`ssh-keyscan {host}`) to {where}; see docs/ui.md"
        )
    head = f"git-repo {repo}: access denied ({reason})"
    if creds is None:
        return f"{head}; a private repository needs the cluster setting {SETTING} naming a Secret with {NEEDS}"
    missing = [k for k in keys if k not in _present(creds, keys)]
    # A missing Secret with `optional: true` is an empty volume (only the kubelet's ..data entries).
    visible = [p for p in (creds.folder.iterdir() if creds.folder.is_dir() else ()) if not p.name.startswith("..")]
    if len(missing) == len(keys) and not visible:
        return (
            f"{head}; the Secret {creds.secret} (cluster setting {SETTING}) is missing from the namespace or "
            f"empty: create it with {NEEDS}"
        )
    if missing:
        return (
            f"{head}; the Secret {creds.secret} (cluster setting {SETTING}) has no key {', '.join(missing)}; "
            f"it needs {NEEDS}"
        )
    return (
        f"{head} with the Secret {creds.secret} (cluster setting {SETTING}, keys {', '.join(keys)}); check that "
        "it can read the repository"
    )
