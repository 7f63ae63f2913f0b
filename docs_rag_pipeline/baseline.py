"""The naive retrieval baseline that ``docs-rag eval --baseline`` reports beside the pipeline.

What a reviewer would build in an afternoon: every page's plain text cut into 300-word windows (no
headings, no overlap), embedded with the same model, BM25 (LanceDB full-text) + dense, fused with
reciprocal rank fusion (k=60). Ranked pages are compared with the same page-level metrics, so a
pipeline change that does not beat it is not worth its complexity.

The index lives under ``<storage>/eval_baseline`` and is rebuilt only when the pages change; its
vectors go through the pipeline's embedding cache, so a rebuild embeds only new windows.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .answering.markers import plain_code_spans
from .context import Context
from .embedding import text_sha
from .store import list_tables, sql_str

WORDS = 300
RRF_K = 60
CANDIDATES = 40


def page_text(title: str | None, sections: list[dict[str, Any]]) -> str:
    """A page as plain text: its title, then each section's own heading and text."""
    parts = [title or ""]
    for s in sections:
        heads = s.get("headings") or []
        if heads and heads[-1] != title:
            parts.append(heads[-1])
        parts.append(s.get("text") or "")
    return "\n".join(p for p in parts if p)


def windows(text: str, size: int = WORDS) -> list[str]:
    words = text.split()
    return [" ".join(words[i:i + size]) for i in range(0, len(words), size)] or []


@dataclass
class BaselineIndex:
    table: Any
    ctx: Context

    def search_pages(self, query: str, *, limit: int = 10) -> list[str]:
        """Page URLs in fused rank order (pages repeat when several windows rank; callers dedupe)."""
        qv = self.ctx.embedder.embed([query])[0]
        vec = (self.table.search(qv, vector_column_name="vector").distance_type("cosine")
               .select(["wid", "page_url"]).limit(CANDIDATES).to_arrow().to_pylist())
        words = " ".join(re.findall(r"\w+", query))
        fts = (self.table.search(words, query_type="fts").select(["wid", "page_url"]).limit(CANDIDATES)
               .to_arrow().to_pylist()) if words else []
        score: dict[int, float] = {}
        page: dict[int, str] = {}
        for rows in (vec, fts):
            for rank, r in enumerate(rows):
                score[r["wid"]] = score.get(r["wid"], 0.0) + 1.0 / (RRF_K + rank + 1)
                page[r["wid"]] = r["page_url"]
        order = sorted(score, key=lambda w: -score[w])
        return [page[w] for w in order][: limit * 4]


def build(ctx: Context, source: str) -> BaselineIndex:
    """The baseline index of one source's indexed pages (reused when they did not change). The pages
    are read as a reparse reads them (a web source from its cache, a git source at its synced commit:
    no crawl, no fetch), and only those the index holds: a forced scan ranked the source as it is
    now, so a page added since the last ingest was a baseline win, and it re-crawled whole sites."""
    import lancedb
    from lancedb.index import FTS

    from .refresh import scan_pages

    indexed = {r["page_url"] for r in ctx.chunks.rows(f"source = {sql_str(source)}")}
    pages = [p for p in scan_pages(ctx, source, mode="reparse")
             if p["status"] in ("new", "changed", "unchanged") and p.get("sections") is not None
             and p["page_url"] in indexed]
    rows: list[dict[str, Any]] = []
    for p in sorted(pages, key=lambda p: p["page_url"]):
        text = plain_code_spans(page_text(p["title"], json.loads(p["sections"] or "[]")))  # plain text: no code spans
        for w in windows(text):
            rows.append({"wid": len(rows), "page_url": p["page_url"], "text": w})
    digest = hashlib.sha256("\n".join(f"{r['page_url']}\t{text_sha(r['text'])}" for r in rows).encode()).hexdigest()[:16]
    db = lancedb.connect(str(ctx.config.storage_path / "eval_baseline"))
    name = f"{source}_{digest}"
    if name in list_tables(db):
        return BaselineIndex(db.open_table(name), ctx)
    emb = ctx.embedder
    model = f"{emb.name}:baseline-plain"
    shas = [text_sha(r["text"]) for r in rows]
    cached = ctx.cache.get_many(model, shas)
    todo = {s: r["text"] for s, r in zip(shas, rows) if s not in cached}
    if todo:
        keys = list(todo)
        vecs = emb.embed([todo[k] for k in keys])
        fresh = dict(zip(keys, vecs))
        ctx.cache.put_many(model, fresh)
        cached.update(fresh)
    mat = np.stack([np.asarray(cached[s], dtype=np.float32) for s in shas]) if rows else np.zeros((0, 1), np.float32)
    dim = mat.shape[1]
    data = pa.table({
        "wid": pa.array([r["wid"] for r in rows], pa.int64()),
        "page_url": pa.array([r["page_url"] for r in rows], pa.string()),
        "text": pa.array([r["text"] for r in rows], pa.string()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(mat.ravel(), pa.float32()), dim),
    })
    tbl = db.create_table(name, data=data, mode="overwrite")
    tbl.create_index("text", config=FTS(with_position=False))
    for old in list_tables(db):  # the source's baselines of pages as they were: never read again
        if old != name and old.rsplit("_", 1)[0] == source:
            try:
                db.drop_table(old)
            except Exception:  # noqa: BLE001 - a table left behind costs disk, not a wrong figure
                pass
    return BaselineIndex(tbl, ctx)
