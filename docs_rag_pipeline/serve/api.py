"""A small Flask app: POST /ask, POST /search, GET /health. Errors are JSON with a code."""

from __future__ import annotations

from typing import Any

from flask import Flask, jsonify, request

from ..context import get_context
from ..retrieval import QueryError

MAX_QUESTION_CHARS = 2000
MAX_TOP_K = 8


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _body(required: str) -> dict[str, Any]:
    if not request.is_json:
        raise ApiError(415, "unsupported_media_type", "send a JSON body with Content-Type: application/json")
    data = request.get_json(silent=True)
    if not isinstance(data, dict):
        raise ApiError(400, "invalid_json", "the body must be a JSON object")
    allowed = {required, "top_k", "source", "filters"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ApiError(400, "unknown_field", f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
    text = data.get(required)
    if not isinstance(text, str) or not text.strip():
        raise ApiError(400, "missing_" + required, f"'{required}' must be a non-empty string")
    if len(text) > MAX_QUESTION_CHARS:
        raise ApiError(413, "too_long", f"'{required}' is longer than {MAX_QUESTION_CHARS} characters")
    top_k = data.get("top_k", 5)
    if not isinstance(top_k, int) or isinstance(top_k, bool):
        raise ApiError(400, "invalid_top_k", "'top_k' must be an integer")
    data["top_k"] = max(1, min(MAX_TOP_K, top_k))
    if data.get("source") is not None and not isinstance(data["source"], str):
        raise ApiError(400, "invalid_source", "'source' must be a string")
    if data.get("filters") is not None and not isinstance(data["filters"], dict):
        raise ApiError(400, "invalid_filters", "'filters' must be an object of key → value")
    return data


def create_app(*, config_path: str | None = None) -> Flask:
    app = Flask(__name__)

    @app.errorhandler(ApiError)
    def _api_error(e: ApiError):  # noqa: ANN202
        return jsonify({"error": {"code": e.code, "message": e.message}}), e.status

    @app.errorhandler(QueryError)
    def _query_error(e: QueryError):  # noqa: ANN202
        return jsonify({"error": {"code": "invalid_query", "message": str(e)}}), 400

    @app.errorhandler(404)
    def _not_found(e):  # noqa: ANN001, ANN202
        return jsonify({"error": {"code": "not_found", "message": "no such route"}}), 404

    @app.errorhandler(405)
    def _method(e):  # noqa: ANN001, ANN202
        return jsonify({"error": {"code": "method_not_allowed", "message": str(e)}}), 405

    @app.post("/search")
    def search_route():  # noqa: ANN202
        from ..retrieval import search

        d = _body("query")
        hits = search(get_context(config_path), d["query"], top_k=d["top_k"], source=d.get("source"),
                      filters=d.get("filters"))
        keys = ("chunk_id", "url", "title", "headings", "text", "score", "source", "parent_id")
        return jsonify({"hits": [{k: getattr(h, k) for k in keys} for h in hits]})

    @app.post("/ask")
    def ask_route():  # noqa: ANN202
        from ..query import ask

        d = _body("question")
        ans = ask(d["question"], top_k=d["top_k"], source=d.get("source"), filters=d.get("filters"),
                  config=config_path)
        return jsonify(ans.to_dict())

    @app.get("/health")
    def health():  # noqa: ANN202
        ctx = get_context(config_path)
        return jsonify({"status": "ok", "embedding_model": ctx.embedder.name, "table": ctx.chunks.name,
                        "table_version": ctx.chunks.version(),
                        "sources": {s.name: ctx.chunks.count(s.name) for s in ctx.config.sources}})

    return app
