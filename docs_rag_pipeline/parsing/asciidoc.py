"""AsciiDoc documents to a :class:`ParsedPage` of plain-text sections.

A line-based parser for the AsciiDoc (Asciidoctor) constructs documentation uses; nothing is
rendered to HTML. No maintained Python converter of Asciidoctor's dialect installs here
(``asciidoc`` on PyPI is the legacy AsciiDoc.py dialect: it evaluates ``ifdef`` away, knows no
Antora resource ids such as ``partial$x.adoc`` and no Asciidoctor-only syntax), so this module
implements the subset below directly:

* preprocessor: ``include::`` directives are resolved by :func:`resolve_includes` (the sources call
  it with a reader of their repository, so included files are part of the page's content hash);
  Antora resource ids (``partial$``, ``example$``, ``module:partial$``), ``tag``/``tags``,
  ``lines`` and ``leveloffset`` are honoured; targets outside the repository, URLs and missing
  files are reported in ``metadata["unresolved_includes"]`` and skipped. ``ifdef::``/``ifndef::``/
  ``ifeval::`` blocks keep their content and their condition goes to ``metadata["conditions"]``.
* document header: ``= Title``, author/revision lines, attribute entries (kept as metadata, like
  Markdown frontmatter; ``{name}`` references are substituted everywhere);
* sections ``==`` … ``======`` (and Markdown-style ``##``, and two-line titles underlined with
  ``=``/``-``/``~``/``^``/``+``) with ``[[id]]``/``[#id]`` anchors (above the title or ending it) or
  Asciidoctor's generated ids (``idprefix`` ``_``, ``idseparator`` ``_`` unless the document or
  the source sets them, e.g. ``_section_title``);
* lists (``*``, ``-``, ``.``, ``1.``, description lists ``term::``, callout lists), with ``+``
  continuations; tables (``|===``, nested ``!===``, CSV/DSV); listing/source/literal blocks
  (fenced as ```` ```lang ````), example/sidebar/quote/open/passthrough blocks; admonitions
  (``NOTE:`` paragraphs and ``[NOTE]`` blocks, rendered ``NOTE: …``); comments dropped;
* inline markup removed: ``*bold*``, ``_em_``, ``` `code` ```, ``#mark#``, ``[.role]#x#``,
  ``link:url[text]``, URLs with ``[text]``, ``xref:page.adoc[text]``, ``<<id,text>>``,
  ``kbd:``/``btn:``/``menu:``, ``image:``, ``footnote:``, passthroughs ``+x+``/``pass:[x]``.
"""

from __future__ import annotations

import contextlib
import contextvars
import csv
import html as _html
import io
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import regex

from ..records import ParsedPage
from ..table_row import headless_rule, row_line
from .binary import check_text
from .markdown import OutLine, SectionBuilder, code_span, fence_block, humanize_stem, strip_html

__all__ = ["IncludeResult", "antora_attributes", "generate_id", "inline_text", "parse_asciidoc",
           "prepare_asciidoc", "resolve_includes"]

Reader = Callable[[str], "str | None"]

# --------------------------------------------------------------------------------------------
# Preprocessor: include directives
# --------------------------------------------------------------------------------------------

_INCLUDE_RE = re.compile(r"^(\\?)include::([^\[\s][^\[]*)\[(.*)\][ \t]*$")
_ATTR_ENTRY_RE = re.compile(r"^:(!?)([\w][\w-]*)(!?):(?:[ \t]+(.*?))?[ \t]*$")
_ATTR_REF_RE = re.compile(r"(\\)?\{([\w][\w-]*)\}")
_RESOURCE_ID_RE = re.compile(
    r"^(?:(?P<version>[^@:$/]+)@)?(?:(?P<c1>[^:$/]+):)?(?:(?P<c2>[^:$/]+):)?(?P<family>[a-z]+)\$(?P<rel>.+)$")
_FAMILY_DIRS = {"partial": "partials", "example": "examples", "page": "pages", "attachment": "attachments",
                "image": "images"}
_MODULE_RE = re.compile(r"^(?P<root>(?:.*/)?)modules/(?P<module>[^/]+)/")
_TAG_MARK_RE = re.compile(r"\b(tag|end)::([\w.*-]+)\[\]")
_MAX_INCLUDE_DEPTH = 64
#: the comment line that ends attribute entries a source added above the document (see prepare_asciidoc)
EXTERNAL_END = "//docs-rag: end of source attributes"


class IncludeRefused(ValueError):
    """Raised by a source's ``read`` for a file that exists but must not be included; the message is
    the reason, shown with the include (a link into a hidden file or out of the folder)."""


@dataclass(slots=True)
class IncludeResult:
    """The text with includes resolved; ``deps``: every repository path an include named (with
    whether it was found); ``unresolved``: the targets that could not be included."""

    text: str
    deps: dict[str, bool] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)


def _split_attrlist(raw: str) -> list[str]:
    """Split an attribute list at commas outside single or double quotes."""
    items: list[str] = []
    buf: list[str] = []
    quote = ""
    for c in raw:
        if quote:
            buf.append(c)
            if c == quote:
                quote = ""
        elif c in "\"'" and (not "".join(buf).strip() or "".join(buf).rstrip().endswith("=")):
            quote = c
            buf.append(c)
        elif c == ",":
            items.append("".join(buf))
            buf = []
        else:
            buf.append(c)
    items.append("".join(buf))
    return items


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _parse_attrlist(raw: str) -> tuple[list[str], dict[str, str]]:
    """Positional and named attributes of ``[a,b,name=value,name2="x, y"]`` (without brackets)."""
    positional: list[str] = []
    named: dict[str, str] = {}
    if not raw.strip():
        return positional, named
    for item in _split_attrlist(raw):
        m = re.match(r"^\s*([\w-]+)\s*=\s*(.*)$", item, re.S)
        if m:
            named[m.group(1)] = _unquote(m.group(2))
        else:
            positional.append(_unquote(item))
    return positional, named


#: characters attribute references may add to one document (its own length counts on top): a
#: document whose attributes double each other (``:a1: {a0}{a0}``, ``:a2: {a1}{a1}`` … a "billion
#: laughs") would otherwise need terabytes; past the budget references stay as written
MAX_ATTRIBUTE_EXPANSION = 2_000_000
_expansion: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("asciidoc_expansion", default=None)


@contextlib.contextmanager
def _expansion_budget(text: str) -> Iterator[None]:
    """One budget for a document's attribute substitutions (nested calls share the outer one)."""
    if _expansion.get() is not None:
        yield
        return
    token = _expansion.set([MAX_ATTRIBUTE_EXPANSION + len(text)])
    try:
        yield
    finally:
        _expansion.reset(token)


def _substitute_attrs(text: str, attrs: dict[str, str]) -> str:
    budget = _expansion.get() or [MAX_ATTRIBUTE_EXPANSION]

    def repl(m: re.Match[str]) -> str:
        if m.group(1):
            return m.group(0)[1:]
        name = m.group(2).lower()
        value = attrs[name] if name in attrs else _BUILTIN_ATTRS.get(name)
        if value is None:
            return m.group(0)
        if len(value) > budget[0]:
            return m.group(0)  # over the document's budget: the reference stays as written
        budget[0] -= len(value)
        return value

    return _ATTR_REF_RE.sub(repl, text)


def _include_path(target: str, current: str) -> str | None:
    """The repository path an include target names, seen from file ``current``; None when outside
    the repository or not a file (a URL, an absolute path, another Antora component)."""
    if "://" in target or target.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", target):
        return None
    m = _RESOURCE_ID_RE.match(target)
    if m and m.group("family") in _FAMILY_DIRS:
        here = _MODULE_RE.match(current)
        if not here:
            return None
        if m.group("version") or m.group("c2"):  # another version or component: not in this tree
            return None
        module = m.group("c1") or here.group("module")
        joined = f"{here.group('root')}modules/{module}/{_FAMILY_DIRS[m.group('family')]}/{m.group('rel')}"
    else:
        joined = posixpath.join(posixpath.dirname(current), target)
    norm = posixpath.normpath(joined)
    if norm.startswith("../") or norm == ".." or norm.startswith("/"):
        return None
    return norm


def unresolved_line(entry: str) -> str:
    """An entry of ``unresolved`` as a log line's middle: ``include::x.adoc[] cannot be resolved``,
    with the reason after a colon when the entry carries one (``x.rb (tag 'y' not found in it)``)."""
    target, sep, reason = entry.partition(" (")
    if sep and reason.endswith(")"):
        return f"include::{target}[] cannot be resolved: {reason[:-1]}"
    return f"include::{entry}[] cannot be resolved"


def _wanted_tags(named: dict[str, str]) -> dict[str, bool] | None:
    """The ``tag``/``tags=`` of an include directive: tag name → included (``!x``: excluded); None
    without one, or when ``lines=`` is given (which wins)."""
    spec = None if "lines" in named else named.get("tags", named.get("tag"))
    if spec is None:
        return None
    wanted: dict[str, bool] = {}
    for t in re.split(r"[;,]", spec):
        t = t.strip()
        if t:
            wanted[t.lstrip("!")] = not t.startswith("!")
    return wanted


def _missing_tags(lines: list[str], named: dict[str, str]) -> list[str]:
    """The tags an include directive asks for (not ``!x`` nor wildcards) that the included file
    does not mark: Asciidoctor warns of each; the text they name is not there."""
    wanted = _wanted_tags(named) or {}
    marked = {m.group(2) for ln in lines for m in _TAG_MARK_RE.finditer(ln) if m.group(1) == "tag"}
    return [t for t, on in wanted.items() if on and t not in ("*", "**") and t not in marked]


def _select_lines(lines: list[str], named: dict[str, str]) -> list[str]:
    """Apply ``lines=`` and ``tag``/``tags=`` of an include directive."""
    if "lines" in named:
        keep: list[str] = []
        for part in re.split(r"[;,]", named["lines"]):
            part = part.strip()
            if not part:
                continue
            if ".." in part:
                a, b = part.split("..", 1)
                start = int(a) if a.strip().lstrip("-").isdigit() else 1
                end = int(b) if b.strip().lstrip("-").isdigit() else -1
                end = len(lines) if end < 0 else end
                keep.extend(lines[max(start, 1) - 1:end])
            elif part.isdigit():
                keep.extend(lines[int(part) - 1:int(part)])
        return keep
    wanted = _wanted_tags(named)
    if wanted is None:
        return [ln for ln in lines if not _TAG_MARK_RE.search(ln)]
    if "**" in wanted:
        base = wanted["**"]
    else:
        base = not any(wanted.values())  # only exclusions: untagged lines stay
    star = wanted.get("*")
    out: list[str] = []
    stack: list[str] = []
    for ln in lines:
        mark = _TAG_MARK_RE.search(ln)
        if mark:
            kind, name = mark.groups()
            if kind == "tag":
                stack.append(name)
            elif name in stack:
                while stack and stack.pop() != name:
                    pass
            continue
        if stack:
            decision = next((wanted[t] for t in reversed(stack) if t in wanted), None)
            if decision is None:
                decision = star if star is not None else base
        else:
            decision = base
        if decision:
            out.append(ln)
    return out


#: characters a document may grow to with its includes: a file that includes a partial a thousand
#: times, each of which includes another a thousand times, must not fill the memory
MAX_INCLUDED_CHARS = 5_000_000


def read_include(target: str, repo_path: str | None, *, read: Reader, result: IncludeResult, size: list[int],
                 depth: int, chain: tuple[str, ...]) -> list[str] | None:
    """The lines of the file an include names (``target`` as written, ``repo_path`` its repository path, None
    for one outside the repository or no file), read with ``read`` within the document's budget (``size[0]``:
    the characters the document has grown to, counted up here). None, with the reason in
    ``result.unresolved`` (and the file in ``result.deps``), for a hidden file or folder, a file ``read``
    refuses or does not find, an include past :data:`_MAX_INCLUDE_DEPTH` or already in ``chain`` (a loop),
    and one that would take the document past :data:`MAX_INCLUDED_CHARS`. AsciiDoc's ``include::`` and
    reStructuredText's ``.. include::`` read their files through it."""
    if repo_path is not None and any(part.startswith(".") for part in repo_path.split("/")):
        # .env, .git/config: the sources never read a hidden file as a page, nor through a link
        result.unresolved.append(f"{target} (a hidden file or folder: never read)")
        return None
    body = None
    if repo_path is not None and depth < _MAX_INCLUDE_DEPTH and repo_path not in chain:
        try:
            body = read(repo_path)
        except IncludeRefused as exc:
            result.deps[repo_path] = False
            result.unresolved.append(f"{target} ({exc})")
            return None
        result.deps[repo_path] = body is not None
    if body is None:
        result.unresolved.append(target)
        return None
    if size[0] + len(body) > MAX_INCLUDED_CHARS:
        result.unresolved.append(f"{target} (not included: the page with its includes would be over "
                                 f"{MAX_INCLUDED_CHARS:,} characters)")
        return None
    size[0] += len(body)
    return body.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")


def resolve_includes(text: str, *, path: str, read: Reader, attributes: dict[str, str] | None = None) -> IncludeResult:
    """:func:`_resolve_includes` within one budget for attribute substitution."""
    with _expansion_budget(text):
        return _resolve_includes(text, path=path, read=read, attributes=attributes)


def _resolve_includes(text: str, *, path: str, read: Reader, attributes: dict[str, str] | None = None) -> IncludeResult:
    """Replace ``include::target[...]`` lines by the files they name, read with ``read(repo_path)``
    (None when the file does not exist). ``path`` is the document's repository path.

    Unresolvable includes (a URL, a path leaving the repository, a missing file, another Antora
    component) stay in the text as they are, for the parser to report and drop; they are listed
    in ``unresolved``. Escaped ``\\include::`` lines are left alone. Once the document has grown
    past :data:`MAX_INCLUDED_CHARS`, further includes stay unresolved too, with that reason.
    """
    result = IncludeResult("")
    attrs = {k.lower(): v for k, v in (attributes or {}).items()}
    out: list[str] = []
    offset = [0]
    size = [len(text)]

    def expand(lines: list[str], current: str, depth: int, chain: tuple[str, ...]) -> None:
        in_comment = False
        for line in lines:
            stripped = line.rstrip()
            if stripped == "////":
                in_comment = not in_comment
                out.append(line)
                continue
            if in_comment:
                out.append(line)
                continue
            am = _ATTR_ENTRY_RE.match(line)
            if am:
                name = am.group(2).lower()
                if am.group(1) or am.group(3):
                    attrs.pop(name, None)
                else:
                    attrs[name] = _substitute_attrs(am.group(4) or "", attrs)
                if name == "leveloffset":
                    offset[0] = _level_offset(am.group(4) or "0", offset[0])
                out.append(line)
                continue
            m = _INCLUDE_RE.match(line)
            if not m or m.group(1):
                out.append(line)
                continue
            target = _substitute_attrs(m.group(2).strip(), attrs)
            _, named = _parse_attrlist(m.group(3))
            repo_path = None if _ATTR_REF_RE.search(target) else _include_path(target, current)
            inc = read_include(target, repo_path, read=read, result=result, size=size, depth=depth, chain=chain)
            if inc is None:
                out.append(line)
                continue
            if inc and inc[-1] == "":
                inc.pop()
            for tag in _missing_tags(inc, named):
                result.unresolved.append(f"{target} (tag '{tag}' not found in it)")
            inc = _select_lines(inc, named)
            before = offset[0]
            if "leveloffset" in named:
                offset[0] = _level_offset(named["leveloffset"], before)
                out.append(f":leveloffset: {offset[0]}")
            expand(inc, repo_path, depth + 1, (*chain, repo_path))
            if "leveloffset" in named:
                offset[0] = before
                out.extend(["", f":leveloffset: {before}", ""])

    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    expand(text.split("\n"), path, 0, (path,))
    result.text = "\n".join(out)
    return result


def _level_offset(value: str, current: int) -> int:
    value = value.strip()
    try:
        if value[:1] in "+-" and value[1:].isdigit():
            return current + int(value)
        return int(value)
    except ValueError:
        return current


def antora_attributes(yaml_text: str) -> dict[str, str]:
    """The attributes an Antora component descriptor (``antora.yml``) gives its pages: its
    ``asciidoc.attributes`` (values as strings, a trailing ``@`` (soft set) dropped, ``false``/``null``
    values left out) and ``page-component-name``/``-version``/``-title``."""
    import yaml

    from ..yaml_data import load_yaml

    try:
        data = load_yaml(yaml_text) or {}
    except yaml.YAMLError:
        return {}
    if not isinstance(data, dict):
        return {}
    raw = (data.get("asciidoc") or {}).get("attributes") or {}
    out: dict[str, str] = {}
    for key, attr in (("name", "page-component-name"), ("version", "page-component-version"),
                      ("title", "page-component-title"), ("display_version", "page-component-display-version")):
        if data.get(key) not in (None, False, "~"):
            out[attr] = str(data[key])
    for k, v in raw.items() if isinstance(raw, dict) else ():
        if v is None or v is False:
            continue
        v = "" if v is True else str(v)
        out[str(k)] = v[:-1] if v.endswith("@") else v
    return out


def prepare_asciidoc(text: str, *, path: str, read: Reader,
                     attributes: dict[str, str] | None = None) -> tuple[str, IncludeResult]:
    """What a source hands the parser for an AsciiDoc file at repository path ``path``: the
    attributes of its Antora component (``antora.yml`` next to ``modules/``) and ``attributes``
    as attribute entries above the document, then the document with its includes resolved.

    Returns ``(body, result)``; ``result.deps`` includes the ``antora.yml`` that was read.
    """
    attrs: dict[str, str] = {}
    deps: dict[str, bool] = {}
    m = _MODULE_RE.match(path)
    if m:
        descriptor = f"{m.group('root')}antora.yml"
        try:
            data = read(descriptor)
        except IncludeRefused:  # a link out of the folder, a loop of links: as if it were not there
            data = None
        deps[descriptor] = data is not None
        if data is not None:
            attrs.update(antora_attributes(data))
        attrs["page-module"] = m.group("module")
        attrs["page-relative-src-path"] = path[m.end():].split("/", 1)[-1]
    attrs.update(attributes or {})
    res = resolve_includes(text, path=path, read=read, attributes=attrs)
    res.deps = {**deps, **res.deps}
    if attrs:
        head = "".join(f":{k}: {v}\n" for k, v in attrs.items() if re.fullmatch(r"[\w][\w-]*", k))
        return f"{head}{EXTERNAL_END}\n{res.text}", res
    return res.text, res


# --------------------------------------------------------------------------------------------
# Inline markup → plain text
# --------------------------------------------------------------------------------------------

_BUILTIN_ATTRS = {
    "nbsp": " ", "sp": " ", "empty": "", "blank": "", "zwsp": "", "wj": "", "plus": "+", "amp": "&",
    "lt": "<", "gt": ">", "apos": "'", "quot": '"', "startsb": "[", "endsb": "]", "vbar": "|",
    "caret": "^", "asterisk": "*", "tilde": "~", "backslash": "\\", "backtick": "`", "two-colons": "::",
    "two-semicolons": ";;", "cpp": "C++", "pp": "++", "deg": "°", "brvbar": "¦", "ldquo": "“",
    "rdquo": "”", "lsquo": "‘", "rsquo": "’", "cxx": "C++", "hash": "#",
}
_PH = "\x00{}.{}\x00"  # placeholder: nesting depth, index
_PH_RE = re.compile(r"\x00(\d+)\.(\d+)\x00")
_PASS_RE = re.compile(
    r"(?P<esc>\\)?(?:\+\+\+(?P<t3>.+?)\+\+\+|\$\$(?P<d2>.+?)\$\$|pass:[a-z,]*\[(?P<pm>(?:\\\]|[^\]])*)\]"
    r"|(?:stem|latexmath|asciimath):\[(?P<stem>(?:\\\]|[^\]])*)\])", re.S)
_PASS2_RE = re.compile(r"(?P<esc>\\)?(?:\+\+(?P<t2>.+?)\+\+|(?<![\w+])\+(?P<t1>\S|\S.*?\S)\+(?![\w+]))", re.S)
_MONO_RE = re.compile(r"(?P<esc>\\)?(?:\[[^\[\]]*\])?(?:``(?P<u>.+?)``|(?<![\w;:}`])`(?P<c>\S|\S.*?\S)`(?![\w`]))", re.S)
_QUOTES = [
    re.compile(r"(?<!\\)(?:\[[^\[\]]*\])?\*\*(.+?)\*\*", re.S),
    re.compile(r"(?<![\w;:}\\*])(?:\[[^\[\]]*\])?\*(\S|\S.*?\S)\*(?![\w*])", re.S),
    re.compile(r"(?<!\\)(?:\[[^\[\]]*\])?__(.+?)__", re.S),
    re.compile(r"(?<![\w;:}\\_])(?:\[[^\[\]]*\])?_(\S|\S.*?\S)_(?![\w_])", re.S),
    re.compile(r"(?<!\\)(?:\[[^\[\]]*\])?##(.+?)##", re.S),
    re.compile(r"(?<![\w;:}\\#&])(?:\[[^\[\]]*\])?#(\S|\S.*?\S)#(?![\w#])", re.S),
    re.compile(r"(?<!\\)\^(\S+?)\^"),
    re.compile(r"(?<![\\~])~(\S+?)~(?!~)"),
]
#: for each lazy inline pattern above: where a match of it can end (a superset of its closing marks,
#: with their lookbehind and lookahead) and the mark characters such an end is made of
_CLOSERS = {
    _PASS_RE: (re.compile(r"\+\+\+|\$\$|\]"), "+$]"),
    _PASS2_RE: (re.compile(r"\+\+|(?<=\S)\+(?![\w+])"), "+"),
    _MONO_RE: (re.compile(r"``|(?<=\S)`(?![\w`])"), "`"),
    _QUOTES[0]: (re.compile(r"\*\*"), "*"),
    _QUOTES[1]: (re.compile(r"(?<=\S)\*(?![\w*])"), "*"),
    _QUOTES[2]: (re.compile(r"__"), "_"),
    _QUOTES[3]: (re.compile(r"(?<=\S)_(?![\w_])"), "_"),
    _QUOTES[4]: (re.compile(r"##"), "#"),
    _QUOTES[5]: (re.compile(r"(?<=\S)#(?![\w#])"), "#"),
}


def _sub_closed(rx: re.Pattern[str], repl: Any, text: str) -> str:
    """``rx.sub(repl, text)`` (for a pattern of :data:`_CLOSERS`) without searching the text after the
    last place a match could end: there every opening mark (``#123``, ``_name``, a lone ``*``) would
    make the lazy ``.*?`` scan to the end of the paragraph again, work growing with the square of the
    marks (a paragraph of 2,000 issue references took seconds). The search still sees the character
    after the last closing mark (its lookahead) and any marks right after it, so every match, and only
    those, is the one the whole text gives."""
    if rx not in _CLOSERS:  # a pattern whose search never scans ahead
        return rx.sub(repl, text)
    closer, marks = _CLOSERS[rx]
    end = 0
    for m in closer.finditer(text):
        end = m.end()
    if not end:
        return text
    cut = end + 1
    while cut < len(text) and text[cut - 1] in marks:
        cut += 1
    if cut >= len(text):
        return rx.sub(repl, text)
    return rx.sub(repl, text[:cut]) + text[cut:]


_XREF_RE = re.compile(r"(?<!\\)<<([^<>,\n]+?)(?:,\s*([^<>\n]*?))?>>")
_XREF_MACRO_RE = re.compile(r"(?<![\\\w])xref:([^\s\[]+)\[((?:\\\]|[^\]])*)\]")
_LINK_MACRO_RE = re.compile(r"(?<![\\\w])(?:link|mailto):([^\s\[]*)\[((?:\\\]|[^\]])*)\]")
_URL_MACRO_RE = re.compile(r"(?<![\\\w\"'=<>/])((?:https?|ftp|file|irc)://[^\s\[\]<>]+)\[((?:\\\]|[^\]])*)\]")
_ANGLE_URL_RE = re.compile(r"<((?:https?|ftp|mailto):[^\s<>]+)>")
_IMAGE_RE = re.compile(r"(?<![\\\w])image:(?!:)([^\s\[]*)\[((?:\\\]|[^\]])*)\]")
_ICON_RE = re.compile(r"(?<![\\\w])icon:([\w-]+)\[[^\]]*\]")
_KBD_RE = re.compile(r"(?<![\\\w])(?:kbd|btn):\[((?:\\\]|[^\]])*)\]")
_MENU_RE = re.compile(r"(?<![\\\w])menu:([^\s\[]+)\[((?:\\\]|[^\]])*)\]")
_FOOTNOTE_RE = re.compile(r"(?<![\\\w])footnote(?:ref)?:[\w-]*\[((?:\\\]|[^\]])*)\]")
#: an id as Asciidoctor's anchors take it (``[\p{Alpha}_:][\p{Word}\-:.]*``, Ruby's classes: letters,
#: combining marks, decimal digits, connector punctuation; Python's ``\w`` has no marks, so ``[[हिन्दी]]``
#: was no anchor). The ``regex`` module has these Unicode properties; ``re`` has not.
_ID = r"[\p{Alpha}_:][\p{Word}\-:.]*"
_ANCHOR_RE = regex.compile(r"(?<!\\)(?:\[\[" + _ID + r"(?:,[^\]]*)?\]\]|anchor:" + _ID + r"\[[^\]]*\])")
#: an inline anchor Asciidoctor registers while parsing a paragraph (its ``InlineAnchorScanRx``):
#: ``[[id]]``/``[[id, label]]`` not after ``[`` or ``\``, ``anchor:id[]``
_INLINE_ANCHOR_SCAN_RE = regex.compile(r"(?:^|(?<=[^\\\[]))\[\[(" + _ID + r")(?:, *[^\]]*)?\]\]"
                                       r"|(?:^|(?<=[^\\]))anchor:(" + _ID + r")\[")
#: the anchor at the start of a list item's text (``* [[id]]text``); ``[[[id]]]`` in a bibliography
_ITEM_ANCHOR_RE = regex.compile(r"^\[\[(" + _ID + r")(?:, *[^\]]*)?\]\]")
_BIBLIO_ANCHOR_RE = regex.compile(r"^\[\[\[(" + _ID + r")(?:, *[^\]]*)?\]\]\]")
#: a section title's own anchor at its end (``== Title [[id]]``, ``[[id,reftext]]``; Asciidoctor's
#: ``InlineSectionAnchorRx``); group 1 is the backslash of an escaped one, which is text
_SECTION_ANCHOR_RE = regex.compile(r" (\\)?\[\[(" + _ID + r")(?:, *(.+))?\]\]$")
#: characters Asciidoctor drops from a lowercased title to make its id (``InvalidSectionIdCharsRx``)
_INVALID_ID_CHARS_RE = regex.compile(r"[^ \p{Word}\-.]+")
_INDEXTERM_RE = re.compile(r"(?<!\\)(?:\(\(\((.+?)\)\)\)|\(\((.+?)\)\)|indexterm2?:\[((?:\\\]|[^\]])*)\])")
_OTHER_MACRO_RE = re.compile(r"(?<![\\\w])(?:stem|latexmath|asciimath|pass):\[((?:\\\]|[^\]])*)\]")
_ROLE_RE = re.compile(r"(?<![\w\\])\[\.[\w.-]+\]#([^#\n]+)#")
_ESCAPES_RE = re.compile(r"\\(?=[*_`#^~{\[<+(]|=>|->|<-|<=|--|\.\.\.|link:|xref:|https?:|include::|ifdef::|ifndef::|ifeval::|endif::|image:|kbd:|btn:|menu:|footnote:|pass:)")
_CALLOUT_RE = re.compile(r"(?:[ \t]*(?://|#|--|;;|%)?[ \t]*(?:<(?:\d+|\.)>[ \t]*)+|[ \t]*<!--(?:\d+|\.)-->[ \t]*)+$")
_UNDEFINED_LINK_RE = re.compile(r"(?<![\\\w])\{[\w][\w-]*\}[^\s\[\]]*\[((?:\\\]|[^\]])*)\]")
_ENTITY_RE = re.compile(r"&(?:[A-Za-z][A-Za-z]+\d{0,2}|#\d{2,6}|#x[0-9A-Fa-f]{2,5});")


def _link_text(raw: str, fallback: str) -> str:
    raw = raw.replace("\\]", "]").strip()
    if not raw:
        return fallback
    if raw[0] in "\"'" and raw.count(raw[0]) >= 2:
        text = raw[1:raw.index(raw[0], 1)]
    elif "=" in raw and "," in raw:
        pos, named = _parse_attrlist(raw)
        text = pos[0] if pos else named.get("text", fallback)
    else:
        text = raw
    text = text.rstrip()
    if text.endswith("^"):
        text = text[:-1]
    return text or fallback


def _xref_fallback(target: str, refs: dict[str, str]) -> str:
    page, _, frag = target.partition("#")
    if not frag and not re.search(r"\.(?:adoc|asciidoc)$|\$", page) and page in refs:
        return refs[page]
    if frag:
        if not page and frag in refs:
            return refs[frag]
        return _humanize_id(frag)
    page = re.sub(r"^.*[:$]", "", page)
    return humanize_stem(page) if page else target


def _humanize_id(ident: str) -> str:
    words = re.sub(r"[_\-]+", " ", ident).strip()
    return words[:1].upper() + words[1:] if words else ident


def inline_text(text: str, attrs: dict[str, str] | None = None, refs: dict[str, str] | None = None,
                _depth: int = 0, *, code: bool = False) -> str:
    """Plain text of AsciiDoc inline content: attribute references substituted, formatting marks
    and macros replaced by their text, passthrough content kept literally; with ``code``, monospace
    (```x```) stays code, as a Markdown code span (a paragraph's, a list's or a table's text; not a
    title's)."""
    attrs = attrs or {}
    refs = refs or {}
    saved: list[str] = []

    def keep(s: str) -> str:
        saved.append(s)
        return _PH.format(_depth, len(saved) - 1)

    def restore(s: str) -> str:
        while True:
            new = _PH_RE.sub(lambda p: saved[int(p.group(2))] if int(p.group(1)) == _depth else p.group(0), s)
            if new == s:
                return s
            s = new

    def sub_inline(s: str) -> str:
        return inline_text(s, attrs, refs, _depth + 1, code=code)

    def pass_repl(m: re.Match[str]) -> str:
        if m.group("esc"):
            return keep(m.group(0)[1:])
        for g in ("t3", "d2", "pm", "stem", "t2", "t1"):
            if g in m.groupdict() and m.group(g) is not None:
                return keep(m.group(g).replace("\\]", "]"))
        return m.group(0)

    text = _sub_closed(_PASS_RE, pass_repl, text)
    text = _substitute_attrs(text, attrs)
    # a link whose URL starts with an undefined attribute: its text
    text = _UNDEFINED_LINK_RE.sub(lambda m: keep(sub_inline(_link_text(m.group(1), ""))), text)
    text = re.sub(r"(?<=\w)`'", "'", text)  # curved apostrophe

    def mono_repl(m: re.Match[str]) -> str:
        if m.group("esc"):
            return keep(m.group(0)[1:])
        inner = m.group("u") if m.group("u") is not None else m.group("c")
        inner = _sub_closed(_PASS2_RE, pass_repl, inner)
        inner = _ESCAPES_RE.sub("", inner)
        return keep(code_span(restore(inner)) if code else restore(inner))

    text = _sub_closed(_MONO_RE, mono_repl, text)
    text = _sub_closed(_PASS2_RE, pass_repl, text)
    # macros before quotes, so that URLs keep their underscores and asterisks
    text = _INDEXTERM_RE.sub(lambda m: m.group(2) or "", text)
    text = _ANCHOR_RE.sub("", text)
    text = _XREF_MACRO_RE.sub(lambda m: keep(sub_inline(_link_text(m.group(2), ""))
                                             or _xref_fallback(m.group(1), refs)), text)
    text = _XREF_RE.sub(lambda m: keep(sub_inline(m.group(2)) if m.group(2)
                                       else _xref_fallback(m.group(1).strip(), refs)), text)
    text = _LINK_MACRO_RE.sub(lambda m: keep(sub_inline(_link_text(m.group(2), "")) or m.group(1)), text)
    text = _URL_MACRO_RE.sub(lambda m: keep(sub_inline(_link_text(m.group(2), "")) or m.group(1)), text)
    text = _ANGLE_URL_RE.sub(lambda m: keep(m.group(1)), text)
    text = _IMAGE_RE.sub(lambda m: (_parse_attrlist(m.group(2))[0] or [""])[0], text)
    text = _ICON_RE.sub("", text)
    text = _KBD_RE.sub(lambda m: m.group(1).replace("\\]", "]"), text)
    text = _MENU_RE.sub(lambda m: " > ".join([m.group(1), *[p.strip() for p in m.group(2).split(">") if p.strip()]]), text)
    text = _FOOTNOTE_RE.sub(lambda m: f" ({m.group(1).strip()})" if m.group(1).strip() else "", text)
    text = _OTHER_MACRO_RE.sub(lambda m: m.group(1), text)
    text = _ROLE_RE.sub(lambda m: m.group(1), text)
    for _ in range(2):  # nested marks (*_x_*)
        for rx in _QUOTES:
            text = _sub_closed(rx, lambda m: m.group(1), text)
    text = _ESCAPES_RE.sub("", text)
    text = re.sub(r"(?<=\S) \+$", "\n", text, flags=re.M)  # hard line breaks
    text = re.sub(r"(?<= )--(?= )|(?<=\w)--(?=\w)", "—", text)
    text = _ENTITY_RE.sub(lambda m: _html.unescape(m.group(0)), text)
    return restore(text)


def generate_id(title: str, seen: dict[str, int], *, prefix: str = "_", separator: str = "_") -> str:
    """The id Asciidoctor generates for a section titled ``title`` (plain text): lowercase, characters
    other than Ruby's word characters (``\p{Word}``: letters, combining marks, decimal digits,
    connector punctuation; so a Hindi vowel sign stays and ``²`` goes), spaces, ``-`` and ``.`` dropped, runs of spaces/``-``/``.``(/``_``)
    made one ``separator``, a trailing separator dropped, ``prefix`` in front; a repeated id gets
    ``{separator}2``, ``{separator}3``, … past every id in ``seen`` (Asciidoctor registers block,
    paragraph and inline anchors and discrete headings' ids in document order, so a section after
    ``[#_install]`` on a listing is ``_install_2``)."""
    text = title.lower()
    text = re.sub(r"\.\.\.|\((?:c|r|tm)\)|->|=>|<-|<=", "", text)  # replaced by entities in Asciidoctor's HTML
    text = _INVALID_ID_CHARS_RE.sub("", text)
    gen = prefix + text
    if separator:
        sep = separator[0]
        chars = " .-" if sep in "-." else f" {re.escape(sep)}.-"
        gen = re.sub(f"[{chars}]+", sep, gen)
        if gen.endswith(sep):
            gen = gen[:-1]
        if not prefix and gen.startswith(sep):
            gen = gen[1:]
    else:
        gen = gen.replace(" ", "")
    if gen not in seen:
        seen[gen] = 1
        return gen
    # the last suffix given to a repeat of gen with this separator, under a key no id has (NUL): every
    # suffix up to it is taken and ids are never removed, so the search resumes there and a page of
    # thousands of "== Example" sections stays linear instead of recounting from 2 each time
    last = f"\x00{separator[:1]}\x00{gen}"
    n = seen.get(last, 1) + 1
    while f"{gen}{separator[:1]}{n}" in seen:
        n += 1
    cand = f"{gen}{separator[:1]}{n}"
    seen[cand] = 1
    seen[last] = n
    return cand


# --------------------------------------------------------------------------------------------
# Block parser
# --------------------------------------------------------------------------------------------

_SECTION_RE = re.compile(r"^(={1,6}|#{1,6})[ \t]+(\S.*?)(?:[ \t]+\1)?[ \t]*$")
_BLOCK_ATTR_RE = re.compile(r"^\[(|[\w.#%{,\"'\\:+-].*)\][ \t]*$")
_BLOCK_ANCHOR_RE = regex.compile(r"^\[\[(" + _ID + r")(?:,\s*(.+?))?\]\][ \t]*$")
_BLOCK_TITLE_RE = re.compile(r"^\.([^.\s\t].*)$")
_ADMONITION_RE = re.compile(r"^(NOTE|TIP|IMPORTANT|WARNING|CAUTION):[ \t]+(.*)$")
_ADMONITIONS = ("NOTE", "TIP", "IMPORTANT", "WARNING", "CAUTION")
_UL_RE = re.compile(r"^[ \t]*(-|\*{1,5})[ \t]+(.*)$")
_OL_RE = re.compile(r"^[ \t]*(\.{1,5}|\d+\.|[a-zA-Z]\.|[ivxIVX]+\))[ \t]+(.*)$")
_COLIST_RE = re.compile(r"^<(\d+|\.)>[ \t]+(.*)$")
_DLIST_RE = re.compile(r"^(?!//)[ \t]*(\S.*?)(:{2,4}|;;)(?:[ \t]+(.*))?$")
_BLOCK_MACRO_RE = re.compile(r"^(\w[\w-]*)::(\S*?)\[(.*)\][ \t]*$")
_CONDITIONAL_RE = re.compile(r"^(\\)?(ifdef|ifndef|ifeval|endif)::([^\[\s]*)\[(.*)\][ \t]*$")
_DELIMITERS = {"-": "listing", ".": "literal", "=": "example", "*": "sidebar", "_": "quote", "+": "pass",
               "/": "comment"}
_TABLE_DELIM_RE = re.compile(r"^([|!,:])={3,}[ \t]*$")
_FENCE_RE = re.compile(r"^```([\w+#.-]*)[ \t]*$")
_CELL_SEP_RE = (r"(?:(?:^|(?<=[ \t]))((?:\d+\*)?(?:\d*(?:\.\d+)?\+)?(?:[<^>])?(?:\.[<^>])?[ademhlsv]?))?"
                r"(?<!\\){sep}")


#: the underline of a two-line section title → its level (Asciidoctor's ``SETEXT_SECTION_LEVELS``)
_SETEXT_LEVELS = {"=": 0, "-": 1, "~": 2, "^": 3, "+": 4}
#: the first line of a two-line title (``SetextSectionTitleRx``): not starting with ``.``, with a
#: letter or digit in it
_SETEXT_TITLE_RE = regex.compile(r"^(?!\.).*?\p{Alnum}")


def _section_title(lines: list[str], i: int, *, setext: bool = True) -> tuple[str, str, int] | None:
    """``(marker, title, lines it takes)`` when ``lines[i]`` opens a section title: a one-line title
    (``== Title``, ``## Title``) or, with ``setext``, a two-line one, which Asciidoctor reads by
    default: a line with a letter or digit, not starting with ``.``, over a line of one character
    ``=``, ``-``, ``~``, ``^`` or ``+`` (levels 0 to 4, marker ``=`` to ``=====``) whose length is the
    title's within one. Any other ``----`` below text opens a listing block."""
    s = lines[i].rstrip()
    m = _SECTION_RE.match(s)
    if m:
        return m.group(1), m.group(2), 1
    if setext and i + 1 < len(lines):
        under = lines[i + 1].rstrip()
        if under and under[0] in _SETEXT_LEVELS and under == under[0] * len(under) \
                and abs(len(s) - len(under)) < 2 and _SETEXT_TITLE_RE.match(s):
            return "=" * (_SETEXT_LEVELS[under[0]] + 1), s.strip(), 2
    return None


def _title_anchor(raw: str) -> tuple[str, str | None, str | None]:
    """A section title without the anchor that ends it (``Title [[id]]``, ``Title [[id,reftext]]``:
    Asciidoctor takes it as the section's id when no id is set above the title), that id and its
    reftext; None for each it has not (an escaped ``\\[[id]]`` stays text)."""
    if raw.endswith("]]"):
        m = _SECTION_ANCHOR_RE.search(raw)
        if m and not m.group(1):
            return raw[:m.start()], m.group(2), (m.group(3) or "").strip() or None
    return raw, None, None


def _delimiter(line: str) -> str | None:
    """The kind of delimited block a line opens, if any."""
    s = line.rstrip()
    if s == "--":
        return "open"
    if len(s) >= 4 and s[0] in _DELIMITERS and s == s[0] * len(s):
        return _DELIMITERS[s[0]]
    if _TABLE_DELIM_RE.match(s):
        return "table"
    if _FENCE_RE.match(s):
        return "fence"
    return None


@dataclass
class _Attrs:
    style: str | None = None
    positional: list[str] = field(default_factory=list)
    named: dict[str, str] = field(default_factory=dict)
    options: set[str] = field(default_factory=set)
    ident: str | None = None
    title: str | None = None

    def merge(self, raw: str) -> None:
        pos, named = _parse_attrlist(raw)
        if pos:
            first = pos[0]
            m = re.match(r"^([^#.%]*)(.*)$", first)
            style, shorthand = (m.group(1), m.group(2)) if m else (first, "")
            for kind, value in re.findall(r"([#.%])([^#.%]+)", shorthand):
                if kind == "#":
                    self.ident = value
                elif kind == "%":
                    self.options.add(value)
            if style:
                self.style = style
            self.positional = [style or "", *pos[1:]] if not self.positional else self.positional
        for opt in re.split(r"[,\s]+", named.pop("options", named.pop("opts", ""))):
            if opt:
                self.options.add(opt)
        if "id" in named:
            self.ident = named["id"]
        self.named.update(named)


class _Parser:
    def __init__(self, attrs: dict[str, str], refs: dict[str, str]) -> None:
        self.attrs = attrs
        self.refs = refs
        self.builder = SectionBuilder()
        self.seen_ids: dict[str, int] = {}
        self.header: dict[str, Any] = {}
        self.in_header = False  # attribute entries here are the document's header (metadata)
        self.after_title = False  # author and revision lines follow the document title
        self.shift = 0  # 1 in a book with parts (level-0 sections after the title)

    # -- ids --
    def register(self, ident: str | None) -> None:
        """Take ``ident`` (a block, paragraph or inline anchor met in document order): a generated id
        after it skips it, as Asciidoctor's does."""
        if ident:
            self.seen_ids.setdefault(ident, 1)

    def register_inline(self, text: str) -> None:
        for m in _INLINE_ANCHOR_SCAN_RE.finditer(text):
            self.register(m.group(1) or m.group(2))

    # -- inline --
    def inline(self, text: str, *, code: bool = True) -> str:
        """``text``'s inline content; monospace as code spans unless ``code`` is false (a section title,
        the lines of a code block)."""
        return inline_text(text, self.attrs, self.refs, code=code)

    def para_lines(self, lines: list[str]) -> list[OutLine]:
        text = self.inline("\n".join(ln.strip() for ln in lines))
        # a paragraph is one line per hard break; soft line breaks become spaces
        parts = [" ".join(p.split()) for p in text.split("\n")] if " +\n" in "\n".join(lines) + "\n" \
            else [" ".join(text.split())]
        return [OutLine(p) for p in parts if p]

    # -- attribute entries --
    def attribute_entry(self, lines: list[str], i: int) -> int:
        m = _ATTR_ENTRY_RE.match(lines[i])
        assert m
        value = m.group(4) or ""
        while value.endswith(" \\") and i + 1 < len(lines):  # continued value
            i += 1
            value = value[:-2] + " " + lines[i].strip()
        name = m.group(2).lower()
        if m.group(1) or m.group(3):
            self.attrs.pop(name, None)
            return i + 1
        value = _substitute_attrs(value, self.attrs)
        self.attrs[name] = value
        if self.in_header and name != "leveloffset":
            self.header[name] = value
        return i + 1

    # -- blocks --
    def blocks(self, lines: list[str], *, top: bool = False) -> list[OutLine]:
        """Render ``lines`` as blocks; at the top level, section titles go to the section builder."""
        out: list[OutLine] = []
        pending = _Attrs()
        i = 0
        n = len(lines)

        def emit(block: list[OutLine]) -> None:
            nonlocal out
            if not block:
                return
            if top:
                self.in_header = self.after_title = False
                self.builder.add("\n".join(ln.text for ln in block))
            else:
                if out:
                    out.append(OutLine(""))
                out.extend(block)

        while i < n:
            line = lines[i]
            s = line.rstrip()
            if not s.strip():
                i += 1
                if top and self.builder.title_heading is not None:
                    self.in_header = self.after_title = False
                continue
            if s.startswith("//") and not s.startswith("////"):
                i += 1
                continue
            if _ATTR_ENTRY_RE.match(s):
                i = self.attribute_entry(lines, i)
                continue
            m = _BLOCK_ANCHOR_RE.match(s)
            if m:
                pending.ident = m.group(1)
                self.register(pending.ident)
                i += 1
                continue
            if _BLOCK_ATTR_RE.match(s) and not _BLOCK_MACRO_RE.match(s):
                pending.merge(s[1:-1])
                self.register(pending.ident)
                i += 1
                continue
            m = _BLOCK_TITLE_RE.match(s)
            if m and not _OL_RE.match(s) and _delimiter(s) is None:
                pending.title = m.group(1)
                i += 1
                continue
            sect = _section_title(lines, i, setext=top or pending.style in ("discrete", "float"))
            if sect and not (s.startswith("#") and not top and sect[2] == 1):
                marker, raw, used = sect
                level = len(marker) + _level_offset(self.attrs.get("leveloffset", "0") or "0", 0) \
                    if marker[0] == "=" else len(marker)
                raw, ident, _ = (raw, pending.ident, None) if pending.ident else _title_anchor(raw)
                title = " ".join(self.inline(raw, code=False).split())
                if top and pending.style not in ("discrete", "float"):
                    if level <= 1 and self.builder.title_heading is None and not self.builder._any_heading:
                        self.builder.heading(1, title, ident or "_title")
                        self.after_title = True
                    else:
                        anchor = ident or self.section_id(title)  # "": no id (sectids unset)
                        self.register(anchor)
                        self.builder.heading(max(level + self.shift, 2), title, anchor)
                        self.in_header = self.after_title = False
                else:
                    if pending.style in ("discrete", "float"):  # its id is generated and taken too
                        self.register(ident or self.section_id(title))
                    emit([OutLine(title)])
                pending = _Attrs()
                i += used
                continue
            if top and self.after_title:
                # author and revision lines directly below the document title
                i += 1
                continue
            kind = _delimiter(s)
            if kind is not None:
                i, block = self.delimited(lines, i, kind, pending)
                emit(block)
                pending = _Attrs()
                continue
            m = _BLOCK_MACRO_RE.match(s)
            if m:
                emit(self.block_macro(m, pending))
                pending = _Attrs()
                i += 1
                continue
            if s in ("'''", "---", "***", "- - -", "* * *", "<<<"):
                i += 1
                pending = _Attrs()
                continue
            if _UL_RE.match(s) or (_OL_RE.match(s)) or _COLIST_RE.match(s) or self.is_dlist(s):
                i, block = self.list_block(lines, i, biblio=pending.style == "bibliography")
                emit(self.titled(pending, block))
                pending = _Attrs()
                continue
            i, block = self.paragraph(lines, i, pending)
            emit(block)
            pending = _Attrs()
        return out

    def section_id(self, title: str) -> str:
        """The generated id of a section titled ``title``; ``""`` (no id) when ``sectids`` is unset."""
        if "sectids" not in self.attrs:
            return ""
        prefix = self.attrs.get("idprefix", "_")
        separator = self.attrs.get("idseparator", "_")
        return generate_id(title, self.seen_ids, prefix=prefix, separator=separator)

    def titled(self, pending: _Attrs, block: list[OutLine], *, apart: bool = False) -> list[OutLine]:
        """``block`` led by its ``.Title``; ``apart``: the title is a block of its own (a table's, as an HTML
        ``<caption>``: a table's block is all rows, or no reader takes it for a table)."""
        if pending.title:
            title = " ".join(self.inline(pending.title).split())
            if title:
                return [OutLine(title), *([OutLine("")] if apart else []), *block]
        return block

    @staticmethod
    def is_dlist(s: str) -> bool:
        m = _DLIST_RE.match(s)
        if not m or _BLOCK_MACRO_RE.match(s) or s.lstrip().startswith(("include::", "image::")):
            return False
        term = m.group(1)
        return not term.endswith(":") and not re.search(r"(?:https?|link|xref|mailto)$", term)

    def block_macro(self, m: re.Match[str], pending: _Attrs) -> list[OutLine]:
        name, target, raw = m.groups()
        if name == "image":
            pos, named = _parse_attrlist(raw)
            alt = named.get("alt") or (pos[0] if pos else "")
            return self.titled(pending, [OutLine(self.inline(alt))] if alt else [])
        return []  # video, audio, toc, unknown extension macros: no text

    def delimited(self, lines: list[str], i: int, kind: str, pending: _Attrs) -> tuple[int, list[OutLine]]:
        opener = lines[i].rstrip()
        j = i + 1
        if kind == "fence":
            close = re.compile(r"^```[ \t]*$")
            while j < len(lines) and not close.match(lines[j]):
                j += 1
        else:
            while j < len(lines) and lines[j].rstrip() != opener:
                j += 1
        body = lines[i + 1:j]
        end = j + 1
        style = (pending.style or "").lower()
        if kind == "comment":
            return end, []
        if kind == "fence":
            lang = _FENCE_RE.match(opener).group(1)  # type: ignore[union-attr]
            return end, self.titled(pending, self.verbatim(body, lang, pending))
        if kind == "table":
            return end, self.titled(pending, self.table(body, opener[0], pending), apart=True)
        if kind in ("listing", "literal") or style in ("source", "listing", "literal") and kind == "open":
            lang = ""
            if style == "source" or (pending.positional and pending.positional[0] == "" and len(pending.positional) > 1):
                lang = pending.positional[1] if len(pending.positional) > 1 else self.attrs.get("source-language", "")
            return end, self.titled(pending, self.verbatim(body, lang, pending))
        if kind == "pass":
            if style == "stem" or style in ("latexmath", "asciimath"):
                return end, self.titled(pending, [OutLine("\n".join(body).strip())])
            text = strip_html("\n".join(body))
            return end, self.titled(pending, [OutLine(text)] if text else [])
        if style in ("verse",):
            text = [OutLine(self.inline(ln.strip())) for ln in body]
            return end, self.titled(pending, text)
        inner = self.blocks(body)
        if style.upper() in _ADMONITIONS:
            return end, self.admonition(style.upper(), pending, inner)
        if style in ("comment",):
            return end, []
        return end, self.titled(pending, inner)

    def admonition(self, label: str, pending: _Attrs, inner: list[OutLine]) -> list[OutLine]:
        title = " ".join(self.inline(pending.title).split()) if pending.title else ""
        head = f"{label}: {title}".rstrip() if title else f"{label}:"
        if inner and not inner[0].verbatim and not title and inner[0].text:
            return [OutLine(f"{head} {inner[0].text}"), *inner[1:]]
        return [OutLine(head), *inner]

    def verbatim(self, body: list[str], lang: str, pending: _Attrs) -> list[OutLine]:
        subs = pending.named.get("subs", "")
        code = [_CALLOUT_RE.sub("", ln) for ln in body]
        if "attributes" in subs or subs in ("normal", "+attributes", "attributes+"):
            code = [_substitute_attrs(ln, self.attrs) for ln in code]
        if "quotes" in subs or subs == "normal":
            code = [self.inline(ln, code=False) for ln in code]
        text = "\n".join(code).strip("\n")
        if not text.strip():
            return []
        return fence_block(_dedent(text), lang.strip())

    def table(self, body: list[str], sep: str, pending: _Attrs) -> list[OutLine]:
        fmt = pending.named.get("format", {"|": "psv", "!": "psv", ",": "csv", ":": "dsv"}[sep])
        if fmt == "psv" and "separator" in pending.named:
            sep = pending.named["separator"]
        body = [ln for ln in body if not (ln.lstrip().startswith("//") and not ln.lstrip().startswith("///"))]
        cols = _column_count(pending.named.get("cols", ""))
        rows: list[list[str]] = []
        if fmt in ("csv", "dsv", "tsv"):
            delim = {"csv": ",", "dsv": ":", "tsv": "\t"}[fmt]
            text = "\n".join(ln for ln in body if ln.strip())
            for rec in csv.reader(io.StringIO(text), delimiter=delim):
                rows.append([" ".join(self.inline(c).split()) for c in rec])
        else:
            cells: list[tuple[str, str, int]] = []  # (spec, content, line index of its separator)
            rx = re.compile(_CELL_SEP_RE.format(sep=re.escape(sep)), re.M)
            joined = "\n".join(body)
            line_starts = [0]
            for ln in body:
                line_starts.append(line_starts[-1] + len(ln) + 1)
            matches = list(rx.finditer(joined))
            for k, m in enumerate(matches):
                stop = matches[k + 1].start() if k + 1 < len(matches) else len(joined)
                content = joined[m.end():stop]
                line_no = _line_of(line_starts, m.start())
                cells.append((m.group(1) or "", content, line_no))
            if not cells:
                return []
            if not cols:
                first_line = cells[0][2]
                cols = sum(_colspan(spec) for spec, _, ln in cells if ln == first_line) or 1
            row: list[str] = []
            width = 0
            for spec, content, _ in cells:
                repeat = int(spec.split("*", 1)[0]) if "*" in spec else 1
                for _r in range(repeat):
                    row.append(self.cell_text(content.replace("\\" + sep, sep), spec))
                    width += _colspan(spec)
                    if width >= cols:
                        rows.append(row)
                        row, width = [], 0
            if row:
                rows.append(row)
        out = [OutLine(row_line(r)) for r in rows if any(c.strip() for c in r)]
        # a header row: the ``header`` option, or (Asciidoctor's implicit header) a first line of the table
        # followed by a blank line; without one, the rows start with a rule (table_row.rule_line)
        header = "header" in pending.options or ("noheader" not in pending.options and len(body) > 1
                                                 and bool(body[0].strip()) and not body[1].strip())
        if not header and (rule := headless_rule([o.text for o in out])):
            out.insert(0, OutLine(rule))
        return out

    def cell_text(self, content: str, spec: str) -> str:
        style = spec[-1:] if spec[-1:].isalpha() else ""
        if style == "a":
            inner = _Parser(dict(self.attrs), self.refs)
            inner.seen_ids = self.seen_ids
            lines = inner.blocks(_dedent(content.strip("\n")).split("\n"))
            return " ".join(" ".join(ln.text.split()) for ln in lines if ln.text.strip() and not ln.text.startswith("```"))
        if style == "l":
            return " ".join(content.split())
        return " ".join(self.inline(content.strip()).split())

    def paragraph(self, lines: list[str], i: int, pending: _Attrs, *, in_list: bool = False) -> tuple[int, list[OutLine]]:
        start = i
        literal = lines[i][:1] in (" ", "\t")
        para: list[str] = []
        while i < len(lines):
            s = lines[i].rstrip()
            if not s.strip():
                break
            if i > start:
                if _delimiter(s) is not None or (_BLOCK_ATTR_RE.match(s) and not literal) or _BLOCK_ANCHOR_RE.match(s):
                    break
                if in_list and (s == "+" or self.list_marker(s)):
                    break
            if s.startswith("//") and not s.startswith("////"):
                i += 1
                continue
            para.append(lines[i])
            i += 1
        style = (pending.style or "").lower()
        if literal or style in ("literal", "listing", "source"):
            lang = ""
            if style == "source" or (pending.positional[:1] == [""] and len(pending.positional) > 1):
                lang = pending.positional[1] if len(pending.positional) > 1 else ""
            return i, self.titled(pending, self.verbatim(para, lang, pending))
        if style == "pass":
            text = strip_html("\n".join(para))
            return i, [OutLine(text)] if text else []
        if style in ("comment",):
            return i, []
        if style == "verse":
            return i, self.titled(pending, [OutLine(self.inline(p.strip())) for p in para])
        if style != "quote":
            self.register_inline("\n".join(para))  # a paragraph's inline anchors, as Asciidoctor's parser
        m = _ADMONITION_RE.match(para[0].strip()) if para else None
        if m:
            rest = self.para_lines([m.group(2), *para[1:]])
            return i, self.admonition(m.group(1), pending, rest)
        block = self.para_lines(para)
        if style.upper() in _ADMONITIONS:
            return i, self.admonition(style.upper(), pending, block)
        return i, self.titled(pending, block)

    # -- lists --
    @staticmethod
    def list_marker(s: str) -> tuple[str, str] | None:
        """(marker kind, item text) when ``s`` starts a list item."""
        m = _UL_RE.match(s)
        if m:
            return m.group(1), m.group(2)
        m = _OL_RE.match(s)
        if m:
            mark = m.group(1)
            kind = mark if mark.startswith(".") else ("1." if mark[0].isdigit() else ("a." if mark[0].isalpha() and mark.endswith(".") else "i)"))
            return kind, m.group(2)
        m = _COLIST_RE.match(s.strip())
        if m:
            return "<1>", m.group(2)
        if _Parser.is_dlist(s):
            dm = _DLIST_RE.match(s)
            return "dl" + dm.group(2), s  # type: ignore[union-attr]
        return None

    def list_block(self, lines: list[str], i: int, *, biblio: bool = False) -> tuple[int, list[OutLine]]:
        """A list with its nested lists and attached blocks, rendered with indentation. An anchor
        starting an item's text (``[[[id]]]`` in a ``bibliography`` list) is registered."""
        out: list[OutLine] = []
        stack: list[str] = []  # marker kinds, outermost first
        counters: list[int] = []
        n = len(lines)
        while i < n:
            s = lines[i].rstrip()
            if not s.strip():
                # a list goes on after blank lines when the next item belongs to it
                j = i
                while j < n and not lines[j].strip():
                    j += 1
                if j < n and (lm := self.list_marker(lines[j].rstrip())) and (lm[0] in stack or not lm[0].startswith("dl") and stack):
                    i = j
                    continue
                break
            lm = self.list_marker(s)
            if lm is None:
                break
            kind, text = lm
            if kind in stack:
                depth = stack.index(kind)
                del stack[depth + 1:]
                del counters[depth + 1:]
                counters[depth] += 1
            else:
                stack.append(kind)
                counters.append(1)
                depth = len(stack) - 1
            indent = "  " * depth
            if kind.startswith("dl"):
                dm = _DLIST_RE.match(s)
                term = " ".join(self.inline(dm.group(1).strip()).split())  # type: ignore[union-attr]
                text = dm.group(3) or ""  # type: ignore[union-attr]
                prefix = f"{indent}{term}:" if stack[0].startswith("dl") and depth == 0 else f"{indent}- {term}:"
            elif kind == "<1>":
                prefix = f"{indent}({counters[depth]})"
            elif kind[0] in ".1ai":
                prefix = f"{indent}{counters[depth]}."
            else:
                prefix = f"{indent}-"
            am = (_BIBLIO_ANCHOR_RE if biblio else _ITEM_ANCHOR_RE).match(text.strip())
            if am and not kind.startswith("dl"):
                self.register(am.group(1))
            # item text: this line and following plain lines
            item = [text] if text.strip() else []
            i += 1
            while i < n:
                t = lines[i].rstrip()
                if not t.strip() or t == "+" or self.list_marker(t) or _delimiter(t) is not None \
                        or _BLOCK_ATTR_RE.match(t) or _BLOCK_ANCHOR_RE.match(t):
                    break
                if not (t.startswith("//") and not t.startswith("////")):
                    item.append(t)
                i += 1
            body = self.para_lines(item) if item else []
            first = body[0].text if body else ""
            out.append(OutLine(f"{prefix} {first}".rstrip()))
            out.extend(OutLine(f"{indent}  {b.text}") for b in body[1:])
            # dlist: description on the following lines (before a blank line or continuation)
            # attached blocks: "+" then a block
            while i < n:
                if lines[i].rstrip() == "+":
                    j = i + 1
                    i, attached = self.attached(lines, j)
                    for ln in attached:
                        out.append(ln if ln.verbatim or not ln.text else OutLine(f"{indent}  {ln.text}"))
                    continue
                # a delimited block/attribute line directly below an item (no blank line) is attached too
                t = lines[i].rstrip()
                if t and (_delimiter(t) is not None and _delimiter(t) != "table" or _BLOCK_ATTR_RE.match(t)) \
                        and not self.list_marker(t):
                    i, attached = self.attached(lines, i)
                    for ln in attached:
                        out.append(ln if ln.verbatim or not ln.text else OutLine(f"{indent}  {ln.text}"))
                    continue
                # dlist description as an indented or following block after blank lines
                if kind.startswith("dl") and not text.strip() and not t:
                    j = i
                    while j < n and not lines[j].strip():
                        j += 1
                    if j < n and not self.list_marker(lines[j].rstrip()) and _delimiter(lines[j]) is None \
                            and not _SECTION_RE.match(lines[j]) and not _BLOCK_ATTR_RE.match(lines[j]) \
                            and lines[j][:1] in (" ", "\t"):
                        i, para = self.paragraph([ln.strip() for ln in lines[:j + 1]] + lines[j + 1:], j, _Attrs(), in_list=True)
                        out.extend(OutLine(f"{indent}  {b.text}") for b in para)
                        continue
                break
        return i, out

    def attached(self, lines: list[str], j: int) -> tuple[int, list[OutLine]]:
        """One block attached to a list item (after a ``+`` line), with its attribute lines."""
        pending = _Attrs()
        n = len(lines)
        while j < n:
            t = lines[j].rstrip()
            if _BLOCK_ANCHOR_RE.match(t):
                pending.ident = _BLOCK_ANCHOR_RE.match(t).group(1)  # type: ignore[union-attr]
                self.register(pending.ident)
                j += 1
            elif _BLOCK_ATTR_RE.match(t) and not _BLOCK_MACRO_RE.match(t):
                pending.merge(t[1:-1])
                self.register(pending.ident)
                j += 1
            elif _BLOCK_TITLE_RE.match(t) and not _OL_RE.match(t) and _delimiter(t) is None:
                pending.title = t[1:]
                j += 1
            else:
                break
        if j >= n:
            return j, []
        t = lines[j].rstrip()
        kind = _delimiter(t)
        if kind is not None:
            return self.delimited(lines, j, kind, pending)
        m = _BLOCK_MACRO_RE.match(t)
        if m:
            return j + 1, self.block_macro(m, pending)
        return self.paragraph(lines, j, pending, in_list=True)


def _line_of(starts: list[int], pos: int) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= pos:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _colspan(spec: str) -> int:
    m = re.match(r"^(?:\d+\*)?(\d+)\+", spec)
    return int(m.group(1)) if m else 1


def _column_count(cols: str) -> int:
    cols = cols.strip().strip("\"'")
    if not cols:
        return 0
    if re.fullmatch(r"\d+", cols):
        return int(cols)
    total = 0
    for part in cols.split(",") if "," in cols else cols.split(";"):
        part = part.strip()
        m = re.match(r"^(\d+)\*", part)
        total += int(m.group(1)) if m else 1
    return total


def _dedent(text: str) -> str:
    lines = text.split("\n")
    widths = [len(ln) - len(ln.lstrip(" \t")) for ln in lines if ln.strip()]
    cut = min(widths, default=0)
    return "\n".join(ln[cut:] for ln in lines) if cut else text


def _preprocess(text: str) -> tuple[list[str], list[str], list[str]]:
    """Drop the include directives left (unresolvable) and the conditional directives, keeping
    what they enclose. Returns (lines, unresolved include targets, conditions)."""
    lines: list[str] = []
    unresolved: list[str] = []
    conditions: list[str] = []
    in_comment = False
    for line in text.split("\n"):
        s = line.rstrip()
        if s == "////":
            in_comment = not in_comment
            lines.append(line)
            continue
        if in_comment:
            lines.append(line)
            continue
        m = _INCLUDE_RE.match(s)
        if m:
            if m.group(1):
                lines.append(line)  # escaped: text (the inline pass drops the backslash)
            else:
                unresolved.append(m.group(2).strip())
            continue
        c = _CONDITIONAL_RE.match(s)
        if c:
            esc, kind, target, inline = c.groups()
            if esc:
                lines.append(line)
                continue
            if kind != "endif":
                cond = f"{kind}::{target}[{inline}]" if kind == "ifeval" else f"{kind}::{target}"
                if cond not in conditions:
                    conditions.append(cond)
                if kind != "ifeval" and inline.strip():
                    lines.append(inline)  # single-line form: ifdef::attr[content]
            continue
        lines.append(line)
    return lines, unresolved, conditions


def _collect_refs(lines: list[str], attrs: dict[str, str]) -> dict[str, str]:
    """id → section title, for ``<<id>>`` references without text (first pass). Ids are generated as
    :class:`_Parser` does: past the block, paragraph and inline anchors and discrete headings before."""
    refs: dict[str, str] = {}
    seen: dict[str, int] = {}
    local = {"sectids": "", **attrs}
    pending = _Attrs()
    block_title: str | None = None
    delim: str | None = None
    biblio = False  # in a [bibliography] list
    underline = -1  # the index of a two-line title's underline
    for k, line in enumerate(lines):
        s = line.rstrip()
        if k == underline:
            continue
        if delim is not None:
            if s == delim:
                delim = None
            continue
        kind = _delimiter(s)
        if kind is not None:
            if kind in ("listing", "literal", "pass", "comment", "fence", "table"):
                delim = s if not s.startswith("```") else "```"
            if pending.ident and block_title:
                refs.setdefault(pending.ident, " ".join(inline_text(block_title, local).split()))
            pending, block_title = _Attrs(), None
            continue
        if s.startswith("//"):
            continue
        m = _BLOCK_TITLE_RE.match(s)
        if m and not _OL_RE.match(s):
            block_title = m.group(1)
            continue
        am = _ATTR_ENTRY_RE.match(s)
        if am:
            name = am.group(2).lower()
            if am.group(1) or am.group(3):
                local.pop(name, None)
            elif name in ("idprefix", "idseparator", "sectids"):
                local[name] = am.group(4) or ""
            continue
        m = _BLOCK_ANCHOR_RE.match(s)
        if m:
            pending.ident = m.group(1)
            if m.group(2):  # [[id,reftext]]
                pending.named["reftext"] = m.group(2)
            seen.setdefault(pending.ident, 1)
            continue
        if _BLOCK_ATTR_RE.match(s) and not _BLOCK_MACRO_RE.match(s):
            pending.merge(s[1:-1])
            if pending.ident:
                seen.setdefault(pending.ident, 1)
            continue
        sect = _section_title(lines, k)
        if sect and sect[0][0] == "=" and len(sect[0]) > 1:
            underline = k + sect[2] - 1
            # a ``<<id>>`` without text shows the section's reftext, as Asciidoctor does, else its title:
            # ``[[id,Setup guide]]``, ``[#id,reftext=Setup guide]``, ``== Title [[id,Setup guide]]``
            raw, ident, reftext = ((sect[1], pending.ident, pending.named.get("reftext")) if pending.ident
                                   else _title_anchor(sect[1]))
            title = " ".join(inline_text(reftext or raw, local).split())
            if not ident and "sectids" in local:
                ident = generate_id(title, seen, prefix=local.get("idprefix", "_"),
                                    separator=local.get("idseparator", "_"))
            if ident:
                seen.setdefault(ident, 1)
                refs.setdefault(ident, title)
        elif s.strip():
            lm = _UL_RE.match(s) or _OL_RE.match(s)
            if lm:
                biblio = biblio or pending.style == "bibliography"
                im = (_BIBLIO_ANCHOR_RE if biblio else _ITEM_ANCHOR_RE).match(lm.group(2).strip())
                if im:
                    seen.setdefault(im.group(1), 1)
            else:
                biblio = False
                for am in _INLINE_ANCHOR_SCAN_RE.finditer(s):
                    seen.setdefault(am.group(1) or am.group(2), 1)
        if s.strip():
            pending, block_title = _Attrs(), None
    return refs


def _has_parts(lines: list[str]) -> bool:
    """True when level-0 sections follow the document title (a book with parts)."""
    count = 0
    delim: str | None = None
    underline = -1  # the index of a two-line title's underline
    for k, line in enumerate(lines):
        s = line.rstrip()
        if k == underline:
            continue
        if delim is not None:
            if s == delim:
                delim = None
            continue
        # lines above a block (comments, attribute entries and lists, anchors) are no two-line title
        metadata = s.startswith("//") or _ATTR_ENTRY_RE.match(s) or _BLOCK_ANCHOR_RE.match(s) \
            or (_BLOCK_ATTR_RE.match(s) and not _BLOCK_MACRO_RE.match(s))
        sect = _section_title(lines, k, setext=not metadata)
        if sect:
            underline = k + sect[2] - 1
        elif _delimiter(s) is not None:
            delim = s if not s.startswith("```") else "```"
            continue
        if sect and sect[0] == "=":
            count += 1
            if count > 1:
                return True
    return False


def parse_asciidoc(text: str, *, path: str, root: Path | None = None,
                   attributes: dict[str, str] | None = None) -> ParsedPage:
    """:func:`_parse_asciidoc` within one budget for attribute substitution."""
    with _expansion_budget(text):
        return _parse_asciidoc(text, path=path, root=root, attributes=attributes)


def _parse_asciidoc(text: str, *, path: str, root: Path | None = None,
                    attributes: dict[str, str] | None = None) -> ParsedPage:
    """Parse an AsciiDoc document into title, sections and metadata.

    ``root``: the folder of the repository, to resolve ``include::`` directives still in the text
    from the file system (the sources resolve them before, see :func:`prepare_asciidoc`);
    ``attributes``: attributes set before the document (like ``-a name=value``).
    Metadata: the header's attribute entries, ``unresolved_includes`` and ``conditions``.
    """
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    text = check_text(text, path=path)
    if root is not None and "include::" in text:
        base = Path(root)

        def read(rel: str) -> str | None:
            p = (base / rel)
            try:
                p.resolve().relative_to(base.resolve())
            except ValueError:
                return None
            return p.read_text(encoding="utf-8", errors="replace") if p.is_file() else None

        text = resolve_includes(text, path=path, read=read, attributes=attributes).text
    lines, unresolved, conditions = _preprocess(text)
    external: set[str] = set()
    if EXTERNAL_END in lines:
        cut = lines.index(EXTERNAL_END)
        external = {m.group(2).lower() for ln in lines[:cut] if (m := _ATTR_ENTRY_RE.match(ln))}
    attrs = {"sectids": "", **{k.lower(): v for k, v in (attributes or {}).items()}}
    parser = _Parser(attrs, _collect_refs(lines, attrs))
    parser.shift = int(_has_parts(lines))
    parser.in_header = True
    parser.blocks(lines, top=True)
    sections = parser.builder.finish()
    metadata: dict[str, Any] = {k: v for k, v in parser.header.items() if k not in external}
    if unresolved:
        metadata["unresolved_includes"] = unresolved
    if conditions:
        metadata["conditions"] = conditions
    title = parser.builder.title_heading or parser.attrs.get("doctitle") or humanize_stem(path)
    return ParsedPage(title=" ".join(str(title).split()), sections=sections, metadata=metadata)


def iter_unresolved(text: str) -> Iterable[str]:
    """The include targets still in ``text`` (for logging)."""
    for line in text.split("\n"):
        m = _INCLUDE_RE.match(line.rstrip())
        if m and not m.group(1):
            yield m.group(2).strip()
