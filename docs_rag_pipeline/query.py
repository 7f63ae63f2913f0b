"""The thin query path behind ``from docs_rag_pipeline import search, ask``. No Dagster here."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from .answering.service import answer_events, answer_question
from .context import get_context
from .records import Answer, Citation
from .retrieval import Hits, QueryError
from .retrieval import search as _search
from .threads import Turn, thread_store


def search(query: str, *, top_k: int = 5, source: str | None = None, filters: dict[str, Any] | None = None,
           mode: str = "hybrid", config: str | Path | None = None) -> Hits:
    """Hybrid (BM25 + dense, RRF) search over the indexed chunks: a list of :class:`Hit`, whose
    ``warning`` says why when a configured reranker failed (the hits are then in fused order)."""
    return _search(get_context(config), query, top_k=top_k, source=source, filters=filters, mode=mode)


def ask(question: str, *, thread_id: str | None = None, top_k: int | None = None, source: str | None = None,
        filters: dict[str, Any] | None = None, config: str | Path | None = None) -> Answer:
    """An answer built only from retrieved text, every sentence cited; refuses when the docs
    don't cover the question. With ``llm.provider: openai`` the model writes it (cite-first,
    validated); otherwise, or when the model fails, sentences are extracted from the docs.

    Every answer carries a ``thread_id``; pass it back to ask a follow-up in that conversation
    ("why?", "show me an example"). An unknown or expired ``thread_id`` raises
    :class:`~docs_rag_pipeline.schemas.InputError` (code ``unknown_thread`` / ``expired_thread``)."""
    ctx = get_context(config)
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
    store = thread_store(ctx)
    thread = store.get(thread_id) if thread_id is not None else None
    if not isinstance(question, str) or not question.strip():
        raise QueryError("question: must be a non-empty string")

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
