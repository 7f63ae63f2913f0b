"""The chat page in real headless Chromium: the feedback buttons, and every link on the page leads
somewhere (a local source without base_url has relative URLs: they open /view on this server)."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests
from dagster import DagsterInstance

from docs_rag_pipeline import feedback
from docs_rag_pipeline.config import load_config
from docs_rag_pipeline.serve.api import create_app

from .conftest import GUIDE, MARKERS, REFRESH_Q, write_config, write_docs
from .dagster_helpers import materialize_source
from .test_api import serve, variant
from .test_chat_page import CONVERTER_Q, ask, browser, chromium  # noqa: F401 - fixtures


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("chatfb")
    write_docs(root / "docs", {**GUIDE, **MARKERS})
    cfg = write_config(root, sources="""
      - name: guide
        kind: local
        path: docs
    """)  # no base_url: citation URLs are relative paths
    with DagsterInstance.ephemeral() as instance:
        materialize_source(cfg, "guide", instance)
    return variant(cfg, "page.yaml", "rate_limit_per_minute: 100000")


@pytest.fixture(scope="module")
def server(index):
    with serve(create_app(config_path=str(index))) as url:
        yield url


@pytest.fixture
def page(browser, server):  # noqa: F811
    ctx = browser.new_context(viewport={"width": 1100, "height": 900}, base_url=server)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto("/")
    pg.wait_for_selector("#question")
    yield pg
    assert errors == [], errors
    ctx.close()


def test_thumbs_down_with_a_comment_is_stored(page, index):
    ask(page, CONVERTER_Q)
    trace_id = page.text_content("#trace-id")
    page.fill("#feedback-comment", "missing the date example")
    page.click("#feedback-down")
    page.wait_for_selector("#feedback-status:has-text('Thanks')")
    assert page.get_attribute("#feedback-down", "aria-pressed") == "true"
    assert page.is_disabled("#feedback-up")
    rows = [r for r in feedback.feedback_rows(load_config(index)) if r["trace_id"] == trace_id]
    assert [(r["rating"], r["comment"], r["question"]) for r in rows] == [
        ("down", "missing the date example", CONVERTER_Q)]
    # a new answer resets the buttons
    ask(page, REFRESH_Q)
    assert page.is_enabled("#feedback-up") and page.text_content("#feedback-status") == ""


def test_every_link_on_the_page_leads_somewhere(page, server):
    ask(page, CONVERTER_Q)
    for li in page.query_selector_all("#sources li"):  # open every card: parent links appear too
        btn = li.query_selector("button.toggle")
        if btn:
            btn.click()
    page.wait_for_selector("#sources li[data-loaded='loading']", state="detached")
    assert page.query_selector_all("#sources li[data-loaded='chunk']")
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(a => a.getAttribute('href'))")
    assert any(h.startswith("view?url=") for h in hrefs), hrefs
    resolved = page.eval_on_selector_all("a[href]", "els => els.map(a => a.href)")
    for raw, href in zip(hrefs, resolved):
        if raw.startswith("#"):  # a marker: its source card is on the page
            assert page.query_selector(raw) is not None, raw
            continue
        r = requests.get(href, timeout=30)
        assert r.status_code == 200, (raw, r.status_code, r.text[:200])
    # the /view page shows the indexed text and lands on the cited section; it runs no script
    view = next(h for h in hrefs if h.startswith("view?url=") and "#" in h)
    page.goto(view)
    anchor = view.split("#", 1)[1]
    assert page.query_selector(f"[id='{anchor}']") is not None
    assert "A converter turns the text" in page.text_content("main")
    assert "script-src 'self'" in requests.get(f"{server}/{view.split('#')[0]}", timeout=30).headers[
        "Content-Security-Policy"]
