"""``docs-rag mcp``: a Model Context Protocol server over stdio (the ``mcp`` SDK's MCPServer).

Tools: ``search``, ``get_page``, ``get_chunk`` (with ``parent_id``, so an agent can walk up) and
``ask``. Thin, like the HTTP API: each tool calls the query path. A failure comes back as a tool
error whose message starts with a code: ``INVALID_QUERY``, ``NOT_FOUND`` or ``BACKEND_UNAVAILABLE``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
import uuid
import weakref
from pathlib import Path
from typing import Annotated, Any, Callable

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import WithJsonSchema

from .. import __version__
from ..context import get_context, warm_up
from ..retrieval import QueryError
from ..schemas import AskRequest, FeedbackRequest, InputError, SearchRequest, parse_request, resolve_top_k, valid_text
from ..unicode_text import LONE_SURROGATE
from .api import (MAX_ID_CHARS, MAX_URL_CHARS, backend_message, chunk_view, is_backend_failure, page_chunks,
                  search_view, unknown_source)

log = logging.getLogger(__name__)

INSTRUCTIONS = """Search and cite this project's indexed documentation.
- search: hybrid (BM25 + vector) search; returns chunks with chunk_id, url (with the section anchor),
  title, headings, text, score, source and parent_id (and a warning when the reranker failed).
- get_chunk: one chunk by id, with parent_id; call get_chunk(parent_id) to walk up to the enclosing section/page.
- get_page: every chunk of a page, in order, by its URL.
- ask: a cited answer ([n] markers map to citations) or refused=true when the docs don't cover the question.
- ask takes thread_id (from a previous answer) to answer a follow-up in its conversation.
- feedback: thumbs up/down (rating "up"/"down", optional comment) on an answer, by its trace_id.
A failed call is a tool error whose text starts with INVALID_QUERY, NOT_FOUND or BACKEND_UNAVAILABLE
(an unknown or expired thread_id: NOT_FOUND)."""

# Arguments are checked here with the request models the HTTP API uses (docs_rag_pipeline.schemas),
# not by the SDK, so that every bad input is answered the same way (INVALID_QUERY: …); the tool
# schemas are those models' JSON schemas.


def _arg(schema: dict[str, Any]) -> Any:
    return Annotated[Any, WithJsonSchema(schema)]


_PROPS = {**SearchRequest.model_json_schema()["properties"], **AskRequest.model_json_schema()["properties"]}
QUERY = _arg(_PROPS["query"])
QUESTION = _arg(_PROPS["question"])
FILTERS = _arg(_PROPS["filters"])
TOP_K = _arg(_PROPS["top_k"])
SOURCE = _arg(_PROPS["source"])
THREAD_ID = _arg(_PROPS["thread_id"])
_FB = FeedbackRequest.model_json_schema()["properties"]
TRACE_ID = _arg(_FB["trace_id"])
RATING = _arg(_FB["rating"])
COMMENT = _arg(_FB["comment"])
CHUNK_ID = _arg({"type": "string", "description": "a chunk_id from search, get_page, a citation or a parent_id"})
URL = _arg({"type": "string", "description": "the page URL, or a chunk URL (its #anchor is ignored)"})
PAGE_SOURCE = _arg({"type": "string", "description": "the source of the hit or chunk whose page this is (two sources "
                                                     "may index the same URL; default: the first in the config)"})


class Failure(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _failed(code: str, message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=f"{code}: {message}")], is_error=True,
                          structured_content={"error": {"code": code, "message": message}})


#: set once the client of the stdio server has closed its end of our stdout: a call not yet run is
#: not run (the SDK starts every request read in a thread of its own, which no cancellation stops)
_CLIENT_GONE = threading.Event()
#: a copy of the stdio server's wire (its stdout pipe), watched for the client closing its end
_WIRE_FD: int | None = None
#: asks that run at once; the others wait their turn, in the event loop, holding no thread (a queue
#: of asks the client left behind is then not run, see :data:`_CLIENT_GONE`). Quick calls (search,
#: get_chunk, get_page, feedback) never wait behind them.
ASKS_AT_ONCE = max(4, min(16, os.cpu_count() or 1))
_ask_limiters: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()  # event loop → limiter


async def _run_ask(fn: Callable[[], dict[str, Any]]) -> Any:
    import asyncio

    import anyio

    loop = asyncio.get_running_loop()
    limiter = _ask_limiters.get(loop)
    if limiter is None:
        limiter = _ask_limiters[loop] = anyio.CapacityLimiter(ASKS_AT_ONCE)
    return await anyio.to_thread.run_sync(_run, fn, limiter=limiter)


def _run(fn: Callable[[], dict[str, Any]]) -> Any:
    """Run a query-path call; a failure becomes a tool error whose text starts with its code."""
    if _CLIENT_GONE.is_set() or _reader_gone(_WIRE_FD):
        _CLIENT_GONE.set()
        return _failed("CLIENT_GONE", "the client closed the connection; the call was not run")
    return _guarded(fn)


def _guarded(fn: Callable[[], dict[str, Any]]) -> Any:
    try:
        return fn()
    except Failure as exc:
        return _failed(exc.code, exc.message)
    except InputError as exc:
        if exc.code in ("unknown_thread", "expired_thread"):
            return _failed("NOT_FOUND", exc.message)
        if exc.status == 503:  # threads_unavailable: the server's storage, not the call, is at fault
            if exc.__cause__ is not None:
                log.warning("the conversation store is unavailable: %s", exc.__cause__)
            return _failed("BACKEND_UNAVAILABLE", exc.message)
        return _failed("INVALID_QUERY", exc.message)
    except QueryError as exc:
        return _failed("INVALID_QUERY", str(exc))
    except Exception as exc:  # noqa: BLE001 - every failure is answered, the server stays up
        trace_id = uuid.uuid4().hex
        if is_backend_failure(exc):
            log.warning("backend unavailable (trace %s): %s", trace_id, exc, exc_info=exc)
            return _failed("BACKEND_UNAVAILABLE", f"{backend_message(exc)} (trace {trace_id})")
        log.exception("tool failed (trace %s)", trace_id)
        return _failed("INTERNAL_ERROR", f"an unexpected server error; the server's stderr has the details "
                                         f"(trace {trace_id})")


def _text(name: str, value: Any, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Failure("INVALID_QUERY", f"'{name}' must be a non-empty string")
    try:
        valid_text(value)
    except ValueError as exc:
        raise Failure("INVALID_QUERY", f"'{name}' {exc}") from None
    if len(value) > limit:
        raise Failure("INVALID_QUERY", f"'{name}' is longer than {limit} characters")
    return value


def _args(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


class _Server(MCPServer):
    """MCPServer whose calls are checked as HTTP requests are before the SDK binds the arguments: an
    unknown tool, an argument the tool does not take, or a required one missing is a tool error with
    a code (the SDK would answer with its own untagged text, or silently drop the unknown argument)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            known = ", ".join(sorted(t.name for t in self._tool_manager.list_tools()))
            return _failed("NOT_FOUND", f"no tool named {name!r}; tools: {known}")
        props = tool.parameters.get("properties", {})
        extra = sorted(str(k) for k in set(arguments) - set(props))
        if extra:
            return _failed("INVALID_QUERY", f"unknown argument {extra[0]!r}; {name} takes: {', '.join(sorted(props))}")
        missing = [k for k in tool.parameters.get("required", []) if arguments.get(k) is None]
        if missing:
            return _failed("INVALID_QUERY", f"'{missing[0]}' is required: {name} needs {', '.join(tool.parameters['required'])}")
        return await super().call_tool(name, arguments, context)


#: what a request before the handshake is told (the SDK's own answer, "Invalid request parameters",
#: blamed the request's params)
NOT_INITIALIZED = ("the session is not initialized: send initialize (then notifications/initialized) "
                   "before {method!r}")


def field_errors(exc: Any) -> str:
    """A pydantic ``ValidationError`` as ``params.level: required; …``: each field by its path, never the
    input (which could be a whole request)."""
    parts = []
    for e in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(x) for x in e.get("loc", ())) or "params"
        what = "required" if e.get("type") == "missing" else str(e.get("msg", "invalid")).lower()
        parts.append(f"{where}: {what}")
    return "; ".join(dict.fromkeys(parts)) or "invalid request parameters"


async def _name_what_is_wrong(ctx: Any, call_next: Any) -> Any:
    """Server middleware: the SDK answers a request before ``initialize``, and params it cannot validate
    (``initialize`` with ``{}``, ``logging/setLevel`` without ``level``), with the bare -32602 "Invalid
    request parameters", naming nothing; the same error here names the missing handshake or each field."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS
    from pydantic import ValidationError

    try:
        return await call_next(ctx)
    except ValidationError as exc:
        if ctx.request_id is None:  # a notification: the SDK drops it, nobody is answered
            raise
        raise MCPError(code=INVALID_PARAMS, message=field_errors(exc)) from None
    except MCPError as exc:
        if (exc.error.code == INVALID_PARAMS and exc.error.message == "Invalid request parameters"
                and not _initialize_accepted(ctx)):
            raise MCPError(code=INVALID_PARAMS, message=NOT_INITIALIZED.format(method=ctx.method)) from None
        raise


def _initialize_accepted(ctx: Any) -> bool:
    connection = getattr(getattr(ctx, "session", None), "_connection", None)
    return bool(getattr(connection, "initialize_accepted", True))


def create_server(config_path: str | Path | None = None) -> MCPServer:
    """The MCP server over the index that ``config_path`` (else $DOCS_RAG_CONFIG, ./docs_rag.yaml) names."""
    server = _Server(name="docs-rag", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    server._lowlevel_server.middleware.append(_name_what_is_wrong)

    def ctx():  # noqa: ANN202
        return get_context(config_path)

    @server.tool()
    def search(query: QUERY, filters: FILTERS = None, top_k: TOP_K = None,
               source: SOURCE = None) -> dict[str, Any]:
        """Hybrid search (BM25 + vector) over the documentation chunks. Returns {"hits": [...]}, each hit
        with chunk_id, url (with its section anchor), title, headings, text, score, source and parent_id,
        and `warning` when the reranker failed (the hits are then in fused order)."""
        def run() -> dict[str, Any]:
            from ..retrieval import search as _search

            c = ctx()
            r = parse_request(SearchRequest, _args(query=query, top_k=top_k, source=source, filters=filters), c)
            return search_view(_search(c, r.query, top_k=resolve_top_k(c, r), source=r.source, filters=r.filters))

        return _run(run)

    @server.tool()
    def get_chunk(chunk_id: CHUNK_ID) -> dict[str, Any]:
        """One chunk by id: chunk_id, source, url, page_url, title, headings, parent_id (null at the top),
        chunk_index, text, token_count, updated_at, metadata. Call get_chunk(parent_id) to read the
        enclosing section or page."""
        def run() -> dict[str, Any]:
            from ..retrieval import get_chunk as _get_chunk

            cid = _text("chunk_id", chunk_id, MAX_ID_CHARS)
            row = _get_chunk(ctx(), cid)
            if row is None:
                raise Failure("NOT_FOUND", f"no chunk with id {cid!r}")
            return chunk_view(row)

        return _run(run)

    @server.tool()
    def get_page(url: URL, source: PAGE_SOURCE = None) -> dict[str, Any]:
        """Every chunk of one page, in reading order: {"url", "source", "title", "chunks": [...]}. Pass the
        hit's or chunk's `source` when two sources index the same URL (else the first in the config)."""
        def run() -> dict[str, Any]:
            u = _text("url", url, MAX_URL_CHARS).strip()
            c = ctx()
            if source is not None and not isinstance(source, str):
                raise Failure("INVALID_QUERY", "'source' must be a string (a configured source name)")
            bad = unknown_source(c, source)
            if bad:
                raise Failure("INVALID_QUERY", bad)
            page = page_chunks(c, u, source=source)
            if page is None:
                raise Failure("NOT_FOUND", f"no indexed page with URL {u.split('#', 1)[0]!r}")
            return page

        return _run(run)

    @server.tool()
    async def ask(question: QUESTION, top_k: TOP_K = None, source: SOURCE = None,
            filters: FILTERS = None, thread_id: THREAD_ID = None) -> dict[str, Any]:
        """A cited answer from the documentation: `answer` with [n] markers, `citations` (n, chunk_id, url,
        title, snippet, score, supported), `refused` (true when the docs don't cover the question, with no
        citations), `trace_id`, `mode`, `thread_id` and, when something degraded, `warning`. Pass `thread_id`
        back to ask a follow-up ("why?", "show me an example") in the same conversation."""
        def run() -> dict[str, Any]:
            from ..query import ask_in

            c = ctx()  # the config is read once per call: an edit saved meanwhile is never half applied
            r = parse_request(AskRequest, _args(question=question, top_k=top_k, source=source, filters=filters,
                                                thread_id=thread_id), c)
            return ask_in(c, r.question, thread_id=r.thread_id, top_k=resolve_top_k(c, r), source=r.source,
                          filters=r.filters).to_dict()

        return await _run_ask(run)

    @server.tool()
    def feedback(trace_id: TRACE_ID, rating: RATING, comment: COMMENT = None) -> dict[str, Any]:
        """Thumbs up or down on an answer from `ask`, by its trace_id, with an optional comment (what was
        wrong or missing). Stored with the question and answer; thumbs-down answers become draft eval cases
        (`docs-rag feedback export`)."""
        def run() -> dict[str, Any]:
            from ..feedback import FeedbackError, record_feedback
            from ..schemas import parse_feedback

            r = parse_feedback(_args(trace_id=trace_id, rating=rating, comment=comment))
            try:
                return record_feedback(ctx().config, r.trace_id, r.rating, r.comment)
            except FeedbackError as exc:
                code = {404: "NOT_FOUND", 503: "BACKEND_UNAVAILABLE"}.get(exc.status, "INVALID_QUERY")
                raise Failure(code, exc.message) from None  # a storage failure is the server's, as HTTP's 503

        return _run(run)

    return server


def mend_line(line: str) -> str:
    """A JSON-RPC line whose strings hold lone UTF-16 surrogates (``"\\ud800"``), which the SDK's JSON
    parser rejects without a reply: each becomes U+FFFF, which the tools refuse as not valid text,
    so the call gets a tool error instead of silence. The request's ``id`` is left as it is: an answer
    to another id is no answer (:func:`invalid_request` answers it with id null)."""
    raw = bool(LONE_SURROGATE.search(line))  # undecodable input bytes (surrogateescape): never valid text
    if not raw and "\\u" not in line.lower():
        return line
    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply: the SDK answers it as it is
        return LONE_SURROGATE.sub("\uffff", line) if raw else line

    def mend(v: Any) -> Any:
        if isinstance(v, str):
            return LONE_SURROGATE.sub("\uffff", v)
        if isinstance(v, list):
            return [mend(x) for x in v]
        if isinstance(v, dict):
            return {mend(k): mend(x) for k, x in v.items()}
        return v

    try:
        if isinstance(msg, dict) and isinstance(msg.get("id"), str):
            return json.dumps({mend(k): (x if k == "id" else mend(x)) for k, x in msg.items()}) + "\n"
        return json.dumps(mend(msg)) + "\n"
    except RecursionError:  # nested too deeply to mend: the SDK refuses such a line on its own
        return LONE_SURROGATE.sub("\uffff", line) if raw else line


#: seconds the server waits, once the client has closed its input, for the answers to requests it
#: already read (a slow ``ask``) before it exits
DRAIN_SECONDS = 300.0


def _id_key(request_id: Any) -> str:
    return json.dumps(request_id)


#: the most digits a number in a request may have (mcp.md). Python reads up to 4,300 (and so does the
#: SDK's parser), but the documented limit, and the message, say 4,000: one limit, the same everywhere
MAX_NUMBER_DIGITS = 4000
_TOO_LONG = f"a number in the request is too long to read; send at most {MAX_NUMBER_DIGITS} digits"


class _LongNumber(str):
    """The text of a number too long to read (more than :data:`MAX_NUMBER_DIGITS` digits), kept as text
    so that the rest of the line can still be read (its id, its method)."""


def _big_int(digits: str) -> int | str:
    return int(digits) if len(digits) <= MAX_NUMBER_DIGITS else _LongNumber(digits)


def has_long_number(line: str) -> bool:
    """Whether the JSON ``line`` holds a number (integer or not) of more than :data:`MAX_NUMBER_DIGITS`
    digits. The SDK's parser reads one of up to 4,300 digits as a number, so the line must be looked at
    before it gets there; digits inside a string (a query of digits) are no number."""
    if not re.search(r"\d{%d}" % (MAX_NUMBER_DIGITS + 1), line):  # the common case: no run of digits that long
        return False
    found = False

    def number(text: str) -> int:
        nonlocal found
        found = found or sum(c.isdigit() for c in text) > MAX_NUMBER_DIGITS
        return 0

    try:
        json.loads(line, parse_int=number, parse_float=number)
    except (ValueError, RecursionError):  # not JSON: the SDK answers it as it is
        return False
    return found


def invalid_request(line: str, exc: Exception) -> tuple[Any, str] | None:
    """(id, message) for a line that is a JSON-RPC request by its ``id`` and ``method`` but that the
    SDK cannot parse (``params`` a list, a number too long to read, ``jsonrpc`` missing or not "2.0"),
    which it would drop without a reply or answer with pydantic's text; the id is None (JSON-RPC's null)
    for an id MCP cannot carry (``1.5``, ``true``, an object, a string with a lone surrogate) and for a
    batch (an empty one too). None for anything else (a notification, a line that is no request)."""
    try:
        msg = json.loads(line, parse_int=_big_int)
    except RecursionError:  # its id cannot be read either: answered with id null, as JSON-RPC answers a parse error
        return None, "the request is nested too deeply to read: send it with fewer levels of arrays and objects"
    except ValueError:
        return None
    if isinstance(msg, list) and (not msg or any(not isinstance(m, dict) or ("method" in m and m.get("id") is not None)
                                                 for m in msg)):
        # JSON-RPC's batch, which MCP does not take (since 2025-06-18): one error, its id null as JSON-RPC
        # answers a request whose id cannot be read
        return None, "a batch (a JSON array of requests) is not supported: send each request as a line of its own"
    if not isinstance(msg, dict) or "method" not in msg:
        return None
    rid = msg.get("id")
    if isinstance(rid, _LongNumber):  # an id too long to read: answered with id null (JSON-RPC)
        return None, _TOO_LONG
    if isinstance(rid, (float, bool, list, dict)):  # an id MCP cannot carry: answered with id null (JSON-RPC)
        return None, f"id: must be a string or an integer, not {json.dumps(rid)}"
    if not isinstance(rid, (str, int)):
        return None
    if isinstance(rid, str) and LONE_SURROGATE.search(rid):  # no text: echoed, it could not be matched
        return None, f"id: must be Unicode text or an integer, not {json.dumps(rid)} (a lone UTF-16 surrogate)"
    if msg.get("jsonrpc") != "2.0":
        return rid, 'jsonrpc: required, "2.0"' if "jsonrpc" not in msg else \
            f'jsonrpc: must be "2.0", not {json.dumps(msg["jsonrpc"])[:40]}'
    if "params" in msg and not isinstance(msg["params"], dict):
        return rid, "params: must be an object of named arguments (MCP has no positional parameters)"
    if not isinstance(msg["method"], str):
        return rid, "method: must be a string"
    if "number out of range" in str(exc) or has_long_number(line):
        return rid, _TOO_LONG
    return rid, f"not a valid JSON-RPC request: {_first_error(exc)}"


def _first_error(exc: Exception) -> str:
    """The first thing pydantic found wrong with a request, by its field, without the request's text."""
    errors = getattr(exc, "errors", None)
    try:
        first = errors(include_input=False, include_url=False)[0] if callable(errors) else None
    except (IndexError, TypeError):
        first = None
    if first is None:
        return str(exc).splitlines()[0][:200]
    loc = ".".join(str(x) for x in first.get("loc", ())[1:])  # [0] is the union's branch (JSONRPCRequest)
    return f"{loc}: {first.get('msg', 'invalid')}" if loc else str(first.get("msg", "invalid"))


def bad_call_params(params: Any) -> str | None:
    """What is wrong with the ``params`` of a ``tools/call`` that the SDK would refuse with its bare
    "Invalid request parameters" (no field, no reason); None when their shape is right (the tool's own
    checks then name a wrong argument)."""
    if not isinstance(params, dict):
        return "params: required, an object with the tool's name and its arguments ({\"name\": \"search\", " \
               "\"arguments\": {\"query\": \"…\"}})"
    if not isinstance(params.get("name"), str):
        return f"params.name: must be the tool's name as a string, not {json.dumps(params.get('name'))}"
    if params.get("arguments") is not None and not isinstance(params["arguments"], dict):
        return ("params.arguments: must be an object of the tool's named arguments, not "
                f"{json.dumps(params['arguments'])[:80]}")
    return None


class _Wire:
    """What stands between the SDK and the wire: the requests read and not yet answered (so that the
    server answers them before it exits when the client closes its input), and the write stream, to
    answer a request the SDK would drop."""

    def __init__(self) -> None:
        self.pending: set[str] = set()
        self.write: Any = None  # the write stream, once the server runs

    def stream(self, write: Any) -> "_AnsweringWrite":
        self.write = _AnsweringWrite(write, self)
        return self.write

    async def reply_error(self, request_id: Any, message: str, code: int = -32600) -> None:
        from mcp.shared.message import SessionMessage
        from mcp_types import ErrorData, JSONRPCError

        err = JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))
        await self.write.send(SessionMessage(message=err))

    async def drained(self, seconds: float) -> None:
        """Wait for the answers to the requests read, unless the client is gone: nobody would read them."""
        import anyio

        with anyio.move_on_after(seconds):
            while self.pending and not _CLIENT_GONE.is_set():
                await anyio.sleep(0.05)


class _AnsweringWrite:
    """The SDK's write stream, noting each answer sent (``pending`` loses its id)."""

    def __init__(self, inner: Any, wire: _Wire) -> None:
        self._inner, self._wire = inner, wire

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
        rid = getattr(getattr(item, "message", None), "id", None)
        if rid is not None and not hasattr(item.message, "method"):  # a response or an error, not a request
            self._wire.pending.discard(_id_key(rid))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> "_AnsweringWrite":
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _MendedStdin:
    """stdin, line by line, through :func:`mend_line`; a request the SDK cannot parse is answered with
    an error here, and at the end of input the requests already read are answered before it ends."""

    def __init__(self, wire: _Wire | None = None) -> None:
        import io

        import anyio

        # bytes that are not UTF-8 become lone surrogates (not U+FFFD, which would pass as text), and
        # mend_line turns those into U+FFFF: the tools refuse them as not valid Unicode text
        self._file = anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape"))
        self._wire = wire or _Wire()

    def __aiter__(self):  # noqa: ANN204
        return self._lines()

    async def _lines(self):  # noqa: ANN202
        import mcp_types

        async for line in self._file:
            try:
                mended = mend_line(line)
            except Exception:  # noqa: BLE001 - one bad line must never end the server: pass it on as it came
                mended = line
            if has_long_number(mended):  # one the SDK would read (up to 4,300 digits): refused as documented
                bad = invalid_request(mended, ValueError("number out of range"))
                if bad is not None and self._wire.write is not None:
                    await self._wire.reply_error(*bad)
                    continue
            try:
                msg = mcp_types.jsonrpc_message_adapter.validate_json(mended, by_name=False)
            except Exception as exc:  # noqa: BLE001 - what the SDK would drop silently
                bad = invalid_request(mended, exc)
                if bad is not None and self._wire.write is not None:
                    await self._wire.reply_error(*bad)
                    continue
            else:
                if isinstance(msg, mcp_types.JSONRPCRequest):
                    if msg.method == "tools/call" and (wrong := bad_call_params(msg.params)) is not None:
                        if self._wire.write is not None:
                            await self._wire.reply_error(msg.id, wrong, -32602)
                            continue
                    self._wire.pending.add(_id_key(msg.id))
                elif isinstance(msg, mcp_types.JSONRPCNotification) and msg.method == "notifications/cancelled":
                    # the SDK answers a cancelled request never (MCP): the drain at end of input must not wait for it
                    if isinstance(msg.params, dict) and isinstance(msg.params.get("requestId"), (str, int)):
                        self._wire.pending.discard(_id_key(msg.params["requestId"]))
                if isinstance(msg, mcp_types.JSONRPCNotification) and '"id"' in mended:
                    # a request whose id MCP cannot carry (1.5, true) reads as a notification to the SDK,
                    # which answers none: the client would wait for ever
                    bad = invalid_request(mended, ValueError("id"))
                    if bad is not None and bad[0] is None and self._wire.write is not None:
                        await self._wire.reply_error(*bad)
                        continue
            yield mended
        await self._wire.drained(DRAIN_SECONDS)


def run_stdio(config_path: str | Path | None = None) -> None:
    """Serve over stdin/stdout until the client closes the connection."""
    import anyio
    from mcp.server.stdio import stdio_server

    if sys.stdin is None or sys.stdout is None:  # started with stdin or stdout closed: no client, no request
        return
    server = create_server(config_path)
    warm_up(config_path)  # the index's words are counted at start (an exit waits for it: context._join_warm_ups)
    wire = _Wire()
    gone = False
    _CLIENT_GONE.clear()  # a server run again in the same process starts with its own client
    # the SDK serves the wire from a private copy of fd 1 and points fd 1 at stderr (so that a stray
    # print cannot corrupt it): watch a copy of the wire's own pipe
    global _WIRE_FD
    try:
        wire_fd = _WIRE_FD = os.dup(sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):
        wire_fd = None

    async def main() -> None:
        nonlocal gone
        async with anyio.create_task_group() as tg:
            async def watch() -> None:  # the client closed its end of our stdout: stop, answering no one
                nonlocal gone
                while not _reader_gone(wire_fd):
                    await anyio.sleep(0.1)
                gone = True
                _CLIENT_GONE.set()
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            async with stdio_server(stdin=_MendedStdin(wire)) as (read, write):  # type: ignore[arg-type]
                low = server._lowlevel_server
                await low.run(read, wire.stream(write), low.create_initialization_options())
            tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    except BaseException as exc:  # noqa: BLE001 - sorted below: only a client that went away is quiet
        if not _client_gone(exc):
            raise
        gone = True
        _CLIENT_GONE.set()
    finally:
        if wire_fd is not None:
            _WIRE_FD = None
            os.close(wire_fd)
    if gone:
        # the client closed its end: nobody is left to answer, and nothing here failed. Exit 0 without
        # the SDK's task-group traceback, and with stdout on the null device so that the flush at
        # interpreter exit does not raise again
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass


def _reader_gone(fd: int | None) -> bool:
    """Whether nobody reads ``fd`` any more: a pipe or socket whose other end was closed (the client
    of ``docs-rag mcp`` went away). A file, a terminal or an open pipe: False."""
    import select

    if fd is None:
        return False
    try:
        poller = select.poll()
        poller.register(fd, 0)  # POLLERR and POLLHUP are reported whatever is asked
        return any(ev & (select.POLLERR | select.POLLHUP | select.POLLNVAL) for _, ev in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def _client_gone(exc: BaseException) -> bool:
    """Whether ``exc`` (or every exception of a group) says the client closed the wire: a broken pipe
    or reset on stdout, or the SDK's stream broken by one."""
    import anyio

    if isinstance(exc, BaseExceptionGroup):
        return all(_client_gone(e) for e in exc.exceptions)
    return isinstance(exc, (BrokenPipeError, ConnectionResetError, anyio.BrokenResourceError))
