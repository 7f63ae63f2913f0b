"""``refresh_all_sources``: several sources refreshed in one run, their steps in parallel processes.

An asset job runs one partition, i.e. one source, per run. This job is an op graph instead: the
first step yields one dynamic output per source, and each source gets its own chain of steps,
``scan_source[guide]`` → ``chunk_source[guide]`` → ``embed_source[guide]`` → ``write_source[guide]``,
collected by ``summarize_sources``. Under the multiprocess executor (this job's executor) every step
is a process of its own, so one source is scanned while another is parsed or embedded.

Each step is a few lines around the core function its asset calls (refresh.py), and logs that
asset's materialization for the source's partition, with the asset's metadata: lineage and
partition status in the UI show these runs as they show ``refresh_source`` runs.

LanceDB writes stay one at a time with no Dagster setting: ``embed_rows`` (its cache append) and
``write_index`` take the storage's writer lock (an OS file lock, locks.py) in whatever process
they run. Between steps the rows travel as pickled :class:`refresh.Batch` objects through
``run_io`` (files under ``<Dagster IO folder>/runs/<run id>/``, readable by every step process).
"""

import re
import time
from collections.abc import Iterator, Sequence

from dagster import (AssetMaterialization, Config, DynamicOut, DynamicOutput, MetadataValue, OpExecutionContext,
                     Out, Output, graph, multiprocess_executor, op)

from .. import refresh
from .assets import (WRITER, ScrapeConfig, md_table, chunks_metadata, embeddings_metadata, index_metadata,
                     one_line, pages_metadata, progress_log)
from .partitions import add_source_partitions, sources_partitions
from .resources import DocsRagResource

RUN_IO = "run_io"


class SourcesConfig(Config):
    """The sources to refresh, by name; empty: every configured source."""

    sources: list[str] = []


def step_labels(names: Sequence[str]) -> dict[str, str]:
    """A mapping key per source name, unique and made of what Dagster allows (letters, digits, ``_``):
    ``project-docs`` → ``project_docs`` (``_2`` appended where two names would give one key)."""
    out: dict[str, str] = {}
    for name in names:
        base = key = re.sub(r"[^A-Za-z0-9_]", "_", name)
        n = 1
        while key in out.values():
            n += 1
            key = f"{base}_{n}"
        out[name] = key
    return out


def _logger(context: OpExecutionContext, source: str):  # noqa: ANN202
    """Progress lines name their source: one run's log holds several sources' lines."""
    def log(msg: str) -> None:
        line = one_line(f"[{source}] {msg}")
        context.log.info(line)
        progress_log.info(line)

    return log


def _materialized(context: OpExecutionContext, asset: str, source: str, metadata: dict) -> None:
    context.log_event(AssetMaterialization(asset_key=asset, partition=source, metadata=metadata))


@op(out=DynamicOut(str), description="One output per source to refresh (run config `sources`, default all); "
                                     "adds missing `sources` partitions.")
def source_names(context: OpExecutionContext, config: SourcesConfig, docs_rag: DocsRagResource) -> Iterator[DynamicOutput]:
    cfg = docs_rag.context().config
    names = list(dict.fromkeys(config.sources)) or [s.name for s in cfg.sources]
    for name in names:
        cfg.source(name)  # an unknown name fails here, before any work
    known = set(context.instance.get_dynamic_partitions(sources_partitions.name))
    if [n for n in names if n not in known]:
        add_source_partitions(context.instance, cfg, names)  # another process may add them at the same moment
    for name, key in step_labels(names).items():
        yield DynamicOutput(name, mapping_key=key)


@op(out=Out(io_manager_key=RUN_IO), description="scraped_pages of one source: scan, statuses, parse.")
def scan_source(context: OpExecutionContext, config: ScrapeConfig, docs_rag: DocsRagResource,
                source: str) -> refresh.Batch:
    t0 = time.perf_counter()
    notes: dict = {}
    rows = refresh.scan_pages(docs_rag.context(), source, mode=config.mode, log=_logger(context, source), notes=notes)
    seconds = time.perf_counter() - t0
    _materialized(context, "scraped_pages", source,
                  pages_metadata(rows, notes=notes, mode=config.mode, seconds=seconds))
    return refresh.Batch(source).next("scraped_pages", rows, seconds)


@op(out=Out(io_manager_key=RUN_IO), description="chunks of one source: new and changed pages chunked.")
def chunk_source(context: OpExecutionContext, docs_rag: DocsRagResource, pages: refresh.Batch) -> refresh.Batch:
    t0 = time.perf_counter()
    rows = refresh.build_chunks(docs_rag.context(), pages.source, pages.rows, log=_logger(context, pages.source))
    seconds = time.perf_counter() - t0
    _materialized(context, "chunks", pages.source, chunks_metadata(rows, seconds=seconds))
    return pages.next("chunks", rows, seconds)


@op(**WRITER, out=Out(io_manager_key=RUN_IO), description="embeddings of one source: vectors from the cache "
                                                         "or the model (the cache append holds the writer lock).")
def embed_source(context: OpExecutionContext, docs_rag: DocsRagResource, chunks: refresh.Batch) -> refresh.Batch:
    t0 = time.perf_counter()
    ctx = docs_rag.context()
    rows = refresh.embed_rows(ctx, chunks.rows, log=_logger(context, chunks.source))
    seconds = time.perf_counter() - t0
    _materialized(context, "embeddings", chunks.source,
                  embeddings_metadata(rows, model=ctx.embedder.name, seconds=seconds))
    return chunks.next("embeddings", rows, seconds)


@op(**WRITER, out=Out(io_manager_key=RUN_IO), description="lancedb_chunks of one source: the index write, "
                                                         "under the writer lock.")
def write_source(context: OpExecutionContext, docs_rag: DocsRagResource, embedded: refresh.Batch,
                 pages: refresh.Batch) -> dict:
    t0 = time.perf_counter()
    source = pages.source
    w = refresh.write_index(docs_rag.context(), source, embedded.rows, pages.rows, log=_logger(context, source))
    seconds = {**embedded.seconds, "index": round(time.perf_counter() - t0, 3)}
    metadata = index_metadata(refresh.refresh_stats(pages.rows, embedded.rows, w).summary(), w, seconds)
    _materialized(context, "lancedb_chunks", source, metadata)
    return {"source": source, **metadata["summary"].value}


@op(out=Out(io_manager_key=RUN_IO), description="One table of what each source's refresh did.")
def summarize_sources(context: OpExecutionContext, summaries: list[dict]) -> Output[list[dict]]:
    rows = refresh.sources_overview(summaries)
    cols = ["source", "pages", "changed", "chunks", "embedded", "written", "seconds"]
    return Output(summaries, metadata={"sources": md_table(rows, cols), "summaries": MetadataValue.json(summaries)})


@graph
def refresh_sources() -> None:
    def one(source):  # noqa: ANN001, ANN202 - composition: the arguments are Dagster output handles
        pages = scan_source(source)
        return write_source(embed_source(chunk_source(pages)), pages)

    summarize_sources(source_names().map(one).collect())


refresh_all_job = refresh_sources.to_job(
    name="refresh_all_sources", executor_def=multiprocess_executor,
    description="Refresh several sources in one run (run config ops.source_names.config.sources, default all), "
                "each source's scan → chunk → embed → write in steps of their own, run in parallel processes "
                "(execution.config.max_concurrent); LanceDB writes wait for the storage's writer lock. Logs the "
                "ingest assets' materializations for each source's partition.")
