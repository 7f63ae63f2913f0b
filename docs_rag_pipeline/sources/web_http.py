"""The crawler's HTTP connections: ``requests`` with a header block checked for its end.

http.client reads the end of the connection inside a response's header block as the end of the
block: a server (or a proxy) that hangs up after ``HTTP/1.1 200 OK``, or inside a header value,
gives what looks like a complete ``200`` with an empty body, and a crawler took it for a page that
is no longer HTML (removed from the index) or for an empty robots.txt (no rules at all). Such an
answer is a broken connection: here it raises, and requests reports a connection error (retried,
then a failed fetch), as for any other connection cut mid-answer.

A ``Location`` header is read as browsers read it (:func:`location_url`), here and in requests' own
look at the next URL of a redirect, which raised UnicodeDecodeError on a byte that is not UTF-8.
"""

from __future__ import annotations

import http.client
import re
import socket
import struct
import threading
from typing import Any

import requests
import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

__all__ = ["HeadersCutOff", "browser_href", "crawler_session", "location_url", "response_socket", "shut_down", "watch_sockets"]


class HeadersCutOff(http.client.HTTPException):
    """The connection closed before the blank line that ends a response's header block."""

    def __init__(self) -> None:
        super().__init__("the connection closed before the end of the response headers")


class _LastLine:
    """A response's file that remembers the last line read from it (the rest is passed through)."""

    def __init__(self, fp: Any) -> None:
        self.fp = fp
        self.last: bytes | None = None

    def readline(self, limit: int = -1) -> bytes:
        self.last = self.fp.readline(limit)
        return self.last

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fp, name)


_watched = threading.local()


def watch_sockets(sockets: list[socket.socket] | None) -> None:
    """Append to ``sockets`` the socket of every response of :func:`crawler_session` that this thread
    reads from now on, before its header block is read: a caller that gives up on a request whose
    headers trickle in shuts it down (:func:`shut_down`), so its thread and connection end then."""
    _watched.sockets = sockets


def shut_down(sockets: list[socket.socket]) -> None:
    """Shut the sockets down (a read blocked on one returns at once), and make their close a reset, so the
    server learns at once that the exchange is over (not at its next writes); one already closed is left."""
    for sock in sockets:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _WholeHeadersResponse(http.client.HTTPResponse):
    """An http.client response whose header block must end with its blank line (see the module), and
    that keeps its socket (for :func:`response_socket`: http.client drops the connection's own
    reference when the answer says ``Connection: close``)."""

    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        self.docs_rag_socket = sock
        sockets = getattr(_watched, "sockets", None)
        if sockets is not None:  # made before its header block is read: see watch_sockets
            sockets.append(sock)

    def begin(self) -> None:
        if self.headers is not None:  # already read
            return
        fp = self.fp
        self.fp = watch = _LastLine(fp)
        try:
            super().begin()
        finally:
            if self.fp is watch:  # http.client sets it to None when it closes the connection (a bad status line)
                self.fp = fp
        if watch.last == b"":  # http.client's header reader stops at b"" (EOF) as at a blank line
            raise HeadersCutOff()


class _Connection(HTTPConnection):
    response_class = _WholeHeadersResponse


class _TLSConnection(HTTPSConnection):
    response_class = _WholeHeadersResponse


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Connection


class _TLSPool(HTTPSConnectionPool):
    ConnectionCls = _TLSConnection


_POOLS = {"http": _Pool, "https": _TLSPool}


class _Adapter(requests.adapters.HTTPAdapter):
    """requests' adapter, its connections (direct or through an HTTP proxy) those of this module."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **kwargs)
        if isinstance(manager, urllib3.ProxyManager):  # a SOCKS proxy keeps its own connections
            manager.pool_classes_by_scheme = _POOLS
        return manager


def location_url(value: str) -> str:
    """The URL of a ``Location`` header ``value`` as browsers read it. http.client hands header bytes
    over as Latin-1 characters, so a URL some servers send as raw UTF-8 (``/r\xc3\xa9sum\xc3\xa9.html``)
    reads ``/rÃ©sumÃ©.html``, and was followed to ``/r%C3%83%C2%A9…`` (a 404, the page taken for gone).
    Browsers read the bytes as UTF-8 text, which is then percent-encoded like a link's URL; bytes that
    are not UTF-8 (``/caf\xe9.html``, Latin-1) are percent-encoded as they are (``/caf%E9.html``)."""
    try:
        raw = value.encode("latin-1")
    except UnicodeEncodeError:  # a character past U+00FF: already text, not http.client's view of bytes
        return browser_href(value)
    try:
        return browser_href(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return browser_href(re.sub(rb"[\x80-\xff]", lambda m: b"%%%02X" % m[0][0], raw).decode("ascii"))


_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def browser_href(href: str) -> str:
    """``href`` with each backslash of its path read as ``/``, as browsers read an http(s) URL (WHATWG URL
    standard: ``guide\\install.html`` is ``guide/install.html``); its query and fragment, and other
    schemes, as they are. A backslash in the authority, or a leading pair of them (another host to a
    browser), is left alone: such a URL is refused later (``normalize_url``), never sent to another host."""
    if "\\" not in href:
        return href
    end = min((i for i in (href.find("?"), href.find("#")) if i >= 0), default=len(href))
    head, tail = href[:end], href[end:]
    m = _SCHEME_RE.match(head)
    if m:
        if m.group(1).lower() not in ("http", "https"):
            return href
        rest = head[m.end():]
        if not rest.startswith("//"):
            return href
        slash = rest.find("/", 2)
        authority = rest[:slash if slash >= 0 else len(rest)]
        if "\\" in authority:
            return href
        prefix, path = head[:m.end()] + authority, rest[len(authority):]
    else:
        if head.lstrip()[:2].replace("\\", "/") == "//":
            return href
        prefix, path = "", head
    return prefix + path.replace("\\", "/") + tail


class _Session(requests.Session):
    """requests' session, reading a redirect's ``Location`` with :func:`location_url`. requests looks
    at the next URL even when it does not follow it (``Response.next``), and its own reading of the
    header (Latin-1 bytes decoded as UTF-8) raised UnicodeDecodeError for a byte that is not UTF-8."""

    def get_redirect_target(self, resp: requests.Response) -> str | None:
        return location_url(resp.headers["location"]) if resp.is_redirect else None


def crawler_session() -> requests.Session:
    """A ``requests.Session`` whose responses must have a whole header block, and whose redirect
    targets are read as browsers read them (see the module)."""
    session = _Session()
    for prefix in ("http://", "https://"):
        session.mount(prefix, _Adapter())
    return session


def response_socket(resp: requests.Response) -> socket.socket | None:
    """The socket a response of :func:`crawler_session` is read from (None for any other response)."""
    original = getattr(resp.raw, "_original_response", None)  # urllib3's http.client response
    return getattr(original, "docs_rag_socket", None)
