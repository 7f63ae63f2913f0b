"""What an answer reads besides its hits' order: the fused score under a reranker, a thin hit's parent
section (within the request's filters; a hit that is a parent stays a hit), and pages of two sources
that index the same URL (page-level fusion, the shared-pages count, the extractive lead-in's next
chunk). Real LanceDB in temp dirs, real local rerank and OpenAI-compatible servers."""

from __future__ import annotations

from pathlib import Path

import pytest

from docs_rag_pipeline import refresh
from docs_rag_pipeline.context import get_context
from docs_rag_pipeline.query import ask, search

from .conftest import write_config, write_docs
from .fake_llm import ChatServer
from .local_http import LocalServer, QuietHandler


def _ingest(cfg: Path, *sources: str) -> str:
    ctx = get_context(str(cfg))
    for name in sources:
        refresh.refresh(ctx, name)
    return str(cfg)


def _copy(cfg: Path, name: str, extra: str) -> str:
    out = cfg.parent / name
    out.write_text(cfg.read_text() + extra)
    return str(out)


class _Reranker(LocalServer):
    """A ``/rerank`` endpoint that keeps the given order, scoring as Cohere or Jina do: 0.95, 0.475, …"""

    def __init__(self) -> None:
        class Handler(QuietHandler):
            def do_POST(self):  # noqa: N802
                import json

                docs = json.loads(self.read_body())["documents"]
                self.send_json(200, {"results": [{"index": i, "relevance_score": round(0.95 / (i + 1), 3)}
                                                 for i in range(len(docs))]})

        super().__init__(Handler)


# ---- F3: a reranker's relevance score is not the fused score -------------------------------------

def test_a_reranked_extractive_answer_quotes_what_the_fused_one_quotes(tmp_path):
    """The extractive answer adds a small bonus of the chunk's fused score to each sentence (0.05 × 60 ×
    ~0.03); a relevance score of 0.95 put there lifted every sentence of the top chunk over "60% of the
    best", so the kitchen and the parking permits joined the answer about backups. Citations keep the
    fused score (retrieval.md's Citations table), the reranked hit its relevance score and its fused one."""
    write_docs(tmp_path / "docs", {
        "page.md": """
            # Operations

            ## Backups

            Nightly backups of the vault are kept for thirty days in the cold bucket. The office kitchen is cleaned on Fridays by the facilities team. Parking permits are renewed every January at the front desk. The company picnic happens in June near the lake.
        """,
        "other.md": "# Networking\n\n## Firewall\n\nThe firewall blocks inbound traffic on every port except 443.\n",
    })
    plain = _ingest(write_config(tmp_path), "guide")
    q = "How long are nightly backups of the vault kept?"
    with _Reranker() as srv:
        reranked = _copy(Path(plain), "rerank.yaml", f"retrieval:\n  rerank:\n    url: {srv.url}/rerank\n")
        fused = search(q, top_k=3, config=plain)
        hits = search(q, top_k=3, config=reranked)
        assert hits.warning is None and hits[0].score == 0.95
        assert [(h.chunk_id, h.fused_score) for h in hits] == [(h.chunk_id, h.score) for h in fused]
        without, with_ = ask(q, config=plain, remember=False), ask(q, config=reranked, remember=False)
    assert not without.refused and "thirty days" in without.answer
    assert with_.answer == without.answer
    for word in ("kitchen", "Parking", "picnic"):
        assert word not in with_.answer
    assert [(c.chunk_id, c.score) for c in with_.citations] == [(c.chunk_id, c.score) for c in without.citations]
    assert with_.citations[0].score == fused[0].score


# ---- F6, F7: a thin hit's parent section in the LLM's prompt -------------------------------------

def _llm(cfg: Path, srv: ChatServer, model: str) -> str:
    return _copy(cfg, f"llm-{model}.yaml", f"llm:\n  provider: openai\n  model: {model}\n  base_url: {srv.url}\n"
                                           "  timeout_seconds: 5\n")


def test_a_filtered_ask_adds_no_parent_from_outside_the_filters(tmp_path):
    """thin.md's parent is guide.md's chunk (a page's parent is the page above it); with
    ``filters={"audience": "everyone"}`` the search leaves guide.md out, and so must the prompt: its
    parent block was added, and a model citing it was accepted, from a page the filters exclude."""
    write_docs(tmp_path / "docs", {
        "guide.md": "---\naudience: admins\n---\n# Guide\n\nThe admin master password is stored in the blue vault.\n",
        "guide/thin.md": "---\naudience: everyone\n---\n# Zorblax level\n\nSet the zorblax level to 9.\n",
    })
    cfg = _ingest(write_config(tmp_path), "guide")
    q = "What should the zorblax level be set to?"
    flt = {"audience": "everyone"}
    hits = search(q, config=cfg, filters=flt)
    assert [h.page_url for h in hits] == ["https://docs.example.org/guide/thin.md"] and hits[0].parent_id
    with ChatServer() as srv:  # "last": cites the last source it was given
        ans = ask(q, config=_llm(Path(cfg), srv, "last"), filters=flt, remember=False)
        prompt = srv.requests[-1]["messages"][1]["content"]
        assert "blue vault" not in prompt
        assert not ans.refused and [c.url for c in ans.citations] == [hits[0].url]
        # the parent still comes along when the filters let its page in
        ask(q, config=_llm(Path(cfg), srv, "last"), filters={"audience": ["everyone", "admins"]}, remember=False)
        assert "blue vault" in srv.requests[-1]["messages"][1]["content"]


def test_a_hit_that_is_another_hits_parent_stays_a_hit(tmp_path):
    """The thin "Short note" hit's parent section is itself a hit: it was packed as the parent block
    (text cut to 1,200 characters, ``score`` 0.0) and the hit then skipped as a repeat, so citing it
    gave score 0.0. It comes in the parent's place as the hit it is, with its fused score."""
    write_docs(tmp_path / "docs", {"guide.md": """
        # Guide

        The guide describes the frobnicator configuration in depth for operators.

        ## Frobnicator timeout

        The frobnicator timeout is set with the key frob_timeout, in seconds, default 42.

        ### Short note

        Use 7.
    """})
    cfg = _ingest(write_config(tmp_path), "guide")
    q = "What value should the short note frobnicator setting use?"
    hits = search(q, config=cfg)
    assert hits[0].url.endswith("#short-note")
    parent = next(h for h in hits if h.chunk_id == hits[0].parent_id)
    assert parent.score > 0
    with ChatServer() as srv:  # "valid": the first sentences of sources 1 and 2, cited
        ans = ask(q, config=_llm(Path(cfg), srv, "valid"), remember=False)
        prompt = srv.requests[-1]["messages"][1]["content"]
    assert prompt.count("URL: " + parent.url + "\n") == 1
    cited = {c.url: c.score for c in ans.citations}
    assert cited.get(parent.url) == parent.score


# ---- F8, F9: two sources that index the same URL have two pages ----------------------------------

TWO_SOURCES = """
  - name: srca
    kind: local
    path: a
    base_url: https://docs.example.org/
  - name: srcb
    kind: local
    path: b
    base_url: {b_url}
"""


def test_two_sources_pages_with_one_url_are_two_pages_in_the_fusion(tmp_path):
    """Page-level fusion gave source B's unrelated guide.md the share source A's guide.md earned (keyed
    by URL only); B's chunk scores as it does when its URL is another one. The shared-pages count keys
    pages by (source, URL) too."""
    from docs_rag_pipeline.retrieval import _first_pages

    files = {
        "a/index.md": "# Home\n\nWelcome to the Zanzibar toolkit home page. It explains what the toolkit does overall.\n",
        "a/guide.md": "# Guide\n\nThe guide describes the frobnicator configuration in depth for operators.\n\n"
                      "## Frobnicator timeout\n\nThe frobnicator timeout is set with the key frob_timeout, in seconds, default 42.\n",
        "a/guide/deep.md": "# Deep dive\n\nThe deep dive explains the quuxinator retry policy: it retries five times.\n",
        "b/guide.md": "# Guide\n\nSource B guide talks about the wibblewobble cache eviction which happens every ninety seconds.\n",
    }
    scores = {}
    for name, b_url in (("same", "https://docs.example.org/"), ("other", "https://other.example.org/")):
        root = tmp_path / name
        write_docs(root, files)
        cfg = _ingest(write_config(root, sources=TWO_SOURCES.format(b_url=b_url)), "srca", "srcb")
        hits = search("frobnicator timeout", top_k=10, config=cfg)
        scores[name] = [(h.source, h.url.removeprefix(b_url) if h.source == "srcb" else h.url, h.score) for h in hits]
    assert scores["same"] == scores["other"]
    rows = [{"source": "srca", "page_url": "u"}, {"source": "srcb", "page_url": "u"}]
    assert _first_pages(rows) == {("srca", "u"), ("srcb", "u")}


def test_a_lead_in_brings_the_next_chunk_of_its_own_sources_page(tmp_path):
    """Source a's "run this command in a terminal window:" ends its chunk; the next chunk of the page
    with that URL and index was source b's, a disk-wiping command, and it came along, cited. The block
    that comes along is the next chunk of the same source's page."""
    write_docs(tmp_path, {
        "a/setup.md": """
            # Setup

            To install the frobnicator on a workstation, run this command in a terminal window:

            ```bash
            pip install frobnicator-client-tools-package==1.2.3 --index-url https://pypi.example.org/simple
            ```
        """,
        "b/setup.md": """
            # Setup

            Legacy notes about the old server room and its cooling fans and the long hallway carpets there.

            ```bash
            frobnicator install frobnicator install --legacy-wipe-all-disks --yes-really --now --force
            ```
        """,
    })
    cfg = _ingest(write_config(tmp_path, sources=TWO_SOURCES.format(b_url="https://docs.example.org/"),
                               extra="chunking:\n  target_tokens: 40\n  overlap_tokens: 0\n"), "srca", "srcb")
    q = "How do I install the frobnicator?"
    hits = search(q, config=cfg)
    lead = next(h for h in hits if h.source == "srca" and h.text.rstrip().endswith("terminal window:"))
    assert any(h.source == "srcb" and h.chunk_index == lead.chunk_index + 1 for h in hits)  # the trap is there
    ans = ask(q, config=cfg, remember=False)
    after = ans.answer.split("run this command in a terminal window: [1]", 1)[1]
    block, marker = after.split("```bash", 1)[1].split("```", 1)
    assert "pip install frobnicator-client-tools-package" in block and "wipe-all-disks" not in block
    n = int(marker.strip().split("]", 1)[0].lstrip("["))
    cited = next(c for c in ans.citations if c.n == n)
    assert cited.chunk_id == next(h.chunk_id for h in hits
                                  if h.source == "srca" and h.chunk_index == lead.chunk_index + 1)
