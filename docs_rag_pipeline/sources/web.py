"""``kind: web`` — a polite, incremental crawler for a documentation website.

Breadth-first from the seed URLs and the site's sitemaps, within ``allowed_domains``, the allow and
deny patterns, robots.txt, ``max_depth`` and ``max_pages``. Every answered page is cached on disk
(``<workdir>/raw/``) with a manifest (``raw/manifest.json``: url, path, status, etag, last_modified,
fetched_at, content_hash), so a refresh sends conditional GETs (a 304 costs no body), ``reparse``
rebuilds pages from the cache without any network, and ``force`` downloads everything again.

One bad URL never fails the scan: it is logged with its reason and counted in the notes.
"""

from __future__ import annotations

import codecs
import copy
import gzip
import http.client
import io
import ipaddress
import itertools
import json
import math
import os
import posixpath
import re
import socket
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping
from urllib.parse import quote, unquote, urljoin, urlsplit, urlunsplit

import requests
from requests.structures import CaseInsensitiveDict
from protego import Protego

from ..config import SourceConfig
from ..files import atomic_write, disk_full
from ..http_deadline import read1, shutdown_at, within
from ..parsing.html import META_REFRESH_RE, text_encoding
from ..records import Page
from .base import Log, ScanResult, Source, content_hash, decode_body, whole_characters
from .canonical import canonical_drops, canonical_link, keep_first
from .web_http import browser_href, crawler_session, location_url, response_socket, shut_down, watch_sockets

__all__ = ["WebSource", "extract_links", "has_cache", "host_allowed", "normalize_url", "parse_robots", "parse_sitemap"]

HTML_TYPES = {"text/html", "application/xhtml+xml"}
REDIRECT_STATUSES = {301, 302, 303, 307, 308}
RETRY_STATUSES = {408, 429, 500, 502, 503, 504}
GONE_STATUSES = {404, 410}
FOLDER_NOT_SERVED = {403, 404, 410}  # a folder folded from a linked .../index.html: fetched as linked
MAX_REDIRECTS = 10
BACKOFF_SECONDS = 0.5  # first wait before a retry; doubles on each further try
MAX_BACKOFF_SECONDS = 30.0
MIN_ATTEMPTS_FOR_THRESHOLD = 10  # the error threshold stops a crawl mid-way only after this many fetches
SITEMAP_MAX_FILES = 50
SITEMAP_MAX_BYTES = 50_000_000
SITEMAP_MAX_URLS = 50_000  # per sitemap file: the sitemap protocol's limit
# sitemaps are read until the queue holds this many times max_pages (at least SITEMAP_MIN_QUEUED URLs): a
# crawl that can fetch max_pages has no use for millions of URLs, each normalised, checked and remembered
SITEMAP_QUEUE_PAGES = 10
SITEMAP_MIN_QUEUED = 10_000
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 §2.3.1.2: a crawler should follow at least five consecutive redirects
ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309: a crawler must read at least 500 kibibytes; Google reads that much
DEFAULT_PORTS = {"http": 80, "https": 443}
# links whose path ends like this are files, not pages: skipped without a request
NOT_PAGE_EXTENSIONS = frozenset("""
    .png .jpg .jpeg .gif .svg .webp .ico .bmp .tif .tiff .avif .css .js .mjs .map .json .xml .txt .csv .tsv
    .pdf .zip .gz .tgz .tar .bz2 .xz .7z .rar .whl .egg .exe .dmg .msi .deb .rpm .apk .jar .iso .bin
    .mp3 .mp4 .m4a .webm .ogg .oga .wav .avi .mov .mkv .flac .woff .woff2 .ttf .eot .otf .inv .epub .mobi
    .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp .rst .md .py .ipynb .yaml .yml .toml .wasm
""".split())
_XML_DECLARATION_RE = re.compile(r"^\s*<\?xml[^>]*\?>")
#: the start of an XML document, after a byte-order mark (legal in XML, and written by many Windows and
#: .NET tools and CMSs: a sitemap that gained one was read as a plain-text list of no URL at all)
_XML_START_RE = re.compile(rb"(?:\xef\xbb\xbf|\xff\xfe|\xfe\xff)?[\s\x00]*<")
#: what a crawl killed before Manifest.save or rollback can leave in the cache folder: staged bodies
#: (``<name>.new.html``, see Manifest.put) and atomic_write's temporary files (a body's, the manifest's)
_CACHE_LEFTOVER_RE = re.compile(r"[0-9a-f]{40}\.new\.html|\.(?:[0-9a-f]{40}(?:\.new)?\.html|manifest\.json)\.\w+\.tmp")


# --------------------------------------------------------------------------------------------
# URLs
# --------------------------------------------------------------------------------------------


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4: resolve ``.`` and ``..`` segments (never above the root)."""
    if "." not in path:
        return path
    out: list[str] = []
    segments = path.split("/")
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == ".":
            if last:
                out.append("")
            continue
        if seg == "..":
            if len(out) > 1:
                out.pop()
            if last:
                out.append("")
            continue
        out.append(seg)
    result = "/".join(out)
    return result if result.startswith("/") else "/" + result


def _as_written(url: str) -> tuple[str, ...]:
    """``url`` as normalised (percent-encoded, ``/caf%C3%A9/``) and, when it holds escapes of UTF-8 text,
    as a reader writes it (``/café/``): a pattern written with the characters a site shows matched nothing."""
    if "%" in url:
        try:
            decoded = unquote(url, errors="strict")
        except UnicodeDecodeError:  # escapes of bytes that are not UTF-8 have no written form
            return (url,)
        if decoded != url:
            return (url, decoded)
    return (url,)


def _found(pattern: str, forms: tuple[str, ...]) -> bool:
    """Whether an ``allow_patterns``/``deny_patterns`` regular expression finds a URL in one of its
    forms (:func:`_as_written`, read once per URL, not once per pattern)."""
    return any(re.search(pattern, u) for u in forms)


def query_allowed(url_with_query: str, patterns: Iterable[str]) -> bool:
    """True when an allow pattern matches text inside the query string (not only before the ``?``),
    in the URL as it is or as a reader writes it."""
    for u in _as_written(url_with_query):
        qpos = u.find("?")
        if qpos < 0:
            continue
        for p in patterns:
            for m in re.finditer(p, u):
                if m.end() > qpos:
                    return True
    return False


def normalize_url(url: str, *, allow_patterns: Iterable[str] = ()) -> str | None:
    """The canonical form of a link, or None when it is not an http(s) URL, or its host is no host
    name (a backslash, ``%``, a space, or anything the HTTP client would read as another host).

    Scheme and host lowercased, user info and default ports dropped, dot segments resolved,
    repeated slashes collapsed, percent escapes uppercased, a final ``index.html`` folded into
    its folder, the fragment dropped, and the query string dropped unless an allow pattern
    matches text inside it.
    """
    try:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS:
            return None
        host = (parts.hostname or "").lower().rstrip(".")
        port = parts.port
    except ValueError:  # a bad port or an unbalanced IPv6 bracket
        return None
    if not host or "\\" in parts.netloc:
        # urllib3 (requests), like browsers, ends the authority at a backslash: for
        # http://169.254.169.254\.docs.example.org/ urlsplit's host is a subdomain of an allowed
        # domain, while the request would go to 169.254.169.254
        return None
    if ":" in host:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return None
        host = f"[{host}]"
    elif _BAD_HOST.search(host):
        return None
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = re.sub(r"/{2,}", "/", parts.path or "/")
    path = _remove_dot_segments(path if path.startswith("/") else "/" + path)
    path = quote(path, safe="/%:@!$&'()*+,;=~-._")
    path = re.sub(r"%[0-9a-f]{2}", lambda m: m.group(0).upper(), path)
    # index.html, as written: on a case-sensitive server Index.html is another page (the index node of
    # every manual makeinfo writes), and it was folded into the folder and never fetched
    path = re.sub(r"/index\.html?$", "/", path)
    query = ""
    if parts.query:
        q = quote(parts.query, safe="/%:@!$&'()*+,;=?~-._")
        if query_allowed(urlunsplit((scheme, netloc, path, q, "")), allow_patterns):
            query = q
    out = urlunsplit((scheme, netloc, path, query, ""))
    reached = _host_requests_reaches(out)  # the host a request would connect to must be the one checked
    if reached is None or (reached != host.strip("[]") if host.isascii() else _BAD_HOST.search(reached)):
        return None
    return out


#: what may not stand in a host name: WHATWG URL's forbidden host code points, with "%" (a percent
#: escape in a host) and every C0 control and DEL
_BAD_HOST = re.compile(r"[\x00-\x20\x7f#%/:<>?@\[\\\]^|]")


def _host_requests_reaches(url: str) -> str | None:
    """The host a request for ``url`` connects to, as urllib3 (under requests) parses it, without
    brackets; None when it cannot parse it. A URL whose host here differs from the host that
    ``host_allowed`` checked is refused (no request may reach a host outside allowed_domains)."""
    from urllib3.util import parse_url

    try:
        host = parse_url(url).host
    except ValueError:  # urllib3's LocationParseError is a ValueError
        return None
    return host.strip("[]").lower().rstrip(".") if host else None


def _as_sent(normalized: str, raw: str) -> str:
    """The URL to request for a redirect target ``raw`` that normalises to ``normalized``: its path and
    query as sent (``/docs/index.html``, ``/lang.html?lang=en``), percent-encoded, on the normalised scheme
    and host (those were checked)."""
    parts, raw_parts = urlsplit(normalized), urlsplit(raw.strip())
    path = quote(raw_parts.path or "/", safe="/%:@!$&'()*+,;=~-._")
    query = quote(raw_parts.query, safe="/%:@!$&'()*+,;=?~-._")
    return urlunsplit((parts.scheme, parts.netloc, path, query, ""))


def _netloc(url: str) -> str:
    return urlsplit(url).netloc


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def host_allowed(netloc: str, domains: Iterable[str]) -> bool:
    """``netloc`` (``host`` or ``host:port``) against allowed domains: an entry with a port
    matches exactly that host and port; one without matches the host and its subdomains on any port."""
    netloc = netloc.lower()
    has_port = netloc.count(":") == 1 or (netloc.startswith("[") and "]:" in netloc)
    host = netloc.rsplit(":", 1)[0] if has_port else netloc
    for d in domains:
        d = d.lower().strip().rstrip(".")
        if not d:
            continue
        has_port = d.count(":") == 1 or (d.startswith("[") and "]:" in d)
        if has_port:
            if netloc == d:
                return True
        elif host == d or host.endswith("." + d):
            return True
    return False


def url_path(url: str) -> str:
    """The page's path within its site (with the query when one is kept): used for the hierarchy."""
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _not_a_page(url: str) -> str | None:
    ext = posixpath.splitext(urlsplit(url).path)[1].lower()
    return ext if ext in NOT_PAGE_EXTENSIONS else None


# --------------------------------------------------------------------------------------------
# Documents: robots.txt, sitemaps, links, character sets
# --------------------------------------------------------------------------------------------


def parse_robots(text: str) -> Protego:
    """robots.txt as RFC 9309 reads it (Protego): ``*`` and ``$`` in paths, and the longest matching
    rule wins (an ``Allow`` on a tie), whatever the order of the lines. The group of our user
    agent's product token applies, else ``User-agent: *``."""
    return Protego.parse(text)


def _robots_allow_all(allow: bool) -> Protego:
    return Protego.parse("" if allow else "User-agent: *\nDisallow: /\n")


def parse_sitemap(data: bytes, max_urls: int | None = None) -> tuple[list[str], list[str]]:
    """(page URLs, nested sitemap URLs) of a sitemap: XML ``urlset`` or ``sitemapindex``
    (gzipped or not), or a plain-text list of URLs; with ``max_urls``, the first that many only (a
    list of millions would cost minutes and gigabytes further on). Never raises for bad input."""
    if data[:2] == b"\x1f\x8b":
        try:
            out = bytearray()  # in pieces: read(SITEMAP_MAX_BYTES) would allocate all of it at once
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
                while len(out) < SITEMAP_MAX_BYTES and (piece := gz.read(min(2**20, SITEMAP_MAX_BYTES - len(out)))):
                    out += piece
            data = bytes(out)
        except (OSError, EOFError):
            return [], []
    from lxml import etree

    root = None
    if _XML_START_RE.match(data):  # no copy of the data (lstrip would make one)
        try:
            parser = etree.XMLParser(resolve_entities=False, no_network=True, recover=True, huge_tree=False)
            root = etree.fromstring(data, parser=parser)
        except (etree.XMLSyntaxError, ValueError):
            root = None
    if root is None:  # one URL a line; found without splitting the data into lines (a 50 MB run of blank
        # lines would be 50 million strings: gigabytes of memory for a 1 MB gzipped sitemap)
        lines = re.finditer(rb"(?m)^(?:\xef\xbb\xbf)?[ \t\r\f\v]*(https?://[^\s]*)", data)  # a BOM may lead
        return [m.group(1).decode("utf-8", "replace") for m in itertools.islice(lines, max_urls)], []

    def local(tag: object) -> str:
        return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""

    kind = local(root.tag)
    locs: list[str] = []
    for el in root.iter():
        if local(el.tag) == "loc" and el.getparent() is not None and (el.text or "").strip():
            if local(el.getparent().tag) in ("url", "sitemap"):
                locs.append(el.text.strip())
                if max_urls is not None and len(locs) >= max_urls:
                    break
    if kind == "sitemapindex":
        return [], locs
    return locs, []


def extract_links(html: str, base_url: str) -> list[str]:
    """Absolute link targets of a page (``a``/``area`` hrefs, a meta refresh), honouring ``<base href>``."""
    import lxml.html

    html = _XML_DECLARATION_RE.sub("", html, count=1)  # lxml refuses str input that declares an encoding
    if not html.strip():
        return []
    try:
        doc = lxml.html.document_fromstring(html)
    except Exception:  # lxml rejects some inputs outright (e.g. only a comment)
        return []
    base = base_url
    for b in doc.xpath("//base[@href]")[:1]:
        base = urljoin(base_url, browser_href(b.get("href", "").strip()))
    out: list[str] = []
    for el in doc.xpath("//a[@href] | //area[@href]"):
        href = (el.get("href") or "").strip()
        if href and not href.startswith("#"):
            try:
                out.append(urljoin(base, browser_href(href)))  # guide\install.html as browsers read it
            except ValueError:
                continue
    for el in doc.xpath("//meta[@http-equiv]"):
        if (el.get("http-equiv") or "").lower() == "refresh":
            m = META_REFRESH_RE.match(el.get("content") or "")
            if m:
                out.append(urljoin(base, browser_href(m.group(2).strip())))
    return out


#: X-Robots-Tag rules that take a value after a colon (not a user agent's name)
_VALUED_RULES = {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}


def robots_directives(html: str, x_robots_tag: str | None, user_agent: str) -> frozenset[str]:
    """The robots rules a page sets for us (``noindex``, ``nofollow``; ``none`` is both): from
    ``<meta name="robots">`` or a meta named after our user agent's product token, and from the
    ``X-Robots-Tag`` header, whose rules after ``otherbot:`` are another crawler's."""
    token = user_agent.split("/", 1)[0].strip().lower()
    out: set[str] = set()
    agent: str | None = None
    for part in (x_robots_tag or "").split(","):
        rule = part.strip().lower()
        m = re.match(r"^([a-z0-9_.-]+)\s*:\s*(.*)$", rule)
        if m and m.group(1) not in _VALUED_RULES:
            agent, rule = m.group(1), m.group(2).strip()
        if agent in (None, token) and rule:
            out.add(rule)
    if "<meta" in html.lower():
        import lxml.html

        try:
            doc = lxml.html.document_fromstring(_XML_DECLARATION_RE.sub("", html, count=1))
        except Exception:  # lxml rejects some inputs outright; such a page sets no rule
            doc = None
        for el in doc.xpath("//meta[@name][@content]") if doc is not None else []:
            if (el.get("name") or "").strip().lower() in ("robots", token):
                out.update(r.strip().lower() for r in (el.get("content") or "").split(","))
    if "none" in out:
        out |= {"noindex", "nofollow"}
    return frozenset(out & {"noindex", "nofollow"})


def _header_charset(content_type: str | None) -> str | None:
    m = re.search(r"charset\s*=\s*[\"']?([A-Za-z0-9_.:-]+)", content_type or "", re.I)
    return text_encoding(m.group(1)) if m else None  # Latin-1 as windows-1252, as browsers do


BINARY_HEAD = 2048  # a page with a NUL byte in its first this many bytes is a binary file


def _looks_binary(head: bytes) -> bool:
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    return b"\x00" in head[:BINARY_HEAD]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# --------------------------------------------------------------------------------------------
# The on-disk cache
# --------------------------------------------------------------------------------------------


class Manifest:
    """``raw/manifest.json``: url → {url, path, status, etag, last_modified, fetched_at, checked_at,
    content_hash, charset}; the bodies are ``raw/<sha256 of the URL>.html``. Written atomically.

    What a crawl downloads is staged (:meth:`put` writes ``<name>.new.html`` beside the cached body):
    :meth:`save` commits it, :meth:`rollback` drops it. A crawl that is refused (a site answering every
    URL with one maintenance page) so leaves the cache as it was, and a later reparse, which trusts the
    cache, cannot rebuild the index from what the refused crawl saw."""

    VERSION = 1
    FILE = "manifest.json"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.file = root / self.FILE
        self.pages: dict[str, dict[str, Any]] = {}
        if self.file.is_file():
            try:
                raw = json.loads(self.file.read_text(encoding="utf-8"))
                if isinstance(raw, dict) and isinstance(raw.get("pages"), dict):
                    self.pages = {u: e for u, e in raw["pages"].items() if isinstance(e, dict)}
            except (OSError, ValueError):
                self.pages = {}  # a damaged manifest: the next crawl downloads everything again
        self.drop_leftovers()
        self.before: dict[str, dict[str, Any]] = copy.deepcopy(self.pages)  # what rollback() restores
        self.staged: set[str] = set()  # URLs whose entry points at a staged body (see put)

    def drop_leftovers(self) -> None:
        """Finish or remove what a crawl killed (SIGKILL, a lost machine) left in the folder. A staged body
        that holds what its entry records while the committed name does not was cut off by a kill in
        :meth:`save` after the manifest was written: it is renamed into place, as save would have. Any
        other staged body (a crawl killed before its commit) and every half-written temporary file is
        removed: they would stay for good (only a complete crawl tidied the folder). Only files by those
        names, in this folder: a link by such a name is removed itself, never followed."""
        try:
            with os.scandir(self.root) as it:
                found = [f for f in it if _CACHE_LEFTOVER_RE.fullmatch(f.name)]
        except OSError:  # no cache folder yet
            return
        by_staged = {self.staged_name(u): u for u in self.pages}
        for f in found:
            url = by_staged.get(f.name)
            e = self.pages.get(url) if url else None
            try:
                if f.is_dir(follow_symlinks=False):
                    continue
                if e is not None and f.is_file(follow_symlinks=False) and self._holds(f.name, e) \
                        and not self._holds(self.body_name(url), e):
                    os.replace(f.path, self.root / self.body_name(url))
                else:
                    os.unlink(f.path)
            except OSError:
                pass  # a staged body that could not be renamed is still found by read_body
        for url, e in self.pages.items():  # written by an older save whose rename failed
            if e.get("path") == self.staged_name(url):
                e["path"] = self.body_name(url)

    @staticmethod
    def body_name(url: str) -> str:
        return content_hash(url)[:40] + ".html"

    @staticmethod
    def staged_name(url: str) -> str:
        return content_hash(url)[:40] + ".new.html"

    def _body_if_recorded(self, name: str, e: dict[str, Any]) -> bytes | None:
        """The file ``name`` of the folder when it holds what ``e`` records (its hash), else None."""
        try:
            data = (self.root / name).read_bytes()
        except OSError:
            return None
        return data if content_hash(data) == e.get("content_hash") else None

    def _holds(self, name: str, e: dict[str, Any]) -> bool:
        return self._body_if_recorded(name, e) is not None

    def _names(self, url: str) -> list[str]:
        """Where the body of ``url`` may be: its entry's path, else its committed or its staged name (a
        commit killed mid-way leaves bodies on either side of their rename; the hash tells the right one)."""
        e = self.pages.get(url)
        if not e or not isinstance(e.get("path"), str) or not e["path"]:
            return []
        return list(dict.fromkeys((e["path"], self.body_name(url), self.staged_name(url))))

    def has_body(self, url: str) -> bool:
        return any((self.root / name).is_file() for name in self._names(url))

    def read_body(self, url: str) -> bytes | None:
        """The cached body, or None when it is missing or does not match the recorded hash."""
        return next((data for name in self._names(url)
                     if (data := self._body_if_recorded(name, self.pages[url])) is not None), None)

    def put(self, url: str, body: bytes, **fields: Any) -> dict[str, Any]:
        """Record a downloaded body, staged: the cached copy stays until :meth:`save` (see the class)."""
        name = self.staged_name(url)
        atomic_write(self.root / name, body)
        entry = {"url": url, "path": name, "content_hash": content_hash(body), **fields}
        self.pages[url] = entry
        self.staged.add(url)
        return entry

    def rollback(self) -> None:
        """Forget every entry and body staged since the manifest was read: the cache stays as it was."""
        for url in self.staged:
            try:
                (self.root / self.pages[url]["path"]).unlink()
            except (KeyError, OSError):
                pass
        self.staged.clear()
        self.pages = copy.deepcopy(self.before)

    def save(self, keep: Iterable[str] | None = None) -> None:
        """Commit the staged bodies and write the manifest; with ``keep``, drop every other entry and
        its body first. A kill anywhere leaves the cache as it was or as committed, whole: the manifest
        is written first, naming each staged body by its committed name, and only then are the staged
        bodies renamed to it. Until they are, :meth:`read_body` finds each on either side of its rename
        (by its hash), and the next :class:`Manifest` of the folder finishes the renames."""
        staged = [u for u in self.staged if self.pages.get(u, {}).get("path") == self.staged_name(u)]
        for url in staged:
            self.pages[url]["path"] = self.body_name(url)
        self.staged.clear()
        if keep is not None:
            keep = set(keep)
            for url in [u for u in self.pages if u not in keep]:
                del self.pages[url]
        data = {"version": self.VERSION, "pages": dict(sorted(self.pages.items()))}
        atomic_write(self.file, json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))
        unrenamed: set[str] = set()
        for url in staged:
            if url in self.pages:  # a dropped one goes with the bodies nobody refers to, below
                try:
                    os.replace(self.root / self.staged_name(url), self.root / self.body_name(url))
                except OSError:
                    unrenamed.add(self.staged_name(url))  # still read; the next Manifest renames it
        if keep is not None:  # bodies nobody refers to any more
            used = {e.get("path") for e in self.pages.values()} | unrenamed
            for p in self.root.glob("*.html"):
                if p.name not in used:
                    try:
                        p.unlink()
                    except OSError:
                        pass


def has_cache(workdir: Path) -> bool:
    """Whether a crawl saved its cache in the source folder ``workdir``: what a reparse reads (the
    :class:`Manifest` of ``<workdir>/raw``)."""
    return (Path(workdir) / "raw" / Manifest.FILE).is_file()


# --------------------------------------------------------------------------------------------
# The crawl
# --------------------------------------------------------------------------------------------


#: lines a crawl logs for URLs it discovered or skipped, one each, before it only counts them
MAX_URL_LINES = 1000

#: a page's whole body must arrive within this many ``timeout_seconds`` (each read within one)
BODY_TIMEOUTS = 4


class _SlowBody(requests.Timeout):
    """The body trickled in so slowly that it missed the whole-body deadline."""


class FetchError(Exception):
    """A request that failed for good (after its retries)."""


@dataclass(slots=True)
class Fetched:
    url: str
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)  # a CaseInsensitiveDict from a response
    body: bytes | None = None
    truncated: bool = False
    skip: tuple[str, str] | None = None  # (category, detail) when the answer is not a page
    tries: int = 1


@dataclass(slots=True)
class Rejection:
    category: str
    detail: str


def config_rejection(cfg: SourceConfig, domains: Iterable[str], url: str, *, seed: bool) -> Rejection | None:
    """Why the source's settings keep ``url`` (normalised) out (allowed_domains, a file that is no
    page, deny_patterns, allow_patterns, which seeds pass), or None: what a crawl and a reparse share."""
    domains = tuple(domains)
    if not host_allowed(_netloc(url), domains):
        return Rejection("outside allowed_domains", f"outside allowed_domains ({', '.join(domains)})")
    ext = _not_a_page(url)
    if ext:
        return Rejection("not a page", f"not a page ({ext} file)")
    forms = _as_written(url)  # as normalised, and as a reader writes it
    for p in cfg.deny_patterns:
        if _found(p, forms):
            return Rejection("deny_patterns", f"matches deny pattern {p!r}")
    if cfg.allow_patterns and not seed and not any(_found(p, forms) for p in cfg.allow_patterns):
        return Rejection("allow_patterns", "matches no allow pattern")
    return None


class _Crawl:
    """One scan: all the mutable state of a crawl, so a WebSource stays reusable."""

    def __init__(self, src: "WebSource", state: dict[str, str], log: Log, mode: str) -> None:
        self.src = src
        self.cfg: SourceConfig = src.cfg
        self.state = state
        self.log = log
        self.url_lines = 0  # see _log_url
        self.noindex: set[str] = set()  # pages that asked not to be indexed (their bodies stay cached)
        self.by_hash: dict[str, str] = {}  # content hash → the one URL indexed for that content
        self.folded: dict[str, str] = {}  # a folder URL → the .../index.html link folded into it
        self.duplicates: set[str] = set()  # URLs whose content another URL has (bodies stay cached)
        self.nofollow: set[str] = set()  # pages whose links are not followed
        self.canonical: dict[str, str] = {}  # a page → the other URL its rel=canonical names
        self.mode = mode
        self.manifest = Manifest(src.workdir / "raw")
        self.session = crawler_session()  # a header block the connection cut off is an error, not an answer
        self.session.headers.update({
            "User-Agent": self.cfg.user_agent,
            "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1",
        })
        self.domains = src.allowed_domains
        self.robots: dict[str, Protego] = {}
        self.crawl_delay: dict[str, float] = {}
        self.last_request: dict[str, float] = {}
        self.queue: deque[tuple[str, int, bool]] = deque()
        self.seen: set[str] = set()
        self.done: set[str] = set()
        self.pages: dict[str, Page] = {}
        self.gone: list[str] = []
        self.skipped: Counter[str] = Counter()
        self.failed_urls: list[str] = []
        self.attempted = 0
        self.fetched = 0
        self.not_modified = 0
        self.requests = 0
        self.incomplete: list[str] = []  # reasons the crawl cannot count as complete
        self.unreadable_robots: set[str] = set()  # origins skipped: robots.txt unreadable, no page indexed
        self.unread_sitemaps: list[str] = []  # sitemaps that failed (timeout, 429/5xx): see _run

    # -- politeness and HTTP ------------------------------------------------------------------

    def _wait(self, netloc: str) -> None:
        delay = max(self.cfg.delay_seconds, self.crawl_delay.get(netloc, 0.0))
        last = self.last_request.get(netloc)
        if last is not None and delay > 0:
            pause = last + delay - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        self.last_request[netloc] = time.monotonic()

    def _backoff(self, attempt: int, resp: requests.Response | None) -> float:
        if resp is not None and resp.headers.get("Retry-After"):
            value = resp.headers["Retry-After"].strip()
            try:
                seconds = float(value)
                if math.isnan(seconds):  # float() reads "nan", which min/max keep and time.sleep refuses
                    raise ValueError(value)
                return min(max(seconds, 0.0), MAX_BACKOFF_SECONDS)
            except ValueError:
                try:
                    when = parsedate_to_datetime(value)
                    return min(max((when - datetime.now(timezone.utc)).total_seconds(), 0.0), MAX_BACKOFF_SECONDS)
                except (TypeError, ValueError):
                    pass
        return min(BACKOFF_SECONDS * 2 ** (attempt - 1), MAX_BACKOFF_SECONDS)

    def request(self, url: str, *, headers: dict[str, str] | None = None, limit: int, page: bool) -> Fetched:
        """One GET (no redirect followed), retried with backoff on timeouts, connection errors and
        429/5xx answers. The body is read only for a 200 (up to ``limit`` bytes); for a page, only
        when it is HTML. Raises :class:`FetchError` when every try failed without an answer."""
        tries = self.cfg.max_retries + 1
        netloc = _netloc(url)
        for attempt in range(1, tries + 1):
            self._wait(netloc)
            resp = None
            try:
                self.requests += 1
                deadline = time.monotonic() + self.cfg.timeout_seconds * BODY_TIMEOUTS
                resp = self._get(url, headers or {}, deadline)
                try:
                    # a read blocked inside urllib3 (a chunk-size line that never ends) is cut at the deadline
                    with shutdown_at(response_socket(resp), deadline):
                        if resp.status_code in RETRY_STATUSES and attempt < tries:
                            reason = f"HTTP {resp.status_code}"
                        else:
                            out = self._read(url, resp, limit=limit, page=page, deadline=deadline)
                            out.tries = attempt
                            return out
                finally:
                    resp.close()
            except _SlowBody as exc:
                reason = str(exc)
            except requests.Timeout:
                reason = f"timed out after {self.cfg.timeout_seconds:g} s"
            except requests.ConnectionError as exc:
                reason = f"connection failed ({_short(exc)})"
            except requests.RequestException as exc:  # a broken chunked body, a bad gzip stream...
                reason = f"{type(exc).__name__} ({_short(exc)})"
            if attempt == tries:
                raise FetchError(reason + (f", after {tries} tries" if tries > 1 else ""))
            pause = self._backoff(attempt, resp)
            self.log(f"[FETCH] retry {url} in {pause:.1f} s: {reason} (try {attempt} of {tries})")
            time.sleep(pause)
        raise AssertionError("unreachable")  # pragma: no cover

    def _get(self, url: str, headers: dict[str, str], deadline: float) -> requests.Response:
        """``session.get`` (streamed, no redirect followed) that gives up at ``deadline``. The read
        timeout is per read: a server sending its header lines a byte a second never trips it, and
        requests has no deadline for the whole exchange. So the request runs in a thread of its own; when it
        misses the deadline its socket is shut down, so the thread ends and its connection closes then."""
        sockets: list[socket.socket] = []
        finished = threading.Event()

        def get() -> requests.Response:
            watch_sockets(sockets)  # this thread's response sockets, so the deadline can cut them
            try:
                return self.session.get(url, headers=headers, timeout=self.cfg.timeout_seconds, stream=True,
                                        allow_redirects=False)
            finally:
                watch_sockets(None)
                finished.set()

        ok, resp = within(deadline - time.monotonic(), get, name=f"docs-rag fetch {url}",
                          on_late=lambda late: late.close())
        if not ok:
            # its connection goes now, not when the server stops trickling: one connection to a host at a
            # time, and nothing left open (the thread's read returns, and urllib3 closes the connection)
            shut_down(sockets)
            finished.wait(self.cfg.timeout_seconds)
            budget = self.cfg.timeout_seconds * BODY_TIMEOUTS
            raise _SlowBody(f"the response took over {budget:g} s ({BODY_TIMEOUTS} × timeout_seconds) "
                            "and its headers were still not complete")
        return resp

    def _read(self, url: str, resp: requests.Response, *, limit: int, page: bool, deadline: float) -> Fetched:
        headers = CaseInsensitiveDict(resp.headers)  # names in any case (HTTP/2 and proxies send x-robots-tag)
        out = Fetched(url=url, status=resp.status_code, headers=headers)
        if resp.status_code != 200:
            return out
        ctype = resp.headers.get("Content-Type", "")
        mime = ctype.split(";", 1)[0].strip().lower()
        if page and mime and mime not in HTML_TYPES:
            out.skip = ("non-HTML content type", f"non-HTML content type {mime!r}")
            return out
        unread = _unreadable_encoding(headers.get("Content-Encoding"))
        if unread:  # its bytes would look binary (NUL bytes) and the page seem gone: the server erred
            raise FetchError(f"HTTP 200 compressed as {unread!r}, which was not asked for and cannot be read "
                             f"(Accept-Encoding: {self.session.headers.get('Accept-Encoding')})")
        body = bytearray()
        binary = ("binary body", f"binary body (NUL bytes) served as {mime or 'no content type'}")
        head_checked = not page  # a page's first BINARY_HEAD bytes, however many reads bring them
        while chunk := self._read1(resp, deadline):
            body += chunk
            if not head_checked and len(body) >= BINARY_HEAD:
                head_checked = True
                if _looks_binary(bytes(body[:BINARY_HEAD])):
                    out.skip = binary
                    return out
            if len(body) > limit:
                out.truncated = True
                del body[limit:]
                break
            if time.monotonic() > deadline:
                raise self._slow_body()
        if not head_checked and _looks_binary(bytes(body)):  # shorter than BINARY_HEAD, or cut at limit
            out.skip = binary
            return out
        # an empty body says nothing of its type: page_from_body decides (an indexed page's is a failed fetch)
        if page and not mime and body.strip() and b"<" not in bytes(body[:1024]):
            out.skip = ("non-HTML content type", "no content type and the body does not look like HTML")
            return out
        out.body = bytes(body)
        return out

    def _read1(self, resp: requests.Response, deadline: float) -> bytes:
        """The next piece of the body, b"" at its end. A read that breaks, or an end that comes, after the
        deadline was cut by it (shutdown_at; a body read to the connection's close would look whole)."""
        try:
            chunk = read1(resp)
        except requests.RequestException as exc:
            if time.monotonic() < deadline:
                raise
            raise self._slow_body() from exc
        if not chunk and time.monotonic() >= deadline:
            raise self._slow_body()
        return chunk

    def _slow_body(self) -> _SlowBody:
        budget = self.cfg.timeout_seconds * BODY_TIMEOUTS  # the whole exchange, however slowly it trickles
        return _SlowBody(f"the body took over {budget:g} s ({BODY_TIMEOUTS} × timeout_seconds)")

    # -- robots.txt ----------------------------------------------------------------------------

    def robots_for(self, url: str) -> Protego:
        origin = _origin(url)
        if origin in self.robots:
            return self.robots[origin]
        if not self.cfg.respect_robots:
            rp = self.robots[origin] = _robots_allow_all(True)
            return rp
        robots_url = origin + "/robots.txt"
        rp = None
        target = robots_url
        asked: list[str] = []
        try:
            for _ in range(ROBOTS_MAX_REDIRECTS + 1):
                asked.append(target)
                f = self.request(target, limit=ROBOTS_MAX_BYTES, page=False)
                if f.status in REDIRECT_STATUSES and f.headers.get("Location"):
                    nxt = normalize_url(urljoin(target, location_url(f.headers["Location"])))
                    if nxt and host_allowed(_netloc(nxt), self.domains) and nxt not in asked:
                        target = nxt
                        continue
                    if nxt in asked:  # RFC 9309 §2.3.1.2: past the redirects it follows, robots.txt is unavailable
                        self.log(f"[DISCOVER] robots.txt {robots_url}: a redirect loop ({' → '.join([*asked, nxt])}), "
                                 "so it is unavailable: no restrictions (RFC 9309)")
                    rp = _robots_allow_all(True)  # RFC 9309: an unfollowable redirect counts as no robots.txt
                    break
                if f.status == 200:
                    body = f.body or b""
                    if f.truncated:  # what lies past the cut is ignored (as Google does), and so is the line
                        # it splits: "Disallow: /docs/a.html" cut after "/docs/" would disallow the folder
                        body = body[:max(body.rfind(b"\n"), body.rfind(b"\r")) + 1]
                    rp = parse_robots(decode_body(body, "utf-8"))
                    if f.truncated and not body:  # not one whole line before the cut: no rule is read
                        self.log(f"[DISCOVER] robots.txt {robots_url}: warning: cut off at {ROBOTS_MAX_BYTES} "
                                 "bytes (RFC 9309's limit) with no complete line before the cut, so none of it "
                                 f"is read and every URL of {origin} is allowed")
                    else:
                        cut = (f", cut off at {ROBOTS_MAX_BYTES} bytes (RFC 9309's limit): the rest, from the "
                               "line the cut splits, is ignored") if f.truncated else ""
                        self.log(f"[DISCOVER] robots.txt {robots_url}: read{cut}")
                elif 400 <= f.status < 500 and f.status != 429:
                    # RFC 9309 §2.3.1.3: a 4xx, 401 and 403 included, means robots.txt is unavailable and
                    # any URL may be crawled (S3 answers 403 for a missing key; Google reads it so too)
                    rp = _robots_allow_all(True)
                    self.log(f"[DISCOVER] robots.txt {robots_url}: HTTP {f.status}, no restrictions")
                else:
                    raise FetchError(f"HTTP {f.status}")
                break
            else:  # RFC 9309 §2.3.1.2: at least five redirects are followed; past them robots.txt is unavailable
                rp = _robots_allow_all(True)
                self.log(f"[DISCOVER] robots.txt {robots_url}: more than {ROBOTS_MAX_REDIRECTS} redirects, so it is "
                         "unavailable: no restrictions (RFC 9309)")
        except FetchError as exc:
            rp = _robots_allow_all(False)
            reason = f"robots.txt of {origin} could not be read ({exc}), so its pages were not crawled"
            if origin in {_origin(u) for u in (*self.state, *self.src.seeds)}:
                self.log(f"[DISCOVER] {reason}")
                self.incomplete.append(reason)
            else:  # a linked host that holds no indexed page (a dead status.example.org): no removal
                # depends on it, so it must not stop every crawl early, and with it every removal
                self.unreadable_robots.add(origin)
                self.log(f"[DISCOVER] {reason}; no page of it is indexed, so the host is skipped")
        if rp is None:
            rp = _robots_allow_all(True)
        delay = rp.crawl_delay(self.cfg.user_agent)
        if delay:
            try:
                self.crawl_delay[_netloc(url)] = min(float(delay), 60.0)
                self.log(f"[DISCOVER] robots.txt {robots_url}: Crawl-delay {self.crawl_delay[_netloc(url)]:g} s")
            except (TypeError, ValueError):
                pass
        self.robots[origin] = rp
        return rp

    # -- discovery -----------------------------------------------------------------------------

    def normalize(self, url: str) -> str | None:
        return normalize_url(url, allow_patterns=self.cfg.allow_patterns)

    def reject(self, url: str, *, depth: int = 0, seed: bool = False, check_depth: bool = True,
               robots: bool = False) -> Rejection | None:
        """Why ``url`` (normalised) may not be fetched, or None. robots.txt is asked (``robots``) only
        for a URL about to be fetched: a link beyond max_depth or max_pages, or one to a host that
        is down, must cost no robots.txt request (with its retries)."""
        why = config_rejection(self.cfg, self.domains, url, seed=seed)
        if why:
            return why
        if check_depth and depth > self.cfg.max_depth:
            return Rejection("max_depth", f"beyond max_depth ({self.cfg.max_depth})")
        return self.robots_rejection(url) if robots else None

    def robots_rejection(self, url: str) -> Rejection | None:
        """Why robots.txt keeps ``url`` out (read the first time a URL of its origin is fetched), or None."""
        if not self.cfg.respect_robots:
            return None
        rp = self.robots_for(url)
        if _origin(url) in self.unreadable_robots:
            return Rejection("robots.txt unreadable", "its host's robots.txt could not be read; no page of it "
                                                      "is indexed")
        if not rp.can_fetch(url, self.cfg.user_agent):
            return Rejection("robots.txt", "disallowed by robots.txt")
        return None

    def consider(self, raw: str, depth: int, *, seed: bool = False, via: str = "", robots: bool = False) -> None:
        """Queue ``raw`` unless the settings (or, with ``robots``, robots.txt) keep it out: a sitemap's
        URLs are checked against robots.txt as they come, so disallowed ones never fill the queue."""
        url = self.normalize(raw)
        if url is None:
            return
        if url.endswith("/") and url not in self.folded:  # ".../index.html" as linked, should the folder 404
            linked = re.search(r"/(index\.html?)$", urlsplit(raw.strip()).path)
            if linked:
                self.folded[url] = url + linked.group(1)
        if url in self.seen:
            return
        self.seen.add(url)
        why = self.reject(url, depth=depth, seed=seed, robots=robots)
        if why:
            self.skipped[why.category] += 1
            self._log_url(f"[DISCOVER] skipped {url}: {why.detail}")
            return
        self.queue.append((url, depth, seed))
        self._log_url(f"[DISCOVER] {url} (depth {depth}{', ' + via if via else ''})")

    def _log_url(self, line: str) -> None:
        """One line per discovered or skipped URL, up to :data:`MAX_URL_LINES` a crawl: a sitemap
        of 50,000 URLs must not become 50,000 lines of a Dagster run's event log (which stores
        each). The counts are in the crawl's last line and the scan metadata."""
        self.url_lines += 1
        if self.url_lines <= MAX_URL_LINES:
            self.log(line)
        elif self.url_lines == MAX_URL_LINES + 1:
            self.log(f"[DISCOVER] {self.src.name}: over {MAX_URL_LINES} URLs discovered or skipped; the rest are "
                     "not logged one by one (counts at the end of the crawl and in the scan metadata)")

    def sitemap_urls(self) -> Iterator[str]:
        """Page URLs from the sitemaps: explicit ones, or (``auto``) those robots.txt names and
        ``/sitemap.xml`` of each seed's site. Only sitemaps on allowed domains are requested, at most
        :data:`SITEMAP_MAX_URLS` URLs of each; a sitemap is requested only when the caller asks for
        more URLs than the ones before it held."""
        setting = self.cfg.sitemaps
        if setting == "off":
            return
        if setting == "auto":
            todo: list[str] = []
            for seed in self.src.seeds:
                if not host_allowed(_netloc(seed), self.domains):
                    continue
                origin = _origin(seed)
                rp = self.robots_for(seed) if self.cfg.respect_robots else None
                listed = list(rp.sitemaps) if rp is not None else []
                for u in [*listed, origin + "/sitemap.xml"]:
                    n = normalize_url(u)
                    if n and n not in todo:
                        todo.append(n)
            explicit = False
        else:
            todo = [n for n in (normalize_url(u) for u in setting) if n]
            explicit = True
        done: set[str] = set()
        queue = deque((u, 0) for u in todo)
        while queue and len(done) < SITEMAP_MAX_FILES:
            url, nesting = queue.popleft()
            if url in done:
                continue
            done.add(url)
            if not host_allowed(_netloc(url), self.domains):
                self.log(f"[DISCOVER] skipped sitemap {url}: outside allowed_domains")
                continue
            if self.cfg.respect_robots and not self.robots_for(url).can_fetch(url, self.cfg.user_agent):
                self.log(f"[DISCOVER] skipped sitemap {url}: disallowed by robots.txt")
                continue
            try:
                f = self.request(url, limit=SITEMAP_MAX_BYTES, page=False)
            except FetchError as exc:
                self.log(f"[DISCOVER] sitemap {url}: failed, {exc}")
                self.unread_sitemaps.append(f"sitemap {url} could not be read ({exc})")
                continue
            if f.status != 200 or f.body is None:
                quiet = not explicit and nesting == 0 and f.status in GONE_STATUSES
                self.log(f"[DISCOVER] sitemap {url}: HTTP {f.status}" + (", none there" if quiet else ", skipped"))
                if f.status in RETRY_STATUSES or f.status >= 500:  # says nothing of the pages it lists
                    tries = f", after {f.tries} tries" if f.tries > 1 else ""
                    self.unread_sitemaps.append(f"sitemap {url} could not be read (HTTP {f.status}{tries})")
                continue
            urls, nested = parse_sitemap(f.body, max_urls=SITEMAP_MAX_URLS + 1)
            cut = ""
            if len(urls) + len(nested) > SITEMAP_MAX_URLS:
                del urls[SITEMAP_MAX_URLS:], nested[SITEMAP_MAX_URLS:]
                cut = f", cut off: over {SITEMAP_MAX_URLS} URLs (the sitemap protocol's limit), the rest are not read"
            self.log(f"[DISCOVER] sitemap {url}: {len(urls)} URLs" + (f", {len(nested)} sitemaps" if nested else "")
                     + cut)
            if not urls and not nested and re.search(rb"\S", f.body):  # a sitemap that lost its URLs loses their pages
                self.log(f"[DISCOVER] sitemap {url}: warning: {_size(len(f.body))} that give no URL: not an XML "
                         "urlset or sitemapindex with <loc> entries, nor a text file of one URL a line")
            if nesting < 3:
                queue.extend((n, nesting + 1) for n in (normalize_url(u) for u in nested) if n)
            yield from urls
        dropped = list(dict.fromkeys(u for u, _ in queue if u not in done))
        if dropped:  # sitemap indexes that list more files than are read: their pages are not reached
            self.log(f"[DISCOVER] sitemaps: {len(dropped)} more sitemap files not read, over the limit of "
                     f"{SITEMAP_MAX_FILES} files (the first: {dropped[0]}); the pages only they list are not crawled")

    # -- one page ------------------------------------------------------------------------------

    def skip(self, url: str, category: str, detail: str) -> None:
        self.skipped[category] += 1
        self.log(f"[FETCH] skipped {url}: {detail}")

    def keep_indexed(self, url: str) -> None:
        """A page that could not be fetched now but is indexed: reported unchanged, so it stays."""
        if url in self.state and url not in self.pages:
            self.pages[url] = self.as_indexed(url, "unchanged")

    def as_indexed(self, url: str, status: str, error: str | None = None) -> Page:
        """The page at ``url`` as the index holds it (no body; the hash and fetch time of what is
        indexed, none when it is not), reported with ``status``."""
        entry = self.manifest.pages.get(url, {}) if url in self.state else {}
        return Page(source=self.src.name, page_url=url, path=url_path(url), content_hash=self.state.get(url, ""),
                    format="html", body=None, status=status, error=error,
                    metadata={"fetched_at": entry.get("fetched_at")} if entry else {})

    def robots_rules(self, url: str, text: str, entry: dict[str, Any], how: str, depth: int) -> bool:
        """Whether the page asks not to be indexed (meta robots or X-Robots-Tag ``noindex``): then it
        is skipped (an indexed copy is removed when the crawl completes), its body stays cached for
        the next conditional GET, and its links are followed unless it also says ``nofollow``.
        Nothing is skipped with ``respect_robots: false``."""
        if not self.cfg.respect_robots:
            return False
        rules = robots_directives(text, entry.get("x_robots_tag"), self.cfg.user_agent)
        if "noindex" not in rules:
            if "nofollow" in rules:
                self.nofollow.add(url)
            return False
        self.noindex.add(url)
        gone = ", indexed: removed when the crawl completes" if url in self.state else ""
        self.skip(url, "noindex", f"noindex ({how}; meta robots or X-Robots-Tag){gone}")
        if "nofollow" not in rules:
            self.follow_links(text, url, depth)
        return True

    def duplicate(self, url: str, digest: str) -> bool:
        """Whether another URL of this crawl served the same bytes (``/guide`` and ``/guide/``,
        ``a.html`` and ``A.HTML``): one page, indexed once, the URL :func:`keep_first` picks."""
        other = self.by_hash.setdefault(digest, url)
        if other == url:
            return False
        keep = keep_first((url, other), self.state)
        drop = other if keep == url else url
        self.by_hash[digest] = keep
        self.duplicates.add(drop)
        self.duplicates.discard(keep)
        if drop == other:  # the page taken before is the duplicate: it goes
            self.pages.pop(other, None)
        gone = ", indexed: removed when the crawl completes" if drop in self.state else ""
        self.skip(drop, "same content", f"same content as {keep}{gone}")
        return drop == url

    def note_canonical(self, url: str, text: str, depth: int) -> None:
        """Remember the other URL the page names as canonical, and crawl it: whether the page is
        left out for it is decided when the crawl is over (:func:`canonical_drops`)."""
        link = canonical_link(text, url)
        canon = self.normalize(link) if link else None
        if canon is None or canon == url:
            return
        why = self.reject(canon, check_depth=False)
        if why:
            self._log_url(f"[FETCH] {url}: its canonical {canon} is not crawled ({why.detail}); the page is indexed")
            return
        self.canonical[url] = canon
        self.consider(canon, depth, via=f"canonical of {url}")

    def cached_text(self, url: str) -> str | None:
        data = self.manifest.read_body(url)
        return None if data is None else decode_body(data, self.manifest.pages[url].get("charset"))

    def leave_out_canonical_duplicates(self) -> None:
        """Pages whose canonical URL is a page of this crawl with their text: left out for it."""
        if not self.canonical:
            return
        live = [u for u, p in self.pages.items() if p.status != "failed"]
        drops, notes = canonical_drops(self.canonical, live, self.cached_text,
                                       content_selector=self.cfg.content_selector)
        for line in notes:
            self._log_url(f"[FETCH] {line}")
        for url, canon in drops.items():
            self.pages.pop(url, None)
            self.duplicates.add(url)  # its body stays cached, for the next refresh's conditional GET
            gone = ", indexed: removed when the crawl completes" if url in self.state else ""
            self.skip(url, "canonical", f"its canonical page is {canon}{gone}")

    def follow_links(self, text: str, url: str, depth: int) -> None:
        if url in self.nofollow:
            return
        for link in extract_links(text, url):
            self.consider(link, depth + 1)

    def fail(self, url: str, reason: str, depth: int) -> None:
        self.failed_urls.append(url)
        self.log(f"[FETCH] failed {url}: {reason}" + ("; the indexed page is kept" if url in self.state else ""))
        if url not in self.pages:  # a page, status failed (counted in pages_failed); an indexed one is kept
            self.pages[url] = self.as_indexed(url, "failed", reason)
        cached = self.manifest.read_body(url)
        if cached is not None:  # carry on through its links as they were last time
            try:
                self.follow_links(decode_body(cached, self.manifest.pages[url].get("charset")), url, depth)
            except Exception as exc:  # fail() is where the crawl's catch-all lands: nothing may escape it
                self.log(f"[FETCH] {url}: the links of its cached copy are not followed ({type(exc).__name__}: {exc})")

    def visit(self, url: str, depth: int, seed: bool, *, conditional: bool = True) -> None:
        chain: list[str] = []  # the (normalised) URLs of the redirect chain
        asked: list[str] = []  # the URLs requested, as sent: a loop is a URL asked for twice
        cur = req = url
        while True:
            if req in asked or len(asked) > MAX_REDIRECTS:
                loop = " → ".join([*asked, req]) if req in asked else f"more than {MAX_REDIRECTS} redirects"
                self.done.update(chain)
                self.skip(url, "redirect loop", f"redirect loop ({loop})")
                return
            asked.append(req)
            if cur not in chain:
                chain.append(cur)
            entry = self.manifest.pages.get(cur)
            headers: dict[str, str] = {}
            # resync (after a restore) asks as a refresh does: a 304's cached body is the page as it is now
            if conditional and self.mode in ("refresh", "resync") and entry and self.manifest.has_body(cur) \
                    and not self.header_rules_unsure(entry):
                if entry.get("etag"):
                    headers["If-None-Match"] = entry["etag"]
                if entry.get("last_modified"):
                    headers["If-Modified-Since"] = entry["last_modified"]
            try:
                f = self.request(req, headers=headers, limit=self.cfg.max_bytes, page=True)
            except FetchError as exc:
                self.done.update(chain)
                self.fail(cur, str(exc), depth)
                return
            if f.status in REDIRECT_STATUSES:
                loc = f.headers.get("Location")
                loc = None if loc is None else location_url(loc)  # raw UTF-8 or Latin-1 bytes, read as browsers do
                target = self.normalize(urljoin(req, loc)) if loc else None
                if target is None:
                    self.done.update(chain)
                    where = ("without a Location header" if loc is None else "with an empty Location header"
                             if not loc.strip() else f"to {loc!r}, not an http(s) URL with a host name a request reaches as written")
                    self.skip(url, "bad redirect", f"HTTP {f.status} redirect {where}")
                    return
                why = self.reject(target, seed=seed, check_depth=False, robots=True)
                if why:
                    self.done.update(chain)
                    self.skip(url, f"redirect {why.category}", f"redirect to {target}: {why.detail}")
                    if why.category == "robots.txt unreadable":  # says nothing of the page: it stays
                        self.keep_indexed(url)
                    return
                if target == cur:  # a folder → its index.html, a query added: the same page, asked for as sent
                    sent = _as_sent(target, urljoin(req, loc))
                    self.log(f"[FETCH] {f.status} {req} → {sent}")
                    req = sent
                    continue
                self.log(f"[FETCH] {f.status} {req} → {target}")
                if target in self.done and target not in chain:
                    self.done.update(chain)
                    self.log(f"[FETCH] {url}: same page as {target}, already fetched")
                    return
                cur = req = target
                continue
            break
        self.done.update(chain)
        final = cur
        if f.status == 304:
            if self.not_modified_page(final, depth, f.headers):
                return
            if conditional:
                self.log(f"[FETCH] 304 {final} but its cached copy is missing or damaged; fetching it again")
                self.done.difference_update(chain)
                self.visit(url, depth, seed, conditional=False)
            else:
                self.fail(final, "HTTP 304 to an unconditional request", depth)
            return
        if f.status == 200:
            if f.skip:
                self.skip(final, *f.skip)
                return
            self.page_from_body(final, f, depth)
            return
        if f.status in FOLDER_NOT_SERVED and final == url and url in self.folded and self.folded[url] not in self.done:
            # a host that serves .../index.html but not its folder (S3's REST endpoint, some static hosts;
            # S3 answers 403 for a missing key when the reader may not list the bucket)
            linked = self.folded.pop(url)
            self.log(f"[FETCH] {f.status} {final}: the folder is not served; fetching it as linked, {linked}")
            self.visit(linked, depth, seed)
            return
        if f.status in GONE_STATUSES:
            self.gone.append(final)
            indexed = final in self.state
            note = ", indexed: removed when the crawl completes" if indexed else ""
            self.log(f"[FETCH] {f.status} {final}: gone{note}")
            return
        tries = f", after {f.tries} tries" if f.tries > 1 else ""
        self.fail(final, f"HTTP {f.status}{tries}", depth)

    def header_rules_unsure(self, entry: dict[str, Any]) -> bool:
        """Whether a page's cached ``X-Robots-Tag`` may be out of date in a way a 304 cannot settle, so
        it is fetched without a conditional request: the header was not recorded (cached by a docs-rag
        from before it was), or it says ``noindex``/``nofollow`` (a 304 need not repeat it, RFC 9110
        §15.4.5, so only a 200 tells that the header was removed)."""
        if not self.cfg.respect_robots:
            return False
        if "x_robots_tag" not in entry:
            return True
        return bool({"noindex", "nofollow"} & robots_directives("", entry["x_robots_tag"], self.cfg.user_agent))

    def not_modified_page(self, url: str, depth: int, headers: Mapping[str, str] | None = None) -> bool:
        """A 304: the page from the cache (its body only when the index lacks it), with the cached
        ``X-Robots-Tag``, ``ETag`` and ``Last-Modified`` replaced by those the 304 carries (RFC 9111
        §4.3.4; one it leaves out is kept). False when the cached copy is unusable."""
        entry = self.manifest.pages.get(url)
        data = self.manifest.read_body(url)
        if entry is None or data is None:
            return False
        self.not_modified += 1
        entry["checked_at"] = _now()
        for header, key in (("X-Robots-Tag", "x_robots_tag"), ("ETag", "etag"), ("Last-Modified", "last_modified")):
            if headers and headers.get(header) is not None:
                entry[key] = headers[header]
        digest = entry["content_hash"]
        status = self.src.status(url, digest, self.state, self.mode)
        text = decode_body(data, entry.get("charset"))
        if self.robots_rules(url, text, entry, "304", depth):
            return True
        if self.duplicate(url, digest):
            self.follow_links(text, url, depth)
            return True
        self.pages[url] = Page(source=self.src.name, page_url=url, path=url_path(url), content_hash=digest,
                               format="html", body=text if status != "unchanged" else None, status=status,
                               metadata={"fetched_at": entry.get("fetched_at")})
        note = {"unchanged": "", "new": ", not indexed yet: body from the cache",
                "changed": ", the index holds another version: body from the cache"}.get(status, "")
        self.log(f"[FETCH] 304 {url}{note}")
        self.note_canonical(url, text, depth)
        self.follow_links(text, url, depth)
        return True

    def page_from_body(self, url: str, f: Fetched, depth: int) -> None:
        body = f.body or b""
        if not body.strip() and url in self.state and self.manifest.has_body(url):
            # a proxy or CDN glitch, not a page emptied on purpose (that keeps its markup): counted as a
            # failed fetch, so the indexed page, its cached copy and the links it had all stay
            self.fail(url, "HTTP 200 with an empty body", depth)
            return
        self.fetched += 1
        charset = _header_charset(f.headers.get("Content-Type"))
        if f.truncated:  # cut at max_bytes: not in the middle of a character (cached and indexed as cut)
            body = whole_characters(body, charset)
        fetched_at = _now()
        entry = self.manifest.put(url, body, status=200, etag=f.headers.get("ETag"),
                                  last_modified=f.headers.get("Last-Modified"), fetched_at=fetched_at,
                                  checked_at=fetched_at, charset=charset, truncated=f.truncated,
                                  x_robots_tag=f.headers.get("X-Robots-Tag"))
        digest = entry["content_hash"]
        status = self.src.status(url, digest, self.state, self.mode)
        text = decode_body(body, charset)
        if self.robots_rules(url, text, entry, f"200, {_size(len(body))}", depth):
            return
        if self.duplicate(url, digest):
            self.follow_links(text, url, depth)  # relative links may lead elsewhere from another URL
            return
        self.pages[url] = Page(source=self.src.name, page_url=url, path=url_path(url), content_hash=digest,
                               format="html", body=text if status != "unchanged" else None, status=status,
                               metadata={"fetched_at": fetched_at})
        same = ", same content as indexed" if status == "unchanged" else ""
        self.log(f"[FETCH] 200 {url} ({_size(len(body))}){same}")
        if f.truncated:
            self.log(f"[FETCH] cut off {url}: the body is over max_bytes ({self.cfg.max_bytes} bytes); "
                     "only its first max_bytes are indexed")
        self.note_canonical(url, text, depth)
        self.follow_links(text, url, depth)

    # -- the whole crawl -----------------------------------------------------------------------

    def refuse(self) -> None:
        """A crawl that would remove over max_removed_share of the indexed pages says little about the
        site (every URL answering one maintenance page): nothing it saw is kept. Every indexed page is
        reported as indexed (a page that changed would get the maintenance text), pages it found new
        wait for the next crawl, and the cache is rolled back (a later reparse rebuilds from it)."""
        self.manifest.rollback()
        for url, p in list(self.pages.items()):
            if p.status != "failed":
                del self.pages[url]
        for url in self.state:
            self.keep_indexed(url)

    def failed_share(self) -> float:
        return len(self.failed_urls) / self.attempted if self.attempted else 0.0

    def run(self) -> ScanResult:
        try:
            return self._run()
        finally:
            self.session.close()

    def _run(self) -> ScanResult:
        cfg = self.cfg
        t0 = time.perf_counter()
        for seed in cfg.seed_urls:
            self.consider(seed, 0, seed=True, via="seed")
        seeds = len(self.queue)
        from_sitemaps = 0
        room = max(SITEMAP_QUEUE_PAGES * cfg.max_pages, SITEMAP_MIN_QUEUED)
        sitemaps_cut: str | None = None
        listed = self.sitemap_urls()
        for u in listed:
            if len(self.queue) >= room:  # more than this crawl can fetch: the rest is not read
                listed.close()
                sitemaps_cut = (f"the sitemaps were read only until {len(self.queue)} URLs were queued "
                                f"({SITEMAP_QUEUE_PAGES} × max_pages, at least {SITEMAP_MIN_QUEUED})")
                self.log(f"[DISCOVER] {self.src.name}: {sitemaps_cut}")
                break
            before = len(self.queue)
            try:
                self.consider(u, 0, via="sitemap", robots=True)  # the site's own robots.txt, read for its sitemaps
            except Exception as exc:  # a crawler bug must not fail the scan; say where
                self.skipped["unexpected error"] += 1
                self._log_url(f"[DISCOVER] skipped {u}: unexpected {type(exc).__name__}: {exc}")
            from_sitemaps += len(self.queue) - before
        self.log(f"[DISCOVER] {self.src.name}: {seeds} seed URLs, {from_sitemaps} more from sitemaps; "
                 f"mode {self.mode}")
        stopped: str | None = None
        while self.queue:
            if self.attempted >= cfg.max_pages:
                left = sum(1 for u, _, _ in self.queue if u not in self.done)
                if left:
                    stopped = f"max_pages ({cfg.max_pages}) reached with {left} discovered URLs not fetched"
                break
            if self.attempted >= MIN_ATTEMPTS_FOR_THRESHOLD and self.failed_share() > cfg.error_threshold:
                stopped = (f"{len(self.failed_urls)} of {self.attempted} fetches failed, over error_threshold "
                           f"{cfg.error_threshold:g}")
                break
            url, depth, seed = self.queue.popleft()
            if url in self.done:
                continue
            try:
                why = self.robots_rejection(url)
            except Exception as exc:  # a bug reading robots.txt must not fail the scan either
                self.done.add(url)
                self.fail(url, f"unexpected {type(exc).__name__} reading robots.txt: {exc}", depth)
                continue
            if why:  # asked only now: a URL never fetched costs no robots.txt request
                self.done.add(url)
                self.skipped[why.category] += 1
                self._log_url(f"[DISCOVER] skipped {url}: {why.detail}")
                continue
            self.attempted += 1
            try:
                self.visit(url, depth, seed)
            except Exception as exc:  # a crawler bug must not fail the scan; say where
                if disk_full(exc):  # the cache's disk, not the site: stop as any full disk stops an ingest
                    self.manifest.rollback()  # (before, each page was a failed fetch and the ingest exit 0)
                    raise OSError(exc.errno, f"the page cache {self.manifest.root} cannot be written "
                                  f"({exc.strerror}) while caching {url}; the crawl stopped and kept nothing it "
                                  "fetched: free space and run it again") from None
                self.done.add(url)
                self.fail(url, f"unexpected {type(exc).__name__}: {exc}", depth)
        if stopped is None and self.attempted and self.failed_share() > cfg.error_threshold:
            stopped = (f"{len(self.failed_urls)} of {self.attempted} fetches failed, over error_threshold "
                       f"{cfg.error_threshold:g}")
        if stopped is None and self.incomplete:
            stopped = "; ".join(self.incomplete)
        if sitemaps_cut:  # the crawl reaches max_pages anyway; the sitemaps' other URLs were not even listed
            stopped = f"{stopped}; {sitemaps_cut}" if stopped else sitemaps_cut
        if stopped is None and self.state and not (self.fetched or self.not_modified):
            stopped = "no page could be fetched (check seed_urls and that the site is up)"
        self.leave_out_canonical_duplicates()
        if stopped is None and self.unread_sitemaps and any(u not in self.pages for u in self.state):
            # an indexed page this crawl did not reach may be one only the unread sitemap lists
            stopped = "; ".join(self.unread_sitemaps) + ", so the pages only it lists were not reached"
        complete = stopped is None

        present = set(self.pages)
        page_count = sum(p.status != "failed" for p in self.pages.values())
        deleted = sorted(u for u in self.state if u not in present)
        if complete and self.state and len(deleted) / len(self.state) > cfg.max_removed_share:
            # a site down for maintenance that answers every URL with one page, a seed page that lost
            # its links for a moment: a crawl that reaches few of the indexed pages says little about them
            stopped = (f"it would remove {len(deleted)} of {len(self.state)} indexed pages, over max_removed_share "
                       f"{cfg.max_removed_share:g} (a site down for maintenance, a seed page that lost its links); "
                       "if they really are gone, raise max_removed_share for one refresh")
            notes_removal = len(deleted)
            complete = False
        else:
            notes_removal = 0
        if complete:
            self.manifest.save(keep=present | self.noindex | self.duplicates)
        elif notes_removal:
            deleted = []
            self.refuse()
            page_count = sum(p.status != "failed" for p in self.pages.values())
        else:
            deleted = []
            for url in self.state:  # nothing is removed: what was not reached stays as indexed
                self.keep_indexed(url)
            self.manifest.save()

        notes: dict[str, object] = {
            "fetched": self.fetched, "not_modified": self.not_modified, "skipped": dict(sorted(self.skipped.items())),
            "failed": len(self.failed_urls), "removed": len(deleted), "gone": len(self.gone),
            "pages": page_count, "requests": self.requests, "discovered": len(self.seen),
        }
        if self.failed_urls:
            notes["failed_urls"] = self.failed_urls[:20]
        if stopped:
            notes["stopped_early"] = stopped
        if notes_removal:
            notes["removal_refused"] = notes_removal
        took = time.perf_counter() - t0
        summary = (f"{len(self.seen)} URLs seen, {page_count} pages ({self.fetched} downloaded, "
                   f"{self.not_modified} not modified), "
                   f"{sum(self.skipped.values())} URLs skipped, {len(self.failed_urls)} failed, "
                   f"{self.requests} requests in {took:.1f} s")
        if complete:
            self.log(f"[DISCOVER] {self.src.name}: crawl complete: {summary}; {len(deleted)} pages removed")
        elif notes_removal:
            self.log(f"[DISCOVER] {self.src.name}: crawl stopped early ({stopped}): {summary}; "
                     "nothing is removed from the index, and nothing it fetched is indexed or cached")
        else:
            self.log(f"[DISCOVER] {self.src.name}: crawl stopped early ({stopped}): {summary}; "
                     "nothing is removed from the index")
        return ScanResult(pages=list(self.pages.values()), deleted=deleted, complete=complete, notes=notes)


def _size(n: int) -> str:
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.0f} KB"


def _unreadable_encoding(value: str | None) -> str | None:
    """The first ``Content-Encoding`` of ``value`` that urllib3 cannot decode here (``zstd`` or ``br``
    without their libraries, ``compress``), or None."""
    from urllib3.response import HTTPResponse

    readable = {"identity", "", *HTTPResponse.CONTENT_DECODERS}
    return next((e for e in (p.strip().lower() for p in (value or "").split(",")) if e not in readable), None)


def _root_cause(exc: BaseException) -> BaseException:
    """The innermost exception that requests and urllib3 wrapped ``exc`` around (they pass it in args)."""
    seen = {id(exc)}
    while True:
        inner = next((a for a in exc.args if isinstance(a, BaseException)), None) or exc.__cause__
        if inner is None or id(inner) in seen:
            return exc
        seen.add(id(inner))
        exc = inner


def _short(exc: BaseException) -> str:
    cause = _root_cause(exc)
    if isinstance(cause, http.client.HTTPException) and not isinstance(cause, http.client.RemoteDisconnected):
        # what http.client refused, which requests reports as a bare "connection aborted": name it
        if isinstance(cause, http.client.BadStatusLine):
            return f"broken answer: no HTTP status line (HTTP/0.9 or another protocol): {cause.line[:60]!r}"
        return f"broken answer: {str(cause)[:160] or type(cause).__name__}"
    text = str(exc)
    for marker in ("Read timed out", "Connection refused", "Connection reset", "Connection aborted",
                   "Name or service not known", "Remote end closed connection"):
        if marker in text:
            return marker.lower()
    return text[:160]


class WebSource(Source):
    """A documentation website, crawled politely and incrementally (see the module docstring)."""

    cfg: SourceConfig

    @property
    def seeds(self) -> list[str]:
        out: list[str] = []
        for s in self.cfg.seed_urls:
            n = normalize_url(s)
            if n and n not in out:
                out.append(n)
        return out

    @property
    def allowed_domains(self) -> tuple[str, ...]:
        if self.cfg.allowed_domains:
            return tuple(self.cfg.allowed_domains)
        out: list[str] = []
        for s in self.seeds:
            if _netloc(s) not in out:
                out.append(_netloc(s))
        return tuple(out)

    @property
    def base_url(self) -> str:
        """The public base of the site: ``base_url``, else the folder of the first seed."""
        if self.cfg.base_url:
            return self.cfg.base_url
        first = self.seeds[0] if self.seeds else self.cfg.seed_urls[0]
        parts = urlsplit(first)
        return urlunsplit((parts.scheme, parts.netloc, parts.path.rsplit("/", 1)[0] + "/", "", ""))

    def scan(self, state: dict[str, str], *, log: Log, mode: str = "refresh") -> ScanResult:
        if mode == "reparse":
            return self._reparse(state, log)
        return _Crawl(self, state, log, mode).run()

    def _reparse(self, state: dict[str, str], log: Log) -> ScanResult:
        """Every cached page again, from the disk: no network at all."""
        manifest = Manifest(self.workdir / "raw")
        pages: dict[str, Page] = {}
        missing = 0
        noindex: list[str] = []  # cached pages that ask not to be indexed: an indexed copy goes
        excluded: list[str] = []  # cached pages the settings now keep out (deny_patterns…): likewise
        seeds = set(self.seeds)
        for url, entry in sorted(manifest.pages.items()):
            why = config_rejection(self.cfg, self.allowed_domains, url, seed=url in seeds)
            if why:
                excluded.append(url)
                gone = ", indexed: removed" if url in state else ""
                log(f"[FETCH] cache {url}: skipped: {why.detail}{gone}")
                continue
            data = manifest.read_body(url)
            if data is None:
                missing += 1
                log(f"[FETCH] cache {url}: the cached copy is missing or damaged; run a refresh to fetch it again")
                continue
            digest = entry["content_hash"]
            status = self.status(url, digest, state, "reparse")
            text = decode_body(data, entry.get("charset"))
            if self.cfg.respect_robots and "x_robots_tag" not in entry:
                log(f"[FETCH] cache {url}: its X-Robots-Tag header is unknown (cached by an older docs-rag); "
                    "the next refresh downloads it again to learn it")
            if self.cfg.respect_robots and "noindex" in robots_directives(text, entry.get("x_robots_tag"),
                                                                          self.cfg.user_agent):
                noindex.append(url)
                log(f"[FETCH] cache {url}: skipped: noindex (meta robots or X-Robots-Tag)")
                continue
            pages[url] = Page(source=self.name, page_url=url, path=url_path(url), content_hash=digest, format="html",
                              body=text, status=status, metadata={"fetched_at": entry.get("fetched_at")})
            log(f"[FETCH] cache {url}: {status}, {_size(len(data))} from the cache")
        left_out = self._one_page_per_content(pages, manifest, state, log)
        removals = sorted(u for u in {*noindex, *excluded, *left_out} if u in state)
        stopped: str | None = None
        if state and len(removals) / len(state) > self.cfg.max_removed_share:
            # the guard a crawl has: a cache that disagrees with the index (or a settings slip) must not
            # empty the index in one run, with no network to tell
            stopped = (f"it would remove {len(removals)} of {len(state)} indexed pages, over max_removed_share "
                       f"{self.cfg.max_removed_share:g}; if they really should go, raise max_removed_share for one run")
            log(f"[DISCOVER] {self.name}: reparse stopped early ({stopped}): nothing is removed from the index")
        refused = len(removals) if stopped else 0
        removed = set() if stopped else set(removals)
        kept = 0
        for url, digest in state.items():
            if url not in pages and url not in removed:
                kept += 1
                pages[url] = Page(source=self.name, page_url=url, path=url_path(url), content_hash=digest,
                                  format="html", body=None, status="unchanged")
        log(f"[DISCOVER] {self.name}: reparse from the cache, {len(pages) - kept} pages, no network; "
            f"{kept} indexed pages not in the cache (or not removed) are kept as they are")
        notes: dict[str, object] = {"from_cache": len(pages) - kept, "cache_missing": missing,
                                    "kept_without_cache": kept, "fetched": 0, "not_modified": 0,
                                    "skipped": {k: v for k, v in (("noindex", len(noindex)),
                                                                  ("excluded by the settings", len(excluded)),
                                                                  ("same page", len(left_out))) if v},
                                    "failed": 0, "removed": len(removed)}
        if stopped:
            notes.update(stopped_early=stopped, removal_refused=refused)
        return ScanResult(pages=list(pages.values()), deleted=sorted(removed), complete=stopped is None, notes=notes)

    def _one_page_per_content(self, pages: dict[str, Page], manifest: Manifest, state: dict[str, str],
                              log: Log) -> list[str]:
        """A reparse leaves out what a crawl does (:mod:`.canonical`): a cached URL with the same bytes as
        another, a page whose canonical page holds its text. Returns the URLs left out."""
        left_out: list[str] = []
        by_hash: dict[str, list[str]] = {}
        for url, p in pages.items():
            by_hash.setdefault(p.content_hash, []).append(url)

        def drop(url: str, why: str) -> None:
            """Leave ``url`` out; an indexed copy goes only when the cache holds what is indexed: a cached
            body the index never took (a crawl cut short) says nothing about the indexed page, kept as is."""
            digest = pages.pop(url).content_hash
            if url in state and state[url] != digest:
                log(f"[FETCH] cache {url}: skipped: {why}; the index holds another version of it: kept as indexed")
                return
            left_out.append(url)
            log(f"[FETCH] cache {url}: skipped: {why}" + (", indexed: removed" if url in state else ""))

        for digest, urls in by_hash.items():
            keep = keep_first(urls, {u: digest for u in urls if state.get(u) == digest})  # the one indexed as this
            for url in sorted(set(urls) - {keep}):
                drop(url, f"same content as {keep}")
        declared: dict[str, str] = {}
        for url, p in pages.items():
            link = canonical_link(p.body or "", url)
            canon = normalize_url(link, allow_patterns=self.cfg.allow_patterns) if link else None
            if canon and canon != url and not config_rejection(self.cfg, self.allowed_domains, canon, seed=False):
                declared[url] = canon

        def text_of(url: str) -> str | None:
            return pages[url].body

        drops, notes = canonical_drops(declared, pages, text_of, content_selector=self.cfg.content_selector)
        for line in notes:
            log(f"[FETCH] cache {line}")
        for url, canon in drops.items():
            drop(url, f"its canonical page is {canon}")
        return left_out
