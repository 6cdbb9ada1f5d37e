"""A local pod's folder keeps the run's name and the step (issue 38 item 15: `nodes/-kv-20261203-...`, cut at
the left), and `infersweep logs` reads the folder the executor wrote."""

from __future__ import annotations

import json

from infersweep.cli import main as cli_main
from infersweep.local.argo.node_folder import MAX_LEN, node_folder

RUN = "demo-prefix-kv-20261203-223448"
POINT = f"{RUN}.gpu-span.point(1:concurrency:8,cpu:6,memory:4096Mi,repetition:0,request_rate:0,requests:64,warmup:8)"


def test_a_long_node_name_keeps_the_run_and_the_step():
    folder = node_folder(POINT)
    assert len(folder) <= MAX_LEN and folder.startswith(f"{RUN}.gpu-span.point_1-")
    other = POINT.replace("repetition:0", "repetition:1")
    assert node_folder(other) != folder  # two items never share a folder
    assert node_folder(f"{RUN}.onExit.verdict") == f"{RUN}.onExit.verdict"  # short names as they were


def test_logs_finds_the_log_of_a_long_named_step(tmp_path, capsys):
    run = tmp_path / RUN
    log = run / "nodes" / node_folder(POINT) / "main.log"
    log.parent.mkdir(parents=True)
    log.write_text("concurrency 8: ok: all 64 requests succeeded\n")
    node = {"id": "p", "name": POINT, "displayName": POINT.split(".", 2)[2], "type": "Pod", "phase": "Succeeded"}
    (run / "status.json").write_text(json.dumps({"nodes": {"p": node}}))
    assert cli_main(["logs", str(run), "point(1)"]) == 0
    assert "all 64 requests succeeded" in capsys.readouterr().out


def test_what_the_commands_write_by_default_into_the_checkout_is_ignored():
    """Issue 38 item 15: `report` and `export` write reports/ and llm-d-reports/ by default, as `run --local`
    writes runs/; none of them may show up in `git status`."""
    import subprocess

    from tests.support.paths import REPO

    for folder in ("runs", "reports", "llm-d-reports"):
        ignored = subprocess.run(["git", "check-ignore", "-q", f"{folder}/x/report.html"], cwd=REPO, check=False)
        assert ignored.returncode == 0, f"{folder}/ is not in .gitignore"
