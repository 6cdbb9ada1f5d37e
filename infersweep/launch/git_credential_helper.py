"""A git credential helper (git-credential(1), "CUSTOM HELPERS" in gitcredentials(7)) that answers `get`
with the `username` and `password` files of a mounted Kubernetes Secret of type kubernetes.io/basic-auth.

Run by git, not imported: `python <this file> <secret folder>` is the `credential.<url>.helper` that
infersweep/launch/git_credentials.py configures. The token goes from the file to git over this process's
stdout (a pipe git reads), never through a URL, an argument or the environment. `store` and `erase` (git
sends them after a success or a failure) are ignored: the Secret is read-only and stays as it is.

Standalone on purpose (nothing of infersweep is imported): git starts it with a minimal environment, from
the checkout folder.
"""

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] != "get":
        return 0  # store / erase / an unknown operation: "ignore the request" (git-credential(1))
    folder = Path(argv[0])
    sys.stdin.read()  # git's description of the URL (protocol, host, path); the config scopes us to one host
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
