"""Parsers turning documents (Markdown, MDX, HTML, AsciiDoc, reStructuredText) into
:class:`~docs_rag_pipeline.records.ParsedPage`."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from ..records import ParsedPage
from ..unicode_text import (BIDI, CONTROL, INVISIBLE, LONE_SURROGATE, SOFT_HYPHEN, without_bidi_overrides,
                            without_controls)
from ..unicode_text import mend as mend_text
from .errors import ParseError, RedirectPage, UnpublishedPage
from .html import parse_html
from .markdown import parse_markdown

__all__ = ["FORMATS", "ParseError", "RedirectPage", "UnpublishedPage", "format_for_path", "parse_document", "parse_html",
           "parse_markdown", "unpublished"]

FORMATS = ("markdown", "mdx", "html", "asciidoc", "rst", "notebook")
#: ``.qmd`` (Quarto) and ``.rmd`` (R Markdown) are Pandoc's Markdown: read by the Markdown parser
_EXTENSIONS = {".md": "markdown", ".markdown": "markdown", ".qmd": "markdown", ".rmd": "markdown", ".mdx": "mdx", ".html": "html", ".htm": "html",
               ".adoc": "asciidoc", ".asciidoc": "asciidoc", ".rst": "rst", ".ipynb": "notebook"}


def format_for_path(path: str) -> str | None:
    """The document format for a file path or URL from its extension, or None when unsupported. A
    URL's query and fragment are not part of its path; a file's name may hold ``#`` and ``?``
    (``C# and F#?.md``), which are then part of the name."""
    clean = path.split("?", 1)[0].split("#", 1)[0] if "://" in path else path
    return _EXTENSIONS.get(PurePosixPath(clean).suffix.lower())


def parse_document(body: str, *, fmt: str, path: str, content_selector: str | None = None,
                   root: Path | None = None, heading_anchors: str = "github") -> ParsedPage:
    """Parse ``body`` in format ``fmt`` (markdown, mdx, html, asciidoc or rst); ``path`` names it in
    errors. ``content_selector`` (CSS) picks an HTML page's main content. ``root``: the folder
    ``path`` is relative to, for AsciiDoc ``include::`` directives still in ``body`` (the sources
    resolve them before handing the body over). ``heading_anchors``: how the site's generator slugs a
    Markdown heading without an explicit id (:data:`~.slugs.ANCHOR_STYLES`).

    Raises :class:`ParseError` for a document the parser cannot read, among them one nested deeper
    than Python's stack allows (hundreds of indented reStructuredText blocks, a thousand nested
    AsciiDoc blocks): Markdown and HTML flatten such nesting, the others name it."""
    try:
        return _mended(_parse(body, fmt=fmt, path=path, content_selector=content_selector, root=root,
                              anchors=heading_anchors))
    except RecursionError:
        raise ParseError(
            f"{path}: nested too deeply for the {fmt} parser (Python's recursion limit, "
            f"{sys.getrecursionlimit()}, was reached); flatten its nesting or exclude the file"
        ) from None


def _plain(text: str, *, anchor: bool = False) -> str:
    """``text`` without lone surrogates and control characters, and without soft hyphens, zero width
    spaces, word joiners (``unicode_text.INVISIBLE``) and bidi controls unless it is an ``anchor`` (which
    keeps them: it must name the id the page has). No document
    needs a control character (``unicode_text.without_controls``): ESC, BEL and friends are commands to
    the terminal that prints an answer (a screen clear, an OSC 8 link, an OSC 52 clipboard write)."""
    text = mend_text(text)
    if not anchor:
        text = text.replace(SOFT_HYPHEN, "")
        text = without_bidi_overrides(INVISIBLE.sub("", text) if INVISIBLE.search(text) else text)
    return without_controls(text)


_UNFIT = re.compile(f"{LONE_SURROGATE.pattern}|{CONTROL.pattern}|{SOFT_HYPHEN}|{INVISIBLE.pattern}|{BIDI.pattern}")


def _mended(page: ParsedPage) -> ParsedPage:
    """``page`` with every lone UTF-16 surrogate made U+FFFD, as HTML and Markdown parsers do with a
    character reference to one (``&#xDC80;``): reStructuredText's ``unicode:: U+DC80`` kept it, and a
    string that is no Unicode text fails where it is written (Arrow, the tokenizer), stopping the run;
    and without control characters (``unicode_text.CONTROL``: a raw ESC in Markdown, ``&#27;`` in HTML)
    or soft hyphens (``docu&shy;mentation`` is indexed as the word a reader searches, "documentation"),
    zero width spaces and word joiners (``unicode_text.INVISIBLE``: ``grob&#8203;nitz`` is "grobnitz"),
    nor bidi controls that reorder the text after them (``unicode_text.without_bidi_overrides``). A section's
    ``targets`` move with the characters taken out before them (:func:`_mended_text`)."""
    def mend(value: Any) -> Any:
        if isinstance(value, str):
            return _plain(value)
        if isinstance(value, dict):
            return {mend(k): mend(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(mend(v) for v in value)
        return value

    sections = [s if not _UNFIT.search("".join((s.text, s.anchor, *s.headings))) else
                replace(s, headings=mend(s.headings), anchor=_plain(s.anchor, anchor=True),
                        **dict(zip(("text", "targets"), _mended_text(s.text, s.targets))))
                for s in page.sections]
    return ParsedPage(title=mend(page.title), sections=sections, metadata=mend(page.metadata))


def _mended_text(text: str, targets: tuple[tuple[int, str], ...]) -> tuple[str, tuple[tuple[int, str], ...]]:
    """``text`` mended (:func:`_plain`) and its ``targets`` (``Section.targets``: offsets in it) moved to where
    their places are in the mended text: each character taken out before a target (a soft hyphen, a zero width
    space, a control character) moves it one back. Before, the offsets stayed, and every target after such a
    character named a place that many characters further on (the next entry, or past the text's end). The
    text is mended line by line from each target's line (what ``_plain`` does never reaches across a line
    break), so the offsets cost one pass."""
    if not targets:
        return _plain(text), targets
    line_of = {o: text.rfind("\n", 0, max(0, o)) + 1 for o, _ in targets}  # a target's line start in text
    line_starts = sorted(set(line_of.values()))
    pieces: list[str] = []
    moved: dict[int, int] = {}  # a target's line start in text -> in the mended text
    done = length = 0
    for start in line_starts:
        pieces.append(_plain(text[done:start]))
        length += len(pieces[-1])
        moved[start], done = length, start
    pieces.append(_plain(text[done:]))
    out = []
    for o, anchor in targets:
        start = line_of[o]
        out.append((moved[start] + len(_plain(text[start:o])), anchor))
    return "".join(pieces), tuple(out)


def _parse(body: str, *, fmt: str, path: str, content_selector: str | None, root: Path | None,
           anchors: str) -> ParsedPage:
    if fmt == "markdown":
        return parse_markdown(body, path=path, anchors=anchors)
    if fmt == "mdx":
        return parse_markdown(body, path=path, mdx=True, anchors=anchors)
    if fmt == "html":
        return parse_html(body, url=path, content_selector=content_selector)
    if fmt == "asciidoc":
        from .asciidoc import parse_asciidoc

        return parse_asciidoc(body, path=path, root=root)
    if fmt == "rst":
        from .rst import parse_rst

        return parse_rst(body, path=path)
    if fmt == "notebook":
        from .notebook import parse_notebook

        return parse_notebook(body, path=path, anchors=anchors)
    raise ParseError(
        f"{path}: unsupported document format {fmt!r}; supported formats are {', '.join(FORMATS)} "
        "(choose one of them for this source or exclude the file)"
    )


def unpublished(metadata: dict[str, Any], *, path: str) -> UnpublishedPage | None:
    """The error for a page whose front matter (``metadata``) marks it as one its site does not publish:
    ``draft: true`` (Docusaurus, Hugo, Astro/Starlight) or ``published: false`` (Jekyll); else None."""
    if metadata.get("draft") is True or str(metadata.get("draft")).strip().casefold() == "true":
        key = "draft: true"
    elif metadata.get("published") is False or str(metadata.get("published")).strip().casefold() == "false":
        key = "published: false"
    else:
        return None
    return UnpublishedPage(f"{path}: a draft (front matter {key}), which the site does not publish; set "
                           "index_drafts: true on the source to index drafts")
