"""Citation markers belong to the system. Document text can carry its own ``[2]``, ``[1, 3]`` or
``NO_ANSWER:`` (footnotes, copied answers, a prompt injection); before such text reaches an
answer or a prompt, :func:`neutralise` removes them, so every marker in an answer is one that
the system placed and that ``citations`` lists. Footnote references (``[^1]``) and full-width
markers (``【1】``, ``【4:0†source】``) go too: an agent reading the answer could take them for
citations. Code is left as written (``items[1]`` in a code span or block is code, and the chat page
never links inside code). What is code follows Markdown, as the chat page reads it (``app.js``
mirrors :func:`code_ranges`): a fenced block needs its closing fence (an unclosed fence line is text,
as in chunking), a code span its closing run of as many backticks (three backticks in a sentence
with no closing three are text), and a span never crosses a blank line.
"""

from __future__ import annotations

import re

MARKER_RE = re.compile(r"\[(\s*\d+\s*(?:[,;]\s*\d+\s*)*)\]")
#: a document's footnote reference ([^1], [^note]) or a full-width marker that starts with a number
_OTHER_MARKER_RE = re.compile(r"\[\^[^\]\s]{1,40}\]|【\s*\d[^】\n]{0,40}】")
_REFUSAL_RE = re.compile(r"\bNO_ANSWER\b\s*:?", re.I)
_TICKS = re.compile(r"`+")


def code_ranges(text: str) -> list[tuple[int, int]]:
    """(start, end) of every piece of code in ``text``: fenced blocks with their closing fence, then
    code spans (a run of backticks up to the next run of the same length, within a paragraph)."""
    from ..chunking import _fence_pairs

    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    blocks = sorted((starts[o], starts[c] + len(lines[c])) for o, c in _fence_pairs(lines).items())
    out: list[tuple[int, int]] = []
    pos = 0
    for b_start, b_end in [*blocks, (len(text), len(text))]:
        out.extend(_spans(text, pos, b_start))
        if b_end > b_start:
            out.append((b_start, b_end))
        pos = b_end
    return out


def _spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    out = []
    runs = list(_TICKS.finditer(text, start, end))
    k = 0
    while k < len(runs):
        m = runs[k]
        n = len(m.group(0))
        close = next((j for j in range(k + 1, len(runs)) if len(runs[j].group(0)) == n), None)
        if close is not None and not re.search(r"\n[ \t]*\n", text[m.end():runs[close].start()]):
            out.append((m.start(), runs[close].end()))
            k = close + 1
        else:  # no closing run in this paragraph: the backticks are text
            k += 1
    return out


def _parts(text: str) -> list[str]:
    """``text`` cut into text and code, alternately (the even parts are text)."""
    parts, pos = [], 0
    for a, b in code_ranges(text):
        parts += [text[pos:a], text[a:b]]
        pos = b
    return [*parts, text[pos:]]


def neutralise(text: str) -> str:
    """``text`` without bracketed numbers, footnote references or ``NO_ANSWER`` outside code."""
    parts = _parts(text)
    for i in range(0, len(parts), 2):  # the even parts are outside code
        if not (MARKER_RE.search(parts[i]) or _OTHER_MARKER_RE.search(parts[i]) or _REFUSAL_RE.search(parts[i])):
            continue  # the document's own spacing stays as written ("in .astro files")
        p = parts[i].replace(_CUT, "")
        p = _REFUSAL_RE.sub(_CUT, _OTHER_MARKER_RE.sub(_CUT, MARKER_RE.sub(_CUT, p)))
        # a removed marker takes the spaces before it along where punctuation or a line end follows
        # ("see below [2]." → "see below."), else it just goes
        p = re.sub(rf"(?m)^{_CUT}(?:[ \t]*{_CUT})*[ \t]*", "", p)
        p = re.sub(rf"[ \t]*{_CUT}(?:[ \t]*{_CUT})*[ \t]*(?=[.,;:!?]|\n|$)", "", p)
        p = re.sub(rf"(?<=\S)[ \t]*{_CUT}(?:[ \t]*{_CUT})*[ \t]*(?=\S)", " ", p)
        parts[i] = p.replace(_CUT, "")
    return re.sub(r"[ \t]+$", "", "".join(parts))


_CUT = "\x00"  # where a marker was cut out (a NUL in a document's text is dropped with it)
