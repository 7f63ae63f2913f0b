"""Run the golden sets of ``eval/sets``: ingest each (cached), evaluate one half with the naive
baseline side by side, print the tables and write ``eval/results/sets/<set>-<split>.json``.

    python eval/run_sets.py                      # every set, test halves
    python eval/run_sets.py sphinx --split calibration

Each set is ``eval/sets/<name>.yaml`` (a docs-rag config whose storage is under /tmp and whose
documents are read where they are installed) and ``eval/sets/<name>.jsonl`` (its cases). A set whose
documents come from a Debian package names it in a ``# debian-package: <pkg>`` line; it is installed
when missing (needs root). The same figures come from
``docs-rag --config eval/sets/<name>.yaml eval --split test --baseline`` after an ingest.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETS = ROOT / "eval" / "sets"
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("LANCEDB_LOG", "error")


def ensure_documents(cfg_file: Path) -> None:
    m = re.search(r"^# debian-package: (\S+)", cfg_file.read_text(), re.M)
    if not m:
        return
    pkg = m.group(1)
    if subprocess.run(["dpkg", "-s", pkg], capture_output=True).returncode == 0:
        return
    if os.geteuid() != 0:
        sys.exit(f"{cfg_file.name}: Debian package {pkg} is missing; apt-get install -y {pkg}")
    print(f"installing {pkg}", file=sys.stderr)
    subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", pkg], check=True, capture_output=True)


def run_set(name: str, split: str, *, ingest: bool = True) -> dict:
    from docs_rag_pipeline import evaluation
    from docs_rag_pipeline.context import get_context
    from docs_rag_pipeline.refresh import refresh

    cfg_file = SETS / f"{name}.yaml"
    ensure_documents(cfg_file)
    ctx = get_context(cfg_file)
    src = ctx.config.sources[0]
    if ingest:  # re-parsed, so the figures are of this code's parser and chunker (embeddings are cached)
        st = refresh(ctx, src.name, mode="reparse")
        print(f"[{name}] ingest: {st.chunks_total} chunks, {st.chunks_embedded} embedded", file=sys.stderr)
    cases = evaluation.load_cases(evaluation.cases_path(ctx.config, src.name),
                                  root_url=evaluation.source_root_url(src))
    cases = evaluation.select_split(cases, split)
    t0 = time.perf_counter()
    report = evaluation.evaluate(ctx, src.name, cases, top_k=ctx.config.eval.top_k, baseline=True)
    report["split"] = split
    print(f"[{name}] {len(cases)} {split} cases ({time.perf_counter() - t0:.0f}s)\n"
          f"{evaluation.print_table(report)}\n")
    out = ROOT / "eval" / "results" / "sets"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}-{split}.json").write_text(json.dumps(report, indent=2))
    return report


def _f(value: float | None) -> str:
    """A cell: ``n/a`` for a figure no case measured (null in the report: nothing refused, no case to
    refuse, no cited sentence, no answerable case), as print_table and markdown_table show it."""
    return "n/a" if value is None else f"{value:.2f}"


def summary_table(reports: dict[str, dict]) -> str:
    """One row per set: ours / baseline, the cases each ranking put first that the other did not
    (with the sign test's p), the MRR difference with its 95% interval, and refusal with its intervals."""
    lines = ["| set | split | cases | recall@1 ours / baseline | recall@1 won / lost (p) | recall@5 ours / baseline "
             "| MRR@10 ours / baseline | MRR diff [95%] | refusal P [95%] | refusal R [95%] | cite-correct |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in reports.items():
        m, b, c, iv = r["retrieval"], r["baseline"], r["baseline_comparison"], r["intervals"]
        r1, mrr = c["recall_at_1"], c["mrr_at_10"]
        lines.append(f"| {name} | {r['split']} | {r['cases']} | {_f(m['recall_at_1'])} / {_f(b['recall_at_1'])} | "
                     f"{r1['won']} / {r1['lost']} ({r1['p_value']:.2f}) | "
                     f"{_f(m['recall_at_5'])} / {_f(b['recall_at_5'])} | {_f(m['mrr_at_10'])} / {_f(b['mrr_at_10'])} | "
                     f"{mrr['diff']:+.2f} [{mrr['ci95'][0]:+.2f}, {mrr['ci95'][1]:+.2f}] | "
                     f"{_f(r['refusal']['precision'])} [{iv['refusal_precision'][0]:.2f}, {iv['refusal_precision'][1]:.2f}] | "
                     f"{_f(r['refusal']['recall'])} [{iv['refusal_recall'][0]:.2f}, {iv['refusal_recall'][1]:.2f}] | "
                     f"{_f(r['citations']['cite_correct'])} |")
    if len(reports) > 1:  # every set's cases together: is ours ahead overall, beyond the noise of one set?
        from docs_rag_pipeline.significance import compare_ranks

        cases = [c for r in reports.values() for c in r["per_case"] if not c["should_refuse"]]
        c = compare_ranks([x["rank"] for x in cases], [x["rank_baseline"] for x in cases])
        r1, mrr = c["recall_at_1"], c["mrr_at_10"]
        lines.append(f"| all sets, pooled | | {c['cases']} answerable | {r1['diff']:+.2f} | "
                     f"{r1['won']} / {r1['lost']} ({r1['p_value']:.3f}) | | | "
                     f"{mrr['diff']:+.2f} [{mrr['ci95'][0]:+.2f}, {mrr['ci95'][1]:+.2f}] | | | |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sets", nargs="*", help="set names (default: every eval/sets/*.yaml)")
    ap.add_argument("--split", default="test", choices=["test", "calibration", "all"])
    ap.add_argument("--no-ingest", action="store_true", help="evaluate what is indexed")
    args = ap.parse_args()
    names = args.sets or sorted(p.stem for p in SETS.glob("*.yaml"))
    reports = {n: run_set(n, args.split, ingest=not args.no_ingest) for n in names}
    print(summary_table(reports))


if __name__ == "__main__":
    main()
