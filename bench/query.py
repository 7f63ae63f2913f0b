"""Query benchmark: p50/p95 of ``search`` (no LLM) against a brute-force scan of the same vectors.

Builds tables of synthetic chunks (texts made of words from real docs, random unit vectors) at
each size, then times the real ``search()`` (query embedding + BM25 + vector + fusion) and a
NumPy brute-force cosine scan over the same vectors. Run: ``python bench/query.py [--sizes 30000,1000000]``.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docs_rag_pipeline.config import parse_config  # noqa: E402
from docs_rag_pipeline.context import Context  # noqa: E402
from docs_rag_pipeline.retrieval import search  # noqa: E402

QUERIES = ["how do I configure the cache folder", "incremental refresh of changed pages", "search with filters",
           "what happens when a page is deleted", "chunk size and overlap", "environment variable for the token",
           "run the tests", "install on linux", "citations in answers", "schedule a daily refresh"]


def words() -> list[str]:
    text = " ".join(p.read_text(errors="ignore") for p in (ROOT / "docs").rglob("*.md"))
    return re.findall(r"[A-Za-z][A-Za-z_-]{2,}", text)


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def build(ctx: Context, n: int, vocab: list[str], rng: np.random.Generator) -> np.ndarray:
    """Synthetic chunks: vectors clustered around topics like real embeddings (cosine ≈ 0.8 to their
    topic), texts of words from real docs."""
    table = ctx.chunks
    dims = table.dimensions
    topics = unit(rng.standard_normal((max(64, n // 250), dims)))
    vecs = np.empty((n, dims), dtype=np.float32)
    step = 50_000
    for start in range(0, n, step):
        m = min(step, n - start)
        v = unit(topics[rng.integers(0, len(topics), m)] + rng.normal(scale=0.038, size=(m, dims)))
        vecs[start:start + m] = v
        rows = []
        for i in range(m):
            k = start + i
            text = " ".join(random.choices(vocab, k=40))
            rows.append({"chunk_id": f"c{k}", "source": "bench", "page_url": f"https://bench.local/p{k // 8}",
                         "url": f"https://bench.local/p{k // 8}#s{k % 8}", "title": f"Page {k // 8}",
                         "headings": [f"Section {k % 8}"], "parent_id": None, "chunk_index": k % 8, "text": text,
                         "content_hash": "h", "token_count": 40, "updated_at": "", "metadata": "{}", "tags": [],
                         "vector": v[i]})
        tbl = table.open() or table._create()
        tbl.add(table.to_arrow(rows))
    table.ensure_indexes_and_optimize()
    return vecs


def timed(fn, reps: int) -> list[float]:
    out = []
    for i in range(reps):
        t = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t) * 1000)
    return out


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="30000,1000000")
    ap.add_argument("--reps", type=int, default=60)
    args = ap.parse_args()
    random.seed(0)
    rng = np.random.default_rng(0)
    vocab = words()
    rows = []
    for n in [int(x) for x in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            cfg = parse_config({"storage": tmp, "sources": []}, root=Path(tmp))
            ctx = Context(cfg)
            t0 = time.perf_counter()
            vecs = build(ctx, n, vocab, rng)
            build_s = time.perf_counter() - t0
            search(ctx, QUERIES[0], top_k=5)  # warm: model, table, index
            lat = timed(lambda i: search(ctx, QUERIES[i % len(QUERIES)], top_k=5), args.reps)

            def brute(i: int) -> None:
                q = ctx.embedder.embed([QUERIES[i % len(QUERIES)]])[0]
                np.argpartition(-(vecs @ q), 5)[:5]

            base = timed(brute, args.reps)
            # recall@10 of the vector leg (same query path and nprobes as search) against the exact scan,
            # for queries near the data (a real question lands near its topic)
            hits = 0
            tbl = ctx.chunks.open()
            parts = ctx.chunks.ann_partitions()
            probe_q = unit(vecs[rng.integers(0, n, 50)] + rng.normal(scale=0.02, size=(50, vecs.shape[1])))
            for qv in probe_q:
                exact = {f"c{j}" for j in np.argsort(-(vecs @ qv))[:10]}
                qb = tbl.search(qv, vector_column_name="vector").distance_type("cosine").select(["chunk_id"])
                if parts:
                    qb = qb.nprobes(max(ctx.config.retrieval.nprobes, parts // 10))
                hits += len(exact & set(qb.limit(10).to_arrow().column("chunk_id").to_pylist()))
            rows.append((n, ctx.chunks.has_ann_index(), build_s, statistics.median(lat), pct(lat, 0.95),
                         statistics.median(base), pct(base, 0.95), hits / (10 * len(probe_q))))
    print(f"{'chunks':>9} {'ann':>4} {'build s':>8} {'search p50':>11} {'p95':>7} {'brute p50':>10} {'p95':>7} "
          f"{'recall@10':>9}")
    for n, ann, b, p50, p95, bp50, bp95, rec in rows:
        print(f"{n:>9} {str(ann):>4} {b:>8.1f} {p50:>9.1f}ms {p95:>5.1f}ms {bp50:>8.1f}ms {bp95:>5.1f}ms {rec:>9.2f}")
    print("\nratios (search / brute-force scan, same machine, same run):")
    for n, ann, b, p50, p95, bp50, bp95, rec in rows:
        print(f"  {n} chunks: p50 {p50 / bp50:.2f}x, p95 {p95 / bp95:.2f}x")


if __name__ == "__main__":
    main()
