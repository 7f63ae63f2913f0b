"""A real HTTP server on 127.0.0.1 that speaks the OpenAI embeddings API (vectors from the local model)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

import numpy as np


class EmbeddingsServer:
    def __init__(self, embed: Callable[[list[str]], np.ndarray], *, fail_first: int = 0) -> None:
        self.requests: list[dict] = []
        self.fail_first = fail_first
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # noqa: ANN002
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if outer.fail_first > 0:
                    outer.fail_first -= 1
                    self._send(503, {"error": {"message": "overloaded", "type": "server_error"}})
                    return
                if not self.path.endswith("/embeddings"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                vecs = embed(texts)
                self._send(200, {"object": "list", "model": body["model"],
                                 "data": [{"object": "embedding", "index": i, "embedding": v.tolist()}
                                          for i, v in enumerate(vecs)],
                                 "usage": {"prompt_tokens": 1, "total_tokens": 1}})

            def _send(self, code: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "EmbeddingsServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:  # noqa: ANN002
        self.httpd.shutdown()
        self.httpd.server_close()
