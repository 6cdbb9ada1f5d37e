"""Runs inside .venv-aic (AIConfigurator 0.12.0), never imported by infersweep itself: JSON in on stdin,
JSON out on stdout. Standalone on purpose (AIConfigurator pins its own numpy/pandas/pydantic), so it
imports nothing from infersweep.

Request:  {"support": [{"model", "system", "backend"}...], "points": [{...estimate kwargs...}...]}
Response: {"aic_version", "support": [[rows]...], "points": [{"ok": true, ...} | {"ok": false, "error"}]}

- "support" reads AIConfigurator's own support matrix, the CSVs under
  aiconfigurator_core/systems/support_matrix/<system>.csv (columns HuggingFaceID, Architecture, System,
  Backend, Version, Mode, Status, ErrMsg): the same table `aiconfigurator cli support` and
  aiconfigurator.sdk.common.check_support vote over. It needs no import of aiconfigurator (fast).
- "points" calls aiconfigurator.cli.api.cli_estimate, the documented programmatic equivalent of
  `aiconfigurator cli estimate` (aiconfigurator/cli/api.py: cli_estimate -> _run_agg_estimate for
  mode="agg", _run_static_estimate -> InferenceSession.run_static for "static_ctx"/"static_gen"), with
  database_mode="SILICON" (the measured database). Its EstimateResult carries ttft/tpot in ms, the
  resolved backend_version and raw["tokens/s"], raw["tokens/s/user"].
"""

from __future__ import annotations

import csv
import importlib.metadata
import importlib.util
import io
import json
import logging
import sys
from contextlib import redirect_stdout
from pathlib import Path

ESTIMATE_KEYS = (
    "mode",
    "backend_name",
    "backend_version",
    "isl",
    "osl",
    "batch_size",
    "tp_size",
    "attention_dp_size",
    "moe_tp_size",
    "moe_ep_size",
    "prefix",
    "gemm_quant_mode",
    "moe_quant_mode",
)


def _family(hf_id: str) -> str:
    """A checkpoint's name without its precision / tuning suffixes (Qwen/Qwen3-32B-FP8 -> qwen3-32b)."""
    name = hf_id.split("/")[-1].lower()
    for suffix in ("-instruct", "-fp8", "-bf16", "-nvfp4", "-fp4", "-meta-llama", "meta-"):
        name = name.replace(suffix, "")
    return name


def support_rows(model: str, system: str, backend: str) -> dict:
    """{"rows": the matrix rows of `model` on system/backend, "similar": other checkpoints of the same
    family the matrix does have (e.g. the BF16 of an FP8 checkpoint)}."""
    spec = importlib.util.find_spec("aiconfigurator_core")
    root = Path(list(spec.submodule_search_locations)[0]) / "systems" / "support_matrix"
    path = root / f"{system}.csv"
    if not path.is_file():
        return {"rows": [], "similar": []}
    with path.open(newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["Backend"] == backend]
    keep = ("HuggingFaceID", "System", "Backend", "Version", "Mode", "Status", "ErrMsg")
    similar = sorted(
        {
            r["HuggingFaceID"]
            for r in rows
            if r["HuggingFaceID"] != model and _family(r["HuggingFaceID"]) == _family(model) and r["Status"] == "PASS"
        }
    )
    return {"rows": [{k: r[k] for k in keep} for r in rows if r["HuggingFaceID"] == model], "similar": similar}


def estimate(point: dict) -> dict:
    from aiconfigurator.cli.api import cli_estimate

    kwargs = {k: point[k] for k in ESTIMATE_KEYS if point.get(k) is not None}
    noise = io.StringIO()
    with redirect_stdout(noise):  # the estimator prints progress; stdout is our JSON channel
        r = cli_estimate(point["model_path"], point["system_name"], database_mode="SILICON", **kwargs)
    raw = r.raw or {}
    return {
        "ok": True,
        "ttft_ms": float(r.ttft),
        "itl_ms": float(r.tpot),
        "tok_s": float(raw.get("tokens/s") or 0.0),
        "tok_s_user": float(raw.get("tokens/s/user") or 0.0),
        "backend_version": str(r.backend_version),
        "memory_gb": raw.get("memory"),
        "warning": r.kv_cache_warning,
    }


def main() -> int:
    logging.disable(logging.WARNING)  # the database loader warns per file on stderr/stdout
    req = json.load(sys.stdin)
    out: dict = {"aic_version": importlib.metadata.version("aiconfigurator"), "support": [], "points": []}
    for s in req.get("support", []):
        out["support"].append(support_rows(s["model"], s["system"], s["backend"]))
    for p in req.get("points", []):
        try:
            out["points"].append(estimate(p))
        except Exception as e:  # one bad point must not lose the others
            out["points"].append({"ok": False, "error": f"{type(e).__name__}: {' '.join(str(e).split())[:400]}"})
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
