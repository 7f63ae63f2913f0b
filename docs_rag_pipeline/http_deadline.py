"""A deadline for a whole HTTP exchange, not for one read.

The HTTP clients here (``requests``, and ``httpx2`` under the ``openai`` client) apply a timeout to
each connect and each read: a server that sends a few bytes every second never trips it, and holds
the caller (an answer, a search, a serving thread) for as long as it likes. These helpers add a
deadline for the whole response, checked at every piece of body that arrives, however small, so a
trickling server is cut off within the deadline plus at most one read timeout.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["ResponseCompressed", "ResponseTooLarge", "deadline_http_client", "read1", "shutdown_at", "within"]


class ResponseCompressed(Exception):
    """A response compressed though none was asked for, which a size limit cannot bound (50 KB of gzip
    can be 50 MB): it is not read."""

    def __init__(self, encoding: str) -> None:
        super().__init__(f"the response is compressed (Content-Encoding: {encoding[:40]}) though an uncompressed "
                         "one was asked for")
        self.encoding = encoding


class ResponseTooLarge(Exception):
    """A response body grew past the size its caller allows (``max_bytes`` of :func:`deadline_http_client`)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the response is over {limit:,} bytes")
        self.limit = limit


def within(seconds: float, fn: Callable[[], Any], *, name: str = "docs-rag call",
           on_late: Callable[[Any], None] | None = None) -> tuple[bool, Any]:
    """``(True, fn())`` when ``fn`` returns within ``seconds`` (its exception raised here), else
    ``(False, None)``: the call is left to finish in a daemon thread, and what it returns after that
    goes to ``on_late`` (a response to close). For calls whose own timeouts are per read, such as a
    request whose server trickles its header lines, or a LangSmith call that must not hold a request."""
    box: dict[str, Any] = {}
    done = threading.Event()
    lock = threading.Lock()

    def run() -> None:
        try:
            value = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            box["error"] = exc
        else:
            with lock:
                late = box.get("abandoned", False)
                if not late:
                    box["value"] = value
            if late and on_late is not None:
                on_late(value)
        finally:
            done.set()

    threading.Thread(target=run, daemon=True, name=name[:100]).start()
    if not done.wait(max(0.0, seconds)):
        with lock:
            if "value" not in box and "error" not in box:
                box["abandoned"] = True
                return False, None
    if "error" in box:
        raise box["error"]
    return True, box.get("value")


def deadline_http_client(seconds: float, *, max_bytes: int | None = None) -> Any:
    """An ``httpx2`` client for ``openai.OpenAI(http_client=...)`` (the SDK's defaults: redirects
    followed, its connection limits, proxies from the environment) whose every response, headers and
    body, must be complete within ``seconds`` of the request: else ``httpx2.ReadTimeout`` while reading
    it; and whose body, with ``max_bytes``, may not grow past that many bytes (:class:`ResponseTooLarge`
    as it arrives: a fast server could fill gigabytes of memory within the deadline). Done with event
    hooks, not a transport of its own: a client given a transport ignores HTTP(S)_PROXY, and a
    deployment behind a proxy could no longer reach its LLM."""
    import httpx2
    import openai

    key = "docs_rag_deadline"

    class _Body(httpx2.SyncByteStream):
        def __init__(self, stream: httpx2.SyncByteStream, deadline: float, request: httpx2.Request) -> None:
            self._stream, self._deadline, self._request = stream, deadline, request

        def __iter__(self) -> Iterator[bytes]:
            size = 0
            for chunk in self._stream:
                if time.monotonic() > self._deadline:
                    raise httpx2.ReadTimeout(f"the response took over {seconds:g} s", request=self._request)
                size += len(chunk)
                if max_bytes is not None and size > max_bytes:
                    raise ResponseTooLarge(max_bytes)
                yield chunk

        def close(self) -> None:
            self._stream.close()

    def start(request: httpx2.Request) -> None:
        request.extensions = {**request.extensions, key: time.monotonic() + seconds}

    def watch(response: httpx2.Response) -> None:  # called with the headers, before the body is read
        deadline = response.request.extensions.get(key)
        if deadline is None:
            return
        if time.monotonic() > deadline:
            response.close()
            raise httpx2.ReadTimeout(f"the response headers took over {seconds:g} s", request=response.request)
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if max_bytes is not None and encoding not in ("", "identity") and response.status_code < 300:
            response.close()  # compressed all the same: its size says nothing of what it inflates to
            raise ResponseCompressed(encoding)
        response.stream = _Body(response.stream, deadline, response.request)

    # a compressed body would be counted before it is inflated (1,000 to 1 for gzip): ask for none
    headers = {"Accept-Encoding": "identity"} if max_bytes is not None else None
    return openai.DefaultHttpxClient(event_hooks={"request": [start], "response": [watch]}, headers=headers)


def read1(resp: Any) -> bytes:
    """The next piece of a ``requests`` response's (decoded) body, b"" at its end: at most one socket
    read per call, so a deadline is checked however slowly the body trickles (``iter_content``'s
    ``read(65536)`` waits for 64 KiB: hours at a byte a second). urllib3's errors become the requests
    ones ``iter_content`` would raise."""
    import requests
    from urllib3.exceptions import DecodeError, ProtocolError, ReadTimeoutError, SSLError

    try:
        return resp.raw.read1(65536, decode_content=True)
    except ReadTimeoutError as exc:
        raise requests.ReadTimeout(exc) from None
    except ProtocolError as exc:
        raise requests.exceptions.ChunkedEncodingError(exc) from None
    except DecodeError as exc:
        raise requests.exceptions.ContentDecodingError(exc) from None
    except SSLError as exc:
        raise requests.exceptions.SSLError(exc) from None


@contextmanager
def shutdown_at(sock: socket.socket | None, deadline: float) -> Iterator[None]:
    """Shut ``sock`` down at ``deadline`` (``time.monotonic()``) if the block is still running then, so a
    read blocked on it returns at once (end of file). A deadline checked between reads cannot cut a read
    that never returns: urllib3 reads a chunk-size line, or the trailer after the last chunk, with one
    ``readline`` inside one ``read1``, and a server dripping that line a byte a second (never a whole
    read timeout) held the caller for as long as it liked. Nothing happens to a socket once the block
    has left (it may go back to its pool); with no socket (None) this does nothing."""
    if sock is None:
        yield
        return
    lock = threading.Lock()
    left = False

    def cut() -> None:
        with lock:
            if left:
                return
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed
                pass

    timer = threading.Timer(max(0.0, deadline - time.monotonic()), cut)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        with lock:
            left = True
        timer.cancel()
