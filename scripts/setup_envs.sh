# The side-environment cache of scripts/setup.sh, as functions (sourced by setup.sh, and by
# tests/house/test_env_cache.py, which builds an environment from one clone, deletes the clone and uses it from a
# second). Needs: PY (a Python 3.11), ENV_CACHE (the cache folder).
#
# The side environments (.venv-aiperf, -dynamo, -aic, -checkov, -engines) hold no project code, so each is built
# once per content in a cache shared by every checkout of this machine ($INFERSWEEP_ENV_CACHE, default
# ~/.cache/infersweep/envs/<name>-<stamp>) and linked into the checkout: a fresh clone (CI's included) reuses
# them instead of reinstalling ~12 GB. `.venv` has the project installed editable, so it stays per checkout.

stamp() { sha256sum "$@" | sha256sum | cut -c1-16; }
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
  [ "${SETUP_PIP_UPGRADE:-1}" = 0 ] || "$V/bin/python" -m pip install -q --disable-pip-version-check -U pip
  echo "$want" > "$V/.infersweep-stamp.new"
  return 0
}
done_venv() { mv "$V/.infersweep-stamp.new" "$V/.infersweep-stamp"; }
