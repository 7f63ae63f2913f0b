"""The one word tokenizer of the refusal signals: the index's vocabulary and word counts, term
coverage and unknown words all split text the same way, or a word found in one place is missing in
another."""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9_][a-z0-9_.+-]*[a-z0-9_]|[a-z0-9]")
# one underscore at either end of a word: Markdown emphasis (``_Black_``, ``_not installed_``) or a
# reStructuredText link reference (``Black_``) left in the text, never part of the word; a dunder
# name (``__init__``) keeps its underscores
_EDGE_UNDERSCORE = re.compile(r"^_(?!_)|(?<!_)_$")


def words(text: str) -> list[str]:
    """The lowercase words of ``text`` in order: letters, digits and ``_``, with inner ``.+-``
    (``pyproject.toml``, ``c++``, ``x-line-length``), emphasis underscores removed."""
    out = []
    for w in _WORD.findall(text.lower()):
        if "_" in w:
            w = _EDGE_UNDERSCORE.sub("", w)
            if not w:
                continue
        out.append(w)
    return out
