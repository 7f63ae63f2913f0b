"""Writer exclusion that dies with its holder: OS file locks (``flock``) under ``<storage>/locks/``.

Two kinds of lock, always taken in this order:

- ``source-<name>``: one process at a time scans a source (its per-source state: a git clone, the
  web manifest and raw cache) and, for ``docs-rag ingest`` and :func:`refresh.refresh`, refreshes it
  end to end.
- ``writer``: one process at a time writes the LanceDB tables of a storage (the chunks table, the
  embedding cache, index builds, pruning).

The kernel releases an ``flock`` when its process dies (SIGKILL, OOM, a closed laptop), so a killed
ingest never wedges the next one, whatever Dagster instance (or none) ran it. A waiter prints who
holds the lock (pid, what it is doing, since when) every few seconds and gives up with a clear error
after ``timeout`` seconds (``DOCS_RAG_LOCK_TIMEOUT``, default 1800). Re-entrant within a process:
``docs-rag ingest`` holds a source's lock while its Dagster steps, in the same process, take it again.

Each hold is appended to ``<storage>/locks/<name>.history.jsonl`` when it ends (pid, purpose, when it
was asked for, acquired and released; rotated at 256 KiB), so ``docs-rag ingest --parallel N`` can be
audited: the writer holds of its processes never overlap. A waiter that got the lock says how long it
waited.

The locks are local files: they serialize the processes of one machine (one Dagster deployment). For
``storage: s3://…`` the lock folder is under the local cache folder, so writers of one object store
must run on one machine at a time (docs/deploy.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from .config import ConfigError
from .environment import LOCK_TIMEOUT_DEFAULT, lock_timeout

DEFAULT_TIMEOUT_SECONDS = LOCK_TIMEOUT_DEFAULT
PROGRESS_EVERY_SECONDS = 5.0
HISTORY_MAX_BYTES = 256 * 1024
_POLL_SECONDS = 0.2

Log = Callable[[str], None]


class LockTimeout(RuntimeError):
    """Another process held the lock longer than we were willing to wait."""


class StorageNotWritable(ConfigError):
    """The lock file cannot be created: the storage folder is read-only, full or not a folder."""


def default_timeout() -> float:
    """``DOCS_RAG_LOCK_TIMEOUT`` (default 1800), checked (environment.py): ``nan`` waited forever."""
    return lock_timeout()


@dataclass
class _Held:
    fd: int
    count: int
    owner: int  # thread ident


_held: dict[str, _Held] = {}
_registry_lock = threading.Lock()
_thread_locks: dict[str, threading.Lock] = {}


def lock_path(storage: str | os.PathLike[str], name: str) -> Path:
    return Path(storage) / "locks" / f"{name}.lock"


def history_path(storage: str | os.PathLike[str], name: str) -> Path:
    return Path(storage) / "locks" / f"{name}.history.jsonl"


def history(storage: str | os.PathLike[str], name: str) -> list[dict]:
    """The finished holds of lock ``name``, oldest first (times: seconds since the epoch)."""
    out: list[dict] = []
    for p in (history_path(storage, name).with_suffix(".jsonl.1"), history_path(storage, name)):
        try:
            lines = p.read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a crash
    return out


def _record(storage: str | os.PathLike[str], name: str, entry: dict) -> None:
    """Append one finished hold to the lock's history (best effort: never fails the work it guarded)."""
    path = history_path(storage, name)
    try:
        if path.exists() and path.stat().st_size > HISTORY_MAX_BYTES:
            os.replace(path, path.with_suffix(".jsonl.1"))
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
    except OSError:
        pass


def holder(path: Path) -> dict | None:
    """What the process holding (or last holding) ``path`` wrote about itself."""
    try:
        return json.loads(path.read_text() or "null")
    except (OSError, ValueError):
        return None


def _describe(info: dict | None) -> str:
    if not info:
        return "another process"
    return (f"pid {info.get('pid')} on {info.get('host')} ({info.get('purpose')}, since {info.get('since')})")


@contextlib.contextmanager
def hold(storage: str | os.PathLike[str], name: str, *, purpose: str, log: Log | None = None,
         timeout: float | None = None) -> Iterator[None]:
    """Hold lock ``name`` of a storage folder for the ``with`` block (waiting for it if needed)."""
    path = lock_path(storage, name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _not_writable(storage, name, purpose, path, exc) from None
    key = str(path.resolve())
    me = threading.get_ident()
    with _registry_lock:
        held = _held.get(key)
        if held is not None and held.owner == me:
            held.count += 1
            reentrant = True
        else:
            reentrant = False
            tlock = _thread_locks.setdefault(key, threading.Lock())
    if reentrant:
        try:
            yield
        finally:
            with _registry_lock:
                _held[key].count -= 1
        return

    timeout = default_timeout() if timeout is None else timeout
    deadline = time.monotonic() + timeout
    next_note = 0.0
    asked = time.time()
    waited = False

    def wait_once() -> None:
        nonlocal next_note, waited
        waited = True
        now = time.monotonic()
        info = holder(path)
        if now >= deadline:
            raise LockTimeout(f"gave up after {timeout:.0f} s waiting for the {name} lock of {storage} held by "
                              f"{_describe(info)}; wait for it to finish, stop it, or raise DOCS_RAG_LOCK_TIMEOUT")
        if log is not None and now >= next_note:
            log(f"[LOCK] waiting for {_describe(info)} that holds the {name} lock")
            next_note = now + PROGRESS_EVERY_SECONDS

    while not tlock.acquire(timeout=_POLL_SECONDS):  # another thread of this process holds it
        wait_once()
    fd = -1
    try:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise _not_writable(storage, name, purpose, path, exc) from None
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                wait_once()
                time.sleep(_POLL_SECONDS)
        info = {"pid": os.getpid(), "host": socket.gethostname(), "purpose": purpose,
                "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        with _registry_lock:
            _held[key] = _Held(fd=fd, count=1, owner=me)
        acquired = time.time()
        if waited and log is not None:
            log(f"[LOCK] got the {name} lock after waiting {acquired - asked:.1f} s")
        try:
            yield
        finally:
            with _registry_lock:
                del _held[key]
            _record(storage, name, {**info, "asked": asked, "acquired": acquired, "released": time.time(),
                                    "waited": waited})
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        if fd >= 0:
            os.close(fd)
        tlock.release()


def _not_writable(storage: str | os.PathLike[str], name: str, purpose: str, path: Path,
                  exc: OSError) -> StorageNotWritable:
    from .files import in_the_way

    if (way := in_the_way(path.parent)) is not None:  # "File exists" is no permission problem
        return StorageNotWritable(f"storage: {storage}: {purpose} needs its {name} lock file {path}, and "
                                  f"{way[0]}; {way[1]}, or point `storage` at another folder")
    return StorageNotWritable(f"storage: {storage} cannot be written ({exc.strerror or exc}); {purpose} needs its "
                              f"{name} lock file {path}: make the folder writable (a read-only mount serves "
                              "search and ask, not writes) or point `storage` at another folder")


def source_lock(storage: str | os.PathLike[str], source: str, *, purpose: str,
                log: Log | None = None) -> contextlib.AbstractContextManager[None]:
    """The lock on one source's state (and, for a whole refresh, on refreshing it)."""
    return hold(storage, f"source-{source}", purpose=purpose, log=log)


def writer_lock(storage: str | os.PathLike[str], *, purpose: str,
                log: Log | None = None) -> contextlib.AbstractContextManager[None]:
    """The lock on writing the storage's LanceDB tables."""
    return hold(storage, "writer", purpose=purpose, log=log)
