"""The spine end to end: real Dagster materializations, real LanceDB in a temp dir, the real model."""

from __future__ import annotations

import random
import re

import pytest
from dagster import DagsterInstance

from docs_rag_pipeline.context import get_context
from docs_rag_pipeline.query import ask, search
from docs_rag_pipeline.retrieval import parent_chain

from .conftest import write_config, write_docs
from .dagster_helpers import materialize_source


@pytest.fixture
def instance():
    with DagsterInstance.ephemeral() as inst:
        yield inst


def _table(cfg):
    rows = get_context(cfg).chunks.rows("source = 'guide'")
    return {r["chunk_id"]: (r["page_url"], r["url"], r["text"], r["parent_id"]) for r in rows}


def test_ingest_is_searchable_and_incremental(guide, instance):
    docs = guide.parent / "docs"
    first = materialize_source(guide, "guide", instance)
    assert first["pages_new"] == 5 and first["pages_deleted"] == 0
    assert first["chunks_total"] > 5
    assert first["chunks_embedded"] + first["chunks_cached"] == first["rows_written"] == first["chunks_total"]
    assert all(first["_checks"].values()), first["_checks"]
    before = _table(guide)
    version = get_context(guide).chunks.version()

    # a second run with no change: nothing embedded, nothing written, same contents
    second = materialize_source(guide, "guide", instance)
    assert second["pages_unchanged"] == 5 and second["pages_new"] == second["pages_changed"] == 0
    assert second["chunks_embedded"] == 0 and second["rows_written"] == 0 and second["rows_deleted"] == 0
    assert _table(guide) == before
    assert get_context(guide).chunks.version() == version

    # edit one file: only its chunks are embedded
    (docs / "deploy/cloud.md").write_text(
        "# Deploying to the cloud\n\nDashboards run on any container platform. Set `ACME_REGION` to pick "
        "the data centre closest to your sensors.\n")
    third = materialize_source(guide, "guide", instance)
    assert third["pages_changed"] == 1 and third["pages_unchanged"] == 4
    assert third["chunks_embedded"] == 1
    after = _table(guide)
    changed_ids = set(after) ^ set(before)
    assert {after.get(c, before.get(c))[0] for c in changed_ids} == {"https://docs.example.org/deploy/cloud.md"}
    assert not any("ACME_SECRET_KEY" in t for _, _, t, _ in after.values())
    # the unchanged pages keep their chunk ids (stable across runs)
    keep = {c for c, v in before.items() if v[0] != "https://docs.example.org/deploy/cloud.md"}
    assert keep <= set(after)

    # delete a file: all its chunks go, the rest stays
    (docs / "install.md").unlink()
    fourth = materialize_source(guide, "guide", instance)
    assert fourth["pages_deleted"] == 1 and fourth["chunks_embedded"] == 0 and fourth["rows_deleted"] >= 3
    rows = _table(guide)
    assert not any(v[0].endswith("/install.md") for v in rows.values())
    assert all(not h.page_url.endswith("install.md") for h in search("ZX81_QUANTUM_FLUX", config=guide))


def test_parents_anchors_and_queries(guide, instance):
    materialize_source(guide, "guide", instance)
    ctx = get_context(guide)
    rows = {r["chunk_id"]: r for r in ctx.chunks.rows("source = 'guide'")}
    by_heading = {(r["page_url"].rsplit("/", 1)[-1], tuple(r["headings"])): r for r in rows.values()}
    conv = by_heading[("binding.md", ("Two-way binding", "Converters"))]
    assert conv["url"] == "https://docs.example.org/forms/binding.md#converters"
    chain = parent_chain(ctx, conv["chunk_id"])
    assert [(c["page_url"].rsplit("/", 2)[-1], tuple(c["headings"])) for c in chain] == [
        ("binding.md", ("Two-way binding", "Converters")),
        ("binding.md", ("Two-way binding",)),
        ("binding.md", ()),
        ("forms.md", ()),
        ("index.md", ()),
    ]
    # within a file: a subsection's parent is its section
    val = by_heading[("forms.md", ("Validation",))]
    assert rows[val["parent_id"]]["headings"] == [] and rows[val["parent_id"]]["page_url"].endswith("/forms.md")
    # frontmatter becomes metadata and a filter
    inst = by_heading[("install.md", ("On Linux",))]
    assert inst["title"] == "Installing Acme Widgets" and inst["metadata"]["audience"] == "beginners"
    hits = search("how do I install it", config=guide, filters={"audience": "beginners"})
    assert hits and all(h.page_url.endswith("install.md") for h in hits)
    # the section of a page is its top folder (forms.md heads the forms/ folder)
    in_forms = search("binding", config=guide, filters={"section": "forms"})
    assert in_forms and {h.page_url.rsplit("/", 1)[-1] for h in in_forms} <= {"forms.md", "binding.md"}

    # dense: a paraphrase with none of the passage's words
    hits = search("keep a UI control and an object attribute in sync", config=guide, top_k=3)
    assert hits[0].page_url.endswith("forms/binding.md")
    # full text: a rare identifier
    hits = search("ZX81_QUANTUM_FLUX", config=guide, top_k=3)
    assert hits[0].url == "https://docs.example.org/install.md#troubleshooting"
    assert search("ZX81_QUANTUM_FLUX", config=guide, mode="fulltext")[0].chunk_id == hits[0].chunk_id

    # ask cites only retrieved chunks, with the URL and anchor of the chunk
    q = "What does a converter do in data binding?"
    ans = ask(q, config=guide)
    assert not ans.refused and ans.citations and ans.trace_id
    retrieved = {h.chunk_id for h in search(q, config=guide, top_k=get_context(guide).config.retrieval.top_k)}
    assert {c.chunk_id for c in ans.citations} <= retrieved
    for c in ans.citations:
        assert f"[{c.n}]" in ans.answer and c.url == rows[c.chunk_id]["url"]
    assert "converter" in ans.answer.lower()
    # and refuses on an unrelated question
    off = ask("What is the best temperature to bake sourdough bread?", config=guide)
    assert off.refused and off.citations == [] and "doesn't cover" in off.answer


def test_malformed_files_are_skipped_and_nothing_is_lost(guide, instance):
    docs = guide.parent / "docs"
    materialize_source(guide, "guide", instance)
    before = _table(guide)
    noise = bytes(b for b in random.Random(7).randbytes(6000) if b)  # binary with no NUL byte in it
    write_docs(docs, {"broken.md": b"\x00\x01\x02binary\x00junk" * 50,
                      "forms.md": "---\ntitle: [unclosed\n---\n# Forms\n\nNew text.\n",
                      "noise.md": noise, "manual.adoc": LFS_POINTER})
    out = materialize_source(guide, "guide", instance)
    assert out["pages_skipped"] == 4 and out["rows_written"] == 0 and out["rows_deleted"] == 0
    assert _table(guide) == before  # the broken edit of forms.md lost nothing already stored
    msgs = out["_log"]  # the reasons are in the Dagster run log
    assert "[PARSE] broken.md: skipped" in msgs and "binary" in msgs
    assert "[PARSE] forms.md: skipped" in msgs and "frontmatter" in msgs.lower()
    assert "[PARSE] noise.md: skipped: noise.md: the document looks binary" in msgs
    assert "[PARSE] manual.adoc: skipped: manual.adoc: the file is a Git LFS pointer" in msgs


LFS_POINTER = ("version https://git-lfs.github.com/spec/v1\n"
               "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n")


def test_a_page_emptied_to_its_title_no_longer_answers(guide, instance):
    """A page cut down to its title (a stub that says nothing any more) was 'skipped: no text found'
    and its old chunks kept answering forever, cited with a link to a page that no longer says it.
    Now the page's chunks are removed (counted as deleted); a page that cannot be parsed at all
    (NUL bytes) still keeps what it had; the text, once back, is indexed again."""
    from docs_rag_pipeline import search

    from .conftest import GUIDE

    docs = guide.parent / "docs"
    materialize_source(guide, "guide", instance)
    base = "https://docs.example.org/"
    question = "how do I deploy to a container platform with ACME_SECRET_KEY"
    assert search(question, config=guide, top_k=1)[0].page_url == base + "deploy/cloud.md"
    kept = {k: v for k, v in _table(guide).items() if v[0] == base + "forms.md"}
    write_docs(docs, {"deploy/cloud.md": "---\ntitle: Deploying\n---\n# Deploying to the cloud\n\n## Moved\n",
                      "forms.md": b"# Forms\x00\x00\x00" * 10})
    out = materialize_source(guide, "guide", instance)
    assert out["pages_deleted"] == 1 and out["pages_skipped"] == 1 and out["rows_deleted"] >= 1
    assert "[PARSE] deploy/cloud.md: no text any more: its indexed chunks are removed" in out["_log"]
    table = _table(guide)
    assert not [v for v in table.values() if v[0] == base + "deploy/cloud.md"]
    assert {k: v for k, v in table.items() if v[0] == base + "forms.md"} == kept  # broken, not emptied: kept
    assert all(h.page_url != base + "deploy/cloud.md" for h in search(question, config=guide, top_k=8))
    again = materialize_source(guide, "guide", instance)  # still empty: nothing to remove, nothing indexed
    assert again["pages_deleted"] == 0 and again["rows_written"] == again["rows_deleted"] == 0
    write_docs(docs, {"deploy/cloud.md": GUIDE["deploy/cloud.md"]})
    back = materialize_source(guide, "guide", instance)
    assert back["pages_new"] == 1
    assert search(question, config=guide, top_k=1)[0].page_url == base + "deploy/cloud.md"


def test_changing_the_embedding_model_reembeds_into_its_own_table(guide, instance, monkeypatch):
    from docs_rag_pipeline.embedding import LocalEmbedder

    from .conftest import write_config
    from .fake_openai import EmbeddingsServer

    first = materialize_source(guide, "guide", instance)
    local_table = get_context(guide).chunks.name
    monkeypatch.setenv("TEST_KEY", "k")
    with EmbeddingsServer(LocalEmbedder().embed) as srv:
        cfg = write_config(guide.parent, extra=f"""
            embedding:
              provider: openai
              model: other-embedder
              base_url: {srv.url}
              api_key_env: TEST_KEY
        """)
        out = materialize_source(cfg, "guide", instance)
        ctx = get_context(cfg)
        assert ctx.chunks.name != local_table and ctx.chunks.name.startswith("chunks__openai_other_embedder_")
        # a new model: every chunk embedded again (the cache is per model), none mixed into the old table
        assert out["pages_new"] == 5 and out["chunks_embedded"] + out["chunks_cached"] == first["chunks_total"]
        assert out["chunks_embedded"] >= first["chunks_embedded"]
        spaces = {r["embedding_model"] for r in ctx.chunks._scan(None, ["embedding_model"]).to_pylist()}
        assert spaces == {ctx.embedder.space} and ctx.embedder.space.startswith("openai:other-embedder@")
        assert search("ZX81_QUANTUM_FLUX", config=cfg)[0].url.endswith("#troubleshooting")
        assert len(srv.requests) > 1


def test_the_pages_table_shows_titles_paths_and_errors_as_plain_text(guide, instance):
    """A page's title, a file name and an error text (any crawled site's ``<title>`` the same) reached
    the ``pages`` Markdown metadata as written: the Dagster UI, whose sanitizer keeps images and links,
    loaded a remote image and showed a link, and a line break in a file name ended the table."""
    from markdown_it import MarkdownIt

    docs = guide.parent / "docs"
    write_docs(docs, {
        "evil.md": "---\ntitle: '![x](https://attacker.example/pixel.png?who=ops) [Sign in](https://phish.example/) "
                   "<b>bold</b> mail@attacker.example'\n---\n# Hello\n\nSome text about widgets.\n",
        "n\n# Injected heading www.attacker.example\n.md": "# Fine\n\nText about gadgets.\n",
        "broken.md": "---\ntitle: [unclosed\n---\n# Broken\n\nText.\n"})  # an error cell, None for the others
    out = materialize_source(guide, "guide", instance)
    table = out["_result"].asset_materializations_for_node("scraped_pages")[0].metadata["pages"].value
    tokens = MarkdownIt("commonmark").enable("table").parse(table)
    kinds = {t.type for t in tokens} | {c.type for t in tokens for c in t.children or []}
    assert not kinds & {"image", "link_open", "html_inline", "html_block", "heading_open", "em_open",
                        "strong_open"}, (kinds, table)
    assert not re.search(r"https://|www\.|(?<!\\)@|None", table), table  # what GFM makes a link by itself
    rows = [t for t in tokens if t.type == "tr_open"]
    assert len(rows) == 1 + len(table.strip().splitlines()) - 2, table  # one row per line: no line broke out
    text = "".join(c.content for t in tokens for c in t.children or [] if c.type == "text")
    assert "Sign in" in text and "Injected heading" in text and "attacker.example/pixel.png" in text


def _state(cfg) -> tuple[list[tuple], "np.ndarray"]:
    """Every row's content (updated_at aside), and the vectors in the same order."""
    import json

    import numpy as np

    rows = sorted(get_context(cfg).chunks.rows(with_vectors=True), key=lambda r: r["chunk_id"])
    content = [(r["chunk_id"], r["page_url"], r["url"], r["title"], tuple(r["headings"]), r["parent_id"],
                r["chunk_index"], r["text"], r["content_hash"], r["token_count"],
                json.dumps(r["metadata"], sort_keys=True), tuple(r["tags"])) for r in rows]
    return content, np.array([r["vector"] for r in rows])


def test_a_stages_frame_built_by_columns_equals_the_one_built_by_rows():
    """The ingest assets' frames are built a column at a time, the vectors from one float32 buffer (a
    row at a time, Polars held a Python object per value beside the rows: ``bench/frame_memory.py``).
    The frame is the one a row-wise build gives, for every schema and for rows with missing keys,
    nulls, empty and tuple lists, ragged, null and list vectors; no rows is an empty frame of the schema."""
    import numpy as np
    import polars as pl

    from docs_rag_pipeline.defs.assets import CHUNKS_SCHEMA, EMBEDDINGS_SCHEMA, PAGES_SCHEMA, _frame

    def by_rows(rows: list[dict], schema: dict) -> pl.DataFrame:
        return pl.DataFrame(rows, schema=schema, orient="row")

    buf = np.arange(12, dtype=np.float32).reshape(3, 4)
    chunk = dict(chunk_id="c1", source="s", page_url="p", url="p#a", title="Tïtle ✓", headings=("A", "B"),
                 parent_id=None, chunk_index=0, text="x\u0000y \U0001F600", content_hash="h", token_count=7,
                 updated_at="t", metadata="{}", tags=[], scan_id="s1", made_with=None)
    chunks = [chunk, {**chunk, "chunk_id": "c2", "headings": [], "parent_id": "c1", "chunk_index": 1},
              {k: v for k, v in chunk.items() if k not in ("tags", "made_with")} | {"chunk_id": "c3"}]
    embedded = [{**chunks[0], "vector": buf[0], "from_cache": True},
                {**chunks[1], "vector": buf[1][:2], "from_cache": False},  # ragged
                {**chunks[2], "vector": [0.5, 1.5, 2.5, 3.5], "from_cache": None}]
    pages = [dict(source="s", page_url="p", path="p.md", format="markdown", content_hash="h", status="new",
                  title=None, sections="[]", metadata="{}", error=None, scan_id="s1", index_state=None),
             dict(source="s", page_url="q", status="removed")]
    for rows, schema in ((pages, PAGES_SCHEMA), (chunks, CHUNKS_SCHEMA), (embedded, EMBEDDINGS_SCHEMA),
                         ([{**embedded[0], "vector": None}, embedded[1]], EMBEDDINGS_SCHEMA)):
        built = _frame(rows, schema)
        assert built.schema == pl.Schema(schema) and built.equals(by_rows(rows, schema)), (built, by_rows(rows, schema))
    for schema in (PAGES_SCHEMA, CHUNKS_SCHEMA, EMBEDDINGS_SCHEMA):
        assert _frame([], schema).equals(pl.DataFrame(schema=schema))
    assert _frame(embedded, EMBEDDINGS_SCHEMA).get_column("vector").to_list()[1] == [4.0, 5.0]


def test_vectors_go_from_stage_to_stage_as_float32_arrays_and_the_index_equals_a_clean_ingest(guide, instance,
                                                                                               tmp_path):
    """Each chunk's vector is one float32 array from ``embed_rows`` to the write, never a list of Python
    floats: ``embed_rows``' ``.tolist()`` and the ``to_dicts()`` of the embeddings Parquet that
    ``lancedb_chunks`` reads each held ~12 KB of objects per chunk (384 floats), for every chunk of the
    source at once: most of the ~50 KB a chunk that a first ingest's peak RSS grew by. The rows read
    back hold no more than a pointer's worth per number, and the index the assets write (a first
    ingest, then a refresh of one edited page) equals a clean ingest of the same files by the core."""
    import shutil
    import tracemalloc

    import numpy as np
    import polars as pl

    from docs_rag_pipeline import refresh
    from docs_rag_pipeline.defs.assets import _rows
    from docs_rag_pipeline.refresh import io_folder

    docs = guide.parent / "docs"
    materialize_source(guide, "guide", instance)
    (docs / "deploy/cloud.md").write_text("# Deploying to the cloud\n\nDashboards run on any container platform. "
                                          "Set `ACME_REGION` to pick the data centre closest to your sensors.\n")
    assert materialize_source(guide, "guide", instance)["chunks_embedded"] == 1
    ctx = get_context(guide)
    dims = ctx.embedder.dimensions

    # what lancedb_chunks reads of the embeddings Parquet: a float32 array per row, the stored numbers
    frame = pl.read_parquet(f"{io_folder(ctx.config)}/embeddings/guide.parquet")
    rows = _rows(frame)
    assert rows and all(type(r["vector"]) is np.ndarray and r["vector"].dtype == np.float32
                        and r["vector"].shape == (dims,) for r in rows)
    assert np.array_equal(np.stack([r["vector"] for r in rows]),
                          np.array(frame.get_column("vector").to_list(), dtype=np.float32))
    # what embed_rows gives, from the cache and from the model
    chunk_rows = _rows(pl.read_parquet(f"{io_folder(ctx.config)}/chunks/guide.parquet"))
    chunk_rows.append({**chunk_rows[0], "chunk_id": "new", "text": "A text the cache has never seen."})
    embedded = refresh.embed_rows(ctx, chunk_rows)
    assert {r["from_cache"] for r in embedded} == {True, False}
    assert all(type(r["vector"]) is np.ndarray and r["vector"].dtype == np.float32 for r in embedded)

    # 2,000 rows of 384 numbers: held as one float32 buffer (3 MB), not 768,000 Python floats (25 MB)
    n, size = 2000, 384
    big = pl.DataFrame({"chunk_id": [f"c{i}" for i in range(n)]}).with_columns(
        pl.Series("vector", np.random.default_rng(0).random((n, size), dtype=np.float32)).cast(pl.List(pl.Float32)))
    tracemalloc.start()
    try:
        held = _rows(big)
        kept, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(held) == n and kept < n * size * 8, f"{kept} bytes held for {n} rows"

    clean = tmp_path / "clean"
    shutil.copytree(docs, clean / "docs")
    clean_cfg = write_config(clean)
    refresh.refresh(get_context(clean_cfg), "guide")
    (content, vectors), (clean_content, clean_vectors) = _state(guide), _state(clean_cfg)
    assert content == clean_content
    assert vectors.dtype == clean_vectors.dtype and np.allclose(vectors, clean_vectors, atol=1e-5)


def test_a_refresh_reads_whole_only_the_first_chunks_it_re_links(tmp_path, monkeypatch):
    """``build_chunks`` read the first chunk of every page without a parent page whole (text, metadata,
    all its columns) at every refresh, to find the few whose ``parent_id`` had to change: in a source
    without a root index page, where no page has a parent, a refresh that changed nothing read every
    page's first chunk (8,000 pages: +48 MB and a filter naming 8,000 URLs). It now reads whole only
    the first chunks it rewrites; the re-links, and the index, are as before: a clean ingest's."""
    import shutil

    from docs_rag_pipeline import refresh

    docs = tmp_path / "docs"
    write_docs(docs, {"a/one.md": "# One\n\nAlpha widgets calibrate sensors.\n",
                      "a/two.md": "# Two\n\nBeta widgets report dashboards.\n",
                      "b/three.md": "# Three\n\nGamma gauges read pressure.\n"})
    cfg = write_config(tmp_path)
    ctx = get_context(cfg)
    refresh.refresh(ctx, "guide")
    read: list[str] = []
    rows = ctx.chunks.rows

    def spy(where=None, **kw):  # noqa: ANN001, ANN202 - ChunksTable.rows, recording the pages it read
        out = rows(where, **kw)
        read.extend(r["page_url"] for r in out)
        return out

    monkeypatch.setattr(ctx.chunks, "rows", spy)
    assert refresh.build_chunks(ctx, "guide", refresh.scan_pages(ctx, "guide")) == []
    assert read == []

    def links() -> dict[str, str | None]:
        return {r["page_url"].rsplit("/", 2)[-2] + "/" + r["page_url"].rsplit("/", 1)[-1]: r["parent_id"]
                for r in rows("chunk_index = 0")}

    # a root index comes: every page is re-linked to it; it goes: they have no parent again
    write_docs(docs, {"index.md": "# Home\n\nWelcome to the gauges.\n"})
    assert refresh.refresh(ctx, "guide").pages_new == 1
    home = next(c for u, c in ((r["page_url"], r["chunk_id"]) for r in rows("chunk_index = 0")) if u.endswith("/index.md"))
    assert {k: v for k, v in links().items() if not k.endswith("index.md")} == {
        "a/one.md": home, "a/two.md": home, "b/three.md": home}
    assert sorted(u.rsplit("/", 1)[-1] for u in read) == ["one.md", "three.md", "two.md"]
    read.clear()
    (docs / "index.md").unlink()
    assert refresh.refresh(ctx, "guide").pages_deleted == 1
    assert links() == {"a/one.md": None, "a/two.md": None, "b/three.md": None}
    assert sorted(u.rsplit("/", 1)[-1] for u in read) == ["one.md", "three.md", "two.md"]

    clean = tmp_path / "clean"
    shutil.copytree(docs, clean / "docs")
    clean_cfg = write_config(clean)
    refresh.refresh(get_context(clean_cfg), "guide")
    assert _state(cfg)[0] == _state(clean_cfg)[0]
