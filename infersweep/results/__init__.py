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
run.py         one run's results in memory (`Run`), read from a local run folder
files.py       where a run folder keeps its tables (names only, so any module can import them)
listing.py     the runs of a store as `infersweep runs` lists them, with incomplete ones on request
validity.py    is a point's measurement one a reviewer would accept: `valid` and `validity_reasons`
prompt_repeats.py  measured requests the cache served a prompt the run had sent before, and where it was sent first
server_figures.py  the server's own first-token figures of a point, beside the client's
gpu_telemetry.py   the GPU columns of a point from NVML samples (local GPU runs)
repetitions.py a load's repetitions reduced to a mean with its 95 % Student-t interval and n
evidence.py    one rule for what counts as evidence behind every "best" and every verdict
verdict.py     a run's verdict from its points (steps/verdict.py, steps/experiment_verdict.py)
comparable.py  whether runs may be set against each other (same workload, model, SLOs, source)
comparison_report.py  the comparison report across runs, one self-contained HTML page
cli_common.py  what report, compare and regress share: a RUN argument into a loaded Run
promote.py     a published run made its recipe's baseline
llmd_export.py a run as llm-d benchmark reports (`infersweep export --format llm-d`)
Imports of AIPerf artifacts made elsewhere (`infersweep import`, docs/import.md):
importer.py    AIPerf artifact folders into the results store, as a run of a recipe
import_layout.py   which folders under an import root are AIPerf runs, grouped into points and repetitions
import_context.py  what an imported run measured and on what: its workload and provenance
import_aggregate.py  AIPerf's own confidence intervals of a multi-run tree, beside infersweep's
"""
