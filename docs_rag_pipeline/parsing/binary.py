"""Is it text at all? The check every parser runs before reading a document."""

from __future__ import annotations

import re

from .errors import ParseError

__all__ = ["check_text"]

#: a Git LFS pointer file (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md)
_LFS_POINTER = re.compile(r"version https://git-lfs\.github\.com/spec/v\d+\n(?:[a-z0-9.-]+ [^\n]*\n)*?"
                          r"oid sha256:[0-9a-f]{64}\n", re.ASCII)
_SAMPLE = 8192


def check_text(text: str, *, path: str, hint: str = "") -> str:
    """``text`` with stray NUL characters removed, or :class:`ParseError` when it is not a document:
    binary data (more than a few NULs, two or more in a text under 100 characters per NUL, or over a tenth of the first 8,192 characters control
    characters or U+FFFD, as bytes that are no text decode; in a text under 64 characters, two or more
    such characters that are over a quarter of it) or a Git LFS pointer. ``hint`` is added
    to the binary message (what else to check)."""
    if len(text) < 1024 and _LFS_POINTER.match(text.lstrip("\ufeff")):
        raise ParseError(f"{path}: the file is a Git LFS pointer, not the document (its content is stored in Git "
                         "LFS and was not fetched); run `git lfs pull` in the checkout the source reads, or exclude "
                         "the file (the git source does not fetch Git LFS content)")
    nul = text.count("\x00")
    sample = text[:_SAMPLE]
    odd = sum(1 for c in sample if c == "\ufffd" or (c < " " and c not in "\t\n\r\f") or c == "\x7f")
    # a text under 64 characters is too short for the one-in-ten share (one pasted control character
    # is a seventh of a short line), so there two or more, over a quarter of it, tell binary data
    short = len(sample) < 64
    if nul > 8 or (nul > 1 and nul * 100 > len(text)) or (not short and odd * 10 > len(sample)) \
            or (short and odd >= 2 and odd * 4 > len(sample)):
        raise ParseError(f"{path}: the document looks binary (NUL bytes or data that is not text); "
                         f"only text documents can be parsed, exclude it from the source{hint}")
    return text.replace("\x00", "") if nul else text
