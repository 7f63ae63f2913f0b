"""The thin query path behind ``from docs_rag_pipeline import search, ask``. No Dagster here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .answering.service import answer_question
from .context import get_context
from .records import Answer, Hit
from .retrieval import search as _search


def search(query: str, *, top_k: int = 5, source: str | None = None, filters: dict[str, Any] | None = None,
           mode: str = "hybrid", config: str | Path | None = None) -> list[Hit]:
    """Hybrid (BM25 + dense, RRF) search over the indexed chunks."""
    return _search(get_context(config), query, top_k=top_k, source=source, filters=filters, mode=mode)


def ask(question: str, *, top_k: int | None = None, source: str | None = None,
        filters: dict[str, Any] | None = None, config: str | Path | None = None) -> Answer:
    """An answer built only from retrieved text, every sentence cited; refuses when the docs
    don't cover the question. With ``llm.provider: openai`` the model writes it (cite-first,
    validated); otherwise, or when the model fails, sentences are extracted from the docs."""
    ctx = get_context(config)
    ans = answer_question(ctx, question, top_k=top_k, source=source, filters=filters)
    from .feedback import log_answer  # the question log (api.log_questions): feedback and doc_gaps read it

    log_answer(ctx.config, question, ans, source=source)
    return ans
