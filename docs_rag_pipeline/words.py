"""The one word tokenizer of the refusal signals: the index's vocabulary and word counts, term
coverage and unknown words all split text the same way, or a word found in one place is missing in
another.

Words of any script: letters and digits of any alphabet (casefolded, NFC), so ``Schlüssel``,
``créer``, ``dreißig`` (``dreissig``), ``резервные`` or ``ελληνικά`` are one word each. Scripts
written without spaces between words (Han, Hiragana, Katakana, Hangul, Thai, Lao, Khmer, Myanmar)
have no word boundaries to read: each run of them is cut into overlapping character bigrams
(``备份保存`` → ``备份``, ``份保``, ``保存``; a run of one character is that character), the usual
dictionary-free segmentation of full-text search. Text made only of ASCII is split exactly as before.

Letters written in another width or font are read as the plain letters (:func:`folded`): fullwidth
``ｐｙｔｈｏｎ`` (as a Japanese or Chinese input method types Latin letters) is ``python``, halfwidth
``ｶﾞ`` is ``ガ``, mathematical bold ``𝐏𝐲𝐭𝐡𝐨𝐧`` is ``Python``, the ligature ``ﬁle`` is ``file``; a digit
of any script is the ASCII digit of its value (Arabic-Indic ``٣`` is ``3``).

A word is read as it is seen (:func:`for_matching`): the characters without a glyph that may stand inside
it (soft hyphen, zero width space, non-joiner and joiner, word joiner, U+FEFF) are no break in it
(``grob\u200bnitz`` is ``grobnitz``), and Turkish ``İ``, which casefolds to ``i`` and a combining dot
above, is ``i`` (``İSTANBUL`` is ``istanbul``).
"""

from __future__ import annotations

import functools
import re
import unicodedata

_WORD = re.compile(r"[a-z0-9_][a-z0-9_.+-]*[a-z0-9_]|[a-z0-9]")
# one underscore at either end of a word: Markdown emphasis (``_Black_``, ``_not installed_``) or a
# reStructuredText link reference (``Black_``) left in the text, never part of the word; a dunder
# name (``__init__``) keeps its underscores
_EDGE_UNDERSCORE = re.compile(r"^_(?!_)|(?<!_)_$")

#: scripts written without spaces between words: Thai, Lao, Myanmar, Hangul Jamo, Khmer, CJK
#: radicals and symbols' iteration marks (々〆〇), Hiragana, Katakana, Hangul compatibility Jamo,
#: CJK Extension A, CJK Unified Ideographs, Hangul syllables, CJK compatibility ideographs,
#: half-width Katakana and Hangul, and the CJK extensions of the supplementary planes
SPACELESS = ("\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029"
              "\u3031-\u3035\u3040-\u30ff\u3131-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
              "\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\uffa0-\uffdc\U00020000-\U0003134f")


@functools.cache
def _marks() -> str:
    """Character ranges of the combining marks (Unicode categories Mn, Mc, Me) outside the spaceless
    scripts: part of a word (a Devanagari vowel sign, a Hebrew point, an accent NFC cannot compose),
    though Python's ``\\w`` does not match them. Not the variation selectors (U+FE00–FE0F, U+E0100–E01EF:
    emoji or text style, a glyph variant) nor the enclosing marks of symbols (U+20DD–20E4: the keycap of
    ``1️⃣``): they style a character, they are no part of a word (``1️⃣`` is the digit ``1``, a lone
    U+FE0F no word)."""
    out, start, prev = [], None, None
    for cp in [*range(0x300, 0x20DD), *range(0x20E5, 0xFE00), *range(0xFE10, 0x20000)]:
        if unicodedata.category(chr(cp))[0] == "M":
            if start is None:
                start = cp
            elif cp != prev + 1:
                out.append((start, prev))
                start = cp
            prev = cp
    if start is not None:
        out.append((start, prev))
    return "".join(re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in out)


@functools.cache
def _unicode_word(with_marks: bool) -> re.Pattern[str]:
    """The word pattern of :func:`words` for text that is not ASCII: a run of a spaceless script, or a
    word of letters, digits or ``_`` of a spaced script (and combining marks, in the slower pattern
    for text that has one). Built on the first text that needs it: the scan of the Unicode table and
    the compiles cost some 90 ms, which every process paid at import, ASCII-only ones too."""
    letter, not_underscore = rf"[^\W{SPACELESS}]", rf"[^\W_{SPACELESS}]"
    if with_marks:
        letter, not_underscore = (rf"(?:{c}|[{_marks()}])" for c in (letter, not_underscore))
    return re.compile(rf"([{SPACELESS}]+)|({letter}(?:{letter}|[.+-])*{letter}|{not_underscore})")


#: Unicode blocks holding every character whose compatibility mapping is a width or font variant
#: (``<wide>``, ``<narrow>``, ``<font>``): letterlike symbols (ℂ, ℍ), the ideographic space, the
#: alphabetic presentation forms (the ﬀ–ﬆ ligatures, Hebrew wide letters), halfwidth and fullwidth
#: forms, mathematical alphanumerics, Arabic mathematical letters, segmented digits
_FOLD_BLOCKS = ((0x2100, 0x214F), (0x3000, 0x3000), (0xFB00, 0xFB4F), (0xFF00, 0xFFEF), (0x1D400, 0x1D7FF),
                (0x1EE00, 0x1EEFF), (0x1FBF0, 0x1FBF9))
_LIGATURES = range(0xFB00, 0xFB07)  # ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ: ``<compat>``, but letters as a font joins them


@functools.cache
def _fold_table() -> tuple[re.Pattern[str], dict[int, str]]:
    """The characters :func:`folded` replaces, and by what (their NFKC form). Only width and font
    variants and the Latin ligatures: the other compatibility mappings change what a text says
    (``²`` → ``2``, ``½`` → ``1⁄2``, ``¨`` → a space and a combining mark), so NFKC as a whole is not
    applied. And the decimal digits of every script (Unicode category Nd: Arabic-Indic ``٣``, Devanagari
    ``३``), as the ASCII digit of their value: the embedding model reads such a digit as an unknown
    piece, the same as an emoji or a Thai word, so a question ``٣`` was answered with a Thai page."""
    table = {}
    for a, b in _FOLD_BLOCKS:
        for cp in range(a, b + 1):
            tag = unicodedata.decomposition(chr(cp)).split(" ")[0]
            if tag in ("<wide>", "<narrow>", "<font>") or cp in _LIGATURES:
                table[cp] = unicodedata.normalize("NFKC", chr(cp))
    for cp in range(0x80, 0x20000):  # no decimal digit lies past the supplementary multilingual plane
        if cp not in table and chr(cp).isdecimal():  # category Nd, checked in C: 25 ms, not 170
            table[cp] = str(unicodedata.decimal(chr(cp)))
    return re.compile("[" + "".join(re.escape(chr(cp)) for cp in table) + "]"), table


def folded(text: str) -> str:
    """``text`` with letters, digits and punctuation written in another width or font as the plain
    characters (fullwidth ``ｐｙｔｈｏｎ３`` → ``python3``, halfwidth ``ｶﾞ`` → ``ガ``, mathematical
    ``𝐏𝐲𝐭𝐡𝐨𝐧`` → ``Python``, ``ﬁ`` → ``fi``) and digits of other scripts as ASCII digits (``٣`` → ``3``),
    composed (NFC) after. The dense model reads a fullwidth
    letter as an unknown piece and the index spells its words plainly, so a question typed in
    fullwidth matched nothing and was refused. Text without such a character is returned as it is."""
    if text.isascii():
        return text
    pattern, table = _fold_table()
    if not pattern.search(text):
        return text
    return unicodedata.normalize("NFC", text.translate(table))


#: characters without a glyph that a word may hold and still be the word a reader sees: the soft hyphen,
#: zero width space, non-joiner and joiner, word joiner and U+FEFF. The parsers remove all but the joiner and
#: non-joiner (``unicode_text.INVISIBLE``), which an emoji sequence or a Persian or Indic word is drawn with
_IN_WORD_INVISIBLE = re.compile("[\u00ad\u200b-\u200d\u2060\ufeff]")
#: Turkish capital İ (``str.casefold`` and LanceDB's lowercasing make it ``i`` and U+0307 COMBINING DOT
#: ABOVE), and an ``i`` or ``I`` written with that dot as a combining mark
_DOTTED_I = re.compile("\u0130|([iI])\u0307")


def for_matching(text: str) -> str:
    """``text`` as its words are matched (the index's words and full-text column, and a question's): without
    the characters of :data:`_IN_WORD_INVISIBLE` (``grob\u200bnitz`` → ``grobnitz``) and with Turkish ``İ``
    as ``I`` (``İSTANBUL`` → ``ISTANBUL``, which casefolds to ``istanbul``, where ``İ`` casefolds to
    ``i\u0307``, a word no one types). The text shown keeps them."""
    if _IN_WORD_INVISIBLE.search(text):
        text = _IN_WORD_INVISIBLE.sub("", text)
    if "\u0130" in text or "\u0307" in text:
        text = _DOTTED_I.sub(lambda m: m.group(1) or "I", text)
    return text


_SPACELESS_RUN = re.compile(rf"[{SPACELESS}]+")
_SPACELESS_CHAR = re.compile(rf"[{SPACELESS}]")


@functools.cache
def _query_word() -> re.Pattern[str]:
    return re.compile(rf"(?:\w|[{_marks()}])+")


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]


def words(text: str) -> list[str]:
    """The lowercase words of ``text`` in order: letters, digits and ``_``, with inner ``.+-``
    (``pyproject.toml``, ``c++``, ``x-line-length``), emphasis underscores removed; letters of any
    alphabet, and the character bigrams of a run of a script written without spaces (see above)."""
    if text.isascii():
        found = _WORD.findall(text.lower())
    else:
        found = []
        text = unicodedata.normalize("NFC", for_matching(folded(text)).casefold())
        for run, w in _unicode_word(_has_mark(text)).findall(text):
            if run:
                found.extend(_bigrams(run))
            else:
                found.append(w)
    out = []
    for w in found:
        if "_" in w:
            w = _EDGE_UNDERSCORE.sub("", w)
            if not w:
                continue
        out.append(w)
    return out


def _has_mark(text: str) -> bool:
    """Whether ``text`` (not ASCII) holds a combining mark: its distinct non-ASCII characters are
    checked, not the whole text (one curly quote in an English chunk cost a scan of all of it)."""
    return any(unicodedata.category(ch)[0] == "M" for ch in set(text) if ch > "\x7f")


def query_words(text: str) -> list[str]:
    """The words of ``text`` as the full-text query sends them: runs of word characters, combining marks
    included (a Hindi vowel sign, a Hebrew point: LanceDB's tokenizer keeps such a word whole in the
    index, and ``\\w`` alone would send it in pieces); ASCII text as ``\\w+`` reads it."""
    if text.isascii():
        return re.findall(r"\w+", text)
    return _query_word().findall(unicodedata.normalize("NFC", folded(text)))


def is_spaceless(word: str) -> bool:
    """Whether ``word`` is (a bigram of) a script written without spaces: a term however short."""
    return bool(word) and _SPACELESS_CHAR.match(word) is not None


def not_latin(text: str) -> bool:
    """Whether most of the letters of ``text`` are of a script other than Latin (Cyrillic, Greek,
    Arabic, Hebrew, CJK, ...): text an English embedding model cannot read, whose similarity to
    another such text says little (the packaged model puts any two Russian sentences at 0.45-0.75).
    False for text without letters."""
    if text.isascii():
        return False
    latin = other = 0
    for ch in text:
        if ch.isalpha():
            if ch.isascii() or unicodedata.name(ch, "").startswith("LATIN"):
                latin += 1
            else:
                other += 1
    return other > latin


def fulltext_text(text: str) -> str:
    """``text`` as the full-text index and its queries read it: each run of a script written without
    spaces replaced by its character bigrams, separated by spaces (LanceDB's tokenizer splits at
    spaces and punctuation only, so a Chinese clause would be one token that no question matches).
    Width and font variants are :func:`folded` and invisible characters and Turkish ``İ`` read
    :func:`for_matching` (the index and the question spell a word alike; LanceDB's tokenizer splits a word
    at U+200B and lowercases ``İ`` to ``i`` and a combining dot). Text without any of these is returned
    unchanged; :func:`words` reads both forms the same way."""
    if text.isascii():
        return text
    text = for_matching(folded(text))
    if not _SPACELESS_CHAR.search(text):
        return text
    return _SPACELESS_RUN.sub(lambda m: " " + " ".join(_bigrams(m.group())) + " ", text)
