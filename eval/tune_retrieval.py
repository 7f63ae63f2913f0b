"""Retrieval experiments on the calibration halves of the golden sets (never the test halves):
page-level recall@1 / MRR@10 of hybrid search for variants of the fusion knobs in retrieval.py.

    python eval/tune_retrieval.py        # needs the sets ingested (python eval/run_sets.py)
"""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCEDB_LOG", "error")

from docs_rag_pipeline import evaluation, retrieval  # noqa: E402
from docs_rag_pipeline.context import get_context  # noqa: E402

# first round (FTS_STOPWORDS × LIST_LIKE_FACTOR 1/.5/.25 × FULLTEXT_WEIGHT .7/1/1.3) chose
# stopwords on, .5, 1.0; the second varied the page-level fusion (0, .5, 1: .5); the third, with the
# black set's calibration half added, varies the full-text weight again (1.3 kept then); the fourth, with
# the nodejs set's half added, full-text weight 0.8 to 2.5 × page weight 0.5 and 1 (1.6: best or tied on every set)
VARIANTS = {
    "FTS_STOPWORDS": [True],
    "LIST_LIKE_FACTOR": [0.5],
    "FULLTEXT_WEIGHT": [0.8, 1.0, 1.3, 1.6, 2.0, 2.5],
    "PAGE_WEIGHT": [0.5, 1.0],
}


def _memo_queries(emb) -> None:  # noqa: ANN001 - the same questions are embedded once per run
    if getattr(emb, "_memo", None) is not None:
        return
    emb._memo = {}
    inner = emb.embed

    def embed(texts):  # noqa: ANN001, ANN202
        if len(texts) == 1:
            if texts[0] not in emb._memo:
                emb._memo[texts[0]] = inner(texts)
            return emb._memo[texts[0]]
        return inner(texts)

    emb.embed = embed


def main() -> None:
    sets = []
    for cfg in sorted((ROOT / "eval" / "sets").glob("*.yaml")):
        ctx = get_context(cfg)
        _memo_queries(ctx.embedder)
        src = ctx.config.sources[0]
        cases = evaluation.select_split(evaluation.load_cases(evaluation.cases_path(ctx.config, src.name),
                                                              root_url=evaluation.source_root_url(src)), "calibration")
        if cases:  # a fully held-out set (every case pinned to the test half) has none
            top_k = ctx.config.retrieval.top_k  # a follow-up is ranked as its thread made it, as eval does
            sets.append((cfg.stem, ctx, src.name, [(evaluation.searched_question(ctx, c, top_k=top_k, source=src.name),
                                                    c.expected_urls) for c in cases if c.expected_urls]))
    keys = list(VARIANTS)
    for values in itertools.product(*(VARIANTS[k] for k in keys)):
        for k, v in zip(keys, values):
            setattr(retrieval, k, v)
        row = []
        for name, ctx, source, cases in sets:
            ranks = [evaluation.page_rank(retrieval.search(ctx, question, top_k=10, source=source), expected)
                     for question, expected in cases]
            m = evaluation.retrieval_metrics(ranks)  # None for each when the half has no answerable case
            row.append(f"{name} " + "/".join("n/a" if m[k] is None else f"{m[k]:.2f}" for k in ("recall_at_1", "mrr_at_10")))
        print(dict(zip(keys, values)), " | ".join(row), flush=True)


if __name__ == "__main__":
    main()
