"""The typed configuration: one YAML file, validated on load, before any work starts.

``load_config()`` reads ``DOCS_RAG_CONFIG`` (or ``docs_rag.yaml`` in the working directory).
Each section is declared once as a pydantic model (unknown keys, wrong types and numbers out of
range are errors); pydantic's errors are reworded so that every one names the key path and how
to fix it: ``docs_rag.yaml: sources[0].timeout_seconds: must be > 0.0, got 0``.
"""

from __future__ import annotations

import errno
import math
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import yaml
from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, ValidationInfo,
                      field_validator, model_validator)
from pydantic_core import PydanticCustomError

from .files import expand_home
from .unicode_text import ESCAPED_BYTE, shown_bytes

DEFAULT_CONFIG_FILE = "docs_rag.yaml"
SOURCE_NAME_MAX = 64  # characters of a source name
SOURCE_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,%d}" % (SOURCE_NAME_MAX - 1))  # use with fullmatch (match + '$' lets "a\n" through)
CRON_RE = re.compile(r"^(\S+\s+){4}\S+$")
#: the largest top_k a search takes (query.py); retrieval.top_k, api.max_top_k and eval.top_k are bounded by it
MAX_TOP_K = 10_000
#: the most results taken from each retriever: a search takes max(candidates, 4 × top_k) (retrieval.py)
MAX_CANDIDATES = 4 * MAX_TOP_K
#: the longest timeout, in seconds (a day): far larger ones overflow the clock when a request starts
MAX_SECONDS = 86_400.0
#: the most bytes read of one file or page (1 GB); far larger ones overflow the read's size
MAX_BYTES = 1_000_000_000
#: the most days old index versions are kept (100 years: every version); far larger ones overflow the date
MAX_KEEP_DAYS = 36_500


def dagster_name(source: str) -> str:
    """A source name as part of a Dagster definition name (schedule, job), which allows no '-'."""
    return source.replace("-", "_")


class ConfigError(ValueError):
    """A configuration problem, with the key path and the fix in the message."""


def _fail(message: str, sub: str | int | None = None, **ctx: Any) -> PydanticCustomError:
    """A config problem at the current key (or at ``sub`` below it): the message is final."""
    return PydanticCustomError("config", "{message}", {"message": message, "sub": sub, **ctx})


def _expand_home(value: str) -> Path:
    """``files.expand_home`` with its error as a config error naming the key."""
    try:
        return expand_home(value)
    except ValueError as exc:
        raise _fail(str(exc)) from None


def _regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise _fail(f"{pattern!r} is not a valid regular expression ({exc})") from exc
    return pattern


def _css_selector(selector: str) -> str:
    """A web source's ``content_selector``, compiled with soupsieve (what BeautifulSoup's ``select_one``
    in parsing/html.py uses): a typo made every page a parse failure at ingest, after fetching it."""
    import soupsieve

    try:
        soupsieve.compile(selector)
    except Exception as exc:  # noqa: BLE001 - soupsieve's SelectorSyntaxError, and its kin
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise _fail(f"{selector!r} is not a valid CSS selector ({reason}); write a CSS selector such as "
                    "'main' or 'div.content'") from None
    return selector


def _http_url(value: str, example: str = "https://docs.example.org/") -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise _fail(f"{_shown_url(value)!r} is not an http(s) URL, e.g. {example!r}")
    return value


def _shown_url(value: str) -> str:
    """A URL as a config error shows it: without the user name and password written into it, also where
    the scheme is missing (``bob:pw@localhost:8080/v1``, the mistake the error is about)."""
    shown = without_userinfo(value)
    head, sep, rest = shown.partition("/")
    if "://" not in shown and "@" in head:
        shown = head.rsplit("@", 1)[1] + sep + rest
    return shown


def _server_url(value: str) -> str:
    """An OpenAI-compatible server's base URL: http(s) with a host. Without the scheme
    (``localhost:8080/v1``, as server guides often write the host) the HTTP client cannot send a
    request, and every answer would blame an unreachable server instead of the setting."""
    return _http_url(value, "http://localhost:8080/v1")


def _origin(value: str) -> str:
    """A browser origin for ``api.cors_origins``: ``scheme://host[:port]`` as a browser sends it in ``Origin``
    (lower case, no path; a trailing slash dropped), or ``*`` for any origin."""
    origin = value.strip().rstrip("/").lower()
    if origin != "*" and not re.fullmatch(r"https?://[^/?#\s@]+", origin):
        raise _fail(f"{_shown_url(value)!r} is not an origin; give scheme://host[:port] as a browser sends it in "
                    "its Origin header, without a path (e.g. 'https://docs.example.org'), or '*' for any origin")
    return origin


def _public_url(value: str) -> str:
    """The base URL clients reach the API at: http(s), no query or fragment; no trailing slash."""
    _http_url(value)
    if "?" in value or "#" in value:
        raise _fail(f"{_shown_url(value)!r} has a query or fragment; give the base URL clients reach the API at, "
                    "e.g. 'https://docs.example.org/rag'")
    return value.rstrip("/")


#: a URL's user name and password (``https://alice:pw@host/``). An apostrophe is a character of a password
#: (RFC 3986 allows it raw, git takes it): ``''`` is one in a single-quoted YAML string, and one that ends a
#: quoted URL is followed by a space, a line end or the ``,`` ``]`` ``}`` of a YAML flow list or mapping
_USERINFO_RE = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)(?:[^/\s@'\"]|''|'(?![\s,\]}\"]|$))*@")


def without_userinfo(text: str) -> str:
    """``text`` (a URL, or a config file's text) without the user name and password of each URL in it:
    a token someone put in a git source's ``repo`` is not logged, nor kept in Dagster's run storage."""
    return _USERINFO_RE.sub(r"\1", text)


def shown_path(path: str | os.PathLike[str]) -> str:
    """A path as a message shows it: a byte of a name that is not UTF-8 as ``\\xe4`` (Python holds it as a
    lone surrogate, which a UTF-8 terminal or log cannot print)."""
    return shown_bytes(os.fspath(path))


def header_value_problem(value: str, charset: str) -> str | None:
    """Why an HTTP client that writes header values in ``charset`` cannot send ``value`` as one (None: it
    can). httpx (the openai client) writes ASCII, requests Latin-1; both refuse a control character (a line
    break would end the header) and h11 a space at either end. Said at load: at request time every fetch or
    embedding failed with an encoding error that pointed at the site or the server instead."""
    if value != value.strip(" \t"):
        return "starts or ends with a space or tab, which an HTTP header cannot carry"
    for i, ch in enumerate(value):
        code = ord(ch)
        if ESCAPED_BYTE.match(ch):  # a byte that is not UTF-8, as Python holds it (an environment variable)
            return f"holds the byte 0x{code - 0xDC00:02x} at position {i}, which is not UTF-8 text"
        if code < 32 or 127 <= code < 160:
            return f"holds the control character {ch!r} at position {i}, which an HTTP header cannot carry"
        try:
            ch.encode(charset)
        except UnicodeEncodeError:
            return f"holds {ch!r} (U+{code:04X}) at position {i}, which an HTTP header cannot carry"
    return None


def _header_text(value: str) -> str:
    """A config value sent as a header by requests (a web source's ``user_agent``)."""
    problem = header_value_problem(value, "latin-1")
    if problem:
        raise _fail(f"{value!r} {problem}; use ASCII letters, digits, spaces and punctuation")
    return value


def _api_key_env(name: str | None) -> None:
    """The API key in the environment variable ``name``, if it is set, must be sendable as a bearer token:
    checked here so that a bad one is named at load (an unset one is named when a client needs it)."""
    key = os.environ.get(name) if name else None
    problem = header_value_problem(key, "ascii") if key else None
    if problem:  # the key itself is never shown
        raise _fail(f"the environment variable {name} {problem}; set it to the API key exactly as issued "
                    "(ASCII, no line break or space around it)", "api_key_env")


def _env_name(name: str) -> str:
    """The name of an environment variable (``*_env`` keys): never empty or blank. ``token_env: ""`` (a
    template variable that came out empty) read as "no variable", which for ``api.token_env`` turned
    authentication off; null is the way to say "none"."""
    if not name.strip():
        raise _fail(f"{name!r} is not the name of an environment variable; give the variable's name "
                    "(e.g. DOCS_RAG_API_TOKEN), or null for none")
    if name != name.strip() or "=" in name:
        raise _fail(f"{name!r} is not the name of an environment variable (it holds a space or '='); "
                    "write the name alone, e.g. DOCS_RAG_API_TOKEN")
    return name


def _listify(value: Any) -> Any:
    """A YAML string or list → a tuple (one string is a list of one)."""
    if isinstance(value, str):
        return (value,)
    return tuple(value) if isinstance(value, list) else value


def _tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


Regex = Annotated[str, AfterValidator(_regex)]
HttpUrl = Annotated[str, AfterValidator(_http_url)]
PublicUrl = Annotated[str, AfterValidator(_public_url)]
Origins = Annotated[tuple[Annotated[str, AfterValidator(_origin)], ...], BeforeValidator(_listify)]
ServerUrl = Annotated[str, AfterValidator(_server_url)]
HeaderText = Annotated[str, AfterValidator(_header_text)]
CssSelector = Annotated[str, AfterValidator(_css_selector)]
EnvName = Annotated[str, AfterValidator(_env_name)]
Strings = Annotated[tuple[str, ...], BeforeValidator(_listify)]
Regexes = Annotated[tuple[Regex, ...], BeforeValidator(_listify)]
HttpUrls = Annotated[tuple[HttpUrl, ...], BeforeValidator(_listify)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]
Seconds = Annotated[float, Field(gt=0.0, le=MAX_SECONDS)]

# a hint added to "missing" for keys whose purpose is not obvious from their name
_MISSING_HINTS = {
    "name": "every source needs a name and a kind", "kind": "every source needs a name and a kind",
    "path": "a local source needs the folder that holds its documents",
    "seed_urls": "a web source needs at least one start URL",
    "repo": "a git source needs a repository URL or local path",
    "key": "name the metadata key this rule sets",
}


class _Shape(BaseModel):
    """A config section: unknown keys, wrong types and out-of-range numbers are errors."""

    # no number is infinite or NaN: `.inf` (YAML) passed every `ge` bound, then a crawl's delay was an
    # OverflowError in time.sleep, a price made the cost figure Infinity (not JSON)
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)
    _keys: ClassVar[tuple[str, ...] | None] = None  # the YAML keys, in the order to list them (default: every field)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            allowed = cls._keys or tuple(sorted(cls.model_fields))
            what = "top-level keys" if cls._keys else "keys"
            for k, v in data.items():
                if k not in allowed:
                    raise _fail(f"unknown key; allowed {what}: {', '.join(allowed)}", str(k))
                if _has_nul(v):  # no path, URL, name or pattern may hold one; the OS would refuse it later
                    raise _fail("the value contains a NUL character (\\0); remove it", str(k))
        return data


def _has_nul(value: Any) -> bool:
    """True when ``value``, or a string in it (list or mapping values, one level), holds a NUL."""
    if isinstance(value, str):
        return "\0" in value
    if isinstance(value, (list, tuple)):
        return any(isinstance(x, str) and "\0" in x for x in value)
    if isinstance(value, dict):
        return any(isinstance(x, str) and "\0" in x for x in [*value, *value.values()])
    return False


class EmbeddingConfig(_Shape):
    provider: Literal["local", "openai"] = "local"
    model: str = "all-MiniLM-L6-v2"
    batch_size: int = Field(32, ge=1)
    base_url: ServerUrl | None = None
    api_key_env: EnvName = "OPENAI_API_KEY"
    dimensions: int | None = Field(None, ge=1)  # openai: vector size (asked of the server when unset)
    max_tokens: int | None = Field(None, ge=1)  # openai: the model's window, in tokens
    timeout_seconds: Seconds = 30.0
    max_retries: int = Field(3, ge=0)

    @model_validator(mode="after")
    def _openai_model(self) -> EmbeddingConfig:
        if self.provider == "openai" and not self.base_url and "model" not in self.model_fields_set:
            raise _fail("required for the openai provider", "model")
        if self.provider == "openai":
            _api_key_env(self.api_key_env)
        return self


class LlmConfig(_Shape):
    provider: Literal["none", "openai"] = "none"
    model: str | None = None
    base_url: ServerUrl | None = None
    api_key_env: EnvName = "OPENAI_API_KEY"
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    timeout_seconds: Seconds = 30.0
    max_tokens: int = Field(512, ge=1)  # of the generated answer
    context_tokens: int = Field(1800, ge=1)  # budget for the retrieved chunks in the prompt
    uncited: Literal["refuse", "drop"] = "refuse"  # a sentence without a citation: refuse the answer (strict) or drop it
    min_support: Probability = 0.5  # a citation whose chunk supports its sentence less than this is flagged
    # cost: prices per 1000 tokens (the eval reports cost per 100 calls from the usage the server returns)
    price_per_1k_prompt_tokens: float = Field(0.0, ge=0.0)
    price_per_1k_completion_tokens: float = Field(0.0, ge=0.0)

    @model_validator(mode="after")
    def _openai_model(self) -> LlmConfig:
        if self.provider == "openai" and not self.model:
            raise _fail("required when llm.provider is 'openai'", "model")
        if self.provider == "openai":
            _api_key_env(self.api_key_env)
        return self


class ChunkingConfig(_Shape):
    target_tokens: int | None = Field(None, ge=32)  # None: follow the embedding model's window
    overlap_tokens: int = Field(32, ge=0)
    # a page that chunks into more is cut to its first chunks, with a warning: a page within max_bytes
    # (a crawled page of 60,000 headings, a 5 MB "word") made 22,000 to 60,000 chunks, hours of embedding
    max_chunks_per_page: int = Field(5000, ge=1)

    @model_validator(mode="after")
    def _overlap(self) -> ChunkingConfig:
        if self.target_tokens is not None and self.overlap_tokens >= self.target_tokens:
            raise _fail("must be smaller than chunking.target_tokens", "overlap_tokens")
        return self


class RerankConfig(_Shape):
    """A rerank endpoint of the common ``/rerank`` shape (query, documents, top_n, model → results
    [{index, relevance_score}]). Any failure keeps the fused order, with a warning."""

    url: HttpUrl  # the full endpoint URL, e.g. http://127.0.0.1:8080/rerank
    model: str | None = None
    api_key_env: EnvName | None = None  # env var holding a bearer token for the endpoint; unset: none sent
    timeout_seconds: Seconds = 5.0
    candidates: int = Field(20, ge=1, le=1000)  # fused results sent to the reranker
    top_n: int | None = Field(None, ge=1, le=1000)  # asked of the reranker (default: all candidates)

    @model_validator(mode="after")
    def _key(self) -> RerankConfig:
        _api_key_env(self.api_key_env)
        return self


class RetrievalConfig(_Shape):
    top_k: int = Field(5, ge=1, le=MAX_TOP_K)
    candidates: int = Field(40, ge=1, le=MAX_CANDIDATES)  # per retriever, before fusion
    rrf_k: int = Field(60, ge=0)
    nprobes: int = Field(24, ge=1, le=100_000)  # IVF partitions probed when the table has an ANN index (large tables)
    # refusal: a question is answered only when the best retrieved chunk clears both gates
    # calibrated with `docs-rag eval` on eval/project-docs.jsonl (its report's "calibration")
    min_similarity: Probability = 0.25
    # 0.6 until the replay of 2026-11-27 on the calibration halves of six sets (297 cases): at 0.6
    # the gate was the only one to refuse 5 answerable questions and no out-of-scope one; 0 to 0.3 decide
    # every other case alike (docs/evaluation.md)
    min_term_coverage: Probability = 0.3
    # above 1 (a cosine similarity never is), the gate is off: calibration uses 1.01 for "never"
    confident_similarity: float = Field(0.45, ge=0.0)
    # a question naming a term the indexed docs never use (e.g. a product they don't mention) is
    # refused unless a chunk is at least this similar
    unknown_term_similarity: float = Field(0.7, ge=0.0)
    # the answer's own evidence (chosen on the calibration halves of eval/sets, docs/evaluation.md):
    # one chunk must hold this rarity-weighted share of the question's words (0.25 until the nodejs
    # set's calibration half: 0.15 refuses fewer answerable questions on two sets and changes nothing
    # on the other four),
    min_chunk_coverage: Probability = 0.15
    # one sentence of the top chunks must be at least this similar to the question,
    min_sentence_similarity: float = Field(0.35, ge=0.0)
    # and a specific question word (several word pieces) at least this rare in the docs (1: never
    # used) that the top chunks lack needs a sentence at least this similar (above 1: the gate is off)
    missing_word_rarity: float = Field(0.8, ge=0.0)
    missing_word_sentence_similarity: float = Field(0.6, ge=0.0)
    # the full-text and the vector ranking must share at least this many pages among their first 5
    # (0: the gate is off), unless a sentence is at least this similar to the question
    min_shared_pages: int = Field(1, ge=0, le=5)
    shared_pages_sentence_similarity: float = Field(0.65, ge=0.0)
    rerank: RerankConfig | None = None  # a rerank endpoint; unset: the fused order


class EvalConfig(_Shape):
    """Thresholds of the eval_scores asset checks (a check fails below them)."""

    top_k: int = Field(5, ge=1, le=MAX_TOP_K)
    min_recall_at_5: Probability = 0.8
    min_refusal_accuracy: Probability = 0.7
    min_citation_precision: Probability = 0.95


class ApiConfig(_Shape):
    """The HTTP API (``docs-rag serve``): auth, limits, and where Dagster's GraphQL API is."""

    token_env: EnvName | None = None  # env var holding the bearer token for every route but /health; unset: no auth
    admin_token_env: EnvName | None = None  # env var holding the admin token (POST /sources/<name>/refresh)
    rate_limit_per_minute: int = Field(60, ge=0)  # per client (token, else remote address); 0: no limit
    max_question_chars: int = Field(2000, ge=1)
    max_top_k: int = Field(8, ge=1, le=MAX_TOP_K)
    dagster_graphql_url: HttpUrl = "http://127.0.0.1:3000/graphql"
    #: the URL clients reach the API at (behind a reverse proxy); unset: the request's host
    public_url: PublicUrl | None = None
    #: browser origins whose pages may call the API (CORS); empty: only the server's own pages
    cors_origins: Origins = ()
    #: how many reverse proxies stand in front of the server, each appending the address it got the
    #: request from to ``X-Forwarded-For``: the rate limit's client is that header's Nth address from
    #: the right; 0 (default): the header is ignored (a client can write anything in it)
    trusted_proxies: int = Field(0, ge=0, le=10)
    thread_ttl_minutes: int = Field(60, ge=1, le=10080)  # a conversation (thread_id) expires this long after its last question
    log_questions: bool = True  # log every ask (<storage>/feedback.sqlite): feedback and the doc_gaps asset need it
    #: the doc-gap report reads the newest N refused or low-confidence asks: anyone who can ask adds to
    #: the log, and the report embeds each question and clusters them in memory quadratic in their number
    gap_questions: int = Field(2000, ge=1)
    #: logged asks older than this are deleted as new ones are logged (those with feedback are kept:
    #: feedback and its draft eval cases need the question); null keeps every ask
    keep_questions_days: int | None = Field(90, ge=1, le=36500)


class UrlRule(_Shape):
    """``match``: a regex on the file's path; ``url``: its replacement (``\\1`` …), full URL."""

    match: Regex
    url: str

    def __init__(self, *args: str, **data: Any) -> None:  # UrlRule(match, url) reads best
        super().__init__(**dict(zip(("match", "url"), args)), **data)

    @model_validator(mode="before")
    @classmethod
    def _exact_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and set(data) != {"match", "url"}:
            raise _fail("a URL rule has exactly the keys 'match' (a regex on the path) and 'url'")
        return data

    @model_validator(mode="after")
    def _groups(self) -> UrlRule:
        """Every ``\\1`` / ``\\g<name>`` in ``url`` names a group of ``match`` (else every scan would
        fail on the first path the rule matches)."""
        rx = re.compile(self.match)
        for num, name in re.findall(r"\\(?:(\d+)|g<(\w+)>)", self.url):
            ref = num or name
            if not (ref.isdigit() and int(ref) <= rx.groups or ref in rx.groupindex):
                have = f"it has {rx.groups} group(s)" + (f" named {', '.join(rx.groupindex)}" if rx.groupindex else "")
                raise _fail(f"{chr(92)}{ref if num else f'g<{ref}>'} names no group of match {self.match!r} ({have}); "
                            "use a group the regex has, or add one with (...)", "url")
        return self


class MetadataRule(_Shape):
    """Derive one metadata key per page: from path globs (``values``: glob → value, first match
    wins), a regex on the path (``pattern``: the value is group 1) or a frontmatter key
    (``frontmatter``); else ``default``. A filter on ``key`` also matches ``default`` pages
    (shared pages, e.g. ``common``)."""

    key: str
    values: tuple[tuple[str, str], ...] = ()
    pattern: Regex | None = None
    frontmatter: str | None = None
    default: str | None = None

    @field_validator("values", mode="before")
    @classmethod
    def _glob_map(cls, v: Any) -> Any:
        if isinstance(v, dict):
            for g, value in v.items():
                if not isinstance(value, str):
                    raise _fail(f"expected a string, got {type(value).__name__} {value!r}", repr(str(g)))
            return tuple((str(g), value) for g, value in v.items())
        return v

    @model_validator(mode="after")
    def _some_source(self) -> MetadataRule:
        if not (self.values or self.pattern or self.frontmatter or self.default is not None):
            raise _fail("give at least one of values, pattern, frontmatter or default")
        return self


#: the longest one git command of a git source may run (``timeout_seconds`` of a git source): the bound of
#: a ``git://`` remote that stalls, for which git has no timeout of its own, and of a first clone of a big
#: repository over a slow link, which may need more
GIT_TIMEOUT_SECONDS = 600.0
DEFAULT_INCLUDE = ("**/*.md", "**/*.mdx", "**/*.markdown", "**/*.qmd", "**/*.html", "**/*.htm", "**/*.adoc",
                   "**/*.asciidoc", "**/*.rst")
_COMMON_KEYS = {"name", "kind", "cron", "metadata", "metadata_rules"}
SOURCE_KEYS = {
    "local": _COMMON_KEYS | {"path", "include", "exclude", "base_url", "url_template", "url_rules", "url_paths",
                             "front_matter_urls", "index_drafts", "asciidoc_attributes", "heading_anchors", "max_bytes"},
    "web": _COMMON_KEYS | {"seed_urls", "sitemaps", "allow_patterns", "deny_patterns", "allowed_domains",
                           "max_pages", "max_depth", "delay_seconds", "timeout_seconds", "max_retries",
                           "max_bytes", "error_threshold", "max_removed_share", "user_agent", "respect_robots", "content_selector",
                           "base_url"},
    "git": _COMMON_KEYS | {"repo", "branch", "subpath", "include", "exclude", "url_template", "url_rules",
                           "url_paths", "front_matter_urls", "index_drafts",
                           "token_env", "asciidoc_attributes", "heading_anchors", "max_bytes", "timeout_seconds"},
}
KINDS = tuple(SOURCE_KEYS)
_REQUIRED = {"local": "path", "web": "seed_urls", "git": "repo"}


def _root(info: ValidationInfo) -> Path:
    return (info.context or {}).get("root") or Path.cwd()


class SourceConfig(_Shape):
    """One documentation source. Which keys apply depends on ``kind`` (see ``SOURCE_KEYS``)."""

    name: str
    kind: Literal["local", "web", "git"]
    path: Path | None = None  # local
    include: Strings = DEFAULT_INCLUDE  # local, git
    exclude: Strings = ()  # local, git
    base_url: str | None = None  # local, web
    url_template: str | None = None  # local, git
    url_rules: Annotated[tuple[UrlRule, ...], BeforeValidator(_tuple)] = ()  # local, git
    # local, git: a Markdown page's permalink, url, slug or id front matter sets its URL under url_template
    front_matter_urls: bool = True
    # local, git: whose rules turn a file's path into its URL under url_template: plain (as written), docusaurus
    # (number prefixes left out, guides/guides.md is guides/), hugo (section/_index.md is section/, lowercase);
    # sources.local.URL_PATHS
    url_paths: Literal["plain", "docusaurus", "hugo"] = "plain"
    # local, git: index a Markdown page its front matter marks as a draft (draft: true, published: false)
    index_drafts: bool = False
    cron: str = "0 4 * * *"
    metadata: dict[str, Any] = Field(default_factory=dict)
    metadata_rules: Annotated[tuple[MetadataRule, ...], BeforeValidator(_tuple)] = ()
    # AsciiDoc attributes set above every .adoc file (e.g. the site's idprefix/idseparator, so
    # section anchors match the published site)
    asciidoc_attributes: dict[str, str] = Field(default_factory=dict)
    # how the site slugs a Markdown heading into its anchor: github (github-slugger), python-markdown
    # (MkDocs) or pymdownx (MkDocs with pymdownx.slugs.slugify, case: lower); parsing.slugs.ANCHOR_STYLES
    heading_anchors: Literal["github", "python-markdown", "pymdownx", "vitepress"] = "github"
    # web
    seed_urls: HttpUrls = ()
    sitemaps: Literal["auto", "off"] | HttpUrls = "auto"  # "auto" | "off" | explicit sitemap URLs
    allow_patterns: Regexes = ()
    deny_patterns: Regexes = ()
    allowed_domains: Strings = ()  # default: the seeds' hosts
    max_pages: int = Field(1000, ge=1)
    max_depth: int = Field(10, ge=0)
    delay_seconds: float = Field(0.2, ge=0.0, le=MAX_SECONDS)
    timeout_seconds: Seconds = 15.0  # web: one request; git: one git command (GIT_TIMEOUT_SECONDS by default)
    max_retries: int = Field(3, ge=0)
    max_bytes: int = Field(5_000_000, ge=1, le=MAX_BYTES)
    error_threshold: Probability = 0.5  # share of failed fetches over which a crawl counts as stopped early
    max_removed_share: Probability = 0.5  # share of indexed pages a crawl may remove; more: it removes none
    user_agent: HeaderText = "docs-rag-pipeline/0.1 (+https://pypi.org/project/docs-rag-pipeline/)"
    respect_robots: bool = True
    content_selector: CssSelector | None = None
    # git
    repo: str | None = None
    branch: str | None = None
    subpath: str = ""
    token_env: EnvName | None = None  # name of the environment variable holding an access token

    @model_validator(mode="before")
    @classmethod
    def _kind_keys(cls, data: Any) -> Any:
        """name and kind first, then the keys of that kind (a None value means: the default)."""
        if not isinstance(data, dict):
            return data
        for required in ("name", "kind"):
            if required not in data:
                raise _fail("missing; every source needs a name and a kind", required)
        name, kind = data["name"], data["kind"]
        if isinstance(name, str) and not SOURCE_NAME_RE.fullmatch(name):
            # say the length too: a long name made of the right characters must learn what is wrong with it
            length = f" ({len(name)} characters)" if len(name) > SOURCE_NAME_MAX else ""
            raise _fail(f"{name!r} is not a valid source name{length}; use at most {SOURCE_NAME_MAX} lowercase "
                        "letters, digits, '-' and '_', starting with a letter or digit (it becomes a Dagster "
                        "partition key)", "name")
        if not isinstance(kind, str) or kind not in KINDS:
            return data  # the Literal says which kinds exist
        for k in data:
            if k not in SOURCE_KEYS[kind]:
                raise _fail(f"unknown key for a {kind} source; allowed keys: {', '.join(sorted(SOURCE_KEYS[kind]))}",
                            str(k))
        if not data.get(_REQUIRED[kind]):
            raise _fail(f"missing; {_MISSING_HINTS[_REQUIRED[kind]]}", _REQUIRED[kind])
        given = {k: v for k, v in data.items() if v is not None}
        if kind == "git":  # a git source's timeout_seconds bounds one git command, not one HTTP request
            given.setdefault("timeout_seconds", GIT_TIMEOUT_SECONDS)
        return given

    @field_validator("path", mode="before")
    @classmethod
    def _folder(cls, v: Any, info: ValidationInfo) -> Any:
        if isinstance(v, Path):
            return v
        if not isinstance(v, str):
            raise _fail(f"expected a folder path (a string), got {type(v).__name__} {v!r}")
        path = _expand_home(v)
        # whether the folder exists is checked when the source is scanned (LocalSource.scan), so
        # one missing folder fails that source's refresh, not every command (ask, search, serve)
        return path if path.is_absolute() else _root(info) / path

    @field_validator("repo")
    @classmethod
    def _repo(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v and "://" in v and v.lstrip().startswith("-"):
            # git would read it as an option (``--upload-pack=<command>`` runs the command); a path
            # starting with '-' is made absolute below
            raise _fail(f"{v!r} starts with '-', which git reads as an option, not a repository; give the "
                        "repository's URL (https://…, ssh://…)")
        if v and "://" not in v and not v.startswith("git@"):
            repo = _expand_home(v)
            return str(repo if repo.is_absolute() else (_root(info) / repo).resolve())
        return v

    @field_validator("include", "exclude")
    @classmethod
    def _no_negation(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        # fnmatch reads a leading '!' as a literal character: gitignore's negation would match nothing
        for pattern in v:
            if pattern.startswith("!"):
                raise _fail(f"{pattern!r} starts with '!', but patterns have no negation (a '!' would match only "
                            f"names starting with it); to leave those files out, put {pattern[1:]!r} in exclude")
        return v

    @field_validator("allowed_domains")
    @classmethod
    def _lower(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(d.lower() for d in v)

    @field_validator("sitemaps", mode="before")
    @classmethod
    def _sitemaps(cls, v: Any) -> Any:
        if isinstance(v, bool):  # YAML 1.1 reads a bare off/no/false as False, on/yes/true as True
            return "auto" if v else "off"
        if isinstance(v, str) and v not in ("auto", "off"):
            raise _fail("use 'auto', 'off' or a list of sitemap URLs")
        return tuple(v) if isinstance(v, list) else v

    @field_validator("cron")
    @classmethod
    def _cron(cls, v: str) -> str:
        from croniter import CroniterError, croniter

        example = "minute hour day-of-month month day-of-week, e.g. '0 4 * * *' (daily at 04:00)"
        if not CRON_RE.match(v.strip()):
            raise _fail(f"{v!r} is not a 5-field cron expression: {example}")
        if not croniter.is_valid(v.strip()):
            raise _fail(f"{v!r} is not a valid cron expression (a field out of range, or a step of 0?): {example}")
        try:
            croniter(v.strip(), datetime(2000, 1, 1), max_years_between_matches=8).get_next(datetime)
        except CroniterError:
            raise _fail(f"{v!r} never fires (no such date, e.g. 31 February): {example}") from None
        return v.strip()

    @field_validator("url_template")
    @classmethod
    def _template(cls, v: str | None) -> str | None:
        if v is not None and "{path}" not in v:
            raise _fail("must contain {path}, e.g. 'https://example.org/{path}/'")
        return v

    @field_validator("asciidoc_attributes", mode="before")
    @classmethod
    def _attributes(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        for k, value in v.items():
            if not isinstance(k, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]*", k):
                raise _fail(f"{k!r} is not an attribute name")
            if value is not None and not isinstance(value, (str, int, float, bool)):
                raise _fail(f"expected a string, number or true/false, got {type(value).__name__}", k)
        return {k: "" if value is None else str(value) for k, value in v.items()}

    @model_validator(mode="after")
    def _consistent(self) -> SourceConfig:
        if self.kind == "web" and self.base_url:
            _http_url_at(self.base_url, "base_url")
        if self.base_url and self.url_template:
            raise _fail("set either base_url or url_template, not both")
        if self.url_paths != "plain" and not self.url_template:
            # it says how a file's path becomes the template's {path}: with base_url (or only url_rules) it did
            # nothing, and a Hugo site was cited at …/section/_index.md without a word
            raise _fail(f"{self.url_paths!r} applies only under a url_template (it turns a file's path into "
                        "the template's {path}); base_url and url_rules take the path as written: set url_template, "
                        "e.g. 'https://docs.example.org/{path}/', instead of base_url", "url_paths")
        return self


def _http_url_at(value: str, sub: str) -> None:
    try:
        _http_url(value)
    except PydanticCustomError as exc:
        raise _fail(exc.context["message"], sub) from None


_TOP = ("storage", "embedding", "llm", "chunking", "retrieval", "sources", "api", "eval")


class StorageConfig(_Shape):
    """``storage:`` as a mapping; ``storage: PATH`` is ``{path: PATH}``."""

    path: str = "data"
    keep_versions_days: float = Field(7.0, ge=0, le=MAX_KEEP_DAYS)  # old chunks table versions stay restorable this long


class Config(_Shape):
    _keys: ClassVar[tuple[str, ...] | None] = _TOP

    storage: str = Field(default="data", validate_default=True)  # relative: to the config file
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    llm: LlmConfig = Field(default_factory=LlmConfig)
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    sources: tuple[SourceConfig, ...] = ()
    path: Path | None = None  # the file it came from
    api: ApiConfig = Field(default_factory=ApiConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    #: from ``storage.keep_versions_days`` (``storage`` keeps the path, as with ``storage: PATH``)
    keep_versions_days: float = 7.0

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        return data  # checked by _sections, before it turns storage: {…} into two fields

    @model_validator(mode="before")
    @classmethod
    def _sections(cls, data: Any) -> Any:
        """Unknown top-level keys are errors; an empty section (``llm:`` with nothing under it) is the
        defaults; sources: a list; ``storage: {path, keep_versions_days}`` → ``storage`` (the path) and
        ``keep_versions_days``."""
        if not isinstance(data, dict):
            return data
        for k in data:
            if k not in _TOP:
                raise _fail(f"unknown key; allowed top-level keys: {', '.join(_TOP)}", str(k))
            if not isinstance(data[k], dict) and _has_nul(data[k]):  # a section checks its own keys
                raise _fail("the value contains a NUL character (\\0); remove it", str(k))
        out = {k: _tuple(v) if k == "sources" else v for k, v in data.items() if not (v is None and k in _TOP)}
        st_raw = out.get("storage")
        if st_raw is not None and not isinstance(st_raw, (str, dict)):
            raise _fail(f"expected a string (a folder or LanceDB URI) or a mapping {{path, keep_versions_days}}, "
                        f"got {type(st_raw).__name__} {st_raw!r}", "storage")
        if isinstance(st_raw, dict):
            try:
                st = StorageConfig.model_validate(out["storage"])
            except ValidationError as exc:
                path, message = _message(exc.errors(include_url=False)[0])
                raise _fail(message, f"storage.{path}" if path else "storage") from None
            out.update(storage=st.path, keep_versions_days=st.keep_versions_days)
        return out

    @field_validator("storage")
    @classmethod
    def _storage(cls, v: str, info: ValidationInfo) -> str:
        bad = next((c for c in v if ord(c) < 32 or ord(c) == 127), None)
        if bad is not None:
            # LanceDB reads the folder as a URL path, where a newline or tab cannot be
            raise _fail(f"{v!r} holds the control character {bad!r} (a newline, a tab…), which the index "
                        "cannot have in its path; remove it (check the quoting of the YAML value)")
        if "://" in v:
            _object_store_env(v)
            return v
        p = _expand_home(v)
        path = str(p if p.is_absolute() else _root(info) / p)
        if byte := ESCAPED_BYTE.search(path):
            # a folder name that is not UTF-8 (a Latin-1 name; Python holds its bytes as lone surrogates):
            # LanceDB takes the path as UTF-8 text, so every read and write of the index would fail
            where = "" if p.is_absolute() else " (a relative storage is inside the config file's folder)"
            raise _fail(f"'{shown_path(path)}' is not UTF-8 (the byte 0x{ord(byte.group()) - 0xDC00:02x} in a "
                        "folder name) and LanceDB needs a UTF-8 path: give that folder a UTF-8 name, or point storage "
                        "at a folder whose path is UTF-8" + where)
        return path

    @model_validator(mode="after")
    def _unique_names(self) -> Config:
        seen: dict[str, int] = {}  # dagster_name -> index of the first source with it
        for i, s in enumerate(self.sources):
            first = seen.setdefault(dagster_name(s.name), i)
            if first == i:
                continue
            if self.sources[first].name == s.name:
                raise _fail(f"duplicate source name {s.name!r}; source names must be unique", f"sources[{i}].name")
            raise _fail(f"{s.name!r} clashes with source {self.sources[first].name!r} (sources[{first}]): Dagster "
                        "names such as the refresh schedule write '-' as '_', so both would be "
                        f"refresh_{dagster_name(s.name)}; rename one of them", f"sources[{i}].name")
        return self

    def source(self, name: str) -> SourceConfig:
        for s in self.sources:
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.sources) or "none"
        raise ConfigError(f"unknown source {name!r}; configured sources: {known}")

    @property
    def storage_is_local(self) -> bool:
        return "://" not in self.storage

    @property
    def storage_path(self) -> Path:
        """Local folder for caches and state: the storage folder, or for a URI
        ``$DOCS_RAG_CACHE_DIR/<uri slug>`` (default ``~/.cache/docs_rag_pipeline/<uri slug>``), one folder
        per URI so that two buckets never share a source's state (a web manifest, a git clone) or a lock."""
        if self.storage_is_local:
            return Path(self.storage)
        base = Path(os.environ.get("DOCS_RAG_CACHE_DIR") or Path.home() / ".cache" / "docs_rag_pipeline")
        return base.expanduser() / (re.sub(r"[^A-Za-z0-9._-]+", "_", self.storage.rstrip("/")).strip("_") or "uri")

    @property
    def lancedb_uri(self) -> str:
        return str(Path(self.storage) / "lancedb") if self.storage_is_local else self.storage.rstrip("/") + "/lancedb"


#: env vars that give S3 credentials without a key pair in the environment
_AWS_CREDENTIAL_SOURCES = ("AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                           "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")


#: an S3 bucket name (the rules of AWS and of S3-compatible servers such as MinIO)
_S3_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
#: what a plain bucket or prefix of a storage URI cannot hold: whitespace and characters that URLs or
#: object stores do not take as they are
_NOT_PLAIN = re.compile(r'[\s\\"<>|#^`{}\[\]]')


def _object_store_env(uri: str) -> None:
    """An ``s3://`` storage is reached with credentials and endpoint from the environment (LanceDB's
    object_store reads ``AWS_*``), never from the config file: say what is missing, before any work."""
    scheme, _, rest = uri.partition("://")
    bucket, _, prefix = rest.partition("/")
    if not bucket:  # s3:///x: an empty bucket (a template variable that came out empty)
        raise _fail(f"{uri!r} names no bucket; write {scheme}://BUCKET/PREFIX")
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme):  # ' s3://bkt': a stray space before the scheme
        raise _fail(f"{uri!r}: {scheme + '://'!r} is not a URI scheme; write s3://BUCKET/PREFIX without spaces "
                    "(check the quoting or template of the value)")
    s3 = scheme.lower() in ("s3", "s3+ddb")
    name = bucket.partition("?")[0] if s3 else bucket  # s3+ddb://bucket?ddbTableName=…
    if (not _S3_BUCKET.fullmatch(name) or ".." in name) if s3 else bool(_NOT_PLAIN.search(name)):
        # s3:// bkt/team (a stray space) was taken by LanceDB as a local folder ./s3:/ bkt/team under the cwd
        rule = ("3 to 63 lowercase letters, digits, '.' and '-', beginning and ending with a letter or digit"
                if s3 else "no spaces or characters such as \\ \" < > | # ^ ` { } [ ]")
        raise _fail(f"{uri!r}: the bucket {name!r} is not a valid bucket name ({rule}); write "
                    f"{scheme}://BUCKET/PREFIX with the bucket's name, without spaces (check the quoting or "
                    "template of the value)")
    if bad := _NOT_PLAIN.search(prefix):
        raise _fail(f"{uri!r}: the prefix {prefix!r} holds {bad.group()!r}; write the prefix plainly, without "
                    "spaces, e.g. s3://BUCKET/team/docs (check the quoting or template of the value)")
    if any(part in ("", ".", "..") for part in prefix.rstrip("/").split("/")) and prefix.rstrip("/"):
        # s3://b/a/../x wrote to b/x, with local state (locks, Dagster home) of its own spelling
        raise _fail(f"{uri!r}: a path part of the prefix is empty, '.' or '..'; write the prefix plainly, "
                    "e.g. s3://BUCKET/team/docs")
    if scheme.lower() not in ("s3", "s3+ddb"):
        return  # gs://, az://, db:// …: their own env vars, checked by LanceDB when it connects
    env = os.environ
    if not (env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY")) and not any(
            env.get(k) for k in _AWS_CREDENTIAL_SOURCES):
        raise _fail(f"{uri!r} needs S3 credentials in the environment, not in this file: set AWS_ACCESS_KEY_ID "
                    "and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, or a web identity / container role), and "
                    "AWS_REGION; for an S3-compatible server also AWS_ENDPOINT_URL (docs/deploy.md)")
    endpoint = env.get("AWS_ENDPOINT_URL") or env.get("AWS_ENDPOINT") or ""
    if endpoint.lower().startswith("http://") and env.get("AWS_ALLOW_HTTP", "").lower() not in ("1", "true"):
        raise _fail(f"the S3 endpoint {without_userinfo(endpoint)!r} is plain http: set AWS_ALLOW_HTTP=true to allow it, "
                    "or use an https:// endpoint")


# ---- pydantic's errors in this project's words: "<file>: <key path>: <problem>; <fix>" ----------

_TYPE_WORDS = {"int_type": "an integer", "int_parsing": "an integer", "float_type": "a number",
               "float_parsing": "a number", "string_type": "a string", "bool_type": "true or false",
               "list_type": "a list", "tuple_type": "a list", "dict_type": "a mapping", "model_type": "a mapping",
               "model_attributes_type": "a mapping", "path_type": "a string"}
_BOUNDS = {"greater_than_equal": ("≥", "ge"), "greater_than": (">", "gt"), "less_than_equal": ("≤", "le"),
           "less_than": ("<", "lt")}


def _key_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "tuple[", "literal[")) or str(part) in ("str", "int", "float"):
            continue  # a union or validator branch, not a key
        else:
            out += f".{part}" if out else str(part)
    return out


def _message(e: dict[str, Any]) -> tuple[str, str]:
    """(key path, problem and fix) of one pydantic error."""
    loc, kind, ctx, value = tuple(e["loc"]), e["type"], e.get("ctx") or {}, e.get("input")
    path = _key_path(loc)
    sub = ctx.get("sub")
    if sub is not None and str(sub).startswith("sources["):
        path = str(sub)
    elif sub is not None:
        path = f"{path}[{sub}]" if str(sub).startswith("'") else f"{path}.{sub}" if path else str(sub)
    if kind == "config":
        return path, e["msg"]
    if kind == "missing":
        hint = _MISSING_HINTS.get(str(loc[-1]) if loc else "")
        return path, "missing" + (f"; {hint}" if hint else "; add it")
    if kind in _TYPE_WORDS:
        return path, f"expected {_TYPE_WORDS[kind]}, got {type(value).__name__} {value!r}"
    if kind in _BOUNDS:
        sign, key = _BOUNDS[kind]
        bound = ctx[key]
        bound_text = str(int(bound)) if isinstance(bound, (int, float)) and bound == int(bound) else f"{bound:g}"
        return path, f"must be {sign} {bound_text}, got {value!r}"
    if kind == "finite_number":
        return path, f"must be a finite number, got {value!r}; write a number such as 1 or 0.5"
    if kind == "literal_error":
        what = str(loc[-1]) if loc and loc[-1] in ("provider", "kind") else "value"
        return path, f"unknown {what} {value!r}; use {ctx.get('expected')}"
    if kind == "extra_forbidden":
        return path, "unknown key"
    return path, e["msg"]


def _yaml12_number(text: str) -> str:
    """``1e3`` (a number in YAML 1.2 and JSON, text to PyYAML's YAML 1.1) as YAML 1.1 reads a number:
    ``1000 or 1.0e+3``."""
    x = float(text)
    mantissa, _, exp = f"{x:e}".partition("e")
    mantissa = mantissa.rstrip("0")
    sci = f"{mantissa}0" if mantissa.endswith(".") else mantissa
    sci += f"e{'-' if int(exp) < 0 else '+'}{abs(int(exp))}"
    return f"{int(x)} or {sci}" if x.is_integer() and abs(x) < 1e15 else sci


def _spelling_hint(e: dict[str, Any], path: str, spellings: dict[str, str]) -> str:
    """Where YAML 1.1 read a value otherwise than it looks (``012`` is the int 10, ``1_0`` is 10, ``1e3`` is
    text): the value as written and how to write it."""
    kind, value = e["type"], e.get("input")
    if kind == "string_type" and isinstance(value, (int, float)) and not isinstance(value, bool) and path in spellings:
        written = spellings[path]
        return f" (YAML reads {written} as a number); quote it: '{written}'"
    if kind in ("int_type", "float_type", "int_parsing", "float_parsing") and isinstance(value, str) \
            and spellings.get(path) == value:  # unquoted: a quoted '32' is text as the file says
        try:
            number = float(value.replace("_", ""))
        except ValueError:
            return ""
        if not math.isfinite(number):
            return ""
        if kind.startswith("int"):
            return f" (YAML 1.1 reads {value} as text, not a number); write {int(number)}" if number.is_integer() else ""
        return f" (YAML 1.1 reads {value} as text, not a number); write {_yaml12_number(value.replace('_', ''))}"
    return ""


def _config_error(exc: ValidationError, where: str, spellings: dict[str, str] | None = None) -> ConfigError:
    errors = exc.errors(include_url=False)
    # a union (sitemaps: 'auto' | 'off' | URLs) reports each branch: the project's own message is the one
    e = next((x for x in errors if x["type"] == "config"), errors[0])
    path, message = _message(e)
    if e["type"] != "config":
        message += _spelling_hint(e, path, spellings or {})
    return ConfigError(f"{where}: {path or '(top level)'}: {message}")


def parse_config(raw: Any, *, where: str = DEFAULT_CONFIG_FILE, root: Path | None = None,
                 spellings: dict[str, str] | None = None) -> Config:
    """Validate a parsed YAML document into a :class:`Config`. ``spellings``: key path → a number as the
    file writes it (yaml_data.load_yaml), for messages."""
    try:
        return Config.model_validate({} if raw is None else raw, context={"root": root or Path.cwd()})
    except ValidationError as exc:
        raise _config_error(exc, where, spellings) from None


def given_config(path: Any, *, name: str = "config") -> str | os.PathLike[str] | None:
    """``path`` as a caller named a config file: None (the default file), or a path. An empty one is an
    error, not the default: ``--config "$CFG"`` with ``CFG`` unset read ./docs_rag.yaml (or
    ``DOCS_RAG_CONFIG``'s), another config than the one meant, without a word."""
    if path is None:
        return None
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"{name}: must be a path to the YAML file (a str or Path), not {type(path).__name__}")
    if not os.fspath(path).strip():
        raise ConfigError(f"{name}: the path is empty; name the YAML file, or leave {name} out to use "
                          "$DOCS_RAG_CONFIG or ./docs_rag.yaml")
    return path


def config_name(path: str | os.PathLike[str] | None = None) -> Path:
    """The config file as named (``path``, else ``DOCS_RAG_CONFIG``, else ./docs_rag.yaml), made absolute
    but with symlinks left in place: whoever keeps the name (the code location, a server) reads through a
    link as it points at each read, as a release switch (``current -> v2``) expects."""
    return Path(os.path.abspath(Path(path or os.environ.get("DOCS_RAG_CONFIG") or DEFAULT_CONFIG_FILE).expanduser()))


def config_path() -> Path:
    """The config file now (:func:`config_name` with its links followed)."""
    return config_name().resolve()


def load_config(path: str | os.PathLike[str] | None = None, *, data: bytes | None = None) -> Config:
    """Load and validate the config file (``DOCS_RAG_CONFIG``, else ``./docs_rag.yaml``). ``data``: the
    file's bytes as read before (a run's copy of it, :func:`copy_config`); messages still name the file,
    and relative paths still start at its folder."""
    p = Path(path).expanduser().resolve() if path else config_path()
    if data is None:
        if p.exists() and not p.is_file():
            kind = "a folder" if p.is_dir() else "not a regular file (a pipe, a device, a socket)"
            raise ConfigError(f"config file {str(p)!r} is {kind}; point --config or DOCS_RAG_CONFIG at the YAML file")
        if not p.is_file():
            raise ConfigError(f"config file {str(p)!r} not found; create it (see docs/configuration.md) "
                              "or point DOCS_RAG_CONFIG at one")
        data = p.read_bytes()
    from .yaml_data import YamlDuplicateKey, load_yaml

    try:
        spellings: dict[str, str] = {}
        raw = load_yaml(data.decode("utf-8"), unique_keys=True, spellings=spellings)
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{p}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} on line {line}); "
                          "save the file as UTF-8") from None
    except YamlDuplicateKey as exc:  # a second `sources:` (a paste or merge) replaced the first, silently
        raise ConfigError(f"{shown_path(p)}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {exc}") from exc
    cfg = parse_config(raw, where=shown_path(p), root=p.parent, spellings=spellings)
    return cfg.model_copy(update={"path": p})


def copy_config(path: str | os.PathLike[str] | None, copy: Path) -> bytes:
    """The config file's bytes as ``copy`` holds them; when there is no ``copy`` yet, the file's bytes now,
    written to ``copy`` first. The first of several processes to write ``copy`` wins (a hard link of a
    finished temporary file: never a half-written copy) and every other reads the winner's. A run's steps
    read their config this way (``defs/resources.py``), so one run never mixes two versions of the file."""
    try:
        return copy.read_bytes()
    except FileNotFoundError:
        pass
    p = Path(path).expanduser().resolve() if path else config_path()
    if not p.is_file():
        load_config(p)  # raises the ConfigError that says what is wrong with the path
    data = p.read_bytes()
    copy.parent.mkdir(parents=True, exist_ok=True)
    tmp = copy.with_name(f".{copy.name}.{os.getpid()}.tmp")
    # with the file's own permissions (never writable by others): a config kept private (0600: a password
    # in a git source's `repo`) stays private in its copies, which sit in Dagster's storage folder
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, p.stat().st_mode & 0o755)
    try:
        os.link(tmp, copy)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return copy.read_bytes()


class StorageMissing(FileNotFoundError):
    """The local storage folder is not there: nothing was ingested into it yet, or it was moved or
    deleted. Only ``docs-rag ingest`` creates it; whatever only reads the index says so instead."""

    def __str__(self) -> str:
        from .files import in_the_way

        way = in_the_way(Path(self.filename)) if self.filename else None
        if way:  # a file or a link to nothing in its place: an ingest would not create it either
            return f"storage: {self.filename} is no folder: {way[0]}; {way[1]}, or point `storage` at the index folder"
        return (f"storage: {self.filename} does not exist (nothing was ingested there yet, or the folder was "
                "moved or deleted); `docs-rag ingest` creates it, or point `storage` at the index folder")


class NothingIndexed(StorageMissing):
    """The storage folder is there but holds no index for the configured embedding model: nothing was
    ingested there yet (a fresh checkout ships an empty ``data/``), or only with another model (each
    model has a table of its own). A search there found nothing and ``ask`` said the docs do not
    cover the question, which they may well do."""

    def __init__(self, folder: str, table: str, others: list[str] | None = None) -> None:
        super().__init__(errno.ENOENT, "nothing is indexed there", folder)
        self.table, self.others = table, sorted(others or [])

    def __str__(self) -> str:
        if self.others:
            return (f"storage: {self.filename} holds no index for the configured embedding model (no table "
                    f"{self.table}; it holds {', '.join(self.others)}, made with another model or by an older docs-rag): "
                    "run `docs-rag ingest` to index the sources with this model and this docs-rag, or set "
                    "`embedding` back to the model they were indexed with")
        return (f"storage: {self.filename} holds no index yet (nothing was ingested there); run `docs-rag ingest` "
                "first, or point `storage` at the index folder")


class SourceNotIndexed(NothingIndexed):
    """A search or question limited to sources (``source``, or ``source`` in ``filters``) none of which
    was ever ingested into this storage: a source just added to the config. Its empty result read as
    "no results" and its question was refused as one the docs don't cover, which they may well do."""

    def __init__(self, folder: str, table: str, sources: list[str]) -> None:
        super().__init__(folder, table)
        self.sources = list(sources)

    @property
    def names(self) -> str:
        """The sources, quoted: ``'a', 'b'``."""
        return ", ".join(repr(n) for n in self.sources)

    @property
    def fix(self) -> str:
        """The commands that index them."""
        return " and ".join(f"`docs-rag ingest --source {n}`" for n in self.sources)

    def __str__(self) -> str:
        return (f"{'source' if len(self.sources) == 1 else 'sources'} {self.names}: nothing is indexed yet (never "
                f"ingested into {self.filename}); run {self.fix} first")


def require_storage_folder(folder: Path) -> None:
    """:class:`StorageMissing` (a FileNotFoundError) when the storage folder is missing. A reader (a
    search, a server, a question log) never creates it (``docs-rag ingest`` does): one that did while an
    operator swapped folders (``mv data data.old; mv data.new data``) made the second ``mv`` move the
    new index into an empty ``data/``."""
    if not folder.is_dir():
        raise StorageMissing(errno.ENOENT, "the storage folder is missing (moved or deleted?); "
                                           "`docs-rag ingest` creates it", str(folder))
