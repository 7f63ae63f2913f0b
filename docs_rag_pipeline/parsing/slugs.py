"""Heading anchors the way GitHub (github-slugger) and most static site generators make them."""

from __future__ import annotations

import unicodedata

__all__ = ["ANCHOR_STYLES", "github_slug", "python_markdown_slug", "slug_for", "slugify"]

#: how a site's generator makes a heading's anchor: ``github`` (github-slugger: GitHub, Docusaurus,
#: Astro and Starlight, Hugo, VitePress, MyST) or ``python-markdown`` (Python-Markdown's ``toc``
#: extension, which MkDocs uses: ASCII only, runs of spaces and dashes one ``-``, ``_1`` for a repeat)
ANCHOR_STYLES = ("github", "python-markdown")


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


def python_markdown_slug(text: str, seen: dict[str, int]) -> str:
    """The id Python-Markdown's ``toc`` extension (MkDocs) gives a heading with ``text``, made unique
    within one page by the extension's own rule (``_1``, ``_2``, ...): its own functions, not a copy."""
    from markdown.extensions.toc import slugify as toc_slugify
    from markdown.extensions.toc import unique

    slug = unique(toc_slugify(text, "-"), set(seen))
    seen[slug] = 0
    return slug


def slug_for(style: str):  # noqa: ANN201 - (text, seen) -> anchor
    """The slug function of an anchor style (:data:`ANCHOR_STYLES`)."""
    if style == "python-markdown":
        return python_markdown_slug
    return github_slug
