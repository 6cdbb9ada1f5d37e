"""The local port of the Argo Workflows v4.1.2 controller: a rendered Workflow run on this machine.

One file per concern of Argo's own tree (workflow/controller/, workflow/validate/, workflow/sync/, ...):

- operator.py  `LocalArgo` (operator.go operate, executeTemplate, checkParallelism, processNodeRetries) and
               `LocalCluster`, how cluster things map onto this machine.
- nodes.py     `Node` (`status.nodes`, workflow_types.go NodeStatus) and the node table the operator keeps.
- templates.py `{{...}}` substitution, ProcessArgs, template resolution, items/sequences, Go durations.
- pod.py       a container template as a host process (workflowpod.go, podReconciliation, exec_control.go).
- dag.py       DAG templates (dag.go) and `depends` evaluation.
- steps.py     steps templates (steps.go).
- validate.py  what `argo submit` rejects, and what this executor cannot run, before anything starts.
- expr.py      `depends`/`dependencies` and retry expressions (ancestry.go, expr).
- when.py      `when` (govaluate).
- sync.py      semaphores and mutexes across local runs (workflow/sync).
- pvc.py       volumeClaimGC: what a completion does to the run's PVCs, and so what a retry finds.
- resource.py  resource templates (action create) against a local object store (operator.go executeResource).
- retry.py     `argo retry` / `argo resubmit` of a finished workflow (workflow/util/util.go).
- text.py      text Argo puts in variables byte for byte (Go's json/strconv, `{{workflow.failures}}`).
- errors.py    the exceptions every file above may raise.
- pod_deadline.py  a pod's deadlines as Argo sets them when it creates the pod (workflowpod.go).
- node_folder.py   the folder of a local pod's files and log, for the executor and `infersweep logs`.
- argosay.py   `argoproj/argosay:v2` (the image of Argo's own examples and e2e tests) as a local program.

LocalArgo's methods are spread over operator/nodes/templates/pod/dag/steps as mixins, as the controller's
`wfOperationCtx` methods are spread over operator.go, dag.go, steps.go and workflowpod.go; no file imports
operator.py but this one.
"""

from infersweep.local.argo.dag import eval_depends
from infersweep.local.argo.errors import WorkflowError
from infersweep.local.argo.nodes import Node
from infersweep.local.argo.operator import LocalArgo, LocalCluster

__all__ = ["LocalArgo", "LocalCluster", "Node", "WorkflowError", "eval_depends"]
