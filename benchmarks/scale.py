"""Scale of the tool itself: render the catalog, read a 1,000,000-request AIPerf export, publish 1 GB.

1. Render every recipe in params/recipes (DGD + Workflow + every WorkflowTemplate, validated, written as
   `infersweep render --all` does) in a fresh process: bound < 3 s. Also without validation, and for a
   44-recipe catalog (the catalog's recipes rendered in turn until 44 bundles: the catalog is growing).
2. Parse and summarise a 1,000,000-request profile_export.jsonl generated from the real AIPerf 0.13.0
   fixture's records (values varied, 0.1 % HTTP 500s): bound < 10 s and < 2 GB peak RSS, measured in a
   child process (its own rusage). Summarise = what the pipeline does with records (read_point on a
   point that left no summary: counts, error groups, profiling window) and TTFT/ITL/latency percentiles
   over every record. Run in the AIPerf env (where aiperf_point reads points) and in the step env.
3. Publish 1 GB of artifacts (8 x 96 MiB + 256 x 1 MiB) to the local S3 server with infersweep.results.publish
   (sha256 of every object, HEAD, upload, manifest) and with `aws s3 cp --recursive` in the same run:
   ratio aws/ours >= 1 means ours is at least as fast.

    .venv/bin/python benchmarks/scale.py [--only render|parse|publish] [--records 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import CACHE, REPO, Figure, report

FIXTURE = REPO / "tests" / "fixtures" / "aiperf" / "0.13.0" / "dynamo-mocker-c4"
ERROR_FIXTURE = FIXTURE.parent / "partial_500s_rc0"
PYTHONS = {"aiperf env": REPO / ".venv-aiperf/bin/python", "step env": REPO / ".venv/bin/python"}
CATALOG_TARGET = 44


# ---------------------------------------------------------------- 1. render


def _render_child(validate: bool, target: int | None) -> dict:
    """Runs in a fresh interpreter: imports included, as for `infersweep render --all`."""
    t0 = time.perf_counter()
    import workflows.render as render
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.recipe import all_recipe_paths, load_recipe

    t_import = time.perf_counter()
    if not validate:
        render.validate_document = lambda doc: None
    paths = all_recipe_paths()
    n = target or len(paths)
    out = Path(tempfile.mkdtemp(prefix="render-bench-"))
    docs = 0
    try:
        settings = load_cluster_settings()
        for i in range(n):
            r = load_recipe(paths[i % len(paths)])
            bundle = render.render_recipe(r, settings)
            docs += len(bundle.write(out / f"{i:03d}-{r.name}"))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    t1 = time.perf_counter()
    return {
        "recipes": n,
        "catalog": len(paths),
        "documents": docs,
        "import_s": t_import - t0,
        "render_s": t1 - t_import,
        "total_s": t1 - t0,
    }


def bench_render() -> list[Figure]:
    figs = []
    for validate, target, label in (
        (True, None, "catalog"),
        (False, None, "catalog, no validation"),
        (True, CATALOG_TARGET, f"{CATALOG_TARGET}-recipe catalog"),
        (False, CATALOG_TARGET, f"{CATALOG_TARGET}-recipe catalog, no validation"),
    ):
        code = f"import json, scale; print(json.dumps(scale._render_child({validate}, {target})))"
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=Path(__file__).parent,
            check=True,
            capture_output=True,
            text=True,
            env=os.environ | {"PYTHONPATH": str(REPO)},
        ).stdout
        res = json.loads(out.strip().splitlines()[-1])
        figs.append(
            Figure(
                "scale",
                f"render {label} ({res['recipes']} recipes, {res['documents']} files)",
                res["total_s"],
                "s",
                "< 3" if validate else "",
                f"imports {res['import_s']:.2f} s + render/validate/write {res['render_s']:.2f} s",
            )
        )
    return figs


# ---------------------------------------------------------------- 2. parse 1M records


def generate_jsonl(path: Path, n: int, seed: int = 7) -> Path:
    """n profiling records shaped like the real fixture's: its 40 profiling records as templates, each
    request's ids, timestamps and latencies varied; one in 1000 an HTTP 500 like the partial fixture's.
    Written once and kept in benchmarks/.cache (it is ~2.7 GB for 1M records)."""
    done = path.with_suffix(".complete")
    if done.exists() and done.read_text() == str(n):
        return path
    rng = random.Random(seed)
    lines = (FIXTURE / "profile_export.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines]
    profiling = [r for r in records if r["metadata"]["benchmark_phase"] == "profiling"]
    error_rec = next(
        json.loads(x)
        for x in (ERROR_FIXTURE / "profile_export.jsonl").read_text().splitlines()
        if '"error"' in x and '"profiling"' in x
    )
    # 400 distinct bodies (each template x 10 value scalings); per line only ids and times change.
    variants = []
    for rec in profiling:
        for _ in range(10):
            k = rng.uniform(0.5, 2.0)
            metrics = {
                name: {
                    **m,
                    "value": (
                        [v * rng.uniform(0.5, 1.5) for v in m["value"]]
                        if isinstance(m["value"], list)
                        else (m["value"] * k if isinstance(m["value"], float) else m["value"])
                    ),
                }
                for name, m in rec["metrics"].items()
            }
            variants.append(metrics)
    meta = dict(profiling[0]["metadata"])
    path.parent.mkdir(parents=True, exist_ok=True)
    t0 = 1_795_971_233_607_409_927
    with open(path, "w", buffering=1 << 22) as f:
        for i in range(n):
            start = t0 + i * 2_000_000
            m = meta | {
                "x_request_id": f"{i:032x}",
                "session_num": i,
                "conversation_id": f"session_{i:07d}",
                "credit_issued_ns": start - 1000,
                "request_start_ns": start,
                "request_ack_ns": start + 10_000_000,
                "request_end_ns": start + 60_000_000,
            }
            if i % 1000 == 999:
                rec = {"metadata": m, "metrics": error_rec["metrics"], "error": error_rec["error"]}
            else:
                rec = {"metadata": m, "metrics": variants[i % len(variants)]}
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")
    done.write_text(str(n))
    return path


def _parse_child(point_dir: str, what: str) -> dict:
    """Runs in a child process so its peak RSS is its own."""
    t0 = time.perf_counter()
    from infersweep.aiperf import artifacts as aiperf_contract

    if what == "read_point":
        r = aiperf_contract.read_point(point_dir)
        out = {
            "requests_ok": r["requests_ok"],
            "requests_failed": r["requests_failed"],
            "errors": len(r["errors"]),
            "window_s": (r["profiling_end_ns"] - r["profiling_start_ns"]) / 1e9,
        }
    else:  # percentiles over every record, from the records alone
        from array import array

        series = {k: array("d") for k in ("time_to_first_token", "inter_token_latency", "request_latency")}
        n = 0
        for rec in aiperf_contract.iter_profiling_records(Path(point_dir) / aiperf_contract.RECORDS_FILE):
            n += 1
            metrics = rec.get("metrics") or {}
            for k, arr in series.items():
                v = (metrics.get(k) or {}).get("value")
                if isinstance(v, (int, float)):
                    arr.append(v)
        out = {"records": n}
        for k, arr in series.items():
            s = sorted(arr)
            out[k] = {p: s[min(len(s) - 1, int(p / 100 * len(s)))] for p in (50, 90, 99)} if s else {}
    out["seconds"] = time.perf_counter() - t0
    out["fast_json"] = getattr(aiperf_contract, "_FAST_JSON", "stdlib json")
    return out


def run_child_rss(argv: list[str], cwd: Path, env: dict) -> tuple[str, int, float]:
    """Run a child, return (stdout, its peak RSS in bytes, its CPU seconds) from its own rusage (wait4)."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode()
        proc.stderr.close()
        if proc.returncode:
            raise RuntimeError(f"{argv[0]} failed ({proc.returncode}): {err[-2000:]}")
        out.seek(0)
        return out.read().decode(), usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime  # maxrss in KiB


def bench_parse(n: int) -> list[Figure]:
    point = CACHE / f"point-{n}"
    t0 = time.perf_counter()
    generate_jsonl(point / "profile_export.jsonl", n)
    gen_s = time.perf_counter() - t0
    size = (point / "profile_export.jsonl").stat().st_size
    figs = []
    for env_name, python in PYTHONS.items():
        for what in ("read_point", "percentiles"):
            code = f"import json, scale; print(json.dumps(scale._parse_child({str(point)!r}, {what!r})))"
            out, rss, cpu = run_child_rss(
                [str(python), "-c", code],
                Path(__file__).parent,
                os.environ | {"PYTHONPATH": f"{Path(__file__).parent}:{REPO}"},
            )
            res = json.loads(out.strip().splitlines()[-1])
            label = (
                "read_point (counts, errors, window)"
                if what == "read_point"
                else "TTFT/ITL/latency p50/p90/p99 over all records"
            )
            detail = (
                f"{res['requests_ok']:,} ok + {res['requests_failed']:,} failed"
                if what == "read_point"
                else f"{res['records']:,} records"
            )
            figs.append(
                Figure(
                    "scale",
                    f"{n:,}-request jsonl ({size / 2**30:.2f} GiB), {env_name}: {label}",
                    res["seconds"],
                    "s",
                    "< 10",
                    f"{detail}; {res['fast_json']}; CPU {cpu:.1f} s (load-independent)",
                )
            )
            figs.append(Figure("scale", "  peak RSS of that process", rss / 2**30, "GiB", "< 2"))
    figs.append(Figure("scale", "  (generating the jsonl, cached after the first run)", gen_s, "s"))
    return figs


# ---------------------------------------------------------------- 3. publish 1 GB


def make_artifacts(root: Path) -> Path:
    """1 GiB shaped like a big sweep's results: 8 points with a 96 MiB record export, 256 x 1 MiB files."""
    done = root / ".complete"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    for p in range(8):
        d = root / "points" / f"c{2**p}" / "aiperf"
        d.mkdir(parents=True)
        with open(d / "profile_export.jsonl", "wb") as f:
            for _ in range(96):
                f.write(os.urandom(1 << 20))
    for i in range(256):
        d = root / "points" / f"c{2 ** (i % 8)}" / "extra"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"part-{i:03d}.bin").write_bytes(os.urandom(1 << 20))
    done.write_text("ok")
    return root


def bench_publish() -> list[Figure]:
    from infersweep.local.standins.s3server import LocalS3
    from infersweep.results.publish import publish_tree, s3_client

    src = make_artifacts(CACHE / "artifacts-1g")
    tree = src / "points"  # the marker file stays out of the upload
    size = sum(f.stat().st_size for f in tree.rglob("*") if f.is_file())
    figs = []
    with LocalS3(buckets=["bench"]) as s3:
        env = os.environ | s3.env()
        # AWS CLI first, then ours: the server holds the first copy in memory while the second is sent.
        t0 = time.perf_counter()
        subprocess.run(
            ["aws", "s3", "cp", "--recursive", "--only-show-errors", str(tree), "s3://bench/aws/"], env=env, check=True
        )
        aws_s = time.perf_counter() - t0
        os.environ.update(s3.env())
        t0 = time.perf_counter()
        summary = publish_tree(tree, bucket="bench", prefix="ours", s3=s3_client())
        ours_s = time.perf_counter() - t0
    aws_version = subprocess.run(["aws", "--version"], capture_output=True, text=True).stdout.split()[0]
    figs.append(
        Figure(
            "scale",
            f"publish {size / 2**30:.2f} GiB ({summary['objects']} files): infersweep.results.publish",
            ours_s,
            "s",
            note=f"{size / 2**20 / ours_s:.0f} MiB/s incl. sha256 + HEAD + manifest",
        )
    )
    figs.append(
        Figure(
            "scale",
            "  same tree: aws s3 cp --recursive",
            aws_s,
            "s",
            note=f"{aws_version}, {size / 2**20 / aws_s:.0f} MiB/s",
        )
    )
    figs.append(Figure("scale", "  aws time / ours (>= 1: ours at least as fast)", aws_s / ours_s, "x", ">= 1.0"))
    return figs


def main(argv: list[str] | None = None) -> list[Figure]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["render", "parse", "publish"])
    ap.add_argument("--records", type=int, default=1_000_000)
    a = ap.parse_args(argv)
    figs: list[Figure] = []
    if a.only in (None, "render"):
        figs += bench_render()
    if a.only in (None, "parse"):
        figs += bench_parse(a.records)
    if a.only in (None, "publish"):
        figs += bench_publish()
    return report("scale" + (f"-{a.only}" if a.only else ""), figs)


if __name__ == "__main__":
    main()
