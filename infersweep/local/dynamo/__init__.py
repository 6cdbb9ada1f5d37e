"""A DGD as Dynamo processes on this machine: the local DGD adapter and everything it starts, waits on and stops.

- adapter.py          the local DGD adapter (LocalPlatform) and the environment that selects it for the steps.
- dgd_reader.py       what local mode reads from a DGD: components, command lines, engine, model name, router.
- deployment.py       a deployment's record (deployment.json), its errors, the `--workers gpu` settings (GpuWorkers).
- command_lines.py    the Dynamo processes' command lines and environment: frontend, mocker, ports.
- deploy.py           deploy_local: the frontend + mocker workers (or real engine workers on GPUs).
- gpu_fit.py          a DGD's engine workers against the GPUs here, checked before anything starts.
- wait.py             wait_ready_local: registered, listed, answering; a lost registration fails fast.
- reconfigure.py      a DGD re-applied over a running deployment, as the Dynamo operator would.
- kv_reset.py         a running deployment's KV caches emptied, keeping its workers.
- kv_reset_client.py  empties a deployment's KV caches through Dynamo's own endpoint (run by the engine's python).
- procs.py            supervision of the processes local mode starts.
- toy_model.py        the weightless tokenizer-only model the mocker serves.
- discovery_keeper.py keeps alive the discovery entries living workers lost (a process of the deployment).
- discovery_owners.py which discovery entries have no living owner.
"""
