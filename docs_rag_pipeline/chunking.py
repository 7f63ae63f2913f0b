"""Sections → chunks: split by heading, then by the embedding model's token budget, with overlap.

Chunk ids are stable (a hash of source, page URL, heading path and text), every chunk knows its
parent (the enclosing section's first chunk; a page's first chunk points to its parent page's
first chunk, linked by :func:`link_pages`).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from .records import TEXT_DIRECTIVE, Chunk, ParsedPage
from .table_row import is_row_line, row_cells

CountFn = Callable[[str], int]
#: a fence line: a run of three or more backticks (an info string after it holds none) or tildes
_FENCE = re.compile(r"^\s*(`{3,}(?=[^`]*$)|~{3,})")
#: ASCII characters that may open a sentence after ``. ``, ``! `` or ``? `` (any script's capital may too)
SENTENCE_STARTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\"'([")
#: a CJK full stop, exclamation or question mark: a sentence end with or without a space after it
CJK_STOPS = "。！？｡"
#: the closing quotes and brackets that may follow a CJK sentence end
CJK_CLOSERS = "\"'”’」』）)】》〉〕］]"
#: a sentence end: ``.!?`` and whitespace (the next character decides), or a CJK full stop, exclamation or
#: question mark (``。！？｡``), with the closing quotes and brackets that may follow it, no space needed
_SENTENCE_END = re.compile(rf"(?<=[.!?])\s+(?=\S)|(?<=[{CJK_STOPS}])(?![{CJK_STOPS}])([{re.escape(CJK_CLOSERS)}]*)\s*")
#: clause marks of CJK text (，、；): where a sentence longer than a chunk is cut before its characters
_CLAUSE_END = re.compile(r"(?<=[，、；])")
#: general English abbreviations after which a sentence goes on whatever follows (``(e.g. DNS failure, …)``,
#: ``cf. Section 2``), in any case; ``etc.`` is not one of them: it often ends a sentence
ABBREVIATIONS = ("e.g", "i.e", "cf", "vs", "approx", "incl")
#: more, as they are written (``ms.``, ``no.`` or ``CA.`` at a sentence's end are no ``Ms.``, ``No.``, ``ca.``)
CASED_ABBREVIATIONS = ("Fig", "No", "Vol", "Sec", "Ch", "Mr", "Mrs", "Ms", "Dr", "St", "viz", "resp", "et al",
                       "a.m", "p.m")
#: text that ends with one of them and its period (look at the last 16 characters: ``search(text, pos, end)``)
ABBREVIATION_END = re.compile(rf"(?i:\b(?:{'|'.join(map(re.escape, ABBREVIATIONS))})\.)$"
                              rf"|\b(?:{'|'.join(map(re.escape, CASED_ABBREVIATIONS))})\.$")


@dataclass(frozen=True, slots=True)
class Budget:
    """Token budget of a chunk's text: the model window minus special tokens and the header."""

    window: int  # the model's max sequence length (special tokens included)
    target: int | None = None  # configured target for the text; None follows the window
    overlap: int = 32

    def for_header(self, header_tokens: int) -> int:
        room = self.window - 2 - header_tokens - 1
        limit = room if self.target is None else min(self.target, room)
        return max(limit, 32)


def chunk_id_for(source: str, page_url: str, headings: Iterable[str], text: str, occurrence: int = 0) -> str:
    h = hashlib.sha256()
    for part in (source, page_url, "\x1f".join(headings), text):
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    if occurrence:
        h.update(str(occurrence).encode())
    return h.hexdigest()[:32]


def _fence_pairs(lines: list[str]) -> dict[int, int]:
    """Opening fence line → its closing line. A fence line with no closing one after it is not a
    fence: text with stray backticks (a page that shows raw Markdown, ``"``` augroup … end ```"``)
    must not turn the rest of a section into one code block."""
    marks = [(i, m.group(1), not line[m.end():].strip()) for i, line in enumerate(lines) if (m := _FENCE.match(line))]
    pairs: dict[int, int] = {}
    k = 0
    while k < len(marks):
        i, run, _ = marks[k]
        # CommonMark: the closing fence is a bare run of the same character, at least as long as the
        # opening one, so a ```` block can show a ``` block (a guide to fencing code) whole
        close = next((j for j in range(k + 1, len(marks))
                      if marks[j][2] and marks[j][1][0] == run[0] and len(marks[j][1]) >= len(run)), None)
        if close is None:
            k += 1
            continue
        pairs[i] = marks[close][0]
        k = close + 1
    return pairs


def split_blocks(text: str) -> list[str]:
    """Blank-line separated blocks, keeping fenced code blocks (with their closing fence) whole."""
    blocks: list[str] = []
    cur: list[str] = []
    lines = text.split("\n")
    pairs = _fence_pairs(lines)
    end = -1  # the closing line of the code block being read
    for i, line in enumerate(lines):
        if i <= end:
            cur.append(line)
            continue
        if i in pairs:
            end = pairs[i]
            cur.append(line)
            continue
        if line.strip():
            cur.append(line)
        elif cur:
            blocks.append("\n".join(cur))
            cur = []
    if cur:
        blocks.append("\n".join(cur))
    return [b for b in blocks if b.strip()]


def opens_sentence(ch: str, starters: frozenset[str] = SENTENCE_STARTERS) -> bool:
    """``ch`` may open a sentence: one of ``starters`` or a capital of any script (``É``, ``П``, ``Σ``)."""
    return ch in starters or (ch > "\x7f" and unicodedata.category(ch) in ("Lu", "Lt"))


#: a list item's line (``- item``, ``* item``, ``1. item``, ``2) item``)
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
#: a line that ends a sentence: ``.``, ``!`` or ``?``, and the closing quotes or brackets after it
_ENDS_SENTENCE = re.compile(r"[.!?][\"'”’)\]]*$")


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip())


def entry_lines(text: str, starters: frozenset[str] = SENTENCE_STARTERS) -> list[str]:
    """``text`` (one paragraph of a block) cut at the line breaks that end a sentence, for
    :func:`split_sentences` to cut further. The parsers join a paragraph's wrapped lines, so a line
    break inside a block separates block-level parts: a definition list's term (an API entry's
    ``is_redirect``) and its indented description, one entry and the next, a field of a field list, an
    admonition's title (``Warning``, ``See also``) and its text. Read as one text, a class's members
    (lowercase names: no sentence starts there) ran together into one "sentence". A line break ends a
    sentence when the next line starts left of it (the next entry), when the line before ends a sentence
    (``.``, ``!``, ``?``, not after an abbreviation) whatever the next line starts with, or when the
    line before ends without punctuation (a title) and the next line, at its column, opens a sentence (a
    capital, a digit, a quote, a bracket). A term stays with the first sentence of the description
    indented under it (``numfig`` / ``If true, figures … are numbered``: without its term a description
    does not say what it describes), unless that description is a list. Never inside or next to a fenced code block, and never
    between the lines of one list (an item, the items after it at its column and the lines indented
    under them): lists are read as before. A hard-wrapped line that goes on in lower case
    (``Line one with a break\nline two``) stays in its sentence."""
    lines = text.split("\n")
    if len(lines) < 2:
        return [text]
    code: set[int] = set()
    for o, c in _fence_pairs(lines).items():
        code.update(range(o, c + 1))
    run: list[int | None] = [None] * len(lines)  # the list each line belongs to (its first line)
    i = 0
    while i < len(lines):
        if i in code or not LIST_ITEM.match(lines[i]):
            i += 1
            continue
        col, j = indent_of(lines[i]), i + 1
        while j < len(lines) and lines[j].strip() and (
                j in code or indent_of(lines[j]) > col or (indent_of(lines[j]) == col and LIST_ITEM.match(lines[j]))):
            j += 1
        for k in range(i, j):
            run[k] = i
        i = j
    out: list[str] = []
    start = 0
    for k in range(len(lines) - 1):
        a, b = lines[k].rstrip(), lines[k + 1]
        if k in code or k + 1 in code or (run[k] is not None and run[k] == run[k + 1]) or not a.strip() \
                or not b.strip():
            continue
        ends = bool(_ENDS_SENTENCE.search(a)) and not ABBREVIATION_END.search(a, max(0, len(a) - 16))
        if indent_of(b) > indent_of(a) and not ends and not LIST_ITEM.match(b):
            continue  # a term and its description, indented under it (numfig / If true, …): one unit
        title = a[-1].isalnum() and opens_sentence(b.lstrip()[0], starters)
        if indent_of(a) != indent_of(b) or ends or title:
            out.append("\n".join(lines[start:k + 1]))
            start = k + 1
    out.append("\n".join(lines[start:]))
    return out


def fenced_segments(block: str) -> list[tuple[str, bool]]:
    """``block`` cut into its text and its closed fenced code blocks, in order: (piece, is it code).
    A code block is one piece with its fences, blank lines included; a fence line never closed is
    text (see :func:`_fence_pairs`)."""
    lines = block.split("\n")
    pairs = _fence_pairs(lines)
    out: list[tuple[str, bool]] = []
    text: list[str] = []
    i = 0
    while i < len(lines):
        if i in pairs:
            if text:
                out.append(("\n".join(text), False))
                text = []
            out.append(("\n".join(lines[i:pairs[i] + 1]), True))
            i = pairs[i] + 1
            continue
        text.append(lines[i])
        i += 1
    if text:
        out.append(("\n".join(text), False))
    return out


def split_sentences(text: str, starters: frozenset[str] = SENTENCE_STARTERS) -> list[tuple[str, str]]:
    """``text`` cut into sentences, each with the glue that joins it to the one before (``" "``, or
    ``""`` after a CJK sentence end written without a space). A sentence ends at ``.``, ``!`` or ``?``
    followed by whitespace and a character of ``starters`` or a capital of any script (``É``, ``Ü``,
    ``П``, ``Σ``), and after ``。``, ``！``, ``？`` (with any closing quotes or brackets) with or without
    a space, but never after an abbreviation (:data:`ABBREVIATIONS`, :data:`CASED_ABBREVIATIONS`: ``e.g. DNS``,
    ``Fig. 3``). The sentences keep their punctuation; the whitespace between them is dropped."""
    out: list[tuple[str, str]] = []
    start = 0
    glue = ""
    for m in _SENTENCE_END.finditer(text):
        if m.group(1) is None:  # ". " and the next character
            if not opens_sentence(text[m.end()], starters):
                continue
            if ABBREVIATION_END.search(text, max(start, m.start() - 16), m.start()):
                continue  # "(e.g. DNS failure, …)": the sentence goes on
            end = m.start()
        else:  # "。" and its closers
            end = m.start() + len(m.group(1))
        if end > start:
            out.append((text[start:end], glue))
        glue = " " if m.group(1) is None or m.end() > end else ""
        start = m.end()
    if start < len(text):
        out.append((text[start:], glue))
    return out


def _split_long(block: str, limit: int, count: CountFn) -> list[str]:
    """Split one block that exceeds ``limit``: by sentences (prose) or lines (code, lists, tables),
    then by words. Word-piece counts add up across whitespace joins, so every unit and word is
    counted once. Code keeps its fences: see :func:`_pack_fenced_lines`."""
    if "\n" in block:
        lines = block.split("\n")
        return _pack_fenced_lines(lines, limit, count) or _pack_table(lines, limit, count) \
            or _pack(lines, "\n", limit, count)
    sentences = split_sentences(block)
    return _pack([t for t, _ in sentences], [g for _, g in sentences], limit, count)


#: a code line that closes a bracket opened on an earlier line (``}``, ``});``, ``]``), or a comment
#: line that shows one (``// }``, ``# ]``: a printed object's end)
CLOSES_BRACKET = re.compile(r"^\s*(?:(?://|#)\s*)?[)\]}]")


def _cut_ranks(lines: list[str], pairs: dict[int, int]) -> dict[int, int]:
    """Code line → how good a cut right before it is, where a long code block must be cut (0 best):
    a reader cuts code between its top-level statements, not inside a function's body. 0: a line at
    the block's lowest indentation after a blank line (a statement, or the comment above one, set
    apart), 1: one right after a body ends (after a deeper line, or one that closes a bracket), 2:
    another line at the lowest indentation (after a statement, or after a comment: a cut there parts
    a comment from what it describes, hence last of these), 3: a line after a blank line inside a
    body. A line that closes a bracket (``}``, ``});``) never starts a piece, and the block's first
    code line is no cut (it would leave an empty code block); lines not listed are cut before only
    when nothing better is in reach."""
    ranks: dict[int, int] = {}
    for o, c in pairs.items():
        body = [i for i in range(o + 1, c) if lines[i].strip()]
        if not body:
            continue
        if any(is_prompt(lines[i]) for i in body):
            ranks.update(_session_ranks(lines, body))
            continue
        low = min(indent_of(lines[i]) for i in body)
        for prev, i in zip(body, body[1:]):
            if CLOSES_BRACKET.match(lines[i]):
                continue
            if indent_of(lines[i]) > low:
                if not lines[i - 1].strip():
                    ranks[i] = 3
            elif not lines[i - 1].strip():
                ranks[i] = 0
            else:
                ranks[i] = 1 if indent_of(lines[prev]) > low or CLOSES_BRACKET.match(lines[prev]) else 2
    return ranks


def is_prompt(line: str) -> bool:
    """``line`` is an input of an interactive Python session (a doctest, a ``pycon`` block): ``>>> …``."""
    return line.lstrip().startswith(">>>")


def _session_ranks(lines: list[str], body: list[int]) -> dict[int, int]:
    """:func:`_cut_ranks` for an interactive session (``>>>`` inputs, each followed by its output, a
    traceback's lines and its exception included): only an input starts a statement. 0: an input after a
    blank line, 1: one after an output, 2: one after another input; an output line, a ``... ``
    continuation or an exception after ``Traceback …`` is never a cut but as a last resort (at column 0
    like an input, the exception line after a traceback's indented ``...`` ranked best, and every piece of
    a long session started with the exception of the example before it)."""
    ranks: dict[int, int] = {}
    for prev, i in zip(body, body[1:]):
        if is_prompt(lines[i]):
            ranks[i] = 0 if not lines[i - 1].strip() else 2 if is_prompt(lines[prev]) else 1
    return ranks


@dataclass(frozen=True, slots=True)
class _Line:
    """One line (or a word-cut part of one) of a block packed by :func:`_pack_fenced_lines`."""

    text: str
    tokens: int
    fence: tuple[str, str] | None  # inside a closed code block: (its opening line, its closing fence)
    close: str | None  # the fence a cut right after this line must close
    opens: bool  # an opening fence line
    block: int | None  # the opening line's index of the code block it is inside
    code: bool  # a non-blank line of code (not a fence)
    rank: int | None  # how good a cut right before it is (:func:`_cut_ranks`); None: a last resort


def _pack_fenced_lines(lines: list[str], limit: int, count: CountFn) -> list[str] | None:
    """Lines packed into pieces of at most ``limit`` tokens where a cut inside a closed code block
    (a whole block, or one inside a list item) closes the fence at the end of the piece and opens it
    again, with its language, at the start of the next: no piece starts or ends inside code, and a
    piece read alone is still code. Inside code the cut moves back, at most to half the budget, to
    where a reader would cut (:func:`_cut_ranks`: between top-level statements), so a piece does not
    start inside a function's body with the end of a function the previous piece began. A line too
    long for a piece (with its fences) is cut by words into several lines. None when there is no
    closed code block, or a fence line itself is too long."""
    pairs = _fence_pairs(lines)
    if not pairs:
        return None
    inside: dict[int, tuple[str, str]] = {}  # line → (its block's opening line, the closing fence)
    block_of: dict[int, int] = {}  # line → its block's opening line index
    close_of: dict[int, str] = {}  # a line after which a cut must close a fence → that fence
    for o, c in pairs.items():
        fence = _FENCE.match(lines[o]).group(1)  # type: ignore[union-attr] - pairs open on fence lines
        for i in range(o + 1, c + 1):
            inside[i] = (lines[o], fence)
            block_of[i] = o
        for i in range(o, c):
            close_of[i] = fence
    fence_lines = set(pairs) | set(pairs.values())
    ranks = _cut_ranks(lines, pairs)
    units: list[_Line] = []
    for i, line in enumerate(lines):
        fence = inside.get(i)
        room = limit - (count(fence[0]) + count(fence[1]) if fence else 0)
        code = fence is not None and i not in fence_lines and bool(line.strip())
        n = count(line)
        if n <= room:
            units.append(_Line(line, n, fence, close_of.get(i), i in pairs, block_of.get(i), code, ranks.get(i)))
        elif i in fence_lines or room < 1:
            return None
        else:
            units.extend(_Line(part, count(part), fence, close_of.get(i), False, block_of.get(i), code,
                               ranks.get(i) if k == 0 else None)
                         for k, part in enumerate(_pack([line], " ", room, count)))
    pieces: list[str] = []
    cur: list[_Line] = []
    used = 0
    for u in units:
        closing = count(u.close) if u.close else 0
        if cur and used + u.tokens + closing > limit:
            if u.fence and cur[-1].opens and len(cur) > 1:
                # the cut falls right after the opening fence: cut before it, so that no piece ends
                # with an empty code block and the code starts the next one with its fence
                pieces.append("\n".join(x.text for x in cur[:-1]))
                cur = [cur[-1]]
            elif u.fence:  # a cut inside code: close it here, open it again in the next piece
                k = _code_cut(cur, u, limit - closing, count(u.fence[0]), limit // 2)
                head = cur[:k]
                while head and head[-1].fence and not head[-1].text.strip():
                    head.pop()  # the blank lines the cut falls after end no piece
                pieces.append("\n".join([*(x.text for x in head), u.fence[1]]))
                cur = [_Line(u.fence[0], count(u.fence[0]), None, None, True, None, False, None), *cur[k:]]
            else:
                pieces.append("\n".join(x.text for x in cur))
                cur = []
            used = sum(x.tokens for x in cur)
        cur.append(u)
        used += u.tokens
    if cur:
        pieces.append("\n".join(x.text for x in cur))
    return [p for p in pieces if p.strip()]


def _code_cut(cur: list[_Line], nxt: _Line, room: int, reopen: int, least: int) -> int:
    """Where to cut ``cur`` (a piece that ``nxt``, a line of its code block, does not fit in):
    the index of its first line that moves to the next piece. The best-ranked cut (:func:`_cut_ranks`)
    among those that leave at least ``least`` tokens and a line of the block's code before the cut,
    and let the lines after it, the reopened fence (``reopen`` tokens) and ``nxt`` fit in ``room``;
    the latest of equals. Right before ``nxt`` (the greedy cut) when nothing ranks better."""
    best, best_rank = len(cur), 4 if nxt.rank is None else nxt.rank
    found, found_rank = best, 4  # the best-ranked earlier cut, the latest of equals
    head, tail = 0, sum(x.tokens for x in cur)  # tokens of cur[:k] and cur[k:]
    code_before = False
    for k, x in enumerate(cur):
        if x.rank is not None and x.rank <= found_rank and x.block == nxt.block and code_before \
                and head >= least and reopen + tail + nxt.tokens <= room:
            found, found_rank = k, x.rank
        head += x.tokens
        tail -= x.tokens
        code_before |= x.code and x.block == nxt.block
    return found if found_rank < best_rank else best


def _pack_table(lines: list[str], limit: int, count: CountFn) -> list[str] | None:
    """A table's rows (``a | b | c`` lines, as the parsers write them; the first is the header row)
    packed into pieces that each start with the header row, as a cut code block opens its fence again:
    a piece read alone (in an answer, drawn as a table; by the models) still says what its columns
    are. None when the block is not a table of a header and two rows or more, or its header takes
    more than a quarter of the budget."""
    if len(lines) < 3 or not all(is_row_line(ln) for ln in lines):  # "| 40" too: an empty first cell
        return None
    header = lines[0]
    room = limit - count(header)
    if count(header) > limit // 4:
        return None
    rows: list[str] = []
    for ln in lines[1:]:
        key = row_cells(ln)[0]
        key_tokens = count(key) + 2
        if count(ln) <= room or key_tokens > room // 4:
            rows.append(ln)
            continue
        # a row longer than a piece is cut at its sentences; each later part is a row of its own under
        # the row's first cell (its key: `2` of an exit status table), else it would stand under the
        # header as a line of text that no row holds, and the key it describes would be in another piece
        first, *rest = _pack([ln], " ", room - key_tokens, count)
        lead = key.replace("|", "\\|")
        rows.extend([first, *(f"{lead} | {part}" if lead else f"| {part}" for part in rest)])
    return [f"{header}\n{piece}" for piece in _pack(rows, "\n", room, count)]


def _pack(units: list[str], joiner: str | list[str], limit: int, count: CountFn) -> list[str]:
    """Units (lines or sentences) packed greedily into pieces of at most ``limit`` tokens; ``joiner``
    joins them, or is the glue before each unit (:func:`split_sentences`). A unit longer than that is
    cut at its sentence ends (a line of a list or table holds whole paragraphs: it was cut by words,
    inside a sentence), else at its clause marks (``，、；``, CJK text has no spaces), then by words,
    and a word longer than that by characters."""
    pieces: list[str] = []
    cur: list[str] = []
    used = 0
    glues = [joiner] * len(units) if isinstance(joiner, str) else joiner

    def joined(items: list[str], first: int) -> str:  # cur, whose first unit is units[first]
        return items[0] + "".join(glues[first + k] + item for k, item in enumerate(items[1:], 1))
    counted: dict[str, int] = {}  # a word's tokens, counted once however often it comes back

    def word_count(w: str) -> int:
        n = counted.get(w)
        if n is None:
            n = counted[w] = count(w)
        return n

    first = 0  # the index of cur's first unit
    for i, unit in enumerate(units):
        n = count(unit)
        parts: list[str] = []
        if n > limit:  # cut at sentence ends first (a long list item or table row is one line), then clauses
            sents = split_sentences(unit)
            clauses = [c for c in _CLAUSE_END.split(unit) if c] if len(sents) < 2 else []
            parts = (_pack([t for t, _ in sents], [g for _, g in sents], limit, count) if len(sents) > 1
                     else _pack(clauses, "", limit, count) if len(clauses) > 1 else [])
        if parts:
            if cur:
                pieces.append(joined(cur, first))
                cur, used = [], 0
            pieces.extend(parts[:-1])
            unit = parts[-1]
            n = count(unit)
        if n > limit:
            buf: list[str] = []
            buf_n = 0
            words: list[tuple[str, int]] = []
            for w in unit.split(" "):  # a "word" longer than the budget (a blob, a URL) is cut by characters
                wn = word_count(w)
                if wn <= limit:
                    words.append((w, wn))
                    continue
                step = max(1, len(w) * limit // (2 * wn))
                words.extend((part, word_count(part)) for part in (w[i:i + step] for i in range(0, len(w), step)))
            for w, wn in words:
                if buf and buf_n + wn > limit:
                    if cur:
                        pieces.append(joined(cur, first))
                        cur, used = [], 0
                    pieces.append(" ".join(buf))
                    buf, buf_n = [], 0
                buf.append(w)
                buf_n += wn
            unit, n = " ".join(buf), buf_n
        if cur and used + n > limit:
            pieces.append(joined(cur, first))
            cur, used = [], 0
        if not cur:
            first = i
        cur.append(unit)
        used += n
    if cur:
        pieces.append(joined(cur, first))
    return [p for p in pieces if p.strip()]


def _tail(text: str, tokens: int, count: CountFn) -> str:
    """The last words of ``text`` worth about ``tokens`` tokens (the overlap), never inside code."""
    if tokens <= 0 or _FENCE.match(text) or "```" in text:
        return ""
    words = list(re.finditer(r"\S+", text))
    k = 0
    used = 0
    for w in reversed(words):  # word-piece counts add up across spaces: count each word once
        n = count(w.group())
        if used + n > tokens:
            break
        used += n
        k += 1
    if not k or k == len(words):
        return ""
    if "`" in text:  # nor inside a code span (`docs-rag ask --json`): its opening backtick comes along, or none of it
        from .answering.markers import code_ranges

        start = words[-k].start()
        for a, b in code_ranges(text):
            if a < start < b:
                opens = next(i for i, w in enumerate(words) if w.end() > a)
                if opens > 0 and sum(count(w.group()) for w in words[opens:]) <= tokens:
                    k = len(words) - opens
                else:
                    k = sum(1 for w in words if w.start() >= b)
                break
    return " ".join(w.group() for w in words[-k:]) if k else ""


#: a block that is only a component marker, as the MDX and Markdown parsers write a component or a
#: ``:::`` directive: ``[Steps]``, ``[TabItem pnpm]``, ``[Aside caution]`` (group 1 empty), ``[/Steps]``
_MARKER_BLOCK = re.compile(r"[ \t]*\[(/?)[A-Za-z][^\[\]\n]*\][ \t]*")


def _marker_groups(blocks: list[str]) -> list[tuple[list[str], str, list[str]]]:
    """``blocks`` as (opening markers, block, closing markers): a marker frames content and is never
    a chunk of its own. An opening marker (``[Steps]``, a self-closing component's ``[LinkCard X]``)
    goes with the block after it, a closing one (``[/Steps]``) with the block before it; an opening
    marker that nothing follows goes with the block before it, a closing one that nothing precedes
    with the block after it. A section of nothing but markers is one group of them."""
    groups: list[tuple[list[str], str, list[str]]] = []
    pending: list[str] = []
    for block in blocks:
        m = _MARKER_BLOCK.fullmatch(block)
        if m is None:
            groups.append((pending, block, []))
            pending = []
        elif m.group(1) and groups and not pending:
            groups[-1][2].append(block)
        else:
            pending.append(block)
    if pending and groups:
        groups[-1][2].extend(pending)
    elif pending:
        groups.append((pending[:-1], pending[-1], []))
    return groups


def _announces(unit: str) -> bool:
    """A paragraph that ends with a colon: it announces the block after it (a list, code, a table).
    Not code, a list, a table, a quote or a heading, whose last line's colon is their own."""
    para = unit.strip().rsplit("\n\n", 1)[-1]
    return para.endswith(":") and "```" not in para and not _FENCE.match(para) and not any(
        _NOT_PROSE.match(line) for line in para.splitlines())


_NOT_PROSE = re.compile(r"\s*(#|\||>|[-*+] |\d+[.)] )")


def split_text(text: str, limit: int, overlap: int, count: CountFn) -> list[str]:
    """Pack blocks greedily into pieces of at most ``limit`` tokens. With ``overlap``, pieces are
    packed to ``limit - overlap`` and each later piece starts with the previous piece's tail, so
    no piece ever exceeds ``limit``."""
    return [whole for whole, _ in _split_pieces(text, limit, overlap, count)]


def _split_pieces(text: str, limit: int, overlap: int, count: CountFn) -> list[tuple[str, str]]:
    """:func:`split_text`'s pieces, each with its part after the previous piece's tail."""
    overlap = min(overlap, limit // 4)
    room = limit - overlap
    units: list[str] = []
    for lead, block, trail in _marker_groups(split_blocks(text)):
        whole = "\n\n".join([*lead, block, *trail])
        if count(whole) <= room or not (lead or trail):
            units.extend([whole] if count(whole) <= room else _split_long(whole, room, count))
            continue
        # cut the block to leave its markers room in its first and last piece (a piece's count is not
        # always the sum of its lines': a code span may open on one and close on another; try again)
        target = room - sum(count(m) for m in (*lead, *trail))
        while target >= room * 3 // 4:
            parts = _split_long(block, target, count) if count(block) > target else [block]
            parts[0] = "\n\n".join([*lead, parts[0]])
            parts[-1] = "\n\n".join([parts[-1], *trail])
            over = max(count(parts[0]), count(parts[-1])) - room
            if over <= 0:
                units.extend(parts)
                break
            target -= over
        else:  # markers with labels too long to go along: each a unit of its own, as any block
            units.extend(u for b in (*lead, block, *trail) for u in ([b] if count(b) <= room else _split_long(b, room, count)))
    # word-piece counts add up across blank-line joins, so each unit is counted once
    pieces: list[list[str]] = []
    cur: list[str] = []
    counts: list[int] = []
    for u in units:
        n = count(u)
        if cur and sum(counts) + n > room:
            # a lead-in ("Install it with:") that would end its piece goes on with the block it
            # announces, when the two fit in one: a piece never ends saying what comes next
            k = 1 if len(cur) > 1 and _announces(cur[-1]) and counts[-1] + n <= room else 0
            pieces.append(cur[:len(cur) - k])
            cur, counts = cur[len(cur) - k:], counts[len(counts) - k:]
        cur.append(u)
        counts.append(n)
    if cur:
        pieces.append(cur)
    out: list[tuple[str, str]] = []
    for i, p in enumerate(pieces):
        own = body = "\n\n".join(p)
        if i and overlap:
            tail = _tail(out[-1][0], overlap - 2, count)
            if tail and count(f"… {tail}\n\n{body}") <= limit:
                body = f"… {tail}\n\n{body}"
        out.append((body, own))
    return out


def _piece_targets(text: str, targets: Sequence[tuple[int, str]], owns: Sequence[str]) -> list[str]:
    """For each piece of ``text`` (its own part, without the previous piece's tail), the id of the
    last target (``Section.targets``) at or before where it starts in ``text``, '' for none.

    The pieces are consecutive runs of ``text``, so a piece starts where the previous one ended: the
    pieces' lines are matched in order, whitespace aside (a long line is cut into several, words are
    joined again with one space), each where the text not yet matched starts. A line a piece adds
    (a code block's fence opened again, a table's header row repeated, a cut row's first cell) is not
    there: it is passed over, and the line after it is looked for no further than the length of what
    was passed over. Before, a piece was found by searching its first line from where the previous
    piece *started*, so a piece that starts with a line the previous one also has (``Parameters:`` of
    the next API entry) was placed inside the previous one and linked the previous entry's id."""
    if not targets:  # (most sections: every Markdown page's; the walk below costs a pass over each character)
        return [""] * len(owns)
    keep = [i for i, ch in enumerate(text) if not ch.isspace()]
    squeezed = "".join(text[i] for i in keep)
    out: list[str] = []
    cur = 0  # in ``squeezed``: where the text no piece has matched yet starts
    for own in owns:
        pos = keep[cur] if cur < len(keep) else len(text)
        out.append(next((a for o, a in reversed(targets) if o <= pos), ""))
        passed = 0
        for line in own.splitlines():
            s = "".join(line.split())
            if not s:
                continue
            if squeezed.startswith(s, cur):
                at = cur
            else:
                at = squeezed.find(s, cur, cur + passed + len(s))
                if at < 0:
                    passed += len(s)
                    continue
            cur, passed = at + len(s), 0
    return out


def logical_path(path: str) -> str:
    """A page's place in the hierarchy: its path without extension and final index/README segment."""
    p = path.split("?", 1)[0].split("#", 1)[0].strip("/")
    stem, ext = posixpath.splitext(p)
    if ext.lower() in {".md", ".mdx", ".markdown", ".html", ".htm", ".adoc", ".asciidoc", ".rst", ".txt"}:
        p = stem
    parts = [s for s in p.split("/") if s]
    if parts and parts[-1].lower() in {"index", "readme", "_index"}:
        parts.pop()
    return "/".join(parts)


def page_parents(paths: dict[str, str]) -> dict[str, str]:
    """page_url → parent page_url: a folder's index or same-named page is the parent of the pages
    inside it; walking up until one exists (the root index is the parent of top-level pages)."""
    by_logical: dict[str, str] = {}
    for url, path in sorted(paths.items(), key=lambda kv: (len(kv[1]), kv[1])):
        by_logical.setdefault(logical_path(path), url)
    parents: dict[str, str] = {}
    for url, path in paths.items():
        lp = logical_path(path)
        if lp == "":
            continue
        parts = lp.split("/")
        for i in range(len(parts) - 1, -1, -1):
            cand = "/".join(parts[:i])
            if cand in by_logical and by_logical[cand] != url:
                parents[url] = by_logical[cand]
                break
    return parents


def metadata_tags(metadata: dict[str, Any]) -> list[str]:
    """``key=value`` tags for filtering, from scalar (or list of scalar) metadata values."""
    tags: list[str] = []
    for k, v in sorted(metadata.items()):
        vals = v if isinstance(v, list) else [v]
        for item in vals:
            if isinstance(item, (str, int, float, bool)) and len(str(item)) <= 200:
                val = str(item).lower() if isinstance(item, bool) else str(item)
                tags.append(f"{k}={val}")
    return tags


#: ASCII characters a URL fragment may carry as they are (RFC 3986: unreserved, sub-delims, ":@/?")
_FRAGMENT_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/?")


def url_fragment(anchor: str) -> str:
    """``anchor`` (an element id, as the page has it) as a URL fragment that leads a browser to it:
    ASCII outside RFC 3986's fragment characters (space, ``"<>`#%{}|^``), controls and Unicode
    spaces are percent-encoded as UTF-8; other non-ASCII letters stay readable (browsers take both).
    A text fragment (:func:`~docs_rag_pipeline.records.text_directive`) is one already and stays as it is."""
    if anchor.startswith(TEXT_DIRECTIVE):
        return anchor
    out = []
    for ch in anchor:
        if ch in _FRAGMENT_SAFE or (ord(ch) > 0x7F and unicodedata.category(ch)[0] not in "CZ"):
            out.append(ch)
        else:
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
    return "".join(out)


def chunk_page(page: ParsedPage, *, source: str, page_url: str, content_hash: str, updated_at: str,
               budget: Budget, count: CountFn, metadata: dict[str, Any] | None = None) -> list[Chunk]:
    """Chunk one parsed page. The first chunk's ``parent_id`` is left None (see :func:`link_pages`).
    Tokens are counted in what the embedding model reads of the text: inline code without the
    backticks of its code spans (``Chunk.embedding_text``), so keeping them as code moves no chunk
    boundary and costs no part of the model's window."""
    from .answering.markers import plain_code_spans

    model_count = count
    counted: dict[str, int] = {}  # the splitting counts the same text again and again (a block, its line, its words)

    def count(text: str) -> int:  # noqa: F811 - the same count, of the text the model reads
        n = counted.get(text)
        if n is None:
            n = counted[text] = model_count(plain_code_spans(text))
        return n

    meta = {**(metadata or {}), **page.metadata}
    chunks: list[Chunk] = []
    first_of_section: dict[tuple[str, ...], str] = {}
    seen_ids: dict[str, int] = {}
    header_cost = {}
    for sec in page.sections:
        text = sec.text.strip()
        if not text:
            continue
        key = tuple(sec.headings)
        if key not in header_cost:
            header_cost[key] = count(" > ".join([page.title, *key]))
        limit = budget.for_header(header_cost[key])
        parent = _enclosing(key, first_of_section, chunks)
        pieces = _split_pieces(text, limit, budget.overlap, count)
        # a piece that starts inside a described term (an API entry) links that term's id
        offset = len(sec.text) - len(sec.text.lstrip())
        starts = _piece_targets(text, [(o - offset, a) for o, a in sec.targets], [own for _, own in pieces])
        for (piece, _), target in zip(pieces, starts, strict=True):
            anchor = target or sec.anchor
            url = f"{page_url}#{url_fragment(anchor)}" if anchor else page_url
            base = chunk_id_for(source, page_url, key, piece)
            occ = seen_ids.get(base, 0)
            seen_ids[base] = occ + 1
            cid = chunk_id_for(source, page_url, key, piece, occ) if occ else base
            chunks.append(Chunk(
                chunk_id=cid, source=source, page_url=page_url, url=url, title=page.title,
                headings=list(key), parent_id=parent if parent or not chunks else chunks[0].chunk_id,
                chunk_index=len(chunks), text=piece,
                content_hash=content_hash, token_count=count(piece), updated_at=updated_at,
                metadata=meta))
            first_of_section.setdefault(key, cid)
    return chunks


def _enclosing(key: tuple[str, ...], first_of_section: dict[tuple[str, ...], str], chunks: list[Chunk]) -> str | None:
    """The first chunk of the nearest enclosing section that has one, else the page's first chunk."""
    for i in range(len(key) - 1, -1, -1):
        if key[:i] in first_of_section:
            return first_of_section[key[:i]]
    return chunks[0].chunk_id if chunks else None
