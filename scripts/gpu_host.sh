#!/usr/bin/env bash
# Runs infersweep on a GPU host without internet, from an offline bundle (python -m infersweep.gpu_bundle build).
#   scripts/gpu_host.sh stash DIR         copy one transfer's parts from DIR into $PARTS (default /tmp/infersweep-parts)
#   scripts/gpu_host.sh assemble          verify + unpack every site into $SITES (default /tmp/infersweep), make venvs, check imports
#   scripts/gpu_host.sh assemble --follow the same in the background, started once the manifests are stashed: each part
#                                         is verified and unpacked as it arrives (log, pid, exit status: $PARTS/assemble.*)
#   scripts/gpu_host.sh assembled         wait for that background assemble, print its log, exit with its status
#   scripts/gpu_host.sh run ARGS...       python -m infersweep ARGS with the bundle's interpreters (GPU, AIPerf, tool)
#   scripts/gpu_host.sh test ARGS...      python -m pytest ARGS the same way (e.g. `test -m gpu`: the GPU tier)
# It is how the measured runs in docs/measured-h200.md were made (one H200, 2026-12-01).
set -euo pipefail
cd "$(dirname "$0")/.."
PARTS=${PARTS:-/tmp/infersweep-parts}
SITES=${SITES:-/tmp/infersweep}
case "${1:-}" in
  stash)
    # Each file under a hidden name first, then renamed into place (atomic within one filesystem): a background
    # `assemble --follow` never reads a part that is still being copied.
    mkdir -p "$PARTS"
    for f in "$2"/*; do n=$(basename "$f"); cp "$f" "$PARTS/.$n.partial"; mv -f "$PARTS/.$n.partial" "$PARTS/$n"; done
    ls -la "$PARTS" | tail -n +2 | awk '{print $5, $9}'; df -h /tmp | tail -1 ;;
  assemble)
    # The checkout's assembler when there is one: a bundle's copy is as old as the bundle (an older copy
    # once left the tool's venv without the host's packages), and assembling needs nothing but the stdlib.
    A="$PWD/infersweep/gpu_bundle/assemble.py"; [ -f "$A" ] || A="$PARTS/assemble.py"
    if [ "${2:-}" = --follow ]; then
      # Unpacking overlaps the transfers that follow; this call returns at once, `assembled` collects the result.
      # setsid + nohup: it outlives this remote call's session. Its exit status goes to assemble.rc (renamed into
      # place, so `assembled` never reads it half written).
      rm -f "$PARTS/assemble.rc"
      setsid nohup bash -c 't0=$(date +%s); python3 "$1" --parts "$2" --into "$3" --follow --venv --check; rc=$?
        echo "assemble: $(( $(date +%s) - t0 )) s (following)"; echo $rc > "$2/.assemble.rc"; mv "$2/.assemble.rc" "$2/assemble.rc"' \
        _ "$A" "$PARTS" "$SITES" > "$PARTS/assemble.log" 2>&1 < /dev/null &
      echo $! > "$PARTS/assemble.pid"
      echo "assemble: following $PARTS in the background (pid $!, log $PARTS/assemble.log); \`$0 assembled\` waits for it"
      exit 0
    fi
    t0=$(date +%s); python3 "$A" --parts "$PARTS" --into "$SITES" --venv --check
    echo "assemble: $(( $(date +%s) - t0 )) s" ;;
  assembled)
    [ -f "$PARTS/assemble.pid" ] || { echo "assembled: no background assemble in $PARTS (start one: $0 assemble --follow)"; exit 2; }
    pid=$(cat "$PARTS/assemble.pid")
    # Not our child: poll for its status file; a wrapper gone without one (killed) is a failure.
    while [ ! -f "$PARTS/assemble.rc" ]; do
      if ! kill -0 "$pid" 2>/dev/null; then
        sleep 0.2; [ -f "$PARTS/assemble.rc" ] && break
        cat "$PARTS/assemble.log"; echo "assembled: the background assemble (pid $pid) ended without an exit status"; exit 1
      fi
      sleep 0.5
    done
    cat "$PARTS/assemble.log"; exit "$(cat "$PARTS/assemble.rc")" ;;
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
  *) sed -n 2,9p "$0"; exit 2 ;;
esac
