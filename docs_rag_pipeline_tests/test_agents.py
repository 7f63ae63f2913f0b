"""Issue #13, agents: the A2A façade and agent card over real HTTP, reranking against a real local
``/rerank`` server (and its failures), LLM token usage and the eval's cost per 100 calls."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from pathlib import Path

import pytest
import requests

from docs_rag_pipeline.config import ConfigError, parse_config
from docs_rag_pipeline.context import get_context
from docs_rag_pipeline.evaluation import evaluate, load_cases
from docs_rag_pipeline.query import ask
from docs_rag_pipeline.retrieval import search
from docs_rag_pipeline.serve.api import create_app

from .dagster_helpers import index_guide
from .fake_llm import ChatServer
from .local_http import LocalServer, QuietHandler
from .test_api import closed_port, serve, variant
from .test_cli import _run as run_cli
from .test_evaluation import CASES
from .test_mcp import call as call_tool
from .test_mcp import with_client

TOKEN_ENV = "DOCS_RAG_TEST_A2A_TOKEN"
AUTH = {"Authorization": "Bearer a2a-s3cret"}


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    return index_guide(tmp_path_factory.mktemp("agents"))


def extend(cfg: Path, name: str, text: str) -> Path:
    """The same index and sources as ``cfg``, with more top-level sections."""
    p = cfg.parent / name
    p.write_text(cfg.read_text() + text)
    return p


# ---- A2A ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def a2a(index):
    import os

    os.environ[TOKEN_ENV] = "a2a-s3cret"
    cfg = variant(index, "a2a.yaml", f"token_env: {TOKEN_ENV}\nrate_limit_per_minute: 100000\nmax_top_k: 6")
    try:
        with serve(create_app(config_path=str(cfg))) as url:
            yield url
    finally:
        os.environ.pop(TOKEN_ENV, None)


def test_a2a_invoke_answers_with_citations(a2a):
    body = {"agent": "docs", "task": {"question": "What does a converter do in data binding?"},
            "params": {"top_k": 3, "source": "guide"}}
    r = requests.post(f"{a2a}/a2a/invoke", json=body, headers=AUTH, timeout=60)
    assert r.status_code == 200, r.text
    out = r.json()
    assert set(out) >= {"answer", "citations", "latency_ms", "trace_id", "refused"}
    assert out["refused"] is False and "[1]" in out["answer"] and re.fullmatch(r"[0-9a-f]{32}", out["trace_id"])
    assert out["citations"] and all(set(c) == {"title", "url"} for c in out["citations"])
    assert out["citations"][0]["url"].startswith("https://docs.example.org/forms/binding.md")
    assert isinstance(out["latency_ms"], (int, float)) and out["latency_ms"] > 0
    assert "usage" not in out  # the extractive path calls no LLM
    # the same question through /ask gives the same answer (the same query path)
    ask_r = requests.post(f"{a2a}/ask", json={"question": body["task"]["question"], "top_k": 3, "source": "guide"},
                          headers=AUTH, timeout=60).json()
    assert ask_r["answer"] == out["answer"]
    off = requests.post(f"{a2a}/a2a/invoke", json={"agent": "docs", "task": {"question": "Best sourdough temperature?"}},
                        headers=AUTH, timeout=60).json()
    assert off["refused"] is True and off["citations"] == []


def test_a2a_calls_store_no_conversation(a2a, index):
    """An A2A answer has no thread_id to continue it with, so it must not leave a conversation behind
    in the threads store (every call added one, kept until it expired)."""
    import sqlite3

    db = index.parent / "data" / "threads.sqlite"

    def threads() -> int:
        if not db.exists():
            return 0
        with contextlib.closing(sqlite3.connect(db)) as con:
            return con.execute("SELECT count(*) FROM threads").fetchone()[0]

    before = threads()
    for q in ("What does a converter do in data binding?", "How do I install the package?"):
        r = requests.post(f"{a2a}/a2a/invoke", json={"agent": "docs", "task": {"question": q}}, headers=AUTH, timeout=60)
        assert r.status_code == 200 and r.json()["refused"] is False and "thread_id" not in r.json(), r.text
    assert threads() == before
    # /ask still starts one
    r = requests.post(f"{a2a}/ask", json={"question": "How do I install the package?"}, headers=AUTH, timeout=60)
    assert r.json()["thread_id"] and threads() == before + 1


def test_a2a_needs_the_token_but_the_agent_card_does_not(a2a):
    body = {"agent": "docs", "task": {"question": "How do I install it?"}}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic a2a-s3cret"}):
        r = requests.post(f"{a2a}/a2a/invoke", json=body, headers=headers, timeout=30)
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized", headers
    r = requests.get(f"{a2a}/.well-known/agent.json", timeout=30)
    assert r.status_code == 200
    card = r.json()
    assert card["name"] and card["description"] and card["version"]
    assert card["url"] == f"{a2a}/a2a/invoke"
    assert card["capabilities"]["streaming"] is False
    assert card["authentication"]["schemes"] == ["bearer"] and card["securitySchemes"]["bearer"]["scheme"] == "bearer"
    skill = card["skills"][0]
    assert skill["id"] and skill["name"] and skill["description"] and skill["agent"] == "docs"
    assert skill["inputModes"] == ["application/json"] and skill["outputModes"] == ["application/json"]
    assert skill["input"]["params"]["source"] == ["guide"] and "1..6" in skill["input"]["params"]["top_k"]
    # the card's example is a valid invocation
    ex = json.loads(skill["examples"][0])
    assert requests.post(card["url"], json=ex, headers=AUTH, timeout=60).status_code == 200


def test_the_public_agent_card_holds_no_password_of_public_url(index):
    """``api.public_url: https://u:pw@docs.example.org/rag`` (the URL as the operator reaches it, through a
    proxy with basic auth) was published whole by the agent card, which anyone may read without a token
    (secrets F9). The card names the URL without its user name and password."""
    cfg = variant(index, "a2a-public-pw.yaml", "public_url: https://u:PubPw-77@docs.example.org/rag")
    with serve(create_app(config_path=str(cfg))) as url:
        r = requests.get(f"{url}/.well-known/agent.json", timeout=30)
    assert r.status_code == 200 and r.json()["url"] == "https://docs.example.org/rag/a2a/invoke", r.text
    assert "PubPw" not in r.text


def test_the_agent_card_claims_no_protocol_its_url_does_not_speak(a2a):
    """The card said ``protocolVersion: "0.2"`` (A2A, whose transport is JSON-RPC ``message/send``) but
    its url takes this project's own body: a client that believed it got ``unknown field 'id'``. The
    card now claims no A2A protocol and says what to send, and a JSON-RPC request is told the same."""
    card = requests.get(f"{a2a}/.well-known/agent.json", timeout=30).json()
    assert "protocolVersion" not in card
    assert "not A2A JSON-RPC" in card["description"] and '"task": {"question"' in card["description"]
    rpc = {"jsonrpc": "2.0", "id": "1", "method": "message/send",
           "params": {"message": {"role": "user", "messageId": "m-1", "kind": "message",
                                  "parts": [{"kind": "text", "text": "How do I install it?"}]}}}
    r = requests.post(card["url"], json=rpc, headers=AUTH, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["code"] == "unsupported_protocol", r.text
    assert "not JSON-RPC" in r.json()["error"]["message"] and '"agent": "docs"' in r.json()["error"]["message"]
    ok = requests.post(card["url"], json={"agent": "docs", "task": {"question": "How do I install it?"}},
                       headers=AUTH, timeout=60)
    assert ok.status_code == 200 and ok.json()["answer"]  # existing clients: as before


def test_agent_card_url_is_public_url_when_set(index):
    """Behind a proxy the request's host is the internal one: ``api.public_url`` names the public base."""
    cfg = variant(index, "a2a-public.yaml", "public_url: https://docs.example.org/rag/")
    with serve(create_app(config_path=str(cfg))) as url:
        card = requests.get(f"{url}/.well-known/agent.json", headers={"Host": "10.0.0.7:8000"}, timeout=30).json()
        assert card["url"] == "https://docs.example.org/rag/a2a/invoke"
    # unset: the host the request named
    with serve(create_app(config_path=str(index))) as url:
        card = requests.get(f"{url}/.well-known/agent.json", headers={"Host": "docs.internal:8000"}, timeout=30).json()
        assert card["url"] == "http://docs.internal:8000/a2a/invoke"
        # a Host that names no host (or none at all, as HTTP/1.0 allows) would advertise a broken URL
        port = int(url.rsplit(":", 1)[1])
        for head in (b"GET /.well-known/agent.json HTTP/1.1\r\nHost: \r\n",
                     b"GET /.well-known/agent.json HTTP/1.1\r\nHost: a b\r\n",
                     b"GET /.well-known/agent.json HTTP/1.1\r\nHost: my_service:8000\r\n",
                     b"GET /.well-known/agent.json HTTP/1.0\r\n"):
            with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
                sock.sendall(head + b"Connection: close\r\n\r\n")
                raw = b"".join(iter(lambda: sock.recv(65536), b""))
            status, body = raw.split(b"\r\n", 1)[0], raw.split(b"\r\n\r\n", 1)[1]
            assert b" 400 " in status, raw
            err = json.loads(body)["error"]
            assert err["code"] == "invalid_host" and "api.public_url" in err["message"], err
        for host in ("docs-rag.internal:8000", "[::1]:8000", "127.0.0.1"):
            card = requests.get(f"{url}/.well-known/agent.json", headers={"Host": host}, timeout=30).json()
            assert card["url"] == f"http://{host}/a2a/invoke"


def test_a2a_and_agent_card_are_in_openapi(a2a):
    spec = requests.get(f"{a2a}/openapi.json", timeout=30).json()
    op = spec["paths"]["/a2a/invoke"]["post"]
    assert op["requestBody"]["content"]["application/json"]["schema"]["$ref"] == "#/components/schemas/A2ARequest"
    schemas = spec["components"]["schemas"]
    assert schemas["A2ARequest"]["properties"]["agent"]["enum"] == ["docs"]
    assert schemas["A2AParams"]["properties"]["top_k"]["anyOf"][0]["maximum"] == 6
    assert schemas["A2AParams"]["properties"]["source"]["anyOf"][0]["enum"] == ["guide"]
    assert spec["paths"]["/.well-known/agent.json"]["get"]["security"] == []


@pytest.mark.parametrize("body, status, code, needle", [
    ({"agent": "weather", "task": {"question": "x"}}, 400, "unknown_agent", "'agent': no agent named 'weather'; agents: docs"),
    ({"task": {"question": "x"}}, 400, "unknown_agent", "'agent': missing; agents: docs"),
    ({"agent": 7, "task": {"question": "x"}}, 400, "unknown_agent", "'agent': must be a string; agents: docs"),
    ({"agent": "docs"}, 400, "invalid_task", "'task' must be an object"),
    ({"agent": "docs", "task": "hello"}, 400, "invalid_task", "'task' must be an object"),
    ({"agent": "docs", "task": {}}, 400, "missing_question", "'task.question' must be a non-empty string"),
    ({"agent": "docs", "task": {"question": "  "}}, 400, "missing_question", "'task.question'"),
    ({"agent": "docs", "task": {"question": "x", "mood": 1}}, 400, "unknown_field", "'task.mood'"),
    ({"agent": "docs", "task": {"question": "x" * 3000}}, 413, "too_long", "'task.question' is longer than 2000"),
    ({"agent": "docs", "task": {"question": "x"}, "colour": "red"}, 400, "unknown_field", "allowed: agent, params, task"),
    ({"agent": "docs", "task": {"question": "x"}, "params": []}, 400, "invalid_params", "'params' must be an object"),
    ({"agent": "docs", "task": {"question": "x"}, "params": {"top_k": 99}}, 400, "invalid_top_k",
     "'params.top_k' must be an integer from 1 to 6"),
    ({"agent": "docs", "task": {"question": "x"}, "params": {"top_k": "five"}}, 400, "invalid_top_k", "params.top_k"),
    ({"agent": "docs", "task": {"question": "x"}, "params": {"source": "nope"}}, 400, "unknown_source",
     "'params.source': no source named 'nope'; configured sources: guide"),
    ({"agent": "docs", "task": {"question": "x"}, "params": {"filters": {"colour": "red"}}}, 400, "unknown_filter",
     "params.filters: unknown metadata key 'colour'"),
    ({"agent": "docs", "task": {"question": "x"}, "params": {"question": "y"}}, 400, "unknown_field",
     "'params.question'; allowed: params.filters, params.source, params.top_k"),
    (["docs"], 400, "invalid_json", "JSON object"),
])
def test_a2a_validation_errors_name_the_field(a2a, body, status, code, needle):
    r = requests.post(f"{a2a}/a2a/invoke", json=body, headers=AUTH, timeout=30)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code and needle in err["message"], err


def test_a2a_bad_media_type_and_rate_limit(index, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, "a2a-s3cret")
    cfg = variant(index, "a2a-limited.yaml", f"token_env: {TOKEN_ENV}\nrate_limit_per_minute: 2")
    with serve(create_app(config_path=str(cfg))) as url:
        r = requests.post(f"{url}/a2a/invoke", data="agent=docs", headers=AUTH, timeout=30)
        assert r.status_code == 415 and r.json()["error"]["code"] == "unsupported_media_type"
        body = {"agent": "docs", "task": {"question": "How do I install it?"}}
        assert requests.post(f"{url}/a2a/invoke", json=body, headers=AUTH, timeout=60).status_code == 200
        r = requests.post(f"{url}/a2a/invoke", json=body, headers=AUTH, timeout=60)
        assert r.status_code == 429 and r.json()["error"]["code"] == "rate_limited" and int(r.headers["Retry-After"]) >= 1
        # the agent card is public: neither token nor rate limit
        assert all(requests.get(f"{url}/.well-known/agent.json", timeout=30).status_code == 200 for _ in range(3))


# ---- rerank ------------------------------------------------------------------------------------

def overlap(query: str, doc: str) -> float:
    """The reranker's score: the share of the query's words that the document contains."""
    q = set(re.findall(r"[a-z0-9_]+", query.lower()))
    d = set(re.findall(r"[a-z0-9_]+", doc.lower()))
    return len(q & d) / (len(q) or 1)


class RerankServer(LocalServer):
    """A real ``/rerank`` endpoint: ``/rerank`` scores by :func:`overlap`; ``/error500``, ``/slow``
    (never answers in time), ``/malformed`` (not JSON), ``/badshape`` (results without indexes)."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.stop = threading.Event()
        outer = self

        class Handler(QuietHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.read_body())
                outer.requests.append(body)
                outer.headers.append(dict(self.headers))
                if self.path == "/error500":
                    return self.send_json(500, {"error": "boom"})
                if self.path == "/slow":
                    outer.stop.wait(30)
                    return None
                if self.path == "/malformed":
                    data = b"{not json"
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return None
                if self.path == "/badshape":
                    return self.send_json(200, {"results": [{"relevance_score": 1.0}]})
                scored = sorted(((overlap(body["query"], d), i) for i, d in enumerate(body["documents"])),
                                key=lambda x: (-x[0], x[1]))[: body["top_n"]]
                if self.path == "/drip":  # a valid answer, 4 bytes every 0.1 s (each read is quick)
                    data = json.dumps({"results": [{"index": i, "relevance_score": s} for s, i in scored]}).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    for k in range(0, len(data), 4):
                        if outer.stop.wait(0.1):
                            return None
                        self.wfile.write(data[k:k + 4])
                        self.wfile.flush()
                    return None
                return self.send_json(200, {"model": body.get("model"),
                                            "results": [{"index": i, "relevance_score": s} for s, i in scored]})

        super().__init__(Handler)

    def on_close(self) -> None:
        self.stop.set()


RQ = "validators error message field form"  # the fused order is not the word-overlap order


def rerank_config(index: Path, name: str, url: str, **extra: object) -> str:
    lines = "".join(f"    {k}: {v}\n" for k, v in extra.items())
    return str(extend(index, name, f"retrieval:\n  rerank:\n    url: {url}\n    model: tiny-reranker\n"
                                   f"    candidates: 6\n{lines}"))


def test_rerank_reorders_by_the_endpoints_scores(index, monkeypatch):
    from docs_rag_pipeline.rerank import document_text

    monkeypatch.setenv("DOCS_RAG_TEST_RERANK_KEY", "rr-key")
    with RerankServer() as srv:
        cfg = rerank_config(index, "rr.yaml", f"{srv.url}/rerank", api_key_env="DOCS_RAG_TEST_RERANK_KEY")
        ctx = get_context(cfg)
        fused = search(ctx, RQ, top_k=6, rerank=False)
        assert srv.requests == []  # rerank=False: the endpoint is not called
        reranked = search(ctx, RQ, top_k=6)
        assert reranked.warning is None
        req = srv.requests[-1]
        assert req["query"] == RQ and req["model"] == "tiny-reranker" and req["top_n"] == 6
        assert req["documents"] == [document_text(h) for h in fused]  # the fused candidates, in fused order
        assert srv.headers[-1]["Authorization"] == "Bearer rr-key"
        expected = [h.chunk_id for h in sorted(fused, key=lambda h: -overlap(RQ, document_text(h)))]
        assert [h.chunk_id for h in reranked] == expected
        assert [h.chunk_id for h in reranked] != [h.chunk_id for h in fused]  # the order did change
        assert reranked[0].score == round(overlap(RQ, document_text(reranked[0])), 6)
        # top_k cuts after reranking; fulltext/vector modes are not reranked
        assert [h.chunk_id for h in search(ctx, RQ, top_k=2)] == expected[:2]
        n = len(srv.requests)
        search(ctx, RQ, top_k=3, mode="fulltext")
        assert len(srv.requests) == n
        # /search and /ask over HTTP use it too, without a warning
        with serve(create_app(config_path=cfg)) as url:
            r = requests.post(f"{url}/search", json={"query": RQ, "top_k": 3}, timeout=60).json()
            assert [h["chunk_id"] for h in r["hits"]] == expected[:3] and "warning" not in r
            a = requests.post(f"{url}/ask", json={"question": RQ}, timeout=60).json()
            assert "warning" not in a and not a["refused"]


@pytest.mark.parametrize("path, why", [
    ("/error500", "answered HTTP 500"),
    ("/slow", "did not answer within 0.5 s"),
    ("/drip", "did not complete its answer within 0.5 s"),  # timeout_seconds bounds the whole answer
    ("/malformed", "not JSON"),
    ("/badshape", "without a valid 'index'"),
    (None, "is unreachable"),
])
def test_rerank_failure_falls_back_to_the_fused_order_with_a_warning(index, path, why):
    with RerankServer() as srv:
        url = f"{srv.url}{path}" if path else f"http://127.0.0.1:{closed_port()}/rerank"
        cfg = rerank_config(index, f"rr-fail-{(path or 'dead').strip('/')}.yaml", url, timeout_seconds=0.5)
        ctx = get_context(cfg)
        fused = search(ctx, RQ, top_k=4, rerank=False)
        hits = search(ctx, RQ, top_k=4)
        assert [h.chunk_id for h in hits] == [h.chunk_id for h in fused]
        assert why in hits.warning and "fused (unreranked) order" in hits.warning
        if path:
            assert srv.requests, "the endpoint was called"
        ans = ask(RQ, config=cfg)
        assert ans.warning and why in ans.warning and not ans.refused
        with serve(create_app(config_path=cfg)) as api:
            r = requests.post(f"{api}/search", json={"query": RQ, "top_k": 4}, timeout=60)
            assert r.status_code == 200 and why in r.json()["warning"]


def test_a_password_in_the_rerank_url_is_in_no_warning(index):
    """``retrieval.rerank.url: http://rr:pw@host/rerank`` (requests sends it as basic auth): while the
    endpoint was down, every search's and answer's warning, to every client of /search, /ask and MCP and
    into the question log, said ``the rerank endpoint at http://rr:pw@… is unreachable`` (secrets F2)."""
    port = closed_port()
    cfg = rerank_config(index, "rr-fail-password.yaml", f"http://rr:RerankPw-77e1@127.0.0.1:{port}/rerank")
    hits = search(get_context(cfg), RQ, top_k=4)
    ans = ask(RQ, config=cfg, remember=False)
    with serve(create_app(config_path=cfg)) as api:
        r = requests.post(f"{api}/search", json={"query": RQ, "top_k": 4}, timeout=60)
    for warning in (hits.warning, ans.warning, r.json()["warning"]):
        assert f"the rerank endpoint at http://127.0.0.1:{port}/rerank is unreachable" in warning, warning
        assert "RerankPw" not in warning and "rr:" not in warning


def test_rerank_failure_warning_in_the_cli_and_mcp(index):
    """The CLI prints the failed reranker's warning on stderr (with or without --json); the MCP search
    result carries it beside ``hits`` as ``/search`` does, and the MCP answer as ``/ask`` does."""
    async def session(client) -> dict:  # noqa: ANN001
        return {"search": await call_tool(client, "search", {"query": RQ, "top_k": 4}),
                "ask": await call_tool(client, "ask", {"question": RQ})}

    with RerankServer() as srv:
        cfg = Path(rerank_config(index, "rr-fail-clients.yaml", f"{srv.url}/error500"))
        fused = [h.chunk_id for h in search(get_context(str(cfg)), RQ, top_k=4, rerank=False)]
        text = run_cli(["search", RQ, "--top-k", "4"], cfg, timeout=300)
        as_json = run_cli(["search", RQ, "--top-k", "4", "--json"], cfg, timeout=300)
        n = len(srv.requests)
        out = with_client(cfg, session)
        assert len(srv.requests) > n  # the MCP server called the (failing) endpoint too
    for res in (text, as_json):
        assert res.returncode == 0, res.stderr
        warned = [line for line in res.stderr.splitlines() if line.startswith("warning: ")]
        assert len(warned) == 1 and "answered HTTP 500" in warned[0] and "fused (unreranked) order" in warned[0]
        assert not any(line.startswith("warning") for line in res.stdout.splitlines())
    assert [h["chunk_id"] for h in json.loads(as_json.stdout)] == fused  # still the list of hits
    assert text.stdout.startswith("1. ")
    err, found = out["search"]
    assert not err and [h["chunk_id"] for h in found["hits"]] == fused
    assert set(found) == {"hits", "warning"} and "answered HTTP 500" in found["warning"]
    err, ans = out["ask"]
    assert not err and "answered HTTP 500" in ans["warning"] and not ans["refused"]
    # a reranker that works: no warning anywhere
    with RerankServer() as srv:
        cfg = Path(rerank_config(index, "rr-ok-clients.yaml", f"{srv.url}/rerank"))
        ok = run_cli(["search", RQ, "--top-k", "4"], cfg, timeout=300)
        err, found = with_client(cfg, lambda client: call_tool(client, "search", {"query": RQ, "top_k": 4}))
    assert ok.returncode == 0 and not any(line.startswith("warning") for line in ok.stderr.splitlines())
    assert not err and set(found) == {"hits"}


def test_rerank_config_errors_name_the_key():
    with pytest.raises(ConfigError, match=r"retrieval\.rerank\.url: missing"):
        parse_config({"retrieval": {"rerank": {"model": "m"}}})
    with pytest.raises(ConfigError, match=r"retrieval\.rerank\.url: 'ftp://x' is not an http\(s\) URL"):
        parse_config({"retrieval": {"rerank": {"url": "ftp://x"}}})
    with pytest.raises(ConfigError, match=r"retrieval\.rerank\.timeout_seconds: must be > 0"):
        parse_config({"retrieval": {"rerank": {"url": "http://h/rerank", "timeout_seconds": 0}}})
    with pytest.raises(ConfigError, match=r"retrieval\.rerank\.candidates: must be ≥ 1"):
        parse_config({"retrieval": {"rerank": {"url": "http://h/rerank", "candidates": 0}}})
    with pytest.raises(ConfigError, match=r"retrieval\.rerank\.topn: unknown key; allowed keys: api_key_env"):
        parse_config({"retrieval": {"rerank": {"url": "http://h/rerank", "topn": 3}}})
    with pytest.raises(ConfigError, match=r"llm\.price_per_1k_prompt_tokens: must be ≥ 0"):
        parse_config({"llm": {"price_per_1k_prompt_tokens": -1}})


def test_eval_reports_the_rerank_ablation(index):
    with RerankServer() as srv:
        cfg = rerank_config(index, "rr-eval.yaml", f"{srv.url}/rerank")
        cases = load_cases(_cases_file(index), root_url="https://docs.example.org/")
        report = evaluate(get_context(cfg), "guide", cases)
    assert set(report["ablations"]) == {"fulltext", "vector", "no_rerank"}
    assert set(report["ablations"]["no_rerank"]) == {"recall_at_1", "recall_at_5", "mrr_at_10"}
    assert report["rerank"]["warnings"] == 0
    plain = evaluate(get_context(str(index)), "guide", cases)
    assert "no_rerank" not in plain["ablations"] and "rerank" not in plain
    # without rerank the hybrid numbers are the fused ones: the ablation measures that same search
    assert report["ablations"]["no_rerank"] == plain["retrieval"]


# ---- usage and cost ----------------------------------------------------------------------------

def _cases_file(index: Path) -> Path:
    p = index.parent / "agents-cases.jsonl"
    p.write_text("\n".join(json.dumps(c) for c in CASES) + "\n")
    return p


def llm_config(index: Path, name: str, srv: ChatServer, **extra: object) -> str:
    lines = "".join(f"  {k}: {v}\n" for k, v in extra.items())
    return str(extend(index, name, f"llm:\n  provider: openai\n  model: valid\n  base_url: {srv.url}\n{lines}"))


def test_llm_usage_is_recorded_on_the_answer_and_over_http(index):
    with ChatServer() as srv:
        cfg = llm_config(index, "llm-usage.yaml", srv)
        ans = ask("What does a converter do in data binding?", config=cfg)
        assert ans.mode == "llm" and not ans.refused
        sent = srv.requests[-1]["messages"]
        prompt_words = sum(len(m["content"].split()) for m in sent)
        assert ans.usage == {"prompt_tokens": prompt_words, "completion_tokens": len(ans.answer.split())}
        assert ans.to_dict()["usage"] == ans.usage
        with serve(create_app(config_path=cfg)) as url:
            body = {"agent": "docs", "task": {"question": "What does a converter do in data binding?"}}
            out = requests.post(f"{url}/a2a/invoke", json=body, timeout=60).json()
            assert out["usage"]["prompt_tokens"] > 0 and out["usage"]["completion_tokens"] > 0
            assert requests.post(f"{url}/ask", json={"question": body["task"]["question"]},
                                 timeout=60).json()["usage"] == out["usage"]
        # an LLM failure falls back to the extractive answer: no usage to record
        cfg500 = extend(index, "llm-500.yaml", f"llm:\n  provider: openai\n  model: error500\n  base_url: {srv.url}\n")
        failed = ask("What does a converter do in data binding?", config=str(cfg500))
        assert failed.mode == "extractive" and failed.usage is None and "usage" not in failed.to_dict()


def _prompt_words(request: dict) -> int:
    return sum(len(m["content"].split()) for m in request["messages"])


def test_a_streamed_answer_and_a_follow_ups_rewrite_count_their_tokens(index):
    """A streamed answer (the chat page's) had no ``usage``: the stream asked for none and the server's
    usage chunk was not read. A follow-up's rewrite completion was not counted. Now the stream asks for
    it (``stream_options``; a server that refuses that field by name is asked again without it), a
    streamed answer's usage is the unstreamed one's, and a follow-up's adds its rewrite's."""
    from docs_rag_pipeline.query import ask_stream

    q = "What does a converter do in data binding?"
    with ChatServer() as srv:
        cfg = llm_config(index, "llm-usage-stream.yaml", srv)
        plain = ask(q, config=cfg)
        final = list(ask_stream(q, config=cfg))[-1][1]
        assert srv.requests[-1]["stream_options"] == {"include_usage": True}
        assert final["mode"] == "llm" and final["answer"] == plain.answer and final["usage"] == plain.usage
        # a server that forbids fields it does not know: asked again without stream_options, it answers
        before = len(srv.requests)
        strict_cfg = extend(index, "llm-strict.yaml", f"llm:\n  provider: openai\n  model: strict\n  base_url: {srv.url}\n")
        strict = list(ask_stream(q, config=str(strict_cfg)))[-1][1]
        assert strict["mode"] == "llm" and strict["answer"] == plain.answer and "usage" not in strict
        assert len(srv.requests) == before + 2 and "stream_options" not in srv.requests[-1]
        # a follow-up: the rewrite's completion and the answer's, streamed or not
        for streamed in (False, True):
            n = len(srv.requests)
            if streamed:
                events = list(ask_stream("and why?", config=cfg, thread_id=plain.thread_id))
                got = events[-1][1]
            else:
                got = ask("and why?", config=cfg, thread_id=plain.thread_id).to_dict()
            rewrite, answer = srv.requests[n:]
            assert rewrite["messages"][0]["content"].startswith("You rewrite") and got["standalone_question"]
            assert got["mode"] == "llm" and got["usage"]["prompt_tokens"] == _prompt_words(rewrite) + _prompt_words(answer)
            assert got["usage"]["completion_tokens"] == (len(got["standalone_question"].split())
                                                         + len(got["answer"].split()))


TRACE_SCRIPT = """
import json, sys
from docs_rag_pipeline import ask
from docs_rag_pipeline.tracing import flush
a = ask("What does a converter do in data binding?", config=sys.argv[1])
flush()
print(json.dumps({"trace_id": a.trace_id, "usage": a.usage}))
"""


def test_llm_usage_is_in_the_trace(index):
    import os
    import subprocess
    import sys

    from .fake_langsmith import LangSmithServer

    with ChatServer() as srv, LangSmithServer() as ls:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANGSMITH_")}
        env.update({"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "test-key", "LANGSMITH_ENDPOINT": ls.url})
        out = subprocess.run([sys.executable, "-c", TRACE_SCRIPT, llm_config(index, "llm-trace.yaml", srv)],
                             capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        usage = json.loads(out.stdout.strip().splitlines()[-1])["usage"]
        bodies = b"".join(body for _, _, body in ls.requests)
    assert usage["prompt_tokens"] > 0
    # the generate run's outputs carry the tokens the way LangSmith records an llm run's usage
    assert b'"usage_metadata"' in bodies
    assert f'"input_tokens":{usage["prompt_tokens"]}'.encode() in bodies.replace(b" ", b"")
    assert f'"output_tokens":{usage["completion_tokens"]}'.encode() in bodies.replace(b" ", b"")


def test_eval_cost_per_100_calls(index):
    cases = load_cases(_cases_file(index), root_url="https://docs.example.org/")
    extractive = evaluate(get_context(str(index)), "guide", cases)["cost"]
    assert extractive["cost_per_100_calls"] == 0 and extractive["prompt_tokens"] == 0 and extractive["llm"] is False
    with ChatServer() as srv:
        cfg = llm_config(index, "llm-cost.yaml", srv, price_per_1k_prompt_tokens=0.5,
                         price_per_1k_completion_tokens=1.5)
        report = evaluate(get_context(cfg), "guide", cases)
        calls = [r for r in srv.requests]
    cost = report["cost"]
    prompt = sum(sum(len(m["content"].split()) for m in r["messages"]) for r in calls)
    assert calls and cost["prompt_tokens"] == prompt and cost["completion_tokens"] > 0
    expected = (prompt / 1000 * 0.5 + cost["completion_tokens"] / 1000 * 1.5) / len(cases) * 100
    assert cost["cost_per_100_calls"] == pytest.approx(expected, abs=1e-6) and cost["cost_per_100_calls"] > 0
    assert cost["calls"] == len(cases)
    # an LLM without prices configured: tokens counted, cost 0
    with ChatServer() as srv:
        free = evaluate(get_context(llm_config(index, "llm-free.yaml", srv)), "guide", cases)["cost"]
    assert free["prompt_tokens"] > 0 and free["cost_per_100_calls"] == 0
