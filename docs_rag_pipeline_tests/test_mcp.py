"""`docs-rag mcp`: spawned as `python -m docs_rag_pipeline mcp` and driven by the SDK's own client over stdio."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
import pytest
from mcp import Client, StdioServerParameters

from .conftest import REPO, publish_configmap, write_config, write_docs
from .dagster_helpers import index_guide


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mcp")
    cfg = index_guide(root)
    return cfg


def with_client(cfg: Path, fn: Callable[[Client], Awaitable[Any]]) -> Any:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "docs_rag_pipeline", "mcp"], cwd=str(REPO),
        env={"DOCS_RAG_CONFIG": str(cfg), "HF_HUB_OFFLINE": "1", "LANCEDB_LOG": "error",
             "TOKENIZERS_PARALLELISM": "false"})

    async def main() -> Any:
        with anyio.fail_after(240):
            async with Client(params) as client:
                return await fn(client)

    return anyio.run(main)


async def call(client: Client, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
    """(is_error, the structured result or the error text)."""
    r = await client.call_tool(tool, args)
    text = r.content[0].text if r.content else ""
    if r.is_error:
        return True, text
    return False, r.structured_content if r.structured_content is not None else json.loads(text)


def test_tools_over_stdio(index):
    async def session(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {"tools": {t.name: t for t in (await client.list_tools()).tools}}
        out["search"] = await call(client, "search", {"query": "ZX81_QUANTUM_FLUX", "top_k": 2})
        out["binding"] = await call(client, "search", {"query": "converter", "filters": {"source": "guide"}, "top_k": 1})
        hit = out["binding"][1]["hits"][0]
        out["chunk"] = await call(client, "get_chunk", {"chunk_id": hit["chunk_id"]})
        walk, parent = [], out["chunk"][1]["parent_id"]
        while parent and len(walk) < 10:  # an agent walks up with parent_id
            err, row = await call(client, "get_chunk", {"chunk_id": parent})
            assert not err, row
            walk.append(row)
            parent = row["parent_id"]
        out["walk"] = walk
        out["page"] = await call(client, "get_page", {"url": hit["url"]})
        out["ask"] = await call(client, "ask", {"question": "What does a converter do in data binding?"})
        out["refused"] = await call(client, "ask", {"question": "Best temperature for sourdough bread?"})
        return out

    out = with_client(index, session)
    tools = out["tools"]
    assert set(tools) == {"search", "get_page", "get_chunk", "ask", "feedback"}
    assert set(tools["search"].input_schema["properties"]) == {"query", "filters", "top_k", "source"}
    assert tools["search"].input_schema["required"] == ["query"]
    assert tools["get_page"].input_schema["required"] == ["url"]
    assert tools["get_chunk"].input_schema["required"] == ["chunk_id"]
    assert tools["ask"].input_schema["required"] == ["question"]
    assert all(t.description for t in tools.values())

    err, res = out["search"]
    assert not err and res["hits"][0]["url"].endswith("install.md#troubleshooting") and len(res["hits"]) == 2
    assert set(res["hits"][0]) == {"chunk_id", "url", "title", "headings", "text", "score", "source", "parent_id"}
    hit = out["binding"][1]["hits"][0]
    err, chunk = out["chunk"]
    assert not err and chunk["chunk_id"] == hit["chunk_id"] and chunk["text"] == hit["text"]
    assert chunk["parent_id"] == hit["parent_id"] and chunk["parent_id"]
    assert out["walk"] and out["walk"][-1]["parent_id"] is None
    assert out["walk"][0]["chunk_id"] == chunk["parent_id"]
    err, page = out["page"]
    assert not err and page["url"] == hit["url"].split("#")[0]
    assert hit["chunk_id"] in [c["chunk_id"] for c in page["chunks"]]
    assert [c["chunk_index"] for c in page["chunks"]] == sorted(c["chunk_index"] for c in page["chunks"])
    err, ans = out["ask"]
    assert not err and ans["refused"] is False and ans["trace_id"] and "[1]" in ans["answer"]
    assert ans["citations"][0]["url"].startswith("https://docs.example.org/forms/binding.md")
    err, off = out["refused"]
    assert not err and off["refused"] is True and off["citations"] == []


def test_a_configmap_update_is_read_without_a_restart(index, tmp_path):
    """`docs-rag mcp` kept the path its config's link led to at start: after a ConfigMap update (a new
    folder, ..data switched, the old folder deleted) every call failed, BACKEND_UNAVAILABLE, until the
    host restarted it."""
    text = index.read_text().replace("path: docs", f"path: {index.parent / 'docs'}")
    mount = tmp_path / "config"
    publish_configmap(mount, "2026_11_28_09_00_00.1", text)

    async def session(client: Client) -> tuple[Any, Any]:
        before = await call(client, "search", {"query": "install widgets"})
        publish_configmap(mount, "2026_11_28_09_05_00.2", text.replace("name: guide", "name: manual"))
        return before, await call(client, "search", {"query": "install widgets"})

    (failed, before), (failed_after, after) = with_client(mount / "docs_rag.yaml", session)
    assert not failed and {h["source"] for h in before["hits"]} == {"guide"}, before
    assert not failed_after and after["hits"] == [], after  # `guide` is no longer a configured source


def test_a_config_edit_saved_during_an_ask_is_not_half_applied_to_it(index, tmp_path, monkeypatch):
    """The ask tool read the config twice: once to check the call, once more to answer. A save between the
    two (the source renamed) failed a call whose source had just been accepted. A call now reads it once."""
    import asyncio

    import docs_rag_pipeline.serve.mcp as mcp_module
    from docs_rag_pipeline.context import get_context

    cfg = tmp_path / "docs_rag.yaml"
    whole = index.read_text().replace("path: docs", f"path: {index.parent / 'docs'}")
    cfg.write_text(whole)

    def read_then_save(*a, **k):  # the edit lands right after the call's first read
        ctx = get_context(*a, **k)
        cfg.write_text(whole.replace("name: guide", "name: manual"))
        return ctx

    monkeypatch.setattr(mcp_module, "get_context", read_then_save)
    result = asyncio.run(mcp_module.create_server(cfg).call_tool("ask", {"question": "install widgets",
                                                                          "source": "guide"}))
    assert not result.is_error, result
    assert json.loads(result.content[0].text)["citations"], result


def test_errors_are_tool_errors_with_a_code(index):
    cases = [
        ("search", {"query": ""}, "INVALID_QUERY: 'query' must be a non-empty string"),
        ("search", {"query": 5}, "INVALID_QUERY: 'query' must be a non-empty string"),
        ("search", {"query": "forms", "top_k": 0}, "INVALID_QUERY: 'top_k' must be an integer ≥ 1"),
        ("search", {"query": "forms", "top_k": "two"}, "INVALID_QUERY: 'top_k' must be an integer ≥ 1"),
        ("search", {"query": "forms", "filters": {"a=b": 1}}, "INVALID_QUERY: filters: invalid key 'a=b'"),
        ("search", {"query": "forms", "filters": "section=x"}, "INVALID_QUERY: 'filters' must be an object"),
        ("ask", {"question": "x" * 5000}, "INVALID_QUERY: 'question' is longer than 2000 characters"),
        ("get_chunk", {"chunk_id": "no-such-chunk"}, "NOT_FOUND: no chunk with id 'no-such-chunk'"),
        ("get_chunk", {"chunk_id": "x' OR '1'='1"}, "NOT_FOUND: no chunk with id"),
        ("get_page", {"url": "https://docs.example.org/nope.md"}, "NOT_FOUND: no indexed page with URL"),
        ("get_page", {"url": "  "}, "INVALID_QUERY: 'url' must be a non-empty string"),
        # checked before the SDK binds arguments, as HTTP checks a body: no untagged SDK text, nothing dropped
        ("search", {}, "INVALID_QUERY: 'query' is required: search needs query"),
        ("search", {"query": "forms", "colour": "red"}, "INVALID_QUERY: unknown argument 'colour'; search takes:"),
        ("ask", {"question": "forms", "stream": True}, "INVALID_QUERY: unknown argument 'stream'; ask takes:"),
        ("feedback", {"rating": "up"}, "INVALID_QUERY: 'trace_id' is required"),
        ("nope", {"query": "forms"}, "NOT_FOUND: no tool named 'nope'; tools: ask, feedback, get_chunk"),
    ]

    async def session(client: Client) -> list[tuple[bool, Any]]:
        results = [await call(client, tool, args) for tool, args, _ in cases]
        results.append(await call(client, "search", {"query": "forms", "top_k": 1}))  # still serving
        raw = await client.call_tool("get_chunk", {"chunk_id": "nope"})
        results.append((raw.is_error, raw.structured_content))
        return results

    results = with_client(index, session)
    for (tool, args, expected), (err, text) in zip(cases, results):
        assert err, (tool, args, text)
        assert text.startswith(expected), (tool, args, text)
    err, res = results[-2]
    assert not err and len(res["hits"]) == 1
    assert results[-1] == (True, {"error": {"code": "NOT_FOUND", "message": "no chunk with id 'nope'"}})


def test_backend_unavailable(tmp_path):
    write_docs(tmp_path / "docs", {"a.md": "# A\n\nSome text.\n"})
    cfg = write_config(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "lancedb").write_text("not a folder")  # LanceDB cannot open its storage

    async def session(client: Client) -> list[tuple[bool, Any]]:
        return [await call(client, "search", {"query": "text"}),
                await call(client, "ask", {"question": "What text is there?"}),
                await call(client, "get_chunk", {"chunk_id": "abc"}),
                await call(client, "get_page", {"url": "https://x.org/a.md"})]

    for err, text in with_client(cfg, session):
        assert err and text.startswith("BACKEND_UNAVAILABLE: the search backend is unavailable"), text
        assert str(tmp_path) not in text and ".rs" not in text and "(trace " in text, text


def test_feedback_that_cannot_be_stored_is_backend_unavailable(tmp_path):
    """The question log cannot be opened or written (here the storage folder is missing: moved away, an
    unmounted volume; a read-only or full disk is the same): POST /feedback answers 503
    feedback_unavailable, but the MCP tool said ``INVALID_QUERY``, the code for a bad argument, so an
    agent would not retry and could blame the user's input. Now ``BACKEND_UNAVAILABLE``, as mcp.md's
    table puts the server's storage failures."""
    write_docs(tmp_path / "docs", {"a.md": "# A\n\nSome text.\n"})
    cfg = write_config(tmp_path)  # its storage folder, tmp_path / "data", does not exist

    async def session(client: Client) -> tuple[bool, Any]:
        return await call(client, "feedback", {"trace_id": "0" * 32, "rating": "down", "comment": "wrong"})

    err, text = with_client(cfg, session)
    assert err and text.startswith("BACKEND_UNAVAILABLE: feedback cannot be stored on this server"), text
    assert str(tmp_path) not in text, text
    assert not (tmp_path / "data").exists()


def test_mcp_command_reports_a_missing_config(tmp_path):
    env = {**os.environ, "DOCS_RAG_CONFIG": str(tmp_path / "nope.yaml")}
    p = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "mcp"], env=env, cwd=REPO, capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and "not found" in p.stderr and p.stdout == ""


def test_a_number_of_more_than_4000_digits_is_refused_as_documented(tmp_path):
    """mcp.md: a number longer than 4,000 digits gets -32600 "a number in the request is too long to
    read". The SDK's parser read up to 4,300 digits (Python's limit) as a number, so a top_k of 4,001 to
    4,300 digits reached the tool; digits in a string are text, and 4,000 digits still read as a number."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    cfg = tmp_path / "docs_rag.yaml"
    cfg.write_text("")
    call = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search","arguments":{"query":%s,"top_k":%s}}}'
    lines = [json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                 "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
             json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             call % (1, '"x"', "1" * 4001), call % (2, '"x"', "1" * 4300), call % (3, '"x"', "-1.5e" + "1" * 4001),
             call % (4, '"x"', "1" * 4000), call % (5, json.dumps("7" * 5000), "99"),
             '{"jsonrpc":"2.0","id":%s,"method":"ping"}' % ("1" * 4001)]
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "HF_HUB_OFFLINE": "1", "LANCEDB_LOG": "error"}
    out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "mcp"], cwd=REPO, env=env, capture_output=True,
                         input="\n".join(lines) + "\n", text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    replies = {m["id"]: m for m in map(json.loads, out.stdout.splitlines())}
    for rid in (1, 2, 3, None):  # None: an id too long to read is answered with id null (JSON-RPC)
        assert replies[rid]["error"] == {"code": -32600, "message": "a number in the request is too long to read; "
                                                                   "send at most 4000 digits"}, replies[rid]
    # 4,000 digits read as a number, and digits in a string are text: the tool's own checks answer
    assert replies[4]["result"]["content"][0]["text"].startswith("INVALID_QUERY: 'top_k' must be an integer from 1 to")
    assert replies[5]["result"]["content"][0]["text"] == "INVALID_QUERY: 'query' is longer than 2000 characters"


def test_lone_surrogates_are_tool_errors(index):
    """The SDK's client cannot even send a lone surrogate, so this speaks JSON-RPC over the server's
    stdio itself, as any client may: ``"\\ud800"`` is valid JSON."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    cases = [
        ("search", {"query": "refresh \ud800"}, "INVALID_QUERY: 'query' is not valid Unicode text"),
        ("ask", {"question": "refresh \udfff"}, "INVALID_QUERY: 'question' is not valid Unicode text"),
        ("search", {"query": "forms", "source": "gu\ud800ide"}, "INVALID_QUERY: 'source' is not valid Unicode text"),
        ("ask", {"question": "forms", "filters": {"section": "\ud800"}},
         "INVALID_QUERY: 'filters.section' is not valid Unicode text"),
        ("get_chunk", {"chunk_id": "abc\ud800"}, "INVALID_QUERY: 'chunk_id' is not valid Unicode text"),
        ("search", {"query": "forms \ud83d\ude42", "top_k": 1}, None),  # a valid pair is fine
    ]
    env = {**os.environ, "DOCS_RAG_CONFIG": str(index), "HF_HUB_OFFLINE": "1", "LANCEDB_LOG": "error"}
    p = subprocess.Popen([sys.executable, "-m", "docs_rag_pipeline", "mcp"], cwd=REPO, env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def rpc(msg: dict[str, Any]) -> dict[str, Any] | None:
        line = json.dumps(msg, ensure_ascii=True)  # a lone surrogate becomes the escape \ud800
        p.stdin.write(line.encode() + b"\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline()) if "id" in msg else None

    try:
        init = rpc({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        assert "result" in init, init
        rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for i, (tool, args, expected) in enumerate(cases, 1):
            reply = rpc({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": args}})
            assert reply["id"] == i, reply
            result = reply["result"]
            if expected is None:
                assert not result.get("isError") and len(result["structuredContent"]["hits"]) == 1, result
            else:
                assert result["isError"] and result["content"][0]["text"].startswith(expected), result
        # bytes that are not UTF-8 at all are refused the same way (not read as U+FFFD and searched)
        p.stdin.write(b'{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"search",'
                      b'"arguments":{"query":"forms \xff\xfe"}}}\n')
        p.stdin.flush()
        result = json.loads(p.stdout.readline())["result"]
        assert result["isError"] and result["content"][0]["text"].startswith(
            "INVALID_QUERY: 'query' is not valid Unicode text"), result
    finally:
        p.stdin.close()
        p.wait(timeout=120)


def test_a_deeply_nested_line_does_not_end_the_server(index):
    """A line nested hundreds or thousands deep that also holds a \\u escape (which the server reads
    to mend lone surrogates) must not crash it: the line is passed on for the SDK to refuse, and the
    next request is answered."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    env = {**os.environ, "DOCS_RAG_CONFIG": str(index), "HF_HUB_OFFLINE": "1", "LANCEDB_LOG": "error"}
    p = subprocess.Popen([sys.executable, "-m", "docs_rag_pipeline", "mcp"], cwd=REPO, env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(line: str) -> None:
        p.stdin.write(line.encode() + b"\n")
        p.stdin.flush()

    def reply_to(rid: int) -> dict[str, Any]:
        while True:  # replies to the nested lines, if any, are skipped
            raw = p.stdout.readline()
            assert raw, f"the server exited (status {p.poll()}) before answering request {rid}"
            msg = json.loads(raw)
            if msg.get("id") == rid:
                return msg

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}))
        assert "result" in reply_to(0)
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        for i, depth in enumerate((500, 3000, 100_000), 1):
            nested = "[" * depth + "]" * depth
            send('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_chunk",'
                 '"arguments":{"chunk_id":"\\u0041\\ud800","x":%s}}}' % (100 + i, nested))
            send(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/list"}))
            assert {t["name"] for t in reply_to(i)["result"]["tools"]} >= {"search", "ask", "get_chunk"}
    finally:
        p.stdin.close()
        p.wait(timeout=120)


def test_bad_scope_and_top_k_are_tool_errors(index):
    cases = [
        ("search", {"query": "forms", "source": "nope"},
         "INVALID_QUERY: 'source': no source named 'nope'; configured sources: guide"),
        ("ask", {"question": "forms", "source": "nope"}, "INVALID_QUERY: 'source': no source named 'nope'"),
        ("search", {"query": "forms", "filters": {"colour": "red"}},
         "INVALID_QUERY: filters: unknown metadata key 'colour'; keys that exist: "),
        ("ask", {"question": "forms", "top_k": -3}, "INVALID_QUERY: 'top_k' must be an integer ≥ 1"),
        ("search", {"query": "forms", "top_k": 9}, "INVALID_QUERY: 'top_k' must be an integer from 1 to 8"),
        ("ask", {"question": ""}, "INVALID_QUERY: 'question' must be a non-empty string"),
    ]

    async def session(client: Client) -> list[tuple[bool, Any]]:
        results = [await call(client, tool, args) for tool, args, _ in cases]
        results.append(await call(client, "search", {"query": "forms", "top_k": 1}))  # still serving
        return results

    results = with_client(index, session)
    for (tool, args, expected), (err, text) in zip(cases, results):
        assert err and text.startswith(expected), (tool, args, text)
    assert "audience" in results[2][1]
    err, res = results[-1]
    assert not err and len(res["hits"]) == 1


def test_every_request_read_is_answered_even_when_input_closes_at_once(index):
    """A client that writes its requests and closes its end (a pipe, `printf … | docs-rag mcp`) gets an
    answer to each: the SDK used to cancel the calls still running when input ended, and to drop
    without a reply a request it could not parse (positional params, a number too long to read)."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    lines = [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                 "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "pipe", "version": "1"}}}),
             json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
             json.dumps({"jsonrpc": "2.0", "id": "s", "method": "tools/call",
                         "params": {"name": "search", "arguments": {"query": "data binding converters", "top_k": 2}}}),
             json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": [1, 2]}),
             '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"search","arguments":{"query":"x","top_k":%s}}}'
             % ("9" * 4400),
             json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                         "params": {"name": "ask", "arguments": {"question": "How do I fix the ZX81_QUANTUM_FLUX import error?"}}}),
             json.dumps({"jsonrpc": "2.0", "id": 6, "method": "ping"})]
    env = {**os.environ, "DOCS_RAG_CONFIG": str(index), "HF_HUB_OFFLINE": "1", "LANCEDB_LOG": "error"}
    out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "mcp"], cwd=REPO, env=env, capture_output=True,
                         input="\n".join(lines) + "\n", text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    replies = {m["id"]: m for m in map(json.loads, out.stdout.splitlines())}
    assert set(replies) == {1, 2, "s", 3, 4, 5, 6}, out.stdout
    assert json.loads(replies["s"]["result"]["content"][0]["text"])["hits"]
    answer = json.loads(replies[5]["result"]["content"][0]["text"])
    assert answer["refused"] is False and answer["citations"][0]["url"].endswith("#troubleshooting")
    assert replies[3]["error"]["code"] == -32600 and "params: must be an object" in replies[3]["error"]["message"]
    assert replies[4]["error"]["code"] == -32600 and "too long" in replies[4]["error"]["message"]
    assert replies[6]["result"] == {}


def _held_embedding(cfg):  # noqa: ANN001, ANN202
    """(gate, arrived, reply) for the openai_index's embedding server: with ``srv.reply = reply`` a query's
    embedding says it ``arrived`` and waits for the ``gate`` (the config's timeout raised to 120 s)."""
    import threading

    cfg.write_text(cfg.read_text().replace("timeout_seconds: 5", "timeout_seconds: 120"))
    gate, arrived = threading.Event(), threading.Event()

    def hold(texts, headers):  # noqa: ANN001, ANN202
        arrived.set()
        gate.wait(120)

    return gate, arrived, hold


def _initialized_server(env: dict[str, str], args: tuple[str, ...] = ("-m", "docs_rag_pipeline", "mcp"),
                        stderr: Any = subprocess.PIPE) -> subprocess.Popen:
    """``docs-rag mcp`` (or another command that serves MCP over stdio) in a process of its own, past
    the initialize handshake."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    p = subprocess.Popen([sys.executable, *args], cwd=REPO, env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=stderr)
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "gone", "version": "1"}}})
        + "\n").encode())
    p.stdin.flush()
    assert "result" in json.loads(p.stdout.readline())
    return p


def test_a_client_that_goes_away_ends_the_server_quietly(index):
    """A client that closed its end (its stdout reader, then stdin) while calls were queued: the server
    exited 1 with the SDK's 60-line ExceptionGroup / BrokenPipeError traceback, which an MCP host shows
    as a crash. It now exits 0 with no traceback: nobody is left to answer and nothing failed."""
    env = {**os.environ, "DOCS_RAG_CONFIG": str(index), "HF_HUB_OFFLINE": "1", "LANCEDB_LOG": "error"}
    p = _initialized_server(env)
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n").encode())
    for i in range(1, 4):
        p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "name": "ask", "arguments": {"question": "How do I fix the ZX81_QUANTUM_FLUX import error?"}}}) + "\n").encode())
    p.stdin.flush()
    p.stdout.close()  # the client is gone
    p.stdin.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 0, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_calls_of_a_client_that_went_away_are_not_run(index):
    """The server ran every call a client had queued before it went away (20 asks: a minute of work
    for no one). A call whose client has closed its end of the server's stdout is not run: none of
    these asks reaches the question log."""
    from docs_rag_pipeline import feedback
    from docs_rag_pipeline.config import load_config

    env = {**os.environ, "DOCS_RAG_CONFIG": str(index), "HF_HUB_OFFLINE": "1", "LANCEDB_LOG": "error"}
    config = load_config(index)
    before = {r["question"] for r in feedback.questions(config)}
    p = _initialized_server(env)
    p.stdout.close()  # the client stops reading, then sends what it had queued
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n").encode())
    asked = [f"How do I fix the import error number {i}?" for i in range(12)]
    for i, q in enumerate(asked):
        p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {
            "name": "ask", "arguments": {"question": q}}}) + "\n").encode())
    try:
        p.stdin.close()
    except BrokenPipeError:  # the server may already have gone
        pass
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 0, err
    assert "Traceback" not in err, err
    logged = {r["question"] for r in feedback.questions(config)} - before
    assert not logged & set(asked), sorted(logged)


#: a process that serves MCP over stdio twice, as a host that restarts the server in-process would:
#: first on its own stdin/stdout, then, once that client is gone, on two named pipes (argv 1: the
#: requests, argv 2: the replies) put in place of fds 0 and 1
_TWO_SESSIONS = """
import os, sys
from docs_rag_pipeline.serve.mcp import run_stdio
run_stdio()
fin = os.open(sys.argv[1], os.O_RDONLY)
fout = os.open(sys.argv[2], os.O_WRONLY)
os.dup2(fin, 0)
os.dup2(fout, 1)
sys.stdin, sys.stdout = open(0, closefd=False), open(1, "w", closefd=False)
run_stdio()
"""


def test_a_second_client_after_one_went_away_gets_answers(index, tmp_path):
    """run_stdio notes a client that went away (``_CLIENT_GONE``) so that the calls it left behind
    are not run. A server run again in the same process serves a new client: its calls are run and
    answered, not refused as CLIENT_GONE because an earlier client had gone."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    env = {**os.environ, "DOCS_RAG_CONFIG": str(index), "HF_HUB_OFFLINE": "1", "LANCEDB_LOG": "error"}
    requests, replies = tmp_path / "requests", tmp_path / "replies"
    os.mkfifo(requests)
    os.mkfifo(replies)
    with open(tmp_path / "stderr", "wb") as err_file:
        p = _initialized_server(env, ("-c", _TWO_SESSIONS, str(requests), str(replies)), stderr=err_file)
    # the first client goes away: it stops reading, then sends what it had queued (a call the server
    # does not run: it finds the client gone and notes it) and closes its end
    p.stdout.close()
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n").encode())
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "ask", "arguments": {"question": "How do I fix the ZX81_QUANTUM_FLUX import error?"}}}) + "\n").encode())
    try:
        p.stdin.close()
    except BrokenPipeError:  # the server may already have stopped reading
        pass
    while True:  # the second session opens the named pipes once the first has ended
        try:
            w = os.open(requests, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:  # no reader yet
            assert p.poll() is None, (tmp_path / "stderr").read_text()
            time.sleep(0.05)
    os.set_blocking(w, True)
    with open(w, "w", encoding="utf-8") as out, open(replies, encoding="utf-8") as back:
        def send(msg: dict[str, Any]) -> None:
            out.write(json.dumps(msg) + "\n")
            out.flush()

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "second", "version": "1"}}})
        assert "result" in json.loads(back.readline())
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search", "arguments": {"query": "data binding converters", "top_k": 2}}})
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "ask", "arguments": {"question": "How do I fix the ZX81_QUANTUM_FLUX import error?"}}})
        got = {m["id"]: m["result"] for m in (json.loads(back.readline()), json.loads(back.readline()))}
    assert p.wait(timeout=300) == 0, (tmp_path / "stderr").read_text()
    assert not got[2].get("isError") and not got[3].get("isError"), got
    assert json.loads(got[2]["content"][0]["text"])["hits"]
    answer = json.loads(got[3]["content"][0]["text"])
    assert answer["refused"] is False and answer["citations"][0]["url"].endswith("#troubleshooting")


def test_quick_calls_never_wait_behind_asks(index):
    """Asks took their turn inside the SDK's worker threads (anyio's default limiter, 40 of them): with
    40 asks waiting on a slow model, a search queued behind them until the model answered or timed
    out. Asks now wait in the event loop, holding no thread: while the model holds every ask it was
    sent and 48 are outstanding, a search is answered, and no ask before it."""
    from docs_rag_pipeline.serve.mcp import ASKS_AT_ONCE

    from .fake_llm import ChatServer

    with ChatServer() as srv:
        cfg = index.parent / "mcp-held.yaml"
        cfg.write_text(index.read_text() + f"llm:\n  provider: openai\n  model: held\n  base_url: {srv.url}\n"
                       "  timeout_seconds: 60\n")
        answered: list[tuple[bool, Any]] = []

        async def fn(client: Client) -> tuple[bool, Any]:
            async def one() -> None:
                answered.append(await call(client, "ask", {"question": "What does a converter do in data binding?"}))

            async with anyio.create_task_group() as tg:
                for _ in range(48):
                    tg.start_soon(one)
                while srv.held < ASKS_AT_ONCE:  # the model holds all the asks that run at once
                    await anyio.sleep(0.05)
                found = await call(client, "search", {"query": "converter"})
                assert not answered, answered[:1]  # the search did not wait for an ask
                srv.release.set()
            return found

        err, found = with_client(cfg, fn)
    assert not err and found["hits"], found
    assert len(answered) == 48 and all(not e and a["mode"] == "llm" for e, a in answered), answered[:1]
    assert srv.held <= 48


def test_reading_before_the_first_ingest_never_creates_the_storage_folder(tmp_path):
    """A search, a server or an MCP call on a config whose storage folder is not there yet (``docs-rag
    serve`` started before the first ingest, or the folder moved away before a server started) let
    LanceDB's connect create ``<storage>/lancedb`` with every folder above it: the search said "no
    results", and the operator's ``mv data.new data`` then nested the index inside. Reading now
    creates nothing and says what to do; /health stays ok with 0 chunks, as documented; once an
    ingest made the folder, the same server answers without a restart."""
    from docs_rag_pipeline import refresh
    from docs_rag_pipeline.serve.api import create_app
    from docs_rag_pipeline.config import StorageMissing, load_config
    from docs_rag_pipeline.context import Context
    from docs_rag_pipeline.query import search

    from .conftest import GUIDE
    from .test_cli import _run

    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    storage = tmp_path / "data"
    with pytest.raises(StorageMissing, match=r"storage: .*data does not exist .*`docs-rag ingest` creates it"):
        search("dashboards", config=cfg)
    assert not storage.exists()
    cli = _run(["search", "dashboards"], cfg)
    assert cli.returncode == 2 and "Traceback" not in cli.stderr, cli.stderr
    assert cli.stderr.startswith(f"error: storage: {storage} does not exist") and "`docs-rag ingest`" in cli.stderr
    assert not storage.exists()

    client = create_app(config_path=str(cfg)).test_client()
    health = client.get("/health")
    assert health.status_code == 200 and health.get_json()["sources"] == {"guide": 0}, health.get_data(as_text=True)
    assert health.get_json()["table_version"] is None and health.get_json()["table"].startswith("chunks__")
    for path, body in (("/search", {"query": "dashboards"}), ("/ask", {"question": "What does Acme build?"})):
        r = client.post(path, json=body)
        assert r.status_code == 503 and r.get_json()["error"]["code"] == "backend_unavailable", r.get_data(as_text=True)
        assert "`docs-rag ingest` creates it" in r.get_json()["error"]["message"]
        assert str(tmp_path) not in r.get_data(as_text=True)  # no path in an error body
    mcp = with_client(cfg, lambda c: call(c, "search", {"query": "dashboards"}))
    assert mcp[0] and "BACKEND_UNAVAILABLE" in mcp[1] and "`docs-rag ingest` creates it" in mcp[1], mcp
    _reads_say_the_storage_folder_is_missing(client, cfg, "c0ffee", "https://docs.example.org/index.md")
    assert not storage.exists(), sorted(p.name for p in storage.rglob("*"))

    refresh.refresh(Context(load_config(cfg)), "guide")  # the ingest makes the folder
    r = client.post("/search", json={"query": "dashboards from sensor data"})
    assert r.status_code == 200 and r.get_json()["hits"], r.get_data(as_text=True)
    assert client.get("/health").get_json()["sources"]["guide"] > 0
    hit = r.get_json()["hits"][0]
    assert client.get(f"/chunks/{hit['chunk_id']}").status_code == 200
    assert client.get("/pages", query_string={"url": hit["url"]}).status_code == 200
    # moved away under the running server: the chunk and its page are not "gone", the index is
    storage.rename(tmp_path / "data.away")
    _reads_say_the_storage_folder_is_missing(client, cfg, hit["chunk_id"], hit["url"])
    (tmp_path / "data.away").rename(storage)
    assert client.get(f"/chunks/{hit['chunk_id']}").status_code == 200


def _reads_say_the_storage_folder_is_missing(client, cfg, chunk_id: str, url: str) -> None:  # noqa: ANN001
    """ops7 F2: /chunks/<id>, /pages and /view (and MCP get_chunk, get_page) said 404 "no chunk with id …" /
    "no indexed page with URL …" without a storage folder, where /search says it is missing."""
    for path, args in ((f"/chunks/{chunk_id}", None), ("/pages", {"url": url}), ("/view", {"url": url})):
        r = client.get(path, query_string=args)
        assert r.status_code == 503 and r.get_json()["error"]["code"] == "backend_unavailable", (path, r.get_data(as_text=True))
        assert "`docs-rag ingest` creates it" in r.get_json()["error"]["message"], r.get_data(as_text=True)
    async def both(c):  # noqa: ANN001, ANN202
        return [await call(c, "get_chunk", {"chunk_id": chunk_id}), await call(c, "get_page", {"url": url})]

    for mcp in with_client(cfg, both):
        assert mcp[0] and "BACKEND_UNAVAILABLE" in mcp[1] and "`docs-rag ingest` creates it" in mcp[1], mcp


def test_a_storage_folder_with_no_index_says_so_instead_of_refusing(tmp_path):
    """A fresh checkout ships an empty ``data/`` (its README), so the storage folder is there before the
    first ingest. ``docs-rag ask`` then answered "The documentation doesn't cover this question" (and
    logged it as a doc gap), ``search`` said "no results", and the ask created ``data/lancedb``,
    ``threads.sqlite`` and ``feedback.sqlite``. Now every interface says nothing is indexed yet and
    how to fix it, and creates nothing; an index made with another embedding model is named as such."""
    import lancedb
    import pyarrow as pa

    from docs_rag_pipeline import refresh
    from docs_rag_pipeline.config import NothingIndexed, load_config
    from docs_rag_pipeline.context import Context
    from docs_rag_pipeline.query import ask, search
    from docs_rag_pipeline.serve.api import create_app

    from .conftest import GUIDE
    from .test_cli import _run

    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    storage = tmp_path / "data"
    storage.mkdir()
    (storage / "README.md").write_text("Runtime storage.\n")
    for fn in (lambda: search("dashboards", config=cfg), lambda: ask("What does Acme build?", config=cfg)):
        with pytest.raises(NothingIndexed, match=r"storage: .*data holds no index yet .*run `docs-rag ingest` first"):
            fn()
    for args in (["ask", "What does Acme build?"], ["search", "dashboards"]):
        cli = _run(args, cfg)
        assert cli.returncode == 2 and "Traceback" not in cli.stderr and not cli.stdout, (cli.stdout, cli.stderr)
        assert cli.stderr.startswith(f"error: storage: {storage} holds no index yet"), cli.stderr
    client = create_app(config_path=str(cfg)).test_client()
    for path, body in (("/search", {"query": "dashboards"}), ("/ask", {"question": "What does Acme build?"})):
        r = client.post(path, json=body)
        assert r.status_code == 503 and r.get_json()["error"]["code"] == "backend_unavailable", r.get_data(as_text=True)
        assert "nothing is indexed yet" in r.get_json()["error"]["message"], r.get_data(as_text=True)
        assert str(tmp_path) not in r.get_data(as_text=True)
    mcp = with_client(cfg, lambda c: call(c, "ask", {"question": "What does Acme build?"}))
    assert mcp[0] and "BACKEND_UNAVAILABLE" in mcp[1] and "nothing is indexed yet" in mcp[1], mcp
    for path in ("/chunks/c0ffee", "/pages?url=https://docs.example.org/index.md"):  # not "no such chunk/page"
        r = client.get(path)
        assert r.status_code == 503 and "nothing is indexed yet" in r.get_json()["error"]["message"], r.get_data(as_text=True)
    mcp = with_client(cfg, lambda c: call(c, "get_page", {"url": "https://docs.example.org/index.md"}))
    assert mcp[0] and "BACKEND_UNAVAILABLE" in mcp[1] and "nothing is indexed yet" in mcp[1], mcp
    assert sorted(p.name for p in storage.iterdir()) == ["README.md"]  # no lancedb/, no threads or question log

    # an index made with another embedding model: the model is what is missing, not the docs
    lancedb.connect(str(storage / "lancedb")).create_table("chunks__other_model", pa.table({"chunk_id": ["x"]}))
    with pytest.raises(NothingIndexed, match=r"holds no index for the configured embedding model .*chunks__other_model"):
        search("dashboards", config=cfg)

    refresh.refresh(Context(load_config(cfg)), "guide")
    assert search("dashboards from sensor data", config=cfg)
    assert not ask("What does Acme build?", config=cfg).refused
    r = client.post("/search", json={"query": "dashboards from sensor data"})
    assert r.status_code == 200 and r.get_json()["hits"], r.get_data(as_text=True)


@contextlib.contextmanager
def raw_session(index: Path, initialize: bool = True):  # noqa: ANN201 - yields send(obj) and read() -> the next reply
    """A ``docs-rag mcp`` process spoken to line by line, initialized (unless ``initialize`` is False): for
    requests no client library sends. ``send`` takes an object, or a ``str`` sent as the line it is."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    env = {**os.environ, "DOCS_RAG_CONFIG": str(index), "HF_HUB_OFFLINE": "1", "LANCEDB_LOG": "error"}
    p = subprocess.Popen([sys.executable, "-m", "docs_rag_pipeline", "mcp"], cwd=REPO, env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(obj: Any) -> None:
        p.stdin.write((obj if isinstance(obj, str) else json.dumps(obj)).encode() + b"\n")
        p.stdin.flush()

    def read() -> dict[str, Any]:
        return json.loads(p.stdout.readline())

    try:
        if initialize:
            send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
            assert "result" in read()
            send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield send, read
    finally:
        p.stdin.close()
        p.wait(timeout=120)


def test_a_request_whose_id_mcp_cannot_carry_and_a_batch_are_answered(index):
    """servewrite F2: a request whose id is a fractional number (``1.5``) read as a notification to the
    SDK, which answers none, and a JSON-RPC batch was dropped: the client waited for ever. Each now gets
    a -32600 error whose id is null (JSON-RPC's rule for an id that cannot be read), and the server
    goes on; a notification (no id, or ``"id": null``) still gets no reply."""
    call = {"name": "get_chunk", "arguments": {"chunk_id": "x"}}
    with raw_session(index) as (send, read):
        send({"jsonrpc": "2.0", "id": None, "method": "tools/call", "params": call})  # a notification: no reply
        for rid, expected in ((1.5, "id: must be a string or an integer, not 1.5"),
                              (True, "id: must be a string or an integer, not true")):
            send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": call})
            assert read() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": expected}}
        send([{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}])
        reply = read()
        assert reply["id"] is None and reply["error"]["code"] == -32600, reply
        assert reply["error"]["message"].startswith("a batch (a JSON array of requests) is not supported"), reply
        send({"jsonrpc": "2.0", "id": 8, "method": "tools/list"})
        assert read()["id"] == 8  # still serving, and nothing answered in between


def test_a_request_nested_too_deeply_to_read_is_answered(index):
    """A request nested thousands deep (a hostile or broken client) is more than the JSON parser reads:
    the SDK dropped it without a reply, and the client waited for ever for its answer. It now gets a
    -32600 error whose id is null, as JSON-RPC answers a request whose id cannot be read; the server
    goes on (the lines the parser reads are answered with their id, as before)."""
    with raw_session(index) as (send, read):
        for depth in (3000, 100_000):
            nested = "[" * depth + "]" * depth
            send('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search",'
                 '"arguments":{"query":"forms","x":%s}}}' % nested)
            assert read() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": (
                "the request is nested too deeply to read: send it with fewer levels of arrays and objects")}}
        send({"jsonrpc": "2.0", "id": 8, "method": "tools/list"})
        assert read()["id"] == 8  # still serving, and nothing answered in between


def test_a_tools_call_of_the_wrong_shape_is_told_what_is_wrong(index):
    """A ``tools/call`` whose params are missing or null, whose name is no string or whose arguments are
    no object got the SDK's bare ``-32602 Invalid request parameters``, naming nothing. It names the field
    and the shape expected now; the server goes on."""
    cases = [({}, "params: required, an object with the tool's name and its arguments"),
             ({"params": None}, "params: required, an object with the tool's name and its arguments"),
             ({"params": {"name": 5}}, "params.name: must be the tool's name as a string, not 5"),
             ({"params": {"name": "search", "arguments": "forms"}},
              'params.arguments: must be an object of the tool\'s named arguments, not "forms"')]
    with raw_session(index) as (send, read):
        for i, (extra, expected) in enumerate(cases, 1):
            send({"jsonrpc": "2.0", "id": i, "method": "tools/call", **extra})
            reply = read()
            assert reply["id"] == i and reply["error"]["code"] == -32602, reply
            assert reply["error"]["message"].startswith(expected), reply
        send({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
              "params": {"name": "search", "arguments": {"query": "forms", "top_k": 1}}})
        assert len(read()["result"]["structuredContent"]["hits"]) == 1


def test_a_call_running_when_the_client_goes_away_finishes_before_the_server_exits(openai_index):
    """mcp.md: once the client is gone, the calls already running finish before the server exits (anyio
    waits for a worker thread that is not abandoned on cancel). Here the query's embedding is held until
    the client has gone and the server has had time to exit: the ask is still logged, exit status 0."""
    from docs_rag_pipeline import feedback
    from docs_rag_pipeline.config import load_config

    cfg, srv = openai_index
    gate, arrived, hold = _held_embedding(cfg)
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "HF_HUB_OFFLINE": "1", "LANCEDB_LOG": "error"}
    p = _initialized_server(env)
    srv.reply = hold
    question = "How do forms validate input before saving?"
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
                   + json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                 "params": {"name": "ask", "arguments": {"question": question}}}) + "\n").encode())
    p.stdin.flush()
    assert arrived.wait(120), "the ask never embedded its question"
    p.stdout.close()  # the client goes away while its ask runs
    p.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        p.wait(timeout=15)  # without the wait for running calls, the server is gone by now
    gate.set()
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 0, err
    assert "Traceback" not in err and "Fatal Python error" not in err, err
    assert question in {r["question"] for r in feedback.questions(load_config(cfg))}


def test_a_cancelled_call_is_not_waited_for_once_input_closes(openai_index):
    """mcpfuzz F1: a client cancelled a running ``ask`` (``notifications/cancelled``, an IDE's stop button),
    then closed the server's input. The SDK answers a cancelled request never (MCP), but the server kept
    it among the requests to answer before exiting, and waited the whole 300 s drain for it. It exits
    once the calls really running are done now."""
    cfg, srv = openai_index
    gate, arrived, hold = _held_embedding(cfg)
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "HF_HUB_OFFLINE": "1", "LANCEDB_LOG": "error"}
    p = _initialized_server(env, stderr=subprocess.DEVNULL)
    srv.reply = hold
    try:
        p.stdin.write((json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
                       + json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                           "name": "ask", "arguments": {"question": "How do forms validate input?"}}}) + "\n").encode())
        p.stdin.flush()
        assert arrived.wait(120), "the ask never embedded its question"  # it is running now
        p.stdin.write((json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                   "params": {"requestId": 1, "reason": "the user pressed stop"}}) + "\n"
                       + json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}) + "\n").encode())
        p.stdin.flush()
        assert json.loads(p.stdout.readline()) == {"jsonrpc": "2.0", "id": 2, "result": {}}  # the cancel was read
        p.stdin.close()
        gate.set()  # the cancelled ask ends; its answer is never sent
        assert p.wait(timeout=120) == 0  # before, the server waited DRAIN_SECONDS (300 s) for the cancelled id
        assert p.stdout.read() == b""  # nothing was answered to the cancelled request
    finally:
        gate.set()
        if p.poll() is None:
            p.kill()
            p.wait()


def test_a_lone_surrogate_id_is_not_answered_with_another_id(index):
    """mcpfuzz F3: a request whose id is a string holding a lone UTF-16 surrogate (``"\\ud800"``, legal
    JSON) was answered with id ``"\\uffff"``: the line was mended as a whole, its id too, and the client
    could never match the answer. Such an id is one MCP cannot carry, answered -32600 with id null; a
    surrogate in the arguments is still mended (a tool error naming the argument)."""
    with raw_session(index) as (send, read):
        send('{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}')
        assert read() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": (
            'id: must be Unicode text or an integer, not "\\ud800" (a lone UTF-16 surrogate)')}}
        send('{"jsonrpc":"2.0","id":"q\\u00e9","method":"tools/call","params":{"name":"search",'
             '"arguments":{"query":"x\\ud800"}}}')
        reply = read()
        assert reply["id"] == "q\u00e9" and reply["result"]["isError"], reply
        assert reply["result"]["content"][0]["text"].startswith("INVALID_QUERY: 'query' is not valid Unicode text")


def test_an_empty_batch_is_answered(index):
    """mcpfuzz F5: the line ``[]`` (an empty JSON-RPC batch) got no reply; JSON-RPC answers it with one
    Invalid Request error, id null. So is an array of no requests at all (``[1, 2]``)."""
    with raw_session(index) as (send, read):
        send([])
        send([1, 2])
        send({"jsonrpc": "2.0", "id": 9, "method": "ping"})
        for _ in range(2):  # before, the first reply was the ping's
            reply = read()
            assert reply["id"] is None and reply["error"]["code"] == -32600, reply
            assert reply["error"]["message"].startswith("a batch (a JSON array of requests) is not supported"), reply
        assert read() == {"jsonrpc": "2.0", "id": 9, "result": {}}


def test_a_missing_or_wrong_jsonrpc_names_the_field(index):
    """mcpfuzz F4: ``{"id": 6, "method": "ping"}`` and ``"jsonrpc": "1.0"`` got pydantic's internal text
    (``Field required [type=missing, input_value={…the whole request…}]``), naming no field."""
    with raw_session(index) as (send, read):
        send({"id": 6, "method": "ping"})
        assert read() == {"jsonrpc": "2.0", "id": 6, "error": {"code": -32600, "message": 'jsonrpc: required, "2.0"'}}
        send({"jsonrpc": "1.0", "id": 7, "method": "ping", "params": {"q": "x" * 500}})
        assert read() == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": 'jsonrpc: must be "2.0", not "1.0"'}}
        send({"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"_meta": 5}})
        reply = read()
        assert reply["id"] == 8 and "input_value" not in json.dumps(reply) and "[type=" not in json.dumps(reply), reply


def test_requests_before_initialize_and_bad_params_are_told_what_is_wrong(index):
    """mcpfuzz F2: a request before ``initialize``, an ``initialize`` with ``params: {}`` and a
    ``logging/setLevel`` without ``level`` all got the SDK's bare ``-32602 Invalid request parameters``,
    which blamed valid params in the first case and named no field in the others."""
    from mcp.types import LATEST_PROTOCOL_VERSION

    with raw_session(index, initialize=False) as (send, read):
        send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert read() == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": (
            "the session is not initialized: send initialize (then notifications/initialized) before 'tools/list'")}}
        send({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {}})
        reply = read()
        assert reply["id"] == 2 and reply["error"]["code"] == -32602, reply
        for field in ("params.protocolVersion: required", "params.capabilities: required", "params.clientInfo: required"):
            assert field in reply["error"]["message"], reply
        send({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        assert "result" in read()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 4, "method": "logging/setLevel", "params": {}})
        assert read() == {"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "params.level: required"}}
        send({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
        assert read()["result"]["tools"]  # the session goes on
