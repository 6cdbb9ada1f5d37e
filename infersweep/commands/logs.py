"""`infersweep logs RUN [STEP]`: a run's step logs. Without STEP, the steps and where their logs are.

RUN is a local run folder (runs/<run-id>: each node's log is nodes/<node>/main.log, its status in
status.json), or a cluster workflow name: its steps from the Argo Server, each log from Argo's log
archive (the pipeline sets archiveLogs, so the executor saves each pod's log as the output artifact
`main-logs`, workflow/executor/executor.go saveLogs), read through the Argo Server's artifact endpoint
/artifact-files/{namespace}/workflows/{name}/{nodeId}/outputs/main-logs (server/artifacts/artifact_server.go
GetArtifactFile): no S3 credentials on the laptop, the server's RBAC decides.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from infersweep.cli_util import table

ARCHIVED_LOG = "main-logs"


def label(node: dict) -> str:
    """What the user sees for a step: Argo's displayName with a loop item by its index and load
    (`point(1: c8 r1)`, infersweep/local/progress_watch.py step_label), not Argo's 100+ character item name.
    status.json and the cluster's Workflow keep Argo's names (`--retry` and the UI read them)."""
    from infersweep.local.progress_watch import step_label

    return step_label(node.get("displayName") or node.get("name") or "")


def _matches(node: dict, step: str) -> bool:
    """`point` is every item of the point loop, `point(1)` its second (the UI's `point(1:{...})`), and the
    label a listing shows (`point(1: c8 r1)`)."""
    names = (
        node.get("displayName") or "",
        label(node),
        node.get("templateName") or "",
        ((node.get("templateRef") or {}).get("template") or ""),
    )
    item = re.fullmatch(r"(.+)\((\d+)\)", step)
    return any(n == step or n.startswith(step + "(") or (item and n.startswith(f"{item[1]}({item[2]}:")) for n in names)


def _pods(status: dict) -> list[dict]:
    nodes = [n for n in (status.get("nodes") or {}).values() if n.get("type") == "Pod"]
    return sorted(nodes, key=lambda n: n.get("startedAt") or "")


def _node_folder(run_dir: Path, node: dict) -> Path:
    from infersweep.local.argo.node_folder import node_folder  # the rule pod.py writes by

    return run_dir / "nodes" / node_folder(node["name"])


def local_logs(run_dir: Path, step: str | None, out=print) -> int:
    from infersweep.recipe import RecipeError

    status_file = run_dir / "status.json"
    if not status_file.is_file():
        raise RecipeError(
            f"{run_dir}: no status.json (not a local run folder, or the run is still going); "
            f"its logs are in {run_dir / 'nodes'}/*/main.log"
        )
    pods = _pods(json.loads(status_file.read_text()))
    if step is None:
        rows = [(label(n), n.get("phase"), str(_node_folder(run_dir, n) / "main.log")) for n in pods]
        out(table(["STEP", "PHASE", "LOG"], rows))
        return 0
    chosen = [n for n in pods if _matches(n, step)]
    if not chosen:
        raise RecipeError(f"no step {step!r} in {run_dir}; its steps: {sorted({label(n) for n in pods})}")
    for n in chosen:
        log = _node_folder(run_dir, n) / "main.log"
        out(f"==> {label(n)} ({n.get('phase')}): {log} <==")
        out(log.read_text(errors="replace") if log.is_file() else "(no log: the step never started)")
    return 0


def archived_log(server, name: str, node_id: str) -> str | None:
    """The archived main log of a node, through the Argo Server; None when there is none (yet)."""
    import requests

    cfg = server.cfg
    url = f"{cfg.host}artifact-files/{cfg.namespace}/workflows/{name}/{node_id}/outputs/{ARCHIVED_LOG}"
    headers = (
        {"Authorization": cfg.token if cfg.token.startswith("Bearer ") else f"Bearer {cfg.token}"} if cfg.token else {}
    )
    try:
        r = requests.get(url, headers=headers, verify=cfg.verify_ssl, timeout=30)
    except requests.RequestException as e:
        from infersweep.argo_server import ArgoServerError

        raise ArgoServerError(f"get log of {name}/{node_id}: cannot reach the Argo Server at {cfg.host}: {e}") from None
    if r.status_code == 401:
        from infersweep.argo_server import ArgoServerError

        raise ArgoServerError(f"get log of {name}/{node_id}: 401 Unauthorized (the token)")
    # the server answers 500 when the node has no such artifact (getArtifactAndDriver), 404 when it is gone
    return r.text if r.status_code == 200 else None


def cluster_logs(server, name: str, step: str | None, out=print) -> int:
    from infersweep.recipe import RecipeError

    wf = server.get_workflow(name)
    pods = _pods(wf.get("status") or {})
    if step is None:
        rows = [
            (
                label(n),
                n.get("phase"),
                "archived"
                if any(a.get("name") == ARCHIVED_LOG for a in (n.get("outputs") or {}).get("artifacts") or [])
                else "-",
            )
            for n in pods
        ]
        out(table(["STEP", "PHASE", "LOG"], rows) if rows else f"{name}: no step has started")
        out(f"one step's log: infersweep logs {name} STEP")
        return 0
    chosen = [n for n in pods if _matches(n, step)]
    if not chosen:
        raise RecipeError(f"no step {step!r} in {name}; its steps: {sorted({label(n) for n in pods})}")
    for n in chosen:
        text = archived_log(server, name, n["id"])
        out(f"==> {label(n)} ({n.get('phase')}) <==")
        if text is None:
            out(
                f"(no archived log yet: the step is {n.get('phase', '').lower()}; the UI shows a running pod's log: "
                f"{server.ui_link(name)})"
            )
        else:
            out(text.rstrip("\n"))
    return 0


def run(a: argparse.Namespace) -> int:
    from infersweep.results.cli_common import LOCAL_RUNS, local_run_dir

    folder = local_run_dir(a.run)
    if folder is not None:
        return local_logs(folder, a.step)
    if "/" in a.run or a.run.startswith("."):  # a workflow name is a DNS subdomain: this was meant as a folder
        from infersweep.recipe import RecipeError

        raise RecipeError(f"{a.run}: no such run folder; give runs/<run-id> (see ls {LOCAL_RUNS}/) or a cluster run")
    from infersweep.argo_server import server_from_args

    return cluster_logs(server_from_args(a), a.run, a.step)


STEP_HELP = "step name as the UI shows it (e.g. deploy, point, or point(0:...)); without it, the steps and their logs"


def register(sub: argparse._SubParsersAction) -> None:
    from infersweep.argo_server import add_server_flags

    p = sub.add_parser("logs", help="a run's step logs (a local run folder, or a cluster run's archived logs)")
    p.add_argument("run", help="local run folder (runs/<run-id>) or cluster workflow name")
    p.add_argument("step", nargs="?", help=STEP_HELP)
    add_server_flags(p)
    p.set_defaults(fn=run)
