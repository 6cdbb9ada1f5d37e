"""What `infersweep logs` and `infersweep status` show for a step is short (issue 38 item 15: step labels of 100+
characters): a loop item by its index and load, `point(1: c8)`, not Argo's item name
`point(1:concurrency:8,cpu:6,memory:4096Mi,...)`. The run's status.json keeps Argo's names (`--retry` reads it as
`argo retry` reads a Workflow)."""

from __future__ import annotations

import json

from infersweep.cli import main as cli_main
from infersweep.commands.status import describe
from infersweep.local.argo.node_folder import node_folder

RUN = "demo-prefix-kv-20261203-223448"
ITEM = "point(1:concurrency:8,cpu:6,memory:4096Mi,repetition:0,request_rate:0,requests:64,warmup:8)"
POINT = f"{RUN}.gpu-span.{ITEM}"


def _node(phase: str = "Succeeded") -> dict:
    return {"id": "p", "name": POINT, "displayName": ITEM, "type": "Pod", "phase": phase, "message": "x"}


def test_logs_lists_a_point_by_its_load_and_status_json_keeps_argos_name(tmp_path, capsys):
    run = tmp_path / RUN
    log = run / "nodes" / node_folder(POINT) / "main.log"
    log.parent.mkdir(parents=True)
    log.write_text("concurrency 8: ok\n")
    (run / "status.json").write_text(json.dumps({"nodes": {"p": _node()}}))
    assert cli_main(["logs", str(run)]) == 0
    out = capsys.readouterr().out
    assert "point(1: c8)" in out and "memory:4096Mi" not in out.replace(str(log), "")
    # the label it shows selects the step
    assert cli_main(["logs", str(run), "point(1: c8)"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("==> point(1: c8) (Succeeded)") and "concurrency 8: ok" in out
    assert json.loads((run / "status.json").read_text())["nodes"]["p"]["displayName"] == ITEM


def test_status_names_a_failed_point_by_its_load():
    wf = {"metadata": {"namespace": "ns", "name": RUN}, "status": {"phase": "Failed", "nodes": {"p": _node("Failed")}}}
    text = describe(wf, "http://ui")
    assert "point(1: c8)" in text and "cpu:6" not in text
