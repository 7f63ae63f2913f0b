"""The word statistics of the served text (``ChunksTable.vocabulary``, ``refusal.corpus_stats``):
counted in one pass, once per table version and process however many asks come at once, and equal to
a count made from scratch. Real ingests into a real LanceDB."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

from dagster import DagsterInstance

from docs_rag_pipeline.answering.extractive import _stem
from docs_rag_pipeline.answering.refusal import corpus_stats
from docs_rag_pipeline.config import load_config
from docs_rag_pipeline.context import Context
from docs_rag_pipeline.store import search_text
from docs_rag_pipeline.words import words

from .conftest import GUIDE, write_config, write_docs
from .dagster_helpers import materialize_source


def _from_scratch(cfg: Path) -> tuple[frozenset[str], int, dict[str, int]]:
    """Vocabulary, chunk count and stem → chunks, counted from the served rows by a fresh context."""
    chunks = Context(load_config(cfg)).chunks
    texts = [search_text(r) for r in chunks.rows(chunks.served_where())]
    vocab: set[str] = set()
    df: Counter[str] = Counter()
    for t in texts:
        ws = set(words(t))
        vocab |= ws
        df.update({_stem(w) for w in ws})
    return frozenset(vocab), len(texts), dict(df)


def _served(chunks) -> tuple[frozenset[str], int, dict[str, int]]:  # noqa: ANN001
    n, df = corpus_stats(chunks)
    return chunks.vocabulary(), n, dict(df)


def test_concurrent_first_asks_count_the_words_once_in_one_pass(tmp_path):
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    with DagsterInstance.ephemeral() as instance:
        materialize_source(cfg, "guide", instance)
    chunks = Context(load_config(cfg)).chunks
    start = threading.Barrier(6)
    got = []

    def ask_like() -> None:
        start.wait()
        got.append(_served(chunks))

    threads = [threading.Thread(target=ask_like) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # the vocabulary and the stem counts of six concurrent callers: one pass over each chunk's text
    assert chunks.texts_tokenized == chunks.count() > 0
    assert all(g == got[0] for g in got)
    assert got[0] == _from_scratch(cfg)
    assert {"frobnicator", "zx81_quantum_flux"} <= got[0][0]
