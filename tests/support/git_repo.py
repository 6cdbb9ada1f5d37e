"""git in a test repository, with an identity of its own (no global git config needed)."""

from __future__ import annotations

import subprocess


def git(repo, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
