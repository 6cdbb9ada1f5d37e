"""Where a run folder keeps its tables: names only, so any module of results/ can import them without a cycle
(results/run.py re-exports them; server_figures.py, read by table.py, needs one while run.py reads tables)."""

RESULTS_FILE = "summary/results.parquet"
RAW_FILE = "summary/results_raw.parquet"  # every AIPerf statistic, long format (infersweep.results.columns.RAW)
SERVER_METRICS_FILE = "metrics/server_metrics.parquet"
METRICS_SKIPPED_FILE = "metrics/SKIPPED"
