"""Citation markers belong to the system. Document text can carry its own ``[2]``, ``[1, 3]`` or
``NO_ANSWER:`` (footnotes, copied answers, a prompt injection); before such text reaches an
answer or a prompt, :func:`neutralise` removes them, so every marker in an answer is one that
the system placed and that ``citations`` lists. Code is left as written (``items[1]`` in a code
span or block is code, and the chat page never links inside code).
"""

from __future__ import annotations

import re

MARKER_RE = re.compile(r"\[(\s*\d+\s*(?:[,;]\s*\d+\s*)*)\]")
_REFUSAL_RE = re.compile(r"\bNO_ANSWER\b\s*:?", re.I)
_CODE_RE = re.compile(r"(```.*?(?:```|$)|`[^`\n]*`)", re.S)


def neutralise(text: str) -> str:
    """``text`` without bracketed numbers or ``NO_ANSWER`` outside code."""
    parts = _CODE_RE.split(text)
    for i in range(0, len(parts), 2):  # the even parts are outside code
        if not (MARKER_RE.search(parts[i]) or _REFUSAL_RE.search(parts[i])):
            continue  # the document's own spacing stays as written ("in .astro files")
        p = _REFUSAL_RE.sub(_CUT, MARKER_RE.sub(_CUT, parts[i].replace(_CUT, "")))
        # a removed marker takes the spaces before it along where punctuation or a line end follows
        # ("see below [2]." → "see below."), else it just goes
        p = re.sub(rf"(?m)^{_CUT}(?:[ \t]*{_CUT})*[ \t]*", "", p)
        p = re.sub(rf"[ \t]*{_CUT}(?:[ \t]*{_CUT})*[ \t]*(?=[.,;:!?]|\n|$)", "", p)
        p = re.sub(rf"(?<=\S)[ \t]*{_CUT}(?:[ \t]*{_CUT})*[ \t]*(?=\S)", " ", p)
        parts[i] = p.replace(_CUT, "")
    return re.sub(r"[ \t]+$", "", "".join(parts))


_CUT = "\x00"  # where a marker was cut out (a NUL in a document's text is dropped with it)
