#!/usr/bin/env bash
# Runs infersweep on a GPU host without internet, from an offline bundle (python -m infersweep.gpu_bundle build).
#   scripts/gpu_host.sh stash DIR         copy one transfer's parts from DIR into $PARTS (default /tmp/infersweep-parts)
#   scripts/gpu_host.sh assemble          verify + unpack every site into $SITES (default /tmp/infersweep), make venvs, check imports
#   scripts/gpu_host.sh run ARGS...       python -m infersweep ARGS with the bundle's interpreters (GPU, AIPerf, tool)
#   scripts/gpu_host.sh test ARGS...      python -m pytest ARGS the same way (e.g. `test -m gpu`: the GPU tier)
# It is how the measured runs in docs/measured-h200.md were made (one H200, 2026-12-01).
set -euo pipefail
cd "$(dirname "$0")/.."
PARTS=${PARTS:-/tmp/infersweep-parts}
SITES=${SITES:-/tmp/infersweep}
case "${1:-}" in
  stash)
    mkdir -p "$PARTS"; cp "$2"/* "$PARTS"/; ls -la "$PARTS" | tail -n +2 | awk '{print $5, $9}'; df -h /tmp | tail -1 ;;
  assemble)
    # The checkout's assembler when there is one: a bundle's copy is as old as the bundle (an older copy
    # once left the tool's venv without the host's packages), and assembling needs nothing but the stdlib.
    A="$PWD/infersweep/gpu_bundle/assemble.py"; [ -f "$A" ] || A="$PARTS/assemble.py"
    t0=$(date +%s); python3 "$A" --parts "$PARTS" --into "$SITES" --venv --check
    echo "assemble: $(( $(date +%s) - t0 )) s" ;;
  run|test)
    verb=$1; shift
    # The frontend and the KV-reset client run in the GPU interpreter (any site with ai-dynamo): the vLLM site's,
    # else, on a host that was sent the SGLang bundle alone, the SGLang site's (its ai-dynamo is the same 1.3.1).
    gpu_site=vllm
    if [ ! -x "$SITES/venv-site-vllm/bin/python" ] && [ -x "$SITES/venv-site-sglang/bin/python" ]; then gpu_site=sglang; fi
    export INFERSWEEP_GPU_PYTHON="${INFERSWEEP_GPU_PYTHON:-$SITES/venv-site-$gpu_site/bin/python}"
    export INFERSWEEP_AIPERF_PYTHON="$SITES/venv-site-aiperf/bin/python"
    # dynamo.sglang workers run in the SGLang site's own interpreter when that site was assembled
    # (infersweep/local/gpu/workers.py engine_pythons).
    if [ -x "$SITES/venv-site-sglang/bin/python" ]; then export INFERSWEEP_GPU_PYTHON_SGLANG="$SITES/venv-site-sglang/bin/python"; fi
    export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
    if [ "$verb" = test ]; then exec "$SITES/venv-site-tool/bin/python" -m pytest "$@"; fi
    exec "$SITES/venv-site-tool/bin/python" -m infersweep "$@" ;;
  *) sed -n 2,6p "$0"; exit 2 ;;
esac
