"""Engine knowledge, one place per engine: params/engines/<name>.yaml (image, module, flag spellings: data)
and infersweep/engines/<name>.py (DP/EP/TP arithmetic, invariants, flag building: code, beside the typed
model of that data file). infersweep/engines/base.py lists the rules every engine must implement;
infersweep/engines/views.py is what a rule reads of a recipe (shapes, so this package imports nothing of
infersweep/recipe); infersweep/engines/registry.py pairs data files with modules (discovery: $INFERSWEEP_ENGINES_PATH adds
directories to search for `<name>.py`). Adding an engine is one data file plus one module.
The engines: vllm.py (dynamo.vllm), sglang.py (dynamo.sglang), trtllm.py (dynamo.trtllm), each beside
params/engines/<name>.yaml.
"""
