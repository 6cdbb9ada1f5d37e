"""Re-judge a committed experiment folder with this tree's validity rules: each treatment's summarize step again
(the exact command its node logged, on a copy of the treatment's points), then the experiment's compare step,
into a folder of its own. The committed report stays as the run wrote it; this writes the one the rules of
today would have written, from the same records.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/rejudge_experiment.py \\
        benchmarks/measured/h200-2026-12-04/gpu-kv-vs-rr-seamless --out /tmp/rejudged

Writes OUT/treatments/<name>/summary/ (results tables and run.json) and OUT/run/experiment-report.{md,json}, and
prints the report's claim line. The experiment spec is the one the compare node logged (the run's own).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from infersweep.step_declarations import SUMMARIZE  # noqa: E402


def _logged_argv(line: str, step) -> list[str]:
    """A step's argv from its node log's first line (`$ PYTHON -m steps.X --opt value ...`, joined with spaces,
    unquoted: a JSON value keeps its quotes and spaces), split at the step's own option names."""
    flags = "|".join(re.escape(o.flag) for o in step.options)
    head, *rest = re.split(rf" ({flags}) ", " " + line.removeprefix("$ ").split(" ", 1)[1] + " ")
    argv = head.split()
    for flag, value in zip(rest[::2], rest[1::2], strict=True):
        argv += [flag, value.strip()]
    return argv


def rejudge(folder: Path, out: Path) -> str:
    nodes = folder / "nodes"
    treatments = out / "treatments"
    shutil.rmtree(out, ignore_errors=True)
    treatments.mkdir(parents=True)
    for log in sorted(nodes.glob("*.treatments.t*-summarize/main.log")):
        argv = _logged_argv(log.read_text(encoding="utf-8").splitlines()[0], SUMMARIZE)
        name = argv[argv.index("--title") + 1]
        run = treatments / name
        shutil.copytree(folder / "treatments" / name, run, ignore=shutil.ignore_patterns("summary"))
        argv[argv.index("--run-dir") + 1] = str(run)
        if "--model-commit-file" in argv:  # the run's own copy of what model-cache resolved
            argv[argv.index("--model-commit-file") + 1] = str(run / "context" / "model-commit.txt")
        subprocess.run([sys.executable, *argv], cwd=REPO, check=True, capture_output=True, text=True)
    compare_log = next(nodes.glob("*.compare/main.log")).read_text(encoding="utf-8")
    # `$ PYTHON -m steps.compare --experiment YAML --treatments-dir D --out O`, the YAML on many lines
    spec = compare_log.split("--experiment ", 1)[1].split(" --treatments-dir ", 1)[0]
    (out / "run").mkdir()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "steps.compare",
            "--experiment",
            spec,
            "--treatments-dir",
            str(treatments),
            "--out",
            str(out / "run"),
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    report = (out / "run" / "experiment-report.md").read_text(encoding="utf-8")
    return next((line for line in report.splitlines() if line.startswith(("supported", "refuted", "inconclusive"))), "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="a committed experiment folder (benchmarks/measured/...)")
    ap.add_argument("--out", type=Path, required=True, help="where the re-judged tables and report go")
    a = ap.parse_args()
    print(rejudge(a.folder.resolve(), a.out.resolve()))


if __name__ == "__main__":
    main()
