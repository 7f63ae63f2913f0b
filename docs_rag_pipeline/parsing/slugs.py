"""Heading anchors the way GitHub (github-slugger) and most static site generators make them."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator, MutableSet
from typing import Any

import yaml

__all__ = ["ANCHOR_STYLES", "github_slug", "mkdocs_anchor_style", "pymdownx_slug", "python_markdown_slug",
           "slug_for", "slugify", "vitepress_slug", "vitepress_slugify"]

#: how a site's generator makes a heading's anchor: ``github`` (github-slugger: GitHub, Docusaurus,
#: Astro and Starlight, Hugo, MyST), ``python-markdown`` (Python-Markdown's ``toc``
#: extension, which MkDocs uses: ASCII only, runs of spaces and dashes one ``-``, ``_1`` for a repeat),
#: ``pymdownx`` (MkDocs with the ``toc`` slugify Material for MkDocs recommends for headings in any
#: script, ``pymdownx.slugs.slugify`` with ``case: lower``: letters of every script kept) or
#: ``vitepress`` (VitePress' own slugify: runs of spaces and punctuation one ``-``, ``_`` before a digit)
ANCHOR_STYLES = ("github", "python-markdown", "pymdownx", "vitepress")


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


#: VitePress' slugify (``vitepress/dist/node``, from @mdit-vue/shared): its ``rSpecial``, with JavaScript's
#: ``\s`` (which also holds U+FEFF), its ``rCombining`` and its ``rControl``
_VITEPRESS_SPECIAL = re.compile(r"[\s\ufeff~`!@#$%^&*()\-_+=\[\]{}|\\;:\"'“”‘’<>,.?/]+")
_VITEPRESS_COMBINING = re.compile(r"[\u0300-\u036f]")
_VITEPRESS_CONTROL = re.compile(r"[\x00-\x1f]")


def vitepress_slugify(text: str) -> str:
    """The bare id VitePress gives a heading with ``text``: NFKD, combining marks and control characters
    dropped, each run of spaces and punctuation one ``-``, none at either end, ``_`` before a leading
    digit, lowercase (``What's new in v1.2?`` → ``what-s-new-in-v1-2``, ``2024 plans`` → ``_2024-plans``)."""
    text = _VITEPRESS_CONTROL.sub("", _VITEPRESS_COMBINING.sub("", unicodedata.normalize("NFKD", text)))
    text = re.sub(r"-{2,}", "-", _VITEPRESS_SPECIAL.sub("-", text)).strip("-")
    return re.sub(r"^([0-9])", r"_\1", text).lower()  # JavaScript's \d: ASCII digits only


def vitepress_slug(text: str, seen: dict[str, int]) -> str:
    """The id VitePress gives a heading with ``text``, made unique within one page as its anchor plugin
    (markdown-it-anchor) does: ``-1``, ``-2``, … after the first id not yet taken."""
    base = slug = vitepress_slugify(text)
    n = 1
    while slug in seen:
        slug = f"{base}-{n}"
        n += 1
    seen[slug] = 0
    return slug


def python_markdown_slug(text: str, seen: dict[str, int]) -> str:
    """The id Python-Markdown's ``toc`` extension (MkDocs) gives a heading with ``text``, made unique
    within one page by the extension's own rule (``_1``, ``_2``, ...): its own functions, not a copy."""
    from markdown.extensions.toc import slugify as toc_slugify
    from markdown.extensions.toc import unique

    # the page's ids are ``seen`` itself, not a copy made per heading, and unique's own cache of the
    # suffixes known taken (its ``counters``) lives in ``seen`` under keys no id has (NUL): the
    # thousandth "## Parameters" of a reference page no longer walks _1 ... _999 again
    slug = unique(toc_slugify(text, "-"), _Ids(seen), _Counters(seen))
    seen[slug] = 0
    return slug


@functools.cache
def _pymdownx_lower():  # noqa: ANN202 - (text, sep) -> slug
    from pymdownx.slugs import slugify as configurable

    return configurable(case="lower")


def pymdownx_slug(text: str, seen: dict[str, int]) -> str:
    """The id an MkDocs site gives a heading with ``text`` when its ``mkdocs.yml`` sets the ``toc``
    extension's ``slugify: !!python/object/apply:pymdownx.slugs.slugify {kwds: {case: lower}}`` (as
    Material for MkDocs' docs show, for headings in any script: ``## Установка`` is ``#установка``, where
    Python-Markdown's own slugify keeps ASCII only and gives ``#_1``); made unique by the ``toc``
    extension's rule, as :func:`python_markdown_slug` is. pymdown-extensions' own function."""
    from markdown.extensions.toc import unique

    slug = unique(_pymdownx_lower()(text, "-"), _Ids(seen), _Counters(seen))
    seen[slug] = 0
    return slug


def _tagged(loader: Any, suffix: str, node: Any) -> dict[str, Any]:
    """A value ``mkdocs.yml`` tags (``!!python/object/apply:…``, ``!ENV``, ``!relative``), as its tag and value."""
    if isinstance(node, yaml.MappingNode):
        value: Any = loader.construct_mapping(node, deep=True)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_scalar(node)
    return {"tag": suffix, "value": value}


class _MkDocsLoader(yaml.SafeLoader):
    """YAML as ``mkdocs.yml`` writes it: its Python and MkDocs tags read as data, never run."""


_MkDocsLoader.add_multi_constructor("tag:yaml.org,2002:python/", _tagged)
_MkDocsLoader.add_multi_constructor("!", _tagged)


def mkdocs_anchor_style(mkdocs_yml: str) -> str | None:
    """The anchor style (:data:`ANCHOR_STYLES`) of the site an ``mkdocs.yml`` with this text builds:
    ``python-markdown``, or ``pymdownx`` when its ``toc`` extension's ``slugify`` is
    ``!!python/object/apply:pymdownx.slugs.slugify`` with ``kwds: {case: lower}``; None when it is
    another function (or pymdownx's with other options), which no style reproduces."""
    try:
        data = yaml.load(mkdocs_yml, _MkDocsLoader)  # noqa: S506 - a SafeLoader whose tags build plain dicts
    except yaml.YAMLError:
        return "python-markdown"
    extensions = data.get("markdown_extensions") if isinstance(data, dict) else None
    entries = extensions if isinstance(extensions, list) else [extensions] if isinstance(extensions, dict) else []
    toc = next((e["toc"] for e in entries if isinstance(e, dict) and "toc" in e), None)
    slugify = toc.get("slugify") if isinstance(toc, dict) else None
    if slugify is None:
        return "python-markdown"
    if isinstance(slugify, dict) and slugify.get("tag") == "object/apply:pymdownx.slugs.slugify":
        value = slugify.get("value")
        kwds = value.get("kwds") if isinstance(value, dict) else None
        kwds = kwds if isinstance(kwds, dict) else {}
        if kwds.get("case") == "lower" and not kwds.get("percent_encode") and kwds.get("normalize", "NFC") == "NFC":
            return "pymdownx"
    return None


class _Ids(MutableSet):
    """The ids of ``seen`` as the set Python-Markdown's ``unique`` takes, without copying them."""

    def __init__(self, seen: dict[str, int]) -> None:
        self.seen = seen

    def __contains__(self, x: object) -> bool:
        return x in self.seen

    def __iter__(self) -> Iterator[str]:
        return (k for k in self.seen if not k.startswith("\x00"))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def add(self, value: str) -> None:
        self.seen.setdefault(value, 0)

    def discard(self, value: str) -> None:
        self.seen.pop(value, None)


class _Counters:
    """``unique``'s ``counters`` (base id → the highest n with base_1 … base_n all taken), kept in ``seen``."""

    def __init__(self, seen: dict[str, int]) -> None:
        self.seen = seen

    def get(self, base: str, default: int = 0) -> int:
        return self.seen.get("\x00" + base, default)

    def __setitem__(self, base: str, n: int) -> None:
        self.seen["\x00" + base] = n


def slug_for(style: str):  # noqa: ANN201 - (text, seen) -> anchor
    """The slug function of an anchor style (:data:`ANCHOR_STYLES`)."""
    if style == "python-markdown":
        return python_markdown_slug
    if style == "pymdownx":
        return pymdownx_slug
    if style == "vitepress":
        return vitepress_slug
    return github_slug
