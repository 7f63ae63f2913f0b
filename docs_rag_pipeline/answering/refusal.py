"""Should a question be refused? Signals of the retrieved hits combined by a small logistic model.

Each signal is computed from the question, the retrieved hits and the index's statistics only (no
corpus-specific rule or word list). The coefficients in ``refusal_model.json`` were fitted by
``eval/fit_refusal.py`` on the calibration halves of the golden sets in ``eval/sets`` (plus the
project's own cases). The model is shipped disabled (``"enabled": false``): in leave-one-set-out
checks on calibration halves it did not generalise better than the threshold rule of
``extractive.is_relevant`` (see docs/evaluation.md), so the rule decides. ``fit_refusal.py --enable``
writes an enabled model.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Callable, Sequence

from ..records import Hit
from ..words import is_spaceless, words

MODEL_FILE = Path(__file__).with_name("refusal_model.json")
#: chunks without the question's words added to the index's count when words are weighed by rarity
#: (see :func:`signals`): a prior, so that a word in every chunk of a tiny index still weighs something
PRIOR_CHUNKS = 10

#: the model's inputs, in order
FEATURES = ("sim", "sim_gap", "coverage", "coverage_top1", "specific_coverage", "unknown_share",
            "bm25_norm", "title_coverage", "idf_coverage", "max_missing_idf", "bigram_coverage",
            "chunk_coverage", "missing_specific", "page_agreement", "sentence_sim")

def corpus_stats(chunks) -> tuple[int, dict[str, int]] | None:  # noqa: ANN001 - a store.ChunksTable
    """(number of chunks, stemmed word → number of chunks using it) of the served text, kept per table
    version (``ChunksTable.word_stats``, counted in the same pass as the vocabulary)."""
    if chunks is None or not chunks.exists():
        return None
    stats = chunks.word_stats()
    return stats.chunks, stats.stems


def features(question: str, hits: Sequence[Hit], vocabulary: frozenset[str] | None,
             count: Callable[[str], int] | None = None,
             stats: tuple[int, dict[str, int]] | None = None,
             sentence_similarity: float | None = None) -> dict[str, float]:
    """The refusal signals of one question (all 0 when nothing was retrieved). ``stats`` (see
    :func:`corpus_stats`) weighs the question's words by their rarity in the indexed docs."""
    return signals(question, hits, vocabulary, count, stats, sentence_similarity)[0]


def signals(question: str, hits: Sequence[Hit], vocabulary: frozenset[str] | None,
            count: Callable[[str], int] | None = None,
            stats: tuple[int, dict[str, int]] | None = None,
            sentence_similarity: float | None = None) -> tuple[dict[str, float], tuple[str, ...]]:
    """:func:`features` and the question's unknown terms (``extractive.unknown_terms``), computed
    once for both the model's signals and the threshold rule."""
    from .extractive import (_stem, avoided_terms, content_terms, in_compound, lexical_evidence, question_language,
                             term_coverage, unknown_terms)

    unknown = unknown_terms(question, vocabulary, count)
    if not hits:
        return {k: 0.0 for k in FEATURES}, unknown
    sims = sorted((h.vector_similarity or 0.0 for h in hits), reverse=True)
    lang = question_language(question)  # None: English (stop words and stems of the question's language)
    terms = content_terms(question, lang)
    texts = [f"{h.title} {' '.join(h.headings)} {h.text}" for h in hits]
    # specific words: rare enough to be split by the model's word-piece vocabulary (or with digits); a
    # character bigram of a script written without spaces is two pieces whatever it means, so never
    # specific by its pieces
    pieces = [count(t) if count is not None and not is_spaceless(t) else 1 for t in terms]
    specific_flags = [any(ch.isdigit() for ch in t) or p >= 2 for t, p in zip(terms, pieces)]
    specific = [t for t, sp in zip(terms, specific_flags) if sp]
    top_words = {w for t in texts[:3] for w in words(t)}
    vocab = {_stem(w, lang) for w in top_words}
    # a question word is in the top chunks by its stem, or (German, Dutch …) as part of a compound
    spec_cov = sum(_stem(t, lang) in vocab or in_compound(t, top_words, lang)
                   for t in specific) / len(specific) if specific else 1.0
    ft = [h.fulltext_score or 0.0 for h in hits]
    top = hits[0]
    heads = f"{top.title} {' '.join(top.headings)}"
    # rarity-weighted coverage: a missing rare word says more than a missing common one
    n, df = stats if stats else (1, {})
    # the index is read as if it held PRIOR_CHUNKS more chunks that lack the question's words: in an
    # index of one page every word of it is in every chunk, so each weighed 0 and a question matching
    # the page word for word was judged by the one word the page lacks ("many"); past a few hundred
    # chunks (every golden set) the prior moves a weight by less than 0.01
    m = n + (PRIOR_CHUNKS if stats else 0)
    top_idf = math.log(m + 1)
    stems = [_stem(t, lang) for t in terms]
    # rarity of each word (its IDF over the largest possible); a word the docs never use weighs fully
    # only when it is a specific one (several word pieces): a common English word the docs happen not
    # to use ("stuck", "breaks") says little
    raw = [math.log((m + 1) / (df.get(s, 0) + 1)) / top_idf if top_idf else 1.0 for s in stems]
    idf = [r * (1.0 if df.get(s, 0) or count is None or p >= 2 else 0.3) for r, s, p in zip(raw, stems, pieces)]
    total = sum(idf)
    found = [s in vocab or in_compound(t, top_words, lang) for s, t in zip(stems, terms)]
    # the same rarity-weighted share, but within one chunk (the best of the top five): an answer is
    # usually in one place, while a near miss gathers its words from several chunks
    # a question with letters but no content word: no lexical evidence, never full coverage
    none_found = 1.0 if lexical_evidence(question) else 0.0
    chunk_cov = none_found
    if terms and total:
        chunk_words = [set(words(t)) for t in texts[:5]]
        chunk_stems = [{_stem(x, lang) for x in cw} for cw in chunk_words]
        chunk_cov = max(sum(w for w, s, t in zip(idf, stems, terms) if s in cs or in_compound(t, cw, lang))
                        for cw, cs in zip(chunk_words, chunk_stems)) / total
    idf_cov = sum(w for w, f in zip(idf, found) if f) / total if terms and total else none_found
    missing = max((w for w, f in zip(idf, found) if not f), default=0.0)
    # the same for specific words only: a named thing the top chunks lack is what a near miss asks
    # about; a plain English word they lack says little, least of all in a small corpus where every
    # word is rare
    # (not a word of what the question says it goes without: "no Jest or Mocha", extractive.avoided_terms)
    avoided = avoided_terms(question)
    missing_specific = max((w for w, f, sp, t in zip(raw, found, specific_flags, terms) if sp and not f and t not in avoided),
                           default=0.0)
    # the best BM25 score against what the question's words could score at most (their IDF sum)
    from ..retrieval import _fts_query

    qwords = [_stem(w, lang) for w in _fts_query(question).lower().split()]
    bm25_max = sum(math.log(1 + (n - df.get(w, 0) + 0.5) / (df.get(w, 0) + 0.5)) for w in qwords) if stats else 0.0
    # adjacent pairs of the question's words found adjacent in the top hits ("rate limit")
    pairs = list(zip(stems, stems[1:]))
    seqs = [[_stem(w, lang) for w in words(t)] for t in texts[:3]]
    adj = {(a, b) for s in seqs for a, b in zip(s, s[1:])}
    bigram = sum(p in adj for p in pairs) / len(pairs) if pairs else 1.0
    return {
        "sim": round(sims[0], 4),
        "sim_gap": round(sims[0] - (sims[1] if len(sims) > 1 else 0.0), 4),
        "coverage": round(term_coverage(question, texts[:3]), 4),
        "coverage_top1": round(term_coverage(question, texts[:1]), 4),
        "specific_coverage": round(spec_cov, 4),
        "unknown_share": round(len(unknown) / len(terms), 4) if terms else 0.0,
        "bm25_norm": round(max(ft) / bm25_max, 4) if bm25_max else 0.0,
        "title_coverage": round(term_coverage(question, [heads]), 4) if heads.strip() else 0.0,
        "idf_coverage": round(idf_cov, 4),
        "max_missing_idf": round(missing, 4),
        "bigram_coverage": round(bigram, 4),
        "chunk_coverage": round(chunk_cov, 4),
        "missing_specific": round(missing_specific, 4),
        # share of the first 5 pages the full-text and vector rankings agree on (unknown: no evidence)
        "page_agreement": round(shared / 5, 4) if (shared := getattr(hits, "shared_pages", None)) is not None else 1.0,
        # the best similarity of one answer sentence of the top chunks (without an embedder: the chunk's)
        "sentence_sim": round(sentence_similarity if sentence_similarity is not None else sims[0], 4),
    }, unknown


@functools.lru_cache(maxsize=1)
def load_model(path: str = str(MODEL_FILE)) -> dict | None:
    p = Path(path)
    if not p.is_file():
        return None
    return json.loads(p.read_text())


def probability(feats: dict[str, float], model: dict) -> float:
    """P(the docs answer the question) under the logistic model."""
    z = model["intercept"]
    for name, w, mu, sd in zip(model["features"], model["weights"], model["mean"], model["std"]):
        z += w * (feats.get(name, 0.0) - mu) / (sd or 1.0)
    return 1.0 / (1.0 + math.exp(-z))


def answerable(feats: dict[str, float], model: dict | None = None) -> bool | None:
    """True/False from the fitted model, None when no model is installed or it is not enabled (then
    the threshold rule decides)."""
    model = model if model is not None else load_model()
    if model is None or not model.get("enabled", True):
        return None
    return probability(feats, model) >= model["threshold"]
