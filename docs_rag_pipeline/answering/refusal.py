"""Should a question be refused? Signals of the retrieved hits combined by a small logistic model.

Each signal is computed from the question, the retrieved hits and the index's vocabulary only (no
corpus-specific rule or word list). The coefficients in ``refusal_model.json`` were fitted by
``eval/fit_refusal.py`` on the calibration halves of the golden sets in ``eval/sets`` (plus the
project's own cases) and are checked on their test halves by ``make eval-sets``.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Callable, Sequence

from ..records import Hit

MODEL_FILE = Path(__file__).with_name("refusal_model.json")

#: the model's inputs, in order
FEATURES = ("sim", "sim_gap", "coverage", "coverage_top1", "specific_coverage", "unknown_share",
            "bm25_per_term", "agreement", "title_coverage")


def features(question: str, hits: Sequence[Hit], vocabulary: frozenset[str] | None,
             count: Callable[[str], int] | None = None) -> dict[str, float]:
    """The refusal signals of one question (all 0 when nothing was retrieved)."""
    from .extractive import _WORD, _stem, content_terms, term_coverage, unknown_terms

    if not hits:
        return {k: 0.0 for k in FEATURES}
    sims = sorted((h.vector_similarity or 0.0 for h in hits), reverse=True)
    terms = content_terms(question)
    texts = [f"{h.title} {' '.join(h.headings)} {h.text}" for h in hits]
    # specific words: rare enough to be split by the model's word-piece vocabulary (or with digits)
    specific = [t for t in terms if any(ch.isdigit() for ch in t) or (count is not None and count(t) >= 2)]
    vocab = {_stem(w) for t in texts[:3] for w in _WORD.findall(t.lower())}
    spec_cov = sum(_stem(t) in vocab for t in specific) / len(specific) if specific else 1.0
    unknown = unknown_terms(question, vocabulary, count)
    ft = [h.fulltext_score or 0.0 for h in hits]
    top = hits[0]
    heads = f"{top.title} {' '.join(top.headings)}"
    return {
        "sim": round(sims[0], 4),
        "sim_gap": round(sims[0] - (sims[1] if len(sims) > 1 else 0.0), 4),
        "coverage": round(term_coverage(question, texts[:3]), 4),
        "coverage_top1": round(term_coverage(question, texts[:1]), 4),
        "specific_coverage": round(spec_cov, 4),
        "unknown_share": round(len(unknown) / len(terms), 4) if terms else 0.0,
        "bm25_per_term": round(math.log1p(max(ft) / max(1, len(terms))), 4),
        # the top hit was found by both retrievers
        "agreement": 1.0 if (top.fulltext_score or 0.0) > 0 and (top.vector_similarity or 0.0) >= sims[-1] else 0.0,
        "title_coverage": round(term_coverage(question, [heads]), 4) if heads.strip() else 0.0,
    }


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
    """True/False from the fitted model, None when no model is installed."""
    model = model if model is not None else load_model()
    if model is None:
        return None
    return probability(feats, model) >= model["threshold"]
