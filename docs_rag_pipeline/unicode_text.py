"""Text that is Unicode text: no lone UTF-16 surrogates.

Python strings can hold half a surrogate pair (``"\\ud800"``): from a JSON or YAML escape, a
reStructuredText ``unicode::`` substitution, bytes decoded with ``surrogateescape``. Such a string
is no Unicode text: it cannot be encoded as UTF-8, so it fails where it is written (Arrow, SQLite,
a terminal, JSON for a strict client), far from where it came in. Mend it where it comes in.

The same goes for text that acts on whoever shows it: terminal controls and escape sequences
(:func:`without_controls`), bidi controls that reorder what follows them
(:func:`without_bidi_overrides`), and bytes that are not UTF-8 in a name (:func:`shown_bytes`).
"""

from __future__ import annotations

import re

__all__ = ["BIDI", "BIDI_CONTROL", "CONTROL", "ESCAPED_BYTE", "ESCAPE_SEQUENCE", "LONE_SURROGATE",
           "INVISIBLE", "OPEN_ESCAPE_SEQUENCE", "SOFT_HYPHEN", "joined_pairs", "mend", "shown_bytes", "without_bidi_overrides",
           "without_controls"]

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: a byte that is not UTF-8 as Python holds it in a file name, an environment variable or argv
#: (``surrogateescape``: the byte 0xe4 is U+DCE4)
ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def shown_bytes(text: str) -> str:
    """``text`` as a message shows it: each byte that is not UTF-8 (:data:`ESCAPED_BYTE`) as ``\\xe4``,
    which a UTF-8 terminal or log can print, unlike the lone surrogate Python holds it as."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


#: C0 controls but tab and newline, DEL and the C1 controls: no text, and commands to a terminal
#: (ESC starts colours, a screen clear, an OSC 8 link or an OSC 52 clipboard write)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: a whole CSI sequence (``ESC [ 31 m``) or terminated OSC sequence (``ESC ] 8 ; ; url BEL``), not only its
#: ESC (an OSC never terminated loses only its ESC: the text after it is the writer's)
ESCAPE_SEQUENCE = re.compile(r"\x1b\[[0-?]{0,64}[ -/]{0,8}[@-~]|\x1b\][^\x07\x1b\x9c\n]{0,2048}(?:\x07|\x1b\\|\x9c)")
#: the end of a text that may be the start of an :data:`ESCAPE_SEQUENCE` (or of a CRLF) the next piece of a
#: stream completes: held back, so that a stream is cleaned as its whole text is
OPEN_ESCAPE_SEQUENCE = re.compile(r"(?:\x1b(?:\[[0-?]{0,64}[ -/]{0,8}|\][^\x07\x1b\x9c\n]{0,2048}\x1b?)?|\r)\Z")


def without_controls(text: str) -> str:
    """``text`` without terminal escape sequences and :data:`CONTROL` characters, which are commands to the
    terminal that prints it (a screen clear, an OSC 8 link to another URL, an OSC 52 clipboard write); CR,
    VT and FF among them are line breaks. Documents are cleaned so when parsed, a model's answer when read."""
    if not CONTROL.search(text):
        return text
    text = ESCAPE_SEQUENCE.sub("", text.replace("\r\n", "\n"))  # terminal output pasted with its colours
    return CONTROL.sub(lambda m: "\n" if m.group() in "\r\x0b\x0c" else "", text)


#: U+00AD, a hyphenation hint (``&shy;``) shown only where a line breaks: inside an indexed word it makes
#: ``docu\xadmentation`` a word nobody searches for
SOFT_HYPHEN = "\u00ad"
#: characters with no glyph that say nothing inside a word, which a CMS or word processor leaves there
#: unseen: U+200B ZERO WIDTH SPACE (a line-break hint), U+2060 WORD JOINER and U+FEFF (a byte order mark
#: inside the text, the old zero width no-break space). Inside an indexed word they make ``grob\u200bnitz``
#: two words, ``grob`` and ``nitz``, nobody searches for. Not the zero width joiner and non-joiner
#: (U+200D, U+200C): an emoji sequence (👨‍👩‍👧), a Persian or Indic word is drawn otherwise without them;
#: the text keeps them, and only its words are read without (``words.for_matching``)
INVISIBLE = re.compile("[\u200b\u2060\ufeff]")


_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def joined_pairs(text: str) -> str:
    """``text`` with each high and low surrogate written one after the other made the one character they
    encode, as JSON reads ``"\\ud83c\\udf89"`` (🎉): a YAML parser reads each escape alone."""
    if not LONE_SURROGATE.search(text):
        return text
    return _PAIR.sub(lambda m: chr(0x10000 + ((ord(m.group()[0]) - 0xD800) << 10) + ord(m.group()[1]) - 0xDC00), text)


def mend(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, as a decoder does with bytes it cannot read."""
    return LONE_SURROGATE.sub("\ufffd", text) if LONE_SURROGATE.search(text) else text


#: bidi controls: the embeddings and overrides (LRE, RLE, PDF, LRO, RLO), which Unicode 6.3 replaced by
#: the isolates, and the isolates (LRI, RLI, FSI) with their end (PDI)
BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_ISOLATE_OPEN, _ISOLATE_CLOSE = "\u2066\u2067\u2068", "\u2069"
#: every bidi formatting character: :data:`BIDI` and the marks (LRM, RLM, the Arabic letter mark). Text keeps
#: its marks and closed isolates (:func:`without_bidi_overrides`); a log line or message that shows a name
#: as it is (``report\u202egnp.exe.md``) shows each of these escaped, so it cannot reorder the line around it
BIDI_CONTROL = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def without_bidi_overrides(text: str) -> str:
    """``text`` without the bidi controls that reorder what follows them: every embedding and override
    (``fdp.exe`` after an RLO shows as "exe.pdf", and a citation marker placed after it is drawn before
    the words it follows, on a web page as in a terminal), and every isolate not closed on its line, or
    a PDI that closes none. A closed isolate stays (it reorders only what it holds); so do the marks
    (LRM, RLM), which a right-to-left text needs and which move nothing but punctuation beside them."""
    if not BIDI.search(text):
        return text
    out = []
    for line in text.split("\n"):
        chars = list(re.sub("[\u202a-\u202e]", "", line))
        opened: list[int] = []
        for i, ch in enumerate(chars):
            if ch in _ISOLATE_OPEN:
                opened.append(i)
            elif ch == _ISOLATE_CLOSE:
                if opened:
                    opened.pop()
                else:
                    chars[i] = ""
        for i in opened:
            chars[i] = ""
        out.append("".join(chars))
    return "\n".join(out)
