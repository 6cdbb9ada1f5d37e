"""The end of the line: each step is `python -m steps.<module>`, its declared parser
(infersweep/step_declarations.py) plus one call into infersweep/. Nothing outside steps/ imports it.

A recipe's pipeline (workflows/pipeline.py), in order:
  ensure_pvc.py        the model-cache PVC exists and is Bound (or binds on first use)
  model_cache.py       the model (and its draft) at its pinned revision on the cache PVC, once
  deploy.py            apply the run's DGD; output the frontend URL
  wait_ready.py        wait until the DGD serves the model, failing fast with the reason
  aiperf_point.py      one AIPerf benchmark point, leaving an honest result.json (AIPerf image)
  teardown.py          delete the run's DGD (idempotent; also in the exit handler)
  scrape.py            Prometheus range queries over each point's window
  summarize.py         the points -> the results table, run record and report
  publish.py           the run's result tree into S3, then its index entry
  regression_check.py  this run against the recipe's baseline in S3
  verdict.py           the run's verdict, last: fail when any point failed or nothing was measured
An experiment's own steps (workflows/experiment.py; infersweep/experiment/workdir.py does their work):
  mark_start.py        when a treatment's deploy (or reconfigure) starts
  record_ready.py      a treatment's time-to-ready into its run folder
  archive.py           move the run folder aside as the treatment's
  compare.py           the experiment report from every treatment's results table
  experiment_verdict.py  the experiment's verdict, after the report is published
Outside the two pipelines:
  launcher.py          the UI launchers' render step: the run Workflow of the recipe or experiment chosen
  reap.py              the `infersweep-reaper` CronWorkflow: delete every DGD whose run is over
  aiperf_results.py    a tool of the AIPerf image: one artifact dir read into a small result dict, as JSON
Shared by every step:
  runner.py            `main_of(main, STEP)`: what a step returned or raised -> its exit code
  transient.py         exit code 75 for failures a rerun can fix (Argo retries exactly those)
"""
