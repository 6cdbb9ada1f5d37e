"""`argoproj/argosay:v2`, the image of Argo's own examples and e2e tests, as a local program: its ENTRYPOINT
(argo-workflows v4.1.2 test/e2e/images/argosay/v2/Dockerfile: ENTRYPOINT ["/argosay"]) is a small shell
program with a handful of commands. A container of that image without `command` runs it with the container's
args (core/v1 Container.command: "The container image's ENTRYPOINT is used if this is not provided"); pod.py
runs this module in its place. The commands and their results, as that program defines them:

    (none)                     print "hello argo"
    echo [MSG [PATH]]          print MSG ("hello argo" without one), or write it to PATH (folders made)
    cat PATH                   print the file
    assert_contains PATH TEXT  exit 1 unless the file contains TEXT (printing the matching lines)
    exit [CODE]                exit with CODE (0)
    sleep SECONDS              sleep
    sh FILE                    run FILE with sh
    anything else              exit 1
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HELLO = "hello argo"


def main(args: list[str]) -> int:
    cmd, rest = (args[0], args[1:]) if args else ("", [])
    if cmd == "":
        print(HELLO)
        return 0
    if cmd == "echo":
        if len(rest) > 2:
            return 1
        if len(rest) == 2:
            Path(rest[1]).parent.mkdir(parents=True, exist_ok=True)
            Path(rest[1]).write_text(rest[0] + "\n")
        else:
            print(rest[0] if rest else HELLO)
        return 0
    if cmd == "cat":
        sys.stdout.write(Path(rest[0]).read_text())
        return 0
    if cmd == "assert_contains":
        lines = [ln for ln in Path(rest[0]).read_text().splitlines() if rest[1] in ln]
        if not lines:
            return 1
        print("\n".join(lines))
        return 0
    if cmd == "exit":
        return int(rest[0]) if rest else 0
    if cmd == "sleep":
        time.sleep(float(rest[0].rstrip("s")))
        return 0
    if cmd == "sh":
        return subprocess.call(["sh", rest[0] if rest else "0"])
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
