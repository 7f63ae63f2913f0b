"""A Markdown or MDX page's URL as its front matter sets it, for local and git sources with a ``url_template``.

Static site generators publish a page at the path its front matter names, not at its file's path:
Jekyll's ``permalink`` and Hugo's ``url`` (a path from the site's root, as written), Docusaurus' and
Hugo's ``slug`` (``/x`` from the docs' root, ``x`` beside the file: its folder, then ``x``) and
Docusaurus' ``id`` (the file's name replaced; not for a folder's index page). :func:`page_route`
reads the first of them a page sets; :func:`route_url` puts it into the source's ``url_template``:
a route from the root replaces ``{path}`` and whatever follows it in the template, a slug or an id
replaces ``{path}`` alone (the template's ``/`` or ``.html`` after it still applies). A value that
cannot be a path of the site (a URL with a scheme or another host, ``?`` or ``#``, control
characters, text that was not UTF-8, over :data:`MAX_ROUTE` characters, Jekyll's ``:placeholders``)
is ignored with the reason, and the next key (or the file's path) gives the URL. ``..`` segments are
resolved as a URL's are, never above the root, so no value leads out of the template's site.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from .base import IGNORING_ANCHORS
from .local import _INDEX_NAMES, FILE_VIEW_RE, _collapse, _quote, site_rel, template_drops_index

__all__ = ["MAX_ROUTE", "ROUTE_KEYS", "Route", "page_route", "route_url"]

#: the front-matter keys that set a page's URL, in the order they are tried, and how each is read:
#: ``root``: a path from the site's root as written (Jekyll's permalink, Hugo's url); ``slug``: from the
#: docs' root when it starts with ``/``, else beside the file (Docusaurus, Hugo); ``id``: the file's name
#: replaced (Docusaurus)
ROUTE_KEYS = (("permalink", "root"), ("url", "root"), ("slug", "slug"), ("id", "id"))
#: the longest front-matter path taken (a URL over about 2,000 characters is refused by browsers and servers)
MAX_ROUTE = 1000
#: a scheme (``javascript:``, ``https:``, ``mailto:``): the value is no path of the site
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
#: a Jekyll placeholder (``:title``, ``:path``, ``:output_ext``), which only Jekyll fills in
_PLACEHOLDER_RE = re.compile(r"(?:^|/|[^A-Za-z0-9]):[a-z_]+")


@dataclass(frozen=True, slots=True)
class Route:
    """Where the front matter puts a page: ``path`` from the site's root as written (``whole``: it ends
    the URL, the template's text after ``{path}`` is not added), else what replaces ``{path}``."""

    key: str
    path: str
    whole: bool


def _value_problem(value: str) -> str | None:
    """Why ``value`` (stripped) cannot be a path of the site, or None."""
    if len(value) > MAX_ROUTE:
        return f"it is {len(value)} characters long, over {MAX_ROUTE}"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "it is not valid Unicode text"
    if "\ufffd" in value:
        return "the file is not UTF-8 there (a character could not be read)"
    if any(unicodedata.category(c) == "Cc" for c in value):
        return "it holds control characters"
    if value.startswith("//") or "\\" in value:
        return "it names another host or holds a backslash, which a browser reads as '/'"
    if _SCHEME_RE.match(value):
        return "it is a URL with a scheme, not a path of the site"
    if "?" in value or "#" in value:
        return "it holds '?' or '#', which are no part of a page's path"
    return None


def _resolve(path: str) -> str:
    """``path`` (from the root, no leading ``/``) with ``.`` and ``..`` segments resolved as a URL's are:
    never above the root. A trailing ``/`` is kept."""
    out: list[str] = []
    parts = path.split("/")
    for part in parts:
        if part == "..":
            if out:
                out.pop()
        elif part not in (".", ""):
            out.append(part)
    trailing = bool(out) and (parts[-1] in ("", ".", ".."))
    return "/".join(out) + ("/" if trailing else "")


def page_route(metadata: dict[str, Any], *, rel: str) -> tuple[Route | None, list[str]]:
    """The route the front matter ``metadata`` of the page at ``rel`` sets (None: none), and for each
    key set but not taken, why (``"slug 'https://x/' ignored: …"``), for the log."""
    ignored: list[str] = []
    folder = posixpath.dirname(rel)
    stem = posixpath.splitext(posixpath.basename(rel))[0]
    for key, kind in ROUTE_KEYS:
        raw = metadata.get(key)
        if raw is None or (isinstance(raw, str) and not raw.strip()):  # (blank: no value, not the site's root)
            continue
        shown = repr(raw)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        if isinstance(raw, bool) or not isinstance(raw, str | int):
            ignored.append(f"{key} {shown} ignored: it is a {type(raw).__name__}, not a path")
            continue
        value = str(raw).strip()
        problem = _value_problem(value)
        if problem is None and kind == "root" and key == "permalink" and _PLACEHOLDER_RE.search(value):
            problem = "it holds placeholders (:title, :path …), which docs-rag does not fill in"
        if problem is None and kind == "id" and "/" in value:
            problem = "an id holds no '/' (Docusaurus refuses it)"
        if problem is not None:
            ignored.append(f"{key} {shown} ignored: {problem}")
            continue
        if kind == "id":
            if stem in _INDEX_NAMES:  # a folder's index page is the folder (Docusaurus), whatever its id
                continue
            return Route(key, _resolve(posixpath.join(folder, value)).rstrip("/"), False), ignored
        if kind == "root":
            return Route(key, _resolve(value.lstrip("/")), True), ignored
        base = "" if value.startswith("/") else folder
        return Route(key, _resolve(posixpath.join(base, value.lstrip("/"))).rstrip("/"), False), ignored
    return None, ignored


_ESCAPE_RE = re.compile(r"%[0-9A-Fa-f]{2}")


def _quote_keeping_escapes(path: str) -> str:
    """``path`` percent-encoded for a URL, its valid ``%XX`` escapes kept as written (not ``%25XX``)."""
    out, last = [], 0
    for m in _ESCAPE_RE.finditer(path):
        out += [_quote(path[last:m.start()]), m.group(0)]
        last = m.end()
    return "".join([*out, _quote(path[last:])])


def route_url(route: Route, url_template: str) -> str:
    """The URL of ``route`` under ``url_template``: a whole route after the text before ``{path}``;
    else the template with ``{path}`` replaced (a route to the root with ``{path}`` followed by text
    other than ``/`` keeps an ``index`` segment, as :func:`~.local.template_path` does for files)."""
    # (a value already percent-encoded, ``caf%C3%A9``, is the URL the site serves: its escapes stay as written)
    path = _quote_keeping_escapes(route.path)
    if route.whole:
        return _collapse(url_template.split("{path}", 1)[0] + "/" + path) if path else \
            url_template.split("{path}", 1)[0]
    if not path and not template_drops_index(url_template):
        path = "index"
    return _collapse(url_template.replace("{path}", path))


#: the most of a file read to find its front matter before its URL is known (a real block is a few
#: hundred bytes; one longer than this sets no URL)
FRONT_MATTER_BYTES = 256 * 1024


def routes_apply(cfg, rel: str) -> bool:  # noqa: ANN001 - a SourceConfig
    """Whether the front matter of the file at ``rel`` may set its URL: a Markdown or MDX file of a source
    with ``front_matter_urls`` on and a ``url_template``, that no ``url_rules`` entry maps (a rule is the
    config's own word on the URL), unless ``heading_anchors`` says MkDocs or VitePress builds the site
    (:data:`IGNORING_ANCHORS`) or the template is a repository's file view (:data:`~.local.FILE_VIEW_RE`)."""
    from ..parsing import format_for_path

    return (bool(cfg.front_matter_urls) and bool(cfg.url_template) and cfg.heading_anchors not in IGNORING_ANCHORS
            and FILE_VIEW_RE.search(cfg.url_template) is None
            and format_for_path(rel) in ("markdown", "mdx")
            and not any(re.search(rule.match, rel) for rule in cfg.url_rules))


def route_rel(cfg, rel: str) -> str:  # noqa: ANN001 - a SourceConfig
    """The path :func:`page_route` reads a page's folder and name from: ``rel`` as the generator that the
    source's ``url_paths`` names writes it into URLs (:func:`~.local.site_rel`), since a relative slug or an
    id is beside the page's published folder (Docusaurus' ``02-guides/`` is ``guides/``)."""
    return site_rel(rel, cfg.url_paths) if cfg.url_template and not FILE_VIEW_RE.search(cfg.url_template) else rel


def front_matter_of(data: bytes | str, *, rel: str) -> dict[str, Any]:
    """The front matter of a Markdown or MDX file's first bytes (``{}`` for none, or for a block the
    parser will refuse: the page is then skipped with that reason when parsed)."""
    from ..parsing.markdown import split_frontmatter
    from .base import decode_body

    text = decode_body(data, None) if isinstance(data, bytes) else data
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if not text.startswith(("---", "+++")):
        return {}
    try:
        metadata, _ = split_frontmatter(text, path=rel, toml=True)
    except Exception:  # noqa: BLE001 - invalid YAML/TOML, too large: the parser says why
        return {}
    return metadata


def route_line(source: str, rel: str, ignored: list[str], url: str) -> str:
    """The log line for front-matter URL keys a page sets that were not taken."""
    return f"[DISCOVER] {source}: warning: {rel}: front matter {'; '.join(ignored)}; indexed at {url}"


def settle_urls(claims: list[tuple[str, str, str | None]], *, source: str, log) -> dict[str, str | None]:  # noqa: ANN001
    """Each file's URL: ``claims`` are ``(rel, url from its path, url from its front matter or None)``
    in path order. Files without a front-matter URL take theirs first (a later one of two that map to
    the same URL is skipped, as before); then each front-matter URL, where it is free, else the file's
    own path URL with a warning naming the page that holds it (so two pages claiming one slug are both
    indexed); a file with neither free is skipped with a warning. Returns ``rel`` → URL or None."""
    out: dict[str, str | None] = {}
    taken: dict[str, str] = {}
    for rel, url, claimed in claims:
        if claimed is not None:
            continue
        if url in taken:
            log(f"[DISCOVER] {source}: warning: {rel} maps to {url} like {taken[url]}; skipped")
            out[rel] = None
            continue
        out[rel] = url
        taken[url] = rel
    for rel, url, claimed in claims:
        if claimed is None:
            continue
        if claimed not in taken:
            taken[claimed] = rel
            out[rel] = claimed
            continue
        if url not in taken:
            log(f"[DISCOVER] {source}: warning: {rel}: its front matter puts it at {claimed}, where {taken[claimed]} "
                f"is already; indexed at its file's URL {url} instead (give one of them another URL)")
            taken[url] = rel
            out[rel] = url
            continue
        log(f"[DISCOVER] {source}: warning: {rel}: its front matter puts it at {claimed}, where {taken[claimed]} is "
            f"already, and its file's URL {url} is {taken[url]}'s; skipped (give one of them another URL)")
        out[rel] = None
    return out
