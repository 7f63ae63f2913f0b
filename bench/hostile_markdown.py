"""Markdown parsing on hostile input: a page of unclosed ``[`` (or ``[^``, ``[a``), time per page as it grows.

markdown-it searches for a link label at every ``[``, down to its nesting limit, so such a line costs
it that limit per character. The block limit is 100 (ten nested list levels must not lose the rest of
a page, see parsing/markdown.py), and it was the inline limit too, so a hostile page of a few MB held
an ingest for minutes. Paragraphs are now parsed with CommonMark's own inline limit, 20. Baseline: markdown-it configured as before (one parser, 100 for both), run on the
same strings in the same process; both give the same tokens. Prints seconds per page, the ratio, and
the growth from the smallest size to the largest (1.0 is linear). Run: ``python bench/hostile_markdown.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from markdown_it import MarkdownIt  # noqa: E402

from docs_rag_pipeline.parsing.markdown import _MD, MAX_NESTING  # noqa: E402
from timing import race  # noqa: E402 - bench/timing.py, beside this script

OLD = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING}).enable("table")
NOW = _MD[False]

SHAPES = {
    "[ repeated": lambda n: "[" * n,
    "[a repeated": lambda n: "[a" * (n // 2),
    "[^ repeated (footnote-like)": lambda n: "[^" * (n // 2),
    "a real page, 200 links": lambda n: "\n\n".join(f"See [the guide](g{i}.md) and [^{i}]." for i in range(n // 30)),
}
SIZES = (5_000, 10_000, 20_000, 40_000)


def _same(text: str) -> bool:
    return [(t.type, t.content) for t in OLD.parse(text)] == [(t.type, t.content) for t in NOW.parse(text)]


def main() -> None:
    race(SHAPES, SIZES, OLD.parse, NOW.parse, same=_same, width=30)  # the same tokens, checked first


if __name__ == "__main__":
    main()
