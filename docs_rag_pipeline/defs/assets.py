"""Assets, each partitioned by source: scraped_pages → chunks → embeddings → lancedb_chunks.

Each asset is a few lines around one core function; metadata says what the stage did.
"""


import logging
import re
import time

import numpy as np
import polars as pl
import pyarrow as pa
from dagster import (AssetExecutionContext, AssetKey, AssetRecordsFilter, Config, MaterializeResult, MetadataValue,
                     Output, asset)

from .. import refresh
from ..environment import writer_pool
from ..unicode_text import BIDI_CONTROL
from .partitions import sources_partitions
from .resources import DocsRagResource

progress_log = logging.getLogger("docs_rag_pipeline.progress")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u2028\u2029]|\n|" + BIDI_CONTROL.pattern)


def one_line(msg: str) -> str:
    """A progress line stays one line: a control character from a file name or a page title (a
    newline in ``new\nline.md``) is shown escaped, so it cannot forge or split log lines; so is a bidi
    control (``report\\u202egnp.exe.md``), which would draw the rest of the line reversed."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode(), msg)

PAGES_SCHEMA = {"source": pl.String, "page_url": pl.String, "path": pl.String, "format": pl.String,
                "content_hash": pl.String, "status": pl.String, "title": pl.String, "sections": pl.String,
                "metadata": pl.String, "error": pl.String, "scan_id": pl.String, "index_state": pl.String,
                "made_with": pl.String}
CHUNKS_SCHEMA = {"chunk_id": pl.String, "source": pl.String, "page_url": pl.String, "url": pl.String,
                 "title": pl.String, "headings": pl.List(pl.String), "parent_id": pl.String,
                 "chunk_index": pl.Int32, "text": pl.String, "content_hash": pl.String, "token_count": pl.Int32,
                 "updated_at": pl.String, "metadata": pl.String, "tags": pl.List(pl.String), "scan_id": pl.String,
                 "made_with": pl.String}
EMBEDDINGS_SCHEMA = {**CHUNKS_SCHEMA, "vector": pl.List(pl.Float32), "from_cache": pl.Boolean}

COMMON = dict(partitions_def=sources_partitions, group_name="ingest")
#: ``DOCS_RAG_WRITER_POOL``: a Dagster concurrency pool for the steps that write LanceDB (embeddings,
#: lancedb_chunks), for deployments whose steps run on several machines, where the writer lock (a local
#: file lock) cannot serialize them; give the pool a limit of 1 and turn on run monitoring (docs/deploy.md)
WRITER = {"pool": pool} if (pool := writer_pool()) else {}


def _logger(context: AssetExecutionContext):  # noqa: ANN202
    def log(msg: str) -> None:
        msg = one_line(msg)
        context.log.info(msg)
        progress_log.info(msg)

    return log


def _rows(df: pl.DataFrame) -> list[dict]:
    """The frame's rows as dicts; a ``vector`` column as float32 arrays, views of one buffer (as
    :func:`refresh.embed_rows` gives them): ``to_dicts`` made a Python float of every number, ~12 KB
    of objects per chunk for every chunk of the source at once."""
    if "vector" not in df.columns:
        return df.to_dicts()
    vectors = df.get_column("vector").to_arrow()
    if isinstance(vectors, pa.ChunkedArray):
        vectors = vectors.combine_chunks()
    values = vectors.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    offsets = vectors.offsets.to_numpy()
    offsets = offsets - offsets[0]
    rows = df.drop("vector").to_dicts()
    for r, start, end in zip(rows, offsets[:-1], offsets[1:]):
        r["vector"] = values[start:end]
    return rows


def md_table(rows: list[dict], cols: list[str], limit: int = 50) -> MetadataValue:
    """A Markdown table for the UI. Each cell is plain text (:func:`~..gaps.markdown_text`): titles,
    paths and error texts come from any page or site read, and the UI's sanitizer keeps images and
    links, so a title could load a remote image or show a link, and a line break end the table."""
    from ..gaps import markdown_text

    head = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    body = "".join("| " + " | ".join(markdown_text(" ".join(str(v).split())[:120]) if (v := r.get(c)) is not None
                                     else "" for c in cols) + " |\n"
                   for r in rows[:limit])
    more = f"\n… and {len(rows) - limit} more" if len(rows) > limit else ""
    return MetadataValue.md(head + body + more if rows else "_none_")


class ScrapeConfig(Config):
    """``refresh``: only what changed; ``reparse``: every page again from the source's local cache
    (no network; after a parser change); ``force``: fetch and process everything again."""

    mode: str = "refresh"


def pages_metadata(rows: list[dict], *, notes: dict, mode: str, seconds: float) -> dict:
    """What ``scraped_pages`` reports (also logged by the refresh_all_sources job's scan step)."""
    counts = refresh.page_counts(rows)
    notable = [r for r in rows if r["status"] != "unchanged"]
    extra = {f"scan_{k}": (v if isinstance(v, (int, float, str)) else MetadataValue.json(v)) for k, v in notes.items()}
    scan = next((r["scan_id"] for r in rows), None)
    return {**{f"pages_{k}": v for k, v in counts.items()}, **extra, "mode": mode, "seconds": round(seconds, 3),
            **({"scan_id": scan} if scan else {}),
            "pages": md_table(notable, ["status", "path", "title", "error"])}


def chunks_metadata(rows: list[dict], *, seconds: float) -> dict:
    """What ``chunks`` reports."""
    tokens = [r["token_count"] for r in rows]
    return {"chunks": len(rows), "seconds": round(seconds, 3), "tokens_max": max(tokens, default=0),
            "tokens_mean": round(sum(tokens) / len(tokens), 1) if tokens else 0.0}


def embeddings_metadata(rows: list[dict], *, model: str, seconds: float) -> dict:
    """What ``embeddings`` reports."""
    embedded = sum(not r["from_cache"] for r in rows)
    return {"chunks_embedded": embedded, "chunks_cached": len(rows) - embedded, "model": model,
            "seconds": round(seconds, 3)}


def index_metadata(summary: dict, written: dict, seconds: dict[str, float]) -> dict:
    """What ``lancedb_chunks`` reports: the refresh summary (with ``seconds``, the sum of the stages')
    and the write's notes."""
    summary = {**summary, "seconds": round(sum(seconds.values()), 3)}
    return {
        **summary, "table": written["table"], "table_version": written["table_version"],
        **{k: written[k] for k in ("ann_index", "fts_index", "optimize", "version_tag") if k in written},
        **({"sources_pruned": MetadataValue.json(written["sources_pruned"])} if written["sources_pruned"] else {}),
        "seconds_by_stage": MetadataValue.json(seconds),
        "summary": MetadataValue.json(summary),
    }


def _frame(rows: list[dict], schema: dict) -> pl.DataFrame:
    """The rows as a frame of ``schema``, built a column at a time, the vectors from one float32 buffer:
    built a row at a time (``orient="row"``), Polars held a Python object per value of every row beside
    the rows themselves, the largest allocation of an ingest after the rows (``bench/frame_memory.py``)."""
    if not rows:
        return pl.DataFrame(schema=schema)
    plain = {k: v for k, v in schema.items() if k != "vector"}
    df = pl.DataFrame({k: [r.get(k) for r in rows] for k in plain}, schema=plain)
    if "vector" in schema:
        df = df.with_columns(_vector_column([r.get("vector") for r in rows], schema["vector"]))
    return df.select(list(schema))


def _vector_column(vectors: list, dtype: pl.DataType) -> pl.Series:
    """One list column from the rows' vectors (float32 arrays, some views of one buffer): their values
    copied once into one buffer, with offsets; a missing vector is a null."""
    missing = [v is None for v in vectors]
    arrays = [np.zeros(0, np.float32) if v is None else np.asarray(v, dtype=np.float32).ravel() for v in vectors]
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum([len(a) for a in arrays], out=offsets[1:])
    values = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.float32)
    column = pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(values, type=pa.float32()),
                                           mask=pa.array(missing) if any(missing) else None)
    return pl.Series("vector", column).cast(dtype)


def _latest(context: AssetExecutionContext, key: str):  # noqa: ANN202 - dagster.AssetMaterialization | None
    """The latest materialization of asset ``key`` for this run's partition."""
    records = context.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey(key), asset_partitions=[context.partition_key]), limit=1).records
    return records[0].asset_materialization if records else None


@asset(**COMMON, io_manager_key="parquet_io", kinds={"python", "polars"},
       description="The source's pages now, with their status against the index; new and changed pages parsed.")
def scraped_pages(context: AssetExecutionContext, config: ScrapeConfig, docs_rag: DocsRagResource) -> Output[pl.DataFrame]:
    t0 = time.perf_counter()
    notes: dict = {}
    rows = refresh.scan_pages(docs_rag.context(), context.partition_key, mode=config.mode, log=_logger(context),
                              notes=notes)
    return Output(_frame(rows, PAGES_SCHEMA),
                  metadata=pages_metadata(rows, notes=notes, mode=config.mode, seconds=time.perf_counter() - t0))


@asset(**COMMON, io_manager_key="parquet_io", kinds={"python", "polars"},
       description="Chunks of new and changed pages (heading boundaries, model token budget), with parent links.")
def chunks(context: AssetExecutionContext, docs_rag: DocsRagResource, scraped_pages: pl.DataFrame) -> Output[pl.DataFrame]:
    t0 = time.perf_counter()
    rows = refresh.build_chunks(docs_rag.context(), context.partition_key, _rows(scraped_pages), log=_logger(context))
    return Output(_frame(rows, CHUNKS_SCHEMA), metadata=chunks_metadata(rows, seconds=time.perf_counter() - t0))


@asset(**COMMON, **WRITER, io_manager_key="parquet_io", kinds={"python", "polars"},
       description="A vector per chunk: from the cache (model, sha256 of text) or from the embedding model.")
def embeddings(context: AssetExecutionContext, docs_rag: DocsRagResource, chunks: pl.DataFrame) -> Output[pl.DataFrame]:
    t0 = time.perf_counter()
    ctx = docs_rag.context()
    rows = refresh.embed_rows(ctx, _rows(chunks), log=_logger(context))
    return Output(_frame(rows, EMBEDDINGS_SCHEMA),
                  metadata=embeddings_metadata(rows, model=ctx.embedder.name, seconds=time.perf_counter() - t0))


@asset(**COMMON, **WRITER, kinds={"lancedb"},
       description="The LanceDB table (vector + full-text index): one merge_insert per refresh, then optimize. "
                   "Writes hold the storage's writer lock (an OS file lock: it dies with its process).")
def lancedb_chunks(context: AssetExecutionContext, docs_rag: DocsRagResource, embeddings: pl.DataFrame,
                   scraped_pages: pl.DataFrame) -> MaterializeResult:
    t0 = time.perf_counter()
    pages = _rows(scraped_pages)
    rows = _rows(embeddings)
    # the pages must be the latest recorded scan of the source: a refresh_all_sources run scans and
    # writes without updating the Parquet files this asset reads
    scanned = _latest(context, "scraped_pages")
    latest_scan = scanned.metadata["scan_id"].value if scanned and "scan_id" in scanned.metadata else None
    w = refresh.write_index(docs_rag.context(), context.partition_key, rows, pages, latest_scan=latest_scan,
                            log=_logger(context))
    seconds = {"index": round(time.perf_counter() - t0, 3)}
    for key in ("scraped_pages", "chunks", "embeddings"):
        mat = scanned if key == "scraped_pages" else _latest(context, key)
        if mat and "seconds" in mat.metadata:
            seconds[key] = float(mat.metadata["seconds"].value)
    return MaterializeResult(metadata=index_metadata(refresh.refresh_stats(pages, rows, w).summary(), w, seconds))


ingest_assets = [scraped_pages, chunks, embeddings, lancedb_chunks]
