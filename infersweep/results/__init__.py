"""Results that answer questions: the versioned results table, the run store, reports, comparisons and
noise-aware regression verdicts.

table.py       one tidy row per (run, recipe, concurrency, repetition): the headline AIPerf statistics, derived
               throughput, goodput, SLO pass/fail and the run's context (metric names: infersweep/metrics.py);
               the raw table (every AIPerf statistic, long format)
columns.py     the column dictionary of both tables and the schema version (docs/columns.md is generated from it)
legacy.py      reading a table of an earlier schema version (v1/v2) under the current names
summarize.py   a run folder's points -> summary/ (the table, run.json, the report): the summarize step's work
server_metrics.py  Prometheus queries scoped to the run's DGD, over each point's window -> metrics/ (the scrape step)
context.py     the run context (recipe hash, images, model revision, topology, GPUs, AIPerf version, times)
index.py       the per-run index entries that make "all runs of recipe X" one LIST
manifest.py    a published run's manifest.json and its one checker (RunIntegrityError and subclasses)
publish.py     publish_tree / verify_run / publish_run: a run folder into S3, manifest last (the publish step)
s3.py          the S3 client every reader and writer uses, and download_prefix
store.py       RunStore: S3 or a local folder; refuses runs without a manifest
report.py      the self-contained HTML report (+ PNGs)
plots.py       the figures report and compare share
compare.py     per-concurrency changes, verdicts on the judged metrics, crossovers, best configuration meeting the SLOs
regression.py  judge_run: pass / regressed / improved / inconclusive, with the evidence
noise.py       the per-point test both use: medians, Student's t on the point's own repetitions, Holm
calibration.py synthetic repetitions of known noise and the error rates measured on them (docs/statistics.md)
baseline.py    a run judged against its recipe's baseline run in S3 (the regression-check step)
"""
