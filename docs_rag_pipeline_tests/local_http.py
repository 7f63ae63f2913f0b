"""Real HTTP servers on 127.0.0.1 for tests: a threaded server as a context manager, and JSON replies."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    """A handler that logs nothing and answers JSON with :meth:`send_json`."""

    def log_message(self, *args) -> None:  # noqa: ANN002
        return None

    def read_body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def send_json(self, code: int, payload: object) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class LocalServer:
    """Serve ``handler`` on 127.0.0.1 (a free port) in a daemon thread; ``url`` ends with ``path``."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, path: str = "") -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def on_close(self) -> None:
        """Called before the server shuts down (release handlers that are still waiting)."""

    def __enter__(self):  # noqa: ANN204 - returns the subclass
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving (a test that takes the server away); a second call does nothing."""
        if self.httpd.socket.fileno() == -1:
            return
        self.on_close()
        self.httpd.shutdown()
        self.httpd.server_close()
