"""Every relative link of README.md and docs/ names a file that exists and, with a #fragment, a heading
of that file (GitHub's slugs, the ones the pages are read with): docs/ is also the default index, so a
broken link is a broken citation too."""

from __future__ import annotations

import html
import re
from pathlib import Path

from docs_rag_pipeline.parsing.slugs import github_slug

from .conftest import REPO

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def _anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for m in _HEADING.finditer(text):
        plain = re.sub(r"`([^`]*)`", r"\1", m.group(1))  # inline code shows its text
        plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", plain)  # a link shows its text
        plain = html.unescape(plain)  # "&lt;name&gt;" shows as "<name>"
        out.add(github_slug(plain, seen))
    return out


def test_every_relative_link_and_anchor_in_the_docs_resolves() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        text = _FENCE.sub("", page.read_text(encoding="utf-8"))
        text = re.sub(r"`[^`\n]*`", "", text)  # a link written in inline code is shown as text, not followed
        for target in _LINK.findall(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, mailto: ...
                continue
            file, _, fragment = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no file {file})")
            elif fragment and dest.suffix == ".md" and fragment not in _anchors(dest):
                broken.append(f"{page.relative_to(REPO)}: {target} (no heading #{fragment})")
    assert not broken, "\n".join(broken)
