"""Assets, each partitioned by source: scraped_pages → chunks → embeddings → lancedb_chunks.

Each asset is a few lines around one core function; metadata says what the stage did.
"""


import logging
import os
import time

import polars as pl
from dagster import AssetExecutionContext, AssetKey, Config, MaterializeResult, MetadataValue, Output, asset

from .. import refresh
from .partitions import sources_partitions
from .resources import DocsRagResource

progress_log = logging.getLogger("docs_rag_pipeline.progress")

PAGES_SCHEMA = {"source": pl.String, "page_url": pl.String, "path": pl.String, "format": pl.String,
                "content_hash": pl.String, "status": pl.String, "title": pl.String, "sections": pl.String,
                "metadata": pl.String, "error": pl.String, "scan_id": pl.String, "index_state": pl.String}
CHUNKS_SCHEMA = {"chunk_id": pl.String, "source": pl.String, "page_url": pl.String, "url": pl.String,
                 "title": pl.String, "headings": pl.List(pl.String), "parent_id": pl.String,
                 "chunk_index": pl.Int32, "text": pl.String, "content_hash": pl.String, "token_count": pl.Int32,
                 "updated_at": pl.String, "metadata": pl.String, "tags": pl.List(pl.String), "scan_id": pl.String}
EMBEDDINGS_SCHEMA = {**CHUNKS_SCHEMA, "vector": pl.List(pl.Float32), "from_cache": pl.Boolean}

COMMON = dict(partitions_def=sources_partitions, group_name="ingest")
#: ``DOCS_RAG_WRITER_POOL``: a Dagster concurrency pool for the steps that write LanceDB (embeddings,
#: lancedb_chunks), for deployments whose steps run on several machines, where the writer lock (a local
#: file lock) cannot serialize them; give the pool a limit of 1 and turn on run monitoring (docs/deploy.md)
WRITER = {"pool": os.environ["DOCS_RAG_WRITER_POOL"]} if os.environ.get("DOCS_RAG_WRITER_POOL") else {}


def _logger(context: AssetExecutionContext):  # noqa: ANN202
    def log(msg: str) -> None:
        context.log.info(msg)
        progress_log.info(msg)

    return log


def _rows(df: pl.DataFrame) -> list[dict]:
    return df.to_dicts()


def _md_table(rows: list[dict], cols: list[str], limit: int = 50) -> MetadataValue:
    head = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    body = "".join("| " + " | ".join(str(r.get(c, "")).replace("|", "\\|")[:120] for c in cols) + " |\n"
                   for r in rows[:limit])
    more = f"\n… and {len(rows) - limit} more" if len(rows) > limit else ""
    return MetadataValue.md(head + body + more if rows else "_none_")


class ScrapeConfig(Config):
    """``refresh``: only what changed; ``reparse``: every page again from the source's local cache
    (no network; after a parser change); ``force``: fetch and process everything again."""

    mode: str = "refresh"


@asset(**COMMON, io_manager_key="parquet_io", kinds={"python", "polars"},
       description="The source's pages now, with their status against the index; new and changed pages parsed.")
def scraped_pages(context: AssetExecutionContext, config: ScrapeConfig, docs_rag: DocsRagResource) -> Output[pl.DataFrame]:
    t0 = time.perf_counter()
    notes: dict = {}
    rows = refresh.scan_pages(docs_rag.context(), context.partition_key, mode=config.mode, log=_logger(context),
                              notes=notes)
    counts = refresh.page_counts(rows)
    notable = [r for r in rows if r["status"] != "unchanged"]
    extra = {f"scan_{k}": (v if isinstance(v, (int, float, str)) else MetadataValue.json(v)) for k, v in notes.items()}
    return Output(pl.DataFrame(rows, schema=PAGES_SCHEMA, orient="row") if rows else pl.DataFrame(schema=PAGES_SCHEMA),
                  metadata={**{f"pages_{k}": v for k, v in counts.items()}, **extra, "mode": config.mode,
                            "seconds": round(time.perf_counter() - t0, 3),
                            "pages": _md_table(notable, ["status", "path", "title", "error"])})


@asset(**COMMON, io_manager_key="parquet_io", kinds={"python", "polars"},
       description="Chunks of new and changed pages (heading boundaries, model token budget), with parent links.")
def chunks(context: AssetExecutionContext, docs_rag: DocsRagResource, scraped_pages: pl.DataFrame) -> Output[pl.DataFrame]:
    t0 = time.perf_counter()
    rows = refresh.build_chunks(docs_rag.context(), context.partition_key, _rows(scraped_pages), log=_logger(context))
    df = pl.DataFrame(rows, schema=CHUNKS_SCHEMA) if rows else pl.DataFrame(schema=CHUNKS_SCHEMA)
    tokens = df["token_count"].to_list()
    return Output(df, metadata={"chunks": len(rows), "seconds": round(time.perf_counter() - t0, 3),
                                "tokens_max": max(tokens, default=0),
                                "tokens_mean": round(sum(tokens) / len(tokens), 1) if tokens else 0.0})


@asset(**COMMON, **WRITER, io_manager_key="parquet_io", kinds={"python", "polars"},
       description="A vector per chunk: from the cache (model, sha256 of text) or from the embedding model.")
def embeddings(context: AssetExecutionContext, docs_rag: DocsRagResource, chunks: pl.DataFrame) -> Output[pl.DataFrame]:
    t0 = time.perf_counter()
    ctx = docs_rag.context()
    rows = refresh.embed_rows(ctx, _rows(chunks), log=_logger(context))
    df = pl.DataFrame(rows, schema=EMBEDDINGS_SCHEMA) if rows else pl.DataFrame(schema=EMBEDDINGS_SCHEMA)
    embedded = int((~df["from_cache"]).sum()) if rows else 0
    return Output(df, metadata={"chunks_embedded": embedded, "chunks_cached": len(rows) - embedded,
                                "model": ctx.embedder.name, "seconds": round(time.perf_counter() - t0, 3)})


@asset(**COMMON, **WRITER, kinds={"lancedb"},
       description="The LanceDB table (vector + full-text index): one merge_insert per refresh, then optimize. "
                   "Writes hold the storage's writer lock (an OS file lock: it dies with its process).")
def lancedb_chunks(context: AssetExecutionContext, docs_rag: DocsRagResource, embeddings: pl.DataFrame,
                   scraped_pages: pl.DataFrame) -> MaterializeResult:
    t0 = time.perf_counter()
    ctx = docs_rag.context()
    pages = _rows(scraped_pages)
    rows = _rows(embeddings)
    w = refresh.write_index(ctx, context.partition_key, rows, pages, log=_logger(context))
    summary = refresh.refresh_stats(pages, rows, w).summary()
    seconds = {"index": round(time.perf_counter() - t0, 3)}
    for key in ("scraped_pages", "chunks", "embeddings"):
        ev = context.instance.get_latest_materialization_event(AssetKey(key))
        mat = ev.asset_materialization if ev else None
        if mat and mat.partition == context.partition_key and "seconds" in mat.metadata:
            seconds[key] = float(mat.metadata["seconds"].value)
    summary["seconds"] = round(sum(seconds.values()), 3)
    return MaterializeResult(metadata={
        **summary, "table": w["table"], "table_version": w["table_version"],
        **{k: w[k] for k in ("ann_index", "fts_index", "optimize", "version_tag") if k in w},
        **({"sources_pruned": MetadataValue.json(w["sources_pruned"])} if w["sources_pruned"] else {}),
        "seconds_by_stage": MetadataValue.json(seconds),
        "summary": MetadataValue.json(summary),
    })


ingest_assets = [scraped_pages, chunks, embeddings, lancedb_chunks]
