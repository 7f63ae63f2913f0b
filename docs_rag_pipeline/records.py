"""Typed records that flow through the pipeline: plain dataclasses, no Dagster."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import quote

#: how an anchor starts that is a text fragment, not an element id: ``":~:text=Install%20on%20Linux"``
#: (made by :func:`text_directive`, already a URL fragment)
TEXT_DIRECTIVE = ":~:text="


def text_directive(text: str, *, suffix: str = "") -> str:
    """A text fragment anchor (``:~:text=…``, the URL Fragment Text Directive) that finds ``text`` on
    the live page, followed by ``suffix`` when one is given (``text,-suffix``: the match must be
    followed by those words, to tell apart two places showing the same text). Each part is
    percent-encoded, ``-``, ``,`` and ``&`` included, since they are the directive's syntax."""
    def enc(part: str) -> str:
        return quote(part, safe="").replace("-", "%2D")
    return TEXT_DIRECTIVE + enc(text) + (",-" + enc(suffix) if suffix else "")


@dataclass(frozen=True, slots=True)
class Section:
    """A part of a page under one heading.

    ``headings`` is the heading path below the page title (empty for the page's intro),
    ``anchor`` the fragment the site gives that heading ('' for the intro and a heading with no id;
    :func:`text_directive` of the heading's text for a web heading with no id), ``level`` the
    heading level (1 for the intro), ``text`` plain text: paragraphs separated by a blank line,
    list items as ``- item``, table rows as ``a | b | c``, code blocks verbatim (fenced with
    ```` ``` ````) so the chunker never splits inside one. ``targets`` are places inside the text that
    the site gives an id of their own, ``(offset in text, id)`` in text order: an API entry's
    ``<dt id="requests.Session.mount">``, a glossary term's, a command-line option's. A chunk that
    starts at or after one links it (see :func:`chunking.chunk_page`), not the heading above.
    """

    headings: tuple[str, ...]
    anchor: str
    level: int
    text: str
    targets: tuple[tuple[int, str], ...] = ()


@dataclass(slots=True)
class ParsedPage:
    """What a parser returns for one document."""

    title: str
    sections: list[Section]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Page:
    """One document of a source, as a source reports it."""

    source: str
    page_url: str
    path: str  # the path inside the source (or the URL for web pages)
    content_hash: str
    format: str  # markdown | mdx | html | asciidoc | rst
    body: str | None = None  # the raw document; None when unchanged and not loaded
    status: str = "new"  # new | changed | unchanged | deleted | failed (could not be read: its chunks are kept)
    metadata: dict[str, Any] = field(default_factory=dict)  # what the source knows (commit, fetched_at, …)
    error: str | None = None  # why a ``failed`` page could not be read


@dataclass(slots=True)
class Chunk:
    chunk_id: str
    source: str
    page_url: str
    url: str
    title: str
    headings: list[str]
    parent_id: str | None
    chunk_index: int
    text: str
    content_hash: str  # the page's content hash
    token_count: int
    updated_at: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def embedding_text(self) -> str:
        """What the embedding model sees: title, heading path, then the text, its code spans read as a
        reader sees them (without their backticks, as they were embedded before they were kept)."""
        from .answering.markers import plain_code_spans

        head = " > ".join([self.title, *self.headings]) if self.title else " > ".join(self.headings)
        text = plain_code_spans(self.text)
        return f"{head}\n{text}" if head else text


@dataclass(slots=True)
class Hit:
    chunk_id: str
    source: str
    url: str
    page_url: str
    title: str
    headings: list[str]
    text: str
    score: float
    parent_id: str | None
    chunk_index: int = 0
    vector_similarity: float | None = None  # cosine similarity to the query, when known
    fulltext_score: float | None = None  # BM25 score, when the chunk matched the full-text search
    metadata: dict[str, Any] = field(default_factory=dict)
    #: the fused RRF score (rounded as ``score``); ``score`` is the reranker's relevance score when the
    #: hit was reranked. None on a hit no search made (a parent section): its ``score`` is then the one
    fused_score: float | None = None

    @property
    def fused(self) -> float:
        """The fused RRF score, whether or not a reranker replaced ``score``: what answers weigh
        sentences by and cite (a relevance score is on another scale, 0-1 or a logit)."""
        return self.score if self.fused_score is None else self.fused_score

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Citation:
    n: int
    chunk_id: str
    url: str
    title: str
    snippet: str
    score: float
    supported: bool | None = None
    #: the cited chunk's source: two sources may index the same URL, and the page to open is this one's
    source: str | None = None

    def __post_init__(self) -> None:
        # the title is the page's, written by its author: a "[2]" in it is no citation of ours, and shown
        # after the system's "[1]" (the CLI's citation list, the chat page's source cards) it would read as
        # one; its markers go as they go from the text quoted (answers.md "Citation markers belong to the system")
        from .answering.markers import neutralise

        # a title that was nothing but markers ("[2]") is shown as its page's URL, not as nothing
        self.title = (neutralise(self.title).strip() or self.url) if self.title else self.title

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Answer:
    answer: str
    citations: list[Citation]
    refused: bool
    trace_id: str
    mode: str = "extractive"
    warning: str | None = None
    thread_id: str | None = None  # the conversation this answer belongs to (ask's thread_id)
    standalone_question: str | None = None  # a follow-up rewritten by the LLM into a standalone question
    searched: str | None = None  # what was searched for a follow-up, when not the question itself
    #: token usage the LLM server reported ({prompt_tokens, completion_tokens}); None: no LLM call
    usage: dict[str, int] | None = None
    #: how many uncited statements the validator dropped from the model's answer: the one warning about
    #: the answer's support by the docs (the question log's low confidence); clients read it in ``warning``
    dropped: int = field(default=0, repr=False)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        del out["dropped"]
        for k in ("warning", "thread_id", "standalone_question", "searched", "usage"):
            if out[k] is None:
                del out[k]
        return out
