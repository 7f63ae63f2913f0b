"""Experiment (2026-11-29): can questions drawn from the corpus itself set each corpus's refusal scale?

The refusal thresholds are one set for every corpus, while the signals' scale differs by corpus (chunk
size, prose against API entries, vocabulary size). An index could calibrate itself without labels if
questions made from its own chunks scored as its users' answerable questions do. For each golden set,
60 chunks of 40 words or more without code are drawn (seeded) and two pseudo-questions made of each:
``How do I <its last heading>?`` and ``how to`` + four content words of one of its sentences. Printed
per set: the median and 10th percentile of the best chunk similarity, the best sentence similarity and
the chunk coverage, and the share the shipped rule answers, for both kinds of pseudo-question and for
the calibration half's answerable questions and questions to refuse. Test halves are never read.

    python eval/experiments/pseudo_questions.py requests sphinx asciidoctor black nodejs
"""

from __future__ import annotations

import random
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from docs_rag_pipeline.answering.extractive import content_terms, judge  # noqa: E402
from docs_rag_pipeline.context import get_context  # noqa: E402
from docs_rag_pipeline.evaluation import corpus_stats, load_cases, split_of  # noqa: E402
from docs_rag_pipeline.retrieval import search  # noqa: E402

PER_SET = 60


def scores(ctx, cfg, vocab, stats, question: str) -> tuple[float, float, float, bool]:  # noqa: ANN001
    hits = search(ctx, question, top_k=cfg.top_k)
    r = judge(question, hits, cfg, vocab, ctx.embedder.count_tokens, stats, embedder=ctx.embedder)
    return r.similarity, r.sentence_similarity or 0.0, r.chunk_coverage or 0.0, r.relevant


def pseudo_questions(rows: list[dict], rnd: random.Random) -> tuple[list[str], list[str]]:
    by_heading, by_words = [], []
    for row in rows:
        if len(by_heading) >= PER_SET:
            break
        text = row["text"]
        if "```" in text or len(text.split()) < 40:
            continue
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", text) if 8 <= len(s.split()) <= 40]
        terms = list(dict.fromkeys(content_terms(rnd.choice(sentences)))) if sentences else []
        if len(terms) < 4:
            continue
        heading = ([h for h in (row.get("headings") or []) if h] or [row["title"]])[-1]
        by_heading.append(f"How do I {heading.lower()}?")
        by_words.append("how to " + " ".join(rnd.sample(terms, 4)))
    return by_heading, by_words


def main(names: list[str]) -> None:
    for name in names:
        ctx = get_context(str(ROOT / "eval" / "sets" / f"{name}.yaml"))
        cfg, stats, vocab = ctx.config.retrieval, corpus_stats(ctx.chunks), ctx.chunks.vocabulary()
        rows = ctx.chunks.rows()
        rnd = random.Random(7)
        rnd.shuffle(rows)
        by_heading, by_words = pseudo_questions(rows, rnd)
        cases = load_cases(ROOT / "eval" / "sets" / f"{name}.jsonl")
        halves = split_of(cases)
        calibration = [c for c in cases if halves[c.id] == "calibration" and not c.turns]
        groups = {"heading": by_heading, "4 words": by_words,
                  "answerable": [c.question for c in calibration if not c.should_refuse],
                  "to refuse": [c.question for c in calibration if c.should_refuse]}
        print(f"{name}: {len(rows)} chunks")
        for label, questions in groups.items():
            got = [scores(ctx, cfg, vocab, stats, q) for q in questions]
            if not got:
                continue
            cols = list(zip(*got))
            cells = " | ".join(f"{what} median {statistics.median(c):.3f} p10 {sorted(c)[len(c) // 10]:.3f}"
                               for what, c in zip(("similarity", "sentence", "chunk coverage"), cols))
            print(f"  {label:10s} n={len(got):3d} {cells} | answered {sum(cols[3]) / len(got):.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["requests", "sphinx", "asciidoctor", "black", "nodejs"])
