"""The language of a text, for the stop words and the stemmer of the lexical refusal signals.

The lexical signals (content words, term and chunk coverage, unknown words, the index's word counts)
drop function words and compare words by their stem. Both are English unless a text is found to be
in another language: the language whose stop words (the ``stop-words`` package's lists) the text
uses most, when it uses more of them than of English's and enough of its own (see :func:`language`).
Its stop words are then dropped too and its
words are stemmed with its Snowball stemmer (``snowballstemmer``; a language Snowball has no
stemmer for is not stemmed). A text that is not found to be in another language, every English
text among them, is read exactly as before. Chinese, Japanese and Korean are not detected: their
words are character bigrams (``words.words``), which no stop-word list names.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from typing import Sequence

import snowballstemmer
import stop_words

from .words import words

ENGLISH = "english"
#: scripts read as character bigrams (words.py): not detected
_NOT_DETECTED = frozenset({"chinese", "japanese", "korean"})


@functools.cache
def _table() -> dict[str, tuple[str, ...]]:
    """Each stop word (casefolded, NFC, as :func:`~docs_rag_pipeline.words.words` reads it) → the
    languages that list it, English included. Entries that are not one word (``l'``, ``por qué``)
    are left out. (Not read with ``words()`` itself: its patterns for non-ASCII text cost a process
    that only ever reads English a good part of a second to build.)"""
    out: dict[str, list[str]] = {}
    for lang in sorted(set(stop_words.LANGUAGE_MAPPING.values()) - _NOT_DETECTED):
        for entry in stop_words.get_stop_words(lang):
            w = unicodedata.normalize("NFC", entry.strip().casefold())
            if _ONE_WORD.fullmatch(w) and lang not in out.setdefault(w, []):
                out[w].append(lang)
    return {w: tuple(langs) for w, langs in out.items()}


#: letters, digits and combining marks, with inner hyphens: what words() reads as one word
_ONE_WORD = re.compile(r"(?:[^\W_]|[\u0300-\u036f\u0900-\u0dff\u0591-\u05c7\u064b-\u065f])+"
                       r"(?:-(?:[^\W_]|[\u0300-\u036f\u0900-\u0dff\u0591-\u05c7\u064b-\u065f])+)*")


def language(ws: Sequence[str]) -> str | None:
    """The language of a text given its words (``words.words``; see :func:`text_language`): a
    ``stop-words`` name (``german``, ``french``, ``russian`` …) or None (English, or too little
    evidence). The candidate is the language whose stop words the text uses most, each counted by
    how few languages list it (*de* is a stop word of a dozen, *sont* of French alone); it is the
    text's language when the text holds more of its stop words than of English's, its own ones (not
    English stop words too) are at least a tenth of the text's words, and they are two different
    words, or one and the text has a letter of that language's stop words that English has not
    (*á*, *ß*, Cyrillic). English identifiers and headings that happen to be one stop word of
    another language (*mode*, *font*, *os*) are not another language."""
    table = _table()
    counts: dict[str, int] = {}
    weights: dict[str, float] = {}
    own: dict[str, set[str]] = {}
    own_tokens: dict[str, int] = {}
    n = 0
    for w0 in ws:
        n += not w0.isdigit()
        parts = w0.split("-") if "-" in w0 and w0 not in table else ()
        # a pronoun joined by hyphens (sont-elles, fera-t-il); not a flag or a long identifier
        for w in (parts if 1 < len(parts) <= 3 and all(p.isalpha() for p in parts) else (w0,)):
            langs = table.get(w, ())
            for lang in langs:
                counts[lang] = counts.get(lang, 0) + 1
                weights[lang] = weights.get(lang, 0.0) + 1.0 / len(langs)
                if ENGLISH not in langs:
                    own.setdefault(lang, set()).add(w)
                    own_tokens[lang] = own_tokens.get(lang, 0) + 1
    english = counts.pop(ENGLISH, 0)
    weights.pop(ENGLISH, None)
    if not counts:
        return None
    # a tie (Как: Russian, Ukrainian and Bulgarian): a language Snowball can stem, then the one with
    # the longer stop-word list, then the first name in alphabetical order
    best = max(sorted(counts), key=lambda lang: (round(weights[lang], 9), counts[lang], _has_stemmer(lang),
                                                  len(stopwords(lang))))
    mine = own.get(best, set())
    if counts[best] <= english or own_tokens.get(best, 0) < 0.1 * n or not mine:
        return None
    if len(mine) >= 2:
        return best
    return best if any(ch in _letters(best) for w in ws if not w.isascii() for ch in w) else None


@functools.cache
def _letters(lang: str) -> frozenset[str]:
    """The letters of ``lang``'s stop words that English ones do not have."""
    english = {ch for w in stopwords(ENGLISH) for ch in w}
    return frozenset(ch for w in stopwords(lang) for ch in w if ch.isalpha() and ch not in english)


_FENCED = re.compile(r"```.*?(?:```|$)", re.S)


def text_language(text: str, ws: Sequence[str] | None = None) -> str | None:
    """:func:`language` of ``text``'s words outside fenced code blocks (code is not prose); ``ws``:
    the words of ``text``, when the caller has them."""
    if not text:
        return None
    if "```" in text:
        return language(words(_FENCED.sub(" ", text)))
    return language(words(text) if ws is None else ws)


@functools.cache
def stopwords(lang: str | None) -> frozenset[str]:
    """The stop words of ``lang`` as :func:`~docs_rag_pipeline.words.words` reads them (empty for
    None: the function words of English questions are ``extractive.STOPWORDS``)."""
    if lang is None:
        return frozenset()
    return frozenset(w for w, langs in _table().items() if lang in langs)


@functools.cache
def _has_stemmer(lang: str) -> bool:
    return lang in snowballstemmer.algorithms()


_STEMMER_LOCKS: dict[str, tuple[object, threading.Lock]] = {}
_STEMMER_LOCK = threading.Lock()


def stem_word(w: str, lang: str) -> str:
    """``w`` stemmed by the Snowball stemmer of ``lang``; unchanged when Snowball has none for it.
    A Snowball stemmer keeps state while it stems a word: one lock per language."""
    entry = _STEMMER_LOCKS.get(lang)
    if entry is None:
        with _STEMMER_LOCK:
            entry = _STEMMER_LOCKS.get(lang)
            if entry is None:
                try:
                    stemmer = snowballstemmer.stemmer(lang)
                except KeyError:
                    stemmer = None
                entry = _STEMMER_LOCKS[lang] = (stemmer, threading.Lock())
    stemmer, lock = entry
    if stemmer is None:
        return w
    with lock:
        return stemmer.stemWord(w)  # type: ignore[attr-defined]


#: the words that negate what follows them, in the languages whose words this module reads (the
#: ``stop-words`` package's; each list names most of its own as stop words, so the lexical signals drop
#: them): a question and its negation share every other word. Words that are something else in another
#: of these languages (Finnish ``en``/``et``, French "in"/"and"; Catalan and Italian ``mai``, Romanian
#: "more"; Indonesian ``tak``, Polish "yes") are left out.
NEGATIONS = frozenset("""
no not never cannot none nothing nobody nowhere neither nor without
nicht kein keine keinen keinem keiner keines nie niemals ohne weder
niet geen nooit zonder noch
ne pas jamais sans aucun aucune ni non
nunca jamás sin ningún ninguno ninguna tampoco
senza nessun nessuno nessuna né
não sem nenhum nenhuma nem
nu niciodată fără niciun nicio
inte icke aldrig utan ingen inget inga ikke aldri uden uten
ei eivät emme ette ilman
nie nigdy bez żaden żadna żadne
ani nikdy žádný žádná žádné žiadny
не нет никогда без ни ні ніколи немає няма никога
δεν μην όχι ποτέ χωρίς
nem nincs nincsenek soha nélkül sem
değil yok asla hiç
tidak bukan tanpa belum jangan tiada
không chưa chẳng đừng
لا لم لن ليس بدون أبدا
לא אין בלי ללא אף
نه نیست بدون هرگز
नहीं न मत बिना
નથી ના નહીં વિના
안 못
""".split())
#: negations written inside words: English ``n't``, French ``n'``, and the negating characters of
#: Chinese and Japanese (written without spaces) and the negating syllables of Korean
_NEGATION_PART = re.compile(r"n['’]t\b|\bn['’](?=[^\W\d_])|[不没沒无無未别別非勿]|ない|ません|[않없]")


def negations(text: str) -> int:
    """How many negations ``text`` makes (:data:`NEGATIONS`, ``n't``, ``n'``, and the negating characters
    of CJK text): a text and its negation share every other word."""
    folded = text.casefold()
    return len(_NEGATION_PART.findall(folded)) + sum(w in NEGATIONS for w in words(folded))
