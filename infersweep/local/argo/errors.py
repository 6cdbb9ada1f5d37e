"""The local executor's exceptions, apart so its modules (operator, dag, steps, validate, ...) import them
without a cycle."""

from infersweep.errors import UserError


class WorkflowError(UserError, RuntimeError):
    """The workflow is rejected as written (what `argo submit` / the controller's validation rejects)."""


class ParallelismReached(Exception):
    """operator.go ErrParallelismReached: not now, try again on the next pass."""
