"""A real HTTP endpoint on 127.0.0.1 that accepts LangSmith's API calls and records them."""

from __future__ import annotations

import json
import re
import threading

from .local_http import LocalServer, QuietHandler


class LangSmithServer(LocalServer):
    """``hang=True``: it reads each request and never answers (until the server closes). ``refuse=True``:
    every request is a 401 that repeats the key it got (``{"detail": "Invalid token <key>"}``)."""

    def __init__(self, *, hang: bool = False, refuse: bool = False) -> None:
        self.requests: list[tuple[str, str, bytes]] = []
        self.stop = threading.Event()
        outer = self

        class Handler(QuietHandler):
            def _handle(self):  # noqa: ANN202
                body = self.read_body()
                outer.requests.append((self.command, self.path, body))
                if hang:
                    outer.stop.wait(600)
                    return
                if refuse:
                    self.send_json(401, {"detail": f"Invalid token {self.headers.get('x-api-key')}"})
                    return
                self.send_json(200, outer.reply(self.command, self.path, body))

            do_GET = do_POST = do_PATCH = do_PUT = _handle

        super().__init__(Handler)

    def on_close(self) -> None:
        self.stop.set()

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
