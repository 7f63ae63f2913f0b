"""``ask``: retrieve → generate (LLM, when configured) → validate, or the extractive answer.

Any failure of the LLM server falls back to the extractive answer with a ``warning``; an invented
or missing citation refuses the answer. Each stage is a LangSmith run when tracing is configured.
"""

from __future__ import annotations

import contextlib
import logging
import re
from typing import Any, Iterator, Sequence

from ..context import Context
from ..languages import negations
from ..records import Answer, Hit
from ..retrieval import QueryError, configured_sources, search
from ..store import sql_str
from ..tracing import current_trace_id, traceable
from ..unicode_text import without_controls
from ..words import folded, is_spaceless
from .citations import CitationError, mark_support, validate
from .extractive import (REFUSAL, STOPWORDS, _stem, _stems_of, content_terms, extractive_answer, in_compound, judge,
                         question_language)
from .llm import THINK_CLOSE, ChatClient, LlmError, LlmUnavailable, build_prompt, rewrite_messages, strip_reasoning
from .markers import question_text
from .refusal import corpus_stats

log = logging.getLogger(__name__)


@traceable("retrieve", run_type="retriever")
def retrieve(ctx: Context, question: str, *, top_k: int, source: str | None,
             filters: dict[str, Any] | None) -> list[Hit]:
    return search(ctx, question, top_k=top_k, source=source, filters=filters)


def generate(ctx: Context, messages: list[dict[str, str]]) -> str:
    return generate_with_usage(ctx, messages)["content"]


@traceable("generate", run_type="llm")
def generate_with_usage(ctx: Context, messages: list[dict[str, str]]) -> dict[str, Any]:
    """The completion and its token usage: ``{"content", "usage", "usage_metadata"}`` (the last is
    how a LangSmith ``llm`` run records tokens, so the trace carries them too)."""
    with ChatClient(ctx.config.llm) as client:
        content = client.complete(messages)
    return {"content": content, "usage": client.usage, **_usage_metadata(client.usage)}


def _streamed_output(results: list[Any]) -> dict[str, Any]:
    """A streamed completion's run outputs, as :func:`generate_with_usage` records them: the pieces' text,
    then what the generator returned (its usage) when it came to its end."""
    tail = results[-1] if results and isinstance(results[-1], dict) else {}
    return {"content": "".join(r for r in results if isinstance(r, str)), **tail}


@traceable("generate", run_type="llm", reduce=_streamed_output)
def generate_stream(ctx: Context, messages: list[dict[str, str]], *, client: ChatClient) -> Any:
    """``client.stream(messages)``, the ``generate`` run of a streamed answer (its text and usage)."""
    yield from client.stream(messages)
    return {"usage": client.usage, **_usage_metadata(client.usage)}


@traceable("validate")
def validate_answer(ctx: Context, output: str, hits: list[Hit], trace_id: str) -> Answer:
    v = validate(output, hits, uncited=ctx.config.llm.uncited)
    if v.refused:
        return Answer(answer=REFUSAL, citations=[], refused=True, trace_id=trace_id, mode="llm",
                      warning=None)
    # hits are what the prompt numbered (a parent section included): support is read from them
    mark_support(v, {h.chunk_id: h for h in hits}, ctx.embedder.embed, threshold=ctx.config.llm.min_support)
    return Answer(answer=v.answer, citations=v.citations, refused=False, trace_id=trace_id, mode="llm",
                  warning=v.reason, dropped=v.dropped)


def _parent(ctx: Context, hits: Sequence[Hit]):  # noqa: ANN202
    """A hit's parent section as a hit of its own (its text cut to 1200 characters: what the prompt
    shows is what its citations are checked against). Only a chunk the search could have returned: of
    the request's source, matching its filters, of a configured source (the search's ``where``); a
    parent on a page the filters leave out is no source of a filtered answer."""
    where = getattr(hits, "where", None) or configured_sources(ctx)

    def get(h: Hit) -> Hit | None:
        rows = ctx.chunks.rows(f"chunk_id = {sql_str(h.parent_id)} AND ({where})") if h.parent_id else None
        if not rows:
            return None
        row = rows[0]
        return Hit(chunk_id=row["chunk_id"], source=row["source"], url=row["url"], page_url=row["page_url"],
                   title=row["title"], headings=list(row["headings"] or []), text=row["text"][:1200],
                   score=0.0, parent_id=row["parent_id"], chunk_index=row["chunk_index"], metadata=row["metadata"])

    return get


# ---- follow-ups: a question read in the context of its thread ---------------------------------

CARRIED_TERMS = 8  # at most this many terms of the previous turns join a follow-up's search


def carried_terms(question: str, history: Sequence[Any], vocabulary: frozenset[str] | None = None) -> list[str]:
    """The previous turns' specific terms (newest first: their searched question, then the titles of
    the pages they cited) that the follow-up does not already use. A refused turn carries none: the docs
    said nothing on it, so it set no topic a follow-up could lean on, and its words crowded out those of
    the answered turn before it (the last two answered turns are read)."""
    have = set(content_terms(question))
    out: list[str] = []
    for turn in [t for t in history if not t.refused][-2:][::-1]:
        for text in [turn.standalone or turn.question, *turn.cited_titles]:
            for t in content_terms(text):
                if t in have or t in out or (vocabulary is not None and t not in vocabulary):
                    continue
                out.append(t)
    return out[:CARRIED_TERMS]


def off_the_docs(question: str, vocabulary: frozenset[str] | None) -> bool:
    """Whether a follow-up asks about something the docs never mention: it has two or more content
    words of its own and none of them (nor a word of the same stem, nor a part of a compound) occurs
    in the index. *what is the price of the enterprise plan?* in a thread about deploying is not
    about deploying; *why?*, *show me an example* or *and on Windows?* have one content word at most
    or one the docs use. Text of a script written without spaces is never read so (its terms are
    character pairs)."""
    if not vocabulary:
        return False
    lang = question_language(question)
    terms = content_terms(question, lang)
    if len(terms) < 2 or any(is_spaceless(t) for t in terms):
        return False
    stems = _stems_of(vocabulary, lang)
    return not any(t in vocabulary or _stem(t, lang) in stems or in_compound(t, vocabulary, lang) for t in terms)


def add_usage(a: dict[str, int] | None, b: dict[str, int] | None) -> dict[str, int] | None:
    """The token usage of two completions together (None when neither reported one)."""
    if a is None or b is None:
        return a or b
    return {k: a.get(k, 0) + b.get(k, 0) for k in ("prompt_tokens", "completion_tokens")}


def _usage_metadata(usage: dict[str, int] | None) -> dict[str, dict[str, int]]:
    """``usage`` as a LangSmith ``llm`` run records tokens (``usage_metadata``)."""
    if usage is None:
        return {}
    p, c = usage["prompt_tokens"], usage["completion_tokens"]
    return {"usage_metadata": {"input_tokens": p, "output_tokens": c, "total_tokens": p + c}}


@traceable("rewrite")
def rewrite_question(ctx: Context, question: str, history: Sequence[Any]) -> dict[str, Any]:
    """The follow-up rewritten by the LLM into a standalone question, ``{"question", "usage"}`` (the
    rewrite's tokens count toward the answer's); raises LlmError."""
    with ChatClient(ctx.config.llm) as client:
        out = client.complete(rewrite_messages(question, history)).strip()
    out = out.splitlines()[0].strip().strip('"') if out else ""
    if not out or out.upper().startswith("NO_ANSWER"):
        raise LlmError("the LLM server did not rewrite the follow-up")
    out = out[: ctx.config.api.max_question_chars]
    strays = _not_grounded(out, question, history)
    if strays:
        raise LlmError(f"the LLM's standalone question {out[:200]!r} is not the follow-up's: it "
                       f"{strays}, so it was not used")
    return {"question": out, "usage": client.usage, **_usage_metadata(client.usage)}


def _not_grounded(rewritten: str, question: str, history: Sequence[Any]) -> str:
    """Why ``rewritten`` is not a standalone form of ``question`` (empty when it is): it must keep the
    follow-up's own words and add only words of the thread's questions and cited page titles. A
    model steered by text it was given (a document quoted in an earlier answer, a page title) would
    otherwise replace what the user asked, and the answer to the other question would pass the
    validator, which checks an answer against the question searched. Negations are stop words, but they
    count: a rewrite that drops one of the follow-up's or adds one that neither it nor the thread makes
    asks the opposite question."""
    def stems(text: str) -> set[str]:  # a compound counts as its parts too (HTTPS-only, max_age)
        return {_stem(p) for t in content_terms(text) for p in re.split(r"[-_.]+", t)
                if len(p) > 2 and p not in STOPWORDS}

    asked, got = stems(question), stems(rewritten)
    thread: set[str] = set()
    for turn in history:
        for text in (turn.question, turn.standalone or "", *turn.cited_titles):
            thread |= stems(text)
    lost = sorted(asked - got)
    added = sorted(got - asked - thread)
    if lost:
        return f"drops the follow-up's word{'s' if len(lost) > 1 else ''} {', '.join(lost[:5])}"
    if added:
        return f"adds word{'s' if len(added) > 1 else ''} the conversation never used ({', '.join(added[:5])})"
    said, wrote = negations(question), negations(rewritten)
    if wrote < said:
        return "drops the follow-up's negation"
    if wrote > said + max((negations(t) for turn in history for t in (turn.question, turn.standalone or "",
                                                                        *turn.cited_titles)), default=0):
        return "adds a negation that neither the follow-up nor the conversation makes"
    return ""


def standalone(ctx: Context, question: str, history: Sequence[Any] | None
               ) -> tuple[str, str | None, LlmUnavailable | None, dict[str, int] | None]:
    """What to search and answer for ``question`` in its thread, the standalone question when an LLM
    wrote one, the error when the LLM server is unavailable (down or timing out: the answer then
    does not wait for it a second time), and the rewrite's token usage. Without an LLM (or when it
    fails), the previous turns' terms are carried."""
    if not history:
        return question, None, None, None
    vocabulary = ctx.chunks.vocabulary()
    if off_the_docs(question, vocabulary):
        # what the follow-up asks about is nowhere in the docs: the thread's words would make it look
        # covered and answer it from the previous turn's page, so it is judged as asked, and refused
        return question, None, None, None
    down = None
    if ctx.config.llm.provider != "none":
        try:
            got = rewrite_question(ctx, question, history)
            return got["question"], got["question"], None, got["usage"]
        except LlmError as exc:
            log.warning("LLM could not rewrite the follow-up, carrying terms instead: %s", exc)
            down = exc if isinstance(exc, LlmUnavailable) else None
    terms = carried_terms(question, history, vocabulary)
    return (f"{question} ({' '.join(terms)})" if terms else question), None, down, None


def _without_llm(down: LlmError) -> str:
    return f"{down}; this answer was extracted from the docs without the LLM"


@traceable("ask")
def answer_question(ctx: Context, question: str, *, top_k: int | None = None, source: str | None = None,
                    filters: dict[str, Any] | None = None, history: Sequence[Any] | None = None) -> Answer:
    """``history``: the previous turns of the thread (threads.Turn), oldest first."""
    question = without_controls(question) if isinstance(question, str) else question  # terminal colours pasted with it
    if not isinstance(question, str) or not question.strip():
        raise QueryError("question: must be a non-empty string")  # the caller's word, not search's "query"
    question = question_text(question)  # a marker pasted with it ("… tests? [1]") is no word of it
    asked = question
    question, rewritten, down, spent = standalone(ctx, question, history)
    # searched, judged and answered with its letters in their plain width (``searched`` says only
    # what the thread added)
    ans = _ask(ctx, folded(question), top_k=top_k, source=source, filters=filters, down=down)
    ans.usage = add_usage(spent, ans.usage)
    ans.standalone_question = rewritten
    ans.searched = question if question != asked else None
    return ans


def _ask(ctx: Context, question: str, *, top_k: int | None = None, source: str | None = None,
         filters: dict[str, Any] | None = None, down: LlmError | None = None) -> Answer:
    trace_id = current_trace_id()
    k = top_k or ctx.config.retrieval.top_k
    hits = retrieve(ctx, question, top_k=k, source=source, filters=filters)
    search_warning = getattr(hits, "warning", None)  # the reranker failed: fused order
    ans = _answer(ctx, question, hits, trace_id, down=down)
    if search_warning:
        ans.warning = f"{ans.warning}; {search_warning}" if ans.warning else search_warning
    return ans


def _answer(ctx: Context, question: str, hits: list[Hit], trace_id: str, *, down: LlmError | None = None) -> Answer:
    """``down``: the LLM server failed this request already (the follow-up's rewrite): not asked again."""
    vocab = ctx.chunks.vocabulary()
    stats = corpus_stats(ctx.chunks)
    if ctx.config.llm.provider == "none" or down is not None:
        ans = extractive_answer(question, hits, ctx.embedder, ctx.config.retrieval, trace_id=trace_id,
                                vocabulary=vocab, stats=stats)
        if down is not None:
            ans.warning = _without_llm(down)
        return ans
    if not judge(question, hits, ctx.config.retrieval, vocab, ctx.embedder.count_tokens, stats,
                 embedder=ctx.embedder).relevant:
        # nothing relevant retrieved: no need to ask the model
        return Answer(answer=REFUSAL, citations=[], refused=True, trace_id=trace_id, mode="llm")
    prompt = build_prompt(question, hits, count=ctx.embedder.count_tokens, budget=ctx.config.llm.context_tokens,
                          parent=_parent(ctx, hits))
    try:
        generated = generate_with_usage(ctx, prompt.messages)
    except LlmError as exc:
        log.warning("LLM failed, answering extractively: %s", exc)
        ans = extractive_answer(question, hits, ctx.embedder, ctx.config.retrieval, trace_id=trace_id,
                                vocabulary=vocab, stats=stats)
        ans.warning = _without_llm(exc)
        return ans
    try:
        ans = validate_answer(ctx, generated["content"], prompt.hits, trace_id)
    except CitationError as exc:
        ans = Answer(answer=REFUSAL, citations=[], refused=True, trace_id=trace_id, mode="llm",
                     warning=f"the model's answer was refused: {exc}")
    ans.usage = generated["usage"]
    return ans


# ---- streaming -----------------------------------------------------------------------------------

def _source_view(h: Hit, n: int) -> dict[str, Any]:
    return {"n": n, "chunk_id": h.chunk_id, "url": h.url, "title": h.title, "headings": list(h.headings),
            "source": h.source}


def _final_of(events: list[Any]) -> Any:
    """A streamed answer's run outputs: its ``final`` event's answer, as an answer not streamed records it."""
    return next((e[1] for e in reversed(events) if isinstance(e, tuple) and e[0] == "final"), None)


@traceable("ask", reduce=_final_of)
def answer_events(ctx: Context, question: str, *, top_k: int | None = None, source: str | None = None,
                  filters: dict[str, Any] | None = None,
                  history: Sequence[Any] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """``ask`` as events, in order: ``sources`` (what was retrieved), ``delta`` (the answer as it is
    produced, ``{"text": …}``), then ``final``: the answer (``Answer.to_dict()``) with ``validation``
    (``{"valid", "reason"}``) and ``replaced`` (true when the streamed text was rejected: a streamed
    LLM answer that failed validation is replaced by the refusal). The validator decides."""
    question = without_controls(question) if isinstance(question, str) else question  # as answer_question
    if not isinstance(question, str) or not question.strip():
        raise QueryError("question: must be a non-empty string")
    question = question_text(question)  # as answer_question
    asked = question
    question, rewritten, down, spent = standalone(ctx, question, history)
    head: dict[str, Any] = {"standalone_question": rewritten, "searched": question if question != asked else None}
    question = folded(question)  # as answer_question reads it
    trace_id = current_trace_id()
    k = top_k or ctx.config.retrieval.top_k
    hits = retrieve(ctx, question, top_k=k, source=source, filters=filters)
    vocab = ctx.chunks.vocabulary()
    stats = corpus_stats(ctx.chunks)
    streamed: list[str] = []

    def final(ans: Answer, valid: bool, reason: str | None, replaced: bool = False) -> tuple[str, dict[str, Any]]:
        """``replaced``: the streamed text was rejected (refused by the validator, or the model failed
        mid-stream): the final answer is not a cleaned-up version of it but something else."""
        ans.standalone_question, ans.searched = head["standalone_question"], head["searched"]
        ans.usage = add_usage(spent, ans.usage)
        body = ans.to_dict()
        body["validation"] = {"valid": valid, "reason": reason}
        body["replaced"] = replaced
        return "final", body

    def extractive(warning: str | None = None, replaced: bool = False) -> Iterator[tuple[str, dict[str, Any]]]:
        ans = extractive_answer(question, hits, ctx.embedder, ctx.config.retrieval, trace_id=trace_id,
                                vocabulary=vocab, stats=stats)
        if warning:
            ans.warning = warning
        words = re.findall(r"\s*\S+\s*", ans.answer) or [ans.answer]
        for i in range(0, len(words), 6):  # the answer text, a few words at a time, exactly as it is
            piece = "".join(words[i:i + 6])
            streamed.append(piece)
            yield "delta", {"text": piece}
        yield final(ans, True, None, replaced)

    if ctx.config.llm.provider == "none" or down is not None:
        yield "sources", {"sources": [_source_view(h, i + 1) for i, h in enumerate(hits)], **head}
        yield from extractive(_without_llm(down) if down is not None else None)
        return
    if not judge(question, hits, ctx.config.retrieval, vocab, ctx.embedder.count_tokens, stats,
                 embedder=ctx.embedder).relevant:
        yield "sources", {"sources": [], **head}
        yield final(Answer(answer=REFUSAL, citations=[], refused=True, trace_id=trace_id, mode="llm"), True,
                    "nothing relevant was retrieved")
        return
    prompt = build_prompt(question, hits, count=ctx.embedder.count_tokens, budget=ctx.config.llm.context_tokens,
                          parent=_parent(ctx, hits))
    yield "sources", {"sources": [_source_view(h, i + 1) for i, h in enumerate(prompt.hits)], **head}
    client = ChatClient(ctx.config.llm)
    try:
        # closed, with its connection, as soon as these events are (a reader that went away), not when
        # the garbage collector happens to find them: the LLM server would generate on for no one
        with client, contextlib.closing(generate_stream(ctx, prompt.messages, client=client)) as pieces:
            for piece in pieces:
                streamed.append(piece)
                yield "delta", {"text": piece}
    except LlmError as exc:
        log.warning("LLM failed while streaming, answering extractively: %s", exc)
        yield from extractive(_without_llm(exc), bool(streamed))
        return
    output = "".join(streamed)
    # a think block whose <think> the chat template wrote (only its </think> in the answer) can only be
    # told once the stream has ended: its draft showed it, so the final answer replaces the draft
    thought = strip_reasoning(output) if THINK_CLOSE in output else output
    try:
        ans = validate_answer(ctx, thought, prompt.hits, trace_id)
    except CitationError as exc:
        reason = f"the model's answer was refused: {exc}"
        yield final(Answer(answer=REFUSAL, citations=[], refused=True, trace_id=trace_id, mode="llm",
                           warning=reason, usage=client.usage), False, reason, replaced=True)
        return
    ans.usage = client.usage  # as an answer not streamed has it (the server's last chunk)
    yield final(ans, True, ans.warning, replaced=thought != output)
