"""Markdown and MDX includes, resolved as the site generators resolve them before a page is rendered.

The sources call :func:`resolve_markdown_includes` with a reader of their files (as for AsciiDoc's and
reStructuredText's includes), so that a page is indexed with the text its site shows:

- VitePress: ``<!--@include: ./parts/basics.md-->``, with a region (``#name``, between ``<!-- #region
  name -->`` and ``<!-- #endregion name -->`` lines) and a line range (``{3,10}``, ``{3,}``, ``{,10}``:
  1-based, inclusive), anywhere in the page as VitePress reads it; an ``@/`` path is from the top folder;
  an included ``.md`` without a region or range loses its frontmatter. A code import ``<<< @/snippets/a.js``
  (``#region``, ``{2}`` highlighted lines and ``[title]`` accepted) is a code block in the file's language.
- MDX partials (Docusaurus, Mintlify snippets): ``import Shared from './_shared.mdx'`` and the component
  alone on its line, ``<Shared />``, is the partial's text (without its frontmatter) at the component's
  indentation; a path starting with ``/`` is from the top folder (Mintlify's ``/snippets/…``), ``@site/``
  from the folder above it (Docusaurus' site folder).
- Quarto: ``{{< include _setup.qmd >}}`` alone on its line (``/`` from the top folder); Jekyll:
  ``{% include_relative part.md %}`` alone on its line, from the page's folder (``{% include x.html %}``
  names a template of the theme's ``_includes``, which is not read).
- pymdownx.snippets (MkDocs): ``--8<-- "file.md"`` (also inside code blocks, where it is most used, and
  in the block form: ``--8<--``, one file a line, ``--8<--``), ``file.md:3:10`` a line range; paths from
  the top folder (MkDocs' ``base_path``, the folder ``mkdocs`` runs in, when the source is that folder).
  ``;--8<--`` (escaped) stays.

An include that cannot be resolved (a URL, a path out of the source, a missing, hidden or refused file,
a loop, a page grown past :data:`~.asciidoc.MAX_INCLUDED_CHARS`) stays as written, for the parser to
drop, and is listed in ``unresolved`` as written (with the reason in parentheses), so the source logs it.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from .asciidoc import _MAX_INCLUDE_DEPTH, IncludeResult, read_include
from .markdown import _FRONTMATTER_RE, _fence_closes, _fence_opened

__all__ = ["has_markdown_includes", "markdown_unresolved_line", "resolve_markdown_includes"]

#: (the path is at most 500 characters: an ``<!--@include:`` never closed scanned to its line's end from
#: each of its starts, quadratic in the line's length)
_VITEPRESS_RE = re.compile(r"<!--\s*@include:\s*([^\n]{0,500}?)\s*-->")
_VITEPRESS_RANGE_RE = re.compile(r"\{(\d*),(\d*)\}$")
_VITEPRESS_REGION_RE = re.compile(r"(#[\w-]+)")
#: VitePress' code import: ``<<< path`` then its ``#region``, ``{lines lang attrs}`` and ``[title]``
_CODE_IMPORT_RE = re.compile(r"^([ \t]{0,3})<<<[ \t]*(\S.*?)[ \t]*$")
#: (the braces' two words cannot hold a brace and the second follows a space: ``\S+`` twice, spaces optional,
#: split a ``{`` never closed every way, cubic in the line's length; a spec over 1,000 characters is no path)
_CODE_PATH_RE = re.compile(r"^(.+?(?:\.([a-z0-9]+))?)(#[\w-]+)?(?: ?\{(\d+(?:[,-]\d+)*)? ?([^\s{}]+)?(?: ([^\s{}]+))?\})? ?(?:\[(.+)\])?$")
_LONGEST_CODE_PATH = 1000
_IMPORT_RE = re.compile(r"""^[ \t]*import[ \t]+([A-Z][\w$]*)[ \t]+from[ \t]+(['"])([^'"\n]+\.mdx?)\2[ \t]*;?[ \t]*$""",
                        re.M)
#: (the attributes' run ends with its own spaces: a lazy run and ``\s*`` before ``/>`` made a line that
#: never closes quadratic)
_COMPONENT_RE = re.compile(r"^([ \t]*)<([A-Z][\w$]*)(?:\s[^<>]*)?/>[ \t]*$")
_QUARTO_RE = re.compile(r"""^([ \t]*)\{\{<\s*include\s+(["']?)([^"'\s>]+)\2\s*>\}\}[ \t]*$""")
#: Jekyll's ``{% include_relative part.md %}`` alone on its line: the file, from the page's folder
#: Liquid's raw block tags, whose inside Jekyll leaves as written
_RAW_RE = re.compile(r"\{%-?\s*(raw|endraw)\s*-?%\}")
_JEKYLL_RE = re.compile(r"""^([ \t]*)\{%-?\s*include_relative\s+(["']?)([^"'\s%]+)\2\s*-?%\}[ \t]*$""")
_SNIPPET_RE = re.compile(r"""^([ \t]*)(;?)-{1,}8<-{1,}[ \t]+(["'])([^"'\n]+)\3[ \t]*$""")
_SNIPPET_BLOCK_RE = re.compile(r"^([ \t]*)(;?)-{1,}8<-{1,}[ \t]*$")
_SNIPPET_LINES_RE = re.compile(r"^(.*?)((?::-?\d*){1,2})$")
_SIGN_RE = re.compile(r"@include:|^[ \t]{0,3}<<<|^[ \t]*import[ \t]+[A-Z]|\{\{<\s*include\s|8<-|include_relative", re.M)
#: languages of a code import by the file's extension, where the extension is not the language's name
_LANGUAGES = {"py": "python", "js": "js", "mjs": "js", "cjs": "js", "ts": "ts", "mts": "ts", "rb": "ruby",
              "sh": "sh", "yml": "yaml", "md": "md", "rs": "rust", "kt": "kotlin"}


def has_markdown_includes(text: str) -> bool:
    """Whether ``text`` may hold an include :func:`resolve_markdown_includes` reads (a quick test)."""
    return _SIGN_RE.search(text) is not None


def markdown_unresolved_line(entry: str) -> str:
    """An entry of ``unresolved`` (the include as written, a reason in parentheses) as a log line's middle."""
    written, sep, reason = entry.rpartition(" (")
    if sep and reason.endswith(")"):
        return f"{written} cannot be resolved: {reason[:-1]}"
    return f"{entry} cannot be resolved"


def _join(target: str, current: str, root: str) -> str | None:
    """The repository path ``target`` names from file ``current``: relative to its folder, or, written
    ``/x``, ``@/x`` (VitePress) or ``@site/x`` (Docusaurus, the folder above ``root``), from ``root``.
    None for a URL or a path out of the repository."""
    if "://" in target or target.startswith("//"):
        return None
    if target.startswith("@site/"):
        if not root.strip("/"):  # the folder above the source's: out of it (a local source reads only its own)
            return None
        joined = posixpath.join(posixpath.dirname(root.strip("/")) or ".", target[len("@site/"):])
    elif target.startswith("@"):
        joined = posixpath.join(root or ".", target[2:] if target.startswith("@/") else target[1:])
    elif target.startswith("/"):
        joined = posixpath.join(root or ".", target.lstrip("/"))
    else:
        joined = posixpath.join(posixpath.dirname(current), target)
    norm = posixpath.normpath(joined)
    return None if norm == ".." or norm.startswith(("../", "/")) else norm


def _region(lines: list[str], name: str) -> tuple[int, int] | None:
    """The lines between VitePress' ``#region name`` and ``#endregion name`` markers (any comment style)."""
    start = None
    for k, line in enumerate(lines):
        m = re.fullmatch(r"(?://|/\*|<!--|#pragma|#|::#)?[ ]?#?((?:[Ee]nd ?)?[Rr]egion) ([\w*-]+)(?: ?\*/| -->)?",
                         line.strip())
        if not m or m.group(2) != name:
            continue
        if start is None and m.group(1).lower() == "region":
            start = k + 1
        elif start is not None and m.group(1).lower().replace(" ", "") == "endregion":
            return start, k
    return None


def _fence_after(lines: list[str], fence: str) -> str:
    """The marker of the code fence open after ``lines`` ("" for none), ``fence`` the one open before
    them; by the Markdown parser's rules (a fence at any indent: a list item's code block is indented)."""
    for line in lines:
        fence = ("" if _fence_closes(line, fence) else fence) if fence else _fence_opened(line)
    return fence


def _without_frontmatter(lines: list[str]) -> list[str]:
    m = _FRONTMATTER_RE.match("\n".join(lines))
    return "\n".join(lines)[m.end():].split("\n") if m else lines


def _without_esm(lines: list[str]) -> list[str]:
    """``lines`` of an MDX partial without its ``import``/``export`` statements, outside its code blocks."""
    from .markdown import _drop_esm, _split_fences

    return [x for kind, run in _split_fences(lines) for x in (run if kind == "fence" else _drop_esm(run))]


def _dedent(lines: list[str]) -> list[str]:
    width = min((len(x) - len(x.lstrip(" \t")) for x in lines if x.strip()), default=0)
    return [x[width:] for x in lines]


def resolve_markdown_includes(text: str, *, path: str, read: Any, root: str = "", mdx: bool = False) -> IncludeResult:
    """``text`` (the Markdown or MDX file at repository path ``path``) with its includes (the module's
    docstring) replaced by the files they name, read with ``read(repo_path)`` (None when the file is not
    there; the source's reader, which refuses a link out of the folder or into a hidden file); ``root``:
    the source's top folder. Includes in included files are resolved from their own folder. Returns an
    :class:`~.asciidoc.IncludeResult`: the text, every file named (``deps``) and what was not resolved."""
    result = IncludeResult(text)
    if not has_markdown_includes(text):
        return result
    size = [len(text)]

    def load(written: str, target: str, current: str, depth: int, chain: tuple[str, ...]) -> tuple[str, list[str]] | None:
        repo_path = _join(target, current, root)
        if repo_path is None:
            result.unresolved.append(f"{written} (a URL or a path out of the source)")
            return None
        if repo_path in chain:
            result.unresolved.append(f"{written} (it includes itself: a loop of includes)")
            return None
        before = len(result.unresolved)
        lines = read_include(target, repo_path, read=read, result=result, size=size, depth=depth, chain=chain)
        if lines is None:
            # read_include lists the target as written with its reason: list the include as the page writes it
            reasons = [e[len(target):].strip() for e in result.unresolved[before:]]
            del result.unresolved[before:]
            reason = next((r for r in reasons if r), "(no such file in the source)" if depth < _MAX_INCLUDE_DEPTH
                          else f"(nested more than {_MAX_INCLUDE_DEPTH} includes deep)")
            result.unresolved.append(f"{written} {reason}")
            return None
        return repo_path, lines

    def vitepress(line: str, current: str, depth: int, chain: tuple[str, ...]) -> list[str]:
        def repl(m: re.Match[str]) -> str:
            spec = m.group(1)
            if not spec:
                return m.group(0)
            rng, region = _VITEPRESS_RANGE_RE.search(spec), _VITEPRESS_REGION_RE.search(spec)
            if region or rng:
                spec = spec[: len(spec) - (len(region.group(0)) if region else 0) - (len(rng.group(0)) if rng else 0)]
            got = load(m.group(0), spec, current, depth, chain)
            if got is None:
                return m.group(0)
            repo_path, lines = got
            if region:
                span = _region(lines, region.group(1)[1:])
                lines = lines[span[0]:span[1]] if span else lines
            if rng:
                lines = lines[int(rng.group(1)) - 1 if rng.group(1) else None: int(rng.group(2)) if rng.group(2) else None]
            if not (region or rng) and repo_path.endswith(".md"):
                lines = _without_frontmatter(lines)
            return "\n".join(expand(lines, repo_path, depth + 1, (*chain, repo_path)))
        return _VITEPRESS_RE.sub(repl, line).split("\n")

    def expand(lines: list[str], current: str, depth: int, chain: tuple[str, ...]) -> list[str]:
        imports = dict((m.group(1), m.group(3)) for m in _IMPORT_RE.finditer("\n".join(lines))) \
            if mdx or current.endswith(".mdx") else {}
        out: list[str] = []
        fence = ""
        raw = False
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            if "@include:" in line:
                got = vitepress(line, current, depth, chain)
                if got != [line]:  # already resolved, from the included file's own folder
                    fence = _fence_after(got, fence)
                    out += got
                    continue
            was, fence = fence, _fence_after([line], fence)
            # (what an include splices in moves the fence state as the Markdown parser will read it: a
            # partial that opens a code block makes the lines after it code)
            spliced = len(out)
            if _RAW_RE.search(line):  # Liquid's {% raw %} … {% endraw %}: its tags are text there
                raw = _RAW_RE.findall(line)[-1] == "raw"
            if not raw and (m := _JEKYLL_RE.match(line)) is not None and (was or fence):
                # Jekyll runs Liquid on the whole file before Markdown: a file included inside a code block
                # is its code (a config file shown as written), unless {% raw %} says the tag is text
                got = load(line.strip(), m.group(3), current, depth, chain)
                if got is not None:
                    out += [m.group(1) + x if x.strip() else "" for x in got[1]]
                    fence = _fence_after(out[spliced:], was)
                    continue
            if (m := _SNIPPET_RE.match(line)) is not None:
                indent, escaped, target = m.group(1), m.group(2), m.group(4).strip()
                if escaped:
                    out.append(indent + line.strip()[1:])  # ;--8<-- shows the line without its ';'
                    continue
                out += snippet(line, indent, target, current, depth, chain)
                fence = _fence_after(out[spliced:], fence)
                continue
            if (m := _SNIPPET_BLOCK_RE.match(line)) is not None and not m.group(2):
                end = next((k for k in range(i, len(lines)) if _SNIPPET_BLOCK_RE.match(lines[k])), None)
                if end is not None:
                    before, logged = len(out), len(result.unresolved)
                    targets = [t.strip() for t in lines[i:end] if t.strip() and not t.strip().startswith(";")]
                    for target in targets:
                        out += snippet(f'--8<-- "{target}"', m.group(1), target, current, depth, chain)
                    if targets and len(result.unresolved) - logged == len(targets):
                        # no line names a file of the source: a "cut here" mark around text (a mail's
                        # config to paste), not a snippet block; the page keeps it as written
                        del out[before:], result.unresolved[logged:]
                        out += lines[i - 1:end + 1]
                    i = end + 1
                    fence = _fence_after(out[spliced:], fence)
                    continue
            if was or fence:  # a line of a code block, its fences too
                out.append(line)
                continue
            if not fence and (m := _QUARTO_RE.match(line) or (None if raw else _JEKYLL_RE.match(line))) is not None:
                got = load(line.strip(), m.group(3), current, depth, chain)
                if got is None:
                    out.append(line)
                    continue
                repo_path, inc = got
                inc = expand(_without_frontmatter(inc), repo_path, depth + 1, (*chain, repo_path))
                out += ["", *(m.group(1) + x if x.strip() else "" for x in inc), ""]
                fence = _fence_after(out[spliced:], fence)
                continue
            if not fence and (m := _CODE_IMPORT_RE.match(line)) is not None:
                out += code_import(line, m.group(1), m.group(2), current, depth, chain)
                continue
            if not fence and imports and (m := _COMPONENT_RE.match(line)) is not None and m.group(2) in imports:
                written = f"import {m.group(2)} from '{imports[m.group(2)]}'"
                got = load(written, imports[m.group(2)], current, depth, chain)
                if got is None:
                    out.append(line)
                    continue
                repo_path, inc = got
                inc = expand(_without_frontmatter(inc), repo_path, depth + 1, (*chain, repo_path))
                inc = _without_esm(inc)  # the partial's own imports: at the component's indentation they would be text
                out += ["", *(m.group(1) + x if x.strip() else "" for x in inc), ""]
                fence = _fence_after(out[spliced:], fence)
                continue
            out.append(line)
        return out

    def snippet(written: str, indent: str, target: str, current: str, depth: int, chain: tuple[str, ...]) -> list[str]:
        span = _SNIPPET_LINES_RE.match(target)
        start = end = None
        if span and span.group(1) and not re.search(r"[\\/]$", span.group(1)):
            parts = span.group(2).split(":")[1:]
            try:
                start = int(parts[0]) if parts[0] else None
                end = int(parts[1]) if len(parts) > 1 and parts[1] else None
                target = span.group(1)
            except ValueError:
                pass
        got = load(written.strip(), "/" + target.lstrip("/"), current, depth, chain)
        if got is None:
            return [indent + written.strip()]
        repo_path, inc = got
        if start is not None or end is not None:
            inc = inc[(start - 1 if start and start > 0 else None): end]
        inc = expand(inc, repo_path, depth + 1, (*chain, repo_path))
        while inc and not inc[-1].strip():
            inc.pop()
        return [indent + x if x.strip() else "" for x in inc]

    def code_import(line: str, indent: str, spec: str, current: str, depth: int, chain: tuple[str, ...]) -> list[str]:
        m = _CODE_PATH_RE.match(spec) if len(spec) <= _LONGEST_CODE_PATH else None
        if m is None:
            return [line]
        got = load(line.strip(), m.group(1), current, depth, chain)
        if got is None:
            return [line]
        _repo_path, inc = got
        if m.group(3):
            span = _region(inc, m.group(3)[1:])
            if span:
                inc = _dedent(inc[span[0]:span[1]])
        while inc and not inc[-1].strip():
            inc.pop()
        ext = (m.group(2) or "").lower()
        lang = m.group(5) or _LANGUAGES.get(ext, ext)
        width = max((len(x) for x in re.findall(r"`{3,}", "\n".join(inc))), default=2) + 1
        return ["", f"{indent}{'`' * max(3, width)}{lang}", *inc, f"{indent}{'`' * max(3, width)}", ""]

    lines = text.split("\n")
    result.text = "\n".join(expand(lines, path, 0, (path,)))
    return result
