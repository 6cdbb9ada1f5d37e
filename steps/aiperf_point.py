"""Run one AIPerf benchmark point and leave an honest OUT/result.json behind.

The work (AIPerf as a child, SIGTERM -> SIGINT -> SIGKILL, earlier attempts set aside, result.json) is
infersweep.aiperf.point_run.run_point; the options are infersweep/step_declarations.py AIPERF_POINT. Runs
inside the AIPerf image: standard library only (images/aiperf.Dockerfile copies what it imports).

    python -m steps.aiperf_point --url URL --model NAME --tokenizer DIR --concurrency N \
        --requests N --warmup N --isl N --osl N --out DIR [--trace FILE] [--timeout-s S] \
        [--max-error-rate F] [--aiperf BIN] [--extra-inputs k:v ...] [--result-param PATH]

Exit 0 for ok/partial, 2 for cancelled/failed (the reason goes to stderr).
"""

from __future__ import annotations

import argparse

from infersweep.aiperf.point_run import ARG_TYPES, check_args, run_point
from infersweep.step_declarations import AIPERF_POINT
from steps.runner import main_of


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = AIPERF_POINT.parser(**ARG_TYPES)
    return check_args(parser, parser.parse_args(argv))


def main(argv: list[str] | None = None) -> int:
    return run_point(parse_args(argv))


if __name__ == "__main__":
    main_of(main, AIPERF_POINT)
