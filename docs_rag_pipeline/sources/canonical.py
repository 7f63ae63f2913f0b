"""One page per content: which URL a crawl indexes when several URLs serve the same page.

Two rules, applied alike by a crawl and by a reparse from the cache:

- **Same bytes.** URLs that answered identical bodies (``/guide`` and ``/guide/``, ``a.html`` and
  ``A.HTML``) are one page; the one kept is :func:`keep_first` of them.
- **rel=canonical.** A page whose ``<link rel="canonical">`` names another URL of the crawl
  (Read the Docs' ``/en/latest/`` for ``/en/stable/``, a print view, a ``?lang=`` variant) is left out
  for that URL when that URL is a page of the crawl too, names no other URL as its own canonical,
  and holds at least :data:`CANONICAL_SHARE` of this page's text (word triples of the parsed main
  text). Anything less keeps the page: a site that names its home page canonical on every page (a
  common misconfiguration) loses nothing, and a chain or loop of canonicals is never followed.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable, Mapping
from urllib.parse import urljoin

from .web_http import browser_href

#: the least share of a page's word triples its canonical page must hold for the page to be left out
CANONICAL_SHARE = 0.8

_XML_DECLARATION_RE = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)


def keep_first(urls: Iterable[str], indexed: Mapping[str, object]) -> str:
    """Of URLs serving one content, the one indexed: the one already indexed, else the shortest, else
    one in lower case, else the first in sort order (so a refresh keeps the same choice)."""
    return min(urls, key=lambda u: (u not in indexed, len(u), u != u.lower(), u))


def canonical_link(html: str, base_url: str) -> str | None:
    """The absolute URL of the page's first ``<link rel="canonical" href>``, or None."""
    if "canonical" not in html.lower():
        return None
    import lxml.html

    try:
        doc = lxml.html.document_fromstring(_XML_DECLARATION_RE.sub("", html, count=1))
    except Exception:  # lxml rejects some inputs outright; such a page names no canonical
        return None
    base = base_url
    for b in doc.xpath("//base[@href]")[:1]:
        try:
            base = urljoin(base_url, browser_href((b.get("href") or "").strip()))
        except ValueError:
            pass
    for el in doc.xpath("//link[@rel][@href]"):
        if "canonical" in (el.get("rel") or "").lower().split():
            href = (el.get("href") or "").strip()
            try:
                return urljoin(base, browser_href(href)) if href else None
            except ValueError:
                return None
    return None


def _triples(html: str, url: str, content_selector: str | None) -> set[tuple[str, ...]]:
    from ..parsing.html import parse_html

    page = parse_html(html, url=url, content_selector=content_selector)
    words = re.findall(r"\w+", " ".join([page.title, *(s.text for s in page.sections)]).lower())
    if len(words) < 3:
        return {tuple(words)} if words else set()
    return set(zip(words, words[1:], words[2:]))


def _safe_triples(html: str | None, url: str, content_selector: str | None) -> set[tuple[str, ...]] | None:
    if html is None:
        return None
    try:
        return _triples(html, url, content_selector)
    except Exception:  # a page the parser cannot read: no triples, so nothing is left out for it
        return None


def covered_share(mine: set[tuple[str, ...]] | None, theirs: set[tuple[str, ...]] | None) -> float:
    """The share of a page's word triples that its canonical page holds (1.0 for a page with no
    text; 0.0 when either page could not be read)."""
    if mine is None or theirs is None:
        return 0.0
    return len(mine & theirs) / len(mine) if mine else 1.0


def canonical_drops(declared: Mapping[str, str], pages: Iterable[str], text_of: Callable[[str], str | None], *,
                    content_selector: str | None = None) -> tuple[dict[str, str], list[str]]:
    """Which pages to leave out for their canonical URL.

    ``declared`` maps a page's URL to the other URL its canonical link names (both normalised and
    allowed by the source's settings), ``pages`` are the URLs fetched as pages, ``text_of`` reads a
    page's HTML. Returns ``{url: canonical}`` for the pages to leave out, and one line for each
    canonical not honoured, saying why.
    """
    live = set(pages)
    drops: dict[str, str] = {}
    notes: list[str] = []
    read: dict[str, set[tuple[str, ...]] | None] = {}  # one parse a page, however many name it canonical

    def triples(url: str) -> set[tuple[str, ...]] | None:
        if url not in read:
            read[url] = _safe_triples(text_of(url), url, content_selector)
        return read[url]

    for url, canon in sorted(declared.items()):
        if url not in live:
            continue
        if canon not in live:
            notes.append(f"{url}: its canonical {canon} is not a page of this crawl; the page is indexed")
            continue
        if declared.get(canon, canon) != canon:
            notes.append(f"{url}: its canonical {canon} names another canonical ({declared[canon]}); "
                         "the page is indexed")
            continue
        share = covered_share(triples(url), triples(canon))
        if share < CANONICAL_SHARE:
            notes.append(f"{url}: its canonical {canon} holds {share:.0%} of its text (less than "
                         f"{CANONICAL_SHARE:.0%}): not the same page, so it is indexed")
            continue
        drops[url] = canon
    return drops, notes
