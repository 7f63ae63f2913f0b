"""Hybrid search: LanceDB full-text (BM25) + vector, fused with reciprocal rank fusion.

Each retriever keeps its raw score (BM25, cosine similarity) on the hit, so answering can tell a
relevant result from a merely best one.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Iterable

import numpy as np

from .answering.markers import question_text
from .context import Context
from .embedding import embed_query
from .metadata_rules import shared_values
from .records import Hit
from .store import FILTER_KEY_RE, FILTER_KEY_RULE, naming_table, sql_in, sql_str
from .unicode_text import without_controls
from .words import folded, fulltext_text, query_words

MODES = ("hybrid", "fulltext", "vector")


class QueryError(ValueError):
    """A malformed query or filter, with what to change; ``code`` and ``field`` as the HTTP API names
    them (e.g. ``unknown_source``, ``source``) when the check is one the interfaces share."""

    def __init__(self, message: str, *, code: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.code, self.field = code, field


class Hits(list):
    """Search results: a list of :class:`Hit`, with a ``warning`` when a part failed and was
    skipped (the reranker: the results are then in fused order)."""

    warning: str | None = None
    #: pages the full-text and the vector ranking both put among their first 5 (of their first 10
    #: chunks; None unless a hybrid search had both): sharing none, neither found what was asked
    shared_pages: int | None = None
    #: the SQL condition the search read its rows under (its source and filters, the configured
    #: sources): the chunks an answer adds to the hits (a thin hit's parent section) must meet it too
    where: str | None = None

    def __getitem__(self, index):  # noqa: ANN001, ANN204 - a slice keeps the search's warning and agreement
        got = super().__getitem__(index)
        if isinstance(index, slice):
            out = Hits(got)
            out.warning, out.shared_pages, out.where = self.warning, self.shared_pages, self.where
            return out
        return got


def tag_values(value: str | int | float | bool) -> list[str]:
    """The texts a tag may give ``value`` (``chunking.metadata_tags`` writes ``str`` of it, booleans as
    ``true``/``false``): a number matches an equal number stored as an int or a float, so ``10`` and ``10.0``
    find ``count: 10`` and ``count: 10.0`` alike."""
    if isinstance(value, bool):
        return [str(value).lower()]
    if isinstance(value, int):
        return [str(value), repr(float(value))] if abs(value) < 2 ** 53 else [str(value)]  # exact as a float
    if isinstance(value, float) and value.is_integer():
        return [repr(value), str(int(value))]
    return [str(value)]


def filter_sql(source: str | None, filters: dict[str, Any] | None, *, shared: dict[str, str] | None = None,
               defaults: dict[str, dict[str, str]] | None = None) -> str | None:
    """SQL for a source and metadata filters. A filter value may be a scalar or a list (any of).
    ``shared`` maps a key to the value of pages shared by all values (a filter on the key matches it too);
    ``defaults`` maps a source name to its ``shared`` (``metadata_rules.shared_values``): a filter on the key
    matches that source's pages with that source's default, whatever the other sources' defaults are."""
    parts: list[str] = []
    if source:
        parts.append(f"source = {sql_str(source)}")
    for key, value in (filters or {}).items():
        if not isinstance(key, str) or not FILTER_KEY_RE.fullmatch(key):
            raise QueryError(f"filters: invalid key {key!r}; use {FILTER_KEY_RULE}")
        values = value if isinstance(value, list) else [value]
        if not values or not all(isinstance(v, (str, int, float, bool)) for v in values):
            raise QueryError(f"filters.{key}: expected a string, number, boolean or a list of them")
        if key == "source":
            parts.append("(" + " OR ".join(f"source = {sql_str(str(v))}" for v in values) + ")")
            continue
        if shared and key in shared and shared[key] not in values:
            values = [*values, shared[key]]
        texts = list(dict.fromkeys(f"{key}={t}" for v in values for t in tag_values(v)))
        cond = f"array_has_any(tags, [{', '.join(sql_str(t) for t in texts)}])"
        by_default: dict[str, list[str]] = {}  # a default's tag → the sources whose rule on the key gives it
        for name, keys in (defaults or {}).items():
            if keys.get(key) is not None and f"{key}={keys[key]}" not in texts:
                by_default.setdefault(f"{key}={keys[key]}", []).append(name)
        if by_default:
            cond = "(" + " OR ".join([cond, *(f"({sql_in('source', names)} AND array_has_any(tags, [{sql_str(tag)}]))"
                                              for tag, names in by_default.items())]) + ")"
        parts.append(cond)
    return " AND ".join(parts) or None


def _row_hit(r: dict[str, Any]) -> Hit:
    import json

    return Hit(chunk_id=r["chunk_id"], source=r["source"], url=r["url"], page_url=r["page_url"],
               title=r["title"], headings=list(r["headings"] or []), text=r["text"], score=0.0,
               parent_id=r["parent_id"], chunk_index=r["chunk_index"],
               metadata=json.loads(r["metadata"] or "{}") if isinstance(r["metadata"], str) else r["metadata"])


def _cosine(qv: np.ndarray, vec: Iterable[float]) -> float:
    v = np.asarray(vec, dtype=np.float32)
    n = float(np.linalg.norm(v)) or 1.0
    return float(np.dot(qv, v) / n)


def _fts_query(query: str) -> str:
    """BM25 over the question's words: punctuation must not reach the query parser, and function
    words ("how", "do", "I") only add noise to the scores on a small corpus. A question made only of
    function words keeps them (English's, and those of the question's language when it is another:
    ``languages.language``). Chinese, Japanese, Korean and Thai runs become character bigrams, as
    in the indexed text (``words.fulltext_text``)."""
    from .answering.extractive import STOPWORDS, question_language
    from .languages import stopwords

    words = query_words(fulltext_text(query))
    if not FTS_STOPWORDS:
        return " ".join(words)
    other = stopwords(question_language(query))
    kept = [w for w in words if w.lower() not in STOPWORDS and (not other or unicodedata.normalize("NFC", w.casefold()) not in other)]
    return " ".join(kept or words)


# Tuning knobs of the fusion, chosen on the calibration halves of the golden sets (eval/sets) with
# eval/tune_retrieval.py; module constants so the experiments can vary them.
FTS_STOPWORDS = True
VECTOR_WEIGHT = 1.0
#: the full-text ranking counts 1.6 times the vector one in the fusion: on the calibration halves of
#: five sets (nodejs added) 1.6 was best or tied on every set against 0.8 to 2.5, and decided every
#: refusal as 1.3 did (eval/tune_retrieval.py, docs/retrieval.md)
FULLTEXT_WEIGHT = 1.6
#: weight of the page-level fusion added to every chunk's score (0: chunk-level RRF only)
PAGE_WEIGHT = 0.5
#: a chunk that reads like a list (an index, release-note bullets, names) or a release-notes
#: section counts this much in the fusion, unless the question is about releases
LIST_LIKE_FACTOR = 0.5
_FUNCTION_SHARE = 0.1
#: a chunk with few English function words is still prose (German, French, any language) when this
#: share of its words is in lines of whole sentences, of at least _PROSE_SENTENCE_WORDS words each on average
_PROSE_SHARE = 0.6
_PROSE_SENTENCE_WORDS = 6
_LIST_LINE = re.compile(r"^(?:[-*+•]\s|\d+[.)]\s|#{1,6}\s)|\s\|\s")
_SENTENCE_STOP = re.compile(r"[.!?。！？](?=[\"'”’»」』)\]]*(?:\s|$))")
_LINE_ENDS_SENTENCE = re.compile(r"[.!?。！？][\"'”’»」』)\]]*$")
_RELEASE_HEADING = re.compile(r"\b\d+\.\d+\.\d+\b")
_RELEASE_QUERY = re.compile(r"\d|\b(release|released|releases|version|versions|changelog|changed|changes|added|"
                            r"deprecated|removed|dropped|history|latest|new)\b", re.I)


def is_source_code_page(hit: Hit) -> bool:
    """A chunk of a page of source code generated beside the docs (Sphinx's viewcode pages, which
    "[source]" links open): it repeats the docstrings of the API pages, which are what a citation
    should name, so it counts like a list in the fusion."""
    return (hit.metadata or {}).get("page_kind") == "source code"


def is_list_like(text: str, headings: Iterable[str]) -> bool:
    """A chunk with almost no function words outside code (an index, a list of names, terse
    bullets) or under a release-notes heading (a version number such as 2.28.1). The function words
    are English ones; a chunk with few of them is still no list when it reads as prose by its
    structure (:func:`_reads_as_prose`): prose in German, French or any other language."""
    from .answering.extractive import STOPWORDS

    if any(_RELEASE_HEADING.search(h or "") for h in headings):
        return True
    prose = re.sub(r"```.*?(```|$)", " ", text, flags=re.S)
    words = re.findall(r"[a-z]+", prose.lower())
    if len(words) < 8:
        return False
    return sum(w in STOPWORDS for w in words) / len(words) < _FUNCTION_SHARE and not _reads_as_prose(prose)


def _reads_as_prose(text: str) -> bool:
    """Most of ``text``'s words are in lines of whole sentences (not bullets, table rows or headings;
    ending with a full stop, ``!``, ``?`` or ``。！？``) of ordinary length: running text in any
    language, where an index, a list of names or terse bullets are fragments."""
    total = in_prose = sentences = 0
    for line in text.split("\n"):
        line = line.strip().removeprefix("…").strip()
        n = len(line.split())
        total += n
        if n and not _LIST_LINE.search(line) and _LINE_ENDS_SENTENCE.search(line):
            in_prose += n
            sentences += len(_SENTENCE_STOP.findall(line))
    return (total > 0 and in_prose >= _PROSE_SHARE * total
            and in_prose >= _PROSE_SENTENCE_WORDS * max(sentences, 1))


def search(ctx: Context, query: str, *, top_k: int = 5, source: str | None = None,
           filters: dict[str, Any] | None = None, mode: str = "hybrid", rerank: bool = True) -> Hits:
    """The ``top_k`` best chunks. With ``retrieval.rerank`` configured (and ``rerank``, in hybrid
    mode) the best fused candidates are reordered by the rerank endpoint; when it fails, the fused
    order is kept and the result's ``warning`` says why."""
    if isinstance(query, str):  # pasted with a terminal's colours (ESC [ 31 m): read as its text, as documents are
        # and without the citation markers pasted with it from an answer ("retry on 429 [1]"), as ask reads it
        query = question_text(without_controls(query))
    if not isinstance(query, str) or not query.strip():
        raise QueryError("query: must be a non-empty string")
    if mode not in MODES:
        raise QueryError(f"mode: {mode!r} is not one of {', '.join(MODES)}", code="invalid_mode", field="mode")
    if not isinstance(top_k, int) or top_k < 1:
        raise QueryError("top_k: must be a positive integer")
    tbl = ctx.index()  # NothingIndexed before the first ingest: not "no results", nor "not covered"
    named = filters.get("source") if isinstance(filters, dict) else None  # the sources filters.source names
    named = None if named is None else {str(v) for v in (named if isinstance(named, list) else [named])}
    defaults = {src.name: shared_values(src.metadata_rules) for src in ctx.config.sources
                if (source is None or src.name == source) and (named is None or src.name in named)}
    where = filter_sql(source, filters, defaults=defaults)
    if source is None:  # rows of a source removed from the config are never served, pruned or not
        configured = configured_sources(ctx)
        where = f"({where}) AND {configured}" if where else configured
    n = max(ctx.config.retrieval.candidates, top_k * 4)
    qv = embed_query(ctx.embedder, folded(query))  # the model reads a fullwidth letter as an unknown piece
    cols = ["chunk_id", "source", "page_url", "url", "title", "headings", "parent_id", "chunk_index", "text",
            "metadata", "vector"]
    ranked: dict[str, list[dict[str, Any]]] = {}
    if mode in ("hybrid", "vector"):
        q = tbl.search(qv, vector_column_name="vector").distance_type("cosine").select(cols)
        parts = ctx.chunks.ann_partitions()
        if parts:  # probe a tenth of the partitions (at least nprobes): near-exact on real embeddings
            q = q.nprobes(max(ctx.config.retrieval.nprobes, parts // 10))
        if where:
            q = q.where(where, prefilter=True)
        with naming_table(ctx.chunks.name):  # a data file cut short does not name its table
            ranked["vector"] = q.limit(n).to_arrow().to_pylist()
    words = _fts_query(query)
    if mode in ("hybrid", "fulltext") and words and _has_fts(tbl):
        q = tbl.search(words, query_type="fts").select(cols)
        if where:
            q = q.where(where, prefilter=True)
        with naming_table(ctx.chunks.name):
            ranked["fulltext"] = q.limit(n).to_arrow().to_pylist()
    k = ctx.config.retrieval.rrf_k
    fused: dict[str, Hit] = {}
    about_releases = bool(_RELEASE_QUERY.search(query))
    factor: dict[str, float] = {}
    for name, rows in ranked.items():
        weight = VECTOR_WEIGHT if name == "vector" else FULLTEXT_WEIGHT
        for rank, r in enumerate(rows):
            hit = fused.get(r["chunk_id"])
            if hit is None:
                hit = _row_hit(r)
                hit.vector_similarity = _cosine(qv, r["vector"])
                fused[r["chunk_id"]] = hit
                factor[r["chunk_id"]] = (LIST_LIKE_FACTOR if mode == "hybrid" and (
                    is_source_code_page(hit) or (not about_releases and is_list_like(hit.text, hit.headings)))
                    else 1.0)
            hit.score += weight * factor[r["chunk_id"]] / (k + rank + 1)
            if name == "fulltext":
                hit.fulltext_score = float(r.get("_score") or 0.0)
    if PAGE_WEIGHT and mode == "hybrid":
        # page-level fusion: each retriever's pages in order of their first chunk, so that many
        # chunks of one page do not push the other pages down; every chunk gets its page's share
        # (a page is its source's: two sources may index the same URL, and they are two pages)
        page_score: dict[tuple[str, str], float] = {}
        for name, rows in ranked.items():
            weight = VECTOR_WEIGHT if name == "vector" else FULLTEXT_WEIGHT
            seen_pages: list[tuple[str, str]] = []
            for r in rows:
                page = (r["source"], r["page_url"])
                if page in seen_pages or factor.get(r["chunk_id"], 1.0) < 1.0:
                    continue
                seen_pages.append(page)
                page_score[page] = page_score.get(page, 0.0) + weight / (k + len(seen_pages))
        for hit in fused.values():
            hit.score += PAGE_WEIGHT * page_score.get((hit.source, hit.page_url), 0.0)
    hits = sorted(fused.values(), key=lambda h: (-h.score, -(h.vector_similarity or 0.0)))
    rr = ctx.config.retrieval.rerank if rerank and mode == "hybrid" else None
    pool = max(top_k, rr.candidates) if rr is not None else top_k
    seen_text: set[str] = set()
    shared = (len(_first_pages(ranked["vector"]) & _first_pages(ranked["fulltext"]))
              if mode == "hybrid" and "vector" in ranked and "fulltext" in ranked else None)
    out = Hits()
    for h in hits:
        key = re.sub(r"\s+", " ", h.text).strip().lower()
        if key in seen_text:
            continue
        seen_text.add(key)
        h.score = h.fused_score = round(h.score, 6)
        out.append(h)
        if len(out) == pool:
            break
    if not out:
        _require_indexed(ctx, source, named)
    if rr is not None:
        from .rerank import rerank as rerank_hits

        ranked, warning = rerank_hits(rr, query, list(out))
        out = Hits(ranked[:top_k])
        out.warning = warning
    out.shared_pages, out.where = shared, where
    return out


def _require_indexed(ctx: Context, source: str | None, named: set[str] | None) -> None:
    """:class:`~.config.SourceNotIndexed` when a search that found nothing was limited to sources none of
    which was ever ingested here (no rows and no recorded settings: a source just added to the config),
    rather than an empty result that reads as "no results" and a refusal that blames the docs. A source
    that was ingested and has no chunks (every page excluded) still gives an empty result."""
    from .config import SourceNotIndexed
    from .refresh import SETTINGS_FILE

    if source is None and named is None:
        return
    limited = [s.name for s in ctx.config.sources
               if (source is None or s.name == source) and (named is None or s.name in named)]
    if not limited:
        return
    for name in limited:
        if (ctx.source_dir(name) / SETTINGS_FILE).is_file() or ctx.chunks.count(name):
            return
    raise SourceNotIndexed(str(ctx.config.storage_path), ctx.chunks.name, limited)


def _first_pages(rows: list[dict[str, Any]], n: int = 5, depth: int = 10) -> set[tuple[str, str]]:
    """The first ``n`` pages of a ranking's first ``depth`` chunks, each as (source, page URL): two
    sources indexing the same URL have two pages."""
    return set(list(dict.fromkeys((r["source"], r["page_url"]) for r in rows[:depth]))[:n])


def _has_fts(tbl) -> bool:  # noqa: ANN001
    try:
        return any(getattr(i, "index_type", "") == "FTS" or "FTS" in str(i) for i in tbl.list_indices())
    except Exception:  # pragma: no cover - an index listing problem means: no full-text leg
        return False


def configured_sources(ctx: Context) -> str:
    """The SQL condition every read of the query path adds: rows of a source removed from the config
    are never served (search, a chunk, a page, its parents), whether pruned yet or not."""
    return sql_in("source", [s.name for s in ctx.config.sources])


def get_chunk(ctx: Context, chunk_id: str) -> dict[str, Any] | None:
    """A served chunk by id, or None. Like a search, :class:`~.config.StorageMissing` or
    :class:`~.config.NothingIndexed` when there is no index to look in: "no chunk with that id" (a 404)
    told a client following a citation that the chunk was gone when the storage folder was."""
    ctx.index()
    rows = ctx.chunks.rows(f"chunk_id = {sql_str(chunk_id)} AND {configured_sources(ctx)}")
    return rows[0] if rows else None


def parent_chain(ctx: Context, chunk_id: str, *, limit: int = 20) -> list[dict[str, Any]]:
    """The chunk and its ancestors, nearest first."""
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    cur: str | None = chunk_id
    while cur and cur not in seen and len(chain) < limit:
        seen.add(cur)
        row = get_chunk(ctx, cur)
        if row is None:
            break
        chain.append(row)
        cur = row["parent_id"]
    return chain


def page_rows(ctx: Context, url: str, *, source: str | None = None) -> list[dict[str, Any]]:
    """A page's chunks in reading order; ``url`` may be a chunk URL (its anchor is ignored). When
    several configured sources index the same URL, the chunks of the one first in the config."""
    ctx.index()  # no index is no index, not "no such page" (see get_chunk)
    page_url = url.split("#", 1)[0]
    where = (f"page_url = {sql_str(page_url)} AND {configured_sources(ctx)}"
             + (f" AND source = {sql_str(source)}" if source else ""))
    order = {s.name: i for i, s in enumerate(ctx.config.sources)}
    rows = sorted(ctx.chunks.rows(where), key=lambda r: (order.get(r["source"], len(order)), r["chunk_index"]))
    return [r for r in rows if r["source"] == rows[0]["source"]] if rows else []
