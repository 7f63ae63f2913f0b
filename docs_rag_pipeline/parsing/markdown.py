"""Markdown and MDX documents to a :class:`ParsedPage` of plain-text sections.

The document is parsed with markdown-it-py (CommonMark plus tables) and its token tree is
walked; no HTML is rendered. MDX is first flattened into Markdown: ESM statements and
``{/* comments */}`` are dropped and JSX components become ``[Name label]`` ... ``[/Name]``
marker lines (see :func:`flatten_mdx`).
"""

from __future__ import annotations

import datetime as _dt
import functools
import itertools
import html as _html
import re
import textwrap
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any, Callable, Iterable, Sequence
from urllib.parse import urlsplit

import yaml
from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

from ..records import ParsedPage, Section, text_directive
from ..table_row import row_line
from .binary import check_text
from .errors import ParseError
from .slugs import slug_for
from ..yaml_data import FrontmatterLoader, load_yaml

__all__ = [
    "OutLine",
    "SectionBuilder",
    "fence_block",
    "flatten_mdx",
    "humanize_stem",
    "parse_markdown",
    "split_frontmatter",
    "strip_html",
]


# --------------------------------------------------------------------------------------------
# Shared helpers (also used by the HTML parser)
# --------------------------------------------------------------------------------------------


def humanize_stem(path: str) -> str:
    """A readable title from a file path or URL: ``"docs/getting-started.md"`` → ``"Getting started"``.

    ``index``/``README`` files take the name of their folder.
    """
    parsed = urlsplit(path) if "://" in path else None
    clean = parsed.path if parsed else path.split("?", 1)[0].split("#", 1)[0]
    stem = ""
    for part in reversed([p for p in clean.replace("\\", "/").split("/") if p]):
        candidate = PurePosixPath(part).stem
        if candidate.lower() not in ("index", "readme", "_index"):
            stem = candidate
            break
    if not stem and parsed:
        stem = parsed.netloc
    words = re.sub(r"[-_\s.]+", " ", stem).strip()
    return (words[:1].upper() + words[1:]) if words else "Untitled"


def _plain_data(value: Any) -> Any:
    """Make YAML data JSON-friendly: dates become ISO strings, keys strings."""
    if isinstance(value, dict):
        return {str(k): _plain_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_data(v) for v in value]
    if isinstance(value, _dt.date | _dt.datetime | _dt.time):
        return value.isoformat()
    return value


_FRONTMATTER_RE = re.compile(r"\A---[ \t]*\n(.*?)^(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S | re.M)


#: Hugo's TOML front matter, between leading ``+++`` lines
_TOML_FRONTMATTER_RE = re.compile(r"\A\+\+\+[ \t]*\n(.*?)^\+\+\+[ \t]*(?:\n|\Z)", re.S | re.M)


def _toml_float(written: str) -> float | str:
    """A TOML float as YAML 1.2 frontmatter keeps one: the number when it reads back as written
    (``1.5``, ``2.0``), else the text written (``1.10``, ``1e3``, ``inf``, ``nan``)."""
    value = float(written)
    return value if repr(value) == written else written


def split_frontmatter(text: str, *, path: str, toml: bool = False) -> tuple[dict[str, Any], str]:
    """Split a leading YAML frontmatter block off ``text`` (newlines already normalised); with ``toml``,
    also Hugo's TOML front matter between ``+++`` lines.

    Returns ``(metadata, body)``; raises :class:`ParseError` when the block is not valid YAML (TOML)
    or not a mapping.
    """
    match = _FRONTMATTER_RE.match(text)
    if not match:
        toml_match = _TOML_FRONTMATTER_RE.match(text) if toml else None
        if toml_match is None:
            return {}, text
        try:
            data = tomllib.loads(toml_match.group(1), parse_float=_toml_float)
        except tomllib.TOMLDecodeError as exc:
            detail = re.sub(r"\(at line (\d+)", lambda m: f"(at line {int(m.group(1)) + 1}", str(exc))
            raise ParseError(f"{path}: invalid TOML front matter ({detail}); fix the block between the leading "
                             "'+++' lines (quote text values) or remove it") from exc
        except ValueError as exc:  # an integer of more digits than Python converts (4,300), not a TOMLDecodeError
            raise ParseError(f"{path}: invalid TOML front matter (a number too long to read: {exc}); quote the "
                             "value in the block between the leading '+++' lines, or remove it") from exc
        return _plain_data(data), text[toml_match.end() :]
    try:
        data = load_yaml(match.group(1), loader=FrontmatterLoader)
    except yaml.YAMLError as exc:
        if isinstance(exc, yaml.MarkedYAMLError):  # name the file and its lines, not the block after the '---' line
            for mark in {id(m): m for m in (exc.context_mark, exc.problem_mark) if m}.values():
                mark.name, mark.line = path, mark.line + 1
        detail = " ".join(str(exc).split())
        raise ParseError(
            f"{path}: invalid YAML frontmatter ({detail}); fix the block between the leading "
            "'---' lines (quote values containing ':' or '#') or remove it"
        ) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ParseError(
            f"{path}: the YAML frontmatter is a {type(data).__name__}, not a mapping; "
            "write it as 'key: value' lines between the leading '---' lines"
        )
    return _plain_data(data), text[match.end() :]


@dataclass
class _OpenSection:
    headings: tuple[str, ...]
    anchor: str
    level: int
    blocks: list[str] = field(default_factory=list)
    targets: list[tuple[int, int, str]] = field(default_factory=list)  # (block, offset in it, id)


class SectionBuilder:
    """Collects heading events and text blocks into :class:`Section` records.

    The first heading of a page, when it is an H1, is the page title (``title_heading``) and
    does not start a section; text before the next heading forms the intro section
    (``headings=()``, ``anchor=''``, ``level=1``).

    Anchors are settled in :meth:`finish`, once the whole page is seen: an explicit id keeps its
    exact value wherever it stands, and a heading without one gets its GitHub slug, with
    ``-1``, ``-2``, ... appended past every id already taken on the page (an explicit id later
    in the page included), so no two sections share an anchor the page's site would not.
    """

    def __init__(self, *, text_fragments: bool = False, anchors: str = "github") -> None:
        # text_fragments: a heading without an id gets a text fragment of its text, not a slug (a web
        # page's heading: no element on the live page has an id the parser invents)
        self.text_fragments = text_fragments
        self._slug = slug_for(anchors)  # anchors: how the site's generator slugs (slugs.ANCHOR_STYLES)
        self.title_heading: str | None = None
        self._sections: list[Section] = []
        self._path: list[tuple[int, str]] = []
        self._current = _OpenSection((), "", 1)
        self._any_heading = False
        # every heading in page order: its explicit id ("" for none), or None and the text to slug
        self._headings: list[tuple[str | None, str]] = []
        # the index in _headings of each section's heading (None: the intro)
        self._section_heading: list[int | None] = []
        self._current_heading: int | None = None

    def heading(self, level: int, text: str, anchor: str | None = None, *, slug_text: str | None = None,
                may_title: bool = True) -> None:
        """Start a new section at a heading (``anchor`` None: slug the text; ``""``: the heading has
        no id, and its section links the page itself). ``slug_text``: the text to slug when it is not
        ``text`` (Markdown's heading as rendered: spaces kept, no image alt text). ``may_title``
        False: a first H1 that is known not to be the page's title (Doxygen's first ``\\section``)
        opens a section like any other heading."""
        self._headings.append((anchor, text if slug_text is None else slug_text))
        if not self._any_heading and level == 1 and may_title:
            self._any_heading = True
            self.title_heading = text
            return
        self._any_heading = True
        self._close()
        while self._path and self._path[-1][0] >= level:
            self._path.pop()
        self._path.append((level, text))
        self._current = _OpenSection(tuple(t for _, t in self._path), "", level)
        self._current_heading = len(self._headings) - 1

    def reserve(self, text: str, anchor: str | None = None) -> None:
        """A heading that opens no section (one nested in a blockquote or a list item): the site
        still gives it an id (``anchor``, else its slug), which later slugs skip."""
        self._headings.append((anchor, text))

    def mark(self) -> tuple[tuple[tuple[int, str], ...], tuple[str, ...], int, int | None]:
        """The section open now, for :meth:`resume`."""
        return tuple(self._path), self._current.headings, self._current.level, self._current_heading

    def resume(self, mark: tuple[tuple[tuple[int, str], ...], tuple[str, ...], int, int | None]) -> None:
        """Text from here on belongs to the section that was open at ``mark`` (an HTML ``<section>``
        that a heading opened has ended: what follows it is its parent's); :meth:`finish` joins it to
        that section's text. Nothing changes while that section is still the open one."""
        path, headings, level, heading = mark
        if heading == self._current_heading:
            return
        self._close()
        self._path = list(path)
        self._current = _OpenSection(headings, "", level)
        self._current_heading = heading

    def add(self, block: str, targets: Sequence[tuple[int, str]] = ()) -> None:
        """Append a block of text (a paragraph, a list, a code block...) to the current section.
        ``targets``: ``(offset in block, id)`` of places in it the site gives an id (``Section.targets``)."""
        if block.strip():
            cut = len(block) - len(block.lstrip("\n"))
            at = len(self._current.blocks)
            self._current.targets.extend((at, max(0, off - cut), anchor) for off, anchor in targets if anchor)
            self._current.blocks.append(block.strip("\n"))

    def add_lines(self, lines: Sequence[OutLine]) -> None:
        """:meth:`add` a block of rendered lines, each line's ``anchor`` a target where the line starts."""
        targets, at = [], 0
        for line in lines:
            if line.anchor:
                targets.append((at + len(line.text) - len(line.text.lstrip()), line.anchor))
            at += len(line.text) + 1
        self.add("\n".join(line.text for line in lines), targets)

    def _close(self) -> None:
        cur = self._current
        joined = "\n\n".join(cur.blocks)
        text = joined.strip()
        targets: tuple[tuple[int, str], ...] = ()
        if cur.targets:  # a target's place in the joined text: its block's start, less the stripped lead
            lead = len(joined) - len(joined.lstrip())
            starts = []
            pos = 0
            for block in cur.blocks:
                starts.append(pos)
                pos += len(block) + 2
            targets = tuple((min(len(text), max(0, starts[i] + off - lead)), anchor) for i, off, anchor in cur.targets)
        self._sections.append(Section(cur.headings, cur.anchor, cur.level, text, targets))
        self._section_heading.append(self._current_heading)

    def _anchors(self) -> list[str]:
        """The anchor of each heading: explicit ids first, then slugs that skip every taken id."""
        seen: dict[str, int] = {anchor: 0 for anchor, _ in self._headings if anchor}
        if self.text_fragments:
            return self._text_fragments()
        return [self._slug(text, seen) if anchor is None else anchor for anchor, text in self._headings]

    def _text_fragments(self) -> list[str]:
        """A text fragment of each id-less heading. A browser opens the first place the page shows
        the text, so a heading whose text the page shows before it (an earlier heading, a sentence
        naming the section) also names the first words of its section (``text,-suffix``). Past
        :data:`_MENTION_SEARCH_HEADINGS` such headings, only earlier headings are looked at (the
        search of the text before each is linear in the page)."""
        body = {at: sec.text for sec, at in zip(self._sections, self._section_heading) if at is not None}
        shown = [sec.text.casefold() for sec, at in zip(self._sections, self._section_heading) if at is None]
        search_text = sum(anchor is None for anchor, _ in self._headings) <= _MENTION_SEARCH_HEADINGS
        headings_seen: set[str] = set()
        out = []
        for i, (anchor, text) in enumerate(self._headings):
            key = text.casefold()
            if anchor is None and text:
                earlier = key in headings_seen or (search_text and any(key in part for part in shown))
                out.append(text_directive(text, suffix=_leading_words(body.get(i, "")) if earlier else ""))
            else:
                out.append(anchor or "")
            headings_seen.add(key)
            if search_text:
                shown += [key, body.get(i, "").casefold()]
        return out

    def _join_resumed(self) -> None:
        """One section per heading: the text of a section resumed after a nested one (:meth:`resume`)
        joins its first part."""
        first: dict[int | None, int] = {}
        sections: list[Section] = []
        at_list: list[int | None] = []
        for sec, at in zip(self._sections, self._section_heading, strict=True):
            if at in first:
                k = first[at]
                shift = len(sections[k].text) + 2 if sections[k].text else 0
                sections[k] = replace(sections[k], text="\n\n".join(t for t in (sections[k].text, sec.text) if t),
                                      targets=sections[k].targets + tuple((shift + o, a) for o, a in sec.targets))
                continue
            first[at] = len(sections)
            sections.append(sec)
            at_list.append(at)
        self._sections, self._section_heading = sections, at_list

    def finish(self) -> list[Section]:
        """All sections; an empty intro is left out when other sections exist."""
        self._close()
        self._join_resumed()
        anchors = self._anchors()
        sections = [sec if at is None else replace(sec, anchor=anchors[at])
                    for sec, at in zip(self._sections, self._section_heading, strict=True)]
        if len(sections) > 1 and not sections[0].headings and not sections[0].text:
            sections = sections[1:]
        return sections


#: how many id-less headings a page may have for their text fragments to look for earlier mentions in
#: its text, not only in earlier headings
_MENTION_SEARCH_HEADINGS = 200
_PLAIN_WORD_RE = re.compile(r"[^\W_](?:[\w'’.,:;!?()/-]*[^\W_])?[.,:;!?)]?")
#: a first line whose words a page may not show as written right after the heading: a list item (its
#: number or bullet is drawn by CSS), a table row (a caption may come first), a label the parser puts
#: before a block (a tab's "npm:", an admonition's "Warning:")
_NOT_AS_SHOWN_RE = re.compile(r"^(?:[-*+•]\s|\d+[.)]\s|\S+:(?:\s|$))|\s\|\s|:\s*$")


def _leading_words(text: str, limit: int = 4) -> str:
    """Up to ``limit`` words that open ``text`` as a page shows them: a prose line's words up to the
    first one with markup in it (a code span, a link); '' when it opens otherwise (a list, a table,
    a label, code)."""
    words = []
    line = text.lstrip().split("\n", 1)[0]
    if _NOT_AS_SHOWN_RE.search(line) or (len(line.split()) < 4 and not line.rstrip().endswith((".", "!", "?"))):
        return ""  # (a short line that ends no sentence: a title the parser read from an attribute)
    for word in line.split():
        if len(words) == limit or not _PLAIN_WORD_RE.fullmatch(word):
            break
        words.append(word)
    return " ".join(words)


# --------------------------------------------------------------------------------------------
# MDX → Markdown
# --------------------------------------------------------------------------------------------

_FENCE_OPEN_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")
_FENCE_CLOSE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*$")
#: a line that may close a fence or a MyST colon fence (``:::``): which one, :func:`_fence_closes` says
_BLOCK_CLOSE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,}|:{3,})[ \t]*$")
_ESM_START_RE = re.compile(
    r"^(?:import(?:\s+type)?\s*(?:[\w$*{]|['\"])"
    r"|export\s+(?:default\b|const\b|let\b|var\b|function\b|async\b|class\b|type\b|interface\b|\{|\*))"
)
_ESM_CONTINUES_RE = re.compile(r"^(?:[ \t]+\S|[ \t]*(?:[)\]}.,+\-*/?:=&|]|from\b|as\b))")
_DIRECTIVE_OPEN_RE = re.compile(r"^([ \t]*):{3,}[ \t]*([A-Za-z][\w-]*)[ \t]*(?:\[(.*?)\])?[ \t]*(?:\{[^}]*\})?[ \t]*(.*?)[ \t]*$")
_DIRECTIVE_CLOSE_RE = re.compile(r"^([ \t]*):{3,}[ \t]*$")
_TAG_NAME_RE = re.compile(r"[A-Za-z_$][\w$.:-]*")
_ATTR_NAME_RE = re.compile(r"[^\s=/>{}<\"']+")
_LABEL_ATTRS = ("type", "title", "label", "slot")
#: attributes whose value a component shows as text: a card's title and description, an image's alt
#: text, a figure's caption. A component without a label attribute takes the first of them as its label;
#: the others are lines of text after its marker.
_TEXT_ATTRS = ("title", "label", "description", "caption", "alt", "summary")
#: attributes that hold no text a reader sees (ids, styling, links, sizes, icons), with the prefixes
#: ``client:``, ``data-``, ``aria-`` and ``on``: never the text of a self-closing component
_HIDDEN_ATTRS = frozenset({
    "id", "class", "classname", "style", "key", "ref", "slot", "src", "srcset", "href", "to", "url", "link",
    "target", "rel", "width", "height", "size", "lang", "icon", "variant", "color", "loading",
})
_HIDDEN_ATTR_RE = re.compile(r"(?:client|data|aria|on)[:-]|on[A-Z]")
#: a value that is a link or a path, not text: ``https://…``, ``mailto:…``, ``/en/guide/``, ``./a``, ``#id``
_LINK_VALUE_RE = re.compile(r"(?:[A-Za-z][\w+.-]*://|mailto:|tel:|\.{0,2}/|#)")
#: the longest value of another attribute that a self-closing component without a label shows
_MAX_SHOWN_VALUE = 100
#: attributes that name the field an API reference component documents: ``name`` (Mintlify's
#: ``<ResponseField name="id">``), or the parameter's place holding its name (``<ParamField query="limit">``,
#: ``path``, ``body``, ``header``, ``cookie``) beside a ``type``, ``required`` or ``default``
_FIELD_NAME_ATTRS = ("name",)
_FIELD_PLACE_ATTRS = ("query", "path", "body", "header", "cookie")
#: a field's name: one word of up to 100 characters, no path (``user.email``, ``items[]``, ``X-Api-Key``)
_FIELD_NAME_RE = re.compile(r"[^\s/]{1,100}")
_BLANK_LINE_RE = re.compile(r"\n[ \t]*\n")


@dataclass
class _Line:
    """One line of the flattened document: ``kind`` is text, fence (a fence delimiter),
    code (inside a fence), open or close (a component marker)."""

    text: str
    kind: str = "text"
    elem: int = -1


@dataclass
class _Tag:
    kind: str  # open | close | self
    name: str
    label: str | None
    text: tuple[str, ...] = ()  # the values of its other text attributes (:data:`_TEXT_ATTRS`)
    named: bool = False  # the label is a label attribute's (:data:`_LABEL_ATTRS`), not another's value
    before_blank: bool = True
    after_blank: bool = True
    block: bool = False
    elem: int = -1


@dataclass
class _Fence:
    lines: list[_Line]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _fence_opened(line: str) -> str:
    """The marker (```` ``` ````, ``~~~`` …) of the fence ``line`` opens, else ""."""
    m = _FENCE_OPEN_RE.match(line)
    return m.group(1) if m and not (m.group(1)[0] == "`" and "`" in m.group(2)) else ""


def _fence_closes(line: str, marker: str) -> bool:
    """Whether ``line`` closes the fence (or MyST's ``:::`` block) that ``marker`` opened."""
    c = _BLOCK_CLOSE_RE.match(line)
    return bool(c) and c.group(1)[0] == marker[0] and len(c.group(1)) >= len(marker)


class _Fences:
    """Fenced code, line by line: :meth:`code` says whether a line belongs to a fence (its opening and
    closing lines too), to be left as written by a rewrite of the Markdown around it."""

    def __init__(self) -> None:
        self.marker = ""

    def code(self, line: str) -> bool:
        if self.marker:
            if _fence_closes(line, self.marker):
                self.marker = ""
            return True
        self.marker = _fence_opened(line)
        return bool(self.marker)


def _split_fences(lines: list[str]) -> list[tuple[str, list[str]]]:
    """Split lines into ("prose", lines) and ("fence", lines) runs."""
    runs: list[tuple[str, list[str]]] = []
    prose: list[str] = []
    i = 0
    while i < len(lines):
        marker = _fence_opened(lines[i])
        if marker:
            j = i + 1
            while j < len(lines) and not _fence_closes(lines[j], marker):
                j += 1
            if prose:
                runs.append(("prose", prose))
                prose = []
            runs.append(("fence", lines[i : j + 1]))
            i = j + 1
            continue
        prose.append(lines[i])
        i += 1
    if prose:
        runs.append(("prose", prose))
    return runs


def _bracket_delta(line: str) -> int:
    """Net count of opened brackets on a line, ignoring quoted strings."""
    depth = 0
    quote = ""
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"`":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif line.startswith("//", i):
            break
        i += 1
    return depth


def _drop_esm(lines: list[str]) -> list[str]:
    """Remove top-level ``import``/``export`` statements (single- or multi-line) from prose lines."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not _ESM_START_RE.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        depth = 0
        j = i
        while j < len(lines):
            depth += _bracket_delta(lines[j])
            j += 1
            if depth <= 0:
                nxt = lines[j] if j < len(lines) else ""
                if lines[j - 1].rstrip().endswith(";") or not nxt.strip() or not _ESM_CONTINUES_RE.match(nxt):
                    break
        i = j
    return out


def _skip_braces(s: str, i: int) -> int:
    """Index just past the ``}`` matching the ``{`` at ``s[i]`` (-1 when unbalanced)."""
    depth = 0
    while i < len(s):
        c = s[i]
        if c in "'\"`":
            end = i + 1
            while end < len(s) and s[end] != c:
                end += 2 if s[end] == "\\" else 1
            i = end
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _parse_tag(s: str, i: int) -> tuple[_Tag, int] | None:
    """Parse a JSX tag of an (uppercase) component or fragment at ``s[i] == '<'``."""
    j = i + 1
    closing = s.startswith("/", j)
    if closing:
        j += 1
    if s.startswith(">", j):  # fragment <> or </>
        return _Tag("close" if closing else "open", "", None), j + 1
    m = _TAG_NAME_RE.match(s, j)
    if not m or not m.group(0)[0].isupper():
        return None
    name = m.group(0)
    j = m.end()
    attrs: dict[str, str] = {}
    while j < len(s):
        while j < len(s) and s[j].isspace():
            j += 1
        if s.startswith("/>", j):
            if closing:
                return None
            return _Tag("self", name, *_label(attrs, self_closing=True)), j + 2
        if s.startswith(">", j):
            return _Tag("close" if closing else "open", name, *_label(attrs, self_closing=False)), j + 1
        if closing:
            return None
        if s.startswith("{", j):  # spread {...props}
            j = _skip_braces(s, j)
            if j < 0:
                return None
            continue
        am = _ATTR_NAME_RE.match(s, j)
        if not am:
            return None
        key = am.group(0)
        j = am.end()
        k = j
        while k < len(s) and s[k] in " \t\n":
            k += 1
        if not s.startswith("=", k):
            attrs[key] = ""
            continue
        k += 1
        while k < len(s) and s[k] in " \t\n":
            k += 1
        if k < len(s) and s[k] in "'\"":
            end = s.find(s[k], k + 1)
            if end < 0:
                return None
            attrs[key] = s[k + 1 : end]
            j = end + 1
        elif s.startswith("{", k):
            end = _skip_braces(s, k)
            if end < 0:
                return None
            value = s[k + 1 : end - 1].strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"`":
                attrs[key] = value[1:-1]
            j = end
        else:
            return None
    return None


def _label(attrs: dict[str, str], *, self_closing: bool) -> tuple[str | None, tuple[str, ...], bool]:
    """A component's label and the other text its attributes show. The label is its ``type``,
    ``title``, ``label`` or ``slot`` attribute, else the first of its text attributes
    (:data:`_TEXT_ATTRS`: ``<Image alt="Logo" />`` is ``[Image Logo]``); the text is the values of its
    other text attributes (a card's ``description``). A self-closing component with neither shows its
    other short string attributes, which is all a badge has (``<Since v="5.7.0" />`` is
    ``[Since 5.7.0]``, ``<Badge text="New" />`` ``[Badge New]``), except those that hold no text a
    reader sees (:data:`_HIDDEN_ATTRS`: ids, classes, links, sizes, icons; ``client:load``), booleans,
    links and paths. Last, whether the label is a label attribute's."""
    values = {key: " ".join(value.split()) for key, value in attrs.items()}
    field = _field(attrs, values)
    if field is not None:
        name, details = field
        rest = tuple(dict.fromkeys(v for k in _TEXT_ATTRS if (v := values.get(k)) and v != name))
        return name, (*((details,) if details else ()), *rest), False
    key = next((k for k in (*_LABEL_ATTRS, *_TEXT_ATTRS) if values.get(k)), None)
    text = tuple(dict.fromkeys(v for k in _TEXT_ATTRS if k != key and (v := values.get(k)) and v != values.get(key)))
    if key is not None:
        return values[key], text, key in _LABEL_ATTRS
    if not self_closing:
        # a tab without a label shows its value (Docusaurus' <TabItem value="npm">)
        value = values.get("value", "")
        return ((value, (), False) if value and len(value) <= _MAX_SHOWN_VALUE and not _LINK_VALUE_RE.match(value)
                else (None, (), False))
    shown = [v for k, v in values.items()
             if v and len(v) <= _MAX_SHOWN_VALUE and v not in ("true", "false")
             and k.lower() not in _HIDDEN_ATTRS and not _HIDDEN_ATTR_RE.match(k) and not _LINK_VALUE_RE.match(v)]
    return (" ".join(shown) or None), (), False


def _field(attrs: dict[str, str], values: dict[str, str]) -> tuple[str, str] | None:
    """The name of the field an API reference component documents and the line of its details, or None:
    ``<ParamField query="limit" type="integer" default="10" required>`` is the field ``limit`` with
    ``integer, required, default: 10``, ``<ResponseField name="id" type="string">`` ``id`` with ``string``,
    as Mintlify shows them above the field's description. The name is its ``name`` attribute, or one of
    the parameter's place (:data:`_FIELD_PLACE_ATTRS`) beside a ``type``, ``required`` or ``default``."""
    typed = any(k in attrs for k in ("type", "required", "default"))
    key = next((k for k in _FIELD_NAME_ATTRS if values.get(k)), None) or next(
        (k for k in _FIELD_PLACE_ATTRS if typed and values.get(k)), None)
    if key is None or not _FIELD_NAME_RE.fullmatch(values[key]):
        return None
    details = [values["type"]] if values.get("type") else []
    details += [flag for flag in ("required", "deprecated") if flag in attrs and values[flag] in ("", "true")]
    if values.get("default"):
        details.append(f"default: {values['default']}")
    return values[key], ", ".join(details)


#: a JavaScript literal that a JSX expression in text may be: a number, ``Infinity`` or ``NaN``, a
#: string in quotes (a template literal without ``${…}``), a boolean, ``null`` or ``undefined``
_JS_LITERAL_RE = re.compile(
    r"\s*(?:(?P<num>[-+]?(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?Infinity|NaN)"
    r"|(?P<str>\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\$]|\\.|\$(?!\{))*`)"
    r"|(?P<none>true|false|null|undefined))\s*",
    re.S,
)


def _literal(expr: str) -> str | None:
    """The text a JSX expression in text shows when it is a literal (:data:`_JS_LITERAL_RE`):
    ``{Infinity}`` shows ``Infinity``, ``{42}`` ``42``, ``{"a b"}`` and ``{' '}`` the string; a
    boolean, ``null`` and ``undefined`` show nothing. A string's punctuation is escaped: it is text,
    not Markdown. None for any other expression (a variable, a
    call, an object; ``{#id}`` after a heading), which stays as written."""
    m = _JS_LITERAL_RE.fullmatch(expr)
    if not m:
        return None
    if m.group("num"):  # as JavaScript writes the number: {1e3} shows 1000, {0.50} 0.5
        num = m.group("num").replace("_", "").lstrip("+")
        if num.lstrip("-") in ("Infinity", "NaN"):
            return "NaN" if "NaN" in num else num
        if re.fullmatch(r"-?\d+", num):
            return str(int(num))  # as written, however long; 007 is 7, -0 is 0
        text = repr(float(num))
        return text[:-2] if text.endswith(".0") else text
    if m.group("str"):
        value = re.sub(r"\\(?:u\{?([0-9A-Fa-f]{1,6})\}?|(.))", _js_escape, m.group("str")[1:-1])
        return re.sub(r"([!-/:-@[-`{-~])", r"\\\1", value)  # text as written, not Markdown: "*" is a star
    return ""


def _js_escape(m: re.Match[str]) -> str:
    if m.group(1):
        return chr(int(m.group(1), 16))
    return {"n": " ", "t": " ", "r": ""}.get(m.group(2), m.group(2))


def _scan_jsx(s: str) -> list[str | _Tag]:
    """Split one prose run into text pieces and component tags; drop ``{/* comments */}``; a literal
    expression (``{Infinity}``, ``{42}``, ``{"text"}``) becomes its value (:func:`_literal`).

    Inline code spans and backslash escapes are copied untouched.
    """
    events: list[str | _Tag] = []
    buf: list[str] = []
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            buf.append(s[i : i + 2])
            i += 2
        elif c == "`":
            run = 0
            while i + run < n and s[i + run] == "`":
                run += 1
            end = _find_code_span_end(s, i + run, run)
            stop = end if end >= 0 else i + run
            buf.append(s[i:stop])
            i = stop
        elif c == "{" and s.startswith("{/*", i):
            end = s.find("*/}", i + 3)
            if end < 0:
                buf.append(c)
                i += 1
            else:
                i = end + 3
        elif c == "{" and (end := _skip_braces(s, i)) > 0 and (value := _literal(s[i + 1 : end - 1])) is not None:
            buf.append(value)  # {Infinity}, {42}, {"text"}: the value the page shows
            i = end
        elif c == "<" and i + 1 < n and (s[i + 1].isupper() or s[i + 1] in "/>"):
            parsed = _parse_tag(s, i)
            if parsed is None:
                buf.append(c)
                i += 1
            else:
                if buf:
                    events.append("".join(buf))
                    buf = []
                events.append(parsed[0])
                i = parsed[1]
        else:
            buf.append(c)
            i += 1
    if buf:
        events.append("".join(buf))
    return events


def _find_code_span_end(s: str, start: int, run: int) -> int:
    """Index past the backtick run of length ``run`` closing a code span (same paragraph), or -1."""
    blank = _BLANK_LINE_RE.search(s, start)
    limit = blank.start() if blank else len(s)
    i = start
    while (j := s.find("`" * run, i, limit)) >= 0:
        k = j
        while k < len(s) and s[k] == "`":
            k += 1
        if k - j == run:
            return k
        i = k
    return -1


def _classify(events: list[str | _Tag | _Fence]) -> None:
    """Mark component tags as block (alone on their lines) or inline and pair them up."""
    blank = True
    for ev in events:
        if isinstance(ev, _Fence):
            blank = True
        elif isinstance(ev, str):
            tail = ev.rsplit("\n", 1)
            if len(tail) == 2:
                blank = not tail[1].strip()
            elif ev.strip():
                blank = False
        else:
            ev.before_blank = blank
    blank = True
    for ev in reversed(events):
        if isinstance(ev, _Fence):
            blank = True
        elif isinstance(ev, str):
            head = ev.split("\n", 1)
            if len(head) == 2:
                blank = not head[0].strip()
            elif ev.strip():
                blank = False
        else:
            ev.after_blank = blank
    stack: list[_Tag] = []
    next_id = 0
    for ev in events:
        if not isinstance(ev, _Tag):
            continue
        if ev.kind == "self":
            ev.block = ev.before_blank and ev.after_blank
        elif ev.kind == "open":
            ev.block = ev.before_blank and ev.after_blank  # refined when the close tag is seen
            ev.elem = next_id
            next_id += 1
            stack.append(ev)
        else:
            names = [t.name for t in stack]
            if ev.name not in names:
                ev.block = False
                continue
            while stack:
                opener = stack.pop()
                if opener.name == ev.name:
                    break
            opener.block = opener.before_blank and ev.after_blank
            ev.block = opener.block
            ev.elem = opener.elem


#: a line that opens an ATX heading: a self-closing component inside it adds only its label attribute
#: (``type``, ``title``, ``label``, ``slot``) to the heading, as before, not the text of its other
#: attributes (``## Foo <Badge text="New" /> Bar`` is the heading ``Foo Bar``, slug ``foo--bar``)
_HEADING_LINE_RE = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]|$)")


def _assemble(events: list[str | _Tag | _Fence]) -> list[_Line]:
    """Turn scanned events into lines, block components as marker lines between blank lines."""
    out: list[_Line] = []
    cur = ""

    for ev in events:
        if isinstance(ev, str):
            parts = ev.split("\n")
            cur += parts[0]
            for part in parts[1:]:
                out.append(_Line(cur))
                cur = part
        elif isinstance(ev, _Fence):
            if cur:
                out.append(_Line(cur))
            cur = ""
            out.extend(ev.lines)
        elif ev.block:
            indent = cur[: _indent(cur)]
            if cur.strip():
                out.append(_Line(cur))
            # the other text the component shows (a card's description): lines after the marker, in its
            # paragraph (a hard line break), so that the marker line stays where the body's indentation is read
            shown = "".join(f"\\\n{indent}{t}" for t in ev.text) if ev.kind != "close" else ""
            if ev.kind == "self":
                if ev.label:
                    out += [_Line(""), _Line(f"{indent}[{ev.name} {ev.label}]{shown}"), _Line("")]
            elif ev.name:
                text = f"[/{ev.name}]" if ev.kind == "close" else f"[{ev.name}{' ' + ev.label if ev.label else ''}]{shown}"
                out += [_Line(""), _Line(indent + text, ev.kind, ev.elem), _Line("")]
            else:  # a fragment: keeps its place for dedenting, shows nothing
                out.append(_Line(indent, ev.kind, ev.elem))
            cur = indent
        elif ev.kind == "self" and _HEADING_LINE_RE.match(cur):
            if ev.label and ev.named:  # a heading keeps only a label attribute (see _HEADING_LINE_RE)
                cur += f"[{ev.name} {ev.label}]"
        elif ev.kind == "self" and ev.label:
            cur += " ".join((f"[{ev.name} {ev.label}]", *ev.text))
    if cur:
        out.append(_Line(cur))
    return out


def _directives(lines: list[_Line], first_id: int) -> list[_Line]:
    """Turn ``:::note[Title]`` ... ``:::`` container directives into marker lines."""
    out: list[_Line] = []
    stack: list[tuple[str, int]] = []
    next_id = first_id
    for line in lines:
        if line.kind == "text":
            m = _DIRECTIVE_OPEN_RE.match(line.text)
            if m:
                indent, name, bracket, rest = m.groups()
                label = (bracket or rest or "").strip()
                stack.append((name, next_id))
                marker = f"{indent}[{name}{' ' + label if label else ''}]"
                out += [_Line(""), _Line(marker, "open", next_id), _Line("")]
                next_id += 1
                continue
            m = _DIRECTIVE_CLOSE_RE.match(line.text)
            if m and stack:
                name, elem = stack.pop()
                out += [_Line(""), _Line(f"{m.group(1)}[/{name}]", "close", elem), _Line("")]
                continue
        out.append(line)
    return out


def _dedent_bodies(lines: list[_Line]) -> None:
    """Dedent each component body to the indentation of its opening marker (outer ones first)."""
    opens: dict[int, int] = {}
    ranges: list[tuple[int, int]] = []
    for idx, line in enumerate(lines):
        if line.kind == "open":
            opens[line.elem] = idx
        elif line.kind == "close" and line.elem in opens:
            ranges.append((opens.pop(line.elem), idx))
    for start, end in sorted(ranges):
        body = [ln for ln in lines[start + 1 : end] if ln.kind != "code" and ln.text.strip()]
        if not body:
            continue
        extra = min(_indent(ln.text) for ln in body) - _indent(lines[start].text)
        if extra <= 0:
            continue
        for ln in lines[start + 1 : end]:
            cut = min(extra, _indent(ln.text))
            ln.text = ln.text[cut:]


#: a Python-Markdown block whose body is the lines indented under it (MkDocs): an admonition
#: ``!!! note "Title"``, a collapsible one (pymdownx.details) ``??? tip`` / ``???+ tip``, a content tab
#: (pymdownx.tabbed) ``=== "pip"``
_PM_ADMONITION_RE = re.compile(r'^([ \t]*)(?:!!!|\?\?\?\+?)[ \t]+([A-Za-z][\w-]*)((?:[ \t]+[A-Za-z][\w-]*)*)'
                               r'(?:[ \t]+"([^"\n]*)")?[ \t]*$')
_PM_TAB_RE = re.compile(r'^([ \t]*)===[+!]*[ \t]+"([^"\n]*)"[ \t]*$')
#: lines of Markdown extensions that show nothing on the page: an attribute list alone on its line
#: (``{: .note }``, kramdown and Python-Markdown), an abbreviation's definition (``*[HTML]: Hyper Text …``),
#: pymdownx.snippets' include (``--8<-- "file.md"``), Python-Markdown's ``[TOC]``, the ``[[toc]]`` of
#: markdown-it's table-of-contents plugins (VitePress) and ``${toc}`` (markdown-it-toc-done-right)
_PM_HIDDEN_RE = re.compile(r"^[ \t]*(?:\{:[^{}\n]*\}|\*\[[^\]\n]+\]:[ \t].*|-{1,2}8<-{1,2}(?:[ \t].*)?|\[TOC\]"
                           r"|\[\[[Tt][Oo][Cc]\]\]|\$\{toc\})[ \t]*$")
#: the block form of a pymdownx.snippets include: a bare ``--8<--`` line, one file a line, a bare ``--8<--``
_PM_SNIPPET_BLOCK_RE = re.compile(r"^[ \t]*-{1,2}8<-{1,2}[ \t]*$")
#: mkdocstrings' ``::: package.module.Object``: the page shows that object's API documentation
_MKDOCSTRINGS_RE = re.compile(r"^([ \t]*):::[ \t]+([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+)[ \t]*$")
_PM_SIGN_RE = re.compile(r"^[ \t]*(?:!!!|\?\?\?|===|\{:|\*\[|-{1,2}8<|\[TOC\]|\[\[[Tt][Oo][Cc]\]\]|\$\{toc\}|:::[ \t]+\w+\.)",
                         re.M)


#: a GitHub alert's first line, ``> [!WARNING]`` (GitHub, GitLab, Obsidian's callouts ``> [!tip] Title``)
_ALERT_RE = re.compile(r"^([ \t]{0,3})>[ \t]?\[!([A-Za-z][\w-]*)\][+-]?[ \t]*(.*?)[ \t]*$")
_QUOTE_LINE_RE = re.compile(r"^([ \t]{0,3})>[ \t]?(.*)$")


def github_alerts(text: str) -> str:
    """A GitHub alert (``> [!WARNING]`` and the quote's lines after it) as a marker pair around its body,
    ``[warning]`` … ``[/warning]``, as an admonition of the other syntaxes; an Obsidian callout's title
    (``> [!tip] Title``) is the marker's label. Before, ``[!WARNING]`` was a word of the quote's first
    sentence. Lines inside fenced code are left alone."""
    if "[!" not in text:
        return text
    out: list[str] = []
    lines = text.split("\n")
    fences = _Fences()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if fences.code(line):
            out.append(line)
            continue
        a = _ALERT_RE.match(line)
        if a is None or (out and _QUOTE_LINE_RE.match(out[-1])):  # only a quote's first line opens one
            out.append(line)
            continue
        indent, kind, label = a.group(1), a.group(2).casefold(), " ".join(a.group(3).split())
        body: list[str] = []
        while i < len(lines) and (q := _QUOTE_LINE_RE.match(lines[i])) is not None:
            body.append(q.group(2))
            i += 1
        out += ["", f"{indent}[{kind}{' ' + label if label else ''}]", "", *body, "", f"{indent}[/{kind}]", ""]
    return "\n".join(out)


#: a Hugo shortcode alone on its line: ``{{< name args >}}``, ``{{% name args %}}``, closing ``{{< /name >}}``
_SHORTCODE_LINE_RE = re.compile(r"^([ \t]*)\{\{([<%])[ \t]*(/?)[ \t]*([\w./-]+)((?:(?![>%]\}\}).)*?)[ \t]*/?[ \t]*[>%]\}\}[ \t]*$")
#: a Liquid tag alone on its line (Jekyll): ``{% include x.html %}``, ``{% highlight ruby %}``
_LIQUID_LINE_RE = re.compile(r"^([ \t]*)\{%-?[ \t]*(\w+)((?:(?!%\}).)*?)-?%\}[ \t]*$")
#: a template tag as a link's target: ``({{< ref "install.md" >}})``, ``({% link api.md %})``,
#: ``({{ site.baseurl }}/docs/)``
_TEMPLATE_TARGET_RE = re.compile(r"\]\(\s*\{\{[<%]\s*(?:rel)?ref\s+\"?([^\"\s]*)\"?\s*[>%]\}\}"
                                 r"|\]\(\s*\{%-?\s*(?:link|post_url)\s+(\S+)\s*-?%\}|\{\{-?\s*site\.(?:base)?url\s*-?\}\}")
_TEMPLATE_ARG_RE = re.compile(r'(?:([\w-]+)=)?(?:"([^"]*)"|\'([^\']*)\'|(\S+))')
#: the arguments of a shortcode or include that hold text the page shows
_TEMPLATE_TEXT_ARGS = ("title", "caption", "header", "label", "name", "alt", "content", "text")


def _template_args(raw: str) -> tuple[list[str], dict[str, str]]:
    positional, named = [], {}
    for m in _TEMPLATE_ARG_RE.finditer(raw):
        value = next((g for g in m.group(2, 3, 4) if g is not None), "")
        if m.group(1):
            named[m.group(1).casefold()] = value
        else:
            positional.append(value)
    return positional, named


def _shown_text(named: dict[str, str]) -> str:
    """The text a tag's named arguments show (its ``caption``, ``title``, ``content`` …), "" if none."""
    return " ".join(next((named[k] for k in _TEMPLATE_TEXT_ARGS if named.get(k)), "").split())


def template_tags(text: str) -> str:
    """Hugo's shortcodes and Jekyll's Liquid tags as the page shows them, in Markdown: a
    ``{{< highlight go >}}`` or ``{% highlight ruby %}`` block is a fenced block of that language; a shortcode
    that encloses text (``{{% notice tip %}}`` … ``{{% /notice %}}``) a marker pair around it, ``[notice
    tip]`` … ``[/notice]``; a tag alone on its line that encloses nothing (``{% include … %}``,
    ``{{< figure … >}}``) shows only its text arguments (``caption``, ``title``, ``content``, …) as a marker,
    else goes; ``{% comment %}`` blocks go, ``{% raw %}`` tags go and keep what they hold; a link's target
    written as a tag (``({{< ref "install.md" >}})``, ``({% link api.md %})``, ``{{ site.baseurl }}``) is
    the path it names, so the link is read as one. Lines inside fenced code stay as written."""
    if "{{<" not in text and "{{%" not in text and "{%" not in text and "{{ site." not in text:
        return text
    lines = text.split("\n")
    closers = {m.group(4).casefold() for ln in lines if (m := _SHORTCODE_LINE_RE.match(ln)) and m.group(3)}
    out: list[str] = []
    fences = _Fences()
    skipping = code = False
    for line in lines:
        if fences.marker:
            fences.code(line)
            out.append(_unescaped_shortcodes(line))  # Hugo renders shortcodes in code too: the escaped ones show
            continue
        sc, lq = _SHORTCODE_LINE_RE.match(line), _LIQUID_LINE_RE.match(line)
        if skipping:  # inside {% comment %}
            skipping = not (lq is not None and lq.group(2) == "endcomment")
            continue
        if code:  # inside a highlight block: code up to its end
            if (sc and sc.group(3) and sc.group(4) == "highlight") or (lq and lq.group(2) == "endhighlight"):
                out.append((sc or lq).group(1) + "```")
                code = False
            else:
                out.append(line)
            continue
        if fences.code(line):
            out.append(line)
            continue
        if sc is not None:
            indent, closing, name, raw = sc.group(1), sc.group(3), sc.group(4), sc.group(5)
            positional, named = _template_args(raw)
            if name == "highlight" and not closing:
                out.append(f"{indent}```{positional[0] if positional else ''}")
                code = True
            elif closing:
                out += ["", f"{indent}[/{name}]", ""]
            elif name.casefold() in closers:
                label = named.get("title") or named.get("header") or " ".join(positional)
                out += ["", f"{indent}[{name}{' ' + ' '.join(label.split()) if label else ''}]", ""]
            else:
                shown = _shown_text(named)
                out += ["", f"{indent}[{name} {shown}]", ""] if shown else [""]
            continue
        if lq is not None:
            indent, name, raw = lq.group(1), lq.group(2), lq.group(3)
            if name == "highlight":
                out.append(f"{indent}```{raw.split()[0] if raw.split() else ''}")
                code = True
            elif name == "comment":
                skipping = True
            elif name == "include":
                shown = _shown_text(_template_args(raw)[1])
                out.append(f"{indent}{shown}" if shown else "")
            elif name not in ("raw", "endraw"):
                out.append("")
            continue
        out.append(_outside_code_spans(line, _template_inline))
    return "\n".join(out)


#: a Hugo shortcode inside a line, ``{{< param "version" >}}``, ``{{% kbd %}}``, or escaped as Hugo's own docs
#: show one, ``{{</* notice */>}}`` (the page shows ``{{< notice >}}``)
#: (the body's spaces are cut in Python: ``\s*`` on both sides of a lazy body made a ``{{<`` never
#: closed cubic in the line's length)
_INLINE_SHORTCODE_RE = re.compile(r"\{\{([<%])(?P<esc>/\*)?(?P<body>[^{}]*?)(?(esc)\*/)[>%]\}\}")
_ESCAPED_SHORTCODE_RE = re.compile(r"\{\{([<%])/\*([^{}]*?)\*/([>%])\}\}")


def _unescaped_shortcodes(line: str) -> str:
    """``line`` with each escaped shortcode as Hugo shows it: ``{{</* notice */>}}`` is ``{{< notice >}}``."""
    return _ESCAPED_SHORTCODE_RE.sub(lambda m: f"{{{{{m.group(1)} {m.group(2).strip()} {m.group(3)}}}}}", line) \
        if "/*" in line else line


def _inline_shortcode(m: re.Match[str]) -> str:
    """What a shortcode inside a line shows: an escaped one as written without its escape, another its
    text arguments (``title``, ``caption`` …) or nothing: its output (a site parameter, a video) is not known."""
    body = m.group("body").strip()
    if m.group("esc"):
        return f"{{{{{m.group(1)} {body} {'>' if m.group(1) == '<' else '%'}}}}}"
    if body.startswith("/"):
        return ""
    return _shown_text(_template_args(body.split(None, 1)[1] if len(body.split(None, 1)) > 1 else "")[1])


def _template_inline(text: str) -> str:
    text = _TEMPLATE_TARGET_RE.sub(lambda m: f"]({m.group(1) or m.group(2)}" if m.group(0).startswith("]") else "",
                                   text)
    if "{{<" in text or "{{%" in text:
        text = _INLINE_SHORTCODE_RE.sub(_inline_shortcode, text)
    return re.sub(r"\{%-?\s*(?:end)?raw\s*-?%\}", "", text)


#: a code span: a whole run of backticks, what it holds, a run of the same length (a run without its
#: closing twin is text, and no run inside it opens one)
_CODE_SPAN_RE = re.compile(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)")


def _outside_code_spans(line: str, edit: Callable[[str], str]) -> str:
    """``line`` with ``edit`` applied to its text outside code spans."""
    if "`" not in line:
        return edit(line)
    out, i = [], 0
    for m in _CODE_SPAN_RE.finditer(line):
        out += [edit(line[i : m.start()]), m.group()]
        i = m.end()
    return "".join(out) + edit(line[i:])


def python_markdown_blocks(text: str) -> str:
    """MkDocs' admonitions and content tabs as markers: ``!!! note "Before you start"`` and the lines
    indented under it become ``[note Before you start]``, the body dedented, and ``[/note]`` (as a
    ``:::note[Title]`` directive does); ``=== "pip"`` becomes ``[Tab pip]`` … ``[/Tab]``. Markdown reads an
    indented body as a code block, so an admonition's prose and a tab's code were one indented code block.
    Lines inside fenced code are left alone (a page that shows the syntax)."""
    if not _PM_SIGN_RE.search(text):
        return text
    return "\n".join(_python_markdown_lines(text.split("\n"), 0))


def _python_markdown_lines(lines: list[str], depth: int) -> list[str]:
    out: list[str] = []
    fences = _Fences()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if fences.code(line):
            out.append(line)
            continue
        if _PM_SNIPPET_BLOCK_RE.match(line):  # the file names of a snippets block go with its fences
            end = next((k for k in range(i, min(len(lines), i + 100)) if _PM_SNIPPET_BLOCK_RE.match(lines[k])), None)
            if end is not None and all(x.strip() and " " not in x.strip() for x in lines[i:end]):
                i = end + 1
            continue
        if _PM_HIDDEN_RE.match(line):
            continue
        api = _MKDOCSTRINGS_RE.match(line)
        if api is not None:  # the object's name, as a line of code; its indented options go
            out.append(f"{api.group(1)}`{api.group(2)}`")
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i].expandtabs(4)) > len(api.group(1))):
                i += 1
            out.append("")
            continue
        a = _PM_ADMONITION_RE.match(line) if depth < 20 else None
        t = None if a or depth >= 20 else _PM_TAB_RE.match(line)
        if a is None and t is None:
            out.append(line)
            continue
        if a is not None:
            indent, name, label = a.group(1), a.group(2), a.group(4)
            label = label or ""  # no quoted title: the marker's name says the type, ``!!! note`` → ``[note]``
        else:
            indent, name, label = t.group(1), "Tab", t.group(2)
        width = len(indent.expandtabs(4)) + 4
        body: list[str] = []
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i].expandtabs(4)) >= width):
            body.append(lines[i])
            i += 1
        while body and not body[-1].strip():
            body.pop()
            i -= 1
        dedented = [ln.expandtabs(4)[width:] if ln.strip() else "" for ln in body]
        label = " ".join(label.split())
        out += ["", f"{indent}[{name}{' ' + label if label else ''}]", ""]
        out += [indent + ln if ln else "" for ln in _python_markdown_lines(dedented, depth + 1)]
        out += ["", f"{indent}[/{name}]", ""]
    return out


#: MyST (Sphinx's Markdown, Jupyter Book): a directive fence ```` ```{note} ```` or ``:::{note}``, a role
#: ``{py:func}`run```, a target line ``(setup)=``
_MYST_SIGN_RE = re.compile(r"^[ \t]*(?:`{3,}|~{3,}|:{3,})[ \t]*\{[\w:.+-]+\}|^[ \t]*\([^()\s]+\)=[ \t]*$", re.M)
_MYST_ROLE_SIGN_RE = re.compile(r"(?<![\w$])\{[\w:.+-]+\}`")
_MYST_FENCE_RE = re.compile(r"^([ \t]*)(`{3,}|~{3,}|:{3,})[ \t]*\{([\w:.+-]+)\}[ \t]*(.*?)[ \t]*$")
_MYST_OPTION_RE = re.compile(r"^[ \t]*:[\w-]+:(?:[ \t].*)?$")
_MYST_ROLE_NAME_RE = re.compile(r"(?<![\w$])\{([\w:.+-]+)\}$")
_MYST_TARGET_RE = re.compile(r"^[ \t]*\([^()\s]+\)=[ \t]*$")
#: a Pandoc fenced div's opening line with an attribute block (Quarto, R Markdown, Pandoc):
#: ``::: {.callout-note}``, ``::: {.callout-warning title="Memory use"}``, ``::: {#fig-a .column-margin}``
_PANDOC_DIV_RE = re.compile(r'^([ \t]*):{3,}[ \t]*\{((?:[^{}"]|"[^"]*")*)\}[ \t]*:*[ \t]*$')
#: what makes an attribute block Pandoc's, not a MyST directive's name (``:::{note}``): a class, an id
#: or a key=value
_PANDOC_ATTRS_SIGN_RE = re.compile(r'(?:^|\s)(?:[.#][\w-]|[\w-]+=)')
#: any line that opens a ``:::`` block (a Pandoc div, a directive, a MyST colon fence), and one that closes it
_COLON_OPEN_RE = re.compile(r"^[ \t]*:{3,}[ \t]*\S")
_PANDOC_ATTR_RE = re.compile(r'(?:^|\s)(?:\.([\w-]+)|([\w-]+)="([^"]*)"|([\w-]+)=(\S+))')
#: an executable code chunk (Quarto, R Markdown): ```` ```{python} ````, ```` ```{r, echo=FALSE} ````, and its
#: ``#|`` option lines, which the page never shows (``#| echo: false`` hides the whole chunk's code)
#: (the language, then the options as one run: spaces that three parts could each take made a line
#: without its ``}`` cubic in its length; the options' leading ``, `` is cut in Python, :func:`_chunk_options`)
_CHUNK_OPEN_RE = re.compile(r"^([ \t]*)(?:`{3,}|~{3,})[ \t]*\{([A-Za-z][\w+-]*)(?![\w+-])([^{}]*)\}[ \t]*$")


def _chunk_options(chunk: re.Match[str]) -> str:
    """A code chunk's options as written after its language (``{r, echo=FALSE}`` → ``echo=FALSE``)."""
    return re.sub(r"^[ \t]*,?[ \t]*", "", chunk.group(3))
_CHUNK_OPTION_RE = re.compile(r"^[ \t]*#\|")
#: (the title is cut of its closing ``#``s in Python, :func:`_atx_title`: a lazy title before an optional
#: closing sequence was quadratic on a line ending in a long run of spaces)
_ATX_HEADING_RE = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.*)$")


def _atx_title(heading: re.Match[str]) -> str:
    """An ATX heading's title without its closing sequence (``## Title ##``), as CommonMark reads it."""
    title = heading.group(2).rstrip(" \t")
    bare = title.rstrip("#")
    if bare != title and (not bare or bare[-1] in " \t"):
        title = bare.rstrip(" \t")
    return title


def pandoc_divs(text: str) -> str:
    """Pandoc's fenced divs (Quarto's ``.qmd``, R Markdown) as the page shows them: a callout
    (``::: {.callout-note}``, ``{.callout-warning title="Memory use"}``) becomes the admonition directive
    ``:::note[Title]`` (read as a ``:::note`` one is: ``[note Title]`` … ``[/note]``), its title from its
    ``title`` attribute or else the heading that opens its body, as Quarto draws it; a tab set
    (``{.panel-tabset}``) becomes ``[tabset]`` with a ``[tab Name]`` for each of its headings, which are
    tab labels, not sections; any other div (``{.column-margin}``, ``{#fig-a}``) keeps its body without
    its fence lines. Before, such a div was a code block (``{.callout-note}`` was taken for a MyST
    directive) or a paragraph holding its ``:::`` lines. An executable code chunk (```` ```{python} ````,
    ```` ```{r, echo=FALSE} ````) loses its leading ``#|`` option lines, which the page never shows, and
    shows nothing when an option hides its code (``echo: false``, ``include: false``)."""
    if "{" not in text:
        return text
    return "\n".join(_pandoc_lines(text.split("\n"), 0))


def _div_end(lines: list[str], start: int) -> int:
    """The index of the line that closes the ``:::`` block opened at ``lines[start - 1]`` (nested
    blocks counted, fenced code skipped), or ``len(lines)`` when none does."""
    fences = _Fences()
    depth = 1
    for k in range(start, len(lines)):
        if fences.code(lines[k]):
            continue
        if _DIRECTIVE_CLOSE_RE.match(lines[k]):
            depth -= 1
            if depth == 0:
                return k
        elif _COLON_OPEN_RE.match(lines[k]):
            depth += 1
    return len(lines)


def _pandoc_lines(lines: list[str], depth: int) -> list[str]:
    out: list[str] = []
    fences = _Fences()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        m = _PANDOC_DIV_RE.match(line) if not fences.marker and depth < 20 else None
        if m is None or not _PANDOC_ATTRS_SIGN_RE.search(m.group(2)):
            if fences.marker or not (chunk := _CHUNK_OPEN_RE.match(line)):
                fences.code(line)
                out.append(line)
                continue
            marker = _fence_opened(line)
            end = next((k for k in range(i, len(lines)) if _fence_closes(lines[k], marker)), len(lines))
            code = lines[i:end]
            options = list(itertools.takewhile(_CHUNK_OPTION_RE.match, code))
            if not options and not _chunk_options(chunk):  # no chunk's options: left as written (```{note} is MyST's)
                fences.code(line)
                out.append(line)
                continue
            code, i = code[len(options):], end + 1
            shown = " ".join([_chunk_options(chunk), *options]).replace(" ", "").casefold()
            if not re.search(r"(?:echo|include)[:=](?:false|no)\b", shown):
                out += [f"{chunk.group(1)}{marker}{chunk.group(2)}", *code, f"{chunk.group(1)}{marker}"]
            continue
        indent, attrs = m.group(1), m.group(2)
        classes, named = [], {}
        for a in _PANDOC_ATTR_RE.finditer(attrs):
            if a.group(1):
                classes.append(a.group(1))
            else:
                named[(a.group(2) or a.group(4)).casefold()] = a.group(3) if a.group(2) else a.group(5)
        end = _div_end(lines, i)
        body = lines[i:end]
        i = end + 1
        callout = next((c[len("callout-"):] for c in classes if c.startswith("callout-")), None)
        if callout:
            title = " ".join(named.get("title", "").split())
            first = next((k for k, ln in enumerate(body) if ln.strip()), None)
            if not title and first is not None and (h := _ATX_HEADING_RE.match(body[first])):
                title = _atx_title(h).strip()
                body = body[first + 1 :]
            out += ["", f"{indent}:::{callout}" + (f"[{title}]" if title else ""), "",
                    *_pandoc_lines(body, depth + 1), "", f"{indent}:::", ""]
        elif "panel-tabset" in classes:
            out += ["", f"{indent}:::Tabs", ""]
            body = _pandoc_lines(body, depth + 1)
            in_code = _Fences()
            headings = [(k, h) for k, ln in enumerate(body)
                        if not in_code.code(ln) and (h := _ATX_HEADING_RE.match(ln))]
            level = min((len(h.group(1)) for _, h in headings), default=0)
            tabs = {k: _atx_title(h).strip() for k, h in headings if len(h.group(1)) == level}
            opened = False
            for k, ln in enumerate(body):
                if k in tabs:
                    out += (["", f"{indent}:::", ""] if opened else []) + ["", f"{indent}:::Tab[{tabs[k]}]", ""]
                    opened = True
                else:
                    out.append(ln)
            out += (["", f"{indent}:::", ""] if opened else []) + ["", f"{indent}:::", ""]
        else:
            out += ["", *_pandoc_lines(body, depth + 1), ""]
    return out


#: directives whose body is the page's prose (admonitions, dropdowns, tabs, cards, version notes)
_MYST_PROSE = frozenset("admonition attention caution danger error hint important note seealso tip todo warning "
                        "versionadded versionchanged deprecated versionremoved dropdown tab-set tab-item tab card "
                        "grid grid-item grid-item-card topic sidebar margin epigraph rubric glossary div "
                        "container".split())
#: directives whose body is code: fenced with the language their argument names
_MYST_CODE = frozenset({"code-block", "code", "sourcecode", "code-cell"})
#: roles whose text is prose (a cross-reference's title): the rest are code (``{py:func}`run```)
_MYST_TEXT_ROLES = frozenset("ref doc term numref download abbr sub sup guilabel menuselection any eq cite "
                             "index".split())


def myst_blocks(text: str) -> str:
    """MyST's markup as the page shows it: an admonition or other prose directive (```` ```{note} ````,
    ``:::{tip} Title``) becomes a marker pair around its body (``[note]`` … ``[/note]``), its ``:option:``
    lines left out; a ```` ```{code-block} python ```` is a ```` ```python ```` fence (its ``:caption:`` the
    block's title); a ``{toctree}`` (a list of page paths) goes; a role is its text, as code
    (``{py:func}`~pkg.run``` → ```run```) or, for a cross-reference, as prose (``{ref}`Setup <setup>``` →
    *Setup*); ``(label)=`` target lines and ``%`` comment lines go. Only a page with MyST's marks is read
    so: a plain Markdown page keeps a line that starts with ``%``."""
    signed = _MYST_SIGN_RE.search(text) is not None
    if not signed and not _MYST_ROLE_SIGN_RE.search(text):
        return text
    lines = text.split("\n")
    if not signed and _myst_lines(lines, 0, keep_comments=True) == lines:  # no role outside code: not MyST
        return text
    return "\n".join(_myst_lines(lines, 0, keep_comments=False, labels=_myst_labels(lines)))


def _myst_labels(lines: list[str]) -> dict[str, str]:
    """The section titles of the page's ``(label)=`` targets (casefolded, as Sphinx normalises labels): the
    heading right after each target, for a ``{ref}`` without a title of its own, which Sphinx shows so."""
    labels: dict[str, str] = {}
    fences = _Fences()
    pending: str | None = None
    for line in lines:
        if fences.code(line):
            pending = None
            continue
        if _MYST_TARGET_RE.match(line):
            pending = line.strip()[1:-2].casefold()
        elif line.strip() and pending is not None:
            if (h := _ATX_HEADING_RE.match(line)) is not None:
                labels.setdefault(pending, _HEADING_ID_RE.sub("", _atx_title(h)).strip())
            pending = None
    return labels


def _myst_roles(line: str, labels: dict[str, str] | None = None) -> str:
    """``line`` with each role (``{name}`` right before a code span, outside code spans) as its text."""
    if "{" not in line or "`" not in line:
        return line
    out: list[str] = []
    i = 0
    for m in _CODE_SPAN_RE.finditer(line):
        prefix = line[i : m.start()]
        role = _MYST_ROLE_NAME_RE.search(prefix)
        if role is None:
            out.append(line[i : m.end()])  # a code span: left as it is
        else:
            run = len(m.group(1))
            out.append(prefix[: role.start()] + _myst_role(role.group(1), line[m.start() + run : m.end() - run], labels))
        i = m.end()
    out.append(line[i:])
    return "".join(out)


def _myst_role(role: str, text: str, labels: dict[str, str] | None = None) -> str:
    name, content = role.split(":")[-1].casefold(), text.strip()
    target = re.fullmatch(r"(.*?)\s*<([^<>]*)>", content, re.S)
    if name == "ref" and not target and labels and content.casefold() in labels:
        return labels[content.casefold()]  # a label of this page: Sphinx shows its section's title
    if name in _MYST_TEXT_ROLES:
        return (target.group(1) or target.group(2)) if target else content
    code = target.group(1) or target.group(2) if target else content
    if code.startswith("~"):  # Sphinx shows the last part only
        code = code[1:].rsplit(".", 1)[-1]
    return code_span(code.lstrip("!"))


def _myst_lines(lines: list[str], depth: int, *, keep_comments: bool, labels: dict[str, str] | None = None) -> list[str]:
    out: list[str] = []
    fences = _Fences()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if fences.marker:
            fences.code(line)
            out.append(line)
            continue
        m = _MYST_FENCE_RE.match(line) if depth < 20 else None
        if m is None:
            if fences.code(line):
                out.append(line)
            elif _MYST_TARGET_RE.match(line) or (not keep_comments and line.lstrip().startswith("%")):
                continue
            else:
                out.append(_myst_roles(line, labels))
            continue
        indent, marks, name, arg = m.groups()
        body: list[str] = []
        while i < len(lines):
            i += 1
            if _fence_closes(lines[i - 1], marks):
                break
            body.append(lines[i - 1])
        options: dict[str, str] = {}
        if body and body[0].strip() == "---":  # options as a YAML block
            end = next((k for k in range(1, len(body)) if body[k].strip() == "---"), 0)
            body = body[end + 1 :] if end else body
        while body and _MYST_OPTION_RE.match(body[0]):
            key, _, value = body.pop(0).strip()[1:].partition(":")
            options[key] = value.strip()
        while body and not body[0].strip():  # the blank line after the options
            body.pop(0)
        key = name.split(":")[-1].casefold()
        if key == "toctree":
            continue
        if key in _MYST_CODE:
            title = options.get("caption") or options.get("name") if key != "code-cell" else ""
            info = arg.split()[0] if arg.split() else ""
            info += f' title="{title}"' if title and '"' not in title else ""
            out += [f"{indent}```{info}", *body, f"{indent}```"]
            continue
        if key not in _MYST_PROSE:
            out += [f"{indent}```{{{name}}}{' ' + arg if arg else ''}", *body, f"{indent}```"]
            continue
        label = " ".join(arg.split())
        out += ["", f"{indent}[{key}{' ' + label if label else ''}]", ""]
        out += _myst_lines(body, depth + 1, keep_comments=keep_comments, labels=labels)
        out += ["", f"{indent}[/{key}]", ""]
    return out


#: a component's tag at the start of a line: ``<Tabs>``, ``<TabItem value="npm">``, ``<Admonition.Note>``
_COMPONENT_LINE_RE = re.compile(r"^<[A-Z][\w.]*(?:[\s/>]|$)")


def looks_like_mdx(text: str) -> bool:
    """Whether a ``.md`` page is MDX in fact: outside fenced code, it imports (``import Tabs from
    '@theme/Tabs'``) and uses a component (``<Tabs>``). Docusaurus compiles ``.md`` files as MDX, so such a
    page is read as one: before, its ``import`` lines were the first sentence of the page and its tabs' labels
    were lost."""
    if "import" not in text or "<" not in text:
        return False
    prose = [ln for kind, run in _split_fences(text.split("\n")) if kind == "prose" for ln in run]
    return any(_ESM_START_RE.match(ln) for ln in prose) and any(_COMPONENT_LINE_RE.match(ln) for ln in prose)


#: Docusaurus' ``<CodeBlock language="yaml" title="frob.yml">{`…`}</CodeBlock>``: a code block whose code is
#: a template literal (without ``${…}``)
_CODE_BLOCK_COMPONENT_RE = re.compile(
    r"^([ \t]*)<CodeBlock\b([^<>]*)>\s*\{\s*`((?:[^`\\$]|\\.|\$(?!\{))*)`\s*\}\s*</CodeBlock>[ \t]*$", re.M)


def _code_block_components(text: str) -> str:
    """``text`` with each Docusaurus ``<CodeBlock>`` whose code is a template literal written as the fenced
    block it shows (its ``title`` a line above, as a fence's title is), outside fenced code. Before, its
    code read as one line of prose (``level: 3 cache: true``)."""
    def repl(m: re.Match[str]) -> str:
        attrs = dict(re.findall(r'([\w-]+)=["\']([^"\']*)["\']', m.group(2)))
        code = re.sub(r"\\(.)", r"\1", m.group(3)).strip("\n")
        fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", code)), default=0))
        title = f' title="{attrs["title"]}"' if attrs.get("title") and '"' not in attrs["title"] else ""
        indent = m.group(1)
        body = "\n".join(indent + x if x.strip() else "" for x in code.split("\n"))
        return f"{indent}{fence}{attrs.get('language', '')}{title}\n{body}\n{indent}{fence}"

    runs = _split_fences(text.split("\n"))
    return "\n".join("\n".join(run) if kind == "fence" else _CODE_BLOCK_COMPONENT_RE.sub(repl, "\n".join(run))
                     for kind, run in runs)


def flatten_mdx(text: str, *, mdx: bool = True) -> str:
    """Rewrite MDX (or, with ``mdx=False``, Markdown with ``:::`` directives) as plain Markdown.

    Outside fenced code: ESM ``import``/``export`` statements and ``{/* comments */}`` are
    dropped; a component alone on its lines becomes a marker line ``[Name label]`` (label and the
    text lines after it: :func:`_label`) and ``[/Name]``, its body dedented to the marker's
    indentation; a self-closing component that shows no text disappears; components inside a line
    are unwrapped; a literal expression is its value (:func:`_literal`). ``:::tip[Title]`` ...
    ``:::`` directives become markers too.
    """
    if mdx and "<CodeBlock" in text:
        text = _code_block_components(text)
    events: list[str | _Tag | _Fence] = []
    for kind, run in _split_fences(text.split("\n")):
        if kind == "fence":
            fence = [_Line(run[0], "fence")] + [_Line(ln, "code") for ln in run[1:]]
            if len(run) > 1 and _FENCE_CLOSE_RE.match(run[-1]):
                fence[-1].kind = "fence"
            events.append(_Fence(fence))
        elif mdx:
            events.extend(_scan_jsx("".join(line + "\n" for line in _drop_esm(run))))
        else:
            events.append("".join(line + "\n" for line in run))
    if mdx:
        _classify(events)
    lines = _assemble(events)
    first_id = 1 + max((ln.elem for ln in lines), default=0)
    lines = _directives(lines, first_id)
    _dedent_bodies(lines)
    return "\n".join(ln.text for ln in lines)


# --------------------------------------------------------------------------------------------
# Token tree → plain text
# --------------------------------------------------------------------------------------------

#: an explicit heading id at the end of a heading: ``{#id}`` (Pandoc, Docusaurus, markdown-it-attrs) and
#: the attribute lists of Python-Markdown/MkDocs and kramdown/Jekyll (``{: #id }``, ``{ #id .class }``,
#: ``{: .class #id }``)
_HEADING_ID_RE = re.compile(r"\s*\{:?\s*(?:\.[^\s{}#]+\s+|[\w-]+=[^\s{}]*\s+)*#([^\s{}]+)(?:\s[^{}]*)?\}\s*$")


def _dropped(ref: int, ok: tuple[bool, ...] = (True,) * 6) -> str:
    """The pattern of what an HTML fragment's text leaves out: ``<script>``/``<style>`` elements,
    comments, CDATA, declarations, processing instructions; ``ref``: the group number of the element
    name. ``ok``: which of the six parts that scan ahead for their end (script, style, comment, CDATA,
    declaration, processing instruction) can still close; one that cannot fails at once (see
    :func:`_html_sub`)."""
    off = ["" if o else "(?!)" for o in ok]
    return (rf"<(script{off[0]}|style{off[1]})\b.*?</\{ref}\s*>|<!--{off[2]}.*?-->|<!\[CDATA\[{off[3]}.*?\]\]>"
            rf"|<!{off[4]}[^>]*>|<\?{off[5]}.*?\?>")


_HTML_DROP_RE = re.compile(_dropped(1), re.S | re.I)
_HTML_TAG_RE = re.compile(r"</?[A-Za-z][^<>]*>")
_BR_RE = re.compile(r"<br\b[^>]*>", re.I)
_HTML_BLOCK_TAGS = (
    "address|article|aside|blockquote|br|dd|details|div|dl|dt|figcaption|figure|footer|h[1-6]|header"
    "|hr|li|main|nav|ol|p|pre|section|summary|table|tbody|td|tfoot|th|thead|tr|ul"
)


def _mdx_html(ok: tuple[bool, ...] = (True,) * 6) -> str:
    return ("(`+)[^`]*?\\1"  # a code span: kept as is
            f"|{_dropped(2, ok)}"
            rf"|(?<!\\)(</?(?:{_HTML_BLOCK_TAGS})\b[^<>]*>)"
            r"|(?<!\\)</?[A-Za-z][^<>]*>")


_MDX_HTML_RE = re.compile(_mdx_html(), re.S | re.I)
#: where each lazy part of :func:`_dropped` closes, and how long its opening is
_LAZY_CLOSE = [(re.compile(r"</script\s*>", re.I), 7), (re.compile(r"</style\s*>", re.I), 6),
               (re.compile("-->"), 4), (re.compile(r"\]\]>"), 9), (re.compile(">"), 2), (re.compile(r"\?>"), 2)]


@functools.lru_cache(maxsize=64)
def _html_variant(mdx: bool, ok: tuple[bool, ...]) -> re.Pattern[str]:
    return re.compile(_mdx_html(ok) if mdx else _dropped(1, ok), re.S | re.I)


def _html_sub(mdx: bool, repl: Callable[[re.Match[str]], str] | str, fragment: str) -> str:
    """``_MDX_HTML_RE.sub`` (``mdx``) or ``_HTML_DROP_RE.sub`` of ``fragment``, match for match, but
    linear: at each ``<`` (and backtick) the pattern is tried without the lazy parts whose closing
    (``-->``, ``?>``, ``</script>`` ...) no longer comes later in the fragment. Each such opening (a
    commented-out draft whose ``<!--`` never closes, holding further ``<!--``, ``<?`` or ``<script``)
    made the search scan to the end again, work growing with the square of the openings."""
    last = []
    for rx, _ in _LAZY_CLOSE:
        end = -1
        for m in rx.finditer(fragment):
            end = m.start()
        last.append(end)
    starts = re.compile(r"[<`]" if mdx else "<")
    out: list[str] = []
    pos = at = 0
    while (c := starts.search(fragment, at)) is not None:
        p = c.start()
        ok = tuple(end >= p + width for end, (_, width) in zip(last, _LAZY_CLOSE, strict=True))
        m = _html_variant(mdx, ok).match(fragment, p)
        if m is None:
            at = p + 1
            continue
        out += [fragment[pos:p], repl if isinstance(repl, str) else repl(m)]
        pos = at = m.end()
    out.append(fragment[pos:])
    return "".join(out)


def strip_html(fragment: str) -> str:
    """The text of an HTML fragment: tags and comments removed, entities decoded, whitespace collapsed."""
    text = _HTML_TAG_RE.sub(" ", _html_sub(False, " ", fragment))
    return " ".join(_html.unescape(text).split())


def _mdx_html_to_markdown(fragment: str) -> str:
    """Drop the tags of an HTML block in MDX, whose content is Markdown; block tags break paragraphs."""

    def repl(m: re.Match[str]) -> str:
        if m.group(1):
            return m.group(0)
        return "\n\n" if m.group(3) else ""

    return textwrap.dedent(_html_sub(True, repl, fragment))


#: the start of a line that reads as a code fence: after its indentation and list markers, three or
#: more backticks or tildes (what chunking, the answers and the chat page take for a fence line)
_FENCE_START_RE = re.compile(r"^([ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)*)(`{3,}|~{3,})", re.M)


def _opens_code_span(text: str, run: str, end: int) -> bool:
    """The backtick ``run`` ending at ``end`` opens a span :func:`code_span` made: a run as long closes
    it on the line, and the code between holds a run of every shorter length (code_span takes the
    shortest length the code does not hold, so only such code is spanned by three backticks or more)."""
    if not run.startswith("`"):
        return False
    line_end = text.find("\n", end)
    rest = text[end: len(text) if line_end < 0 else line_end]
    close = re.search(rf"(?<!`){run}(?!`)", rest)
    inner = {len(r) for r in re.findall(r"`+", rest[: close.start()])} if close else set()
    return close is not None and all(n in inner for n in range(1, len(run)))


def prose_line(text: str) -> str:
    """``text``, a line of prose, with a run of backticks or tildes that would open a code fence at its
    start (a page about Markdown writes "``` on a line of its own opens a code block" as text) made a
    code span: "` ``` ` on a line …". Chunk text is Markdown with fences for code: left as it was,
    the line opened a code block in chunking, in the extractive answer and in every client that
    renders the answer, which showed the page's prose as code up to the next such line."""

    def span(m: re.Match[str]) -> str:
        if _opens_code_span(text, m.group(2), m.end()):
            return m.group(0)
        return m.group(1) + code_span(m.group(2))

    return _FENCE_START_RE.sub(span, text)


@dataclass
class OutLine:
    """A rendered line; ``verbatim`` lines (code) are never indented. A line of prose never opens a
    code fence (:func:`prose_line`): only code is fenced."""

    text: str
    verbatim: bool = False
    #: the id the site gives the place this line starts (an API entry's ``<dt id>``): ``Section.targets``
    anchor: str = ""

    def __post_init__(self) -> None:
        if not self.verbatim:
            self.text = prose_line(self.text)


def indented(lines: Iterable[OutLine]) -> list[OutLine]:
    """``lines`` under a term or a list item's first line: prose two spaces in, code as written. Each line
    keeps its ``anchor``, so an API entry inside a list item or a definition keeps its link."""
    return [ln if ln.verbatim else OutLine("  " + ln.text, anchor=ln.anchor) for ln in lines]


def list_item(prefix: str, lines: list[OutLine]) -> list[OutLine]:
    """A list item's lines (or a field's, a footnote's): ``prefix`` (``- ``, ``2. ``, ``name: ``) opens its first
    line, a line of its own when the item opens with code, and the rest is :func:`indented` under it; every
    line keeps its ``anchor``."""
    if not lines or lines[0].verbatim:
        lines = [OutLine(""), *lines]
    return [OutLine((prefix + lines[0].text).rstrip(), anchor=lines[0].anchor), *indented(lines[1:])]


def fence_block(code: str, lang: str) -> list[OutLine]:
    """A code block as fence lines: ```` ``` ````, or ``~~~`` when the code itself has ``` lines."""
    code = code.rstrip("\n")
    ticks = [len(m.group(1)) for m in re.finditer(r"^[ \t]*(`{3,})", code, re.M)]
    if not ticks:
        fence = "```"
    elif not re.search(r"^[ \t]*~~~", code, re.M):
        fence = "~~~"
    else:
        fence = "`" * (max(ticks) + 1)
    body = [OutLine(line, True) for line in code.split("\n")] if code else []
    return [OutLine(fence + lang, True), *body, OutLine(fence, True)]


def code_span(code: str) -> str:
    """``code`` as a Markdown code span: between backtick runs of a length no run inside it has, padded
    with a space where it starts or ends with a backtick (CommonMark strips one such space). An inline
    code of the page stays code in a chunk's text, so what reads as a citation marker inside it
    (``sys.argv[1]``, ``items[0]``) is the code it is (see answering/markers.py), and an answer shows it
    as code; what is embedded reads it without the backticks (``markers.plain_code_spans``)."""
    code = " ".join(code.split())
    if not code:
        return ""
    # the shortest run the code does not hold: "```" is "` ``` `", whose line does not start with a fence
    runs = {len(r) for r in re.findall(r"`+", code)}
    fence = "`" * next(n for n in range(1, len(runs) + 2) if n not in runs)
    pad = " " if code[0] == "`" or code[-1] == "`" else ""
    return f"{fence}{pad}{code}{pad}{fence}"


def _inline(node: SyntaxTreeNode, *, code: bool = True) -> str:
    """Plain text of inline content: markup dropped, link text and image alt kept; a code span stays a
    code span (:func:`code_span`) unless ``code`` is false (a heading: a title, a heading path)."""
    parts: list[str] = []

    def walk(n: SyntaxTreeNode) -> None:
        for child in n.children:
            t = child.type
            if t == "code_inline" and code:
                parts.append(code_span(child.content))
            elif t in ("text", "code_inline"):
                parts.append(child.content)
            elif t == "softbreak":
                parts.append(" ")
            elif t == "hardbreak":
                parts.append("\n")
            elif t == "html_inline":
                if _BR_RE.match(child.content):
                    parts.append("\n")
            else:
                walk(child)

    walk(node)
    text = "".join(parts)
    return "\n".join(" ".join(line.split()) for line in text.split("\n")).strip()


def _rendered_text(node: SyntaxTreeNode) -> str:
    """The text content of inline content as a renderer's HTML has it, which GitHub and rehype-slug
    slug: text and code spans as written (spaces not collapsed, so ``Foo  Bar`` or the gap an MDX
    component left is ``foo--bar``), no image alt text."""
    parts: list[str] = []

    def walk(n: SyntaxTreeNode) -> None:
        for child in n.children:
            if child.type in ("text", "code_inline"):
                parts.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                parts.append("\n")
            elif child.type not in ("image", "html_inline"):
                walk(child)

    walk(node)
    return "".join(parts)


#: a code block's title in its fence's info string, ```` ```js title="astro.config.mjs" ```` (Expressive
#: Code, Starlight, Docusaurus, MkDocs Material, Rspress; ``filename=`` in Nextra, ``file=``): the file
#: name the site shows above the code, kept as a line above the block, as reST's ``:caption:`` and
#: AsciiDoc's ``.Title`` are
_FENCE_TITLE_RE = re.compile(r"(?:^|\s)(?:title|filename|file)=(?:\"([^\"]*)\"|'([^']*)'|([^\s\"'{}]+))")
#: a fence's language, without what a generator writes right after it: VitePress' highlighted lines
#: (``js{4}``) and options (``ts:line-numbers``), MyST's and Quarto's braces (``{python}``)
_FENCE_LANG_RE = re.compile(r"\{?\.?([^\s{}\[\]:]*)")
#: VitePress' (and Rspress') title of a block in brackets, ```` ```sh [npm] ````: a code group's tab label
_FENCE_BRACKET_TITLE_RE = re.compile(r"(?:^|[\s}])\[([^\[\]\n]+)\]")
#: what an MDX page's fence may hold after its language that is no title (Mintlify writes a block's title as
#: the words after its language, ```` ```bash npm ````): options of Mintlify, Docusaurus, Expressive Code, Shiki
_FENCE_FLAGS = frozenset("lines wrap expandable showlinenumbers twoslash collapse preserveindent linenums "
                         "live noinline nocopy copy npm2yarn".split())


def _fence_info(info: str, *, mdx: bool) -> tuple[str, str]:
    """A fence's language and the title written in its info string (``title="src/app.js"``, VitePress'
    ``[npm]``, an MDX page's words after the language: Mintlify's ``bash npm``), "" for none."""
    parts = info.strip().split(maxsplit=1)
    if not parts:
        return "", ""
    lang = _FENCE_LANG_RE.match(parts[0]).group(1)
    rest = parts[1] if len(parts) > 1 else ""
    if "[" in parts[0] and not rest:  # ```sh[npm]
        rest = parts[0][parts[0].index("["):]
    title = _FENCE_TITLE_RE.search(rest)
    if title:
        return lang, " ".join(next(g for g in title.groups() if g is not None).split())
    bracket = _FENCE_BRACKET_TITLE_RE.search(rest)
    if bracket:
        return lang, " ".join(bracket.group(1).split())
    if mdx and rest and not re.search(r"[\"'`/\\{}=\[\]<>()]", rest):  # plain words, no options or markers
        return lang, " ".join(w for w in rest.split() if w.casefold() not in _FENCE_FLAGS)
    return lang, ""


class _Renderer:
    """Renders block nodes of a markdown-it syntax tree to plain-text lines."""

    def __init__(self, mdx: bool, *, nested: bool = False) -> None:
        self.mdx = mdx
        self.nested = nested  # inside an MDX HTML block already: no further re-parsing

    def blocks(self, nodes: list[SyntaxTreeNode]) -> list[OutLine]:
        """Several blocks, a blank line apart."""
        out: list[OutLine] = []
        for child in nodes:
            lines = self.render(child)
            if lines and out:
                out.append(OutLine(""))
            out.extend(lines)
        return out

    def render(self, node: SyntaxTreeNode) -> list[OutLine]:
        """Render one block node to lines."""
        t = node.type
        if t in ("paragraph", "heading"):
            return ([OutLine(line) for line in _inline(node.children[0], code=t == "paragraph").split("\n")]
                    if node.children else [])
        if t == "inline":
            return [OutLine(_inline(node))]
        if t == "fence":
            lang, value = _fence_info(node.info or "", mdx=self.mdx)
            return ([OutLine(value)] if value else []) + fence_block(node.content, lang)
        if t == "code_block":
            return fence_block(node.content, "")
        if t == "html_block":
            return self._html_block(node.content)
        if t in ("bullet_list", "ordered_list"):
            return self._list(node)
        if t == "table":
            rows: list[OutLine] = []
            for row in _descendants(node, "tr"):
                # a row is one line: a <br> in a cell (GFM tables have no other line break) is a space
                cells = [" ".join(_inline(cell.children[0]).split()) if cell.children else "" for cell in row.children]
                if any(cells):  # a "|" in a cell is written "\|", an empty edge cell keeps its pipe (table_row.py)
                    rows.append(OutLine(row_line(cells)))
            return rows
        if t == "hr":
            return []
        return self.blocks(node.children)  # blockquote and anything else: its blocks

    def _html_block(self, content: str) -> list[OutLine]:
        if not self.mdx or self.nested:
            text = strip_html(content)
            return [OutLine(text)] if text else []
        tree = SyntaxTreeNode(_MD[True].parse(_mdx_html_to_markdown(content)))
        return _Renderer(True, nested=True).blocks(tree.children)

    def _list(self, node: SyntaxTreeNode) -> list[OutLine]:
        ordered = node.type == "ordered_list"
        start = int(node.attrs.get("start", 1) or 1) if ordered else 1
        out: list[OutLine] = []
        for idx, item in enumerate(node.children):
            prefix = f"{start + idx}. " if ordered else "- "
            lines: list[OutLine] = []
            for child in item.children:
                lines.extend(self.render(child))
            if not lines or lines[0].verbatim:
                lines.insert(0, OutLine(""))
            lines[0] = OutLine((prefix + lines[0].text).rstrip())
            for line in lines[1:]:
                if not line.verbatim and line.text:
                    line.text = "  " + line.text
            out.extend(line for line in lines if line.text or line.verbatim)
        return out


def _descendants(node: SyntaxTreeNode, kind: str) -> list[SyntaxTreeNode]:
    found: list[SyntaxTreeNode] = []
    for child in node.children:
        if child.type == kind:
            found.append(child)
        else:
            found.extend(_descendants(child, kind))
    return found


#: markdown-it's nesting limit (its CommonMark preset has 20). A list level takes two levels (list and
#: item), a quote one; past the limit markdown-it silently skips the rest of the enclosing block, which
#: at the top of a document is *the rest of the document*: with 20, ten nested list levels lost everything
#: after them. 100 keeps every real document's structure within Python's stack.
MAX_NESTING = 100
#: container prefixes (quotes, list markers, indentation) deeper than this are dropped in the flattened
#: reparse of a document that reached :data:`MAX_NESTING`, so their lines become plain paragraphs
FLAT_DEPTH = 24
_CONTAINER_PREFIX_RE = re.compile(r"^(?:[ \t]+|>|[-+*](?=[ \t]|$)|\d{1,9}[.)](?=[ \t]|$))*")


#: markdown-it's nesting limit inside a paragraph (links, emphasis), CommonMark's own 20. A link label
#: is searched for at every ``[`` down to this depth, so a line of unclosed ``[`` costs it per
#: character: at the block limit (100) such a page took several times as long (``bench/hostile_markdown.py``)
MAX_INLINE_NESTING = 20


def _markdown_it(mdx: bool) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING}).enable("table")
    if mdx:
        md.disable("code")  # MDX has no indented code blocks
    # inline content is parsed by a twin with the same rules and CommonMark's inline nesting limit: the
    # options are read from the parser passed along, so each block keeps 100 levels, each paragraph 20
    inline_md = MarkdownIt("commonmark", {"maxNesting": MAX_INLINE_NESTING})
    inline_md.inline = md.inline

    def inline(state: Any) -> None:
        for token in state.tokens:
            if token.type == "inline":
                if token.children is None:
                    token.children = []
                md.inline.parse(token.content, inline_md, state.env, token.children)

    md.core.ruler.at("inline", inline)
    return md


_MD = {False: _markdown_it(False), True: _markdown_it(True)}


def _prefix_depth(prefix: str) -> int:
    """How deep a line's container prefix nests, estimated: quotes and list markers count one each,
    indentation one per two columns."""
    spaces = len(prefix.expandtabs(4)) - len(re.sub(r"[ \t]", "", prefix))
    return len(re.findall(r">|[-+*]|\d{1,9}[.)]", prefix)) + (spaces + 1) // 2


def _flatten_deep(body: str) -> str:
    """``body`` with every line nested deeper than :data:`FLAT_DEPTH` made a top-level line (a list
    item stays an item): its text kept, its nesting lost, instead of markdown-it dropping it and
    everything after it."""
    out = []
    for line in body.split("\n"):
        prefix = _CONTAINER_PREFIX_RE.match(line).group(0)  # type: ignore[union-attr]
        if _prefix_depth(prefix) <= FLAT_DEPTH:
            out.append(line)
            continue
        markers = re.findall(r"[-+*]|\d{1,9}[.)]", prefix)  # an item stays an item (at the top level)
        out.append((markers[-1] + " " if markers else "") + line[len(prefix):])
    return "\n".join(out)


def _parse_tokens(body: str, *, mdx: bool) -> list[Any]:
    """markdown-it's tokens for ``body``; a document nested to :data:`MAX_NESTING` (where markdown-it
    skips the rest) is parsed again with its deepest lines flattened."""
    tokens = _MD[mdx].parse(body)
    if any(t.level >= MAX_NESTING - 2 for t in tokens):
        tokens = _MD[mdx].parse(_flatten_deep(body))
    for t in tokens:
        if t.type == "inline" and t.children:
            # emphasis carries no text, and a run of 100,000 '*' nests as deep: the syntax tree built from
            # it copied the rest of the line at every level (2.6 GB and 40 s for 600 KB, then a
            # RecursionError that skipped the page); the text is read without it
            t.children = [c for c in t.children if c.type not in _EMPHASIS_TOKENS]
    return tokens


#: inline tokens that only mark emphasis (no text of their own)
_EMPHASIS_TOKENS = frozenset({"em_open", "em_close", "strong_open", "strong_close", "s_open", "s_close"})


def _heading_parts(node: SyntaxTreeNode) -> tuple[str, str | None, str]:
    """A heading's text as shown, its explicit id (``{#id}``, ``{: #id }``) or None, and the text to slug."""
    heading = _inline(node.children[0], code=False) if node.children else ""
    heading = " ".join(heading.split())
    slug_text = _rendered_text(node.children[0]) if node.children else ""
    explicit = _HEADING_ID_RE.search(heading)
    anchor = None
    if explicit:
        anchor = explicit.group(1)
        heading = heading[: explicit.start()].rstrip()
    return heading, anchor, slug_text


def _home_layout_text(metadata: dict[str, Any]) -> str:
    """The text a VitePress home page (``layout: home``) shows from its frontmatter: the hero's name, text
    and tagline, then each feature's title and details as a list item (``- Blazing fast: Frob processes …``).
    (HTML in them, which VitePress renders, is read as its text.) Such a page has little or no Markdown of its
    own; before, it was indexed without that text, or skipped."""
    if metadata.get("layout") != "home":
        return ""
    hero = metadata.get("hero") if isinstance(metadata.get("hero"), dict) else {}
    lines = [" ".join(strip_html(str(hero[k])).split()) for k in ("name", "text", "tagline")
             if isinstance(hero.get(k), str | int | float) and str(hero[k]).strip()]
    items = []
    for feature in metadata.get("features") if isinstance(metadata.get("features"), list) else []:
        if not isinstance(feature, dict):
            continue
        title, details = (" ".join(strip_html(str(feature.get(k) or "")).split()) for k in ("title", "details"))
        if title or details:
            items.append(f"- {title}: {details}" if title and details else f"- {title or details}")
    return "\n\n".join(part for part in ("\n".join(lines), "\n".join(items)) if part)  # text as shown (HTML's text)


def parse_markdown(text: str, *, path: str, mdx: bool = False, anchors: str = "github") -> ParsedPage:
    """Parse a Markdown (or, with ``mdx=True``, MDX) document into title, sections and metadata.
    ``anchors``: how the site's generator slugs headings (:data:`~.slugs.ANCHOR_STYLES`).

    Raises :class:`ParseError` for binary input and invalid frontmatter.
    """
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    text = check_text(text, path=path)
    metadata, body = split_frontmatter(text, path=path, toml=True)
    mdx = mdx or looks_like_mdx(body)
    if not mdx:
        body = myst_blocks(python_markdown_blocks(github_alerts(pandoc_divs(template_tags(body)))))
    body = flatten_mdx(body, mdx=mdx)
    tree = SyntaxTreeNode(_parse_tokens(body, mdx=mdx))

    builder = SectionBuilder(anchors=anchors)
    renderer = _Renderer(mdx)
    hero = _home_layout_text(metadata)
    if hero:
        builder.add(hero)
    # a front-matter title names the page (its <title>, its sidebar entry); a first H1 with words the title
    # lacks is still the heading the page shows (Docusaurus, Hugo, Jekyll), so it opens a section and its
    # words stay (one whose words the title holds, "Installing" under "Installing Acme", loses none)
    given = metadata.get("title")
    title_words = set(re.findall(r"\w+", str(given).casefold())) if isinstance(given, str | int | float) else None
    first_heading = True
    for node in tree.children:
        if node.type == "heading":
            heading, anchor, slug_text = _heading_parts(node)
            level = int(node.tag[1])
            may_title = not title_words or set(re.findall(r"\w+", heading.casefold())) <= title_words
            if first_heading and level == 1 and not may_title and anchor is None:
                # the page's top heading: Docusaurus writes it without an id ("h1 headings do not need an
                # id"), so its section is cited at the page itself; its slug stays taken for later ones
                builder.reserve(slug_text)
                anchor = ""
            first_heading = False
            builder.heading(level, heading, anchor, slug_text=slug_text, may_title=may_title)
        else:
            for nested in node.walk():  # "> ## Setup": an id on the site, no section here
                if nested.type == "heading":
                    _, anchor, slug_text = _heading_parts(nested)
                    builder.reserve(slug_text, anchor)
            builder.add("\n".join(line.text for line in renderer.render(node)))

    title = metadata.get("title")
    if not isinstance(title, str | int | float) or not str(title).strip():
        name = metadata.get("hero", {}).get("name") if hero and isinstance(metadata.get("hero"), dict) else None
        title = builder.title_heading or (name if isinstance(name, str) and name.strip() else humanize_stem(path))
    return ParsedPage(title=" ".join(str(title).split()), sections=builder.finish(), metadata=metadata)
