"""The HTTP API, served by waitress on 127.0.0.1 and called over real HTTP, over a real index."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import threading
from pathlib import Path
from typing import Iterator

import pytest
import requests
from dagster import DagsterInstance
from waitress.server import create_server

from docs_rag_pipeline.serve.api import FIND_JOB_QUERY, LAUNCH_RUN_MUTATION, RateLimiter, create_app

from .conftest import GUIDE, write_config, write_docs
from .dagster_helpers import index_guide, materialize_source
from .local_http import LocalServer, QuietHandler


@contextlib.contextmanager
def serve(app) -> Iterator[str]:  # noqa: ANN001
    """A real waitress server on 127.0.0.1 (a free port) for a Flask app.

    Shut down in order. ``srv.close()`` alone is not a shutdown: it closes the trigger pipe (and the
    listening socket) under the running loop thread and leaves the worker threads running, and a worker
    that ends its task (``HTTPChannel.service``) after a client already has its response still pulls the
    trigger, ``os.write(fd, b"x")`` to the closed pipe's number, by then reused by another socket: a
    stray ``x`` before the next response of another server in this process. So: the workers finish and
    exit; the loop thread empties its map (which ends its loop) and is joined; only then is any file
    descriptor closed, when no thread of this server is left to use one.
    """
    sockets: dict = {}
    srv = create_server(app, map=sockets, host="127.0.0.1", port=0, threads=4)
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.effective_port}"
    finally:
        srv.task_dispatcher.shutdown(timeout=60)  # joins the worker threads (each ends its current task)
        taken: list = []

        def stop() -> None:  # in the loop thread
            taken.extend(sockets.values())
            sockets.clear()

        srv.trigger.pull_trigger(stop)
        t.join(timeout=60)
        for dispatcher in taken + list(sockets.values()):  # the listening socket, channels, the trigger pipe
            dispatcher.close()


def variant(cfg: Path, name: str, api: str) -> Path:
    """The same index and sources as ``cfg``, with these ``api:`` keys (merged into its ``api:`` section
    when it has one: a key may not be given twice)."""
    import yaml

    data = yaml.safe_load(cfg.read_text())
    data["api"] = {**(data.get("api") or {}), **yaml.safe_load(api)}
    p = cfg.parent / name
    p.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return p


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("api")
    cfg = index_guide(root)
    return cfg


@pytest.fixture(scope="module")
def server(index):
    with serve(create_app(config_path=str(variant(index, "main.yaml", "rate_limit_per_minute: 100000")))) as url:
        yield url


def test_search_ask_health(server, index):
    r = requests.post(f"{server}/search", json={"query": "ZX81_QUANTUM_FLUX", "top_k": 2}, timeout=30)
    assert r.status_code == 200
    hits = r.json()["hits"]
    assert hits[0]["url"].endswith("install.md#troubleshooting")
    assert set(hits[0]) == {"chunk_id", "url", "title", "headings", "text", "score", "source", "parent_id"}
    r = requests.post(f"{server}/ask", json={"question": "What does a converter do in data binding?"}, timeout=30)
    body = r.json()
    assert r.status_code == 200 and body["refused"] is False and body["mode"] == "extractive"
    assert {"answer", "citations", "refused", "trace_id", "mode"} <= set(body)
    assert body["citations"][0]["url"].startswith("https://docs.example.org/forms/binding.md")
    assert set(body["citations"][0]) >= {"n", "chunk_id", "url", "title", "snippet", "score", "supported"}
    assert "[1]" in body["answer"] and body["trace_id"]
    off = requests.post(f"{server}/ask", json={"question": "Best temperature for sourdough bread?"}, timeout=30).json()
    assert off["refused"] is True and off["citations"] == []
    r = requests.get(f"{server}/health", timeout=30)
    assert str(index.parent) not in r.text and ".yaml" not in r.text  # no storage or config path
    health = r.json()
    assert health["sources"]["guide"] > 5 and health["embedding_model"].endswith("all-MiniLM-L6-v2")
    assert isinstance(health["table_version"], int) and health["table"].startswith("chunks__")


@pytest.mark.parametrize("route, field", [("/ask", "question"), ("/search", "query")])
@pytest.mark.parametrize("kwargs, status, code", [
    ({"json": {}}, 400, "missing_{field}"),
    ({"json": {"{field}": "   "}}, 400, "missing_{field}"),
    ({"json": {"{field}": 42}}, 400, "missing_{field}"),
    ({"json": {"{field}": None}}, 400, "missing_{field}"),
    ({"json": ["{field}"]}, 400, "invalid_json"),
    ({"json": {"{field}": "x", "colour": "red"}}, 400, "unknown_field"),
    ({"json": {"{field}": "x", "top_k": "five"}}, 400, "invalid_top_k"),
    ({"json": {"{field}": "x", "top_k": True}}, 400, "invalid_top_k"),
    ({"json": {"{field}": "x", "top_k": 2.5}}, 400, "invalid_top_k"),
    ({"json": {"{field}": "x", "source": ["guide"]}}, 400, "invalid_source"),
    ({"json": {"{field}": "x", "filters": "section=guides"}}, 400, "invalid_filters"),
    ({"json": {"{field}": "x", "filters": {"a=b": 1}}}, 400, "invalid_query"),
    ({"json": {"{field}": "x", "filters": {"section": {"nested": 1}}}}, 400, "invalid_query"),
    ({"json": {"{field}": "x" * 5000}}, 413, "too_long"),
    ({"data": json.dumps({"q": "x" * 100_000}), "headers": {"Content-Type": "application/json"}}, 413, "too_large"),
    ({"data": "question=x"}, 415, "unsupported_media_type"),
    ({"data": "{not json", "headers": {"Content-Type": "application/json"}}, 400, "invalid_json"),
    ({"data": b"\xff\xfe{", "headers": {"Content-Type": "application/json"}}, 400, "invalid_json"),
    ({"data": "[" * 30000 + "]" * 30000, "headers": {"Content-Type": "application/json"}}, 400, "invalid_json"),
    ({"data": '{"{field}": "x", "filters": {"a": ' + "[" * 20000 + "]" * 20000 + "}}",
      "headers": {"Content-Type": "application/json"}}, 400, "invalid_json"),
])
def test_bad_requests_get_clear_json_errors(server, route, field, kwargs, status, code):
    def fill(v):  # noqa: ANN001, ANN202
        if isinstance(v, str):
            return v.replace("{field}", field)
        if isinstance(v, dict):
            return {fill(k): fill(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fill(x) for x in v]
        return v

    kwargs = fill(kwargs)
    r = requests.post(f"{server}{route}", timeout=30, **kwargs)
    assert r.status_code == status, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    assert r.json()["error"]["code"] == code.replace("{field}", field) and r.json()["error"]["message"]


@pytest.mark.parametrize("text", ["' OR 1=1 --", "\x00\x01", "🙂🙂 émoji?", "AND OR NOT ( ) [ ] { } \" * ~ ^ :",
                                  "a" * 1999, "<script>alert(1)</script>", "\\", "%s %d {0}", "\u202e\u200b"])
def test_odd_input_never_gives_a_500(server, text):
    for route, field in (("/ask", "question"), ("/search", "query")):
        r = requests.post(f"{server}{route}", json={field: text, "filters": {"section": text[:20] or "x"}}, timeout=60)
        assert r.status_code in (200, 400), r.text
    r = requests.get(f"{server}/chunks/{requests.utils.quote(text[:200], safe='')}", timeout=30)
    assert r.status_code in (400, 404) and r.json()["error"]["code"] in ("not_found", "invalid_chunk_id")
    r = requests.get(f"{server}/pages", params={"url": text}, timeout=30)
    assert r.status_code in (404, 413) and "error" in r.json()


@pytest.mark.parametrize("route, field", [("/ask", "question"), ("/search", "query")])
@pytest.mark.parametrize("top_k", [-3, 0, 9, 100])
def test_top_k_out_of_range_is_a_400(server, route, field, top_k):
    r = requests.post(f"{server}{route}", json={field: "forms", "top_k": top_k}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_top_k", r.text
    assert "'top_k'" in r.json()["error"]["message"]
    r = requests.post(f"{server}/search", json={"query": "forms", "top_k": 8}, timeout=30)
    assert r.status_code == 200 and 1 <= len(r.json()["hits"]) <= 8


def test_top_k_limit_comes_from_the_config(index):
    with serve(create_app(config_path=str(variant(index, "k2.yaml", "max_top_k: 2\nmax_question_chars: 10")))) as url:
        r = requests.post(f"{url}/search", json={"query": "forms", "top_k": 8}, timeout=30)
        assert r.status_code == 400 and "from 1 to 2 (api.max_top_k)" in r.json()["error"]["message"]
        r = requests.post(f"{url}/search", json={"query": "forms"}, timeout=30)  # retrieval.top_k 5, capped at 2
        assert r.status_code == 200 and len(r.json()["hits"]) == 2
        r = requests.post(f"{url}/search", json={"query": "forms and binding"}, timeout=30)
        assert r.status_code == 413 and "10 characters" in r.json()["error"]["message"]
        spec = requests.get(f"{url}/openapi.json", timeout=30).json()
        top_k = spec["components"]["schemas"]["SearchRequest"]["properties"]["top_k"]["anyOf"][0]
        assert top_k == {"type": "integer", "minimum": 1, "maximum": 2}


# what the JSON encoder writes for a lone surrogate: requests' json= cannot send one
LONE = "\\ud800"


@pytest.mark.parametrize("route, body, field", [
    ("/search", '{"query": "refresh %s"}', "query"),
    ("/ask", '{"question": "refresh %s"}', "question"),
    ("/search", '{"query": "forms", "source": "gui%sde"}', "source"),
    ("/ask", '{"question": "forms", "filters": {"section": "a%s"}}', "filters.section"),
    ("/search", '{"query": "forms", "filters": {"section": ["a", "%s"]}}', "filters.section"),
    ("/search", '{"query": "forms", "filters": {"sec%s": "a"}}', "a key of 'filters'"),
    ("/ask", '{"question": "forms", "%s": 1}', "a field name of the body"),
    ("/search", '{"query": "\\udc00 alone"}', "query"),
    # a value with a pattern (pydantic cannot match one against a lone surrogate): the field, not "a field name"
    ("/ask", '{"question": "forms", "thread_id": "%s' + "0" * 31 + '"}', "thread_id"),
    ("/a2a/invoke", '{"agent": "docs", "task": {"question": "x"}, "%s": 1}', "a field name of the body"),
    ("/a2a/invoke", '{"agent": "docs", "task": {"question": "x"}, "params": {"%s": 1}}', "a field name of 'params'"),
    ("/a2a/invoke", '{"agent": "docs", "task": {"question": "x", "%s": 1}}', "a field name of 'task'"),
    ("/feedback", '{"trace_id": "abc", "rating": "up", "%s": 1}', "a field name of the body"),
])
def test_lone_surrogates_are_a_400_naming_the_field(server, route, body, field):
    data = body % LONE if "%s" in body else body
    r = requests.post(f"{server}{route}", data=data.encode(), headers={"Content-Type": "application/json"}, timeout=30)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    start = field if " " in field else f"'{field}"  # a key is named by where it is, never shown garbled
    assert err["code"] == "invalid_text" and err["message"].startswith(start) and "not valid Unicode" in err["message"]
    assert "\ufffd" not in err["message"], err
    assert not re.search(r"\\ud[89a-f][0-9a-f]{2}", r.text, re.I), r.text  # nothing echoed that is not text


def test_pages_with_an_unknown_source_and_a_body_that_is_not_utf8(server):
    r = requests.get(f"{server}/pages", params={"url": "install.md", "source": "nope"}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_source", r.text
    assert "configured sources: guide" in r.json()["error"]["message"]
    r = requests.post(f"{server}/search", data='{"query": "café"}'.encode("latin-1"),
                      headers={"Content-Type": "application/json; charset=latin-1"}, timeout=30)
    assert r.status_code == 415 and "send the JSON body as UTF-8" in r.json()["error"]["message"], r.text
    r = requests.post(f"{server}/search", data='{"query": "café"}'.encode("utf-16"),
                      headers={"Content-Type": "application/json; charset=utf-16"}, timeout=30)
    assert r.status_code == 200, r.text


def test_a_config_saved_broken_while_serving_keeps_the_last_good_one_served_until_it_is_fixed(index, caplog):
    """An editor saving the config mid-edit (a YAML error), or a key misspelt: every request was a 503
    until the file was fixed, so a typo took the service down. The config last loaded is now served in
    the meantime, /health says the server is degraded and why to look at the log, and the log has one
    warning per broken save naming the file and the fault, without a traceback. Once the file is fixed
    (or changed to another valid config), it is served again without a restart. A server that starts
    with a broken file has no good config to keep: that is a 503 (next test)."""
    import logging

    cfg = variant(index, "reloaded.yaml", "rate_limit_per_minute: 100000")
    good = cfg.read_text()
    with serve(create_app(config_path=str(cfg))) as url, caplog.at_level(logging.WARNING):
        assert requests.post(f"{url}/search", json={"query": "forms"}, timeout=30).status_code == 200
        assert requests.get(f"{url}/health", timeout=30).json()["status"] == "ok"
        for broken, fault in ((good.replace("sources:", "sources:\n - broken: [", 1), "not valid YAML"),
                              (good.replace("sources:", "colour: red\nsources:", 1), "colour: unknown key")):
            cfg.write_text(broken)
            for _ in range(2):
                r = requests.post(f"{url}/search", json={"query": "forms"}, timeout=30)
                assert r.status_code == 200 and r.json()["hits"], r.text
            health = requests.get(f"{url}/health", timeout=30).json()
            assert health["status"] == "degraded" and set(health["sources"]) == {"guide"}, health
            assert health["config_error"].startswith("the config file cannot be loaded, so the config last loaded")
            logged = [rec for rec in caplog.records if fault in rec.getMessage()]
            assert len(logged) == 1 and "reloaded.yaml" in logged[0].getMessage() and logged[0].exc_info is None \
                and "is served until it is fixed" in logged[0].getMessage(), [rec.getMessage() for rec in logged]
        cfg.write_text(good.replace("name: guide", "name: manual"))  # fixed, and changed
        assert set(requests.get(f"{url}/health", timeout=30).json()["sources"]) == {"manual"}
        cfg.write_text(good)
        assert requests.get(f"{url}/health", timeout=30).json()["status"] == "ok"


def test_a_server_started_with_a_broken_config_answers_503_and_one_log_line_until_it_is_fixed(index, caplog):
    """With no config ever loaded there is none to keep: every request is a 503 naming the cause, until
    the file is fixed, then answered without a restart. The server log had the message and then two
    tracebacks (YAML's and ours) for every request; the message names the file and the line already."""
    import logging

    cfg = variant(index, "startbroken.yaml", "rate_limit_per_minute: 100000")
    good = cfg.read_text()
    cfg.write_text(good.replace("sources:", "sources:\n - broken: [", 1))
    with serve(create_app(config_path=str(cfg))) as url, caplog.at_level(logging.WARNING):
        r = requests.post(f"{url}/search", json={"query": "forms"}, timeout=30)
        assert r.status_code == 503 and r.json()["error"]["message"] == (
            "the search backend is unavailable: the server's configuration cannot be loaded; see the server log")
        logged = [rec for rec in caplog.records if "backend unavailable on POST /search" in rec.getMessage()]
        assert len(logged) == 1 and "startbroken.yaml" in logged[0].getMessage() and "not valid YAML" in \
            logged[0].getMessage() and logged[0].exc_info is None, [rec.getMessage() for rec in logged]
        cfg.write_text(good)
        assert requests.post(f"{url}/search", json={"query": "forms"}, timeout=30).status_code == 200


def test_a_config_read_half_saved_is_served_whole_once_the_save_ends(index):
    """An editor saves in place: it truncates, then writes. A request that read the file between the two
    saw a valid config (here without its sources); where both writes get the same modification time (a
    clock that ticks by the second, as on some mounts), the server kept that half-written config until
    the next save, since only the modification time was compared."""
    cfg = variant(index, "halfsaved.yaml", "rate_limit_per_minute: 100000")
    whole = cfg.read_text()
    with serve(create_app(config_path=str(cfg))) as url:
        assert set(requests.get(f"{url}/health", timeout=30).json()["sources"]) == {"guide"}
        tick = cfg.stat().st_mtime_ns + 5_000_000_000  # one tick of a coarse clock, for both writes
        with open(cfg, "w") as f:
            f.write(whole[:whole.index("sources:")])
            f.flush()
            os.utime(cfg, ns=(tick, tick))
            assert requests.get(f"{url}/health", timeout=30).json()["sources"] == {}  # read half-way
            f.write(whole[whole.index("sources:"):])
        os.utime(cfg, ns=(tick, tick))
        assert set(requests.get(f"{url}/health", timeout=30).json()["sources"]) == {"guide"}


@pytest.mark.parametrize("stream", [False, True])
def test_a_config_edit_saved_during_a_request_is_not_half_applied_to_it(index, monkeypatch, stream):
    """/ask read the config twice: once for its guard and checks, once more to answer. A save between the
    two (here: the source renamed) answered a request checked against one config from another: a 400
    'no source named guide' for a request whose source the server had just accepted. A request now reads
    the config once; the next request sees the edit."""
    import docs_rag_pipeline.context as context_module
    import docs_rag_pipeline.serve.api as api_module

    cfg = variant(index, "editedmidway.yaml", "rate_limit_per_minute: 100000")
    whole = cfg.read_text()
    read = context_module.get_context

    def read_then_save(*a, **k):  # the edit lands right after this request's first read
        ctx = read(*a, **k)
        cfg.write_text(whole.replace("name: guide", "name: handbook"))
        return ctx

    app = create_app(config_path=str(cfg))
    with serve(app) as url:
        monkeypatch.setattr(api_module, "get_context", read_then_save)
        r = requests.post(f"{url}/ask", json={"question": "forms", "source": "guide", "stream": stream}, timeout=60)
        assert r.status_code == 200, r.text
        assert ("event: final" in r.text) if stream else not r.json()["refused"]
        monkeypatch.setattr(api_module, "get_context", read)
        r = requests.post(f"{url}/ask", json={"question": "forms", "source": "guide"}, timeout=60)
        assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_source", r.text


@pytest.mark.parametrize("route, params", [
    ("/pages", [("url", "install.md"), ("url", "forms.md")]),
    ("/view", [("url", "install.md"), ("url", "forms.md")]),
    ("/pages", [("url", "install.md"), ("source", "guide"), ("source", "other")]),
])
def test_a_query_parameter_given_twice_is_a_400_not_the_first_one(server, route, params):
    """`/pages?url=a&url=b` answered with page a: which one was meant is unknown, so it is a 400 naming
    the parameter."""
    r = requests.get(f"{server}{route}", params=params, timeout=30)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["code"] == "duplicate_field" and err["message"] == f"'{params[-1][0]}' is given 2 times; give it once"


@pytest.mark.parametrize("route, body, field", [
    ("/search", b'{"query": "forms", "query": "ZX81_QUANTUM_FLUX"}', "query"),
    ("/ask", b'{"question": "What do validators return?", "question": "install?"}', "question"),
    ("/a2a/invoke", b'{"agent": "docs", "task": {"question": "forms", "question": "install?"}}', "question"),
    ("/search", b'{"query": "forms", "filters": {"section": "a", "section": "b"}}', "section"),
    ("/feedback", b'{"trace_id": "abc", "rating": "up", "rating": "down"}', "rating"),
])
def test_a_json_field_given_twice_is_a_400_not_the_last_one(server, route, body, field):
    """httpfuzz F3: {"query": "a", "query": "b"} was answered for "b" without a word (json.loads keeps the
    last), while a query parameter given twice is a 400: which one was meant is unknown either way."""
    r = requests.post(f"{server}{route}", data=body, headers={"Content-Type": "application/json"}, timeout=60)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["code"] == "duplicate_field"
    assert err["message"] == f"the body gives the field '{field}' 2 times; give it once"


@pytest.mark.parametrize("route", ["/search", "/ask", "/a2a/invoke", "/feedback"])
def test_a_compressed_body_is_a_415_that_names_content_encoding(server, route):
    """httpfuzz F4: a valid JSON body sent gzipped (Content-Encoding: gzip) was read as it came and refused
    as "the body must be a JSON object", and a body labelled with a coding was read as if it had none."""
    import gzip

    body = json.dumps({"query": "forms", "question": "forms"}).encode()
    for coding, data in (("gzip", gzip.compress(body)), ("br", body)):
        r = requests.post(f"{server}{route}", data=data, timeout=60,
                          headers={"Content-Type": "application/json", "Content-Encoding": coding})
        assert r.status_code == 415, r.text
        err = r.json()["error"]
        assert err["code"] == "unsupported_media_type" and f"Content-Encoding: {coding}," in err["message"]
        assert r.headers["Accept-Encoding"] == "identity"
    r = requests.post(f"{server}/search", data=b'{"query": "forms"}', timeout=60,
                      headers={"Content-Type": "application/json", "Content-Encoding": "identity"})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("route, field", [("/ask", "question"), ("/search", "query")])
def test_unknown_source_and_filter_key_are_400s(server, route, field):
    r = requests.post(f"{server}{route}", json={field: "forms", "source": "nope"}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_source"
    assert r.json()["error"]["message"] == "'source': no source named 'nope'; configured sources: guide"
    r = requests.post(f"{server}{route}", json={field: "forms", "filters": {"colour": "red"}}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_filter"
    msg = r.json()["error"]["message"]
    assert msg.startswith("filters: unknown metadata key 'colour'; keys that exist: ") and "audience" in msg
    assert "source" in msg.split("exist: ")[1].split(", ")
    r = requests.post(f"{server}{route}", json={field: "forms", "filters": {"audience": "beginners"}}, timeout=30)
    assert r.status_code == 200, r.text  # a key the index knows (frontmatter of install.md)
    # a source named in filters is checked as `source` is, not an empty result or a refusal
    r = requests.post(f"{server}{route}", json={field: "forms", "filters": {"source": ["guide", "nope"]}}, timeout=30)
    assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_source", r.text
    assert r.json()["error"]["message"] == "'filters.source': no source named 'nope'; configured sources: guide"


def test_a_metadata_key_in_any_script_can_be_filtered_on(tmp_path):
    """unicode F5: a frontmatter key such as ``séction`` or ``分类`` was listed among the keys that exist,
    and every filter on it was refused as an invalid key ("use letters", though é is one). A key is any
    key a page has, in any script, without ``=`` or control characters: Python, HTTP and the CLI agree."""
    from docs_rag_pipeline import refresh, search
    from docs_rag_pipeline.context import get_context

    write_docs(tmp_path / "docs", {**GUIDE,
                                   "meerkat.md": "---\nséction: café\n分类: 指南\nrelease date: may\n---\n# Meerkats\n\n"
                                                 "The meerkat colony posts sentries at dawn.\n"})
    cfg = write_config(tmp_path)
    refresh.refresh(get_context(cfg), "guide")
    for filters in ({"séction": "café"}, {"分类": "指南"}, {"release date": "may"}):
        hits = search("meerkat sentries", config=str(cfg), filters=filters)
        assert hits and {h.page_url.rsplit("/", 1)[-1] for h in hits} == {"meerkat.md"}, filters
    assert not search("meerkat sentries", config=str(cfg), filters={"séction": "thé"})
    with serve(create_app(config_path=str(cfg))) as url:
        r = requests.post(f"{url}/search", json={"query": "meerkat sentries", "filters": {"séction": "café"}}, timeout=30)
        assert r.status_code == 200 and r.json()["hits"][0]["url"].endswith("meerkat.md"), r.text
        r = requests.post(f"{url}/search", json={"query": "meerkat", "filters": {"a=b": 1}}, timeout=30)
        assert r.status_code == 400 and r.json()["error"]["message"] == (
            "filters: invalid key 'a=b'; use a metadata key as a page has it, without '=' or control characters")


def test_openapi_document_is_derived_from_the_models(server):
    from docs_rag_pipeline.schemas import AskRequest, FeedbackRequest, SearchRequest

    r = requests.get(f"{server}/openapi.json", timeout=30)
    assert r.status_code == 200
    spec = r.json()
    assert spec["openapi"].startswith("3.1") and set(spec["paths"]) == {
        "/search", "/ask", "/chunks/{chunk_id}", "/pages", "/health", "/sources/{name}/refresh",
        "/a2a/invoke", "/.well-known/agent.json", "/feedback", "/view"}
    schemas = spec["components"]["schemas"]
    for model in (SearchRequest, AskRequest, FeedbackRequest):
        mine = model.model_json_schema()
        theirs = schemas[model.__name__]
        assert set(theirs["properties"]) == set(mine["properties"]) and theirs["required"] == mine["required"]
        assert theirs["additionalProperties"] is False
    assert schemas["SearchRequest"]["properties"]["source"]["anyOf"][0]["enum"] == ["guide"]
    assert spec["paths"]["/ask"]["post"]["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/AskRequest"}


def test_chunk_with_parent_chain(server):
    hit = requests.post(f"{server}/search", json={"query": "converter turns typed text into a datetime", "top_k": 1},
                        timeout=30).json()["hits"][0]
    assert hit["url"].endswith("forms/binding.md#converters")
    r = requests.get(f"{server}/chunks/{hit['chunk_id']}", timeout=30)
    assert r.status_code == 200
    chunk = r.json()
    assert chunk["chunk_id"] == hit["chunk_id"] and chunk["text"] == hit["text"]
    assert chunk["headings"] == hit["headings"] and chunk["parent_id"] == hit["parent_id"]
    chain = chunk["parent_chain"]
    assert chain, "a sub-section has a parent"
    expected_parent = chunk["parent_id"]
    for ancestor in chain:  # nearest first, each the parent of the one before
        assert ancestor["chunk_id"] == expected_parent
        expected_parent = ancestor["parent_id"]
    assert chain[-1]["parent_id"] is None
    assert [a["headings"] for a in chain][:2] == [["Two-way binding"], []]
    r = requests.get(f"{server}/chunks/no-such-chunk", timeout=30)
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = requests.get(f"{server}/chunks/x' OR '1'='1", timeout=30)
    assert r.status_code == 404


def test_pages_in_order(server):
    r = requests.get(f"{server}/pages", params={"url": "https://docs.example.org/install.md#on-linux"}, timeout=30)
    assert r.status_code == 200
    page = r.json()
    assert page["url"] == "https://docs.example.org/install.md" and page["source"] == "guide"
    assert page["title"] == "Installing Acme Widgets"
    idx = [c["chunk_index"] for c in page["chunks"]]
    assert idx == sorted(idx) and idx[0] == 0 and len(idx) >= 3
    assert [c["url"].split("#")[-1] for c in page["chunks"]][-2:] == ["on-linux", "troubleshooting"]
    assert all(c["page_url"] == page["url"] for c in page["chunks"])
    for params, status, code in (({"url": "https://docs.example.org/nope.md"}, 404, "not_found"),
                                 ({}, 400, "missing_url"), ({"url": " "}, 400, "missing_url"),
                                 ({"url": "x", "colour": "red"}, 400, "unknown_field")):
        r = requests.get(f"{server}/pages", params=params, timeout=30)
        assert r.status_code == status and r.json()["error"]["code"] == code


def test_a_page_read_while_a_refresh_commits_is_one_versions_page(tmp_path):
    """ops7 F4: a read counted the matching rows, then read that many, on a handle that follows new
    versions: a refresh committed in between that grew a page gave ``/pages`` the first 3 rows of the new
    version's 13, chunk_index 1 to 3 (seen live while an ingest rewrote a page). The refresh here lands
    right before the read's query (the served handle then sees it, as its read consistency interval
    makes it do within a second): the page read is one version's whole page."""
    from docs_rag_pipeline import refresh
    from docs_rag_pipeline.config import load_config
    from docs_rag_pipeline.context import Context, get_context

    part = "## Part {0}\n\nPart {0} says the widget holds {0} items.\n\n"
    write_docs(tmp_path / "docs", {"p.md": "# Page\n\n" + "".join(part.format(i) for i in range(3))})
    cfg = write_config(tmp_path)
    refresh.refresh(Context(load_config(cfg)), "guide")
    url = "https://docs.example.org/p.md"
    with serve(create_app(config_path=str(cfg))) as server:
        before = requests.get(f"{server}/pages", params={"url": url}, timeout=60).json()["chunks"]
        tbl = get_context(str(cfg)).chunks.open()  # the handle the server reads with
        search = tbl.search

        def refresh_then_search(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            tbl.search = search  # once
            write_docs(tmp_path / "docs", {"p.md": "# Page\n\n## Preface\n\nA preface moves every part by one.\n\n"
                                                   + "".join(part.format(i) for i in range(12))})
            refresh.refresh(Context(load_config(cfg)), "guide")
            tbl.checkout_latest()
            return search(*args, **kwargs)

        tbl.search = refresh_then_search
        across = requests.get(f"{server}/pages", params={"url": url}, timeout=60).json()["chunks"]
        after = requests.get(f"{server}/pages", params={"url": url}, timeout=60).json()["chunks"]
    assert tbl.search == search  # the refresh landed inside the read
    assert (len(before), len(after)) == (3, 13)
    assert [(c["chunk_index"], c["chunk_id"]) for c in across] == [(c["chunk_index"], c["chunk_id"]) for c in after]


@pytest.mark.parametrize("route, field, extra", [
    ("/search", "query", {"source": "nope"}),
    ("/ask", "question", {"source": "nope"}),
    ("/search", "query", {"filters": ["section"]}),
    ("/ask", "question", {"filters": "section=guides"}),
    ("/search", "query", {"filters": {"colour": "red"}}),
    ("/ask", "question", {"filters": {"colour": "red"}}),
    ("/search", "query", {"query": "forms \ud800"}),
    ("/ask", "question", {"question": "forms \udfff"}),
    ("/ask", "question", {"thread_id": "../etc/passwd"}),
    ("/ask", "question", {"top_k": 0}),
    ("/search", "query", {"top_k": -2}),
    ("/search", "query", {"query": "\u200b\u200b"}),  # zero-width spaces only: nothing to search for
    ("/ask", "question", {"question": "\ufeff \u200d\n"}),
])
def test_the_python_api_refuses_what_http_refuses(server, index, route, field, extra):
    """``from docs_rag_pipeline import search, ask`` checks its input as the HTTP API does: an unknown
    source or metadata key, filters that are not an object, text that is not Unicode, a malformed
    thread id or a top_k below 1 are errors with the same code, not an empty result or a refusal."""
    from docs_rag_pipeline import ask, search
    from docs_rag_pipeline.retrieval import QueryError

    body = {field: "forms", **extra}
    r = requests.post(f"{server}{route}", json=body, timeout=30)
    assert r.status_code == 400, r.text
    fn = search if route == "/search" else ask
    with pytest.raises(QueryError) as err:
        fn(body.pop(field), config=str(index), **body)
    assert err.value.code == r.json()["error"]["code"], (str(err.value), r.json())


def test_routes_and_methods_answer_json(server):
    r = requests.get(f"{server}/nope", timeout=30)
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = requests.get(f"{server}/search", timeout=30)
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"
    assert r.headers["Allow"] == "OPTIONS, POST" and "use POST" in r.json()["error"]["message"]
    r = requests.delete(f"{server}/chunks/abc", timeout=30)
    assert r.status_code == 405 and "GET" in r.headers["Allow"] and "use GET" in r.json()["error"]["message"]


def test_a_plain_options_request_is_a_204_with_allow_and_no_html(server):
    """An ``OPTIONS`` request that is no CORS preflight was answered by Flask's default, ``200`` typed
    ``text/html``, from an API whose every other answer is JSON; it is a ``204`` with the ``Allow`` header and
    no body (a browser's preflight keeps its own answer: ``test_a_page_on_a_listed_origin_can_call_the_api_cors``)."""
    for route, allow in (("/search", {"OPTIONS", "POST"}), ("/ask", {"OPTIONS", "POST"}),
                         ("/health", {"GET", "HEAD", "OPTIONS"}), ("/chunks/abc", {"GET", "HEAD", "OPTIONS"})):
        r = requests.options(f"{server}{route}", timeout=30)
        assert r.status_code == 204 and r.content == b"", (route, r.status_code, r.content)
        assert "Content-Type" not in r.headers and {m.strip() for m in r.headers["Allow"].split(",")} == allow
    r = requests.options(f"{server}/nope", timeout=30)
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_a_path_with_a_repeated_slash_is_a_json_404_never_a_redirect_to_the_host_header(server):
    """ops7 F3: werkzeug merged repeated slashes with a ``308`` typed ``text/html`` whose absolute ``Location``
    was built from the request's ``Host`` header: ``GET /static//style.css`` with ``Host: evil.example`` was
    sent to ``http://evil.example/static/style.css``, permanently. Such a path is no route: the JSON 404."""
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(server)
    for path in ("/static//style.css", "/chunks//abc", "/static//app.js", "/search//"):
        c = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
        c.putrequest("GET", path, skip_host=True)
        c.putheader("Host", "evil.example")
        c.endheaders()
        r = c.getresponse()
        body = r.read()
        c.close()
        assert r.status == 404 and r.getheader("Location") is None, (path, r.status, r.getheader("Location"))
        assert r.getheader("Content-Type") == "application/json" and b'"not_found"' in body, (path, body)
    assert requests.get(f"{server}/static/style.css", timeout=30).status_code == 200


def test_numbers_python_cannot_read_or_json_does_not_have_are_a_400_that_says_so(server):
    """A 5000-digit integer (Python reads at most 4300) was answered "the body must be a JSON object",
    which it is; NaN and Infinity, which JSON does not have, were taken as filter values."""
    spec = requests.get(f"{server}/openapi.json", timeout=30).json()
    routes = [p for p, ops in spec["paths"].items() if "post" in ops and "requestBody" in ops["post"]]
    for route in routes:
        for body, needle in (('{"query": "x", "question": "x", "top_k": %s}' % ("9" * 5000), "too long to read"),
                             ('{"query": "x", "question": "x", "filters": {"section": NaN}}', "NaN is not a JSON number"),
                             ('{"query": "x", "question": "x", "top_k": -Infinity}', "-Infinity is not a JSON number")):
            r = requests.post(f"{server}{route}", data=body, headers={"Content-Type": "application/json"}, timeout=30)
            assert r.status_code == 400, (route, r.text)
            err = r.json()["error"]
            assert err["code"] == "invalid_json" and needle in err["message"], (route, err)


def test_the_openapi_schemas_refuse_what_the_server_refuses(server):
    """A client (or a fuzzer) that trusts /openapi.json must not send what the server then refuses:
    the patterns of thread_id, trace_id and filter keys were lost on the way into the schema."""
    import jsonschema

    spec = requests.get(f"{server}/openapi.json", timeout=30).json()

    def valid(name: str, body: dict) -> bool:
        schema = {**spec["components"]["schemas"][name], "components": spec["components"]}
        try:
            jsonschema.validate(body, schema)
            return True
        except jsonschema.ValidationError:
            return False

    for route, name, body in (("/ask", "AskRequest", {"question": "forms", "thread_id": "x" * 32}),
                              ("/ask", "AskRequest", {"question": "forms", "filters": {"bad=key": "a"}}),
                              ("/search", "SearchRequest", {"query": "forms", "filters": {"sec\u0001tion": "a"}}),
                              ("/feedback", "FeedbackRequest", {"trace_id": "\u001a", "rating": "up"})):
        r = requests.post(f"{server}{route}", json=body, timeout=30)
        assert r.status_code == 400 and not valid(name, body), (route, body, r.text)
    assert valid("AskRequest", {"question": "forms", "thread_id": "0" * 32, "filters": {"section": "a"}})


def test_a_deeply_nested_body_is_a_400_on_every_route_that_takes_json(server):
    """Every route with a JSON body reads it the same way: nesting too deep for the parser is a 400
    naming the problem, never a 500 (POST /feedback once parsed its body on its own)."""
    spec = requests.get(f"{server}/openapi.json", timeout=30).json()
    routes = [p for p, ops in spec["paths"].items() if "post" in ops and "requestBody" in ops["post"]]
    assert {"/ask", "/search", "/feedback"} <= set(routes)
    for route in routes:
        r = requests.post(f"{server}{route}", data="[" * 30000 + "]" * 30000,
                          headers={"Content-Type": "application/json"}, timeout=30)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json", (route, r.text)


def test_rate_limit_per_client(index):
    with serve(create_app(config_path=str(variant(index, "limited.yaml", "rate_limit_per_minute: 3")))) as url:
        # no route (the browser's own /favicon.ico, chatpage F6) is a 404 that counts for nothing: it
        # used up the limit, and the chat page's second question got a 429
        for _ in range(4):
            assert requests.get(f"{url}/favicon.ico", timeout=30).status_code == 404
        codes = [requests.post(f"{url}/search", json={"query": "forms"}, timeout=30).status_code for _ in range(3)]
        assert codes == [200, 200, 200]
        r = requests.post(f"{url}/search", json={"query": "forms"}, timeout=30)
        assert r.status_code == 429 and r.json()["error"]["code"] == "rate_limited"
        assert 1 <= int(r.headers["Retry-After"]) <= 60
        # bad requests count too, and /health is never limited
        assert requests.get(f"{url}/chunks/x", timeout=30).status_code == 429
        assert requests.get(f"{url}/health", timeout=30).status_code == 200


def test_a_page_on_a_listed_origin_can_call_the_api_cors(index, monkeypatch):
    """httpfuzz F1: a page on another origin (a docs site's "ask" widget) could not call the API: no
    response carried Access-Control-Allow-Origin and no setting made one, the browser's preflight (which
    never carries a token) was a 401 and counted by the rate limit. ``api.cors_origins`` lists the origins:
    their preflights are answered without the token and not counted, and every answer to them (errors
    too) is readable; any other origin, and a server without the key, gets no CORS header."""
    origin = "https://docs.example.org"
    cfg = variant(index, "cors.yaml", f"token_env: DOCS_RAG_TEST_TOKEN\nrate_limit_per_minute: 3\n"
                                      f"cors_origins: ['{origin}/']")
    monkeypatch.setenv("DOCS_RAG_TEST_TOKEN", "s3cret-user")
    preflight = {"Origin": origin, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization, content-type"}
    with serve(create_app(config_path=str(cfg))) as url:
        for _ in range(5):  # more than the limit: a preflight is no request of the client's
            r = requests.options(f"{url}/ask", headers=preflight, timeout=30)
            assert r.status_code == 204, r.text
            assert r.headers["Access-Control-Allow-Origin"] == origin
            assert r.headers["Access-Control-Allow-Methods"] == "POST"
            assert {h.strip().lower() for h in r.headers["Access-Control-Allow-Headers"].split(",")} >= {
                "authorization", "content-type"}
        r = requests.post(f"{url}/search", json={"query": "forms"}, timeout=30,
                          headers={"Origin": origin, "Authorization": "Bearer s3cret-user"})
        assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == origin
        assert "Origin" in r.headers["Vary"] and "Retry-After" in r.headers["Access-Control-Expose-Headers"]
        r = requests.post(f"{url}/search", json={"query": "forms"}, headers={"Origin": origin}, timeout=30)
        assert r.status_code == 401 and r.headers["Access-Control-Allow-Origin"] == origin  # the page reads why
        other = requests.options(f"{url}/ask", headers={**preflight, "Origin": "https://evil.example"}, timeout=30)
        assert "Access-Control-Allow-Origin" not in other.headers
        r = requests.post(f"{url}/search", json={"query": "forms"}, timeout=30,
                          headers={"Origin": "https://evil.example", "Authorization": "Bearer s3cret-user"})
        assert r.status_code == 200 and "Access-Control-Allow-Origin" not in r.headers
    with serve(create_app(config_path=str(variant(index, "nocors.yaml", "rate_limit_per_minute: 0")))) as url:
        r = requests.options(f"{url}/ask", headers=preflight, timeout=30)
        assert "Access-Control-Allow-Origin" not in r.headers
        r = requests.post(f"{url}/search", json={"query": "forms"}, headers={"Origin": origin}, timeout=30)
        assert r.status_code == 200 and "Access-Control-Allow-Origin" not in r.headers


def test_rate_limiter_is_a_sliding_window_and_thread_safe():
    now = [1000.0]
    rl = RateLimiter(window=60.0, clock=lambda: now[0])
    assert [rl.check("a", 2) for _ in range(3)][:2] == [None, None]
    assert rl.check("a", 2) == pytest.approx(60.0)
    assert rl.check("b", 2) is None  # per client
    now[0] += 30
    assert rl.check("a", 2) == pytest.approx(30.0)
    now[0] += 30.5
    assert rl.check("a", 2) is None
    assert rl.check("c", 0) is None  # 0: no limit
    rl2 = RateLimiter(window=60.0)
    allowed = []
    lock = threading.Lock()

    def worker():
        for _ in range(50):
            ok = rl2.check("shared", 100) is None
            with lock:
                allowed.append(ok)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(allowed) == 100 and len(allowed) == 400


# ---- auth and the admin refresh route -------------------------------------------------------

class FakeDagster(LocalServer):
    """A real HTTP server on 127.0.0.1 that speaks enough of Dagster's GraphQL API to launch a run."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        outer = self

        class Handler(QuietHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.read_body())
                outer.requests.append({"path": self.path, **body})
                if "repositoriesOrError" in body["query"]:
                    data = {"repositoriesOrError": {"__typename": "RepositoryConnection", "nodes": [
                        {"name": "__repository__", "location": {"name": "docs_rag_pipeline"},
                         "jobs": [{"name": "__ASSET_JOB"}, {"name": "refresh_source"}]}]}}
                elif "launchRun" in body["query"]:
                    data = {"launchRun": {"__typename": "LaunchRunSuccess",
                                          "run": {"runId": "run-0001", "status": "QUEUED"}}}
                else:
                    data = None
                self.send_json(200, {"data": data} if data else {"errors": [{"message": "unknown operation"}]})

        super().__init__(Handler, path="/graphql")


def test_bearer_token_on_every_route_but_health_and_the_page(index, monkeypatch):
    cfg = variant(index, "auth.yaml", "token_env: DOCS_RAG_TEST_TOKEN\nadmin_token_env: DOCS_RAG_TEST_ADMIN")
    monkeypatch.setenv("DOCS_RAG_TEST_TOKEN", "s3cret-user")
    monkeypatch.setenv("DOCS_RAG_TEST_ADMIN", "s3cret-admin")
    with serve(create_app(config_path=str(cfg))) as url:
        for method, path, kw in (("post", "/search", {"json": {"query": "forms"}}),
                                 ("post", "/ask", {"json": {"question": "What do validators return?"}}),
                                 ("get", "/chunks/abc", {}), ("get", "/pages?url=x", {})):
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret-user"}):
                r = requests.request(method, url + path, headers=headers, timeout=30, **kw)
                assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized", (path, headers)
                assert r.headers["WWW-Authenticate"].startswith("Bearer")
            r = requests.request(method, url + path, headers={"Authorization": "Bearer s3cret-user"}, timeout=30, **kw)
            assert r.status_code in (200, 404), (path, r.text)
        assert requests.get(f"{url}/health", timeout=30).status_code == 200
        page = requests.get(f"{url}/", timeout=30)
        assert page.status_code == 200 and "<textarea" in page.text
        assert requests.get(f"{url}/static/app.js", timeout=30).status_code == 200
        assert requests.get(f"{url}/static/style.css", timeout=30).status_code == 200
        # a token named in the config but missing from the environment: nothing is served (fail closed)
        monkeypatch.delenv("DOCS_RAG_TEST_TOKEN")
        r = requests.post(f"{url}/search", json={"query": "forms"}, headers={"Authorization": "Bearer "}, timeout=30)
        assert r.status_code == 503 and r.json()["error"]["code"] == "auth_unavailable"


def test_tokens_are_compared_as_the_bytes_that_were_set_and_sent(index, monkeypatch):
    """A token with non-ASCII letters, set as UTF-8 (as every shell sets it), matches the UTF-8 bytes a client
    sends (curl from a UTF-8 terminal); a variable holding bytes that are not UTF-8 (a Latin-1 secrets file;
    Python holds them as lone surrogates) matches those bytes and never turns a request into a 500."""
    cfg = variant(index, "bytes.yaml", "token_env: DOCS_RAG_TEST_TOKEN\nadmin_token_env: DOCS_RAG_TEST_ADMIN")
    token = "pässwörd voilà"  # ends in 'à', UTF-8 c3 a0: read as Latin-1, a0 is a no-break space
    monkeypatch.setenv("DOCS_RAG_TEST_TOKEN", token)
    monkeypatch.setenv("DOCS_RAG_TEST_ADMIN", os.fsdecode(b"a\xffm"))
    body = {"json": {"query": "forms"}, "timeout": 30}
    with serve(create_app(config_path=str(cfg))) as url:
        r = requests.post(f"{url}/search", headers={"Authorization": b"Bearer " + token.encode()}, **body)
        assert r.status_code == 200, r.text
        for wrong in (b"Bearer " + token.encode("latin-1"), b"Bearer p\xffss", b"Bearer a\xffm2"):
            r = requests.post(f"{url}/search", headers={"Authorization": wrong}, **body)
            assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized", (wrong, r.text)
        r = requests.post(f"{url}/search", headers={"Authorization": b"Bearer a\xffm"}, **body)  # the admin token
        assert r.status_code == 200, r.text
        r = requests.post(f"{url}/sources/guide/refresh", headers={"Authorization": b"Bearer wrong"}, timeout=30)
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden", r.text
        monkeypatch.setenv("DOCS_RAG_TEST_TOKEN", os.fsdecode(b"p\xffss"))
        r = requests.post(f"{url}/search", headers={"Authorization": b"Bearer p\xffss"}, **body)
        assert r.status_code == 200, r.text
        r = requests.post(f"{url}/search", headers={"Authorization": b"Bearer " + token.encode()}, **body)
        assert r.status_code == 401, r.text


def test_admin_refresh_asks_dagster_over_graphql(index, monkeypatch):
    from dagster_graphql.schema import create_schema
    from graphql import coerce_input_value, parse, validate

    monkeypatch.setenv("DOCS_RAG_TEST_TOKEN", "s3cret-user")
    monkeypatch.setenv("DOCS_RAG_TEST_ADMIN", "s3cret-admin")
    admin = {"Authorization": "Bearer s3cret-admin"}
    with FakeDagster() as dagster:
        cfg = variant(index, "admin.yaml", f"token_env: DOCS_RAG_TEST_TOKEN\nadmin_token_env: DOCS_RAG_TEST_ADMIN\n"
                                           f"dagster_graphql_url: {dagster.url}")
        with serve(create_app(config_path=str(cfg))) as url:
            for headers in ({}, {"Authorization": "Bearer s3cret-user"}, {"Authorization": "Bearer nope"}):
                r = requests.post(f"{url}/sources/guide/refresh", headers=headers, timeout=30)
                assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
            assert dagster.requests == []
            r = requests.post(f"{url}/sources/nope/refresh", headers=admin, timeout=30)
            assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_source"
            assert "guide" in r.json()["error"]["message"]
            r = requests.post(f"{url}/sources/guide/refresh", headers=admin, timeout=30)
            assert r.status_code == 202, r.text
            assert r.json() == {"source": "guide", "job": "refresh_source", "run_id": "run-0001", "status": "QUEUED",
                                "location": "docs_rag_pipeline", "repository": "__repository__"}
            # the admin token also opens the ordinary routes
            assert requests.post(f"{url}/search", json={"query": "forms"}, headers=admin, timeout=30).status_code == 200
    find, launch = dagster.requests
    assert find["path"] == launch["path"] == "/graphql"
    params = launch["variables"]["executionParams"]
    assert params["selector"] == {"repositoryLocationName": "docs_rag_pipeline", "repositoryName": "__repository__",
                                  "jobName": "refresh_source"}
    assert {"key": "dagster/partition", "value": "guide"} in params["executionMetadata"]["tags"]
    # what was sent is valid against Dagster's own GraphQL schema
    schema = create_schema().graphql_schema
    assert validate(schema, parse(find["query"])) == [] and validate(schema, parse(launch["query"])) == []
    assert find["query"] == FIND_JOB_QUERY and launch["query"] == LAUNCH_RUN_MUTATION
    coerce_input_value(params, schema.get_type("ExecutionParams"))  # raises on a wrong shape


def test_refresh_without_admin_token_configured_or_dagster_down(index, monkeypatch):
    with serve(create_app(config_path=str(variant(index, "noadmin.yaml", "rate_limit_per_minute: 1000")))) as url:
        r = requests.post(f"{url}/sources/guide/refresh", headers={"Authorization": "Bearer x"}, timeout=30)
        assert r.status_code == 403 and "admin_token_env" in r.json()["error"]["message"]
    monkeypatch.setenv("DOCS_RAG_TEST_ADMIN", "s3cret-admin")
    cfg = variant(index, "down.yaml", f"admin_token_env: DOCS_RAG_TEST_ADMIN\n"
                                      f"dagster_graphql_url: http://127.0.0.1:{closed_port()}/graphql")
    with serve(create_app(config_path=str(cfg))) as url:
        r = requests.post(f"{url}/sources/guide/refresh", headers={"Authorization": "Bearer s3cret-admin"}, timeout=30)
        assert r.status_code == 503 and r.json()["error"]["code"] == "dagster_unavailable"
        assert "unreachable" in r.json()["error"]["message"] and "api.dagster_graphql_url" in r.json()["error"]["message"]


def test_a_password_in_the_dagster_graphql_url_is_in_no_error_body(index, monkeypatch):
    """``api.dagster_graphql_url: http://ops:pw@dagster/graphql`` (Dagster behind a proxy with basic auth,
    which requests sends): the refresh route's 503 and 502 bodies said ``Dagster's GraphQL API at
    http://ops:pw@… is unreachable`` (secrets F3). The URL is shown without its user and password."""
    def not_graphql(environ, start_response):  # noqa: ANN001, ANN202 - a proxy's 404 page
        start_response("404 Not Found", [("Content-Type", "text/html")])
        return [b"<h1>Not Found</h1>"]

    monkeypatch.setenv("DOCS_RAG_TEST_ADMIN", "s3cret-admin")
    with serve(not_graphql) as other:
        for where in (f"127.0.0.1:{closed_port()}", other.split("://", 1)[1]):
            cfg = variant(index, "pw.yaml", f"admin_token_env: DOCS_RAG_TEST_ADMIN\n"
                                            f"dagster_graphql_url: http://ops:GqlPw-31c9@{where}/graphql")
            with serve(create_app(config_path=str(cfg))) as url:
                r = requests.post(f"{url}/sources/guide/refresh", headers={"Authorization": "Bearer s3cret-admin"},
                                  timeout=30)
            message = r.json()["error"]["message"]
            assert r.status_code in (502, 503) and f"at http://{where}/graphql " in message, message
            assert "GqlPw" not in r.text and "ops:" not in r.text


# ---- backend failures and genuine faults ---------------------------------------------------

def test_unusable_lancedb_is_503(tmp_path):
    write_docs(tmp_path / "docs", {"a.md": "# A\n\nSome text.\n"})
    cfg = write_config(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "lancedb").write_text("not a folder")
    with serve(create_app(config_path=str(cfg))) as url:
        for method, path, kw in (("post", "/search", {"json": {"query": "text"}}),
                                 ("post", "/ask", {"json": {"question": "what text?"}}),
                                 ("post", "/ask", {"json": {"question": "what text?", "stream": True}}),
                                 ("get", "/health", {}), ("get", "/chunks/abc", {})):
            r = requests.request(method, url + path, timeout=30, **kw)
            assert r.status_code == 503, (path, r.text)
            err = r.json()["error"]
            assert err["code"] == "backend_unavailable" and len(err["trace_id"]) == 32
            assert str(tmp_path) not in r.text and "/" not in err["message"] and ".rs" not in r.text, r.text
        assert requests.get(f"{url}/", timeout=30).status_code == 200  # the page itself still loads


def test_a_storage_path_that_is_not_utf8_is_a_503_naming_the_configuration(tmp_path):
    """A config in a folder whose name is not UTF-8 (storage: data under it): LanceDB cannot take the path,
    and every route but the page was a 500 (a codec error). Now the config is refused (the server log names
    storage and the fix) and the routes are 503 backend_unavailable, as for any configuration that cannot be
    loaded; `docs-rag serve` refuses to start with the message (test_cli.py)."""
    from .test_config import latin1_folder

    cfg = latin1_folder(tmp_path) / "docs_rag.yaml"
    with serve(create_app(config_path=os.fsdecode(cfg))) as url:
        for method, path, kw in (("get", "/health", {}), ("post", "/search", {"json": {"query": "text"}}),
                                 ("post", "/ask", {"json": {"question": "what text?"}})):
            r = requests.request(method, url + path, timeout=30, **kw)
            assert r.status_code == 503, (path, r.text)
            err = r.json()["error"]
            assert err["code"] == "backend_unavailable" and "configuration" in err["message"], r.text


def test_backend_details_go_to_the_log_not_the_client(tmp_path):
    import logging

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("docs_rag_pipeline.serve.api")
    logger.addHandler(handler)
    try:
        with serve(create_app(config_path=str(tmp_path / "missing" / "docs_rag.yaml"))) as url:
            r = requests.get(f"{url}/health", timeout=30)
    finally:
        logger.removeHandler(handler)
    assert r.status_code == 503 and str(tmp_path) not in r.text, r.text
    err = r.json()["error"]
    assert err["code"] == "backend_unavailable" and "configuration" in err["message"]
    logged = [rec for rec in records if err["trace_id"] in rec.getMessage()]
    # the log line names the file and the fix; a config error's traceback added nothing to it
    assert logged and str(tmp_path) in logged[0].getMessage() and logged[0].exc_info is None


def test_a_storage_folder_missing_or_not_ingested_logs_one_line_per_request(tmp_path, caplog):
    """`storage` pointed, while serving, at a folder with a typo or at one not ingested into yet: each
    request logged its message and then a traceback of 17 lines that said nothing more (the message
    names the folder and the fix), as a config saved broken did."""
    import logging

    cfg = write_config(tmp_path, extra="api:\n  rate_limit_per_minute: 0\n")
    with serve(create_app(config_path=str(cfg))) as url, caplog.at_level(logging.WARNING):
        for expected in ("does not exist", "holds no index yet"):
            caplog.clear()
            r = requests.post(f"{url}/search", json={"query": "forms"}, timeout=30)
            assert r.status_code == 503 and r.json()["error"]["code"] == "backend_unavailable", r.text
            logged = [rec for rec in caplog.records if r.json()["error"]["trace_id"] in rec.getMessage()]
            assert len(logged) == 1 and expected in logged[0].getMessage() and str(tmp_path / "data") in \
                logged[0].getMessage() and logged[0].exc_info is None, [(x.getMessage(), x.exc_info) for x in logged]
            (tmp_path / "data").mkdir(exist_ok=True)  # then there, but nothing ingested into it


def test_embedding_server_down_is_503(tmp_path):
    from docs_rag_pipeline.embedding import FakeEmbedder

    from .fake_openai import EmbeddingsServer

    write_docs(tmp_path / "docs", GUIDE)
    fake = FakeEmbedder(dimensions=64)
    with EmbeddingsServer(fake.embed) as emb:
        cfg = write_config(tmp_path, extra=f"""
            embedding:
              provider: openai
              model: fake-64
              base_url: {emb.url}
              dimensions: 64
              max_retries: 0
              timeout_seconds: 5
        """)
        with DagsterInstance.ephemeral() as instance:
            materialize_source(cfg, "guide", instance)
        with serve(create_app(config_path=str(cfg))) as url:
            assert requests.post(f"{url}/search", json={"query": "forms"}, timeout=30).status_code == 200
    with serve(create_app(config_path=str(cfg))) as url:  # the embedding server is gone now
        for path, body in (("/search", {"query": "forms"}), ("/ask", {"question": "How do forms validate input?"})):
            r = requests.post(url + path, json=body, timeout=60)
            assert r.status_code == 503, r.text
            assert r.json()["error"]["code"] == "backend_unavailable" and "embedding server" in r.json()["error"]["message"]
            assert "127.0.0.1" not in r.text and str(tmp_path) not in r.text


def test_a_genuine_fault_is_a_json_500_and_is_logged(index):
    import logging

    app = create_app(config_path=str(variant(index, "fault.yaml", "rate_limit_per_minute: 1000")))

    def boom():  # noqa: ANN202
        raise KeyError("a bug")

    app.add_url_rule("/boom", view_func=boom)
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("docs_rag_pipeline.serve.api")
    logger.addHandler(handler)
    try:
        with serve(app) as url:
            r = requests.get(f"{url}/boom", timeout=30)
    finally:
        logger.removeHandler(handler)
    assert r.status_code == 500
    err = r.json()["error"]
    assert err == {"code": "internal_error", "message": "an unexpected server error; the server log has the details",
                   "trace_id": err["trace_id"]} and len(err["trace_id"]) == 32
    assert any(rec.exc_info and isinstance(rec.exc_info[1], KeyError) for rec in records)


def test_a_config_file_changed_again_and_again_keeps_one_context(tmp_path):
    """Each change of the config file's modification time built a new context and kept the old one
    with its table's files open: a server whose config was touched a few hundred times (an editor,
    a ConfigMap update, a config-management run) ran out of file descriptors and answered 503 to
    everything. One context per file now; the one it replaces goes with its files."""
    import random

    from docs_rag_pipeline import refresh
    from docs_rag_pipeline.config import load_config
    from docs_rag_pipeline.context import Context

    root = tmp_path
    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(3, 9))) for _ in range(3000)]
    write_docs(root / "docs", {f"page{i}.md": f"# Page {i}\n\n" + " ".join(rng.choices(words, k=400))
                               for i in range(40)})  # a full-text index LanceDB keeps open while in use
    cfg = write_config(root, extra="api:\n  rate_limit_per_minute: 0\n")
    refresh.refresh(Context(load_config(cfg)), "guide")
    with serve(create_app(config_path=str(cfg))) as url:

        def index_files_open() -> int:
            held = 0
            for fd in os.listdir("/proc/self/fd"):
                try:
                    held += "_indices" in os.readlink(f"/proc/self/fd/{fd}")
                except OSError:
                    pass
            return held

        assert requests.post(f"{url}/search", json={"query": "data binding"}, timeout=120).status_code == 200
        before = index_files_open()
        stamp = cfg.stat().st_mtime
        for i in range(1, 41):
            os.utime(cfg, (stamp + i, stamp + i))
            assert requests.post(f"{url}/search", json={"query": "data binding"}, timeout=120).status_code == 200
        assert index_files_open() <= before + 1, (before, index_files_open())


def test_frontmatter_nan_and_infinity_are_served_as_valid_json(tmp_path):
    """YAML's ``.nan`` and ``.inf`` are floats JSON has no word for: served as bare ``NaN`` the chat page's
    ``JSON.parse`` failed and could not open the source. Every interface now reads the same text values,
    the ones the tags show."""
    from .test_cli import _run

    write_docs(tmp_path / "docs", {"nan.md": "---\nweight: .nan\nscore: -.inf\nsizes: [1.5, .inf]\n"
                                             "nested: {x: .NaN}\n---\n# Wibble\n\nWibble tuning needs a torque wrench.\n"})
    cfg = write_config(tmp_path)
    with DagsterInstance.ephemeral() as instance:
        materialize_source(cfg, "guide", instance)

    def strict(text: str):  # noqa: ANN202 - what a browser's JSON.parse accepts
        def refuse(constant: str):  # noqa: ANN202
            raise AssertionError(f"{constant} is not JSON: {text[:300]}")
        return json.loads(text, parse_constant=refuse)

    want = {"weight": "nan", "score": "-inf", "sizes": [1.5, "inf"], "nested": {"x": "nan"}}
    with serve(create_app(config_path=str(cfg))) as url:
        r = requests.post(f"{url}/search", json={"query": "wibble tuning torque wrench", "top_k": 1}, timeout=60)
        hit = strict(r.text)["hits"][0]
        chunk = requests.get(f"{url}/chunks/{hit['chunk_id']}", timeout=30)
        page = requests.get(f"{url}/pages", params={"url": "https://docs.example.org/nan.md"}, timeout=30)
    assert chunk.status_code == 200 and page.status_code == 200, (chunk.text, page.text)
    for body in (strict(chunk.text), *strict(page.text)["chunks"]):
        assert {k: body["metadata"].get(k) for k in want} == want, body["metadata"]
    cli = _run(["search", "wibble tuning torque wrench", "--json"], cfg)
    assert cli.returncode == 0, cli.stderr
    assert {k: strict(cli.stdout)[0]["metadata"].get(k) for k in want} == want


def test_health_before_the_first_ingest_is_ok_with_no_chunks(tmp_path):
    """A server started before the first ingest (its storage folder not made yet) is healthy with 0
    chunks, as documented; only a folder it saw and that went away since is a 503."""
    from .conftest import write_config

    (tmp_path / "docs").mkdir()
    cfg = write_config(tmp_path)
    client = create_app(config_path=str(cfg)).test_client()
    r = client.get("/health")
    assert r.status_code == 200, r.get_data(as_text=True)
    assert r.get_json()["sources"] == {"guide": 0} and r.get_json()["table_version"] is None


def test_a_streamed_answer_keeps_its_connection_alive_while_the_model_is_silent(index, monkeypatch):
    """httpfuzz F6: while a reasoning model thought (its <think> block is held back) a streamed /ask sent
    nothing at all, and a reverse proxy or load balancer closes a response silent past its idle timeout
    (nginx, an AWS ALB: 60 s), so the chat page's answer was cut. The stream now sends an SSE comment
    (``: keep-alive``) after each STREAM_KEEPALIVE_SECONDS of silence (shortened here); the LLM server
    holds its answer until the test has seen one, then the answer ends with its final event."""
    from docs_rag_pipeline.serve import api

    from .fake_llm import ChatServer

    monkeypatch.setattr(api, "STREAM_KEEPALIVE_SECONDS", 0.2, raising=False)
    with ChatServer() as llm:
        cfg = index.parent / "held.yaml"
        cfg.write_text(index.read_text() + f"llm:\n  provider: openai\n  model: held\n  base_url: {llm.url}\n"
                       "  timeout_seconds: 30\n")
        with serve(create_app(config_path=str(cfg))) as url:
            lines = []
            with requests.post(f"{url}/ask", json={"question": "What does a converter do in data binding?",
                                                    "stream": True}, stream=True, timeout=60) as r:
                for line in r.iter_lines():
                    lines.append(line.decode())
                    if line == b": keep-alive":
                        llm.release.set()
    events = [ln[len("event: "):] for ln in lines if ln.startswith("event: ")]
    assert ": keep-alive" in lines and lines.index(": keep-alive") < lines.index("event: delta"), lines[:8]
    assert events[0] == "sources" and events[-1] == "final" and "error" not in events, events
    final = json.loads(lines[lines.index("event: final") + 1][len("data: "):])
    assert final["refused"] is False and final["mode"] == "llm", final


def test_a_client_that_leaves_a_streamed_answer_closes_the_llm_stream(index):
    """A client that left a streamed /ask (the chat page does, on a new question) left the LLM stream open
    and unread until the cyclic garbage collector happened to run (on an idle server, never): the LLM
    server generated on for no one, past the 4 × timeout_seconds deadline, which is checked only on reads.
    The answer's generators now close the LLM stream as soon as the server closes them. The collector is
    off here, so nothing but that closes it; a fake LLM server streams a cited sentence every 0.2 s for
    as long as its reader stays and records when the connection is closed."""
    import gc

    from .fake_llm import ChatServer

    with ChatServer() as llm:
        cfg = index.parent / "endless.yaml"
        cfg.write_text(index.read_text() + f"llm:\n  provider: openai\n  model: endless\n  base_url: {llm.url}\n"
                       "  timeout_seconds: 30\n")
        body = json.dumps({"question": "What does a converter do in data binding?", "stream": True}).encode()
        gc.disable()
        try:
            with serve(create_app(config_path=str(cfg))) as url:
                port = int(url.rsplit(":", 1)[1])
                for _ in range(3):
                    with socket.create_connection(("127.0.0.1", port)) as s:
                        s.sendall(b"POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                  b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                        got = b""
                        while b"event: delta" not in got:  # the first piece of the answer, then leave
                            part = s.recv(65536)
                            assert part, got
                            got += part
                    assert llm.hung_up.acquire(timeout=60), "the LLM stream was left open after the client left"
        finally:
            gc.enable()


def test_the_page_of_the_second_source_that_indexes_a_url_can_be_opened(tmp_path):
    """Two sources that index the same page URL (two versions of a manual, both ``base_url: docs/``): a
    hit or citation of the second one opened the first one's page. MCP ``get_page`` took no ``source``
    (``unknown argument``), ``GET /view`` ignored it, and a citation did not say its source, so the chat
    page's link for it opened the other version. Now a citation carries ``source``, and ``get_page`` and
    ``/view`` take it as ``/pages`` does (an unknown one is refused the same way)."""
    import asyncio

    from docs_rag_pipeline import ask
    from docs_rag_pipeline.serve.mcp import create_server

    texts = {"v1": "Version one installs with the old setup wizard from the start menu.",
             "v2": "Version two installs with a single command: run kettlectl install in a terminal."}
    for v, text in texts.items():
        write_docs(tmp_path / v, {"install.md": f"# Install\n\n## Installing\n\n{text}\n"})
    cfg = write_config(tmp_path, sources="".join(f"- name: {v}\n  kind: local\n  path: {v}\n  base_url: docs/\n"
                                                 for v in texts))
    with DagsterInstance.ephemeral() as instance:
        for v in texts:
            materialize_source(cfg, v, instance)
    (cited,) = ask("How do I install version two with kettlectl?", source="v2", config=str(cfg),
                   remember=False).citations
    assert (cited.url, cited.source) == ("docs/install.md#installing", "v2")

    srv = create_server(str(cfg))

    def get_page(args: dict) -> tuple[bool, str]:
        res = asyncio.run(srv.call_tool("get_page", args))
        return bool(res.is_error), "".join(getattr(b, "text", "") for b in res.content)

    assert json.loads(get_page({"url": cited.url})[1])["source"] == "v1"  # the first in the config, as before
    err, text = get_page({"url": cited.url, "source": cited.source})
    assert not err and json.loads(text)["source"] == "v2" and "kettlectl" in text, text
    assert get_page({"url": cited.url, "source": "v3"}) == (
        True, "INVALID_QUERY: 'source': no source named 'v3'; configured sources: v1, v2")
    with serve(create_app(config_path=str(cfg))) as url:
        r = requests.get(f"{url}/view", params={"url": "docs/install.md", "source": "v2"}, timeout=30)
        assert r.status_code == 200 and "kettlectl" in r.text and "setup wizard" not in r.text, r.text[:300]
        r = requests.get(f"{url}/view", params={"url": "docs/install.md"}, timeout=30)
        assert r.status_code == 200 and "setup wizard" in r.text
        r = requests.get(f"{url}/view", params={"url": "docs/install.md", "source": "v3"}, timeout=30)
        assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_source", r.text
        body = requests.post(f"{url}/ask", json={"question": "How do I install version two with kettlectl?",
                                                 "source": "v2"}, timeout=60).json()
        assert [c["source"] for c in body["citations"]] == ["v2"], body
