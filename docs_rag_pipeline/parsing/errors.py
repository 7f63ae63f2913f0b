"""The one error the parsers raise."""

from __future__ import annotations


class ParseError(ValueError):
    """A document cannot be parsed.

    The message names the document, says what is wrong with it and how to fix it,
    e.g. ``"docs/intro.md: invalid YAML frontmatter (...); fix the block between the
    leading '---' lines or remove it"``.
    """


class RedirectPage(ParseError):
    """The document is a redirect stub (a meta refresh to another page, with next to no text of its own),
    as static-site generators write for moved pages: not a page to index. Its target is indexed where it
    is; a page indexed before and now a stub has moved, and its chunks go."""


class UnpublishedPage(ParseError):
    """The document is one its site does not publish: a Markdown page whose front matter marks it a draft
    (``draft: true``: Docusaurus, Hugo, Astro; ``published: false``: Jekyll). Not a page to index, since a
    citation would lead to a page the site does not have; a page indexed before and now a draft goes."""
