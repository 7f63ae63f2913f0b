"""The thin query path behind ``from docs_rag_pipeline import search, ask``. No Dagster here."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from .answering.service import answer_events, answer_question
from .context import get_context
from .records import Answer, Citation
from .retrieval import Hits, QueryError
from .retrieval import search as _search
from .schemas import AskRequest, InputError, SearchRequest, parse_request
from .threads import Turn, thread_store

#: the library's own bound on top_k (api.max_top_k bounds what HTTP, MCP and the CLI serve)
MAX_TOP_K = 10_000


def _check(ctx: Any, model: type, text_field: str, text: Any, *, top_k: Any, **scope: Any) -> None:
    """The checks every interface shares (schemas.parse_request): text that is Unicode, a configured
    source, metadata keys that exist, a well-formed thread id; a bad one raises QueryError naming it."""
    if not isinstance(text, str) or not text.strip():
        raise QueryError(f"{text_field}: must be a non-empty string", code=f"missing_{text_field}", field=text_field)
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K):
        raise QueryError(f"top_k: must be an integer from 1 to {MAX_TOP_K}", code="invalid_top_k", field="top_k")
    try:
        parse_request(model, {text_field: text, **{k: v for k, v in scope.items() if v is not None}}, ctx)
    except InputError as exc:
        raise QueryError(exc.message, code=exc.code, field=exc.field) from None


def search(query: str, *, top_k: int = 5, source: str | None = None, filters: dict[str, Any] | None = None,
           mode: str = "hybrid", config: str | Path | None = None) -> Hits:
    """Hybrid (BM25 + dense, RRF) search over the indexed chunks: a list of :class:`Hit`, whose
    ``warning`` says why when a configured reranker failed (the hits are then in fused order)."""
    ctx = get_context(config)
    _check(ctx, SearchRequest, "query", query, top_k=top_k, source=source, filters=filters)
    return _search(ctx, query, top_k=top_k, source=source, filters=filters, mode=mode)


def ask(question: str, *, thread_id: str | None = None, top_k: int | None = None, source: str | None = None,
        filters: dict[str, Any] | None = None, config: str | Path | None = None) -> Answer:
    """An answer built only from retrieved text, every sentence cited; refuses when the docs
    don't cover the question. With ``llm.provider: openai`` the model writes it (cite-first,
    validated); otherwise, or when the model fails, sentences are extracted from the docs.

    Every answer carries a ``thread_id``; pass it back to ask a follow-up in that conversation
    ("why?", "show me an example"). An unknown or expired ``thread_id`` raises
    :class:`~docs_rag_pipeline.schemas.InputError` (code ``unknown_thread`` / ``expired_thread``)."""
    ctx = get_context(config)
    _check(ctx, AskRequest, "question", question, top_k=top_k, source=source, filters=filters, thread_id=thread_id)
    store = thread_store(ctx)
    thread = store.get(thread_id) if thread_id is not None else None
    ans = answer_question(ctx, question, top_k=top_k, source=source, filters=filters,
                          history=thread.turns if thread else None)
    ans.thread_id = _remember(store, thread, question, ans.to_dict())
    _log(ctx, question, ans, source)
    return ans


def ask_stream(question: str, *, thread_id: str | None = None, top_k: int | None = None, source: str | None = None,
               filters: dict[str, Any] | None = None,
               config: str | Path | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """``ask`` as events (``sources``, ``delta``…, ``final``; see ``answer_events``). The thread is
    checked before the first event: an unknown or expired ``thread_id`` raises here, not mid-stream."""
    ctx = get_context(config)
    _check(ctx, AskRequest, "question", question, top_k=top_k, source=source, filters=filters, thread_id=thread_id)
    store = thread_store(ctx)
    thread = store.get(thread_id) if thread_id is not None else None

    def events() -> Iterator[tuple[str, dict[str, Any]]]:
        for name, data in answer_events(ctx, question, top_k=top_k, source=source, filters=filters,
                                        history=thread.turns if thread else None):
            if name == "final":
                data["thread_id"] = _remember(store, thread, question, data)
                _log(ctx, question, Answer(answer=data["answer"], refused=data["refused"], trace_id=data["trace_id"],
                                           citations=[Citation(**c) for c in data.get("citations") or []],
                                           mode=data.get("mode", "extractive"), warning=data.get("warning")), source)
            yield name, data

    return events()


def _remember(store: Any, thread: Any, question: str, ans: dict[str, Any]) -> str:
    """Add the turn to its thread (a new thread when none): its id."""
    thread = thread or store.new()
    cites = ans.get("citations") or []
    store.add(thread.thread_id, Turn(question=question, standalone=ans.get("searched") or
                                     ans.get("standalone_question") or question,
                                     answer=ans["answer"], refused=ans["refused"],
                                     cited_urls=[c["url"] for c in cites], cited_titles=[c["title"] for c in cites]))
    return thread.thread_id


def _log(ctx: Any, question: str, ans: Answer, source: str | None) -> None:
    """The question log (api.log_questions): feedback and the doc_gaps asset read it."""
    from .feedback import log_answer

    log_answer(ctx.config, question, ans, source=source)
