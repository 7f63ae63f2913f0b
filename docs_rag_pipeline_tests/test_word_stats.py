"""The word statistics of the served text (``ChunksTable.vocabulary``, ``refusal.corpus_stats``):
counted in one pass, once per table version and process however many asks come at once, and equal to
a count made from scratch. Real ingests into a real LanceDB."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

from dagster import DagsterInstance

from docs_rag_pipeline.answering.extractive import _stem
from docs_rag_pipeline.answering.refusal import corpus_stats
from docs_rag_pipeline.config import load_config
from docs_rag_pipeline.context import Context
from docs_rag_pipeline.languages import text_language
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
        listed = words(t)
        ws, lang = set(listed), text_language(t, listed)  # each chunk stemmed as its language is
        vocab |= ws
        df.update({_stem(w, lang) for w in ws})
    return frozenset(vocab), len(texts), dict(df)


def _served(chunks) -> tuple[frozenset[str], int, dict[str, int]]:  # noqa: ANN001
    # a long-lived table sees another handle's commit within read_consistency_interval (1 s): wait
    # for it to see the version just written, as a server's next request would
    latest = chunks.db.open_table(chunks.name).version
    for _ in range(100):
        if chunks.version() == latest:
            break
        time.sleep(0.05)
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


def test_after_a_write_the_word_statistics_are_updated_from_the_rows_that_changed(tmp_path):
    write_docs(tmp_path / "docs", GUIDE)
    write_docs(tmp_path / "beta", {"only-beta.md": "# Beta only\n\nThe QUUXPLATYPUS setting lives only in beta.\n"})
    both = """
      - {name: guide, kind: local, path: docs, base_url: https://docs.example.org/}
      - {name: beta, kind: local, path: beta}
    """
    cfg = write_config(tmp_path, sources=both)
    with DagsterInstance.ephemeral() as instance:
        materialize_source(cfg, "guide", instance)
        materialize_source(cfg, "beta", instance)
        chunks = Context(load_config(cfg)).chunks  # a running server's table: it follows new versions
        assert _served(chunks) == _from_scratch(cfg)
        before = chunks.texts_tokenized
        assert before == chunks.count()

        # one page changed: only its old and new rows are read and tokenised again
        old_rows = len(chunks.rows("page_url LIKE '%forms/binding%'"))
        (tmp_path / "docs" / "forms" / "binding.md").write_text(
            "# Data binding\n\nBinding connects a field to a GLORPWIDGET property.\n", encoding="utf-8")
        materialize_source(cfg, "guide", instance)
        got = _served(chunks)  # first: it waits until the table sees the write
        new_rows = len(chunks.rows("page_url LIKE '%forms/binding%'"))
        assert chunks.texts_tokenized - before == old_rows + new_rows
        assert got == _from_scratch(cfg)
        assert "glorpwidget" in got[0] and "converter" not in got[0] and "converters" not in got[0]

        # a page added and a page removed
        (tmp_path / "docs" / "deploy" / "cloud.md").unlink()
        write_docs(tmp_path / "docs", {"extra.md": "# Extra\n\nThe BLIMPFROG option is new.\n"})
        materialize_source(cfg, "guide", instance)
        got = _served(chunks)
        assert got == _from_scratch(cfg)
        assert "blimpfrog" in got[0] and "acme_secret_key" not in got[0]
        assert "quuxplatypus" in got[0]

        # a write of rows of another source only
        write_docs(tmp_path / "beta", {"only-beta.md": "# Beta only\n\nThe QUUXPLATYPUS setting moved.\n"})
        materialize_source(cfg, "beta", instance)
        assert _served(chunks) == _from_scratch(cfg)

    # a source removed from the config: its rows, still stored, no longer count
    cfg = write_config(tmp_path, sources="- {name: guide, kind: local, path: docs, base_url: https://docs.example.org/}")
    chunks = Context(load_config(cfg)).chunks
    got = _served(chunks)
    assert "quuxplatypus" not in got[0] and got == _from_scratch(cfg)
    # the same table object once its served sources change counts afresh with the new condition
    old = Context(load_config(cfg)).chunks
    old.served_sources = ("guide", "beta")
    assert "quuxplatypus" in old.vocabulary()
    old.served_sources = ("guide",)
    assert _served(old) == got


def test_word_statistics_are_counted_afresh_when_the_last_version_is_gone(guide):
    import dataclasses

    with DagsterInstance.ephemeral() as instance:
        materialize_source(guide, "guide", instance)
        chunks = Context(load_config(guide)).chunks
        stats = chunks.word_stats()
        # as if the version counted had been cleaned up since and the table had moved on
        chunks._stats = dataclasses.replace(stats, version=stats.version + 1000,
                                            keys=stats.keys + Counter({("gone", "h", "t"): 1}))
        before = chunks.texts_tokenized
        assert _served(chunks) == _from_scratch(guide)
        assert chunks.texts_tokenized - before == chunks.count()


def test_a_server_process_counts_the_words_at_start_not_on_its_first_ask(tmp_path):
    from docs_rag_pipeline.context import get_context
    from docs_rag_pipeline.serve.workers import make_app

    from .dagster_helpers import index_guide

    cfg = index_guide(tmp_path)
    app = make_app(str(cfg))  # what each `docs-rag serve` process (waitress, or a gunicorn worker) runs
    for t in threading.enumerate():
        if t.name == "docs-rag-warm-up":
            t.join(timeout=300)
    chunks = get_context(cfg).chunks
    assert chunks.texts_tokenized == chunks.count() > 0  # counted before any request
    assert app is not None
    assert chunks.vocabulary() == _from_scratch(cfg)[0]
    assert chunks.texts_tokenized == chunks.count()  # the first ask does not count again
