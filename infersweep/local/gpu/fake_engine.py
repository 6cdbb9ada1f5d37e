"""The engine process of a fake GPU (INFERSWEEP_FAKE_GPU, infersweep/local/gpu/fake_gpu.py): Dynamo's mocker in the
place of `python -m dynamo.vllm|dynamo.sglang`, plus the one endpoint of a real worker the mocker lacks.

Run by the Dynamo interpreter as a script (standard library + ai-dynamo; nothing of infersweep): it logs the
engine command that would have run, starts the mocker command after `--` as its child (same environment: the
planned CUDA_VISIBLE_DEVICES, DYN_SYSTEM_PORT, ...; same log), and serves `<namespace>.<component>.clear_kv_blocks`
as a vLLM worker does (ai-dynamo 1.6.1 dynamo/vllm/worker_factory.py registers it beside generate;
dynamo/vllm/handlers.py clear_kv_blocks yields {"status": "success", ...}). The mocker's KV cache is simulated
inside its process and has no reset endpoint (dynamo/mocker/main.py serves generate only), so a reset restarts
the mocker, as local mode's mocker workers are reset (infersweep.local.dynamo.reconfigure.reset_kv_caches), and answers
once the new mocker has registered its generate endpoint in the discovery store. When the mocker exits by
itself, this process exits with its code, so the deployment sees the worker die.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path


def instance_files(store: Path, component: str) -> dict[str, int]:
    """Discovery entries of `<ns>.<component>.generate` instances: path -> mtime_ns (Dynamo's file store layout)."""
    out = {}
    for p in (store / "v1" / "instances").rglob("*") if (store / "v1" / "instances").is_dir() else []:
        if p.is_file() and component in str(p) and "generate" in str(p):
            try:
                out[str(p)] = p.stat().st_mtime_ns
            except OSError:
                continue
    return out


class Mocker:
    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.argv, self.env = argv, env
        self.lock = threading.Lock()
        self.restarting = False
        self.proc = self._start()

    def _start(self) -> subprocess.Popen:
        return subprocess.Popen(self.argv, env=self.env)

    def restart(self, store: Path, component: str, timeout_s: float = 120.0) -> tuple[bool, str]:
        with self.lock:
            self.restarting = True
            try:
                before = instance_files(store, component)
                self.proc.terminate()
                try:
                    self.proc.wait(30)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
                self.proc = self._start()
                deadline = time.monotonic() + timeout_s
                while time.monotonic() < deadline:
                    if self.proc.poll() is not None:
                        return False, f"the restarted mocker exited with code {self.proc.returncode}"
                    if set(instance_files(store, component)) - set(before):
                        return True, "KV cache cleared (fake GPU: the mocker standing in for the engine restarted)"
                    time.sleep(0.2)
                return False, f"the restarted mocker registered no generate endpoint in {timeout_s:.0f} s"
            finally:
                self.restarting = False


async def serve(mocker: Mocker, component: str) -> None:
    from dynamo.runtime import DistributedRuntime

    runtime = DistributedRuntime(
        asyncio.get_running_loop(),
        os.environ.get("DYN_DISCOVERY_BACKEND", "file"),
        os.environ.get("DYN_REQUEST_PLANE", "tcp"),
    )
    namespace = os.environ.get("DYN_NAMESPACE", "dynamo")
    store = Path(os.environ.get("DYN_FILE_KV", "."))
    endpoint = runtime.endpoint(f"{namespace}.{component}.clear_kv_blocks")

    async def clear_kv_blocks(request=None, context=None):
        ok, message = await asyncio.to_thread(mocker.restart, store, component)
        print(f"clear_kv_blocks: {message}", flush=True)
        yield {"status": "success" if ok else "error", "message": message}

    await endpoint.serve_endpoint(clear_kv_blocks)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--component", required=True, help="the mocker's component: backend | prefill")
    ap.add_argument("--rendered", required=True, help="the engine command that would have run (for the log)")
    ap.add_argument("mocker", nargs=argparse.REMAINDER, help="-- and the mocker command")
    a = ap.parse_args()
    argv = a.mocker[1:] if a.mocker[:1] == ["--"] else a.mocker
    print(f"fake GPU: the engine worker would have run: {a.rendered}", flush=True)
    print(f"fake GPU: running Dynamo's mocker in its place: {shlex.join(argv)}", flush=True)
    env = dict(os.environ)
    # The mocker is the worker: its system server (/metrics, /health) is the one on the planned port.
    os.environ.pop("DYN_SYSTEM_PORT", None)
    mocker = Mocker(argv, env)

    def watch() -> None:
        while True:
            code = mocker.proc.poll()
            if code is not None and not mocker.restarting and not mocker.lock.locked():
                print(f"fake GPU: the mocker exited with code {code}", flush=True)
                os._exit(code or 1)
            time.sleep(0.5)

    threading.Thread(target=watch, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: (mocker.proc.terminate(), os._exit(0)))
    try:
        asyncio.run(serve(mocker, a.component))
    except Exception as e:  # no endpoint: the mocker still serves; a reset then falls back to a restart
        print(f"fake GPU: clear_kv_blocks not served ({e}); the mocker keeps running", flush=True)
        while True:
            time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
