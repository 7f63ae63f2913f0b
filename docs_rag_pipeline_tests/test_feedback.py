"""Feedback into eval: thumbs up/down over HTTP, MCP and LangSmith; stored with the question and answer;
thumbs-down answers exported as draft eval cases that ``docs-rag eval`` runs. Real server, real index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from docs_rag_pipeline import feedback
from docs_rag_pipeline.config import load_config
from docs_rag_pipeline.records import Answer
from docs_rag_pipeline.serve.api import create_app

from .dagster_helpers import index_guide
from .fake_langsmith import LangSmithServer
from .test_api import serve, variant
from .test_cli import _run

ANSWERED_Q = "What does a converter do in data binding?"
REFUSED_Q = "Best temperature for sourdough bread?"


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    return index_guide(tmp_path_factory.mktemp("feedback"))


@pytest.fixture(scope="module")
def server(index):
    with serve(create_app(config_path=str(variant(index, "fb.yaml", "rate_limit_per_minute: 100000")))) as url:
        yield url


def test_feedback_over_http_is_stored_and_exported_as_cases_that_eval_runs(server, index):
    answered = requests.post(f"{server}/ask", json={"question": ANSWERED_Q}, timeout=60).json()
    refused = requests.post(f"{server}/ask", json={"question": REFUSED_Q}, timeout=60).json()
    assert answered["refused"] is False and refused["refused"] is True
    # every ask is logged, with its confidence signals and cited pages
    log = {r["trace_id"]: r for r in feedback.questions(load_config(index))}
    assert log[answered["trace_id"]]["question"] == ANSWERED_Q
    assert log[answered["trace_id"]]["cited_urls"] == sorted({c["url"] for c in answered["citations"]})
    assert log[refused["trace_id"]]["refused"] is True and log[refused["trace_id"]]["low_confidence"] is True

    r = requests.post(f"{server}/feedback", json={"trace_id": answered["trace_id"], "rating": "down",
                                                  "comment": "should mention datetime parsing"}, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["rating"] == "down" and r.json()["langsmith"] is False
    assert requests.post(f"{server}/feedback", json={"trace_id": refused["trace_id"], "rating": "down"},
                         timeout=30).status_code == 200
    assert requests.post(f"{server}/feedback", json={"trace_id": refused["trace_id"], "rating": "up"},
                         timeout=30).status_code == 200

    # bad input: what is wrong and how to fix it
    bad = requests.post(f"{server}/feedback", json={"trace_id": answered["trace_id"], "rating": "meh"}, timeout=30)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_rating"
    assert '"up" or "down"' in bad.json()["error"]["message"]
    unknown = requests.post(f"{server}/feedback", json={"trace_id": "0" * 32, "rating": "up"}, timeout=30)
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_trace_id"
    assert "0" * 32 in unknown.json()["error"]["message"] and "/ask" in unknown.json()["error"]["message"]
    missing = requests.post(f"{server}/feedback", json={"rating": "up"}, timeout=30)
    assert missing.status_code == 400 and missing.json()["error"]["code"] == "invalid_trace_id"
    extra = requests.post(f"{server}/feedback", json={"trace_id": "x", "rating": "up", "stars": 5}, timeout=30)
    assert extra.status_code == 400 and "stars" in extra.json()["error"]["message"]
    assert "/feedback" in requests.get(f"{server}/openapi.json", timeout=30).json()["paths"]

    # stored with the question, answer, citations and scores
    rows = feedback.feedback_rows(load_config(index))
    assert [(r["question"], r["rating"]) for r in rows] == [(ANSWERED_Q, "down"), (REFUSED_Q, "down"),
                                                            (REFUSED_Q, "up")]
    assert rows[0]["answer"] == answered["answer"] and rows[0]["comment"] == "should mention datetime parsing"
    assert rows[0]["citations"][0]["chunk_id"] == answered["citations"][0]["chunk_id"]
    assert rows[0]["top_score"] is not None

    # thumbs-down → draft eval cases → `docs-rag eval` runs them
    out = index.parent / "drafts.jsonl"
    ex = _run(["feedback", "export", "--out", str(out)], index)
    assert ex.returncode == 0, ex.stderr
    cases = [json.loads(x) for x in out.read_text().splitlines()]
    assert [c["question"] for c in cases] == [ANSWERED_Q, REFUSED_Q]
    assert cases[0]["should_refuse"] is False and cases[0]["expected_urls"] == log[answered["trace_id"]]["cited_urls"]
    assert cases[1]["should_refuse"] is True and all("REVIEW" in c["note"] for c in cases)
    assert "datetime parsing" in cases[0]["note"]
    report = index.parent / "report.json"
    ev = _run(["eval", "--cases", str(out), "--source", "guide", "--json", str(report)], index)
    assert ev.returncode == 0, ev.stderr
    assert json.loads(report.read_text())["cases"] == 2
    assert "2 cases from" in ev.stdout


def test_a_comment_too_long_or_not_a_string_is_a_400_invalid_comment(tmp_path):
    """http.md's /feedback table names ``invalid_comment`` (it did not), and /openapi.json's
    ``maxLength: 2000`` of ``comment`` is that 400, not the 413 ``too_long`` of a long question."""
    cfg = tmp_path / "docs_rag.yaml"
    cfg.write_text("")
    with serve(create_app(config_path=str(cfg))) as url:
        for comment in ("x" * 2001, 5):
            r = requests.post(f"{url}/feedback", json={"trace_id": "abc", "rating": "down", "comment": comment},
                              timeout=30)
            err = r.json()["error"]
            assert r.status_code == 400 and (err["code"], err["message"]) == (
                "invalid_comment", "'comment' must be a string of at most 2000 characters"), r.text
        schema = requests.get(f"{url}/openapi.json", timeout=30).json()["components"]["schemas"]["FeedbackRequest"]
        assert schema["properties"]["comment"]["maxLength"] == 2000


def test_log_questions_off(index):
    cfg = variant(index, "nolog.yaml", "log_questions: false")
    before = len(feedback.questions(load_config(index)))
    with serve(create_app(config_path=str(cfg))) as url:
        ans = requests.post(f"{url}/ask", json={"question": ANSWERED_Q}, timeout=60).json()
        assert len(feedback.questions(load_config(index))) == before
        r = requests.post(f"{url}/feedback", json={"trace_id": ans["trace_id"], "rating": "up"}, timeout=30)
    assert r.status_code == 404 and "api.log_questions: false" in r.json()["error"]["message"]


def test_an_ask_that_cannot_be_logged_is_answered_with_one_warning_line(index, tmp_path):
    """``docs-rag ask`` on a storage whose question log cannot be written (a read-only mount; here a
    folder in the file's place, as root is not stopped by permissions) answered, then printed
    ``could not log the question`` and a whole Python traceback. Now: one line naming the ask, the file
    and the cause."""
    from .test_followups import _own_storage

    storage, cfg = _own_storage(index, tmp_path, "nolog.yaml")
    (storage / "feedback.sqlite").unlink(missing_ok=True)
    (storage / "feedback.sqlite").mkdir()
    out = _run(["ask", ANSWERED_Q], cfg)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    trace = next(line.split()[1] for line in out.stdout.splitlines() if line.startswith("trace: "))
    line = (f"the ask {trace} was answered but not logged in {storage / 'feedback.sqlite'} (unable to open "
            "database file); feedback on it answers unknown_trace_id and the doc-gap report does not count it")
    assert line in out.stderr.splitlines(), out.stderr


def test_a_question_log_locked_by_another_process_holds_no_answer(index, tmp_path, caplog):
    """Another process holding the question log's write lock (a backup, a VACUUM, an operator's sqlite3
    shell) held every answer for SQLite's 30 s wait, under the process's lock, so concurrent asks came
    after 30, 60, 90 s. Now the log waits at most feedback.LOG_WAIT_SECONDS: three asks at once all end
    while the lock is still held, and each ask not logged is said once, in one line naming it."""
    from docs_rag_pipeline.query import ask

    from .conftest import run_while_locked
    from .test_followups import _own_storage

    storage, cfg = _own_storage(index, tmp_path, "locked.yaml")
    ask(ANSWERED_Q, config=cfg)  # the model loaded and the log created before the lock is taken
    answers: dict[int, object] = {}

    def asker(k: int) -> None:
        answers[k] = ask(f"{ANSWERED_Q} ({k})", config=cfg)

    run_while_locked(storage / "feedback.sqlite", "EXCLUSIVE", asker)
    assert sorted(answers) == [0, 1, 2] and not any(a.refused for a in answers.values())
    lines = [r.getMessage() for r in caplog.records if "was answered but not logged" in r.getMessage()]
    for a in answers.values():
        mine = [line for line in lines if f"the ask {a.trace_id} was" in line]
        assert len(mine) == 1 and f"not logged in {storage / 'feedback.sqlite'} (" in mine[0], lines
    assert not any(r.exc_info for r in caplog.records)  # one line each, no traceback
    logged = {r["trace_id"] for r in feedback.questions(load_config(cfg))}
    assert not logged & {a.trace_id for a in answers.values()}
    assert ask(ANSWERED_Q, config=cfg).trace_id in {r["trace_id"] for r in feedback.questions(load_config(cfg))}


def test_an_ask_waits_out_a_write_lock_held_longer_than_the_old_wait_and_is_logged(tmp_path, caplog):
    """Several processes logging at once on one storage (``serve --workers``, the MCP server, CLI asks)
    starved one another past the log's 2-s wait (rollback journal, SQLite's backing-off busy handler):
    asks were answered but not logged, the warning blamed a backup or a VACUUM, and the user's
    thumbs-down on them was 404 ``unknown_trace_id``. Deterministic stand-in for that contention:
    another connection holds the write lock for 4 s (longer than the old wait, well within the new
    one); the ask is logged once it is released, and its feedback is stored. The file is in WAL mode,
    so a reader is never held by a writer."""
    import sqlite3
    import threading
    import time as _time

    from docs_rag_pipeline.records import Answer

    from .conftest import write_config

    cfg = write_config(tmp_path)
    (tmp_path / "docs").mkdir()
    config = load_config(cfg)
    Path(config.storage_path).mkdir(parents=True)
    feedback.log_answer(config, "first", Answer(answer="no", citations=[], refused=True, trace_id="c" * 32))
    con = sqlite3.connect(feedback.db_path(config))
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()

    taken, done = threading.Event(), threading.Event()

    def holder() -> None:
        db = sqlite3.connect(feedback.db_path(config), isolation_level=None)
        db.execute("BEGIN IMMEDIATE")
        taken.set()
        _time.sleep(4)  # longer than the old LOG_WAIT_SECONDS (2 s)
        db.execute("ROLLBACK")
        db.close()
        done.set()

    t = threading.Thread(target=holder)
    t.start()
    assert taken.wait(30)
    assert [r["trace_id"] for r in feedback.questions(config)] == ["c" * 32]  # a reader is not held (WAL)
    feedback.log_answer(config, "second", Answer(answer="no", citations=[], refused=True, trace_id="d" * 32))
    t.join()
    assert done.is_set()
    assert not [r for r in caplog.records if "was answered but not logged" in r.getMessage()]
    assert [r["trace_id"] for r in feedback.questions(config)] == ["c" * 32, "d" * 32]
    assert feedback.record_feedback(config, "d" * 32, "down")["rating"] == "down"


def test_a_warning_about_the_service_does_not_make_an_answered_question_a_doc_gap(index, tmp_path):
    """The conversation store could not be written (here ``threads.sqlite`` is a folder), so a question
    the docs answer, with supported citations, came with the warning "this answer was not saved as a
    conversation …"; any warning set ``low_confidence``, and ``docs-rag gaps`` reported the question as a
    coverage gap (as it did for an LLM outage's extracted answers and a failed reranker). Now only a
    warning about the answer's support (uncited statements dropped) counts."""
    from docs_rag_pipeline.answering.service import _without_llm
    from docs_rag_pipeline.answering.llm import LlmUnavailable
    from docs_rag_pipeline.query import ask
    from docs_rag_pipeline.records import Answer, Citation

    from .test_followups import _own_storage

    storage, cfg = _own_storage(index, tmp_path, "nothreads.yaml")
    (storage / "threads.sqlite").unlink(missing_ok=True)
    (storage / "threads.sqlite").mkdir()
    q = "How do I install the package with pip?"
    ans = ask(q, config=cfg)
    assert not ans.refused and ans.citations and "not saved as a conversation" in (ans.warning or ""), ans
    assert all(c.supported is not False for c in ans.citations), ans.citations
    config = load_config(cfg)
    logged = next(r for r in feedback.questions(config) if r["trace_id"] == ans.trace_id)
    assert logged["warning"] == ans.warning and logged["low_confidence"] is False
    rows, _ = feedback.gap_questions(config)
    assert q not in [r["question"] for r in rows]
    r = _run(["gaps", "--json"], cfg)
    assert r.returncode == 0 and q not in r.stdout, (r.stdout, r.stderr)

    cite = Citation(n=1, chunk_id="c1", url="https://docs.example.org/install.md", title="Install",
                    snippet="pip install acme", score=0.9, supported=True)
    # the answer says how many statements the validator dropped (``Answer.dropped``); before, the
    # question log matched the start of the warning's text, so a service warning put first hid it
    for warning, dropped, low in (("2 uncited statement(s) dropped", 2, True),
                                  ("1 uncited statement(s) dropped; the reranker failed (x); hits in fused order", 1,
                                   True),
                                  ("the reranker failed (x); hits in fused order; 1 uncited statement(s) dropped", 1,
                                   True),
                                  (_without_llm(LlmUnavailable("the LLM server is unreachable")), 0, False),
                                  ("the reranker failed (x); hits in fused order", 0, False)):
        a = Answer(answer="Run pip install acme [1].", citations=[cite], refused=False,
                   trace_id=os.urandom(16).hex(), warning=warning, dropped=dropped)
        assert feedback.confidence(a)["low_confidence"] is low, warning
        assert "dropped" not in a.to_dict()  # clients read it in the warning, as before


def test_feedback_mcp_tool(index):
    from .test_mcp import call, with_client

    async def session(client):  # noqa: ANN001, ANN202
        tools = {t.name for t in (await client.list_tools()).tools}
        _, ans = await call(client, "ask", {"question": ANSWERED_Q})
        ok = await call(client, "feedback", {"trace_id": ans["trace_id"], "rating": "down", "comment": "via mcp"})
        bad = await call(client, "feedback", {"trace_id": ans["trace_id"], "rating": "5"})
        unknown = await call(client, "feedback", {"trace_id": "nope", "rating": "up"})
        return tools, ans, ok, bad, unknown

    tools, ans, ok, bad, unknown = with_client(index, session)
    assert "feedback" in tools
    assert ok[0] is False and ok[1]["rating"] == "down"
    assert bad[0] is True and bad[1].startswith("INVALID_QUERY") and '"up" or "down"' in bad[1]
    assert unknown[0] is True and unknown[1].startswith("NOT_FOUND")
    rows = [r for r in feedback.feedback_rows(load_config(index)) if r["trace_id"] == ans["trace_id"]]
    assert [(r["rating"], r["comment"], r["question"]) for r in rows] == [("down", "via mcp", ANSWERED_Q)]


SCRIPT = """
import json, sys
from docs_rag_pipeline import ask
from docs_rag_pipeline.config import load_config
from docs_rag_pipeline.feedback import record_feedback
from docs_rag_pipeline.tracing import flush
a = ask("What does a converter do in data binding?", config=sys.argv[1])
flush()
print(json.dumps(record_feedback(load_config(sys.argv[1]), a.trace_id, "down", "wrong page")))
"""


def _ask_and_rate(index, ls: LangSmithServer) -> dict:  # noqa: ANN001
    """SCRIPT in a process of its own with tracing sent to ``ls``: what record_feedback returned."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGSMITH_")}
    env.update({"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "test-key", "LANGSMITH_ENDPOINT": ls.url})
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(index)], capture_output=True, text=True, env=env,
                         timeout=180)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_feedback_is_stored_and_answered_when_langsmith_never_answers(index):
    """record_feedback sent the rating to LangSmith inside the request with langsmith's own timeouts
    and retries: a LangSmith that accepted and never answered held a POST /feedback past 5 minutes,
    and four of them the whole server. It waits at most LANGSMITH_FEEDBACK_SECONDS now: the rating is
    stored, ``langsmith`` is false (the guard is minutes, not a measurement)."""
    with LangSmithServer(hang=True) as ls:
        sent = _ask_and_rate(index, ls)
    assert sent["langsmith"] is False
    rows = [r for r in feedback.feedback_rows(load_config(index)) if r["trace_id"] == sent["trace_id"]]
    assert [(r["rating"], r["comment"]) for r in rows] == [("down", "wrong page")]


def test_feedback_goes_to_langsmith_when_configured(index):
    with LangSmithServer() as ls:
        sent = _ask_and_rate(index, ls)
        posts = [(p, b) for m, p, b in ls.requests if "feedback" in p or b'"user_rating"' in b]
    assert sent["langsmith"] is True
    assert posts, [p for _, p, _ in ls.requests]
    body = b"".join(b for _, b in posts)
    assert b"user_rating" in body and b"wrong page" in body
    tid = sent["trace_id"]
    assert tid.encode() in body or f"{tid[:8]}-{tid[8:12]}".encode() in body  # the run id = the trace id


def test_a_langsmith_key_the_endpoint_repeats_is_not_in_the_feedback_log(index):
    """A LangSmith endpoint that refused the key and repeated it (``401 {"detail": "Invalid token lsv2_…"}``)
    had it logged whole, in the traceback of ``LangSmith feedback failed for <trace id>`` (secrets F10). The
    rating is stored, and the log line keeps the traceback with the key written ``***``."""
    key = "lsv2_pt_SECRET0123456789abcdef"
    with LangSmithServer(refuse=True) as ls:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANGSMITH_")}
        env.update({"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": key, "LANGSMITH_ENDPOINT": ls.url})
        out = subprocess.run([sys.executable, "-c", SCRIPT, str(index)], capture_output=True, text=True, env=env,
                             timeout=180)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1])["langsmith"] is False
    assert "LangSmith feedback failed for" in out.stderr and "Invalid token ***" in out.stderr, out.stderr
    assert key not in out.stderr + out.stdout


def test_a_damaged_question_log_is_one_line_naming_the_file(tmp_path):
    """A feedback.sqlite that is not a database (a bad copy or restore, a disk error): the commands that
    read it say so in one line, with the file and what to do, exit 74 (damaged storage), and change
    nothing: the file stays as it was and no cases file is written."""
    from .conftest import write_config

    cfg = write_config(tmp_path)
    (tmp_path / "docs").mkdir()
    db = tmp_path / "data" / "feedback.sqlite"
    db.parent.mkdir()
    junk = b"this is not an sqlite database " * 200
    db.write_bytes(junk)
    out = tmp_path / "drafts.jsonl"
    for args in (["feedback", "list"], ["feedback", "list", "--json"], ["feedback", "export", "--out", str(out)],
                 ["gaps"], ["gaps", "--json"]):
        r = _run(args, cfg)
        assert r.returncode == 74, (args, r.returncode, r.stderr)
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
        assert r.stderr.startswith(f"error: the question log {db} cannot be read (file is not a database)")
        assert "move it aside" in r.stderr and r.stdout == ""
    assert db.read_bytes() == junk and not out.exists()


def test_export_never_replaces_a_cases_file_without_force(tmp_path):
    """The exported drafts are edited by hand (docs/evaluation.md) and --out may name a golden set: an
    export onto an existing file is refused in one line naming --force, and a path that cannot be a file
    is one line too, not a traceback."""
    cfg = _one_refused_question_voted_down(tmp_path, "a" * 32)
    (tmp_path / "docs").mkdir()
    out = tmp_path / "eval" / "drafts.jsonl"
    first = _run(["feedback", "export", "--out", str(out)], cfg)
    assert first.returncode == 0, first.stderr
    reviewed = out.read_text().replace("DRAFT", "REVIEWED by alice")
    out.write_text(reviewed)

    again = _run(["feedback", "export", "--out", str(out)], cfg)
    assert again.returncode == 2 and "Traceback" not in again.stderr, again.stderr
    assert again.stderr.strip() == (f"error: --out {out} exists (it may hold cases you reviewed); name a new file "
                                    "with --out, or pass --force to replace it")
    assert out.read_text() == reviewed
    forced = _run(["feedback", "export", "--out", str(out), "--force"], cfg)
    assert forced.returncode == 0, forced.stderr
    assert "REVIEWED" not in out.read_text() and json.loads(out.read_text())["question"] == REFUSED_Q
    assert [p.name for p in out.parent.iterdir()] == ["drafts.jsonl"]  # no temporary file left beside it

    for bad, says in ((out.parent, "is a folder; name the cases file to write"),
                      (out / "x.jsonl", "cannot be written")):
        r = _run(["feedback", "export", "--out", str(bad), "--force"], cfg)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith(f"error: --out {bad} {says}"), r.stderr
    assert json.loads(out.read_text())["question"] == REFUSED_Q


def _one_refused_question_voted_down(tmp_path: Path, trace_id: str) -> Path:
    """A config whose question log holds REFUSED_Q, refused and voted down ("should be answered"): what
    ``feedback export`` writes as a draft case. The config file's path."""
    from docs_rag_pipeline.records import Answer

    from .conftest import write_config

    cfg = write_config(tmp_path)
    config = load_config(cfg)
    Path(config.storage_path).mkdir(parents=True)
    feedback.log_answer(config, REFUSED_Q, Answer(answer="not in the docs", citations=[], refused=True,
                                                  trace_id=trace_id))
    feedback.record_feedback(config, trace_id, "down", "should be answered")
    return cfg


def test_an_export_onto_a_full_disk_names_the_out_file_not_the_storage(tmp_path, monkeypatch, capsys):
    """`feedback export --out` onto a full disk said `error: the disk holding the storage folder <storage>
    is full or failing …`: the storage had room, the --out file was not named. The line names --out now
    (exit status 74 still); the disk is full for the file's write only (as a tmpfs filled up by hand)."""
    import errno

    from docs_rag_pipeline import cli, files

    cfg = _one_refused_question_voted_down(tmp_path, "b" * 32)
    out = tmp_path / "elsewhere" / "drafts.jsonl"

    def full(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "atomic_write", full)
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(cfg))  # the CLI sets it; restored after the test
    assert cli._main(["--config", str(cfg), "feedback", "export", "--out", str(out)]) == 74
    err = capsys.readouterr().err
    assert f"error: the disk holding {out} is full or failing: [Errno 28] No space left on device" in err, err
    assert "storage folder" not in err and not out.exists()


def test_a_log_without_tables_on_a_full_disk_or_read_only_mount_reads_as_no_question(tmp_path, monkeypatch, capsys):
    """The first ask on a full disk leaves feedback.sqlite without its tables (seen on a tmpfs filled up
    by hand). `feedback list` and `gaps` only read, yet opening the log writes its WAL files and tables:
    with the disk still full (or the storage mounted read-only) they said `the question log … cannot be
    read (database or disk is full)`, exit 74. A log that holds no table holds no question: they say so
    now. A log with tables that cannot be opened is still that error. The write is refused here as
    SQLite refuses it on such a disk (no test may fill a real one)."""
    import sqlite3

    from docs_rag_pipeline import cli

    from .conftest import write_config

    cfg = write_config(tmp_path)
    config = load_config(cfg)
    Path(config.storage_path).mkdir(parents=True)
    log = feedback.db_path(config)
    log.touch()  # what the first ask on a full disk left

    def full(config, *, wait=30):  # noqa: ANN001, ANN202
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(feedback, "connect", full)
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(cfg))  # the CLI sets it; restored after the test
    assert cli._main(["--config", str(cfg), "feedback", "list"]) == 0
    assert capsys.readouterr().out.strip() == "no feedback yet"
    assert cli._main(["--config", str(cfg), "gaps"]) == 0
    assert "No refused or low-confidence questions logged." in capsys.readouterr().out
    assert log.stat().st_size == 0  # nothing was written

    monkeypatch.undo()
    feedback.log_answer(config, REFUSED_Q, Answer(answer="not in the docs", citations=[], refused=True,
                                                  trace_id="c" * 32))
    monkeypatch.setattr(feedback, "connect", full)
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(cfg))
    assert cli._main(["--config", str(cfg), "gaps"]) == 74  # a log that holds questions is not "empty"
    assert "cannot be read (database or disk is full)" in capsys.readouterr().err


def test_an_export_with_no_thumbs_down_writes_nothing(tmp_path):
    """No thumbs-down yet (no question log, or only thumbs-up): the export says there is nothing to export
    and writes no file. Before, it wrote an empty file that `docs-rag eval --cases` refuses ("no cases in
    the file"), and that stopped the next export to the same path until --force."""
    from docs_rag_pipeline.records import Answer

    from .conftest import write_config

    cfg = write_config(tmp_path)
    (tmp_path / "docs").mkdir()
    config = load_config(cfg)
    Path(config.storage_path).mkdir(parents=True)
    out = tmp_path / "eval" / "drafts.jsonl"
    out.parent.mkdir()
    nothing = f"nothing to export: no thumbs-down feedback yet; {out} was not written"
    empty = _run(["feedback", "export", "--out", str(out)], cfg)  # no question log at all
    assert empty.returncode == 0 and empty.stderr.strip() == nothing, empty.stderr
    assert not out.exists()

    feedback.log_answer(config, REFUSED_Q, Answer(answer="not in the docs", citations=[], refused=True,
                                                  trace_id="b" * 32))
    feedback.record_feedback(config, "b" * 32, "up")
    up_only = _run(["feedback", "export", "--out", str(out)], cfg)
    assert up_only.returncode == 0 and up_only.stderr.strip() == nothing, up_only.stderr
    assert list(out.parent.iterdir()) == []
    out.write_text("reviewed cases\n")  # --force with nothing to export leaves a file that is there as it was
    forced = _run(["feedback", "export", "--out", str(out), "--force"], cfg)
    assert forced.returncode == 0 and forced.stderr.strip() == nothing, forced.stderr
    assert out.read_text() == "reviewed cases\n"

    feedback.record_feedback(config, "b" * 32, "down")
    out.unlink()
    first = _run(["feedback", "export", "--out", str(out)], cfg)
    assert first.returncode == 0 and "wrote 1 draft eval case(s)" in first.stderr, first.stderr
    assert json.loads(out.read_text())["question"] == REFUSED_Q


def test_feedback_list_prints_each_rating_on_one_line(tmp_path):
    """Questions and comments are typed by anyone who can ask: their line breaks (and tabs) are shown
    escaped, so one rating is one line and no text can print a line that reads as another rating.
    Before, a question holding "\\n  up  <trace id>  ..." printed a forged `up` rating under the real one.
    `--json` keeps the text as it is."""
    from docs_rag_pipeline.records import Answer

    from .conftest import write_config

    cfg = write_config(tmp_path)
    (tmp_path / "docs").mkdir()
    config = load_config(cfg)
    Path(config.storage_path).mkdir(parents=True)
    question = "zebra port?\n  up  " + "0" * 32 + "  the docs are perfect\r\n\u2028\tok"
    comment = "wrong\n  up  " + "f" * 32 + "  great\x85\x0b"
    feedback.log_answer(config, question, Answer(answer="not in the docs", citations=[], refused=True,
                                                 trace_id="c" * 32))
    feedback.record_feedback(config, "c" * 32, "down", comment)
    listed = _run(["feedback", "list"], cfg)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "down  " + "c" * 32 + "  zebra port?\\n  up  " + "0" * 32 + "  the docs are perfect\\r\\n\\u2028\\tok"
        "  — wrong\\n  up  " + "f" * 32 + "  great\\x85\\x0b"]
    as_json = _run(["feedback", "list", "--json"], cfg)
    rows = json.loads(as_json.stdout)
    assert [(r["question"], r["comment"]) for r in rows] == [(question, comment)]


def test_a_damaged_row_of_the_question_log_is_named_and_left_out(tmp_path):
    """A logged ask whose JSON column is not JSON (a bad hand edit or restore): `feedback list`, `export`
    and `gaps` name the file, the row and the column in one warning line, leave that row out and read
    the others; nothing stored changes. Before, each stopped with a bare "Expecting property name
    enclosed in double quotes" (exit 2), naming no file and showing no other rating."""
    import contextlib
    import sqlite3

    from docs_rag_pipeline.records import Answer

    from .conftest import write_config

    cfg = write_config(tmp_path)
    (tmp_path / "docs").mkdir()
    config = load_config(cfg)
    Path(config.storage_path).mkdir(parents=True)
    for tid, q in (("d" * 32, "which port does zebra use?"), ("e" * 32, "how big is the otter cache?"),
                   ("f" * 32, REFUSED_Q)):
        feedback.log_answer(config, q, Answer(answer="not in the docs", citations=[], refused=True, trace_id=tid))
        feedback.record_feedback(config, tid, "down")
    db = feedback.db_path(config)
    with sqlite3.connect(db) as con:
        con.execute("UPDATE questions SET cited_urls = '[{' WHERE trace_id = ?", ("d" * 32,))
        con.execute("UPDATE questions SET citations = '{\"url\": 1}' WHERE trace_id = ?", ("f" * 32,))
    con.close()
    def dump() -> list[str]:  # what is stored (WAL mode: a checkpoint rewrites the file's bytes, not its rows)
        with contextlib.closing(sqlite3.connect(db)) as c:
            return list(c.iterdump())

    stored = dump()
    out = tmp_path / "drafts.jsonl"
    for args in (["feedback", "list"], ["feedback", "list", "--json"], ["feedback", "export", "--out", str(out)],
                 ["gaps", "--json"]):
        r = _run(args, cfg)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stderr)
        warning = [x for x in r.stderr.splitlines() if x.startswith("warning:")]
        assert warning == [f"warning: 2 damaged row(s) of the question log {db} left out (trace_id '{'d' * 32}': "
                           "cited_urls is not JSON (Expecting property name enclosed in double quotes: line 1 "
                           f"column 3 (char 2)); trace_id '{'f' * 32}': citations is not a JSON list of objects); "
                           "the other rows were read. Restore the column from a backup, or delete the row (its "
                           "ask and feedback are then no longer read)"], (args, r.stderr)
        if args[0] == "feedback" and args[1] == "list":
            assert "e" * 32 in r.stdout and "d" * 32 not in r.stdout and "f" * 32 not in r.stdout, r.stdout
    assert [json.loads(x)["question"] for x in out.read_text().splitlines()] == ["how big is the otter cache?"]
    assert dump() == stored


def test_a_follow_up_is_exported_with_its_conversation(server, index):
    """A thumbs-down on a follow-up becomes a draft case with the earlier questions of its conversation as
    `turns`, so `docs-rag eval` asks it as the follow-up it was; the same follow-up in another conversation
    is a case of its own. Before, the log kept no thread: the draft was the bare follow-up (a different
    question, refused when asked alone), and the second one was dropped as a duplicate question."""
    from .test_followups import FIRST_Q, FOLLOW_UP, sse

    def ask(question: str, thread_id: str | None = None, stream: bool = False) -> dict:
        body = {"question": question, **({"thread_id": thread_id} if thread_id else {}), "stream": stream}
        r = requests.post(f"{server}/ask", json=body, timeout=60, stream=stream)
        assert r.status_code == 200, r.text
        return sse(r)[-1][1] if stream else r.json()

    deploy = ask(FIRST_Q)
    deploy_next = ask(FOLLOW_UP, deploy["thread_id"])
    binding = ask(ANSWERED_Q)
    binding_next = ask(FOLLOW_UP, binding["thread_id"], stream=True)  # a streamed follow-up is logged alike
    binding_third = ask("show me an example", binding["thread_id"])
    assert deploy_next["refused"] is False and deploy_next["thread_id"] == deploy["thread_id"]
    for a in (deploy_next, deploy_next, binding_next, binding_third):  # rated down twice: one case
        r = requests.post(f"{server}/feedback", json={"trace_id": a["trace_id"], "rating": "down"}, timeout=30)
        assert r.status_code == 200, r.text

    log = {r["trace_id"]: r for r in feedback.questions(load_config(index))}
    assert (log[deploy["trace_id"]]["thread_id"], log[deploy["trace_id"]]["turns"]) == (deploy["thread_id"], [])
    assert log[deploy_next["trace_id"]]["turns"] == [FIRST_Q]
    assert (log[binding_next["trace_id"]]["thread_id"], log[binding_next["trace_id"]]["turns"]) == (
        binding["thread_id"], [ANSWERED_Q])
    assert log[binding_third["trace_id"]]["turns"] == [ANSWERED_Q, FOLLOW_UP]

    out = index.parent / "follow-up-drafts.jsonl"
    ex = _run(["feedback", "export", "--out", str(out)], index)
    assert ex.returncode == 0, ex.stderr
    cases = [json.loads(x) for x in out.read_text().splitlines()]
    follow_ups = [(c["question"], c["turns"]) for c in cases if "turns" in c]
    assert follow_ups == [(FOLLOW_UP, [FIRST_Q]), (FOLLOW_UP, [ANSWERED_Q]),
                          ("show me an example", [ANSWERED_Q, FOLLOW_UP])]
    deploy_case = next(c for c in cases if c.get("turns") == [FIRST_Q])
    assert deploy_case["should_refuse"] is False
    assert deploy_case["expected_urls"] == sorted({c["url"] for c in deploy_next["citations"]})
    assert [c["question"] for c in cases if "turns" not in c].count(FOLLOW_UP) == 0
    report = index.parent / "follow-up-report.json"
    ev = _run(["eval", "--cases", str(out), "--source", "guide", "--json", str(report)], index)
    assert ev.returncode == 0, ev.stderr
    assert json.loads(report.read_text())["follow_ups"]["cases"] == 3


#: the question log as written before an ask's conversation was logged (no thread_id, no turns)
OLD_LOG = """
CREATE TABLE questions (
  trace_id TEXT PRIMARY KEY, at REAL NOT NULL, question TEXT NOT NULL, source TEXT,
  refused INTEGER NOT NULL, low_confidence INTEGER NOT NULL, top_score REAL, supported REAL,
  warning TEXT, answer TEXT NOT NULL, citations TEXT NOT NULL, cited_urls TEXT NOT NULL);
CREATE TABLE feedback (
  id INTEGER PRIMARY KEY AUTOINCREMENT, trace_id TEXT NOT NULL, at REAL NOT NULL, rating TEXT NOT NULL,
  comment TEXT NOT NULL DEFAULT '', langsmith INTEGER NOT NULL DEFAULT 0);
INSERT INTO questions VALUES ('0123456789abcdef0123456789abcdef', 1, 'how is it retried?', NULL, 0, 0, 0.9, 1.0,
  NULL, 'Three times [1].', '[]', '["https://docs.example.org/zebra.md"]');
INSERT INTO feedback (trace_id, at, rating) VALUES ('0123456789abcdef0123456789abcdef', 2, 'down');
"""


def test_a_question_log_written_before_conversations_were_logged_reads_as_before(tmp_path):
    """A feedback.sqlite from before the log kept each ask's conversation: `feedback list` and `export`
    read it as they did (its asks have no earlier questions, so no `turns`) without changing it (a
    read-only storage can still be read); the next logged ask adds the columns and keeps the old rows."""
    import sqlite3

    from docs_rag_pipeline.records import Answer

    from .conftest import write_config

    cfg = write_config(tmp_path)
    (tmp_path / "docs").mkdir()
    config = load_config(cfg)
    Path(config.storage_path).mkdir(parents=True)
    db = feedback.db_path(config)
    with sqlite3.connect(db) as con:
        con.executescript(OLD_LOG)
    con.close()
    old_trace = "0123456789abcdef0123456789abcdef"
    listed = _run(["feedback", "list", "--json"], cfg)
    assert listed.returncode == 0, listed.stderr
    assert [(r["trace_id"], r["thread_id"], r["turns"]) for r in json.loads(listed.stdout)] == [(old_trace, None, [])]
    out = tmp_path / "drafts.jsonl"
    ex = _run(["feedback", "export", "--out", str(out)], cfg)
    assert ex.returncode == 0, ex.stderr
    old_case = json.loads(out.read_text())
    assert old_case["question"] == "how is it retried?" and "turns" not in old_case
    assert old_case["expected_urls"] == ["https://docs.example.org/zebra.md"]
    with sqlite3.connect(db) as con:  # read, not altered
        assert "turns" not in {r[1] for r in con.execute("PRAGMA table_info(questions)")}
    con.close()

    feedback.log_answer(config, "how is it retried?", Answer(answer="Three times.", citations=[], refused=True,
                                                             trace_id="a" * 32, thread_id="b" * 32),
                        turns=["which port does zebra use?"])
    feedback.record_feedback(config, "a" * 32, "down")
    log = {r["trace_id"]: r for r in feedback.questions(config)}
    assert (log[old_trace]["thread_id"], log[old_trace]["turns"]) == (None, [])
    assert (log["a" * 32]["thread_id"], log["a" * 32]["turns"]) == ("b" * 32, ["which port does zebra use?"])
    again = _run(["feedback", "export", "--out", str(out), "--force"], cfg)
    assert again.returncode == 0, again.stderr
    cases = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(c["question"], c.get("turns")) for c in cases] == [("how is it retried?", None),
                                                                ("how is it retried?", ["which port does zebra use?"])]


def test_export_ids_are_unique_under_time_ordered_trace_ids(tmp_path):
    """Under LangSmith tracing a trace id is a UUIDv7 (langsmith's ``uuid7``, as its RunTree makes them),
    whose first 8 hex digits are the same for every answer of about a minute. The case id was ``fb-`` and
    those 8 characters and the first six words, so two thumbs-down questions starting with the same six
    words, and the same follow-up in two conversations, got one id and ``docs-rag eval`` refused the
    exported file (``duplicate id``). Now every draft has an id of its own and the file loads."""
    from langsmith._internal._uuid import uuid7

    from docs_rag_pipeline.evaluation import load_cases
    from docs_rag_pipeline.records import Answer

    from .conftest import write_config

    cfg = write_config(tmp_path)
    (tmp_path / "docs").mkdir()
    config = load_config(cfg)
    Path(config.storage_path).mkdir(parents=True)
    asks = [("How do I configure the server for TLS?", []), ("How do I configure the server for logging?", []),
            ("how is it retried?", ["What does a converter do?"]), ("how is it retried?", ["What is a binding?"])]
    clock = str(uuid7())[:9]  # the top 32 bits of the millisecond clock, shared by the answers of ~65 s
    for question, turns in asks:
        t = clock + str(uuid7())[9:]
        feedback.log_answer(config, question, Answer(answer="not in the docs", citations=[], refused=True,
                                                     trace_id=t), turns=turns)
        feedback.record_feedback(config, t, "down")
    out = tmp_path / "drafts.jsonl"
    r = _run(["feedback", "export", "--out", str(out)], cfg)
    assert r.returncode == 0 and "wrote 4 draft eval case(s)" in r.stderr, r.stderr
    cases = load_cases(out)  # raised "duplicate id" before
    assert [(c.question, list(c.turns)) for c in cases] == asks
    assert len({c.id for c in cases}) == 4
    assert cases[0].id.startswith("fb-") and cases[0].id.endswith("-how-do-i-configure-the-server")


def test_an_export_names_the_source_and_exports_only_one_source_with_source(tmp_path):
    """The question log keeps the source each question was asked of, but the drafts did not say it and
    the export had no --source: ``docs-rag eval --cases drafts.jsonl --source alpha-docs`` scored the
    beta question against alpha's index, and a reviewer could not tell which ``eval/<source>.jsonl`` a
    draft belongs in. Now the note names the source and its cases file, and --source exports only the
    questions asked of that source (or of all sources)."""
    import uuid

    from docs_rag_pipeline.evaluation import load_cases
    from docs_rag_pipeline.records import Answer, Citation

    from .conftest import write_config

    cfg = write_config(tmp_path, sources="""
      - name: alpha-docs
        kind: local
        path: a
        base_url: https://alpha.example.org/
      - name: beta-docs
        kind: local
        path: b
        base_url: https://beta.example.org/
    """)
    config = load_config(cfg)
    Path(config.storage_path).mkdir(parents=True)
    for src, q in (("alpha-docs", "How do I install alpha?"), ("beta-docs", "How do I install beta?"),
                   (None, "Best temperature for sourdough bread?")):
        t = uuid.uuid4().hex
        url = f"https://{(src or 'x').split('-')[0]}.example.org/install"
        cit = Citation(n=1, chunk_id="c" + t[:6], url=url, title="Install", snippet="Run it.", score=0.9)
        feedback.log_answer(config, q, Answer(answer="Run it [1].", citations=[cit], refused=False, trace_id=t),
                            source=src)
        feedback.record_feedback(config, t, "down", "wrong page")
    out = tmp_path / "all.jsonl"
    r = _run(["feedback", "export", "--out", str(out)], cfg)
    assert r.returncode == 0, r.stderr
    notes = {c.question: c.note for c in load_cases(out)}
    assert "asked of source alpha-docs (its cases file: eval/alpha-docs.jsonl)" in notes["How do I install alpha?"]
    assert "asked of source beta-docs (its cases file: eval/beta-docs.jsonl)" in notes["How do I install beta?"]
    assert "asked of all sources" in notes["Best temperature for sourdough bread?"]

    alpha = tmp_path / "alpha.jsonl"
    r = _run(["feedback", "export", "--out", str(alpha), "--source", "alpha-docs"], cfg)
    assert r.returncode == 0 and "docs-rag eval --cases" in r.stderr and "--source alpha-docs" in r.stderr, r.stderr
    assert [c.question for c in load_cases(alpha)] == ["How do I install alpha?",
                                                       "Best temperature for sourdough bread?"]
    bad = _run(["feedback", "export", "--out", str(tmp_path / "x.jsonl"), "--source", "gamma"], cfg)
    assert bad.returncode == 2 and "unknown source 'gamma'" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_feedback_langsmith_refuses_is_sent_once_and_logged_with_its_answer(index):
    """A LangSmith that refused feedback at once (HTTP 500) held each POST /feedback the whole 5 s while
    langsmith tried again (up to 10 times, on after the request had answered), and the log said only
    "not confirmed within 5 s". The feedback is sent once now, and the log says what LangSmith answered."""
    from .local_http import LocalServer, QuietHandler

    posts: list[str] = []

    class Refusing(QuietHandler):
        def _handle(self):  # noqa: ANN202
            self.read_body()
            if self.path.endswith("/feedback"):
                posts.append(self.path)
                return self.send_json(500, {"detail": "feedback store unavailable"})
            self.send_json(200, {})

        do_GET = do_POST = do_PATCH = _handle

    with LocalServer(Refusing) as ls:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANGSMITH_")}
        env.update({"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "test-key", "LANGSMITH_ENDPOINT": ls.url})
        out = subprocess.run([sys.executable, "-c", SCRIPT, str(index)], capture_output=True, text=True, env=env,
                             timeout=180)
        sent_posts = len(posts)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1])["langsmith"] is False
    assert sent_posts == 1, sent_posts
    assert "LangSmith feedback failed for" in out.stderr and "500" in out.stderr, out.stderr
    assert "not confirmed" not in out.stderr
