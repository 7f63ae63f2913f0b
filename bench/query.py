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


def build(ctx: Context, n: int, vocab: list[str], rng: np.random.Generator) -> np.ndarray:
    table = ctx.chunks
    dims = table.dimensions
    vecs = np.empty((n, dims), dtype=np.float32)
    step = 50_000
    for start in range(0, n, step):
        m = min(step, n - start)
        v = rng.standard_normal((m, dims)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
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
            qvecs = ctx.embedder.embed(QUERIES)

            def brute(i: int) -> None:
                q = ctx.embedder.embed([QUERIES[i % len(QUERIES)]])[0]
                np.argpartition(-(vecs @ q), 5)[:5]

            base = timed(brute, args.reps)
            # recall of the vector leg against the exact scan
            hits = 0
            for q, qv in zip(QUERIES, qvecs):
                exact = {f"c{j}" for j in np.argsort(-(vecs @ qv))[:10]}
                got = {h.chunk_id for h in search(ctx, q, top_k=10, mode="vector")}
                hits += len(exact & got)
            rows.append((n, ctx.chunks.has_ann_index(), build_s, statistics.median(lat), pct(lat, 0.95),
                         statistics.median(base), pct(base, 0.95), hits / (10 * len(QUERIES))))
    print(f"{'chunks':>9} {'ann':>4} {'build s':>8} {'search p50':>11} {'p95':>7} {'brute p50':>10} {'p95':>7} "
          f"{'recall@10':>9}")
    for n, ann, b, p50, p95, bp50, bp95, rec in rows:
        print(f"{n:>9} {str(ann):>4} {b:>8.1f} {p50:>9.1f}ms {p95:>5.1f}ms {bp50:>8.1f}ms {bp95:>5.1f}ms {rec:>9.2f}")
    print("\nratios (search / brute-force scan, same machine, same run):")
    for n, ann, b, p50, p95, bp50, bp95, rec in rows:
        print(f"  {n} chunks: p50 {p50 / bp50:.2f}x, p95 {p95 / bp95:.2f}x")


if __name__ == "__main__":
    main()
