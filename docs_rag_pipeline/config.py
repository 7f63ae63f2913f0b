"""The typed configuration: one YAML file, validated on load, before any work starts.

``load_config()`` reads ``DOCS_RAG_CONFIG`` (or ``docs_rag.yaml`` in the working directory).
Every error names the key path and how to fix it.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

DEFAULT_CONFIG_FILE = "docs_rag.yaml"
SOURCE_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
CRON_RE = re.compile(r"^(\S+\s+){4}\S+$")


class ConfigError(ValueError):
    """A configuration problem, with the key path and the fix in the message."""


@dataclass(frozen=True, slots=True)
class EmbeddingConfig:
    provider: str = "local"  # local | openai
    model: str = "all-MiniLM-L6-v2"
    batch_size: int = 32
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    dimensions: int | None = None  # openai: vector size (asked of the server when unset)
    max_tokens: int | None = None  # openai: the model's window, in tokens
    timeout_seconds: float = 30.0
    max_retries: int = 3


@dataclass(frozen=True, slots=True)
class LlmConfig:
    provider: str = "none"  # none | openai
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    timeout_seconds: float = 30.0
    max_tokens: int = 512  # of the generated answer
    context_tokens: int = 1800  # budget for the retrieved chunks in the prompt
    uncited: str = "refuse"  # a sentence without a citation: refuse the answer (strict) or drop it
    min_support: float = 0.5  # a citation whose chunk supports its sentence less than this is flagged


@dataclass(frozen=True, slots=True)
class ChunkingConfig:
    target_tokens: int | None = None  # None: follow the embedding model's window
    overlap_tokens: int = 32


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    top_k: int = 5
    candidates: int = 40  # per retriever, before fusion
    rrf_k: int = 60
    nprobes: int = 24  # IVF partitions probed when the table has an ANN index (large tables)
    # refusal: a question is answered only when the best retrieved chunk clears both gates
    # calibrated with `docs-rag eval` on eval/project-docs.jsonl (its report's "calibration")
    min_similarity: float = 0.25
    min_term_coverage: float = 0.6
    confident_similarity: float = 0.45
    # a question naming a term the indexed docs never use (e.g. a product they don't mention) is
    # refused unless a chunk is at least this similar
    unknown_term_similarity: float = 0.7


@dataclass(frozen=True, slots=True)
class EvalConfig:
    """Thresholds of the eval_scores asset checks (a check fails below them)."""

    top_k: int = 5
    min_recall_at_5: float = 0.8
    min_refusal_accuracy: float = 0.7
    min_citation_precision: float = 0.95


@dataclass(frozen=True, slots=True)
class ApiConfig:
    """The HTTP API (``docs-rag serve``): auth, limits, and where Dagster's GraphQL API is."""

    token_env: str | None = None  # env var holding the bearer token for every route but /health; unset: no auth
    admin_token_env: str | None = None  # env var holding the admin token (POST /sources/<name>/refresh)
    rate_limit_per_minute: int = 60  # per client (token, else remote address); 0: no limit
    max_question_chars: int = 2000
    max_top_k: int = 8
    dagster_graphql_url: str = "http://127.0.0.1:3000/graphql"


@dataclass(frozen=True, slots=True)
class UrlRule:
    """``match``: a regex on the file's path; ``url``: its replacement (``\\1`` …), full URL."""

    match: str
    url: str


@dataclass(frozen=True, slots=True)
class MetadataRule:
    """Derive one metadata key per page: from path globs (``values``: glob → value, first match
    wins), a regex on the path (``pattern``: the value is group 1) or a frontmatter key
    (``frontmatter``); else ``default``. A filter on ``key`` also matches ``default`` pages
    (shared pages, e.g. ``common``)."""

    key: str
    values: tuple[tuple[str, str], ...] = ()
    pattern: str | None = None
    frontmatter: str | None = None
    default: str | None = None


DEFAULT_INCLUDE = ("**/*.md", "**/*.mdx", "**/*.markdown", "**/*.html", "**/*.htm", "**/*.adoc",
                   "**/*.asciidoc", "**/*.rst")


@dataclass(frozen=True, slots=True)
class SourceConfig:
    """One documentation source. Which keys apply depends on ``kind`` (see ``SOURCE_KEYS``)."""

    name: str
    kind: str  # local | web | git
    path: Path | None = None  # local
    include: tuple[str, ...] = DEFAULT_INCLUDE  # local, git
    exclude: tuple[str, ...] = ()  # local, git
    base_url: str | None = None  # local, web
    url_template: str | None = None  # local, git
    url_rules: tuple[UrlRule, ...] = ()  # local, git
    cron: str = "0 4 * * *"
    metadata: dict[str, Any] = field(default_factory=dict)
    metadata_rules: tuple[MetadataRule, ...] = ()
    # AsciiDoc attributes set above every .adoc file (e.g. the site's idprefix/idseparator, so
    # section anchors match the published site)
    asciidoc_attributes: dict[str, str] = field(default_factory=dict)
    # web
    seed_urls: tuple[str, ...] = ()
    sitemaps: str | tuple[str, ...] = "auto"  # "auto" | "off" | explicit sitemap URLs
    allow_patterns: tuple[str, ...] = ()
    deny_patterns: tuple[str, ...] = ()
    allowed_domains: tuple[str, ...] = ()  # default: the seeds' hosts
    max_pages: int = 1000
    max_depth: int = 10
    delay_seconds: float = 0.2
    timeout_seconds: float = 15.0
    max_retries: int = 3
    max_bytes: int = 5_000_000
    error_threshold: float = 0.5  # share of failed fetches over which a crawl counts as stopped early
    user_agent: str = "docs-rag-pipeline/0.1 (+https://pypi.org/project/docs-rag-pipeline/)"
    respect_robots: bool = True
    content_selector: str | None = None
    # git
    repo: str | None = None
    branch: str | None = None
    subpath: str = ""
    token_env: str | None = None  # name of the environment variable holding an access token


@dataclass(frozen=True, slots=True)
class Config:
    storage: str
    embedding: EmbeddingConfig
    llm: LlmConfig
    chunking: ChunkingConfig
    retrieval: RetrievalConfig
    sources: tuple[SourceConfig, ...]
    path: Path | None = None  # the file it came from
    api: ApiConfig = field(default_factory=ApiConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    keep_versions_days: float = 7.0  # old chunks table versions stay restorable this long

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
        """Local folder for caches and state (the storage folder, or a local cache for URIs)."""
        if self.storage_is_local:
            return Path(self.storage)
        return Path(os.environ.get("DOCS_RAG_CACHE_DIR", Path.home() / ".cache" / "docs_rag_pipeline"))

    @property
    def lancedb_uri(self) -> str:
        return str(Path(self.storage) / "lancedb") if self.storage_is_local else self.storage.rstrip("/") + "/lancedb"


def _type_name(t: Any) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false",
            list: "a list", dict: "a mapping"}.get(t, str(t))


def _check(value: Any, expected: type | tuple[type, ...], key: str, where: str) -> Any:
    types = expected if isinstance(expected, tuple) else (expected,)
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    if float in types and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        want = " or ".join(_type_name(t) for t in types)
        raise ConfigError(f"{where}: {key}: expected {want}, got {type(value).__name__} {value!r}")
    return value


def _section(raw: Any, cls: type, key: str, where: str, spec: dict[str, Any]) -> Any:
    if raw is None:
        return cls()
    _check(raw, dict, key, where)
    allowed = {f.name for f in fields(cls)}
    for k in raw:
        if k not in allowed:
            raise ConfigError(f"{where}: {key}.{k}: unknown key; allowed keys: {', '.join(sorted(allowed))}")
    values = {}
    for k, v in raw.items():
        if v is None and k in spec and spec[k][1]:
            values[k] = None
            continue
        values[k] = _check(v, spec[k][0], f"{key}.{k}", where)
        if spec[k][0] == (int,) and values[k] < 0:
            raise ConfigError(f"{where}: {key}.{k}: must be ≥ 0, got {v}")
    return cls(**values)


_EMBEDDING = {"provider": ((str,), False), "model": ((str,), False), "batch_size": ((int,), False),
              "base_url": ((str,), True), "api_key_env": ((str,), False), "dimensions": ((int,), True),
              "max_tokens": ((int,), True), "timeout_seconds": ((float,), False), "max_retries": ((int,), False)}
_LLM = {"provider": ((str,), False), "model": ((str,), True), "base_url": ((str,), True),
        "api_key_env": ((str,), False), "temperature": ((float,), False), "timeout_seconds": ((float,), False),
        "max_tokens": ((int,), False), "context_tokens": ((int,), False), "uncited": ((str,), False),
        "min_support": ((float,), False)}
_CHUNKING = {"target_tokens": ((int,), True), "overlap_tokens": ((int,), False)}
_RETRIEVAL = {"top_k": ((int,), False), "candidates": ((int,), False), "rrf_k": ((int,), False),
              "nprobes": ((int,), False),
              "min_similarity": ((float,), False), "min_term_coverage": ((float,), False),
              "confident_similarity": ((float,), False), "unknown_term_similarity": ((float,), False)}
_API = {"token_env": ((str,), True), "admin_token_env": ((str,), True),
        "rate_limit_per_minute": ((int,), False), "max_question_chars": ((int,), False),
        "max_top_k": ((int,), False), "dagster_graphql_url": ((str,), False)}
_EVAL = {"top_k": ((int,), False), "min_recall_at_5": ((float,), False), "min_refusal_accuracy": ((float,), False),
         "min_citation_precision": ((float,), False)}
_TOP = ("storage", "embedding", "llm", "chunking", "retrieval", "sources", "api", "eval")
_COMMON_KEYS = {"name", "kind", "cron", "metadata", "metadata_rules"}
SOURCE_KEYS = {
    "local": _COMMON_KEYS | {"path", "include", "exclude", "base_url", "url_template", "url_rules",
                             "asciidoc_attributes"},
    "web": _COMMON_KEYS | {"seed_urls", "sitemaps", "allow_patterns", "deny_patterns", "allowed_domains",
                           "max_pages", "max_depth", "delay_seconds", "timeout_seconds", "max_retries",
                           "max_bytes", "error_threshold", "user_agent", "respect_robots", "content_selector",
                           "base_url"},
    "git": _COMMON_KEYS | {"repo", "branch", "subpath", "include", "exclude", "url_template", "url_rules",
                           "token_env", "asciidoc_attributes"},
}
KINDS = tuple(SOURCE_KEYS)
_SOURCE_SCALARS: dict[str, tuple[type, ...]] = {
    "base_url": (str,), "url_template": (str,), "cron": (str,), "sitemaps": (str, list),
    "max_pages": (int,), "max_depth": (int,), "delay_seconds": (float,), "timeout_seconds": (float,),
    "max_retries": (int,), "max_bytes": (int,), "error_threshold": (float,), "user_agent": (str,),
    "respect_robots": (bool,), "content_selector": (str,), "repo": (str,), "branch": (str,),
    "subpath": (str,), "token_env": (str,),
}


def _strings(raw: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = [raw]
    _check(raw, list, key, where)
    for i, item in enumerate(raw):
        _check(item, str, f"{key}[{i}]", where)
    return tuple(raw)


def _regex(pattern: str, key: str, where: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{where}: {key}: {pattern!r} is not a valid regular expression ({exc})") from exc
    return pattern


def _url_rules(raw: Any, key: str, where: str) -> tuple[UrlRule, ...]:
    _check(raw, list, key, where)
    rules = []
    for j, r in enumerate(raw):
        k = f"{key}[{j}]"
        _check(r, dict, k, where)
        if set(r) != {"match", "url"}:
            raise ConfigError(f"{where}: {k}: a URL rule has exactly the keys 'match' (a regex on the path) and 'url'")
        rules.append(UrlRule(match=_regex(_check(r["match"], str, f"{k}.match", where), f"{k}.match", where),
                             url=_check(r["url"], str, f"{k}.url", where)))
    return tuple(rules)


def _metadata_rules(raw: Any, key: str, where: str) -> tuple[MetadataRule, ...]:
    _check(raw, list, key, where)
    out = []
    for j, r in enumerate(raw):
        k = f"{key}[{j}]"
        _check(r, dict, k, where)
        unknown = set(r) - {"key", "values", "pattern", "frontmatter", "default"}
        if unknown:
            raise ConfigError(f"{where}: {k}.{sorted(unknown)[0]}: unknown key; allowed keys: "
                              "key, values, pattern, frontmatter, default")
        if "key" not in r:
            raise ConfigError(f"{where}: {k}.key: missing; name the metadata key this rule sets")
        values = _check(r.get("values", {}), dict, f"{k}.values", where)
        for g, v in values.items():
            _check(v, str, f"{k}.values[{g!r}]", where)
        if not (values or r.get("pattern") or r.get("frontmatter") or r.get("default")):
            raise ConfigError(f"{where}: {k}: give at least one of values, pattern, frontmatter or default")
        out.append(MetadataRule(
            key=_check(r["key"], str, f"{k}.key", where),
            values=tuple((str(g), str(v)) for g, v in values.items()),
            pattern=_regex(_check(r["pattern"], str, f"{k}.pattern", where), f"{k}.pattern", where)
            if r.get("pattern") else None,
            frontmatter=_check(r["frontmatter"], str, f"{k}.frontmatter", where) if r.get("frontmatter") else None,
            default=_check(r["default"], str, f"{k}.default", where) if r.get("default") is not None else None))
    return tuple(out)


def _url(value: str, key: str, where: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{where}: {key}: {value!r} is not an http(s) URL, e.g. 'https://docs.example.org/'")
    return value


def _source(raw: Any, i: int, where: str, root: Path) -> SourceConfig:
    key = f"sources[{i}]"
    _check(raw, dict, key, where)
    for required in ("name", "kind"):
        if required not in raw:
            raise ConfigError(f"{where}: {key}.{required}: missing; every source needs a name and a kind")
    name = _check(raw["name"], str, f"{key}.name", where)
    if not SOURCE_NAME_RE.match(name):
        raise ConfigError(f"{where}: {key}.name: {name!r} is not a valid source name; use lowercase "
                          "letters, digits, '-' and '_' (it becomes a Dagster partition key)")
    kind = _check(raw["kind"], str, f"{key}.kind", where)
    if kind not in KINDS:
        raise ConfigError(f"{where}: {key}.kind: unknown kind {kind!r}; supported kinds: {', '.join(KINDS)}")
    allowed = SOURCE_KEYS[kind]
    for k in raw:
        if k not in allowed:
            raise ConfigError(f"{where}: {key}.{k}: unknown key for a {kind} source; allowed keys: "
                              f"{', '.join(sorted(allowed))}")
    values: dict[str, Any] = {"name": name, "kind": kind}
    if kind == "local":
        if "path" not in raw:
            raise ConfigError(f"{where}: {key}.path: missing; a local source needs the folder that holds its documents")
        path = Path(_check(raw["path"], str, f"{key}.path", where)).expanduser()
        if not path.is_absolute():
            path = root / path
        if not path.is_dir():
            raise ConfigError(f"{where}: {key}.path: folder {str(path)!r} does not exist; create it or fix the path")
        values["path"] = path
    if kind == "web":
        if not raw.get("seed_urls"):
            raise ConfigError(f"{where}: {key}.seed_urls: missing; a web source needs at least one start URL")
        values["seed_urls"] = tuple(_url(u, f"{key}.seed_urls[{j}]", where)
                                    for j, u in enumerate(_strings(raw["seed_urls"], f"{key}.seed_urls", where)))
        for k in ("allow_patterns", "deny_patterns"):
            if k in raw:
                values[k] = tuple(_regex(p, f"{key}.{k}[{j}]", where)
                                  for j, p in enumerate(_strings(raw[k], f"{key}.{k}", where)))
        if "allowed_domains" in raw:
            values["allowed_domains"] = tuple(d.lower() for d in _strings(raw["allowed_domains"], f"{key}.allowed_domains", where))
    if kind == "git":
        if not raw.get("repo"):
            raise ConfigError(f"{where}: {key}.repo: missing; a git source needs a repository URL or local path")
    for k in ("include", "exclude"):
        if k in raw:
            values[k] = _strings(raw[k], f"{key}.{k}", where)
    for k, types in _SOURCE_SCALARS.items():
        if k in raw and raw[k] is not None:
            values[k] = _check(raw[k], types, f"{key}.{k}", where)
            if int in types and float not in types and values[k] < 0:
                raise ConfigError(f"{where}: {key}.{k}: must be ≥ 0, got {values[k]}")
            if float in types and values[k] < 0:
                raise ConfigError(f"{where}: {key}.{k}: must be ≥ 0, got {values[k]}")
    if isinstance(values.get("sitemaps"), list):
        values["sitemaps"] = tuple(_url(u, f"{key}.sitemaps[{j}]", where) for j, u in enumerate(values["sitemaps"]))
    elif "sitemaps" in values and values["sitemaps"] not in ("auto", "off"):
        raise ConfigError(f"{where}: {key}.sitemaps: use 'auto', 'off' or a list of sitemap URLs")
    if "base_url" in values and kind == "web":
        _url(values["base_url"], f"{key}.base_url", where)
    if kind == "git" and values.get("repo") and "://" not in values["repo"] and not values["repo"].startswith("git@"):
        repo = Path(values["repo"]).expanduser()
        values["repo"] = str(repo if repo.is_absolute() else (root / repo).resolve())
    if "url_rules" in raw:
        values["url_rules"] = _url_rules(raw["url_rules"], f"{key}.url_rules", where)
    if "metadata_rules" in raw:
        values["metadata_rules"] = _metadata_rules(raw["metadata_rules"], f"{key}.metadata_rules", where)
    if values.get("url_template") is not None and "{path}" not in values["url_template"]:
        raise ConfigError(f"{where}: {key}.url_template: must contain {{path}}, e.g. 'https://example.org/{{path}}/'")
    if values.get("base_url") and values.get("url_template"):
        raise ConfigError(f"{where}: {key}: set either base_url or url_template, not both")
    if "cron" in values and not CRON_RE.match(values["cron"].strip()):
        raise ConfigError(f"{where}: {key}.cron: {values['cron']!r} is not a 5-field cron expression, e.g. '0 4 * * *'")
    if "metadata" in raw:
        values["metadata"] = dict(_check(raw["metadata"], dict, f"{key}.metadata", where))
    if "asciidoc_attributes" in raw:
        attrs = _check(raw["asciidoc_attributes"], dict, f"{key}.asciidoc_attributes", where)
        for k, v in attrs.items():
            if not isinstance(k, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]*", k):
                raise ConfigError(f"{where}: {key}.asciidoc_attributes: {k!r} is not an attribute name")
            _check(v, (str, int, float, bool), f"{key}.asciidoc_attributes.{k}", where)
        values["asciidoc_attributes"] = {k: "" if v is None else str(v) for k, v in attrs.items()}
    return SourceConfig(**values)


def parse_config(raw: Any, *, where: str = DEFAULT_CONFIG_FILE, root: Path | None = None) -> Config:
    """Validate a parsed YAML document into a :class:`Config`."""
    root = root or Path.cwd()
    if raw is None:
        raw = {}
    _check(raw, dict, "(top level)", where)
    for k in raw:
        if k not in _TOP:
            raise ConfigError(f"{where}: {k}: unknown key; allowed top-level keys: {', '.join(_TOP)}")
    storage, keep_versions_days = _storage(raw.get("storage", "data"), where)
    if "://" not in storage:
        storage = str(Path(storage).expanduser())
        if not Path(storage).is_absolute():
            storage = str(root / storage)
    embedding = _section(raw.get("embedding"), EmbeddingConfig, "embedding", where, _EMBEDDING)
    if embedding.provider not in ("local", "openai"):
        raise ConfigError(f"{where}: embedding.provider: unknown provider {embedding.provider!r}; use 'local' or 'openai'")
    if embedding.provider == "openai" and not embedding.base_url and "embedding" in raw and "model" not in raw["embedding"]:
        raise ConfigError(f"{where}: embedding.model: required for the openai provider")
    if embedding.batch_size < 1:
        raise ConfigError(f"{where}: embedding.batch_size: must be ≥ 1")
    llm = _section(raw.get("llm"), LlmConfig, "llm", where, _LLM)
    if llm.provider not in ("none", "openai"):
        raise ConfigError(f"{where}: llm.provider: unknown provider {llm.provider!r}; use 'none' or 'openai'")
    if llm.uncited not in ("refuse", "drop"):
        raise ConfigError(f"{where}: llm.uncited: {llm.uncited!r}; use 'refuse' (strict) or 'drop'")
    if llm.provider == "openai" and not llm.model:
        raise ConfigError(f"{where}: llm.model: required when llm.provider is 'openai'")
    chunking = _section(raw.get("chunking"), ChunkingConfig, "chunking", where, _CHUNKING)
    if chunking.target_tokens is not None and chunking.target_tokens < 32:
        raise ConfigError(f"{where}: chunking.target_tokens: {chunking.target_tokens} is too small; use ≥ 32 or omit it")
    if chunking.target_tokens is not None and chunking.overlap_tokens >= chunking.target_tokens:
        raise ConfigError(f"{where}: chunking.overlap_tokens: must be smaller than chunking.target_tokens")
    retrieval = _section(raw.get("retrieval"), RetrievalConfig, "retrieval", where, _RETRIEVAL)
    if retrieval.top_k < 1:
        raise ConfigError(f"{where}: retrieval.top_k: must be ≥ 1")
    raw_sources = raw.get("sources") or []
    _check(raw_sources, list, "sources", where)
    sources = tuple(_source(s, i, where, root) for i, s in enumerate(raw_sources))
    seen: set[str] = set()
    for i, s in enumerate(sources):
        if s.name in seen:
            raise ConfigError(f"{where}: sources[{i}].name: duplicate source name {s.name!r}; source names must be unique")
        seen.add(s.name)
    api = _section(raw.get("api"), ApiConfig, "api", where, _API)
    if api.max_top_k < 1:
        raise ConfigError(f"{where}: api.max_top_k: must be ≥ 1")
    if api.max_question_chars < 1:
        raise ConfigError(f"{where}: api.max_question_chars: must be ≥ 1")
    _url(api.dagster_graphql_url, "api.dagster_graphql_url", where)
    ev = _section(raw.get("eval"), EvalConfig, "eval", where, _EVAL)
    if ev.top_k < 1:
        raise ConfigError(f"{where}: eval.top_k: must be ≥ 1")
    return Config(storage=storage, embedding=embedding, llm=llm, chunking=chunking,
                  retrieval=retrieval, sources=sources, api=api, eval=ev, keep_versions_days=keep_versions_days)


def _storage(raw: Any, where: str) -> tuple[str, float]:
    """``storage: PATH`` or ``storage: {path: PATH, keep_versions_days: DAYS}``."""
    keep = 7.0
    key = "storage"
    if isinstance(raw, dict):
        for k in raw:
            if k not in ("path", "keep_versions_days"):
                raise ConfigError(f"{where}: storage.{k}: unknown key; allowed keys: path, keep_versions_days")
        keep = float(_check(raw.get("keep_versions_days", keep), float, "storage.keep_versions_days", where))
        if keep < 0:
            raise ConfigError(f"{where}: storage.keep_versions_days: must be ≥ 0 (days old index versions "
                              "stay restorable; 0 keeps only the two newest)")
        raw, key = raw.get("path", "data"), "storage.path"
    return _check(raw, str, key, where), keep


def config_path() -> Path:
    return Path(os.environ.get("DOCS_RAG_CONFIG") or DEFAULT_CONFIG_FILE).expanduser().resolve()


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Load and validate the config file (``DOCS_RAG_CONFIG``, else ``./docs_rag.yaml``)."""
    p = Path(path).expanduser().resolve() if path else config_path()
    if not p.is_file():
        raise ConfigError(f"config file {str(p)!r} not found; create it (see docs/configuration.md) "
                          "or point DOCS_RAG_CONFIG at one")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {exc}") from exc
    cfg = parse_config(raw, where=str(p), root=p.parent)
    return dataclasses.replace(cfg, path=p)
