"""Every step, declared once (infersweep/step_interface.py says how): the pipeline's, and the experiment's own
(mark-start, record-ready, archive, compare, experiment-verdict), so every container a workflow runs gets the
same securityContext, resources, deadline, log archive and exit through the one runner (steps/runner.py).

Each step's options are spelled here and nowhere else: steps/<module>.py builds its parser with
`<STEP>.parser()`, workflows/steps_library.py renders its WorkflowTemplate from the same declaration, and the
pipelines pass its inputs through `steps_library.step_task`, which checks them against it. Paths under
/work (the run's workdir volume) and /model-cache (the model-cache PVC) are the only places steps read and
write; the pipeline provides both volumes.

Standard library only (the AIPerf image copies this file: images/aiperf.Dockerfile).
"""

from __future__ import annotations

from pathlib import Path

from infersweep.step_interface import (
    OUT,
    WORKFLOW_NAME,
    WORKFLOW_NAMESPACE,
    WORKFLOW_UID,
    Option,
    Step,
    input_ref,
    json_object,
)

WORKDIR = "/work"
RUN_DIR = f"{WORKDIR}/run"
TREATMENTS_DIR = f"{WORKDIR}/treatments"  # an experiment keeps each treatment's run folder here
READY_FILE = "ready.json"  # wait-ready's time-to-ready record, read by infersweep.results.context
MODEL_CACHE = "/model-cache"
DEPLOYED_DGD = f"{RUN_DIR}/deploy/dgd.yaml"  # the DGD as deploy applied it (per-run name, owner)
IMAGES_RAN = f"{RUN_DIR}/context/images.json"  # infersweep.results.context.IMAGES_RAN_FILE
NOT_SERVING = f"{RUN_DIR}/deploy/not-serving.txt"  # why wait-ready failed, for the verdict
# The commit model-cache resolved, for summarize in the exit handler (which cannot read task outputs).
MODEL_COMMIT = f"{RUN_DIR}/context/model-commit.txt"
API_VERSIONS = ("v1beta1", "v1alpha1")

RUN_ID_HELP = "the run ({{workflow.name}}): the DGD is named per run"

ENSURE_PVC = Step(
    "ensure-pvc",
    "ensure_pvc",
    "Create the model-cache PVC when missing and wait until it is Bound.",
    (
        Option("--name", "model-cache PVC name", required=True, input="pvc"),
        Option("--namespace", "namespace of the PVC", required=True, value=WORKFLOW_NAMESPACE),
        Option("--size", "size if it must be created", required=True, input=True),
        Option("--storage-class", "storage class if it must be created ('' = cluster default)", default="", input=True),
        Option("--bound-timeout-s", "fail when not Bound after this long", type=float, default=300.0),
    ),
    mounts=(),
    retry=True,
    read_only_root=True,
    deadline_s=900,
)

MODEL_CACHE_STEP = Step(
    "model-cache",
    "model_cache",
    "Put a model (and its speculative-decoding draft) into the model-cache PVC.",
    (
        Option("--model-id", "Hugging Face model id", required=True, input="model"),
        Option("--revision", "commit SHA to pin", required=True, input=True),
        Option("--cache-dir", "the model cache's mount point", required=True, value=MODEL_CACHE),
        Option("--source", "'hf' or file:///path for a folder on the PVC", default="hf", input=True),
        Option("--draft-model", "speculative-decoding draft model to cache too ('' = none)", default="", input=True),
        Option("--draft-revision", "revision of the draft model", default="main"),
        Option(
            "--model-dir-param",
            "file to write the model's folder to (Argo output parameter)",
            default="",
            output="model-dir",
        ),
        Option(
            "--commit-param",
            "file to write the resolved commit to (Argo output parameter)",
            default="",
            output="commit",
        ),
        Option(
            "--commit-file", "also write the commit here (the run dir, for summarize)", default="", value=MODEL_COMMIT
        ),
    ),
    mounts=("workdir", "model-cache"),
    writes=("workdir", "model-cache"),
    env_from_secret="hf-token",
    retry=True,
    deadline_s=21600,
)

DEPLOY = Step(
    "deploy",
    "deploy",
    "Apply the run's DynamoGraphDeployment (named per run, owned by the Workflow).",
    (
        Option("--ensure", "create only when missing (never patch), then wait until it serves --model", switch=True),
        Option(
            "--dgd",
            "DynamoGraphDeployment YAML (renamed per run: infersweep.names.dgd_run_name)",
            one_of="source",
            input=True,
        ),
        Option("--dgd-file", "a DGD as an earlier deploy of this run saved it (--save): used as is", one_of="source"),
        Option("--namespace", "namespace of the DGD", required=True, value=WORKFLOW_NAMESPACE),
        Option("--run-id", RUN_ID_HELP, default="", value=WORKFLOW_NAME),
        Option("--owner-name", "Workflow that owns the DGD (garbage collection)", default="", value=WORKFLOW_NAME),
        Option("--owner-uid", "uid of that Workflow", default="", value=WORKFLOW_UID),
        Option(
            "--url-param",
            "file to write the frontend URL to (Argo output parameter)",
            default="",
            output="frontend-url",
        ),
        Option("--save", "write the DGD as applied (per-run name, owner) to this file", default="", value=DEPLOYED_DGD),
        Option("--model", "with --ensure: the model /v1/models must list", default=""),
        Option("--timeout-s", "with --ensure: readiness timeout", type=float, default=1800),
    ),
    retry=True,
    deadline_s=900,  # the GPU-lane wait (platform/operations.py LANE_WAIT_S) + the apply
)

WAIT_READY = Step(
    "wait-ready",
    "wait_ready",
    "Wait until the run's DGD serves the model; fail fast when it cannot.",
    (
        Option(
            "--name",
            "DGD name",
            required=True,
            input="dgd-name",
            note="(the base name: the run's DGD is named per --run-id)",
        ),
        Option("--run-id", RUN_ID_HELP, default="", value=WORKFLOW_NAME),
        Option("--namespace", "namespace of the DGD", required=True, value=WORKFLOW_NAMESPACE),
        Option("--model", "model /v1/models must list", required=True, input=True),
        Option("--timeout-s", "fail when not serving after this many seconds", type=float, default=1800, input=True),
        Option(
            "--api-version", "DGD apiVersion (v1beta1 or v1alpha1)", default="v1beta1", choices=API_VERSIONS, input=True
        ),
        Option(
            "--bundle",
            "where to write the debug bundle when it fails",
            default="",
            value=f"{OUT}/debug-bundle.json",
            artifact="debug-bundle",
        ),
        Option("--images", "where to write the images the pods run (JSON)", default="", value=IMAGES_RAN),
        Option(
            "--failure", "where to write why it is not serving (the verdict quotes it)", default="", value=NOT_SERVING
        ),
        Option(
            "--ensure-from",
            "the DGD this run's deploy saved: re-created first when missing (a UI Retry of a failed "
            "wait-ready re-runs it after the exit handler deleted the DGD)",
            default="",
            value=DEPLOYED_DGD,
        ),
        Option(
            "--ready-file",
            "where to record when the DGD was applied and when it served",
            default="",
            value=f"{RUN_DIR}/{READY_FILE}",
        ),
    ),
    deadline_s=7200,
)

AIPERF_POINT = Step(
    "aiperf-point",
    "aiperf_point",
    "Run one AIPerf benchmark point into OUT/.",
    (
        Option("--url", "frontend URL", required=True, input=True),
        Option("--model", "served model name", required=True, input=True),
        Option("--tokenizer", "tokenizer folder", required=True, input=True),
        Option(
            "--concurrency", "concurrent requests (a rate point's in-flight cap)", type=int, required=True, input=True
        ),
        Option(
            "--request-rate",
            "requests/s of an open-loop point, 0 = closed loop (folder c<N>-rate<R>)",
            type=float,
            default=0.0,
            input=True,
        ),
        Option("--requests", "profiled requests", type=int, required=True, input=True),
        Option("--warmup", "warmup requests", type=int, default=0, input=True),
        Option("--isl", "input tokens per request (synthetic prompts)", type=int),
        Option("--osl", "output tokens per request (synthetic prompts)", type=int),
        Option(
            "--workload",
            "the workload as JSON (isl/osl, seq_dist, prefix, turns, trace; max_requests_factor, ci95_target: "
            "how far the point may be extended)",
            type=json_object,
            input=True,
        ),
        Option("--trace", "trace file to take requests from instead of --isl/--osl"),
        Option("--trace-type", "AIPerf --custom-dataset-type of --trace", default="mooncake_trace"),
        Option(
            "--max-error-rate", "failed-request fraction still counted as measured", type=float, default=0.0, input=True
        ),
        Option("--timeout-s", "stop the point (gracefully) after this many seconds", type=float, input=True),
        Option(
            "--grace-s",
            "wait after SIGINT before SIGKILL (default: infersweep.aiperf.point_run.DEFAULT_GRACE_S)",
            type=float,
        ),
        Option(
            "--out",
            "point dir: OUT/aiperf/, OUT/aiperf.log, OUT/result.json",
            required=True,
            value=f"{RUN_DIR}/points/c{input_ref('concurrency')}",
        ),
        Option("--aiperf", "AIPerf executable", default="aiperf"),
        Option(
            "--seed",
            "AIPerf --random-seed for this point; default: one of its own per concurrency and repetition "
            "(the same for every point when the workload reuses prompts)",
            type=int,
        ),
        Option(
            "--repetition",
            "repetition number of this point (its seed depends on it; folder c<N>-r<K> from 1)",
            type=int,
            default=0,
            input=True,
        ),
        Option("--request-timeout-s", "AIPerf --request-timeout-seconds", type=float),
        Option("--failed-request-threshold", "AIPerf --failed-request-threshold (0..1)", type=float),
        Option("--extra-inputs", "sent in every request body", nargs="*", default=[], metavar="KEY:VALUE"),
        Option(
            "--result-param", "also write {concurrency,status,reason} here (Argo output parameter)", output="result"
        ),
    ),
    extra_inputs=(
        ("ready-timeout-s", "readiness timeout when the point must bring the deployment back (a UI Retry)"),
        ("cpu", "CPU the AIPerf client gets (sized from the concurrency: aiperf_resources)"),
        ("memory", "memory the AIPerf client gets (sized from the concurrency: aiperf_resources)"),
    ),
    # AIPerf sleeps a fixed 2 s per point to flush its own server-metrics scrape; the scrape step
    # reads Prometheus instead, so that wait is GPU time spent on nothing (benchmarks/aiperf_startup.py).
    env={"AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD": "0"},
    image="aiperf",
    mounts=("workdir", "model-cache"),
    deadline_s=10800,
)

SCRAPE = Step(
    "scrape",
    "scrape",
    "Scrape the run's server metrics from Prometheus over each point's window.",
    (
        Option("--run-dir", "the run's result tree", required=True, value=RUN_DIR),
        Option("--prometheus-url", "Prometheus base URL ('' skips server metrics)", default="", input=True),
        Option("--queries", "the metric queries (default: params/metrics.yaml)"),
        Option("--namespace", "Kubernetes namespace of the run's DGD", required=True, value=WORKFLOW_NAMESPACE),
        Option("--dgd-name", "DGD name: every query is scoped to it", required=True, input=True),
        Option("--run-id", RUN_ID_HELP, default="", value=WORKFLOW_NAME),
        Option("--context", "the run's context as JSON (its gpu_type prices the GPU-hours)", default="", input=True),
    ),
    read_only_root=True,
    deadline_s=900,
)

SUMMARIZE = Step(
    "summarize",
    "summarize",
    "The run's results table, Pareto plot and report from its points.",
    (
        Option("--run-dir", "the run's result tree", required=True, value=RUN_DIR),
        Option("--gpu-count", "GPUs the deployment uses", type=int, required=True, input=True),
        Option("--slo", "SLO bounds as JSON", type=json_object, default={}, input=True),
        Option("--title", "plot title", default="infersweep", input=True),
        Option("--run-id", "the run's id (the workflow name); optional", value=WORKFLOW_NAME),
        Option(
            "--context",
            "the run's context as JSON (recipe hash, images, model revision, ...)",
            input=True,
            note="or @FILE (infersweep.results.context.parse_context_arg)",
        ),
        Option("--model-commit", "the commit the model-cache step resolved; optional", default=""),
        Option(
            "--model-commit-file",
            "file holding the commit model-cache resolved (used when --model-commit is not given)",
            default="",
            value=MODEL_COMMIT,
        ),
    ),
    artifacts=(
        ("results-csv", f"{RUN_DIR}/summary/results.csv"),
        ("results-parquet", f"{RUN_DIR}/summary/results.parquet"),
        ("results-md", f"{RUN_DIR}/summary/results.md"),
    ),
    # a run that measured nothing has no plot to draw
    optional_artifacts=(
        ("pareto-png", f"{RUN_DIR}/summary/pareto.png"),
        ("report-html", f"{RUN_DIR}/summary/report.html"),
    ),
    deadline_s=1800,
)

PUBLISH = Step(
    "publish",
    "publish",
    "Publish a run's local result tree to S3 (credentials from the AWS env/chain).",
    (
        Option("local_dir", "the run's result tree", type=Path, value=RUN_DIR),
        Option("--bucket", "S3 bucket", required=True, input=True),
        Option("--prefix", "S3 key prefix of this run", required=True, input=True),
        Option(
            "--retry-prefix",
            "when PREFIX already holds a complete run with other bytes (an Argo UI Retry of the "
            "same workflow re-publishes), publish under PREFIX-rN instead, never over it",
            switch=True,
            value=True,
        ),
        Option(
            "--store-prefix",
            "also make the run the results store's run <base>/<recipe>/<run-id> (this prefix) by a pointer to "
            "PREFIX, not a second copy: an experiment's treatment ('' = none)",
            default="",
            input=True,
        ),
    ),
    env_from_secret="s3",
    retry=True,
    read_only_root=True,
    deadline_s=3600,
)

REGRESSION_CHECK = Step(
    "regression-check",
    "regression_check",
    "Judge the run against the recipe's baseline run in S3.",
    (
        Option("--run-dir", "this run's result tree (summary/, points/)", required=True, value=RUN_DIR),
        Option("--bucket", "S3 bucket of results and baselines", required=True, input=True),
        Option(
            "--baseline-prefix", "S3 prefix of the recipe's baseline run ('' skips the check)", default="", input=True
        ),
        Option(
            "--tolerances",
            "regression tolerances per metric as JSON (the recipe's regression section)",
            type=json_object,
            default={},
            input=True,
        ),
        Option(
            "--report",
            "where to write the report (an output artifact)",
            required=True,
            value=f"{OUT}/regression.md",
            artifact="regression-report",
        ),
    ),
    env_from_secret="s3",
    deadline_s=900,
)

VERDICT = Step(
    "verdict",
    "verdict",
    "Fail the run when a point failed or nothing was measured.",
    (
        Option("--run-dir", "the run's result tree", required=True, value=RUN_DIR),
        Option("--points", "the sweep's points as JSON", required=True, input=True),
        Option(
            "--exit-steps",
            "the phases of the exit handler's earlier steps as JSON {task: phase} (Argo's "
            "tasks.X.status); any not Succeeded fails the run: the exit handler is judged by its leaf, this "
            "step, so a failure a later task's `depends` accepted would not fail it otherwise",
            type=json_object,
            default={},
            input=True,
        ),
    ),
    read_only_root=True,
    deadline_s=300,
)

TEARDOWN = Step(
    "teardown",
    "teardown",
    "Delete the run's DGD (one owned by another Workflow is left alone).",
    (
        Option(
            "--name", "DGD base name", required=True, input="dgd-name", note="(the run's DGD is named per --run-id)"
        ),
        Option("--run-id", RUN_ID_HELP, default="", value=WORKFLOW_NAME),
        Option(
            "--owner-uid",
            "the run's Workflow uid: a DGD owned by another is left alone",
            default="",
            value=WORKFLOW_UID,
        ),
        Option("--namespace", "namespace of the DGD", required=True, value=WORKFLOW_NAMESPACE),
        Option("--api-version", "DGD apiVersion (v1beta1 or v1alpha1)", default="v1beta1", input=True),
    ),
    mounts=(),
    retry=True,
    read_only_root=True,
)

# The experiment's own steps (workflows/experiment.py): the pipeline's steps write one run to /work/run, so an
# experiment marks when each treatment's deploy starts and ends, moves the run aside per treatment, and at the
# end compares the treatments and judges them (infersweep/experiment/workdir.py, compare.py).
MARK_START = Step(
    "mark-start",
    "mark_start",
    "Record when a treatment's deploy (or reconfigure) starts, for its time-to-ready.",
    (Option("--out", "the run folder", required=True, value=RUN_DIR),),
    read_only_root=True,
    deadline_s=300,
)

RECORD_READY = Step(
    "record-ready",
    "record_ready",
    "Record a treatment's time-to-ready (since mark-start) in its run folder.",
    (Option("--out", "the run folder", required=True, value=RUN_DIR),),
    read_only_root=True,
    deadline_s=300,
)

ARCHIVE = Step(
    "archive",
    "archive",
    "Move the run folder aside as the treatment's, keeping an earlier attempt's.",
    (
        Option("--run-dir", "the run folder", required=True, value=RUN_DIR),
        Option("--treatments-dir", "where each treatment's folder is kept", required=True, value=TREATMENTS_DIR),
        Option("--treatment", "the treatment's name (its folder)", required=True, input=True),
    ),
    read_only_root=True,
    deadline_s=600,
)

COMPARE = Step(
    "compare",
    "compare",
    "Write the experiment report from every treatment's results table.",
    (
        Option("--experiment", "the experiment spec as YAML text", required=True, input=True),
        Option("--treatments-dir", "where each treatment's folder is kept", required=True, value=TREATMENTS_DIR),
        Option("--out", "where the report is written (published next)", required=True, value=RUN_DIR),
    ),
    deadline_s=900,
)

EXPERIMENT_VERDICT = Step(
    "experiment-verdict",
    "experiment_verdict",
    "Fail the experiment when a treatment had a failed point or measured nothing.",
    (
        Option("--treatments-dir", "where each treatment's folder is kept", required=True, value=TREATMENTS_DIR),
        Option("--points", "JSON: treatment name -> its points", type=json_object, required=True, input=True),
    ),
    read_only_root=True,
    deadline_s=300,
)

# Not a WorkflowTemplate of their own: the reaper runs in its CronWorkflow (workflows/cron.py), aiperf-results
# is a tool over an AIPerf artifact dir.
REAP = Step(
    "reap",
    "reap",
    "Delete the DGDs whose Workflow is over (`argo terminate` skips the exit handler).",
    (
        Option("--namespace", "namespace to reap", required=True, value=WORKFLOW_NAMESPACE),
        Option(
            "--api-version",
            "DGD apiVersion the operator serves (a CRD serving both lists every DGD under either)",
            default="v1beta1",
            choices=API_VERSIONS,
        ),
    ),
    mounts=(),
    template=False,
)

# The UI launcher's render step (workflows/launcher.py builds its container: the launcher's own scratch volume
# and settings, no workdir): writes the run Workflow a resource template then creates.
LAUNCHER_STEP = Step(
    "launcher",
    "launcher",
    "Render the run Workflow of a recipe or experiment chosen in the Argo UI; refuse a bad choice, create nothing.",
    (
        Option("--kind", "what is launched", required=True, choices=("recipe", "experiment")),
        Option("--name", "the catalog name, or from-git", required=True),
        Option("--git-repo", "with from-git: the repository URL", default=""),
        Option("--git-commit", "with from-git: the full 40-hex commit id", default=""),
        Option("--git-path", "with from-git: the file inside the repository", default=""),
        Option("--set", "recipe launches: KEY=VALUE lines", default=""),
        Option("--namespace", "the run's namespace", required=True, value=WORKFLOW_NAMESPACE),
        Option("--launcher", "the launcher Workflow's name (a label of the run)", required=True, value=WORKFLOW_NAME),
        Option("--settings", "the install's cluster settings, YAML", required=True),
        Option(
            "--run-params",
            "JSON: run settings fixed at install, applied before --set",
            type=json_object,
            default="{}",
        ),
        Option("--out", "where the run Workflow is written, JSON", required=True, type=Path),
        Option("--scratch", "a writable folder (Git checkouts)", required=True, type=Path),
        Option("--git-credentials", "the mounted Secret of git_credentials_secret (a folder)", default=""),
        # The install's `--dgd-api` (workflows/launcher.py bakes it in): the DGD apiVersion the cluster's operator
        # serves, so a UI launch renders the release of that operator, as `infersweep submit --dgd-api` does.
        Option(
            "--dgd-api",
            "the DGD apiVersion the install was rendered for",
            default="v1beta1",
            choices=("v1beta1", "v1alpha1"),
        ),
    ),
    mounts=(),
    read_only_root=True,
    deadline_s=900,  # a Git fetch plus one render: minutes at most
    template=False,
)

AIPERF_RESULTS = Step(
    "aiperf-results",
    "aiperf_results",
    "Summarise one AIPerf artifact dir as JSON.",
    (
        Option("artifact_dir", "the AIPerf artifact dir"),
        Option("--max-error-rate", "fraction 0..1 of failed requests tolerated", type=float, default=0.0),
        Option("--exit-code", "AIPerf's exit code, if known", type=int),
    ),
    image="aiperf",
    template=False,
)

DECLARED: tuple[Step, ...] = (
    ENSURE_PVC,
    MODEL_CACHE_STEP,
    DEPLOY,
    WAIT_READY,
    AIPERF_POINT,
    SCRAPE,
    SUMMARIZE,
    PUBLISH,
    REGRESSION_CHECK,
    VERDICT,
    TEARDOWN,
    MARK_START,
    RECORD_READY,
    ARCHIVE,
    COMPARE,
    EXPERIMENT_VERDICT,
    REAP,
    LAUNCHER_STEP,
    AIPERF_RESULTS,
)
