"""The local executor's exceptions, apart so its modules (argo, argo_validate, ...) import them without a cycle."""


class WorkflowError(RuntimeError):
    """The workflow is rejected as written (what `argo submit` / the controller's validation rejects)."""


class Stopped(Exception):
    """Kept for callers of the old API; stopping is now a shutdown strategy (see LocalArgo.stop)."""
