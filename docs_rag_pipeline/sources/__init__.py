"""Sources: where pages come from. One module per kind; :func:`source_for` picks it."""

from __future__ import annotations

import importlib
from pathlib import Path

from .base import ScanResult, Source, content_hash

#: kind → "module:Class" (imported on use, so a kind's dependencies load only when configured)
SOURCE_KINDS = {"local": "local:LocalSource", "web": "web:WebSource", "git": "git:GitSource"}


def source_for(cfg, *, workdir: Path) -> Source:  # noqa: ANN001 - a SourceConfig
    try:
        module, cls = SOURCE_KINDS[cfg.kind].split(":")
    except KeyError:
        raise ValueError(f"sources: kind {cfg.kind!r} is not supported; use one of {', '.join(SOURCE_KINDS)}") from None
    return getattr(importlib.import_module(f".{module}", __name__), cls)(cfg, workdir=workdir)


__all__ = ["SOURCE_KINDS", "ScanResult", "Source", "content_hash", "source_for"]
