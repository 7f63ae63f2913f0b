"""Parse and validate a model's cited answer; check each citation's support.

The model sees sources numbered ``[1]…[n]`` and must put a number in brackets after every
statement. The validator never ships an invented citation: a number outside the context refuses
the answer; a sentence without a citation refuses it too (strict) or is dropped (``uncited: drop``).
Citations are renumbered ``[1]``, ``[2]``… in order of first use.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Sequence
from urllib.parse import unquote

import numpy as np

from ..chunking import CJK_CLOSERS, CJK_STOPS, LIST_ITEM, ABBREVIATION_END
from ..records import Citation, Hit
from ..unicode_text import without_bidi_overrides
from .extractive import _stem, content_terms, snippet
from .markers import MARKER_RE, code_parts, neutralise_text, number, plain_code_spans

REFUSAL_RE = re.compile(r"^\s*NO_ANSWER\s*:?\s*(.*)$", re.S | re.I)
#: the space after a sentence's end: ``.``, ``!`` or ``?`` (a closing quote, bracket or emphasis may
#: follow it), a CJK ``。``, ``！`` or ``？`` (and its closers), or a closing bracket
_SENT_GAP = re.compile(r"\s+")
_SENT_END = re.compile(rf"(?:[.!?{CJK_STOPS}][\"'”’»)\]{re.escape(CJK_CLOSERS)}]*|\])$")
#: a citation marker (and the sentence's end after it) at the end of the text before a gap
#: (set apart from the word before it: ``arr[1] to`` in prose is an index, not a citation)
_ENDS_CITED = re.compile(r"(?<![\w\]])(?:\[\s*\d+\s*(?:[,;]\s*\d+\s*)*\])+[.!?]?[\"'”’»)*_]*$")


#: what a model calls the text it was given: "the provided sources", "the documentation", "the context"
#: ("a git source", "the source file" are the product's, not the prompt's)
_SOURCES = (r"(?:(?:the|these|those|your)\s+(?:\w+\s+)?(?:sources|documentation|docs|context|passages|excerpts)"
            r"|(?:provided|given|supplied|retrieved|available|above)\s+(?:\w+\s+)?"
            r"(?:sources?|documents?|documentation|docs|texts?|information|materials?|context|passages?|excerpts?)"
            r"|the\s+(?:information|details|text)\s+(?:provided|given|supplied|above))")
#: a verb of telling: what a source that lacks the answer "does not …"
_TELLING = (r"(?:specif|mention|say|said|state|describ|contain|cover|explain|answer|indicat|detail|address|discuss|"
            r"document|tell|told|clarif|list|give|gave|provide|include|show|reference)\w*")
_NOT = r"(?:\s+not|n['’]t)"
#: a statement that says the sources do not answer (English), not something about the product:
#: "The provided sources do not specify …", "… is not mentioned in the documentation", "There is no
#: information about … in the sources", "I could not find …"
SAYS_NOT_COVERED = re.compile(
    rf"\b{_SOURCES}\b(?!\s+(?:folder|file|director|page|site|tree|repo))[^.;:]{{0,40}}?\b(?:do|does|did|could|can|will){_NOT}\s+(?:\w+\s+)?{_TELLING}"
    rf"|\b(?:not|n['’]t|never)\s+(?:\w+\s+)?(?:be\s+|been\s+)?{_TELLING}\b[^.;:]{{0,80}}?\b(?:in|by|from|within)\s+"
    rf"(?:\w+\s+){{0,3}}?{_SOURCES}\b"
    rf"|\bno\s+(?:\w+\s+){{0,3}}?(?:information|mention|details?|data|indication|reference)\b[^.;:]{{0,80}}?\b{_SOURCES}\b"
    rf"|\b{_SOURCES}\b[^.;:]{{0,40}}?\b(?:contains?|has|have|gives?|provides?|includes?)\s+no\b"
    rf"|\b(?:I|we)\s+(?:could|can|did|do|was|were){_NOT}\s+(?:\w+\s+)?(?:find|locate|see)\b", re.I)


def says_not_covered(statement: str) -> bool:
    """Whether ``statement`` says, in English words, that the sources do not answer: the refusal a
    model writes instead of the prompt's ``NO_ANSWER:`` line, citing a source anyway."""
    return bool(SAYS_NOT_COVERED.search(statement))


class CitationError(ValueError):
    """The model's answer cannot be shipped (an invented or missing citation)."""


@dataclass(slots=True)
class Validated:
    refused: bool
    answer: str
    citations: list[Citation] = field(default_factory=list)
    reason: str | None = None  # why refused / what was dropped
    dropped: int = 0
    sentences: list[tuple[str, list[int]]] = field(default_factory=list)  # (text, new numbers)


def ends_with_block(statement: str) -> bool:
    """The statement ends with a code block or a Markdown table: a marker after it goes on a line of its
    own (text after a closing fence keeps the fence from closing; after a table row it is a cell)."""
    last = statement.rstrip().rsplit("\n", 1)[-1].strip()
    return last.endswith(("```", "~~~")) or (last.startswith("|") and "\n" in statement.strip())


def _table_runs(part: str) -> list[tuple[bool, str]]:
    """``part`` as (is a Markdown table, text) pieces: a table is two or more lines in a row that start
    with ``|``."""
    out: list[tuple[bool, str]] = []
    lines = part.split("\n")
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].lstrip().startswith("|"):
            j += 1
        if j - i >= 2:
            out.append((True, "\n".join(lines[i:j])))
            i = j
            continue
        k = max(j, i + 1)
        while k < len(lines) and not (lines[k].lstrip().startswith("|") and k + 1 < len(lines)
                                      and lines[k + 1].lstrip().startswith("|")):
            k += 1
        text = "\n".join(lines[i:k])
        if out and not out[-1][0]:
            out[-1] = (False, out[-1][1] + "\n" + text)
        else:
            out.append((False, text))
        i = k
    return out


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S")
#: a piece the sentence splitter cut after an abbreviation (chunking's, :data:`ABBREVIATION_END`: "e.g.",
#: "Fig."), "etc." or a bare number (a list's "2.") is joined to the next one: in a model's statement a
#: join after "etc." only makes one sentence of two under the same citation
_CUT_TOO_SOON = re.compile(r"(?:\betc\.|^\W*\d{1,3}\.)$", re.I)
#: a marker next: the sentence before it is the one it cites (``Sentence. [1][2]``)
_MARKER_NEXT = re.compile(r"\[\s*\d+\s*(?:[,;]\s*\d+\s*)*\]")
_MARKER = _MARKER_NEXT.pattern
#: a sentence end with no space after it: a CJK full stop, exclamation or question mark (with the closing
#: quotes and brackets and the markers after it), or the stop after a marker set apart from the word before
#: it, before a letter (``8080 [1].It``); a URL, ``1.2.3`` or ``a.md`` has neither
_GLUED_END = re.compile(rf"[{CJK_STOPS}]+[{re.escape(CJK_CLOSERS)}]*(?:{_MARKER})*(?!\s|{_MARKER})(?=.)"
                        rf"|(?<![\w\]])(?:{_MARKER})+[.!?][\"'”’»)]*(?=[^\W\d_])")


def _sentences(line: str) -> list[str]:
    """The sentences of one line: :func:`_sentences_at_gaps` of each piece between the sentence ends that
    need no space after them (:data:`_GLUED_END`), which are never inside code: a model answering in
    Chinese or Japanese writes no space after ``。``, and ``8080 [1].It also …`` is two sentences."""
    from .markers import code_ranges

    ends = [m.end() for m in _GLUED_END.finditer(line)]
    if not ends:
        return _sentences_at_gaps(line)
    code = code_ranges(line) if "`" in line else []
    code_starts = [a for a, _ in code]
    out: list[str] = []
    start = 0
    for at in ends:
        k = bisect.bisect_left(code_starts, at) - 1  # the last code range that starts before the end
        if not (k >= 0 and at < code[k][1]):
            out.extend(_sentences_at_gaps(line[start:at]))
            start = at
    out.extend(_sentences_at_gaps(line[start:]))
    return out


def _sentences_at_gaps(line: str) -> list[str]:
    """The sentences of one line. A sentence ends at ``.``, ``!`` or ``?`` and a space before anything
    but a lower-case letter or a marker (a curly quote, a link, ``_``, ``<`` or a capital outside ASCII
    start sentences too: each must carry its own citation; ``U.S. region``, ``Wait... then`` do not),
    and after a citation marker before anything but another marker; a closing bracket that is no
    marker ends one before a capital, a digit, a quote or code. Never inside code; the text after an
    abbreviation (e.g., vs., a list's "2.") stays in its sentence. Linear in the line's length: each
    gap looks at the few characters before it."""
    from .markers import code_ranges

    code = code_ranges(line) if "`" in line else []
    code_starts = [a for a, _ in code]
    pieces: list[str] = []
    start = 0
    for gap in _SENT_GAP.finditer(line):
        at, nxt = gap.start(), line[gap.end():gap.end() + 1]
        if at <= start or not nxt or _MARKER_NEXT.match(line, gap.end()):
            continue
        cited = _ENDS_CITED.search(line, max(start, at - 200), at) is not None
        end = _SENT_END.search(line, max(start, at - 16), at)
        k = bisect.bisect_left(code_starts, at) - 1  # the last code range that starts before the gap
        if code and k >= 0 and at < code[k][1] and not (cited and end is not None and end.group()[0] != "]"):
            continue  # never inside a code span, unless a marker and a stop end it: a backtick left open
        if not cited:
            if end is None:
                continue
            if end.group()[0] in CJK_STOPS:
                pass  # a CJK sentence end ends its sentence whatever follows
            elif end.group().startswith("]"):
                if not (nxt.isupper() or nxt in "0123456789\"'(`*"):
                    continue  # `items[i] is` in prose: a bracket, not the end of a sentence
            elif nxt.islower():
                continue
        pieces.append(line[start:at].strip())
        start = gap.end()
    pieces.append(line[start:].strip())
    out: list[list[str]] = []  # each sentence's pieces (joined once: a join per piece was quadratic)
    for p in (p for p in pieces if p):
        last = out[-1][-1] if out else ""
        if out and (_CUT_TOO_SOON.search(last) or ABBREVIATION_END.search(last, max(0, len(last) - 16))) \
                and not _ENDS_CITED.search(last, max(0, len(last) - 200)):
            out[-1].append(p)
        else:
            out.append([p])
    return [" ".join(ps) for ps in out]


#: a statement's closing markers after its stop, and the punctuation after them
_MARKERS_AFTER_STOP = re.compile(r"(?<=[.!?])[ \t]+((?:\[\s*\d+\s*(?:[,;]\s*\d+\s*)*\][ \t]*[,;]?[ \t]*)+)[.,;:]*"
                                 r"(?=[ \t]*$)")
#: a piece that is only markers (a sentence's markers after its end: ``[1][2]``, ``[1].``, ``[1], [2]``)
_ONLY_MARKERS = re.compile(r"(?:\[\s*\d+\s*(?:[,;]\s*\d+\s*)*\][\s,;.!?]*)+")


#: a fenced block in a model's answer: a run of backticks to the next run at least as long (CommonMark's
#: closing fence), so a ```` block that shows a ``` block is one block
_CODE_BLOCK_RE = re.compile(r"((`{3,})[\s\S]*?(?<!`)\2`*)")


def statements(text: str) -> list[tuple[str, str]]:
    """(separator before it, statement) for each statement of an answer: sentences, with a code block,
    a Markdown table or a list item kept whole; a block belongs to the statement before it (the one
    that introduces it). The separator keeps the answer's layout: ``"\n\n"`` before a new paragraph,
    ``"\n"`` before a list item or a new line, ``" "`` between sentences of a line."""
    out: list[tuple[str, str]] = []
    gap = ""  # the separator the next statement gets

    def add(sep: str, stmt: str) -> None:
        out.append(("" if not out else sep, stmt))

    # text and blocks, alternately (split gives each block's opening run too, the third of every three)
    parts = [p for k, p in enumerate(_CODE_BLOCK_RE.split(text)) if k % 3 != 2]
    for i, part in enumerate(parts):
        if i % 2:
            if out:
                out[-1] = (out[-1][0], out[-1][1] + "\n" + part)
            else:
                add("", part)
            gap = "\n"
            continue
        if i and part.startswith("\n"):  # the line break that ends the closing fence's line
            part = part[1:]
        for is_table, piece in _table_runs(part):
            if is_table:
                table = piece.strip()
                if out:  # after a blank line: a table cannot interrupt a paragraph in Markdown
                    out[-1] = (out[-1][0], out[-1][1] + "\n\n" + table)
                else:
                    add("", table)
                gap = "\n"
                continue
            for line in piece.split("\n"):
                if not line.strip():
                    if out:
                        gap = "\n\n"
                    continue
                first = True
                # a nested list item keeps its indentation (in its separator: statements are stripped)
                indent = line[: len(line) - len(line.lstrip())] if LIST_ITEM.match(line) else ""
                for sent in _sentences(line):
                    if _ONLY_MARKERS.fullmatch(sent) and out:  # markers that landed on their own line
                        sent = "".join(f"[{g}]" for g in MARKER_RE.findall(sent))  # their punctuation is no text
                        prev_sep, prev = out[-1]
                        out[-1] = (prev_sep, f"{prev}{chr(10) if ends_with_block(prev) else ' '}{sent}")
                        continue
                    add((gap or "\n") + indent if first else " ", sent)
                    first, gap = False, ""
                gap = gap or "\n"
    return out


#: what a removed marker leaves: "(see )", "( )", "According to , …"
_EMPTY_PARENS = re.compile(r"\s+\(\s*(?:(?:see|see also|cf\.?|source|sources|from|in)\s*:?\s*)?\)", re.I)
_DANGLING = re.compile(r"\b(according to|as (?:described|explained|shown|noted|stated|mentioned|documented) in|"
                       r"see(?: also)?|per)\s*(?=[,.;:!?]|$)", re.I)


def _tidy(text: str) -> str:
    """Text whose markers were removed, without what they leave behind: no empty parentheses, no space
    before punctuation, and a phrase that pointed at a marker ("According to [2], …") pointing at the
    documentation instead."""
    text = _EMPTY_PARENS.sub("", text)
    text = _DANGLING.sub(lambda m: f"{m.group(1)} the documentation", text)
    text = re.sub(r"([.!?])\s+[.,;:]+(?=\s|$)", r"\1", text)  # "Sentence. [1]." lost its marker: one stop
    return re.sub(r"\s+([.,;:!?。！？｡，、；：])", r"\1", text)


def split_statements(text: str) -> list[str]:
    """The statements of an answer (see :func:`statements`)."""
    return [stmt for _, stmt in statements(text)]


def validate(output: str, hits: Sequence[Hit], *, uncited: str = "refuse") -> Validated:
    """Turn raw model output into a shippable answer or a refusal. ``hits[i]`` is source ``[i+1]``."""
    text = (output or "").strip()
    if not text:
        raise CitationError("the model returned an empty answer")
    m = REFUSAL_RE.match(text)
    if m:
        return Validated(refused=True, answer="", reason=m.group(1).strip() or "the sources don't answer it")
    renumber: dict[int, int] = {}
    kept: list[tuple[str, list[int]]] = []
    seps: list[str] = []  # the layout before each kept statement (paragraph, line, space)
    dropped = 0
    pending = ""  # the separator of a statement left out, for the next one kept
    for sep, stmt in statements(text):
        pending = max(pending, sep, key=len)
        parts = code_parts(stmt)  # text and code, alternately: `items[1]` in code is code, not a citation
        # markers that close the statement after its stop take the punctuation after them along
        # ("Done. [1]." → "Done. [1]", "Done. [1], [2]" → "Done. [1][2]"): a second stop is no text
        parts[-1] = _MARKERS_AFTER_STOP.sub(lambda m: " " + "".join(f"[{g}]" for g in MARKER_RE.findall(m.group(1))),
                                            parts[-1])  # the last part is text (code_parts alternates from text to text)
        cited = _marker_digits(parts[0::2])
        bad = [n for n in cited if not 1 <= number(n) <= len(hits)]
        if bad:
            shown = bad[0] if len(bad[0]) <= 20 else f"{bad[0][:12]}… ({len(bad[0])} digits)"
            raise CitationError(f"the model cited [{shown}], which is not one of the {len(hits)} sources it was given")
        numbers = [number(n) for n in cited]
        if not numbers:
            if re.fullmatch(r"[\W_]*", stmt) or stmt.endswith(":") or _HEADING.match(stmt):
                continue  # punctuation, a lead-in like "Steps:" or a heading carries no claim
            if uncited == "refuse":
                raise CitationError(f"the model made a statement without a citation: {snippet(stmt, 120)!r}")
            dropped += 1
            continue
        # the markers go (they are in ``new``), and so do look-alikes the model wrote ([2-3], ［2］)
        parts[0::2] = [_tidy(_unlinked(neutralise_text(p), hits)) for p in parts[0::2]]
        # no bidi control that reorders what follows it; and an isolate opened here and closed in another
        # statement would hold (and move) a marker: each statement is cleaned alone, so the answer is too
        clean = without_bidi_overrides("".join(parts).strip())
        if re.fullmatch(r"[\W_]*", clean):
            continue  # only markers and punctuation ("[1]", "[1][2]."): no claim to cite, nothing to ship
        new = []
        for n in dict.fromkeys(numbers):
            renumber.setdefault(n, len(renumber) + 1)
            new.append(renumber[n])
        kept.append((clean, new))
        seps.append(pending if kept[1:] else "")
        pending = ""
    if not kept:
        raise CitationError("no statement of the answer carried a citation")
    if all(says_not_covered(stmt) for stmt, _ in kept):
        # the whole answer says the sources lack the answer, in words: that is a refusal (``refused``
        # drives the doc-gap report and eval's refusal accuracy), whatever it cites. An answer that
        # answers and says one detail is not covered has a statement that does not, and ships.
        return Validated(refused=True, answer="", reason=snippet(kept[0][0], 200))
    citations = []
    for old, new in sorted(renumber.items(), key=lambda kv: kv[1]):
        h = hits[old - 1]
        citations.append(Citation(n=new, chunk_id=h.chunk_id, url=h.url, title=h.title, snippet=snippet(h.text),
                                  score=round(h.fused, 6), source=h.source))
    answer = _joined(seps, kept)
    placed = [n for _, nums in kept for n in nums]
    if _markers_read(answer) != placed:
        # a backtick left open in one statement pairs with one in the next over the whole answer (as
        # the chat page reads it): a marker the model put in code would show as a citation, and one
        # placed here would hide in code. Lone backticks go; if that is not enough, no answer ships.
        kept = [(_without_lone_ticks(s), nums) for s, nums in kept]
        answer = _joined(seps, kept)
        if _markers_read(answer) != placed:
            raise CitationError("the answer's code and its citation markers cannot be told apart "
                                "(backticks that do not pair up)")
    answer = _without_foreign_links(answer, hits)  # on the answer that ships, whichever way it was made
    if _markers_read(answer) != placed:
        raise CitationError("the answer's links and its citation markers cannot be told apart")
    return Validated(refused=False, answer=answer, citations=citations, dropped=dropped, sentences=kept,
                     reason=f"{dropped} uncited statement(s) dropped" if dropped else None)


#: a Markdown link or image ``[text](url "title")``, an autolink ``<scheme:…>`` or an HTML ``<a href>``
_LINK_RE = re.compile(r"(!?)\[([^\]\n]{0,500})\]\(\s*<?((?:[^()\s<>]|\([^()\s<>]*\))*)>?(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)"
                      r"|<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*)>"
                      r"|<a\s[^>]*>(.*?)</a\s*>", re.I | re.S)


def _url_key(url: str) -> tuple[str, str, int | None, str, str] | None:
    """(scheme, host, port, path, query) of an http(s) URL as a browser follows it: the host
    lower-cased and IDNA-encoded, the path percent-decoded; None for a URL with a user part
    (``https://x.org%2Fp1%23@evil.example/`` goes to evil.example) or that is no URL."""
    from urllib.parse import unquote, urlsplit

    try:
        p = urlsplit(url.strip())
        port = p.port
    except ValueError:
        return None
    if p.scheme.lower() not in ("http", "https") or "@" in p.netloc or not p.hostname:
        return None
    host = p.hostname.lower().rstrip(".")
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        pass
    return p.scheme.lower(), host, port, unquote(p.path).rstrip("/") or "/", p.query


def _allowed_link(url: str, hits: Sequence[Hit]) -> bool:
    """An http(s) URL of a source page (compared as a browser follows it: scheme, host, port, path and
    query; a user part never), or one written as is in a source's text. A CommonMark renderer gives a
    link's target with its non-ASCII characters percent-encoded (``git-blame.txt—ignore`` is
    ``git-blame.txt%E2%80%94ignore``), the address a browser makes of what the source wrote: that form
    counts as written too; before, such
    a link the docs give was broken up as foreign (``[ignoring revisions] (https://…)``)."""
    key = _url_key(url)
    if key is None:
        return False
    # only escapes of non-ASCII bytes are read back: an escaped delimiter (``%2F``, ``%23``, ``%40``) is
    # another address (``https://x.org%2Fp1%23@evil.example`` goes to evil.example)
    forms = {url, re.sub(r"(?:%[89A-Fa-f][0-9A-Fa-f])+", lambda m: unquote(m.group(0)), url)}
    written = re.compile("(?:" + "|".join(re.escape(f) for f in forms) + r")(?![\w/.~%?#=&+:@-])")  # a whole URL
    return any(key in (_url_key(h.url), _url_key(h.page_url)) or written.search(h.text) for h in hits)


#: an HTML tag that runs or loads something by itself (a script, a frame), or any tag with an
#: attribute that links, loads or runs (href, src, on…, style …); an attribute-less ``<source>`` or
#: ``<input>`` in prose is a placeholder, not HTML that does anything
_ACTIVE_NAMES = ("script|style|iframe|frame|frameset|object|embed|applet|meta|base|link|animate|animatemotion|"
                 "animatetransform|set|portal")
_ACTIVE_ATTRS = "on\\w+|href|src|srcset|action|formaction|xlink:href|style|data|poster|background"
#: a tag as HTML reads it, up to the first ``>`` outside quotes (a quoted value may hold ``>``:
#: ``<a title=">" href=…>``); possessive, so a tag that never closes is given up in one pass
_TAG = re.compile(r"""</?[A-Za-z](?:"[^"]*"|'[^']*'|[^<>"'])*+>""")
_ACTIVE_NAME = re.compile(rf"</?(?:{_ACTIVE_NAMES})\b", re.I)
_ACTIVE_ATTR = re.compile(rf"\b(?:{_ACTIVE_ATTRS})\s*=", re.I)
_ATTRS_START = re.compile(r"<[A-Za-z][\w-]*[\s/]")
_QUOTED = re.compile(r"""("[^"]*"|'[^']*')""")


def _active(tag: str) -> bool:
    """Whether ``tag`` (a match of :data:`_TAG`) runs or loads something: an active element, or an
    active attribute outside its quoted values (after the name, ``<a/href=…>`` as browsers read it)."""
    if _ACTIVE_NAME.match(tag):
        return True
    start = _ATTRS_START.match(tag)
    return bool(start) and bool(_ACTIVE_ATTR.search(_QUOTED.sub('""', tag[start.end() - 1:])))


def _carries_nothing(tag: str) -> bool:
    """A tag with no attribute that links, loads, runs or redirects (``href``, ``src``, ``on…``, ``style``,
    a ``<meta>``'s ``content``) and no address in it: shown as text, it shows nothing a reader could follow."""
    return not (_ACTIVE_ATTR.search(tag) or re.search(r"\bcontent\s*=|://|\bjavascript:", tag, re.I))


def _drop_active_tags(text: str, *, keep_bare: bool = False) -> str:
    """``text`` without its active tags (a lone attribute-less one kept with ``keep_bare``). One pass
    over the text: the check was a regex that backtracked quadratically on a tag left open."""
    def repl(m: re.Match) -> str:
        tag = m.group(0)
        # with ``keep_bare`` (the answer's own text, whose every tag is then written ``&lt;``), a tag of an
        # active element that carries no address (``<object object>``, a Python repr in an API signature,
        # ``cli_group=<object object>``) stays as text: only a target or a handler must not be shown
        if _active(tag) and not (keep_bare and (_BARE_TAG.fullmatch(tag) or _carries_nothing(tag))):
            return ""
        # a tag kept (to be shown as text) loses the active tags in its quoted values too:
        # ``<b title="<meta … url=https://…>">`` would show the refresh's URL as text
        return _QUOTED.sub(lambda q: _drop_active_tags(q.group(0)), tag) if "<" in tag[1:] else tag
    return _TAG.sub(repl, text)


#: an autolink, ``<scheme:…>`` or ``<name@host>``: its text without the angle brackets
_AUTOLINK = re.compile(r"<([A-Za-z][\w+.-]{1,31}:[^<>\s]*|[^<>\s@]+@[^<>\s@]+)>")
#: a link reference definition ("[g]: https://…"), which makes ``[text][g]`` and ``[g]`` links; group 2
#: is its destination when it is a plain URL alone on the line (a title after it is read as foreign)
_LINK_DEFINITION = re.compile(r"(?m)^ {0,3}\[[^\]\n]+\]:[ \t]*(<?(https?://[^\s<>]+)>?[ \t]*(?=\n|$)|\S.*)(?:\n|$)")
#: the ``](`` that opens a link's destination; group 2 is the destination when it is a plain URL
#: closed right after (``](https://…)``), where nested brackets, spaces or a title may hide another
_DESTINATION = re.compile(r"\]\((\s*(https?://[^\s()<>]+)\))?")


#: raw HTML an answer may keep as it is: a lone tag with no attributes (``<kbd>``, ``<br/>``, a
#: placeholder such as ``<source>`` or ``List<String>``), of no element that runs or loads anything
_BARE_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9-]*)\s*/?>")


def _tokens(text: str) -> list:
    """Every token a CommonMark renderer makes of ``text``, inline ones included, in order. CommonMark's
    preset skips blocks nested past 20 levels (``> `` 21 times), where other renderers still make links:
    parsed as deep as any renderer goes."""
    from markdown_it import MarkdownIt

    out: list = []

    def walk(tokens) -> None:  # noqa: ANN001 - markdown_it tokens
        for t in tokens:
            out.append(t)
            if t.children:
                walk(t.children)

    try:
        walk(MarkdownIt("commonmark", {"maxNesting": 1000}).parse(text))
    except RecursionError:  # nested past what Python's stack allows (some 500 levels): not read, not shipped
        raise CitationError("the model's answer is nested too deeply to check its links") from None
    return out


def _html_tokens(text: str) -> list[str]:
    """The raw HTML a CommonMark renderer passes through as it is (``html_inline``, ``html_block``)."""
    return [t.content for t in _tokens(text) if t.type in ("html_inline", "html_block")] if "<" in text else []


def _inert_html(answer: str) -> str:
    """``answer`` with no raw HTML but lone attribute-less tags: where a model wrote any other (an
    attribute, a comment, CDATA, a declaration, a tag left open), every ``<`` that opens a tag outside
    code is written ``&lt;``, which a Markdown client shows as ``<`` and no browser reads as a tag.
    HTML parsers disagree on comments and CDATA (``<!--><img onerror>-->`` is a comment to Python and an
    image to a browser), so what is not plainly inert is not read but disarmed."""
    def inert(html: str) -> bool:
        m = _BARE_TAG.fullmatch(html.strip())
        return bool(m) and not re.fullmatch(_ACTIVE_NAMES, m.group(1), re.I)

    parts = code_parts(answer)
    # what a browser reads as markup, outside code: CommonMark takes no tag for ``<img src=x
    # onerror=alert('y')>`` (an unquoted value may not hold a quote), a browser runs its handler
    browser = [m.group(0) for p in parts[0::2] for m in _TAG.finditer(p)]
    if all(inert(h) for h in _html_tokens(answer)) and not any(_active(h) for h in browser):
        return answer
    # an active tag as read plainly goes whole (a refresh <meta>: not even its URL as text), a lone
    # one stays text (``<script>`` as a placeholder); then every tag left opens nothing
    parts[0::2] = [re.sub(r"<(?=[A-Za-z!/?])", "&lt;",
                          _drop_active_tags(p, keep_bare=True))
                   for p in parts[0::2]]
    fixed = "".join(parts)
    if not all(inert(h) for h in _html_tokens(fixed)):
        raise CitationError("the model's answer holds raw HTML that cannot be shown as text")
    return fixed


def _rendered_links(text: str) -> list[str]:
    """The targets a CommonMark renderer makes links, images or HTML with a target of in ``text``."""
    out: list[str] = []
    for t in _tokens(text):
        if t.type == "link_open":
            out.append(str(t.attrGet("href") or ""))
        elif t.type == "image":
            out.append(str(t.attrGet("src") or ""))
        elif t.type in ("html_inline", "html_block") and any(_active(m.group(0)) for m in _TAG.finditer(t.content)):
            out.append(t.content.strip()[:200])
    return out


def _without_foreign_links(answer: str, hits: Sequence[Hit]) -> str:
    """``answer`` with no link, image or active HTML that a client rendering it as Markdown would make
    to a target no source gives. :func:`_unlinked` takes the usual forms; what it cannot read (a
    reference-style link, nested brackets, an angle destination with a space, a title in
    parentheses, an unclosed ``<a>``) is found by rendering the answer as CommonMark does, and then
    broken outside code: link definitions go, ``](`` gets a space, active tags go. A link still
    rendered after that refuses the answer."""
    answer = _inert_html(answer)
    foreign = [u for u in _rendered_links(answer) if not _allowed_link(u, hits)]
    if not foreign:
        return answer

    def source_link(m: re.Match) -> bool:  # a destination read plainly that a source gives
        return m.group(2) is not None and _allowed_link(m.group(2), hits)

    def broken(text: str, *, every: bool) -> str:
        parts = code_parts(text)
        for i in range(0, len(parts), 2):
            p = _AUTOLINK.sub(r"\1", _drop_active_tags(parts[i]))
            p = _LINK_DEFINITION.sub(lambda m: m.group(0) if not every and source_link(m) else "", p)
            parts[i] = _DESTINATION.sub(lambda m: m.group(0) if not every and source_link(m) else
                                        m.group(0).replace("](", "] (", 1), p)
        return "".join(parts)

    # first only what does not plainly go to a source page, so that the answer's links to the docs stay
    # links; if the renderer still makes a foreign link of what is left, every link goes
    for every in (False, True):
        fixed = _inert_html(broken(answer, every=every))
        left = [u for u in _rendered_links(fixed) if not _allowed_link(u, hits)]
        if not left:
            return fixed
    raise CitationError(f"the model's answer links to {left[0][:120]!r}, which no source gives")


def _unlinked(text: str, hits: Sequence[Hit]) -> str:
    """``text`` without the links the model made to a URL of its own: a Markdown link or image, an
    autolink or an HTML anchor keeps its text (an image its alt text), not its target, unless the
    target is an http(s) URL of a source or one written in a source's text. A client that renders
    the answer as Markdown (an agent over MCP) would otherwise show a live ``javascript:`` or
    phishing link under the docs' name. Code is left as written: a client shows it as text, never as a
    link, and a quoted code block whose ``<a href=…>`` or ``[text](url)`` lost its markup was no longer
    the code its chunk holds (Node's resolver pseudocode links to its ESM algorithm in a fenced block)."""
    if "](" not in text and "<" not in text:
        return text
    if "`" in text:
        parts = code_parts(text)
        if len(parts) > 1:
            parts[0::2] = [_unlinked(p, hits) for p in parts[0::2]]
            return "".join(parts)

    def allowed(url: str) -> bool:
        return _allowed_link(url, hits)

    def repl(m: re.Match) -> str:
        if m.group(3) is not None:  # [text](url)
            return m.group(0) if not m.group(1) and allowed(m.group(3)) else m.group(2)
        if m.group(4) is not None:  # <scheme:…>
            return m.group(0) if allowed(m.group(4)) else ""
        return m.group(5) or ""  # <a href=…>text</a>: the text

    out = _LINK_RE.sub(repl, text)
    return _single_spaces(out) if out != text else out


def _joined(seps: list[str], kept: list[tuple[str, list[int]]]) -> str:
    """The statements with their markers; a statement that ends with a code block gets them on the
    line after the closing fence (text after a fence on its line would keep it from closing)."""
    return "".join(f"{sep}{s}{chr(10) if ends_with_block(s) else ' '}{''.join(f'[{n}]' for n in nums)}"
                   for sep, (s, nums) in zip(seps, kept))


def _marker_digits(texts: Sequence[str]) -> list[str]:
    """The numbers the citation markers in ``texts`` (pieces of text outside code) write, in order."""
    return [n.strip() for p in texts for grp in MARKER_RE.findall(p) for n in re.split(r"[,;]", grp)]


def _markers_read(answer: str) -> list[int]:
    """The citation numbers a reader of the whole answer sees outside code, in order."""
    return [number(n) for n in _marker_digits(code_parts(answer)[0::2])]


def _single_spaces(text: str) -> str:
    """``text`` with the runs of spaces that a removed piece left between two words made one."""
    return re.sub(r"(?<=\S)[ \t]{2,}(?=\S)", " ", text)


def _without_lone_ticks(statement: str) -> str:
    """``statement`` without the backticks that open no code span or block within it."""
    parts = code_parts(statement)
    parts[0::2] = [_single_spaces(p.replace("`", "")) if "`" in p else p for p in parts[0::2]]
    return "".join(parts)


def lexical_support(sentence: str, source: str) -> float:
    """Share of the sentence's content words (stemmed) found in the source text."""
    terms = {_stem(t) for t in content_terms(sentence)}
    if not terms:
        return 1.0
    vocab = {_stem(t) for t in content_terms(source)}
    return len(terms & vocab) / len(terms)


#: a number as written: digits with ``.``, ``,`` or ``:`` between groups (8080, 1.2.3, 04:00, 8,080), in
#: a word or not (v2, utf8, sha256, 5-minute); read in any script's digits
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
#: an English negation: a claim and its negation share every content word, and an embedding model
#: puts them close together, so neither the overlap nor the similarity tells them apart
_NEGATION = re.compile(r"\b(?:not|no|never|cannot|none|nothing|nobody|neither|nor|without)\b|n['’]t\b", re.I)


def _numbers(text: str) -> set[str]:
    """The numbers of ``text``, each group without its leading zeros (``04:00`` and ``4:00`` are one)."""
    return {re.sub(r"(?<!\d)0+(?=\d)", "", m) for m in _NUMBER.findall(text)}


def _claim(statement: str) -> str:
    """The statement as a claim: without the number of its list item (``2. Run it``), which counts
    steps, not anything the source says."""
    return LIST_ITEM.sub("", statement, count=1)


def unbacked_numbers(statement: str, sources: Sequence[str]) -> list[str]:
    """The numbers of ``statement`` that none of ``sources`` (the chunks it cites) contains: a port,
    version, size or identifier the model changed or made up. Numbers are compared as written
    (``8,080`` is not ``8080``, ``ten`` not ``10``)."""
    have = set().union(*(_numbers(s) for s in sources)) if sources else set()
    return sorted(_numbers(_claim(statement)) - have)


def negation_mismatch(statement: str, source: str) -> bool:
    """Whether ``statement`` negates what ``source`` says, or says what it negates (English negations:
    not, no, never, n't, without …), by the source's sentence most like it (the most content words in
    common): a negated statement needs a negated sentence that shares as much of what it negates (its
    words after the negation) as any sentence without negation does; a statement without negation is
    contradicted when a negated sentence holds all its words and no sentence without negation does
    (a tie is no contradiction).
    A subject the source names in other sentences too ("Acme") does not make a negation it never
    makes supported."""
    from .extractive import _sentences_and_overlap

    terms = {_stem(t) for t in content_terms(statement)}
    if not terms:
        return False
    said = [(bool(_NEGATION.search(x)), {_stem(t) for t in content_terms(x)}) for x in _sentences_and_overlap(source)[0]]
    neg = _NEGATION.search(statement)
    if neg:  # what it negates: the words after the negation ("Acme runs on Linux but not on Windows")
        terms = {_stem(t) for t in content_terms(statement[neg.end():])} or terms
    best = {n: max((len(words & terms) for m, words in said if m == n), default=0) for n in (True, False)}
    # a tie is no contradiction: the check flags what the source plainly says otherwise, not what it leaves open
    # a statement without negation is contradicted only by a negated sentence holding all its words: one
    # that shares fewer ("Caching is disabled by default" and "Caching is not enabled by default") may
    # say the same thing in other words
    return (best[True] == 0 or best[True] < best[False]) if neg else best[True] == len(terms) > best[False]


def mark_support(v: Validated, hits_by_chunk: dict[str, Hit], embed, *, threshold: float = 0.5) -> int:  # noqa: ANN001
    """Set ``supported`` on each citation: every sentence citing it must be supported by its text
    (lexical overlap, or embedding similarity when the wording differs), and none may contradict it: a
    number that no chunk the sentence cites contains, or a negation the chunk lacks (or the reverse),
    is unsupported whatever the overlap or similarity. Returns how many are not."""
    by_n = {c.n: c for c in v.citations}
    pairs = [(s, by_n[n]) for s, nums in v.sentences for n in nums]
    if not pairs:
        return 0
    sims = None
    lex = [lexical_support(s, hits_by_chunk[c.chunk_id].text) for s, c in pairs]
    # a number may come from any chunk the statement cites ("8080 [1] behind nginx 1.25 [2]")
    unbacked = [bool(unbacked_numbers(s, [hits_by_chunk[by_n[n].chunk_id].text for n in nums]))
                for s, nums in v.sentences for _ in nums]
    contradicts = [unbacked[i] or negation_mismatch(s, hits_by_chunk[c.chunk_id].text) for i, (s, c) in enumerate(pairs)]
    if any(x < threshold for x in lex):
        vecs = embed([s for s, _ in pairs] + [plain_code_spans(hits_by_chunk[c.chunk_id].text) for _, c in pairs])
        k = len(pairs)
        sims = [float(np.dot(vecs[i], vecs[k + i])) for i in range(k)]
    ok: dict[int, bool] = {c.n: True for c in v.citations}
    for i, (s, c) in enumerate(pairs):
        supported = not contradicts[i] and (lex[i] >= threshold or (sims is not None and sims[i] >= 0.6))
        ok[c.n] = ok[c.n] and supported
    for c in v.citations:
        c.supported = ok[c.n]
    return sum(not x for x in ok.values())
