"""Evaluation: golden cases → retrieval, refusal, citation and keyword metrics, with ablations.

Plain Python: the ``eval_scores`` asset and ``docs-rag eval`` both call :func:`evaluate`.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from pydantic import ValidationError

from .answering.extractive import is_relevant, judge
from .answering.markers import neutralise
from .answering.refusal import corpus_stats
from .answering.service import answer_question
from .chunking import split_blocks
from .config import Config, EvalConfig, LlmConfig, RetrievalConfig, SourceConfig
from .files import atomic_write
from .context import Context
from .records import Hit
from .retrieval import search
from .unicode_text import LONE_SURROGATE
from .words import folded
from .schemas import CATEGORIES, SPLITS, EvalCase, case_problem
from .significance import bootstrap_mean, compare_ranks, rank_scores, wilson



class EvalCaseError(ValueError):
    """A bad cases file: the message names the line and the field."""


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    question: str
    expected_urls: tuple[str, ...]
    expected_keywords: tuple[str, ...]
    should_refuse: bool
    category: str
    note: str = ""
    split: str | None = None  # calibration | test; None: case_half() of the id
    turns: tuple[str, ...] = ()  # a multi-turn case: the earlier questions, oldest first


def normalise_url(url: str) -> str:
    """Compare pages, not sections: no fragment, no trailing ``index.html`` or slash, and the path's
    percent-encoding undone (``my%20page.md`` is ``my page.md``)."""
    parts = urlsplit(url.strip())
    path = unquote(parts.path)
    for suffix in ("index.html", "index.htm"):
        if path.endswith("/" + suffix) or path == suffix:
            path = path[: -len(suffix)]
    path = path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def source_root_url(src: SourceConfig) -> str:
    """The URL a source maps its root to (relative expected URLs are resolved against it)."""
    if src.base_url:
        return src.base_url if src.base_url.endswith("/") else src.base_url + "/"
    if src.url_template:
        return src.url_template.replace("{path}", "").replace("//", "/").replace(":/", "://")
    if src.kind == "web" and src.seed_urls:
        return src.seed_urls[0].rsplit("/", 1)[0] + "/"
    if src.path is not None:
        return src.path.resolve().as_uri() + "/"
    return ""


#: a stand-in host under which urljoin resolves ./ and ../ of a relative root (docs/) as of an absolute one
_RELATIVE_BASE = "http://relative.invalid/"


def resolve_expected(url: str, root: str) -> str:
    if "://" in url or not root:
        return url
    if "://" not in root:  # a relative base such as docs/: page URLs are relative too
        joined = root + url if not url.startswith(root) else url
        # ./ and ../ resolved as urljoin does against an absolute root (docs/./a.md is docs/a.md)
        resolved = urljoin(_RELATIVE_BASE, joined)
        return resolved[len(_RELATIVE_BASE):] if resolved.startswith(_RELATIVE_BASE) else joined
    return urljoin(root, url)


def _expected_url(url: str, root: str, where: str) -> str:
    """``url`` resolved against the source's root; one that cannot be read as a URL (``http://[host``:
    urllib's "Invalid IPv6 URL") names the line and the field, not just urllib's words."""
    try:
        resolved = resolve_expected(url, root)
        normalise_url(resolved)
    except ValueError as exc:
        raise EvalCaseError(f"{where}: expected_urls: {url!r} is not a valid URL ({exc}); write the page's URL, "
                            "absolute or relative to the source") from None
    return resolved


def load_cases(path: str | Path, *, root_url: str = "") -> list[Case]:
    """Read ``eval/<source>.jsonl``; every problem names its line and field."""
    p = Path(path)
    if not p.is_file():
        raise EvalCaseError(f"{p}: cases file not found; write one JSON case per line (see docs/evaluation.md)")
    cases: list[Case] = []
    seen: set[str] = set()
    data = p.read_bytes()
    try:
        text = data.decode("utf-8-sig")  # a BOM (Notepad's "UTF-8 with BOM") is not part of line 1
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise EvalCaseError(f"{p}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x}); save the file as "
                            "UTF-8") from None
    # JSON Lines end at "\n" only: str.splitlines() also broke a line at U+2028, U+2029, U+0085 and
    # \x1c-\x1e inside a JSON string (a question pasted from a PDF, as feedback export writes it)
    for n, line in enumerate(re.split(r"\r?\n|\r", text), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{p}:{n}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvalCaseError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
        except RecursionError:
            raise EvalCaseError(f"{where}: nested too deeply to read; a case is one flat JSON object") from None
        except ValueError as exc:  # an integer of more than 4300 digits
            raise EvalCaseError(f"{where}: not valid JSON ({exc})") from None
        if not isinstance(raw, dict):
            raise EvalCaseError(f"{where}: a case must be a JSON object")
        if m := next(filter(None, map(LONE_SURROGATE.search, raw)), None):
            raise EvalCaseError(f"{where}: a field name is not valid Unicode text (a lone surrogate "
                                f"U+{ord(m.group()):04X} at position {m.start()}); allowed fields: "
                                f"{', '.join(sorted(EvalCase.model_fields))}")
        try:
            case = EvalCase.model_validate(raw)
        except ValidationError as exc:
            raise EvalCaseError(f"{where}: {case_problem(exc)}") from None
        if case.id in seen:
            raise EvalCaseError(f"{where}: id: duplicate id {case.id!r}")
        seen.add(case.id)
        cases.append(Case(id=case.id, question=case.question,
                          expected_urls=tuple(_expected_url(u, root_url, where) for u in case.expected_urls),
                          expected_keywords=tuple(case.expected_keywords), should_refuse=case.should_refuse,
                          category=case.category or ("refuse" if case.should_refuse else "answerable"),
                          note=case.note, split=case.split, turns=tuple(case.turns)))
    if not cases:
        raise EvalCaseError(f"{p}: no cases in the file")
    return cases


def split_of(cases: Sequence[Case]) -> dict[str, str]:
    """Case id → ``calibration`` or ``test``. A case's own ``split`` wins; another case's half is
    :func:`case_half` of its id alone, so adding or removing a case never moves another (the earlier
    rule alternated along the SHA-1 order per category, and one added id flipped every case after it)."""
    return {c.id: c.split or case_half(c.id) for c in cases}


def case_half(case_id: str) -> str:
    """The half of a case without a ``split`` field: ``calibration`` when the SHA-1 of its id is
    even, ``test`` when odd. Each half gets about half of each category, not exactly half."""
    return SPLITS[int(hashlib.sha1(case_id.encode("utf-8")).hexdigest(), 16) % 2]


def select_split(cases: Sequence[Case], split: str | None) -> list[Case]:
    """The cases of one half (``calibration`` or ``test``); ``all`` or None: every case."""
    if split in (None, "all"):
        return list(cases)
    if split not in SPLITS:
        raise EvalCaseError(f"split: {split!r}; use all, {', '.join(SPLITS)}")
    halves = split_of(cases)
    return [c for c in cases if halves[c.id] == split]


def page_rank(hits: Iterable[Hit], expected: Sequence[str]) -> int | None:
    """1-based rank of the first expected page among retrieved pages (deduplicated in rank order)."""
    return url_rank((h.page_url for h in hits), expected)


def url_rank(urls: Iterable[str], expected: Sequence[str]) -> int | None:
    """:func:`page_rank` over plain page URLs."""
    want = {normalise_url(u) for u in expected}
    pages: list[str] = []
    for u in urls:
        p = normalise_url(u)
        if p not in pages:
            pages.append(p)
    for i, p in enumerate(pages, 1):
        if p in want:
            return i
    return None


_CITED = re.compile(r"\s*\[(\d+)\]\s*$")


#: a fence line with its info string (```` ```mjs ````): rendering, not text
_FENCE_LINE = re.compile(r"^[ \t]*```[^\n]*$", re.M)


#: a Markdown link or image, ``[text](target)`` (a target may hold one level of parentheses), also
#: as an answer shows one it broke up, ``[text] (target)``
_MD_LINK = re.compile(r"!?\[([^\[\]]*)\] ?\((?:[^()\s]|\([^()\s]*\))*\)")


def _norm_text(s: str) -> str:
    """Text as cite-correct compares it: fences (their info strings too) and table markup are
    rendering, not text: a piece of code that an answer quotes from its first top-level statement
    (:func:`~.answering.extractive.code_from_statement`), its fence line then the lines after those
    it leaves out, is still found in its chunk. So is a Markdown link: its text is what an answer
    says, and an answer keeps a link only to a target a source gives (``[found here](../style.md)``
    in a page of raw Markdown is quoted as ``found here``, which counted as not in its chunk)."""
    from .answering.tables import strip_table_markup

    s = html.unescape(_MD_LINK.sub(r"\1", _FENCE_LINE.sub(" ", s).replace("```", " ")))  # ``&lt;`` shows as "<"
    return re.sub(r"\s+", " ", strip_table_markup(s)).strip().lower()


def cite_correct(answer: str, citations: Sequence[Any], chunk_text: Any) -> tuple[int, int]:
    """(answer sentences whose cited chunk contains them, answer sentences with a citation).
    ``chunk_text(chunk_id)`` gives a chunk's text (None when the chunk does not exist). The chunk
    counts as written or as answers quote it, without the document's own bracketed numbers
    (:func:`~.answering.markers.neutralise`: a "[2]" in a document is never shown as a citation)."""
    from .answering.tables import is_markdown_table

    by_n = {c.n: c for c in citations}
    ok = total = 0
    for part in split_blocks(answer):  # a code block (blank lines and all) is one part
        m = _CITED.search(part)
        if not m:
            continue
        total += 1
        c = by_n.get(int(m.group(1)))
        raw = _CITED.sub("", part)
        # a quoted table is found row by row: an answer may quote a table's header and the one row that
        # answers (``header_rows``), which stand apart in the chunk
        bodies = [_norm_text(ln) for ln in raw.strip().split("\n")] if is_markdown_table(raw) else [_norm_text(raw)]
        bodies = [b for b in bodies if b]
        text = chunk_text(c.chunk_id) if c is not None else None
        if text is not None and bodies and all(b in _norm_text(text) or b in _norm_text(neutralise(text))
                                               for b in bodies):
            ok += 1
    return ok, total


def cite_supported(answer: str, citations: Sequence[Any], chunk_text: Any, embed: Any, *,
                   threshold: float = 0.5) -> tuple[int, int]:
    """cite-correct for an answer a model wrote (it paraphrases, so containment says little): (statements
    every cited chunk of which supports them, statements with a citation), by the answer's own support
    check (:func:`~.answering.citations.mark_support`: the share of the statement's content words in the
    chunk at least ``threshold``, else an embedding similarity of 0.6; never with a number no cited chunk
    has, nor a negation its chunk lacks or the reverse)."""
    import numpy as np

    from .answering.citations import MARKER_RE, lexical_support, negation_mismatch, split_statements, unbacked_numbers
    from .answering.markers import code_parts

    by_n = {c.n: c for c in citations}
    pairs: list[tuple[int, str, str | None]] = []  # (statement index, statement, cited chunk's text)
    statements = 0
    for stmt in split_statements(answer):
        parts = code_parts(stmt)
        numbers = [int(n) for p in parts[0::2] for grp in MARKER_RE.findall(p) for n in re.split(r"[,;]", grp)]
        if not numbers:
            continue
        body = "".join(MARKER_RE.sub("", p) if i % 2 == 0 else p for i, p in enumerate(parts)).strip()
        for n in dict.fromkeys(numbers):
            c = by_n.get(n)
            pairs.append((statements, body, chunk_text(c.chunk_id) if c is not None else None))
        statements += 1
    ok = [True] * statements
    lex = [lexical_support(b, t) if t is not None else 0.0 for _, b, t in pairs]
    weak = [i for i, (_, _, t) in enumerate(pairs) if t is not None and lex[i] < threshold]
    sims: dict[int, float] = {}
    if weak:
        vecs = embed([pairs[i][1] for i in weak] + [pairs[i][2] for i in weak])
        sims = {i: float(np.dot(vecs[k], vecs[len(weak) + k])) for k, i in enumerate(weak)}
    cited: dict[int, list[str]] = {}  # each statement's cited chunks: a number may come from any of them
    for si, _, t in pairs:
        cited.setdefault(si, []).append(t or "")
    for i, (si, b, t) in enumerate(pairs):
        if t is None or not (lex[i] >= threshold or sims.get(i, 0.0) >= 0.6) \
                or unbacked_numbers(b, cited[si]) or negation_mismatch(b, t):
            ok[si] = False
    return sum(ok), statements


def retrieval_metrics(ranks: Sequence[int | None]) -> dict[str, float | None]:
    """recall@1, recall@5 and MRR@10 of these ranks; None for each when there is no rank (no answerable
    case: not a figure, as any share over no case; it was 0.0, a drop to zero in the history and chart)."""
    if not ranks:
        return dict.fromkeys(("recall_at_1", "recall_at_5", "mrr_at_10"))
    return {k: round(sum(v) / len(ranks), 4) for k, v in rank_scores(ranks).items()}


#: a category's retrieval figures: None for each when it has no answerable case (it was 0.0 over no case,
#: shown as a failure in the asset's table)
category_retrieval = retrieval_metrics


def _pct(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile, interpolated linearly between the two closest ranks (numpy's default,
    Hyndman and Fan's type 7): p50 is the median, the mean of the two middle values of an even count
    (the nearest rank gave the lower of the two)."""
    import numpy as np

    if not values:
        return 0.0
    return round(float(np.percentile(values, q * 100)), 2)


@dataclass(slots=True)
class CaseResult:
    id: str
    category: str
    question: str
    should_refuse: bool
    refused: bool
    rank: int | None
    rank_fulltext: int | None
    rank_vector: int | None
    cited: int
    invalid_cited: int
    unsupported: int
    keywords_found: int
    keywords_total: int
    similarity: float
    coverage: float | None  # None: the question has no content word (no lexical evidence)
    unknown_terms: list[str]
    search_ms: float
    ask_ms: float
    answer: str
    warning: str | None = None
    top_urls: list[str] = field(default_factory=list)
    rank_baseline: int | None = None
    cite_ok: int = 0
    cite_total: int = 0
    features: dict[str, float] = field(default_factory=dict)
    turns: int = 0  # earlier turns of a multi-turn case
    searched: str | None = None  # what a follow-up searched (its carried terms or the LLM's rewrite)
    follow_up_ok: bool | None = None  # a multi-turn case: refused as it should, or answered citing an expected page
    rank_no_rerank: int | None = None  # with retrieval.rerank configured: the fused order's rank
    prompt_tokens: int = 0  # what the LLM server reported for this case's answer (0: no LLM call)
    completion_tokens: int = 0
    sentence_similarity: float | None = None  # the refusal rule's sentence-level evidence (judge)
    chunk_coverage: float | None = 1.0
    missing_rarity: float = 0.0
    shared_pages: int | None = None  # pages both rankings put in their first 5 (judge)


def conversation(ctx: Context, turns: Sequence[str], *, top_k: int, source: str) -> list[Any]:
    """The earlier turns of a multi-turn case, asked in order in one (in-memory) thread."""
    from .threads import Turn

    history: list[Turn] = []
    for q in turns:
        a = answer_question(ctx, q, top_k=top_k, source=source, history=history)
        history.append(Turn(question=q, standalone=a.searched or a.standalone_question or q, answer=a.answer,
                            refused=a.refused, cited_urls=[c.url for c in a.citations],
                            cited_titles=[c.title for c in a.citations]))
    return history


def searched_question(ctx: Context, case: Case, *, top_k: int, source: str) -> str:
    """What :func:`evaluate` searches and judges for a case: its question, or for a multi-turn case the
    follow-up as its thread made it (the carried terms, or the LLM's rewrite), which ``ask`` searched.
    The tuning scripts (eval/fit_refusal.py, eval/tune_retrieval.py) read cases through it, so they fit
    the text that is judged, not a bare follow-up such as *how do I change that?*."""
    if not case.turns:
        return case.question
    history = conversation(ctx, case.turns, top_k=top_k, source=source)
    return answer_question(ctx, case.question, top_k=top_k, source=source, history=history).searched or case.question


def evaluate(ctx: Context, source: str, cases: Sequence[Case], *, top_k: int = 5,
             baseline: bool = False) -> dict[str, Any]:
    """Run every case through the real ``search`` and ``ask`` (plus full-text-only and vector-only
    ablations, and with ``baseline`` the naive baseline of :mod:`.baseline`) and compute the metrics.
    Every read is of the table's version at the start: an ingest writing meanwhile changes nothing."""
    ctx = ctx.at_current_version()
    results: list[CaseResult] = []
    base = None
    if baseline:
        from .baseline import build

        base = build(ctx, source)
    for case in cases:
        history = conversation(ctx, case.turns, top_k=top_k, source=source) if case.turns else None
        t1 = time.perf_counter()
        ans = answer_question(ctx, case.question, top_k=top_k, source=source, history=history)
        ask_ms = (time.perf_counter() - t1) * 1000
        query = ans.searched or case.question  # a follow-up is searched as its thread made it
        t0 = time.perf_counter()
        hits = search(ctx, query, top_k=10, source=source)
        search_ms = (time.perf_counter() - t0) * 1000
        ft = search(ctx, query, top_k=10, source=source, mode="fulltext")
        vec = search(ctx, query, top_k=10, source=source, mode="vector")
        fused = (search(ctx, query, top_k=10, source=source, rerank=False)
                 if ctx.config.retrieval.rerank is not None else None)
        # the chunks ask was given: its own search, run again as ask ran it (its folded question, its
        # top_k). The first top_k of the top 10 above were another ranking whenever the candidate pool,
        # which search sizes by top_k (max(candidates, 4 * top_k)), or the reranker's differs: with
        # retrieval.candidates below 40, real citations counted as invented (and above top_k 10, those
        # of hits 11..top_k). judge reads the same chunks, as ask's did.
        asked = folded(query)
        given = search(ctx, asked, top_k=top_k, source=source)  # service.retrieve, untraced
        rel = judge(asked, given, ctx.config.retrieval, ctx.chunks.vocabulary(),
                    ctx.embedder.count_tokens, corpus_stats(ctx.chunks), embedder=ctx.embedder)
        # a citation is checked against those chunks and their parent sections, which an LLM prompt shows
        # beside them (build_prompt's ``parent``)
        retrieved = {h.chunk_id for h in given} | {h.parent_id for h in given if h.parent_id}
        exists = {c.chunk_id for c in ans.citations if ctx.chunks.get(c.chunk_id) is not None}
        invalid = sum(1 for c in ans.citations if c.chunk_id not in exists or c.chunk_id not in retrieved)
        text = ans.answer.lower()
        found = sum(1 for k in case.expected_keywords if k.lower() in text) if not ans.refused else 0
        if ans.refused:
            ok, total = 0, 0
        elif ans.mode == "llm":  # a model paraphrases: measured with the support check, as the answer is
            ok, total = cite_supported(ans.answer, ans.citations, _chunk_text(ctx), ctx.embedder.embed,
                                       threshold=ctx.config.llm.min_support)
        else:
            ok, total = cite_correct(ans.answer, ans.citations, _chunk_text(ctx))
        results.append(CaseResult(
            id=case.id, category=case.category, question=case.question, should_refuse=case.should_refuse,
            refused=ans.refused, rank=page_rank(hits, case.expected_urls) if case.expected_urls else None,
            rank_fulltext=page_rank(ft, case.expected_urls) if case.expected_urls else None,
            rank_vector=page_rank(vec, case.expected_urls) if case.expected_urls else None,
            cited=len(ans.citations), invalid_cited=invalid,
            unsupported=sum(1 for c in ans.citations if c.supported is False),
            keywords_found=found, keywords_total=len(case.expected_keywords),
            similarity=rel.similarity, coverage=rel.coverage, unknown_terms=list(rel.unknown), search_ms=round(search_ms, 2),
            ask_ms=round(ask_ms, 2), answer=ans.answer, warning=ans.warning,
            top_urls=[h.url for h in hits[:5]],
            rank_baseline=url_rank(base.search_pages(query), case.expected_urls)  # what ours ranked
            if base is not None and case.expected_urls else None,
            cite_ok=ok, cite_total=total, features=rel.features,
            turns=len(case.turns), searched=ans.searched,
            follow_up_ok=(ans.refused if case.should_refuse else
                          not ans.refused and url_rank([c.url for c in ans.citations], case.expected_urls) is not None)
            if case.turns else None,
            rank_no_rerank=page_rank(fused, case.expected_urls) if fused is not None and case.expected_urls else None,
            prompt_tokens=(ans.usage or {}).get("prompt_tokens", 0),
            completion_tokens=(ans.usage or {}).get("completion_tokens", 0),
            sentence_similarity=rel.sentence_similarity, chunk_coverage=rel.chunk_coverage,
            missing_rarity=rel.missing_rarity, shared_pages=rel.shared_pages))
    report = summarise(source, results)
    report["calibration"] = calibration_report(cases, results, ctx.config.retrieval)
    report["unindexed_expected"] = unindexed_expected(cases, ctx.chunks.page_state(source))
    report["cost"] = cost_report(results, ctx.config.llm)
    if ctx.config.retrieval.rerank is not None:
        # the main numbers are reranked; this is the same search in fused order
        report["ablations"]["no_rerank"] = retrieval_metrics([r.rank_no_rerank for r in results
                                                              if not r.should_refuse])
        report["rerank"] = {"url": ctx.config.retrieval.rerank.url,
                            "warnings": sum(1 for r in results if r.warning and "rerank" in r.warning)}
    if base is not None:
        report["baseline"] = retrieval_metrics([r.rank_baseline for r in results if not r.should_refuse])
        # the same cases ranked both ways: which side won each, and how sure the difference is
        report["baseline_comparison"] = compare_ranks([r.rank for r in results if not r.should_refuse],
                                                      [r.rank_baseline for r in results if not r.should_refuse])
    return report


def unindexed_expected(cases: Sequence[Case], indexed_pages: Iterable[str]) -> dict[str, list[str]]:
    """Case id → its expected URLs that name no indexed page (a typo, a page moved or removed from the
    docs, a base_url that changed): such a case is scored as a miss, which is said, not left silent."""
    indexed = {normalise_url(u) for u in indexed_pages}
    out: dict[str, list[str]] = {}
    for case in cases:
        missing = [u for u in case.expected_urls if normalise_url(u) not in indexed]
        if missing:
            out[case.id] = missing
    return out


def unindexed_warning(report: dict[str, Any], *, shown: int = 5) -> str | None:
    """One line naming the cases whose expected pages are not indexed, or None."""
    missing = report.get("unindexed_expected") or {}
    if not missing:
        return None
    listed = "; ".join(f"{cid}: {', '.join(urls)}" for cid, urls in list(missing.items())[:shown])
    more = f"; and {len(missing) - shown} more" if len(missing) > shown else ""
    # only an answerable case's URLs are scored (retrieval figures); a case to refuse is scored by its
    # refusal alone, so for it the URL is only a mistake in the file, not a miss
    refuse = {r["id"] for r in report.get("per_case") or [] if r.get("should_refuse")}
    scored = [cid for cid in missing if cid not in refuse]
    if len(scored) == len(missing):
        effect = "so they count as misses wherever the answer is"
    elif not scored:
        effect = "but they are cases to refuse, whose URLs no figure reads"
    else:
        effect = f"so the {len(scored)} answerable among them count as misses wherever the answer is"
    return (f"{len(missing)} case(s) expect a page that is not indexed, {effect} ({listed}{more}): fix the URL in "
            "the cases file, or ingest the page")


def cost_report(results: Sequence[CaseResult], llm: LlmConfig) -> dict[str, Any]:
    """Tokens the LLM server reported over the eval's ``ask`` calls, and what 100 calls cost at
    ``llm.price_per_1k_prompt_tokens`` / ``price_per_1k_completion_tokens`` (0 on the extractive
    path: no LLM call, no tokens)."""
    calls = len(results)
    prompt = sum(r.prompt_tokens for r in results)
    completion = sum(r.completion_tokens for r in results)
    total = prompt / 1000 * llm.price_per_1k_prompt_tokens + completion / 1000 * llm.price_per_1k_completion_tokens
    return {"calls": calls, "llm": llm.provider != "none", "prompt_tokens": prompt, "completion_tokens": completion,
            "price_per_1k_prompt_tokens": llm.price_per_1k_prompt_tokens,
            "price_per_1k_completion_tokens": llm.price_per_1k_completion_tokens,
            "cost_per_100_calls": round(total / calls * 100, 6) if calls else 0.0}


def _chunk_text(ctx: Context):  # noqa: ANN202
    def get(chunk_id: str) -> str | None:
        row = ctx.chunks.get(chunk_id)
        return row["text"] if row else None

    return get


def _share(part: int, whole: int) -> float | None:
    """``part / whole`` to 4 places; None when ``whole`` is 0 (no case measures it)."""
    return round(part / whole, 4) if whole else None


def summarise(source: str, results: Sequence[CaseResult]) -> dict[str, Any]:
    answerable = [r for r in results if not r.should_refuse]
    tp = sum(1 for r in results if r.should_refuse and r.refused)
    fp = sum(1 for r in results if not r.should_refuse and r.refused)
    fn = sum(1 for r in results if r.should_refuse and not r.refused)
    cited = sum(r.cited for r in results)
    answered = [r for r in results if not r.refused]
    kw_cases = [r for r in answerable if r.keywords_total]
    multi = [r for r in results if r.turns]
    scores = rank_scores([r.rank for r in answerable])  # per case: the means are recall@1, @5, MRR
    out: dict[str, Any] = {
        "source": source,
        "cases": len(results),
        "answerable": len(answerable),
        "retrieval": retrieval_metrics([r.rank for r in answerable]),
        # a share of no case is None (JSON null, "n/a" in the table), not 1.0 nor 0.0: no case measured it,
        # and a threshold check of it passes (threshold_results)
        "refusal": {"precision": _share(tp, tp + fp),
                    "recall": _share(tp, tp + fn),
                    "accuracy": round(sum(1 for r in results if r.refused == r.should_refuse) / (len(results) or 1), 4)},
        "citations": {"precision": _share(cited - sum(r.invalid_cited for r in results), cited),
                      "grounding": _share(sum(1 for r in answered if r.invalid_cited == 0), len(answered)),
                      "supported": _share(cited - sum(r.unsupported for r in results), cited),
                      "cite_correct": _share(sum(r.cite_ok for r in results), sum(r.cite_total for r in results))},
        "keyword_coverage": round(statistics.fmean(r.keywords_found / r.keywords_total for r in kw_cases), 4)
        if kw_cases else None,
        "latency_ms": {"search_p50": _pct([r.search_ms for r in results], 0.5),
                       "search_p95": _pct([r.search_ms for r in results], 0.95),
                       "ask_p50": _pct([r.ask_ms for r in results], 0.5),
                       "ask_p95": _pct([r.ask_ms for r in results], 0.95)},
        "ablations": {"fulltext": retrieval_metrics([r.rank_fulltext for r in answerable]),
                      "vector": retrieval_metrics([r.rank_vector for r in answerable])},
        # 95% intervals: Wilson for the proportions, a bootstrap of the cases for MRR
        "intervals": {"recall_at_1": wilson(int(sum(scores["recall_at_1"])), len(answerable)),
                      "recall_at_5": wilson(int(sum(scores["recall_at_5"])), len(answerable)),
                      # over no case, nothing is known: the whole range, as Wilson's (0, 1) (it was [0, 0])
                      "mrr_at_10": bootstrap_mean(scores["mrr_at_10"]) if answerable else [0.0, 1.0],
                      "refusal_precision": wilson(tp, tp + fp), "refusal_recall": wilson(tp, tp + fn)},
        "by_category": {},
        # multi-turn cases: the follow-up refused as it should, or answered citing an expected page
        "follow_ups": {"cases": len(multi), "correct": round(sum(1 for r in multi if r.follow_up_ok) / len(multi), 4)
                       if multi else None},
        "per_case": [asdict(r) for r in results],
    }
    for cat in CATEGORIES:
        rs = [r for r in results if r.category == cat]
        if rs:
            out["by_category"][cat] = {
                "cases": len(rs),
                "refusal_accuracy": round(sum(1 for r in rs if r.refused == r.should_refuse) / len(rs), 4),
                # over the category's answerable cases; with none (refuse, near misses only), not measured
                **category_retrieval([r.rank for r in rs if not r.should_refuse]),
            }
    return out


def calibration_report(cases: Sequence[Case], results: Sequence[CaseResult],
                       retrieval: RetrievalConfig) -> dict[str, Any]:
    """The report's ``calibration``: the threshold search over the results of the calibration half's
    cases only (``results`` are in the order of ``cases``), never a test half's, which thresholds are
    not chosen on; ``{"cases": 0, ...}`` without values when no case of the run is in that half
    (``--split test``, a file pinned to test)."""
    halves = split_of(cases)
    cal = [r for c, r in zip(cases, results, strict=True) if halves[c.id] == "calibration"]
    if not cal:
        return {"cases": 0, "note": "no case of this run is in the calibration half; thresholds are chosen "
                                    "on calibration halves only (run with --split calibration or all)"}
    return {"cases": len(cal), **calibrate_refusal(cal, retrieval)}


def calibrate_refusal(results: Sequence[CaseResult], base: RetrievalConfig | None = None) -> dict[str, Any]:
    """The refusal thresholds that would have been most accurate on these cases (ties: the most
    lenient), from each case's best similarity and term coverage. Use them in ``retrieval:``. Every
    other gate is ``base``'s (the config the cases ran with): with the defaults instead, ``accuracy``
    was not what the four values give in that config."""
    base = base or RetrievalConfig()
    best: tuple[float, float, dict[str, float]] | None = None
    sims = [x / 100 for x in range(10, 80, 2)]
    covs = [x / 10 for x in range(0, 11)]
    for s in sims:
        for c in covs:
            for conf in [x / 100 for x in range(40, 90, 5)]:
                for unk in (0.6, 0.7, 0.75, 0.8, 0.9, 1.01):
                    if conf < s:
                        continue
                    cfg = base.model_copy(update={"min_similarity": s, "min_term_coverage": c,
                                                  "confident_similarity": conf, "unknown_term_similarity": unk})
                    acc = sum(1 for r in results if _would_refuse(r, cfg) == r.should_refuse) / (len(results) or 1)
                    key = (acc, -s - c - unk)
                    if best is None or key > best[:2]:
                        best = (acc, key[1], {"min_similarity": s, "min_term_coverage": c,
                                              "confident_similarity": conf, "unknown_term_similarity": unk})
    assert best is not None
    return {"accuracy": round(best[0], 4), **best[2]}


def _would_refuse(r: CaseResult, cfg: RetrievalConfig) -> bool:
    return not is_relevant(r.similarity, r.coverage, r.unknown_terms, cfg, sentence_similarity=r.sentence_similarity,
                           chunk_coverage=r.chunk_coverage, missing_rarity=r.missing_rarity,
                           shared_pages=r.shared_pages)


def cases_path(config: Config, source: str) -> Path:
    """``eval/<source>.jsonl`` beside the config file, else ``<source>.jsonl`` beside it (a golden
    set: ``eval/sets/<name>.yaml`` with ``eval/sets/<name>.jsonl``)."""
    root = config.path.parent if config.path else Path.cwd()
    default = root / "eval" / f"{source}.jsonl"
    beside = root / f"{source}.jsonl"
    return beside if not default.is_file() and beside.is_file() else default


def results_dir(config: Config) -> Path:
    """``eval/results/`` beside the config file; for a config without an ``eval/`` folder beside it
    (a golden set, ``eval/sets/<name>.yaml``), ``eval_results/`` in its storage folder."""
    root = config.path.parent if config.path else Path.cwd()
    if not (root / "eval").is_dir() and any(root.glob("*.jsonl")):
        return config.storage_path / "eval_results"
    return root / "eval" / "results"


METRIC_KEYS = (("retrieval", "recall_at_1"), ("retrieval", "recall_at_5"), ("retrieval", "mrr_at_10"),
               ("refusal", "precision"), ("refusal", "recall"), ("refusal", "accuracy"),
               ("citations", "precision"), ("citations", "grounding"), ("citations", "supported"),
               ("citations", "cite_correct"),
               ("keyword_coverage", None))


#: check name → (report group, metric, ``eval:`` threshold key); the asset checks and ``eval --check``
THRESHOLD_CHECKS = {"recall_at_5": ("retrieval", "recall_at_5", "min_recall_at_5"),
                    "refusal_accuracy": ("refusal", "accuracy", "min_refusal_accuracy"),
                    "citation_precision": ("citations", "precision", "min_citation_precision")}


def threshold_results(report: dict[str, Any], cfg: EvalConfig) -> list[tuple[str, float | None, float]]:
    """(check name, value, threshold) for each thresholded metric; it passes when value ≥ threshold,
    or when value is None: no case measures it (recall of a cases file of refusals only was 0.0 and
    failed the check)."""
    out: list[tuple[str, float | None, float]] = []
    for name, (group, key, threshold_key) in THRESHOLD_CHECKS.items():
        value = report[group][key]
        if (group == "retrieval" and report.get("answerable") == 0) or not report.get("cases", 1):
            value = None
        out.append((name, value, getattr(cfg, threshold_key)))
    return out


def flat_metrics(report: dict[str, Any]) -> dict[str, float]:
    """The report's figures by flat name; a figure no case measured (None) is left out, so the history
    line and the asset's metadata hold no made-up 1.0 or 0.0 and the chart shows a gap."""
    out = {}
    for a, b in METRIC_KEYS:
        value = report[a][b] if b else report[a]
        if value is not None:
            out[f"{a}_{b}" if b else a] = float(value)
    for k, v in report["latency_ms"].items():
        out[f"latency_{k}_ms"] = float(v)
    for name, m in report["ablations"].items():
        for k, v in m.items():
            if v is not None:
                out[f"{name}_only_{k}" if name != "no_rerank" else f"{name}_{k}"] = float(v)
    if "cost" in report:
        out["cost_per_100_calls"] = float(report["cost"]["cost_per_100_calls"])
    if (report.get("follow_ups") or {}).get("correct") is not None:
        out["follow_up_correct"] = float(report["follow_ups"]["correct"])
    return out


def results_label(cases_file: str | Path | None, split: str) -> str:
    """What names the results files of a run that is not the golden one (its own cases file, one
    half): ``""`` for the golden run, ``test`` for a half, ``cases.drafts`` for a cases file and
    ``cases.drafts.test`` for its half, so a draft or half run never replaces the golden results nor
    joins their history, nor another kind of run's. A cases file's name is marked (``cases.``) and
    keeps no dot of its own, so it is never a half's label (``drafts/test.jsonl`` wrote ``test``, the
    golden test half's files) nor another file's half (``a.test.jsonl`` and ``a.jsonl`` with
    ``--split test``); and no source name holds a dot."""
    if not cases_file:
        return split if split != "all" else ""
    label = "cases." + re.sub(r"[^A-Za-z0-9_-]+", "_", Path(cases_file).stem)
    return label + (f".{split}" if split != "all" else "")


def write_results(report: dict[str, Any], folder: Path, *, label: str = "") -> dict[str, Path]:
    """Per-case results, a history line and a chart of the last runs, under ``eval/results/``
    (``<source>-latest.json``, or ``<source>-<label>-latest.json`` for a run with a label)."""
    folder.mkdir(parents=True, exist_ok=True)
    src = f"{report['source']}-{label}" if label else report["source"]
    stamp = time.strftime("%Y%m%dT%H%M%S")
    latest = folder / f"{src}-latest.json"
    atomic_write(latest, json.dumps(report, indent=2).encode())  # a kill mid-write left a cut file
    history = folder / f"{src}-history.jsonl"
    with history.open("a+b") as f:
        # a run killed while appending left a line without its newline: this line starts on its own
        # line, or it would be glued to that one and be unreadable too
        cut = False
        if f.seek(0, 2) > 0:
            f.seek(-1, 2)
            cut = f.read(1) != b"\n"
        line = json.dumps({"at": stamp, **flat_metrics(report)}) + "\n"
        f.write((("\n" if cut else "") + line).encode())
    chart = folder / f"{src}-history.png"
    plot_history(history, chart, title=f"eval: {src}")
    return {"latest": latest, "history": history, "chart": chart}


def _history_rows(history: Path) -> list[dict[str, Any]]:
    """The runs in ``history``, one JSON object per line; a line that is not one (cut short when a run
    was killed while appending it, or edited by hand) is left out rather than failing the next eval."""
    rows = []
    for line in history.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def plot_history(history: Path, out: Path, *, title: str, last: int = 20) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = _history_rows(history)[-last:]
    keys = ["retrieval_recall_at_1", "retrieval_recall_at_5", "retrieval_mrr_at_10", "refusal_accuracy",
            "citations_precision", "citations_supported", "keyword_coverage"]
    fig, ax = plt.subplots(figsize=(8, 4), dpi=100)
    xs = list(range(1, len(rows) + 1))
    for k in keys:
        ax.plot(xs, [r.get(k, float("nan")) for r in rows], marker="o", label=k)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("run")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="lower left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def markdown_table(report: dict[str, Any]) -> str:
    lines = ["| category | cases | refusal accuracy | recall@1 | recall@5 | MRR@10 |", "|---|---|---|---|---|---|"]
    for cat, m in report["by_category"].items():
        cells = [m["refusal_accuracy"], m["recall_at_1"], m["recall_at_5"], m["mrr_at_10"]]
        lines.append(f"| {cat} | {m['cases']} | " + " | ".join("n/a" if v is None else f"{v:.2f}" for v in cells) + " |")
    return "\n".join(lines)


def print_table(report: dict[str, Any]) -> str:
    r, rf, c, lat = report["retrieval"], report["refusal"], report["citations"], report["latency_ms"]
    ab = report["ablations"]
    rows = [
        ("cases", report["cases"], "", ""),
        ("recall@1", r["recall_at_1"], ab["fulltext"]["recall_at_1"], ab["vector"]["recall_at_1"]),
        ("recall@5", r["recall_at_5"], ab["fulltext"]["recall_at_5"], ab["vector"]["recall_at_5"]),
        ("MRR@10", r["mrr_at_10"], ab["fulltext"]["mrr_at_10"], ab["vector"]["mrr_at_10"]),
        ("refusal precision", rf["precision"], "", ""), ("refusal recall", rf["recall"], "", ""),
        ("refusal accuracy", rf["accuracy"], "", ""), ("citation precision", c["precision"], "", ""),
        ("grounding", c["grounding"], "", ""), ("supported", c["supported"], "", ""),
        ("cite-correct", c.get("cite_correct"), "", ""),
        ("keyword coverage", report["keyword_coverage"], "", ""),
        ("search p50/p95 ms", f"{lat['search_p50']}/{lat['search_p95']}", "", ""),
        ("ask p50/p95 ms", f"{lat['ask_p50']}/{lat['ask_p95']}", "", ""),
    ]
    if "no_rerank" in ab:
        nr = ab["no_rerank"]
        rows.insert(4, ("no-rerank R@1/R@5/MRR", "/".join(_na(nr[k]) for k in ("recall_at_1", "recall_at_5", "mrr_at_10")),
                        "", ""))
    if "cost" in report:
        rows.append(("cost / 100 calls", report["cost"]["cost_per_100_calls"], "", ""))
    fu = report.get("follow_ups") or {}
    if fu.get("cases"):
        rows.append((f"follow-ups ({fu['cases']})", fu["correct"], "", ""))
    base = report.get("baseline")
    head = f"{'metric':<20} {'hybrid':>12} {'fulltext':>10} {'vector':>10}" + (f" {'baseline':>10}" if base else "")
    out = [head]
    for a, b, c_, d in rows:
        line = f"{a:<20} {_na(b):>12} {_na(c_):>10} {_na(d):>10}"
        if base:
            key = {"recall@1": "recall_at_1", "recall@5": "recall_at_5", "MRR@10": "mrr_at_10"}.get(a)
            line += f" {_na(base[key]):>10}" if key else ""
        out.append(line)
    out.extend(interval_lines(report))
    return "\n".join(out)


def _na(value: Any) -> str:
    """A table cell: ``n/a`` for a figure no case measured (None)."""
    return "n/a" if value is None else str(value)


def _iv(ci: Sequence[float], signed: bool = False) -> str:
    f = "{:+.2f}" if signed else "{:.2f}"
    return f"[{f.format(ci[0])}, {f.format(ci[1])}]"


def interval_lines(report: dict[str, Any]) -> list[str]:
    """The 95% intervals of the headline figures and, with a baseline, the paired comparison."""
    iv = report.get("intervals")
    out = []
    if iv:
        out.append("95% intervals: " + ", ".join(f"{label} {_iv(iv[key])}" for label, key in (
            ("recall@1", "recall_at_1"), ("recall@5", "recall_at_5"), ("MRR@10", "mrr_at_10"),
            ("refusal precision", "refusal_precision"), ("refusal recall", "refusal_recall"))))
    cmp = report.get("baseline_comparison")
    if cmp and cmp.get("cases"):  # no answerable case: nothing was compared
        parts = [f"{label} {cmp[key]['diff']:+.2f} {_iv(cmp[key]['ci95'], True)} won {cmp[key]['won']} "
                 f"lost {cmp[key]['lost']} p={cmp[key]['p_value']:.2f}"
                 for label, key in (("recall@1", "recall_at_1"), ("recall@5", "recall_at_5"), ("MRR@10", "mrr_at_10"))]
        out.append(f"vs baseline ({cmp['cases']} cases): " + "; ".join(parts))
    return out


def upload_to_langsmith(report: dict[str, Any], cases: Sequence[Case], *, experiment: str | None = None) -> str | None:
    """With LangSmith configured, upload the cases as a dataset and this run as an experiment whose
    runs carry the same metrics as feedback (evaluators). Without, nothing is sent; returns None."""
    from . import tracing

    if not tracing.enabled():
        return None
    try:
        return _upload(report, cases, experiment)
    except Exception as exc:  # noqa: BLE001 - an unreachable LangSmith must not lose the evaluation
        import logging

        logging.getLogger(__name__).warning("LangSmith upload failed: %s", exc)
        return None


def _upload(report: dict[str, Any], cases: Sequence[Case], experiment: str | None) -> str:
    import uuid

    from . import tracing

    client = tracing.client()  # short timeouts, no hidden retries: an outage fails this fast, the eval stays
    name = f"docs-rag-{report['source']}"
    try:
        dataset = client.read_dataset(dataset_name=name)
    except Exception:  # noqa: BLE001 - not there yet
        dataset = client.create_dataset(dataset_name=name, description=f"Golden cases of source {report['source']}")
    examples = client.create_examples(
        inputs=[{"question": c.question} for c in cases],
        outputs=[{"expected_urls": list(c.expected_urls), "expected_keywords": list(c.expected_keywords),
                  "should_refuse": c.should_refuse} for c in cases],
        metadata=[{"case_id": c.id, "category": c.category} for c in cases],
        dataset_id=dataset.id)
    example_ids = _example_ids(examples, len(cases))
    project = experiment or f"{name}-{time.strftime('%Y%m%dT%H%M%S')}"
    session = client.create_project(project, reference_dataset_id=dataset.id,
                          metadata={"source": report["source"], **flat_metrics(report)})
    for i, r in enumerate(report["per_case"]):
        run_id = uuid.uuid4()
        client.create_run(name="ask", run_type="chain", inputs={"question": r["question"]},
                          outputs={"answer": r["answer"], "refused": r["refused"]}, project_name=project, id=run_id,
                          reference_example_id=example_ids[i] if i < len(example_ids) else None)
        scores = {"refusal_correct": float(r["refused"] == r["should_refuse"]),
                  "citations_valid": float(r["invalid_cited"] == 0)}
        if not r["should_refuse"]:
            scores["hit_at_5"] = float(r["rank"] is not None and r["rank"] <= 5)
            scores["reciprocal_rank"] = 1.0 / r["rank"] if r["rank"] else 0.0
            if r["keywords_total"]:
                scores["keyword_coverage"] = r["keywords_found"] / r["keywords_total"]
        for key, score in scores.items():
            client.create_feedback(run_id, key=key, score=score, trace_id=run_id, session_id=session.id)
    client.flush(timeout=60)
    return project


def _example_ids(examples: Any, n: int) -> list[Any]:
    if isinstance(examples, dict):  # newer clients answer {"example_ids": [...], "count": n}
        return list(examples.get("example_ids") or [])[:n]
    return [getattr(e, "id", None) for e in (examples or [])][:n]
