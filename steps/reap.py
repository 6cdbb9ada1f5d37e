"""Step of the `infersweep-reaper` CronWorkflow: delete every infersweep DGD whose run is over
(infersweep/platform/reaper.py says how and why).

Exit 75 (retried) on an API hiccup; the next schedule runs anyway.
"""

from __future__ import annotations

import argparse

from infersweep.platform.reaper import reap_namespace
from steps import transient


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m steps.reap")
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--api-version", default="v1beta1", choices=["v1beta1", "v1alpha1"],
                    help="DGD apiVersion the operator serves (a CRD serving both lists every DGD under either)")
    a = ap.parse_args(argv)
    reap_namespace(a.namespace, a.api_version)
    return 0


if __name__ == "__main__":
    raise SystemExit(transient.run(main, "reaper"))
