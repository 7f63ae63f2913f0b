"""The one error the parsers raise."""

from __future__ import annotations


class ParseError(ValueError):
    """A document cannot be parsed.

    The message names the document, says what is wrong with it and how to fix it,
    e.g. ``"docs/intro.md: invalid YAML frontmatter (...); fix the block between the
    leading '---' lines or remove it"``.
    """
