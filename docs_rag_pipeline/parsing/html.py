"""Rendered HTML documentation pages (Sphinx, Docusaurus, MkDocs, Starlight...) to a :class:`ParsedPage`.

The main content is picked (a CSS selector, ``main``, ``article``, ``[role=main]``, Sphinx's
``div.body``..., else ``body``), site chrome is removed, and the remaining tree is walked into
plain-text sections split at h1–h6, like the Markdown parser does.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from urllib.parse import unquote
from dataclasses import dataclass

from bs4 import BeautifulSoup, Comment, NavigableString, Tag
from bs4.element import CData, Declaration, Doctype, PageElement, ProcessingInstruction

from ..records import ParsedPage
from .binary import check_text
from .errors import ParseError
from .markdown import OutLine, SectionBuilder, code_span, fence_block, humanize_stem

__all__ = ["declared_charset", "decode_html", "parse_html"]

_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_ALWAYS_REMOVE = [
    "script", "style", "noscript", "nav", "footer", "form", "template", "svg", "button",
    "iframe", "object", "canvas", "video", "audio", "dialog", "link", "meta", "select", "textarea", "datalist",
]  # fmt: skip
_CHROME_RE = re.compile(
    r"sidebar|breadcrumb|cookie|edit-?this-?page|headerlink|hash-link|skip-?link|skip-to-content"
    r"|(?:^|[\s_-])toc(?:$|[\s_-])|table-?of-?contents",
    re.I,
)
#: the elements whose id can name them chrome (``<div id="sidebar">``, ``<ul id="toc">``)
#: (a layout table's cell too, ``<td id="sidebar">``: see :func:`_is_layout_table`)
_ID_CHROME_ELEMENTS = {"div", "section", "aside", "nav", "header", "footer", "ul", "ol", "menu", "details", "form"}
_PERMALINK_CLASSES = {"headerlink", "hash-link", "anchor", "anchorjs-link", "heading-anchor", "permalink"}
_PARAGRAPHS = {"p", "summary", "figcaption", "caption", "address", "dt", "legend"}
_CONTAINERS = {
    "div", "section", "article", "main", "header", "aside", "details", "figure", "body", "html",
    "center", "fieldset", "hgroup", "search", "dd", "li", "blockquote", "footer", "nav", "form",
}  # fmt: skip
_SPECIAL = {"pre", "ul", "ol", "menu", "table", "dl", "hr"}
_BLOCKS = _HEADINGS | _PARAGRAPHS | _CONTAINERS | _SPECIAL
_META_CHARSET_RE = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_TITLE_SEPARATORS = (" — ", " – ", " - ", " | ", " · ", " :: ", " » ")
_SITE_SUFFIX_RE = re.compile(r"\b(?:documentation|docs)\b", re.I)
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"), None)
_SKIPPED_STRINGS = (Comment, CData, Declaration, Doctype, ProcessingInstruction)
_INVISIBLE_STYLE_RE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:\.0*)?"
                                 r"(?:px|pt|em|rem|%)?)\s*(?:!important\s*)?(?:;|$)", re.I)


def _norm(text: str) -> str:
    """Collapse whitespace and drop zero-width characters."""
    return " ".join(text.translate(_ZERO_WIDTH).split())


def _classes(el: Tag) -> list[str]:
    value = el.get("class") or []
    return value.split() if isinstance(value, str) else list(value)


def _attr(el: Tag, name: str) -> str:
    value = el.get(name)
    if isinstance(value, list):
        return " ".join(value)
    return value or ""


# --------------------------------------------------------------------------------------------
# Decoding and sanity checks
# --------------------------------------------------------------------------------------------


def declared_charset(data: bytes) -> str | None:
    """The charset a ``<meta charset>``/http-equiv tag near the top of the page declares, if any."""
    match = _META_CHARSET_RE.search(data[:4096])
    return match.group(1).decode("ascii", "ignore") if match else None


#: codecs Python looks up that do not read a page's bytes as text, though not marked bytes-to-bytes as
#: ``hex`` or ``zlib`` are: ``idna``/``undefined`` fail under "replace", the escapes would unescape the page
_NOT_PAGE_ENCODINGS = frozenset({"idna", "punycode", "undefined", "unicode-escape", "raw-unicode-escape"})


def text_encoding(label: str | None) -> str | None:
    """The Python codec to read a page with for a declared charset ``label``, or None when the label
    names no text encoding (``hex``, ``base64``, ``rot13``, ``zlib``, ``idna``, ``undefined``…): then it
    is ignored, as a browser ignores a label it does not know. A declared Latin-1 or ASCII is read as
    windows-1252, as browsers do."""
    if not label:
        return None
    try:
        info = codecs.lookup(label.strip())
    except (LookupError, ValueError):
        return None
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_PAGE_ENCODINGS:
        return None
    return "cp1252" if info.name in ("iso8859-1", "ascii") else info.name


def decode_html(data: bytes) -> str:
    """Decode HTML bytes: a BOM, else the ``<meta charset>``/http-equiv charset, else UTF-8.

    Undecodable bytes become U+FFFD; a declared Latin-1/ASCII is read as windows-1252, as browsers do;
    a declared charset that is no text encoding is ignored. Never raises: one odd page must not fail a scan.
    """
    if data.startswith(codecs.BOM_UTF8):
        return data[3:].decode("utf-8", "replace")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", "replace")
    encoding = text_encoding(declared_charset(data)) or "utf-8"
    if encoding.startswith("utf-16") or encoding.startswith("utf-32"):
        encoding = "utf-8"  # a meta tag cannot be read in UTF-16; the declaration is wrong
    try:
        return data.decode(encoding, "replace")
    except (LookupError, UnicodeError, ValueError):  # a codec that fails even under "replace"
        return data.decode("utf-8", "replace")


# --------------------------------------------------------------------------------------------
# Metadata, content root, chrome, anchors
# --------------------------------------------------------------------------------------------


def _breadcrumbs(soup: BeautifulSoup) -> list[str]:
    def is_crumbs(el: Tag) -> bool:
        return "breadcrumb" in " ".join(_classes(el)).lower() or "breadcrumb" in _attr(el, "aria-label").lower()

    box = soup.find(is_crumbs)
    if not isinstance(box, Tag):
        return []
    items = [li for li in box.find_all("li") if not li.find("li")]
    if items:
        texts = [_norm(li.get_text(" ")) for li in items if "aside" not in " ".join(_classes(li))]
    else:
        links = box.find_all(["a", "span"])
        texts = [_norm(a.get_text(" ")) for a in links] if links else re.split(r"[/>»›]", box.get_text(" "))
    crumbs: list[str] = []
    for text in (_norm(t).strip("/>»›| ") for t in texts):
        if text and (not crumbs or crumbs[-1] != text):
            crumbs.append(text)
    return crumbs


def _metadata(soup: BeautifulSoup) -> dict[str, object]:
    meta: dict[str, object] = {}
    crumbs = _breadcrumbs(soup)
    if crumbs:
        meta["breadcrumbs"] = crumbs
    modified = soup.find("meta", attrs={"property": "article:modified_time"})
    time = soup.find("time", attrs={"datetime": True})
    if isinstance(modified, Tag) and _attr(modified, "content").strip():
        meta["updated"] = _attr(modified, "content").strip()
    elif isinstance(time, Tag) and _attr(time, "datetime").strip():
        meta["updated"] = _attr(time, "datetime").strip()
    # a page of source code that links each object back to its documentation (Sphinx's viewcode
    # "[docs]" links, the pages "[source]" opens): the code the docs describe, not the docs
    if soup.select_one("a.viewcode-back"):
        meta["page_kind"] = "source code"
    for attrs in ({"name": re.compile(r"^description$", re.I)}, {"property": "og:description"}):
        desc = soup.find("meta", attrs=attrs)
        if isinstance(desc, Tag) and _norm(_attr(desc, "content")):
            meta["description"] = _norm(_attr(desc, "content"))
            break
    return meta


def _content_root(soup: BeautifulSoup, selector: str | None, url: str) -> Tag:
    if selector:
        try:
            found = soup.select_one(selector)
        except Exception as exc:  # soupsieve raises its own SelectorSyntaxError
            raise ParseError(f"{url}: invalid content_selector {selector!r} ({exc}); use a CSS selector") from exc
        if isinstance(found, Tag):
            return found
    for candidate in ("main", "article", "[role=main]", "div.body", "div[itemprop=articleBody]", "body"):
        found = soup.select_one(candidate)
        if isinstance(found, Tag):
            return found
    return soup


def _first_element_child(el: Tag) -> Tag | None:
    """The first child element, skipping empty anchor targets (``<span id=x></span>``)."""
    for child in el.children:
        if isinstance(child, Tag):
            if child.name in ("a", "span") and not child.get_text(strip=True) and not child.find(True):
                continue
            return child
        if isinstance(child, NavigableString) and not isinstance(child, _SKIPPED_STRINGS) and child.strip():
            return None
    return None


def _explicit_anchor(heading: Tag, root: Tag) -> str | None:
    """The fragment the site gives a heading, when the markup says it (None: slug its text)."""
    if _attr(heading, "id"):
        return _attr(heading, "id")
    node = heading
    while node.parent is not None and node.parent is not root:
        parent = node.parent
        if _first_element_child(parent) is not node:
            break
        is_section = parent.name == "section" or (
            parent.name == "div" and any("section" in c for c in _classes(parent))
        )
        if is_section and _attr(parent, "id"):
            return _attr(parent, "id")
        node = parent
    inner = heading.find(["a", "span"], attrs={"id": True}) or heading.find("a", attrs={"name": True})
    if isinstance(inner, Tag):
        return _attr(inner, "id") or _attr(inner, "name")
    prev = heading.find_previous_sibling(True)
    if isinstance(prev, Tag) and prev.name in ("a", "span") and not prev.get_text(strip=True):
        if _attr(prev, "id") or _attr(prev, "name"):
            return _attr(prev, "id") or _attr(prev, "name")
    for link in heading.find_all("a", href=True):
        href = _attr(link, "href")
        if href.startswith("#") and len(href) > 1 and set(_classes(link)) & _PERMALINK_CLASSES:
            return unquote(href[1:])  # a URL fragment is percent-encoded; the id it names is not
    return None


def _is_admonition(el: Tag) -> bool:
    return any(
        c == "admonition" or c.startswith("theme-admonition") or c == "starlight-aside" or c == "callout"
        for c in _classes(el)
    )


#: docutils' own classes for authored blocks it writes as ``<aside>`` (docutils >= 0.18, Sphinx >= 5):
#: footnotes, citations, topics; they are the page's text, as the reST parser keeps them
_DOCUTILS_ASIDES = {"footnote", "footnote-list", "citation", "citation-list", "topic"}


def _is_authored_aside(el: Tag) -> bool:
    """An ``<aside>`` (or an older docutils ``<div>``) the author wrote, not the site: a docutils
    footnote, citation or topic, or a ``.. sidebar::`` directive (class ``sidebar`` and a first child
    ``p.sidebar-title``, which a theme's sidebar lacks). A table of contents (``contents``) stays chrome."""
    classes = set(_classes(el))
    if "contents" in classes:
        return False
    if el.name == "aside" and classes & _DOCUTILS_ASIDES:
        return True
    if "sidebar" not in classes or el.name not in ("aside", "div"):
        return False
    first = _first_element_child(el)
    return isinstance(first, Tag) and "sidebar-title" in _classes(first)


def _note_label(el: Tag) -> Tag | None:
    """The label (``span.label``, ``[2]``) of a docutils >= 0.18 footnote or citation, else None."""
    if el.name not in ("aside", "div") or not {"footnote", "citation"} & set(_classes(el)):
        return None
    label = el.find("span", class_="label", recursive=False)
    return label if isinstance(label, Tag) else None


def _tags(root: Tag, names: set[str] | frozenset[str] | list[str]) -> list[Tag]:
    """Descendant tags with one of ``names``, in document order (a set lookup per element: bs4's
    ``find_all`` with a list of names is an order of magnitude slower on big pages)."""
    wanted = set(names)
    return [el for el in root.descendants if isinstance(el, Tag) and el.name in wanted]


def _label_tab_panels(root: Tag, soup: BeautifulSoup) -> None:
    """Tabbed content (Docusaurus, Starlight, sphinx-tabs): every panel is content, the ones not
    shown first included (they carry ``hidden``). Each panel gets its tab's label as a lead-in line
    (``Yarn:``) and the row of tab labels goes, so "npm Yarn pnpm" is not indexed as a list and each
    command is read with the tool it is for."""
    by_id = {_attr(el, "id"): el for el in root.find_all(id=True)}
    for tablist in root.find_all(attrs={"role": "tablist"}):
        tabs = tablist.find_all(attrs={"role": "tab"})
        container = tablist.parent
        unlabelled = [
            p for p in (container.find_all(attrs={"role": "tabpanel"}) if container else [])
            if p.find_parent(attrs={"role": "tablist"}) is None
        ]
        labelled = 0
        for position, tab in enumerate(tabs):
            label = _norm(tab.get_text(" "))
            panel = by_id.get(_attr(tab, "aria-controls")) or by_id.get(
                (_attr(tab, "href") or "").lstrip("#")
            )
            if not (isinstance(panel, Tag) and _attr(panel, "role") == "tabpanel"):
                tab_id = _attr(tab, "id")
                panel = next(
                    (p for p in unlabelled if tab_id and _attr(p, "aria-labelledby") == tab_id), None
                ) or (unlabelled[position] if len(unlabelled) == len(tabs) else None)
            if panel is None or not label or panel.get("data-rag-tab"):
                continue
            panel["data-rag-tab"] = label
            lead = soup.new_tag("p")
            lead.string = f"{label}:"
            panel.insert(0, lead)
            labelled += 1
        if tabs and labelled == len(tabs):
            tablist.decompose()


def _invisible(el: Tag) -> bool:
    """Not shown to a reader: ``hidden`` or an inline ``display: none``, ``visibility: hidden`` or
    ``font-size: 0``. A tab panel is the exception: it is hidden only until its tab is clicked."""
    if _attr(el, "role") == "tabpanel":
        return False
    return el.has_attr("hidden") or bool(_INVISIBLE_STYLE_RE.search(_attr(el, "style")))


def _opens_with_heading_section(el: Tag) -> bool:
    """A ``<section>`` or a ``div.section`` whose first element is a heading (through the first child of
    each level): what :func:`_explicit_anchor` reads as that heading's anchor."""
    if not (el.name == "section" or (el.name == "div" and any(c.startswith("section") for c in _classes(el)))):
        return False
    node = _first_element_child(el)
    while isinstance(node, Tag) and node.name not in _HEADINGS and node.name in ("div", "header", "hgroup"):
        node = _first_element_child(node)
    return isinstance(node, Tag) and node.name in _HEADINGS


#: blocks that make a layout table's row parts of the page rather than a row of values
_LAYOUT_BLOCKS = {"p", "div", "ul", "ol", "dl", "pre", "table", "section", "blockquote"}


def _is_layout_table(table: Tag | None) -> bool:
    """A table that lays out a page, not data: ``role="presentation"`` or a heading in it (a page's
    columns, Doxygen's member groups under an ``<h2>``). A data table's ids are content (Sphinx gives
    a table the id of its label: ``<table id="cookie-options">``)."""
    return isinstance(table, Tag) and (_attr(table, "role") in ("presentation", "none")
                                       or table.find(list(_HEADINGS)) is not None)


def _is_chrome(el: Tag) -> bool:
    if _invisible(el):
        return True
    if el.name == "header":
        return el.find(list(_HEADINGS)) is None  # Docusaurus puts the page's h1 in a <header>
    if _is_authored_aside(el) or (isinstance(el.parent, Tag) and _is_authored_aside(el.parent)
                                  and {"sidebar-title", "sidebar-subtitle"} & set(_classes(el))):
        return False
    if el.name == "aside":
        return not _is_admonition(el)
    if el.name in _HEADINGS:  # a heading is content; its permalink icon (an <a> inside) is chrome
        return False
    classes = _classes(el)
    # an id names chrome only on a block that holds it ("sidebar", "toc"): on a section that a heading
    # opens it is that heading's anchor ("sidebar-configuration", "table-of-contents" on a page about
    # them), on an API entry its object (Sphinx's <dt id="flask.Response.set_cookie">)
    # (a cell's table is searched for a heading only when its id names chrome: once per cell of every
    # table, the search made parsing quadratic in the table's size)
    id_counts = ((el.name in _ID_CHROME_ELEMENTS and not _opens_with_heading_section(el))
                 or (el.name == "td" and _CHROME_RE.search(_attr(el, "id")) is not None
                     and _is_layout_table(el.find_parent("table"))))
    marks = " ".join(classes) + (" " + _attr(el, "id") if id_counts else "")
    return bool(
        _CHROME_RE.search(marks)
        or (el.name == "a" and set(classes) & _PERMALINK_CLASSES)
        or _is_viewcode_link(el, classes)
        or (el.name == "a" and _attr(el, "aria-hidden") == "true" and el.find_parent(list(_HEADINGS)))
        or any(c in ("linenos", "linenodiv", "lineno") for c in classes)
    )


def _is_viewcode_link(el: Tag, classes: list[str]) -> bool:
    """Sphinx's viewcode link after an API signature (``<a href="_modules/…"><span class="viewcode-link">
    [source]</span></a>``): like a permalink, page chrome that leads to the highlighted source page, not
    documentation text (the signature read ``post(url, data=None)[source]``). Its class, or, for a theme
    that drops the class, a link into ``_modules/`` that shows only "[source]"."""
    if "viewcode-link" in classes:
        return True
    return el.name == "a" and "/_modules/" in "/" + _attr(el, "href") and _norm(el.get_text()) == "[source]"


def _remove_chrome(root: Tag) -> None:
    """Drop scripts, navigation and chrome. One walk from the top: a removed element's subtree is
    never visited (bs4's ``decomposed`` check costs a subtree search per element)."""
    for el in _tags(root, _ALWAYS_REMOVE):
        el.decompose()
    stack = [root]
    while stack:
        for child in list(stack.pop().children):
            if not isinstance(child, Tag):
                continue
            if _is_chrome(child):
                child.decompose()
            else:
                stack.append(child)


# --------------------------------------------------------------------------------------------
# Walking the content
# --------------------------------------------------------------------------------------------


@dataclass
class _Heading:
    level: int
    text: str
    anchor: str | None


_Event = _Heading | list[OutLine]


#: what :func:`_text` writes for a ``<br>`` where the block keeps it as a line break: a character no
#: page's text holds (lxml reads a NUL in a page as U+FFFD) and that :func:`_norm` does not collapse
_LINE_BREAK = "\x00"


def _strings(el: Tag, br: str = " ") -> str:
    """The text of ``el``: its strings, and ``br`` for each ``<br>`` (a space by default: the words on
    either side of it are two words, "Line one<br>line two" is not "Line oneline two"). A block inside
    it (a table cell's paragraphs, list items or nested table) is set apart by spaces, as a browser
    shows it on lines of its own: "<p>First.</p><p>Second.</p>" is not "First.Second."."""
    out: list[str] = []

    def walk(node: Tag) -> None:
        for child in node.children:
            if isinstance(child, NavigableString):
                if not isinstance(child, _SKIPPED_STRINGS):
                    out.append(str(child))
            elif isinstance(child, Tag):
                if child.name == "br":
                    out.append(br)
                elif child.name in _BLOCKS or child.name in _CELL_PARTS:
                    out.append(" ")
                    walk(child)
                    out.append(" ")
                else:
                    walk(child)

    walk(el)
    return "".join(out)


#: parts of a table that :data:`_BLOCKS` does not list: a nested table's cells read as words apart
_CELL_PARTS = {"tr", "td", "th", "thead", "tbody", "tfoot"}


def _text_lines(text: str) -> list[str]:
    """The non-empty lines of a text :func:`_text` made with ``br=_LINE_BREAK``, each normalised."""
    return [line for line in (_norm(part) for part in text.split(_LINE_BREAK)) if line]


#: inline elements that show code: their text stays code in a chunk (a Markdown code span)
_INLINE_CODE = ("code", "kbd", "samp", "tt", "var")


def _text(el: Tag, br: str = " ") -> str:
    """The text of inline content, its inline code (``<code>``, ``<kbd>``, …) as Markdown code spans
    (``code_span``): ``sys.argv[1]`` stays code, which no citation-marker rule touches and an answer shows
    as code. Code elements side by side (an old Sphinx signature's ``<code>requests.</code><code>get</code>``)
    are one span. A ``<br>`` outside code is ``br``: a space (a table cell, a term), or
    :data:`_LINE_BREAK` where the block keeps its lines (a paragraph, as the Markdown parser keeps a
    hard break); inside code it is a space."""
    if el.name in _INLINE_CODE:
        return code_span(_strings(el))
    if el.name == "br":
        return br
    if el.find(_INLINE_CODE) is None:
        return _strings(el, br)
    pieces: list[tuple[bool, str]] = []  # (is code, text)

    def walk(node: Tag) -> None:
        for child in node.children:
            if isinstance(child, NavigableString):
                if not isinstance(child, _SKIPPED_STRINGS):
                    pieces.append((False, str(child)))
            elif isinstance(child, Tag):
                if child.name == "br":
                    pieces.append((False, br))
                elif child.name in _INLINE_CODE:
                    pieces.append((True, _strings(child)))
                elif child.name in _BLOCKS or child.name in _CELL_PARTS:  # set apart, as in _strings
                    pieces.append((False, " "))
                    walk(child)
                    pieces.append((False, " "))
                else:
                    walk(child)

    walk(el)
    out: list[str] = []
    code: list[str] = []
    for is_code, text in [*pieces, (False, "")]:
        if is_code:
            code.append(text)
            continue
        if code:
            out.append(code_span("".join(code)))
            code = []
        out.append(text)
    return "".join(out)


_GLYPHS = "¶#🔗§"  # what a permalink next to a heading shows
_TRAILING_GLYPHS_RE = re.compile(r"(?:\s*[¶🔗]|\s+[#§]+)+$")


def _is_permalink_glyph(s: NavigableString, heading: Tag) -> bool:
    """``s`` is the text of a link inside ``heading`` that shows only a permalink glyph (``¶``, ``#``)."""
    for parent in s.parents:
        if parent is heading or not isinstance(parent, Tag):
            return False
        if parent.name == "a":
            text = parent.get_text().strip()
            return bool(text) and all(ch in _GLYPHS or ch.isspace() for ch in text)
    return False


def _heading_text(el: Tag) -> str:
    """A heading's text without its permalink glyph: a link showing only ``¶``/``#``/``§``/``🔗``, a
    trailing ``¶``/``🔗``, or a ``#``/``§`` standing as a word of its own ("Setup #"). A ``#`` that ends
    a word is the heading's own: "Using C#", "F#". A ``<br>`` is a space, as the page shows it."""
    text = "".join(" " if isinstance(s, Tag) else str(s) for s in el.descendants
                   if (isinstance(s, Tag) and s.name == "br") or (isinstance(s, NavigableString)
                   and not isinstance(s, _SKIPPED_STRINGS) and not _is_permalink_glyph(s, el)))
    return _TRAILING_GLYPHS_RE.sub("", _norm(text)).strip()


def _code_language(pre: Tag) -> str:
    code = pre.find("code")
    candidates = [pre, *(c for c in [code] if isinstance(c, Tag))]
    candidates += [p for p in list(pre.parents)[:3] if isinstance(p, Tag)]
    for el in candidates:
        for cls in _classes(el):
            for prefix in ("language-", "lang-", "highlight-", "sourceCode "):
                if cls.startswith(prefix) and len(cls) > len(prefix):
                    lang = cls[len(prefix) :]
                    return "" if lang in ("default", "none", "text", "plaintext") else lang
    return _attr(pre, "data-language") or (_attr(code, "data-lang") if isinstance(code, Tag) else "")


#: a class that names one line of a code block: ``line`` (Shiki), ``ec-line`` (Expressive Code), ``code-line``
_LINE_CLASS_RE = re.compile(r"(?:^|[-_])line$", re.I)


def _is_code_line(el: Tag) -> bool:
    """An element inside a ``<pre>`` that shows one line of its own: a block (``<div>`` per line) or an
    element whose class names a line."""
    return el.name in _BLOCKS or any(_LINE_CLASS_RE.search(c) for c in _classes(el))


def _raw_strings(el: Tag) -> str:
    """The text of ``el`` exactly as written, no space added around blocks (:func:`_strings` adds them):
    in a code block, a space would change the code."""
    return "".join(str(s) for s in el.descendants
                   if isinstance(s, NavigableString) and not isinstance(s, _SKIPPED_STRINGS))


def _pre_text(pre: Tag) -> str:
    """A code block's text. A ``<br>`` ends a line, and so does an element that holds a line (Expressive
    Code's ``<div class="ec-line">``, a ``<span class="line">``, a ``<div>`` per line) when no newline
    follows it: such a renderer writes none, and the block read as one line."""
    for br in pre.find_all("br"):
        nxt = br.next_sibling
        br.replace_with("" if isinstance(nxt, NavigableString) and nxt.startswith("\n") else "\n")
    for line in pre.find_all(_is_code_line):
        nxt = line.next_sibling
        if nxt is not None and not (isinstance(nxt, NavigableString) and nxt.startswith("\n")) \
                and not _raw_strings(line).endswith("\n"):
            line.insert_after("\n")
    text = _raw_strings(pre)
    if text.startswith("\n"):
        text = text[1:]
    return text.rstrip()


class _Walker:
    """Turns a cleaned content tree into heading events and blocks of text lines."""

    def __init__(self, root: Tag) -> None:
        # ids of elements with a block element inside, found in one pass (not a subtree search each)
        self._holds_block: set[int] = set()
        for el in _tags(root, _BLOCKS):
            for parent in el.parents:
                if id(parent) in self._holds_block or parent is root.parent:
                    break
                self._holds_block.add(id(parent))

    def events(self, el: Tag, *, top: bool) -> Iterator[_Event]:
        """Events for the children of a container; headings only split sections when ``top``."""
        inline: list[str] = []

        def flush() -> Iterator[_Event]:
            lines = _text_lines("".join(inline))
            inline.clear()
            if lines:
                yield [OutLine(line) for line in lines]

        for child in el.children:
            if isinstance(child, NavigableString):
                if not isinstance(child, _SKIPPED_STRINGS):
                    inline.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            if not self._is_block(child):
                inline.append(_text(child, _LINE_BREAK))
                continue
            yield from flush()
            yield from self.block(child, top=top)
        yield from flush()

    def _is_block(self, el: Tag) -> bool:
        if el.name in _BLOCKS:
            return True
        if "-" in (el.name or ""):  # custom elements: treat as containers
            return True
        return id(el) in self._holds_block

    def block(self, el: Tag, *, top: bool) -> Iterator[_Event]:
        """Events for one block element."""
        name = el.name
        if name in _HEADINGS:
            text = _heading_text(el)
            if top:
                yield _Heading(int(name[1]), text, _attr(el, "data-rag-anchor") or None)
            elif text:
                yield [OutLine(text)]
        elif name in _PARAGRAPHS:
            lines = _text_lines(_text(el, _LINE_BREAK))  # a <br> breaks the line, as it does on the page
            if lines:
                yield [OutLine(line) for line in lines]
        elif name == "pre":
            yield fence_block(_pre_text(el), _code_language(el))
        elif name in ("ul", "ol", "menu"):
            lines = self._list(el)
            if lines:
                yield lines
        elif name == "table":
            yield from self._table(el, top=top)
        elif name == "dl":
            lines = self._dl(el)
            if lines:
                yield lines
        elif name == "hr":
            return
        elif _note_label(el) is not None:
            lines = self._note(el)
            if lines:
                yield lines
        elif _is_admonition(el) or (_is_authored_aside(el) and not _classes(el)[0].endswith("-list")):
            lines = self._admonition(el)
            if lines:
                yield lines
        else:
            yield from self.events(el, top=top)

    def _lines(self, el: Tag) -> list[OutLine]:
        """All blocks inside ``el`` as lines, without blank lines between them."""
        out: list[OutLine] = []
        for ev in self.events(el, top=False):
            if isinstance(ev, list):
                out.extend(ev)
        return out

    def _list(self, el: Tag) -> list[OutLine]:
        ordered = el.name == "ol"
        try:
            number = int(_attr(el, "start") or 1)
        except ValueError:
            number = 1
        out: list[OutLine] = []
        for li in el.find_all("li", recursive=False):
            prefix = f"{number}. " if ordered else "- "
            number += 1
            lines = self._lines(li)
            if not lines or lines[0].verbatim:
                lines.insert(0, OutLine(""))
            lines[0] = OutLine((prefix + lines[0].text).rstrip())
            out.append(lines[0])
            out.extend(ln if ln.verbatim else OutLine("  " + ln.text) for ln in lines[1:])
        return out

    def _table(self, el: Tag, *, top: bool) -> Iterator[_Event]:
        # a caption names the table (Sphinx's ``.. table:: Title``, Javadoc's "Method Summary"): a line
        # before it, a block of its own so the chunker never takes it for the table's header row
        caption = el.find("caption", recursive=False)
        if isinstance(caption, Tag):
            text = _norm(_text(caption))
            caption.decompose()
            if text:
                yield [OutLine(text)]
        if _is_layout_table(el):
            # a layout table (a page's columns, Doxygen's member groups under an <h2>): a row holding
            # blocks is parts of the page, its headings sections; a row of plain cells stays a row
            # ("int | foo(int x)", a member's type beside its signature)
            rows: list[OutLine] = []
            for tr in el.find_all("tr"):
                if tr.find_parent("table") is not el:
                    continue
                cells = tr.find_all(["th", "td"], recursive=False)
                if not tr.find(list(_HEADINGS | _LAYOUT_BLOCKS)):
                    line = " | ".join(t for t in (_norm(_text(c)) for c in cells) if t)
                    if line:
                        rows.append(OutLine(line))
                    continue
                if rows:
                    yield rows
                    rows = []
                for cell in cells:
                    yield from self.events(cell, top=top)
            if rows:
                yield rows
            return
        if el.find("pre"):
            yield from self._table_with_code(el)
            return
        rows: list[OutLine] = []
        for tr in el.find_all("tr"):
            if tr.find_parent("table") is not el:
                continue
            cells = [_norm(_text(cell)) for cell in tr.find_all(["th", "td"], recursive=False)]
            if any(cells):
                rows.append(OutLine(" | ".join(cells)))
        if rows:
            yield rows

    def _table_with_code(self, el: Tag) -> Iterator[_Event]:
        """A table holding code (Sphinx's line-numbered code table, whose numbers are chrome; a table of
        options with an example per row): each cell holding a ``<pre>`` as its blocks, the code fenced,
        and the other cells of a row as a row before it, so the header row and the descriptions beside
        the code are kept (they were dropped, only the code was read)."""
        for tr in el.find_all("tr"):
            if tr.find_parent("table") is not el:
                continue
            parts: list[str] = []
            for cell in tr.find_all(["th", "td"], recursive=False):
                if cell.find("pre") is None:
                    text = _norm(_text(cell))
                    if text:
                        parts.append(text)
                    continue
                if parts:
                    yield [OutLine(" | ".join(parts))]
                    parts = []
                yield from self.events(cell, top=False)
            if parts:
                yield [OutLine(" | ".join(parts))]

    def _dl(self, el: Tag) -> list[OutLine]:
        out: list[OutLine] = []
        for child in el.find_all(["dt", "dd"], recursive=False):
            if child.name == "dt":
                text = _norm(_text(child))
                if text:
                    out.append(OutLine(text))
            else:
                out.extend(ln if ln.verbatim else OutLine("  " + ln.text) for ln in self._lines(child))
        return out

    def _note(self, el: Tag) -> list[OutLine]:
        """A docutils footnote or citation as one block led by its label, ``[2] Unlike other…``, as the
        reST parser writes it; its links back to the references (``span.backrefs``) are dropped."""
        label_el = _note_label(el)
        # (no spaces: a label is one token, "[2]", however its bracket spans are laid out)
        label = "".join(_strings(label_el).split()) if label_el is not None else ""
        for part in [label_el, *el.find_all("span", class_="backrefs", recursive=False)]:
            if part is not None:
                part.extract()
        lines = self._lines(el)
        if label and lines and not lines[0].verbatim:
            lines[0] = OutLine(f"{label} {lines[0].text}")
        elif label:
            lines.insert(0, OutLine(label))
        return lines

    def _admonition(self, el: Tag) -> list[OutLine]:
        title_el = None
        for child in el.find_all(True, recursive=False):
            if any("title" in c.lower() or "heading" in c.lower() for c in _classes(child)):
                title_el = child
                break
        title = _norm(_strings(title_el)) if title_el is not None else ""
        if title_el is not None:
            title_el.extract()
        if not title and _attr(el, "aria-label"):
            title = _norm(_attr(el, "aria-label"))
        body: list[OutLine] = []
        for ev in self.events(el, top=False):
            if isinstance(ev, list):
                if body:
                    body.append(OutLine(""))
                body.extend(ev)
        return ([OutLine(title)] if title else []) + body


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def _strip_site_suffix(title: str, site_name: str) -> str:
    """``Page — MyLib 2.0 documentation`` → ``Page``: a last part naming the site (``og:site_name``,
    or words like "documentation" / "docs") is dropped."""
    for sep in _TITLE_SEPARATORS:
        pos = title.rfind(sep)
        if pos <= 0:
            continue
        head, tail = title[:pos].strip(), title[pos + len(sep) :].strip()
        if head and tail and len(tail) <= 80 and (
            (site_name and tail.casefold() == site_name.casefold()) or _SITE_SUFFIX_RE.search(tail)
        ):
            return head
    return title


#: a title that names nothing: Sphinx's ``<no title>`` placeholder (a page whose source has no heading it
#: understood), "untitled", or bare punctuation left by a broken build (``)``)
_PLACEHOLDER_TITLE = re.compile(r"^\W*(no title|untitled|undefined|null|none)?\W*$", re.I)


def _named(title: str) -> str:
    """``title``, or "" when it names nothing (see ``_PLACEHOLDER_TITLE``)."""
    return "" if _PLACEHOLDER_TITLE.match(title or "") else title


def _page_title(doc_title: str, h1: str, site_name: str = "") -> str:
    """``<title>`` minus a site suffix: the part before a separator when the H1 equals it, else
    without a last part that names the site."""
    if not doc_title:
        return h1
    if h1:
        key = h1.casefold()
        if doc_title.casefold() == key:
            return doc_title
        for sep in _TITLE_SEPARATORS:
            start = 0
            while (pos := doc_title.find(sep, start)) >= 0:
                if doc_title[:pos].strip().casefold() == key:
                    return doc_title[:pos].strip()
                start = pos + 1
    return _strip_site_suffix(doc_title, site_name)


#: elements nested deeper than this are unwrapped (their content kept, one level up): a page of
#: 1,000 unclosed <div>s (broken HTML nests them) or 50,000 nested elements would otherwise exceed
#: Python's recursion limit in the walker; real documentation nests a few dozen levels at most
MAX_NESTING = 120


def _too_deep(soup: BeautifulSoup) -> list[Tag]:
    """The elements at depth ``MAX_NESTING // 2`` whose subtree reaches below ``MAX_NESTING``: one
    walk, without recursion."""
    limit = MAX_NESTING // 2
    found: dict[int, Tag] = {}
    stack: list[tuple[Tag, int, Tag | None]] = [(soup, 0, None)]
    while stack:
        el, depth, top = stack.pop()
        for child in el.contents:
            if isinstance(child, Tag):
                below = child if depth + 1 == limit else top
                if depth + 1 > MAX_NESTING and below is not None:
                    found.setdefault(id(below), below)
                    continue  # the rest of this subtree is flattened with it
                stack.append((child, depth + 1, below))
    return list(found.values())  # disjoint subtrees: the order they are replaced in does not matter


def _flat_blocks(el: Tag, soup: BeautifulSoup) -> list[Tag]:
    """The content of ``el`` as a flat run of blocks, in order: each heading and ``pre`` as itself
    (its text only), every other run of text between block boundaries as one paragraph. Linear in
    the size of the subtree, however deep (no recursion, nothing moved inside the tree)."""
    out: list[Tag] = []
    buf: list[str] = []

    def flush() -> None:
        text = _norm("".join(buf))
        buf.clear()
        if text:
            p = soup.new_tag("p")
            p.string = text
            out.append(p)

    stack: list[tuple[Iterator[PageElement], bool]] = [(iter(list(el.contents)), False)]
    while stack:
        children, is_block = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            if is_block:
                flush()
            continue
        if isinstance(child, NavigableString):
            if not isinstance(child, _SKIPPED_STRINGS):
                buf.append(str(child))
            continue
        if not isinstance(child, Tag) or child.name in _ALWAYS_REMOVE:
            continue
        if child.name in _HEADINGS or child.name == "pre":
            flush()
            block = soup.new_tag(child.name, attrs={k: v for k, v in child.attrs.items() if k in ("id", "class")})
            block.string = child.get_text() if child.name == "pre" else _norm(child.get_text(" "))
            out.append(block)
            continue
        if child.name == "br":
            buf.append(" ")
            continue
        block = child.name in _BLOCKS
        if block:
            flush()
        stack.append((iter(list(child.contents)), block))
    flush()
    return out


def _flatten_deep(soup: BeautifulSoup) -> int:
    """On a page nested deeper than :data:`MAX_NESTING` (a page of unclosed ``<div>``s, which broken
    HTML nests in each other, or a hostile one), each subtree from half that depth down is replaced
    by its text as flat blocks (headings, paragraphs, code): the page keeps its headings, the
    paragraphs kept apart and all its text, in order, and the walker's recursion stays bounded. In
    time linear in the page (unwrapping one element at a time once cost minutes on 2,000 nested
    lists). Returns how many subtrees were flattened."""
    deep = _too_deep(soup)
    for el in deep:
        flat = soup.new_tag("div")
        flat.extend(_flat_blocks(el, soup))
        el.replace_with(flat)
    return len(deep)


def parse_html(html: str | bytes, *, url: str, content_selector: str | None = None) -> ParsedPage:
    """Parse one rendered HTML page into title, sections and metadata.

    ``content_selector`` (CSS) picks the main content when it matches. Raises
    :class:`ParseError` for binary input or a page without any text.
    """
    text = decode_html(html) if isinstance(html, bytes | bytearray) else html
    text = check_text(text, path=url, hint=" or check the URL really serves an HTML page")
    soup = BeautifulSoup(text, "lxml")
    _flatten_deep(soup)
    for el in _tags(soup, ["script", "style", "noscript", "template"]):
        el.decompose()
    body = soup.body or soup
    if not _norm(body.get_text(" ")):
        raise ParseError(
            f"{url}: the HTML page has no text content; check that the URL serves the rendered "
            "page (not a JavaScript shell or a redirect) or exclude it from the source"
        )

    metadata = _metadata(soup)
    title_el = soup.head.find("title") if soup.head else soup.find("title")
    doc_title = _norm(title_el.get_text()) if isinstance(title_el, Tag) else ""

    root = _content_root(soup, content_selector, url)
    for heading in _tags(root, _HEADINGS):
        anchor = _explicit_anchor(heading, root)
        if anchor:
            heading["data-rag-anchor"] = anchor
    _label_tab_panels(root, soup)
    _remove_chrome(root)

    builder = SectionBuilder(text_fragments=True)
    walker = _Walker(root)
    first_h1 = ""
    any_heading = text_before = False
    for ev in walker.block(root, top=True):
        if isinstance(ev, _Heading):
            # the first heading, an H1, is the page's title, unless text comes before it and the
            # <title> does not name it: Doxygen shows its title in a div and writes each \section
            # as an <h1>, and that section lost its heading and anchor
            may_title = not (text_before and _named(doc_title) and ev.text.casefold() not in doc_title.casefold())
            if ev.level == 1 and not first_h1 and (any_heading or may_title):
                first_h1 = ev.text
            builder.heading(ev.level, ev.text, ev.anchor, may_title=may_title)
            any_heading = True
        else:
            text_before = text_before or any(line.text.strip() for line in ev)
            builder.add("\n".join(line.text for line in ev))

    site = soup.find("meta", attrs={"property": "og:site_name"})
    site_name = _norm(_attr(site, "content")) if isinstance(site, Tag) else ""
    # a citation needs a title a reader recognises: a placeholder falls back to the H1, then to the
    # page's file name
    title = _named(_page_title(doc_title, first_h1, site_name)) or _named(first_h1) or humanize_stem(url)
    return ParsedPage(title=title, sections=builder.finish(), metadata=metadata)
