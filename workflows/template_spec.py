"""What the pipeline (workflows/pipeline.py) and experiment (workflows/experiment.py) WorkflowTemplates share:
the spec around their DAGs (`workflow_spec`) and the AIPerf point task their sweeps run (`point_task`).

Written once here so that a change to how a run keeps its workdir, archives its logs or measures a point
reaches both kinds of run alike.
"""

from __future__ import annotations

from typing import Any

from hera.workflows import Task
from hera.workflows import models as m

from infersweep.cluster_settings import ClusterSettings
from workflows.steps_library import pod_security_context, step_task


def workflow_spec(
    settings: ClusterSettings,
    *,
    name: str,
    labels: dict[str, str],
    entrypoint: str,
    workdir_size: str,
    model_cache_claim: str,
    deadline_s: int,
) -> dict[str, Any]:
    """The WorkflowTemplate's keyword arguments around its DAGs: the run's workdir (a ReadWriteOnce PVC per
    Workflow), the model cache volume, the deadline, the garbage collection of PVCs, pods and the Workflow, the
    ServiceAccount, the pods' securityContext and the artifact repository. The exit handler is `exit-handler`."""
    return {
        "name": name,
        "labels": labels,
        "entrypoint": entrypoint,
        "on_exit": "exit-handler",
        "volume_claim_templates": [
            m.PersistentVolumeClaim(
                metadata=m.ObjectMeta(name="workdir"),
                spec=m.PersistentVolumeClaimSpec(
                    access_modes=["ReadWriteOnce"],
                    resources=m.VolumeResourceRequirements(requests={"storage": m.Quantity(workdir_size)}),
                ),
            )
        ],
        "volumes": [
            m.Volume(
                name="model-cache",
                persistent_volume_claim=m.PersistentVolumeClaimVolumeSource(claim_name=model_cache_claim),
            )
        ],
        "active_deadline_seconds": deadline_s,
        # The workdir PVC is kept unless the run Succeeded: a failed, stopped or terminated run (all end Failed)
        # keeps its points' files and the DGD deploy saved, so the UI's Retry finds them. argo-workflows v4.1.2
        # workflow/controller/operator.go deletePVCs: OnWorkflowSuccess returns early when the phase is not
        # Succeeded ("Skip deleting PVCs to reuse them for retried failed/error workflows"); OnWorkflowCompletion
        # deletes them on every completion, and a Retry (workflow/util/util.go FormulateRetryWorkflow) would then
        # get a new empty one from createPVCs. OnWorkflowSuccess is also Argo's default (workflow_types.go
        # GetVolumeClaimGC): set here so a changed default cannot silently break Retry. The PVC is owned by the
        # Workflow (createPVCs sets the ownerReference), so it goes with it at the TTL below.
        "volume_claim_gc": m.VolumeClaimGC(strategy="OnWorkflowSuccess"),
        "pod_gc": m.PodGC(strategy="OnPodSuccess"),
        "ttl_strategy": m.TTLStrategy(seconds_after_completion=7 * 24 * 3600),
        "service_account_name": settings.service_account,
        # Every pod runs as the images' non-root USER (Pod Security "restricted"; steps_library.py).
        "security_context": pod_security_context(settings.steps),
        # Logs and output artifacts go to the S3 repository the operator installed, by reference: the
        # template carries no endpoint or credentials (ConfigMap printed by `infersweep install`).
        "artifact_repository_ref": m.ArtifactRepositoryRef(
            config_map=settings.artifact_repository.configmap, key=settings.artifact_repository.key
        ),
        "archive_logs": True,
    }


def point_task(
    *, url: str, model: str, workload: str, max_error_rate: str, timeout_s: str, ready_timeout_s: str
) -> Task:
    """The sweep's AIPerf points, one task per item of the template's `points` input (the items are
    pipeline.points_json's: concurrency, request_rate, repetition, requests, warmup, cpu, memory), measured
    against the deployment at `url` with the tokenizer of the template's `tokenizer` input."""
    return step_task(
        "aiperf-point",
        name="point",
        with_param="{{inputs.parameters.points}}",
        arguments={
            "url": url,
            "model": model,
            "tokenizer": "{{inputs.parameters.tokenizer}}",
            "concurrency": "{{item.concurrency}}",
            "request-rate": "{{item.request_rate}}",
            "repetition": "{{item.repetition}}",
            "requests": "{{item.requests}}",
            "warmup": "{{item.warmup}}",
            "workload": workload,
            "max-error-rate": max_error_rate,
            "timeout-s": timeout_s,
            # the point's ensure-deployed init container brings a deleted DGD back (UI Retry)
            "ready-timeout-s": ready_timeout_s,
            "cpu": "{{item.cpu}}",
            "memory": "{{item.memory}}",
        },
    )
