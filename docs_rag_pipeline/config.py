"""The typed configuration: one YAML file, validated on load, before any work starts.

``load_config()`` reads ``DOCS_RAG_CONFIG`` (or ``docs_rag.yaml`` in the working directory).
Every error names the key path and how to fix it.
"""

from __future__ import annotations

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


@dataclass(frozen=True, slots=True)
class ChunkingConfig:
    target_tokens: int | None = None  # None: follow the embedding model's window
    overlap_tokens: int = 32


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    top_k: int = 5
    candidates: int = 40  # per retriever, before fusion
    rrf_k: int = 60
    # refusal: a question is answered only when the best retrieved chunk clears both gates
    min_similarity: float = 0.30
    min_term_coverage: float = 0.5
    confident_similarity: float = 0.55


@dataclass(frozen=True, slots=True)
class SourceConfig:
    name: str
    kind: str
    path: Path
    include: tuple[str, ...] = ("**/*.md", "**/*.mdx", "**/*.markdown", "**/*.html", "**/*.htm")
    exclude: tuple[str, ...] = ()
    base_url: str | None = None
    url_template: str | None = None
    cron: str = "0 4 * * *"
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Config:
    storage: str
    embedding: EmbeddingConfig
    llm: LlmConfig
    chunking: ChunkingConfig
    retrieval: RetrievalConfig
    sources: tuple[SourceConfig, ...]
    path: Path | None = None  # the file it came from

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
        "api_key_env": ((str,), False), "temperature": ((float,), False), "timeout_seconds": ((float,), False)}
_CHUNKING = {"target_tokens": ((int,), True), "overlap_tokens": ((int,), False)}
_RETRIEVAL = {"top_k": ((int,), False), "candidates": ((int,), False), "rrf_k": ((int,), False),
              "min_similarity": ((float,), False), "min_term_coverage": ((float,), False),
              "confident_similarity": ((float,), False)}
_TOP = ("storage", "embedding", "llm", "chunking", "retrieval", "sources")
_SOURCE_KEYS = {"name", "kind", "path", "include", "exclude", "base_url", "url_template", "cron", "metadata"}
KINDS = ("local",)


def _strings(raw: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(raw, str):
        raw = [raw]
    _check(raw, list, key, where)
    for i, item in enumerate(raw):
        _check(item, str, f"{key}[{i}]", where)
    return tuple(raw)


def _source(raw: Any, i: int, where: str, root: Path) -> SourceConfig:
    key = f"sources[{i}]"
    _check(raw, dict, key, where)
    for k in raw:
        if k not in _SOURCE_KEYS:
            raise ConfigError(f"{where}: {key}.{k}: unknown key; allowed keys: {', '.join(sorted(_SOURCE_KEYS))}")
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
    if "path" not in raw:
        raise ConfigError(f"{where}: {key}.path: missing; a local source needs the folder that holds its documents")
    path = Path(_check(raw["path"], str, f"{key}.path", where)).expanduser()
    if not path.is_absolute():
        path = root / path
    if not path.is_dir():
        raise ConfigError(f"{where}: {key}.path: folder {str(path)!r} does not exist; create it or fix the path")
    values: dict[str, Any] = {"name": name, "kind": kind, "path": path}
    for k in ("include", "exclude"):
        if k in raw:
            values[k] = _strings(raw[k], f"{key}.{k}", where)
    for k in ("base_url", "url_template", "cron"):
        if k in raw and raw[k] is not None:
            values[k] = _check(raw[k], str, f"{key}.{k}", where)
    if values.get("url_template") is not None and "{path}" not in values["url_template"]:
        raise ConfigError(f"{where}: {key}.url_template: must contain {{path}}, e.g. 'https://example.org/{{path}}/'")
    if values.get("base_url") and values.get("url_template"):
        raise ConfigError(f"{where}: {key}: set either base_url or url_template, not both")
    if "cron" in values and not CRON_RE.match(values["cron"].strip()):
        raise ConfigError(f"{where}: {key}.cron: {values['cron']!r} is not a 5-field cron expression, e.g. '0 4 * * *'")
    if "metadata" in raw:
        values["metadata"] = dict(_check(raw["metadata"], dict, f"{key}.metadata", where))
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
    storage = _check(raw.get("storage", "data"), str, "storage", where)
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
    return Config(storage=storage, embedding=embedding, llm=llm, chunking=chunking,
                  retrieval=retrieval, sources=sources)


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
    return Config(storage=cfg.storage, embedding=cfg.embedding, llm=cfg.llm, chunking=cfg.chunking,
                  retrieval=cfg.retrieval, sources=cfg.sources, path=p)
