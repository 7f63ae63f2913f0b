"""Parsers turning documents (Markdown, MDX, HTML) into :class:`~docs_rag_pipeline.records.ParsedPage`."""

from __future__ import annotations

from pathlib import PurePosixPath

from ..records import ParsedPage
from .errors import ParseError
from .html import parse_html
from .markdown import parse_markdown

__all__ = ["FORMATS", "ParseError", "format_for_path", "parse_document", "parse_html", "parse_markdown"]

FORMATS = ("markdown", "mdx", "html")
_EXTENSIONS = {".md": "markdown", ".markdown": "markdown", ".mdx": "mdx", ".html": "html", ".htm": "html"}


def format_for_path(path: str) -> str | None:
    """The document format for a file path or URL from its extension, or None when unsupported."""
    clean = path.split("?", 1)[0].split("#", 1)[0]
    return _EXTENSIONS.get(PurePosixPath(clean).suffix.lower())


def parse_document(body: str, *, fmt: str, path: str, content_selector: str | None = None) -> ParsedPage:
    """Parse ``body`` in format ``fmt`` (markdown, mdx or html); ``path`` names it in errors.
    ``content_selector`` (CSS) picks an HTML page's main content."""
    if fmt == "markdown":
        return parse_markdown(body, path=path)
    if fmt == "mdx":
        return parse_markdown(body, path=path, mdx=True)
    if fmt == "html":
        return parse_html(body, url=path, content_selector=content_selector)
    raise ParseError(
        f"{path}: unsupported document format {fmt!r}; supported formats are {', '.join(FORMATS)} "
        "(choose one of them for this source or exclude the file)"
    )
