"""The thin query path behind ``from docs_rag_pipeline import search, ask``. No Dagster here."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

from .answering.service import answer_events, answer_question
from .config import MAX_TOP_K  # the library's own bound on top_k (api.max_top_k bounds what HTTP, MCP and the CLI serve)
from .config import given_config
from .context import get_context as _get_context
from .records import Answer, Citation
from .retrieval import Hits, QueryError
from .retrieval import search as _search
from .schemas import AskRequest, InputError, SearchRequest, parse_request
from .threads import ThreadsUnavailable, Turn, thread_store
from .unicode_text import without_controls


def _check(ctx: Any, model: type, text_field: str, text: Any, *, top_k: Any, top_k_default: bool = True,
           **scope: Any) -> None:
    """The checks every interface shares (schemas.parse_request): text that is Unicode, a configured
    source, metadata keys that exist, a well-formed thread id; a bad one raises QueryError naming it.
    ``top_k_default``: whether ``top_k=None`` means the configured default (``ask``) or is refused (``search``)."""
    if not isinstance(text, str) or not text.strip():
        raise QueryError(f"{text_field}: must be a non-empty string", code=f"missing_{text_field}", field=text_field)
    if (top_k is not None or not top_k_default) and (isinstance(top_k, bool) or not isinstance(top_k, int)
                                                     or not 1 <= top_k <= MAX_TOP_K):
        raise QueryError(f"top_k: must be an integer from 1 to {MAX_TOP_K}", code="invalid_top_k", field="top_k")
    try:
        parse_request(model, {text_field: text, **{k: v for k, v in scope.items() if v is not None}}, ctx)
    except InputError as exc:
        raise QueryError(exc.message, code=exc.code, field=exc.field) from None


def get_context(config: Any) -> Any:
    """The context of the config a caller named (``config=""`` is an error, not the default file)."""
    return _get_context(given_config(config))


def search(query: str, *, top_k: int = 5, source: str | None = None, filters: dict[str, Any] | None = None,
           mode: str = "hybrid", config: str | Path | None = None) -> Hits:
    """Hybrid (BM25 + dense, RRF) search over the indexed chunks: a list of :class:`Hit`, whose
    ``warning`` says why when a configured reranker failed (the hits are then in fused order)."""
    ctx = get_context(config)
    _check(ctx, SearchRequest, "query", query, top_k=top_k, top_k_default=False, source=source, filters=filters)
    return _search(ctx, query, top_k=top_k, source=source, filters=filters, mode=mode)


def ask(question: str, *, thread_id: str | None = None, top_k: int | None = None, source: str | None = None,
        filters: dict[str, Any] | None = None, config: str | Path | None = None, remember: bool = True) -> Answer:
    """An answer built only from retrieved text, every sentence cited; refuses when the docs
    don't cover the question. With ``llm.provider: openai`` the model writes it (cite-first,
    validated); otherwise, or when the model fails, sentences are extracted from the docs.

    Every answer carries a ``thread_id``; pass it back to ask a follow-up in that conversation
    ("why?", "show me an example"). An unknown or expired ``thread_id`` raises
    :class:`~docs_rag_pipeline.schemas.InputError` (code ``unknown_thread`` / ``expired_thread``).
    ``remember=False`` (a caller that never asks follow-ups, such as an A2A call) stores no
    conversation: the answer has no ``thread_id``."""
    return ask_in(get_context(config), question, thread_id=thread_id, top_k=top_k, source=source,
                  filters=filters, remember=remember)


def ask_in(ctx: Any, question: str, *, thread_id: str | None = None, top_k: int | None = None,
           source: str | None = None, filters: dict[str, Any] | None = None, remember: bool = True) -> Answer:
    """:func:`ask` in a context already read (a server reads its config once per request, so an edit
    saved during a request is never half applied to it)."""
    _check(ctx, AskRequest, "question", question, top_k=top_k, source=source, filters=filters, thread_id=thread_id)
    question = without_controls(question)  # pasted with a terminal's colours: logged and kept as its text
    if not isinstance(remember, bool):  # "no" is truthy: it stored the conversation it meant not to
        raise QueryError("remember: must be True or False", code="invalid_remember", field="remember")
    store = thread_store(ctx) if remember or thread_id else None
    thread = _thread(store, thread_id)
    ans = answer_question(ctx, question, top_k=top_k, source=source, filters=filters,
                          history=thread.turns if thread else None)
    not_saved = None
    if store is not None and remember:
        ans.thread_id, not_saved = _remember(store, thread, question, ans.to_dict())
    ans.warning = "; ".join(w for w in (ans.warning, not_saved) if w) or None
    _log(ctx, question, ans, source, thread)
    return ans


def ask_stream(question: str, *, thread_id: str | None = None, top_k: int | None = None, source: str | None = None,
               filters: dict[str, Any] | None = None,
               config: str | Path | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """``ask`` as events (``sources``, ``delta``…, ``final``; see ``answer_events``). The thread is
    checked before the first event: an unknown or expired ``thread_id`` raises here, not mid-stream."""
    return ask_stream_in(get_context(config), question, thread_id=thread_id, top_k=top_k, source=source,
                         filters=filters)


def ask_stream_in(ctx: Any, question: str, *, thread_id: str | None = None, top_k: int | None = None,
                  source: str | None = None,
                  filters: dict[str, Any] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """:func:`ask_stream` in a context already read (see :func:`ask_in`)."""
    _check(ctx, AskRequest, "question", question, top_k=top_k, source=source, filters=filters, thread_id=thread_id)
    question = without_controls(question)  # as ask_in
    store = thread_store(ctx)
    thread = _thread(store, thread_id)

    def events() -> Iterator[tuple[str, dict[str, Any]]]:
        # closing these events closes the answer's (and its LLM stream) at once, not at garbage collection
        with contextlib.closing(answer_events(ctx, question, top_k=top_k, source=source, filters=filters,
                                              history=thread.turns if thread else None)) as answered:
            for name, data in answered:
                if name == "final":
                    tid, not_saved = _remember(store, thread, question, data)
                    if tid:
                        data["thread_id"] = tid
                    if not_saved:  # absent when none, as in ask's JSON (Answer.to_dict)
                        data["warning"] = "; ".join(w for w in (data.get("warning"), not_saved) if w)
                    _log(ctx, question, Answer(answer=data["answer"], refused=data["refused"],
                                               trace_id=data["trace_id"],
                                               citations=[Citation(**c) for c in data.get("citations") or []],
                                               mode=data.get("mode", "extractive"), warning=data.get("warning"),
                                               thread_id=data.get("thread_id")),
                         source, thread)
                yield name, data

    return events()


def _thread(store: Any, thread_id: str | None) -> Any:
    """The conversation ``thread_id`` continues (None for a new one). A store that cannot be read (not
    opened, or the thread's stored rows damaged) is the server's fault, not the request's: HTTP 503, code
    ``threads_unavailable``, whose ``__cause__`` names the file, the thread and what is wrong."""
    if thread_id is None:
        return None
    try:
        return store.get(thread_id)
    except ThreadsUnavailable as exc:
        # the file, the thread and what is wrong: the cause, which the server and MCP logs write and the
        # CLI prints on its one error line (logged here too, the CLI would print them twice)
        raise InputError("threads_unavailable", "thread_id",
                         "conversations cannot be read on this server (its conversation store cannot be read; "
                         "the server log says why); ask again without thread_id", 503) from exc  # the cause: for the CLI


def _remember(store: Any, thread: Any, question: str, ans: dict[str, Any]) -> tuple[str | None, str | None]:
    """Add the turn to its thread (a new thread when none): its id, and None. When the store cannot be
    written (a read-only or full storage folder) the answer stands without a thread: (None, a warning
    saying so). Like the question log, the conversation store never breaks an answer."""
    cites = ans.get("citations") or []
    try:
        # a new conversation is one transaction with its first turn: one wait for a busy store, not two
        tid = store.add(thread.thread_id if thread else None,
                        Turn(question=question, standalone=ans.get("searched") or ans.get("standalone_question")
                             or question, answer=ans["answer"], refused=ans["refused"],
                             cited_urls=[c["url"] for c in cites], cited_titles=[c["title"] for c in cites]))
    except ThreadsUnavailable as exc:
        _log_unavailable(exc)
        why = "the conversation store was busy" if exc.busy else "the storage cannot be written"
        return None, (f"this answer was not saved as a conversation, so it has no follow-ups ({why}; the server "
                      "log says why)")
    return tid, None


def _log_unavailable(exc: Exception) -> None:
    """The details (the file and SQLite's error) go to the log, never to a client (no paths in answers)."""
    import logging

    logging.getLogger(__name__).warning("the conversation store is unavailable: %s", exc)


def _log(ctx: Any, question: str, ans: Answer, source: str | None, thread: Any) -> None:
    """The question log (api.log_questions): feedback and the doc_gaps asset read it. A follow-up is
    logged with the earlier questions of its thread, which a draft eval case of it needs."""
    from .feedback import log_answer

    log_answer(ctx.config, question, ans, source=source, turns=[t.question for t in thread.turns] if thread else [])
