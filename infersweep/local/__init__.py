"""Local mode: the rendered workflow run on this machine, with real programs standing in for the cluster.

- argo/           the Argo Workflows controller port that runs the Workflow (its own file map inside).
- standins/       S3 (moto) and Prometheus, the cluster services a run talks to.
- executor.py     one rendered workflow through argo/, as `run --local` and `experiment run --local` use it.
- run.py          `infersweep run --local`: render, scale down (params/local.yaml), run, publish.
- experiment_run.py `infersweep experiment run --local`.
- slo_search.py   `infersweep slo-search --local`: one local deployment's knee.
- adapter.py      the local DGD adapter (a DGD as processes here) and the environment that selects it.
- dynamo.py       a DGD realised as Dynamo frontend + mocker (or engine) processes.
- dgd_reader.py   what local mode reads from a DGD: components, command lines, engine, model name, router.
- reconfigure.py  a DGD re-applied over a running local deployment, as the Dynamo operator would.
- kv_reset_client.py empties a local deployment's KV caches through Dynamo's own endpoint.
- procs.py        supervision of the processes local mode starts.
- gpu_run.py, gpu_workers.py, gpu_telemetry.py  `--workers gpu`: GPUs, process plan, NVML telemetry.
- fake_gpu.py, fake_engine.py  INFERSWEEP_FAKE_GPU=N: `--workers gpu` on fake GPUs, the mocker in each engine's place.
- engine_flags.py, engine_startup.py  reading an engine's command line and its start-up log.
- toy_model.py    the weightless tokenizer-only model the mocker serves.
"""
