"""A real, throw-away S3-compatible server for local runs and tests.

`LocalS3` starts moto's stand-alone HTTP server (`moto_server`) as a separate
process, so code under test talks plain HTTP to it exactly as it would to
S3/MinIO in the cluster -- no in-process patching of boto3.

    with LocalS3(buckets=["results"]) as s3:
        os.environ.update(s3.env())      # or pass s3.endpoint_url around
        ...

The server keeps its data in memory only: everything is gone after stop().
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from pathlib import Path

HOST = "127.0.0.1"
ACCESS_KEY = "test"
SECRET_KEY = "test"
REGION = "us-east-1"


def moto_server_command() -> list[str]:
    """The command that starts moto's server, preferring the current env's.

    Looks next to sys.executable first (without resolving symlinks: in a venv
    that is the venv's bin/, where pip put `moto_server`), then on PATH, then
    falls back to `python -m moto.server`.
    """
    beside_python = Path(sys.executable).parent / "moto_server"
    if beside_python.exists():
        return [str(beside_python)]
    on_path = shutil.which("moto_server")
    if on_path:
        return [on_path]
    return [sys.executable, "-m", "moto.server"]


def _free_port() -> int:
    # The port is released before moto binds it, so another process may grab
    # it in between; start() retries with a new port if the server dies early.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _terminate(proc: subprocess.Popen, log_file, grace: float = 5.0) -> None:
    """SIGTERM the server's whole process group, SIGKILL it if it lingers.

    Module-level (not a method) so weakref.finalize can call it at interpreter
    exit without keeping the LocalS3 object alive.
    """
    if proc.poll() is None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)  # pid == pgid: it has its own session
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue
    # Reap it (also when it had already exited) so no zombie is left.
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    log_file.close()


class LocalS3:
    """Context manager running a moto S3 server on 127.0.0.1:<free port>."""

    def __init__(
        self,
        buckets: list[str] | tuple[str, ...] | str = (),
        *,
        startup_timeout: float = 30.0,
    ):
        self.buckets = [buckets] if isinstance(buckets, str) else list(buckets)
        self.startup_timeout = startup_timeout
        self.port: int | None = None
        self.pid: int | None = None
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen | None = None
        self._finalizer: weakref.finalize | None = None

    # -- lifecycle --------------------------------------------------------

    def start(self) -> "LocalS3":
        if self._proc is not None:
            raise RuntimeError("LocalS3 already started")
        started = time.monotonic()
        last_error = ""
        for _ in range(3):  # retries only cover the free-port race
            last_error = self._try_start()
            if not last_error:
                break
        else:
            raise RuntimeError(f"moto_server did not start: {last_error}")
        try:
            self._create_buckets()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def _try_start(self) -> str:
        """Start one server process; return '' when it answers, else why not."""
        port = _free_port()
        # Output goes to a temp file, not a pipe: nobody reads a pipe while the
        # server runs, and a full pipe would block the server.
        log_file = tempfile.TemporaryFile(mode="w+b")
        proc = subprocess.Popen(
            [*moto_server_command(), "-H", HOST, "-p", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            # Own session => own process group: stop() can signal the group,
            # and Ctrl-C in the terminal does not hit the server directly.
            start_new_session=True,
        )
        # Registered at once, so the process is killed even if the caller
        # never reaches stop() (crash, forgotten context manager).
        finalizer = weakref.finalize(self, _terminate, proc, log_file)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                why = f"exited with code {proc.returncode}: {_tail(log_file)}"
                finalizer()
                return why
            if _answers(f"http://{HOST}:{port}/"):
                self._proc, self._finalizer = proc, finalizer
                self.port, self.pid = port, proc.pid
                return ""
            time.sleep(0.05)
        why = f"no answer on port {port} within {self.startup_timeout}s: {_tail(log_file)}"
        finalizer()
        return why

    def _create_buckets(self) -> None:
        if not self.buckets:
            return
        s3 = self.client()
        for bucket in self.buckets:
            s3.create_bucket(Bucket=bucket)

    def stop(self) -> None:
        """Stop the server and its process group. Safe to call repeatedly."""
        if self._finalizer is not None:
            self._finalizer()  # a finalize object runs its callback only once

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __enter__(self) -> "LocalS3":
        return self.start()

    def __exit__(self, *exc_info) -> bool:
        self.stop()
        return False  # never swallow the body's exception

    # -- how to reach it --------------------------------------------------

    @property
    def endpoint_url(self) -> str:
        if self.port is None:
            raise RuntimeError("LocalS3 not started")
        return f"http://{HOST}:{self.port}"

    def env(self) -> dict[str, str]:
        """Environment variables that point boto3/AWS CLI at this server.

        Dummy credentials: moto accepts any, and setting them keeps a real
        ~/.aws profile from being picked up by accident.
        """
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_DEFAULT_REGION": REGION,
        }

    def client(self):
        """A boto3 S3 client for this server (boto3 imported lazily)."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True  # any HTTP status means the server is up
    except OSError:
        return False


def _tail(log_file, limit: int = 2000) -> str:
    try:
        log_file.seek(0)
        return log_file.read().decode(errors="replace")[-limit:].strip()
    except (OSError, ValueError):
        return ""
