"""A smart-HTTP Git server on 127.0.0.1 that wants HTTP basic auth: Python's http.server in front of the
real `git http-backend`, run as a CGI program (git-http-backend(1): GIT_PROJECT_ROOT, GIT_HTTP_EXPORT_ALL,
PATH_INFO, QUERY_STRING, REQUEST_METHOD, CONTENT_TYPE, REMOTE_USER; its output is a CGI response with a
`Status:` header). A request without the right Authorization header gets 401 and `WWW-Authenticate: Basic`,
as a Git host in front of a private repository answers (RFC 7617), so the git client asks its credential
helper and retries.

Every Authorization header received is recorded, so a test can see which credentials were sent.
"""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class GitHttpServer:
    def __init__(self, root: Path, username: str, password: str):
        self.root, self.username, self.password = root, username, password
        self.authorizations: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                self._serve()

            def do_POST(self):
                self._serve()

            def _serve(self):
                got = self.headers.get("Authorization", "")
                server.authorizations.append(got)
                want = "Basic " + base64.b64encode(f"{server.username}:{server.password}".encode()).decode()
                if got != want:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path, _, query = self.path.partition("?")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                env = {
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "GIT_PROJECT_ROOT": str(server.root),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "REQUEST_METHOD": self.command,
                    "PATH_INFO": path,
                    "QUERY_STRING": query,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                    "CONTENT_LENGTH": str(len(body)),
                    "REMOTE_USER": server.username,
                    "REMOTE_ADDR": "127.0.0.1",
                    "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                    "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                }
                out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
                head, _, payload = out.partition(b"\r\n\r\n")
                headers = [h.split(":", 1) for h in head.decode().split("\r\n") if ":" in h]
                status = next((v.strip() for k, v in headers if k.lower() == "status"), "200 OK")
                self.send_response(int(status.split()[0]))
                for k, v in headers:
                    if k.lower() != "status":
                        self.send_header(k, v.strip())
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> GitHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
