"""``docs-rag mcp``: a Model Context Protocol server over stdio (the ``mcp`` SDK's MCPServer).

Tools: ``search``, ``get_page``, ``get_chunk`` (with ``parent_id``, so an agent can walk up) and
``ask``. Thin, like the HTTP API: each tool calls the query path. A failure comes back as a tool
error whose message starts with a code: ``INVALID_QUERY``, ``NOT_FOUND`` or ``BACKEND_UNAVAILABLE``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Any, Callable

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import WithJsonSchema

from ..context import get_context
from ..retrieval import QueryError
from .api import HIT_KEYS, MAX_ID_CHARS, MAX_URL_CHARS, chunk_view, is_backend_failure, page_chunks

log = logging.getLogger(__name__)

INSTRUCTIONS = """Search and cite this project's indexed documentation.
- search: hybrid (BM25 + vector) search; returns chunks with chunk_id, url (with the section anchor),
  title, headings, text, score, source and parent_id.
- get_chunk: one chunk by id, with parent_id; call get_chunk(parent_id) to walk up to the enclosing section/page.
- get_page: every chunk of a page, in order, by its URL.
- ask: a cited answer ([n] markers map to citations) or refused=true when the docs don't cover the question.
A failed call is a tool error whose text starts with INVALID_QUERY, NOT_FOUND or BACKEND_UNAVAILABLE."""

# Arguments are checked here, not by the SDK, so that every bad input is answered the same way
# (INVALID_QUERY: …); the schemas still tell the client the expected types.


def _arg(schema: dict[str, Any]) -> Any:
    return Annotated[Any, WithJsonSchema(schema)]


QUERY = _arg({"type": "string", "description": "what to look for, in words"})
QUESTION = _arg({"type": "string", "description": "the question, in words"})
FILTERS = _arg({"type": ["object", "null"], "default": None,
                "description": "metadata filters: key → value or list of values, e.g. {\"section\": \"guides\"}"})
TOP_K = _arg({"type": ["integer", "null"], "default": None, "minimum": 1,
              "description": "how many results (default: retrieval.top_k; at most api.max_top_k)"})
SOURCE = _arg({"type": ["string", "null"], "default": None, "description": "only this documentation source"})
CHUNK_ID = _arg({"type": "string", "description": "a chunk_id from search, get_page, a citation or a parent_id"})
URL = _arg({"type": "string", "description": "the page URL, or a chunk URL (its #anchor is ignored)"})


class Failure(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _failed(code: str, message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=f"{code}: {message}")], is_error=True,
                          structured_content={"error": {"code": code, "message": message}})


def _run(fn: Callable[[], dict[str, Any]]) -> Any:
    """Run a query-path call; a failure becomes a tool error whose text starts with its code."""
    try:
        return fn()
    except Failure as exc:
        return _failed(exc.code, exc.message)
    except QueryError as exc:
        return _failed("INVALID_QUERY", str(exc))
    except Exception as exc:  # noqa: BLE001 - every failure is answered, the server stays up
        if is_backend_failure(exc):
            log.warning("backend unavailable: %s", exc)
            return _failed("BACKEND_UNAVAILABLE", f"the search backend is unavailable: {exc}")
        log.exception("tool failed")
        return _failed("INTERNAL_ERROR", f"an unexpected server error ({type(exc).__name__}); see the server's stderr")


def _text(name: str, value: Any, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Failure("INVALID_QUERY", f"'{name}' must be a non-empty string")
    if len(value) > limit:
        raise Failure("INVALID_QUERY", f"'{name}' is longer than {limit} characters")
    return value


def _optional(name: str, value: Any, types: tuple[type, ...], what: str) -> Any:
    if value is not None and (not isinstance(value, types) or isinstance(value, bool)):
        raise Failure("INVALID_QUERY", f"'{name}' must be {what}")
    return value


def create_server(config_path: str | Path | None = None) -> MCPServer:
    """The MCP server over the index that ``config_path`` (else $DOCS_RAG_CONFIG, ./docs_rag.yaml) names."""
    server = MCPServer(name="docs-rag", instructions=INSTRUCTIONS, log_level="WARNING")

    def ctx():  # noqa: ANN202
        return get_context(config_path)

    def common(top_k: Any, source: Any, filters: Any) -> tuple[int, str | None, dict[str, Any] | None]:
        cfg = ctx().config
        k = _optional("top_k", top_k, (int,), "an integer ≥ 1")
        if k is not None and k < 1:
            raise Failure("INVALID_QUERY", "'top_k' must be an integer ≥ 1")
        k = min(cfg.retrieval.top_k if k is None else k, cfg.api.max_top_k)
        return (k, _optional("source", source, (str,), "a string"),
                _optional("filters", filters, (dict,), "an object of key → value"))

    @server.tool()
    def search(query: QUERY, filters: FILTERS = None, top_k: TOP_K = None,
               source: SOURCE = None) -> dict[str, Any]:
        """Hybrid search (BM25 + vector) over the documentation chunks. Returns {"hits": [...]}, each hit
        with chunk_id, url (with its section anchor), title, headings, text, score, source and parent_id."""
        def run() -> dict[str, Any]:
            from ..retrieval import search as _search

            q = _text("query", query, ctx().config.api.max_question_chars)
            k, src, flt = common(top_k, source, filters)
            hits = _search(ctx(), q, top_k=k, source=src, filters=flt)
            return {"hits": [{key: getattr(h, key) for key in HIT_KEYS} for h in hits]}

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
    def get_page(url: URL) -> dict[str, Any]:
        """Every chunk of one page, in reading order: {"url", "source", "title", "chunks": [...]}."""
        def run() -> dict[str, Any]:
            u = _text("url", url, MAX_URL_CHARS).strip()
            page = page_chunks(ctx(), u)
            if page is None:
                raise Failure("NOT_FOUND", f"no indexed page with URL {u.split('#', 1)[0]!r}")
            return page

        return _run(run)

    @server.tool()
    def ask(question: QUESTION, top_k: TOP_K = None, source: SOURCE = None,
            filters: FILTERS = None) -> dict[str, Any]:
        """A cited answer from the documentation: `answer` with [n] markers, `citations` (n, chunk_id, url,
        title, snippet, score, supported), `refused` (true when the docs don't cover the question, with no
        citations), `trace_id`, `mode` and, when something degraded, `warning`."""
        def run() -> dict[str, Any]:
            from ..query import ask as _ask

            q = _text("question", question, ctx().config.api.max_question_chars)
            k, src, flt = common(top_k, source, filters)
            return _ask(q, top_k=k, source=src, filters=flt, config=config_path).to_dict()

        return _run(run)

    return server


def run_stdio(config_path: str | Path | None = None) -> None:
    """Serve over stdin/stdout until the client closes the connection."""
    create_server(config_path).run("stdio")
