"""The folder of a local pod's files and log: runs/<run>/nodes/<this>. One rule, for the executor that writes
there (pod.py) and for `infersweep logs` that reads there."""

from __future__ import annotations

import hashlib
import re

MAX_LEN = 120  # a path component well under NAME_MAX (255), readable in a terminal


def node_folder(node_name: str) -> str:
    """`node_name` made safe for a path; a long one (a point's item parameters: 100+ characters) keeps its
    start, the workflow and the step with its item index, and ends in a hash of the whole name, so two nodes
    never share a folder. (Cutting from the left, as before, dropped the run's name: `nodes/-kv-2026...`.)"""
    safe = re.sub(r"[^A-Za-z0-9_.=-]+", "_", node_name)
    if len(safe) <= MAX_LEN:
        return safe
    head, _, item = node_name.partition("(")
    index = re.match(r"\d+", item)
    short = re.sub(r"[^A-Za-z0-9_.=-]+", "_", head) + (f"_{index.group()}" if index else "")
    digest = hashlib.sha1(node_name.encode()).hexdigest()[:8]
    return f"{short[: MAX_LEN - len(digest) - 1]}-{digest}"
