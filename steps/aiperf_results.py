"""Read one AIPerf artifact dir into a small, honest result dict, printed as JSON.

The reader is infersweep.aiperf.read_point (standard library only; the AIPerf image copies it).

    python -m steps.aiperf_results ARTIFACT_DIR [--max-error-rate F] [--exit-code N]
"""

from __future__ import annotations

import json
import sys

from infersweep.aiperf import read_point
from infersweep.step_declarations import AIPERF_RESULTS
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    args = AIPERF_RESULTS.parser().parse_args(argv)
    result = read_point(args.artifact_dir, max_error_rate=args.max_error_rate, exit_code=args.exit_code)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    main_of(main, AIPERF_RESULTS)
