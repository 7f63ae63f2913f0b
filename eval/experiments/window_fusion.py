"""Experiment (2026-11-24): does fusing our page ranking with the naive baseline's 300-word windows help?

The naive baseline (``docs_rag_pipeline/baseline.py``) ranks pages by 300-word windows, which carry
more context than our heading-bounded chunks. Fusing the two page rankings (reciprocal rank fusion,
k = 60, the windows weighted ``wb``) would be a second index of larger units, as a parent-document
retriever keeps. Printed per set, calibration halves only: recall@1 / recall@5 / MRR@10 of the fused
ranking for each ``wb`` (0 is ours alone), and the baseline's own.

    python eval/experiments/window_fusion.py [sets…]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from docs_rag_pipeline import evaluation  # noqa: E402
from docs_rag_pipeline.baseline import build  # noqa: E402
from docs_rag_pipeline.context import get_context  # noqa: E402
from docs_rag_pipeline.retrieval import search  # noqa: E402

SETS = ("asciidoctor", "black", "nodejs", "requests", "sphinx")


def pages(urls: list[str]) -> list[str]:
    return list(dict.fromkeys(evaluation.normalise_url(u) for u in urls))


def fuse(ours: list[str], windows: list[str], wb: float, k: int = 60) -> list[str]:
    score: dict[str, float] = {}
    for w, ranking in ((1.0, pages(ours)), (wb, pages(windows))):
        for i, p in enumerate(ranking[:10]):
            score[p] = score.get(p, 0.0) + w / (k + i + 1)
    return sorted(score, key=lambda p: -score[p])


def metrics(ranks: list[int | None]) -> str:
    r = np.array([x or 99 for x in ranks])
    return f"{(r == 1).mean():.2f}/{(r <= 5).mean():.2f}/{np.mean(np.where(r <= 10, 1.0 / r, 0.0)):.2f}"


def main() -> None:
    for name in sys.argv[1:] or SETS:
        ctx = get_context(ROOT / "eval" / "sets" / f"{name}.yaml")
        src = ctx.config.sources[0]
        cases = evaluation.select_split(evaluation.load_cases(evaluation.cases_path(ctx.config, src.name),
                                                              root_url=evaluation.source_root_url(src)), "calibration")
        base = build(ctx, src.name)
        runs = [(c.expected_urls, [h.page_url for h in search(ctx, c.question, top_k=10, source=src.name)],
                 base.search_pages(c.question)) for c in cases if not c.should_refuse]
        line = [f"{name} ({len(runs)} answerable)", f"baseline {metrics([evaluation.url_rank(b, e) for e, _, b in runs])}"]
        for wb in (0.0, 0.3, 0.5, 0.7, 1.0):
            line.append(f"wb={wb} {metrics([evaluation.url_rank(fuse(o, b, wb), e) for e, o, b in runs])}")
        print(" | ".join(line), flush=True)


if __name__ == "__main__":
    main()
