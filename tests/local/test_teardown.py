"""GPUs are always released: nothing a local run started outlives it, and the DGD is deleted/owned.

End to end with the real CLI (`infersweep run --local`) as a subprocess: after success, after a failed
step, after Ctrl-C (SIGINT to the CLI's process group, as a terminal sends it) and after SIGTERM (as a
service manager or `kill` sends it), no Dynamo frontend/mocker, AIPerf, S3 (moto_server) or Prometheus
process of that run is left and none of the ports they listened on is still open. A process belongs to
the run when it carries the run's marker in its environment (every process the CLI starts inherits it),
mentions the run's folder in its argv, or runs in it.

In the rendered YAML: the exit handler deletes the DGD whatever the workflow's status (failure, stop,
deadline), and the deploy step makes the Workflow the DGD's owner, checked against a stand-in of the
Kubernetes API through the real `kubernetes` client (tests/support/k8s_standin.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from tests.support.paths import REPO

CLI = str(Path(sys.executable).parent / "infersweep")
# The CLI's own main, with workflow parameters a user's --set may not change (a short sweep's points, a
# model name the frontend does not serve) handed to run_local as the test's: argv[1] is them as JSON.
CLI_WITH_PARAMS = r"""
import json, sys
import infersweep.local.run as local_run
from infersweep.cli import main
params, run_local = json.loads(sys.argv[1]), local_run.run_local
local_run.run_local = lambda *a, **kw: run_local(*a, **{**kw, "overrides": {**(kw.get("overrides") or {}), **params}})
sys.exit(main(sys.argv[2:]))
"""
RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"
WATCHED = ("dynamo.frontend", "dynamo.mocker", "aiperf", "moto_server", "moto.server", "prometheus")
MARK = "INFERSWEEP_RUN_MARK"


# ---- process and port bookkeeping (Linux /proc) ------------------------------------------------------


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:
        return b""


def run_processes(mark: str, folder: Path) -> dict[int, str]:
    """pid -> cmdline of the live processes that belong to a run (marker in env, folder in argv or cwd)."""
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        stat = _read(f"/proc/{entry.name}/stat")
        if not stat or stat[stat.rindex(b")") + 2 :][:1] == b"Z":
            continue  # gone, or a zombie waiting for its parent: not running
        cmd = _read(f"/proc/{entry.name}/cmdline").replace(b"\0", b" ").decode(errors="replace")
        try:
            cwd = os.readlink(f"/proc/{entry.name}/cwd")
        except OSError:
            cwd = ""
        if mark.encode() in _read(f"/proc/{entry.name}/environ") or str(folder) in cmd or cwd.startswith(str(folder)):
            out[int(entry.name)] = cmd
    return out


def watched(procs: dict[int, str]) -> dict[int, str]:
    return {p: c for p, c in procs.items() if any(w in c for w in WATCHED)}


def _listening() -> dict[int, int]:
    """socket inode -> port of every TCP socket in LISTEN state."""
    out = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in _read(table).decode().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A":
                out[int(f[9])] = int(f[1].rsplit(":", 1)[1], 16)
    return out


def listening_ports(pids) -> set[int]:
    inodes = _listening()
    ports = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inode = int(target[8:-1])
                if inode in inodes:
                    ports.add(inodes[inode])
    return ports


def still_listening(ports: set[int]) -> set[int]:
    return ports & set(_listening().values())


# ---- driving the CLI --------------------------------------------------------------------------------


class CliRun:
    """`infersweep run --local` in its own session, as a user's terminal would run it."""

    def __init__(
        self, tmp: Path, points: list[dict], extra: list[str] = (), env: dict | None = None, params: dict | None = None
    ):
        self.tmp, self.mark = tmp, uuid.uuid4().hex
        self.out = tmp / "runs"
        self.log = tmp / "cli.log"
        params = {"points": json.dumps(points, separators=(",", ":")), **(params or {})}
        argv = [
            sys.executable,
            "-c",
            CLI_WITH_PARAMS,
            json.dumps(params),
            "run",
            "--local",
            RECIPE,
            "--out",
            str(self.out),
            *extra,
        ]
        self.env = dict(os.environ if env is None else env, **{MARK: self.mark})
        self.seen: dict[int, str] = {}
        # Every command line ever seen: a pid the kernel hands to a later process must not erase what ran.
        self.ever_seen: set[str] = set()
        self.ports: set[int] = set()
        with open(self.log, "wb") as log:
            # cwd=tmp: the CLI's cache (.infersweep) and runs are this test's own.
            self.proc = subprocess.Popen(
                argv,
                cwd=tmp,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    @property
    def run_dir(self) -> Path | None:
        # runs/store is the results store local mode keeps beside the run folders (infersweep/local/disk_store.py)
        dirs = [d for d in self.out.glob("*") if d.is_dir() and d.name != "store"] if self.out.exists() else []
        return dirs[0] if dirs else None

    def observe(self) -> None:
        procs = run_processes(self.mark, self.tmp)
        self.seen.update(procs)
        self.ever_seen.update(c for c in procs.values() if c)
        self.ports |= listening_ports(procs)

    def wait_for(self, what, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.observe()
            if what():
                return
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"CLI ended (rc {self.proc.returncode}) before the awaited moment:\n{self.output()[-3000:]}"
                )
            time.sleep(0.3)
        raise AssertionError(f"timed out waiting; CLI output:\n{self.output()[-3000:]}")

    def point_running(self) -> bool:
        return any("steps.aiperf_point" in c for c in self.seen.values()) and any(
            "aiperf" in c and "profile" in c for c in run_processes(self.mark, self.tmp).values()
        )

    def finish(self, timeout: float = 240) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.observe()
            time.sleep(0.3)
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            raise AssertionError(f"CLI did not end within {timeout} s:\n{self.output()[-3000:]}")
        return self.proc.returncode

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def leftovers(self) -> dict[int, str]:
        # Give the kernel a moment to reap what was just killed.
        deadline = time.monotonic() + 5
        while (left := watched(run_processes(self.mark, self.tmp))) and time.monotonic() < deadline:
            time.sleep(0.2)
        return left

    def cleanup(self) -> None:
        for pid in run_processes(self.mark, self.tmp):  # only if a test failed: never leave them
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


POINTS_SHORT = [{"concurrency": 1, "requests": 8, "warmup": 0}]
POINTS_LONG = [{"concurrency": 1, "requests": 8, "warmup": 0}, {"concurrency": 2, "requests": 600, "warmup": 0}]


def assert_nothing_left(run: CliRun, expect_started=("dynamo.frontend", "dynamo.mocker", "moto_server")) -> None:
    seen = " ".join(run.ever_seen)
    for what in expect_started:  # the run really got that far: otherwise "nothing left" proves little
        assert what in seen, (
            f"{what} was never seen running; saw: {sorted(c for c in run.ever_seen if any(w in c for w in WATCHED))[:10]}"
        )
    left = run.leftovers()
    assert left == {}, f"processes of the run are still running: {left}"
    assert run.ports, "no listening port was recorded while the run was up"
    assert still_listening(run.ports) == set(), f"ports still listening: {still_listening(run.ports)}"


@pytest.fixture
def cli_run(tmp_path):
    runs = []

    def start(*a, **kw):
        runs.append(CliRun(tmp_path, *a, **kw))
        return runs[-1]

    yield start
    for r in runs:
        r.cleanup()


@pytest.mark.e2e
def test_success_leaves_nothing_running(cli_run):
    run = cli_run(POINTS_SHORT)
    rc = run.finish()
    assert rc == 0, run.output()[-3000:]
    assert_nothing_left(run, expect_started=("dynamo.frontend", "dynamo.mocker", "moto_server", "aiperf"))


@pytest.mark.e2e
def test_failed_step_leaves_nothing_running(cli_run):
    # A model name the frontend does not serve: every request of the point fails, so the point step
    # fails (exit 2) while the deployment is up. The run must end Failed and still stop everything.
    run = cli_run(POINTS_SHORT, params={"model": "no-such-model"})
    rc = run.finish()
    assert rc == 1, run.output()[-3000:]
    assert "FAILED" in run.output() and "point" in run.output()
    assert_nothing_left(run, expect_started=("dynamo.frontend", "dynamo.mocker", "moto_server", "aiperf"))


@pytest.mark.e2e
@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_interrupt_mid_sweep_leaves_nothing_running(cli_run, how):
    run = cli_run(POINTS_LONG)
    run.wait_for(
        lambda: (
            run.run_dir is not None
            and (run.run_dir / "volumes/workdir/run/points/c1/result.json").exists()
            and run.point_running()
        )
    )
    time.sleep(3)  # AIPerf of the second point is sending requests
    run.observe()
    if how == "ctrl-c":
        os.killpg(run.proc.pid, signal.SIGINT)  # the terminal signals the foreground process group
    else:
        run.proc.send_signal(signal.SIGTERM)
    rc = run.finish(timeout=120)
    out = run.output()
    assert rc != 0, out[-3000:]
    assert f"stopped by {'SIGINT' if how == 'ctrl-c' else 'SIGTERM'}" in out, out[-3000:]
    assert_nothing_left(run, expect_started=("dynamo.frontend", "dynamo.mocker", "aiperf"))
    # The exit handler ran: the DGD was deleted, not just its processes killed by the belt-and-braces.
    assert "onExit.teardown" in out and "ok onExit.teardown" in " ".join(out.split())
    # The point measured before the stop is kept.
    assert json.loads((run.run_dir / "volumes/workdir/run/points/c1/result.json").read_text())["status"] == "ok"


# ---- the rendered YAML -------------------------------------------------------------------------------


def _rendered():
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.recipe import load_recipe
    from workflows.render import render_recipe

    return render_recipe(load_recipe(RECIPE), load_cluster_settings())


def test_exit_handler_deletes_the_dgd_whatever_the_status():
    b = _rendered()
    pipeline = next(t for t in b.templates if t["spec"].get("entrypoint") == "pipeline")
    spec = pipeline["spec"]
    # onExit runs on success, failure, `argo stop` and activeDeadlineSeconds alike (not on `argo terminate`,
    # which is why the DGD is also owned by the Workflow, below).
    assert spec["onExit"] == "exit-handler"
    assert int(spec["activeDeadlineSeconds"]) > 0
    handler = next(t for t in spec["templates"] if t["name"] == "exit-handler")
    tasks = handler["dag"]["tasks"]
    teardown = [t for t in tasks if t.get("templateRef", {}).get("template") == "teardown"]
    assert len(teardown) == 1
    t = teardown[0]
    assert "when" not in t and "depends" not in t, "the teardown must not be conditional on the status"
    args = {p["name"]: p["value"] for p in t["arguments"]["parameters"]}
    assert args["dgd-name"] == "{{workflow.parameters.dgd-name}}"
    # ... and it is retried: a transient API error must not leave GPUs allocated.
    lib = next(x for x in b.templates if x["metadata"]["name"] == "infersweep-teardown")
    assert int(lib["spec"]["templates"][0]["retryStrategy"]["limit"]) >= 1
    # The exit handler starts as soon as the last point ends: nothing in the main DAG follows the span.
    main = next(x for x in spec["templates"] if x["name"] == "pipeline")
    assert not [x for x in main["dag"]["tasks"] if "gpu-span" in (x.get("depends") or "")]


def test_deploy_step_passes_the_workflow_as_owner():
    b = _rendered()
    deploy = next(x for x in b.templates if x["metadata"]["name"] == "infersweep-deploy")["spec"]["templates"][0]
    args = deploy["container"]["args"]
    assert args[args.index("--owner-uid") + 1] == "{{workflow.uid}}"
    assert args[args.index("--owner-name") + 1] == "{{workflow.name}}"


def test_deploy_step_sets_owner_reference_through_the_kubernetes_api(tmp_path):
    """steps.deploy against a stand-in API server: the created DGD is owned by the Workflow."""
    from tests.support.k8s_standin import K8sStandin

    b = _rendered()
    dgd_yaml = yaml.safe_dump(b.dgd)
    uid = str(uuid.uuid4())
    with K8sStandin() as api:
        env = dict(os.environ, KUBECONFIG=str(api.kubeconfig(tmp_path)), PYTHONPATH=str(REPO))
        env.pop("KUBERNETES_SERVICE_HOST", None)
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "steps.deploy",
                "--dgd",
                dgd_yaml,
                "--namespace",
                "bench",
                "--owner-name",
                "wf-abc",
                "--owner-uid",
                uid,
                "--url-param",
                str(tmp_path / "url"),
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert p.returncode == 0, p.stderr
        created = api.objects[
            (
                "nvidia.com",
                b.dgd["apiVersion"].split("/")[1],
                "bench",
                "dynamographdeployments",
                b.dgd["metadata"]["name"],
            )
        ]  # no --run-id: the rendered name as is
        assert created["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "Workflow",
                "name": "wf-abc",
                "uid": uid,
                "blockOwnerDeletion": False,
                "controller": False,
            }
        ]
        assert created["spec"] == b.dgd["spec"]
        # The teardown step deletes it; a second teardown (exit handler after the early one) is fine.
        for expect in ("deleted", "already gone"):
            p = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "steps.teardown",
                    "--name",
                    b.dgd["metadata"]["name"],
                    "--namespace",
                    "bench",
                    "--api-version",
                    b.dgd["apiVersion"].split("/")[1],
                ],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert p.returncode == 0 and expect in p.stdout, (p.stdout, p.stderr)
        assert not [k for k in api.objects if k[3] == "dynamographdeployments"]
        verbs = [(m, path) for m, path, _ in api.requests]
        assert ("POST", "/apis/nvidia.com/v1beta1/namespaces/bench/dynamographdeployments") in verbs
