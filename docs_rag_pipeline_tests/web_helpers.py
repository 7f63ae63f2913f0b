"""Real HTTP servers on loopback addresses for the web source tests.

Every server keeps an access log on its own side: one :class:`Access` per request with the path,
method, status, the conditional headers received and how many body bytes were written (so a test
can tell a 304 that cost nothing from a 200 that sent a page). Nothing here mocks ``requests``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit


@dataclass
class Access:
    path: str  # with the query string
    method: str
    status: int
    headers: dict[str, str] = field(default_factory=dict)  # request headers that matter here
    body_bytes: int = 0  # body bytes written after the headers

    @property
    def body(self) -> bool:
        return self.body_bytes > 0


class _CountingWriter:
    """Wraps the handler's wfile: counts what is written once the headers are out."""

    def __init__(self, raw, handler: "_Logged") -> None:  # noqa: ANN001
        self._raw = raw
        self._handler = handler

    def write(self, data: bytes) -> int:
        n = self._raw.write(data)
        acc = self._handler._access
        if acc is not None and self._handler._headers_done:
            acc.body_bytes += len(data)
        return n

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._raw, name)


class _Logged(BaseHTTPRequestHandler):
    """Access logging for any handler: mix in before the handler class."""

    protocol_version = "HTTP/1.1"
    _access: Access | None = None
    _headers_done = False

    def setup(self) -> None:
        super().setup()
        self.wfile = _CountingWriter(self.wfile, self)

    def send_response(self, code: int, message: str | None = None) -> None:
        keep = ("If-None-Match", "If-Modified-Since", "User-Agent")
        self._access = Access(self.path, self.command, code,
                              {k: self.headers[k] for k in keep if self.headers.get(k)})
        self._headers_done = False
        self.server.access.append(self._access)  # type: ignore[attr-defined]
        super().send_response(code, message)

    def end_headers(self) -> None:
        super().end_headers()
        self._headers_done = True

    def log_message(self, format: str, *args) -> None:  # noqa: A002, ANN002
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def handle_error(self, request, client_address) -> None:  # noqa: ANN001
        return None  # clients that hang up early are expected here


class LiveServer:
    """A threaded HTTP server on ``host`` (a free port), with ``access`` (its log) and ``url``."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], host: str = "127.0.0.1", port: int = 0,
                 **attrs) -> None:  # noqa: ANN003
        self.httpd = _Server((host, port), handler)
        self.httpd.access = []  # type: ignore[attr-defined]
        for k, v in attrs.items():
            setattr(self.httpd, k, v)
        self.host, self.port = host, self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def access(self) -> list[Access]:
        return self.httpd.access  # type: ignore[attr-defined]

    def paths(self) -> list[str]:
        return [a.path for a in self.access]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "LiveServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# A static site with conditional GET (ETag + Last-Modified)
# --------------------------------------------------------------------------------------------


class StaticHandler(_Logged, SimpleHTTPRequestHandler):
    """``http.server``'s file server (it answers If-Modified-Since) plus ETag / If-None-Match."""

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        self._etag: str | None = None
        super().__init__(*args, directory=str(args[2].directory), **kwargs)

    def _file_for(self) -> str | None:
        path = self.translate_path(self.path)
        if os.path.isdir(path):
            if not urlsplit(self.path).path.endswith("/"):
                return None
            for index in ("index.html", "index.htm"):
                if os.path.isfile(os.path.join(path, index)):
                    return os.path.join(path, index)
            return None
        return path if os.path.isfile(path) else None

    def send_head(self):  # noqa: ANN201
        self._etag = None
        file = self._file_for()
        if file:
            st = os.stat(file)
            etag = f'"{st.st_mtime_ns:x}-{st.st_size:x}"'
            inm = self.headers.get("If-None-Match")
            if inm and (inm.strip() == "*" or etag in [t.strip() for t in inm.split(",")]):
                self.send_response(304)
                self.send_header("ETag", etag)
                self.send_header("Last-Modified", self.date_time_string(st.st_mtime))
                self.end_headers()
                return None
            self._etag = etag
        return super().send_head()

    def end_headers(self) -> None:
        if self._etag and self._access is not None and self._access.status == 200:
            self.send_header("ETag", self._etag)
        self._etag = None
        super().end_headers()


def static_server(root: Path, host: str = "127.0.0.1") -> LiveServer:
    return LiveServer(StaticHandler, host, directory=root)


# --------------------------------------------------------------------------------------------
# A scripted site: path → a function writing the answer
# --------------------------------------------------------------------------------------------

Route = Callable[["ScriptedHandler"], None]


class ScriptedHandler(_Logged):
    """Answers from ``server.routes`` (exact path with query, else path without it); 404 otherwise.
    ``server.hits`` counts requests per path."""

    def do_GET(self) -> None:  # noqa: N802
        srv = self.server
        with srv.lock:  # type: ignore[attr-defined]
            srv.hits[self.path] = srv.hits.get(self.path, 0) + 1  # type: ignore[attr-defined]
        routes = srv.routes  # type: ignore[attr-defined]
        route = routes.get(self.path) or routes.get(urlsplit(self.path).path)
        if route is None:
            for prefix, r in srv.prefix_routes:  # type: ignore[attr-defined]
                if self.path.startswith(prefix):
                    route = r
                    break
        if route is None:
            self.reply(404, "<html><body><h1>Not found</h1></body></html>")
            return
        try:
            route(self)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def hits(self) -> int:
        return self.server.hits[self.path]  # type: ignore[attr-defined]

    def reply(self, status: int, body: str | bytes = b"", *, ctype: str | None = "text/html; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def redirect(self, location: str, status: int = 302) -> None:
        self.reply(status, b"", ctype=None, headers={"Location": location})


def scripted_server(routes: dict[str, Route], host: str = "127.0.0.1",
                    prefix_routes: list[tuple[str, Route]] | None = None, port: int = 0) -> LiveServer:
    return LiveServer(ScriptedHandler, host, port, routes=routes, prefix_routes=prefix_routes or [], hits={},
                      lock=threading.Lock())


def page(title: str, body: str, *, links: tuple[str, ...] = ()) -> str:
    """A small documentation-like HTML page."""
    nav = "".join(f'<li><a href="{h}">{h}</a></li>' for h in links)
    return textwrap.dedent(f"""\
        <!DOCTYPE html><html><head><meta charset="utf-8"><title>{title} — Test Docs documentation</title></head>
        <body><nav><ul>{nav}</ul></nav><main><h1 id="top">{title}</h1>{body}</main>
        <footer>Copyright</footer></body></html>""")


# --------------------------------------------------------------------------------------------
# A real documentation site from a Debian package
# --------------------------------------------------------------------------------------------

DEBIAN_DOCS = "python-requests-doc"  # the Requests library's Sphinx HTML manual
DEBIAN_DOCS_DIR = Path("/usr/share/doc/python-requests-doc/html")


def ensure_debian_docs() -> tuple[Path | None, str]:
    """The installed HTML folder, installing the package when it is absent and we are root.
    Returns (folder, "") or (None, why it is not there)."""
    if (DEBIAN_DOCS_DIR / "index.html").is_file():
        return DEBIAN_DOCS_DIR, ""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None, f"{DEBIAN_DOCS} is not installed and installing it needs root (apt-get install {DEBIAN_DOCS})"
    if not shutil.which("apt-get"):
        return None, f"{DEBIAN_DOCS} is not installed and there is no apt-get here"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", DEBIAN_DOCS]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if run.returncode != 0 and "Unable to locate package" in run.stderr + run.stdout:
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, text=True, timeout=600)
        run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if (DEBIAN_DOCS_DIR / "index.html").is_file():
        return DEBIAN_DOCS_DIR, ""
    tail = (run.stderr or run.stdout).strip().splitlines()[-3:]
    return None, f"could not install {DEBIAN_DOCS} (apt-get exit {run.returncode}: {' / '.join(tail)})"
