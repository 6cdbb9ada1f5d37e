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


if ! command -v prometheus >/dev/null; then
  echo "setup: installing prometheus (apt)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

ENV_CACHE=${INFERSWEEP_ENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/infersweep/envs}
# stamp, env_ok, venv, done_venv: the side-environment cache (built and populated at its cache path)
source scripts/setup_envs.sh

# Both through the images' lock files (scripts/lock_images.py): what the tests run is what the images install,
# whatever PyPI holds today; a new version arrives by regenerating the lock.
if venv .venv pyproject.toml images/steps.lock.txt; then
  "$V/bin/pip" install -q --disable-pip-version-check -e '.[test]' -c images/steps.lock.txt
  done_venv
fi
if venv .venv-aiperf images/aiperf.requirements.txt images/aiperf.lock.txt; then
  "$V/bin/pip" install -q --disable-pip-version-check -r images/aiperf.requirements.txt -c images/aiperf.lock.txt
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
