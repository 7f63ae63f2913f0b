"""Fit the refusal model (docs_rag_pipeline/answering/refusal_model.json) on calibration halves.

For every calibration case of the golden sets in eval/sets (and of the project's own
eval/project-docs.jsonl, indexed with docs_rag.yaml's source when available), the real hybrid search
gives the hits and the shipped rule (extractive.judge) their refusal signals; a logistic regression
(numpy, L2, Newton steps) on standardised features predicts "the docs answer it". The decision threshold is the
one that maximises the smaller of refusal precision and recall on the pooled calibration cases.

Leave-one-set-out figures are printed too: fitted without a set, scored on that set's calibration
half, which shows whether the signals transfer to docs the model never saw. Test halves are never
read here.

    python eval/fit_refusal.py            # prints the figures and writes the model
    python eval/fit_refusal.py --dry-run  # only prints
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LANCEDB_LOG", "error")

from docs_rag_pipeline import evaluation  # noqa: E402
from docs_rag_pipeline.answering.refusal import FEATURES, MODEL_FILE, corpus_stats  # noqa: E402
from docs_rag_pipeline.context import get_context  # noqa: E402
from docs_rag_pipeline.retrieval import search  # noqa: E402

L2 = float(os.environ.get("REFUSAL_L2", "1.0"))


def collect(cfg: Path, split: str = "calibration",
            cases: Path | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Features, labels (1: answerable) and the shipped rule's refusals (every gate) of one set's half; None
    when the half is empty (a fully held-out set such as astro pins every case to the test half)."""
    from docs_rag_pipeline.answering.extractive import judge

    ctx = get_context(cfg)
    src = ctx.config.sources[0]
    path = cases or evaluation.cases_path(ctx.config, src.name)
    ingest = cases is None
    cases = evaluation.select_split(evaluation.load_cases(path, root_url=evaluation.source_root_url(src)), split)
    if not cases:
        return None
    if ingest:
        from docs_rag_pipeline.refresh import refresh

        refresh(ctx, src.name)  # cached: only what changed is embedded
    top_k = ctx.config.retrieval.top_k
    X, y, rule = [], [], []
    for c in cases:
        question = evaluation.searched_question(ctx, c, top_k=top_k, source=src.name)  # a follow-up: as searched
        hits = _cached_search(ctx, question, top_k, src.name)
        # the shipped rule, every gate included (what the model has to beat), and the signals it computed
        rel = judge(question, hits, ctx.config.retrieval, ctx.chunks.vocabulary(), ctx.embedder.count_tokens,
                    corpus_stats(ctx.chunks), embedder=ctx.embedder)
        X.append([rel.features[k] for k in FEATURES])
        y.append(0.0 if c.should_refuse else 1.0)
        rule.append(not rel.relevant)
    return np.asarray(X, dtype=float), np.asarray(y), np.asarray(rule, dtype=bool)


_HITS: dict = {}


def _cached_search(ctx, question: str, top_k: int, source: str):  # noqa: ANN001, ANN202
    """Hits of a question, kept on disk per index version and retrieval code (features change more
    often than retrieval while experimenting)."""
    import hashlib
    import pickle

    import docs_rag_pipeline.retrieval as r

    code = hashlib.sha1(Path(r.__file__).read_bytes()).hexdigest()[:12]
    f = Path(os.environ.get("DOCS_RAG_EVAL_STORAGE", "/tmp/docs-rag-eval")) / f"hits-{source}-{code}-{ctx.chunks.version()}.pkl"
    if f not in _HITS:
        _HITS[f] = pickle.loads(f.read_bytes()) if f.is_file() else {}
    cache = _HITS[f]
    if (question, top_k) not in cache:
        cache[(question, top_k)] = search(ctx, question, top_k=top_k, source=source)
        f.write_bytes(pickle.dumps(cache))
    return cache[(question, top_k)]


def project_config() -> Path:
    """The project's own docs/ as a source indexed under /tmp (never the repo's data/)."""
    from docs_rag_pipeline.context import get_context as _ctx
    from docs_rag_pipeline.refresh import refresh

    folder = Path(os.environ.get("DOCS_RAG_EVAL_STORAGE", "/tmp/docs-rag-eval")) / "project-docs"
    folder.mkdir(parents=True, exist_ok=True)
    cfg = folder / "config.yaml"
    cfg.write_text(f"storage: {folder / 'data'}\nllm: {{provider: none}}\nchunking: {{overlap_tokens: 32}}\n"
                   f"sources:\n  - name: project-docs\n    kind: local\n    path: {ROOT / 'docs'}\n"
                   f"    include: ['**/*.md']\n    base_url: docs/\n")
    refresh(_ctx(cfg), "project-docs")
    return cfg


def fit(X: np.ndarray, y: np.ndarray) -> dict:
    mu, sd = X.mean(0), X.std(0)
    sd[sd == 0] = 1.0
    Z = np.hstack([np.ones((len(X), 1)), (X - mu) / sd])
    w = np.zeros(Z.shape[1])
    reg = np.eye(Z.shape[1]) * L2
    reg[0, 0] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-Z @ w))
        g = Z.T @ (p - y) + reg @ w
        H = Z.T @ (Z * (p * (1 - p))[:, None]) + reg
        w -= np.linalg.solve(H, g)
    model = {"features": list(FEATURES), "intercept": float(w[0]), "weights": [float(v) for v in w[1:]],
             "mean": [float(v) for v in mu], "std": [float(v) for v in sd], "threshold": 0.5}
    probs = predict(model, X)
    best = max(np.unique(np.concatenate([[0.5], probs])),
               key=lambda t: (min(refusal_pr(probs, y, t)), -abs(t - 0.5)))
    model["threshold"] = float(best)
    return model


def predict(model: dict, X: np.ndarray) -> np.ndarray:
    z = model["intercept"] + ((X - np.asarray(model["mean"])) / np.asarray(model["std"])) @ np.asarray(model["weights"])
    return 1 / (1 + np.exp(-z))


def refusal_pr(probs: np.ndarray, y: np.ndarray, t: float) -> tuple[float, float]:
    refused = probs < t
    should = y == 0
    tp = float((refused & should).sum())
    prec = tp / refused.sum() if refused.sum() else 1.0
    rec = tp / should.sum() if should.sum() else 1.0
    return prec, rec


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--enable", action="store_true",
                    help="write the model enabled (ask then uses it instead of the threshold rule)")
    args = ap.parse_args()
    cfgs = sorted((ROOT / "eval" / "sets").glob("*.yaml"))
    data = {c.stem: d for c in cfgs if (d := collect(c)) is not None}  # sets with a calibration half
    data["project-docs"] = collect(project_config(), cases=ROOT / "eval" / "project-docs.jsonl")
    for held in data:
        rest = [v for k, v in data.items() if k != held]
        m = fit(np.vstack([v[0] for v in rest]), np.concatenate([v[1] for v in rest]))
        X, y, rule = data[held]
        p, r = refusal_pr(predict(m, X), y, m["threshold"])
        rp, rr = refusal_pr(np.where(rule, 0.0, 1.0), y, 0.5)
        print(f"leave-one-out {held:<14} model refusal P {p:.2f} R {r:.2f} | threshold rule P {rp:.2f} R {rr:.2f} "
              f"({int((y == 0).sum())} to refuse of {len(y)})")
    X = np.vstack([v[0] for v in data.values()])
    y = np.concatenate([v[1] for v in data.values()])
    model = fit(X, y)
    p, r = refusal_pr(predict(model, X), y, model["threshold"])
    print(f"pooled calibration: P {p:.2f} R {r:.2f}, threshold {model['threshold']:.3f}")
    print(json.dumps(dict(zip(model["features"], [round(w, 3) for w in model["weights"]]))))
    if not args.dry_run:
        model["fitted_on"] = {k: int(len(v[1])) for k, v in data.items()}
        model["enabled"] = bool(args.enable)
        MODEL_FILE.write_text(json.dumps(model, indent=2) + "\n")
        print(f"wrote {MODEL_FILE}")


if __name__ == "__main__":
    main()
