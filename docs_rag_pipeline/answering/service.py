"""``ask``: retrieve → generate (LLM, when configured) → validate, or the extractive answer.

Any failure of the LLM server falls back to the extractive answer with a ``warning``; an invented
or missing citation refuses the answer. Each stage is a LangSmith run when tracing is configured.
"""

from __future__ import annotations

import logging
from typing import Any

from ..context import Context
from ..records import Answer, Hit
from ..retrieval import QueryError, search
from ..tracing import current_trace_id, traceable
from .citations import CitationError, mark_support, validate
from .extractive import REFUSAL, extractive_answer, judge
from .llm import ChatClient, LlmError, build_prompt
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
    client = ChatClient(ctx.config.llm)
    content = client.complete(messages)
    out: dict[str, Any] = {"content": content, "usage": client.usage}
    if client.usage is not None:
        p, c = client.usage["prompt_tokens"], client.usage["completion_tokens"]
        out["usage_metadata"] = {"input_tokens": p, "output_tokens": c, "total_tokens": p + c}
    return out


@traceable("validate")
def validate_answer(ctx: Context, output: str, hits: list[Hit], trace_id: str) -> Answer:
    v = validate(output, hits, uncited=ctx.config.llm.uncited)
    if v.refused:
        return Answer(answer=REFUSAL, citations=[], refused=True, trace_id=trace_id, mode="llm",
                      warning=None)
    # hits are what the prompt numbered (a parent section included): support is read from them
    mark_support(v, {h.chunk_id: h for h in hits}, ctx.embedder.embed, threshold=ctx.config.llm.min_support)
    return Answer(answer=v.answer, citations=v.citations, refused=False, trace_id=trace_id, mode="llm",
                  warning=v.reason)


def _parent(ctx: Context):  # noqa: ANN202
    """A hit's parent section as a hit of its own (its text cut to 1200 characters: what the prompt
    shows is what its citations are checked against)."""
    def get(h: Hit) -> Hit | None:
        row = ctx.chunks.get(h.parent_id) if h.parent_id else None
        if not row:
            return None
        return Hit(chunk_id=row["chunk_id"], source=row["source"], url=row["url"], page_url=row["page_url"],
                   title=row["title"], headings=list(row["headings"] or []), text=row["text"][:1200],
                   score=0.0, parent_id=row["parent_id"], chunk_index=row["chunk_index"], metadata=row["metadata"])

    return get


@traceable("ask")
def answer_question(ctx: Context, question: str, *, top_k: int | None = None, source: str | None = None,
                    filters: dict[str, Any] | None = None) -> Answer:
    if not isinstance(question, str) or not question.strip():
        raise QueryError("question: must be a non-empty string")  # the caller's word, not search's "query"
    trace_id = current_trace_id()
    k = top_k or ctx.config.retrieval.top_k
    hits = retrieve(ctx, question, top_k=k, source=source, filters=filters)
    search_warning = getattr(hits, "warning", None)  # the reranker failed: fused order
    ans = _answer(ctx, question, hits, trace_id)
    if search_warning:
        ans.warning = f"{ans.warning}; {search_warning}" if ans.warning else search_warning
    return ans


def _answer(ctx: Context, question: str, hits: list[Hit], trace_id: str) -> Answer:
    vocab = ctx.chunks.vocabulary()
    stats = corpus_stats(ctx.chunks)
    if ctx.config.llm.provider == "none":
        return extractive_answer(question, hits, ctx.embedder, ctx.config.retrieval, trace_id=trace_id,
                                 vocabulary=vocab, stats=stats)
    if not judge(question, hits, ctx.config.retrieval, vocab, ctx.embedder.count_tokens, stats).relevant:
        # nothing relevant retrieved: no need to ask the model
        return Answer(answer=REFUSAL, citations=[], refused=True, trace_id=trace_id, mode="llm")
    prompt = build_prompt(question, hits, count=ctx.embedder.count_tokens, budget=ctx.config.llm.context_tokens,
                          parent=_parent(ctx))
    try:
        generated = generate_with_usage(ctx, prompt.messages)
    except LlmError as exc:
        log.warning("LLM failed, answering extractively: %s", exc)
        ans = extractive_answer(question, hits, ctx.embedder, ctx.config.retrieval, trace_id=trace_id,
                                vocabulary=vocab, stats=stats)
        ans.warning = f"{exc}; this answer was extracted from the docs without the LLM"
        return ans
    try:
        ans = validate_answer(ctx, generated["content"], prompt.hits, trace_id)
    except CitationError as exc:
        ans = Answer(answer=REFUSAL, citations=[], refused=True, trace_id=trace_id, mode="llm",
                     warning=f"the model's answer was refused: {exc}")
    ans.usage = generated["usage"]
    return ans
