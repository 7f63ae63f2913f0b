"""Memory of turning chunk rows into the table a LanceDB write takes (``ChunksTable.to_arrow``).

An ingest builds this table for every new or changed chunk of a source at once. It held each vector as
384 Python floats inside ``pa.Table.from_pylist`` (the usual way, and the baseline here, the code of
fe54cfb); now the vectors go into one float32 buffer. Measured in one process for the same rows: the
peak of Python allocations (tracemalloc) and the Arrow memory of the result (``pa.total_allocated_bytes``),
per row, and the ratio baseline / now. Run: ``python bench/write_memory.py [rows]``.
"""

from __future__ import annotations

import json
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from docs_rag_pipeline.store import CHUNK_COLUMNS, ChunksTable, chunk_schema, search_text  # noqa: E402

DIMS = 384


class _Table(ChunksTable):
    """The table's row conversion without a database."""

    def __init__(self) -> None:  # noqa: D107 - no connection: only to_arrow runs
        self.dimensions, self.model, self.name = DIMS, "bench-model", "bench"

    @property
    def schema(self) -> pa.Schema:
        return chunk_schema(DIMS)


def baseline(table: _Table, rows: list[dict]) -> pa.Table:
    """The conversion of fe54cfb: each row a dict, its vector a list of Python floats, ``from_pylist``."""
    data = []
    for r in rows:
        d = {c: r.get(c) for c in CHUNK_COLUMNS}
        d["metadata"] = json.dumps(d["metadata"] or {}, sort_keys=True, default=str)
        d["tags"], d["headings"] = list(d["tags"] or []), list(d["headings"] or [])
        d["search_text"], d["embedding_model"] = search_text(d), table.model
        d["vector"] = np.asarray(r["vector"], dtype=np.float32).tolist()
        data.append(d)
    return pa.Table.from_pylist(data, schema=table.schema)


def measure(fn) -> tuple[pa.Table, int, int]:  # noqa: ANN001
    arrow_before = pa.total_allocated_bytes()
    tracemalloc.start()
    out = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, peak, pa.total_allocated_bytes() - arrow_before


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    rng = np.random.default_rng(0)
    rows = [dict(chunk_id=f"c{i}", source="docs", page_url=f"https://d.example/p{i // 10}",
                 url=f"https://d.example/p{i // 10}#s{i}", title=f"Page {i // 10}", headings=["Guide", f"Part {i}"],
                 parent_id=None, chunk_index=i % 10, text="Configure the widget before the first run. " * 20,
                 content_hash=f"h{i}", token_count=160, updated_at="2026-11-26", metadata={"version": "2"},
                 tags=["guide"], vector=rng.random(DIMS, dtype=np.float32).tolist()) for i in range(n)]
    table = _Table()
    old, old_py, old_arrow = measure(lambda: baseline(table, rows))
    del old
    new, new_py, new_arrow = measure(lambda: table.to_arrow(rows))
    same = new.equals(baseline(table, rows))
    print(f"{n:,} rows of {DIMS} dimensions; same table: {same}")
    print(f"{'':28}{'baseline KB/row':>16}{'now KB/row':>12}{'ratio':>8}")
    print(f"{'Python peak (tracemalloc)':28}{old_py / n / 1024:16.1f}{new_py / n / 1024:12.1f}{old_py / max(new_py, 1):7.1f}x")
    print(f"{'Arrow memory of the result':28}{old_arrow / n / 1024:16.1f}{new_arrow / n / 1024:12.1f}"
          f"{old_arrow / max(new_arrow, 1):7.1f}x")
    if not same:
        raise SystemExit("the tables differ")


if __name__ == "__main__":
    main()
