"""Asset checks that gate quality of the index."""


from dagster import (AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, AssetKey, AssetRecordsFilter,
                     asset_check)

from ..store import sql_str
from .assets import lancedb_chunks, scraped_pages
from .resources import DocsRagResource


def _partition(context: AssetCheckExecutionContext) -> str | None:
    try:
        return context.partition_key
    except Exception:  # noqa: BLE001 - an unpartitioned check run covers every source
        return None


@asset_check(asset=lancedb_chunks, blocking=True,
             description="The source has chunks; every chunk has text, a URL and a title; no chunk exceeds the "
                         "embedding window.")
def chunks_are_well_formed(context: AssetCheckExecutionContext, docs_rag: DocsRagResource) -> AssetCheckResult:
    ctx = docs_rag.context()
    src = _partition(context)
    rows = ctx.chunks.rows(f"source = {sql_str(src)}" if src else None)
    window = ctx.embedder.max_tokens
    bad = [r["chunk_id"] for r in rows if not r["text"].strip() or not r["url"] or not r["title"]]
    too_long = [r["chunk_id"] for r in rows if r["token_count"] > window]
    # a source with nothing indexed answers nothing: an empty folder, a path or globs that match no
    # document, a site whose every page failed; say so rather than report a source that is "done"
    empty = "" if rows else "no chunks: the source has no indexed document; check its [DISCOVER] and [PARSE] lines"
    return AssetCheckResult(passed=bool(rows) and not bad and not too_long,
                            severity=AssetCheckSeverity.ERROR, description=empty or None,
                            metadata={"chunks": len(rows), "missing_text_url_or_title": len(bad),
                                      "over_window": len(too_long), "window": window,
                                      "examples": ", ".join((bad + too_long)[:5]) or "none"})


@asset_check(asset=lancedb_chunks, description="Every parent_id points to a chunk that exists.")
def parent_links_resolve(context: AssetCheckExecutionContext, docs_rag: DocsRagResource) -> AssetCheckResult:
    ctx = docs_rag.context()
    src = _partition(context)
    rows = ctx.chunks.rows(f"source = {sql_str(src)}" if src else None)
    ids = {r["chunk_id"] for r in rows}
    dangling = [r["chunk_id"] for r in rows if r["parent_id"] and r["parent_id"] not in ids]
    roots = sum(1 for r in rows if not r["parent_id"])
    return AssetCheckResult(passed=not dangling, severity=AssetCheckSeverity.WARN,
                            metadata={"chunks": len(rows), "dangling_parents": len(dangling), "roots": roots})


@asset_check(asset=scraped_pages,
             description="The last scan reached the whole source: the crawl did not stop early (max_pages, failures "
                         "over error_threshold, a removal over max_removed_share, folders that could not be listed), "
                         "so pages gone from the source were removed.")
def scan_completed(context: AssetCheckExecutionContext) -> AssetCheckResult:
    src = _partition(context)
    records = context.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey("scraped_pages"), asset_partitions=[src] if src else None),
        limit=1).records if src else []
    if not records:
        return AssetCheckResult(passed=True, severity=AssetCheckSeverity.WARN, metadata={"skipped": "no scan"})
    meta = {k: v.value for k, v in records[0].asset_materialization.metadata.items()}
    reason = meta.get("scan_stopped_early") or meta.get("scan_removal_skipped")
    return AssetCheckResult(
        passed=not reason, severity=AssetCheckSeverity.WARN,
        description=f"the scan stopped early: {reason}; nothing was removed from the index" if reason else None,
        metadata={"stopped_early": str(reason or "no"), "pages_failed": int(meta.get("pages_failed") or 0)})


ingest_checks = [chunks_are_well_formed, parent_links_resolve, scan_completed]
