"""`--workers gpu`: real engine workers on this machine's GPUs (or fake ones under INFERSWEEP_FAKE_GPU=N).

- run.py             what a GPU run adds: the GPUs, the model folder, the stack, the words that say what ran.
- workers.py         the GPUs here and the process plan: which GPUs, ports and flags each engine worker gets.
- telemetry.py       the NVML sampler and the workers' own metrics, per point.
- engine_flags.py    reading an engine's command line (flag values, switches).
- engine_startup.py  an engine worker's start-up phases, from its log.
- fake_gpu.py        INFERSWEEP_FAKE_GPU=N: fake GPUs, the mocker in each engine's place.
- fake_engine.py     the engine process of a fake GPU (a script run by the Dynamo interpreter).
"""
