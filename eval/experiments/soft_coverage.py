"""Experiment (2026-11-24): does a soft, token-level term coverage help refusal?

For each calibration case of the golden sets (and the project's own cases), the question and each of
its top three chunks are encoded token by token with the embedding model (all-MiniLM-L6-v2, through
``numpy_bert``; its last layer, before pooling). Each content word of the question gets the best
cosine similarity of its word pieces to any token of the chunk (late interaction, as ColBERT scores),
so a paraphrase ("coworker" against "other machines") scores partly where the lexical coverage
signals score 0. Three signals: ``soft_mean`` (mean over the question's words, best chunk),
``soft_min`` (the weakest word, best chunk) and ``soft_min_any`` (the weakest word, any chunk).

Printed: each signal's ROC AUC per set next to the shipped signals', then the leave-one-set-out
refusal of a logistic model with and without them (threshold chosen on the other sets, as
``fit_refusal.py`` does), and once more with every set's signals standardised over that set's own
questions (label-free, but it needs a set of real questions per corpus: an upper bound for a refusal
that adapts its scale to the corpus). Test halves are never read.

    python eval/experiments/soft_coverage.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "eval"))

import fit_refusal as fr  # noqa: E402
from docs_rag_pipeline import evaluation  # noqa: E402
from docs_rag_pipeline.answering.extractive import STOPWORDS, content_terms, judge  # noqa: E402
from docs_rag_pipeline.answering.refusal import FEATURES, corpus_stats  # noqa: E402
from docs_rag_pipeline.context import get_context  # noqa: E402
from docs_rag_pipeline.embedding import packaged_model_dir  # noqa: E402
from docs_rag_pipeline.numpy_bert import NumpyBert  # noqa: E402

SOFT = ("soft_mean", "soft_min", "soft_min_any")


def cases_of(cfg: Path, cases_file: Path | None = None) -> list[dict]:
    ctx = get_context(cfg)
    src = ctx.config.sources[0]
    path = cases_file or evaluation.cases_path(ctx.config, src.name)
    cases = evaluation.select_split(evaluation.load_cases(path, root_url=evaluation.source_root_url(src)), "calibration")
    if not cases:
        return []
    if cases_file is None:
        from docs_rag_pipeline.refresh import refresh

        refresh(ctx, src.name)
    stats = corpus_stats(ctx.chunks)
    rows = []
    for c in cases:
        hits = fr._cached_search(ctx, c.question, ctx.config.retrieval.top_k, src.name)
        rel = judge(c.question, hits, ctx.config.retrieval, ctx.chunks.vocabulary(), ctx.embedder.count_tokens,
                    stats, embedder=ctx.embedder)
        rows.append({"q": c.question, "y": 0 if c.should_refuse else 1, "feats": dict(rel.features),
                     "rule_refused": not rel.relevant,
                     "chunks": [f"{h.title} {' '.join(h.headings)} {h.text}" for h in hits[:3]]})
    return rows


class TokenEncoder:
    def __init__(self) -> None:
        self.bert = NumpyBert(packaged_model_dir("all-MiniLM-L6-v2"), max_tokens=256)

    def __call__(self, text: str):  # noqa: ANN204 - (encoding, unit token vectors)
        enc = self.bert.tokenizer.encode(text)
        ids = np.array([enc.ids])
        h = self.bert._encode(ids, np.ones_like(ids, dtype=np.float32))[0]
        return enc, h / np.linalg.norm(h, axis=1, keepdims=True)


def soft_signals(row: dict, encode: TokenEncoder) -> dict[str, float]:
    enc, qh = encode(row["q"])
    terms = {w.lower() for w in content_terms(row["q"])}
    pieces: dict[int, list[int]] = {}
    for i, wid in enumerate(enc.word_ids):
        if wid is not None:
            pieces.setdefault(wid, []).append(i)
    qwords = []
    for idx in pieces.values():
        w = row["q"][enc.offsets[idx[0]][0]:enc.offsets[idx[-1]][1]].lower()
        if w in terms or (w not in STOPWORDS and re.search(r"[a-z0-9]", w) and len(w) > 2):
            qwords.append(idx)
    if not qwords or not row["chunks"]:
        return dict.fromkeys(SOFT, 0.0)
    per_chunk = []
    for text in row["chunks"]:
        sim = qh @ encode(text)[1][1:-1].T
        per_chunk.append([float(np.mean(sim[idx].max(1))) for idx in qwords])
    a = np.array(per_chunk)
    return {"soft_mean": float(a.mean(1).max()), "soft_min": float(a.min(1).max()), "soft_min_any": float(a.max(0).min())}


def auc(y: np.ndarray, s: np.ndarray) -> float:
    pos, neg = s[y == 1], s[y == 0]
    return float(np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg])) if len(pos) and len(neg) else float("nan")


def raw(rows: list[dict], feats: list[str]) -> np.ndarray:
    """The rows' signals ``feats``, one row a case."""
    return np.array([[r["feats"][f] for f in feats] for r in rows])


def print_auc(data: dict[str, list[dict]], shown: tuple[str, ...]) -> None:
    """Each signal's ROC AUC (answerable against to refuse), per set."""
    print("ROC AUC (answerable vs to refuse), calibration halves")
    for name, rows in data.items():
        y = np.array([r["y"] for r in rows])
        print(f"{name:13s} " + "  ".join(f"{f} {auc(y, np.array([r['feats'][f] for r in rows])):.3f}" for f in shown))


def main() -> None:
    data = {c.stem: r for c in sorted((ROOT / "eval" / "sets").glob("*.yaml")) if (r := cases_of(c))}
    data["project-docs"] = cases_of(fr.project_config(), ROOT / "eval" / "project-docs.jsonl")
    encode = TokenEncoder()
    for rows in data.values():
        for r in rows:
            r["feats"].update(soft_signals(r, encode))
    print_auc(data, (*SOFT, "sim", "sentence_sim", "chunk_coverage", "idf_coverage"))

    def per_set(rows: list[dict], feats: list[str]) -> np.ndarray:
        a = raw(rows, feats)
        sd = a.std(0)
        return (a - a.mean(0)) / np.where(sd == 0, 1.0, sd)

    for label, feats, scale in (("shipped signals", list(FEATURES), raw), ("shipped + soft", [*FEATURES, *SOFT], raw),
                                ("shipped + soft, each set standardised over its own questions", [*FEATURES, *SOFT], per_set)):
        print(f"leave-one-set-out, logistic model on {label}")
        print_leave_one_set_out(data, feats, scale)


def print_leave_one_set_out(data: dict[str, list[dict]], feats: list[str], scale) -> None:  # noqa: ANN001
    """For each set, the logistic model fitted on the other sets' rows (``scale(rows, feats)`` gives its
    inputs) against the shipped rule: refusal precision and recall on the set left out."""
    for held in data:
        rest = [r for k, v in data.items() if k != held for r in v]
        fr_feats = fr.FEATURES
        try:
            fr.FEATURES = tuple(feats)
            m = fr.fit(scale(rest, feats), np.array([r["y"] for r in rest]))
        finally:
            fr.FEATURES = fr_feats
        yh = np.array([r["y"] for r in data[held]])
        p, r_ = fr.refusal_pr(fr.predict(m, scale(data[held], feats)), yh, m["threshold"])
        rp, rr = fr.refusal_pr(np.where([c["rule_refused"] for c in data[held]], 0.0, 1.0), yh, 0.5)
        print(f"  {held:13s} model P {p:.2f} R {r_:.2f} | rule P {rp:.2f} R {rr:.2f}")


if __name__ == "__main__":
    main()
