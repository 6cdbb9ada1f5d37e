"""`infersweep list [-l SELECTOR]`: cluster runs, newest first (e.g. -l infersweep.io/recipe=NAME)."""

from __future__ import annotations

import argparse

from infersweep.argo_client import server_from_args
from infersweep.argo_server import add_server_flags
from infersweep.cli_util import table


def rows(workflows: list[dict]) -> list[tuple]:
    out = []
    for wf in workflows:
        st, labels = wf.get("status") or {}, wf["metadata"].get("labels") or {}
        out.append(
            (
                wf["metadata"]["name"],
                labels.get("infersweep.io/recipe", "-"),
                st.get("phase") or "Pending",
                st.get("progress") or "-",
                st.get("startedAt") or "-",
            )
        )
    return sorted(out, key=lambda r: r[4], reverse=True)


def run(a: argparse.Namespace) -> int:
    server = server_from_args(a)
    wfs = server.list_workflows(a.selector)
    print(table(["NAME", "RECIPE", "PHASE", "PROGRESS", "STARTED"], rows(wfs)) if wfs else "no workflows")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="cluster runs (through the Argo Server)")
    p.add_argument("-l", "--selector", default="app.kubernetes.io/managed-by=infersweep", help="label selector")
    add_server_flags(p)
    p.set_defaults(fn=run)
