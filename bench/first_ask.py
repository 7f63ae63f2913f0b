"""The first ask of a new process (a CLI ``docs-rag ask``, a script's first ``ask()``): the word
statistics refusal reads (``ChunksTable.word_stats``).

Before, every new process counted them over the whole index: every served chunk's text read from
LanceDB and tokenized (the baseline here: a table with no ``stats_dir``). Now an ingest saves them
beside the index, and a new process reads that file and the table's row keys, and tokenizes only the
rows changed since the file's version. Measured in one process on the same LanceDB table: the best of
three, seconds and the ratio baseline / now, (a) right after an ingest that saved them, (b) when the
file is one version behind (one page of 10 chunks changed since). The results must be equal.
Run: ``python bench/first_ask.py [chunks]`` (default 20,000).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.timing import best_of  # noqa: E402
from docs_rag_pipeline.store import ChunksTable, connect  # noqa: E402

DIMS = 384


def rows_for(n: int, rng: np.random.Generator, *, edit: str = "") -> list[dict]:
    vocab = [f"w{i}" for i in range(30_000)] + "the a to of configure widget run server option page".split()
    ranks = np.minimum(rng.zipf(1.3, size=n * 120), len(vocab)) - 1
    rows = []
    for i in range(n):
        text = " ".join(vocab[r] for r in ranks[i * 120:(i + 1) * 120]) + (edit if i < 10 else "")
        rows.append(dict(chunk_id=f"c{i}{'e' if edit and i < 10 else ''}", source="docs",
                         page_url=f"https://d.example/p{i // 10}", url=f"https://d.example/p{i // 10}#s{i}",
                         title=f"Page {i // 10}", headings=["Guide", f"Part {i}"], parent_id=None,
                         chunk_index=i % 10, text=text, content_hash=f"h{i}{edit}", token_count=160,
                         updated_at="2026-11-26", metadata={}, tags=[],
                         vector=rng.random(DIMS, dtype=np.float32)))
    return rows


def table(root: Path, saved: bool) -> ChunksTable:
    """A new process's table: nothing counted yet in memory."""
    return ChunksTable(connect(str(root / "lancedb")), model="bench-model", dimensions=DIMS,
                       served_sources=["docs"], stats_dir=root / "word_stats" if saved else None)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    root = Path(tempfile.mkdtemp(prefix="first-ask-"))
    try:
        rng = np.random.default_rng(0)
        writer = table(root, saved=True)
        writer.upsert_source("docs", rows_for(n, rng), replace_pages=[])
        writer.word_stats()  # as an ingest does after its write: counted and saved
        baseline = best_of(lambda _: table(root, saved=False).word_stats(), None)
        now = best_of(lambda _: table(root, saved=True).word_stats(), None)
        same = table(root, saved=True).word_stats() == table(root, saved=False).word_stats()

        behind = (root / "word_stats").iterdir().__next__().read_bytes()  # the file of this version
        changed = rows_for(10, np.random.default_rng(1), edit=" edited")
        writer.upsert_source("docs", changed, replace_pages=["https://d.example/p0"])
        (stats_file,) = (root / "word_stats").iterdir()

        def one_behind(_: None) -> ChunksTable:
            stats_file.write_bytes(behind)
            t = table(root, saved=True)
            t.word_stats()
            return t

        baseline_b = best_of(lambda _: table(root, saved=False).word_stats(), None)
        now_b = best_of(one_behind, None)
        t = one_behind(None)
        same_b = t.word_stats() == table(root, saved=False).word_stats()
        print(f"{n:,} chunks; results equal: {same and same_b}; texts tokenized when one version behind: "
              f"{t.texts_tokenized}")
        print(f"{'first ask of a new process':38}{'baseline s':>11}{'now s':>9}{'ratio':>8}")
        print(f"{'(a) after an ingest that saved them':38}{baseline:11.2f}{now:9.2f}{baseline / now:7.1f}x")
        print(f"{'(b) saved one version behind':38}{baseline_b:11.2f}{now_b:9.2f}{baseline_b / now_b:7.1f}x")
        if not (same and same_b):
            raise SystemExit("the statistics differ")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
