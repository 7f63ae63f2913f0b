"""Conversation threads: the turns of a follow-up conversation, kept in SQLite under the storage
folder (``<storage>/threads.sqlite``). A thread expires ``api.thread_ttl_minutes`` after its last
turn; an unknown or expired ``thread_id`` is an :class:`InputError` (HTTP 404, MCP tool error,
CLI exit 2). No Dagster here."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from pydantic import TypeAdapter, ValidationError

from .schemas import InputError

THREAD_ID_RE = re.compile(r"^[0-9a-f]{32}$")
MAX_TURNS_KEPT = 20  # the newest turns a follow-up sees, and all a thread keeps
#: the most expired threads one new thread or turn deletes: a backlog (a quiet weekend after a busy day,
#: a lower api.thread_ttl_minutes) goes over many asks instead of holding the store's lock for one
FORGET_BATCH = 500
#: how long a new thread or turn leaves an expired thread stored, so that a follow-up soon after its
#: expiry is told that it expired (404 expired_thread), not that it is unknown; `docs-rag prune`
#: deletes every expired thread at once
EXPIRED_KEPT_SECONDS = 86400
#: the longest one read or write of the store waits (this process's other users of it, then SQLite's
#: lock): another connection may hold the file's write lock for long (a backup, a VACUUM, an
#: operator's sqlite3 shell). Past it the answer is given without saving its turn; SQLite's 30 s held
#: every answer that long, one after another behind the process's lock. As the question log's wait.
WAIT_SECONDS = 10.0
SCHEMA = ("CREATE TABLE IF NOT EXISTS threads (id TEXT PRIMARY KEY, created REAL, updated REAL)",
          "CREATE TABLE IF NOT EXISTS turns (thread_id TEXT, n INTEGER, body TEXT, PRIMARY KEY (thread_id, n))",
          "CREATE INDEX IF NOT EXISTS threads_updated ON threads (updated)")
_LOCK = threading.Lock()


@dataclass(slots=True)
class Turn:
    question: str
    standalone: str  # what was searched / the rewritten question
    answer: str
    refused: bool
    cited_urls: list[str] = field(default_factory=list)
    cited_titles: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Thread:
    thread_id: str
    turns: list[Turn]


#: reads a stored turn: strict types (a turn is written by Turn, so "yes" is no boolean), unknown keys ignored
_TURN = TypeAdapter(Turn)


class ThreadsUnavailable(Exception):
    """The conversation store cannot be opened, read or written (a read-only or full storage folder, a
    damaged file), or was busy longer than :data:`WAIT_SECONDS` (``busy``): the message says which file
    and why. An answer is still given, without a thread."""

    def __init__(self, message: str, *, busy: bool = False) -> None:
        super().__init__(message)
        self.busy = busy


class ThreadStore:
    def __init__(self, folder: str | Path, ttl_minutes: int) -> None:
        self.path = Path(folder) / "threads.sqlite"
        self.ttl = ttl_minutes * 60

    @contextlib.contextmanager
    def _db(self, *, write: bool = True) -> Iterator[sqlite3.Connection]:
        """A connection for one operation, in one transaction, committed (or rolled back) and closed at
        the end. A write takes the write lock at its start (``BEGIN IMMEDIATE``): another process on the
        same storage (``serve --workers``, the MCP server, the CLI) waits for it instead of reading the
        same last turn number and writing a duplicate (the in-process lock covers only this process).
        A read does not, so a store on a read-only folder can still be read. SQLite's and the file
        system's errors become :class:`ThreadsUnavailable`. A write waits for this process's other writers
        and SQLite's lock at most :data:`WAIT_SECONDS` together (``busy`` past it); a read takes no
        process lock (SQLite lets it in beside a writer) and waits for SQLite as long at most.

        Every write creates the tables when they are missing, in its transaction: the file may have
        been moved aside, or the storage folder swapped for a fresh one (``mv data.new data``), under a
        running process, which then starts a new store there rather than failing "no such table" until
        it restarts. The storage folder itself is never created (``docs-rag ingest`` does that). A read
        never creates the file (``mode=rw``)."""
        if not write:  # SQLite lets a reader in beside a writer: a read never queues behind a waiting write
            with self._connected(write, WAIT_SECONDS) as db:
                yield db
            return
        until = time.monotonic() + WAIT_SECONDS  # one wait for both locks, not one each
        if not _LOCK.acquire(timeout=WAIT_SECONDS):
            raise ThreadsUnavailable(f"{self.path}: busy in this process for more than {WAIT_SECONDS:g} s "
                                     "(other asks waiting for the file's write lock)", busy=True)
        try:
            with self._connected(write, max(0.0, until - time.monotonic())) as db:
                yield db
        finally:
            _LOCK.release()

    @contextlib.contextmanager
    def _connected(self, write: bool, wait: float) -> Iterator[sqlite3.Connection]:
        from .config import require_storage_folder

        try:
            require_storage_folder(self.path.parent)
            if write:
                db = sqlite3.connect(self.path, timeout=wait, isolation_level=None)
                db.execute("PRAGMA secure_delete = ON")  # a deleted turn is overwritten, not left in a free page
            else:
                db = sqlite3.connect(f"{self.path.absolute().as_uri()}?mode=rw", uri=True, timeout=wait,
                                     isolation_level=None)
        except (sqlite3.Error, OSError) as exc:
            raise self._unavailable(exc) from None
        try:
            try:
                db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                for statement in SCHEMA if write else ():
                    db.execute(statement)
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise self._unavailable(exc) from None
            try:
                yield db
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):  # a failing disk may fail the rollback too
                    db.execute("ROLLBACK")
                raise self._unavailable(exc) from None
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise
            try:
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise self._unavailable(exc) from None
        finally:
            db.close()

    def _unavailable(self, exc: Exception) -> ThreadsUnavailable:
        """SQLite's or the file system's error as :class:`ThreadsUnavailable`; a lock held past the wait
        says so (``busy``): the store is not broken, another connection held its write lock."""
        if getattr(exc, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED"):
            return ThreadsUnavailable(f"{self.path}: {exc} for more than {WAIT_SECONDS:g} s: another connection "
                                      "held its write lock that long, such as a backup, a VACUUM or a sqlite3 "
                                      "shell", busy=True)
        return ThreadsUnavailable(f"{self.path}: {exc}")

    def new(self) -> Thread:
        tid = uuid.uuid4().hex
        now = time.time()
        with self._db() as db:
            db.execute("INSERT INTO threads VALUES (?, ?, ?)", (tid, now, now))
            _forget_batch(db, now - self.ttl - EXPIRED_KEPT_SECONDS)
        return Thread(tid, [])

    def forget_expired(self) -> int:
        """Delete every thread past ``api.thread_ttl_minutes`` (``docs-rag prune``: the store is also
        trimmed when nobody asks), a batch per transaction; how many went. Creates no file. A thread
        whose time of last question is not a number (a hand edit, a bad restore) goes too: it can never
        be continued (503) nor expire, and the time to live is also how long questions are kept."""
        total = 0
        while self.path.is_file():
            with self._db() as db:
                n = _forget_batch(db, time.time() - self.ttl, untimed=True)
            total += n
            if n < FORGET_BATCH:
                break
        return total

    def get(self, thread_id: str) -> Thread:
        """The thread, or an InputError: ``invalid_thread_id`` (400), ``unknown_thread`` or
        ``expired_thread`` (404); :class:`ThreadsUnavailable` when the store, or this thread's stored
        rows, cannot be read (the message names the file, the thread and what is wrong)."""
        if not isinstance(thread_id, str) or not THREAD_ID_RE.match(thread_id):
            raise InputError("invalid_thread_id", "thread_id",
                             "'thread_id' must be the 32-character hex id a previous answer returned; "
                             "leave it out to start a new conversation")
        row, rows = None, []
        # no file: none was saved here yet (or it was moved aside), so no such conversation; a missing
        # storage folder is the server's trouble (ThreadsUnavailable, from _db)
        if self.path.exists() or not self.path.parent.is_dir():
            with self._db(write=False) as db:
                tables = {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if {"threads", "turns"} <= tables:  # else a new, empty file: none saved in it yet
                    row = db.execute("SELECT updated FROM threads WHERE id = ?", (thread_id,)).fetchone()
                    rows = db.execute("SELECT n, body FROM turns WHERE thread_id = ? ORDER BY n DESC LIMIT ?",
                                      (thread_id, MAX_TURNS_KEPT)).fetchall()
        if row is None:
            raise InputError("unknown_thread", "thread_id",
                             f"no conversation with thread_id {thread_id!r}; leave thread_id out to start a "
                             "new one", 404)
        if not isinstance(row[0], (int, float)):  # a hand edit, a bad restore: not a time to compare
            shown = row[0] if row[0] is None or isinstance(row[0], str) and len(row[0]) <= 40 else type(row[0]).__name__
            raise ThreadsUnavailable(f"{self.path}: thread {thread_id}: its time of last question (threads.updated) "
                                     f"is {shown!r}, not a number, so whether it expired cannot be told "
                                     "(`docs-rag prune` deletes such a conversation)")
        if row[0] < time.time() - self.ttl:
            raise InputError("expired_thread", "thread_id",
                             f"the conversation {thread_id!r} expired (no question for more than "
                             f"{self.ttl // 60} minutes, api.thread_ttl_minutes); leave thread_id out to "
                             "start a new one", 404)
        return Thread(thread_id, [self._turn(thread_id, n, body) for (n, body) in reversed(rows)])

    def _turn(self, thread_id: str, n: int, body: object) -> Turn:
        """One stored turn. Keys this version does not know (a newer version's turn, read after a
        rollback) are ignored; a body that is not a turn (damaged, edited by hand) is
        :class:`ThreadsUnavailable` naming the file, the thread and the turn: answering the follow-up
        without that turn would answer another question than the one asked."""
        try:
            if not isinstance(body, (str, bytes)):
                raise TypeError(f"a {type(body).__name__}, not JSON text")
            return _TURN.validate_json(body, strict=True)
        except (ValidationError, TypeError) as exc:
            raise ThreadsUnavailable(f"{self.path}: thread {thread_id}: turn {n} cannot be read "
                                     f"({_reason(exc)})") from None

    def add(self, thread_id: str | None, turn: Turn) -> str:
        """Add ``turn`` to its thread, or to a new one (``thread_id`` None: one transaction, so a new
        conversation waits for the store once); the thread's id."""
        from dataclasses import asdict

        thread_id = thread_id or uuid.uuid4().hex
        with self._db() as db:
            n = db.execute("SELECT COALESCE(MAX(n), 0) + 1 FROM turns WHERE thread_id = ?", (thread_id,)).fetchone()[0]
            db.execute("INSERT INTO turns VALUES (?, ?, ?)", (thread_id, n, json.dumps(asdict(turn))))
            # a follow-up reads the newest MAX_TURNS_KEPT turns: the older ones are kept no longer
            db.execute("DELETE FROM turns WHERE thread_id = ? AND n <= ?", (thread_id, n - MAX_TURNS_KEPT))
            now = time.time()
            if not db.execute("UPDATE threads SET updated = ? WHERE id = ?", (now, thread_id)).rowcount:
                # the file was replaced since the thread was read: its turn stays with its thread
                db.execute("INSERT INTO threads VALUES (?, ?, ?)", (thread_id, now, now))
            _forget_batch(db, now - self.ttl - EXPIRED_KEPT_SECONDS)
        return thread_id

    def touch(self, thread_id: str, when: float) -> None:
        """Set the time of the last turn (for expiry)."""
        with self._db() as db:
            db.execute("UPDATE threads SET updated = ? WHERE id = ?", (when, thread_id))


def _reason(exc: Exception) -> str:
    """The first thing wrong with a stored turn, in one line (pydantic's own message is a block)."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where + ': ' if where else ''}{first['msg']}"


def _forget_batch(db: sqlite3.Connection, before: float, *, untimed: bool = False) -> int:
    """Delete up to :data:`FORGET_BATCH` threads whose last turn is older than ``before`` (and, with
    ``untimed``, those whose time of last turn is not a number: SQLite orders NULL and text apart from
    every number, so ``updated < before`` never holds for them), with their turns; how many went."""
    where = "updated < ?" + (" OR typeof(updated) NOT IN ('integer', 'real')" if untimed else "")
    ids = db.execute(f"SELECT id FROM threads WHERE {where} LIMIT ?", (before, FORGET_BATCH)).fetchall()  # noqa: S608
    db.executemany("DELETE FROM turns WHERE thread_id = ?", ids)
    db.executemany("DELETE FROM threads WHERE id = ?", ids)
    return len(ids)


def forget_expired_threads(config) -> int:  # noqa: ANN001
    """Delete every expired thread of ``config``'s storage (``docs-rag prune``); how many went."""
    return ThreadStore(config.storage_path, config.api.thread_ttl_minutes).forget_expired()


def thread_store(ctx) -> ThreadStore:  # noqa: ANN001
    store = getattr(ctx, "_threads", None)
    if store is None:
        store = ThreadStore(ctx.config.storage_path, ctx.config.api.thread_ttl_minutes)
        ctx._threads = store
    return store
