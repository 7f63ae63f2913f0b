"""Metadata derived per page from config rules: path globs, a path regex, frontmatter keys."""

from __future__ import annotations

import fnmatch
import re
from typing import Any, Iterable

from .config import MetadataRule


def glob_match(path: str, pattern: str) -> bool:
    """Match a POSIX relative path against a glob where ``**/`` also matches zero folders."""
    if fnmatch.fnmatchcase(path, pattern):
        return True
    return pattern.startswith("**/") and glob_match(path, pattern[3:])


def derive_metadata(rules: Iterable[MetadataRule], *, path: str, frontmatter: dict[str, Any]) -> dict[str, Any]:
    """The metadata the rules give a page at ``path`` (a source-relative path or URL path)."""
    out: dict[str, Any] = {}
    for rule in rules:
        value: Any = None
        if rule.frontmatter and frontmatter.get(rule.frontmatter) not in (None, ""):
            value = frontmatter[rule.frontmatter]
        if value is None:
            value = next((v for g, v in rule.values if glob_match(path, g)), None)
        if value is None and rule.pattern:
            m = re.search(rule.pattern, path)
            if m:
                value = m.group(1) if m.groups() else m.group(0)
        if value is None:
            value = rule.default
        if value is not None:
            out[rule.key] = value
    return out


def shared_values(rules: Iterable[MetadataRule]) -> dict[str, str]:
    """key → the default value that marks pages shared by every value of the key (e.g. common)."""
    return {r.key: r.default for r in rules if r.default is not None}
