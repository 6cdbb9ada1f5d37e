"""The local port of the Argo Workflows v4.1.2 controller (file map: see the split commit)."""

from infersweep.local.argo.operator import LocalArgo, LocalCluster, Node, WorkflowError, eval_depends  # noqa: F401
