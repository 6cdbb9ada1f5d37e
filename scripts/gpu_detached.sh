#!/usr/bin/env bash
# A long GPU command that outlives one device call (each call is cut at 10 minutes; a run of three repetitions
# at c1/c16/c64 needs ~25): started detached from a copy of the checkout, then waited on by later calls, each of
# which snapshots what is done so far into $OUT (so a call cut short still brings back every finished point).
#   scripts/gpu_detached.sh start NAME -- CMD...   copy the checkout to /tmp/NAME-repo, run CMD there, detached
#   scripts/gpu_detached.sh wait NAME SECONDS DIR  wait up to SECONDS for it, then tar DIR + its log into $OUT
# Used for the H200 session of 2026-12-03 (benchmarks/measured/h200-2026-12-03/README.md).
set -uo pipefail
cd "$(dirname "$0")/.."
verb=${1:-}; name=${2:-}
case "$verb" in
  start)
    shift 3  # start NAME --
    rm -rf "/tmp/$name-repo" && mkdir -p "/tmp/$name-repo"
    # A copy: the next call lays the working tree anew, and the run's steps import from its checkout.
    tar --exclude=./.carry --exclude=./.gpu-bundle -cf - . | tar -xf - -C "/tmp/$name-repo"
    cd "/tmp/$name-repo" || exit 1
    setsid nohup "$@" >"/tmp/$name.log" 2>&1 </dev/null &
    echo $! >"/tmp/$name.pid"
    echo "started $name (pid $(cat "/tmp/$name.pid")): $*" ;;
  wait)
    secs=$3; dir=$4; t0=$(date +%s); pid=$(cat "/tmp/$name.pid")
    while kill -0 "$pid" 2>/dev/null && [ $(( $(date +%s) - t0 )) -lt "$secs" ]; do sleep 5; done
    if kill -0 "$pid" 2>/dev/null; then echo "$name: still running after ${secs}s"; else echo "$name: finished"; fi
    tail -n 25 "/tmp/$name.log"
    if [ -n "${OUT:-}" ]; then
      tar -C "$(dirname "$dir")" -cJf "$OUT/$name-snapshot.tar.xz" "$(basename "$dir")" 2>/dev/null
      cp "/tmp/$name.log" "$OUT/$name.log"
      ls -la "$OUT"
    fi ;;
  *) sed -n 2,6p "$0"; exit 2 ;;
esac
