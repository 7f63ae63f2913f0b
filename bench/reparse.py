"""A reparse of a source whose pages did not change: what ``docs-rag ingest --mode reparse`` costs, and the
reparse that runs by itself after a change of settings, an upgrade of the parser or a ``restore``.

The source: this project's own docs (``docs/``, a local source) in a temporary storage folder, ingested
once with the real model; the storage is then copied, and each copy gets one reparse, in one process:

- now: the project's write (``ChunksTable.upsert_source``), which leaves rows identical to the stored
  ones out of the write and commits nothing when nothing differs;
- baseline: the write as it was before (commit 288f982), which wrote every row of every re-parsed page
  again and deleted the rows of those pages that it did not write (the same rows, the same ids).

Printed: seconds of the reparse (the best of three, each on a fresh copy, the two sides alternated),
rows written, table versions added, bytes added under ``lancedb/`` and the versions ``docs-rag
versions`` logs; the ratio baseline / now. The rows both leave in the
table must be equal (checked: the run stops otherwise).
Run: ``python bench/reparse.py``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docs_rag_pipeline.config import parse_config  # noqa: E402
from docs_rag_pipeline.context import Context  # noqa: E402
from docs_rag_pipeline.refresh import refresh, versions  # noqa: E402
from docs_rag_pipeline.store import ChunksTable, sql_in, sql_str  # noqa: E402


class RewriteEveryRow(ChunksTable):
    """The baseline: the write before 288f982. Every row of a re-parsed page was written again, and the
    page's rows not among them were deleted by page."""

    def _changed_only(self, rows):  # noqa: ANN001, ANN202
        ids = [r["chunk_id"] for r in rows]
        for i in range(0, len(ids), 500):  # it read the stored rows, and kept every row of a replaced page
            self.rows(sql_in("chunk_id", ids[i:i + 500]))
        return list(rows)

    def _stale_where(self, source, pages, kept_ids):  # noqa: ANN001, ANN202
        return f"source = {sql_str(source)} AND {sql_in('page_url', pages)}" if pages else None


RUNS = 3


def context(storage: Path, *, baseline: bool) -> Context:
    docs = storage.parent.parent / "docs"  # a copy made at the start: an edit of docs/ meanwhile changes nothing
    raw = {"storage": str(storage), "sources": [{"name": "docs", "kind": "local", "path": str(docs),
                                                  "include": ["**/*.md"], "base_url": "docs/"}]}
    ctx = Context(parse_config(raw, root=storage.parent))
    if baseline:  # the same table, written the old way
        ctx.chunks.__class__ = RewriteEveryRow
    return ctx


def size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def rows(ctx: Context) -> list[tuple]:
    keep = ("chunk_id", "page_url", "parent_id", "chunk_index", "text", "content_hash", "title")
    return sorted(tuple(str(r[k]) for k in keep) for r in ctx.chunks.rows())


def reparse(storage: Path, *, baseline: bool) -> dict:
    ctx = context(storage, baseline=baseline)
    v0, b0, logged0 = ctx.chunks.version(), size(storage / "lancedb"), len(versions(ctx))
    t0 = time.perf_counter()
    st = refresh(ctx, "docs", mode="reparse")
    seconds = time.perf_counter() - t0
    ctx = context(storage, baseline=False)
    return {"seconds": seconds, "written": st.rows_written, "deleted": st.rows_deleted,
            "versions": ctx.chunks.version() - v0, "bytes": size(storage / "lancedb") - b0,
            "logged": len(versions(ctx)) - logged0, "rows": rows(ctx)}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(ROOT / "docs", Path(tmp) / "docs")
        first = Path(tmp) / "first" / "data"
        first.parent.mkdir()
        full = refresh(context(first, baseline=False), "docs")
        runs: dict[str, list[dict]] = {"baseline": [], "now": []}
        for i in range(RUNS):  # alternated, each on a copy of its own: the best of three per side
            for name in runs:
                copy = Path(tmp) / f"{name}-{i}" / "data"
                shutil.copytree(first, copy)
                runs[name].append(reparse(copy, baseline=name == "baseline"))
                shutil.rmtree(copy.parent)
        base, now = (min(runs[n], key=lambda r: r["seconds"]) for n in ("baseline", "now"))
    if base["rows"] != now["rows"]:
        sys.exit("the two reparses left different rows")
    print(f"source: docs/ ({full.pages_new} pages, {full.chunks_total} chunks), reparse with no page changed")
    print(f"{'':<10} {'seconds':>8} {'written':>8} {'deleted':>8} {'versions':>9} {'logged':>7} {'KiB added':>10}")
    for name, r in (("baseline", base), ("now", now)):
        print(f"{name:<10} {r['seconds']:>8.2f} {r['written']:>8} {r['deleted']:>8} {r['versions']:>9} "
              f"{r['logged']:>7} {r['bytes'] / 1024:>10.0f}")
    print()
    print(f"ratio seconds baseline / now: {base['seconds'] / now['seconds']:.2f}x; rows written {base['written']} "
          f"vs {now['written']}; table versions added {base['versions']} vs {now['versions']}; "
          f"KiB added under lancedb/ {base['bytes'] / 1024:.0f} vs {now['bytes'] / 1024:.0f}")


if __name__ == "__main__":
    main()
