"""Writing a file whole or not at all; a path's ``~`` expanded with an error that says what is wrong."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path


def _umask() -> int:
    """The process's umask, read without changing it (``os.umask`` sets it, for every thread)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


#: what the OS says when a disk is full: no space left, or the user's quota used up
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` is the OS saying that a disk is full (ENOSPC, EDQUOT)."""
    return isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file beside it, renamed over it: a kill or a full
    disk mid-write leaves the old file (or none), never a cut one. The file gets the mode of the one it
    replaces, else the one ``open()`` would give it (mkstemp's 0600 made an exported cases file or the
    eval results unreadable to the rest of a team)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def expand_home(value: str) -> Path:
    """``Path(value).expanduser()``; a ``~user`` that names no user (or ``~`` with no home folder) is a
    ValueError whose message says so, where expanduser's RuntimeError named neither value nor fix."""
    try:
        return Path(value).expanduser()
    except RuntimeError:
        user = value[1:].split("/", 1)[0]
        who = (f"no home folder for the user {user!r} (no such user?)" if user else
               "no home folder for this user (HOME is not set and the user has no passwd entry)")
        raise ValueError(f"{value!r}: {who}; write the folder's full path") from None


def in_the_way(folder: Path) -> tuple[str, str] | None:
    """What keeps ``folder`` from being a folder that can be made, as ``(what is wrong, what to do)``: it,
    or a folder on the way to it, is a file, or a link to something that does not exist (a disk that is not
    mounted). None when nothing is in the way: then ``mkdir``'s error (no permission, a read-only disk)
    says it. Read when ``mkdir`` failed: its ``File exists`` or ``Not a directory`` say neither."""
    for p in (folder, *folder.parents):
        try:
            if p.is_symlink() and not p.exists():
                return (f"{p} is a link to {os.readlink(p)}, which does not exist",
                        "create the folder it points to (a disk that is not mounted?) or remove the link")
            if p.exists() and not p.is_dir():
                return f"{p} is a file, not a folder", "move that file away"
        except OSError:
            return None
    return None
