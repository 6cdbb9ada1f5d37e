"""The recipe as a typed, strict model: what one deployment states (topology, router, workload, SLOs).

A recipe names its model, engine and GPU type; those are looked up and checked in
infersweep.recipe.resolve. Unknown fields are errors everywhere (a typo would otherwise fall back to a default).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from infersweep.aiperf.adaptive import TARGET_REL
from infersweep.aiperf.point import WARMUP_ROUNDS, Point, round_warmup, sweep
from infersweep.k8s_types import DNS_LABEL
from infersweep.params_files import Strict as _Strict
from infersweep.paths import params_dir
from infersweep.recipe.facts import ENV_NAME_RE, Placement, Transport
from infersweep.recipe.tolerances import Regression

NAME_RE = re.compile(rf"^{DNS_LABEL}\Z")  # infersweep/k8s_types.py; \Z: no trailing newline


def require_name(v: str) -> str:
    """A recipe's or an experiment's name: a DNS-1123 label (it names DGDs, pods and label values)."""
    if not NAME_RE.match(v):
        raise ValueError("use lowercase letters, digits and '-', starting and ending with a letter or digit")
    return v


# The results store's own top-level folders (infersweep/results/index.py NOT_RECIPES: the run index and the
# experiments' treatments). A recipe's runs go to <base>/<recipe>/<run-id>, so a recipe of one of these names
# would write its runs into them and be skipped by every listing. Spelled here because the recipe layer does not
# import results/ (pyproject.toml [tool.importlinter]); tests/recipe/test_recipes.py pins the two together.
RESERVED_RECIPE_NAMES = frozenset({"_index", "experiments"})


def require_recipe_name(v: str) -> str:
    """A recipe's name: a DNS-1123 label that is none of the results store's own folders."""
    if v in RESERVED_RECIPE_NAMES:
        raise ValueError(
            f"{v!r} is reserved: the results store keeps its own {v}/ folder beside the recipes' runs; "
            f"rename the recipe (e.g. {v.strip('_')}-1) and its file"
        )
    return require_name(v)


SEQ_DIST_RE = re.compile(r"^\d+,\d+:\d+(\.\d+)?(;\d+,\d+:\d+(\.\d+)?)*$")
SPEC_MODES_WITH_DRAFT = ("eagle", "dflash", "dspark")  # MTP drafts with the model's own heads
PositiveInt = Annotated[int, Field(gt=0)]
# A trace shipped in this repository (params/workloads/*.jsonl): local mode replays it from the clone. On a
# cluster the AIPerf step must find it at that path, so it is a local-mode workload (the step says so).
PARAMS_TRACE_PREFIX = "params:"
MAX_REQUEST_RATE = 100_000.0  # requests/s; above this a typo is likelier than a benchmark

# ---------------------------------------------------------------- the recipe


class Gpu(_Strict):
    type: str
    count: int = Field(gt=0, le=4096, description="GPUs the deployment needs (at max replicas when autoscaled)")


class Autoscaling(_Strict):
    # The DGD is rendered with replicas = min_replicas and a scaling adapter; an external autoscaler (KEDA,
    # HPA) owns the range. The range is recorded on the DGD as an annotation.
    min_replicas: int = Field(ge=1, le=512)
    max_replicas: int = Field(ge=1, le=512)
    metric: str = Field(default="dynamo_frontend_active_requests", description="what the autoscaler watches")
    target_per_replica: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _range(self) -> "Autoscaling":
        if self.max_replicas < self.min_replicas:
            raise ValueError(f"max_replicas {self.max_replicas} is below min_replicas {self.min_replicas}; swap them")
        return self


class Workers(_Strict):
    replicas: int = Field(ge=1, le=512)
    tp: int = Field(default=1, ge=1, le=64)
    dp: int = Field(default=1, ge=1, le=64, description="data-parallel ranks per replica (see DP/EP rules)")
    ep: int = Field(default=1, ge=1, le=64, description="expert-parallel size per replica (see DP/EP rules)")
    nodes: int = Field(default=1, ge=1, le=64, description="nodes per replica (multinode TP)")
    autoscaling: Autoscaling | None = None
    # Set by infersweep.recipe.resolve from the engine's rule (Engine.dp_adds_gpus): whether DP ranks add
    # GPUs (vLLM) or live inside TP.
    dp_adds_gpus: bool = Field(default=False, exclude=True, repr=False)

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * (self.dp if self.dp_adds_gpus else 1)

    @property
    def max_replicas(self) -> int:
        return self.autoscaling.max_replicas if self.autoscaling else self.replicas


class Topology(_Strict):
    workers: Workers | None = None
    prefill: Workers | None = None
    decode: Workers | None = None

    @model_validator(mode="after")
    def _one_shape(self) -> "Topology":
        if self.workers and (self.prefill or self.decode):
            raise ValueError("give either `workers` (aggregated) or `prefill` + `decode` (disaggregated), not both")
        if not self.workers and not (self.prefill and self.decode):
            missing = "decode" if self.prefill else "prefill" if self.decode else "workers"
            raise ValueError(
                f"a disaggregated recipe needs both `prefill` and `decode`; add `{missing}`"
                if missing != "workers"
                else "add `workers` (aggregated) or `prefill` + `decode`"
            )
        return self

    @property
    def mode(self) -> Literal["agg", "disagg"]:
        return "agg" if self.workers else "disagg"

    def roles(self) -> dict[str, Workers]:
        if self.workers:
            return {"worker": self.workers}
        return {"prefill": self.prefill, "decode": self.decode}  # type: ignore[dict-item]


class Trace(_Strict):
    url: str = Field(description="https:// URL or path (inside the AIPerf step) of the trace file")
    type: Literal["mooncake_trace"] = "mooncake_trace"
    # The trace's average lengths: what local mode substitutes when it cannot replay the trace itself (a
    # download, or prompts longer than params/local.yaml max_isl), and what the sweep's ISL:OSL scaling keeps.
    avg_isl: int = Field(gt=0)
    avg_osl: int = Field(gt=0)
    # Replay the trace's own timestamps (AIPerf --fixed-schedule) instead of sending its requests as fast
    # as the point's concurrency allows: one point, at the trace's arrival times.
    fixed_schedule: bool = False
    block_size: int | None = Field(
        default=None,
        gt=0,
        le=4096,
        description="tokens per hash_id block (AIPerf --isl-block-size; Mooncake's default 512)",
    )

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if v.startswith(PARAMS_TRACE_PREFIX):
            if not re.fullmatch(r"params:workloads/[A-Za-z0-9._-]+\.jsonl", v) or ".." in v:
                raise ValueError("a shipped trace is params:workloads/<file>.jsonl")
            return v
        if not re.fullmatch(r"(https://|/)[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]+", v):
            raise ValueError("give an https:// URL, an absolute path, or params:workloads/<file>.jsonl")
        return v

    def local_file(self, pdir: Path | None = None) -> Path | None:
        """The trace as a file on this machine, if it is one: a shipped params:workloads/ trace or a path."""
        if self.url.startswith(PARAMS_TRACE_PREFIX):
            return (pdir or params_dir()) / self.url[len("params:") :]
        return Path(self.url) if self.url.startswith("/") else None


class Prefix(_Strict):
    tokens: int = Field(gt=0, description="shared prefix length, part of the request's isl")
    count: int = Field(gt=0, le=100_000, description="how many distinct prefixes")


class MultiTurn(_Strict):
    # An integer: AIPerf 0.13 parses --conversation-turn-mean with parse_int_or_int_list
    # (aiperf/config/flags/cli_config.py, CLIConfig.conversation_turn_mean) and refuses "8.0".
    turns: int = Field(ge=1, le=1000, description="mean turns per session (a whole number, as AIPerf takes it)")
    delay_ms: float = Field(default=0, ge=0, description="mean pause between a response and the next turn")
    sessions: int | None = Field(default=None, gt=0)


class Workload(_Strict):
    """One of three kinds: synthetic (`isl` + `osl`), a mix (`seq_dist`), or a trace replay (`trace`).

    `isl`/`osl` are always set after validation: a mix fills them with its weighted means and a trace with
    its averages, so every kind has the lengths a scaled-down run and the ISL:OSL ratio need.
    """

    isl: int = Field(gt=0, le=1_048_576, description="input tokens per request (including a shared prefix)")
    osl: int = Field(gt=0, le=262_144, description="output tokens per request")
    seq_dist: str | None = Field(default=None, description="ISL,OSL:percent;... e.g. 1024,256:60;4096,512:40")
    trace: Trace | None = None
    prefix: Prefix | None = None
    multi_turn: MultiTurn | None = None
    concurrency: list[PositiveInt] = Field(min_length=1, max_length=64)
    # Open loop: requests arrive at a rate whatever the server does (AIPerf --request-rate with
    # --arrival-pattern; aiperf/config/flags/cli_config.py, CLIConfig.request_rate / arrival_pattern). A rate
    # sweep's points carry the rate; `concurrency` is then one value, the in-flight cap AIPerf keeps.
    request_rate: list[float] | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="requests/s per point (open loop) instead of a concurrency sweep",
    )
    # None means poisson; not a default value, so a dumped-and-reloaded recipe (experiments, exclude_none) does
    # not read as one that set arrival without request_rate
    arrival: Literal["poisson", "constant"] | None = Field(
        default=None, description="arrival pattern of a request_rate sweep (default poisson)"
    )
    requests_per_concurrency: int = Field(default=10, gt=0, le=10_000)
    min_requests: int = Field(default=32, gt=0)
    # Adaptive length (infersweep/aiperf/adaptive.py): a point whose round-mean interval is wider than
    # ci95_target is measured again as one longer window, up to this many requests per concurrency (its
    # requests scaled by max_requests_per_concurrency / requests_per_concurrency). None: never extended.
    max_requests_per_concurrency: int | None = Field(
        default=None,
        gt=0,
        le=100_000,
        description="a point's budget: it may be extended up to this many requests per concurrency "
        "until its 95 % interval is within ci95_target; unset = no extension",
    )
    ci95_target: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description=f"the relative 95 % half-width of mean TTFT and latency a point aims for "
        f"(default {TARGET_REL:g}); applies with max_requests_per_concurrency",
    )
    warmup_requests: int = Field(
        default=8,
        ge=0,
        description="warm-up requests per point, raised to warmup_rounds full rounds at the point's "
        "concurrency (infersweep/aiperf/point.py round_warmup); 0 = no warm-up",
    )
    warmup_rounds: int = Field(
        default=WARMUP_ROUNDS,
        ge=1,
        le=32,
        description="a point with a warm-up warms up for at least this many rounds at its concurrency (the "
        "start burst's echo: infersweep/aiperf/point.py WARMUP_ROUNDS)",
    )
    # Users started together can stay in lockstep (docs/measured-h200.md); AIPerf's ramp: flags.py RAMP_FLAG
    warmup_ramp_s: float | None = Field(
        default=None,
        gt=0,
        le=3600,
        description="seconds over which the warm-up starts its users one after another, so the measured loop "
        "opens spread out (about one request latency); unset = all at once",
    )
    request_timeout_s: int = Field(default=1200, gt=0)
    max_error_rate: float = Field(
        default=0.0, ge=0, le=1, description="fraction of failed requests a point may have and still count"
    )
    point_timeout_s: int = Field(default=3600, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        given = [k for k in ("seq_dist", "trace") if data.get(k) is not None]
        if len(given) > 1 or (given and ("isl" in data or "osl" in data)):
            raise ValueError("give one workload kind: `isl` + `osl`, `seq_dist`, or `trace`; not several")
        data = dict(data)
        if (
            given == ["seq_dist"]
            and isinstance(data["seq_dist"], str)
            and SEQ_DIST_RE.match(data["seq_dist"].replace(" ", ""))
        ):
            pairs = seq_dist_pairs(data["seq_dist"])
            total = sum(p for _, _, p in pairs)
            if abs(total - 100) > 0.01:
                raise ValueError(f"seq_dist percentages add up to {total:g}, not 100; fix the weights")
            data["isl"] = round(sum(i * p for i, _, p in pairs) / 100)
            data["osl"] = round(sum(o * p for _, o, p in pairs) / 100)
        elif given == ["seq_dist"]:
            data |= {"isl": 1, "osl": 1}  # placeholders: the seq_dist validator reports the malformed mix itself
        elif given == ["trace"] and isinstance(data["trace"], dict):
            data.setdefault("isl", data["trace"].get("avg_isl"))
            data.setdefault("osl", data["trace"].get("avg_osl"))
        return data

    @field_validator("seq_dist")
    @classmethod
    def _seq_dist(cls, v: str | None) -> str | None:
        if v is not None and not SEQ_DIST_RE.match(v.replace(" ", "")):
            raise ValueError("write it as ISL,OSL:percent;ISL,OSL:percent (e.g. 1024,256:60;4096,512:40)")
        return v.replace(" ", "") if v else v

    @field_validator("concurrency")
    @classmethod
    def _distinct(cls, v: list[int]) -> list[int]:
        if len(set(v)) != len(v):
            dup = sorted({c for c in v if v.count(c) > 1})
            raise ValueError(f"concurrency values repeat: {dup}; list each level once")
        return v

    @field_validator("request_rate")
    @classmethod
    def _rates(cls, v: list[float] | None) -> list[float] | None:
        if v is None:
            return v
        bad = [r for r in v if not (isinstance(r, (int, float)) and r == r and 0 < r <= MAX_REQUEST_RATE)]
        if bad:
            raise ValueError(
                f"request_rate values {bad} are not rates; give requests/s above 0 and at most {MAX_REQUEST_RATE:g}"
            )
        if len(set(v)) != len(v):
            raise ValueError(
                f"request_rate values repeat: {sorted({r for r in v if v.count(r) > 1})}; list each rate once"
            )
        return v

    @model_validator(mode="after")
    def _combinations(self) -> "Workload":
        if self.request_rate and len(self.concurrency) != 1:
            raise ValueError(
                f"a request_rate sweep takes one concurrency, the in-flight cap (e.g. concurrency: "
                f"[{max(self.concurrency)}]); got {self.concurrency}"
            )
        if self.arrival is not None and not self.request_rate:
            raise ValueError("arrival applies to a request_rate sweep; add request_rate or remove arrival")
        if self.prefix and (self.seq_dist or self.trace):
            raise ValueError(
                "prefix sharing goes with a synthetic `isl` + `osl` workload; remove `prefix` or use isl/osl"
            )
        if self.prefix and self.prefix.tokens >= self.isl:
            raise ValueError(
                f"prefix.tokens {self.prefix.tokens} must be below isl {self.isl} (the prefix is part of the input)"
            )
        if self.multi_turn and self.trace:
            raise ValueError("a trace brings its own sessions; remove `multi_turn`")
        budget = self.max_requests_per_concurrency
        if budget is not None and budget < self.requests_per_concurrency:
            raise ValueError(
                f"max_requests_per_concurrency {budget} is below requests_per_concurrency "
                f"{self.requests_per_concurrency}: a point's budget includes its first window; raise it to at "
                f"least {self.requests_per_concurrency}, or remove it (no extension)"
            )
        if budget is not None and self.trace and self.trace.fixed_schedule:
            raise ValueError(
                "max_requests_per_concurrency cannot extend trace.fixed_schedule (the trace is the request "
                "count); remove one of them"
            )
        if self.ci95_target is not None and budget is None:
            raise ValueError(
                "ci95_target applies to a point that may be extended; add max_requests_per_concurrency "
                "or remove ci95_target"
            )
        if self.warmup_ramp_s is not None and (self.request_rate or self.trace or not self.warmup_requests):
            # only a seamless window keeps the spread (flags.py seamless_warmup): not a rate point's or a trace's
            raise ValueError(
                "warmup_ramp_s spreads a closed-loop point's warm-up over a synthetic workload: remove it, or use a "
                "concurrency sweep (no request_rate, no trace) with warmup_requests above 0"
            )
        if self.trace and self.trace.fixed_schedule and (self.request_rate or len(self.concurrency) != 1):
            raise ValueError(
                "trace.fixed_schedule replays the trace's timestamps: one point, so give one concurrency "
                "(the in-flight cap) and no request_rate"
            )
        return self

    @property
    def kind(self) -> Literal["synthetic", "seq_dist", "trace"]:
        return "trace" if self.trace else "seq_dist" if self.seq_dist else "synthetic"

    def _shape(self, isl: int, osl: int) -> dict[str, Any]:
        # AIPerf prepends the prefix prompt to a user prompt of --isl tokens: send the part after the prefix.
        out: dict[str, Any] = {}
        if self.prefix:
            prefix = max(1, round(self.prefix.tokens * isl / self.isl))
            out |= {"isl": max(1, isl - prefix), "osl": osl, "prefix_tokens": prefix, "num_prefixes": self.prefix.count}
        else:
            out |= {"isl": isl, "osl": osl}
        if self.multi_turn:
            out |= {
                "turns": self.multi_turn.turns,
                "turn_delay_ms": self.multi_turn.delay_ms,
                "sessions": self.multi_turn.sessions,
            }
        return {k: v for k, v in out.items() if v is not None}

    def length(self) -> dict[str, Any]:
        """The point step's length keys (infersweep.aiperf.LENGTH_KEYS): {} unless a budget is set, so a recipe
        without one renders as before."""
        if (
            self.max_requests_per_concurrency is None
            or self.max_requests_per_concurrency == self.requests_per_concurrency
        ):
            return {}
        factor = round(self.max_requests_per_concurrency / self.requests_per_concurrency, 6)
        return {"max_requests_factor": factor} | ({"ci95_target": self.ci95_target} if self.ci95_target else {})

    def aiperf_workload(self) -> dict[str, Any]:
        """What the benchmark-point step sends (keys of infersweep.aiperf.WORKLOAD_FLAGS + trace, trace_type, and
        the point's length keys)."""
        ramp = {"warmup_ramp_s": self.warmup_ramp_s} if self.warmup_ramp_s is not None else {}
        return self._aiperf_workload() | self.length() | ramp

    def _aiperf_workload(self) -> dict[str, Any]:
        arrival = {"arrival": self.arrival or "poisson"} if self.request_rate else {}
        if self.trace:
            fixed: dict[str, Any] = {"fixed_schedule": True} if self.trace.fixed_schedule else {}
            if self.trace.block_size:
                fixed["block_size"] = self.trace.block_size
            return {"trace": self.trace.url, "trace_type": self.trace.type} | fixed | arrival
        if self.seq_dist:
            shape = {"seq_dist": self.seq_dist}
            if self.multi_turn:
                shape |= {k: v for k, v in self._shape(self.isl, self.osl).items() if k not in ("isl", "osl")}
            return shape | arrival
        return self._shape(self.isl, self.osl) | arrival

    def synthetic_workload(self, isl: int, osl: int) -> dict[str, Any]:
        """The synthetic stand-in local mode runs at (scaled) `isl`/`osl`: a trace it cannot replay (see
        infersweep.local.run.local_workload) or a mix becomes its average lengths (a mix's 32K-token buckets
        do not fit a laptop); a shared prefix keeps its share of the input. No warm-up ramp: its seconds are one
        latency at the recipe's scale, longer than a scaled point's short warm-up."""
        arrival = {"arrival": self.arrival or "poisson"} if self.request_rate else {}
        return self._shape(isl, osl) | arrival | self.length()

    @property
    def load(self) -> Literal["concurrency", "request_rate"]:
        return "request_rate" if self.request_rate else "concurrency"

    def points(self) -> list[Point]:
        """The sweep: one point per concurrency level (closed loop, request_rate 0) or per rate (open loop at
        the one concurrency cap), in the recipe's order (infersweep/aiperf/point.py sweep)."""
        return sweep(
            self.concurrency,
            self.request_rate or [],
            requests_per_concurrency=self.requests_per_concurrency,
            min_requests=self.min_requests,
            warmup=lambda c: round_warmup(c, self.warmup_requests, self.warmup_rounds),
        )


def seq_dist_pairs(text: str) -> list[tuple[int, int, float]]:
    pairs = []
    for item in text.replace(" ", "").split(";"):
        lengths, pct = item.split(":")
        isl, osl = lengths.split(",")
        pairs.append((int(isl), int(osl), float(pct)))
    return pairs


class Slo(_Strict):
    """SLO bounds under the results table's metric names (infersweep.metrics.SLO_KEYS): a maximum for a
    lower-is-better metric, a minimum for the per-user throughput. An old spelling (tok_s_user_min) is mapped
    with a deprecation warning; an unknown key is refused with the nearest names."""

    ttft_p50_ms: float | None = Field(default=None, gt=0, description="TTFT p50 must stay below this")
    ttft_p99_ms: float | None = Field(default=None, gt=0)
    itl_p50_ms: float | None = Field(default=None, gt=0)
    output_throughput_p50_tok_s_per_user: float | None = Field(
        default=None, gt=0, description="output tok/s per user (p50) must reach this"
    )

    @model_validator(mode="before")
    @classmethod
    def _canonical_keys(cls, data: Any) -> Any:
        from infersweep.metrics import SLO_KEYS, canonical

        if not isinstance(data, dict):
            return data
        out = {}
        for key, value in data.items():
            name = canonical(str(key), f"slo.{key}", warn=True)  # ValueError: unknown, with did-you-mean
            if name not in SLO_KEYS:
                raise ValueError(f"slo.{key}: not an SLO metric; SLO keys: {list(SLO_KEYS)}")
            out[name] = value
        return out


class Baseline(_Strict):
    """Performance the seed publishes for this deployment, kept to compare our runs with; its numbers under
    the results table's metric names (infersweep.metrics). Old spellings (output_tok_s_per_gpu,
    tok_s_per_user) are mapped with a deprecation warning."""

    concurrency: PositiveInt
    ttft_p50_ms: float | None = Field(default=None, gt=0)
    output_throughput_tok_s_per_gpu: float | None = Field(default=None, gt=0)
    output_throughput_p50_tok_s_per_user: float | None = Field(default=None, gt=0)
    source: str = Field(min_length=1, description="where the numbers come from")

    @model_validator(mode="before")
    @classmethod
    def _canonical_keys(cls, data: Any) -> Any:
        from infersweep.metrics import canonical

        if not isinstance(data, dict):
            return data
        return {
            k
            if k in ("concurrency", "source") or k in cls.model_fields
            else canonical(str(k), f"baseline.{k}", warn=True): v
            for k, v in data.items()
        }


class KvOffload(_Strict):
    """A CPU KV tier. vLLM: `cpu_gib` per engine. SGLang: HiCache `hicache_ratio` (host = ratio x GPU
    KV) and `write_policy` (write_back is the seed's recommendation; write_through streams every page)."""

    cpu_gib: float | None = Field(default=None, gt=0, le=4096)
    hicache_ratio: float | None = Field(default=None, gt=0, le=100)
    write_policy: Literal["write_back", "write_through", "write_through_selective"] | None = None


class Speculative(_Strict):
    mode: Literal["none", "mtp", "eagle", "dflash", "dspark"]
    num_tokens: int = Field(default=3, ge=1, le=16, description="draft tokens per step")
    draft_model: str | None = Field(default=None, description="Hugging Face id; default: the model's draft_models")
    # Further keys of vLLM's speculative config (e.g. upstream Lightning's attention_backend: TRITON_ATTN).
    engine_config: dict[str, str | int | float | bool] = {}


class Provenance(_Strict):
    """Which seed row or upstream recipe this recipe follows, and every deliberate difference from it.

    `differences` maps a topic (image, workload, transport, ...) to the reason we differ; it is a mapping so
    a folder's _defaults.yaml can state what all its recipes share and a recipe adds its own topics."""

    follows: str = Field(min_length=1, description="seed row or upstream recipe path")
    differences: dict[str, str] = {}


class Recipe(_Strict):
    name: str = Field(min_length=1, max_length=52, description="DNS-1123 label: lowercase letters, digits, '-'")
    description: str = ""
    status: Literal["working", "experimental"] = "working"
    model: str
    engine: str = Field(description="a file params/engines/<name>.yaml with its module infersweep/engines/<name>.py")
    image: str | None = None
    gpu: Gpu
    topology: Topology
    router: Literal["kv", "round-robin", "random"] = "round-robin"
    engine_args: list[str] = []
    # Environment every worker container gets besides HF_HOME/HF_HUB_OFFLINE (e.g. PYTHONHASHSEED=0, which
    # upstream Lightning workers set so prefix hashes agree across processes).
    worker_env: dict[str, str] = {}
    kv_offload: KvOffload | None = None
    speculative: Speculative | None = None
    transport: Transport | None = None
    placement: Placement | None = None
    provenance: Provenance | None = None
    workload: Workload
    slo: Slo = Slo()
    baseline: Baseline | None = None
    regression: Regression = Regression()

    @model_validator(mode="before")
    @classmethod
    def _no_derived_fields(cls, data: Any) -> Any:
        # How DP ranks count (dp_adds_gpus) follows from the engine's rule (infersweep/engines/<engine>.py,
        # applied in infersweep.recipe.resolve), never from the recipe.
        topo = data.get("topology") if isinstance(data, dict) else None
        for role, w in (topo or {}).items() if isinstance(topo, dict) else ():
            if isinstance(w, dict) and "dp_adds_gpus" in w:
                raise ValueError(f"topology.{role}.dp_adds_gpus: unknown field (it follows from the engine); remove it")
        return data

    @field_validator("engine")
    @classmethod
    def _engine_name(cls, v: str) -> str:
        # Which engines exist is decided by params/engines/ and their modules (infersweep.engines), in resolve.
        if not re.fullmatch(r"[a-z][a-z0-9_]*", v):
            raise ValueError(
                f"must be one of the engines in params/engines/ (got {v!r}); an engine name is a "
                "Python identifier (its module is infersweep/engines/<name>.py)"
            )
        return v

    @field_validator("name")
    @classmethod
    def _dns_name(cls, v: str) -> str:
        # The name becomes a DGD name, pod names and label values: it must be a DNS-1123 label and leave
        # room for the operator's suffixes (`-frontend`, `-decode-0`...), hence 52 and not 63. It also names
        # the run's folder in the results store, beside the store's own folders.
        return require_recipe_name(v)

    @field_validator("image")
    @classmethod
    def _image(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[a-z0-9][a-z0-9._/:@-]*", v):
            raise ValueError("not a container image reference (registry/name:tag)")
        return v

    @field_validator("worker_env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for name in v:
            if not ENV_NAME_RE.match(name):
                raise ValueError(f"{name!r} is not an environment variable name (letters, digits, '_')")
            if name in ("HF_HOME", "HF_HUB_OFFLINE"):
                raise ValueError(f"{name} is set by infersweep (workers read the model cache offline); remove it")
        return v

    @field_validator("engine_args")
    @classmethod
    def _args(cls, v: list[str]) -> list[str]:
        for a in v:
            if "\n" in a or "\x00" in a:
                raise ValueError("an engine argument may not contain a newline or NUL")
        return v
