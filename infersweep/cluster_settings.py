"""params/cluster.yaml, the cluster settings: the images, namespace, cache PVC, bucket, ServiceAccount, artifact
repository, GPU guard and pools, nightly suite, step pods' identity/resources/deadlines/retries and the reaper of
the cluster a run goes to. One typed, strict model (unknown fields are refused, nothing is coerced): every mistake
is one line naming the field (its path in the file) and the fix, before anything is rendered.

(The DGD adapters, Kubernetes and local, are the other "platform": infersweep/platform/. This module is only
the settings file.) A `--set` that overrides a workflow parameter backed by a setting (model-cache-size,
s3-bucket, ...) is checked with the same field type (`check_set`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from infersweep import k8s_types as k8s
from infersweep.k8s_types import is_dns_label, is_dns_subdomain, is_quantity
from infersweep.model_errors import Mistakes as _Mistakes
from infersweep.model_errors import format_errors, messages
from infersweep.model_errors import short as _short
from infersweep.params_files import RecipeError, Strict
from infersweep.params_files import read_yaml_mapping as _read_yaml_mapping
from infersweep.paths import params_dir

# The span template holds MAX_LANES locks (its gpu-lock-N parameters, declared in infersweep/pipeline_params.py):
# a pool may have at most this many lanes.
from infersweep.pipeline_params import MAX_LANES
from infersweep.pipeline_params import SETTINGS as _PARAM_SETTINGS

SETTINGS_FILE = "cluster.yaml"
OLD_SETTINGS_FILE = "platform.yaml"  # its name until the DGD adapters took the word "platform"
SCHEDULERS = ("argo", "kueue", "kai", "volcano")


class ClusterSettingsError(RecipeError):
    """params/cluster.yaml (or a --set backed by it) is wrong; the message has one line per mistake. A
    RecipeError, so the CLI prints it as one clear message without a traceback."""


# ---------------------------------------------------------------------------------------- field types
# Each type checks its value itself (BeforeValidator) so the message says what the value is for and how to
# write it; the model is strict, so nothing is converted behind the user's back (a quoted "16" is not 16).


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _checked(ok, fix: str):
    def check(value: Any) -> Any:
        if not ok(value):
            raise ValueError(f"{fix} (got {_short(value)})")
        return value

    return BeforeValidator(check)


def _cpu(v: Any) -> Any:
    # `cpu: 2` is as good as `cpu: "2"` to Kubernetes: keep the int's spelling as the quantity string.
    if _is_int(v) and v > 0:
        return str(v)
    if not is_quantity(v, positive=True):
        raise ValueError(f'must be a CPU quantity like 250m, 1 or "2" (got {_short(v)})')
    return v


def _text(ok, fix: str, *, empty_ok: bool = False):
    """A string field that `ok` accepts (and "" too with empty_ok: none, the default), else refused with `fix`."""
    return Annotated[str, _checked((lambda v: v == "" or ok(v)) if empty_ok else ok, fix)]


DnsLabel = _text(
    is_dns_label,
    "must be a Kubernetes name (lowercase letters, digits and '-', starting and ending with a letter or digit, "
    "at most 63)",
)
DnsSubdomain = _text(
    is_dns_subdomain, "must be a Kubernetes object name (lowercase letters, digits, '-' and '.', at most 253)"
)
StorageClass = _text(
    is_dns_subdomain, 'must be a StorageClass name, or "" for the cluster\'s default class', empty_ok=True
)
OptionalSecret = _text(is_dns_subdomain, 'must be a Secret name, or "" for none', empty_ok=True)
Quantity = _text(lambda v: is_quantity(v, positive=True), "must be a Kubernetes quantity like 500Gi or 512Mi")
CpuQuantity = Annotated[str, BeforeValidator(_cpu)]
ImageRef = _text(
    k8s.matches(k8s.IMAGE_REF, 512),
    "must be an image reference like ghcr.io/infersweep/steps:0.1.0 (registry/path:tag)",
)
S3Bucket = _text(k8s.matches(k8s.S3_BUCKET), "not an S3 bucket name (3-63 lowercase letters, digits, '.', '-')")
S3Prefix = _text(
    lambda v: k8s.matches(k8s.S3_PREFIX, 512)(v) and ".." not in v.split("/"),
    "use a key prefix like runs/team-a (letters, digits, '-', '_', '.', no '..' and no leading or trailing '/')",
)
OptionalUrl = _text(
    k8s.matches(k8s.URL, 2048),
    'give an http(s):// URL like http://prometheus.monitoring:9090, or "" for none',
    empty_ok=True,
)
S3Endpoint = _text(
    k8s.matches(k8s.HOST_PORT),
    "give the S3 endpoint as host[:port] without a scheme, like s3.amazonaws.com (Argo's s3.endpoint)",
)
Region = _text(
    k8s.matches(k8s.REGION, 64), 'must be a region like us-east-1, or "" for the endpoint\'s default', empty_ok=True
)
ConfigMapKey = _text(k8s.matches(k8s.CONFIGMAP_KEY), "must be a ConfigMap key (letters, digits, '-', '_', '.')")
Duration = _text(k8s.matches(k8s.DURATION, 64), "must be a duration like 10s, 10m or 1h30m")
Cron = _text(
    k8s.is_cron, 'must be a cron schedule of five fields like "0 1 * * *" (minute hour day-of-month month day-of-week)'
)
TimeZone = _text(k8s.is_timezone, "must be an IANA time zone like Etc/UTC or Europe/Paris")


def _pos_int(what: str):
    return Annotated[int, _checked(lambda v: _is_int(v) and v >= 1, f"must be a positive integer, {what}")]


def _number(what: str, minimum: float = 0, strict_min: bool = True):
    def ok(v):
        return (
            (_is_int(v) or isinstance(v, float))
            and v == v
            and v != float("inf")
            and (v > minimum if strict_min else v >= minimum)
        )

    bound = f"> {minimum:g}" if strict_min else f">= {minimum:g}"
    return Annotated[int | float, _checked(ok, f"must be a number {bound}, {what}")]  # 2 stays 2 (rendered "2")


class _Strict(Strict):
    # The one strict base (params_files.Strict: unknown fields are mistakes), and strict: no coercion.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# -------------------------------------------------------------------------------------------- sections


class Images(_Strict):
    steps: ImageRef = Field(description="the step image (images/steps.Dockerfile)")
    aiperf: ImageRef = Field(description="the AIPerf image (images/aiperf.Dockerfile)")


class ModelCache(_Strict):
    pvc: DnsLabel = Field(description="the PVC the model weights are cached on")
    size: Quantity = Field(description="its size when ensure-pvc creates it, e.g. 500Gi")
    storage_class: StorageClass = Field(default="", description='its StorageClass; "" = the cluster\'s default')


_BOOL = _checked(lambda v: isinstance(v, bool), "must be true or false")


class S3(_Strict):
    bucket: S3Bucket = Field(description="the results bucket")
    prefix: S3Prefix = Field(description="runs go to s3://<bucket>/<prefix>/<recipe>/<run-id>/")
    credentials_secret: DnsSubdomain = Field(description="Secret with AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY")
    # MinIO, Ceph RGW, any S3-compatible store: its host[:port] as the step pods reach it ("" = AWS S3). The
    # S3 steps get it as AWS_ENDPOINT_URL (botocore reads it: configprovider.py, 'endpoint_url'), and
    # infersweep.results.s3 then uses path-style addressing.
    endpoint: _text(
        k8s.matches(k8s.HOST_PORT),
        'give the S3 endpoint as host[:port] without a scheme, like minio.minio.svc.cluster.local:9000, or "" for AWS S3',
        empty_ok=True,
    ) = ""
    region: Region = ""
    insecure: Annotated[bool, _BOOL] = False  # true: plain http to `endpoint` (an in-cluster MinIO without TLS)

    @property
    def endpoint_url(self) -> str:
        return f"{'http' if self.insecure else 'https'}://{self.endpoint}" if self.endpoint else ""


class PodMonitors(_Strict):
    """Where Dynamo's platform chart put its PodMonitors (deploy/helm/charts/platform/components/operator/
    templates/prometheus.yaml: dynamo-frontend and dynamo-worker, in the platform's release namespace).
    `infersweep preflight` checks they exist and that the Prometheus scrapes them."""

    namespace: DnsLabel = Field(default="dynamo-system", description="the Dynamo platform's namespace")
    names: list[DnsLabel] = Field(default_factory=lambda: ["dynamo-frontend", "dynamo-worker"], min_length=1)


class Autoscaling(_Strict):
    prometheus_url: OptionalUrl = Field(default="", description="the Prometheus KEDA's triggers query")


class ArtifactRepository(_Strict):
    configmap: DnsSubdomain
    key: ConfigMapKey
    bucket: S3Bucket
    endpoint: S3Endpoint
    region: Region = ""
    insecure: Annotated[bool, _checked(lambda v: isinstance(v, bool), "must be true or false (true: plain http)")] = (
        False
    )


class GpuGuardSettings(_Strict):
    scheduler: Annotated[
        Literal["argo", "kueue", "kai", "volcano"],
        _checked(
            lambda v: v in SCHEDULERS,
            f"must be one of {', '.join(SCHEDULERS)}; argo = Argo semaphores only, the "
            "others = that scheduler's queues",
        ),
    ] = "argo"


class GpuPoolSettings(_Strict):
    gpus: _pos_int("the GPUs of that type the benchmarks may use")  # type: ignore[valid-type]
    # lane size (GPUs per run) -> runs of that size at once; None = buddy_lanes(gpus). Checked below, with gpus.
    lanes: dict[int, int] | None = None
    queue: DnsLabel | None = Field(
        default=None, description="Kueue LocalQueue / KAI / Volcano queue of the pool (default infersweep-<type>)"
    )

    @model_validator(mode="wrap")
    @classmethod
    def _lanes(cls, data: Any, handler):
        # The lanes' messages need the pool's size, so they are checked here with it; the pool's other fields
        # are still checked (each mistake its own line).
        mistakes = _lane_mistakes(data) if isinstance(data, dict) else []
        if mistakes:
            data = {**data, "lanes": None}
        try:
            pool = handler(data)
        except ValidationError as e:
            if not mistakes:
                raise
            raise _Mistakes(mistakes + [m for x in e.errors() for m in _messages(x, cls)]) from None
        if mistakes:
            raise _Mistakes(mistakes)
        return pool


def _lane_mistakes(data: dict) -> list[tuple[str, str]]:
    gpus, raw = data.get("gpus"), data.get("lanes")
    if raw is None:
        return []
    if not isinstance(raw, dict) or not raw:
        return [("lanes", "must map a run size in GPUs to how many such runs share the pool, e.g. {1: 4, 2: 2, 4: 2}")]
    if not (_is_int(gpus) and gpus >= 1):
        return []  # `gpus` has its own message; the lanes are judged against a valid pool size
    mistakes, lanes = [], {}
    for size, n in raw.items():
        bad_size = not _is_int(size) or size < 1 or size > gpus
        bad_n = not _is_int(n) or n < 1
        if bad_size:
            mistakes.append((f"lanes.{size}", f"a lane size must be an integer from 1 to the pool's {gpus} GPUs"))
        if bad_n:
            mistakes.append(
                (f"lanes.{size}", f"must be a positive integer, the runs of that size at once (got {_short(n)})")
            )
        if not bad_size and not bad_n:
            lanes[size] = n
    used = sum(s * n for s, n in lanes.items())
    if used > gpus:
        mistakes.append(
            (
                "lanes",
                f"lanes take {used} GPUs ({' + '.join(f'{n} x {s}' for s, n in sorted(lanes.items()))}) "
                f"but the pool has {gpus}; lower them so that the sum of size x runs is at most {gpus}",
            )
        )
    if len(lanes) > MAX_LANES:
        mistakes.append(
            (
                "lanes",
                f"{len(lanes)} lane sizes but the span template holds at most {MAX_LANES} locks; "
                "merge sizes (a run takes the smallest lane that holds it)",
            )
        )
    return mistakes


class Nightly(_Strict):
    schedules: list[Cron] = Field(min_length=1)
    timezone: TimeZone = "Etc/UTC"
    baselines_prefix: S3Prefix = Field(description="baselines are s3://<s3.bucket>/<baselines_prefix>/<recipe>/")
    suite: list[DnsLabel] = Field(min_length=1, description="recipe names, one CronWorkflow each")


class Security(_Strict):
    # Pod Security "restricted" wants runAsNonRoot: the user must not be root (0).
    run_as_user: _pos_int("the images' USER, not root (0)")  # type: ignore[valid-type]
    run_as_group: _pos_int("the images' group, not root (0)")  # type: ignore[valid-type]
    fs_group: _pos_int("the group that owns a fresh PVC's files")  # type: ignore[valid-type]


class StepResources(_Strict):
    cpu: CpuQuantity = Field(description="request (no CPU limit)")
    memory: Quantity = Field(description="request and limit")


class AiperfSizing(_Strict):
    cpu_base: _pos_int("cores for AIPerf's services")  # type: ignore[valid-type]
    cpu_per_worker: _number("cores per AIPerf worker")  # type: ignore[valid-type]
    max_workers: _pos_int("AIPerf's worker cap (32 in AIPerf 0.13)")  # type: ignore[valid-type]
    memory_base_mi: _pos_int("MiB for AIPerf's services")  # type: ignore[valid-type]
    memory_per_worker_mi: _pos_int("MiB per AIPerf worker")  # type: ignore[valid-type]


class Retry(_Strict):
    limit: Annotated[int, _checked(lambda v: _is_int(v) and v >= 0, "must be an integer >= 0, the retries")]
    backoff: Duration
    factor: _number("the backoff's growth per retry", 1, strict_min=False)  # type: ignore[valid-type]
    # Optional: by default each retried step's maxDuration covers all its attempts at their full deadlines
    # (workflows/steps_library.py retry_max_duration_s); a value here only lengthens it.
    max_duration: Duration | None = None


StepName = Annotated[str, _checked(is_dns_label, "must be a step name (as in workflows/steps_library.py STEPS)")]
# Steps renamed since a settings file may have been written, old name -> new (issue 40: one name per concept).
RENAMED_STEPS = {"launch": "launcher"}


class StepSettings(_Strict):
    security: Security
    resources: dict[StepName, StepResources] = Field(description="per step name; `default` for the others")
    aiperf: AiperfSizing
    deadlines_s: dict[StepName, _pos_int("activeDeadlineSeconds of the step")]  # type: ignore[valid-type]
    retry: Retry

    @model_validator(mode="after")
    def _has_default(self) -> StepSettings:
        if "default" not in self.resources:
            raise _Mistakes(
                [
                    (
                        "resources.default",
                        "required: the cpu and memory of every step not listed, e.g. {cpu: 250m, memory: 512Mi}",
                    )
                ]
            )
        return self

    @model_validator(mode="after")
    def _known_steps(self) -> StepSettings:
        # A key naming no step would be read by nobody: the setting would silently not apply (a typo, or a
        # step renamed since the file was written), so it is refused with the names that exist.
        from infersweep.step_declarations import DECLARED

        known = {s.name for s in DECLARED}
        mistakes = []
        for setting, keys in (("resources", set(self.resources) - {"default"}), ("deadlines_s", set(self.deadlines_s))):
            for key in sorted(keys - known):
                now = RENAMED_STEPS.get(key)
                fix = f"the step is called {now!r} now" if now else f"one of {', '.join(sorted(known))}"
                mistakes.append((f"{setting}.{key}", f"no step is called {key!r}: {fix}"))
        if mistakes:
            raise _Mistakes(mistakes)
        return self

    def resources_of(self, step: str) -> StepResources:
        return self.resources.get(step) or self.resources["default"]


# What a UI user may change through the launcher's `set` (workflows/launcher.py, infersweep/launcher/derive.py):
# recipe field paths (a path covers its sub-fields) and run parameters. Images, env, placement, transport
# annotations, the bucket, the PVC, the Prometheus and the model source are not in it: they decide what runs
# on the GPU nodes with which credentials, which is the namespace admins' call (docs/security.md).
DEFAULT_UI_SET = (
    "workload",
    "router",
    "slo",
    "regression",
    "ready-timeout-s",
    "baseline-prefix",
)


class TrustSettings(_Strict):
    """Who may ask for what (docs/security.md): the registries DGD images come from, the Git hosts the
    launcher's credentials are given to, the changes a UI user may make."""

    image_registries: list[
        Annotated[
            str,
            _checked(
                k8s.matches(k8s.REGISTRY_PREFIX, 255),
                "must be a registry path ending in '/', like nvcr.io/nvidia/ai-dynamo/ (a DGD image must start with it)",
            ),
        ]
    ] = Field(default_factory=lambda: ["nvcr.io/nvidia/ai-dynamo/"], min_length=1)
    git_credential_hosts: list[
        Annotated[
            str, _checked(k8s.matches(k8s.GIT_HOST, 255), "must be a Git host[:port] like github.com (https only)")
        ]
    ] = Field(default_factory=list, description="https hosts the Git credentials are given to")
    ui_set: list[
        Annotated[
            str,
            _checked(
                k8s.matches(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*", 128), "must be a recipe field path or a run parameter"
            ),
        ]
    ] = Field(default_factory=lambda: list(DEFAULT_UI_SET))


class Reaper(_Strict):
    schedule: Cron
    service_account: DnsSubdomain


# ------------------------------------------------------------------------------------- the whole file


@dataclass(frozen=True)
class GpuPool:
    """A pool as the GPU guard uses it: the settings with their defaults filled in."""

    gpu_type: str
    gpus: int
    lanes: dict[int, int]  # lane size (GPUs per run) -> runs of that size at once
    whole_pool_runs: bool  # a run may take every lane (only when each lane holds one run)
    queue: str  # Kueue LocalQueue / KAI queue / Volcano queue of this pool


@dataclass(frozen=True)
class GpuGuardConfig:
    scheduler: str
    pools: dict[str, GpuPool] = field(default_factory=dict)


def buddy_lanes(gpus: int) -> dict[int, int]:
    """Default lanes of a pool: one run of each power of two below the pool size (8, 4, 2, 1 on 16 GPUs:
    together 15 <= 16), and a run of the whole pool takes all of them."""
    lanes, size = {}, 1
    while size < gpus and size + sum(lanes) <= gpus:
        lanes[size] = 1
        size *= 2
    return lanes


class ClusterSettings(_Strict):
    """params/cluster.yaml. Comments in the file say what each section is for."""

    images: Images
    namespace: DnsLabel
    model_cache: ModelCache
    hf_token_secret: DnsSubdomain
    # Keys username + password (kubernetes.io/basic-auth) or ssh-privatekey + known_hosts (kubernetes.io/ssh-auth)
    # for the UI launcher's recipes from private Git repositories (infersweep/launcher/git_credentials.py).
    git_credentials_secret: OptionalSecret = ""
    # The Dynamo release of the cluster's operator (a `dynamo:` version of params/engines/releases/*.yaml,
    # e.g. 1.3.1): its images and flags render in whichever DGD apiVersion --dgd-api names, if its operator
    # serves it. "" = the release --dgd-api picks (v1beta1: 1.6.1, v1alpha1: 1.3.1). infersweep/recipe/release.py.
    dynamo_release: str = ""
    s3: S3
    service_account: DnsSubdomain
    # The Prometheus the scrape step queries unless a submit sets prometheus-url; "" = no server metrics.
    prometheus_url: OptionalUrl = ""
    pod_monitors: PodMonitors = PodMonitors()
    autoscaling: Autoscaling = Autoscaling()
    artifact_repository: ArtifactRepository
    gpu_guard: GpuGuardSettings = GpuGuardSettings()
    gpu_pools: Annotated[
        dict[str, GpuPoolSettings],
        _checked(
            lambda v: isinstance(v, dict) and bool(v),
            "must map each GPU type to {gpus: N} (N = GPUs of that type the benchmarks may use)",
        ),
    ]
    nightly: Nightly
    steps: StepSettings
    reaper: Reaper
    trust: TrustSettings = TrustSettings()

    @cached_property
    def guard(self) -> GpuGuardConfig:
        """The GPU guard's scheduler and pools with their defaults (lanes, queue) filled in."""
        pools = {}
        for gpu, p in self.gpu_pools.items():
            lanes = dict(sorted((p.lanes if p.lanes is not None else buddy_lanes(p.gpus)).items()))
            pools[gpu] = GpuPool(
                gpu,
                p.gpus,
                lanes,
                whole_pool_runs=all(n == 1 for n in lanes.values()),
                queue=p.queue or f"infersweep-{gpu.lower()}",
            )
        return GpuGuardConfig(self.gpu_guard.scheduler, pools)

    def changed(self, **sections: Any) -> ClusterSettings:
        """A copy with whole sections replaced (plain data, validated like the file): for tests and tools."""
        return parse_cluster_settings({**self.model_dump(exclude_unset=True), **sections}, where="(changed settings)")


def _messages(e: dict, model: type[BaseModel] | None = None) -> list[tuple[str, str]]:
    return messages(e, model or ClusterSettings)


def _format(where: str, err: ValidationError) -> list[str]:
    return format_errors(where, err, ClusterSettings)


def parse_cluster_settings(
    data: Any, where: str = f"params/{SETTINGS_FILE}", gpu_types: set[str] | None = None
) -> ClusterSettings:
    """The typed settings; ClusterSettingsError with every mistake, one per line. `gpu_types` (params/gpus.yaml)
    lets the pools' names be checked too."""
    lines: list[str] = []
    if not isinstance(data, dict):
        raise ClusterSettingsError(f"{where}: the top level must be a mapping of sections (got {type(data).__name__})")
    if gpu_types is not None and isinstance(data.get("gpu_pools"), dict):
        lines += [
            f"{where}: gpu_pools.{gpu}: unknown GPU type; use one of {sorted(gpu_types)} or add it to params/gpus.yaml"
            for gpu in data["gpu_pools"]
            if gpu not in gpu_types
        ]
    try:
        settings = ClusterSettings.model_validate(data)
    except ValidationError as e:
        lines += _format(where, e)
    if lines:
        raise ClusterSettingsError("\n".join(lines))
    return settings


def settings_path(pdir: Path | None = None) -> Path:
    """params/cluster.yaml; refuses a params/platform.yaml left from before the rename (it would be ignored)."""
    pdir = pdir or params_dir()
    old = pdir / OLD_SETTINGS_FILE
    if old.exists():
        raise ClusterSettingsError(
            f"{old}: the cluster settings file is now {pdir / SETTINGS_FILE}; "
            + (
                f"move your changes into it and delete {old}"
                if (pdir / SETTINGS_FILE).exists()
                else f"rename it: git mv {old} {pdir / SETTINGS_FILE}"
            )
        )
    return pdir / SETTINGS_FILE


@lru_cache(maxsize=4)
def _load(pdir: str) -> ClusterSettings:
    path = settings_path(Path(pdir))
    from infersweep.recipe.resolve import gpu_types

    return parse_cluster_settings(_read_yaml_mapping(path), where=str(path), gpu_types=set(gpu_types(Path(pdir))))


def load_cluster_settings(pdir: Path | None = None) -> ClusterSettings:
    """params/cluster.yaml ($INFERSWEEP_PARAMS/cluster.yaml), checked; cached per params folder."""
    return _load(str(pdir or params_dir()))


# ------------------------------------------------------------------------------------ --set overrides
# Workflow parameters whose defaults come from the settings (declared with their setting in
# infersweep/pipeline_params.py): a --set of one is checked with that field's type.
def _set_field(path: str) -> tuple[type[BaseModel], str, str]:
    *parents, name = path.split(".")
    model: type[BaseModel] = ClusterSettings
    for part in parents:
        model = model.model_fields[part].annotation
    return model, name, path


SET_FIELDS: dict[str, tuple[type[BaseModel], str, str]] = {k: _set_field(v) for k, v in _PARAM_SETTINGS.items()}


@lru_cache(maxsize=None)
def _adapter(key: str) -> TypeAdapter:
    model, name, _ = SET_FIELDS[key]
    f = model.model_fields[name]
    return TypeAdapter(Annotated[f.annotation, *f.metadata])


def check_set(key: str, value: str) -> None:
    """Refuse a `--set KEY=VALUE` its setting's field would refuse in params/cluster.yaml (same type, same fix)."""
    if key not in SET_FIELDS:
        return
    try:
        _adapter(key).validate_python(value, strict=True)
    except ValidationError as e:
        msg = "; ".join(x["msg"].removeprefix("Value error, ") for x in e.errors())
        raise ClusterSettingsError(
            f"--set {key}={value[:60]!r}: {msg} (as {SET_FIELDS[key][2]} in params/{SETTINGS_FILE})"
        ) from None
