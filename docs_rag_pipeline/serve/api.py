"""The HTTP API and the chat page (Flask, served by waitress).

Thin on purpose: every route validates its input and calls the query path (``query.ask``,
``retrieval.search``/``get_chunk``/``parent_chain``, the chunks table). Errors are JSON
``{"error": {"code", "message"}}``; bad input never gives a 500. No Dagster import: the admin
refresh route asks Dagster for a run over its GraphQL API.
"""

from __future__ import annotations

import collections
import contextvars
import hashlib
import hmac
import logging
import os
import queue
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from flask import Flask, g, jsonify, request, send_from_directory
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map

from ..config import ApiConfig, ConfigError, NothingIndexed, SourceNotIndexed, StorageMissing, require_storage_folder
from ..context import Context, get_context
from ..masking import without_url_userinfo
from ..retrieval import Hits, QueryError
from ..schemas import (AGENTS, A2ARequest, AskRequest, InputError, Scope, SearchRequest, parse_a2a, parse_request,
                       resolve_top_k)

log = logging.getLogger(__name__)
#: a Host header: a DNS name, an IPv4 address or a bracketed IPv6 one, and an optional port
_HOST = re.compile(r"(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?"
                   r"|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")

PAGE_DIR = Path(__file__).resolve().with_name("page")
MAX_BODY_BYTES = 64 * 1024  # a JSON request body; larger → 413
MAX_ID_CHARS = 256
MAX_URL_CHARS = 4096
STREAM_KEEPALIVE_SECONDS = 15  # a streamed /ask silent this long sends an SSE comment (proxies' idle timeouts: 60 s)
HIT_KEYS = ("chunk_id", "url", "title", "headings", "text", "score", "source", "parent_id")
CHUNK_KEYS = ("chunk_id", "source", "url", "page_url", "title", "headings", "parent_id", "chunk_index", "text",
              "token_count", "updated_at", "metadata")
PUBLIC_ENDPOINTS = {"health", "chat_page", "static", "openapi", "agent_card_route"}  # no token, no rate limit
#: what CORS never applies to: no route at all, and the chat page's own files (same-origin)
NOT_CORS = (None, "chat_page", "static")
REFRESH_JOB = "refresh_source"
#: CORS (api.cors_origins): what a page on a listed origin may send, and which response headers it may read
CORS_ALLOW_HEADERS = "Authorization, Content-Type"
CORS_EXPOSE_HEADERS = "Retry-After, WWW-Authenticate, X-Worker-Pid"
PAGE_HEADERS = {
    "Content-Security-Policy": ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
                                "form-action 'self'"),
    "Cache-Control": "no-cache",
}


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers or {}


# ---- the query path, shaped for the wire (shared with the MCP server) -------------------------

def search_view(hits: Hits) -> dict[str, Any]:
    """A search result as ``/search`` and the MCP ``search`` tool answer it: ``hits``, and ``warning``
    only when the reranker failed (the hits are then in fused order)."""
    out: dict[str, Any] = {"hits": [{k: getattr(h, k) for k in HIT_KEYS} for h in hits]}
    if hits.warning:
        out["warning"] = hits.warning
    return out


def chunk_view(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row.get(k) for k in CHUNK_KEYS}


def chunk_with_parents(ctx: Context, chunk_id: str) -> dict[str, Any] | None:
    """The chunk, with ``parent_chain``: its ancestors, nearest first (``parent_id`` links)."""
    from ..retrieval import parent_chain

    chain = parent_chain(ctx, chunk_id)
    if not chain:
        return None
    out = chunk_view(chain[0])
    out["parent_chain"] = [chunk_view(r) for r in chain[1:]]
    return out


def page_chunks(ctx: Context, url: str, *, source: str | None = None) -> dict[str, Any] | None:
    """A page's chunks in reading order (see :func:`retrieval.page_rows`), shaped for the wire."""
    from ..retrieval import page_rows

    rows = page_rows(ctx, url, source=source)
    if not rows:
        return None
    return {"url": url.split("#", 1)[0], "source": rows[0]["source"], "title": rows[0]["title"],
            "chunks": [chunk_view(r) for r in rows]}


def unknown_source(ctx: Context, source: str | None) -> str | None:
    """The message for a ``source`` that picks a page's source (``/pages``, ``/view``, MCP ``get_page``)
    and is not a configured source, else None."""
    names = [s.name for s in ctx.config.sources]
    if source is None or source in names:
        return None
    return f"'source': no source named {source!r}; configured sources: {', '.join(names) or 'none'}"


def is_backend_failure(exc: BaseException) -> bool:
    """A fault of what the query path depends on (LanceDB, the embedding server, the config file),
    as opposed to a bug: answered with 503 ``backend_unavailable``."""
    from ..embedding import EmbeddingError

    if isinstance(exc, (EmbeddingError, ConfigError, OSError, ConnectionError, TimeoutError)):
        return True
    root = type(exc).__module__.split(".")[0]
    if root in {"lancedb", "lance", "pyarrow", "openai", "httpx", "requests", "urllib3"}:
        return True
    return isinstance(exc, RuntimeError) and "lance" in str(exc).lower()


def backend_message(exc: BaseException) -> str:
    """What a client is told about a backend failure: which part failed, never a path or a traceback
    (those go to the server log, with the trace id)."""
    from ..embedding import EmbeddingError

    if isinstance(exc, EmbeddingError):
        return ("the search backend is unavailable: the embedding server did not answer, or sent vectors that "
                "cannot be used; retry later, or see the server log")
    if isinstance(exc, ConfigError):
        return "the search backend is unavailable: the server's configuration cannot be loaded; see the server log"
    if isinstance(exc, SourceNotIndexed):  # the sources the call was limited to were never ingested
        return f"the search backend is unavailable for {exc.names}: nothing is indexed for it yet; {exc.fix} makes it"
    if isinstance(exc, NothingIndexed):
        return ("the search backend is unavailable: nothing is indexed yet (or only with another embedding model); "
                "`docs-rag ingest` makes the index")
    if isinstance(exc, StorageMissing):
        from ..files import in_the_way

        if exc.filename and in_the_way(Path(exc.filename)):
            return ("the search backend is unavailable: its storage path is no folder (a file, or a link to a folder "
                    "that does not exist, is in its place); see the server log")
        return ("the search backend is unavailable: its storage folder does not exist (nothing was ingested yet, "
                "or it was moved); `docs-rag ingest` creates it")
    return "the search backend is unavailable: the index cannot be read; see the server log"


def openapi_document(api: ApiConfig, sources: list[str]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of this API, its request bodies derived from the pydantic models
    (with this server's limits: ``api.max_top_k``, ``api.max_question_chars``, the source names)."""
    from pydantic.json_schema import models_json_schema

    from ..schemas import FeedbackRequest

    _, defs = models_json_schema([(SearchRequest, "validation"), (AskRequest, "validation"),
                                  (A2ARequest, "validation"), (FeedbackRequest, "validation")],
                                 ref_template="#/components/schemas/{model}")
    schemas = defs["$defs"]
    schemas["A2ARequest"]["properties"]["agent"]["enum"] = list(AGENTS)
    a2a_params = schemas["A2AParams"]["properties"]
    a2a_params["top_k"]["anyOf"][0]["maximum"] = api.max_top_k
    if sources:
        a2a_params["source"]["anyOf"][0]["enum"] = sources
    schemas["A2ATask"]["properties"]["question"].update(minLength=1, maxLength=api.max_question_chars, pattern=r"\S")
    for name, text_field in (("SearchRequest", "query"), ("AskRequest", "question")):
        props = schemas[name]["properties"]
        props["top_k"]["anyOf"][0]["maximum"] = api.max_top_k
        props[text_field].update(minLength=1, maxLength=api.max_question_chars, pattern=r"\S")
        if sources:
            props["source"]["anyOf"][0]["enum"] = sources
    for name in ("SearchRequest", "AskRequest", "A2AParams"):  # a filter key outside the pattern is refused
        for branch in schemas[name]["properties"]["filters"].get("anyOf", []):
            if "patternProperties" in branch:
                branch["additionalProperties"] = False
    schemas["Error"] = {"type": "object", "required": ["error"], "properties": {"error": {
        "type": "object", "required": ["code", "message"],
        "properties": {"code": {"type": "string"}, "message": {"type": "string"},
                       "trace_id": {"type": ["string", "null"]}}}}}
    error = {"description": "an error: a code, what to fix, the trace id",
             "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    ok = {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}
    errors = {"400": error, "401": error, "404": error, "413": error, "415": error, "429": error, "503": error}

    def body(name: str) -> dict[str, Any]:
        return {"required": True, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}

    def param(name: str, where: str, required: bool, description: str) -> dict[str, Any]:
        return {"name": name, "in": where, "required": required, "description": description,
                "schema": {"type": "string", "minLength": 1,
                           "maxLength": MAX_URL_CHARS if name == "url" else MAX_ID_CHARS}}

    paths = {
        "/search": {"post": {"summary": "hybrid search", "operationId": "search", "requestBody": body("SearchRequest"),
                             "responses": {"200": ok, **errors}}},
        "/ask": {"post": {"summary": "a cited answer", "operationId": "ask", "requestBody": body("AskRequest"),
                          "responses": {"200": {**ok, "content": {
                              **ok["content"],
                              "text/event-stream": {"schema": {"type": "string", "description": (
                                  "with \"stream\": true: events sources, delta…, final (or error)")}}}},
                              **errors}}},
        "/feedback": {"post": {"summary": "thumbs up/down on an answer, by its trace_id", "operationId": "feedback",
                               "requestBody": body("FeedbackRequest"), "responses": {"200": ok, **errors}}},
        "/view": {"get": {"summary": "an indexed page as HTML (what a local source link opens)",
                          "operationId": "view_page",
                          "parameters": [param("url", "query", True, "the page URL (an anchor is ignored)"),
                                         param("source", "query", False, "the source whose page (two may index "
                                                                         "the URL; default: the first)")],
                          "responses": {"200": {"description": "HTML"}, **errors}}},
        "/chunks/{chunk_id}": {"get": {"summary": "one chunk with its parent chain", "operationId": "get_chunk",
                                       "parameters": [param("chunk_id", "path", True, "a chunk id")],
                                       "responses": {"200": ok, **errors}}},
        "/pages": {"get": {"summary": "a page's chunks in reading order", "operationId": "get_page",
                           "parameters": [param("url", "query", True, "the page URL (an anchor is ignored)"),
                                          param("source", "query", False, "only this source")],
                           "responses": {"200": ok, **errors}}},
        "/a2a/invoke": {"post": {"summary": "A2A: invoke the docs agent (a cited answer)", "operationId": "a2a_invoke",
                                 "requestBody": body("A2ARequest"), "responses": {"200": ok, **errors}}},
        "/.well-known/agent.json": {"get": {"summary": "the A2A agent card (no token needed)",
                                            "operationId": "agent_card", "security": [],
                                            "responses": {"200": ok}}},
        "/health": {"get": {"summary": "index status (no token needed)", "operationId": "health",
                            "security": [], "responses": {"200": ok, "503": error}}},
        "/sources/{name}/refresh": {"post": {
            "summary": "launch a refresh run in Dagster (admin token)", "operationId": "refresh_source",
            "parameters": [param("name", "path", True, "a configured source name")],
            "responses": {"202": ok, "403": error, "502": error, **errors}}},
    }
    return {"openapi": "3.1.0",
            "info": {"title": "docs-rag", "version": "1", "description": "Cited answers from indexed documentation."},
            "paths": paths, "components": {"schemas": schemas, "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"}}},
            "security": [{"bearer": []}] if api.token_env else []}


def agent_card(api: ApiConfig, base_url: str, sources: list[str]) -> dict[str, Any]:
    """The agent card served at ``/.well-known/agent.json``, in the shape of an A2A card: who the agent
    is, where to call it, its skill and how to authenticate. It claims no A2A ``protocolVersion``: its
    ``url`` takes this project's own JSON body (``{"agent", "task", "params"}``), not A2A's JSON-RPC."""
    from .. import __version__

    auth = ({"schemes": ["bearer"], "credentials": "Authorization: Bearer <token>"} if api.token_env
            else {"schemes": []})
    return {
        "name": "docs-rag",
        "description": "Answers questions about the indexed documentation with cited sources; refuses when "
                       "the docs do not cover the question. Call it with POST to its url and this server's own "
                       'JSON body, {"agent": "docs", "task": {"question": "..."}, "params": {...}} (see the '
                       "skill's example), not A2A JSON-RPC.",
        "url": f"{base_url}/a2a/invoke",
        "version": __version__,
        "provider": {"organization": "docs-rag-pipeline"},
        "capabilities": {"streaming": False, "pushNotifications": False, "stateTransitionHistory": False},
        "authentication": auth,
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}} if api.token_env else {},
        "security": [{"bearer": []}] if api.token_env else [],
        "defaultInputModes": ["application/json"],
        "defaultOutputModes": ["application/json"],
        "skills": [{
            "id": "docs.ask",
            "name": "Ask the docs",
            "description": "A short answer to a question about the documentation, every sentence cited "
                           "({title, url}); refused when the docs don't answer it.",
            "agent": AGENTS[0],
            "tags": ["documentation", "question-answering", "citations", "rag"],
            "examples": ['{"agent": "docs", "task": {"question": "How do I install it?"}, "params": {"top_k": 5}}'],
            "inputModes": ["application/json"],
            "outputModes": ["application/json"],
            "input": {"task": {"question": "string"}, "params": {"top_k": f"integer 1..{api.max_top_k}",
                                                                 "source": sources, "filters": "object"}},
            "output": {"answer": "string", "citations": [{"title": "string", "url": "string"}],
                       "refused": "boolean", "latency_ms": "number", "trace_id": "string"},
        }],
    }

def render_page(page: dict[str, Any]) -> str:
    """An indexed page as a small HTML document: its chunks in reading order, each under its heading
    path with an ``id`` of its URL anchor (so ``/view?url=…#anchor`` lands on the section). Every
    piece of text is escaped; no script, no link but the stylesheet."""
    from html import escape

    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(page['title'] or '')}</title>"
             '<link rel=stylesheet href="static/style.css"></head><body class=view><main>'
             f"<h1>{escape(page['title'] or page['url'])}</h1><p class=source>{escape(page['url'])}</p>"]
    seen: set[str] = set()
    for ch in page["chunks"]:
        anchor = (ch.get("url") or "").partition("#")[2]
        attr = f' id="{escape(anchor)}"' if anchor and anchor not in seen else ""
        seen.add(anchor)
        heads = " › ".join(ch.get("headings") or [])
        parts.append(f"<section{attr}>" + (f"<h2>{escape(heads)}</h2>" if heads else "")
                     + "".join(f"<p>{escape(p)}</p>" for p in (ch.get("text") or "").split("\n\n") if p.strip())
                     + "</section>")
    parts.append("</main></body></html>")
    return "".join(parts)


# ---- rate limit ---------------------------------------------------------------------------------

class RateLimiter:
    """A sliding window per client: at most ``limit`` requests in any ``window`` seconds.
    In-process and thread-safe (one lock; each client keeps the times of its recent requests)."""

    def __init__(self, window: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.window = window
        self.clock = clock
        self._hits: dict[str, collections.deque[float]] = {}
        self._lock = threading.Lock()
        self._calls = 0

    def check(self, key: str, limit: int) -> float | None:
        """Record a request; None when allowed, else the seconds until the next one is."""
        if limit <= 0:
            return None
        now = self.clock()
        with self._lock:
            self._calls += 1
            if self._calls % 1024 == 0:  # forget clients that went quiet
                for k in [k for k, q in self._hits.items() if not q or q[-1] <= now - self.window]:
                    del self._hits[k]
            q = self._hits.setdefault(key, collections.deque())
            while q and q[0] <= now - self.window:
                q.popleft()
            if len(q) >= limit:
                return max(0.0, q[0] + self.window - now)
            q.append(now)
            return None


# ---- request helpers ----------------------------------------------------------------------------

def _body_bytes() -> bytes:
    """The request body; 413 when it is over :data:`MAX_BODY_BYTES`, with or without Content-Length.
    A chunked body is read only to one byte past the limit (werkzeug's stream stops at the limit
    without a word, so a cut body was read as the whole: a 400, or an answer to its first 64 KiB)."""
    cached = g.get("body_bytes")
    if cached is None:
        data = bytearray()
        while len(data) <= MAX_BODY_BYTES:
            part = request.stream.read(MAX_BODY_BYTES + 1 - len(data))
            if not part:
                break
            data += part
        if len(data) > MAX_BODY_BYTES:
            raise ApiError(413, "too_large", f"the request body is larger than {MAX_BODY_BYTES} bytes")
        cached = g.body_bytes = bytes(data)
    return cached


def _json() -> Any:
    """The request's JSON body (None when it does not parse); 415 for another media type."""
    if not request.is_json:
        raise ApiError(415, "unsupported_media_type", "send a JSON body with Content-Type: application/json")
    coding = request.headers.get("Content-Encoding", "").strip().lower()
    if coding not in ("", "identity"):  # a gzipped body was read as is and blamed as "not a JSON object"
        raise ApiError(415, "unsupported_media_type", f"the body is sent with Content-Encoding: {coding[:60]}, which "
                                                      "this server does not read; send it uncompressed, without a "
                                                      "Content-Encoding header", {"Accept-Encoding": "identity"})
    charset = (request.mimetype_params.get("charset") or "utf-8").lower().replace("-", "").replace("_", "")
    if charset not in ("utf8", "utf16", "utf16le", "utf16be", "utf32", "utf32le", "utf32be"):
        raise ApiError(415, "unsupported_media_type", f"send the JSON body as UTF-8 (Content-Type: application/json; "
                                                      f"charset=utf-8), not {request.mimetype_params['charset']}")
    import json

    def constant(name: str) -> Any:
        raise ApiError(400, "invalid_json", f"{name} is not a JSON number; send a finite number")

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        # {"query": "a", "query": "b"}: which was meant is unknown (json.loads kept the last, silently),
        # as with a query parameter given twice
        out = dict(pairs)
        if len(out) < len(pairs):
            name = next(k for k, n in collections.Counter(k for k, _ in pairs).items() if n > 1)
            raise ApiError(400, "duplicate_field", f"the body gives the field '{name[:200]}' "
                                                   f"{sum(k == name for k, _ in pairs)} times; give it once")
        return out

    try:
        return json.loads(_body_bytes(), parse_constant=constant, object_pairs_hook=unique)
    except RecursionError:
        raise ApiError(400, "invalid_json", "the body is nested too deeply") from None
    except ValueError as exc:
        if "digits" in str(exc):  # Python reads integers of at most 4300 digits
            raise ApiError(400, "invalid_json", "a number in the body is too long to read (more than 4300 digits)") from None
        return None  # not JSON (or not UTF-8): the caller says the body must be a JSON object


def _body(model: type[Scope], ctx: Context) -> Scope:
    """The JSON body, validated by ``model`` (and against the config and index)."""
    return parse_request(model, _json(), ctx)


def _header_bytes(value: str) -> bytes:
    """A header's bytes as the client sent them: WSGI hands headers over decoded as Latin-1 (PEP 3333)."""
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:  # a server that decoded otherwise: its text, as UTF-8
        return value.encode("utf-8", "surrogatepass")


def client_address(req: Any, trusted_proxies: int) -> str:
    """The address the rate limit counts a request under: behind ``trusted_proxies`` reverse proxies,
    each of which appends the address it was reached from to ``X-Forwarded-For``, the Nth address from
    the right of that header (the addresses to its left are the client's to write); the connection's
    own address when there is no proxy or the header holds fewer addresses (a request that came round
    the proxies), as werkzeug's ``ProxyFix`` does."""
    if trusted_proxies:
        seen = [a.strip() for h in req.headers.getlist("X-Forwarded-For") for a in h.split(",")]
        if len(seen) >= trusted_proxies and seen[-trusted_proxies]:
            return seen[-trusted_proxies]
    return str(req.remote_addr)


def _bearer() -> bytes | None:
    """The bearer token's bytes. Compared as bytes, and stripped as bytes: read as Latin-1 text, the
    trailing byte of a UTF-8 letter (``à`` is ``c3 a0``) would be a no-break space that ``str.strip`` drops."""
    scheme, _, token = _header_bytes(request.headers.get("Authorization", "")).partition(b" ")
    token = token.strip()
    return token if scheme.lower() == b"bearer" and token else None


def _secret(name: str | None) -> bytes | None:
    """The value of the environment variable ``name`` as bytes, as the operator set it: a UTF-8 token is
    matched by the UTF-8 a client (curl) sends, and bytes that are not UTF-8 (a Latin-1 secrets file) by
    those bytes; Python holds those as lone surrogates, which ``fsencode`` turns back into the bytes."""
    value = os.environ.get(name) if name else None
    return os.fsencode(value) if value else None


def _matches(token: bytes | None, secret: bytes | None) -> bool:
    return bool(token and secret) and hmac.compare_digest(token, secret)  # type: ignore[arg-type]


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None):  # noqa: ANN202
    resp = jsonify({"error": {"code": code, "message": message, "trace_id": g.get("trace_id")}})
    resp.status_code = status
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    return resp


# ---- Dagster over GraphQL -----------------------------------------------------------------------

FIND_JOB_QUERY = """
query DocsRagFindRefreshJob {
  repositoriesOrError {
    __typename
    ... on RepositoryConnection { nodes { name location { name } jobs { name } } }
    ... on PythonError { message }
  }
}
"""

LAUNCH_RUN_MUTATION = """
mutation DocsRagLaunchRefresh($executionParams: ExecutionParams!) {
  launchRun(executionParams: $executionParams) {
    __typename
    ... on LaunchRunSuccess { run { runId status } }
    ... on PythonError { message }
    ... on Error { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}
"""


class DagsterError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _graphql(url: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    import requests

    shown = without_url_userinfo(url)  # a user and password in the URL (sent as basic auth) are not shown
    try:
        resp = requests.post(url, json={"query": query, "variables": variables or {}}, timeout=(5, 30))
    except requests.RequestException as exc:
        raise DagsterError(503, "dagster_unavailable",
                           f"Dagster's GraphQL API at {shown} is unreachable ({type(exc).__name__}); start Dagster "
                           "(`docs-rag ui`) or set api.dagster_graphql_url") from exc
    try:
        payload = resp.json()
    except ValueError:
        payload = None
    if resp.status_code != 200 or not isinstance(payload, dict):
        raise DagsterError(502, "dagster_error", f"Dagster's GraphQL API at {shown} answered HTTP {resp.status_code} "
                                                 "without a GraphQL result")
    if payload.get("errors"):
        msgs = "; ".join(str(e.get("message", e)) if isinstance(e, dict) else str(e) for e in payload["errors"])
        raise DagsterError(502, "dagster_error", f"Dagster rejected the request: {msgs}")
    return payload.get("data") or {}


def launch_refresh(url: str, source: str) -> dict[str, Any]:
    """Launch job ``refresh_source`` for one partition (``dagster/partition`` = the source)."""
    repos = _graphql(url, FIND_JOB_QUERY).get("repositoriesOrError") or {}
    if repos.get("__typename") != "RepositoryConnection":
        raise DagsterError(502, "dagster_error", f"Dagster could not list its code locations: {repos.get('message')}")
    found = [(n["location"]["name"], n["name"]) for n in repos.get("nodes") or []
             if any(j.get("name") == REFRESH_JOB for j in n.get("jobs") or [])]
    if not found:
        raise DagsterError(502, "dagster_error", f"no code location at {without_url_userinfo(url)} has the job "
                                                 f"{REFRESH_JOB!r}; "
                                                 "is Dagster running this project's workspace.yaml?")
    location, repository = found[0]
    params = {"selector": {"repositoryLocationName": location, "repositoryName": repository, "jobName": REFRESH_JOB},
              "runConfigData": {},
              "executionMetadata": {"tags": [{"key": "dagster/partition", "value": source},
                                             {"key": "source", "value": source},
                                             {"key": "docs_rag/requested_by", "value": "http-api"}]}}
    res = _graphql(url, LAUNCH_RUN_MUTATION, {"executionParams": params}).get("launchRun") or {}
    if res.get("__typename") != "LaunchRunSuccess":
        detail = res.get("message") or "; ".join(e.get("message", "") for e in res.get("errors") or []) or "no detail"
        raise DagsterError(502, "dagster_error", f"Dagster did not launch the run ({res.get('__typename')}): {detail}")
    run = res.get("run") or {}
    return {"source": source, "job": REFRESH_JOB, "run_id": run.get("runId"), "status": run.get("status"),
            "location": location, "repository": repository}


# ---- the app ------------------------------------------------------------------------------------

class _Routes(Map):
    """werkzeug's URL map without ``merge_slashes``: a path with a repeated slash (``/static//style.css``,
    ``/chunks//<id>``) was a ``308`` typed ``text/html`` whose absolute ``Location`` was built from the
    request's ``Host`` header, a permanent redirect to whatever host a client or an intermediary put
    there. Such a path is no route now: the JSON ``404``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("merge_slashes", False)
        super().__init__(*args, **kwargs)


class _ApiFlask(Flask):
    """Flask, its answer to a plain ``OPTIONS`` request (not a browser's CORS preflight, which the guard
    answers) a ``204`` with the ``Allow`` header and no body: Flask's own was a ``200`` typed ``text/html``,
    from an API whose every other answer is JSON. Its URL map is :class:`_Routes`."""

    url_map_class = _Routes

    def make_default_options_response(self):  # noqa: ANN201 - a Response
        resp = super().make_default_options_response()
        resp.status_code = 204
        resp.headers.pop("Content-Type", None)
        return resp


def create_app(*, config_path: str | None = None) -> Flask:
    app = _ApiFlask(__name__, static_folder=str(PAGE_DIR), static_url_path="/static")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES + 1  # the stream stops one byte past: see _body_bytes
    app.json.sort_keys = True  # type: ignore[attr-defined]
    limiter = RateLimiter()

    storage_seen: set[Path] = set()  # storage folders seen by a request: one gone since was moved away

    def ctx() -> Context:
        """The context of this request: the config is read once per request, at its first use, so that an
        edit saved while a request runs is seen whole by the next one, never half by this one (the guard
        read the rate limit and tokens of one file, the route then the sources of the next)."""
        c = g.get("ctx")
        if c is not None:
            return c
        c = g.ctx = get_context(config_path)
        if c.config.storage_is_local and Path(c.config.storage_path).is_dir():
            storage_seen.add(c.config.storage_path)
        return c

    def _cors_origin() -> str | None:
        """What ``Access-Control-Allow-Origin`` says to this request: its ``Origin`` when ``api.cors_origins``
        lists it (``*`` when that lists ``*``), else None (no CORS header: the browser keeps the answer from
        the page). Only a request that names an origin reads the config here; the chat page is same-origin."""
        origin = request.headers.get("Origin")
        if not origin or request.endpoint in NOT_CORS:
            return None
        allowed = ctx().config.api.cors_origins
        if "*" in allowed:
            return "*"
        return origin if origin.rstrip("/").lower() in allowed else None

    @app.before_request
    def _guard():  # noqa: ANN202
        g.trace_id = uuid.uuid4().hex
        g.cors_origin = _cors_origin()
        if (request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers
                and request.endpoint not in NOT_CORS):
            # a browser's CORS preflight: it never carries the token, and it is no request of the client's
            # own, so it is answered without either check and not counted by the rate limit
            resp = app.response_class(status=204)
            if g.cors_origin:
                methods = sorted(set(request.url_rule.methods or ()) - {"HEAD", "OPTIONS"})
                resp.headers["Access-Control-Allow-Methods"] = ", ".join(methods)
                resp.headers["Access-Control-Allow-Headers"] = CORS_ALLOW_HEADERS
                resp.headers["Access-Control-Max-Age"] = "600"
            return resp
        # a public route, or no route at all (a 404: the browser's own /favicon.ico): no token, no rate limit
        if request.endpoint in PUBLIC_ENDPOINTS or request.endpoint is None:
            return None
        api = ctx().config.api
        g.api = api
        token = _bearer()
        user_secret = _secret(api.token_env)
        admin_secret = _secret(api.admin_token_env)
        g.is_admin = _matches(token, admin_secret)
        is_user = g.is_admin or _matches(token, user_secret)
        client = (f"token:{hashlib.sha256(token).hexdigest()[:16]}" if is_user and token
                  else f"addr:{client_address(request, api.trusted_proxies)}")
        wait = limiter.check(client, api.rate_limit_per_minute)
        if wait is not None:
            raise ApiError(429, "rate_limited", f"more than {api.rate_limit_per_minute} requests per minute; "
                                                f"retry in {wait:.0f} s", {"Retry-After": str(max(1, round(wait)))})
        if request.endpoint == "refresh_source":
            if not api.admin_token_env:
                raise ApiError(403, "forbidden", "the refresh route is disabled: set api.admin_token_env to the "
                                                 "name of an environment variable holding an admin token")
            if not g.is_admin:
                raise ApiError(403, "forbidden", "this route needs the admin token: Authorization: Bearer <admin token>")
            return None
        if api.token_env:
            if not user_secret:
                raise ApiError(503, "auth_unavailable", f"api.token_env names {api.token_env}, which is not set in the "
                                                        "server's environment; no request is served without it")
            if not is_user:
                raise ApiError(401, "unauthorized", "send Authorization: Bearer <token>",
                               {"WWW-Authenticate": 'Bearer realm="docs-rag"'})
        return None

    @app.after_request
    def _headers(resp):  # noqa: ANN001, ANN202
        resp.headers.setdefault("X-Content-Type-Options", "nosniff")
        resp.headers.setdefault("Referrer-Policy", "no-referrer")
        if request.endpoint in ("chat_page", "static"):
            for k, v in PAGE_HEADERS.items():
                resp.headers.setdefault(k, v)
        if g.get("cors_origin"):  # errors too: the page reads what is wrong (a 401, a 429's Retry-After)
            resp.headers["Access-Control-Allow-Origin"] = g.cors_origin
            resp.headers["Access-Control-Expose-Headers"] = CORS_EXPOSE_HEADERS
        if request.headers.get("Origin") and request.endpoint not in NOT_CORS:
            resp.vary.add("Origin")  # a cache must not hand one origin's answer to another
        return resp

    @app.errorhandler(ApiError)
    def _api_error(e: ApiError):  # noqa: ANN202
        return _error(e.status, e.code, e.message, e.headers)

    @app.errorhandler(InputError)
    def _input_error(e: InputError):  # noqa: ANN202
        if e.status == 503 and e.__cause__ is not None:  # threads_unavailable: the details, logged only
            log.warning("the conversation store is unavailable on %s %s: %s", request.method, request.path,
                        e.__cause__)
        return _error(e.status, e.code, e.message)

    @app.errorhandler(QueryError)
    def _query_error(e: QueryError):  # noqa: ANN202
        return _error(400, "invalid_query", str(e))

    @app.errorhandler(DagsterError)
    def _dagster_error(e: DagsterError):  # noqa: ANN202
        return _error(e.status, e.code, e.message)

    @app.errorhandler(404)
    def _not_found(e):  # noqa: ANN001, ANN202
        return _error(404, "not_found", "no such route")

    @app.errorhandler(405)
    def _method(e):  # noqa: ANN001, ANN202
        allowed = sorted(set(getattr(e, "valid_methods", None) or ()) - {"HEAD", "OPTIONS"})
        if not allowed:
            return _error(405, "method_not_allowed", str(e.description))
        return _error(405, "method_not_allowed", f"{request.path} does not take {request.method}; use {' or '.join(allowed)}",
                      {"Allow": ", ".join(sorted(set(e.valid_methods)))})

    @app.errorhandler(413)
    def _too_large(e):  # noqa: ANN001, ANN202
        return _error(413, "too_large", f"the request body is larger than {MAX_BODY_BYTES} bytes")

    @app.errorhandler(Exception)
    def _any(e: Exception):  # noqa: ANN202
        if isinstance(e, HTTPException):
            return _error(e.code or 500, (e.name or "error").lower().replace(" ", "_"), str(e.description))
        if is_backend_failure(e):
            # a config error names its file, key or line and the fix, a storage folder that is not there or
            # holds no index names it and the fix: their tracebacks say nothing more
            log.warning("backend unavailable on %s %s (trace %s): %s", request.method, request.path,
                        g.get("trace_id"), e,
                        exc_info=None if isinstance(e, (ConfigError, StorageMissing)) else e)
            return _error(503, "backend_unavailable", backend_message(e))
        log.exception("unhandled error on %s %s (trace %s)", request.method, request.path, g.get("trace_id"))
        return _error(500, "internal_error", "an unexpected server error; the server log has the details")

    # ---- routes ---------------------------------------------------------------------------
    @app.get("/")
    def chat_page():  # noqa: ANN202
        return send_from_directory(PAGE_DIR, "index.html")

    @app.post("/search")
    def search_route():  # noqa: ANN202
        from ..retrieval import search

        c = ctx()
        d = _body(SearchRequest, c)
        return jsonify(search_view(search(c, d.query, top_k=resolve_top_k(c, d), source=d.source,
                                          filters=d.filters)))

    @app.post("/ask")
    def ask_route():  # noqa: ANN202
        from ..query import ask_in

        c = ctx()
        d = _body(AskRequest, c)
        if d.stream:
            return _stream_answer(c, d)
        ans = ask_in(c, d.question, thread_id=d.thread_id, top_k=resolve_top_k(c, d), source=d.source,
                     filters=d.filters)
        return jsonify(ans.to_dict())

    def _stream_answer(c: Context, d: AskRequest):  # noqa: ANN202
        """``/ask`` with ``"stream": true``: server-sent events (see docs/interfaces/http.md). Bad input
        and an unknown thread are answered before the stream starts, as JSON errors."""
        import json

        from flask import Response, stream_with_context

        from ..query import ask_stream_in

        events = ask_stream_in(c, d.question, thread_id=d.thread_id, top_k=resolve_top_k(c, d), source=d.source,
                               filters=d.filters)
        # the first event is after the search: an index that cannot be read is a 503 like a plain /ask,
        # before the status line, not a 200 whose only event is an error
        first = next(events, None)
        trace = g.get("trace_id")

        # the rest of the events come from a thread of their own, so that a silence (a reasoning model's
        # <think> block, which is held back) is filled with an SSE comment every STREAM_KEEPALIVE_SECONDS:
        # a proxy or load balancer closes a response silent for longer than its idle timeout (60 s)
        pending: queue.Queue = queue.Queue()
        done, left = object(), threading.Event()

        def produce() -> None:
            try:
                for item in events:
                    pending.put(item)
                    if left.is_set():  # the client went away: stop reading the LLM at its next piece
                        break
            except Exception as exc:  # noqa: BLE001 - handed to the response, which says so as an event
                pending.put(exc)
            finally:  # closes the answer's LLM stream now, not at garbage collection
                events.close()
                pending.put(done)

        producer = threading.Thread(target=contextvars.copy_context().run, args=(produce,), daemon=True,
                                    name=f"ask-stream-{trace}")

        def sse():  # noqa: ANN202
            try:
                if first is not None:
                    yield f"event: {first[0]}\ndata: {json.dumps(first[1], sort_keys=True)}\n\n"
                producer.start()
                while True:
                    try:
                        item = pending.get(timeout=STREAM_KEEPALIVE_SECONDS)
                    except queue.Empty:
                        yield ": keep-alive\n\n"  # a comment line: clients ignore it, proxies see traffic
                        continue
                    if item is done:
                        break
                    if isinstance(item, Exception):
                        raise item
                    yield f"event: {item[0]}\ndata: {json.dumps(item[1], sort_keys=True)}\n\n"
            except Exception as exc:  # noqa: BLE001 - the status line is sent: the failure is an event
                code, msg = (("backend_unavailable", backend_message(exc)) if is_backend_failure(exc)
                             else ("internal_error", "an unexpected server error; the server log has the details"))
                log.warning("stream failed (trace %s): %s", trace, exc, exc_info=exc)
                yield f"event: error\ndata: {json.dumps({'code': code, 'message': msg, 'trace_id': trace})}\n\n"
            finally:  # the client went away (the server closes this generator): so does the LLM stream
                left.set()
                if producer.ident is None:  # never started: close it here
                    events.close()

        return Response(stream_with_context(sse()), mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.post("/a2a/invoke")
    def a2a_invoke():  # noqa: ANN202
        from ..query import ask_in

        t0 = time.perf_counter()
        c = ctx()
        body = _json()
        if isinstance(body, dict) and "jsonrpc" in body:  # an A2A client that took the card for A2A's
            raise ApiError(400, "unsupported_protocol", "this endpoint takes this server's own JSON body, not "
                           'JSON-RPC: POST {"agent": "docs", "task": {"question": "..."}, "params": {...}} (the '
                           "agent card's skill example is one)")
        d = parse_a2a(body, c)
        # no conversation is stored: an A2A caller gets no thread_id to continue it with
        ans = ask_in(c, d.question, top_k=resolve_top_k(c, d), source=d.source, filters=d.filters, remember=False)
        out: dict[str, Any] = {"answer": ans.answer, "refused": ans.refused, "trace_id": ans.trace_id,
                               "citations": [{"title": x.title, "url": x.url} for x in ans.citations],
                               "latency_ms": round((time.perf_counter() - t0) * 1000, 2)}
        if ans.warning:
            out["warning"] = ans.warning
        if ans.usage is not None:
            out["usage"] = ans.usage
        return jsonify(out)

    @app.get("/.well-known/agent.json")
    def agent_card_route():  # noqa: ANN202
        c = ctx()
        # the card is public: a user name and password written into public_url are never in it
        base = without_url_userinfo(c.config.api.public_url) if c.config.api.public_url else None
        if not base:
            # the card tells clients where to call: from a Host that is missing or not a host[:port]
            # it would advertise a broken URL ("http:/a2a/invoke", "http://waitress.invalid/…")
            host = request.headers.get("Host", "")
            if not _HOST.fullmatch(host) or not request.host:  # werkzeug gives "" for a host it refuses
                raise InputError("invalid_host", "Host", "the request has no valid Host header (host or host:port), "
                                 "so the agent card cannot say where to call the agent; send one, or set "
                                 "api.public_url in the config")
            base = request.host_url.rstrip("/")
        return jsonify(agent_card(c.config.api, base, [s.name for s in c.config.sources]))

    @app.post("/feedback")
    def feedback_route():  # noqa: ANN202
        from ..feedback import FeedbackError, record_feedback
        from ..schemas import parse_feedback

        d = parse_feedback(_json())
        try:
            return jsonify(record_feedback(ctx().config, d.trace_id, d.rating, d.comment))
        except FeedbackError as exc:
            raise ApiError(exc.status, exc.code, exc.message) from None

    def _arg(name: str) -> str:
        """The query parameter ``name`` given once, or "" when absent; given twice it is a 400 (which of
        ``?url=a&url=b`` was meant is unknown: the first was used, silently)."""
        values = request.args.getlist(name)
        if len(values) > 1:
            raise ApiError(400, "duplicate_field", f"'{name}' is given {len(values)} times; give it once")
        return values[0] if values else ""

    def _requested_page(route: str) -> dict[str, Any]:
        """The page ``url`` (and ``source``: two sources may index the URL) of a ``/view`` or ``/pages``
        request; a 400 for a missing URL or an unknown source, a 413 for a long URL, a 404 for none."""
        url = _arg("url").strip()
        if not url:
            raise ApiError(400, "missing_url", f"give the page's URL: GET {route}?url=<page url>")
        if len(url) > MAX_URL_CHARS:
            raise ApiError(413, "too_long", f"'url' is longer than {MAX_URL_CHARS} characters")
        source = _arg("source") or None
        c = ctx()
        bad = unknown_source(c, source)
        if bad:
            raise ApiError(400, "unknown_source", bad)
        page = page_chunks(c, url, source=source)
        if page is None:
            raise ApiError(404, "not_found", f"no indexed page with URL {url.split('#', 1)[0]!r}")
        return page

    @app.get("/view")
    def view_page():  # noqa: ANN202
        page = _requested_page("/view")  # the chat page names the citation's source
        resp = app.response_class(render_page(page), mimetype="text/html")
        for k, v in PAGE_HEADERS.items():
            resp.headers[k] = v
        return resp

    @app.get("/chunks/<chunk_id>")
    def chunk_route(chunk_id: str):  # noqa: ANN202
        if len(chunk_id) > MAX_ID_CHARS:
            raise ApiError(400, "invalid_chunk_id", f"a chunk id has at most {MAX_ID_CHARS} characters")
        chunk = chunk_with_parents(ctx(), chunk_id)
        if chunk is None:
            raise ApiError(404, "not_found", f"no chunk with id {chunk_id!r}")
        return jsonify(chunk)

    @app.get("/pages")
    def page_route():  # noqa: ANN202
        unknown = sorted(set(request.args) - {"url", "source"})
        if unknown:
            raise ApiError(400, "unknown_field", f"unknown parameter(s) {', '.join(unknown)}; allowed: source, url")
        page = _requested_page("/pages")
        return jsonify(page)

    @app.get("/openapi.json")
    def openapi():  # noqa: ANN202
        return jsonify(openapi_document(ctx().config.api, [s.name for s in ctx().config.sources]))

    @app.get("/health")
    def health():  # noqa: ANN202
        c = ctx()
        # a config file that cannot be loaded now: its last good text is served, and health says so (200,
        # so that a readiness probe keeps the server that still answers in service)
        status = {"status": "ok"} if c.config_error is None else {
            "status": "degraded", "config_error": "the config file cannot be loaded, so the config last loaded from "
                                                  "it is served until it is fixed; the server log says what is wrong"}
        if c.config.storage_is_local and not Path(c.config.storage_path).is_dir():
            if c.config.storage_path in storage_seen:  # moved away under a running server: its open table still counted
                require_storage_folder(Path(c.config.storage_path))
            # before the first ingest it was never there: 0 chunks, said without connecting (which creates it)
            return jsonify({**status, "embedding_model": c.embedder.name,
                            "table": c.chunks.name, "table_version": None,
                            "sources": {s.name: 0 for s in c.config.sources}})
        return jsonify({**status, "embedding_model": c.embedder.name, "table": c.chunks.name,
                        "table_version": c.chunks.version(),
                        "sources": {s.name: c.chunks.count(s.name) for s in c.config.sources}})

    @app.post("/sources/<name>/refresh")
    def refresh_source(name: str):  # noqa: ANN202
        c = ctx()
        if name not in {s.name for s in c.config.sources}:
            known = ", ".join(s.name for s in c.config.sources) or "none"
            raise ApiError(404, "unknown_source", f"no source named {name!r}; configured sources: {known}")
        return jsonify(launch_refresh(g.api.dagster_graphql_url, name)), 202

    return app
