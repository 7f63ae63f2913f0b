"""The incremental refresh, one function per stage. Plain Python: the Dagster assets call these.

scan → parse (pages) → chunk → embed (cached) → write (one merge_insert) → optimize.
Rows are plain dicts so the asset layer can store them as Parquet.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import shutil
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .chunking import Budget, chunk_page, logical_path, metadata_tags, page_parents
from .context import Context
from .embedding import EmbeddingError, text_sha, vector_problem
from .locks import source_lock, writer_lock
from .metadata_rules import derive_metadata
from .parsing import ParseError, RedirectPage, UnpublishedPage, parse_document, unpublished
from .records import Chunk, ParsedPage, Section
from .sources import remove_state, source_for, state_of_other_kinds
from .sources.base import IGNORING_ANCHORS, SOURCE_KEYS, SourceError

Log = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


SCAN_MODES = ("refresh", "reparse", "force")

PAGE_COLUMNS = ["source", "page_url", "path", "format", "content_hash", "status", "title", "sections",
                "metadata", "error", "scan_id", "index_state", "made_with"]


class StaleInputsError(RuntimeError):
    """The write's inputs were not computed together, or not against the index as it is now."""


@dataclass(slots=True)
class RefreshStats:
    pages_new: int = 0
    pages_changed: int = 0
    pages_unchanged: int = 0
    pages_deleted: int = 0
    pages_skipped: int = 0
    pages_failed: int = 0
    chunks_total: int = 0
    chunks_embedded: int = 0
    chunks_cached: int = 0
    rows_written: int = 0
    rows_deleted: int = 0
    rows_pruned: int = 0
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The numbers of ``docs-rag ingest --json`` and the lancedb_chunks metadata."""
        d = asdict(self)
        del d["stage_seconds"]
        return d


def refresh_stats(pages: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]],
                  written: dict[str, Any]) -> RefreshStats:
    """What a refresh did, from its page rows, embedded rows and :func:`write_index` result."""
    counts = page_counts(pages)
    embedded = sum(not r["from_cache"] for r in rows)
    return RefreshStats(pages_new=counts["new"], pages_changed=counts["changed"],
                        pages_unchanged=counts["unchanged"], pages_deleted=counts["deleted"],
                        pages_skipped=counts["skipped"], pages_failed=counts["failed"], chunks_total=written["chunks_total"],
                        chunks_embedded=embedded, chunks_cached=len(rows) - embedded,
                        rows_written=written["rows_written"], rows_deleted=written["rows_deleted"],
                        rows_pruned=written.get("rows_pruned", 0))


@dataclass(frozen=True)
class Batch:
    """One source's rows on their way from one stage to the next, with the seconds each stage took so
    far: what the ``refresh_all_sources`` job hands from step to step (pickled, so steps in other
    processes can read it). The rows are those the stage functions take and return."""

    source: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def next(self, stage: str, rows: Sequence[dict[str, Any]], seconds: float) -> Batch:
        """The batch a stage made of this one: its rows, and what it took added to the seconds."""
        return Batch(self.source, list(rows), {**self.seconds, stage: round(seconds, 3)})


def sources_overview(summaries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per refreshed source (``summaries``: :meth:`RefreshStats.summary` plus ``source``):
    pages seen, chunks indexed, chunks embedded, seconds; for a run that refreshed several."""
    kinds = ("new", "changed", "unchanged", "deleted", "skipped", "failed")
    return [{"source": s["source"], "pages": sum(s.get(f"pages_{k}", 0) for k in kinds),
             "changed": s.get("pages_new", 0) + s.get("pages_changed", 0) + s.get("pages_deleted", 0),
             "chunks": s.get("chunks_total", 0), "embedded": s.get("chunks_embedded", 0),
             "written": s.get("rows_written", 0), "seconds": s.get("seconds", 0.0)}
            for s in sorted(summaries, key=lambda s: s["source"])]


def scan_pages(ctx: Context, source_name: str, *, mode: str = "refresh", log: Log = _quiet,
               notes: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Scan a source against what is indexed; parse new and changed pages.

    One row per page with ``status`` new | changed | unchanged | deleted | skipped (a page that
    could not be parsed: logged with the reason; its indexed chunks are kept) | failed (a page the
    source could not read, e.g. no permission: its indexed chunks are kept too). ``mode`` is
    ``refresh`` (only what changed), ``reparse`` (re-parse every page from the source's cache, no
    network) or ``force`` (fetch and process everything again); a ``refresh`` after a change of
    settings or a restore becomes one of these, or ``resync`` (see :func:`_reparse_mode`). The
    source's own counts and reasons are added to ``notes``.
    """
    if mode not in SCAN_MODES:
        raise ValueError(f"mode: {mode!r} is not one of {', '.join(SCAN_MODES)}")
    src_cfg = ctx.config.source(source_name)
    with source_lock(ctx.config.storage_path, source_name, purpose=f"scan of {source_name}", log=log):
        mark = _restore_mark(ctx, source_name)  # before the rows: a restore marks after it wrote them
        state = ctx.chunks.page_state(source_name)
        if mode == "refresh" and state:
            mode = _mode_for_changed_settings(ctx, source_name, log=log, notes=notes)
        remove_state_of_other_kinds(ctx, source_name, log=log)
        source = source_for(src_cfg, workdir=ctx.source_dir(source_name))
        source.own_folders = own_folders(ctx.config)  # a local source never reads them as documents
        scan = source.scan(state, log=log, mode=mode)
    if scan.complete and state and not scan.pages:
        raise SourceError(
            f"sources.{source_name}: the scan found no page, but {len(state)} are indexed; nothing was removed. "
            "Check that the folder is mounted, the repository checked out and the include/allow patterns still "
            f"match; to drop every page on purpose, remove the source from the config ({ctx.config.path}) and "
            "its rows are pruned on the next run")
    stamp = {"scan_id": uuid.uuid4().hex, "index_state": index_state(state, restored=mark),
             MADE_WITH: settings_key(page_settings(ctx, source_name))}
    if notes is not None:
        notes.update(scan.notes)
        if not scan.complete:
            notes["removal_skipped"] = "the scan stopped early, so no page was removed"
    rows: list[dict[str, Any]] = []
    for page in scan.pages:
        row = {"source": source_name, "page_url": page.page_url, "path": page.path, "format": page.format,
               "content_hash": page.content_hash, "status": page.status, "title": None, "sections": None,
               "metadata": None, "error": page.error, **stamp}
        if page.status in ("new", "changed"):
            try:
                parsed = parse_document(page.body or "", fmt=page.format, path=page.path,
                                        content_selector=src_cfg.content_selector,
                                        heading_anchors=src_cfg.heading_anchors)
                # (MkDocs and VitePress publish every page whatever its front matter says: IGNORING_ANCHORS)
                if page.format in ("markdown", "mdx") and not src_cfg.index_drafts \
                        and src_cfg.heading_anchors not in IGNORING_ANCHORS \
                        and (draft := unpublished(parsed.metadata, path=page.path)) is not None:
                    raise draft
                if not any(s.text.strip() for s in parsed.sections):
                    if page.page_url not in state:
                        raise ParseError(f"{page.path}: no text found; add content or exclude the file")
                    # it parsed, and says nothing any more: its old chunks must not answer for it
                    row.update(status="deleted", error="no text any more: its indexed chunks are removed")
                    log(f"[PARSE] {page.path}: no text any more: its indexed chunks are removed")
                    rows.append(row)
                    continue
                claimed = {k: v for k, v in parsed.metadata.items() if k not in SOURCE_KEYS}
                meta = {**claimed, **page.metadata}  # what the source records is not the document's to say
                meta.update(derive_metadata(src_cfg.metadata_rules, path=page.path, frontmatter=meta))
                row.update(title=parsed.title, metadata=metadata_json(meta),
                           sections=json.dumps([asdict(s) for s in parsed.sections]))
                log(f"[PARSE] {page.path}: {page.status}, {len(parsed.sections)} sections, title {parsed.title!r}")
            except (RedirectPage, UnpublishedPage) as exc:  # a moved page's stub, a draft: never indexed, what it held goes
                if page.page_url in state:
                    row.update(status="deleted", error=f"{exc}: its indexed chunks are removed")
                    log(f"[PARSE] {page.path}: {exc}: its indexed chunks are removed")
                else:
                    row.update(status="skipped", error=str(exc))
                    log(f"[PARSE] {page.path}: skipped: {exc}")
            except ParseError as exc:
                row.update(status="skipped", error=str(exc))
                log(f"[PARSE] {page.path}: skipped: {exc}")
            except Exception as exc:  # a parser bug must not fail the run; say where
                row.update(status="skipped", error=f"{type(exc).__name__}: {exc}")
                log(f"[PARSE] {page.path}: skipped: parser failed with {type(exc).__name__}: {exc}")
        rows.append(row)
    for url in scan.deleted if scan.complete else []:
        rows.append({"source": source_name, "page_url": url, "path": None, "format": None, "content_hash": None,
                     "status": "deleted", "title": None, "sections": None, "metadata": None, "error": None,
                     **stamp})
    return rows


SETTINGS_FILE = "settings.json"


#: the source keys that shape its indexed pages without changing their bytes or URLs: a change of
#: one re-parses the source (see :func:`page_settings`)
SHAPING_KEYS = ("kind", "max_bytes", "content_selector", "asciidoc_attributes", "heading_anchors", "metadata",
                "metadata_rules", "index_drafts")
#: every other source key, and why a change of it needs no re-parse; a new key of ``SourceConfig``
#: must join one of the two (``test_config`` checks), so that none is forgotten
NOT_SHAPING_KEYS = {
    "name": "another name is another source",
    "cron": "when, not what", "path": "which files: a scan sees them",
    "include": "which files: a scan sees them", "exclude": "which files: a scan sees them",
    "base_url": "changes the URLs: pages are new", "url_template": "changes the URLs: pages are new",
    "url_rules": "changes the URLs: pages are new", "front_matter_urls": "changes the URLs: pages are new", "url_paths": "changes the URLs: pages are new", "seed_urls": "which pages: a crawl sees them",
    "sitemaps": "which pages: a crawl sees them", "allow_patterns": "which pages: a crawl sees them",
    "deny_patterns": "which pages: a crawl sees them", "allowed_domains": "which pages: a crawl sees them",
    "max_pages": "which pages: a crawl sees them", "max_depth": "which pages: a crawl sees them",
    "respect_robots": "which pages: a crawl sees them", "delay_seconds": "how politely, not what",
    "timeout_seconds": "how patiently, not what", "max_retries": "how patiently, not what",
    "error_threshold": "when a crawl fails, not what it indexes",
    "max_removed_share": "when a refresh is refused, not what it indexes",
    "user_agent": "who asks, not what", "repo": "which files: a sync sees them",
    "branch": "which files: a sync sees them", "subpath": "which files: a sync sees them",
    "token_env": "how to fetch, not what",
}


#: the code that turns a page's bytes into chunks (relative to the package folder): a change of it
#: (an upgrade of docs-rag) re-parses every source at its next refresh, as a change of settings does
PARSER_CODE = ("parsing/*.py", "chunking.py", "records.py", "table_row.py", "unicode_text.py", "words.py",
               "yaml_data.py", "metadata_rules.py")
#: the key of :func:`page_settings` that holds :func:`parser_fingerprint`
PARSER_KEY = "parser"
#: the key ``restore`` adds to a source's recorded settings: its restored rows were made by settings
#: and a parser nobody recorded, so the next refresh re-parses it
RESTORED_KEY = "restored"
#: the column of a scan's pages and of the chunk rows that names (:func:`settings_key`) the settings
#: and parser they were parsed and chunked with; an older docs-rag's pages and rows have none
MADE_WITH = "made_with"
#: the key a write adds to the recorded settings when its pages or chunks were made with other
#: settings or another docs-rag than the writing process's (a run finished after a config edit or an
#: upgrade: a re-execution from failure, ``lancedb_chunks`` materialized alone), so the next refresh
#: re-parses what that write stored; before, the write recorded its own settings as if they had made them
OTHER_INPUTS_KEY = "written_from_other_settings"


def parser_fingerprint(root: Path | None = None) -> str:
    """A hash of the source files in :data:`PARSER_CODE` under ``root`` (the package folder)."""
    root = root or Path(__file__).parent
    h = hashlib.sha256()
    for pattern in PARSER_CODE:
        for f in sorted(root.glob(pattern)):
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def settings_key(settings: dict[str, Any]) -> str:
    """A short digest of :func:`page_settings`, stamped on the pages and chunks made with them."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


@functools.cache
def _this_parser() -> str:
    """:func:`parser_fingerprint` of the code this process runs, computed once."""
    return parser_fingerprint()


def page_settings(ctx: Context, source_name: str) -> dict[str, Any]:
    """The settings that shape a source's indexed pages without changing their bytes or URLs: what
    is read of a file, how it is parsed, which metadata its chunks carry, how it is chunked, and
    the code that parses and chunks it (:func:`parser_fingerprint`)."""
    src = ctx.config.source(source_name)
    shaping = {k: getattr(src, k) for k in SHAPING_KEYS}
    shaping["metadata_rules"] = [r.model_dump(mode="json") for r in src.metadata_rules]
    chunking = ctx.config.chunking.model_dump(mode="json")
    emb = ctx.config.embedding
    if emb.provider == "openai":  # its window sizes the chunks (a local model's comes with its files, which name the table)
        from .embedding import OPENAI_DEFAULT_MAX_TOKENS

        chunking["window"] = emb.max_tokens or OPENAI_DEFAULT_MAX_TOKENS
    return json.loads(json.dumps({**shaping, "chunking": chunking, PARSER_KEY: _this_parser()},
                                 default=str, sort_keys=True))


def _stored_settings(ctx: Context, source_name: str) -> dict[str, Any] | None:
    try:
        raw = json.loads((ctx.source_dir(source_name) / SETTINGS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) else None


def _write_settings(ctx: Context, source_name: str, settings: dict[str, Any]) -> None:
    """Write a source's recorded settings (OSError when the folder cannot be written)."""
    from .files import atomic_write

    atomic_write(ctx.source_dir(source_name) / SETTINGS_FILE, json.dumps(settings, sort_keys=True, indent=1).encode())


def _save_settings(ctx: Context, source_name: str, *, restored: Any = None, other: bool = False) -> None:
    """Record the settings the source's index was written with (after a write, under the writer
    lock); ``restored``: a restore's mark to keep (one that came after the write's scan); ``other``:
    the write's pages or chunks were made with other settings than these (:data:`OTHER_INPUTS_KEY`)."""
    keep = {} if restored is None else {RESTORED_KEY: restored}
    if other:
        keep[OTHER_INPUTS_KEY] = True
    try:
        _write_settings(ctx, source_name, {**page_settings(ctx, source_name), **keep})
    except OSError:  # unrecorded, the next change of settings is not noticed; the index is fine
        pass


def _mark_restored(ctx: Context, version: int, *, log: Log) -> None:
    """After a restore, add :data:`RESTORED_KEY` to the recorded settings of every source in the
    table: its restored rows may have been made with other settings or another parser, so its next
    refresh re-parses every page (a git or web source fetched first, see :func:`_reparse_mode`) and
    equals a clean ingest of the source as it is then. Idempotent: a restore run again whose restore
    entry is served already (a killed one logged its version before it got here) marks them again."""
    for name in sorted(ctx.chunks.source_counts()):
        try:
            _write_settings(ctx, name, {**(_stored_settings(ctx, name) or {}), RESTORED_KEY: version})
        except OSError as exc:
            log(f"[RESTORE] warning: could not record the restore in {ctx.source_dir(name) / SETTINGS_FILE} "
                f"({exc}); run `docs-rag ingest --source {name} --mode reparse` so that its pages are parsed again")


def _mode_for_changed_settings(ctx: Context, source_name: str, *, log: Log,
                               notes: dict[str, Any] | None) -> str:
    """``refresh``, or ``reparse`` (``force`` for a web source whose ``max_bytes`` changed: its cached
    bodies were cut at the old limit) when :func:`page_settings` changed since the last write: a
    page's status follows its bytes, so raising ``max_bytes`` or adding ``metadata`` reached no page
    that was indexed already."""
    stored = _stored_settings(ctx, source_name)
    if stored is None:
        return _mode_for_unrecorded_settings(ctx, source_name, log=log, notes=notes)
    now = page_settings(ctx, source_name)
    restored = stored.pop(RESTORED_KEY, None)
    other = stored.pop(OTHER_INPUTS_KEY, None)
    if stored:
        stored.setdefault("kind", now["kind"])  # recorded before the kind was: not a change
    if restored is None and not other and (not stored or stored == now):
        return "refresh"
    # recorded before the parser was (an older docs-rag): its parser is unknown, so it counts as changed
    changed = sorted(k for k in set(stored) | set(now) if stored.get(k) != now.get(k)) if stored else []
    kind = ctx.config.source(source_name).kind
    mode = _reparse_mode(kind, changed, restored=restored is not None)
    how = {"force": "every page is downloaded again (a new kind, or its cached copy was cut at the old max_bytes)",
           "resync": ("the repository is fetched and every file of its newest commit is parsed again" if kind == "git"
                      else "every page is requested again (conditionally: an unchanged page is parsed from its "
                      "cached copy) and parsed again") + "; unchanged texts keep their embeddings",
           "reparse": "every page is read and parsed again, without a download; unchanged texts keep their "
                      "embeddings"}[mode]
    why = [f"the index was restored to version {restored}, whose rows may have been made with other settings "
           "or another docs-rag"] if restored is not None else []
    if other:
        why.append("the last write stored pages parsed or chunked with other settings or by another docs-rag than "
                   "the one that wrote them (a run finished after a config change or an upgrade)")
    if PARSER_KEY in changed:
        why.append("the parsing or chunking code changed since the last ingest (docs-rag was upgraded)")
    if set(changed) - {PARSER_KEY}:
        why.append(f"{', '.join(k for k in changed if k != PARSER_KEY)} changed since the last ingest")
    log(f"[DISCOVER] {source_name}: {'; '.join(why)}: {how} (mode {mode})")
    if notes is not None:
        notes["settings_changed"] = (changed + ([RESTORED_KEY] if restored is not None else [])
                                     + ([OTHER_INPUTS_KEY] if other else []))
    return mode


def _reparse_mode(kind: str, changed: Sequence[str], *, restored: bool) -> str:
    """How a source whose pages must all be parsed again is scanned. ``force`` for a web source that
    has no page cache to re-parse (it became web) or has it cut at an old ``max_bytes``. ``resync``
    after a restore of a git or web source: its stored copy (the clone's last synced commit, the page
    cache) is what the replaced version was made from, not the source as it is now (fixed after the
    restore, or changed upstream since), so it is fetched first. ``reparse`` otherwise, and for a
    local source, whose files a reparse reads as they are now."""
    if kind == "web" and {"max_bytes", "kind"} & set(changed):
        return "force"
    return "resync" if restored and kind != "local" else "reparse"


def _mode_for_unrecorded_settings(ctx: Context, source_name: str, *, log: Log,
                                  notes: dict[str, Any] | None) -> str:
    """The mode of a source whose pages are indexed but whose settings were never recorded (no
    ``settings.json``: written by a docs-rag from before it kept one, or its ``sources/`` folder was
    lost or damaged): the parser and settings that made its rows are unknown, so ``reparse``, once (the
    write then records them). Before, such a source kept the old parser's chunks for good, and its
    first refresh recorded the current fingerprint as if it had made them. A web source with no cached
    copy (a machine new to shared storage) has nothing to re-parse from: a plain refresh."""
    if ctx.config.source(source_name).kind == "web":
        from .sources.web import has_cache

        if not has_cache(ctx.source_dir(source_name)):
            return "refresh"
    log(f"[DISCOVER] {source_name}: the index holds its pages but no record of the settings and parsing code that "
        f"made them (no {SETTINGS_FILE}: written by a docs-rag from before it kept one, or its folder was lost): "
        "every page is read and parsed again, without a download; unchanged texts keep their embeddings (mode reparse)")
    if notes is not None:
        notes["settings_changed"] = ["unrecorded"]
    return "reparse"


def index_state(state: dict[str, str], *, restored: Any = None) -> str:
    """A fingerprint of what is indexed for a source (page_url → content_hash), followed by
    ``+restored=<mark>`` when the scan found the source marked by a restore (:data:`RESTORED_KEY`)."""
    digest = hashlib.sha256(json.dumps(sorted(state.items())).encode()).hexdigest()[:16]
    return digest if restored is None else f"{digest}{_MARK_SEP}{json.dumps(restored)}"


_MARK_SEP = "+restored="


def _restore_mark(ctx: Context, source_name: str) -> Any:
    """The :data:`RESTORED_KEY` mark of the source's recorded settings (None: not marked)."""
    return (_stored_settings(ctx, source_name) or {}).get(RESTORED_KEY)


def page_counts(pages: Sequence[dict[str, Any]]) -> dict[str, int]:
    out = {k: 0 for k in ("new", "changed", "unchanged", "deleted", "skipped", "failed")}
    for p in pages:
        out[p["status"]] += 1
    return out


def build_chunks(ctx: Context, source_name: str, pages: Sequence[dict[str, Any]], *,
                 log: Log = _quiet) -> list[dict[str, Any]]:
    """Chunk the new and changed pages; re-link first chunks of unchanged pages whose parent moved."""
    src_cfg = ctx.config.source(source_name)
    emb = ctx.embedder
    budget = Budget(window=emb.max_tokens, target=ctx.config.chunking.target_tokens,
                    overlap=ctx.config.chunking.overlap_tokens)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    chunks: list[Chunk] = []
    for p in pages:
        if p["status"] not in ("new", "changed"):
            continue
        parsed = ParsedPage(title=p["title"], metadata=json.loads(p["metadata"] or "{}"),
                            sections=[Section(headings=tuple(s["headings"]), anchor=s["anchor"], level=s["level"],
                                              text=s["text"],
                                              targets=tuple((int(o), str(a)) for o, a in s.get("targets") or ()))
                                      for s in json.loads(p["sections"])])
        meta = {**src_cfg.metadata, "section": _top_section(p["path"])}
        page_chunks = chunk_page(parsed, source=source_name, page_url=p["page_url"], content_hash=p["content_hash"],
                                 updated_at=now, budget=budget, count=emb.count_tokens, metadata=meta)
        cap = ctx.config.chunking.max_chunks_per_page
        if len(page_chunks) > cap:
            log(f"[CHUNK] warning: {p['path']}: {len(page_chunks)} chunks, over chunking.max_chunks_per_page "
                f"({cap}): only its first {cap} are indexed; raise chunking.max_chunks_per_page to index all of it")
            page_chunks = page_chunks[:cap]
        log(f"[CHUNK] {p['path']}: {len(page_chunks)} chunks")
        chunks.extend(page_chunks)

    # cross-file parents: a page's first chunk points to its parent page's first chunk
    live = {p["page_url"]: p["path"] for p in pages if p["status"] != "deleted" and p["path"]}
    parents = page_parents(live)
    first = ctx.chunks.first_chunks(source_name)
    for c in chunks:
        if c.chunk_index == 0:
            first[c.page_url] = c.chunk_id
    for url in [p["page_url"] for p in pages if p["status"] == "deleted"]:
        first.pop(url, None)
    for c in chunks:
        if c.chunk_index == 0:
            c.parent_id = first.get(parents.get(c.page_url, ""))
    scan_id = next((p.get("scan_id") for p in pages), None)
    made = settings_key(page_settings(ctx, source_name))
    rows = [{**chunk_row(c), "scan_id": scan_id, MADE_WITH: made} for c in chunks]
    # unchanged pages whose parent page changed: rewrite only the first chunk's parent_id
    touched = {p["page_url"] for p in pages if p["status"] in ("new", "changed", "deleted")}
    relink = [u for u, parent in parents.items() if parent in touched and u not in touched]
    relink += [u for u in live if u not in parents and u not in touched]  # parent may have been deleted
    if relink:
        from .store import sql_in, sql_str

        # only the first chunks whose parent_id is not the one wanted are read whole: every page without
        # a parent page is a candidate at every refresh (a source without a root index: all of them)
        linked = ctx.chunks.first_parents(source_name)
        relink = [u for u in relink if u in linked and linked[u] != first.get(parents.get(u, ""))]
    if relink:
        stored = ctx.chunks.rows(f"source = {sql_str(source_name)} AND chunk_index = 0 AND {sql_in('page_url', relink)}")
        for r in stored:
            want = first.get(parents.get(r["page_url"], ""))
            if r["parent_id"] != want:
                r["parent_id"] = want
                r["metadata"] = metadata_json(r["metadata"])
                rows.append({**r, "scan_id": scan_id, MADE_WITH: made})
                log(f"[CHUNK] {r['page_url']}: parent re-linked")
    return rows


def _top_section(path: str | None) -> str:
    if not path:
        return ""
    parts = path.strip("/").split("/")
    return parts[0] if len(parts) > 1 else (logical_path(path) or "index")


def chunk_row(c: Chunk) -> dict[str, Any]:
    """A chunk as a flat row: metadata as JSON text, tags for filtering."""
    d = asdict(c)
    d["tags"] = metadata_tags(c.metadata)
    d["metadata"] = metadata_json(c.metadata)
    return d


def metadata_json(meta: dict[str, Any]) -> str:
    """Metadata as the JSON text stored with a page and its chunks. A YAML ``.nan`` or ``.inf`` (in
    frontmatter, or the config's ``metadata``) is a float JSON has no word for: ``json.dumps`` wrote a
    bare ``NaN``, which the API served and a browser's ``JSON.parse`` refuses (the chat page could not
    open the source). It is stored as the text its tag already shows (``nan``, ``inf``, ``-inf``), so
    every interface reads the same value."""
    return json.dumps(_finite(meta), default=str, sort_keys=True)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


#: batches of the embedder per step of :func:`embed_rows` (a step's vectors are cached together)
EMBED_STEP_BATCHES = 64


def embed_rows(ctx: Context, rows: Sequence[dict[str, Any]], *, log: Log = _quiet) -> list[dict[str, Any]]:
    """Attach a vector to each chunk row: from the cache where the same text was embedded by the same
    model before, else from the model (in batches), stored in the cache step by step, so an ingest
    killed while embedding keeps what it embedded: the next run takes those vectors from the cache.
    Each row's ``vector`` is a float32 numpy array (``from_cache``: whether it came from the cache)."""
    emb = ctx.embedder
    texts = [embedding_text(r) for r in rows]
    shas = [text_sha(t) for t in texts]
    dims = getattr(emb, "dimensions", None)
    cached = ctx.cache.get_many(emb.space, shas)
    unusable = [sha for sha, v in cached.items() if vector_problem(v, dims)]
    for sha in unusable:  # written by a version that did not check (NaN from a server): embedded again
        del cached[sha]
    if unusable:
        log(f"[EMBED] {len(unusable)} cached vectors are unusable (NaN, infinite, all zeros or of another "
            "dimension); their texts are embedded again")
    todo: dict[str, str] = {}
    for sha, t in zip(shas, texts):
        if sha not in cached:
            todo.setdefault(sha, t)
    fresh: dict[str, np.ndarray] = {}
    if todo:
        keys = list(todo)
        # steps of many batches let the model sort texts by length across them (less padding); each
        # step's vectors go into the cache before the next step starts
        step = max(getattr(emb, "batch_size", 32) * EMBED_STEP_BATCHES, 32)
        for i in range(0, len(keys), step):
            part = keys[i:i + step]
            vecs = dict(zip(part, emb.embed([todo[k] for k in part])))
            for k, v in vecs.items():  # never into the cache: a bad vector there fails every later ingest
                problem = vector_problem(v, dims)
                if problem:
                    raise EmbeddingError(f"{emb.name} returned a vector that {problem} for the text "
                                         f"{todo[k][:80]!r}; nothing of this batch was kept: fix the embedding "
                                         "server (or change embedding.model) and ingest again")
            with writer_lock(ctx.config.storage_path, purpose=f"embedding cache write ({emb.name})", log=log):
                ctx.cache.put_many(emb.space, vecs)
            fresh.update(vecs)
            log(f"[EMBED] {min(i + step, len(keys))}/{len(keys)} texts embedded with {emb.name}, kept in the cache")
    out = []
    for r, sha in zip(rows, shas):
        from_cache = sha in cached
        vec = cached[sha] if from_cache else fresh[sha]
        # a float32 array, never a list of Python floats: 384 of them held ~12 KB of objects per chunk,
        # for every chunk of the source at once (the whole source on a first ingest)
        out.append({**r, "vector": np.asarray(vec, dtype=np.float32), "from_cache": from_cache})
    log(f"[EMBED] {len(rows)} chunks: {sum(not r['from_cache'] for r in out)} embedded, "
        f"{sum(r['from_cache'] for r in out)} from cache")
    return out


def embedding_text(r: dict[str, Any]) -> str:
    c = Chunk(**{k: r[k] for k in ("chunk_id", "source", "page_url", "url", "title", "headings", "parent_id",
                                    "chunk_index", "text", "content_hash", "token_count", "updated_at")})
    return c.embedding_text()


def check_inputs(ctx: Context, source_name: str, rows: Sequence[dict[str, Any]],
                 pages: Sequence[dict[str, Any]], *, latest_scan: str | None = None) -> Any:
    """Refuse a write whose inputs were not computed together against the index as it is now.
    Returns the restore mark (:data:`RESTORED_KEY`) the source's settings hold now that its scan did
    not see (a restore landed after the scan), which the write must keep; else None.

    Page statuses are relative to the index at scan time; chunks and vectors must come from that
    same scan. Materializing ``lancedb_chunks`` alone after ``embeddings`` failed (stale vectors of
    an earlier scan), or after another writer changed the source, would drop pages. ``latest_scan``
    is the id of the source's latest recorded scan, where the caller knows it: inputs of an older
    scan are refused even when the index happens to be back in the state they were scanned against
    (a page added by that scan and deleted by a later refresh would come back).
    """
    fix = (f"nothing was written; re-run the whole refresh (`docs-rag ingest --source {source_name}`, "
           "or materialize scraped_pages → chunks → embeddings → lancedb_chunks together)")
    scans = {p.get("scan_id") for p in pages}
    if latest_scan and pages and scans != {latest_scan}:
        raise StaleInputsError(f"{source_name}: the pages are from scan {', '.join(sorted(map(str, scans)))}, but "
                               f"the source was scanned again since (scan {latest_scan}, by another run); {fix}")
    row_scans = {r.get("scan_id") for r in rows}
    if len(scans) > 1 or (rows and row_scans != scans):
        raise StaleInputsError(f"{source_name}: the chunks and vectors were computed from another scan than the "
                               f"pages ({', '.join(sorted(map(str, row_scans)))} vs "
                               f"{', '.join(sorted(map(str, scans)))}); {fix}")
    have = {r["page_url"] for r in rows}
    missing = sorted(p["page_url"] for p in pages if p["status"] in ("new", "changed") and p["page_url"] not in have)
    if missing:
        raise StaleInputsError(f"{source_name}: no chunks for {len(missing)} new or changed page(s) "
                               f"(e.g. {missing[0]}): the embeddings are older than the scan; {fix}")
    states = {str(p.get("index_state")).split(_MARK_SEP, 1)[0] for p in pages}
    if pages and states != {index_state(ctx.chunks.page_state(source_name))}:
        raise StaleInputsError(f"{source_name}: the index changed since the pages were scanned (another refresh "
                               f"wrote this source, or a restore or prune changed it); {fix}")
    # a restore of rows with the same page hashes leaves the states alike: its mark tells it, and the
    # write keeps it, so the next refresh re-parses the restored rows (the write's scan came before them)
    mark = _restore_mark(ctx, source_name)
    scanned = {str(p.get("index_state")).partition(_MARK_SEP)[2] for p in pages}
    return mark if mark is not None and scanned != {json.dumps(mark)} else None


def remove_state_of_other_kinds(ctx: Context, source_name: str, *, log: Log = _quiet) -> list[str]:
    """Delete what the source left in its folder as another kind (the git clone and synced commit of a
    source that is ``local`` now), unless another config file writing to this storage lists a source
    of that name. Returns the names deleted. Call under the source's lock."""
    src = ctx.config.source(source_name)
    found = state_of_other_kinds(src.kind, ctx.source_dir(source_name))
    if not found:
        return []
    from .shared_storage import SiblingConfigUnreadable, sources_of_other_configs

    try:
        other = sources_of_other_configs(ctx.config).get(source_name)
    except SiblingConfigUnreadable as exc:  # it may list this source as its old kind: keep what it left
        log(f"[PRUNE] warning: {exc}")
        return []
    if other is not None:
        return []  # that config may still read them as its kind
    used = _local_paths_inside(ctx, found)
    for path, names in used.items():
        log(f"[PRUNE] source {source_name!r} is a {src.kind} source now, but {path} is kept: the local "
            f"source(s) {', '.join(names)} read from it; move that folder out of {ctx.source_dir(source_name)} "
            "and point their path at it")
    found = [p for p in found if p not in used]
    if not found:
        return []
    remove_state(found)
    names = [p.name for p in found]
    log(f"[PRUNE] source {source_name!r} is a {src.kind} source now: deleted what it kept as another kind "
        f"({', '.join(names)} in {ctx.source_dir(source_name)})")
    return names


def _local_paths_inside(ctx: Context, paths: list[Path]) -> dict[Path, list[str]]:
    """Those of ``paths`` that hold (or are) the folder a configured local source reads, with the
    names of those sources: a git clone kept as the checkout a source now reads must not be deleted.
    A path counts where the source's folder is inside it once links are followed (a link itself is
    not: deleting it leaves what it points to), and where the configured path, as written, goes
    through it (``<storage>/sources/acme/clone/checkout`` with ``clone`` a link: deleting the link
    would take the source's path away)."""
    out: dict[Path, list[str]] = {}
    for s in ctx.config.sources:
        if s.kind != "local" or s.path is None:
            continue
        written = os.path.abspath(s.path)
        try:
            target = Path(s.path).resolve()
        except OSError:
            target = None
        for p in paths:
            try:
                inside = target is not None and not p.is_symlink() and (
                    target == p.resolve() or target.is_relative_to(p.resolve()))
            except OSError:
                inside = False
            if inside or _lexically_inside(written, os.path.abspath(p)):
                out.setdefault(p, []).append(s.name)
    return out


def _lexically_inside(path: str, folder: str) -> bool:
    """Whether absolute ``path`` is ``folder`` or below it, as written (no link followed)."""
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # another drive
        return False


#: the assets whose partitions the Parquet IO manager keeps as ``<io folder>/<asset>/<source>.parquet``
IO_ASSETS = ("scraped_pages", "chunks", "embeddings")


def io_folder(config) -> str:  # noqa: ANN001 - a Config
    """Where the Parquet between assets goes: ``DOCS_RAG_DAGSTER_IO`` (a folder or an object-store URI,
    for runs whose steps do not share a disk, docs/deploy.md), by default ``<storage>/dagster_io``."""
    from .environment import dagster_io  # checked: a bad one is a ConfigError naming the variable

    return dagster_io() or str(Path(config.storage_path) / "dagster_io")


def own_folders(config) -> list[Path]:  # noqa: ANN001 - a Config
    """The folders docs-rag writes on this machine: the storage folder (its caches of web pages, the
    index), the Parquet between assets and DAGSTER_HOME when set elsewhere. A local source whose
    folder holds one of them (``path: .`` beside ``storage: data``) leaves it out."""
    folders = [Path(config.storage_path)]
    io = io_folder(config)
    if "://" not in io:
        folders.append(Path(io))
    if os.environ.get("DAGSTER_HOME"):
        folders.append(Path(os.environ["DAGSTER_HOME"]))
    return folders


def remove_io_files(config, names: set[str], *, log: Log = _quiet) -> list[str]:  # noqa: ANN001 - a Config
    """Delete the Parquet files the assets handed each other for the sources ``names`` (their pages'
    text and vectors). :func:`prune_removed_sources` adds to ``names`` those, in this storage's own
    folder, of any source no config of this storage lists (left by a prune before this was done).
    Returns the names whose files were deleted."""
    folder = io_folder(config)
    gone: dict[str, list[str]] = {}
    if "://" in folder:  # an object store, through fsspec (as the IO manager writes it)
        try:
            import fsspec

            fs, root = fsspec.core.url_to_fs(folder)
        except Exception as exc:  # noqa: BLE001 - reported; the prune of the rows stands
            log(f"[PRUNE] warning: the Parquet files of {', '.join(sorted(names))} under {folder} were not deleted: "
                f"{' '.join(str(exc).split())[:200]}")
            return []
        for name in sorted(names):
            for asset in IO_ASSETS:
                key = f"{root.rstrip('/')}/{asset}/{name}.parquet"
                try:
                    if fs.exists(key):
                        fs.rm(key)
                        gone.setdefault(name, []).append(asset)
                except Exception as exc:  # noqa: BLE001 - reported; the prune of the rows stands
                    log(f"[PRUNE] warning: {folder}/{asset}/{name}.parquet was not deleted: "
                        f"{' '.join(str(exc).split())[:200]}")
    else:
        root = Path(folder)
        for asset in IO_ASSETS:
            found = {p.stem: p for p in (root / asset).glob("*.parquet")} if (root / asset).is_dir() else {}
            for name, path in sorted(found.items()):
                if name in names:
                    try:
                        path.unlink()
                        gone.setdefault(name, []).append(asset)
                    except FileNotFoundError:
                        pass
                    except OSError as exc:
                        log(f"[PRUNE] warning: {path} was not deleted: {exc}")
    for name, assets in sorted(gone.items()):
        log(f"[PRUNE] source {name!r} is not in the config any more: its Parquet files between assets were "
            f"deleted ({folder}/{{{','.join(assets)}}}/{name}.parquet)")
    return sorted(gone)


def prune_removed_sources(ctx: Context, *, log: Log = _quiet,
                          before_delete: Callable[[list[str]], None] | None = None) -> dict[str, int]:
    """Delete the rows and the local state of every source that is no longer configured, unless
    another config file that writes to the same storage lists it (:mod:`.shared_storage`); nothing
    at all while such a file is there but cannot be read (a warning names it). Returns rows deleted
    per removed source, 0 for one that had only local state (no rows). ``before_delete`` gets the
    names of those sources before anything of them is deleted (``docs-rag prune`` deletes their
    Dagster partitions there): the state folder goes last, so a run killed at any point leaves it, and
    the next prune finds the source again. Call under the writer lock."""
    from .shared_storage import SiblingConfigUnreadable, sources_of_other_configs

    configured = {s.name for s in ctx.config.sources}
    try:
        others = sources_of_other_configs(ctx.config)  # another config file writing here lists them: kept
    except SiblingConfigUnreadable as exc:  # what it lists is unknown: keep every source this run
        log(f"[PRUNE] warning: {exc}")
        return {}
    counts = ctx.chunks.source_counts()
    for name, other in sorted(others.items()):
        if name not in configured and (name in counts or (Path(ctx.config.storage_path) / "sources" / name).is_dir()):
            log(f"[PRUNE] source {name!r} is kept: {other} lists it and writes to the same storage folder")
    configured |= set(others)
    removed = {name: n for name, n in counts.items() if name not in configured}
    state_root = Path(ctx.config.storage_path) / "sources"
    stale_dirs = [d for d in state_root.iterdir() if d.is_dir() and d.name not in configured] \
        if state_root.is_dir() else []
    gone = sorted(set(removed) | {d.name for d in stale_dirs})
    if gone and before_delete is not None:  # while the folder is there to tell the source was this storage's
        before_delete(gone)
    if removed:
        from .store import sql_in

        ctx.chunks.delete(sql_in("source", removed))
    kept = set()
    for d, names in _local_paths_inside(ctx, stale_dirs).items():  # a checkout a local source reads now
        kept.add(d.name)
        log(f"[PRUNE] source {d.name!r} is not in the config any more, but its folder {d} is kept: the local "
            f"source(s) {', '.join(names)} read from it; move that folder out of {state_root} and point their "
            "path at it")
        stale_dirs.remove(d)
    for d in stale_dirs:
        shutil.rmtree(d, ignore_errors=True)
    for name, n in sorted(removed.items()):
        log(f"[PRUNE] source {name!r} is not in the config any more: {n} rows deleted")
    for d in stale_dirs:
        if d.name not in removed:
            log(f"[PRUNE] source {d.name!r} is not in the config any more: its local state was deleted")
    io_root = Path(io_folder(ctx.config))
    leftover = {p.stem for a in IO_ASSETS if (io_root / a).is_dir() for p in (io_root / a).glob("*.parquet")} \
        if io_root == Path(ctx.config.storage_path) / "dagster_io" else set()  # this storage's own folder
    remove_io_files(ctx.config, (set(removed) | {d.name for d in stale_dirs} | kept | leftover) - configured, log=log)
    # a folder kept for a local source is not pruned (its partition is, above: the source is gone)
    return {name: removed.get(name, 0) for name in sorted(set(removed) | {d.name for d in stale_dirs})}


def write_index(ctx: Context, source_name: str, rows: Sequence[dict[str, Any]],
                pages: Sequence[dict[str, Any]], *, latest_scan: str | None = None,
                log: Log = _quiet) -> dict[str, Any]:
    """Under the writer lock: check the inputs belong together (:func:`check_inputs`), prune removed
    sources, one merge_insert for the source (upserts + deletion of stale rows), then the indexes
    (best effort: a failed index build is reported, never fails a refresh whose rows are written)
    and optimize."""
    replace = [p["page_url"] for p in pages if p["status"] in ("new", "changed", "deleted")]
    with writer_lock(ctx.config.storage_path, purpose=f"index write of {source_name}", log=log):
        restored = check_inputs(ctx, source_name, rows, pages, latest_scan=latest_scan)
        from .shared_storage import register

        log_unlogged_write(ctx, log=log)  # before this write: the stopped one's state stays restorable
        register(ctx.config)
        pruned = {n: count for n, count in prune_removed_sources(ctx, log=log).items() if count}  # rows went
        stats = ctx.chunks.upsert_source(source_name, rows, replace_pages=replace)
        changed = bool(stats.rows_written or stats.rows_deleted or pruned)
        notes = ctx.chunks.ensure_indexes_and_optimize(changed=changed, tagging=changed, log=log)
        if stats.rows_written or stats.rows_deleted:
            ctx.cache.optimize()
        total = ctx.chunks.count(source_name)
        version = ctx.chunks.version()
        if stats.rows_written or stats.rows_deleted or pruned:
            notes.update(record_version(ctx, "refresh", source=source_name, rows_written=stats.rows_written,
                                        rows_deleted=stats.rows_deleted + sum(pruned.values()),
                                        detail=f"sources pruned: {', '.join(sorted(pruned))}" if pruned else "",
                                        log=log))
        # the settings the stored rows were made with: those of this process only when the scan and the
        # chunks were made with them too (a run finished after an upgrade or a config edit made them earlier)
        made = {p.get(MADE_WITH) for p in pages} | {r.get(MADE_WITH) for r in rows}
        other = bool(made) and made != {settings_key(page_settings(ctx, source_name))}
        _save_settings(ctx, source_name, restored=restored, other=other)  # under the lock: a restore's mark is not lost
    if restored is not None:
        log(f"[INDEX] {source_name}: the index was restored to version {restored} after this run scanned the "
            "source: the next ingest parses every page again")
    _save_word_stats(ctx, log)
    log(f"[INDEX] {source_name}: {stats.rows_written} rows written, {stats.rows_deleted} deleted, "
        f"{total} chunks indexed (table {ctx.chunks.name} v{version})")
    return {"rows_written": stats.rows_written, "rows_deleted": stats.rows_deleted, "chunks_total": total,
            "rows_pruned": sum(pruned.values()), "sources_pruned": sorted(pruned),
            "table": ctx.chunks.name, "table_version": version, **notes}


def _save_word_stats(ctx: Context, log: Log) -> None:
    """Count the served text's word statistics for the version just written (updated from the last
    saved ones: only the rows changed are read) and save them in ``<storage>/word_stats``, so that the
    next process's first ask reads them instead of counting the whole index. Best effort: a failure
    is a warning, and the next ask counts them itself."""
    try:
        ctx.chunks.word_stats()
    except Exception as exc:  # noqa: BLE001 - the rows are written; the statistics can be counted later
        log(f"[INDEX] warning: the word statistics were not counted ({type(exc).__name__}: {exc}); "
            "the next question counts them")


def _require_storage(ctx: Context) -> None:
    """:class:`~.config.StorageMissing` when the local storage folder is not there (a typo, an unmounted
    volume, a folder moved aside for ``mv data.new data``): a restore or prune changes an index that
    exists, and its locks would create the folder (with every one above it) before it found none."""
    from .config import require_storage_folder

    if ctx.config.storage_is_local:
        require_storage_folder(Path(ctx.config.storage_path))


def prune(ctx: Context, *, log: Log = _quiet,
          before_delete: Callable[[list[str]], None] | None = None) -> dict[str, int]:
    """``docs-rag prune``: delete what removed sources left behind, under the writer lock, and what
    a configured source kept as the kind it had before (each under that source's lock). Refuses
    (:class:`~.shared_storage.SiblingConfigUnreadable`, a ConfigError) while another config file
    recorded for this storage is there but cannot be read, before anything is deleted. Returns the
    rows deleted per pruned source (0: only its local state was left); ``before_delete`` as for
    :func:`prune_removed_sources`."""
    from .shared_storage import sources_of_other_configs

    _require_storage(ctx)
    sources_of_other_configs(ctx.config)
    for src in ctx.config.sources:
        if state_of_other_kinds(src.kind, ctx.source_dir(src.name)):
            with source_lock(ctx.config.storage_path, src.name, purpose=f"prune of {src.name}", log=log):
                remove_state_of_other_kinds(ctx, src.name, log=log)
    with writer_lock(ctx.config.storage_path, purpose="prune", log=log):
        log_unlogged_write(ctx, log=log)
        pruned = prune_removed_sources(ctx, log=log, before_delete=before_delete)
        rows = {n: count for n, count in pruned.items() if count}
        if rows:  # a version only where rows went: one with the same rows as the last would undo nothing
            ctx.chunks.ensure_indexes_and_optimize(changed=True, tagging=True, log=log)
            record_version(ctx, "prune", source="", rows_written=0, rows_deleted=sum(rows.values()),
                           detail=f"sources pruned: {', '.join(sorted(rows))}", log=log)
    return pruned


def record_version(ctx: Context, action: str, *, source: str, rows_written: int, rows_deleted: int,
                   detail: str = "", log: Log = _quiet) -> dict[str, str]:
    """Tag the chunks table's current version and log what wrote it (``docs-rag versions``).
    Call under the writer lock. Best effort: the rows are committed; a failure is reported as a
    ``version_tag`` note, never raised (that version is then kept only ``storage.keep_versions_days``)."""
    from .store import VersionLog

    now = datetime.now(timezone.utc)
    try:
        tag = ctx.chunks.tag(action, now)
        VersionLog(ctx.db).append({"chunks_table": ctx.chunks.name, "version": ctx.chunks.version(),
                                   "time": now.isoformat(timespec="seconds"), "action": action, "source": source,
                                   "rows_written": rows_written, "rows_deleted": rows_deleted,
                                   "chunks_total": ctx.chunks.count(), "tag": tag, "detail": detail})
    except Exception as exc:  # noqa: BLE001 - reported; the write itself is done
        log(f"[VERSION] could not tag or log version {ctx.chunks.version()}: {type(exc).__name__}: {exc}")
        return {"version_tag": f"failed ({type(exc).__name__}: {exc})"}
    return {"version_tag": tag or ""}


def log_unlogged_write(ctx: Context, *, log: Log = _quiet) -> dict[str, str]:
    """Under the writer lock, before a write of ``docs-rag ingest`` or ``prune``: when the chunks table
    serves rows that no logged version holds, a write was committed and then stopped before its tag and
    log (Ctrl-C, SIGTERM, a kill, a full disk): tag and log the version served now, with the rows it
    changed since the newest logged one, so that rerunning the command finishes the stopped one (before,
    a rerun that found nothing left to write logged nothing, `docs-rag versions` warned for good, and
    that state could never be restored by number). Best effort: returns ``record_version``'s note, or
    {} when every write is logged (or the table cannot be read: its own errors say so)."""
    from .store import VersionLog, is_damage

    try:
        if ctx.chunks.open() is None:
            return {}
        current = ctx.chunks.version()
        kept, tags = set(ctx.chunks.kept_versions()), ctx.chunks.tag_names()
        logged = [e for e in VersionLog(ctx.db).entries(ctx.chunks.name) if e["version"] in kept and e["tag"] in tags]
        if logged and (logged[-1]["version"] == current or ctx.chunks.holds_rows_of(logged[-1]["version"])):
            return {}  # the newest entry is served (index builds and compactions change no row)
        if not logged and ctx.chunks.count() == 0:
            return {}
        written, deleted, sources = ctx.chunks.changes_since(logged[-1]["version"] if logged else None)
    except Exception as exc:  # noqa: BLE001 - the write this precedes goes on; `versions` still warns
        if not is_damage(exc):
            log(f"[VERSION] warning: could not check whether the version served is logged "
                f"({type(exc).__name__}: {exc})")
        return {}
    configured = {s.name for s in ctx.config.sources}
    action = "prune" if not written and sources and not sources & configured else "refresh"
    source = next(iter(sources)) if action == "refresh" and len(sources) == 1 else ""
    detail = ("logged by the next run: its write was committed, then stopped before its log (Ctrl-C, SIGTERM, "
              "a kill or a full disk)" + (f"; sources: {', '.join(sorted(sources))}" if len(sources) > 1 else ""))
    log(f"[VERSION] version {current} is served but was never logged (its {action} was stopped right after its "
        f"write): logged now, {written} rows written, {deleted} deleted")
    return record_version(ctx, action, source=source, rows_written=written, rows_deleted=deleted, detail=detail,
                          log=log)


def versions(ctx: Context) -> list[dict[str, Any]]:
    """``docs-rag versions``: the logged versions of the chunks table that can still be restored,
    newest first (:func:`version_listing`)."""
    return version_listing(ctx)[0]


def _unreadable(ctx: Context, version: int | None = None) -> tuple[str | None, str | None]:
    """(the rows' fingerprint, None) of the served version or of ``version``; (None, what LanceDB said)
    when a file of it is missing or damaged. Other errors (an unreachable object store) are raised."""
    from .store import is_damage

    try:
        return ctx.chunks.rows_fingerprint(version), None
    except Exception as exc:
        if not is_damage(exc):
            raise
        return None, str(exc).strip().splitlines()[0][:300]


def version_listing(ctx: Context) -> tuple[list[dict[str, Any]], str | None]:
    """(the logged versions that can still be restored, newest first; why the served version cannot be
    read, or None). The newest is ``current``: every write that changes rows (a refresh, a restore, a
    prune) logs its version; later versions only compact files or update indexes. ``readable`` is False
    for a version whose rows could not be read (a file of it missing or damaged): each one is read when
    the served version cannot be read (the way back is a version that reads), else only the newest."""
    from .store import VersionLog

    if ctx.config.storage_is_local and not Path(ctx.config.storage_path).is_dir():
        return [], None  # before the first ingest: nothing to list, and connecting would create the folder
    kept, tags = set(ctx.chunks.kept_versions()), ctx.chunks.tag_names()
    # matched by tag, not only by number: a table deleted and built again (troubleshooting.md's
    # rebuild) counts its versions from 1 again, and its version N is not the one logged before as N
    rows = [e for e in reversed(VersionLog(ctx.db).entries(ctx.chunks.name))
            if e["version"] in kept and e["tag"] in tags]
    served_rows, unreadable = _unreadable(ctx)
    probed = rows if unreadable else rows[:1]
    read = {e["version"]: _unreadable(ctx, e["version"])[0] for e in probed}
    # the newest entry is served unless a write after it could not be logged (a full disk, a kill
    # between the write and its log): then no entry is, and `restore` of the newest is no no-op
    # (the same chunk ids first, then every column: a write of other metadata or titles keeps the ids)
    served = (bool(rows) and served_rows is not None and read[rows[0]["version"]] == served_rows
              and _holds_rows_of(ctx, rows[0]["version"]))
    return ([{**e, "current": i == 0 and served, "readable": e not in probed or read[e["version"]] is not None}
             for i, e in enumerate(rows)], unreadable)


def parse_version(raw: str) -> int:
    """``12`` or ``v12`` (as ``docs-rag versions`` prints it) → 12."""
    text = raw.strip().lower().removeprefix("v")
    if not (text.isascii() and text.isdigit()):  # int() refuses "²", which isdigit() takes
        raise ValueError(f"version {raw!r}: expected a version number such as 12 (or v12); "
                         "`docs-rag versions` lists the restorable ones")
    return int(text)


def _gone(ctx: Context, version: int) -> str | None:
    """Why ``version`` is not restorable when the log has an entry of that number whose tag the table
    does not hold (then the table's own version ``version``, if any, is another), else None."""
    from .store import VersionLog

    tags = ctx.chunks.tag_names()
    gone = [e for e in VersionLog(ctx.db).entries(ctx.chunks.name) if e["version"] == version and e["tag"] not in tags]
    if not gone:
        return None
    e = gone[-1]
    return (f"was logged by the {e['action']} of {e['time'].replace('+00:00', 'Z')}, whose version is gone: its tag "
            f"{e['tag']} is not on the table (the table was deleted and built again since, or the version expired: "
            "older than storage.keep_versions_days)")


def _holds_rows_of(ctx: Context, version: int) -> bool:
    """Whether ``version`` holds the rows served; False when the served rows cannot be read (a damaged
    index: the restore then goes on and replaces them)."""
    try:
        return ctx.chunks.holds_rows_of(version)
    except Exception:  # noqa: BLE001 - a damaged served version is what a restore is for
        return False


def restore(ctx: Context, version: int, *, log: Log = _quiet) -> dict[str, Any]:
    """``docs-rag restore``: make an earlier version of the chunks table the current one (a new
    version with its rows and indexes), under the writer lock. Nothing is lost: the version being
    replaced stays restorable. The next refresh compares each source with the restored rows and
    re-applies what changed since (embeddings come from the cache, which is never rolled back)."""
    _require_storage(ctx)
    with writer_lock(ctx.config.storage_path, purpose=f"restore of {ctx.chunks.name} to v{version}", log=log):
        current = ctx.chunks.version()
        if current is None:
            raise ValueError(f"nothing to restore: the chunks table {ctx.chunks.name} does not exist yet "
                             "(no refresh has written it with this embedding model); run `docs-rag ingest`")
        listed, unreadable = version_listing(ctx)
        if version not in {e["version"] for e in listed}:
            why = _gone(ctx, version) or (
                "was cleaned up (older than storage.keep_versions_days)" if 1 <= version < current
                and version not in ctx.chunks.kept_versions() else
                "is not a version a refresh, restore or prune wrote" if 1 <= version <= current else "does not exist")
            raise ValueError(f"version {version} of {ctx.chunks.name} cannot be restored: it {why}; restorable: "
                             f"{', '.join(str(e['version']) for e in listed) or 'none'}; "
                             "run `docs-rag versions` to see what each holds")
        damaged = _unreadable(ctx, version)[1]
        if damaged is not None:  # restored, it would be served, and every search would fail on it
            readable = [str(e["version"]) for e in listed
                        if e["readable"] and _unreadable(ctx, e["version"])[1] is None]
            raise ValueError(f"version {version} of {ctx.chunks.name} cannot be restored: a file of it is missing or "
                             f"damaged ({damaged}); versions that read: {', '.join(readable) or 'none'}; or rebuild "
                             f"the table: delete {ctx.config.lancedb_uri.rstrip('/')}/{ctx.chunks.name}.lance and run "
                             "`docs-rag ingest` (the vectors come back from the embedding cache)")
        top = listed[0]
        # a restore run again (unsure whether a killed one went through) finds its rows served: no new version
        if top["current"] and (top["version"] == version or (top.get("readable", True) and _holds_rows_of(ctx, version))):
            same = "is the one served already" if top["version"] == version else \
                f"holds the rows served already (version {top['version']})"
            if top["action"] == "restore":  # a killed run may have logged its version before marking the sources
                _mark_restored(ctx, version, log=log)
            log(f"[RESTORE] {ctx.chunks.name}: version {version} {same}; nothing to do")
            return {"restored": version, "version": top["version"], "previous": top["version"], "changed": False,
                    "chunks_total": ctx.chunks.count(), "version_tag": top.get("tag") or ""}
        served = listed[0]["version"] if listed[0]["current"] else None  # an unlogged write is served
        new = ctx.chunks.restore(version)
        total = ctx.chunks.count()
        notes = record_version(ctx, "restore", source="", rows_written=0, rows_deleted=0,
                               detail=f"restored v{version} (was v{current if served is None else served})", log=log)
        _mark_restored(ctx, version, log=log)
    log(f"[RESTORE] {ctx.chunks.name}: version {version} restored as version {new} ({total} chunks; "
        + (f"version {served} that it replaces stays restorable)" if served is not None else
           f"version {current} that it replaced could not be read: {unreadable})" if unreadable else
           f"version {current} that it replaces was never logged, so it cannot be restored by number)"))
    return {"restored": version, "version": new, "previous": served, "changed": True, "chunks_total": total,
            **notes}


def refresh(ctx: Context, source_name: str, *, mode: str = "refresh", log: Log = _quiet) -> RefreshStats:
    """The whole refresh without Dagster (for benchmarks and tests of the core), holding the source's
    lock from scan to write so two refreshes of one source run one after the other. ``mode`` as for
    :func:`scan_pages` (``reparse``: every page parsed and chunked again, e.g. after a parser or
    chunker change; chunks whose text is unchanged keep their ids and embeddings)."""
    with source_lock(ctx.config.storage_path, source_name, purpose=f"refresh of {source_name}", log=log):
        t0 = time.perf_counter()
        pages = scan_pages(ctx, source_name, mode=mode, log=log)
        t1 = time.perf_counter()
        rows = build_chunks(ctx, source_name, pages, log=log)
        t2 = time.perf_counter()
        rows = embed_rows(ctx, rows, log=log)
        t3 = time.perf_counter()
        w = write_index(ctx, source_name, rows, pages, log=log)
        t4 = time.perf_counter()
    st = refresh_stats(pages, rows, w)
    st.stage_seconds = {"scan": t1 - t0, "chunk": t2 - t1, "embed": t3 - t2, "index": t4 - t3}
    st.seconds = round(t4 - t0, 3)
    return st
