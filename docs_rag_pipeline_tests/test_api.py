"""The HTTP API, served by waitress on 127.0.0.1 and called over real HTTP."""

from __future__ import annotations

import threading

import pytest
import requests
from dagster import DagsterInstance
from waitress.server import create_server

from docs_rag_pipeline.serve.api import create_app

from .dagster_helpers import materialize_source


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from .conftest import GUIDE, write_config, write_docs

    root = tmp_path_factory.mktemp("api")
    write_docs(root / "docs", GUIDE)
    cfg = write_config(root)
    with DagsterInstance.ephemeral() as instance:
        materialize_source(cfg, "guide", instance)
    srv = create_server(create_app(config_path=str(cfg)), host="127.0.0.1", port=0, threads=4)
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.effective_port}"
    srv.close()


def test_search_ask_health(server):
    r = requests.post(f"{server}/search", json={"query": "ZX81_QUANTUM_FLUX", "top_k": 2}, timeout=30)
    assert r.status_code == 200
    hits = r.json()["hits"]
    assert hits[0]["url"].endswith("install.md#troubleshooting")
    assert set(hits[0]) == {"chunk_id", "url", "title", "headings", "text", "score", "source", "parent_id"}
    r = requests.post(f"{server}/ask", json={"question": "What does a converter do in data binding?"}, timeout=30)
    body = r.json()
    assert r.status_code == 200 and body["refused"] is False and body["mode"] == "extractive"
    assert body["citations"][0]["url"].startswith("https://docs.example.org/forms/binding.md")
    assert body["trace_id"]
    off = requests.post(f"{server}/ask", json={"question": "Best temperature for sourdough bread?"}, timeout=30).json()
    assert off["refused"] is True and off["citations"] == []
    health = requests.get(f"{server}/health", timeout=30).json()
    assert health["sources"]["guide"] > 5 and health["embedding_model"].endswith("all-MiniLM-L6-v2")


@pytest.mark.parametrize("kwargs, status, code", [
    ({"json": {}}, 400, "missing_question"),
    ({"json": {"question": "   "}}, 400, "missing_question"),
    ({"json": {"question": 42}}, 400, "missing_question"),
    ({"json": {"question": "x", "colour": "red"}}, 400, "unknown_field"),
    ({"json": {"question": "x", "top_k": "five"}}, 400, "invalid_top_k"),
    ({"json": {"question": "x", "filters": {"a b": 1}}}, 400, "invalid_query"),
    ({"json": {"question": "x" * 5000}}, 413, "too_long"),
    ({"data": "question=x"}, 415, "unsupported_media_type"),
    ({"data": "{not json", "headers": {"Content-Type": "application/json"}}, 400, "invalid_json"),
])
def test_bad_requests_get_clear_json_errors(server, kwargs, status, code):
    r = requests.post(f"{server}/ask", timeout=30, **kwargs)
    assert r.status_code == status
    assert r.json()["error"]["code"] == code and r.json()["error"]["message"]


def test_top_k_is_clamped(server):
    r = requests.post(f"{server}/search", json={"query": "forms", "top_k": 100}, timeout=30)
    assert r.status_code == 200 and len(r.json()["hits"]) <= 8
