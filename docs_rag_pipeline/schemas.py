"""Request shapes, declared once (pydantic): the HTTP API, the MCP tools and the CLI validate
``search`` and ``ask`` with them, and ``/openapi.json`` is derived from them.

Validation against the running configuration (``top_k`` ≤ ``api.max_top_k``, a configured
``source``, metadata keys the index knows) takes a :class:`Context` as validation context.
Any problem becomes one :class:`InputError`: an error code, the field the caller used, and a
message that says what to fix.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt,
                      ValidationError, ValidationInfo, field_validator, model_validator)
from pydantic_core import PydanticCustomError

from .store import FILTER_KEY_RE, FILTER_KEY_RULE

if TYPE_CHECKING:
    from .config import SourceConfig
    from .context import Context

_NOT_TEXT = re.compile("[\ud800-\udfff\ufffe\uffff]")


class InputError(ValueError):
    """Bad input: ``code`` (e.g. ``invalid_top_k``), the ``field`` at fault and what to fix."""

    def __init__(self, code: str, field: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.field, self.message, self.status = code, field, message, status


def valid_text(value: str) -> str:
    """Unicode text only: a lone UTF-16 surrogate (or a noncharacter U+FFFE/U+FFFF) is refused."""
    m = _NOT_TEXT.search(value)
    if m:
        what = "a lone surrogate" if m.group() < "\ue000" else "the noncharacter"
        raise PydanticCustomError("invalid_text", "is not valid Unicode text ({what} at position {pos}); "
                                  "send UTF-8 text", {"what": f"{what} U+{ord(m.group()):04X}", "pos": m.start()})
    return value


def _not_text(value: str) -> str:
    """What :func:`valid_text` says of ``value`` (text that is not Unicode)."""
    try:
        valid_text(value)
    except PydanticCustomError as exc:
        return exc.message()
    return "is not valid Unicode text; send UTF-8 text"


Text = Annotated[str, AfterValidator(valid_text)]
FilterValue = Union[Text, StrictInt, StrictFloat, StrictBool]
# a constraint before the validator, so that it shows in the JSON schema (after it, pydantic drops it)
FilterKey = Annotated[str, Field(pattern=FILTER_KEY_RE.pattern), AfterValidator(valid_text)]
Filters = dict[FilterKey, Union[FilterValue, Annotated[list[FilterValue], Field(min_length=1)]]]


def filter_keys(ctx: Context, sources: list[SourceConfig]) -> set[str]:
    """The metadata keys a filter may name: ``source``, the keys of the sources' ``metadata`` and
    ``metadata_rules``, and every key tagged in the index."""
    keys = {"source"}
    for s in sources:
        keys.update(s.metadata)
        keys.update(r.key for r in s.metadata_rules)
    return keys | ctx.chunks.tag_keys()


class Scope(BaseModel):
    """What the search and ask requests share: how many results, which source, which metadata."""

    model_config = ConfigDict(extra="forbid", strict=True)

    top_k: StrictInt | None = Field(None, ge=1, description="how many results (default: retrieval.top_k; at most "
                                                            "api.max_top_k)")
    source: Text | None = Field(None, description="only this documentation source (a configured source name)")
    filters: Filters | None = Field(None, description='metadata filters: key → value or a list of values (any of), '
                                                      'e.g. {"section": "guides"}')

    @model_validator(mode="after")
    def _in_scope(self, info: ValidationInfo) -> Scope:
        ctx = (info.context or {}).get("ctx")
        if ctx is None:
            return self
        cfg = ctx.config
        if self.top_k is not None and self.top_k > cfg.api.max_top_k:
            raise PydanticCustomError("invalid_top_k", "must be an integer from 1 to {max} (api.max_top_k)",
                                      {"max": cfg.api.max_top_k})
        names = [s.name for s in cfg.sources]
        if self.source is not None and self.source not in names:
            raise PydanticCustomError("unknown_source", "no source named {name}; configured sources: {known}",
                                      {"name": repr(self.source), "known": ", ".join(names) or "none"})
        if self.filters:
            # a source named in filters is checked as ``source`` is: a typo is not "the docs don't cover it"
            listed = self.filters.get("source")
            wrong = [v for v in (listed if isinstance(listed, list) else [listed]) if v is not None and v not in names]
            if wrong:
                raise PydanticCustomError("unknown_filter_source", "no source named {name}; configured sources: "
                                          "{known}", {"name": repr(wrong[0]), "known": ", ".join(names) or "none"})
            ctx.index()  # nothing indexed is NothingIndexed (and creates nothing), not "unknown metadata key"
            known = filter_keys(ctx, [s for s in cfg.sources if self.source in (None, s.name)])
            unknown = sorted(set(self.filters) - known)
            if unknown:
                raise PydanticCustomError("unknown_filter", "unknown metadata key {key}; keys that exist: {known}",
                                          {"key": repr(unknown[0]), "known": ", ".join(sorted(known))})
        return self


class SearchRequest(Scope):
    """``POST /search``, the MCP tool ``search`` and ``docs-rag search``."""

    query: Text = Field(description="what to look for, in words")

    @field_validator("query")
    @classmethod
    def _words(cls, v: str, info: ValidationInfo) -> str:
        return _non_empty(v, info)


class AskRequest(Scope):
    """``POST /ask``, the MCP tool ``ask`` and ``docs-rag ask``."""

    question: Text = Field(description="the question, in words")
    thread_id: Annotated[str, Field(pattern=r"^[0-9a-f]{32}$"), AfterValidator(valid_text)] | None = Field(
        None, description="the conversation to continue: the thread_id a previous answer returned (a follow-up "
                          "such as 'why?' is answered in its context); leave it out to start a new one")
    stream: StrictBool = Field(False, description="HTTP only: answer with server-sent events (sources, the answer "
                                                  "as it is produced, then a final event with citations)")

    @field_validator("question")
    @classmethod
    def _words(cls, v: str, info: ValidationInfo) -> str:
        return _non_empty(v, info)


AGENTS = ("docs",)  # the agents POST /a2a/invoke serves


class A2ATask(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    question: Text = Field(description="the question, in words")


class A2AParams(BaseModel):
    """``params`` of an A2A invocation: what ``/ask`` takes besides the question."""

    model_config = ConfigDict(extra="forbid", strict=True)

    top_k: StrictInt | None = Field(None, ge=1, description="how many passages to answer from (at most api.max_top_k)")
    source: Text | None = Field(None, description="only this documentation source (a configured source name)")
    filters: Filters | None = Field(None, description="metadata filters: key → value or a list of values (any of)")


class A2ARequest(BaseModel):
    """``POST /a2a/invoke``: an agent-to-agent call of the ``docs`` agent. Its task and params are
    validated as an :class:`AskRequest` (the same rules and messages as ``/ask``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    agent: Literal[AGENTS] = Field(description="the agent to invoke: " + ", ".join(AGENTS))
    task: A2ATask = Field(description="what to do: {\"question\": ...}")
    params: A2AParams | None = Field(None, description="top_k, source, filters: as for /ask")


def _text_keys(obj: dict[Any, Any], where: str) -> None:
    """Field names that are not Unicode text (a lone surrogate) are refused without being echoed: an
    error message that quoted one would not be valid UTF-8 itself."""
    if any(isinstance(k, str) and _NOT_TEXT.search(k) for k in obj):
        what = f"a field name of '{where}'" if where else "a field name of the body"
        raise InputError("invalid_text", where or "body", f"{what} is not valid Unicode text (a lone surrogate); "
                                                          "send UTF-8 text")


def parse_a2a(data: Any, ctx: Context | None = None) -> AskRequest:
    """An A2A invocation → the :class:`AskRequest` it stands for, or one :class:`InputError` naming
    the field (``agent``, ``task.question``, ``params.top_k`` …) and the fix."""
    if not isinstance(data, dict):
        raise InputError("invalid_json", "", "the body must be a JSON object")
    _text_keys(data, "")
    for part in ("task", "params"):
        if isinstance(data.get(part), dict):
            _text_keys(data[part], part)
    extra = sorted(set(data) - {"agent", "task", "params"})
    if extra:
        raise InputError("unknown_field", extra[0], f"unknown field {extra[0]!r}; allowed: agent, params, task")
    agent = data.get("agent")
    if agent not in AGENTS:
        got = ("missing" if "agent" not in data else f"no agent named {agent[:64]!r}" if isinstance(agent, str)
               else "must be a string")
        raise InputError("unknown_agent", "agent", f"'agent': {got}; agents: {', '.join(AGENTS)}")
    task = data.get("task")
    if not isinstance(task, dict):
        raise InputError("invalid_task", "task", "'task' must be an object: {\"question\": \"...\"}")
    extra = sorted(set(task) - {"question"})
    if extra:
        raise InputError("unknown_field", f"task.{extra[0]}", f"unknown field 'task.{extra[0]}'; allowed: "
                                                              "task.question")
    params = data.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InputError("invalid_params", "params", "'params' must be an object: top_k, source, filters")
    extra = sorted(set(params) - set(Scope.model_fields))
    if extra:
        raise InputError("unknown_field", f"params.{extra[0]}", f"unknown field 'params.{extra[0]}'; allowed: "
                         + ", ".join(f"params.{k}" for k in sorted(Scope.model_fields)))
    try:
        req = parse_request(AskRequest, {"question": task.get("question"), **params}, ctx)
    except InputError as exc:
        where = "task." if exc.field == "question" else "params." if exc.field else ""
        if where:
            exc.message = exc.message.replace(f"'{exc.field}'", f"'{where}{exc.field}'", 1)
            if exc.message.startswith(f"{exc.field}"):
                exc.message = where + exc.message
            exc.field = where + exc.field
        raise
    return req  # type: ignore[return-value]


def _visible(v: str) -> bool:
    """Whether ``v`` has a character one can see: not only spaces, control or format characters
    (zero-width spaces and joiners, a byte-order mark)."""
    import unicodedata

    return any(unicodedata.category(ch) not in ("Zs", "Zl", "Zp", "Cc", "Cf", "Cs") for ch in v)


def _non_empty(v: str, info: ValidationInfo) -> str:
    from .unicode_text import without_controls

    if not _visible(without_controls(v)):  # only a terminal escape sequence (ESC [ 31 m) is no text either
        raise PydanticCustomError("empty", "must be a non-empty string")
    ctx = (info.context or {}).get("ctx")
    limit = ctx.config.api.max_question_chars if ctx is not None else None
    if limit is not None and len(v) > limit:
        raise PydanticCustomError("too_long", "is longer than {limit} characters", {"limit": limit})
    return v


def explain(exc: ValidationError, text_field: str) -> InputError:
    """The first problem of a failed validation, as one :class:`InputError` naming the caller's field."""
    errors = exc.errors(include_url=False)
    # a union (a filter value) reports each branch: text that is not Unicode is the real problem
    e = next((x for x in errors if x["type"] == "invalid_text"), errors[0])
    loc = [str(x) for x in e["loc"]]
    kind = e["type"]
    if (kind == "string_pattern_mismatch" or (kind == "string_unicode" and loc and "[key]" not in loc)) \
            and isinstance(e.get("input"), str) and _NOT_TEXT.search(e["input"]):
        # a pattern is checked before the text (and pydantic cannot match one against a lone surrogate at all,
        # `string_unicode`): text that is not Unicode is the real problem, in this field's value
        kind = "invalid_text"
        e = {**e, "msg": _not_text(e["input"])}
    field = loc[0] if loc else ""
    msg = e["msg"]
    if kind == "extra_forbidden":
        extra = ("thread_id", "stream") if text_field == "question" else ()
        allowed = ", ".join(sorted({text_field, *Scope.model_fields, *extra}))
        return InputError("unknown_field", field, f"unknown field {field!r}; allowed: {allowed}")
    if kind == "string_unicode" or (kind == "invalid_text" and "[key]" in loc):
        # a field name (of the body, or a key of filters) that is not Unicode text: say where, not the
        # key itself (pydantic shows it with its surrogates replaced, so it would read as another key)
        where = "filters" if "[key]" in loc and field == "filters" else ""
        what = f"a key of '{where}'" if where else "a field name of the body"
        return InputError("invalid_text", where or "body", f"{what} is not valid Unicode text (a lone surrogate); "
                                                           "send UTF-8 text")
    if kind == "invalid_text":
        where = ".".join(loc[:2]) if field == "filters" else field
        return InputError("invalid_text", where, f"'{where}' {msg}")
    if kind == "invalid_top_k":
        return InputError("invalid_top_k", "top_k", f"'top_k' {msg}")
    if kind == "unknown_source":
        return InputError("unknown_source", "source", f"'source': {msg}")
    if kind == "unknown_filter_source":
        return InputError("unknown_source", "filters.source", f"'filters.source': {msg}")
    if kind == "unknown_filter":
        return InputError("unknown_filter", "filters", f"filters: {msg}")
    if field == text_field:
        if kind == "too_long":
            return InputError("too_long", field, f"'{field}' {msg}", 413)
        return InputError("missing_" + field, field, f"'{field}' must be a non-empty string")
    if field == "top_k":
        return InputError("invalid_top_k", field, "'top_k' must be an integer ≥ 1")
    if field == "thread_id":
        return InputError("invalid_thread_id", field, "'thread_id' must be the 32-character hex id a previous "
                                                      "answer returned; leave it out to start a new conversation")
    if field == "stream":
        return InputError("invalid_stream", field, "'stream' must be true or false")
    if field == "source":
        return InputError("invalid_source", field, "'source' must be a string (a configured source name)")
    if field == "filters" and len(loc) == 1:
        return InputError("invalid_filters", field, "'filters' must be an object of key → value")
    if field == "filters" and kind == "string_pattern_mismatch":
        return InputError("invalid_query", field, f"filters: invalid key {loc[1]!r}; use {FILTER_KEY_RULE}")
    if field == "filters":
        return InputError("invalid_query", field, f"filters.{loc[1]}: expected a string, number, boolean or a "
                                                  "non-empty list of them")
    return InputError("invalid_request", field, f"{'.'.join(loc) or 'the request'}: {msg}")


def resolve_top_k(ctx: Context, req: Scope) -> int:
    """The request's ``top_k``, else ``retrieval.top_k`` (at most ``api.max_top_k``)."""
    return req.top_k or min(ctx.config.retrieval.top_k, ctx.config.api.max_top_k)


def parse_request(model: type[Scope], data: Any, ctx: Context | None = None) -> Scope:
    """Validate ``data`` (a dict) with ``model``; with ``ctx`` also against the configuration and index."""
    text_field = "question" if model is AskRequest else "query"
    if not isinstance(data, dict):
        raise InputError("invalid_json", "", "the body must be a JSON object")
    try:
        return model.model_validate(data, context={"ctx": ctx} if ctx is not None else None)
    except ValidationError as exc:
        raise explain(exc, text_field) from None


# ---- eval cases (eval/<source>.jsonl): one line, one case --------------------------------------

CATEGORIES = ("answerable", "refuse", "boundary")
SPLITS = ("calibration", "test")
_CASE_FIXES = {"id": "required, a non-empty string", "question": "required, a non-empty string",
               "should_refuse": "required, true or false",
               "expected_urls": "a list of URLs (absolute or relative to the source)",
               "expected_keywords": "a list of non-empty strings (words or phrases the answer should contain)", "note": "a string",
               "turns": "a list of the earlier questions of the conversation (non-empty strings), oldest first"}


class EvalCase(BaseModel):
    """A golden case: the question, whether it must be refused, and the pages that answer it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: Text
    question: Text
    should_refuse: bool
    expected_urls: list[Annotated[Text, Field(min_length=1)]] = []
    # a keyword of no text (or only spaces) is in every answer: it would always count as found
    expected_keywords: list[Annotated[Text, Field(min_length=1, pattern=r"\S")]] = []
    category: Literal[CATEGORIES] | None = None  # default: refuse or answerable, from should_refuse
    note: Text = ""
    split: Literal[SPLITS] | None = None  # default: a hash of the id decides (evaluation.case_half)
    # a multi-turn case: the earlier questions of the conversation, oldest first; ``question`` is the
    # follow-up that is scored, asked in their thread
    turns: list[Annotated[Text, Field(min_length=1, pattern=r"\S")]] = []

    @field_validator("id", "question")
    @classmethod
    def _words(cls, v: str, info: ValidationInfo) -> str:
        return _non_empty(v, info)

    @model_validator(mode="after")
    def _answerable_has_pages(self) -> EvalCase:
        if not self.should_refuse and not self.expected_urls:
            raise PydanticCustomError("expected_urls", "required unless should_refuse is true")
        return self


def case_problem(exc: ValidationError) -> str:
    """``field: what is wrong`` for a case that failed :class:`EvalCase`."""
    e = next((x for x in exc.errors(include_url=False) if x["type"] == "invalid_text"),
             exc.errors(include_url=False)[0])
    field = str(e["loc"][0]) if e["loc"] else e["type"]
    if e["type"] == "extra_forbidden":
        return f"{field}: unknown field; allowed: {', '.join(sorted(EvalCase.model_fields))}"
    if e["type"] == "literal_error":
        allowed = SPLITS if field == "split" else CATEGORIES
        return f"{field}: {e['input']!r}; use one of {', '.join(allowed)}" + (" or leave it out" if field == "split" else "")
    if e["type"] in ("invalid_text", "expected_urls"):
        return f"{field}: {e['msg']}"
    if e["type"] == "string_unicode":  # a lone surrogate where a literal (split, category) is checked first
        return f"{field}: is not valid Unicode text (a lone surrogate); write the character itself"
    return f"{field}: {_CASE_FIXES.get(field, e['msg'])}"


# ---- feedback on an answer (POST /feedback, the MCP tool ``feedback``) --------------------------

class FeedbackRequest(BaseModel):
    """Thumbs up or down (and an optional comment) on an answer, named by its ``trace_id``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    trace_id: Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[A-Za-z0-9_-]+$"),
                        AfterValidator(valid_text)] = Field(
        description="the trace_id of the answer (from /ask or the ask tool)")
    rating: Literal["up", "down"] = Field(description='"up" (helpful) or "down" (wrong or unhelpful)')
    comment: Annotated[Text, Field(max_length=2000)] = Field("", description="optional: what was wrong or missing")


def parse_feedback(data: Any) -> FeedbackRequest:
    """Validate a feedback body; a problem becomes an :class:`InputError` that names the field."""
    if not isinstance(data, dict):
        raise InputError("invalid_json", "", "the body must be a JSON object")
    _text_keys(data, "")
    try:
        return FeedbackRequest.model_validate(data)
    except ValidationError as exc:
        e = exc.errors(include_url=False)[0]
        field = str(e["loc"][0]) if e["loc"] else ""
        if e["type"] == "extra_forbidden":
            return_msg = f"unknown field {field!r}; allowed: comment, rating, trace_id"
            raise InputError("unknown_field", field, return_msg) from None
        fixes = {"trace_id": ("invalid_trace_id", "'trace_id' must be the trace_id string of an answer from /ask "
                                                  "(letters, digits, '-' or '_', at most 256 characters)"),
                 "rating": ("invalid_rating", "'rating' must be \"up\" or \"down\""),
                 "comment": ("invalid_comment", "'comment' must be a string of at most 2000 characters")}
        code, msg = fixes.get(field, ("invalid_request", f"{field or 'the request'}: {e['msg']}"))
        if e["type"] == "invalid_text":
            msg = f"'{field}' {e['msg']}"
        raise InputError(code, field, msg) from None
