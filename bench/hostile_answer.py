"""The raw-HTML check of a model's answer on hostile input: time per answer as it grows.

A model (or a document it copied) can write a tag that never closes: ``<a href=href=href=…`` with no
``>``. The check of e88a7f4 found active tags with one regex whose lazy attribute list backtracked:
quadratic in the tag's length (about 2 s per answer at the 8 KB cap of the default ``llm.max_tokens``,
25 s at 32 KB). The check now finds each tag in one possessive pass and looks at its attributes apart.
Baseline: that regex, copied below, run on the same strings in the same process. Prints seconds per
call and the ratio per size, and the growth of each from the smallest size to the largest (1.0 is
linear, 2.0 quadratic). Run: ``python bench/hostile_answer.py``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from docs_rag_pipeline.answering.citations import _ACTIVE_ATTRS, _ACTIVE_NAMES, _drop_active_tags  # noqa: E402
from timing import race  # noqa: E402 - bench/timing.py, beside this script

_OLD_ATTRS = r"""(?:"[^"]*"|'[^']*'|[^<>"'])*?"""
OLD = re.compile(rf"</?(?:{_ACTIVE_NAMES})\b{_OLD_ATTRS}>|<[A-Za-z][\w-]*\s{_OLD_ATTRS}"
                 rf"\b(?:{_ACTIVE_ATTRS})\s*={_OLD_ATTRS}>", re.I)

SHAPES = {
    "href= repeated, never closed": lambda n: "<div><a " + "href=" * (n // 5),
    '"x"src= repeated, never closed': lambda n: "<div><a " + '"x"src=' * (n // 7),
    "closed tags with on…= attributes": lambda n: '<b onclick="x">y</b> ' * (n // 21),
}
SIZES = (2_000, 4_000, 8_000, 16_000)



def main() -> None:
    # both sides drop the same tags, checked first on every string
    race(SHAPES, SIZES, lambda s: OLD.sub("", s), _drop_active_tags,
         same=lambda s: OLD.sub("", s) == _drop_active_tags(s), width=34)


if __name__ == "__main__":
    main()
