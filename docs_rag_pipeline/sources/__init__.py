"""Sources: where pages come from. One module per kind; :func:`source_for` picks it."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

from .base import ScanResult, Source, content_hash

#: kind → "module:Class" (imported on use, so a kind's dependencies load only when configured)
SOURCE_KINDS = {"local": "local:LocalSource", "web": "web:WebSource", "git": "git:GitSource"}

#: kind → the names in a source's folder that only a source of that kind writes: the git clone and
#: its synced-commit state (see :mod:`.git`), the web crawl's raw-HTML cache (see :mod:`.web`), the URLs a
#: local folder's front matter gave (see :mod:`.local`). Another kind under the same name never reads them.
KIND_STATE = {"git": ("clone", "state.json"), "web": ("raw",), "local": ("front_matter_urls.json",)}


def state_of_other_kinds(kind: str, workdir: Path) -> list[Path]:
    """What a source of another kind left in ``workdir`` (a git clone after the source became local)."""
    return [Path(workdir) / name for other, names in KIND_STATE.items() if other != kind for name in names
            if (Path(workdir) / name).is_symlink() or (Path(workdir) / name).exists()]


def remove_state(paths: list[Path]) -> None:
    """Delete what :func:`state_of_other_kinds` listed (a link itself, never what it points to)."""
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def source_for(cfg, *, workdir: Path) -> Source:  # noqa: ANN001 - a SourceConfig
    try:
        module, cls = SOURCE_KINDS[cfg.kind].split(":")
    except KeyError:
        raise ValueError(f"sources: kind {cfg.kind!r} is not supported; use one of {', '.join(SOURCE_KINDS)}") from None
    return getattr(importlib.import_module(f".{module}", __name__), cls)(cfg, workdir=workdir)


__all__ = ["KIND_STATE", "SOURCE_KINDS", "ScanResult", "Source", "content_hash", "remove_state", "source_for",
           "state_of_other_kinds"]
