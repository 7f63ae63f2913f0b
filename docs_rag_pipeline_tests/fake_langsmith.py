"""A real HTTP endpoint on 127.0.0.1 that accepts LangSmith's API calls and records them."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LangSmithServer:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # noqa: ANN002
                pass

            def _handle(self):  # noqa: ANN202
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                outer.requests.append((self.command, self.path, body))
                payload = outer.reply(self.command, self.path, body)
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def reply(self, method: str, path: str, body: bytes) -> object:  # noqa: ARG002
        return {}

    def runs(self) -> list[dict]:
        """Every run object posted or patched (multipart or JSON batch)."""
        out = []
        for method, path, body in self.requests:
            if "/runs" not in path:
                continue
            for m in re.finditer(rb"\{\"id\":.*?(?=\r\n--)", body, re.S):
                try:
                    out.append(json.loads(m.group(0)))
                except ValueError:
                    pass
        return out

    def __enter__(self) -> "LangSmithServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:  # noqa: ANN002
        self.httpd.shutdown()
        self.httpd.server_close()
