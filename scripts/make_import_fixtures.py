"""Make tests/fixtures/aiperf/import/: real AIPerf 0.13 artifact folders for `infersweep import`'s tests.

Starts a local Dynamo frontend (round-robin: the mocker keeps its prefix cache; under the KV router a
vLLM worker without KV events gets none, infersweep/local/dynamo/command_lines.py _mocker_passthrough) and one mocker worker serving the toy model under the name of
recipe nemotron-3-nano-fp8-vllm-agg-kv's model (infersweep.local.dynamo.deploy.deploy_local), runs `aiperf profile`
three times (a plain run, a `--concurrency 2,4 --num-profile-runs 3` tree, a prefix-prompt run), trims the
per-request records and the server-metrics exports (nothing the importer reads), and writes each command
to <out>/COMMANDS.txt. Run from the repository root:

    PYTHONPATH=$PWD .venv/bin/python scripts/make_import_fixtures.py tests/fixtures/aiperf/import
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from infersweep.local.dynamo.deploy import deploy_local
from infersweep.local.dynamo.deployment import teardown_local
from infersweep.local.dynamo.wait import wait_ready_local
from infersweep.paths import REPO_ROOT, venv_python

MODEL = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8"  # recipe nemotron-3-nano-fp8-vllm-agg-kv's model


def _dgd() -> dict:
    def container(command: list[str], args: list[str]) -> dict:
        return {"name": "main", "image": "unused-locally", "command": command, "args": args}

    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "import-fixtures"},
        "spec": {
            "components": [
                {
                    "name": "Frontend",
                    "type": "frontend",
                    "replicas": 1,
                    "podTemplate": {
                        "spec": {
                            "containers": [
                                container(["python3"], ["-m", "dynamo.frontend", "--router-mode", "round-robin"])
                            ]
                        }
                    },
                },
                {
                    "name": "VllmWorker",
                    "type": "worker",
                    "replicas": 1,
                    "podTemplate": {
                        "spec": {
                            "containers": [
                                container(["python3", "-m", "dynamo.vllm"], ["--model", MODEL, "--block-size", "16"])
                            ]
                        }
                    },
                },
            ]
        },
    }


# name -> AIPerf arguments beyond the common ones
CASES = {
    "plain-c4": ["--concurrency", "4", "--request-count", "24", "--warmup-request-count", "4", "--random-seed", "7"],
    "multirun-c2-c4": [
        "--concurrency",
        "2,4",
        "--request-count",
        "12",
        "--warmup-request-count",
        "2",
        "--num-profile-runs",
        "3",
    ],
    "prefix-c4": [
        "--concurrency",
        "4",
        "--request-count",
        "24",
        "--warmup-request-count",
        "4",
        "--random-seed",
        "9",
        "--num-prefix-prompts",
        "2",
        "--prefix-prompt-length",
        "48",
    ],
}


def _trim(folder: Path) -> None:
    """Drop the server metrics exports (nothing the importer reads, and they are the large files); the
    per-request records stay whole (a few dozen per run): the importer reads them for the delivered load."""
    for pattern in ("server_metrics_export.*", "server_metrics.json"):
        for f in folder.rglob(pattern):
            f.unlink()


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    aiperf = str(Path(venv_python("aiperf")).parent / "aiperf")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "PYTHONPATH")}
    commands = []
    with tempfile.TemporaryDirectory(prefix="import-fixtures-") as tmp:
        state, model_dir = Path(tmp) / "dgd", Path(tmp) / "model"
        dep = deploy_local(_dgd(), model_dir=model_dir, state_dir=state, max_workers_per_component=1)
        try:
            wait_ready_local(state, timeout_s=180)
            for name, args in CASES.items():
                target = out / name
                shutil.rmtree(target, ignore_errors=True)
                argv = [aiperf, "profile", "--url", dep.frontend_url, "--endpoint-type", "chat", "--streaming"]
                argv += ["--model", MODEL, "--tokenizer", dep.model_dir, "--isl", "64", "--osl", "16"]
                argv += ["--extra-inputs", "ignore_eos:true", "--ui-type", "none", "--artifact-dir", str(target)]
                argv += args
                shown = shlex.join(argv).replace(dep.frontend_url, "<frontend>").replace(dep.model_dir, "<toy model>")
                shown = shown.replace(aiperf, "aiperf").replace(str(out), "<out>")
                print("+", shown, flush=True)
                proc = subprocess.run(argv, env=env, cwd=REPO_ROOT, text=True, capture_output=True, timeout=900)
                commands.append(f"{shown}\n# exit {proc.returncode}\n")
                if proc.returncode != 0:
                    sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
                    raise SystemExit(f"{name}: aiperf exited {proc.returncode}")
                _trim(target)
        finally:
            teardown_local(state)
    (out / "COMMANDS.txt").write_text("\n".join(commands), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
