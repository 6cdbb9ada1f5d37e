"""Local mode: the rendered workflow run on this machine, with real programs standing in for the cluster.

Rooms:
- argo/           the Argo Workflows controller port that runs the Workflow (its own file map inside).
- dynamo/         a DGD as Dynamo processes here: the local DGD adapter, deploy, wait, reconfigure, KV reset,
                  discovery, process supervision, the toy model (its own file map inside).
- gpu/            `--workers gpu`: GPUs, the process plan, NVML telemetry, engine flags and start-up, fake GPUs
                  (its own file map inside).
- standins/       S3 (moto) and Prometheus, the cluster services a run talks to.

The drivers, one per command, and the phases they share (scale, render, execute, publish):
- run.py          `infersweep run --local`: scale down (params/local.yaml), render, run, publish.
- experiment_run.py `infersweep experiment run --local`.
- launcher_run.py a launcher WorkflowTemplate submitted as the Argo UI does, and the runs it creates.
- slo_search.py   `infersweep slo-search --local`: one local deployment's knee.
- profile.py      params/local.yaml, typed (LocalProfile).
- workers.py      LocalWorkers: mocker or real engines, with the `--workers gpu` companions.
- scale.py        the scale phase: a recipe's sweep, lengths, workload and workers cut to this machine.
- scale_note.py   what the scale phase changed, said before the run.
- phases.py       the run folder, render (documents, ConfigMaps, interpreters), execute (services, environment,
                  GPU side, every process stopped).
- executor.py     one rendered workflow through argo/ (StepServices: what it runs on).
- publish.py      the publish phase: the attempt's run id and keys, kept on disk as a store folder.
- disk_store.py   a published run or experiment kept as a store folder on disk, and put back for a --retry.
- progress_watch.py the steps' own progress lines between the executor's events.
- toolchain.py    the tools a run starts (Dynamo, AIPerf), checked before anything deploys.
"""
