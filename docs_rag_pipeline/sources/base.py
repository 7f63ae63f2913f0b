"""What every source yields: the current pages with their status against the indexed state."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..records import Page

Log = Callable[[str], None]


def content_hash(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


@dataclass(slots=True)
class ScanResult:
    pages: list[Page]  # every current page: new/changed ones carry their body
    deleted: list[str] = field(default_factory=list)  # page URLs gone from the source
    complete: bool = True  # False when the scan stopped early: then nothing may be deleted
    notes: dict[str, object] = field(default_factory=dict)  # counts and reasons for the metadata


class Source(ABC):
    """A documentation source. ``scan`` compares what is there now with ``state``
    (page_url → content_hash of what is indexed) and loads bodies only where needed.

    ``mode``: ``refresh`` (what changed since the last scan), ``reparse`` (every page again, from
    the source's local cache, no network: for a parser change) or ``force`` (fetch everything
    again). In ``reparse`` and ``force`` modes every page is reported ``changed`` (or ``new``).
    ``workdir`` is the source's own folder for state and caches.
    """

    name: str

    def __init__(self, cfg, *, workdir: Path) -> None:  # noqa: ANN001 - a SourceConfig
        self.cfg = cfg
        self.name = cfg.name
        self.workdir = workdir

    @abstractmethod
    def scan(self, state: dict[str, str], *, log: Log, mode: str = "refresh") -> ScanResult: ...

    @staticmethod
    def status(page_url: str, digest: str, state: dict[str, str], mode: str = "refresh") -> str:
        if page_url not in state:
            return "new"
        if mode != "refresh":
            return "changed"
        return "unchanged" if state[page_url] == digest else "changed"
