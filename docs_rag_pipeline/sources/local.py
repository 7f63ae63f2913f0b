"""``kind: local`` — a folder of documents.

Also home of what ``kind: git`` shares with it: how a file's path maps to its public URL
(:func:`map_url`: ``url_rules``, then ``url_template``, then ``base_url``) and how an AsciiDoc file
is prepared (its ``include::`` directives resolved inside the folder, :func:`asciidoc_body`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Sequence

from ..config import SourceConfig, UrlRule
from ..metadata_rules import glob_match
from ..parsing import format_for_path
from ..records import Page
from .base import Log, ScanResult, Source, content_hash

_INDEX_NAMES = ("index", "README", "readme")


def path_glob(rel: str, pattern: str) -> bool:
    """``include``/``exclude`` matching: :func:`glob_match`, where a ``/**/`` inside the pattern
    also matches a single ``/`` (zero folders), e.g. ``modules/*/pages/**/*.adoc`` matches
    ``modules/ROOT/pages/index.adoc``."""
    if glob_match(rel, pattern):
        return True
    return "/**/" in pattern and glob_match(rel, pattern.replace("/**/", "/"))


def _collapse(url: str) -> str:
    """Collapse repeated slashes, except the ``//`` after the scheme."""
    scheme, sep, rest = url.partition("://")
    return scheme + sep + re.sub(r"/{2,}", "/", rest) if sep else re.sub(r"/{2,}", "/", url)


def template_path(rel: str) -> str:
    """``{path}`` of a url_template: the relative path without its extension and without a final
    ``index`` (or ``README``) segment: ``guides/index.mdx`` → ``guides``, ``index.mdx`` → ``''``."""
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", rel)
    parts = [p for p in stem.split("/") if p]
    if parts and parts[-1] in _INDEX_NAMES:
        parts.pop()
    return "/".join(parts)


def map_url(rel: str, *, url_rules: Sequence[UrlRule] = (), url_template: str | None = None,
            base_url: str | None = None) -> str | None:
    """The public URL of the file at ``rel`` (a POSIX path relative to the source's root), or None
    when nothing maps it.

    ``url_rules`` are tried in order: the first whose ``match`` regex is found in the path gives
    ``url`` with its groups expanded (``\\1``, ``\\g<name>``; a group that did not take part is
    empty). Else ``url_template`` with ``{path}`` (see :func:`template_path`), else ``base_url`` +
    the path. Repeated slashes collapse.
    """
    for rule in url_rules:
        m = re.search(rule.match, rel)
        if m:
            return _collapse(m.expand(rule.url))
    if url_template:
        return _collapse(url_template.replace("{path}", template_path(rel)))
    if base_url:
        return base_url.rstrip("/") + "/" + rel
    return None


def file_url(rel: str, *, base_url: str | None, url_template: str | None, root: Path,
             url_rules: Sequence[UrlRule] = ()) -> str:
    """The public URL of a file (see :func:`map_url`), else its ``file://`` URL."""
    url = map_url(rel, url_rules=url_rules, url_template=url_template, base_url=base_url)
    return url if url is not None else (root / rel).resolve().as_uri()


def asciidoc_body(text: str, *, path: str, read: Callable[[str], str | None],
                  attributes: dict[str, str] | None = None) -> tuple[str, dict[str, bool], list[str]]:
    """An AsciiDoc file as handed to the parser: Antora component attributes above it and its
    includes resolved with ``read(repo_path)``. Returns ``(body, deps, unresolved)``: ``deps``
    maps every file the includes named (and the ``antora.yml`` looked for) to whether it exists."""
    from ..parsing.asciidoc import prepare_asciidoc

    body, res = prepare_asciidoc(text, path=path, read=read, attributes=attributes)
    return body, res.deps, res.unresolved


class LocalSource(Source):
    cfg: SourceConfig

    def files(self) -> list[tuple[str, Path]]:
        root = self.cfg.path
        out = []
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root).as_posix()
            if not p.is_file() or any(part.startswith(".") for part in rel.split("/")):
                continue
            if not any(path_glob(rel, g) for g in self.cfg.include):
                continue
            if any(path_glob(rel, g) for g in self.cfg.exclude):
                continue
            if format_for_path(rel) is None:
                continue
            out.append((rel, p))
        return out

    def url_for(self, rel: str) -> str:
        return file_url(rel, base_url=self.cfg.base_url, url_template=self.cfg.url_template, root=self.cfg.path,
                        url_rules=self.cfg.url_rules)

    def _read(self, rel: str) -> str | None:
        root = self.cfg.path.resolve()
        p = (root / rel).resolve()
        try:
            p.relative_to(root)
        except ValueError:
            return None
        return p.read_text(encoding="utf-8", errors="replace") if p.is_file() else None

    def scan(self, state: dict[str, str], *, log: Log, mode: str = "refresh") -> ScanResult:
        pages: list[Page] = []
        unmapped: list[str] = []
        unresolved = 0
        seen: dict[str, str] = {}
        for rel, p in self.files():
            data = p.read_bytes()
            url = map_url(rel, url_rules=self.cfg.url_rules, url_template=self.cfg.url_template,
                          base_url=self.cfg.base_url)
            if url is None:
                url = (self.cfg.path / rel).resolve().as_uri()
                if self.cfg.url_rules or self.cfg.url_template:
                    unmapped.append(rel)
                    log(f"[DISCOVER] {self.name}: warning: no url_rules entry maps {rel}; indexed as {url}")
            if url in seen:
                log(f"[DISCOVER] {self.name}: warning: {rel} maps to {url} like {seen[url]}; skipped")
                continue
            seen[url] = rel
            fmt = format_for_path(rel) or "markdown"
            meta: dict[str, object] = {}
            text = None
            if fmt == "asciidoc":
                text, _deps, missing = asciidoc_body(data.decode("utf-8", errors="replace"), path=rel, read=self._read,
                                                    attributes=self.cfg.asciidoc_attributes)
                digest = content_hash(text)
                if missing:
                    unresolved += len(missing)
                    meta["unresolved_includes"] = missing
                    for target in missing:
                        log(f"[DISCOVER] {self.name}: {rel}: include::{target}[] cannot be resolved; skipped")
            else:
                digest = content_hash(data)
            status = self.status(url, digest, state, mode)
            body = None
            if status != "unchanged":
                body = text if text is not None else data.decode("utf-8", errors="replace")
            pages.append(Page(source=self.name, page_url=url, path=rel, content_hash=digest, format=fmt,
                              body=body, status=status, metadata=meta))
        present = {p.page_url for p in pages}
        deleted = sorted(u for u in state if u not in present)
        log(f"[DISCOVER] {self.name}: {len(pages)} files under {self.cfg.path}, {len(deleted)} gone")
        notes: dict[str, object] = {"files": len(pages)}
        if unmapped:
            notes["unmapped_files"] = len(unmapped)
        if unresolved:
            notes["unresolved_includes"] = unresolved
        return ScanResult(pages=pages, deleted=deleted, notes=notes)
