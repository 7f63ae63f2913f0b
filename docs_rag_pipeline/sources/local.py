"""``kind: local`` — a folder of documents.

Also home of what ``kind: git`` shares with it: how a file's path maps to its public URL
(:func:`map_url`: ``url_rules``, then ``url_template``, then ``base_url``) and how an AsciiDoc file
is prepared (its ``include::`` directives resolved inside the folder, :func:`asciidoc_body`).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence
from urllib.parse import quote

from ..config import SourceConfig, UrlRule
from ..metadata_rules import glob_match
from ..parsing import format_for_path
from ..records import Page
from .base import (MKDOCS_CONFIG_BYTES, MKDOCS_CONFIGS, RENAME_HINT, Log, ScanResult, Source, SourceError, content_hash, decode_body,
                   file_page_hash, mkdocs_hint, undecodable_name, vitepress_hint, whole_characters)
from .base import VITEPRESS_CONFIGS

_INDEX_NAMES = ("index", "README", "readme")


def path_glob(rel: str, pattern: str) -> bool:
    """``include``/``exclude`` matching: :func:`glob_match`, where a ``/**/`` inside the pattern
    also matches a single ``/`` (zero folders), e.g. ``modules/*/pages/**/*.adoc`` matches
    ``modules/ROOT/pages/index.adoc``."""
    if glob_match(rel, pattern):
        return True
    return "/**/" in pattern and glob_match(rel, pattern.replace("/**/", "/"))


def path_excluded(rel: str, patterns: Sequence[str]) -> bool:
    """``exclude`` matching: a pattern that matches the file's path (:func:`path_glob`), or one of the
    folders above it, as in a ``.gitignore``: ``drafts``, ``drafts/`` and ``drafts/*`` all leave out
    every file below ``drafts/``, ``**/drafts/`` a ``drafts`` folder anywhere."""
    folders = rel.split("/")[:-1]
    for pattern in patterns:
        if path_glob(rel, pattern):
            return True
        folder = pattern.rstrip("/")
        if folder and any(path_glob("/".join(folders[:i]), folder) for i in range(1, len(folders) + 1)):
            return True
    return False


def _collapse(url: str) -> str:
    """Collapse repeated slashes, except the ``//`` after the scheme."""
    scheme, sep, rest = url.partition("://")
    return scheme + sep + re.sub(r"/{2,}", "/", rest) if sep else re.sub(r"/{2,}", "/", url)


#: a template of a repository's file view, which serves each file at its path whatever its front matter
#: says or the site's generator does with it (GitHub's and Gitea's ``/blob/``, GitLab's ``/-/blob/``,
#: ``/tree/``, ``/raw/``, Bitbucket's ``/src/``, or the file's own extension after ``{path}``)
FILE_VIEW_RE = re.compile(r"/(?:blob|tree|raw|src)/|\{path\}\.(?:md|mdx|markdown|qmd)\b")

#: the ``url_paths`` values: how the site's generator turns a file's path into its URL path (``plain``: as
#: written, less the extension and a final index segment)
URL_PATHS = ("plain", "docusaurus", "hugo")
#: Docusaurus' number prefix (``01-``, ``2_``, ``003 - ``) of a file or folder name, which its docs leave out
#: of the URL; a name that starts like a version or a date (``8.0``, ``2021-01``) keeps it
_NUMBER_PREFIX_RE = re.compile(r"\d+\s*[-_.]+\s*(?=[^-_.\s])")
_VERSION_LIKE_RE = re.compile(r"\d+[-_.]\d+")


def _unprefixed(name: str) -> str:
    """``name`` without Docusaurus' number prefix: ``01-intro`` → ``intro``, ``8.0-notes`` as written."""
    if _VERSION_LIKE_RE.match(name):
        return name
    m = _NUMBER_PREFIX_RE.match(name)
    return name[m.end():] if m else name


def site_rel(rel: str, url_paths: str = "plain") -> str:
    """``rel`` (a file's path in the source) with its folder and file names as the generator that
    ``url_paths`` names writes them into URLs, the extension kept: Docusaurus leaves out number prefixes
    (``02-guides/03-setup.md`` → ``guides/setup.md``), Hugo lowercases, writes a run of spaces as one ``-``
    and leaves out the characters it does not keep in a path (``Guides/What's New.md`` → ``guides/whats-new.md``,
    :func:`_hugo_sanitized`); ``plain``: as written."""
    if url_paths == "docusaurus":  # (a name's extension is no part of it: ``01.md`` is ``01``, which has no prefix)
        *folders, name = rel.split("/")
        stem, ext = re.match(r"(.*?)(\.[A-Za-z0-9]+)?$", name).groups()
        return "/".join([*map(_unprefixed, folders), _unprefixed(stem) + (ext or "")])
    if url_paths == "hugo":
        return _hugo_sanitized(rel).lower()
    return rel


def _hugo_path_character(s: str, i: int, ch: str) -> bool:
    """Whether Hugo keeps ``ch`` (at ``i`` in ``s``) in a path: its ``isAllowedPathCharacter``."""
    return ch != " " and (unicodedata.category(ch)[0] in "LM" or unicodedata.category(ch) == "Nd" or ch in "./\\_#+~-@"
                          or (ch == "%" and re.fullmatch(r"[0-9A-Fa-f]{2}", s[i + 1:i + 3]) is not None))


def _hugo_sanitized(path: str) -> str:
    """``path`` as Hugo's ``paths.Sanitize`` writes it into a URL (``MakePathSanitized`` lowercases it after):
    only letters, digits, marks, ``. / \\ _ # + ~ - @`` and ``%XX`` escapes kept, every other character left out,
    a run of white space one ``-`` (none at the start, none after a ``-``): ``What's New (2024).md`` is
    ``Whats-New-2024.md``."""
    out: list[str] = []
    hyphen_next = was_hyphen = False
    for i, ch in enumerate(path):
        if _hugo_path_character(path, i, ch):
            was_hyphen = ch == "-"
            if hyphen_next and not was_hyphen:
                out.append("-")
            hyphen_next = False
            out.append(ch)
        elif out and not was_hyphen and ch.isspace():
            hyphen_next = True
    return "".join(out)


def _is_index(rel: str, stem: str, url_paths: str) -> bool:
    """Whether the file at ``rel`` (its name without extension ``stem``) is its folder's index page, as
    the generator that ``url_paths`` names publishes it at the folder: ``index`` and ``README`` (any
    case: Docusaurus; as written: plain), or a file named as its folder (``guides/guides.md``:
    Docusaurus), Hugo's section page ``_index`` and a leaf bundle's ``index``."""
    if url_paths == "hugo":
        return stem in ("_index", "index")
    if url_paths == "docusaurus":
        parent = rel.split("/")[-2] if "/" in rel else ""
        return stem.lower() in ("index", "readme") or (bool(parent) and stem.lower() == parent.lower())
    return stem in _INDEX_NAMES


def template_path(rel: str, *, drop_index: bool = True, url_paths: str = "plain") -> str:
    """``{path}`` of a url_template: the relative path without its extension and, when
    ``drop_index``, without a final ``index`` (or ``README``) segment: ``guides/index.mdx`` →
    ``guides``, ``index.mdx`` → ``''``; its names and index pages as the generator that ``url_paths`` names
    has them (see :func:`site_rel`, :func:`_is_index`): Docusaurus' ``01-intro.md`` → ``intro``, Hugo's
    ``section/_index.md`` → ``section`` (kept as ``section/index`` where the index segment stays)."""
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", rel)
    parts = [p for p in stem.split("/") if p]
    index = bool(parts) and _is_index(stem, parts[-1], url_paths)
    parts = [p for p in site_rel("/".join(parts), url_paths).split("/") if p]
    if index and drop_index:
        parts.pop()
    elif index and url_paths != "plain":  # Hugo's _index, Docusaurus' guides/guides: the folder's index page
        parts[-1] = "index"
    return "/".join(parts)


def template_drops_index(url_template: str) -> bool:
    """Whether a url_template publishes a folder's index page at the folder itself: ``{path}`` ends
    the template or is followed by ``/`` (``…/{path}/`` → ``guide/``). With text after it
    (``…/{path}.html``) the index page keeps its name: ``guide/index.html``, ``index.html``."""
    return all(not after or after.startswith("/")
               for after in url_template.split("{path}")[1:])


#: the config files that say which generator builds a site, beside its documents' folder or above it, and the
#: ``url_paths`` of that generator
URL_PATHS_CONFIGS = (*(("docusaurus", f"docusaurus.config.{ext}") for ext in ("js", "ts", "mjs", "cjs", "mts", "cts")),
                     *(("hugo", f"hugo.{ext}") for ext in ("toml", "yaml", "yml", "json")))


def url_paths_hint(source: str, config: str, generator: str, cfg, rels: Sequence[str]) -> str | None:  # noqa: ANN001
    """The log line that says a source looks built by ``generator`` (its ``config`` found beside or above the
    documents) while ``url_paths`` says another, and the generator's rules give one of its Markdown files
    (``rels``) another URL (a Docusaurus site without number prefixes needs no change); None otherwise."""
    if cfg.url_paths == generator or not cfg.url_template or FILE_VIEW_RE.search(cfg.url_template):
        return None
    drop = template_drops_index(cfg.url_template)
    for rel in rels:
        if format_for_path(rel) not in ("markdown", "mdx") or any(re.search(r.match, rel) for r in cfg.url_rules):
            continue
        now, theirs = (template_path(rel, drop_index=drop, url_paths=cfg.url_paths),
                       template_path(rel, drop_index=drop, url_paths=generator))
        if now != theirs:
            name = {"docusaurus": "Docusaurus", "hugo": "Hugo"}[generator]
            return (f"[DISCOVER] {source}: hint: {config} is beside the documents, so {name} probably builds the site, "
                    f"and {name} publishes {rel} at {{path}} '{theirs}', not '{now}'; set url_paths: {generator} for this "
                    "source so that its citations open their pages")
    return None


def map_url(rel: str, *, url_rules: Sequence[UrlRule] = (), url_template: str | None = None,
            base_url: str | None = None, url_paths: str = "plain") -> str | None:
    """The public URL of the file at ``rel`` (a POSIX path relative to the source's root), or None
    when nothing maps it.

    ``url_rules`` are tried in order: the first whose ``match`` regex is found in the path gives
    ``url`` with its groups expanded (``\\1``, ``\\g<name>``; a group that did not take part is
    empty). Else ``url_template`` with ``{path}`` (see :func:`template_path` and
    :func:`template_drops_index`; ``url_paths`` names the generator whose rules turn the path into the URL's,
    not for a template of a repository's file view, which shows every file at its path), else ``base_url`` +
    the path. Repeated slashes collapse.
    """
    for rule in url_rules:
        m = re.search(rule.match, rel)
        if m:
            return _collapse(_GROUP_REF.sub(lambda g: _quote(_group(m, g[1] or g[2])), rule.url))
    if url_template:
        path = template_path(rel, drop_index=template_drops_index(url_template),
                             url_paths="plain" if FILE_VIEW_RE.search(url_template) else url_paths)
        return _collapse(url_template.replace("{path}", _quote(path)))
    if base_url:
        return base_url.rstrip("/") + "/" + _quote(rel)
    return None


#: a group reference in a url rule's ``url``: ``\1`` or ``\g<name>`` (``\g<1>``)
_GROUP_REF = re.compile(r"\\(?:(\d+)|g<(\w+)>)")


def _group(m: re.Match, ref: str) -> str:
    return m.group(int(ref) if ref.isdigit() else ref) or ""  # a group that did not take part is empty


def _quote(path: str) -> str:
    """A file path as it goes into a URL: ``#``, ``?``, spaces and other characters a URL path cannot
    hold as they are are percent-encoded (a ``#`` in a file name must not become the fragment)."""
    return quote(path, safe="/")


def file_url(rel: str, *, base_url: str | None, url_template: str | None, root: Path,
             url_rules: Sequence[UrlRule] = (), url_paths: str = "plain") -> str:
    """The public URL of a file (see :func:`map_url`), else its ``file://`` URL."""
    url = map_url(rel, url_rules=url_rules, url_template=url_template, base_url=base_url, url_paths=url_paths)
    return url if url is not None else (root / rel).resolve().as_uri()


def asciidoc_body(text: str, *, path: str, read: Callable[[str], str | None],
                  attributes: dict[str, str] | None = None) -> tuple[str, dict[str, bool], list[str]]:
    """An AsciiDoc file as handed to the parser: Antora component attributes above it and its
    includes resolved with ``read(repo_path)``. Returns ``(body, deps, unresolved)``: ``deps``
    maps every file the includes named (and the ``antora.yml`` looked for) to whether it exists."""
    from ..parsing.asciidoc import prepare_asciidoc

    body, res = prepare_asciidoc(text, path=path, read=read, attributes=attributes)
    return body, res.deps, _once(res.unresolved)


def rst_body(text: str, *, path: str, read: Callable[[str], str | None], root: str = "") -> tuple[str, dict[str, bool], list[str]]:
    """A reStructuredText file as handed to the parser: its ``.. include::`` directives resolved with
    ``read(repo_path)`` (a ``/`` target from ``root``). Returns ``(body, deps, unresolved)``, as
    :func:`asciidoc_body` does."""
    from ..parsing.rst import resolve_rst_includes

    res = resolve_rst_includes(text, path=path, read=read, root=root)
    return res.text, res.deps, _once(res.unresolved)


def markdown_body(text: str, *, path: str, fmt: str, read: Callable[[str], str | None],
                  root: str = "") -> tuple[str, dict[str, bool], list[str]] | None:
    """A Markdown or MDX file as handed to the parser: its includes (VitePress' ``<!--@include:``, MDX
    partials, Quarto's ``{{< include >}}``, pymdownx.snippets) resolved with ``read(repo_path)`` (``/``
    and ``@/`` targets from ``root``). Returns ``(body, deps, unresolved)``, as :func:`asciidoc_body`
    does, or None for a file that holds no include (its hash stays the file's own)."""
    from ..parsing.markdown import looks_like_mdx
    from ..parsing.md_includes import has_markdown_includes, resolve_markdown_includes

    if not has_markdown_includes(text):
        return None
    res = resolve_markdown_includes(text, path=path, read=read, root=root,
                                    mdx=fmt == "mdx" or looks_like_mdx(text))
    if not res.deps and not res.unresolved:
        return None
    return res.text, res.deps, _once(res.unresolved)


def _once(unresolved: list[str]) -> list[str]:
    """Each unresolved include once, in the order first met: a file included a thousand times that includes
    a missing one a thousand times listed it a million times (log lines and page metadata), as 48 KB of
    Markdown gave 207,793 entries."""
    return list(dict.fromkeys(unresolved))


def include_line(fmt: str, target: str) -> str:
    """An unresolved include of a page of format ``fmt`` as a log line's middle."""
    from ..parsing.asciidoc import unresolved_line
    from ..parsing.md_includes import markdown_unresolved_line
    from ..parsing.rst import rst_unresolved_line

    if fmt in ("markdown", "mdx"):
        return markdown_unresolved_line(target)
    return rst_unresolved_line(target) if fmt == "rst" else unresolved_line(target)


MAX_LISTED = 20  # paths listed in the scan notes; the count covers all of them

#: formats whose generators never publish a file or folder named ``_…`` as a page: MDX (Docusaurus, Astro,
#: Nextra: a partial, imported by the pages that show it) and Quarto (``_setup.qmd``, ``_extensions/``)
PARTIAL_SUFFIXES = (".mdx", ".qmd")


def is_partial(rel: str) -> bool:
    """Whether ``rel`` is a partial its site never publishes as a page (:data:`PARTIAL_SUFFIXES`, a part of its
    path named ``_…``): it is read only where a page includes it."""
    return rel.lower().endswith(PARTIAL_SUFFIXES) and any(part.startswith("_") for part in rel.split("/"))


def partials_line(name: str, count: int) -> str:
    return (f"[DISCOVER] {name}: left out {count} partial(s) (.mdx and .qmd files or folders named _…, which "
            "Docusaurus, Astro and Quarto never publish as pages); they are read where a page includes them")

#: the extension an include pattern ends with (``**/*.Rmd``, ``guide/*.txt``)
_PATTERN_EXTENSION_RE = re.compile(r"\*(\.[^./*?\[\]]+)$")


def unread_formats(name: str, include: Sequence[str]) -> list[str]:
    """A warning line for each ``include`` pattern that names files of an extension no parser reads
    (``**/*.txt``): those files are never indexed, whatever the pattern says, and nothing else said so."""
    from ..parsing import _EXTENSIONS

    lines = []
    for pattern in include:
        m = _PATTERN_EXTENSION_RE.search(pattern)
        if m and format_for_path("x" + m.group(1)) is None:
            known = ", ".join(dict.fromkeys(_EXTENSIONS))
            lines.append(f"[DISCOVER] {name}: warning: include {pattern!r} names {m.group(1)} files, which no parser "
                         f"reads (the formats read: {known}); they are not indexed")
    return lines


def read_regular_file(path: Path, *, limit: int = -1) -> bytes:
    """The bytes of ``path`` (at most ``limit`` of them, when given), which must still be a regular
    file and not a symlink (it was checked when the folder was listed): never blocks on a FIFO or a
    device. Raises OSError."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return f.read(limit)


def _config_text(path: Path) -> str:
    """The text of a generator's config file beside the documents (``mkdocs.yml``), to read a setting of
    it; "" when it is no regular file that can be read (a link, a FIFO): it only tunes a hint."""
    try:
        return decode_body(read_regular_file(path, limit=MKDOCS_CONFIG_BYTES), None)
    except OSError:
        return ""


@dataclass(slots=True)
class Listing:
    files: list[tuple[str, Path]] = field(default_factory=list)  # (path relative to the root, real path)
    skipped_links: list[str] = field(default_factory=list)  # "rel -> target: reason"
    unlisted: list[str] = field(default_factory=list)  # folders that could not be listed: "rel: reason"
    bad_names: list[str] = field(default_factory=list)  # files/folders whose name is not UTF-8 (escaped)
    unmatched: int = 0  # documents of a supported format that include/exclude leave out
    partials: int = 0  # partials (is_partial) include/exclude would take
    unreadable: dict[str, str] = field(default_factory=dict)  # rel → why it could not even be looked at


def _not_readable_through_link(real: Path, root: Path, *, hidden: str = "it points into a hidden file or folder"
                               ) -> str | None:
    """Why a link's real path ``real`` is never read, out of the folder ``root`` or into a hidden file
    or folder (``notes.txt -> .env``, ``gitdir -> .git``: then ``hidden``), or None when it may be."""
    if not real.is_relative_to(root):
        return f"its real path {real} is outside the folder {root}"
    if any(part.startswith(".") for part in real.relative_to(root).parts):
        return hidden
    return None


def _blocked_at(path: Path) -> Path:
    """The folder on the way to ``path`` whose entry cannot be looked at (the one lacking search
    permission), else ``path``."""
    for folder in (*reversed(path.parents), path):
        try:
            os.stat(folder)
        except OSError:
            return folder.parent
    return path


def _is_dir(e: os.DirEntry) -> bool:
    try:
        return e.is_dir()
    except OSError:
        return False


class LocalSource(Source):
    """Files under ``path``. Symbolic links are followed only inside the folder: a link to a file
    inside it is read like a copy at the link's own path; a linked folder inside it is walked
    under the link's path, except a link back to one of its own parent folders (a loop) and a
    folder already walked through a link, met again through another (so folders that link to each
    other, or to folders inside one another, cannot multiply the pages). A link whose real path is
    outside the folder or hidden (a ``.`` name), that points nowhere or into a loop of links, is
    never read: it is logged and listed in the scan notes (``skipped_links``). A file or folder
    whose name is not UTF-8 is skipped, logged and listed (``names_not_utf8``): it cannot go into a
    URL. A file that cannot be read, or a link whose target cannot be reached, is a ``failed`` page
    (its indexed chunks stay); a folder that cannot be listed makes the scan incomplete (nothing is
    removed). docs-rag's own folders (``own_folders``) are never walked."""

    cfg: SourceConfig

    def wanted(self, rel: str) -> bool:
        """Whether the file at ``rel`` is a page: include/exclude globs and a supported format."""
        return (any(path_glob(rel, g) for g in self.cfg.include)
                and not path_excluded(rel, self.cfg.exclude)
                and format_for_path(rel) is not None
                and not is_partial(rel))

    #: folders docs-rag itself writes (its storage folder, DAGSTER_HOME, …), set by the refresh: never
    #: documents, even when the source's folder holds them (``path: .`` beside ``storage: data``)
    own_folders: Sequence[Path] = ()

    def listing(self, log: Log) -> Listing:
        """Every page file under the root (names starting with ``.`` are skipped), in path order. The
        walk keeps its own stack (a tree a thousand folders deep is no ``RecursionError``)."""
        root = self.cfg.path.resolve()
        out = Listing()
        own: dict[Path, Path] = {}  # real path → the folder as configured
        for folder in self.own_folders:
            try:
                own.setdefault(Path(folder).resolve(), Path(folder))
            except (OSError, RuntimeError):
                pass

        def skip_link(rel: str, target: str, reason: str) -> None:
            out.skipped_links.append(f"{rel} -> {target}: {reason}")
            log(f"[DISCOVER] {self.name}: skipped the symlink {rel} -> {target}: {reason}")

        def unlisted(where: str, why: str) -> None:
            out.unlisted.append(f"{where}: {why}")
            log(f"[DISCOVER] {self.name}: cannot list {where} ({why}); nothing is removed from the index this time")

        def cannot_tell(rel: str, exc: OSError) -> None:
            """An entry that cannot be looked at (its folder is readable but not searchable, an I/O
            error): a page's name is a failed page (its chunks stay); any other name may be a folder,
            so the scan removes nothing."""
            why = exc.strerror or str(exc)
            if self.wanted(rel):
                out.files.append((rel, Path(rel)))
                out.unreadable[rel] = why
            else:
                unlisted(rel, why)

        def entries(folder: Path, prefix: str) -> list[os.DirEntry] | None:
            try:
                with os.scandir(folder) as it:
                    return sorted(it, key=lambda e: e.name)
            except OSError as exc:
                unlisted(prefix.rstrip("/") or ".", exc.strerror or str(exc))
                return None

        # real folder → the path it was first walked under through a link (a link, or a folder below
        # one), and whether that path is the link itself: each folder is walked at its own path and
        # under at most one link (latest -> v2 beside api -> v2/api lists v2/api twice, not three times)
        linked: dict[Path, tuple[str, bool]] = {}

        def visit(e: os.DirEntry, prefix: str, parents: tuple[Path, ...], via: bool
                  ) -> tuple[Path, str, bool] | None:
            """Take one entry: a page goes into the listing; a folder to walk is returned. ``via``: the
            entry's folder was walked under a link."""
            rel = prefix + e.name
            shown = undecodable_name(rel)
            if shown is not None:
                if self.wanted(rel) or _is_dir(e):
                    out.bad_names.append(shown)
                    log(f"[DISCOVER] {self.name}: skipped {shown}: its name is not valid UTF-8; {RENAME_HINT}")
                return None
            real = Path(e.path)
            try:
                target = os.readlink(e.path) if e.is_symlink() else ""
            except OSError as exc:  # a folder that can be read but not searched
                cannot_tell(rel, exc)
                return None
            target = undecodable_name(target) or target  # shown in the log and notes
            if target:
                try:
                    real = real.resolve(strict=True)
                except (OSError, RuntimeError) as exc:  # RuntimeError: a loop (Python < 3.13)
                    # logged whatever its name, as the git source does: a link that leads nowhere
                    # may have been a folder of documents (a volume not mounted), and neither its
                    # name nor is_dir() (False, or ELOOP in a loop) can tell
                    code = getattr(exc, "errno", None)
                    if isinstance(exc, RuntimeError) or code == errno.ELOOP:
                        skip_link(rel, target, "a loop of links")
                    elif code in (errno.ENOENT, errno.ENOTDIR):
                        skip_link(rel, target, "it points to nothing")
                    else:  # no permission on the way to it, an I/O error: not "gone"
                        cannot_tell(rel, exc)
                    return None
                if (why := _not_readable_through_link(real, root)) is not None:
                    if real.is_dir() or self.wanted(rel):
                        skip_link(rel, target, why)
                    return None
            if e.is_dir():
                if real in parents:
                    skip_link(rel, target, "a loop (it points to a folder it is inside)")
                    return None
                if real in own:
                    log(f"[DISCOVER] {self.name}: skipped {rel}: it is docs-rag's own folder {own[real]} (its "
                        "storage, caches or run history), never documents")
                    return None
                under = via or bool(target)
                if under:
                    if real in linked:
                        first, is_link = linked[real]
                        why = (f"that folder is already listed through the link {first}" if is_link else
                               f"that folder is already listed as {first}, under a link")
                        if target:
                            skip_link(rel, target, why)
                        else:
                            log(f"[DISCOVER] {self.name}: skipped the folder {rel}: {why}")
                        return None
                    linked[real] = (rel, bool(target))
                return real, rel, under
            if e.is_file() and self.wanted(rel):
                out.files.append((rel, real))
            elif e.is_file() and is_partial(rel) and any(path_glob(rel, g) for g in self.cfg.include) \
                    and not path_excluded(rel, self.cfg.exclude):
                out.partials += 1
            elif e.is_file() and format_for_path(rel) is not None:
                out.unmatched += 1
            return None

        top = entries(root, "")
        stack = [(iter(top or ()), "", (root,), False)]
        while stack:
            it, prefix, parents, via = stack[-1]
            e = next(it, None)
            if e is None:
                stack.pop()
                continue
            if e.name.startswith("."):
                continue
            try:
                sub = visit(e, prefix, parents, via)
            except OSError as exc:  # is_dir()/is_file() stat where the file system gives no type
                cannot_tell(prefix + e.name, exc)
                continue
            if sub is not None:
                real, rel, under = sub
                listed = entries(real, rel + "/")
                if listed is not None:
                    stack.append((iter(listed), rel + "/", (*parents, real), under))
        return out

    def url_for(self, rel: str) -> str:
        return file_url(rel, base_url=self.cfg.base_url, url_template=self.cfg.url_template, root=self.cfg.path,
                        url_rules=self.cfg.url_rules, url_paths=self.cfg.url_paths)

    #: the file in the source's folder that records the URLs front matter gave (rel → URL)
    ROUTES_FILE = "front_matter_urls.json"

    def _load_routes(self) -> dict[str, str]:
        try:
            data = json.loads((self.workdir / self.ROUTES_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)} \
            if isinstance(data, dict) else {}

    def _save_routes(self, routes: dict[str, str], log: Log) -> None:
        from ..files import atomic_write

        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
            atomic_write(self.workdir / self.ROUTES_FILE, json.dumps(routes, ensure_ascii=False, sort_keys=True).encode())
        except OSError as exc:  # only the URL of a file that cannot be read at a later scan depends on it
            log(f"[DISCOVER] {self.name}: warning: could not record the URLs front matter gave in "
                f"{self.workdir / self.ROUTES_FILE} ({exc.strerror or exc}); a page that cannot be read at a later "
                "scan then loses its indexed chunks")

    def _front_matter_url(self, rel: str, p: Path, url: str, found: Listing, saved: dict[str, str],
                          log: Log) -> str | None:
        """The URL the front matter of the file at ``rel`` (real path ``p``) gives it (see
        :mod:`.front_matter`), None for none; ``url`` is its path URL. A file that cannot be read keeps
        the URL its front matter gave at the last scan (``saved``), where its indexed rows are."""
        from .front_matter import (FRONT_MATTER_BYTES, front_matter_of, page_route, route_line, route_rel, route_url,
                                   routes_apply)

        if not routes_apply(self.cfg, rel):
            return None
        try:
            if rel in found.unreadable:
                raise PermissionError(errno.EACCES, found.unreadable[rel])
            head = read_regular_file(p, limit=min(FRONT_MATTER_BYTES, self.cfg.max_bytes))
        except OSError:
            return saved.get(rel)  # the read below fails too, and says why
        route, ignored = page_route(front_matter_of(head, rel=rel), rel=route_rel(self.cfg, rel))
        claimed = route_url(route, self.cfg.url_template) if route is not None else None
        if ignored:
            log(route_line(self.name, rel, ignored, claimed or url))
        return claimed

    def _read(self, rel: str) -> str | None:
        """An included file (``rel`` from the root): None when it is not there, not a regular file or
        cannot be read; :class:`IncludeRefused` (the reason) when a link takes its real path out of the
        folder or into a hidden file or folder (``notes.txt -> .env``, ``gitdir -> .git``), as the scan
        skips such links, for a loop of links, and when it cannot be reached (no search permission on a
        folder on the way, a name too long): the include is unresolved, the including page is indexed."""
        from ..parsing.asciidoc import IncludeRefused

        root = self.cfg.path.resolve()
        try:
            p = (root / rel).resolve()
        except RuntimeError:  # links that point to each other (Python < 3.13)
            raise IncludeRefused("a loop of links") from None
        except OSError as exc:
            raise IncludeRefused(f"cannot be read: {exc.strerror or exc}") from None
        except ValueError:  # a NUL byte in the path: no file has that name
            raise IncludeRefused("a path with a NUL byte names no file") from None
        if (why := _not_readable_through_link(p, root, hidden="a link into a hidden file or folder: never read")):
            raise IncludeRefused(why)
        try:
            if not stat.S_ISREG(os.stat(p).st_mode):
                return None
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:  # a folder on the way with no search permission, a name too long
            if exc.errno == errno.ELOOP:
                raise IncludeRefused("a loop of links") from None
            raise IncludeRefused(f"cannot be read: {exc.strerror or exc}") from None
        try:
            return decode_body(read_regular_file(p, limit=self.cfg.max_bytes), None)
        except OSError:
            return None

    def scan(self, state: dict[str, str], *, log: Log, mode: str = "refresh") -> ScanResult:
        pages: list[Page] = []
        unmapped: list[str] = []
        failed: list[str] = []
        unresolved = 0
        try:
            root = self.cfg.path.resolve()
        except (OSError, RuntimeError):  # RuntimeError: a loop of links (Python < 3.13)
            raise SourceError(f"sources.{self.name}.path: {str(self.cfg.path)!r} is a loop of symbolic links (it "
                              "never reaches a folder); point it at the folder itself or fix the link, or fix the "
                              "path in the config (nothing was removed from the index)") from None
        try:
            is_dir = root.is_dir()
            exists = is_dir or root.exists()
        except OSError as exc:  # a folder on the way that the ingest user cannot search
            raise SourceError(f"sources.{self.name}.path: {str(self.cfg.path)!r} cannot be reached "
                              f"({exc.strerror or exc} on {_blocked_at(root)}); give the ingest user search "
                              "permission on that folder, or fix the path in the config (nothing was removed from "
                              "the index)") from None
        if not is_dir:
            what = "is not a folder" if exists else "does not exist"
            raise SourceError(f"sources.{self.name}.path: {str(self.cfg.path)!r} {what}; create it or fix the path "
                              "in the config (nothing was removed from the index)")
        for line in unread_formats(self.name, self.cfg.include):
            log(line)
        found = self.listing(log)
        if found.partials:
            log(partials_line(self.name, found.partials))
        from .front_matter import settle_urls

        claims: list[tuple[str, str, str | None]] = []
        saved_routes = self._load_routes()
        for rel, p in found.files:
            url = map_url(rel, url_rules=self.cfg.url_rules, url_template=self.cfg.url_template,
                          base_url=self.cfg.base_url, url_paths=self.cfg.url_paths)
            if url is None:
                url = (root / rel).as_uri()
                if self.cfg.url_rules or self.cfg.url_template:
                    unmapped.append(rel)
                    log(f"[DISCOVER] {self.name}: warning: no url_rules entry maps {rel}; indexed as {url}")
            claims.append((rel, url, self._front_matter_url(rel, p, url, found, saved_routes, log)))
        urls = settle_urls(claims, source=self.name, log=log)
        # the URLs front matter gave, for a later scan that cannot read the file (its rows are kept there)
        routes = {rel: urls[rel] for rel, _, claimed in claims if claimed is not None and urls[rel] == claimed}
        for rel, p in found.files:
            url = urls[rel]
            if url is None:
                continue
            fmt = format_for_path(rel) or "markdown"
            meta: dict[str, object] = {}
            text = None
            try:
                if rel in found.unreadable:  # it could not even be looked at
                    raise PermissionError(errno.EACCES, found.unreadable[rel])
                data = read_regular_file(p, limit=self.cfg.max_bytes + 1)
                if len(data) > self.cfg.max_bytes:
                    data = whole_characters(data[: self.cfg.max_bytes], None)  # no split character
                    log(f"[DISCOVER] {self.name}: cut off {rel}: the file is over max_bytes ({self.cfg.max_bytes} "
                        "bytes); only its first max_bytes are indexed")
                md = markdown_body(decode_body(data, None), path=rel, fmt=fmt, read=self._read) \
                    if fmt in ("markdown", "mdx") else None
                if fmt in ("asciidoc", "rst") or md is not None:
                    if md is not None:
                        text, _deps, missing = md
                    elif fmt == "asciidoc":
                        text, _deps, missing = asciidoc_body(decode_body(data, None), path=rel, read=self._read,
                                                            attributes=self.cfg.asciidoc_attributes)
                    else:
                        text, _deps, missing = rst_body(decode_body(data, None), path=rel, read=self._read)
                    digest = content_hash(text)
                    if missing:
                        unresolved += len(missing)
                        meta["unresolved_includes"] = missing
                        for target in missing:
                            log(f"[DISCOVER] {self.name}: {rel}: {include_line(fmt, target)}; skipped")
                else:
                    digest = content_hash(data)
            except (OSError, LookupError, ValueError) as exc:  # unreadable, or an encoding the decoder rejects
                reason = f"cannot be read: {getattr(exc, 'strerror', None) or exc}"
                failed.append(rel)
                log(f"[DISCOVER] {self.name}: {rel} {reason}; "
                    + ("its indexed chunks are kept" if url in state else "not indexed"))
                pages.append(Page(source=self.name, page_url=url, path=rel, content_hash=state.get(url, ""),
                                  format=fmt, status="failed", error=reason))
                continue
            digest = file_page_hash(rel, digest)  # the path shapes the page too (its format, metadata_rules)
            status = self.status(url, digest, state, mode)
            body = None
            if status != "unchanged":
                body = text if text is not None else decode_body(data, None)
            pages.append(Page(source=self.name, page_url=url, path=rel, content_hash=digest, format=fmt,
                              body=body, status=status, metadata=meta))
        present = {p.page_url for p in pages}
        deleted = sorted(u for u in state if u not in present)
        complete = not found.unlisted
        if not complete:  # a file in a folder not listed this time keeps its entry
            routes = {**saved_routes, **routes}
        if routes != saved_routes and (routes or saved_routes):
            self._save_routes(routes, log)
        log(f"[DISCOVER] {self.name}: {len(pages)} files under {self.cfg.path}, "
            + (f"{len(deleted)} gone" if complete else "some folders could not be listed, so none is removed"))
        notes: dict[str, object] = {"files": len(pages)}
        if any(p.format in ("markdown", "mdx") for p in pages):
            config = next((f for folder in (self.cfg.path, self.cfg.path.parent) for f in
                           (folder / name for name in MKDOCS_CONFIGS) if f.is_file()), None)
            if config is not None and (hint := mkdocs_hint(self.name, str(config), _config_text(config),
                                                           self.cfg.heading_anchors)):
                log(hint)
            config = next((f for folder in (self.cfg.path, self.cfg.path.parent) for f in
                           (folder / name for name in VITEPRESS_CONFIGS) if f.is_file()), None)
            if config is not None and (hint := vitepress_hint(self.name, str(config), self.cfg.heading_anchors)):
                log(hint)
            found_config = next(((generator, f) for folder in (self.cfg.path, self.cfg.path.parent)
                                 for generator, name in URL_PATHS_CONFIGS if (f := folder / name).is_file()), None)
            if found_config is not None and (hint := url_paths_hint(self.name, str(found_config[1]), found_config[0],
                                                                    self.cfg, [rel for rel, _ in found.files])):
                log(hint)
        if not found.files and found.unmatched:
            notes["unmatched_documents"] = found.unmatched
            log(f"[DISCOVER] {self.name}: warning: include {list(self.cfg.include)} and exclude "
                f"{list(self.cfg.exclude)} leave out all {found.unmatched} documents under {self.cfg.path}; "
                "check the patterns (they match paths relative to the folder, e.g. '**/*.md')")
        if unmapped:
            notes["unmapped_files"] = len(unmapped)
        if unresolved:
            notes["unresolved_includes"] = unresolved
        if failed:
            notes["unreadable_files"] = failed[:MAX_LISTED]
        if found.skipped_links:
            notes["skipped_links"] = len(found.skipped_links)
            notes["skipped_link_list"] = found.skipped_links[:MAX_LISTED]
        if found.unlisted:
            notes["unlisted_folders"] = found.unlisted[:MAX_LISTED]
            notes["stopped_early"] = (f"{len(found.unlisted)} folder(s) could not be listed, first "
                                      f"{found.unlisted[0]}")
        if found.bad_names:
            notes["names_not_utf8"] = found.bad_names[:MAX_LISTED]
        return ScanResult(pages=pages, deleted=deleted, complete=complete, notes=notes)
