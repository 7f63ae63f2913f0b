"""Experiment (2026-11-27): does how far the best chunk stands out from the rest of the corpus help refusal?

Query performance prediction reads, without labels, how distinctive a query's best match is: an
answerable question should have one chunk far closer to it than the corpus at large, a near miss of
the same technology a crowd of middling ones. For each calibration case of the given golden sets, the
question's cosine similarity to *every* chunk of the index is computed (the chunk vectors as stored),
and six label-free signals are taken from that distribution: ``z1`` (the best similarity as a z-score
of the query's own similarities), ``gap99`` and ``gap999`` (the best minus the 99th and 99.9th
percentile), ``crowd05`` (minus the share of chunks within 0.05 of the best), ``nqc`` (the spread of the
ten best, as NQC does with retrieval scores) and ``zsent`` (the best sentence similarity as the same
z-score). Printed: each signal's ROC AUC per set next to the shipped ones, then the leave-one-set-out
logistic model with and without them (as ``soft_coverage.py`` does). Test halves are never read.

    python eval/experiments/query_distinctiveness.py requests sphinx black nodejs
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "eval"))
sys.path.insert(0, str(ROOT / "eval" / "experiments"))

from soft_coverage import cases_of, print_auc, print_leave_one_set_out, raw  # noqa: E402

from docs_rag_pipeline.answering.refusal import FEATURES  # noqa: E402
from docs_rag_pipeline.context import get_context  # noqa: E402

NEW = ("z1", "gap99", "gap999", "crowd05", "nqc", "zsent")


def add_signals(ctx, rows: list[dict]) -> None:  # noqa: ANN001
    vectors = np.array([r["vector"] for r in ctx.chunks.rows(with_vectors=True)], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = ctx.embedder.embed([r["q"] for r in rows]).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    for r, s in zip(rows, queries @ vectors.T):
        best, mean, sd = float(s.max()), float(s.mean()), float(s.std())
        top = np.sort(s)[::-1][:10]
        r["feats"].update(z1=(best - mean) / sd, gap99=best - float(np.percentile(s, 99)),
                          gap999=best - float(np.percentile(s, 99.9)), crowd05=-float(np.mean(s >= best - 0.05)),
                          nqc=float(top.std()), zsent=(r["feats"]["sentence_sim"] - mean) / sd)


def main(names: list[str]) -> None:
    data = {}
    for name in names:
        cfg = ROOT / "eval" / "sets" / f"{name}.yaml"
        rows = cases_of(cfg)
        add_signals(get_context(cfg), rows)
        data[name] = rows
    print_auc(data, (*NEW, "sim", "sentence_sim", "chunk_coverage", "idf_coverage"))
    for label, feats in (("shipped signals", list(FEATURES)), ("shipped + distinctiveness", [*FEATURES, *NEW])):
        print(f"leave-one-set-out, logistic model on {label}")
        print_leave_one_set_out(data, feats, raw)


if __name__ == "__main__":
    main(sys.argv[1:] or ["requests", "sphinx", "black", "nodejs"])
