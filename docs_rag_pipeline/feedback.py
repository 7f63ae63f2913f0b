"""The question log and answer feedback, in one SQLite file under the storage folder
(``<storage>/feedback.sqlite``). No Dagster here.

* :func:`log_answer` records every ask (question, source, refused, confidence signals, cited pages,
  trace id, time, and its conversation: the thread id and the earlier questions of a follow-up) unless
  ``api.log_questions: false``. The ``doc_gaps`` asset reads this log.
* :func:`record_feedback` stores a thumbs up/down (and a comment) for an answer, found by its
  ``trace_id``; it is also sent to LangSmith (``create_feedback`` on run id = trace id) when tracing
  is configured.
* :func:`export_cases` writes thumbs-down answers as draft eval cases (``schemas.EvalCase``).
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from .config import Config, require_storage_folder
from .records import Answer

_lock = threading.Lock()

SCHEMA = """
CREATE TABLE IF NOT EXISTS questions (
  trace_id TEXT PRIMARY KEY, at REAL NOT NULL, question TEXT NOT NULL, source TEXT,
  refused INTEGER NOT NULL, low_confidence INTEGER NOT NULL, top_score REAL, supported REAL,
  warning TEXT, answer TEXT NOT NULL, citations TEXT NOT NULL, cited_urls TEXT NOT NULL,
  thread_id TEXT, turns TEXT);
CREATE TABLE IF NOT EXISTS feedback (
  id INTEGER PRIMARY KEY AUTOINCREMENT, trace_id TEXT NOT NULL, at REAL NOT NULL, rating TEXT NOT NULL,
  comment TEXT NOT NULL DEFAULT '', langsmith INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS questions_at ON questions (at);
CREATE INDEX IF NOT EXISTS feedback_trace ON feedback (trace_id);
"""


class FeedbackError(ValueError):
    """Bad feedback: ``code`` and what to fix (``status`` for HTTP)."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


class FeedbackStoreError(Exception):
    """``<storage>/feedback.sqlite`` cannot be read (damaged by a bad copy or restore, a disk error):
    the file, SQLite's reason and what to do, in one line (``docs-rag`` exits 74, as for any damaged
    storage). Not a ValueError: the input of the command is not at fault."""


def db_path(config: Config) -> Path:
    return Path(config.storage_path) / "feedback.sqlite"


def connect(config: Config, *, wait: float = 30) -> sqlite3.Connection:
    """A connection that waits up to ``wait`` seconds for another process's lock on the file.

    The file is in SQLite's WAL mode (set once, kept in the file): readers never wait for a writer, a
    writer never waits for readers, and a commit is one append. With the rollback journal, the short
    transactions of a few processes logging at once (``serve --workers``, the MCP server, CLI asks)
    starved one another past :data:`LOG_WAIT_SECONDS`, and their asks were answered but not logged.
    A file that cannot be switched (a read-only folder) is used in the mode it has."""
    p = db_path(config)
    require_storage_folder(p.parent)
    con = sqlite3.connect(p, timeout=wait)
    con.row_factory = sqlite3.Row
    try:
        con.execute("PRAGMA journal_mode = WAL")
    except sqlite3.OperationalError:  # read-only, or busy: this connection works in the file's present mode
        pass
    con.execute("PRAGMA secure_delete = ON")  # a forgotten question is overwritten, not left in a free page
    con.executescript(SCHEMA)
    return con


@contextlib.contextmanager
def _reading(config: Config) -> Iterator[sqlite3.Connection]:
    """A connection for the readers (``docs-rag feedback``, ``docs-rag gaps``, the ``doc_gaps`` asset):
    SQLite's errors become a :class:`FeedbackStoreError` that names the file, not a traceback."""
    try:
        with _lock:
            try:
                con = connect(config)
            except sqlite3.OperationalError:  # a full disk or a read-only mount: the schema cannot be written
                if not _holds_no_table(db_path(config)):
                    raise
                con = _no_question_logged()  # the file the first ask on a full disk left: nothing logged
            with con:
                yield con
    except sqlite3.Error as exc:
        path = db_path(config)
        damaged = getattr(exc, "sqlite_errorname", "") in ("SQLITE_NOTADB", "SQLITE_CORRUPT")
        todo = (f"move it aside (mv {path} {path}.damaged) and keep it for what can be recovered; a new, empty "
                "question log starts with the next ask" if damaged
                else "check the file, its folder's permissions and the disk, then run the command again")
        raise FeedbackStoreError(f"the question log {path} cannot be read ({exc}); {todo}") from None


def _holds_no_table(path: Path) -> bool:
    """Whether the log at ``path`` holds no table, read without writing (an empty file, or one whose first
    write a full disk cut short); False when it cannot be read even so."""
    from urllib.parse import quote

    try:
        con = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
        try:
            return con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
        finally:
            con.close()
    except sqlite3.Error:
        return False


def _no_question_logged() -> sqlite3.Connection:
    """An empty log in memory, for the readers of a file that holds none yet and cannot be given its
    tables (before, `feedback list` and `gaps` said it "cannot be read", exit 74)."""
    con = sqlite3.connect(":memory:")
    con.row_factory = sqlite3.Row
    con.executescript(SCHEMA)
    return con


def confidence(ans: Answer) -> dict[str, Any]:
    """The confidence signals an answer carries: its best citation score, the supported share of its
    citations, and ``low_confidence`` (refused, uncited statements dropped, or a citation not
    supported). A warning about the service (the LLM down and the answer extracted, the reranker
    failed, the conversation not saved) says nothing about the docs' coverage: before, it made a
    well-supported answer a doc gap, and an outage filled the report with questions the docs answer."""
    scores = [c.score for c in ans.citations]
    judged = [c.supported for c in ans.citations if c.supported is not None]
    supported = (sum(1 for s in judged if s) / len(judged)) if judged else None
    low = bool(ans.refused or ans.dropped or (supported is not None and supported < 1.0))
    return {"top_score": max(scores) if scores else None, "supported": supported, "low_confidence": low}


#: the most old asks one logged ask deletes (``api.keep_questions_days``): a long backlog, after an
#: upgrade or a change of the setting, goes over many asks instead of holding the log's lock for one
FORGET_BATCH = 500

#: the longest an answer waits for the question log (this process's other users of it, then SQLite's
#: lock): another process may hold the file's write lock for long (a backup, a VACUUM, an operator's
#: sqlite3 shell). Past it the ask is answered and not logged, with a warning; SQLite's 30 s held
#: every answer that long, one after another behind the process's lock. 2 s was too short for several
#: processes logging at once (SQLite's busy handler backs off up to 100 ms a try): asks were lost.
LOG_WAIT_SECONDS = 10.0


@contextlib.contextmanager
def _held(lock: threading.Lock, seconds: float) -> Iterator[None]:
    """``lock`` for the block, or :class:`TimeoutError` when it is not free within ``seconds``."""
    if not lock.acquire(timeout=seconds):
        raise TimeoutError(f"busy in this process for more than {seconds:g} s")
    try:
        yield
    finally:
        lock.release()


def log_answer(config: Config, question: str, ans: Answer, *, source: str | None = None,
               turns: list[str] | None = None) -> None:
    """Log one ask (skipped when ``api.log_questions`` is false) with its conversation (``ans.thread_id``,
    and ``turns``: the earlier questions a follow-up continues, oldest first), and delete the asks older
    than ``api.keep_questions_days`` that took no feedback. Never breaks an answer."""
    if not config.api.log_questions:
        return
    try:
        sig = confidence(ans)
        cites = [c.to_dict() for c in ans.citations]
        now, until = time.time(), time.monotonic() + LOG_WAIT_SECONDS  # one wait for both locks, not one each
        with _held(_lock, LOG_WAIT_SECONDS), connect(config, wait=max(0.0, until - time.monotonic())) as con:
            _add_thread_columns(con)
            con.execute(_INSERT, (ans.trace_id, now, question, source, int(ans.refused), int(sig["low_confidence"]),
                                  sig["top_score"], sig["supported"], ans.warning, ans.answer, json.dumps(cites),
                                  json.dumps(sorted({c.url for c in ans.citations})), ans.thread_id,
                                  json.dumps(turns or [])))
            _forget_batch(config, con, now)  # a bounded batch per ask: a backlog goes over many
    except Exception as exc:  # noqa: BLE001 - the log must never break an answer
        _not_logged(config, ans.trace_id, exc)


def _not_logged(config: Config, trace_id: str, exc: Exception) -> None:
    """One warning line per ask that was answered but not logged: the file and the cause (the storage's
    trouble, as a read-only folder, is no traceback on a user's terminal); a fault of this code keeps
    its traceback."""
    import logging

    known = isinstance(exc, (sqlite3.Error, OSError))
    cause = str(exc) if known else repr(exc)
    if getattr(exc, "sqlite_errorname", "") == "SQLITE_BUSY":
        cause += (f" for more than {LOG_WAIT_SECONDS:g} s: other connections held its write lock that long, "
                  "such as a backup, a VACUUM or a sqlite3 shell, or more processes on this storage logging at "
                  "once than it can take")
    logging.getLogger(__name__).warning(
        "the ask %s was answered but not logged in %s (%s); feedback on it answers unknown_trace_id and the "
        "doc-gap report does not count it", trace_id, db_path(config), cause, exc_info=None if known else exc)


#: the columns of the question log, in the order of its table
COLUMNS = ("trace_id", "at", "question", "source", "refused", "low_confidence", "top_score", "supported", "warning",
           "answer", "citations", "cited_urls", "thread_id", "turns")
#: by column name: a log written before :data:`THREAD_COLUMNS` has them added at its end
_INSERT = f"INSERT OR REPLACE INTO questions ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
#: the columns a log written before the conversation of an ask was logged lacks (its rows read as asks
#: with no earlier questions)
THREAD_COLUMNS = ("thread_id", "turns")


def _columns(con: sqlite3.Connection) -> set[str]:
    return {r[1] for r in con.execute("PRAGMA table_info(questions)")}


def _add_thread_columns(con: sqlite3.Connection) -> None:
    """Add :data:`THREAD_COLUMNS` to a log written before them (``CREATE TABLE IF NOT EXISTS`` leaves an
    existing table as it is); its rows keep NULL there."""
    have = _columns(con)  # one read of the table's columns per logged ask, not one per column
    for column in THREAD_COLUMNS:
        if column not in have:
            try:
                con.execute(f"ALTER TABLE questions ADD COLUMN {column} TEXT")
            except sqlite3.OperationalError as exc:
                if "duplicate column" not in str(exc):  # else another process added it just now
                    raise


def _kept_since(config: Config, now: float) -> float | None:
    """The time before which an ask is past ``api.keep_questions_days``; None: every ask is kept."""
    days = config.api.keep_questions_days
    return now - days * 86400 if days is not None else None


def _forget_batch(config: Config, con: sqlite3.Connection, now: float) -> int:
    """Delete up to :data:`FORGET_BATCH` asks older than ``api.keep_questions_days`` that took no
    feedback; how many went."""
    since = _kept_since(config, now)
    if since is None:
        return 0
    return con.execute("DELETE FROM questions WHERE rowid IN (SELECT rowid FROM questions WHERE at < ? AND "
                       "NOT EXISTS (SELECT 1 FROM feedback f WHERE f.trace_id = questions.trace_id) LIMIT ?)",
                       (since, FORGET_BATCH)).rowcount


def forget_old_questions(config: Config) -> int:
    """Delete every ask older than ``api.keep_questions_days`` that took no feedback (``docs-rag
    prune``: the log is also trimmed when nobody asks), a batch per transaction; how many went."""
    if config.api.keep_questions_days is None or not db_path(config).is_file():
        return 0
    total = 0
    while True:
        try:
            with _lock, connect(config) as con:
                n = _forget_batch(config, con, time.time())
        except sqlite3.Error as exc:
            raise FeedbackStoreError(f"the question log {db_path(config)} cannot be trimmed ({exc}); check the "
                                     "file, its folder's permissions and the disk, then run the command "
                                     "again") from None
        total += n
        if n < FORGET_BATCH:
            return total


def _where(source: str | None, gaps_only: bool, since: float | None = None) -> tuple[str, list[Any]]:
    sql, args = "WHERE 1=1", []
    if since is not None:
        sql += " AND at >= ?"
        args.append(since)
    if source:
        sql += " AND (source = ? OR source IS NULL)"
        args.append(source)
    if gaps_only:
        sql += " AND (refused = 1 OR low_confidence = 1)"
    return sql, args


class LogRows(list):
    """Rows read from the question log (or drafted from them); ``skipped``: one line for each row left out
    because a column that holds JSON does not (a bad hand edit or restore), naming the row and the column."""

    def __init__(self, rows: Iterable[dict[str, Any]] = (), skipped: list[str] | None = None) -> None:
        super().__init__(rows)
        self.skipped: list[str] = skipped or []

    def skipped_note(self, config: Config) -> str | None:
        """One line for the rows left out (None when none): the file, the rows and what to do."""
        if not self.skipped:
            return None
        shown = "; ".join(self.skipped[:3]) + (f"; and {len(self.skipped) - 3} more" if len(self.skipped) > 3 else "")
        return (f"{len(self.skipped)} damaged row(s) of the question log {db_path(config)} left out ({shown}); "
                "the other rows were read. Restore the column from a backup, or delete the row (its ask and "
                "feedback are then no longer read)")


#: the columns of the question log that hold JSON, and what each holds
_JSON_COLUMNS = {"citations": dict, "cited_urls": str, "turns": str}


def _decoded(rows: list[dict[str, Any]]) -> LogRows:
    """``rows`` with their JSON columns read; a row whose column is not a JSON list of what it holds is
    left out and named in ``skipped``, so one damaged row does not hide all the others."""
    out = LogRows()
    for r in rows:
        r.setdefault("thread_id", None)
        if r.get("turns") is None:  # logged before the conversation was: no earlier question known
            r["turns"] = "[]"
        try:
            for column, kind in _JSON_COLUMNS.items():
                if column in r:
                    r[column] = _json_list(r[column], kind, column)
        except ValueError as exc:
            out.skipped.append(f"trace_id {r.get('trace_id')!r}: {exc}")
        else:
            out.append(r)
    return out


def _json_list(text: Any, kind: type, column: str) -> list[Any]:
    try:
        value = json.loads(text) if isinstance(text, (str, bytes)) else None
    except ValueError as exc:
        raise ValueError(f"{column} is not JSON ({exc})") from None
    if not isinstance(value, list) or not all(isinstance(v, kind) for v in value):
        raise ValueError(f"{column} is not a JSON list of {'objects' if kind is dict else 'strings'}")
    return value


def questions(config: Config, *, source: str | None = None, gaps_only: bool = False,
              newest: int | None = None, since: float | None = None) -> LogRows:
    """Logged asks, oldest first; ``source``: those asked of that source or of all sources;
    ``gaps_only``: refused or low-confidence ones; ``newest``: only the newest N of them; ``since``:
    only those asked at or after this time. A damaged row is left out and named in ``skipped``."""
    if not db_path(config).is_file():
        return LogRows()
    where, args = _where(source, gaps_only, since)
    sql = f"SELECT * FROM questions {where} ORDER BY at"
    if newest is not None:
        sql = (f"SELECT * FROM (SELECT *, rowid AS n FROM questions {where} ORDER BY at DESC, n DESC LIMIT ?) "
               "ORDER BY at, n")
        args.append(newest)
    with _reading(config) as con:
        rows = _decoded([dict(r) for r in con.execute(sql, args)])
    for r in rows:
        r.pop("n", None)
        r["refused"], r["low_confidence"] = bool(r["refused"]), bool(r["low_confidence"])
    return rows


def count_questions(config: Config, *, source: str | None = None, gaps_only: bool = False,
                    since: float | None = None) -> int:
    """How many asks :func:`questions` would return without ``newest``."""
    if not db_path(config).is_file():
        return 0
    where, args = _where(source, gaps_only, since)
    with _reading(config) as con:
        return int(con.execute(f"SELECT COUNT(*) FROM questions {where}", args).fetchone()[0])


def gap_questions(config: Config, *, source: str | None = None) -> tuple[LogRows, int]:
    """The questions of the doc-gap report: the newest ``api.gap_questions`` refused or low-confidence
    asks (of ``source`` or of all sources), oldest first, and how many older ones are left out. The log
    keeps every ask and anyone who can ask adds to it; unbounded, the report would embed them all on
    every run and cluster them in memory quadratic in their number."""
    since = _kept_since(config, time.time())  # none older, even while a backlog is still being deleted
    logged = count_questions(config, source=source, gaps_only=True, since=since)
    rows = questions(config, source=source, gaps_only=True, newest=config.api.gap_questions, since=since)
    return rows, max(0, logged - len(rows) - len(rows.skipped))


def record_feedback(config: Config, trace_id: str, rating: str, comment: str = "") -> dict[str, Any]:
    """Store feedback for the answer with ``trace_id``; post it to LangSmith when configured."""
    if rating not in ("up", "down"):
        raise FeedbackError("invalid_rating", f"'rating' must be \"up\" or \"down\", not {rating!r}")
    try:
        with _lock, connect(config) as con:
            # stored in the same transaction that finds the answer, so that the question log's retention
            # (api.keep_questions_days) cannot delete the question in between and orphan the feedback
            cur = con.execute("INSERT INTO feedback (trace_id, at, rating, comment, langsmith) SELECT ?, ?, ?, ?, 0 "
                              "WHERE EXISTS (SELECT 1 FROM questions WHERE trace_id = ?)",
                              (trace_id, time.time(), rating, comment, trace_id))
            fid = cur.lastrowid if cur.rowcount else None
    except (sqlite3.Error, OSError) as exc:  # a read-only or full storage folder
        raise _unavailable(config, exc) from None
    if fid is None:
        hint = ("question logging is off (api.log_questions: false), so no answer can take feedback"
                if not config.api.log_questions else "use the trace_id of an answer from /ask (or the ask tool)")
        raise FeedbackError("unknown_trace_id", f"no answer with trace_id {trace_id!r}; {hint}", 404)
    sent = _to_langsmith(trace_id, rating, comment)
    if sent:
        try:
            with _lock, connect(config) as con:
                con.execute("UPDATE feedback SET langsmith = 1 WHERE id = ?", (fid,))
        except (sqlite3.Error, OSError):  # stored; only the flag that it reached LangSmith is lost
            pass
    return {"id": fid, "trace_id": trace_id, "rating": rating, "comment": comment, "langsmith": sent}


def _unavailable(config: Config, exc: Exception) -> FeedbackError:
    """The store cannot be opened or written (a read-only or full storage folder): the server's fault.
    The file and the error go to the log, not to the client."""
    import logging

    logging.getLogger(__name__).warning("feedback cannot be stored in %s: %s", db_path(config), exc)
    return FeedbackError("feedback_unavailable", "feedback cannot be stored on this server (its storage cannot be "
                         "written; the server log says why)", 503)


#: the longest a feedback request waits for LangSmith (``langsmith: false`` after it)
LANGSMITH_FEEDBACK_SECONDS = 5.0


def _to_langsmith(trace_id: str, rating: str, comment: str) -> bool:
    from . import tracing

    if not tracing.enabled():
        return False

    def send() -> None:
        from langsmith.utils import LangSmithNotFoundError

        client = tracing.client()
        until = time.monotonic() + LANGSMITH_FEEDBACK_SECONDS
        while True:  # once: langsmith's own 10 attempts with back-off went on after the request answered
            try:
                client.create_feedback(run_id=trace_id, key="user_rating", score=1.0 if rating == "up" else 0.0,
                                       value=rating, comment=comment or None, trace_id=trace_id,
                                       stop_after_attempt=1)
                break
            except LangSmithNotFoundError:  # the run not ingested yet (its runs are sent in the background)
                if time.monotonic() + 0.5 > until:
                    raise
                time.sleep(0.5)
        client.flush(timeout=LANGSMITH_FEEDBACK_SECONDS)

    import logging

    try:  # bounded: a LangSmith that hangs must not hold the request (nor, a few at a time, the server)
        sent, _ = tracing.within(LANGSMITH_FEEDBACK_SECONDS, send)
    except Exception as exc:  # noqa: BLE001 - LangSmith down or refusing: the local copy is kept
        # one line, the key written *** (an endpoint that refuses it may repeat it in its answer)
        said = tracing.without_key(" ".join(str(exc).split()))[:300]
        logging.getLogger(__name__).warning("LangSmith feedback failed for %s (%s: %s); the local copy is kept",
                                            trace_id, type(exc).__name__, said)
        return False
    if not sent:
        logging.getLogger(__name__).warning("LangSmith feedback for %s not confirmed within %g s; the local copy "
                                            "is kept", trace_id, LANGSMITH_FEEDBACK_SECONDS)
    return sent


def feedback_rows(config: Config, *, rating: str | None = None, source: str | None = None) -> LogRows:
    """Feedback joined with its logged answer (question, answer, citations, scores), oldest first; a
    rating whose logged answer is damaged is left out and named in ``skipped``; ``source``: only those
    asked of that source or of all sources."""
    if not db_path(config).is_file():
        return LogRows()
    sql = ("SELECT f.id, f.trace_id, f.at, f.rating, f.comment, f.langsmith, q.question, q.source, q.answer, "
           "q.citations, q.cited_urls, q.refused, q.top_score, q.supported, {thread} FROM feedback f "
           "JOIN questions q ON q.trace_id = f.trace_id")
    args: list[Any] = []
    sql += " WHERE 1=1"
    if rating:
        sql += " AND f.rating = ?"
        args.append(rating)
    if source:
        sql += " AND (q.source = ? OR q.source IS NULL)"
        args.append(source)
    with _reading(config) as con:
        have = _columns(con)  # a log written before the thread columns is read as it is (never altered here)
        thread = ", ".join(f"q.{c}" if c in have else f"NULL AS {c}" for c in THREAD_COLUMNS)
        rows = _decoded([dict(r) for r in con.execute(sql.format(thread=thread) + " ORDER BY f.id", args)])
    for r in rows:
        r["refused"] = bool(r["refused"])
    return rows


def _slug(text: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())[:6]) or "case"


def _case_id(trace_id: str, turns: Iterable[str], question: str) -> str:
    """``fb-<12 hex digits>-<first six words>``: the digits are of the SHA-1 of the whole trace id, the
    earlier questions and the question, so no two drafts share an id. The first 8 characters of a
    trace id alone were not unique: under LangSmith tracing a trace id is a UUIDv7, whose first 8 hex
    digits are the same for every answer of about a minute."""
    import hashlib

    key = json.dumps([trace_id, list(turns), question], ensure_ascii=False)
    return f"fb-{hashlib.sha1(key.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}-{_slug(question)}"


def draft_cases(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Thumbs-down answers as draft eval cases (one per question and earlier questions), marked for
    review in ``note``. A follow-up carries the earlier questions of its conversation as ``turns``, so
    that ``docs-rag eval`` asks it as the follow-up it was: "how is it retried?" alone is another question.

    Best known: an answer that was *given* and judged wrong keeps its cited pages as
    ``expected_urls`` with ``should_refuse: false`` (a reviewer corrects the pages); a *refused*
    answer judged wrong has no known page, so it is drafted as ``should_refuse: true``, and the note
    says to flip it once the right page is known (or the docs are written).
    """
    out, seen = [], set()
    for r in rows:
        key = (tuple(r.get("turns") or ()), r["question"])
        if r["rating"] != "down" or key in seen:
            continue
        seen.add(key)
        urls = [u for u in r["cited_urls"] if u]
        answered = not r["refused"] and bool(urls)
        asked = (f"asked of source {r['source']} (its cases file: eval/{r['source']}.jsonl)" if r.get("source")
                 else "asked of all sources")
        note = (f"DRAFT from thumbs-down feedback (trace {r['trace_id']}, {asked}); REVIEW: "
                + ("the answer cited these pages and was judged wrong: set expected_urls to the right pages"
                   if answered else "the question was refused: if the docs cover it, set should_refuse false "
                                    "and expected_urls to the page")
                + (f". Comment: {r['comment']}" if r["comment"] else ""))
        case = {"id": _case_id(r["trace_id"], key[0], r["question"]), "question": r["question"],
                "should_refuse": not answered, "expected_urls": urls if answered else [],
                "expected_keywords": [], "category": "answerable" if answered else "refuse", "note": note}
        if r.get("turns"):
            case["turns"] = list(r["turns"])
        out.append(case)
    return out


def export_cases(config: Config, out: Path, *, source: str | None = None) -> LogRows:
    """Write the draft cases to ``out`` whole or not at all (a kill or a full disk mid-write leaves
    what was there); ``source``: only the questions asked of that source (or of all sources), as
    ``docs-rag gaps --source`` reads them. Whether ``out`` may be replaced is the caller's to decide: it may hold cases a
    reviewer edited. With no case nothing is written (``docs-rag eval`` refuses a file of no cases, and
    ``out`` is left as it was)."""
    from .files import atomic_write

    rows = feedback_rows(config, rating="down", source=source)
    cases = LogRows(draft_cases(rows), rows.skipped)
    if not cases:
        return cases
    atomic_write(out, "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases).encode("utf-8"))
    return cases
