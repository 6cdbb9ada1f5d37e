"""A git credential helper (git-credential(1), "CUSTOM HELPERS" in gitcredentials(7)) that answers `get`
with the `username` and `password` files of a mounted Kubernetes Secret of type kubernetes.io/basic-auth.

Run by git, not imported: `python <this file> <secret folder>` is the `credential.<url>.helper` that
infersweep/launcher/git_credentials.py configures. The token goes from the file to git over this process's
stdout (a pipe git reads), never through a URL, an argument or the environment. `store` and `erase` (git
sends them after a success or a failure) are ignored: the Secret is read-only and stays as it is.

Standalone on purpose (nothing of infersweep is imported): git starts it with a minimal environment, from
the checkout folder.
"""

import sys
from pathlib import Path


def _asked(text: str) -> dict[str, str]:
    # git-credential(1) "INPUT/OUTPUT FORMAT": key=value lines (protocol, host with :port, path, ...)
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def main(argv: list[str]) -> int:
    # argv: <secret folder> <host[,host...]> get   (older configs: <secret folder> get)
    if len(argv) not in (2, 3) or argv[-1] != "get":
        return 0  # store / erase / an unknown operation: "ignore the request" (git-credential(1))
    folder = Path(argv[0])
    hosts = {h for h in (argv[1].split(",") if len(argv) == 3 else []) if h}
    asked = _asked(sys.stdin.read())
    # The config scopes the helper to one URL; it still answers only an https request for a listed host
    # (params/cluster.yaml trust.git_credential_hosts), whatever git asks: nothing for http or another host.
    host = asked.get("host", "").lower()
    if asked.get("protocol") == "http" and host.split(":")[0] in ("127.0.0.1", "localhost"):
        host = "http://" + host  # this machine's loopback only, listed as such (git_credentials.credential_host)
    elif asked.get("protocol") != "https":
        return 0
    if host not in hosts:
        return 0
    out = []
    for key in ("username", "password"):
        f = folder / key
        if f.is_file():
            # kubectl --from-file keeps a trailing newline; a newline inside a value would end the attribute
            # (git-credential(1): "the value may contain any bytes except NUL and newline")
            value = f.read_text().strip("\r\n")
            if value and "\n" not in value and "\0" not in value:
                out.append(f"{key}={value}\n")
    sys.stdout.write("".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
