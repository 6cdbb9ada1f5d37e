"""What a DGD adapter does (the Platform protocol) and the one family of errors it raises.

A step catches `PlatformError` (and its kinds) and exits 1 with the message; `BadInput` exits 2. Anything
else (an API hiccup) goes to steps/transient.py, which decides between a retry (75) and a failure (1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from infersweep.errors import UserError


class PlatformError(RuntimeError):
    """A DGD operation that will not succeed as asked; the message says why (shown as the step's message).
    Exit 1 (steps/runner.py)."""

    exit_code = 1


class PVCNotBound(PlatformError):
    """The model-cache PVC will not bind; the message names the PVC, its phase and the cause."""


class DGDOwnedElsewhere(PlatformError):
    """A DGD of this name exists and belongs to another Workflow (or to nobody): never adopt or patch it."""


class NotReady(PlatformError):
    """The deployment will not serve; the message names the reason (shown as the step's message)."""


class NotServing(PlatformError):
    """Waiting for the deployment failed (NotReady, a timeout, ...): the message names the DGD and why."""


class BadInput(UserError, ValueError):
    """A step's input is unusable (exit 2); the message names the flag and the fix. A UserError, so the CLI
    prints it as one line too (`run --local --workers gpu` on a machine without GPUs: GpuShortfall)."""

    exit_code = 2


class Platform(Protocol):
    """Where a DGD is realised: the Kubernetes API (infersweep.platform.kube) or processes on this machine
    (infersweep.local.dynamo.adapter). The steps are the same code in both places; only the adapter differs."""

    def ensure_pvc(
        self,
        name: str,
        namespace: str,
        size: str,
        storage_class: str,
        *,
        bound_timeout_s: float = 300.0,
        poll_s: float = 2.0,
    ) -> str: ...
    def apply_dgd(
        self, dgd: dict[str, Any], namespace: str, owner: dict[str, str] | None, *, patch_own: bool = True
    ) -> str: ...
    def image_ids(self, name: str, namespace: str) -> dict[str, str]: ...
    def wait_ready(
        self,
        name: str,
        namespace: str,
        model: str,
        timeout_s: float,
        *,
        api_version: str = "v1beta1",
        bundle_path: Path | None = None,
    ) -> float: ...
    def delete_dgd(self, name: str, namespace: str, api_version: str, *, owner_uid: str = "") -> bool: ...
    def applied_at(self, name: str, namespace: str, api_version: str) -> float | None: ...
    def list_dgds(self, namespace: str, api_version: str, label_selector: str) -> list[str]: ...
    def runtime_namespaces(self, name: str, namespace: str, api_version: str) -> dict[str, str]: ...
