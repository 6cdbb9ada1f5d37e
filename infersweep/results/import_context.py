"""What an imported AIPerf run measured and on what: its workload and its provenance, from the artifact.

Workload: AIPerf's `input_config` (in every summary since 0.10) names the dataset it generated or replayed;
it becomes the run context's `workload` in the shape a pipeline run records (infersweep.aiperf.WORKLOAD_FLAGS
keys, as infersweep.results.context.workload_from_argv reads them back from a point's command line), so
`compare` and `regress` check an imported run's workload as they check any other's. Where `input_config`
has no dataset (a summary missing), the AIPerf command line in `run_info.cli_command` is read instead.

AIPerf 0.13's config models this reads (aiperf 0.13.0):
- aiperf/config/dataset/config.py:89 SyntheticDataset (`prompts`, `prefix_prompts`:177, `turns`:187,
  `turn_delay`:200), :285 FileDataset (`path`, `format`), :786 PublicDataset (`dataset`);
- aiperf/config/dataset/content.py:133 PromptConfig (`isl`, `osl`: a number or {mean, stddev}; `block_size`),
  :375 PrefixPromptConfig (`pool_size`, `length`);
- the model measured: `input_config.models.items[].name`;
- GPUs: `telemetry_data.endpoints.<url>.gpus.<uuid>.gpu_name`, counted as AIPerf counts them
  (aiperf/operator/runs_index.py:557-580 `_summarize_telemetry`).

Provenance: the recipe an import is filed under says what was *meant* to be deployed; only the artifact says
what was measured. The model AIPerf asked for must be the recipe's (or the user accepts the mismatch, and
the context records AIPerf's model); hardware, engine image and router are "unknown" unless the user states
them or AIPerf's GPU telemetry holds them. The context's `imported` record says which was which.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from infersweep.aiperf import REUSE_KEYS, SUMMARY_FILE, WORKLOAD_FLAGS
from infersweep.errors import UserError

UNKNOWN = "unknown"


class ProvenanceError(UserError, ValueError):
    """The artifact contradicts the recipe it is filed under: one line naming both sides and the flag."""


def read_summary(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((Path(folder) / SUMMARY_FILE).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _number(v: Any) -> int | float | None:
    """A length as the pipeline records it: an int when whole (AIPerf writes 64.0 for --isl 64)."""
    if isinstance(v, dict):
        v = v.get("mean")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return int(v) if float(v).is_integer() else float(v)


def _stddev(v: Any) -> int | float | None:
    return _number(v.get("stddev")) if isinstance(v, dict) and v.get("stddev") else None


def workload_from_input_config(cfg: dict[str, Any]) -> dict[str, Any] | None:
    """The workload shape of AIPerf's input_config (first dataset), in WORKLOAD_FLAGS keys; None without one."""
    datasets = [d for d in (cfg.get("datasets") or []) if isinstance(d, dict)]
    if not datasets:
        return None
    ds = datasets[0]
    out: dict[str, Any] = {}
    kind = ds.get("type")
    if kind == "file" and ds.get("path"):  # a trace replayed (FileDataset)
        out["trace"] = str(ds["path"])
        if ds.get("format"):
            out["trace_type"] = ds["format"]
    elif kind == "public" and ds.get("dataset"):  # a public dataset (PublicDataset): its prompts, replayed
        out["trace"] = f"public:{ds['dataset']}"
    prompts = ds.get("prompts") or {}
    for key in ("isl", "osl"):
        value = _number(prompts.get(key, ds.get(key)))
        if value is not None:
            out[key] = value
    if (sd := _stddev(prompts.get("isl"))) is not None:
        out["isl_stddev"] = sd
    if prompts.get("block_size"):
        out["block_size"] = prompts["block_size"]
    prefix = ds.get("prefix_prompts") or {}
    if prefix.get("length"):
        out["prefix_tokens"] = _number(prefix["length"])
    if prefix.get("pool_size"):
        out["num_prefixes"] = _number(prefix["pool_size"])
    turns = _number(ds.get("turns"))
    if turns is not None and turns > 1:  # single-turn is every workload's default: not a shape of its own
        out["turns"] = turns
        delay = _number(ds.get("turn_delay"))
        if delay:
            out["turn_delay_ms"] = delay
    return out or None


def workload_from_cli(cli_command: str) -> dict[str, Any] | None:
    """The workload flags of an AIPerf command line (run_info.cli_command), as workload_from_argv reads them."""
    try:
        argv = shlex.split(cli_command or "")
    except ValueError:
        return None
    by_flag = {flag: key for key, flag in WORKLOAD_FLAGS.items()}
    by_flag |= {"--prefix-prompt-pool-size": "num_prefixes", "--prompt-prefix-pool-size": "num_prefixes"}
    found: dict[str, Any] = {}
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag in by_flag:
            found[by_flag[flag]] = int(value) if value.isdigit() else value
    return found or None


def workload_of(summary: dict[str, Any]) -> dict[str, Any] | None:
    return workload_from_input_config(summary.get("input_config") or {}) or workload_from_cli(
        (summary.get("run_info") or {}).get("cli_command") or ""
    )


def reuse_of(workload: dict[str, Any] | None) -> list[str]:
    """The workload keys that make requests reuse prompts on purpose (shared prefixes, sessions, a trace):
    cache hits there are the point of the workload, not a warm cache left by someone else."""
    return sorted(k for k in REUSE_KEYS if (workload or {}).get(k))


def model_of(summary: dict[str, Any]) -> str | None:
    """The model AIPerf asked the endpoint for (input_config.models.items[].name, else -m/--model)."""
    models = (summary.get("input_config") or {}).get("models") or {}
    items = models.get("items") if isinstance(models, dict) else models
    names = [str(m["name"]) for m in items or [] if isinstance(m, dict) and m.get("name")]
    if names:
        return ", ".join(names)
    try:
        argv = shlex.split((summary.get("run_info") or {}).get("cli_command") or "")
    except ValueError:
        return None
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag in ("-m", "--model", "--model-names"):
            return value
    return None


def gpus_of(summary: dict[str, Any]) -> tuple[int, str | None]:
    """(GPU count, GPU name) from AIPerf's GPU telemetry (runs_index.py:557-580); (0, None) without any."""
    endpoints = (summary.get("telemetry_data") or {}).get("endpoints") or {}
    count, name = 0, None
    for ep in endpoints.values() if isinstance(endpoints, dict) else []:
        gpus = (ep or {}).get("gpus") or {}
        if isinstance(gpus, dict):
            count += len(gpus)
            name = name or next((g.get("gpu_name") for g in gpus.values() if g and g.get("gpu_name")), None)
    return count, name


def run_details(summary: dict[str, Any]) -> dict[str, Any]:
    """What else AIPerf recorded about how it ran (kept in the provenance record, not in the workload shape)."""
    cfg = summary.get("input_config") or {}
    ds = next((d for d in cfg.get("datasets") or [] if isinstance(d, dict)), {})
    endpoint = cfg.get("endpoint") or {}
    return {
        k: v
        for k, v in {
            "dataset_type": ds.get("type"),
            "dataset_entries": ds.get("entries"),
            "random_seed": ds.get("random_seed", (summary.get("run_info") or {}).get("random_seed")),
            "endpoint_type": endpoint.get("type"),
            "streaming": endpoint.get("streaming"),
            "tokenizer": (cfg.get("tokenizer") or {}).get("name"),
        }.items()
        if v is not None
    }


def provenance(
    summaries: list[dict[str, Any]],
    recipe_ctx: dict[str, Any],
    *,
    stated: dict[str, Any],
    model_mismatch_ok: bool,
) -> dict[str, Any]:
    """The context keys an import may claim, and the `imported` record saying where each came from.

    `stated`: what the user gave on the command line (gpu_type, gpu_count, engine_image, router); a value not
    stated and not in the artifact is "unknown" (gpu_count: None, so per-GPU figures stay empty)."""
    recipe_model = recipe_ctx.get("model")
    measured = sorted({m for s in summaries if (m := model_of(s))})
    if len(measured) > 1:
        raise ProvenanceError(
            f"the AIPerf runs asked for different models ({', '.join(measured)}): import each model's runs on their own"
        )
    model = measured[0] if measured else None
    sources: dict[str, str] = {}
    if model and recipe_model and model != recipe_model:
        if not model_mismatch_ok:
            raise ProvenanceError(
                f"AIPerf measured model {model!r} but recipe {recipe_ctx.get('recipe')} serves {recipe_model!r}; "
                "import under that model's recipe, or pass --model-mismatch-ok to record it as measured"
            )
        sources["model"] = f"AIPerf input_config (recipe's {recipe_model!r} accepted as a mismatch)"
    elif model:
        sources["model"] = "AIPerf input_config (matches the recipe)"
    else:
        sources["model"] = "recipe (AIPerf recorded no model)"
    ctx: dict[str, Any] = {"model": model or recipe_model}

    gpu_counts = {gpus_of(s) for s in summaries}
    telemetry = next(((n, name) for n, name in gpu_counts if n), (0, None))
    for key, from_artifact in (("gpu_type", telemetry[1]), ("gpu_count", telemetry[0] or None)):
        if stated.get(key) is not None:
            ctx[key], sources[key] = stated[key], f"--{key.replace('_', '-')}"
        elif from_artifact:
            ctx[key], sources[key] = from_artifact, "AIPerf GPU telemetry"
        else:
            ctx[key], sources[key] = (None if key == "gpu_count" else UNKNOWN), "unknown"
    for key in ("engine_image", "router"):
        if stated.get(key):
            ctx[key], sources[key] = stated[key], f"--{key.replace('_', '-')}"
        else:
            ctx[key], sources[key] = UNKNOWN, "unknown"
    assumed = sorted(k for k, v in sources.items() if v == "unknown")
    ctx["imported"] = {
        "sources": sources,
        "unknown": assumed,
        "aiperf_model": model,
        "recipe_model": recipe_model,
        "model_mismatch_ok": bool(model_mismatch_ok and model and recipe_model and model != recipe_model),
        "recipe_said": {k: recipe_ctx.get(k) for k in ("gpu_type", "gpu_count", "engine_image", "router")},
        "aiperf": run_details(next((s for s in summaries if s), {})),
    }
    return ctx


def provenance_text(imported: dict[str, Any] | None) -> str:
    """One line for reports and exports: `imported; unknown: ...; model from ...`."""
    if not imported:
        return ""
    parts = ["imported from AIPerf artifacts"]
    if imported.get("unknown"):
        parts.append("unknown (not in the artifact, not stated): " + ", ".join(imported["unknown"]))
    stated = sorted(k for k, v in (imported.get("sources") or {}).items() if str(v).startswith("--"))
    if stated:
        parts.append("stated by the importer: " + ", ".join(stated))
    if imported.get("model_mismatch_ok"):
        parts.append(
            f"model {imported.get('aiperf_model')!r} measured, recipe's {imported.get('recipe_model')!r} "
            "accepted as a mismatch (--model-mismatch-ok)"
        )
    return "; ".join(parts)
