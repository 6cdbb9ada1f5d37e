"""Bad input is refused with one clear error and touches nothing.

The corpus is data: tests/bad_inputs/recipes/*.yaml (each starts with `# expect: <fragment>`) run as
`infersweep run --local FILE --out OUT`, and tests/bad_inputs/cli.yaml (malformed CLI calls). Each case
must: exit 2; print one or a few lines on stderr containing the expected fragment, and no traceback;
write nothing (the --out folder and the working directory stay as they were); start no process (every
process a call started would inherit a marker in its environment, and none may be found afterwards); run
no injected command (/tmp/infersweep-pwned never appears).

CLI calls run the real `infersweep` executable, one process each. Recipe files go through the same
`infersweep.cli.main` in one driver process (a CLI start-up costs ~1.5 s of CPU on a shared 2-core
machine), except files marked `# run: alone` (a YAML bomb could hang its process: it gets its own).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from infersweep.names import dns_label, is_dns_label, is_label_value, label_value
from tests.support.paths import REPO, TESTS

HERE = TESTS / "bad_inputs"
CLI = str(Path(sys.executable).parent / "infersweep")
RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"
PWNED = Path("/tmp/infersweep-pwned")
MARK = "INFERSWEEP_BAD_INPUT_MARK"


def recipe_cases() -> list[tuple[str, list[str], str, str | None]]:
    out = []
    for f in sorted((HERE / "recipes").glob("*.yaml")):
        head = f.read_text(encoding="utf-8").splitlines()[:2]
        assert head[0].startswith("# expect: "), f"{f}: first line must be '# expect: <fragment>'"
        alone = len(head) > 1 and head[1] == "# run: alone"
        out.append(
            (
                f"recipe:{f.stem}",
                ["run", "--local", str(f), "--out", "{out}"],
                head[0][len("# expect: ") :],
                "alone" if alone else "driver",
            )
        )
    return out


def cli_cases() -> list[tuple[str, list[str], str, str | None]]:
    return [
        (f"cli:{c['id']}", c["argv"], c["expect"], c.get("make", "alone"))
        for c in yaml.safe_load((HERE / "cli.yaml").read_text())
    ]


# Runs cases through infersweep.cli.main in one process: argv/cwd per case in, JSON results out.
DRIVER = r"""
import contextlib, io, json, os, sys, traceback
from infersweep.cli import main
out = []
for case in json.load(sys.stdin):
    os.chdir(case["cwd"])
    err, std = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(std):
        try:
            rc = main(case["argv"])
        except SystemExit as e:
            rc = e.code
        except BaseException:
            traceback.print_exc()  # what the console script would print
            rc = 1
    out.append({"id": case["id"], "rc": rc, "stderr": err.getvalue(), "stdout": std.getvalue()})
print(json.dumps(out))
"""


CASES = recipe_cases() + cli_cases()


def _make(kind: str, where: Path) -> Path:
    f = where / f"{kind}.yaml"
    if kind == "huge":
        # Valid YAML all along, so only the size check can refuse it.
        f.write_text("name: huge\n" + "".join(f"# {'x' * 70}\n" for _ in range(5000)))
    elif kind == "binary":
        f.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
    else:
        raise ValueError(kind)
    return f


def _prepare(case, tmp: Path) -> tuple[Path, Path, list[str]]:
    cid, argv, expect, how = case
    work = tmp / dns_label(cid.replace(":", "-"))
    work.mkdir()
    cwd, out = work / "cwd", work / "out"
    cwd.mkdir()
    out.mkdir()
    (work / "not-a-run").mkdir()
    (work / "a-file").write_text("x\n")
    made = _make(how, work) if how not in ("alone", "driver") else None
    subs = {
        "{recipe}": RECIPE,
        "{out}": str(out),
        "{file}": str(work / "a-file"),
        "{dir}": str(work / "not-a-run"),
        "{made}": str(made),
    }
    args = []
    for a in argv:
        for k, v in subs.items():
            a = a.replace(k, v)
        args.append(a)
    return cwd, out, args


def _files(cwd: Path, out: Path) -> dict:
    return {"out_files": sorted(str(x) for x in out.rglob("*")), "cwd_files": sorted(str(x) for x in cwd.rglob("*"))}


def _run_alone(case, tmp: Path, mark: str) -> dict:
    cid, _, expect, _ = case
    cwd, out, args = _prepare(case, tmp)
    env = dict(os.environ, **{MARK: mark})
    try:
        # Refusing bad input takes a second; a call still busy after 30 s is a hang (e.g. a YAML bomb
        # being expanded), which is itself the failure.
        p = subprocess.run([CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=30)
        rc, stdout, stderr = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, stdout, stderr = "hung for 30 s (killed)", "", ""
    return {"id": cid, "expect": expect, "rc": rc, "stderr": stderr, "stdout": stdout, **_files(cwd, out)}


def _run_driver(cases, tmp: Path, mark: str) -> list[dict]:
    prepared = [(c, *_prepare(c, tmp)) for c in cases]
    payload = json.dumps([{"id": c[0], "cwd": str(cwd), "argv": args} for c, cwd, out, args in prepared])
    p = subprocess.run(
        [sys.executable, "-c", DRIVER],
        input=payload,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, **{MARK: mark}, PYTHONPATH=str(REPO)),
    )
    assert p.returncode == 0, p.stderr[-3000:]
    got = {r["id"]: r for r in json.loads(p.stdout.strip().splitlines()[-1])}
    return [got[c[0]] | {"expect": c[2]} | _files(cwd, out) for c, cwd, out, _ in prepared]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bad")
    mark = uuid.uuid4().hex
    PWNED.unlink(missing_ok=True)
    # Three at a time: each call is a short Python start-up; the machine is shared.
    driver = [c for c in CASES if c[3] == "driver"]
    with ThreadPoolExecutor(2) as pool:
        batch = pool.submit(_run_driver, driver, tmp, mark)
        res = list(pool.map(lambda c: _run_alone(c, tmp, mark), [c for c in CASES if c[3] != "driver"]))
        res += batch.result()
    leftovers = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if mark.encode() in Path(entry.path, "environ").read_bytes():
                    leftovers.append((entry.name, Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ")[:200]))
            except OSError:
                pass
    return {r["id"]: r for r in res}, leftovers


def test_corpus_has_at_least_30_cases():
    assert len(CASES) >= 30, len(CASES)


@pytest.mark.parametrize("cid", [c[0] for c in CASES])
def test_bad_input_gives_one_clear_error_and_touches_nothing(results, cid):
    by_id, _ = results
    r = by_id[cid]
    err = r["stderr"].strip()
    assert r["rc"] == 2, f"{cid}: exit {r['rc']}\nstdout: {r['stdout'][-500:]}\nstderr: {err[-2000:]}"
    assert "Traceback" not in err, f"{cid}: traceback on stderr:\n{err[-2000:]}"
    assert r["expect"] in err, f"{cid}: expected {r['expect']!r} in:\n{err[-1000:]}"
    lines = err.splitlines()
    # argparse's own errors print the usage first, the error line last: still one error to read.
    assert r["expect"] in lines[-1] or len(lines) <= 3, f"{cid}: the error is not the last line:\n{err}"
    assert len(lines) <= 8 and len(err) <= 1500, (
        f"{cid}: {len(lines)} lines / {len(err)} chars, want one clear error:\n{err[:1500]}"
    )
    assert r["out_files"] == [], f"{cid}: wrote into --out: {r['out_files']}"
    assert r["cwd_files"] == [], f"{cid}: wrote into the working directory: {r['cwd_files']}"


def test_no_process_started_and_no_injected_command_ran(results):
    _, leftovers = results
    assert leftovers == [], f"processes started by bad-input calls are still running: {leftovers}"
    assert not PWNED.exists(), f"an injected command ran: {PWNED} exists"


# ---- names are sanitised where they are built -------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "x; rm -rf /",
        "$(touch /tmp/pwned)",
        "nem\u043etron",
        "A" * 300,
        "",
        "a--b-",
        "Nemotron_3 Nano",
        "\u0442\u0435\u0441\u0442",
        "..",
        "ok-name",
    ],
)
def test_dns_label_is_always_a_valid_kubernetes_name_and_never_collides(text):
    name = dns_label(text)
    assert is_dns_label(name), name
    assert dns_label(text) == name  # deterministic: a rerun builds the same name
    if text != name:
        # A changed name carries a hash of the original: look-alikes and cut names stay distinct.
        assert dns_label(text + "x") != name


def test_label_value_of_a_model_id_is_valid_and_readable():
    v = label_value("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8")
    assert is_label_value(v) and v.startswith("nvidia_NVIDIA-Nemotron-3-Nano-30B-A3B-FP8")
    assert label_value("nvidia/a") != label_value("nvidia_a")  # '/' replaced, yet no collision
    assert label_value("ok-value") == "ok-value"
    assert is_label_value(label_value("/" * 100)) and is_label_value(label_value("-x-" * 40))


def test_rendered_labels_and_names_are_valid(tmp_path):
    """Every label value and object name in everything a recipe renders is valid for Kubernetes."""
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.recipe import load_recipe
    from workflows.render import render_recipe

    bundle = render_recipe(load_recipe(RECIPE), load_cluster_settings())
    for doc in bundle.documents():
        meta = doc["metadata"]
        name = meta.get("name") or meta["generateName"].rstrip("-")
        assert is_dns_label(name), (doc["kind"], name)
        for k, v in (meta.get("labels") or {}).items():
            assert is_label_value(str(v)), (doc["kind"], k, v)


# ---- no recipe value reaches a shell ----------------------------------------------------------------


def test_every_step_container_is_exec_form_python_module_never_a_shell():
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.recipe import load_recipe
    from workflows.render import render_recipe

    bundle = render_recipe(load_recipe(RECIPE), load_cluster_settings())
    containers = []
    for t in bundle.templates:
        for tmpl in t["spec"].get("templates", []):
            if "container" in tmpl:
                containers.append((t["metadata"]["name"], tmpl["container"]))
            assert "script" not in tmpl, f"{t['metadata']['name']}: script templates run a shell"
    assert containers
    for name, c in containers:
        cmd = c["command"]
        assert cmd[:2] == ["python", "-m"] and cmd[2].startswith("steps.") and len(cmd) == 3, (name, cmd)
        for a in c.get("args", []):
            assert a not in ("sh", "bash", "-c"), (name, c["args"])
    # The DGD's containers too: exec form, never `sh -c <string with recipe values>`.
    dgd_containers = [comp["podTemplate"]["spec"]["containers"][0] for comp in bundle.dgd["spec"]["components"]]
    for c in dgd_containers:
        assert c["command"][0] not in ("sh", "bash", "/bin/sh", "/bin/bash"), c["command"]


def test_a_hostile_engine_arg_stays_one_argv_item(tmp_path):
    """A recipe value with shell syntax is legal (it is data), but reaches the engine as one argv item."""
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.recipe import parse_recipe
    from workflows.render import render_recipe

    src = (REPO / "params").rglob(f"{RECIPE}.yaml")
    data = yaml.safe_load(next(src).read_text())
    data["engine_args"] = ["--served-model-name", "x; touch /tmp/infersweep-pwned"]
    bundle = render_recipe(parse_recipe(data), load_cluster_settings())
    worker = [c for c in bundle.dgd["spec"]["components"] if c["type"] != "frontend"][0]
    args = worker["podTemplate"]["spec"]["containers"][0]["args"]
    assert "x; touch /tmp/infersweep-pwned" in args


def test_aiperf_gets_an_argv_list_with_values_as_single_items():
    from infersweep.aiperf import build_argv
    from steps.aiperf_point import parse_args

    a = parse_args(
        [
            "--url",
            "http://h:1",
            "--model",
            "m; rm -rf /",
            "--tokenizer",
            "/t",
            "--concurrency",
            "1",
            "--requests",
            "1",
            "--isl",
            "8",
            "--osl",
            "4",
            "--out",
            "/tmp/x",
            "--workload",
            json.dumps({"isl": 8, "osl": 4, "seq_dist": "1,2:50;$(id)"}),
        ]
    )
    argv = build_argv(a)
    assert isinstance(argv, list) and all(isinstance(x, str) for x in argv)
    assert argv[argv.index("--model") + 1] == "m; rm -rf /"
    assert argv[argv.index("--seq-dist") + 1] == "1,2:50;$(id)"
