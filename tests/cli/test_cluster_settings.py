"""params/cluster.yaml as the typed, strict ClusterSettings (infersweep/cluster_settings.py): the shipped file
loads; each section's usual mistakes are one line naming the field (its path in the file) and the fix; several
mistakes give several lines; an unknown key is refused with the valid keys (and a did-you-mean); a --set of a
parameter backed by a setting is checked by that setting's field; a leftover params/platform.yaml is refused
with the rename to make; the CLI prints the lines without a traceback. (The GPU guard's own sections:
tests/workflows/test_gpu_guard.py.)"""

from __future__ import annotations

import copy

import pytest
import yaml

from infersweep.cli import main
from infersweep.cli_util import parse_sets
from infersweep.cluster_settings import (
    ClusterSettings,
    ClusterSettingsError,
    load_cluster_settings,
    parse_cluster_settings,
)
from infersweep.paths import REPO_ROOT
from infersweep.recipe import RecipeError

PARAMS = REPO_ROOT / "params"
RAW = yaml.safe_load((PARAMS / "cluster.yaml").read_text())


def _with(path: str, value, data=None):
    """RAW with the value at a dotted path replaced (value DELETE removes the key)."""
    data = copy.deepcopy(RAW if data is None else data)
    *parents, last = path.split(".")
    node = data
    for p in parents:
        node = node[p]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return data


DELETE = object()


def _errors(data) -> list[str]:
    with pytest.raises(ClusterSettingsError) as e:
        parse_cluster_settings(data, gpu_types={"H100", "H200", "B200", "GB200"})
    return str(e.value).splitlines()


def test_the_shipped_file_loads_into_typed_sections():
    s = load_cluster_settings()
    assert isinstance(s, ClusterSettings)
    assert s == parse_cluster_settings(RAW)  # the file as it is, nothing coerced away
    # Every section is typed: attributes, not string keys.
    assert (s.namespace, s.model_cache.pvc, s.s3.bucket, s.service_account) == (
        RAW["namespace"],
        RAW["model_cache"]["pvc"],
        RAW["s3"]["bucket"],
        RAW["service_account"],
    )
    assert s.steps.deadlines_s["aiperf-point"] == RAW["steps"]["deadlines_s"]["aiperf-point"]
    assert s.steps.resources_of("no-such-step") == s.steps.resources["default"]
    assert s.guard.pools["H100"].queue == "infersweep-h100" and s.guard.scheduler == "argo"
    assert s.nightly.suite and s.reaper.schedule == RAW["reaper"]["schedule"]


# Each section's typical mistake -> the field path and the fix that the one line must name.
@pytest.mark.parametrize(
    "path, value, expected",
    [
        ("images.steps", "Ghcr.io/My Image", "images.steps: must be an image reference like"),
        ("images.aiperf", 13, "images.aiperf: must be an image reference"),
        ("namespace", "Bench_NS", "namespace: must be a Kubernetes name"),
        ("model_cache.pvc", "model_cache", "model_cache.pvc: must be a Kubernetes name"),
        ("model_cache.size", "500GB", "model_cache.size: must be a Kubernetes quantity like 500Gi"),
        ("model_cache.size", 500, "model_cache.size: must be a Kubernetes quantity"),
        ("model_cache.storage_class", "fast ssd", 'model_cache.storage_class: must be a StorageClass name, or ""'),
        ("hf_token_secret", "HF token", "hf_token_secret: must be a Kubernetes object name"),
        ("s3.bucket", "My_Bucket", "s3.bucket: not an S3 bucket name"),
        ("s3.prefix", "/runs/", "s3.prefix: use a key prefix like runs/team-a"),
        ("s3.prefix", "runs/../x", "s3.prefix: use a key prefix"),
        ("s3.credentials_secret", DELETE, "s3.credentials_secret: required field is missing; add it"),
        ("service_account", "", "service_account: must be a Kubernetes object name"),
        ("prometheus_url", "prometheus:9090", "prometheus_url: give an http(s):// URL"),
        ("autoscaling.prometheus_url", "ftp://prom", "autoscaling.prometheus_url: give an http(s):// URL"),
        (
            "artifact_repository.endpoint",
            "https://s3.amazonaws.com",
            "artifact_repository.endpoint: give the S3 endpoint as host[:port] without a scheme",
        ),
        ("artifact_repository.insecure", "yes", "artifact_repository.insecure: must be true or false"),
        ("artifact_repository.region", "US East", "artifact_repository.region: must be a region like us-east-1"),
        ("artifact_repository.key", "my key", "artifact_repository.key: must be a ConfigMap key"),
        ("nightly.schedules", ["0 1 * *"], "nightly.schedules.0: must be a cron schedule of five fields"),
        ("nightly.schedules", [], "nightly.schedules: must not be empty"),
        ("nightly.timezone", "CET+1", "nightly.timezone: must be an IANA time zone"),
        ("nightly.suite", "nemotron", "nightly.suite: must be a list"),
        (
            "steps.security.run_as_user",
            0,
            "steps.security.run_as_user: must be a positive integer, the images' USER, not root",
        ),
        (
            "steps.resources.scrape",
            {"cpu": "half", "memory": "1Gi"},
            "steps.resources.scrape.cpu: must be a CPU quantity like 250m",
        ),
        (
            "steps.resources.publish",
            {"cpu": "1", "memory": "1 GB"},
            "steps.resources.publish.memory: must be a Kubernetes quantity",
        ),
        ("steps.resources.default", DELETE, "steps.resources.default: required"),
        # a key no step reads would silently not apply: a typo, or a step renamed since (issue 40)
        (
            "steps.resources.launch",
            {"cpu": "1", "memory": "1Gi"},
            "steps.resources.launch: no step is called 'launch': the step is called 'launcher' now",
        ),
        ("steps.deadlines_s.scrap", 60, "steps.deadlines_s.scrap: no step is called 'scrap': one of "),
        ("steps.aiperf.cpu_per_worker", 0, "steps.aiperf.cpu_per_worker: must be a number > 0"),
        ("steps.aiperf.max_workers", "32", "steps.aiperf.max_workers: must be a positive integer"),
        (
            "steps.deadlines_s.deploy",
            "600",
            "steps.deadlines_s.deploy: must be a positive integer, activeDeadlineSeconds",
        ),
        ("steps.deadlines_s.deploy", 0, "steps.deadlines_s.deploy: must be a positive integer"),
        ("steps.retry.backoff", "10 seconds", "steps.retry.backoff: must be a duration like 10s"),
        ("steps.retry.limit", -1, "steps.retry.limit: must be an integer >= 0"),
        ("steps.retry.factor", 0.5, "steps.retry.factor: must be a number >= 1"),
        ("reaper.schedule", "every 2 minutes", "reaper.schedule: must be a cron schedule"),
        ("reaper.service_account", "Reaper", "reaper.service_account: must be a Kubernetes object name"),
        ("steps", "default", "steps: must be a mapping of fields"),
    ],
)
def test_each_mistake_is_one_line_naming_the_field_and_the_fix(path, value, expected):
    lines = _errors(_with(path, value))
    assert len(lines) == 1, lines
    assert lines[0].startswith("params/cluster.yaml: ") and expected in lines[0], lines


def test_several_mistakes_give_several_lines_each_with_its_field():
    data = _with("namespace", "NS")
    data = _with("s3.bucket", "B", data)
    data = _with("steps.retry.backoff", "soon", data)
    data = _with("reaper.schedule", "hourly", data)
    lines = _errors(data)
    assert len(lines) == 4, lines
    assert {line.split(": ")[1] for line in lines} == {
        "namespace",
        "s3.bucket",
        "steps.retry.backoff",
        "reaper.schedule",
    }


@pytest.mark.parametrize(
    "path, typo, hint",
    [
        ("", "namspace", "did you mean `namespace`?"),
        ("s3", "bucket_name", "did you mean `bucket`?"),
        ("steps.retry", "max_durations", "did you mean `max_duration`?"),
        ("model_cache", "storageClass", "did you mean `storage_class`?"),
    ],
)
def test_an_unknown_key_is_refused_with_the_valid_keys(path, typo, hint):
    data = copy.deepcopy(RAW)
    node = data
    for p in filter(None, path.split(".")):
        node = node[p]
    node[typo] = "x"
    [line] = _errors(data)
    field = f"{path}.{typo}" if path else typo
    assert f"params/cluster.yaml: {field}: unknown field; {hint} valid fields here: " in line, line


def test_a_quoted_number_is_not_a_number_and_an_int_cpu_is_a_quantity():
    # strict: "16" is not 16 (a YAML typo would otherwise pass); an int CPU is what Kubernetes accepts too
    assert "steps.deadlines_s.publish" in _errors(_with("steps.deadlines_s.publish", "3600"))[0]
    s = parse_cluster_settings(_with("steps.resources.summarize", {"cpu": 1, "memory": "2Gi"}))
    assert s.steps.resources["summarize"].cpu == "1" == RAW["steps"]["resources"]["summarize"]["cpu"]


def test_a_step_without_a_deadline_here_gets_its_declared_deadline():
    """A new step needs no cluster.yaml entry (a step is declared once, infersweep/step_declarations.py);
    an entry here overrides the declaration's deadline."""
    from infersweep.step_declarations import DECLARED
    from workflows.steps_library import Images, step_container

    scrape = next(s for s in DECLARED if s.name == "scrape")
    images = Images(steps="ghcr.io/x/steps:1", aiperf="ghcr.io/x/aiperf:1")
    deadlines = {k: v for k, v in RAW["steps"]["deadlines_s"].items() if k != "scrape"}
    without = parse_cluster_settings(_with("steps.deadlines_s", deadlines))
    assert step_container(scrape, images, settings=without.steps).active_deadline_seconds == scrape.deadline_s
    overridden = parse_cluster_settings(_with("steps.deadlines_s", deadlines | {"scrape": 4321}))
    assert step_container(scrape, images, settings=overridden.steps).active_deadline_seconds == 4321


@pytest.mark.parametrize(
    "assignment, expected",
    [
        ("model-cache-size=lots", "--set model-cache-size='lots': must be a Kubernetes quantity like 500Gi"),
        ("s3-bucket=Team_Bucket", "--set s3-bucket='Team_Bucket': not an S3 bucket name"),
        ("s3-prefix=/abs", "--set s3-prefix='/abs': use a key prefix"),
        ("model-cache-pvc=Cache", "--set model-cache-pvc='Cache': must be a Kubernetes name"),
        ("storage-class=two words", "--set storage-class='two words': must be a StorageClass name"),
        ("prometheus-url=prom:9090", "--set prometheus-url='prom:9090': give an http(s):// URL"),
    ],
)
def test_a_set_override_goes_through_the_settings_field(assignment, expected):
    with pytest.raises(RecipeError) as e:
        parse_sets([assignment])
    key = assignment.split("=")[0]
    from infersweep.cluster_settings import SET_FIELDS

    assert expected in str(e.value) and f"(as {SET_FIELDS[key][2]} in params/cluster.yaml)" in str(e.value)


def test_good_set_overrides_pass_unchanged():
    sets = [
        "model-cache-size=1Ti",
        "s3-bucket=team-a.results",
        "s3-prefix=runs/team-a",
        "storage-class=",
        "prometheus-url=http://prometheus.monitoring.svc:9090",
        "model-cache-pvc=cache-2",
    ]
    assert parse_sets(sets).params == dict(s.split("=", 1) for s in sets)


def _params_copy(tmp_path, cluster_text: str | None, old_text: str | None = None):
    """A params folder like the repository's (links to it) with its own settings file(s)."""
    d = tmp_path / "params"
    d.mkdir(parents=True)
    for entry in PARAMS.iterdir():
        if entry.name not in ("cluster.yaml", "platform.yaml"):
            (d / entry.name).symlink_to(entry)
    if cluster_text is not None:
        (d / "cluster.yaml").write_text(cluster_text)
    if old_text is not None:
        (d / "platform.yaml").write_text(old_text)
    return d


def test_a_leftover_platform_yaml_is_refused_with_the_rename(tmp_path):
    text = (PARAMS / "cluster.yaml").read_text()
    d = _params_copy(tmp_path / "a", None, old_text=text)
    with pytest.raises(
        ClusterSettingsError,
        match=r"platform.yaml: the cluster settings file is now .*cluster.yaml; "
        r"rename it: git mv",
    ):
        load_cluster_settings(d)
    d = _params_copy(tmp_path / "b", text, old_text=text)
    with pytest.raises(ClusterSettingsError, match=r"move your changes into it and delete"):
        load_cluster_settings(d)


def test_the_cli_prints_every_mistake_and_renders_nothing(tmp_path, monkeypatch, capsys):
    bad = _with("s3.bucket", "Bad_Bucket", _with("gpu_guard", {"scheduler": "slurm"}))
    d = _params_copy(tmp_path, yaml.safe_dump(bad, sort_keys=False))
    monkeypatch.setenv("INFERSWEEP_PARAMS", str(d))
    out = tmp_path / "out"
    assert main(["render", "nemotron-3-nano-fp8-vllm-agg-kv", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and not out.exists()
    assert f"{d / 'cluster.yaml'}: s3.bucket: not an S3 bucket name" in err
    assert f"{d / 'cluster.yaml'}: gpu_guard.scheduler: must be one of argo, kueue, kai, volcano" in err
