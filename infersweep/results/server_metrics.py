"""A run's server metrics: Prometheus range queries over each benchmark point's window, saved as parquet
beside the results (`metrics/server_metrics.parquet`, read back by infersweep.results.run). The scrape
step (steps/scrape.py) is `scrape_run_metrics` behind its argument parsing.

The windows come from the points' own result files (AIPerf's profiling phase start/end), so warmup and
the gaps between points are left out. With no Prometheus URL the run records why and the scrape succeeds:
metrics enrich a run, they never fail one.

Every query is scoped to this run's deployment: params/metrics.yaml holds label matchers with
`${namespace}`, `${dgd}`, `${dynamo_namespace}` and `${worker_namespaces}` placeholders (which labels a
cluster's series carry is documented and cited there) and the queries use them as `${frontend}`,
`${workers}`, `${gpus}`. The workers' runtime namespaces are what wait-ready read from the DGD's status
(`ready.json` runtime_namespaces: infersweep.platform.dgd.runtime_namespaces); a query metrics.yaml marks
`required` for the platform that returns no series in any point window fails the step (MissingSeries),
naming the query and its selector, instead of leaving an empty column nobody notices (judged when a point
lasts MIN_RESOLVABLE_STEPS query steps: a shorter one may fall between two scrapes). The
derived cost query needs `${usd_per_gpu_hour}`: the run's GPU type's price from params/gpus.yaml; without
one that query is left out and `metrics/NOTES` says so.
"""

from __future__ import annotations

import json
import os
import re
import string
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pandas as pd

from infersweep.errors import UserError
from infersweep.params_files import read_yaml_mapping
from infersweep.paths import params_dir
from infersweep.platform.dgd import dgd_name
from infersweep.platform.select import PLATFORM_ENV, PROMETHEUS_ENV
from infersweep.results.context import READY_FILE, parse_context_arg
from infersweep.results.run import METRICS_SKIPPED_FILE, SERVER_METRICS_FILE

METRICS_NOTES_FILE = "metrics/NOTES"  # queries left out of this run, and why
METRICS_MISSING_FILE = "metrics/MISSING"  # required queries that returned no series, and their queries
# A point window shorter than this many query steps (metrics.yaml step_s) may hold no rate() sample at all:
# the required-series check is judged on the longer windows only.
MIN_RESOLVABLE_STEPS = 2


class MissingSeries(RuntimeError):
    """Prometheus answered, but a query the run needs returned no series in any point window: the queries
    are scoped to labels the deployment's series do not carry, or nothing scrapes them."""


class ScopeError(UserError, ValueError):
    """A query or selector in metrics.yaml, or a run argument (namespace, DGD name, context), that cannot
    scope the queries to the run's deployment: bad input, reported before anything is queried."""


# The Dynamo operator's Dynamo namespace of a DGD: "<k8s namespace>-<dgd name>"
# (deploy/operator/internal/dynamo/graph.go GetDynamoNamespace -> ComputeDynamoNamespace).
def dynamo_namespace(namespace: str, dgd: str) -> str:
    return f"{namespace}-{dgd}"


_LABEL_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*$")  # Kubernetes names: nothing that escapes a matcher
# A Dynamo runtime namespace inside a regex matcher: no '.', so it matches itself only.
_RUNTIME_NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def worker_namespaces(run_dir: Path, namespace: str, dgd: str) -> list[str]:
    """The Dynamo runtime namespaces this run's components registered in, as wait-ready read them from the
    DGD's status (`ready.json` runtime_namespaces). Deployment-backed workers register in
    `<namespace>-<dgd>-<worker hash>` (ai-dynamo 1.6.1 dynamo/common/utils/namespace.py get_worker_namespace:
    DYN_NAMESPACE + "-" + DYN_NAMESPACE_WORKER_SUFFIX, both set by the operator), not in the DGD's base
    namespace. With no record (an operator before 1.6, local mode): the base namespace, where they are then."""
    ready = run_dir / READY_FILE
    found: list[str] = []
    if ready.is_file():
        try:
            found = sorted(set((json.loads(ready.read_text()).get("runtime_namespaces") or {}).values()))
        except (ValueError, AttributeError):
            found = []
    return found or [dynamo_namespace(namespace, dgd)]


def gpu_price(gpu_type: str | None, gpus_file: Path | None = None) -> float | None:
    """$ per GPU-hour of a GPU type from params/gpus.yaml (`usd_per_gpu_hour`), None when unknown."""
    if not gpu_type:
        return None
    gpus = read_yaml_mapping(gpus_file or params_dir() / "gpus.yaml")
    price = (gpus.get(gpu_type) or {}).get("usd_per_gpu_hour")
    return float(price) if price is not None else None


def scoped_queries(
    spec: dict,
    *,
    namespace: str,
    dgd: str,
    usd_per_gpu_hour: float | None = None,
    runtime_namespaces: list[str] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """The queries of metrics.yaml with every placeholder filled for this deployment.

    `runtime_namespaces`: where the workers registered (worker_namespaces; default the base namespace),
    filled into `${worker_namespaces}` as a regex alternation.
    Returns (queries, notes): a query needing a value the run lacks (a price) is left out with a note.
    A query that would run unscoped (no selector placeholder) or names an unknown placeholder is an error.
    """
    for field, value in (("namespace", namespace), ("dgd-name", dgd)):
        if not _LABEL_VALUE.match(value or ""):
            raise ScopeError(
                f"--{field} {value!r}: must be a Kubernetes name (letters, digits, '-', '.'); "
                "pass the run's namespace and DGD name"
            )
    workers = runtime_namespaces or [dynamo_namespace(namespace, dgd)]
    for value in workers:
        if not _RUNTIME_NAMESPACE.match(value):
            raise ScopeError(f"runtime namespace {value!r} (from {READY_FILE}): not a Dynamo namespace name")
    names = {
        "namespace": namespace,
        "dgd": dgd,
        "dynamo_namespace": dynamo_namespace(namespace, dgd),
        "worker_namespaces": "|".join(workers),
    }
    selectors = {}
    for role, template in (spec.get("selectors") or {}).items():
        try:
            selectors[role] = string.Template(template).substitute(names)
        except (KeyError, ValueError) as e:
            raise ScopeError(
                f"metrics.yaml selectors.{role}: unknown placeholder {e}; known: {sorted(names)}"
            ) from None
    values = dict(selectors)
    if usd_per_gpu_hour is not None:
        values["usd_per_gpu_hour"] = f"{usd_per_gpu_hour:g}"
    queries, notes = {}, []
    for name, template in spec["queries"].items():
        used = {
            m.group("braced") or m.group("named")
            for m in string.Template.pattern.finditer(template)
            if m.group("braced") or m.group("named")
        }
        if not used & set(selectors):
            raise ScopeError(
                f"metrics.yaml queries.{name}: uses no selector ({sorted(selectors)}), so it would "
                "sum over the whole cluster; add one, e.g. {${frontend}}"
            )
        if "usd_per_gpu_hour" in used and usd_per_gpu_hour is None:
            notes.append(f"{name}: left out, no usd_per_gpu_hour for this run's GPU type in params/gpus.yaml")
            continue
        try:
            queries[name] = string.Template(template).substitute(values)
        except (KeyError, ValueError) as e:
            raise ScopeError(f"metrics.yaml queries.{name}: unknown placeholder {e}; known: {sorted(values)}") from None
    return queries, notes


def point_windows(points_dir: Path) -> list[tuple[int, float, float]]:
    """(concurrency, start s, end s) of each point's profiling phase, from its result.json."""
    wins = []
    for f in sorted(points_dir.glob("*/result.json")):
        p = json.loads(f.read_text())
        s, e = p.get("profiling_start_ns"), p.get("profiling_end_ns")
        if s and e:
            wins.append((int(p["concurrency"]), s / 1e9, e / 1e9))
    return wins


# The scrape step's copy of params/cluster.yaml prometheus_url, fixed in its template at install
# (workflows/steps_library.py): a Workflow's `prometheus-url` must name that server and nothing else.
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _configured_prometheus() -> str:
    if PROMETHEUS_ENV in os.environ:
        return os.environ[PROMETHEUS_ENV]
    from infersweep.cluster_settings import load_cluster_settings

    return load_cluster_settings().prometheus_url


def check_prometheus_url(url: str, configured: str | None = None, platform: str | None = None) -> None:
    """ScopeError unless `url` is the configured Prometheus (local mode: also one on this machine's loopback,
    where infersweep starts its own). The URL is the scrape's only outbound address: any other would let a
    submitter point the step at, e.g., a cloud metadata endpoint and read the answer in the run's files."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ScopeError(f"prometheus-url {url[:80]!r}: give an http(s):// URL (params/cluster.yaml prometheus_url)")
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment or "?" in url:
        raise ScopeError("prometheus-url: no user, query or fragment in the URL; give the server's base URL")
    configured = _configured_prometheus() if configured is None else configured
    if url.rstrip("/") == configured.rstrip("/") and configured:
        return
    if (platform or os.environ.get(PLATFORM_ENV)) == "local" and parts.hostname in _LOOPBACK:
        return
    raise ScopeError(
        f"prometheus-url {url[:80]!r} is not the cluster's Prometheus "
        f"({configured or 'none configured'}); the scrape talks only to params/cluster.yaml prometheus_url "
        "(set it there and reinstall, or leave prometheus-url empty)"
    )


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # never follow Prometheus elsewhere
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def range_query(base: str, query: str, start: float, end: float, step: float, timeout: float = 30) -> list[dict]:
    qs = urllib.parse.urlencode({"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"})
    with _OPENER.open(f"{base.rstrip('/')}/api/v1/query_range?{qs}", timeout=timeout) as r:
        try:
            body = json.load(r)
        except ValueError:
            body = None
    if not isinstance(body, dict) or body.get("status") != "success":
        # The answer is not echoed (it lands in SKIPPED, the report and S3): only what kind of answer it was.
        kind = body.get("errorType", "error") if isinstance(body, dict) else "not a Prometheus API response"
        raise RuntimeError(f"{query}: Prometheus answered {kind}")
    return body["data"]["result"]


def required_queries(spec: dict, queries: dict[str, str], platform: str | None = None) -> list[str]:
    """The queries metrics.yaml's `required` lists for the platform the step runs on (PLATFORM_ENV: "local"
    in local mode, unset = "cluster"), among those this run asks."""
    platform = platform or os.environ.get(PLATFORM_ENV) or "cluster"
    return [q for q in (spec.get("required") or {}).get(platform, []) if q in queries]


def missing_series(df: pd.DataFrame, required: list[str]) -> list[str]:
    """Required queries with no sample in any point window."""
    seen = set(df["metric"]) if len(df) else set()
    return [q for q in required if q not in seen]


def scrape_windows(
    base: str, windows: list[tuple[int, float, float]], queries: dict[str, str], step: float
) -> pd.DataFrame:
    """Every query over every point window: one row per sample (concurrency, metric, labels, ts, value)."""
    rows = []
    for conc, start, end in windows:
        # Pad by one step so that a short point still gets a sample at both edges.
        for name, q in queries.items():
            for series in range_query(base, q, start - step, end + step, step):
                labels = json.dumps(series.get("metric", {}), sort_keys=True)
                for ts, val in series.get("values", []):
                    rows.append(
                        {"concurrency": conc, "metric": name, "labels": labels, "ts": float(ts), "value": float(val)}
                    )
    return pd.DataFrame(rows, columns=["concurrency", "metric", "labels", "ts", "value"])


def _failure(e: Exception) -> str:
    """Why a scrape failed, without anything the server sent back (an HTTPError's str is its code and reason)."""
    if isinstance(e, urllib.error.HTTPError):
        return f"HTTP {e.code}"
    if isinstance(e, urllib.error.URLError):
        return f"unreachable ({type(e.reason).__name__})"
    if isinstance(e, RuntimeError):
        return str(e)
    return type(e).__name__


def scrape_run_metrics(
    run_dir: Path, *, prometheus_url: str, queries_file: Path, namespace: str, dgd_base: str, run_id: str, context: str
) -> None:
    """Scrape one run's server metrics into `run_dir/metrics/`, printing the step's progress lines.

    `dgd_base` is the recipe's DGD name: the queries are scoped to the name deploy gave it for `run_id`
    (infersweep.platform.dgd.dgd_name: <base>-<hash of the run>). `context` is the run's --context value
    (JSON or @file), whose gpu_type prices the GPU-hours. Bad input raises ScopeError before anything is
    queried; no Prometheus URL, or a Prometheus that fails, is written to metrics/SKIPPED and is no error.
    """
    out = run_dir / "metrics"
    out.mkdir(parents=True, exist_ok=True)
    spec = read_yaml_mapping(Path(queries_file))  # params/metrics.yaml
    dgd = dgd_name(dgd_base, run_id)
    try:
        gpu_type = parse_context_arg(context).get("gpu_type")
        queries, notes = scoped_queries(
            spec,
            namespace=namespace,
            dgd=dgd,
            usd_per_gpu_hour=gpu_price(gpu_type),
            runtime_namespaces=worker_namespaces(run_dir, namespace, dgd),
        )
    except ScopeError:
        raise
    except ValueError as e:  # a bad --context, DGD name or price: the same one clear error
        raise ScopeError(str(e)) from None
    if notes:
        (run_dir / METRICS_NOTES_FILE).write_text("\n".join(notes) + "\n")
    if prometheus_url:
        check_prometheus_url(prometheus_url)
    if not prometheus_url:
        (run_dir / METRICS_SKIPPED_FILE).write_text("no Prometheus URL was given (parameter prometheus-url)\n")
        print("scrape: no Prometheus URL; server metrics skipped")
        return
    windows = point_windows(run_dir / "points")
    step = float(spec.get("step_s", 5))
    try:
        df = scrape_windows(prometheus_url, windows, queries, step)
    except Exception as e:  # Prometheus down: keep the run, say why metrics are missing
        why = _failure(e)
        (run_dir / METRICS_SKIPPED_FILE).write_text(f"Prometheus at {prometheus_url} failed: {why}\n")
        print(f"scrape: Prometheus failed, metrics skipped: {why}", file=sys.stderr)
        return
    df.to_parquet(run_dir / SERVER_METRICS_FILE, index=False)
    print(f"scrape: {len(df)} samples of {df['metric'].nunique() if len(df) else 0} metrics over {len(windows)} points")
    resolvable = [w for w in windows if w[2] - w[1] >= MIN_RESOLVABLE_STEPS * step]
    if windows and not resolvable:
        # A rate() needs two samples inside its range (prometheus promql/functions.go extrapolatedRate returns
        # nothing for fewer), and Prometheus scrapes a target every few seconds: a
        # point shorter than that (local mode's sub-second one-point runs) may hold no sample through no fault
        # of the scoping, so its absence proves nothing. Said in NOTES; the required check needs a longer point.
        note = (
            f"required series not checked: every point window is shorter than {MIN_RESOLVABLE_STEPS} query "
            f"steps ({MIN_RESOLVABLE_STEPS * step:g} s), too short for Prometheus to resolve"
        )
        with open(run_dir / METRICS_NOTES_FILE, "a") as f:
            f.write(note + "\n")
        print(f"scrape: {note}")
    missing = missing_series(df, required_queries(spec, queries)) if resolvable else []
    if missing:
        (run_dir / METRICS_MISSING_FILE).write_text("".join(f"{q}: {queries[q]}\n" for q in missing))
        raise MissingSeries(
            f"no series for {', '.join(missing)} in any of {len(windows)} point windows "
            f"(queries in {METRICS_MISSING_FILE}); the deployment's series do not carry these labels, "
            "or Prometheus does not scrape them"
        )
