#!/usr/bin/env bash
# Installs everything infersweep needs on a fresh Debian machine with Python 3.11, idempotently:
#   .venv         the tool, its tests (hera, kubernetes, boto3, pandas, moto ...)
#   .venv-aiperf  AIPerf 0.13.0 (pins pandas 2.3: its own environment, as it has its own image)
#   .venv-dynamo  Dynamo 1.6.1 frontend + mocker for local mode
#   .venv-aic     AIConfigurator 0.12.0 (infersweep predict, calibrated local-mode timing tables)
#   .venv-checkov checkov (manifest scan in tests/house/test_checkov.py; its pins clash with the main env)
#   prometheus    (Debian package) for the metrics-scrape tests
#   .venv-gpu     only with --gpu (or INFERSWEEP_GPU=1), on a GPU host with internet and Python 3.12: vLLM 0.23.0 +
#                 ai-dynamo 1.3.1 for `run --local --workers gpu` (images/gpu.requirements.txt); a host without
#                 internet uses the offline bundle instead (python -m infersweep.gpu_bundle, docs/measured-h200.md)
#   .venv-engines only with --engines (or INFERSWEEP_ENGINES=1): ai-dynamo 1.6.1 + vLLM 0.31 + SGLang 0.5.21
#                 for the engine-parser tier (tests/engines/test_engine_parsers.py); ~8 GB, see docs/environments.md
#   .venv-engines-1.3 with it: ai-dynamo 1.3.1 + vLLM 0.23.0 + SGLang 0.5.14 modules (--no-deps, ~1 GB) layered over
#                 .venv-engines, for the Dynamo 1.3.1 release's parsers (docs/engine-releases.md)
# A second run with nothing changed takes a second or two.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), "infersweep needs Python 3.11 (Dynamo 1.6.1 wheels)"'

stamp() { sha256sum "$@" | sha256sum | cut -c1-16; }

if ! command -v prometheus >/dev/null; then
  echo "setup: installing prometheus (apt)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

# The side environments (.venv-aiperf, -dynamo, -aic, -checkov, -engines) hold no project code, so each is built
# once per content in a cache shared by every checkout of this machine ($INFERSWEEP_ENV_CACHE, default
# ~/.cache/infersweep/envs/<name>-<stamp>) and linked into the checkout: a fresh clone (CI's included) reuses
# them instead of reinstalling ~12 GB. `.venv` has the project installed editable, so it stays per checkout.
ENV_CACHE=${INFERSWEEP_ENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/infersweep/envs}

# A cached environment is built and populated at its cache path, never through the checkout's link: pip writes
# every console script's shebang from the interpreter path it ran under, so a build through `.venv-aiperf/bin/python`
# names this checkout in `aiperf`'s first line, and every other checkout breaks once this one is deleted.
# env_ok is what a cached environment passes before it is reused: its entry points name its own path, and it starts.
env_ok() {  # env_ok TARGET
  local t=$1 f line
  [ -x "$t/bin/python" ] || return 1
  for f in "$t"/bin/*; do
    { [ -f "$f" ] && [ ! -L "$f" ]; } || continue
    line=$(head -c 400 "$f" | head -n 3 | tr -d '\0') || true
    case "$line" in
      "#!$t/bin/"*|"#!/bin/sh"*"exec' '$t/bin/"*) ;;  # its own interpreter (pip's long-path /bin/sh form too)
      "#!"*python*|"#!/bin/sh"*"exec'"*)
        echo "setup: $t/bin/${f##*/} starts another environment's python: rebuilding" >&2; return 1 ;;
    esac
  done
  "$t/bin/python" -m pip --version >/dev/null 2>&1
}
V=""  # the resolved directory of the environment venv() is building: its installs run from there
venv() {  # venv DIR STAMP_INPUTS... ; returns 0 when DIR must be (re)built at $V, then run its installs + done_venv
  local dir=$1; shift
  local want; want=$(stamp "$@")
  V=$dir
  if [ "$dir" = .venv ]; then
    if [ -f "$dir/.infersweep-stamp" ] && [ "$(cat "$dir/.infersweep-stamp")" = "$want" ]; then return 1; fi
  else
    local target="$ENV_CACHE/${dir#.venv-}-$want"
    [ -L "$dir" ] || rm -rf "$dir"  # an old in-checkout copy with another stamp
    ln -sfn "$target" "$dir"
    V=$target
    if [ -f "$target/.infersweep-stamp" ] && env_ok "$target"; then echo "setup: $dir from $target"; return 1; fi
    rm -rf "$target"  # a build that died half-way (no stamp) or whose entry points name another path: start clean
    mkdir -p "$ENV_CACHE"
  fi
  echo "setup: building $dir"
  [ -x "$V/bin/python" ] || "$PY" -m venv "$V"
  "$V/bin/python" -m pip install -q --disable-pip-version-check -U pip
  echo "$want" > "$V/.infersweep-stamp.new"
  return 0
}
done_venv() { mv "$V/.infersweep-stamp.new" "$V/.infersweep-stamp"; }

if venv .venv pyproject.toml; then
  "$V/bin/pip" install -q --disable-pip-version-check -e '.[test]'
  done_venv
fi
if venv .venv-aiperf images/aiperf.requirements.txt; then
  "$V/bin/pip" install -q --disable-pip-version-check -r images/aiperf.requirements.txt
  done_venv
fi
if venv .venv-dynamo images/dynamo-local.requirements.txt; then
  "$V/bin/pip" install -q --disable-pip-version-check -r images/dynamo-local.requirements.txt
  "$V/bin/pip" install -q --disable-pip-version-check --no-deps ai-dynamo==1.6.1
  done_venv
fi
if venv .venv-aic images/aic.requirements.txt; then
  "$V/bin/pip" install -q --disable-pip-version-check -r images/aic.requirements.txt
  done_venv
fi
if venv .venv-checkov images/checkov.requirements.txt; then
  "$V/bin/pip" install -q --disable-pip-version-check -r images/checkov.requirements.txt
  done_venv
fi
GPU=${INFERSWEEP_GPU:-0}
case " $* " in *" --gpu "*) GPU=1 ;; esac
if [ "$GPU" = 1 ]; then
  PY_GPU=${PYTHON_GPU:-python3.12}
  command -v "$PY_GPU" >/dev/null || { echo "setup: --gpu needs Python 3.12 (PYTHON_GPU=...)" >&2; exit 2; }
  if [ ! -f .venv-gpu/.infersweep-stamp ] || [ "$(cat .venv-gpu/.infersweep-stamp)" != "$(stamp images/gpu.requirements.txt)" ]; then
    echo "setup: building .venv-gpu (vLLM 0.23.0 + ai-dynamo 1.3.1, several GB)"
    "$PY_GPU" -m venv .venv-gpu
    .venv-gpu/bin/pip install -q --disable-pip-version-check -r images/gpu.requirements.txt
    .venv-gpu/bin/pip install -q --disable-pip-version-check --no-deps ai-dynamo==1.3.1
    stamp images/gpu.requirements.txt > .venv-gpu/.infersweep-stamp
  fi
fi
ENGINES=${INFERSWEEP_ENGINES:-0}
case " $* " in *" --engines "*) ENGINES=1 ;; esac
if [ "$ENGINES" = 1 ] && venv .venv-engines images/dynamo-local.requirements.txt images/engines.requirements.txt \
    images/engines-nodeps.requirements.txt; then
  E="$V/bin/pip"
  $E install -q --disable-pip-version-check -r images/dynamo-local.requirements.txt -r images/engines.requirements.txt
  # ai-dynamo (aisimulate cannot be fetched) and SGLang (its pins conflict with vLLM's; see the file) without deps.
  $E install -q --disable-pip-version-check --no-deps -r images/engines-nodeps.requirements.txt
  # torch must be PyPI's CUDA build: the machine's local torch+cpu wheel wins the resolve above, but PyPI's
  # torchvision (which SGLang's import chain needs) links libc10_cuda.so and fails to load against it.
  # (--isolated: the index alone, not the machine's local wheel folder.) vLLM 0.31 / SGLang 0.5.21 pin torch 2.13.0.
  $E install -q --disable-pip-version-check --isolated --cert /etc/ssl/certs/ca-certificates.crt \
    --force-reinstall --no-deps torch==2.13.0
  $E install -q --disable-pip-version-check torch==2.13.0 torchvision==0.28.0  # + its CUDA libraries
  # torchaudio 2.11 / torchcodec (vLLM's pins) do not load with torch 2.13 and transformers imports them when present.
  $E uninstall -q -y torchaudio torchcodec || true
  done_venv
fi
# The Dynamo 1.3.1 release's parsers (images/engines-1.3.requirements.txt): not an environment but a folder of
# modules installed --no-deps that the tier puts before .venv-engines on PYTHONPATH. Cached like the others.
if [ "$ENGINES" = 1 ]; then
  want=$(stamp images/engines-1.3.requirements.txt images/engines.requirements.txt images/engines-nodeps.requirements.txt)
  target="$ENV_CACHE/engines-1.3-$want"
  [ -L .venv-engines-1.3 ] || rm -rf .venv-engines-1.3
  ln -sfn "$target" .venv-engines-1.3
  if [ -f "$target/.infersweep-stamp" ]; then echo "setup: .venv-engines-1.3 from $target"; else
    echo "setup: building .venv-engines-1.3 (ai-dynamo 1.3.1 + vLLM 0.23.0 + SGLang 0.5.14 parsers, --no-deps)"
    rm -rf "$target" && mkdir -p "$target"
    "$(readlink -f .venv-engines)/bin/pip" install -q --disable-pip-version-check --no-deps --target "$target" \
      -r images/engines-1.3.requirements.txt
    echo "$want" > "$target/.infersweep-stamp"
  fi
fi
echo "setup: ready ($(.venv/bin/infersweep --help >/dev/null && echo infersweep ok))"
