"""Reranking through an HTTP endpoint of the common ``/rerank`` shape (``retrieval.rerank``).

Request: ``{"query", "documents": [str], "top_n", "model"}``; response: ``{"results": [{"index",
"relevance_score"}]}`` (Cohere, Jina, Voyage, text-embeddings-inference and most local servers speak
it). Any failure (unreachable, timeout, an HTTP error, a body that is not that shape) keeps the
fused order and says why in a warning: a search never fails because the reranker did.
"""

from __future__ import annotations

import json
import math
import os
import time
from typing import Sequence

from .config import RerankConfig
from .http_deadline import read1
from .masking import without_url_userinfo
from .records import Hit

#: the largest rerank answer read (a score per document is a few dozen bytes)
MAX_ANSWER_BYTES = 16 * 2**20


class RerankError(RuntimeError):
    """The rerank endpoint failed; the message says how."""


def document_text(h: Hit) -> str:
    head = " > ".join([h.title, *h.headings]) if h.title else " > ".join(h.headings)
    return f"{head}\n{h.text}" if head else h.text


def call_reranker(cfg: RerankConfig, query: str, documents: Sequence[str]) -> list[tuple[int, float]]:
    """(index, relevance score) pairs from the endpoint, best first; :class:`RerankError` on any failure."""
    import requests

    headers = {"Content-Type": "application/json"}
    if cfg.api_key_env:
        key = os.environ.get(cfg.api_key_env)
        if not key:
            raise RerankError(f"retrieval.rerank.api_key_env: environment variable {cfg.api_key_env} is not set")
        headers["Authorization"] = f"Bearer {key}"
    payload: dict = {"query": query, "documents": list(documents), "top_n": min(cfg.top_n or len(documents),
                                                                               len(documents))}
    if cfg.model:
        payload["model"] = cfg.model
    # timeout_seconds bounds the whole answer, not each read: a trickling endpoint is cut off too
    deadline = time.monotonic() + cfg.timeout_seconds
    try:
        with requests.post(cfg.url, json=payload, headers=headers, timeout=cfg.timeout_seconds, stream=True) as resp:
            if resp.status_code != 200:
                raise RerankError(f"the rerank endpoint answered HTTP {resp.status_code}")
            data = bytearray()
            while chunk := read1(resp):
                data += chunk
                if time.monotonic() > deadline:
                    raise RerankError(f"the rerank endpoint did not complete its answer within "
                                      f"{cfg.timeout_seconds:g} s")
                if len(data) > MAX_ANSWER_BYTES:
                    raise RerankError(f"the rerank endpoint's answer is over {MAX_ANSWER_BYTES // 2**20} MiB")
    except requests.Timeout as exc:
        raise RerankError(f"the rerank endpoint did not answer within {cfg.timeout_seconds:g} s") from exc
    except requests.RequestException as exc:
        # the URL without a user and password written into it: the warning goes to every client
        raise RerankError(f"the rerank endpoint at {without_url_userinfo(str(cfg.url))} is unreachable "
                          f"({type(exc).__name__})") from exc
    try:
        body = json.loads(bytes(data))
    except ValueError as exc:
        raise RerankError("the rerank endpoint's answer is not JSON") from exc
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, list):
        raise RerankError("the rerank endpoint's answer has no 'results' list")
    out: list[tuple[int, float]] = []
    seen: set[int] = set()
    for r in results:
        idx = r.get("index") if isinstance(r, dict) else None
        score = r.get("relevance_score") if isinstance(r, dict) else None
        if (not isinstance(idx, int) or isinstance(idx, bool) or not 0 <= idx < len(documents) or idx in seen
                or not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(score)):
            raise RerankError("the rerank endpoint's answer has a result without a valid 'index' and "
                              "'relevance_score'")
        seen.add(idx)
        out.append((idx, float(score)))
    return sorted(out, key=lambda x: -x[1])


def rerank(cfg: RerankConfig, query: str, hits: list[Hit]) -> tuple[list[Hit], str | None]:
    """The hits in the reranker's order (those it did not score follow, in fused order), or the
    fused order and a warning when it failed. Each reranked hit's ``score`` is its relevance score (its
    ``fused_score`` stays the fused one)."""
    if len(hits) < 2:
        return hits, None
    try:
        scored = call_reranker(cfg, query, [document_text(h) for h in hits])
    except RerankError as exc:
        return hits, f"{exc}; the results are in fused (unreranked) order"
    ranked = [hits[i] for i, _ in scored]
    for (_, score), h in zip(scored, ranked):
        if h.fused_score is None:
            h.fused_score = h.score
        h.score = round(score, 6)
    chosen = {i for i, _ in scored}
    return ranked + [h for i, h in enumerate(hits) if i not in chosen], None
