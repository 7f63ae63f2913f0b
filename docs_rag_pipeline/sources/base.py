"""What every source yields: the current pages with their status against the indexed state."""

from __future__ import annotations

import codecs
import hashlib
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..parsing.html import decode_html, declared_charset, text_encoding
from ..records import Page
from ..unicode_text import shown_bytes

Log = Callable[[str], None]


def content_hash(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def file_page_hash(path: str, digest: str) -> str:
    """The content hash a file of a local or git source is indexed under: of the file's content hash
    (``digest``, of its bytes or its includes-resolved text) and of its path below the source's root.
    The path shapes the page as much as the bytes do (its format and parser, ``metadata_rules``, the
    ``section``), so a file moved or renamed to a path that gives the same URL (``guide.md`` to
    ``guide.rst`` or ``guide/index.md`` under a ``url_template`` without the extension) is ``changed``
    and parsed again; its unchanged chunk texts keep their embeddings (the cache is by text)."""
    return content_hash(f"{path}\0{digest}")


def decode_body(data: bytes, charset: str | None) -> str:
    """A page's text, as a browser reads it: a BOM, else the HTTP header's charset, else the
    ``<meta>`` charset, else UTF-8 when the bytes are UTF-8, else windows-1252 (the web's default
    for undeclared pages). A declared charset that is no text encoding (``hex``, ``idna``…) is ignored.
    Undecodable bytes become U+FFFD; never raises. Files of local and git
    sources are read the same way, with no header (``charset`` None)."""
    if data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return decode_html(data)
    encoding = text_encoding(charset)  # None for a label that names no text encoding (hex, idna…)
    if encoding:
        try:
            return data.decode(encoding, "replace")
        except (LookupError, UnicodeError, ValueError):  # a codec that fails even under "replace"
            pass
    if text_encoding(declared_charset(data)):
        return decode_html(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        if (cjk := _cjk_text(data)) is not None:  # before the test below: CJK bytes hold UTF-8-like pairs
            return cjk
        text = data.decode("utf-8", "replace")
        if any(ord(c) > 0x7F and c != "\ufffd" for c in text):
            return text  # real UTF-8 with a few bad bytes (or a body cut off mid-character)
        return data.decode("cp1252", "replace")


#: the encodings charset-normalizer names (Python codec names) of the families of Chinese, Japanese and
#: Korean text, as the WHATWG label whose superset browsers read them with (text_encoding)
_CJK_FAMILIES = {"euc_jp": "euc-jp", "euc_jis_2004": "euc-jp", "euc_jisx0213": "euc-jp",
                 "cp932": "shift_jis", "shift_jis": "shift_jis", "shift_jis_2004": "shift_jis",
                 "shift_jisx0213": "shift_jis", "iso2022_jp": "iso-2022-jp", "gb2312": "gb18030", "gbk": "gb18030",
                 "gb18030": "gb18030", "big5": "big5", "big5hkscs": "big5", "cp950": "big5", "cp949": "euc-kr",
                 "euc_kr": "euc-kr"}
#: most of a CJK text's characters past ASCII: Han, kana, Hangul, CJK punctuation, full-width forms
#: (not the half-width katakana that Cyrillic or Latin bytes read as Shift_JIS give)
_CJK_CHARS = re.compile("[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff01-\uff5e]")


def _cjk_text(data: bytes) -> str | None:
    """``data`` (neither UTF-8 nor declared) read as the Chinese, Japanese or Korean encoding it is in, as
    a browser's detector reads an undeclared page (a Markdown file saved in Shift_JIS or EUC-JP, an old
    GB2312 page without ``<meta charset>``); read as windows-1252, every character was two of mojibake.
    None unless charset-normalizer names such an encoding and the bytes read in it without a bad byte
    (one cut off at the end aside) as text of those scripts: Western and Cyrillic bytes are left to
    windows-1252, since no detector tells them apart reliably from the bytes alone."""
    from charset_normalizer import from_bytes

    best = from_bytes(data[:200_000]).best()
    label = _CJK_FAMILIES.get(best.encoding) if best is not None else None
    encoding = text_encoding(label) if label else None
    if encoding is None:
        return None
    try:
        text = data.decode(encoding, "replace")
    except (LookupError, UnicodeError, ValueError):
        return None
    wide = [c for c in text if ord(c) > 0x7F]
    if not wide or text.count("\ufffd") > 1 or sum(1 for c in wide if _CJK_CHARS.match(c)) < 0.9 * len(wide):
        return None
    return text


def whole_characters(data: bytes, charset: str | None) -> bytes:
    """``data``, a body or file cut off at ``max_bytes``, without the bytes of the one character the
    cut split (decoded, they would be a U+FFFD the document never held). The encoding is the one
    :func:`decode_body` reads it in (a BOM, ``charset``, the ``<meta>`` charset, else UTF-8; a
    single-byte encoding never splits a character); unchanged when it cannot be told."""
    if data.startswith(codecs.BOM_UTF8):
        encoding: str | None = "utf-8"
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    else:
        encoding = text_encoding(charset) or text_encoding(declared_charset(data)) or "utf-8"
    try:
        decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        decoder.decode(data, final=False)  # an unfinished last character stays in the decoder's buffer
        pending = len(decoder.getstate()[0])
    except (LookupError, UnicodeError, ValueError, TypeError):
        return data
    return data[: len(data) - pending] if 0 < pending < len(data) else data


class SourceError(RuntimeError):
    """A source that cannot be scanned at all (a folder that is gone, a repository that cannot be
    fetched): the message names the key and the fix. Nothing in the index is changed."""


def undecodable_name(path: str) -> str | None:
    """None when the file name ``path`` is text (valid UTF-8); else the name as shown to a user, its
    bytes escaped (``caf\\xe9.md``). A name that is not UTF-8 comes from the file system or git with
    its bytes as lone surrogates; it cannot go into a URL, the index or a JSON state file."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return shown_bytes(path)
    return None


#: the config files of MkDocs, which links a Markdown heading by Python-Markdown's id, not GitHub's slug
MKDOCS_CONFIGS = ("mkdocs.yml", "mkdocs.yaml")
#: the most of an ``mkdocs.yml`` read to tell how its site slugs headings (a real one is a few KiB)
MKDOCS_CONFIG_BYTES = 1_000_000


def mkdocs_hint(source: str, config: str, text: str, style: str) -> str | None:
    """The log line that says a source looks built by MkDocs (``config``, whose text is ``text``, found
    beside or above its documents) while its headings are linked by another style than that site's
    (``style``, the source's ``heading_anchors``), and what to set; None when they agree."""
    from ..parsing.slugs import mkdocs_anchor_style

    site = mkdocs_anchor_style(text)
    if site == style:
        return None
    head = f"[DISCOVER] {source}: hint: {config} is beside the documents, so MkDocs probably builds the site, and "
    if site is None:
        return (head + "its toc extension's slugify is a function docs-rag does not reproduce (only pymdownx.slugs.slugify "
                "with case: lower, as heading_anchors: pymdownx), so citations of sections whose ids it makes may "
                "open their page's top")
    if site == "pymdownx":
        return (head + "its toc extension slugs headings with pymdownx.slugs.slugify (case: lower), which keeps letters "
                "of every script (#установка, not #_1); set heading_anchors: pymdownx for this source so that its "
                "citations open their sections")
    return (head + "MkDocs links a heading by Python-Markdown's id (#install-configure_1), not GitHub's slug "
            "(#install--configure-1); set heading_anchors: python-markdown for this source so that its citations "
            "open their sections")


#: VitePress' config file, in the ``.vitepress`` folder of the site's source folder
VITEPRESS_CONFIGS = tuple(f".vitepress/config.{ext}" for ext in ("js", "ts", "mjs", "mts", "cjs", "cts"))


def vitepress_hint(source: str, config: str, style: str) -> str | None:
    """The log line that says a source looks built by VitePress (``config`` found beside or above its
    documents) while its headings are linked by another style (``style``); None when it is VitePress'."""
    if style == "vitepress":
        return None
    return (f"[DISCOVER] {source}: hint: {config} is beside the documents, so VitePress probably builds the site, "
            "and VitePress links a heading by its own slug (#what-s-new-in-v1-2), not GitHub's (#whats-new-in-v12); "
            "set heading_anchors: vitepress for this source so that its citations open their sections")


#: what to tell a user about a file name that is not UTF-8
RENAME_HINT = "rename it to UTF-8 (e.g. convmv -f latin1 -t utf8 --notest -r FOLDER) to index it"


#: page metadata only a source records (the commit a file was read at, when a page was fetched, the
#: includes it could not resolve): a document's own metadata of these names is dropped
SOURCE_KEYS = frozenset({"commit", "fetched_at", "unresolved_includes"})


@dataclass(slots=True)
class ScanResult:
    pages: list[Page]  # every current page: new/changed ones carry their body
    deleted: list[str] = field(default_factory=list)  # page URLs gone from the source
    complete: bool = True  # False when the scan stopped early: then nothing may be deleted
    notes: dict[str, object] = field(default_factory=dict)  # counts and reasons for the metadata


class Source(ABC):
    """A documentation source. ``scan`` compares what is there now with ``state``
    (page_url → content_hash of what is indexed) and loads bodies only where needed.

    ``mode``: ``refresh`` (what changed since the last scan), ``reparse`` (every page again, from
    the source's local cache, no network: for a parser change), ``force`` (fetch everything
    again) or ``resync`` (fetch what changed as ``refresh`` does, a git fetch or conditional GETs,
    then every page again: the first refresh after a restore, whose rows the stored copy may no
    longer match, not offered on the command line). In every mode but ``refresh`` every page is
    reported ``changed`` (or ``new``).
    ``workdir`` is the source's own folder for state and caches.
    """

    name: str

    def __init__(self, cfg, *, workdir: Path) -> None:  # noqa: ANN001 - a SourceConfig
        self.cfg = cfg
        self.name = cfg.name
        self.workdir = workdir

    @abstractmethod
    def scan(self, state: dict[str, str], *, log: Log, mode: str = "refresh") -> ScanResult: ...

    @staticmethod
    def status(page_url: str, digest: str, state: dict[str, str], mode: str = "refresh") -> str:
        if page_url not in state:
            return "new"
        if mode != "refresh":
            return "changed"
        return "unchanged" if state[page_url] == digest else "changed"


#: the ``heading_anchors`` styles of generators that publish every page at its file's path whatever its front
#: matter says (MkDocs: python-markdown, pymdownx; VitePress): no front-matter URL, no draft left out
IGNORING_ANCHORS = ("python-markdown", "pymdownx", "vitepress")
