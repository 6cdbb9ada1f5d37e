"""docs/cluster.md stays true: numbered steps, each `infersweep ...` command in it parses with today's CLI, and
each test file it names exists."""

from __future__ import annotations

import re
import shlex

from infersweep.cli import build_parser
from tests.support.paths import REPO

DOC = REPO / "docs" / "cluster.md"


def _commands() -> list[str]:
    text = DOC.read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    out = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("#", 1)[0].strip().split("|")[0].split(">")[0].strip()
            if line.startswith("infersweep "):
                out.append(line)
    return out


def test_the_steps_are_numbered_one_to_eight():
    steps = re.findall(r"^## (\d+)\. ", DOC.read_text(), re.M)
    assert steps == [str(i) for i in range(1, 9)]


def test_every_command_in_the_doc_parses():
    cmds = _commands()
    assert {c.split()[1] for c in cmds} >= {"images", "install", "preflight", "submit"}
    for c in cmds:
        argv = shlex.split(c)[1:]
        build_parser(argv).parse_args(argv)  # SystemExit (argparse's error) on a stale option


def test_every_test_the_doc_names_exists():
    for name in set(re.findall(r"tests/((?:\w+/)*test_\w+\.py)", DOC.read_text())):
        assert (DOC.parents[1] / "tests" / name).is_file(), name
