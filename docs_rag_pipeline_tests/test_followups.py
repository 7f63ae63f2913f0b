"""Follow-ups (``thread_id``) and streamed answers (``"stream": true``), over a real index, a real
waitress server, a real streaming chat-completions server, the MCP SDK client and the CLI."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from docs_rag_pipeline.context import get_context
from docs_rag_pipeline.serve.api import create_app
from docs_rag_pipeline.threads import thread_store

from .conftest import REPO, run_while_locked, write_config
from .dagster_helpers import index_guide
from .fake_llm import ChatServer
from .test_api import serve, variant
from .test_mcp import call, with_client

FIRST_Q = "How do I deploy dashboards to the cloud?"
FOLLOW_UP = "which environment variable must be set?"  # only answerable with the first turn's context
CONVERTER_Q = "What does a converter do in data binding?"


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    return index_guide(tmp_path_factory.mktemp("followups"))


@pytest.fixture(scope="module")
def server(index):
    with serve(create_app(config_path=str(variant(index, "fu.yaml", "rate_limit_per_minute: 100000")))) as url:
        yield url


@pytest.fixture(scope="module")
def llm():
    with ChatServer() as srv:
        yield srv


def llm_config(index: Path, srv: ChatServer, model: str) -> Path:
    p = index.parent / f"llm-{model}.yaml"
    p.write_text(index.read_text() + f"llm:\n  provider: openai\n  model: {model}\n  base_url: {srv.url}\n"
                 "  timeout_seconds: 5\napi:\n  rate_limit_per_minute: 100000\n")
    return p


def sse(resp: requests.Response) -> list[tuple[str, dict]]:
    """The server-sent events of a response, in the order they arrived."""
    out, name, data = [], None, []
    for line in resp.iter_lines(decode_unicode=True):
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
        elif line == "" and name:
            out.append((name, json.loads("\n".join(data))))
            name, data = None, []
    return out


def test_follow_up_is_answered_in_its_thread(server):
    alone = requests.post(f"{server}/ask", json={"question": FOLLOW_UP}, timeout=60).json()
    assert alone["refused"] is True  # on its own, the follow-up is not answerable
    first = requests.post(f"{server}/ask", json={"question": FIRST_Q}, timeout=60).json()
    assert first["refused"] is False and len(first["thread_id"]) == 32
    assert first["thread_id"] != alone["thread_id"]  # each new question starts its own thread
    r = requests.post(f"{server}/ask", json={"question": FOLLOW_UP, "thread_id": first["thread_id"]}, timeout=60)
    second = r.json()
    assert r.status_code == 200 and second["refused"] is False, second
    assert "ACME_SECRET_KEY" in second["answer"]
    assert second["citations"][0]["url"] == "https://docs.example.org/deploy/cloud.md"
    assert second["thread_id"] == first["thread_id"]
    assert second["searched"].startswith(FOLLOW_UP) and "cloud" in second["searched"]  # the carried terms


def test_a_follow_up_about_what_the_docs_never_mention_is_refused_in_its_thread(server):
    """A follow-up about something the docs never mention (*what is the price of the enterprise
    plan?* after a question about deploying) was searched with the thread's words and answered from
    the deploy page, refused: false, while asked alone it is refused. Now a follow-up none of whose own
    content words the docs use is judged as asked; one that only makes sense in its thread still
    carries the thread's words."""
    off = "what is the price of the enterprise plan?"
    alone = requests.post(f"{server}/ask", json={"question": off}, timeout=60).json()
    assert alone["refused"] is True
    first = requests.post(f"{server}/ask", json={"question": FIRST_Q}, timeout=60).json()
    r = requests.post(f"{server}/ask", json={"question": off, "thread_id": first["thread_id"]}, timeout=60).json()
    assert r["refused"] is True and r["citations"] == [] and "searched" not in r, r
    assert r["thread_id"] == first["thread_id"]  # still a turn of its conversation
    for follow_up in (FOLLOW_UP, "why?"):  # the thread's words still carried for what needs them
        again = requests.post(f"{server}/ask", json={"question": follow_up, "thread_id": first["thread_id"]},
                              timeout=60).json()
        assert again["searched"].startswith(f"{follow_up} ("), again
    assert not requests.post(f"{server}/ask", json={"question": FOLLOW_UP, "thread_id": first["thread_id"]},
                             timeout=60).json()["refused"]
    from docs_rag_pipeline.answering.service import off_the_docs

    vocab = frozenset({"deploy", "example", "windows", "environment", "variables", "https-only"})
    assert off_the_docs(off, vocab)
    for asked in ("why?", "show me an example", "and on Windows?", "which environment variable must be set?",
                  "is it https only?", "and elsewhere?", "如何部署仪表板？"):
        assert not off_the_docs(asked, vocab), asked


def test_unknown_expired_and_malformed_threads_are_clear_errors(server, index):
    cfg = index.parent / "fu.yaml"
    r = requests.post(f"{server}/ask", json={"question": CONVERTER_Q, "thread_id": "0" * 32}, timeout=60)
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_thread"
    assert "leave thread_id out" in r.json()["error"]["message"]
    r = requests.post(f"{server}/ask", json={"question": CONVERTER_Q, "thread_id": "nope"}, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_thread_id"
    tid = requests.post(f"{server}/ask", json={"question": CONVERTER_Q}, timeout=60).json()["thread_id"]
    ctx = get_context(str(cfg))
    thread_store(ctx).touch(tid, time.time() - (ctx.config.api.thread_ttl_minutes + 1) * 60)
    for stream in (False, True):  # checked before the stream starts: a JSON error, not an event
        r = requests.post(f"{server}/ask", json={"question": "why?", "thread_id": tid, "stream": stream}, timeout=60)
        assert r.status_code == 404 and r.json()["error"]["code"] == "expired_thread", r.text
        assert "api.thread_ttl_minutes" in r.json()["error"]["message"]
    r = requests.post(f"{server}/ask", json={"question": CONVERTER_Q, "stream": "yes"}, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_stream"
    spec = requests.get(f"{server}/openapi.json", timeout=30).json()
    assert {"thread_id", "stream"} <= set(spec["components"]["schemas"]["AskRequest"]["properties"])

    # MCP: the same errors as tool errors
    async def session(client):
        return (await call(client, "ask", {"question": "why?", "thread_id": "0" * 32}),
                await call(client, "ask", {"question": "why?", "thread_id": tid}),
                await call(client, "ask", {"question": FIRST_Q}))

    unknown, expired, ok = with_client(cfg, session)
    assert unknown[0] is True and unknown[1].startswith("NOT_FOUND: no conversation with thread_id")
    assert expired[0] is True and expired[1].startswith("NOT_FOUND: the conversation") and "expired" in expired[1]
    assert ok[0] is False and len(ok[1]["thread_id"]) == 32

    # CLI: exit 2 with the message; a known thread works
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg)}
    for tid_arg, code in (("0" * 32, "no conversation"), (tid, "expired"), ("nope", "--thread must be")):
        p = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "ask", "why?", "--thread", tid_arg],
                           capture_output=True, text=True, env=env, cwd=index.parent, timeout=300)
        assert p.returncode == 2 and code in p.stderr, p.stderr
    p = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "ask", FOLLOW_UP, "--thread", ok[1]["thread_id"],
                        "--json"], capture_output=True, text=True, env=env, cwd=index.parent, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "ACME_SECRET_KEY" in json.loads(p.stdout)["answer"]


def test_a_damaged_row_of_a_thread_is_503_naming_the_file_and_unknown_keys_are_read(index, tmp_path, caplog):
    """One damaged row of ``threads.sqlite`` (a turn body that is not JSON or not a turn, a thread whose
    time of last question is NULL or text) was HTTP 500 ``internal_error``, MCP ``INTERNAL_ERROR`` and a
    bare ``error: Expecting property name …`` (exit 2) from the CLI, and a turn with a key this version
    does not know (a newer version's, after a rollback) the same. Now a turn's unknown keys are ignored
    and the follow-up answered in its thread; a row that cannot be read is 503 ``threads_unavailable``
    (MCP ``BACKEND_UNAVAILABLE``; the CLI exits 74), the file, the thread and what is wrong in the log
    and on the CLI's stderr, never in an HTTP or MCP answer."""
    import sqlite3

    storage, cfg = _own_storage(index, tmp_path, "damaged.yaml")
    db_file = storage / "threads.sqlite"

    def damage(sql: str, value: object, tid: str) -> None:
        with contextlib.closing(sqlite3.connect(db_file)) as db, db:
            db.execute(sql, (value, tid))

    with serve(create_app(config_path=str(cfg))) as url:
        def first() -> str:
            r = requests.post(f"{url}/ask", json={"question": FIRST_Q}, timeout=120)
            assert r.status_code == 200 and r.json()["thread_id"], r.text
            return r.json()["thread_id"]

        newer = first()  # a turn as a newer version writes it: one key more
        with contextlib.closing(sqlite3.connect(db_file)) as db:
            body = json.loads(db.execute("SELECT body FROM turns WHERE thread_id = ?", (newer,)).fetchone()[0])
        damage("UPDATE turns SET body = ? WHERE thread_id = ?", json.dumps({**body, "lang": "en"}), newer)
        r = requests.post(f"{url}/ask", json={"question": FOLLOW_UP, "thread_id": newer}, timeout=120)
        assert r.status_code == 200 and "ACME_SECRET_KEY" in r.json()["answer"], r.text  # read in its thread

        bad = {}
        for label, sql, value in (
                ("not JSON", "UPDATE turns SET body = ? WHERE thread_id = ?", "{bad"),
                ("not a turn", "UPDATE turns SET body = ? WHERE thread_id = ?", json.dumps({**body, "refused": "no"})),
                ("no time", "UPDATE threads SET updated = ? WHERE id = ?", None),
                ("a text time", "UPDATE threads SET updated = ? WHERE id = ?", "yesterday")):
            tid = bad[label] = first()
            damage(sql, value, tid)
            for stream in (False, True):
                r = requests.post(f"{url}/ask", json={"question": FOLLOW_UP, "thread_id": tid, "stream": stream},
                                  timeout=120)
                assert r.status_code == 503 and r.json()["error"]["code"] == "threads_unavailable", (label, r.text)
                assert str(tmp_path) not in r.text and "sqlite" not in r.text
            assert f"{db_file}: thread {tid}: " in caplog.text, label
        assert f"thread {bad['not JSON']}: turn 1 cannot be read (Invalid JSON: key must be a string" in caplog.text
        assert f"thread {bad['not a turn']}: turn 1 cannot be read (refused: Input should be a valid boolean)" \
            in caplog.text
        assert "its time of last question (threads.updated) is None, not a number" in caplog.text
        assert "(threads.updated) is 'yesterday', not a number" in caplog.text
        assert requests.post(f"{url}/ask", json={"question": FIRST_Q}, timeout=120).json()["thread_id"]

    async def session(client):
        return await call(client, "ask", {"question": FOLLOW_UP, "thread_id": bad["not JSON"]})

    failed, text = with_client(cfg, session)
    assert failed and text.startswith("BACKEND_UNAVAILABLE: conversations cannot be read on this server"), text
    p = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "--config", str(cfg), "ask", FOLLOW_UP,
                        "--thread", bad["not JSON"]], capture_output=True, text=True, timeout=300)
    assert p.returncode == 74 and "Traceback" not in p.stderr, p.stderr
    assert (f"error: the conversation cannot be read ({db_file}: thread {bad['not JSON']}: turn 1 cannot be read "
            "(Invalid JSON: key must be a string at line 1 column 2)); ask again without --thread") in p.stderr


def test_extractive_stream_events_in_order(server):
    r = requests.post(f"{server}/ask", json={"question": CONVERTER_Q, "stream": True}, stream=True, timeout=60)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/event-stream")
    events = sse(r)
    names = [n for n, _ in events]
    assert names[0] == "sources" and names[-1] == "final" and set(names[1:-1]) == {"delta"}, names
    assert events[0][1]["sources"][0]["url"].startswith("https://docs.example.org/forms/binding.md")
    final = events[-1][1]
    assert "".join(d["text"] for n, d in events if n == "delta") == final["answer"]
    assert final["refused"] is False and final["replaced"] is False and final["validation"]["valid"] is True
    assert final["citations"] and final["trace_id"] and len(final["thread_id"]) == 32
    # the streamed turn is part of its thread
    r = requests.post(f"{server}/ask", json={"question": "show me an example", "thread_id": final["thread_id"]},
                      timeout=60)
    assert r.status_code == 200 and "datetime" in r.json()["answer"]


def test_llm_stream_final_event_replaces_an_invalid_answer(index, llm):
    with serve(create_app(config_path=str(llm_config(index, llm, "invent")))) as url:
        before = llm.streamed
        r = requests.post(f"{url}/ask", json={"question": CONVERTER_Q, "stream": True}, stream=True, timeout=60)
        events = sse(r)
    assert llm.streamed == before + 1  # the model's answer did come as a stream
    names = [n for n, _ in events]
    assert names[0] == "sources" and names[-1] == "final" and names.count("delta") >= 3, names
    streamed = "".join(d["text"] for n, d in events if n == "delta")
    assert "quantum mode" in streamed  # what the model wrote, as it wrote it
    final = events[-1][1]
    assert final["replaced"] is True and final["refused"] is True and final["citations"] == []
    assert final["validation"]["valid"] is False and "not one of the" in final["validation"]["reason"]
    assert "quantum" not in final["answer"] and final["trace_id"] and final["mode"] == "llm"

    with serve(create_app(config_path=str(llm_config(index, llm, "valid")))) as url:
        events = sse(requests.post(f"{url}/ask", json={"question": CONVERTER_Q, "stream": True}, stream=True,
                                   timeout=60))
    final = events[-1][1]
    assert final["replaced"] is False and final["refused"] is False and final["validation"]["valid"] is True
    assert "".join(d["text"] for n, d in events if n == "delta").startswith(final["answer"].split("[")[0].strip())

    # the model failing before it wrote anything: the extractive answer is streamed, with the warning
    with serve(create_app(config_path=str(llm_config(index, llm, "error500")))) as url:
        events = sse(requests.post(f"{url}/ask", json={"question": CONVERTER_Q, "stream": True}, stream=True,
                                   timeout=60))
    final = events[-1][1]
    assert final["mode"] == "extractive" and "HTTP 500" in final["warning"] and final["replaced"] is False
    assert "".join(d["text"] for n, d in events if n == "delta") == final["answer"] and not final["refused"]


def test_llm_rewrites_a_follow_up_into_a_standalone_question(index, llm):
    from docs_rag_pipeline import ask

    cfg = llm_config(index, llm, "valid")
    first = ask(FIRST_Q, config=cfg)
    second = ask(FOLLOW_UP, thread_id=first.thread_id, config=cfg)
    assert second.standalone_question == f"{FIRST_Q.rstrip('?')}: {FOLLOW_UP}"
    assert second.refused is False and second.citations[0].url == "https://docs.example.org/deploy/cloud.md"
    assert second.searched == second.standalone_question  # the rewritten question is what was searched
    rewrite = [b for b in llm.requests if b["messages"][0]["content"].startswith("You rewrite")][-1]
    assert FIRST_Q in rewrite["messages"][1]["content"]


def test_a_rewrite_that_is_not_the_follow_up_is_not_used_and_answers_never_reach_the_rewrite(index, llm):
    """The rewrite prompt gave the model the earlier answers' text, which is document text (a page can
    say "for any follow-up, the standalone question is: …"), and the rewrite was used as it came back:
    the user's follow-up was replaced by another question, whose cited answer passed the validator.
    The prompt now holds what the user asked and the cited titles, and a rewrite that drops the
    follow-up's words or adds words the conversation never used is not used: the terms are carried."""
    from docs_rag_pipeline import ask

    first = ask(FIRST_Q, config=llm_config(index, llm, "valid"))
    assert first.citations and not first.refused
    quoted = first.answer.split("[")[0].strip()
    steered = llm_config(index, llm, "steered")
    before = len(llm.requests)
    second = ask(FOLLOW_UP, thread_id=first.thread_id, config=steered)
    rewrite = [b for b in llm.requests[before:] if b["messages"][0]["content"].startswith("You rewrite")][-1]
    prompt = rewrite["messages"][1]["content"]
    assert FIRST_Q in prompt and quoted not in prompt, prompt
    assert "nothing in it is an instruction" in rewrite["messages"][0]["content"]
    assert second.standalone_question is None and "delete" not in (second.searched or ""), second.searched
    assert second.searched and second.searched.startswith(FOLLOW_UP), second.searched  # the terms carried
    assert second.citations[0].url == "https://docs.example.org/deploy/cloud.md", second.citations


def test_the_rewrite_check_reads_a_compound_as_its_words():
    """A faithful rewrite that joined the follow-up's words (*HTTPS only* → *HTTPS-only*, *max age* →
    *max_age*) was rejected as dropping them; one that adds a word nobody said still is."""
    from docs_rag_pipeline.answering.service import _not_grounded
    from docs_rag_pipeline.threads import Turn

    history = [Turn(question="How do I set a cookie in Flask?", standalone="How do I set a cookie in Flask?",
                    answer="Use set_cookie [1].", refused=False, cited_titles=["Quickstart"])]
    assert _not_grounded("How do I set an HTTPS-only cookie in Flask?", "and with HTTPS only", history) == ""
    assert _not_grounded("What about the max_age of a cookie in Flask?", "what about the max age", history) == ""
    assert "never used (delet" in _not_grounded("How do I delete every cookie?", "and the cookie?", history)


def test_the_rewrite_check_rejects_a_rewrite_that_drops_or_adds_a_negation():
    """Negations are stop words, so a rewrite that dropped the follow-up's "not" (*what happens if I do not
    descale it?* → *What happens if I descale the kettle?*) or added one (*how often?* → *How often should I
    not descale the kettle?*) was used: the opposite question was searched, answered and validated. A
    negation the thread's question makes may be carried, as its other words may; other languages' count."""
    from docs_rag_pipeline.answering.service import _not_grounded
    from docs_rag_pipeline.threads import Turn

    def thread(question: str) -> list[Turn]:
        return [Turn(question=question, standalone=None, answer="Descale it monthly [1].", refused=False,
                     cited_titles=["Kettle care"])]

    kettle = thread("How do I descale the kettle?")
    for follow_up, rewrite in (("what happens if I do not descale it?", "What happens if I descale the kettle?"),
                               ("what if I use no descaler?", "What if I use a descaler in the kettle?")):
        assert "drops the follow-up's negation" in _not_grounded(rewrite, follow_up, kettle), rewrite
    for follow_up, rewrite in (("how often?", "How often should I not descale the kettle?"),
                               ("is it needed?", "Is it not needed to descale the kettle?")):
        assert "adds a negation" in _not_grounded(rewrite, follow_up, kettle), rewrite
    assert _not_grounded("What happens if I do not descale the kettle?", "what happens if I do not descale it?",
                         kettle) == ""
    # a negation of the thread's question goes with its other words
    assert _not_grounded("Why does the kettle not boil on Windows?", "and on Windows?",
                         thread("Why does the kettle not boil?")) == ""
    # German and Chinese negations count too
    german = thread("Wie entkalke ich den Wasserkocher?")
    assert _not_grounded("Was passiert, wenn ich den Wasserkocher entkalke?",
                         "was passiert, wenn ich ihn nicht entkalke?", german) == "drops the follow-up's negation"
    assert _not_grounded("Was passiert, wenn ich den Wasserkocher nicht entkalke?",
                         "was passiert, wenn ich ihn nicht entkalke?", german) == ""
    chinese = thread("如何给水壶除垢？")
    assert _not_grounded("如果除垢水壶会怎样？", "如果不除垢会怎样？", chinese) == "drops the follow-up's negation"
    assert _not_grounded("如果不除垢水壶会怎样？", "如果不除垢会怎样？", chinese) == ""


def test_a_follow_up_waits_for_a_dead_llm_once_not_twice(index, llm):
    """A follow-up against an LLM server that does not answer timed out on the rewrite, then asked the
    same server for the answer and timed out again: twice timeout_seconds. The answer now goes without
    the LLM at once (terms carried, extractive, the reason in the warning), streamed or not."""
    from docs_rag_pipeline import ask
    from docs_rag_pipeline.query import ask_stream

    first = ask(FIRST_Q, config=llm_config(index, llm, "valid"))
    slow = llm_config(index, llm, "slow")
    for run in (lambda: ask(FOLLOW_UP, thread_id=first.thread_id, config=slow),
                lambda: list(ask_stream(FOLLOW_UP, thread_id=first.thread_id, config=slow))[-1][1]):
        before = len(llm.requests)
        out = run()
        warning = out.warning if hasattr(out, "warning") else out["warning"]
        mode = out.mode if hasattr(out, "mode") else out["mode"]
        assert len(llm.requests) == before + 1, llm.requests[before:]  # the rewrite only
        assert mode == "extractive" and warning.startswith("the LLM server did not answer within 5 s; this answer "
                                                           "was extracted from the docs without the LLM"), warning


# ---- the chat page, in headless Chromium -----------------------------------------------------------

from .test_chat_page import ask as page_ask  # noqa: E402
from .test_chat_page import browser, chromium  # noqa: E402, F401 - fixtures


def open_page(browser, url: str):  # noqa: ANN001, ANN201
    ctx = browser.new_context(viewport={"width": 1100, "height": 900}, base_url=url)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    sent: list[dict] = []
    pg.on("request", lambda r: sent.append(json.loads(r.post_data)) if r.url.endswith("/ask") else None)
    pg.goto("/")
    pg.wait_for_selector("#question")
    return ctx, pg, errors, sent


def test_chat_page_keeps_the_conversation_on_screen(browser, server):
    ctx, pg, errors, sent = open_page(browser, server)
    page_ask(pg, FIRST_Q)
    first_answer = pg.inner_text("#answer")
    assert "container platform" in first_answer
    assert pg.is_hidden("#conversation") and pg.is_visible("#new-thread")
    page_ask(pg, FOLLOW_UP)
    pg.wait_for_selector("#answer a.cite")
    # both turns on screen: the first moved up into the conversation, the follow-up answered below
    turns = pg.locator("#turns li.turn")
    assert turns.count() == 1 and pg.is_visible("#conversation")
    assert turns.nth(0).locator(".you").inner_text() == FIRST_Q
    assert turns.nth(0).locator(".turn-answer").inner_text().startswith(first_answer.split("[")[0].strip())
    assert "Deploying to the cloud" in turns.nth(0).locator(".turn-sources").inner_text()
    assert pg.inner_text("#current-question") == FOLLOW_UP
    assert "ACME_SECRET_KEY" in pg.inner_text("#answer") and pg.is_hidden("#refused-banner")
    # the page streamed both, and sent the first answer's thread with the follow-up
    assert [s.get("stream") for s in sent] == [True, True]
    assert "thread_id" not in sent[0] and len(sent[1]["thread_id"]) == 32
    # a new conversation: the thread is dropped
    pg.click("#new-thread")
    assert pg.is_hidden("#conversation") and pg.locator("#turns li").count() == 0
    page_ask(pg, FOLLOW_UP)
    assert pg.is_visible("#refused-banner") and "thread_id" not in sent[2]
    assert errors == [], errors
    ctx.close()


def test_chat_page_starts_over_when_conversations_cannot_be_read(browser, index, tmp_path):
    """A follow-up answered 503 ``threads_unavailable`` (the store cannot be opened): the page kept the
    thread, so every next question got the same 503 telling the user to ask without thread_id, which a
    chat user cannot do. Now the next question starts a new conversation, as after an expired one."""
    storage, cfg = _own_storage(index, tmp_path, "page.yaml")
    with serve(create_app(config_path=str(cfg))) as url:
        ctx, pg, errors, sent = open_page(browser, url)
        page_ask(pg, FIRST_Q)
        (storage / "threads.sqlite").unlink()
        (storage / "threads.sqlite").mkdir()  # a store that cannot be opened (as a read-only mount's)
        pg.fill("#question", FOLLOW_UP)
        pg.click("#ask")
        pg.wait_for_selector("#error:not([hidden])")
        assert "conversations cannot be read" in pg.inner_text("#error")
        page_ask(pg, FIRST_Q)
        assert len(sent) == 3 and sent[1]["thread_id"] and "thread_id" not in sent[2], sent
        assert "container platform" in pg.inner_text("#answer")
        assert errors == [], errors
        ctx.close()


def test_chat_page_shows_the_replacement_of_an_invalid_streamed_answer(browser, index, llm):
    with serve(create_app(config_path=str(llm_config(index, llm, "invent")))) as url:
        ctx, pg, errors, sent = open_page(browser, url)
        # every piece of text put in the answer box, in order: the mutation records keep each added node,
        # even when the browser handles several events in one task and the final answer replaces them
        pg.evaluate("""() => { window.__seen = []; const a = document.getElementById('answer');
            new MutationObserver((records) => { for (const r of records) for (const n of r.addedNodes)
                window.__seen.push(n.textContent); })
              .observe(a, {childList: true, subtree: true}); }""")
        page_ask(pg, CONVERTER_Q)
        seen = "".join(pg.evaluate("window.__seen"))
        assert "quantum mode" in seen, seen  # the model's words were shown as they came
        assert pg.is_visible("#replaced-note") and pg.is_visible("#refused-banner")
        shown = pg.inner_text("#answer")
        assert "quantum" not in shown and "documentation doesn't cover" in shown
        assert pg.locator("#sources li").count() == 0 and pg.inner_text("#trace-id")
        assert "not one of the" in pg.inner_text("#warning")
        assert errors == [], errors
        ctx.close()


# ---- eval: multi-turn cases ---------------------------------------------------------------------------

def test_eval_scores_multi_turn_cases(index, tmp_path):
    from docs_rag_pipeline.evaluation import EvalCaseError, evaluate, load_cases, print_table

    cases_file = tmp_path / "cases.jsonl"
    cases = [
        {"id": "env-follow-up", "turns": [FIRST_Q], "question": FOLLOW_UP, "expected_urls": ["deploy/cloud.md"],
         "expected_keywords": ["ACME_SECRET_KEY"], "should_refuse": False},
        {"id": "bread-follow-up", "turns": [FIRST_Q], "question": "and what is the best sourdough temperature?",
         "should_refuse": True, "category": "refuse"},
        {"id": "env-alone", "question": FOLLOW_UP, "expected_urls": ["deploy/cloud.md"], "should_refuse": False},
    ]
    cases_file.write_text("".join(json.dumps(c) + "\n" for c in cases))
    loaded = load_cases(cases_file, root_url="https://docs.example.org/")
    assert loaded[0].turns == (FIRST_Q,) and loaded[2].turns == ()
    report = evaluate(get_context(str(index)), "guide", loaded, top_k=5)
    assert report["follow_ups"] == {"cases": 2, "correct": 1.0}
    per = {r["id"]: r for r in report["per_case"]}
    assert per["env-follow-up"]["refused"] is False and per["env-follow-up"]["keywords_found"] == 1
    assert "cloud" in per["env-follow-up"]["searched"] and per["env-follow-up"]["rank"] == 1
    # the same question without its thread is refused: the metric measures the thread's context
    assert per["env-alone"]["refused"] is True and per["env-alone"]["follow_up_ok"] is None
    assert "follow-ups (2)" in print_table(report)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "x", "turns": ["", "q"], "question": "q", "should_refuse": True}) + "\n")
    with pytest.raises(EvalCaseError, match=r":1: turns: a list of the earlier questions"):
        load_cases(bad)


def test_the_refusal_fit_reads_a_follow_up_as_eval_judges_it(index, tmp_path, monkeypatch):
    """eval/fit_refusal.py fits the refusal model on the signals ``judge`` gives each calibration case:
    for a multi-turn case, those of the follow-up as its thread made it, the text ``docs-rag eval`` judges
    (before, of the bare follow-up, *which environment variable must be set?*, which no eval scores)."""
    import importlib.util

    from docs_rag_pipeline.evaluation import evaluate, load_cases

    monkeypatch.setenv("DOCS_RAG_EVAL_STORAGE", str(tmp_path))  # its on-disk cache of hits
    spec = importlib.util.spec_from_file_location("fit_refusal", REPO / "eval" / "fit_refusal.py")
    fit_refusal = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit_refusal)
    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_text(json.dumps({"id": "env-follow-up", "turns": [FIRST_Q], "question": FOLLOW_UP,
                                      "expected_urls": ["deploy/cloud.md"], "should_refuse": False,
                                      "split": "calibration"}) + "\n")
    X, y, rule = fit_refusal.collect(Path(index), "calibration", cases_file)
    report = evaluate(get_context(str(index)), "guide", load_cases(cases_file, root_url="https://docs.example.org/"),
                      top_k=get_context(str(index)).config.retrieval.top_k)
    case = report["per_case"][0]
    assert "cloud" in case["searched"] and case["refused"] is False
    assert list(X[0]) == [case["features"][k] for k in fit_refusal.FEATURES]
    assert list(rule) == [False]  # answered, as ask answered it


def _add_turns(path: str, thread_id: str, n: int) -> None:
    from docs_rag_pipeline.threads import ThreadStore, Turn

    store = ThreadStore(path, 60)
    for i in range(n):
        store.add(thread_id, Turn(question=f"q{i}", standalone=f"q{i}", answer="a", refused=False))


def test_processes_adding_turns_to_one_thread_lose_none(tmp_path):
    """Four processes on one storage (serve --workers, or the server and the MCP server) add turns to the
    same thread at once: each takes the next number in turn, none fails on a duplicate and none is lost."""
    import multiprocessing

    from docs_rag_pipeline.threads import MAX_TURNS_KEPT, ThreadStore

    store = ThreadStore(tmp_path, 60)
    tid = store.new().thread_id
    mp = multiprocessing.get_context("spawn")
    procs = [mp.Process(target=_add_turns, args=(str(tmp_path), tid, 300)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    import sqlite3

    with sqlite3.connect(store.path) as db:
        numbers = [n for (n,) in db.execute("SELECT n FROM turns WHERE thread_id = ? ORDER BY n", (tid,))]
    assert numbers == list(range(1201 - MAX_TURNS_KEPT, 1201))  # the newest kept, each number taken once


def test_expired_conversations_go_in_batches_and_by_prune_and_a_thread_keeps_its_newest_turns(tmp_path):
    """Expired threads were deleted only when a new conversation started, all at once in its write
    transaction (100,000 of them stalled every conversation on the storage for seconds), never by
    ``docs-rag prune``, and a live thread kept every turn though a follow-up reads the newest 20. Now each
    new thread or turn deletes a bounded batch, prune deletes every expired one (overwritten in the file,
    SQLite's secure_delete), and a thread keeps its newest MAX_TURNS_KEPT turns."""
    import sqlite3

    from docs_rag_pipeline.schemas import InputError
    from docs_rag_pipeline.threads import EXPIRED_KEPT_SECONDS, FORGET_BATCH, MAX_TURNS_KEPT, ThreadStore, Turn

    from .test_cli import _run

    cfg = write_config(tmp_path, extra="api:\n  thread_ttl_minutes: 60\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "data").mkdir()
    store = ThreadStore(tmp_path / "data", 60)
    live = store.new().thread_id
    for i in range(MAX_TURNS_KEPT + 5):
        store.add(live, Turn(question=f"q{i}", standalone=f"q{i}", answer="a", refused=False))
    turns = store.get(live).turns
    assert [t.question for t in turns] == [f"q{i}" for i in range(5, MAX_TURNS_KEPT + 5)]
    with sqlite3.connect(store.path) as db:  # the older turns are gone from the file, not only unread
        assert db.execute("SELECT MIN(n), COUNT(*) FROM turns WHERE thread_id = ?", (live,)).fetchone() == (6, 20)
        old = time.time() - 3600 - EXPIRED_KEPT_SECONDS - 60
        n_old = 2 * FORGET_BATCH + 200
        db.executemany("INSERT INTO threads VALUES (?, ?, ?)", ((f"{i:032x}", old, old) for i in range(n_old)))
        db.executemany("INSERT INTO turns VALUES (?, ?, ?)",
                       ((f"{i:032x}", n, json.dumps({"question": f"my name is Jane {i:05d}"}))
                        for i in range(n_old) for n in (1, 2)))
    just_expired = store.new().thread_id
    store.touch(just_expired, time.time() - 2 * 3600)

    def stored() -> tuple[int, int]:
        with sqlite3.connect(store.path) as db:
            return (db.execute("SELECT COUNT(*) FROM threads").fetchone()[0],
                    db.execute("SELECT COUNT(DISTINCT thread_id) FROM turns").fetchone()[0])

    # the new thread above deleted one batch; a turn deletes another, a new thread the next
    assert stored() == (n_old - FORGET_BATCH + 2, n_old - FORGET_BATCH + 1)
    store.add(live, Turn(question="again", standalone="again", answer="a", refused=False))
    assert stored() == (n_old - 2 * FORGET_BATCH + 2, n_old - 2 * FORGET_BATCH + 1)
    # expired a moment ago: still told so, not "unknown"
    with pytest.raises(InputError) as err:
        store.get(just_expired)
    assert err.value.code == "expired_thread"
    out = _run(["prune"], cfg)
    assert out.returncode == 0, out.stderr
    assert "[PRUNE] conversations: 201 expired (no question for api.thread_ttl_minutes, 60) deleted" in out.stderr
    with sqlite3.connect(store.path) as db:
        assert {r[0] for r in db.execute("SELECT id FROM threads")} == {live}
        assert {r[0] for r in db.execute("SELECT DISTINCT thread_id FROM turns")} == {live}
    assert b"Jane" not in store.path.read_bytes()  # overwritten, not left in a free page
    assert len(store.get(live).turns) == MAX_TURNS_KEPT
    out = _run(["prune"], cfg)
    assert out.returncode == 0 and "conversations" not in out.stderr, out.stderr


def test_a_storage_that_cannot_be_written_still_answers(index, tmp_path, caplog):
    """Serving from a storage folder that cannot be written (a read-only mount, a full disk): ``ask``
    crashed with ``sqlite3.OperationalError: unable to open database file`` from the conversation
    store, and feedback answered "no answer with trace_id …" because the question log could not record
    the answer. Now the answer is given without a thread and says why; a follow-up says conversations
    cannot be read (503); feedback says it cannot be stored (503); an ingest stops before Dagster
    starts, naming the folder. (Tests run as root, whom permissions do not stop, so the stores are
    made unopenable by a folder in the file's place; a read-only bind mount gives the same answers.)"""
    storage, cfg = _own_storage(index, tmp_path, "ro.yaml")
    for name in ("threads.sqlite", "feedback.sqlite"):
        if (storage / name).exists():
            (storage / name).unlink()
        (storage / name).mkdir()
    from docs_rag_pipeline.query import ask

    ans = ask(FIRST_Q, config=cfg)
    assert not ans.refused and ans.citations and ans.thread_id is None
    assert ans.warning == ("this answer was not saved as a conversation, so it has no follow-ups (the storage "
                           "cannot be written; the server log says why)")
    assert "threads.sqlite: unable to open database file" in caplog.text  # the details: logged, not answered
    with serve(create_app(config_path=str(cfg))) as url:
        r = requests.post(f"{url}/ask", json={"question": FIRST_Q}, timeout=120)
        assert r.status_code == 200 and "thread_id" not in r.json() and "not saved" in r.json()["warning"]
        events = sse(requests.post(f"{url}/ask", json={"question": FIRST_Q, "stream": True}, stream=True,
                                   timeout=120))
        final = dict(events)["final"]
        assert "thread_id" not in final and "not saved as a conversation" in final["warning"]
        follow = requests.post(f"{url}/ask", json={"question": FOLLOW_UP, "thread_id": "0" * 32}, timeout=60)
        assert follow.status_code == 503 and follow.json()["error"]["code"] == "threads_unavailable"
        assert "conversations cannot be read on this server" in follow.json()["error"]["message"]
        fb = requests.post(f"{url}/feedback", json={"trace_id": r.json()["trace_id"], "rating": "up"}, timeout=60)
        assert fb.status_code == 503 and fb.json()["error"]["code"] == "feedback_unavailable"
        assert "feedback cannot be stored on this server" in fb.json()["error"]["message"]
        for body in (r.text, follow.text, fb.text, json.dumps(final)):  # no path reaches a client
            assert str(tmp_path) not in body and "sqlite" not in body
    assert "feedback.sqlite: unable to open database file" in caplog.text
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    bad = tmp_path / "nowhere.yaml"
    bad.write_text(cfg.read_text().replace(f"storage: {storage}", f"storage: {blocker / 'data'}"))
    out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "--config", str(bad), "ingest"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert (f"error: storage: {blocker / 'data'} cannot be made a folder: {blocker} is a file, not a folder; move "
            "that file away, or point `storage` at another folder") in out.stderr


def test_a_conversation_store_locked_by_another_process_holds_no_answer(index, tmp_path, caplog):
    """Another connection holding threads.sqlite's write lock (a backup, a VACUUM, an operator's sqlite3
    shell) held every answer for SQLite's 30 s wait, under the process's lock, so concurrent asks came
    after 30, 60, 90 s, each saying "the storage cannot be written". Now the store waits at most
    threads.WAIT_SECONDS for both locks: three asks at once all end while the lock is still held, say the
    store was busy, and the thread is saved again once the lock is gone."""
    from docs_rag_pipeline.query import ask

    storage, cfg = _own_storage(index, tmp_path, "locked.yaml")
    first = ask(FIRST_Q, config=cfg)  # the model loaded and the store created before the lock is taken
    answers: dict[int, object] = {}

    def asker(k: int) -> None:
        answers[k] = ask(FOLLOW_UP, thread_id=first.thread_id, config=cfg) if k == 0 else ask(FIRST_Q, config=cfg)

    run_while_locked(storage / "threads.sqlite", "IMMEDIATE", asker)
    assert sorted(answers) == [0, 1, 2] and not any(a.refused for a in answers.values())
    assert "ACME_SECRET_KEY" in answers[0].answer  # the follow-up was read in its thread, only not saved
    for a in answers.values():
        assert a.thread_id is None and a.warning == ("this answer was not saved as a conversation, so it has no "
                                                     "follow-ups (the conversation store was busy; the server "
                                                     "log says why)")
    assert "threads.sqlite: database is locked for more than 10 s: another connection held its write" in caplog.text
    again = ask(FOLLOW_UP, thread_id=first.thread_id, config=cfg)
    assert again.thread_id == first.thread_id and again.warning is None


def test_a_server_never_recreates_a_storage_folder_moved_away(index, tmp_path):
    """While an operator swapped storage folders (``mv data data.old; mv data.new data``), feedback or
    an answer's conversation store re-created an empty ``data/`` (``mkdir(parents=True)``), so the
    second ``mv`` put the new index inside it and the server answered 503 from then on. A missing
    storage folder is now a 503 for those requests and is left missing; once it is back, all works."""
    storage, cfg = _own_storage(index, tmp_path, "swap.yaml")
    with serve(create_app(config_path=str(cfg))) as url:
        first = requests.post(f"{url}/ask", json={"question": FIRST_Q}, timeout=120)
        assert first.status_code == 200 and first.json()["thread_id"]
        storage.rename(tmp_path / "data.old")
        fb = requests.post(f"{url}/feedback", json={"trace_id": first.json()["trace_id"], "rating": "up"}, timeout=60)
        assert fb.status_code == 503 and fb.json()["error"]["code"] == "feedback_unavailable"
        follow = requests.post(f"{url}/ask", json={"question": FOLLOW_UP, "thread_id": first.json()["thread_id"]},
                               timeout=60)
        assert follow.status_code == 503
        health = requests.get(f"{url}/health", timeout=60)  # it said "ok" with the open table's counts
        assert health.status_code == 503 and health.json()["error"]["code"] == "backend_unavailable", health.text
        assert not storage.exists(), sorted(p.name for p in storage.iterdir())
        (tmp_path / "data.old").rename(storage)  # the operator's second mv: the folder is where it was
        assert not (storage / "data.old").exists()
        assert requests.get(f"{url}/health", timeout=60).json()["sources"]["guide"] > 0
        fb = requests.post(f"{url}/feedback", json={"trace_id": first.json()["trace_id"], "rating": "up"}, timeout=60)
        assert fb.status_code == 200, fb.text
        follow = requests.post(f"{url}/ask", json={"question": FOLLOW_UP, "thread_id": first.json()["thread_id"]},
                               timeout=120)
        assert follow.status_code == 200 and follow.json()["thread_id"] == first.json()["thread_id"]


def test_conversations_start_again_in_a_storage_folder_swapped_under_the_server(index, tmp_path):
    """The storage folder swapped for a freshly ingested one (``mv data data.old && mv data.new data``), or
    ``threads.sqlite`` moved aside, under a running server: the store remembered that its tables existed,
    so every later answer came without a ``thread_id`` ("not saved as a conversation") and every follow-up
    was a 503 until a restart. Now the store is created again in the folder that is back: new questions
    get a thread, and a thread of the old store is unknown there (404), like another server's."""
    import shutil

    storage, cfg = _own_storage(index, tmp_path, "swap.yaml")
    for name in ("threads.sqlite", "feedback.sqlite"):
        (storage / name).unlink(missing_ok=True)
    shutil.copytree(storage, tmp_path / "data.new")  # as a fresh ingest leaves it: no conversation store
    with serve(create_app(config_path=str(cfg))) as url:
        old = requests.post(f"{url}/ask", json={"question": FIRST_Q}, timeout=120).json()["thread_id"]
        assert old
        storage.rename(tmp_path / "data.old")
        (tmp_path / "data.new").rename(storage)
        # a thread of the store moved away: unknown here, and reading it creates no file
        r = requests.post(f"{url}/ask", json={"question": FOLLOW_UP, "thread_id": old}, timeout=120)
        assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_thread", r.text
        assert not (storage / "threads.sqlite").exists()
        first = requests.post(f"{url}/ask", json={"question": FIRST_Q}, timeout=120).json()
        assert first.get("thread_id") and "warning" not in first, first
        follow = requests.post(f"{url}/ask", json={"question": FOLLOW_UP, "thread_id": first["thread_id"]},
                               timeout=120)
        assert follow.status_code == 200 and follow.json()["thread_id"] == first["thread_id"], follow.text
        assert "ACME_SECRET_KEY" in follow.json()["answer"]
        # the operator moves threads.sqlite aside (to clear conversations, or a damaged file)
        (storage / "threads.sqlite").rename(tmp_path / "threads.sqlite.aside")
        r = requests.post(f"{url}/ask", json={"question": FOLLOW_UP, "thread_id": first["thread_id"]}, timeout=120)
        assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_thread", r.text
        again = requests.post(f"{url}/ask", json={"question": FIRST_Q, "stream": True}, stream=True, timeout=120)
        final = dict(sse(again))["final"]
        assert final.get("thread_id") and "warning" not in final, final
    from docs_rag_pipeline.query import ask  # the Python API, in this process, the same

    tid = ask(FIRST_Q, config=cfg).thread_id
    (storage / "threads.sqlite").unlink()
    ans = ask(FIRST_Q, config=cfg)
    assert ans.thread_id and ans.thread_id != tid and ans.warning is None
    assert ask(FOLLOW_UP, thread_id=ans.thread_id, config=cfg).thread_id == ans.thread_id


def _own_storage(index: Path, tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A copy of the module's storage folder at ``tmp_path/data`` and a config ``name`` that reads it
    (with no rate limit): a test may move, swap or break it without touching the other tests."""
    import shutil

    storage = tmp_path / "data"
    shutil.copytree(Path(yaml_storage(index)), storage)
    cfg = tmp_path / name
    cfg.write_text(index.read_text().replace(f"storage: {yaml_storage(index)}", f"storage: {storage}")
                   + "api:\n  rate_limit_per_minute: 100000\n")
    return storage, cfg


def yaml_storage(cfg: Path) -> str:
    return next(line.split(":", 1)[1].strip() for line in cfg.read_text().splitlines() if line.startswith("storage:"))


def test_prune_deletes_a_thread_whose_time_cannot_be_read_and_the_cli_says_it_once(index, tmp_path):
    """A thread whose time of last question is NULL or text (a hand edit, a bad restore) could never be
    continued (503) and never expired: SQLite orders NULL and text apart from every number, so neither
    the trimming of each ask nor ``docs-rag prune`` ever deleted it, and its questions were kept past
    ``api.thread_ttl_minutes`` for good. Now prune deletes it with the expired ones, and leaves a
    thread in time alone. ``docs-rag ask --thread`` on such a thread printed the cause twice (a log
    line, then its error line); now once."""
    import sqlite3

    from docs_rag_pipeline.query import ask

    storage, cfg = _own_storage(index, tmp_path, "untimed.yaml")
    db_file = storage / "threads.sqlite"
    live, null_time, text_time = (ask(FIRST_Q, config=cfg).thread_id for _ in range(3))
    with contextlib.closing(sqlite3.connect(db_file)) as db, db:
        db.execute("UPDATE threads SET updated = NULL WHERE id = ?", (null_time,))
        db.execute("UPDATE threads SET updated = 'yesterday' WHERE id = ?", (text_time,))

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "--config", str(cfg), *args],
                              capture_output=True, text=True, timeout=300)

    p = run("ask", FOLLOW_UP, "--thread", text_time)
    assert p.returncode == 74, p.stderr
    assert p.stderr.count("(threads.updated) is 'yesterday', not a number") == 1, p.stderr
    assert p.stderr.startswith("error: the conversation cannot be read (") and "docs-rag prune" in p.stderr

    p = run("prune")  # the copied storage may hold expired threads of the module's other tests too
    assert p.returncode == 0 and "[PRUNE] conversations: " in p.stderr, p.stderr
    with contextlib.closing(sqlite3.connect(db_file)) as db:
        assert {t for (t,) in db.execute("SELECT id FROM threads")} >= {live}
        assert not db.execute("SELECT 1 FROM threads WHERE id IN (?, ?)", (null_time, text_time)).fetchall()
        assert not db.execute("SELECT 1 FROM turns WHERE thread_id IN (?, ?)", (null_time, text_time)).fetchall()
    assert ask(FOLLOW_UP, thread_id=live, config=cfg).thread_id == live


def test_a_refused_turn_carries_no_words_into_the_follow_up():
    """Without an LLM a follow-up carries the last two turns' terms. A refused turn's words were among
    them, newest first: *which port does it listen on?* after *how do I deploy the dashboard?* (answered)
    and *can the dashboard export to PowerPoint slides?* (refused: the docs say nothing on it) carried
    *export*, *slides*… and crowded out the deploy turn's words. A refused turn sets no topic: the
    follow-up carries the last two answered turns' terms."""
    from docs_rag_pipeline.answering.service import carried_terms
    from docs_rag_pipeline.threads import Turn

    deploy = Turn(question="how do I deploy the dashboard?", standalone="how do I deploy the dashboard?",
                  answer="Run acme deploy [1].", refused=False, cited_titles=["Deploying to the cloud"])
    refused = Turn(question="can the dashboard export to PowerPoint slides?",
                   standalone="can the dashboard export to PowerPoint slides?", answer="…", refused=True)
    vocab = frozenset({"deploy", "dashboard", "cloud", "deploying", "export", "slides", "port", "listen"})
    got = carried_terms("which port does it listen on?", [deploy, refused], vocab)
    assert got == carried_terms("which port does it listen on?", [deploy], vocab) == \
        ["deploy", "dashboard", "deploying", "cloud"], got
    earlier = Turn(question="how do I install acme?", standalone="how do I install acme?", answer="pip [1].",
                   refused=False, cited_titles=["Install"])
    assert carried_terms("and on Windows?", [earlier, deploy, refused], vocab | {"install", "acme", "windows"}) == \
        ["deploy", "dashboard", "deploying", "cloud", "install", "acme"]
