"""Heading anchors the way GitHub (github-slugger) and most static site generators make them."""

from __future__ import annotations

import unicodedata

__all__ = ["github_slug", "slugify"]


def _keep(char: str) -> bool:
    """True for the characters github-slugger keeps: letters, marks, decimal and letter numbers
    (``Nd``, ``Nl``; not superscripts, fractions and other ``No`` numbers: ``m²`` → ``m``), ``-``,
    ``_``, space."""
    if char in "-_ ":
        return True
    category = unicodedata.category(char)
    return category[0] in "LM" or category in ("Nd", "Nl", "Pc")


def slugify(text: str) -> str:
    """The bare slug of ``text``: lowercase, punctuation and symbols dropped, each space a ``-``."""
    return "".join(c for c in text.lower() if _keep(c)).replace(" ", "-")


def github_slug(text: str, seen: dict[str, int]) -> str:
    """The anchor GitHub gives a heading with ``text``, made unique within one page.

    ``seen`` holds the slugs given so far on the page (use one dict per page): a repeated
    slug gets ``-1``, ``-2``, ... appended, exactly like github-slugger does.
    """
    original = slugify(text)
    slug = original
    while slug in seen:
        seen[original] += 1
        slug = f"{original}-{seen[original]}"
    seen[slug] = 0
    return slug
