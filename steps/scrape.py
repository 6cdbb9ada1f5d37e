"""Step: Prometheus range queries over each benchmark point's window, saved as parquet beside the results.

The work is infersweep.results.server_metrics.scrape_run_metrics (queries scoped to this run's deployment
from params/metrics.yaml, windows from the points' result files); bad input exits 2 before anything is
queried, and no Prometheus, or a failing one, is recorded in metrics/SKIPPED and exits 0. A query the run
needs (metrics.yaml `required`) that returns no series exits 1, after saving what was scraped.

    python -m steps.scrape --run-dir DIR --namespace NS --dgd-name NAME [--run-id ID] [--prometheus-url URL]
        [--queries FILE] [--context JSON|@FILE]
"""

from __future__ import annotations

import sys
from pathlib import Path

from infersweep.paths import params_dir
from infersweep.results.server_metrics import MissingSeries, ScopeError, scrape_run_metrics
from infersweep.step_declarations import SCRAPE
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    ap = SCRAPE.parser()
    ap.set_defaults(queries=str(params_dir() / "metrics.yaml"))
    a = ap.parse_args(argv)
    try:
        scrape_run_metrics(
            Path(a.run_dir),
            prometheus_url=a.prometheus_url,
            queries_file=Path(a.queries),
            namespace=a.namespace,
            dgd_base=a.dgd_name,
            run_id=a.run_id,
            context=a.context,
        )
    except ScopeError as e:  # bad input: one clear error, before anything is queried
        print(f"scrape: {e}", file=sys.stderr)
        return 2
    except MissingSeries as e:  # Prometheus answered, a query the run needs did not: fail loudly
        print(f"scrape: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    main_of(main, SCRAPE)
