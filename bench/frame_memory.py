"""Memory of turning an ingest stage's rows into the Polars frame Dagster stores (``defs/assets._frame``).

Each ingest asset returns its rows (every new or changed page's, chunk's or embedded chunk's of a source
at once) as a Polars frame, which the IO manager writes to Parquet. It was built a row at a time,
``pl.DataFrame(rows, orient="row")`` (the baseline here); now a column at a time, the vectors from one
float32 buffer. Polars allocates outside Python (tracemalloc does not see it), so each variant runs in a
child process (spawned) of this one that builds the same rows and then the frame: the growth of the child's
peak RSS while building the frame, per row, the time, and the ratios baseline / now. Both frames are
compared for equality. Run: ``python bench/frame_memory.py [rows]``.
"""

from __future__ import annotations

import multiprocessing
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from docs_rag_pipeline.defs.assets import CHUNKS_SCHEMA, EMBEDDINGS_SCHEMA, _frame  # noqa: E402

DIMS = 384


def baseline(rows: list[dict], schema: dict) -> pl.DataFrame:
    """The frame as it was built before: a row at a time."""
    return pl.DataFrame(rows, schema=schema, orient="row")


def rows_of(n: int, vectors: bool) -> list[dict]:
    buf = np.random.default_rng(0).random((n, DIMS), dtype=np.float32)  # embed_rows' vectors: views of one buffer
    rows = [dict(chunk_id=f"c{i}", source="docs", page_url=f"https://d.example/p{i // 10}",
                 url=f"https://d.example/p{i // 10}#s{i}", title=f"Page {i // 10}", headings=["Guide", f"Part {i}"],
                 parent_id=None if i % 10 == 0 else f"c{i - i % 10}", chunk_index=i % 10,
                 text=f"Configure widget {i} before the first run. " * 20, content_hash=f"h{i}", token_count=160,
                 updated_at="2026-11-28", metadata='{"version": "2"}', tags=["guide"], scan_id="s1",
                 made_with="m1") for i in range(n)]
    if vectors:
        for i, r in enumerate(rows):
            r["vector"], r["from_cache"] = buf[i], bool(i % 2)
    return rows


def _child(build: str, n: int, vectors: bool, out) -> None:  # noqa: ANN001
    rows = rows_of(n, vectors)
    schema = EMBEDDINGS_SCHEMA if vectors else CHUNKS_SCHEMA
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    frame = (baseline if build == "baseline" else _frame)(rows, schema)
    seconds = time.perf_counter() - t0
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before  # KiB
    out.send((grown, seconds, frame.hash_rows().sum()))


def run(build: str, n: int, vectors: bool) -> tuple[int, float, int]:
    ctx = multiprocessing.get_context("spawn")  # polars in a forked child of a process that used it can hang
    here, there = ctx.Pipe()
    p = ctx.Process(target=_child, args=(build, n, vectors, there))
    p.start()
    result = here.recv()
    p.join()
    return result


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    same = baseline(rows_of(200, True), EMBEDDINGS_SCHEMA).equals(_frame(rows_of(200, True), EMBEDDINGS_SCHEMA))
    print(f"{n:,} rows (embeddings: {DIMS} dimensions); same frame: {same}")
    print(f"{'':28}{'baseline KB/row':>16}{'now KB/row':>12}{'ratio':>8}{'baseline s':>12}{'now s':>8}{'ratio':>8}")
    for label, vectors in (("chunks frame", False), ("embeddings frame", True)):
        old_kb, old_s, old_hash = run("baseline", n, vectors)
        new_kb, new_s, new_hash = run("now", n, vectors)
        if old_hash != new_hash:
            raise SystemExit(f"the {label}s differ")
        print(f"{label + ', peak RSS':28}{old_kb / n:16.2f}{new_kb / n:12.2f}{old_kb / max(new_kb, 1):7.1f}x"
              f"{old_s:12.2f}{new_s:8.2f}{old_s / max(new_s, 1e-9):7.1f}x")
    if not same:
        raise SystemExit("the frames differ")


if __name__ == "__main__":
    main()
