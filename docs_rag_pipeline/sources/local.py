"""``kind: local`` — a folder of documents."""

from __future__ import annotations

import re
from pathlib import Path

from ..config import SourceConfig
from ..metadata_rules import glob_match
from ..parsing import format_for_path
from ..records import Page
from .base import Log, ScanResult, Source, content_hash


def file_url(rel: str, *, base_url: str | None, url_template: str | None, root: Path) -> str:
    """The public URL of a file: ``url_template`` with ``{path}`` (no extension, no final
    ``index``), else ``base_url`` + the relative path, else a ``file://`` URL."""
    if url_template:
        stem = re.sub(r"\.[A-Za-z0-9]+$", "", rel)
        parts = stem.split("/")
        if parts and parts[-1] in ("index", "README", "readme"):
            parts.pop()
        url = url_template.replace("{path}", "/".join(parts))
        scheme, sep, rest = url.partition("://")
        return scheme + sep + re.sub(r"/{2,}", "/", rest) if sep else re.sub(r"/{2,}", "/", url)
    if base_url:
        return base_url.rstrip("/") + "/" + rel
    return (root / rel).resolve().as_uri()


class LocalSource(Source):
    cfg: SourceConfig

    def files(self) -> list[tuple[str, Path]]:
        root = self.cfg.path
        out = []
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root).as_posix()
            if not p.is_file() or any(part.startswith(".") for part in rel.split("/")):
                continue
            if not any(glob_match(rel, g) for g in self.cfg.include):
                continue
            if any(glob_match(rel, g) for g in self.cfg.exclude):
                continue
            if format_for_path(rel) is None:
                continue
            out.append((rel, p))
        return out

    def url_for(self, rel: str) -> str:
        return file_url(rel, base_url=self.cfg.base_url, url_template=self.cfg.url_template, root=self.cfg.path)

    def scan(self, state: dict[str, str], *, log: Log, mode: str = "refresh") -> ScanResult:
        pages: list[Page] = []
        for rel, p in self.files():
            data = p.read_bytes()
            url = self.url_for(rel)
            digest = content_hash(data)
            status = self.status(url, digest, state, mode)
            body = data.decode("utf-8", errors="replace") if status != "unchanged" else None
            pages.append(Page(source=self.name, page_url=url, path=rel, content_hash=digest,
                              format=format_for_path(rel) or "markdown", body=body, status=status))
        present = {p.page_url for p in pages}
        deleted = sorted(u for u in state if u not in present)
        log(f"[DISCOVER] {self.name}: {len(pages)} files under {self.cfg.path}, {len(deleted)} gone")
        return ScanResult(pages=pages, deleted=deleted, notes={"files": len(pages)})
