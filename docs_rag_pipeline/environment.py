"""The ``DOCS_RAG_*`` environment variables that tune a deployment, each read and checked here, once.

A bad value is a :class:`~.config.ConfigError` (``docs-rag`` prints ``error: …`` and exits with status 2)
that names the variable, the value and the fix: ``DOCS_RAG_LOCK_TIMEOUT=nan`` waited for a held lock
forever, ``DOCS_RAG_STORAGE_TIMEOUT=inf`` was a LanceDB traceback, ``DOCS_RAG_DAGSTER_IO=bogus://x`` an
ingest that failed without a word, ``DOCS_RAG_WRITER_POOL="lancedb writer"`` a Dagster traceback at import.
An unset or blank variable is the default. ``docs-rag ingest`` reads them all before Dagster starts
(:func:`check_environment`).
"""

from __future__ import annotations

import math
import os
import re
from functools import lru_cache

from .config import MAX_SECONDS, ConfigError

LOCK_TIMEOUT_DEFAULT = 1800.0
STORAGE_TIMEOUT_DEFAULT = 30.0


def _raw(name: str) -> str | None:
    """The variable's value, None when it is unset or blank (a template value that came out empty)."""
    raw = os.environ.get(name)
    return raw if raw and raw.strip() else None


def _seconds(name: str, default: float, example: str, ceiling: float | None = None) -> float:
    """A positive, finite number of seconds (at most ``ceiling``)."""
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= (ceiling or math.inf)):
        most = f" (at most {ceiling:g})" if ceiling else ""
        raise ConfigError(f"{name}: {raw!r} is not a positive number of seconds{most}; "
                          f"set it to e.g. {example} or unset it (default {default:g})")
    return value


def lock_timeout() -> float:
    """``DOCS_RAG_LOCK_TIMEOUT``: how long a process waits for a lock another one holds (default 1800 s)."""
    return _seconds("DOCS_RAG_LOCK_TIMEOUT", LOCK_TIMEOUT_DEFAULT, "600")


def storage_timeout() -> float:
    """``DOCS_RAG_STORAGE_TIMEOUT``: how long one request to the object store may take (default 30 s, at
    most a day: LanceDB cannot take a far larger one)."""
    return _seconds("DOCS_RAG_STORAGE_TIMEOUT", STORAGE_TIMEOUT_DEFAULT, "60", MAX_SECONDS)


#: a Dagster pool name (Dagster's own rule, checked when the definitions are built)
_POOL_RE = re.compile(r"\S+")


def writer_pool() -> str | None:
    """``DOCS_RAG_WRITER_POOL``: the Dagster concurrency pool of the steps that write LanceDB (None: none)."""
    raw = _raw("DOCS_RAG_WRITER_POOL")
    if raw is not None and not _POOL_RE.fullmatch(raw):
        raise ConfigError(f"DOCS_RAG_WRITER_POOL: {raw!r} is not a valid Dagster pool name (no spaces); "
                          "set it to e.g. lancedb_writer, or unset it")
    return raw


def dagster_io() -> str | None:
    """``DOCS_RAG_DAGSTER_IO``: where the Parquet between assets goes (None: the default folder)."""
    raw = _raw("DOCS_RAG_DAGSTER_IO")
    if raw is not None:
        _check_io(raw)
    return raw


@lru_cache(maxsize=8)
def _check_io(value: str) -> None:
    """A URI must have a scheme fsspec can open (its package installed: ``s3fs`` for ``s3://``); a folder
    must exist or be creatable (it is created here, as the IO manager would at the first step)."""
    fix = "set it to a folder every step can write, or an object-store URI such as s3://my-bucket/dagster-io"
    if "://" in value:
        import fsspec

        scheme = value.partition("://")[0]
        try:
            fsspec.get_filesystem_class(scheme.lower())
        except ImportError as exc:
            raise ConfigError(f"DOCS_RAG_DAGSTER_IO: {value!r} needs a package that is not installed ({exc}); "
                              f"install it, or {fix}") from None
        except ValueError:
            raise ConfigError(f"DOCS_RAG_DAGSTER_IO: {value!r}: {scheme + '://'!r} is not a storage scheme "
                              f"fsspec knows; {fix}") from None
        return
    try:
        os.makedirs(os.path.expanduser(value), exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"DOCS_RAG_DAGSTER_IO: the folder {value!r} cannot be created ({exc.strerror or exc}); "
                          f"{fix}") from None


def check_environment() -> None:
    """Every variable above, checked: ``docs-rag ingest`` calls it before Dagster starts."""
    lock_timeout()
    storage_timeout()
    writer_pool()
    dagster_io()
