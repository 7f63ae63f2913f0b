"""Chunking a section of one very long word (a base64 blob, a hex dump, minified code in a ``<pre>``):
time per section as it grows, against the same chunking with the old long-word count.

A word of more than 100 letters and digits is counted, for sizing chunks, as the word pieces of its
100-character slices (``embedding.wordpiece_count``). The tokenizer's word-piece search tries every end
of a slice from the last, a few thousand look-ups per slice, so such a section chunked at ~50 µs a
character: a 5 MB one-word page took minutes (ops6 F4). The slices are now counted by a forward search
over the vocabulary's prefixes (``embedding._GreedyWordPiece``), with the same counts. Baseline: the old
count (the tokenizer's ``encode_batch`` of the slices), in the same process, on the same text; both
give the same chunks (checked first). Both run through today's ``chunk_page``, which keeps each count it
makes for a page (it counted a blob about eight times over before): the ratio is the count's alone, and
the page's cost fell about twice more than it says. A section of prose of the same size is timed too, with the
count now, for scale. Prints seconds per section, the ratio and the growth from the smallest size to
the largest (1.0 is linear). Run: ``python bench/long_words.py``.
"""

from __future__ import annotations

import base64
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from docs_rag_pipeline.chunking import Budget, chunk_page  # noqa: E402
from docs_rag_pipeline.embedding import (  # noqa: E402
    _LONG_WORD, _MAX_WORD, _wordpiece_tokenizer, packaged_model_dir, wordpiece_count)
from docs_rag_pipeline.records import ParsedPage, Section  # noqa: E402
from timing import best_of, race  # noqa: E402 - bench/timing.py, beside this script

TOK = _wordpiece_tokenizer(str(packaged_model_dir("all-MiniLM-L6-v2")))


def old_count(text: str) -> int:
    """``wordpiece_count`` as it was: every slice of a long word through the tokenizer."""
    n = len(TOK.encode(text, add_special_tokens=False).ids)
    for m in _LONG_WORD.finditer(text):
        w = m.group()
        slices = [w[i:i + _MAX_WORD] for i in range(0, len(w), _MAX_WORD)]
        n += sum(len(e.ids) for e in TOK.encode_batch(slices, add_special_tokens=False)) - 1
    return n


def now_count(text: str) -> int:
    return wordpiece_count(TOK, text)


def blob(n: int, seed: int = 7) -> str:
    return base64.b64encode(random.Random(seed).randbytes(n)).decode()[:n].replace("+", "x").replace("/", "y")


SHAPES = {
    "base64 blob in a <pre>": lambda n: f"Data:\n\n```\n{blob(n)}\n```",
    "hex dump, one word": lambda n: random.Random(3).randbytes(n // 2 + 1).hex()[:n],
    "one letter repeated": lambda n: "a" * n,
}
SIZES = (10_000, 20_000, 40_000)


def chunks(text: str, count) -> list[tuple[str, str]]:  # noqa: ANN001
    page = ParsedPage(title="Blob", sections=[Section(headings=("Blob",), anchor="blob", level=2, text=text)])
    out = chunk_page(page, source="s", page_url="https://x/b.html", content_hash="h", updated_at="n",
                     budget=Budget(window=256), count=count)
    return [(c.chunk_id, c.text) for c in out]


def main() -> None:
    race(SHAPES, SIZES, lambda t: chunks(t, old_count), lambda t: chunks(t, now_count),
         same=lambda t: chunks(t, old_count) == chunks(t, now_count), width=26)
    prose = " ".join(f"The value {i} is written to the log when the job ends." for i in range(SIZES[-1] // 50))
    blob_text = SHAPES["base64 blob in a <pre>"](len(prose))
    p, b = best_of(lambda t: chunks(t, now_count), prose), best_of(lambda t: chunks(t, now_count), blob_text)
    print(f"\nprose, {len(prose)} chars: {p:.3f} s; base64 blob of as many: {b:.3f} s ({b / p:.1f}x prose)")


if __name__ == "__main__":
    main()
