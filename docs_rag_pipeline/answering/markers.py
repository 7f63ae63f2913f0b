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
        p = _REFUSAL_RE.sub("", MARKER_RE.sub("", parts[i]))
        p = re.sub(r"[ \t]+(?=[.,;:!?]|\n)", "", p)
        parts[i] = re.sub(r"(?<=\S)[ \t]{2,}(?=\S)", " ", p)
    return re.sub(r"[ \t]+$", "", "".join(parts))
