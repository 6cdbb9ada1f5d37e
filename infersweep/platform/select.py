"""Which DGD adapter a step uses.

In a cluster nothing is set and the steps use the Kubernetes adapter (infersweep.platform.kube). Whoever
runs the steps somewhere else names its adapter in the environment it gives them, like a plugin entry
point: INFERSWEEP_PLATFORM_ADAPTER="module:attr", a callable taking no arguments that returns a Platform.
Local mode sets it (infersweep.local.dynamo.adapter.step_env), so neither this package nor steps/ imports local
mode (the import-linter contracts in pyproject.toml hold that).
"""

from __future__ import annotations

import importlib
import os
from typing import Callable

from infersweep.platform.protocol import BadInput, Platform

ADAPTER_ENV = "INFERSWEEP_PLATFORM_ADAPTER"
# The platform's name ("local" in local mode; unset in a cluster): the validity profile of that name applies
# (infersweep.results.validity). Whether results are simulated is said by infersweep.predict.source's variable.
PLATFORM_ENV = "INFERSWEEP_PLATFORM"
# The one Prometheus the scrape step may query, fixed in its template at install (infersweep.results.server_metrics
# reads it; workflows/steps_library.py pins it): here so that rendering need not import results/.
PROMETHEUS_ENV = "INFERSWEEP_PROMETHEUS_URL"
# Which workers local mode runs (mocker, the default, or gpu: real engines on this machine's GPUs); set by
# infersweep.local.dynamo.adapter for its steps and read by infersweep.results.validity (the local-gpu profile), which
# may not import local mode: here, below both.
LOCAL_WORKERS_ENV = "INFERSWEEP_LOCAL_WORKERS"


def load_adapter(spec: str) -> Callable[[], Platform]:
    """The adapter factory a "module:attr" spec names; a bad spec is one clear error naming the variable."""
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise BadInput(f"{ADAPTER_ENV}={spec!r}: must be 'module:attr' (a callable that returns the DGD adapter)")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise BadInput(f"{ADAPTER_ENV}={spec!r}: cannot load it ({type(e).__name__}: {e})") from None
    if not callable(factory):
        raise BadInput(f"{ADAPTER_ENV}={spec!r}: {attr} is not callable")
    return factory


def get_platform() -> Platform:
    """The adapter the environment names (its factory reads its own settings from the environment too),
    else the Kubernetes API's."""
    env = os.environ
    spec = env.get(ADAPTER_ENV, "")
    if spec:
        return load_adapter(spec)()
    if env.get(PLATFORM_ENV):
        # A platform named without its adapter would silently fall back to the cluster: say so instead.
        raise BadInput(
            f"{PLATFORM_ENV}={env[PLATFORM_ENV]!r} but {ADAPTER_ENV} names no adapter; set it to the "
            f"adapter's 'module:attr' (infersweep run --local sets both)"
        )
    from infersweep.platform.kube import KubernetesPlatform

    return KubernetesPlatform()
