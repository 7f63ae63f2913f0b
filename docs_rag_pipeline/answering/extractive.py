"""The offline answer: sentences picked from the retrieved chunks, each with its citation.

No LLM. Refuses (``refused: true``, no citations) when nothing retrieved is relevant enough:
the best chunk must be semantically close to the question *and* share its content words, unless it
is very close.
"""

from __future__ import annotations

import bisect
import functools
import re
import textwrap
import threading
import uuid
from dataclasses import dataclass
from typing import Callable, Collection, Sequence

import numpy as np
import snowballstemmer

from ..chunking import (LIST_ITEM, CLOSES_BRACKET, SENTENCE_STARTERS, indent_of, entry_lines, fenced_segments,
                        is_prompt, split_blocks, split_sentences)
from ..config import RetrievalConfig
from ..embedding import Embedder
from ..languages import stem_word, stopwords, text_language
from ..records import Answer, Citation, Hit
from ..unicode_text import without_bidi_overrides
from ..words import SPACELESS, is_spaceless, not_latin, words
from ..table_row import is_row_line, is_rule_line, row_cells
from .markers import code_parts, neutralise, plain_code_spans
from .tables import TABLE_SEPARATOR, header_rows, markdown_table, table_rows

REFUSAL = "The documentation doesn't cover this question, so I can't answer it from the docs."

STOPWORDS = frozenset("""
a about above after again all also am an and any are as at be been before being below between both but by
can could did do does doing done down during each else few for from further get gets got had has have
having he her here hers him his how i if in into is it its itself just let like make me might more most
much must my no nor not now of off on once only or other our out over own please same shall she should
so some such than that the their them then there these they this those through to too under until up
use used using very want was way we were what when where which while who whom why will with would you
your yours tell explain show give know need work works document documentation docs doc page
""".split())

_PARAGRAPH = re.compile(r"\n\n+")
_SENT_STARTERS = SENTENCE_STARTERS | {"`"}


def content_terms(text: str, lang: str | None | bool = True) -> list[str]:
    """The question's (or a sentence's) words that carry its meaning: not a function word, three
    characters or more, or a character bigram of a script written without spaces (``备份``: see
    :func:`~docs_rag_pipeline.words.words`). Function words are English's (:data:`STOPWORDS`) and,
    for a text in another language, that language's too, in any inflection (a word with the stem of
    one: German *viele* for the listed *viel*) (``lang``: a ``languages.language`` name, None for
    English, True to detect it from the text)."""
    ws = words(text)
    if lang is True:
        lang = text_language(text, ws)
    other, other_stems = (stopwords(lang), _stopword_stems(lang)) if lang else (frozenset(), frozenset())
    terms = []
    for w in ws:
        if w not in STOPWORDS and (len(w) > 2 or (len(w) == 2 and is_spaceless(w))) and not (
                other and (w in other or _stem(w, lang) in other_stems)):
            terms.append(w)
    return list(dict.fromkeys(terms))


@functools.cache
def _stopword_stems(lang: str) -> frozenset[str]:
    return frozenset(_stem(w, lang) for w in stopwords(lang))


def question_language(text: str) -> str | None:
    """The language of a question or text (``languages.text_language``): None for English."""
    return text_language(text)


_SNOWBALL = snowballstemmer.stemmer("english")
_SNOWBALL_LOCK = threading.Lock()  # a Snowball stemmer keeps state while it stems a word
_STEM_CACHE_MAX_LEN = 40


def _snowball(w: str) -> str:
    with _SNOWBALL_LOCK:
        return _SNOWBALL.stemWord(w)


_stem_cached = functools.lru_cache(maxsize=1 << 17)(_snowball)


def _stem(w: str, lang: str | None = None) -> str:
    """The English Snowball (Porter2) stem of a lowercase word: refuse/refused/refusing/refusal →
    refus, decompress/decompresses → decompress, install/installation → instal. Words of up to 40
    characters are cached (a question made of long made-up words must not fill the memory). With
    ``lang`` (a ``languages.language`` name) the stem of that language's Snowball stemmer instead
    (German Tage/Tagen → tag), the word itself when Snowball has none for it."""
    if lang:
        return _stem_other(w, lang) if len(w) <= _STEM_CACHE_MAX_LEN else stem_word(w, lang)
    return _stem_cached(w) if len(w) <= _STEM_CACHE_MAX_LEN else _snowball(w)


_stem_other = functools.lru_cache(maxsize=1 << 16)(stem_word)


def lexical_evidence(question: str) -> bool:
    """Whether the question's words can be weighed at all: False when it holds letters but no content
    word (only function words, or words of one or two letters), or nothing to look up (see
    :func:`asks_something`). Such a question is no evidence either way, never one whose every word the
    docs have. A question of digits and punctuation (``2 + 2``) is weighed as its digits are."""
    return bool(content_terms(question)) or (asks_something(question) and not any(ch.isalpha() for ch in question))


def asks_something(question: str) -> bool:
    """Whether the question holds a letter or a digit of any script: ``?!``, ``¿¡`` or a lone emoji asks
    nothing the docs could say, and is refused whatever the similarity of a chunk to it (the model
    reads ``🙂``, like any character it does not know, as the unknown piece it reads a Thai word as,
    so a Thai page scored 0.9 and was quoted as the answer)."""
    return any(ch.isalnum() for ch in question)


def term_coverage(question: str, texts: Sequence[str]) -> float:
    """Share of the question's content words found (stemmed, or as part of a compound: see
    :func:`in_compound`) in the texts; 0 for a question with letters but no content word (see
    :func:`lexical_evidence`)."""
    lang = question_language(question)
    terms = content_terms(question, lang)
    if not terms:
        return 1.0 if lexical_evidence(question) else 0.0
    ws = {w for t in texts for w in words(t)}
    vocab = {_stem(w, lang) for w in ws}
    return sum(_stem(t, lang) in vocab or in_compound(t, ws, lang) for t in terms) / len(terms)


#: languages that write a compound as one word (*Zugangsschlüssel*) and put a verb's particle
#: before it in some forms only (*legt … fest*, *festgelegt*)
COMPOUNDING = frozenset({"danish", "dutch", "finnish", "german", "hungarian", "norwegian", "swedish"})


def in_compound(term: str, ws: Collection[str], lang: str | None) -> bool:
    """Whether a question word of a compounding language (:data:`COMPOUNDING`) of 4 letters or more
    begins or ends a longer word of ``ws`` (*Schlüssel* in *Zugangsschlüssel*, *legt* in
    *festgelegt*). Always False for English and other languages."""
    if lang not in COMPOUNDING or len(term) < 4:
        return False
    if isinstance(ws, frozenset) and len(ws) > 1000:  # the index's vocabulary: sorted once
        fwd, rev = _compound_index(ws)
        return any(i < len(keys) and keys[i].startswith(key) and keys[i] != key or
                   i + 1 < len(keys) and keys[i + 1].startswith(key)
                   for keys, key in ((fwd, term), (rev, term[::-1]))
                   for i in (bisect.bisect_left(keys, key),))
    return any(w != term and (w.startswith(term) or w.endswith(term)) for w in ws)


@functools.lru_cache(maxsize=2)
def _compound_index(vocabulary: frozenset[str]) -> tuple[list[str], list[str]]:
    """The vocabulary sorted, and its words reversed and sorted (the words ending with a word)."""
    return sorted(vocabulary), sorted(w[::-1] for w in vocabulary)


@dataclass(frozen=True, slots=True)
class Relevance:
    similarity: float  # best cosine similarity of a retrieved chunk
    coverage: float | None  # share of the question's content words found in the top chunks (None: no content word)
    unknown: tuple[str, ...]  # content words the indexed docs never use
    relevant: bool
    # best cosine similarity of one sentence of the top chunks (None: not computed, no embedder)
    sentence_similarity: float | None = None
    # rarity-weighted share of the question's words found in one chunk (None: no content word)
    chunk_coverage: float | None = 1.0
    missing_rarity: float = 0.0  # rarity (0-1) of the rarest specific question word the top chunks lack
    shared_pages: int | None = None  # pages both rankings put in their first 5 (None: unknown)
    features: dict[str, float] | None = None  # the refusal model's signals (answering/refusal.py)


#: per language (None: English), the last vocabulary and its stems (the vocabulary object is held,
#: so no other can take its id)
_last_stems: dict[str | None, tuple[frozenset[str], frozenset[str]]] = {}


# a letter of any alphabet, then letters, digits, + and # (on ASCII text: [A-Za-z][A-Za-z0-9+#]*), so
# that "Schlüssel" is one name, not "Schl"; a script written without spaces ends it, and may come
# right before it ("安装Python插件": the name is "Python")
_NAME_CHAR = rf"(?:[^\W_{SPACELESS}]|[+#])"
_NAME = re.compile(rf"(?:(?<![\w./-])|(?<=[{SPACELESS}]))([^\W\d_{SPACELESS}]{_NAME_CHAR}*(?:[.-]{_NAME_CHAR}+)*)")
_GLUED = re.compile(rf"[{SPACELESS}]")
_SENTENCE_START = re.compile(r"(^|[.!?:;]\s+|\n)\W*$")


#: an English question names what it wants to go without after these words: "without installing yargs",
#: "no Jest or Mocha", "so I can drop the dotenv dependency", "instead of moment.js"
_AVOID_CUE = re.compile(r"\b(?:without|instead of|rather than|no|drop(?:ping)?|avoid(?:ing)?|ditch(?:ing)?|"
                        r"get(?:ting)? rid of|replac(?:e|ing))\s+", re.I)
#: where such a phrase ends: punctuation, or a word that starts another part of the sentence (a
#: preposition, a conjunction: "without Docker on AWS Lambda" goes without Docker, not Lambda)
_AVOID_END = re.compile(r"[,.;:?!()\[\]\n]|\b(?:and|but|so|because|while|when|where|which|that|if|then|on|in|"
                        r"for|to|from|at|with|into|via|by|using|under|over|as|than|of)\b", re.I)
_AVOID_WORDS = 5


@functools.lru_cache(maxsize=256)  # asked twice per question: for the unknown terms and the missing word
def avoided_terms(question: str) -> frozenset[str]:
    """The words of what an English question says it goes without: the few words after *without*, *no*,
    *instead of*, *rather than*, *drop*, *avoid*, *ditch*, *get rid of* or *replace*, up to punctuation
    or a preposition or conjunction. Such a word is not what the question asks about: a question about
    Node's own test runner "with no Jest or Mocha" is answered by the docs that never name Jest, where a
    question about Jest is not. Empty for a question in another language."""
    if question_language(question) is not None:
        return frozenset()
    out: set[str] = set()
    for m in _AVOID_CUE.finditer(question):
        rest = question[m.end():]
        end = _AVOID_END.search(rest)
        out.update(words(rest[:end.start() if end else len(rest)])[:_AVOID_WORDS])
    return frozenset(out)


def unknown_terms(question: str, vocabulary: frozenset[str] | None,
                  count: Callable[[str], int] | None = None) -> tuple[str, ...]:
    """Specific words of the question that appear nowhere in the docs: alphabetic, 4+ letters and,
    when ``count`` (the model's word-piece count) is given, rare enough to be split into several
    word pieces — common English words ("actually", "difference") are single pieces. Also the names
    the question gives (see :func:`unknown_names`)."""
    if not vocabulary:
        return ()
    lang = question_language(question)
    stems = _stems_of(vocabulary, lang)
    found = tuple(t for t in content_terms(question, lang)
                  if t.isalpha() and len(t) >= 4 and t not in vocabulary and _stem(t, lang) not in stems
                  and (count is None or count(t) >= 2) and not in_compound(t, vocabulary, lang))
    avoided = avoided_terms(question)  # what the question goes without is not what it asks about
    return tuple(t for t in dict.fromkeys(found + unknown_names(question, vocabulary, lang)) if t not in avoided)


def _stems_of(vocabulary: frozenset[str], lang: str | None = None) -> frozenset[str]:
    """The stems of the vocabulary's words (by ``lang``'s stemmer, English's for None), cached for
    the last vocabulary of each language."""
    got = _last_stems.get(lang)
    if got is None or got[0] is not vocabulary:
        got = _last_stems[lang] = (vocabulary, frozenset(_stem(w, lang) for w in vocabulary))
    return got[1]


def unknown_names(question: str, vocabulary: frozenset[str], lang: str | None | bool = True) -> tuple[str, ...]:
    """Names in the question that the docs never use: words written with a capital letter where a
    sentence does not start (*Docusaurus*, *Mermaid*, *PostgreSQL*, *CSRF*), lowercased, and such
    words written right against Chinese, Japanese, Korean or Thai text, wherever they stand (``安装Python插件``,
    ``Python怎么安装``: those scripts have no capitals, so a capital there is a name's). A question
    about a named thing the docs never mention is one they don't answer, whether or not the model's
    tokenizer happens to know the word. ``lang``: the question's language (True: detect it)."""
    if not vocabulary:
        return ()
    if lang is True:
        lang = question_language(question)
    stems, other = _stems_of(vocabulary, lang), stopwords(lang)
    out = []
    for m in _NAME.finditer(question):
        w = m.group(1)
        # right against a spaceless script's character, before or after it
        glued = any(_GLUED.match(c) for c in (question[max(0, m.start() - 1):m.start()], question[m.end():m.end() + 1]))
        if not any(ch.isupper() for ch in w) or w == "I" or len(w) < 2 or (
                not glued and _SENTENCE_START.search(question[:m.start()])):
            continue
        low = re.sub(r"'s$", "", w.lower())
        # tokenized as the index's words are (store.ChunksTable.vocabulary: "C++" is the word "c" there)
        parts = words(low)
        if not parts or low in STOPWORDS or low in other or low in vocabulary or _stem(low, lang) in stems:
            continue
        if in_compound(low, vocabulary, lang):
            continue
        if all(p in vocabulary or _stem(p, lang) in stems or p in STOPWORDS or p in other for p in parts):
            continue
        if any(p in vocabulary for p in re.split(r"[.-]", low) if len(p) > 2) and ("." in low or "-" in low):
            continue  # a compound of known words ("Sphinx-Build", "conf.PY")
        out.append(low)
    return tuple(dict.fromkeys(out))


def is_relevant(similarity: float, coverage: float | None, unknown: Sequence[str], cfg: RetrievalConfig, *,
                sentence_similarity: float | None = None, chunk_coverage: float | None = 1.0,
                missing_rarity: float = 0.0, shared_pages: int | None = None) -> bool:
    """The refusal rule: dense similarity and lexical evidence must agree (field notes: on small sites
    out-of-corpus words tell best, on large ones the dense similarity). Then three gates of the
    answer's own evidence: one sentence must be close enough to the question, one chunk must hold
    enough of the question's words (weighted by rarity), and a specific question word (several word
    pieces, or digits) that is rare in the docs and missing from the retrieved chunks (the thing a near
    miss asks about) needs a close sentence. And the full-text and the vector ranking must agree on at
    least ``min_shared_pages`` of their first five pages, unless a sentence is very close: when the
    pages with the question's words and the pages closest in meaning are all different ones, neither
    found what was asked. A question with letters but no content word (``coverage`` and
    ``chunk_coverage`` None) gives no lexical evidence: only a confident similarity accepts it."""
    if unknown and similarity < cfg.unknown_term_similarity:
        return False
    if shared_pages is not None and shared_pages < cfg.min_shared_pages and (
            sentence_similarity is None or sentence_similarity < cfg.shared_pages_sentence_similarity):
        return False
    if not (similarity >= cfg.min_similarity and ((coverage is not None and coverage >= cfg.min_term_coverage) or
                                                  similarity >= cfg.confident_similarity)):
        return False
    if chunk_coverage is not None and chunk_coverage < cfg.min_chunk_coverage:
        return False
    if sentence_similarity is None:
        return True
    if sentence_similarity < cfg.min_sentence_similarity:
        return False
    return missing_rarity < cfg.missing_word_rarity or sentence_similarity >= cfg.missing_word_sentence_similarity


def judge(question: str, hits: Sequence[Hit], cfg: RetrievalConfig,
          vocabulary: frozenset[str] | None = None, count: Callable[[str], int] | None = None,
          stats: tuple[int, dict[str, int]] | None = None, *,
          embedder: Embedder | None = None, pool: SentencePool | None = None) -> Relevance:
    """Is what was retrieved enough to answer? ``pool`` (or ``embedder``, to build it) adds the
    sentence-level gates; without either only the chunk-level rule decides."""
    from .refusal import answerable, signals

    if not hits:
        return Relevance(0.0, 0.0, (), False, features=signals(question, hits, vocabulary, count, stats)[0])

    if pool is None and embedder is not None:
        pool = sentence_pool(question, hits, embedder)
    sent = pool.best if pool is not None else None
    feats, unknown = signals(question, hits, vocabulary, count, stats, sentence_similarity=sent)
    sim = max(h.vector_similarity or 0.0 for h in hits)
    lexical = lexical_evidence(question)
    cov = feats["coverage"] if lexical else None  # term coverage of the top three chunks
    chunk_cov = (feats["chunk_coverage"] if stats else 1.0) if lexical else None
    rarity = feats["missing_specific"] if stats else 0.0
    shared = getattr(hits, "shared_pages", None)  # retrieval.Hits of a hybrid search
    # the fitted refusal model (answering/refusal.py) when installed and enabled, with min_similarity
    # as a floor; else the threshold rule
    verdict = answerable(feats)
    relevant = asks_something(question) and (
        (verdict and sim >= cfg.min_similarity) if verdict is not None else
        is_relevant(sim, cov, unknown, cfg, sentence_similarity=sent, chunk_coverage=chunk_cov,
                    missing_rarity=rarity, shared_pages=shared))
    return Relevance(round(sim, 4), round(cov, 4) if cov is not None else None, unknown, bool(relevant),
                     round(sent, 4) if sent is not None else None,
                     round(chunk_cov, 4) if chunk_cov is not None else None, round(rarity, 4), shared,
                     feats)


@dataclass(frozen=True, slots=True)
class SentencePool:
    """The candidate answer sentences of the top chunks, embedded once for the refusal gates and
    for picking the answer."""

    items: list[tuple[Hit, str]]
    question_vector: np.ndarray
    vectors: np.ndarray
    #: per item: may it be quoted as an answer sentence? (the others are evidence for refusal only:
    #: a chunk's overlap, a sentence holding the question, a lead-in whose block is not at hand)
    quotable: list[bool] | None = None
    #: per item: the label of the tab it is in (``macOS``), None outside tabs
    labels: list[str | None] | None = None

    @property
    def best(self) -> float:
        return float(np.max(self.vectors @ self.question_vector)) if len(self.items) else 0.0


def sentence_pool(question: str, hits: Sequence[Hit], embedder: Embedder, *, chunks: int = 4) -> SentencePool:
    pool: list[tuple[Hit, str]] = []
    quotable: list[bool] = []
    labels: list[str | None] = []
    # the titles and headings of every hit: a list of them (a page's table of contents, a toctree) says nothing
    toc = frozenset(_normalised(x) for h in hits for x in (h.title, *h.headings) if x)
    for h in hits[:chunks]:
        heads = [h.title, *h.headings]
        seq, own, tabs = _sentence_units(h.text)  # the overlap's sentences come first
        # an index of names (Sphinx's genindex, gtk-doc's api-index) points to the pages that answer: its
        # entries are evidence, never the answer quoted
        index = bool((h.metadata or {}).get("index_page"))
        for k, s in enumerate(seq):
            whole = True
            if k == own and s.startswith("```"):  # a chunk that starts with code: a cut block's piece?
                s, whole = code_from_statement(s)
            kind = sentence_kind(s, heads, toc)
            # a sentence saying the docs do not cover it is no answer, nor evidence of one (states_a_gap)
            if len(content_terms(s)) >= 2 and len(s) <= _LONGEST_UNIT and allowed(kind, s, question) \
                    and not states_a_gap(s):
                pool.append((h, s))
                labels.append(tabs[k])
                # the overlap starts inside a sentence; a lead-in (or a one-line title after other text of its
                # chunk: a term whose example follows) that ends its chunk announces what the next chunk holds,
                # which must be at hand to come along (a title that is its chunk's whole text, a man page's
                # NAME line, announces nothing); a piece of code from inside a function's body says nothing
                quotable.append(k >= own and whole and not index and not quotes_question(s, question)
                                and not is_caption(s)
                                and not (k == len(seq) - 1 and (_lead_in(s) or (_title_line(s) and k > own
                                                                                 and _whole_line(s, h.text)))
                                         and _next_chunk(h, hits) is None))
            elif kind == "table" and k >= own:
                # a table the question does not ask for whole: each of its rows under the table's first
                # row (its header), a reference table's entry (`delay_seconds | 0.2 | The least time
                # between two requests …`) as a table of its own, a statement of the docs as a sentence is
                for row in header_rows(s):
                    body = row.rsplit("\n", 1)[1]
                    # a row that names a page or section of the hits (`Deploying | What it covers`) is a
                    # table of contents' entry, as a list of headings is: it points, it does not answer
                    if len(content_terms(body)) >= 2 and len(row) <= 1200 and \
                            _normalised(row_cells(body)[0]) not in toc:
                        pool.append((h, row))
                        labels.append(tabs[k])
                        quotable.append(whole and not index and not quotes_question(row, question))
    # no sentence qualifies: the first chunk's whole text is the pool, unless it is a refusal in its words
    if not pool and hits and not states_a_gap(hits[0].text):
        pool, quotable, labels = [(hits[0], hits[0].text)], [True], [None]
    qv = np.asarray(embedder.embed([question])[0])
    # a sentence is embedded as a reader sees it, its code spans without their backticks (as its chunk is)
    sv = np.asarray(embedder.embed([plain_code_spans(s) for _, s in pool])) if pool else np.zeros((0, len(qv)))
    return SentencePool(pool, qv, sv, quotable, labels)


#: a block's caption: its kind and number, then what it shows ("Listing 8-7: Printing each element in a vector
#: …", "Figure 4-1: Representation in memory …", "Table 3.2. Options", "Example 5: …")
_CAPTION = re.compile(r"^(?:listing|figure|fig\.|table|example|exhibit)\s+(?:[A-Z]-?)?\d+(?:[-.–]\d+)*\s*[:.]\s+\S[^\n]*$",
                      re.I)


#: a caption's kind and number alone, where the sentence cutter ended a "sentence" at the number's stop
#: (DocBook's "Table 9.63. General-Purpose Window Functions" was cut at "9.63. G")
_CAPTION_HEAD = re.compile(r"(?:listing|figure|fig\.|table|example|exhibit)\s+(?:[A-Z]-?)?\d+(?:[-.–]\d+)*\.", re.I)


#: an aside in parentheses with no stop of its own ("(`map_try_insert` #82766)", "(since 2.0)", "(const: 1.61.0)"):
#: a dot inside a number or a name is none
_ASIDE = re.compile(r"\((?:[^()\n.!?]|\.(?=\w))*\)")


def _caption_joined(pieces: list[str]) -> list[str]:
    """``pieces`` (one paragraph's sentences) with a caption's kind and number joined again to the title after
    it, so the caption is one unit that :func:`is_caption` knows: cut apart, the title was a unit of its own
    ("Using the `boolean` Type", PostgreSQL's "Example 8.2." caption) and was quoted as an answer. An aside in
    parentheses after a sentence's stop is read with that sentence: rustdoc's "This is a nightly-only experimental
    API. (`map_try_insert` #82766)" was cut after "API.", and the aside alone was quoted as an answer."""
    out: list[str] = []
    for piece in pieces:
        if out and "\n" not in piece and (_CAPTION_HEAD.fullmatch(out[-1]) or (
                _ASIDE.fullmatch(piece.strip()) and not out[-1].startswith("```") and "\n" not in out[-1])):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def is_caption(s: str) -> bool:
    """``s`` is a block's caption (:data:`_CAPTION`): it names the listing, figure or table beside it, which
    is the answer, and says little read alone ("Listing 11-10: Tests for a function that calls println!" was
    quoted as the answer to how to show println! output in tests, without the listing). It stays in the pool
    (evidence that the section is on the question) but is quoted only when nothing else can be."""
    return len(s) <= 300 and _CAPTION.match(s.strip()) is not None


#: a line of a numbered list as the parsers write one (``1. Installs …``, ``2) …``)
_NUMBERED_ITEM = re.compile(r"(?:^|\n)\d{1,3}[.)] ")


def sentences(text: str) -> list[str]:
    """Split chunk text into sentences, keeping code blocks and list items whole; without the chunk's
    overlap (its first block, ``… `` and the previous chunk's last words, which start inside a sentence)."""
    seq, overlap = _sentences_and_overlap(text)
    return seq[overlap:]


#: a component's or an admonition's marker alone in its block, as the Markdown parser writes one
#: (``[Tab macOS]``, ``[TabItem Package import]``, ``[/Tab]``, ``[Steps]``, ``[note Be careful]``,
#: ``[/note]``): structure, not a sentence to quote
_MARKER = re.compile(r"\[(/?)([A-Za-z][\w.-]*)(?: ([^\]\n]{1,80}))?\]")
#: a tab panel's label as the HTML parser writes it, a line of its own before the panel (``macOS:``)
_LABEL_LINE = re.compile(r"[^\s.!?:`\[][^\n.!?:`]{0,40}:")
#: what joins the parts of a name (``tab_width``, ``max-age``, ``os.path``)
_NAME_PARTS = re.compile(r"[_.\-/]+")
#: a heading that is one name, no words around it (``line_length``, ``--port``, ``Session.send()``)
_ONE_NAME = re.compile(r"[-@$]{0,2}[\w.:/-]+(?:\([^()\s]*\))?")
#: a field's value on a line of its own under a definition (``Default: 8.``, ``Since: 2.0``), which says
#: nothing read alone
_FIELD_LINE = re.compile(r"[A-Z][A-Za-z]*(?: [a-z]+){0,2}: +[^\s:][^\n]{0,80}")
#: a component's attribute line after its marker (``string, required``, ``boolean, default: true``): one
#: line that ends no sentence and starts no code block, list or table
_ATTRIBUTE_LINE = re.compile(r"(?![`~|-])[^\n]{1,200}(?<![.!?:;])")


def _sentences_and_overlap(text: str) -> tuple[list[str], int]:
    """Every sentence of chunk text, its overlap's included, and how many of them (first) the overlap holds."""
    seq, overlap, _ = _sentence_units(text)
    return seq, overlap


def _sentence_units(text: str) -> tuple[list[str], int, list[str | None]]:
    """:func:`_sentences_and_overlap`, and the label of the tab each sentence is in (None outside tabs):
    of a tab (``[Tab macOS]`` … ``[/Tab]``, ``[TabItem Linux]``), as every parser writes one, or of an HTML
    tab panel as an index that an earlier version parsed holds it, whose label line (``Linux:``) starts it up to
    the next label; lines like that are read as tab labels only where the chunk has two or more of them (a
    set of tabs), not a lone lead-in ("Example:"), and has no tab's marker."""
    out: list[str] = []
    labels: list[str | None] = []
    overlap = 0
    label: str | None = None
    stack: list[tuple[str, str | None]] = []  # the components open: name, label
    attribute = -1  # the unit that is a component's attribute line, just made
    # a fenced code block with blank lines in it stays one block; a list is cut from what follows it in
    # its block at a lower indent (the next API entry after a member's Parameters)
    raw = [piece for b in split_blocks(text) for piece in _list_then_rest(b)]
    blocks = [b.strip() for b in raw]
    # (a chunk whose tabs are marked, ``[Tab pip]`` … ``[/Tab]``, as every parser writes them now, has no such
    # lines: its lead-ins, "Run this in a virtual environment:", "Then check the version:", are lead-ins)
    marked = any((m := _MARKER.fullmatch(ln.strip())) is not None and "tab" in m.group(2).lower()
                 for b in blocks for ln in b.split("\n"))
    label_lines = not marked and sum(1 for b in blocks if _LABEL_LINE.fullmatch(b)) >= 2
    closes = _marker_closes(blocks)
    for i, block in enumerate(blocks):
        first_overlap = i == 0 and block.startswith("… ")
        if not block or block.startswith("…"):
            block = block.lstrip("… ").strip()
            if not block:
                continue
        # a component's markers that lead its block: the component's label, and what is left is the block
        # (an MDX API field's marker, then its type on the next line: ``[ParamField role]\nstring, default:
        # member``, which was quoted brackets and all, and read without the field's name)
        lines, lead = block.split("\n"), None
        at = blocks[i].count("\n") + 1 - len(lines)  # (the line of blocks[i] that lines[0] is)
        while lines and (m := _MARKER.fullmatch(lines[0].strip())) is not None:
            lines = lines[1:]
            # (a self-closing component, ``<LinkCard title="…" />``, has no closing marker: it labels
            # nothing after it; a tab is open up to its closing marker, which may be in the next chunk)
            opened = bool(m.group(1)) or "tab" in m.group(2).lower() or closes.get((i, at), False)
            at += 1
            label, lead = (_component_label(m, stack, label) if opened else label), (m, opened)
        if not lines:
            continue
        block = "\n".join(lines).strip()
        if lead is not None and _labelled(lead[0]) and len(lines) == 1 and _ATTRIBUTE_LINE.fullmatch(block):
            # the line a component's marker opens with: its attributes (a field's type, required, default)
            # or the text its attributes show (a card's description), of the thing the label names
            out.append(f"{lead[0].group(3)}: {block}")
            labels.append(label if lead[1] else _Label(lead[0].group(3), exclusive=_alternative(lead[0].group(2))))
            attribute = len(out) - 1 if lead[1] else -1
            continue
        if label_lines and _LABEL_LINE.fullmatch(block):
            label = block[:-1].strip()
            continue
        if out and labels[-1] == label and (
                (_FIELD_LINE.fullmatch(block) and len(content_terms(block)) < 2) or _short_field_run(block)) \
                and out[-1][-1:] in ".!?" and not out[-1].startswith("```") and "\n" not in out[-1] \
                and not _POINTER.match(plain_code_spans(out[-1])):  # ("See also verbosity." stays a pointer)
            # "Default: 8." under an option's definition: too few words to be read alone (it never was a
            # candidate), it is read and quoted with the sentence it follows, which says what it is of
            out[-1] = f"{out[-1]} {block}"
            continue
        start = len(out)
        # a list is one unit, numbered or not: a numbered one was cut into sentences, its "1." one of them,
        # so the list a lead-in announces ("`make demo` does three things:") never came along with it
        if block.startswith("```") or "\n- " in block or block.startswith("- ") or _NUMBERED_ITEM.search(block) \
                or _table_block(block):
            # dedented, not stripped: a list indented under a term in the previous chunk (an API entry's
            # Parameters) keeps its items at one level
            out.append(_dedented(raw[i]) if raw[i].strip() == block else block)
        else:
            # text, then a code block ("Usage:" and an example, an HTML <dd> with its <pre>): the text is
            # cut into sentences, the code block stays one, fences and all (a lead-in brings it along:
            # _with_introduced_blocks); cutting at its blank lines or ". " would quote half a block
            for piece, code in fenced_segments(block):
                if code:
                    out.append(piece.strip())
                    continue
                for para in _PARAGRAPH.split(piece):  # sentence ends as in chunking, any script's (chunking.split_sentences),
                    # and the line breaks between a definition list's entries or after an admonition's title
                    parts = entry_lines(para, _SENT_STARTERS)
                    box = next((j for j, x in enumerate(parts[:-1]) if _SEE_ALSO_TITLE.fullmatch(x.strip())), None)
                    if box is not None:  # a "See also" box: its title and all it says are one pointer
                        parts = [*parts[:box], "\n".join(x.strip() for x in parts[box:])]
                    for part in parts:
                        if _SEE_ALSO_BOX.match(part):
                            out.append(part)
                        elif any(LIST_ITEM.match(ln) for ln in part.split("\n")):
                            out.extend(_list_units(part))  # a list indented under a term: never cut at ". "
                        else:
                            out.extend(_caption_joined(
                                [s.strip() for s, _ in split_sentences(part, _SENT_STARTERS) if s.strip()]))
        labels.extend([label] * (len(out) - start))
        if 0 <= attribute == start - 1 and len(out) > start and labels[start] == labels[attribute] \
                and "\n" not in out[start] and not out[start].startswith(("```", "- ")):
            # the component's first sentence is read with its attributes, as the page shows them in one box
            # ("role: string, default: member. The role given to the user."), not apart from its name
            out[attribute] = f"{out[attribute]}. {out.pop(start)}"
            labels.pop(start)
        attribute = -1
        if first_overlap:
            overlap = len(out)
    return out, overlap, labels


def _short_field_run(block: str) -> bool:
    """``block`` is one line of two or more fields, each ``Label: value.``, one of which has too few words to be
    read alone: docutils' settings reference ends each setting so, ``Default: 8.  Option: `--tab-width`.``;
    "Default: 8." was never a candidate, and the line was no lone field line, so *What is the default tab
    width?* was answered without the 8. Such a line is read with the definition before it, as a lone field is."""
    if "\n" in block or len(block) > 200:
        return False
    fields = [s.strip() for s, _ in split_sentences(block, _SENT_STARTERS) if s.strip()]
    return len(fields) >= 2 and all(_FIELD_LINE.fullmatch(f) and f[-1:] in ".!?" for f in fields) \
        and any(len(content_terms(f)) < 2 for f in fields)


def _labelled(m: re.Match[str]) -> bool:
    """Whether marker ``m`` opens a component with a label: a tab (``[Tab macOS]``), an MDX component
    (``[ParamField role]``, ``[Step Install]``, ``[Card Quickstart]``); an admonition's marker, which the
    Markdown parser writes in lower case (``[note Be careful]``), is no component's label."""
    return not m.group(1) and bool(m.group(3)) and (m.group(2)[:1].isupper() or "tab" in m.group(2).lower())


def _marker_closes(blocks: list[str]) -> dict[tuple[int, int], bool]:
    """For each marker line of ``blocks`` (block, line): whether the next marker of its name after it
    closes one (``[/name]``): then a component it opens is closed there, before another of its kind opens,
    and is not one that closes itself. One pass from the end (a rescan per marker was quadratic)."""
    out: dict[tuple[int, int], bool] = {}
    following: dict[str, bool] = {}
    for i in range(len(blocks) - 1, -1, -1):
        lines = blocks[i].split("\n")
        for j in range(len(lines) - 1, -1, -1):
            m = _MARKER.fullmatch(lines[j].strip())
            if m is not None:
                out[(i, j)] = following.get(m.group(2), False)
                following[m.group(2)] = bool(m.group(1))
    return out


def _component_label(m: re.Match[str], stack: list[tuple[str, str | None]], label: str | None) -> str | None:
    """The label the sentences after marker ``m`` are in, ``stack`` the components open before it (updated):
    a tab's or a labelled component's, up to its closing marker; an admonition's marker changes nothing."""
    name = m.group(2)
    if not (name[:1].isupper() or "tab" in name.lower()):
        return label
    if not m.group(1):
        stack.append((name, m.group(3) if _labelled(m) else None))
    else:
        # (a component whose opening marker is in the chunk before: its closing one ends its label too)
        k = next((k for k in range(len(stack) - 1, -1, -1) if stack[k][0] == name), None)
        del stack[k if k is not None else 0:]
    return next((_Label(x, exclusive=_alternative(n)) for n, x in reversed(stack) if x), None)


class _Label(str):
    """A component's label, and whether its sentences are one of alternatives (``exclusive``): a tab's, an API
    field's, of which a question names one and the others answer other questions; a step's or a card's are
    parts of one answer, read with their label's words but never set aside for another's."""

    exclusive: bool

    def __new__(cls, value: str, *, exclusive: bool) -> _Label:
        obj = super().__new__(cls, value)
        obj.exclusive = exclusive
        return obj


def _alternative(name: str) -> bool:
    """A component ``name`` whose siblings are alternatives: a tab (``Tab``, ``TabItem``) or an API field
    (``ParamField``, ``ResponseField``, ``Property``, ``Param``)."""
    low = name.lower()
    return "tab" in low or low.endswith(("field", "param", "parameter", "property", "attribute", "option"))


def _list_then_rest(block: str) -> list[str]:
    """``block`` as one piece, or cut where a list or a code block in it ends and other text goes on: at
    a line after a list that is no item and stands left of the list's items (Sphinx's autodoc writes a
    member's ``Parameters:`` list, its example and the next member, ``  task(*args, **opts)`` and its
    description, in one block), and after the closing fence of a code block
    the block starts with (an example, then the entry's text and the next members). Each was one unit,
    quoted whole: a list or an example brought the next member along. A line at the items' own column or
    right of them (a continuation) stays in the list; a lead-in item ("- Install it with:") still brings
    the code block after it (:func:`_with_introduced_blocks`)."""
    out: list[str] = []
    while True:  # a loop, not a call per piece: a block of a thousand pieces overflowed the stack
        piece, rest = _first_piece(block)
        if rest is None:
            return [*out, block]
        out.append(piece)
        block = rest


def _first_piece(block: str) -> tuple[str, str | None]:
    """The first piece :func:`_list_then_rest` cuts from ``block`` and the rest, or (``block``, None)."""
    if "\n" not in block:
        return block, None
    segments = fenced_segments(block)
    after = "\n".join(piece for piece, _ in segments[1:])
    if segments[0][1]:  # a closed code block first: what follows it is read on its own
        return (segments[0][0], after) if after.strip() else (block, None)
    lines = segments[0][0].split("\n")
    col: int | None = None
    for k, ln in enumerate(lines):
        if not ln.strip():
            continue
        if LIST_ITEM.match(ln):
            col = indent_of(ln) if col is None else min(col, indent_of(ln))
        elif col is not None and indent_of(ln) < col:
            return "\n".join(lines[:k]), "\n".join(lines[k:]) + ("\n" + after if after else "")
    if col is not None and len(segments) > 1 and segments[1][1]:
        # a list, then a code block: the code is most often its last item's, a step's command ("3. Call the
        # processor …" and ``$ asciidoctor my-document.adoc``), so it stays with the list; what follows it
        # is read on its own (the member's text and the next member after its Parameters and example)
        rest = "\n".join(piece for piece, _ in segments[2:])
        if rest.strip():
            return f"{segments[0][0]}\n{segments[1][0]}", rest
    return block, None


def _dedented(block: str) -> str:
    """``block`` without the indentation all its lines share, its blank edges and its trailing spaces; its
    first lines, when still indented deeper than a later one (a list nested under an item that the
    previous chunk holds, then the next item), move to the margin together, so they keep their levels
    among themselves and an answer never starts with an indent (four spaces are a code block in Markdown)."""
    lines = textwrap.dedent(block).strip("\n").rstrip().split("\n")
    lead = indent_of(lines[0])
    k = 0
    while lead and k < len(lines) and (not lines[k].strip() or indent_of(lines[k]) >= lead):
        lines[k] = lines[k][lead:]
        k += 1
    return "\n".join(lines)


#: the longest list read as one unit (a longer one is read item by item), the longest sentence quoted
_LONGEST_UNIT = 1200


def _list_units(part: str) -> list[str]:
    """A list inside a block (indented under a term: an API entry's ``Parameters`` field, a description's
    items) as answer units: the whole list, dedented to its own margin, or, when it is longer than a
    sentence may be, each of its items with the lines under it (a parameter and its description). Cut
    at ". " as prose, an item's second sentence and the whole next item made one "sentence"."""
    whole = _dedented(part)
    if len(whole) <= _LONGEST_UNIT:
        return [whole]
    lines = whole.split("\n")
    col = min(indent_of(ln) for ln in lines if LIST_ITEM.match(ln))
    units: list[list[str]] = [[]]
    for ln in lines:
        if LIST_ITEM.match(ln) and indent_of(ln) == col and units[-1]:
            units.append([])
        units[-1].append(ln)
    return [u for u in (_dedented("\n".join(x)) for x in units) if u]


def code_from_statement(code: str) -> tuple[str, bool]:
    """A chunk's first code block as an answer quotes it, and whether it may be quoted at all. A
    piece of a code block that chunking cut (too long for one chunk) may start inside a body that
    the previous chunk opened: its first code line is indented (the parsers write a code block from
    its own left margin) or closes a bracket (``}``, ``});``, or ``// }`` in a printed object).
    Quoted from there, an answer would start with the end of a function whose start it does not
    show. Such a piece is quoted from its first top-level line (not indented, closing no bracket: a
    statement, or the comment above one), fences kept; one without such a line (all of it inside
    one body) is left without its leading closing lines and is evidence only, never quoted (False)."""
    lines = code.split("\n")
    end = len(lines) - 1 if len(lines) > 1 and lines[-1].lstrip().startswith(("```", "~~~")) else len(lines)
    body = [i for i in range(1, end) if lines[i].strip()]
    if not body:
        return code, True
    if any(is_prompt(lines[i]) for i in body):  # a session: only a ">>> " input starts a statement
        starts = [i for i in body if is_prompt(lines[i])]
        top = starts[0]
    else:
        starts = [i for i in body if not CLOSES_BRACKET.match(lines[i])]
        top = next((i for i in starts if not indent_of(lines[i])), None)
    if top == body[0]:
        return code, True  # it starts at a statement: a whole block, or a piece cut where a reader would
    if top is not None:
        return "\n".join([lines[0], *lines[top:]]), True
    return "\n".join([lines[0], *lines[starts[0] if starts else end:]]), False


_MD_HEADING = re.compile(r"^#{1,6}[ \t]+[^\n]{1,150}$")
#: a sentence that only points elsewhere, a cross-reference of a few words: "See also halt_level.", "See
#: Configuration Files.", "Refer to the API reference.", "Cf. RFC 7231."
#: the title of a "See also" box (Sphinx's ``.. seealso::``, an admonition whose title is a line of its own),
#: and a unit that is such a box: what it says only points elsewhere ("See also\nFAQ: Should I use retry or
#: acks_late?.", "See also\nGo to the Configuration reference for a complete listing of all the settings.")
_SEE_ALSO_TITLE = re.compile(r"see\s+also\s*:?", re.I)
_SEE_ALSO_BOX = re.compile(r"see\s+also\s*:?[ \t]*\n", re.I)
_POINTER = re.compile(r"^(?:see(?:\s+also)?|refer\s+to|cf\.)\s+\S+(?:\s+\S+){0,3}?\s*[.:]?$", re.I)
_QUOTED = re.compile(r"""^\W{0,3}["“'`].{4,}["”'`]\W{0,3}$""", re.S)
_ERRORISH = re.compile(r"^\W{0,3}(\w+(Error|Exception|Warning)\b|Traceback|error:|warning:|fatal:|ERROR\b|WARN(ING)?\b)")
_ASKS_ERROR = re.compile(r"\b(error|errors|exception|exceptions|warning|warnings|message|messages|traceback|fails?|failed)\b",
                         re.I)
_ASKS_TABLE = re.compile(r"\b(table|tables|list|lists|options|values|which|compare|comparison)\b", re.I)


def _normalised(text: str) -> str:
    """``text`` lower-cased, its runs of non-word characters one space: what the echo and duplicate
    checks compare."""
    return re.sub(r"\W+", " ", text).strip().lower()


def _outside_code(text: str) -> str:
    """``text`` with each code span (and fenced block) one placeholder word: a ``|`` in code
    (``frobctl config | grep timeout``) is a shell pipe, never a table's cell boundary."""
    parts = code_parts(text)
    return "".join(p if i % 2 == 0 else "code" for i, p in enumerate(parts))


def _table_row(text: str) -> bool:
    """``text`` reads as table rows: two ``|`` or more outside code spans, set apart by spaces or
    opening the line."""
    text = _outside_code(text)
    return text.count("|") >= 2 and (" | " in text or text.startswith("|"))


def _table_block(block: str) -> bool:
    """``block`` is a table as the parsers write one: two lines or more, each a row of cells
    (``a | b | c``, :func:`~docs_rag_pipeline.table_row.is_row_line`) or a Markdown ``| --- |``
    separator, the pipes outside code spans. A paragraph with a ``|`` in it (a shell pipe in inline
    code, ``a | b`` in prose) is prose, cut into sentences."""
    lines = [ln for ln in _outside_code(block).split("\n") if ln.strip()]
    return len(lines) >= 2 and all(is_row_line(ln) or (TABLE_SEPARATOR.match(ln) and "-" in ln) for ln in lines)


def _lists_only(body: str, titles: Collection[str]) -> bool:
    """``body`` is a list whose every item (nested ones too) is one of ``titles`` (normalised): a table
    of contents (a page's list of its sections, a Sphinx toctree of pages), a list of headings."""
    lines = [ln for ln in body.split("\n") if ln.strip()]
    return bool(titles) and all(LIST_ITEM.match(ln) and _normalised(LIST_ITEM.sub("", ln)) in titles for ln in lines)


def sentence_kind(s: str, headings: Sequence[str] = (), toc: Collection[str] = ()) -> str:
    """``code``, ``table``, ``question``, ``heading`` (echoes a heading or the title, or is a list of
    nothing but ``toc``'s titles and headings, normalised: a table of contents), ``pointer`` (a short
    cross-reference: "See also halt_level."), ``quote`` (a quoted string or an error message) or ``prose``."""
    body = s.strip()
    if body.startswith("```"):
        return "code"
    # a row of two cells, "Baseline | Target", too; a pipe in inline code is no cell boundary; and a piece of
    # a table that a one-cell row (a colspan: docutils' field name on a row of its own) cut from the rest,
    # "Directive Options:\n| name": a line of it is a row
    shown = _outside_code(body).split("\n")
    if _table_row(body) or all(" | " in ln for ln in shown) or (len(shown) > 1 and any(map(is_row_line, shown))):
        return "table"
    body = plain_code_spans(body)  # inline code reads as its text: "`x` or `y`" is no quoted string
    if body.endswith("?"):
        return "question"
    if _MD_HEADING.match(body):  # a Markdown heading left in the text ("## Where Black looks")
        return "heading"
    if _POINTER.match(body) or _SEE_ALSO_BOX.match(body):  # "See also halt_level.": it points at a section,
        # it says nothing of its own; nor does a "See also" box, however long
        return "pointer"
    if _lists_only(body, toc):
        return "heading"
    norm = _normalised(body)
    for h in headings:
        hn = _normalised(h or "")
        # an echo adds a word or two: 12 ASCII characters, or two words of a script whose words are
        # longer in characters or have no spaces ("备份" + "每天凌晨三点自动创建" is a sentence)
        if hn and (norm == hn or (len(norm) <= len(hn) + 12 and norm.startswith(hn)
                                  and (norm.isascii() or len(words(norm[len(hn):])) <= 2))):
            return "heading"
    if _QUOTED.match(body) or _ERRORISH.match(body):
        return "quote"
    return "prose"


def allowed(kind: str, s: str, question: str) -> bool:
    """Never an answer sentence unless asked: a question copied from the docs, a heading echo, a
    pointer ("See also halt_level."), a quoted error string (unless the question is about errors) or a piece of a table (a table of two
    rows or more is fine when the question asks for a list, options or a comparison)."""
    if kind in ("question", "heading", "pointer"):
        return False
    if kind == "quote":
        return bool(_ASKS_ERROR.search(question))
    if kind == "table":
        return bool(_ASKS_TABLE.search(question)) and table_rows(s) is not None
    return True


def quotes_question(s: str, question: str) -> bool:
    """``s`` holds the question itself, word for word ("An LLM answer to What does llm.uncited: drop
    do?, for a model output …"): a page showing the question as an example, not answering it."""
    q = _normalised(question)
    return len(q.split()) >= 4 and f" {q} " in f" {_normalised(s)} "


#: what opens a clause that supposes a gap, or names one, rather than stating it: "When the documentation
#: does not cover a question, the answer is a refusal", "… because the docs most likely don't cover the
#: thing it names", "whether `ask` refuses the questions the docs don't cover", "which would read as …"
_SUPPOSES = re.compile(r"\b(?:when|whenever|if|unless|whether|because|since|which|where|once|until)\b", re.I)
#: the documentation itself, named: "the documentation", "the docs", "the provided sources"; not a
#: product's own "context" or "sources" ("the request context does not contain …", "I don't see a
#: problem"), nor documentation a product makes ("not included in the generated documentation")
_NAMES_THE_DOCS = re.compile(r"\b(?:the|this|these)\s+(?:documentation|docs)\b|\b(?:provided|given|supplied|retrieved)\s+"
                             r"(?:\w+\s+)?(?:sources?|documents?|documentation|docs|texts?|information|materials?|context|"
                             r"passages?|excerpts?)\b", re.I)


def states_a_gap(s: str) -> bool:
    """``s`` states that the documentation does not answer (the words
    :func:`~docs_rag_pipeline.answering.citations.says_not_covered` reads in a model's answer: "… is not
    covered by the documentation, so I can't answer it from the docs", the project's own refusal
    sentence): a refusal written into a page, which quoted as an answer would ship a refusal as
    ``refused: false`` and hide the sentence that answers. Only a sentence of prose whose main clause
    says it: never code, a list, a table or a lead-in (``A question the docs do not cover is refused:``),
    nor a clause that supposes a gap (*when*, *if*, *because*, *whether*, *which* … before it: a page
    describing how questions the docs don't cover are handled), nor one that names no documentation
    as *the documentation*, *the docs* or *the provided …* (a product's "context" or "sources", "the
    generated documentation", a design note's "I don't see a problem"). Inline code is not read."""
    from .citations import SAYS_NOT_COVERED

    body = s.strip()
    if "\n" in body or body.startswith("```") or LIST_ITEM.match(body) or _lead_in(body):
        return False
    text = _outside_code(body)
    m = SAYS_NOT_COVERED.search(text)
    return m is not None and not _SUPPOSES.search(text[:m.start()]) and bool(_NAMES_THE_DOCS.search(text))


#: a word as a question names a table row's key: `69`, `delay_seconds`, `--port`, `http.lowSpeedTime`
_KEY_WORD = re.compile(r"\w[\w.\-/]*\w|\w")


def _names_key(s: str, asked: set[str]) -> bool:
    """``s`` is a table row under its header whose first cell (its key, code marks aside) is a word of
    the question: *what does exit status 69 mean?* names the row `69`, not the row `1`."""
    rows = table_rows(s) if _table_block(s) else None
    if rows is None or len(rows) != 2:  # a whole table (asked for) names no one row
        return False
    key = rows[1][0].strip().strip("`").strip().lower()
    return bool(key) and key.lstrip("-") in {w.lstrip("-") for w in asked}


def _near_duplicate(a: str, b: str) -> bool:
    head = a.split("\n", 1)[0]
    if "\n" in a and not is_rule_line(head) and head == b.split("\n", 1)[0] and table_rows(a) and table_rows(b):
        # two rows of one table under its header: the one that answers is quoted, not the table (a rule line is
        # every headerless table's first line: rows under it are of any table, and are told apart by their text)
        return True
    na, nb = _normalised(a), _normalised(b)
    return na in nb or nb in na or _jaccard(a, b) >= 0.5


def _jaccard(a: str, b: str) -> float:
    sa, sb = set(content_terms(a)), set(content_terms(b))
    return len(sa & sb) / max(1, len(sa | sb))


def _lead_in(s: str) -> bool:
    return s.rstrip().endswith(":")


def _title_line(s: str) -> bool:
    """``s`` is a title of one line, no sentence (no stop, at most 12 words, no code, list or table): a
    definition's term whose description opens with a code block (git's EXAMPLES, "Undo a commit and redo"
    then the commands), a procedure's title before its steps (DocBook's "Recursive Query Evaluation"), which
    names the code or list under it as a lead-in announces it. A line with a code span in it is prose about
    the code, not a title, even without its stop (requests' "Hotfixes will not include upgrades to vendored
    dependencies after `v2.6.2`", a paragraph of its own)."""
    body = s.strip()
    return ("\n" not in body and 0 < len(body.split()) <= 12 and body[-1:] not in ".!?:;,"
            and "`" not in body and not body.startswith(("- ", "* ", "|")) and not LIST_ITEM.match(body))


def _whole_line(s: str, text: str) -> bool:
    """``s`` is a whole line of ``text``, not the end of a paragraph's line: a title or a term stands on a line of
    its own; a paragraph's last sentence that lacks its stop ("Hotfixes will not include upgrades to vendored
    dependencies after `v2.6.2`", requests' release process) is no title, and ends its chunk as any sentence does."""
    body = s.strip()
    return any(line.strip() == body for line in text.split("\n"))


def _next_chunk(h: Hit, hits: Sequence[Hit]) -> Hit | None:
    """The chunk that follows ``h`` on its page, when it is among ``hits``: the same page of the same
    source (two sources may index the same URL; the other's page is another page)."""
    return next((x for x in hits if x.source == h.source and x.page_url == h.page_url
                 and x.chunk_index == h.chunk_index + 1), None)


def _definition_list(text: str, first: str) -> str | None:
    """The definition list of ``text`` (a block of terms, each with its description indented under it, as the
    parsers write a ``<dl>``) whose first entry is ``first``, whole; None when ``first`` opens no such block."""
    first = first.strip("\n")
    for block in text.split("\n\n"):
        block = block.strip("\n")
        if not block.startswith(first):
            continue
        lines = block.split("\n")
        if len(lines) >= 2 and not lines[0][:1].isspace() and lines[1].startswith("  ") \
                and lines[-1].startswith("  ") and not LIST_ITEM.match(lines[0]) and "```" not in block:
            return block
    return None


def _with_introduced_blocks(chosen: list[tuple[Hit, str]], hits: Sequence[Hit] = ()) -> list[tuple[Hit, str]]:
    """A sentence that ends with a colon introduces what follows it ("Install it with:", "blackd can
    produce the following response codes:"): the code block, list or table right after it is the
    answer it announces, so it comes along (once): from its chunk, or, when the sentence ends its
    chunk, from the start of the page's next chunk (among ``hits``), cited to that chunk."""
    out: list[tuple[Hit, str]] = []
    for h, s in chosen:
        if (h, s) in out or any(x is h and s != y and s.strip() in y for x, y in out):
            continue  # (quoted already, or in a definition list a lead-in brought along)
        out.append((h, s))
        titled = _title_line(s)
        if not (_lead_in(s) or titled):
            continue
        seq = sentences(h.text)
        at = next((i for i, x in enumerate(seq) if x == s), None)
        where, nxt = h, (seq[at + 1] if at is not None and at + 1 < len(seq) else None)
        if nxt is None and at == len(seq) - 1 and (following := _next_chunk(h, hits)) is not None and (
                _lead_in(s) or tuple(following.headings) == tuple(h.headings)):
            # (a title's example or steps go on in its section: a line without a stop that ends its section,
            # "The maximum upload size is 10 MB per file", announces nothing of the next one, whose first block,
            # `rm -rf /var/lib/store/*`, came along; review6 F6)
            where, nxt = following, next(iter(sentences(following.text)), None)
        kind = sentence_kind(nxt) if nxt is not None else None
        if titled and not (kind == "code" or (nxt is not None and LIST_ITEM.match(nxt))):
            continue  # a title brings the code or the list under it (a term's example, a procedure's steps) only
        # a definition list comes along whole ("Acceptable values are …, including:" then `strict`, `replace`,
        # `ignore`, each with its description: docutils' settings); before, the lead-in was quoted alone
        if _lead_in(s) and nxt is not None and (entries := _definition_list(where.text, nxt)) is not None:
            if (where, entries) not in out:
                # an entry of it chosen before its lead-in (chosen is in score order) is quoted in it, not twice
                out[:] = [(x, y) for x, y in out if not (x is where and y != s and y.strip() in entries)]
                out.append((where, entries))
            continue
        # a table comes along only whole (two rows or more): a single row is a cell dump, as everywhere
        if nxt is not None and (where, nxt) not in out and (
                kind == "code" or (kind == "table" and table_rows(nxt) is not None)
                or nxt.lstrip().startswith(("- ", "* ", "1. "))):
            out.append((where, nxt))
    return out


def _without_rows_quoted_whole(parts: list[tuple[Hit, str]]) -> list[tuple[Hit, str]]:
    """``parts`` without a table's row under its header (:func:`~.tables.header_rows`) when the whole
    table is quoted too (a lead-in brought it along): the row would be shown twice, as two tables."""
    def lines(s: str) -> set[str]:
        return {ln.strip() for ln in s.strip().split("\n")}

    tables = [(h, lines(s)) for h, s in parts if (rows := table_rows(s)) is not None and len(rows) > 2]
    return [(h, s) for h, s in parts if not (
        (rows := table_rows(s)) is not None and len(rows) == 2
        and any(h is w and lines(s) <= whole for w, whole in tables))]


def _ends_with_block(s: str) -> bool:
    """Whether a statement ends with a fenced code block or a table row (a list item or a line of
    text whose code block or table comes last): its marker goes on the line after it, as a code
    block's does. Only spaces may follow a closing fence (CommonMark), so "``` [2]" closes nothing
    and the rest of the answer would be drawn as code; a marker on a table row is a cell of it."""
    segments = fenced_segments(s.rstrip())
    if segments and segments[-1][1]:
        return True
    return "\n" in s.strip() and _table_row(s.rstrip().rsplit("\n", 1)[-1].strip())


def snippet(text: str, n: int = 240) -> str:
    t = re.sub(r"\s+", " ", without_bidi_overrides(text)).strip()
    return t if len(t) <= n else t[: n - 1].rsplit(" ", 1)[0] + "…"


def extractive_answer(question: str, hits: Sequence[Hit], embedder: Embedder, cfg: RetrievalConfig, *,
                      max_sentences: int = 3, trace_id: str | None = None,
                      vocabulary: frozenset[str] | None = None,
                      stats: tuple[int, dict[str, int]] | None = None) -> Answer:
    trace_id = trace_id or uuid.uuid4().hex
    sp = sentence_pool(question, hits, embedder) if hits else None
    rel = judge(question, hits, cfg, vocabulary, getattr(embedder, "count_tokens", None), stats, pool=sp)
    if not rel.relevant or sp is None:
        return Answer(answer=REFUSAL, citations=[], refused=True, trace_id=trace_id)
    pool, qv, sv = sp.items, sp.question_vector, sp.vectors
    quotable = sp.quotable or [True] * len(pool)
    lang = question_language(question)
    qterms = {_stem(t, lang) for t in content_terms(question, lang)}
    asked = {w.lower() for w in _KEY_WORD.findall(question)}
    scores = []
    sentence_terms = [content_terms(s) for _, s in pool]
    tabs = sp.labels or [None] * len(pool)
    # (a label that is a name is read by its parts too, as a heading is: a field `send_invite`)
    tab_terms = [{_stem(t, lang) for t in content_terms(f"{x} {_NAME_PARTS.sub(' ', x)}")} if x else set()
                 for x in tabs]
    # the tabs the question names, per chunk: "on Windows" asks for the Windows tab's sentences, and the
    # other tabs' (macOS, Linux) answer another question, however alike their words
    # (a question's word names a label's word it begins: "mac" the tab "macOS", "win" "Windows")
    tab_named = [{q for q in qterms if any(t == q or (len(q) >= 3 and t.startswith(q)) for t in tab)}
                 for tab in tab_terms]
    named: dict[str, set[str]] = {}
    # (an HTML tab's label line is a plain str: a tab; a step's or a card's label sets nothing aside)
    exclusive = [tab is not None and getattr(tab, "exclusive", True) for tab in tabs]
    for (h, _), asked_tab, alt in zip(pool, tab_named, exclusive):
        named.setdefault(h.chunk_id, set()).update(asked_tab if alt else ())
    # a sentence is read with its section's heading too: a reference section's definition ("Controls how
    # many progress messages the tool prints") never repeats the name its heading gives (`verbosity`)
    # (a name's parts too: a question says "tab width" for `tab_width`, "max age" for `max-age`)
    head_terms = [{_stem(t, lang) for t in content_terms(f"{h.headings[-1]} {_NAME_PARTS.sub(' ', h.headings[-1])}")}
                  if h.headings else set() for h, _ in pool]
    # a section headed by a name (`line_length`, `--port`, `Session.send()`): a reference entry of one thing
    name_headed = [bool(h.headings) and _ONE_NAME.fullmatch(h.headings[-1].strip().strip("`")) is not None
             for h, _ in pool]
    other_tab: list[bool] = []
    for (h, s), v, terms, tab, asked_tab, head in zip(pool, sv, sentence_terms, tabs, tab_named, head_terms):
        # a sentence in a tab is read with the tab's label: "Install it with winget" says Windows by its tab
        overlap = len(qterms & ({_stem(t, lang) for t in terms} | asked_tab | head)) / max(1, len(qterms))
        other_tab.append(tab is not None and getattr(tab, "exclusive", True) and bool(named[h.chunk_id])
                         and not asked_tab)
        scores.append(float(np.dot(qv, v)) + 0.3 * overlap + 0.05 * (h.fused * 60) + 0.3 * _names_key(s, asked)
                      - 0.3 * other_tab[-1])
    order = np.argsort(-np.asarray(scores))
    # a question in a script the embedding model cannot read: its similarity to any sentence of that
    # script is about the same (0.45-0.75 with the English model, whatever they say), so no evidence
    # that a sentence answers it
    unreadable = not_latin(question)
    chosen: list[tuple[Hit, str, float]] = []
    first = -1  # the pool index of the first sentence chosen
    order = [i for i in order if quotable[i]] or list(order)
    if not order:
        return Answer(answer=REFUSAL, citations=[], refused=True, trace_id=trace_id)
    for i in order:
        h, s = pool[i]
        if any(_near_duplicate(s, c) for _, c, _ in chosen):
            continue
        if chosen and other_tab[i]:
            continue  # another tab's sentence than the one the question names: it answers another question
        if chosen and name_headed[i] and not qterms & head_terms[i] and qterms & head_terms[first]:
            # the answer's section is the one the question names (`tab_width`): a sentence in the section
            # of another name (`line_length`) is of something else, however alike ("Default: 88.")
            continue
        if chosen and scores[i] < 0.6 * scores[order[0]]:
            break
        if chosen and unreadable and (h.page_url, tuple(h.headings)) not in {
                (c.page_url, tuple(c.headings)) for c, _, _ in chosen} and not (
                qterms & {_stem(t) for t in sentence_terms[i]}):
            continue  # another section's sentence, and nothing says it answers: none of the question's words
        if not chosen:
            first = i
        chosen.append((h, s, scores[i]))
        if len(chosen) == max_sentences:
            break
    citations: dict[str, Citation] = {}
    parts: list[str] = []
    for h, s in _without_rows_quoted_whole(_with_introduced_blocks([(h, s) for h, s, _ in chosen], hits)):
        c = citations.get(h.chunk_id)
        if c is None:
            c = Citation(n=len(citations) + 1, chunk_id=h.chunk_id, url=h.url, title=h.title,
                         snippet=snippet(h.text), score=round(h.fused, 6), supported=True, source=h.source)
            citations[h.chunk_id] = c
        # a code block or a table is rendered as such: its marker goes on the line after it
        if sentence_kind(s) == "code" and s.count("```") % 2:
            s = s.rstrip() + "\n```"  # a block cut by chunking: close it, or it swallows the rest
        kind = sentence_kind(s)
        own_line = kind in ("code", "table") or _ends_with_block(s)
        s = without_bidi_overrides(neutralise(s))  # a document's own [2] is not our citation 2, nor is
        # a bidi control that would carry the marker after the sentence into it
        if kind == "table":
            s = markdown_table(s)  # drawn as a table by Markdown clients and the chat page
        parts.append(f"{s}\n[{c.n}]" if own_line else f"{s} [{c.n}]")
    from .citations import CitationError, _unlinked, _without_foreign_links

    try:  # a document's markup is its text here: no link to a target no source gives, no tag that runs
        answer = _without_foreign_links(_unlinked("\n\n".join(parts), hits), hits)
    except CitationError:  # nothing quoted can be made safe to render: no answer rather than markup that runs
        return Answer(answer=REFUSAL, citations=[], refused=True, trace_id=trace_id)
    return Answer(answer=answer, citations=list(citations.values()), refused=False, trace_id=trace_id)
