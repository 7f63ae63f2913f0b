"""Text that is Unicode text: no lone UTF-16 surrogates.

Python strings can hold half a surrogate pair (``"\\ud800"``): from a JSON or YAML escape, a
reStructuredText ``unicode::`` substitution, bytes decoded with ``surrogateescape``. Such a string
is no Unicode text: it cannot be encoded as UTF-8, so it fails where it is written (Arrow, SQLite,
a terminal, JSON for a strict client), far from where it came in. Mend it where it comes in.
"""

from __future__ import annotations

import re

__all__ = ["CONTROL", "LONE_SURROGATE", "SOFT_HYPHEN", "mend"]

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: C0 controls but tab and newline, DEL and the C1 controls: no text, and commands to a terminal
#: (ESC starts colours, a screen clear, an OSC 8 link or an OSC 52 clipboard write)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

#: U+00AD, a hyphenation hint (``&shy;``) shown only where a line breaks: inside an indexed word it makes
#: ``docu\xadmentation`` a word nobody searches for
SOFT_HYPHEN = "\u00ad"


def mend(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, as a decoder does with bytes it cannot read."""
    return LONE_SURROGATE.sub("\ufffd", text) if LONE_SURROGATE.search(text) else text
