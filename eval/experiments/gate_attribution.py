"""Experiment (2026-11-27, thirteenth session): which refusal gate refuses which calibration case?

For each calibration case of the given golden sets (``project-docs``: the project's own cases, indexed
as ``eval/fit_refusal.py`` indexes them), the real hybrid search and ``judge`` give the rule's signals.
Each gate of the rule (``extractive.is_relevant``) is then turned off in turn, the others kept as
configured, and the case decided again: a gate whose removal answers a refused case is the only gate
that refused it. Printed, pooled over the sets: the cases each gate refuses alone, answerable (including
boundary cases to answer) and out of scope, then the decisions with ``min_term_coverage`` from 0 to 0.7.
Test halves are never read.

    python eval/experiments/gate_attribution.py requests black asciidoctor sphinx nodejs project-docs
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "eval"))

from fit_refusal import project_config  # noqa: E402

from docs_rag_pipeline.answering.extractive import is_relevant, judge  # noqa: E402
from docs_rag_pipeline.context import get_context  # noqa: E402
from docs_rag_pipeline.evaluation import corpus_stats, load_cases, split_of  # noqa: E402
from docs_rag_pipeline.retrieval import search  # noqa: E402

#: each gate of the rule, and the setting that turns it off
GATES = {"unknown term": {"unknown_term_similarity": 0.0}, "shared pages": {"min_shared_pages": 0},
         "similarity": {"min_similarity": 0.0}, "term coverage": {"min_term_coverage": 0.0},
         "chunk coverage": {"min_chunk_coverage": 0.0}, "sentence similarity": {"min_sentence_similarity": 0.0},
         "missing word": {"missing_word_rarity": 1.01}}


def signals(name: str) -> list[tuple[bool, object, tuple]]:
    """(should refuse, the run's retrieval config, the rule's arguments) of each calibration case."""
    if name == "project-docs":
        cfg_path, cases_path = project_config(), ROOT / "eval" / "project-docs.jsonl"
    else:
        cfg_path, cases_path = ROOT / "eval" / "sets" / f"{name}.yaml", ROOT / "eval" / "sets" / f"{name}.jsonl"
    ctx = get_context(str(cfg_path))
    cfg, cases = ctx.config.retrieval, load_cases(cases_path)
    halves, stats, vocab = split_of(cases), corpus_stats(ctx.chunks), ctx.chunks.vocabulary()
    out = []
    for c in cases:
        if halves[c.id] != "calibration" or c.turns:  # a follow-up is judged on what its thread searched
            continue
        hits = search(ctx, c.question, top_k=cfg.top_k)
        r = judge(c.question, hits, cfg, vocab, ctx.embedder.count_tokens, stats, embedder=ctx.embedder)
        out.append((c.should_refuse, cfg, (r.similarity, r.coverage, r.unknown, r.sentence_similarity,
                                           r.chunk_coverage, r.missing_rarity, r.shared_pages)))
    return out


def decide(cfg, args: tuple, **override) -> bool:  # noqa: ANN001
    sim, cov, unknown, sent, chunk_cov, rarity, shared = args
    return is_relevant(sim, cov, unknown, cfg.model_copy(update=override), sentence_similarity=sent,
                       chunk_coverage=chunk_cov, missing_rarity=rarity, shared_pages=shared)


def main(names: list[str]) -> None:
    cases = [case for name in names for case in signals(name)]
    answerable = sum(not refuse for refuse, _, _ in cases)
    print(f"{len(cases)} calibration cases: {answerable} to answer, {len(cases) - answerable} to refuse")
    print(f"{'gate':20s} refuses alone: to answer / to refuse")
    for gate, off in GATES.items():
        alone = [refuse for refuse, cfg, args in cases if not decide(cfg, args) and decide(cfg, args, **off)]
        print(f"{gate:20s} {alone.count(False):3d} / {alone.count(True):3d}")
    print("min_term_coverage: refused to answer / refused to refuse, refusal precision / recall")
    for t in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7):
        refused = [refuse for refuse, cfg, args in cases if not decide(cfg, args, min_term_coverage=t)]
        right, total = refused.count(True), len(cases) - answerable
        print(f"  {t:.1f}: {refused.count(False):3d} / {right:3d}, "
              f"{right / max(len(refused), 1):.3f} / {right / max(total, 1):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["requests", "black", "asciidoctor", "sphinx", "nodejs", "project-docs"])
