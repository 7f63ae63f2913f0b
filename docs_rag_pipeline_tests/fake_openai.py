"""A real HTTP server on 127.0.0.1 that speaks the OpenAI embeddings API (vectors from the local model)."""

from __future__ import annotations

import json
import time
from typing import Callable

import numpy as np

from .local_http import LocalServer, QuietHandler


class EmbeddingsServer(LocalServer):
    def __init__(self, embed: Callable[[list[str]], np.ndarray], *, fail_first: int = 0, drip: float = 0,
                 mangle: Callable[[list[str], dict], dict] | None = None,
                 reply: Callable[[list[str], dict], tuple[int, dict, bytes] | None] | None = None) -> None:
        """``drip``: send each answer 64 bytes at a time, this many seconds apart (each read is quick);
        ``mangle(texts, answer)``: the answer as a misbehaving server would send it (settable later);
        ``reply(texts, request_headers)`` (read case-insensitively): ``(status, headers, body)`` to send instead of an answer (an
        HTML page, a 429 with Retry-After, a 401 that echoes the key), or None to answer (settable later)."""
        self.requests: list[dict] = []
        self.fixed_size = False  # True: refuse `dimensions` as OpenAI's text-embedding-ada-002 does
        self.fail_first = fail_first
        self.mangle = mangle
        self.reply = reply
        outer = self

        class Handler(QuietHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.read_body())
                outer.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if outer.fail_first > 0:
                    outer.fail_first -= 1
                    self.send_json(503, {"error": {"message": "overloaded", "type": "server_error"}})
                    return
                if not self.path.endswith("/embeddings"):
                    self.send_json(404, {"error": {"message": "not found"}})
                    return
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                raw = outer.reply(texts, self.headers) if outer.reply else None
                if raw is not None:
                    status, headers, data = raw
                    self.send_response(status)
                    for k, v in {"Content-Length": str(len(data)), **headers}.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                    return
                vecs = embed(texts)
                size = body.get("dimensions")
                if size is not None:  # as OpenAI's text-embedding-3 models: the first `size` numbers, normalised
                    if outer.fixed_size or not isinstance(size, int) or not 0 < size <= vecs.shape[1]:
                        self.send_json(400, {"error": {"message": "This model does not support specifying dimensions."
                                                       if outer.fixed_size else
                                                       f"dimensions {size!r} is not supported by this model",
                                                       "type": "invalid_request_error", "param": "dimensions"}})
                        return
                    vecs = vecs[:, :size] / np.maximum(np.linalg.norm(vecs[:, :size], axis=1, keepdims=True), 1e-12)
                if drip:
                    data = json.dumps({"object": "list", "model": body["model"],
                                       "data": [{"object": "embedding", "index": i, "embedding": v.tolist()}
                                                for i, v in enumerate(vecs)]}).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    for k in range(0, len(data), 64):
                        time.sleep(drip)
                        self.wfile.write(data[k:k + 64])
                        self.wfile.flush()
                    return
                answer = {"object": "list", "model": body["model"],
                          "data": [{"object": "embedding", "index": i, "embedding": v.tolist()}
                                   for i, v in enumerate(vecs)],
                          "usage": {"prompt_tokens": 1, "total_tokens": 1}}
                self.send_json(200, outer.mangle(texts, answer) if outer.mangle else answer)

        super().__init__(Handler, path="/v1")
