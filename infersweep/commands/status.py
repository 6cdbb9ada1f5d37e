"""`infersweep status NAME`: a run's phase, progress, message and its failed steps, read from the Argo Server."""

from __future__ import annotations

import argparse

from infersweep.argo_client import server_from_args
from infersweep.argo_server import add_server_flags
from infersweep.cli_util import table
from infersweep.commands.logs import label


def describe(wf: dict, link: str) -> str:
    st = wf.get("status") or {}
    meta = wf["metadata"]
    lines = [
        f"name:      {meta['namespace']}/{meta['name']}",
        f"recipe:    {(meta.get('labels') or {}).get('infersweep.io/recipe', '?')}",
        f"phase:     {st.get('phase') or 'Pending'}" + (f" ({st['progress']})" if st.get("progress") else ""),
        f"started:   {st.get('startedAt') or '-'}",
        f"finished:  {st.get('finishedAt') or '-'}",
    ]
    if st.get("message"):
        lines.append(f"message:   {st['message']}")
    lines.append(f"ui:        {link}")
    bad = [
        (label(n), n.get("phase"), (n.get("message") or "")[:100])
        for n in (st.get("nodes") or {}).values()
        if n.get("type") == "Pod" and n.get("phase") in ("Failed", "Error")
    ]
    if bad:
        lines += ["", table(["STEP", "PHASE", "MESSAGE"], sorted(bad))]
    return "\n".join(lines)


def run(a: argparse.Namespace) -> int:
    server = server_from_args(a)
    print(describe(server.get_workflow(a.name), server.ui_link(a.name)))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="a cluster run's phase and failed steps")
    p.add_argument("name", help="workflow name (as printed by submit)")
    add_server_flags(p)
    p.set_defaults(fn=run)
