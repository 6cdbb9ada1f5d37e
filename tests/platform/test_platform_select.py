"""Which DGD adapter a step uses: the one the environment names (INFERSWEEP_PLATFORM_ADAPTER="module:attr"),
else the Kubernetes API's. Local mode names its own (infersweep.local.dynamo.adapter.step_env), so the steps run the
same code in both places without importing local mode; a bad name fails the step at once, saying which
variable to fix, and never falls back to the cluster."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from infersweep.local.dynamo.adapter import LocalPlatform, step_env
from infersweep.platform.protocol import BadInput
from infersweep.platform.select import ADAPTER_ENV, PLATFORM_ENV, get_platform
from tests.support.paths import REPO


def _step(module: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in (ADAPTER_ENV, PLATFORM_ENV)} | env
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def _setenv(monkeypatch, env: dict[str, str]) -> None:
    for k in [k for k in os.environ if k.startswith("INFERSWEEP_")]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)


def test_local_mode_environment_selects_the_local_adapter_as_configured(tmp_path, monkeypatch):
    env = step_env(
        state_dir=tmp_path / "state",
        model_dir=tmp_path / "model",
        max_workers=3,
        prom_targets=tmp_path / "targets.json",
    )
    assert env[PLATFORM_ENV] == "local"  # what validity profiles and the results' source read
    _setenv(monkeypatch, env)
    platform = get_platform()
    assert isinstance(platform, LocalPlatform)
    assert (platform.state_dir, platform.model_dir, platform.max_workers, platform.prom_targets) == (
        tmp_path / "state",
        tmp_path / "model",
        3,
        tmp_path / "targets.json",
    )
    _setenv(monkeypatch, step_env(state_dir=tmp_path, model_dir=tmp_path, max_workers=2))
    assert get_platform().prom_targets is None


def test_a_step_run_with_that_environment_uses_the_local_adapter(tmp_path):
    env = step_env(state_dir=tmp_path / "state", model_dir=tmp_path / "model", max_workers=2)
    p = _step("steps.teardown", ["--name", "demo", "--namespace", "bench"], env)
    # no local deployment of that name: nothing to delete (a cluster adapter would have needed a kubeconfig)
    assert p.returncode == 0 and "DGD bench/demo: already gone" in p.stdout, p.stderr


@pytest.mark.parametrize(
    "spec, why",
    [
        ("infersweep.local.dynamo.adapter", "must be 'module:attr'"),
        ("infersweep.no_such_module:make", "cannot load it (ModuleNotFoundError"),
        ("infersweep.local.dynamo.adapter:no_such_factory", "cannot load it (AttributeError"),
        ("infersweep.local.dynamo.adapter:NAME", "NAME is not callable"),
    ],
)
def test_a_bad_adapter_name_is_one_clear_error(spec, why, monkeypatch):
    _setenv(monkeypatch, {ADAPTER_ENV: spec})
    with pytest.raises(BadInput) as e:
        get_platform()
    assert str(e.value).startswith(f"{ADAPTER_ENV}={spec!r}: ") and why in str(e.value)


def test_a_platform_named_without_its_adapter_never_falls_back_to_the_cluster(monkeypatch):
    _setenv(monkeypatch, {PLATFORM_ENV: "local"})
    with pytest.raises(BadInput, match=f"{PLATFORM_ENV}='local' but {ADAPTER_ENV} names no adapter"):
        get_platform()


def test_the_step_exits_2_naming_the_variable(tmp_path):
    p = _step("steps.teardown", ["--name", "demo", "--namespace", "bench"], {ADAPTER_ENV: "nowhere:make"})
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.strip().splitlines()[-1].startswith(f"teardown: {ADAPTER_ENV}='nowhere:make': cannot load it")


def test_the_local_adapter_needs_its_state_directory(monkeypatch):
    _setenv(monkeypatch, {ADAPTER_ENV: "infersweep.local.dynamo.adapter:from_env"})
    with pytest.raises(BadInput, match="INFERSWEEP_LOCAL_STATE"):
        get_platform()


def test_each_environment_name_is_spelled_by_its_owner_only():
    """Local mode's variables are the local adapter's, the adapter selection select.py's and the simulation flag
    the result source's: any other module names them through the owner's constant, never as a string literal
    (a literal elsewhere is knowledge of another module's internals that breaks silently when it changes)."""
    import ast

    from infersweep.local.dynamo import adapter
    from infersweep.platform import select
    from infersweep.predict import source

    owners = {
        getattr(mod, n): mod.__name__
        for mod in (adapter, select, source)
        for n in dir(mod)
        if n.endswith("_ENV") and isinstance(getattr(mod, n), str)
    }
    assert {"INFERSWEEP_PLATFORM", "INFERSWEEP_LOCAL_STATE", "INFERSWEEP_PLATFORM_ADAPTER"} <= set(owners)
    spelled: dict[str, set[str]] = {}
    for d in ("infersweep", "steps", "workflows"):
        for f in (REPO / d).rglob("*.py"):
            module = ".".join(f.relative_to(REPO).with_suffix("").parts)
            for node in ast.walk(ast.parse(f.read_text(), str(f))):
                if isinstance(node, ast.Constant) and node.value in owners:
                    spelled.setdefault(node.value, set()).add(module)
    assert {name: sorted(mods) for name, mods in spelled.items() if mods != {owners[name]}} == {}
