"""The chat page at `/`, driven in real headless Chromium (Debian's `chromium`) through Playwright's
sync API, against a real waitress server over a real materialized index."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import requests
from dagster import DagsterInstance

from docs_rag_pipeline.serve.api import create_app

from .conftest import (EXPORTER_DOC, FAKE_MARKERS, FENCE_Q, GUIDE, MARKERS, QUOTA_DOC, REFRESH_Q, REPO, write_config,
                       write_docs)
from .dagster_helpers import materialize_source
from .test_api import closed_port, serve, variant

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
ARTIFACTS = REPO / "test-artifacts"
SLOW_SECONDS = 3.0

INJECTION = {
    "security.md": """
        ---
        title: "Comment sanitizer <img src=x onerror=window.__pwned=4>"
        ---
        # Comment sanitizer

        The comment sanitizer removes the payload `<img src=x onerror="window.__pwned=1">` from every comment before it is stored.

        It also strips `<script>window.__pwned=2</script>` blocks from comments.
    """,
}
EXPORTER = {"exporter.md": EXPORTER_DOC}
#: a guide that quotes Markdown with fenced code in it, under a longer fence
GOPHER = {"gopher.md": """
        # Gopher quoting guide

        The Gopher guide shows how a page quotes a Python example:

        ~~~~markdown
        Some text.

        ```python
        print(items[1])
        ```

        ~~~
        first = rows[1]
        ~~~
        ~~~~
    """}
GOPHER_Q = "How does the Gopher guide quote a Python example?"
#: an HTML page that shows markup as text: the answer writes its "<" as &lt; (no Markdown client may read a tag)
QUOKKA = {"quokka.html": "<html><head><title>Quokka badges</title></head><body><main><h1>Quokka badges</h1>"
                         "<p>The Quokka badge template wraps the count in &lt;span class=\"badge\"&gt;count&lt;/span&gt;"
                         " before the badge is shown.</p></main></body></html>"}
QUOKKA_Q = "How does the Quokka badge template wrap the count?"
#: an API-reference page: a title with no place to break, a table with many columns
LONG_ID = "airflow.providers.google.cloud.operators.bigquery.BigQueryInsertJobOperator"
WIDE = {
    "reference/insert-job.md": f"""
        ---
        title: "{LONG_ID}"
        ---
        # {LONG_ID}

        The insert job operator reports each warehouse job in one of these states:

        | Queued | Pending | Running | Finished | Failed | Cancelled | Retrying | Skipped | Paused | Resumed | Archived | Expired |
        |---|---|---|---|---|---|---|---|---|---|---|---|
        | waiting | accepted | executing | succeeded | errored | stopped | again | ignored | halted | continued | stored | outdated |
    """,
}
QUOTAS = {"quotas.md": QUOTA_DOC}
QUOTAS_Q = "What is the quota of the Porcupine Walrus tier?"
WIDE_Q = f"Which warehouse job states does {LONG_ID} report?"
EXPORTER_Q = "Which options does the dashboard exporter accept?"
CONVERTER_Q = "What does a converter do in data binding?"
SANITIZER_Q = "What does the comment sanitizer remove from comments?"
OFF_TOPIC_Q = "Best temperature for sourdough bread?"


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium: installed with apt-get when missing and we are root; else the tests skip."""
    if not Path(CHROMIUM).exists():
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            pytest.skip(f"{CHROMIUM} is missing and we are not root with apt-get to install Debian's chromium")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"]
        if subprocess.run(cmd, env=env, capture_output=True, timeout=900).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=600)
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
            if p.returncode != 0:
                pytest.skip(f"apt-get install chromium failed: {p.stderr[-500:]}")
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium):
    sync_api = pytest.importorskip("playwright.sync_api")
    pw = sync_api.sync_playwright().start()
    b = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
    yield b
    b.close()
    pw.stop()


CUTS = ("CUT-END ", "CUT-ERROR ", "CUT-DROP ")
#: what a gateway or proxy in front of the server answers instead of it, by the question's first word
ODD_ANSWERS = {
    "GATEWAY": ("502 Bad Gateway", "application/json", b'{"error": "Bad gateway"}'),
    "NULLMSG": ("500 Internal Server Error", "application/json", b'{"error": {"code": "x", "message": null}}'),
    "SIGNIN": ("200 OK", "text/html; charset=utf-8", b"<!doctype html><title>Sign in</title><form>Password</form>"),
}


class SlowAsk:
    """WSGI middleware around the real app: a question that starts with SLOW waits before it is
    answered, so a second question can overtake it. One that starts with a CUTS prefix is asked
    without it, and its stream is passed on as a proxy that cuts it would: up to the final event,
    which it leaves out (CUT-END), replaces with an error event (CUT-ERROR) or drops the connection
    at (CUT-DROP). One whose first word is in ODD_ANSWERS gets that answer. Every /ask is recorded."""

    def __init__(self, app) -> None:  # noqa: ANN001
        self.app = app
        self.asked: list[str] = []
        self.bodies: list[dict] = []  # each /ask's JSON body, as the page sent it

    def __call__(self, environ, start_response):  # noqa: ANN001, ANN204
        if environ.get("PATH_INFO") == "/ask" and environ.get("REQUEST_METHOD") == "POST":
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(body)
            try:
                sent = json.loads(body)
            except ValueError:
                sent = {}
            question = sent.get("question", "")
            self.asked.append(question)
            self.bodies.append(sent)
            if question.startswith("SLOW"):
                time.sleep(SLOW_SECONDS)
            odd = ODD_ANSWERS.get(question.split(" ", 1)[0])
            if odd:
                start_response(odd[0], [("Content-Type", odd[1]), ("Content-Length", str(len(odd[2])))])
                return [odd[2]]
            cut = next((c for c in CUTS if question.startswith(c)), None)
            if cut:
                body = json.dumps({**sent, "question": question[len(cut):]}).encode()
                environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(body), str(len(body))
                return self._cut(cut.strip(), self.app(environ, start_response))
        return self.app(environ, start_response)

    @staticmethod
    def _cut(how: str, chunks):  # noqa: ANN001, ANN205
        buf = b""
        try:
            for piece in chunks:
                buf += piece
                while b"\n\n" in buf:
                    block, buf = buf.split(b"\n\n", 1)
                    if block.startswith(b"event: final"):
                        if how == "CUT-ERROR":
                            yield b'event: error\ndata: {"code": "internal_error", "message": "the model failed"}\n\n'
                        elif how == "CUT-DROP":  # waitress closes the connection mid-response
                            raise ConnectionAbortedError("the proxy dropped the connection")
                        return
                    yield block + b"\n\n"
        finally:
            getattr(chunks, "close", lambda: None)()


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("chat")
    write_docs(root / "docs", {**GUIDE, **INJECTION, **MARKERS, **EXPORTER, **WIDE, **GOPHER, **QUOKKA, **QUOTAS})
    cfg = write_config(root)
    with DagsterInstance.ephemeral() as instance:
        materialize_source(cfg, "guide", instance)
    return variant(cfg, "page.yaml", "rate_limit_per_minute: 100000")


@pytest.fixture(scope="module")
def app(index) -> SlowAsk:
    return SlowAsk(create_app(config_path=str(index)))


@pytest.fixture(scope="module")
def server(app):
    with serve(app) as url:
        yield url


@pytest.fixture
def page(browser, server):
    ctx = browser.new_context(viewport={"width": 1100, "height": 900}, base_url=server)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto("/")
    pg.wait_for_selector("#question")
    pg.js_errors = errors  # type: ignore[attr-defined]
    yield pg
    assert errors == [], errors
    ctx.close()


def ask(page, question: str) -> None:  # noqa: ANN001
    page.fill("#question", question)
    page.click("#ask")
    page.wait_for_selector("#result[aria-busy='false']:not([hidden])")


def test_answer_with_markers_linked_to_source_cards(page, server):
    ask(page, CONVERTER_Q)
    expected = requests.post(f"{server}/ask", json={"question": CONVERTER_Q}, timeout=30).json()
    assert page.is_hidden("#refused-banner")
    markers = page.locator("#answer a.cite")
    assert markers.count() >= 2
    assert page.inner_text("#answer").startswith("A converter turns the text typed by the user")
    cards = page.locator("#sources li.card")
    assert cards.count() == len(expected["citations"])
    for c in expected["citations"]:
        card = page.locator(f"#source-{c['n']}")
        assert card.locator(".title").inner_text() == c["title"]
        assert card.locator(".url").inner_text() == c["url"] and "#" in c["url"]
        assert card.locator("a.title").get_attribute("href") == c["url"]
        assert card.locator(".snippet").inner_text() == c["snippet"]
        assert card.get_attribute("data-chunk-id") == c["chunk_id"]
    for i in range(markers.count()):  # every marker points at its card
        href = markers.nth(i).get_attribute("href")
        assert page.locator(href).count() == 1
    assert len(page.inner_text("#trace-id")) >= 8

    # clicking a marker expands its card with the chunk text from GET /chunks/<id>
    assert page.is_hidden("#source-1 .chunk")
    markers.first.click()
    page.wait_for_selector("#source-1[data-loaded='chunk']")
    chunk = requests.get(f"{server}/chunks/{expected['citations'][0]['chunk_id']}", timeout=30).json()
    assert page.is_visible("#source-1 .chunk")
    assert page.inner_text("#source-1 .chunk-text") == chunk["text"]
    assert "Data binding › Two-way binding › Converters" in page.inner_text("#source-1 .chunk-path")
    assert page.get_attribute("#source-1 .toggle", "aria-expanded") == "true"
    # the card's own button expands and collapses it
    page.click("#source-2 .toggle")
    page.wait_for_selector("#source-2[data-loaded='chunk']")
    assert page.is_visible("#source-2 .chunk")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "chat-page.png"), full_page=True)
    page.click("#source-2 .toggle")
    assert page.is_hidden("#source-2 .chunk") and page.get_attribute("#source-2 .toggle", "aria-expanded") == "false"


def test_document_markers_are_not_citations_on_the_page(page, server):
    ask(page, REFRESH_Q)
    expected = requests.post(f"{server}/ask", json={"question": REFRESH_Q}, timeout=30).json()
    assert not expected["refused"] and expected["citations"]
    shown = page.inner_text("#answer")
    assert "04:00 UTC" in shown and not any(m in shown for m in FAKE_MARKERS), shown
    links = page.locator("#answer a.cite")
    numbers = [int(links.nth(i).get_attribute("data-n")) for i in range(links.count())]
    assert numbers and set(numbers) == {c["n"] for c in expected["citations"]}
    # every [n] on the page is a link to a card: none is plain text that looks like a citation
    assert shown.count("[") == len(numbers)
    assert page.locator("#sources li.card").count() == len(expected["citations"])


def test_three_backticks_in_a_sentence_are_text_not_code(page, server):
    """A sentence that mentions three backticks without closing them is text: the document's own
    markers after it are removed from the answer, and the system's markers after it are links."""
    expected = requests.post(f"{server}/ask", json={"question": FENCE_Q}, timeout=30).json()
    assert not expected["refused"] and "``` to open a backup fence" in expected["answer"], expected
    assert "every hour" in expected["answer"] and not any(m in expected["answer"] for m in FAKE_MARKERS), expected
    ask(page, FENCE_Q)
    shown = page.inner_text("#answer")
    links = page.locator("#answer a.cite")
    numbers = [int(links.nth(i).get_attribute("data-n")) for i in range(links.count())]
    assert set(numbers) == {c["n"] for c in expected["citations"]} and shown.count("[") == len(numbers), shown


def test_the_page_reads_code_as_the_server_does(page):
    """The page's splitCode (app.js) and answering.markers.code_ranges must agree on what is code, or a
    marker the server kept as code would be linked on the page, or one it placed left unlinked."""
    import random
    import re

    from docs_rag_pipeline.answering.markers import code_parts

    src = (REPO / "docs_rag_pipeline" / "serve" / "page" / "app.js").read_text()
    body = re.search(r"(  function splitCode\(text, spans = true\) \{.*?\n  \}\n\n  function codeSpans.*?\n  \}\n)", src, re.S)
    assert body, "splitCode and codeSpans not found in app.js"
    rnd = random.Random(7)
    pieces = ["`", "``", "```", "~~~", "\n", "\n\n", " [1]", " x", "a", "  ```py\n", "\n```\n", "\t",
              "````", "\n````\n", "~~~~", "\n~~~~\n", "````md\n", "``` [2]\n"]
    texts = ["".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 14))) for _ in range(600)]
    texts += ["Type ``` to open a fence [2].", "```\nnot closed [1]", "a `b\n\nc` [3]", "``x `y` z`` [4]",
              "````md\n```py\nx[1]\n```\n````\n[2]", "```\nx[1]\n``` [2]\n```\n[3]", "~~~\nx[1]\n~~~~\n[2]"]
    got = page.evaluate("(texts) => {\n" + body.group(1) + "\n  return texts.map(splitCode);\n}", texts)
    for text, parts in zip(texts, got):
        assert parts == code_parts(text), repr(text)


def test_a_code_block_that_shows_fences_is_drawn_as_one_block(page, server):
    """A ```` block holding a ``` block (a guide to quoting code) is one <pre>, its code as written:
    before, the inner ```python closed it, so the page drew a code span, loose text that had lost the
    ``[1]`` of ``print(items[1])``, and a <pre> that began mid-block."""
    expected = requests.post(f"{server}/ask", json={"question": GOPHER_Q}, timeout=30).json()
    assert not expected["refused"] and "print(items[1])" in expected["answer"], expected
    ask(page, GOPHER_Q)
    pres = page.locator("#answer pre.code code").all_inner_texts()
    assert pres == ["Some text.\n\n```python\nprint(items[1])\n```\n\n~~~\nfirst = rows[1]\n~~~"], pres
    assert page.get_attribute("#answer pre.code code", "class") == "language-markdown"
    assert page.locator("#answer > code").count() == 0 and page.locator("#answer a.cite").count() >= 1


def test_markup_the_answer_writes_as_character_references_is_shown_as_its_characters(page, server):
    """The server writes a quoted "<" that would open a tag as &lt;, which a Markdown client shows as "<";
    the page showed "&lt;span …" literally. It shows the characters now, as text: no element comes of it."""
    expected = requests.post(f"{server}/ask", json={"question": QUOKKA_Q}, timeout=30).json()
    assert not expected["refused"] and '&lt;span class="badge">count&lt;/span>' in expected["answer"], expected
    ask(page, QUOKKA_Q)
    shown = page.inner_text("#answer")
    assert 'wraps the count in <span class="badge">count</span> before' in shown and "&lt;" not in shown, shown
    assert page.locator("#answer span, #answer .badge").count() == 0


def test_tables_and_code_in_an_answer_are_drawn_as_such(page, server):
    """A table the answer quotes is a <table> (header cells, one row per row), a code block a <pre>,
    not ``a | b | c`` lines and fences; their citation markers are still links to the cards."""
    expected = requests.post(f"{server}/ask", json={"question": EXPORTER_Q}, timeout=30).json()
    assert not expected["refused"] and "| --- | --- | --- |" in expected["answer"], expected
    ask(page, EXPORTER_Q)
    table = page.locator("#answer table.answer-table")
    assert table.count() == 1
    assert table.locator("thead th").all_inner_texts() == ["Option", "Default", "Meaning"]
    assert [r.locator("td").all_inner_texts() for r in table.locator("tbody tr").all()] == [
        ["--format", "csv", "the file format of the export"], ["--gzip", "off", "compress the export with gzip"],
        ["--since", "none", "only rows newer than this date"]]
    # the options are inline code on the page the answer quotes: code in their cells too
    assert table.locator("tbody td code").all_inner_texts() == ["--format", "--gzip", "--since"]
    shown = page.inner_text("#answer")
    assert "| --- |" not in shown and "--gzip | off" not in shown and "```" not in shown
    if "acme-export" in expected["answer"]:  # the run line, when the answer quotes it, is a code block
        assert page.inner_text("#answer pre.code code") == "$ acme-export --format parquet --gzip"
        assert page.get_attribute("#answer pre.code code", "class") == "language-console"
    links = page.locator("#answer a.cite")
    assert links.count() == len(__import__("re").findall(r"\[\d+\]", expected["answer"]))
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "chat-page-table.png"), full_page=True)
    ask(page, CONVERTER_Q)  # the answer moves up into the conversation, drawn the same way
    earlier = page.locator("#turns li.turn .turn-answer")
    assert earlier.locator("table.answer-table tbody tr").count() == 3
    assert "| --- |" not in earlier.inner_text() and "```" not in earlier.inner_text()


def test_a_quoted_tables_cells_are_drawn_in_their_columns(page):
    """A row with an empty first or last cell and a cell holding ``a \\| b`` were drawn as "30 |",
    "| 40" under Tier and "a", "b" in two columns, under a header of four (chatpage F3): each cell is
    drawn in its column, an empty one empty, the pipe as text in its cell."""
    ask(page, QUOTAS_Q)
    table = page.locator("#answer table.answer-table")
    assert table.count() == 1
    rows = page.evaluate("() => [...document.querySelectorAll('#answer table tr')]"
                         ".map(tr => [...tr.children].map(c => c.textContent))")
    assert rows == [["Tier", "Quota", "Note"], ["Badger", "10", "shared"], ["Walrus", "30", ""],
                    ["", "40", "unnamed"], ["Lynx", "a | b", "either"]], rows


def test_question_outside_the_docs_shows_the_banner(page):
    ask(page, OFF_TOPIC_Q)
    assert page.is_visible("#refused-banner")
    assert "outside the documentation" in page.inner_text("#refused-banner").lower() or \
           "outside the docs" in page.inner_text("#refused-banner").lower()
    assert page.locator("#sources li").count() == 0 and page.is_hidden("#sources-heading")
    assert page.locator("#answer a.cite").count() == 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "chat-page-refused.png"))
    # a covered question afterwards hides the banner again
    ask(page, CONVERTER_Q)
    assert page.is_hidden("#refused-banner") and page.locator("#sources li").count() >= 1


def test_corpus_html_is_rendered_as_text(page):
    ask(page, SANITIZER_Q)
    answer = page.inner_text("#answer")
    assert '<img src=x onerror="window.__pwned=1">' in answer
    assert page.locator("#source-1 .title").inner_text() == "Comment sanitizer <img src=x onerror=window.__pwned=4>"
    assert "<script>window.__pwned=2</script>" in page.inner_text("#source-1 .snippet")
    page.click("#source-1 .toggle")
    page.wait_for_selector("#source-1[data-loaded='chunk']")
    assert "<script>window.__pwned=2</script>" in page.inner_text("#source-1 .chunk-text")
    page.wait_for_timeout(300)
    assert page.locator("#result img, #result script, main img").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("script").count() == 1  # only the page's own app.js
    page.screenshot(path=str(ARTIFACTS / "chat-page-injection.png"), full_page=True)


def test_enter_submits_and_shift_enter_adds_a_line(page, app):
    before = len(app.asked)
    page.click("#question")
    page.keyboard.type("How do validators")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("work in forms?")
    page.wait_for_timeout(300)
    assert page.input_value("#question") == "How do validators\nwork in forms?"
    assert len(app.asked) == before and page.is_hidden("#result")
    page.keyboard.press("Enter")
    page.wait_for_selector("#answer a.cite")
    assert app.asked[before:] == ["How do validators\nwork in forms?"]
    assert page.input_value("#question") == "How do validators\nwork in forms?"  # Enter added no newline


def test_a_new_question_cancels_the_one_in_flight(page, app):
    failed: list[str] = []
    page.on("requestfailed", lambda r: failed.append(f"{r.method} {r.url} {r.failure}"))
    before = len(app.asked)
    page.fill("#question", "SLOW " + SANITIZER_Q)
    page.press("#question", "Enter")
    deadline = time.time() + 5
    while len(app.asked) == before and time.time() < deadline:  # the slow request reached the server
        page.wait_for_timeout(50)
    assert app.asked[before:] == ["SLOW " + SANITIZER_Q]
    assert page.inner_text("#status")  # busy
    page.fill("#question", CONVERTER_Q)
    page.press("#question", "Enter")
    page.wait_for_selector("#answer a.cite")
    assert page.get_attribute("#ask-form", "data-cancelled") == "1"
    assert any("/ask" in f and "ERR_ABORTED" in f for f in failed), failed
    assert page.inner_text("#answer").startswith("A converter turns")
    page.wait_for_timeout(SLOW_SECONDS * 1000 + 500)  # the slow answer would have arrived by now
    assert page.inner_text("#answer").startswith("A converter turns")
    assert "sanitizer" not in page.inner_text("#result").lower()
    assert page.inner_text("#status") == ""


def test_new_conversation_drops_the_answer_in_flight(page, app):
    """**New conversation** while a follow-up is still being answered: the page clears at once, the
    follow-up's answer never appears, and the next question starts a new conversation (no thread_id)."""
    ask(page, CONVERTER_Q)
    assert page.is_visible("#new-thread")
    before = len(app.asked)
    page.fill("#question", "SLOW " + SANITIZER_Q)
    page.press("#question", "Enter")
    deadline = time.time() + 5
    while len(app.asked) == before and time.time() < deadline:  # the slow follow-up reached the server
        page.wait_for_timeout(50)
    assert app.bodies[-1].get("thread_id"), app.bodies[-1]  # it is a follow-up
    page.click("#new-thread")
    assert page.is_hidden("#result") and page.is_hidden("#conversation")
    assert page.inner_text("#status") == "" and page.get_attribute("#result", "aria-busy") == "false"
    page.wait_for_timeout(SLOW_SECONDS * 1000 + 500)  # the follow-up's answer would have arrived by now
    assert page.is_hidden("#result") and page.is_hidden("#conversation")
    ask(page, EXPORTER_Q)
    assert app.asked[-1] == EXPORTER_Q and "thread_id" not in app.bodies[-1], app.bodies[-1]
    assert page.locator("#turns li.turn").count() == 0
    assert "sanitizer" not in page.inner_text("#result").lower()


TURNS = "els => els.map(e => [e.dataset.threadId, e.querySelector('.you').textContent])"


def test_an_expired_conversation_stays_whole_and_apart_from_the_new_one(page, app, index):
    """When the thread has expired, the page says so and the next question starts a new conversation.
    The old conversation, its last answer too, stays on screen as one ended conversation; the history
    above the new question holds only the new conversation's turns. The old first turn was listed as
    if the new conversation had begun with it, and its last answer vanished."""
    from docs_rag_pipeline.context import get_context
    from docs_rag_pipeline.threads import thread_store

    ask(page, CONVERTER_Q)
    ask(page, SANITIZER_Q)
    old = app.bodies[-1]["thread_id"]
    ctx = get_context(str(index))
    thread_store(ctx).touch(old, time.time() - (ctx.config.api.thread_ttl_minutes + 1) * 60)
    page.fill("#question", EXPORTER_Q)
    page.press("#question", "Enter")
    page.wait_for_selector("#error:not([hidden])")
    assert "no longer available" in page.inner_text("#error")
    assert app.bodies[-1]["thread_id"] == old
    ask(page, QUOTAS_Q)
    assert "thread_id" not in app.bodies[-1]  # a new conversation
    ask(page, CONVERTER_Q)
    new = app.bodies[-1]["thread_id"]
    assert new != old
    assert page.eval_on_selector_all("#turns > li", TURNS) == [[new, QUOTAS_Q]]
    assert page.get_attribute("#conversation", "aria-label") == "Earlier in this conversation"
    ended = page.locator("section.conversation.ended")
    assert ended.count() == 1 and ended.locator("li.turn .turn-answer").count() == 2
    assert ended.locator("li.turn").evaluate_all(TURNS) == [[old, CONVERTER_Q], [old, SANITIZER_Q]]
    assert "comment sanitizer removes" in ended.locator("li.turn").last.inner_text().lower()
    assert "no longer available" in ended.inner_text()
    page.click("#new-thread")  # starts over: the ended conversation goes too
    assert page.locator("section.conversation.ended").count() == 0 and page.is_hidden("#conversation")


def test_a_stream_without_its_final_event_leaves_no_draft_as_the_answer(page):
    """The streamed text is a draft until the final event: when the stream ends without it (a proxy
    closes it, the server sends an error event, the connection drops), the draft is removed and the
    page says the answer was cut off."""
    page.evaluate("""() => { window.__drafts = [];  // every text the answer box showed while streaming
        new MutationObserver(() => { const a = document.getElementById('answer');
            if (a.classList.contains('streaming')) window.__drafts.push(a.textContent); })
          .observe(document.getElementById('answer'), {childList: true, subtree: true, characterData: true}); }""")
    expected = {"CUT-END ": "The answer was cut off", "CUT-ERROR ": "could not be answered: the model failed",
                "CUT-DROP ": "The connection was lost mid-answer"}
    for cut, message in expected.items():
        page.evaluate("() => { window.__drafts = []; }")
        ask(page, cut + CONVERTER_Q)
        drafts = page.evaluate("() => window.__drafts")
        assert any("A converter turns" in d for d in drafts), drafts  # the draft was on screen
        assert page.is_visible("#error") and message in page.inner_text("#error"), (cut, page.inner_text("#error"))
        assert "had not been checked" in page.inner_text("#error")
        assert page.inner_text("#answer") == "" and page.locator("#answer a.cite").count() == 0, cut
        assert page.inner_text("#status") == ""
    ask(page, CONVERTER_Q)  # an answer that arrives whole is shown as before
    assert page.is_hidden("#error") and page.inner_text("#answer").startswith("A converter turns")


def test_odd_error_bodies_give_a_clear_message(page):
    """What a gateway or an auth proxy sends instead of the server's own answer gives a plain message,
    never 'undefined', 'null' or a script error, and leaves the answer on screen as it was."""
    ask(page, CONVERTER_Q)
    expected = {"GATEWAY": "The question could not be answered: Bad gateway",
                "NULLMSG": "The question could not be answered: HTTP 500",
                "SIGNIN": "not an answer (HTTP 200, text/html). If a sign-in page guards this server, reload the page"}
    for word, message in expected.items():
        page.evaluate("() => { document.getElementById('error').hidden = true; }")
        page.fill("#question", word + " why?")
        page.press("#question", "Enter")
        page.wait_for_selector("#error:not([hidden])")
        page.wait_for_selector("#result[aria-busy='false']")
        shown = page.inner_text("#error")
        assert message in shown, shown
        assert not any(w in shown for w in ("undefined", "null", "Cannot read", "object Object")), shown
        assert page.inner_text("#current-question") == CONVERTER_Q  # no empty turn for the failed question
        assert page.inner_text("#answer").startswith("A converter turns") and page.locator("#turns li").count() == 0


def _contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two CSS colours as getComputedStyle gives them (rgb()/rgba())."""
    def lum(css: str) -> float:
        rgb = [int(float(x)) / 255 for x in css[css.index("(") + 1:-1].split(",")[:3]]
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


FOCUSED = """() => { const e = document.activeElement, s = getComputedStyle(e);
    let bg = 'rgb(255, 255, 255)';  // what the ring is drawn on: the nearest ancestor with a background
    for (let p = e.parentElement; p; p = p.parentElement) {
        const c = getComputedStyle(p).backgroundColor;
        if (c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') { bg = c; break; } }
    return {tag: e.tagName, id: e.id, cls: e.className, style: s.outlineStyle, width: parseFloat(s.outlineWidth),
            color: s.outlineColor, bg: bg}; }"""


def test_keyboard_focus_and_layout(page):
    """Small keyboard and layout checks: every button and link shows a focus ring of at least 3:1
    against what it is drawn on (WCAG 1.4.11) when reached with Tab; following a marker or sending
    feedback keeps the focus on the page; at 375 px the page fits."""
    ask(page, CONVERTER_Q)
    page.focus("#question")
    seen = []
    for _ in range(30):
        page.keyboard.press("Tab")
        f = page.evaluate(FOCUSED)
        if f["tag"] in ("A", "BUTTON"):
            seen.append(f)
            assert f["style"] != "none" and f["width"] >= 2, f
            assert _contrast(f["color"], f["bg"]) >= 3, f
    kinds = {f["id"] or f["cls"] for f in seen}
    assert {"ask", "new-thread", "cite", "toggle small", "copy-trace", "feedback-up"} <= kinds, kinds

    # focus is never dropped: Enter on a marker takes it to the card it opens, and Enter on 👍
    # (which disables both buttons) to the thanks
    marker = page.locator("#answer a.cite").last
    n = marker.get_attribute("data-n")
    marker.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#source-{n}.open")
    assert page.evaluate("() => document.activeElement.closest('li.card')?.id") == f"source-{n}"
    page.focus("#feedback-up")
    page.keyboard.press("Enter")
    page.wait_for_selector("#feedback-status:text('Thanks')")
    assert page.is_disabled("#feedback-up") and page.evaluate("() => document.activeElement.id") == "feedback-status"
    # the thanks is no work in progress: no busy spinner beside it
    assert page.evaluate("() => getComputedStyle(document.getElementById('feedback-status'), '::before').content") == "none"

    # at a phone's width (375 px) the page is no wider than the screen: a long identifier in the
    # question, a source's title and heading path wrap, and a wide table scrolls inside its own box
    page.set_viewport_size({"width": 375, "height": 800})
    page.click("#new-thread")
    ask(page, WIDE_Q)
    assert page.locator("#answer table.answer-table thead th").count() == 12, page.inner_text("#answer")
    assert page.inner_text("#source-1 .title") == LONG_ID
    page.click("#source-1 .toggle")
    page.wait_for_selector("#source-1[data-loaded='chunk']")
    ask(page, CONVERTER_Q)  # the first turn, its sources' titles listed, moves up into the conversation
    ask(page, WIDE_Q)
    assert LONG_ID in page.inner_text("#turns .turn-sources")
    page.click("#source-1 .toggle")
    page.wait_for_selector("#source-1[data-loaded='chunk']")
    wide = page.evaluate("""() => [...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > innerWidth + 0.5 && !e.closest('.answer-table'))
        .map((e) => e.tagName + '.' + e.className)""")
    assert page.evaluate("document.documentElement.scrollWidth") <= 375 and wide == [], wide
    box = page.evaluate("""() => { const t = document.querySelector('#answer table.answer-table');
        return {scrolls: getComputedStyle(t).overflowX, client: t.clientWidth, content: t.scrollWidth,
                cell: document.querySelector('#answer table.answer-table td').offsetWidth}; }""")
    assert box["scrolls"] == "auto" and box["content"] > box["client"], box  # it scrolls sideways
    assert box["cell"] > 40, box  # its cells keep their words whole instead of a letter per line
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "chat-page-375.png"), full_page=True)


def test_copy_trace_id(browser, server):
    ctx = browser.new_context(base_url=server, permissions=["clipboard-read", "clipboard-write"])
    pg = ctx.new_page()
    try:
        pg.goto("/")
        ask(pg, CONVERTER_Q)
        trace = pg.inner_text("#trace-id")
        assert len(trace) >= 8
        pg.click("#copy-trace")
        pg.wait_for_selector("#copy-trace:text-is('Copied')")
        assert pg.evaluate("navigator.clipboard.readText()") == trace
    finally:
        ctx.close()


def test_page_asks_for_the_token_when_the_api_needs_one(browser, index, monkeypatch):
    monkeypatch.setenv("DOCS_RAG_PAGE_TOKEN", "page-token")
    cfg = variant(index, "page-auth.yaml", "token_env: DOCS_RAG_PAGE_TOKEN")
    with serve(create_app(config_path=str(cfg))) as url:
        ctx = browser.new_context(base_url=url)
        pg = ctx.new_page()
        try:
            pg.goto("/")  # the page and its files need no token
            pg.fill("#question", CONVERTER_Q)
            pg.press("#question", "Enter")
            pg.wait_for_selector("#auth:not([hidden])")
            assert "Send Authorization: Bearer" in pg.inner_text("#error") or "Bearer" in pg.inner_text("#error")
            pg.fill("#token", "page-token")
            pg.click("#save-token")
            pg.wait_for_selector("#answer a.cite")
            assert pg.is_hidden("#error") and pg.is_hidden("#auth")
            pg.click("#source-1 .toggle")  # GET /chunks/<id> carries the token too
            pg.wait_for_selector("#source-1[data-loaded='chunk']")
        finally:
            ctx.close()


@pytest.mark.parametrize("token", ["pässwörd", "tök€n"])
def test_the_page_sends_a_non_ascii_token_as_the_server_reads_it(browser, index, monkeypatch, token):
    """A token with non-ASCII letters, which the server matches when it comes as UTF-8 (http.md), works
    from the page too: it sent 'pässwörd' as Latin-1 bytes (401 again, the token box forever) and
    could not send 'tök€n' at all ("The server could not be reached: … non ISO-8859-1 code point")."""
    monkeypatch.setenv("DOCS_RAG_PAGE_TOKEN", token)
    cfg = variant(index, "page-auth-utf8.yaml", "token_env: DOCS_RAG_PAGE_TOKEN")
    with serve(create_app(config_path=str(cfg))) as url:
        ctx = browser.new_context(base_url=url)
        pg = ctx.new_page()
        try:
            pg.goto("/")
            pg.fill("#question", CONVERTER_Q)
            pg.press("#question", "Enter")
            pg.wait_for_selector("#auth:not([hidden])")
            # a control character cannot go in a header: the token box says so, and nothing is sent
            pg.fill("#token", "tok\x07en")
            pg.click("#save-token")
            pg.wait_for_selector("#token-problem:not([hidden])")
            assert "control character" in pg.inner_text("#token-problem") and pg.is_visible("#auth")
            pg.fill("#token", token)
            pg.click("#save-token")
            pg.wait_for_selector("#answer a.cite")
            assert pg.is_hidden("#error") and pg.is_hidden("#auth") and pg.is_hidden("#token-problem")
            pg.click("#source-1 .toggle")  # GET chunks/<id> carries it the same way
            pg.wait_for_selector("#source-1[data-loaded='chunk']")
        finally:
            ctx.close()


def test_page_headers(server):
    r = requests.get(f"{server}/", timeout=30)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
    csp = r.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    js = requests.get(f"{server}/static/app.js", timeout=30).text
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "outerHTML" not in js


ODD_IDS = ["a b", 'say "hi" <now>', "50%", "c#d", "x%20y", "日本語", "tab\there", "back`tick{}|^"]


def test_every_citation_url_opens_its_section_in_a_browser(browser, tmp_path):
    """A chunk's URL is its page URL plus the section's id as the fragment. Ids that real pages
    carry (a space, a quote, '<', '%', '#', a tab) went into the fragment raw: the link cut the id
    at '#', read '%20' as a space, or was not a valid URL at all. Chromium, sent to each chunk
    URL of a page served over HTTP, must land on the section the chunk came from."""
    from html import escape

    from docs_rag_pipeline.chunking import Budget, chunk_page
    from docs_rag_pipeline.embedding import LocalEmbedder
    from docs_rag_pipeline.parsing import parse_document

    from .web_helpers import static_server

    filler = "<p>A filler paragraph keeps the sections apart on the screen.</p>" * 40
    body = "".join(f'<h2 id="{escape(ident)}">Part {i}</h2><p>Section {i} explains topic {i}.</p>{filler}'
                   for i, ident in enumerate(ODD_IDS))
    (tmp_path / "page.html").write_text(f"<!doctype html><html><head><meta charset=utf-8><title>Odd ids</title>"
                                        f"</head><body><main><h1>Odd ids</h1>{body}</main></body></html>", "utf-8")
    parsed = parse_document((tmp_path / "page.html").read_text("utf-8"), fmt="html", path="page.html")
    emb = LocalEmbedder()
    with static_server(tmp_path) as server:
        page_url = f"{server.url}/page.html"
        chunks = chunk_page(parsed, source="s", page_url=page_url, content_hash="h", updated_at="",
                            budget=Budget(window=emb.max_tokens, target=400, overlap=0), count=emb.count_tokens)
        firsts = {c.headings[-1]: c.url for c in chunks if c.headings}
        assert sorted(firsts) == sorted(f"Part {i}" for i in range(len(ODD_IDS)))
        ctx = browser.new_context(viewport={"width": 800, "height": 600})
        pg = ctx.new_page()
        try:
            for i, ident in enumerate(ODD_IDS):
                url = firsts[f"Part {i}"]
                assert not any(c.isspace() or c in '"<>`' for c in url), url
                pg.goto(url)
                target = pg.evaluate("() => { const t = document.querySelector(':target'); return t && t.id; }")
                assert target == ident, (url, target)
        finally:
            ctx.close()


def test_the_page_works_under_a_reverse_proxys_path_prefix(browser, app):
    """Behind a reverse proxy at https://docs.example.org/rag (deploy.md), which forwards /rag/* with
    the prefix removed, the page opened at /rag/ loads its script and stylesheet and calls the API under
    /rag/: every URL of the page is relative to it. Root-absolute URLs (/static/app.js, /ask) went to
    the proxy's root: no script, no style, no answer."""
    from werkzeug.exceptions import NotFound
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    with serve(DispatcherMiddleware(NotFound(), {"/rag": app})) as url:
        ctx = browser.new_context(viewport={"width": 1100, "height": 900})
        pg = ctx.new_page()
        seen: list[tuple[int, str]] = []
        pg.on("response", lambda r: seen.append((r.status, r.url)))
        try:
            pg.goto(f"{url}/rag/")
            pg.wait_for_selector("#index-info:not(:empty)")  # GET health answered
            assert pg.evaluate("getComputedStyle(document.querySelector('.visually-hidden')).position") == "absolute"
            ask(pg, CONVERTER_Q)
            assert pg.locator("#answer a.cite").count() >= 2
            pg.click("#source-1 .toggle")
            pg.wait_for_selector("#source-1[data-loaded='chunk']")  # GET chunks/<id>, not the snippet
            pg.click("#feedback-up")
            pg.wait_for_selector("#feedback-status:text('Thanks')")
            page_url = pg.inner_text("#source-1 .url").split("#")[0]
            pg.goto(f"{url}/rag/view?url={requests.utils.quote(page_url, safe='')}")  # its stylesheet too
            pg.wait_for_selector("body.view")
            assert pg.evaluate("document.styleSheets.length") == 1
        finally:
            ctx.close()
    outside = [(s, u) for s, u in seen if not u.startswith(f"{url}/rag/") and not u.endswith("/favicon.ico")]
    assert outside == [], outside
    assert [(s, u) for s, u in seen if s >= 400 and not u.endswith("/favicon.ico")] == [], seen


#: an API page whose sections sit under a title with no place to break (the parent line of a chunk)
API_PAGE = {"insert-job.md": f"""
        ---
        title: "{LONG_ID}"
        ---
        # {LONG_ID}

        The insert job operator submits one warehouse job and waits for it.

        ## Parameters

        The operator takes a configuration dictionary and a location for the warehouse job.

        ### deferrable

        With deferrable set, the operator frees its worker slot while the warehouse job runs.
    """}
#: an Azure-style deployment path: the LLM's URL, long and without a place to break, is in the warning
AZURE_PATH = "/openai/deployments/gpt-4o-mini-2024-07-18-internal-gateway/v1/"


def test_a_long_warning_and_parent_line_wrap_on_a_phone(browser, tmp_path):
    """At 375 px, the warning the server writes when the LLM cannot be reached (its URL in it) and the
    "Part of: <API page title> › Parameters" line of an opened source wrap inside their boxes: the
    warning ran over the card's border and the parent line made the page 579 px wide."""
    write_docs(tmp_path / "docs", API_PAGE)
    cfg = write_config(tmp_path, extra=f"""
        llm:
          provider: openai
          model: m
          base_url: http://127.0.0.1:{closed_port()}{AZURE_PATH}
    """)
    with DagsterInstance.ephemeral() as instance:
        materialize_source(cfg, "guide", instance)
    with serve(create_app(config_path=str(cfg))) as url:
        ctx = browser.new_context(viewport={"width": 375, "height": 800}, base_url=url)
        pg = ctx.new_page()
        try:
            pg.goto("/")
            ask(pg, "What does deferrable do for the insert job operator?")
            assert AZURE_PATH in pg.inner_text("#warning") and "unreachable" in pg.inner_text("#warning")
            pg.click("#source-1 .toggle")
            pg.wait_for_selector("#source-1[data-loaded='chunk']")
            assert LONG_ID in pg.inner_text("#source-1 .parent")
            over = pg.evaluate("""() => ['#warning', '#source-1 .parent'].map((s) => {
                const e = document.querySelector(s), r = document.createRange(); r.selectNodeContents(e);
                const right = Math.max(...Array.from(r.getClientRects()).map((x) => x.right));
                return [s, e.scrollWidth - e.clientWidth, right - e.getBoundingClientRect().right]; })
              .filter(([s, scroll, past]) => scroll > 0 || past > 1)""")
            assert over == [], over
            assert pg.evaluate("document.documentElement.scrollWidth") <= 375
        finally:
            ctx.close()


def test_the_page_mounted_at_a_prefix_and_opened_without_its_slash_redirects_to_it(app):
    """At /rag (no slash) the browser resolved the page's relative URLs against / (outside the mount):
    the page came without script or style. It is sent to /rag/ instead, its query kept."""
    from urllib.parse import urljoin

    from werkzeug.exceptions import NotFound
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    with serve(DispatcherMiddleware(NotFound(), {"/rag": app})) as url:
        r = requests.get(f"{url}/rag?q=1", allow_redirects=False, timeout=30)
        assert (r.status_code, urljoin(r.url, r.headers.get("Location", ""))) == (308, f"{url}/rag/?q=1")
        assert requests.get(f"{url}/rag", timeout=30).url == f"{url}/rag/"
        assert requests.get(f"{url}/rag/", allow_redirects=False, timeout=30).status_code == 200
