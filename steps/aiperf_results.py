"""Read one AIPerf artifact dir into a small, honest result dict, printed as JSON.

The reader is infersweep.aiperf_contract.read_point (standard library only; the AIPerf image copies it).

    python -m steps.aiperf_results ARTIFACT_DIR [--max-error-rate F] [--exit-code N]
"""

from __future__ import annotations

import argparse
import json
import sys

from infersweep.aiperf_contract import read_point


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Summarise one AIPerf artifact dir as JSON.")
    parser.add_argument("artifact_dir")
    parser.add_argument("--max-error-rate", type=float, default=0.0, help="fraction 0..1 of failed requests tolerated")
    parser.add_argument("--exit-code", type=int, default=None, help="AIPerf's exit code, if known")
    args = parser.parse_args(argv)
    result = read_point(args.artifact_dir, max_error_rate=args.max_error_rate, exit_code=args.exit_code)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
