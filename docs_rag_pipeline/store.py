"""The LanceDB tables. Each table class declares its schema and indexes; one class per table.

- :class:`ChunksTable` — one per embedding model (``chunks__<model>``), so a model change
  re-embeds into a fresh table and a table never mixes models. Vector + full-text (BM25) index.
- :class:`EmbeddingCache` — vectors keyed by (model, sha256 of the embedded text).
- :class:`VersionLog` — one row per chunks table version a refresh, restore or prune wrote, for
  ``docs-rag versions`` / ``docs-rag restore``. Those versions are also LanceDB tags
  (``refresh-20261123T095001Z-v12``); versions are kept ``storage.keep_versions_days``.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import logging
import os
import re
import threading
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field as dataclass_field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from .config import without_userinfo
from .files import atomic_write
from .words import fulltext_text, words as split_words

os.environ.setdefault("LANCEDB_LOG", "error")

log_ = logging.getLogger(__name__)


#: a metadata key a filter names: any key a page's metadata may have (``séction``, ``分类``, ``release date``),
#: up to 200 characters, but never ``=`` (a tag is ``key=value``) nor a control character; a value is a
#: SQL string literal (:func:`sql_str`), whatever it holds. Before, only ASCII letters were allowed,
#: so a localized key was listed as existing and could never be filtered on.
FILTER_KEY_RE = re.compile(r"^[^=\x00-\x1f\x7f]{1,200}$")
FILTER_KEY_RULE = "a metadata key as a page has it, without '=' or control characters"


def sql_str(value: str) -> str:
    """A SQL string literal."""
    return "'" + str(value).replace("'", "''") + "'"


def sql_in(column: str, values: Iterable[str]) -> str:
    vals = list(values)
    if not vals:
        return "false"
    return f"{column} IN ({', '.join(sql_str(v) for v in vals)})"


def table_slug(model: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_")


def object_store_options(uri: str) -> dict[str, str]:
    """Timeouts for a table on object storage (``s3://`` …): each request within
    ``DOCS_RAG_STORAGE_TIMEOUT`` seconds (default 30), a connection within 5, and a short retry
    budget. object_store's defaults let a search wait about 12 minutes on an endpoint that accepts
    connections and never answers (a stalled proxy or load balancer)."""
    if "://" not in uri or uri.startswith("file://"):
        return {}
    from .environment import storage_timeout

    seconds = max(1.0, storage_timeout())  # a bad value is a ConfigError naming the variable
    return {"timeout": f"{seconds:g}s", "connect_timeout": "5s", "client_max_retries": "2",
            "client_retry_timeout": f"{2 * seconds:g}s"}


_STORE_STATUS = re.compile(r"\bstatus: (\d{3})\b")
#: object_store's words for a request that got no answer: no connection (refused, DNS, connect timeout), an
#: answer that did not come in time, or a connection dropped or reset before the answer (a server restarting
#: mid-ingest, a TCP proxy or port-forward with no live backend: ``error sending request``,
#: ``hyper::Error(IncompleteMessage)``, ``connection reset by peer``)
_STORE_UNREACHABLE = re.compile(r"kind: (Connect|Timeout|Request|Interrupted)\b|timed out|Connection refused"
                                r"|dns error|error sending request|IncompleteMessage|connection (reset|closed|aborted)"
                                r"|reset by peer|broken pipe", re.I)


def object_store_failure(message: str, uri: str) -> str | None:
    """For an error of LanceDB's object store (``store: "S3"`` …) on the storage ``uri``: one plain line
    saying what failed and what to check (the bucket is missing, the credentials are refused, the
    endpoint cannot be reached or does not answer), else None. LanceDB's own message is a Rust debug
    dump of 800 characters or more, the status code buried in its middle."""
    if "://" not in uri or uri.startswith("file://") or not re.search(r'store: "\w+"|object_store|Generic \w+ error',
                                                                       message):
        return None
    scheme, _, rest = uri.partition("://")
    bucket = rest.partition("/")[0]
    endpoint = os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT")
    # a password in the endpoint URL (http://user:pw@minio:9000) goes to no message, log or run record
    endpoint = without_userinfo(endpoint) if endpoint else "the provider's default endpoint"
    status = _STORE_STATUS.search(message)
    code = int(status.group(1)) if status else None
    if code == 404 and ".lance/" in message and "NoSuchBucket" not in message:
        return None  # a file of a table is missing: the damaged-index hint says what to do
    if "NoSuchBucket" in message or code == 404:
        return (f"the bucket {bucket!r} of storage {uri!r} does not exist at {endpoint}: create it, or fix "
                "`storage:` in the config (or AWS_ENDPOINT_URL)")
    if code in (401, 403) or any(w in message for w in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch")):
        return (f"the object store at {endpoint} refused access to {scheme}://{bucket} (HTTP {code or 403}): check "
                "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), AWS_REGION and the bucket's policy")
    if _STORE_UNREACHABLE.search(message):
        waited = object_store_options(uri).get("timeout", "30s")
        return (f"cannot reach the object store at {endpoint} for storage {uri!r} (no connection, a connection "
                f"dropped before the answer, or no answer within {waited}): check AWS_ENDPOINT_URL and the network; DOCS_RAG_STORAGE_TIMEOUT sets the wait")
    if code is not None:
        return (f"the object store at {endpoint} answered HTTP {code} for storage {uri!r}; what was stored is kept: "
                "run the command again, and check the server's log if it keeps failing")
    return None


#: what LanceDB says when a file of a table is missing, damaged or cut short (a disk that filled up, a
#: bad copy: ``Invalid range 0..2024 for object of size 100 bytes``; a data file cut anywhere: Rust's
#: ``failed to fill whole buffer``; a manifest cut short: ``file size is too small``)
LANCE_DAMAGE = re.compile(r"lance error: .*(not found: \S*\.lance/|corrupt|unexpected eof|checksum"
                          r"|invalid range \S+ for object of size|failed to fill whole buffer"
                          r"|file size is too small)", re.I | re.S)


def is_damage(exc: BaseException) -> bool:
    """Whether ``exc`` is LanceDB saying that a file of a table is missing or damaged."""
    return bool(LANCE_DAMAGE.search(str(exc)))


@contextmanager
def naming_table(table: str) -> Iterator[None]:
    """Reads of ``table``: an error that says a file is damaged without naming the table's folder (a
    file cut short) is raised again naming it, so that the message can say which table to rebuild."""
    try:
        yield
    except Exception as exc:
        if is_damage(exc) and f"{table}.lance/" not in str(exc):
            raise RuntimeError(f"{str(exc).strip().splitlines()[0]} (a file of {table}.lance/)") from exc
        raise


def connect(uri: str):  # noqa: ANN201 - lancedb.DBConnection
    """A LanceDB connection whose open tables see other processes' commits within a second."""
    import lancedb

    options = object_store_options(uri)
    return lancedb.connect(uri, read_consistency_interval=timedelta(seconds=1),
                           **({"storage_options": options} if options else {}))


def list_tables(db) -> list[str]:  # noqa: ANN001
    res = db.list_tables()
    names = getattr(res, "tables", res)
    return list(names)


#: what :func:`open_table` says of a table folder LanceDB finds no version in: none can be restored either
NO_VERSIONS = "the table's folder is there, but no version of the table can be found in it"


def open_table(db, name: str):  # noqa: ANN001, ANN201 - a LanceDB table
    """``db.open_table(name)``, where a table whose folder is there but that LanceDB cannot open as a
    table (its ``_versions/`` folder deleted or emptied, a bad copy) is damage that names the table:
    LanceDB says only ``Table '…' was not found``, which read as a bad input (exit 2) or a bug (HTTP
    500) and named neither the table's folder nor the way back."""
    try:
        return db.open_table(name)
    except ValueError as exc:
        if "was not found" not in str(exc) or name not in list_tables(db):
            raise  # not there at all (deleted meanwhile): the caller's own case
        raise RuntimeError(f"lance error: not found: {name}.lance/_versions/ ({NO_VERSIONS})") from exc


CHUNK_COLUMNS = ["chunk_id", "source", "page_url", "url", "title", "headings", "parent_id", "chunk_index",
                 "text", "content_hash", "token_count", "updated_at", "metadata", "tags"]


def chunk_schema(dimensions: int) -> pa.Schema:
    return pa.schema([
        ("chunk_id", pa.string()), ("source", pa.string()), ("page_url", pa.string()), ("url", pa.string()),
        ("title", pa.string()), ("headings", pa.list_(pa.string())), ("parent_id", pa.string()),
        ("chunk_index", pa.int32()), ("text", pa.string()), ("content_hash", pa.string()),
        ("token_count", pa.int32()), ("updated_at", pa.string()), ("metadata", pa.string()),
        ("tags", pa.list_(pa.string())), ("search_text", pa.string()), ("embedding_model", pa.string()),
        ("vector", pa.list_(pa.float32(), dimensions)),
    ])


#: how long old versions of the chunks table stay restorable (``storage.keep_versions_days``)
DEFAULT_KEEP_VERSIONS_DAYS = 7.0
#: the newest tagged versions kept whatever their age: the last refresh can always be undone
KEEP_NEWEST_TAGS = 2
#: added to the window of the optimize that compacts: LanceDB measures the window when it cleans up,
#: after the compaction, which may take long; the versions within it go by a second cleanup
_CLEANUP_SLACK = timedelta(hours=1)
#: added to the window of that second cleanup (nothing left to compact): the time between reading
#: the clock here and LanceDB reading it; a tagged version inside the window fails the cleanup
_CLOCK_MARGIN = timedelta(seconds=1)
TAG_ACTIONS = ("refresh", "restore", "prune")
_TAG_RE = re.compile(r"^(refresh|restore|prune)-(\d{8}T\d{6}Z)-v(\d+)$")


def tag_name(action: str, when: datetime, version: int) -> str:
    """``refresh-20261123T095001Z-v12``: LanceDB tags allow letters, digits, ``.``, ``-`` and ``_``."""
    return f"{action}-{when.astimezone(timezone.utc):%Y%m%dT%H%M%SZ}-v{version}"


def parse_tag(name: str) -> tuple[str, datetime, int] | None:
    """(action, time, version) of a tag this project wrote, else None."""
    m = _TAG_RE.match(name)
    if not m:
        return None
    when = datetime.strptime(m.group(2), "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    return m.group(1), when, int(m.group(3))


def retention_plan(tags: Iterable[str], *, now: datetime, keep: timedelta, keep_newest: int = KEEP_NEWEST_TAGS,
                   committed: dict[int, datetime] | None = None) -> tuple[list[str], timedelta]:
    """(tags to delete, ``cleanup_older_than``) for one optimize.

    A tag older than ``keep`` goes, except the ``keep_newest`` newest; versions are cleaned up when
    older than ``keep`` or than the commit of the oldest tagged version that stays (``committed``:
    version → commit time; else the time in its tag, stamped just after), since LanceDB refuses to
    clean up a tagged version. The caller adds its margin (:data:`_CLEANUP_SLACK`, :data:`_CLOCK_MARGIN`)."""
    ours = sorted(((parsed[2], parsed[1], n) for n in tags if (parsed := parse_tag(n))), reverse=True)
    expired = [n for _, when, n in ours[keep_newest:] if now - when > keep]
    commit = committed or {}
    oldest_kept = max((now - commit.get(v, when) for v, when, n in ours if n not in expired), default=timedelta(0))
    return expired, max(keep, oldest_kept)


@dataclass(slots=True)
class WriteStats:
    rows_written: int = 0
    rows_deleted: int = 0
    version: int | None = None


@dataclass(frozen=True)
class WordStats:
    """The words of the served text at one table version, counted in one pass over it: what the
    refusal signals read (:meth:`ChunksTable.vocabulary`, ``answering.refusal.corpus_stats``).
    Never changed once made: a newer version gets a new one, so a request keeps a consistent view."""

    version: int | None
    where: str | None  # the served-sources condition the rows were read with
    chunks: int  # rows counted
    words: dict[str, int]  # lowercase word → number of chunks using it (> 0)
    stems: dict[str, int]  # stemmed word → number of chunks using it (> 0)
    vocabulary: frozenset[str]  # the words
    # (chunk_id, content_hash, title) → rows counted: what a row's text is made of (the id hashes its
    # headings and text), so the next version's keys tell the rows added and removed since
    keys: Counter = dataclass_field(default_factory=Counter, repr=False)


class ChunksTable:
    """The searchable chunks of every source, for one embedding model."""

    fts_column = "search_text"  # title + heading path + text: BM25 sees what the embedding sees

    def __init__(self, db, *, model: str, dimensions: int,  # noqa: ANN001
                 keep_versions_days: float = DEFAULT_KEEP_VERSIONS_DAYS,
                 served_sources: Sequence[str] | None = None, stats_dir: str | os.PathLike | None = None) -> None:
        self.keep_versions = timedelta(days=keep_versions_days)
        # where the word statistics are kept between processes (one file per table and served sources),
        # so that a new process (a CLI ask, a script's first ask) updates them instead of counting anew
        self.stats_dir = stats_dir
        # the sources whose rows the query path reads (the configured ones): the vocabulary and word
        # statistics of refusal must not count a removed source's rows waiting to be pruned
        self.served_sources = tuple(served_sources) if served_sources is not None else None
        self._stats: WordStats | None = None
        self._stats_table: tuple[int, int] | None = None  # the table on disk _stats were counted from
        # one computation of the word statistics at a time: concurrent first asks wait for its result
        self._stats_lock = threading.Lock()
        #: texts tokenised for the word statistics so far (tells a full pass from an update)
        self.texts_tokenized = 0
        self._handle = None
        self._handle_table: tuple[int, int] | None = None  # the table on disk the handle was opened on
        self._follows = True  # the handle follows the table on disk (not a version held: at_version)
        self._ann: tuple[tuple, int] | None = None
        self._tag_keys: tuple[tuple, frozenset[str]] | None = None  # (version_key, keys) of tag_keys()
        self._db = db
        self.model = model
        self.dimensions = dimensions
        self.name = f"chunks__{table_slug(model)}"
        self.schema = chunk_schema(dimensions)

    @property
    def db(self):  # noqa: ANN201
        """The LanceDB connection; ``db`` may be given as a function that makes it, called on first
        use, so the table's name and settings are there without connecting (which creates the folder)."""
        if callable(self._db):
            self._db = self._db()
        return self._db

    def exists(self) -> bool:
        return self._handle is not None or self.name in list_tables(self.db)

    def at_version(self, version: int | None) -> "ChunksTable":
        """This table held at ``version`` (None: before the first write): its reads never see a later
        write, for a long read such as an evaluation (an ingest writing meanwhile made citations of
        the version answered look invented). Read only."""
        twin = copy.copy(self)
        twin._ann, twin._stats_lock = None, threading.Lock()  # its statistics start from self's, updated
        twin.stats_dir = None  # an older version's statistics are never saved over the newest
        twin._follows = False
        if version is not None:
            twin._handle = open_table(self.db, self.name)  # a handle of its own: checkout must not move self's
            twin._handle.checkout(version)
        return twin

    def open(self):  # noqa: ANN201
        """The table (one handle per process; it follows new versions), or None before the first write.
        A handle whose table is no longer the one on disk (a storage folder swapped under a running
        server, ``mv data.new data``) is opened again: it read the files of the table moved away, which
        failed with ``Not found`` until the next check for a new version (the new table may have the
        same version number, and then never)."""
        if self._handle is not None and self._follows and self._handle_table != self.on_disk():
            self._handle = None
        if self._handle is None and self.name in list_tables(self.db):
            with naming_table(self.name):  # a manifest cut short does not name its table
                self._handle = open_table(self.db, self.name)
            self._handle_table = self.on_disk()
        return self._handle

    def _create(self):  # noqa: ANN202
        self._handle = self.db.create_table(self.name, schema=self.schema, exist_ok=True)
        self._handle_table = self.on_disk()
        return self._handle

    # ---- reads -------------------------------------------------------------------------------
    def _scan(self, where: str | None, columns: list[str] | None = None, *, version: int | None = None) -> pa.Table:
        tbl = self.open()
        if tbl is None:
            return pa.table({c: [] for c in (columns or CHUNK_COLUMNS)})
        if version is not None:
            tbl = self._pinned(version)
        return self._scan_handle(tbl, where, columns)

    def _pinned(self, version: int):  # noqa: ANN202
        """A handle of its own held at ``version`` (checkout must not move the shared one)."""
        with naming_table(self.name):
            tbl = open_table(self.db, self.name)
            tbl.checkout(version)
        return tbl

    def _scan_handle(self, tbl, where: str | None, columns: list[str] | None = None) -> pa.Table:  # noqa: ANN001
        """Every row matching ``where``, read in one query, so from one version. Counted first and then
        read with that count as the limit, a read whose handle follows new versions took the count of one
        version and the rows of the next: a refresh committed in between that grew a page gave ``/pages``
        only its first rows in storage order (chunks 1 to 3 of 13), a page that never existed."""
        with naming_table(self.name):  # a data file cut short does not name its table
            q = tbl.search()
            if where:
                q = q.where(where)
            if columns:
                q = q.select(columns)
            out = q.limit(None).to_arrow()  # no limit: a plain (not vector) query returns every row
        return out if out.num_rows else self.schema.empty_table().select(columns or CHUNK_COLUMNS)

    def _of_first_chunks(self, source: str, column: str) -> dict[str, Any]:
        """page_url → ``column`` of each page's first chunk, for one source (only those two columns read)."""
        t = self._scan(f"source = {sql_str(source)} AND chunk_index = 0", ["page_url", column])
        return dict(zip(t.column("page_url").to_pylist(), t.column(column).to_pylist()))

    def page_state(self, source: str) -> dict[str, str]:
        """page_url → content_hash of what is indexed for a source."""
        return self._of_first_chunks(source, "content_hash")

    def first_chunks(self, source: str) -> dict[str, str]:
        """page_url → chunk_id of each page's first chunk."""
        return self._of_first_chunks(source, "chunk_id")

    def first_parents(self, source: str) -> dict[str, str | None]:
        """page_url → parent_id of each page's first chunk (the page's parent page's first chunk)."""
        return self._of_first_chunks(source, "parent_id")

    def rows(self, where: str | None = None, *, with_vectors: bool = False) -> list[dict[str, Any]]:
        cols = CHUNK_COLUMNS + (["vector"] if with_vectors else [])
        out = self._scan(where, cols).to_pylist()
        for r in out:
            r["metadata"] = json.loads(r["metadata"] or "{}")
        return out

    def get(self, chunk_id: str) -> dict[str, Any] | None:
        rows = self.rows(f"chunk_id = {sql_str(chunk_id)}")
        return rows[0] if rows else None

    def count(self, source: str | None = None) -> int:
        tbl = self.open()
        if tbl is None:
            return 0
        return tbl.count_rows(f"source = {sql_str(source)}") if source else tbl.count_rows()

    def source_counts(self) -> dict[str, int]:
        """Rows per source."""
        t = self._scan(None, ["source"])
        out: dict[str, int] = {}
        for name in t.column("source").to_pylist():
            out[name] = out.get(name, 0) + 1
        return out

    def served_where(self) -> str | None:
        """The condition on the rows the query path reads (``served_sources``), None for all."""
        return None if self.served_sources is None else sql_in("source", self.served_sources)

    def vocabulary(self) -> frozenset[str]:
        """Every lowercase word of the served text (title, headings, text), kept per table version."""
        return self.word_stats().vocabulary

    def word_stats(self) -> WordStats:
        """The words and stemmed words of the served text and how many chunks use each, for the
        current table version. Computed once per version and process: callers that come while it is
        being computed wait for that result rather than computing it again. A process that has none
        yet starts from those saved in ``stats_dir`` by any process (an ingest saves them), updated
        with the rows changed since; what it computes is saved there for the next process."""
        where = self.served_where()
        table, version = self.version_key()
        s = self._stats
        if s is not None and s.version == version and s.where == where and self._stats_table == table:
            return s
        with self._stats_lock:
            table, version = self.version_key()
            if self._stats_table != table:  # another table (a swapped storage folder): none of the counts hold
                self._stats, self._stats_table = None, table
            s = self._stats
            if s is None or s.version != version or s.where != where:
                if s is None or s.where != where:
                    s = self._stats = self._load_stats(where)  # None, or a saved earlier state to update
                saved = s
                s = self._stats = self._count_words(version, where)
                if s is not saved and s.version is not None:
                    self._save_stats(s)
            return s

    #: the columns whose values decide a row's full-text column (see ``WordStats.keys``)
    _key_columns = ["chunk_id", "content_hash", "title"]
    #: rows added plus removed up to which a new version's statistics are updated, not counted afresh
    #: (at least; a quarter of the table when larger); also the chunk ids read per query
    word_stats_batch = 2000
    #: the layout of a saved statistics file; a file of another layout is ignored (counted afresh)
    stats_format = 4  # 2: words of width and font variants folded (words.folded); 3: and invisible characters
    # inside a word and Turkish İ (words.for_matching); 4: and digits of any script as ASCII digits

    def _count_words(self, version: int | None, where: str | None) -> WordStats:
        """The statistics at ``version``: the last ones updated with the rows added and removed since
        (their texts read from both versions), or counted afresh when there are none, the served
        sources changed, most rows changed or the last version is no longer kept."""
        if version is None:
            return WordStats(None, where, 0, {}, {}, frozenset())
        tbl = self._pinned(version)
        prev = self._stats
        if prev is not None and prev.version is not None and prev.where == where:
            t = self._scan_handle(tbl, where, self._key_columns)
            keys = Counter(zip(*(t.column(c).to_pylist() for c in self._key_columns)))
            if keys == prev.keys and prev.version == version:
                return prev
            added, removed = keys - prev.keys, prev.keys - keys
            if sum(added.values()) + sum(removed.values()) <= max(self.word_stats_batch, len(keys) // 4):
                try:
                    gone = self._texts_of(self._pinned(prev.version), where, removed) if removed else []
                except Exception as exc:  # noqa: BLE001 - the version was cleaned up: count afresh
                    log_.info("word statistics counted afresh: version %s is not readable (%s)",
                              prev.version, _short(exc))
                    gone = None
                new = self._texts_of(tbl, where, added) if gone is not None else None
                if gone is not None and new is not None:
                    words, stems = Counter(prev.words), Counter(prev.stems)
                    _tally(new, words, stems)
                    _tally(gone, words, stems, sign=-1)
                    self.texts_tokenized += len(new) + len(gone)
                    return WordStats(version, where, sum(keys.values()), dict(words), dict(stems),
                                     frozenset(words) if new or gone else prev.vocabulary, keys)
        t = self._scan_handle(tbl, where, [*self._key_columns, "search_text"])
        keys = Counter(zip(*(t.column(c).to_pylist() for c in self._key_columns)))
        texts = t.column("search_text").to_pylist()
        words, stems = Counter(), Counter()
        _tally(texts, words, stems)
        self.texts_tokenized += len(texts)
        return WordStats(version, where, len(texts), dict(words), dict(stems), frozenset(words), keys)

    def _stats_file(self, where: str | None) -> Path | None:
        if self.stats_dir is None:
            return None
        served = hashlib.sha256((where or "").encode()).hexdigest()[:16]
        return Path(self.stats_dir) / f"{self.name}.{served}.json.gz"

    def _load_stats(self, where: str | None) -> WordStats | None:
        """The statistics a process saved for this table and these served sources, at whatever version
        it counted: a start to update, used as they are only where their keys are the table's (the
        keys tell the rows changed since). None when there are none or the file cannot be read or is
        not of this layout (then they are counted afresh, and the file replaced)."""
        path = self._stats_file(where)
        if path is None or not path.is_file():
            return None
        try:
            raw = json.loads(gzip.decompress(path.read_bytes()))
            if raw.get("format") != self.stats_format or raw.get("where") != where:
                return None
            words, stems = raw["words"], raw["stems"]
            keys = Counter({(cid, h, title): int(n) for cid, h, title, n in raw["keys"]})
            if not all(isinstance(d, dict) and all(type(n) is int and n > 0 for n in d.values())
                       for d in (words, stems)):
                raise ValueError("words and stems are not objects of counts")
            return WordStats(int(raw["version"]), where, int(raw["chunks"]), words, stems, frozenset(words), keys)
        except Exception as exc:  # noqa: BLE001 - a damaged or foreign file: count afresh, and it is replaced
            log_.info("word statistics in %s not used (%s): counted afresh", path, _short(exc))
            return None

    def _save_stats(self, s: WordStats) -> None:
        """Save ``s`` for the next process; best effort (a read-only storage folder is no error)."""
        path = self._stats_file(s.where)
        if path is None:
            return
        doc = {"format": self.stats_format, "table": self.name, "version": s.version, "where": s.where,
               "chunks": s.chunks, "words": s.words, "stems": s.stems,
               "keys": [[*k, n] for k, n in s.keys.items()]}
        try:
            atomic_write(path, gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), compresslevel=1))
        except OSError as exc:
            log_.info("word statistics not saved to %s: %s", path, exc)

    def _texts_of(self, tbl, where: str | None, wanted: Counter) -> list[str] | None:  # noqa: ANN001
        """The full-text column of the rows ``wanted`` counts by key, read from ``tbl``; None when
        the table does not hold them all."""
        left = Counter(wanted)
        ids = sorted({k[0] for k in left})
        texts: list[str] = []
        for i in range(0, len(ids), self.word_stats_batch):
            cond = sql_in("chunk_id", ids[i:i + self.word_stats_batch])
            t = self._scan_handle(tbl, f"({where}) AND {cond}" if where else cond,
                                  [*self._key_columns, "search_text"])
            cols = [t.column(c).to_pylist() for c in [*self._key_columns, "search_text"]]
            for *key, text in zip(*cols):
                if left[tuple(key)] > 0:
                    left[tuple(key)] -= 1
                    texts.append(text)
        return texts if not +left else None

    def version(self) -> int | None:
        tbl = self.open()
        return tbl.version if tbl is not None else None

    def on_disk(self) -> tuple[int, int] | None:
        """Which table on disk this is: its folder's device and inode (None in an object store, or before
        the first write). A storage folder swapped under a running server (``mv data.new data``) holds
        another table, whose versions count from the start too (two fresh ingests both end at version 3):
        what is kept per table version (word statistics, filter keys, the vector index's partitions) is
        kept per table and version."""
        uri = str(getattr(self.db, "uri", "") or "")
        if "://" in uri and not uri.startswith("file://"):
            return None
        try:
            st = os.stat(Path(uri.removeprefix("file://")) / f"{self.name}.lance")
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def version_key(self) -> tuple[tuple[int, int] | None, int | None]:
        """The table on disk and its version (:meth:`on_disk`): the key of a per-version cache."""
        tbl = self.open()
        if tbl is None or not self._follows:
            return self.on_disk(), (tbl.version if tbl is not None else None)
        return self._handle_table, tbl.version  # open() has just compared it with the table on disk

    def tag_keys(self) -> frozenset[str]:
        """The metadata keys tagged on any served row (``key=value`` tags; a source removed from the config
        is not served, pruned or not: its keys are no filter keys), counted once per table, version and
        served sources."""
        where = self.served_where()
        # the table on disk and its version: a swapped storage folder is another
        version = (*self.version_key(), where)
        if self._tag_keys is None or self._tag_keys[0] != version:
            tagged: set[str] = set()
            if version[1] is not None:
                for tags in self._scan(where, ["tags"]).column("tags").to_pylist():
                    tagged.update(t.split("=", 1)[0] for t in tags or [])
            self._tag_keys = (version, frozenset(tagged))
        return self._tag_keys[1]

    def rows_fingerprint(self, version: int | None = None) -> str:
        """A hash of the chunk ids the table holds now, or at ``version``: two versions with the same
        rows have the same fingerprint (chunk ids are made from the text). A first, cheap test of whether a
        version the version log lists is the one served, whatever index or compaction versions came after;
        :meth:`holds_rows_of` confirms it (a change of metadata or of a title keeps the ids)."""
        if self.open() is None:
            return ""
        ids = self._scan(None, ["chunk_id"], version=version)["chunk_id"].to_pylist()
        return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()

    def holds_rows_of(self, version: int) -> bool:
        """Whether the table holds now exactly the rows it held at ``version``, every column but the
        vector (which follows the text): true after a restore of ``version``, so restoring it again
        writes nothing. :meth:`rows_fingerprint` compares chunk ids only, which a change of metadata
        or of a title keeps."""
        if self.open() is None or self._pinned(version).count_rows() != self.count():
            return False  # the counts tell most versions apart without reading a row
        now, then = (self._scan(None, CHUNK_COLUMNS, version=v).sort_by("chunk_id") for v in (None, version))
        return now.equals(then)

    def changes_since(self, version: int | None) -> tuple[int, int, set[str]]:
        """(rows written, rows deleted, the sources of both) from ``version`` (None: an empty table) to
        the rows held now, every column but the vector: what a write committed without its log changed."""
        def keyed(v: int | None) -> dict[str, dict[str, Any]]:
            return {r["chunk_id"]: r for r in self._scan(None, CHUNK_COLUMNS, version=v).to_pylist()}

        now = keyed(None)
        then = keyed(version) if version is not None else {}
        written = [r for k, r in now.items() if then.get(k) != r]
        deleted = [r for k, r in then.items() if k not in now]
        return len(written), len(deleted), {r["source"] for r in written + deleted}

    # ---- writes ------------------------------------------------------------------------------
    def to_arrow(self, rows: Sequence[dict[str, Any]]) -> pa.Table:
        """The rows as a table of this schema. The vectors go into one float32 buffer, never a Python
        float per number: ``from_pylist`` of 384 floats a row held ~12 KB of objects per chunk while the
        table was built (the whole source at once)."""
        data = []
        vectors = np.empty((len(rows), self.dimensions), dtype=np.float32)
        for i, r in enumerate(rows):
            d = {c: r.get(c) for c in CHUNK_COLUMNS}
            if not isinstance(d["metadata"], str):
                d["metadata"] = json.dumps(d["metadata"] or {}, sort_keys=True, default=str)
            d["tags"] = list(d["tags"] or [])
            d["headings"] = list(d["headings"] or [])
            d["search_text"] = search_text(d)
            d["embedding_model"] = self.model
            v = np.asarray(r["vector"], dtype=np.float32)
            if v.shape != (self.dimensions,):
                raise ValueError(f"chunk {d['chunk_id']}: vector has shape {v.shape}, table {self.name} "
                                 f"expects ({self.dimensions},)")
            vectors[i] = v
            data.append(d)
        fields = [f for f in self.schema if f.name != "vector"]
        table = pa.Table.from_pylist(data, schema=pa.schema(fields))
        column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), type=pa.float32()), self.dimensions)
        return table.append_column(self.schema.field("vector"), column).select(self.schema.names)

    def upsert_source(self, source: str, rows: Sequence[dict[str, Any]], *, replace_pages: Iterable[str]) -> WriteStats:
        """One commit: upsert ``rows`` by chunk_id and delete every other row of ``replace_pages``.

        ``replace_pages`` are the pages that changed or disappeared: their rows not in ``rows`` go.
        Rows identical to the stored ones are left out of the write, and a write with nothing to
        upsert or delete commits nothing (a reparse of an unchanged source is no new version).
        """
        pages = sorted(set(replace_pages))
        if not rows and not pages:
            return WriteStats(version=self.version())
        tbl = self.open()
        stale = self._stale_where(source, pages, {r["chunk_id"] for r in rows}) if tbl is not None else None
        rows = self._changed_only(rows) if tbl is not None else list(rows)
        if not rows and stale is None:
            return WriteStats(version=self.version())
        tbl = tbl or self._create()
        merge = tbl.merge_insert("chunk_id").when_matched_update_all().when_not_matched_insert_all()
        if stale is not None:
            merge = merge.when_not_matched_by_source_delete(stale)
        res = merge.execute(self.to_arrow(rows))
        return WriteStats(rows_written=res.num_inserted_rows + res.num_updated_rows,
                          rows_deleted=res.num_deleted_rows, version=res.version)

    def _stale_where(self, source: str, pages: Sequence[str], kept_ids: set[str]) -> str | None:
        """The rows of ``pages`` that the write must delete: those whose id is not among the rows
        written or kept (``kept_ids``). Named by page where a page keeps no row (a deleted page), by
        id otherwise, so the filter holds only what goes; ``None`` when nothing goes."""
        gone_pages: set[str] = set()
        gone_ids: list[str] = []
        for i in range(0, len(pages), 500):
            part = pages[i:i + 500]
            stored = self._scan(f"source = {sql_str(source)} AND {sql_in('page_url', part)}", ["chunk_id", "page_url"])
            pairs = list(zip(stored["page_url"].to_pylist(), stored["chunk_id"].to_pylist()))
            keeps = {u for u, c in pairs if c in kept_ids}
            gone_pages |= {u for u, _ in pairs} - keeps
            gone_ids += [c for u, c in pairs if u in keeps and c not in kept_ids]
        where = [sql_in("page_url", sorted(gone_pages))] if gone_pages else []
        where += [sql_in("chunk_id", gone_ids)] if gone_ids else []
        if not where:
            return None
        return f"source = {sql_str(source)} AND ({' OR '.join(where)})"

    def _changed_only(self, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Drop rows identical to the stored ones: same id (which means the same source, page, headings
        and text), and the same parent, position, URL, title, headings, metadata, tags, content hash,
        token count and full-text column (which an older docs-rag may have written otherwise). The
        vector is not compared: it comes from the embedding cache, keyed by the text compared here."""
        ids = [r["chunk_id"] for r in rows]
        stored: dict[str, tuple] = {}
        for i in range(0, len(ids), 500):
            for r in self._scan(sql_in("chunk_id", ids[i:i + 500]), CHUNK_COLUMNS + ["search_text"]).to_pylist():
                stored[r["chunk_id"]] = _comparable(r, r["search_text"])
        return [r for r in rows if stored.get(r["chunk_id"]) != _comparable(r, search_text(r))]

    #: from this many rows on, vectors get an ANN index (IVF_FLAT: exact within the probed partitions,
    #: sqrt(rows) partitions); below it a flat scan is fast enough (bench/query.py measures both)
    ann_min_rows = 10_000

    def delete(self, where: str) -> None:
        tbl = self.open()
        if tbl is not None:
            tbl.delete(where)

    def ensure_indexes_and_optimize(self, *, changed: bool = True, tagging: bool = False,
                                    log: Callable[[str], None] | None = None) -> dict[str, str]:
        """Build the full-text index (never on an empty table) and, for large tables, the ANN index;
        index new rows, prune versions older than ``keep_versions`` (deleting expired version tags first:
        see :func:`retention_plan`; ``tagging``: the version this leaves is tagged next, and counts
        among the newest kept). Best effort: the rows are committed before this runs, so
        a failure here is logged and reported (``fts_index``, ``ann_index``, ``optimize`` notes),
        never raised; search falls back to a flat vector scan without an ANN index."""
        from lancedb.index import FTS

        say = log or (lambda m: log_.warning("%s", m))
        notes: dict[str, str] = {}
        tbl = self.open()
        if tbl is None:
            return notes
        n = tbl.count_rows()
        if n == 0:
            return notes
        names = {getattr(i, "name", "") for i in tbl.list_indices()}
        if f"{self.fts_column}_idx" not in names:
            try:
                tbl.create_index(self.fts_column, config=FTS(with_position=False))
            except Exception as exc:  # noqa: BLE001 - reported, retried on the next refresh
                notes["fts_index"] = f"build failed ({_short(exc)}); full-text search is off until the next refresh"
                say(f"[INDEX] full-text index build failed: {_short(exc)}")
        if n < self.ann_min_rows:
            notes["ann_index"] = f"none: flat scan ({n} rows < {self.ann_min_rows})"
        elif "vector_idx" not in names or changed:
            notes["ann_index"] = self._build_ann(tbl, n, rebuild="vector_idx" not in names, say=say)
        try:
            self._optimize(tbl, keep_newest=KEEP_NEWEST_TAGS - (1 if tagging else 0))
        except Exception as exc:  # noqa: BLE001
            notes["optimize"] = f"failed ({_short(exc)}); retried on the next refresh"
            say(f"[INDEX] optimize failed: {_short(exc)}")
        return notes

    def _optimize(self, tbl, *, keep_newest: int) -> None:  # noqa: ANN001
        """Delete the expired tags, compact, index new rows and clean up the versions older than the
        window, in two steps: the compaction may take long, and LanceDB measures the window after it."""
        def plan() -> tuple[list[str], timedelta, datetime]:
            committed = {int(v["version"]): v["timestamp"].astimezone(timezone.utc) for v in tbl.list_versions()}
            expired, window = retention_plan(tbl.tags.list(), now=datetime.now(timezone.utc), keep=self.keep_versions,
                                             keep_newest=keep_newest, committed=committed)
            return expired, window, min(committed.values())

        expired, window, _ = plan()
        for tag in expired:
            tbl.tags.delete(tag)
        tbl.optimize(cleanup_older_than=window + _CLEANUP_SLACK)
        if tbl.stats()["fragment_stats"]["num_small_fragments"] > 1:
            # the fragment the write added was not indexed yet, so LanceDB did not compact it with the indexed
            # ones: the rows the write replaced or deleted stayed in the full-text index's statistics, and BM25
            # scored otherwise than on a clean ingest of the same pages until a later refresh compacted. Now
            # that every fragment is indexed, they compact, and the statistics count the rows served only.
            tbl.optimize(cleanup_older_than=window + _CLEANUP_SLACK)
        _, window, oldest = plan()
        if oldest < datetime.now(timezone.utc) - window - _CLOCK_MARGIN:
            try:  # nothing left to compact: LanceDB cleans up at once, and commits no new version
                tbl.optimize(cleanup_older_than=window + _CLOCK_MARGIN)
            except Exception as exc:  # noqa: BLE001 - a slow clock read: the next optimize cleans them
                log_.info("second cleanup of %s skipped: %s", self.name, _short(exc))

    # ---- versions ----------------------------------------------------------------------------
    def tag(self, action: str, when: datetime) -> str | None:
        """Tag the current version (``refresh-<UTC time>-v<version>``), so it outlives cleanup."""
        tbl = self.open()
        if tbl is None:
            return None
        name = tag_name(action, when, tbl.version)
        tbl.tags.create(name, tbl.version)
        return name

    def tag_names(self) -> set[str]:
        """The tags the table holds now: a version log entry whose tag is not among them belongs to a
        table of the same name deleted since (a rebuild), or its tag expired (``keep_versions``)."""
        tbl = self.open()
        return set(tbl.tags.list()) if tbl is not None else set()

    def kept_versions(self) -> list[int]:
        """The versions that still exist (restorable), oldest first."""
        tbl = self.open()
        return sorted(int(v["version"]) for v in tbl.list_versions()) if tbl is not None else []

    def restore(self, version: int) -> int:
        """Make ``version``'s rows and indexes the current ones (a new version); returns it."""
        tbl = self.open()
        tbl.restore(version)
        tbl.checkout_latest()
        return tbl.version

    @staticmethod
    def target_partitions(n: int) -> int:
        """IVF partitions for ``n`` rows: sqrt(n), at least 16."""
        return max(16, int(n ** 0.5))

    def _build_ann(self, tbl, n: int, *, rebuild: bool, say: Callable[[str], None]) -> str:  # noqa: ANN001
        """IVF_FLAT with sqrt(rows) partitions, or as many as k-means can form from the data
        (repetitive text has few distinct vectors); a flat scan when no partitioning works."""
        from lancedb.index import IvfFlat

        if not rebuild:
            return f"ivf_flat ({self.ann_partitions()} partitions)"
        parts = self.target_partitions(n)
        failures: list[str] = []
        while parts >= 2:
            try:
                tbl.create_index("vector", config=IvfFlat(distance_type="cosine", num_partitions=parts), replace=True)
                note = f"ivf_flat ({parts} partitions)"
                if failures:
                    note += f" after {len(failures)} failed attempt(s): {failures[0]}"
                    say(f"[INDEX] vector index built with {parts} partitions (the data supports no more)")
                self._ann = None
                return note
            except Exception as exc:  # noqa: BLE001
                failures.append(_short(exc))
                m = re.search(r"only form (\d+) non-empty clusters", str(exc))
                parts = min(parts // 2, int(m.group(1))) if m else parts // 2
        say(f"[INDEX] no vector index: {failures[-1] if failures else 'too few distinct vectors'}; "
            "search uses a flat scan")
        return f"none: flat scan (index build failed: {failures[-1] if failures else 'too few rows'})"

    def has_ann_index(self) -> bool:
        return self.ann_partitions() > 0

    def ann_partitions(self) -> int:
        """Partitions of the vector index (0 without one), cached per table version."""
        tbl = self.open()
        if tbl is None:
            return 0
        v = self.version_key()
        if self._ann is None or self._ann[0] != v:
            parts = 0
            if any(getattr(i, "name", "") == "vector_idx" for i in tbl.list_indices()):
                stats = tbl.index_stats("vector_idx")
                parts = int(getattr(stats, "num_partitions", None) or 0) or self.target_partitions(tbl.count_rows())
            self._ann = (v, parts)
        return self._ann[1]


def _tally(texts: Iterable[str | None], words: Counter, stems: Counter, sign: int = 1) -> None:
    """Count (``sign`` 1) or uncount (-1) each chunk text's distinct words and distinct stemmed
    words in ``words`` and ``stems`` (stemmed by the stemmer of the text's language); a count that
    falls to 0 is removed."""
    from .answering.extractive import _stem  # the refusal signals' stemmer; answering imports this module
    from .languages import text_language

    for text in texts:
        listed = split_words(text or "")
        ws = set(listed)
        lang = text_language(text or "", listed)  # a chunk's words are stemmed by its language's stemmer
        ss = {_stem(w, lang) for w in ws}
        if sign > 0:
            words.update(ws)
            stems.update(ss)
            continue
        for counter, keys in ((words, ws), (stems, ss)):
            for k in keys:
                n = counter.get(k, 0) - 1
                if n > 0:
                    counter[k] = n
                else:
                    counter.pop(k, None)


def _short(exc: BaseException) -> str:
    """An exception in one line, without LanceDB's Rust source locations."""
    text = " ".join(str(exc).split())
    text = re.sub(r",?\s*[\w/.-]+\.rs:\d+:\d+", "", text)
    return f"{type(exc).__name__}: {text[:300]}"


def search_text(r: dict[str, Any]) -> str:
    """The full-text column of a chunk: title, heading path and text, with Chinese, Japanese, Korean
    and Thai runs as space-separated character bigrams (``words.fulltext_text``)."""
    return fulltext_text(" \n".join([r["title"] or "", " ".join(r["headings"] or []), r["text"] or ""]))


def _comparable(r: dict[str, Any], full_text: str | None) -> tuple:
    meta = r["metadata"] if isinstance(r["metadata"], str) else json.dumps(r["metadata"] or {}, sort_keys=True, default=str)
    return (r["source"], r["page_url"], r["parent_id"], int(r["chunk_index"]), r["url"], r["title"], json.loads(meta),
            list(r["tags"] or []), list(r["headings"] or []), r["content_hash"], r.get("token_count"), full_text)


class EmbeddingCache:
    """Vectors by (model, sha256 of text), shared by every source and run."""

    name = "embedding_cache"
    schema = pa.schema([("model", pa.string()), ("sha", pa.string()), ("vector", pa.list_(pa.float32()))])

    def __init__(self, db) -> None:  # noqa: ANN001
        self.db = db

    def _open(self):  # noqa: ANN202
        with naming_table(self.name):
            return open_table(self.db, self.name) if self.name in list_tables(self.db) else None

    def get_many(self, model: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        tbl = self._open()
        found: dict[str, np.ndarray] = {}
        if tbl is None or not shas:
            return found
        uniq = sorted(set(shas))
        for i in range(0, len(uniq), 500):
            part = uniq[i:i + 500]
            with naming_table(self.name):  # a data file cut short does not name its table
                t = (tbl.search().where(f"model = {sql_str(model)} AND {sql_in('sha', part)}")
                     .select(["sha", "vector"]).limit(len(part) * 2).to_arrow())
            for sha, vec in zip(t.column("sha").to_pylist(), t.column("vector").to_pylist()):
                v = np.asarray(vec, dtype=np.float32)
                old = found.get(sha)  # of copies of one text, a finite non-zero one (a bad one was embedded again)
                if old is None or not (np.isfinite(old).all() and old.any()):
                    found[sha] = v
        return found

    def put_many(self, model: str, items: dict[str, np.ndarray]) -> int:
        if not items:
            return 0
        shas = list(items)
        mat = np.stack([np.asarray(items[k], dtype=np.float32) for k in shas])
        offsets = pa.array(np.arange(0, mat.size + 1, mat.shape[1], dtype=np.int32))
        vectors = pa.ListArray.from_arrays(offsets, pa.array(mat.ravel()))
        data = pa.table({"model": pa.array([model] * len(shas), pa.string()), "sha": pa.array(shas, pa.string()),
                         "vector": vectors}, schema=self.schema)
        tbl = self._open()
        if tbl is None:
            tbl = self.db.create_table(self.name, schema=self.schema, exist_ok=True)
        # the caller looked these up and missed; one writer at a time (the lancedb pool), so a plain
        # append is enough (a rare duplicate from another process is harmless: any copy is the same)
        with naming_table(self.name):
            tbl.add(data)
        return len(items)

    def optimize(self) -> None:
        """Compact and drop old versions at once: the cache only grows and is never restored."""
        tbl = self._open()
        if tbl is not None:
            with naming_table(self.name):
                tbl.optimize(cleanup_older_than=timedelta(minutes=5))


class VersionLog:
    """What wrote each chunks table version: time, action, source, rows written and deleted, total.

    Append-only; not part of a restore (it is the history restore chooses from)."""

    name = "version_log"
    schema = pa.schema([("chunks_table", pa.string()), ("version", pa.int64()), ("time", pa.string()),
                        ("action", pa.string()), ("source", pa.string()), ("rows_written", pa.int64()),
                        ("rows_deleted", pa.int64()), ("chunks_total", pa.int64()), ("tag", pa.string()),
                        ("detail", pa.string())])

    def __init__(self, db) -> None:  # noqa: ANN001
        self.db = db

    def append(self, entry: dict[str, Any]) -> None:
        tbl = (open_table(self.db, self.name) if self.name in list_tables(self.db)
               else self.db.create_table(self.name, schema=self.schema, exist_ok=True))
        tbl.add(pa.Table.from_pylist([{c: entry.get(c) for c in self.schema.names}], schema=self.schema))
        if tbl.version % 50 == 0:  # one small file per entry: compact now and then
            tbl.optimize(cleanup_older_than=timedelta(hours=1))

    def entries(self, table: str) -> list[dict[str, Any]]:
        """The entries of one chunks table, oldest first."""
        if self.name not in list_tables(self.db):
            return []
        with naming_table(self.name):
            tbl = open_table(self.db, self.name)
            # one query (see ChunksTable._scan_handle): a count, then a read of that many, could miss an entry
            rows = tbl.search().where(f"chunks_table = {sql_str(table)}").limit(None).to_arrow().to_pylist()
        return sorted(rows, key=lambda r: (r["version"], r["time"]))
