"""One place that turns a config into the things that use it: embedder, LanceDB, tables."""

from __future__ import annotations

import atexit
import functools
import hashlib
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from .config import Config, ConfigError, NothingIndexed, config_name, load_config, require_storage_folder
from .embedding import Embedder, embedder_from_config
from .store import ChunksTable, EmbeddingCache, connect, list_tables


@dataclass(eq=False)
class Context:
    config: Config
    #: why the config file cannot be loaded now, while this context (of its last good text) is served
    #: in its place (:func:`get_context`); None while the file loads
    config_error: str | None = None

    @functools.cached_property
    def embedder(self) -> Embedder:
        return embedder_from_config(self.config.embedding)

    @functools.cached_property
    def db(self):  # noqa: ANN201
        """The LanceDB connection. Connecting creates ``<storage>/lancedb`` with every folder above it,
        so a local storage folder that is not there is a :class:`~.config.StorageMissing` instead: only
        an ingest creates it (its locks do, before the first write); a search, a server or a health
        check that made it left an empty folder in the way of the next ``mv data.new data``."""
        if self.config.storage_is_local:
            require_storage_folder(Path(self.config.storage_path))
        return connect(self.config.lancedb_uri)

    @functools.cached_property
    def chunks(self) -> ChunksTable:
        return ChunksTable(lambda: self.db, model=self.embedder.space, dimensions=self.embedder.dimensions,
                           keep_versions_days=self.config.keep_versions_days,
                           served_sources=[s.name for s in self.config.sources],
                           stats_dir=Path(self.config.storage_path) / "word_stats")

    def index(self):  # noqa: ANN201 - lancedb.table.Table
        """The chunks table a search reads. :class:`~.config.StorageMissing` when the storage folder is not
        there, :class:`~.config.NothingIndexed` (one) when it holds no table for the configured model:
        an empty folder (a fresh checkout's ``data/``) or an index made with another model. Nothing is
        created to find out: ``<storage>/lancedb`` is looked for before connecting (which creates it)."""
        folder = self.config.storage_path
        if self.config.storage_is_local:
            require_storage_folder(Path(folder))
            if not Path(self.config.lancedb_uri).is_dir():
                raise NothingIndexed(str(folder), self.chunks.name)
        tbl = self.chunks.open()
        if tbl is None:
            others = [t for t in list_tables(self.db) if t.startswith("chunks__") and t != self.chunks.name]
            raise NothingIndexed(str(folder), self.chunks.name, others)
        return tbl

    def at_current_version(self) -> "Context":
        """A context whose chunks table stays at the version it has now (same config, embedder and
        connection): a long read, such as an evaluation, sees one version whatever is written meanwhile."""
        held = Context(self.config)
        held.__dict__.update(embedder=self.embedder, db=self.db, chunks=self.chunks.at_version(self.chunks.version()))
        return held

    def source_dir(self, source: str) -> Path:
        """The source's own local folder: its state, caches, clones."""
        return Path(self.config.storage_path) / "sources" / source

    @functools.cached_property
    def cache(self) -> EmbeddingCache:
        return EmbeddingCache(self.db)


_lock = threading.Lock()
_contexts: dict[str, tuple[str, str, Context]] = {}
# config path as named (links kept) → (the file it led to; the sha256 of its text; its context)


def _forget_after_fork() -> None:
    """In a child made by ``fork`` (multiprocessing's ``fork`` start method, a Celery prefork worker,
    gunicorn ``--preload``): the parent's contexts are dropped, so the child opens its own connection,
    tables and model on its first call. Those of the parent hold LanceDB handles whose native runtime did
    not survive the fork: the child's first search hung in LanceDB's background loop, or crashed."""
    global _lock
    _lock = threading.Lock()  # the parent may have held it at the fork, in another thread
    _contexts.clear()
    _warming.clear()  # their threads were not copied into the child


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forget_after_fork)


def get_context(path: str | Path | None = None, *, data: bytes | None = None) -> Context:
    """The context for a config file, reused while the file's text is unchanged. One per file: when the
    file changes, the new context replaces the old one, which goes once no request holds it (each kept
    its table's files open, so a server whose config was touched a few hundred times ran out of
    file descriptors and answered 503 to everything). ``data``: the file's text as a run read it at its
    start (:func:`~.config.copy_config`), used instead of the file's text now; the same text gives the
    same context, whichever way it was read.

    The file is read at each call (a few hundred bytes) and its text compared, not its modification
    time: a save that a request read half-way (truncated, then written) and that ended within the same
    tick of the file system's clock (a second on some mounts) kept the half-written config served until
    the next save, and a ``touch`` rebuilt the context for nothing.

    The file is followed through its links at each call, and the context is kept under the name as
    given: a config mounted from a Kubernetes ConfigMap (``docs_rag.yaml -> ..data/docs_rag.yaml``,
    ``..data -> ..2026_11_28_…``), whose update switches ``..data`` to a new folder and deletes the old
    one, is read from the new folder, and its old context goes (kept under each target, one stayed per
    update).

    A file that cannot be loaded any more (a YAML error saved mid-edit, a key misspelt, the file deleted)
    leaves the last context that loaded in service, with ``config_error`` saying why, and one warning
    logged per broken text: a server keeps answering as before until the file is fixed, as a web server
    keeps its configuration when a reload finds an error. Before, every request was a 503 until then. A
    name read for the first time, and a run's own copy (``data``), still raise :class:`ConfigError`."""
    name = config_name(path)  # `~` as load_config reads it; absolute, links kept
    p = name.resolve()
    given = data is not None
    if data is None and p.is_file():
        try:
            data = p.read_bytes()
        except OSError:  # unreadable: load_config says so
            data = None
    sha = hashlib.sha256(data).hexdigest() if data is not None else None
    with _lock:
        held = _contexts.get(str(name))
        if held is not None and sha is not None and held[0] == str(p) and held[1] == sha:
            held[2].config_error = None  # the file is back to the text it was loaded from
            return held[2]
        try:
            config = load_config(p, data=data)
        except ConfigError as exc:
            if given or held is None:
                raise
            _warn_kept(name, sha, exc)
            held[2].config_error = str(exc)
            return held[2]
        ctx = Context(config)
        _contexts[str(name)] = (str(p), hashlib.sha256(data or b"").hexdigest(), ctx)
        _warned.pop(str(name), None)
        return ctx


_warned: dict[str, str | None] = {}  # config name → the broken text (sha256) last warned about


def _warn_kept(name: Path, sha: str | None, exc: ConfigError) -> None:
    """One warning per broken text of a config file whose last good context stays in service."""
    if _warned.get(str(name), "") == sha:
        return
    _warned[str(name)] = sha
    logging.getLogger(__name__).warning(
        "%s cannot be loaded (%s); the config last loaded from it is served until it is fixed", name, exc)


def warm_up(path: str | Path | None = None) -> threading.Thread:
    """Count the index's word statistics (``ChunksTable.word_stats``: the vocabulary and the stem
    counts of refusal) in a background thread, so that a server's first ask does not count them
    inline; an ask that comes meanwhile waits for this count. A failure (no config, no index yet)
    is logged at debug level only: the first ask meets it and says what is wrong."""

    def run() -> None:
        try:
            ctx = get_context(path)
            ctx.index()  # nothing indexed yet: connecting would create <storage>/lancedb
            ctx.chunks.word_stats()
        except Exception as exc:  # noqa: BLE001 - the first request reports it
            logging.getLogger(__name__).debug("warm-up of the word statistics failed: %s", exc)
        finally:
            _warming.discard(threading.current_thread())

    t = threading.Thread(target=run, name="docs-rag-warm-up", daemon=True)
    _warming.add(t)
    t.start()
    return t


_warming: set[threading.Thread] = set()


def _join_warm_ups() -> None:
    """At exit, wait for the warm-ups still counting: the count runs in LanceDB's native code, and an
    interpreter that finalizes under it aborts (``PyGILState_Release`` while finalizing, exit -6), as a
    server stopped in its first seconds did."""
    for t in list(_warming):
        t.join()


atexit.register(_join_warm_ups)
