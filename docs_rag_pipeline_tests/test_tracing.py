"""LangSmith tracing: runs reach a real local endpoint when configured; nothing is sent otherwise. Also: the
LLM client (built with a deadline for the whole answer) still honours the proxy the environment names."""

from __future__ import annotations

import json
import os
import subprocess
import sys


from .conftest import write_config
from .dagster_helpers import index_guide
from .fake_langsmith import LangSmithServer
from .fake_llm import ChatServer

SCRIPT = """
import json, sys
from docs_rag_pipeline import ask
from docs_rag_pipeline.tracing import flush
a = ask("What does a converter do in data binding?", config=sys.argv[1])
flush()
print(json.dumps({"trace_id": a.trace_id, "mode": a.mode, "refused": a.refused}))
"""


def _llm_config(tmp_path, base_url: str, *, model: str = "valid"):
    """The guide's config answering with an OpenAI-compatible server at ``base_url`` (``model`` picks
    what the fake server does)."""
    return write_config(tmp_path, extra=f"""
        llm:
          provider: openai
          model: {model}
          base_url: {base_url}
    """)


def _ask(cfg, env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGSMITH_")}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(cfg)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_traces_go_to_langsmith_only_when_configured(tmp_path):
    index_guide(tmp_path)
    with ChatServer() as llm, LangSmithServer() as ls:
        llm_cfg = _llm_config(tmp_path, llm.url)
        # not configured: an answer with a trace id, and nothing sent
        quiet = _ask(llm_cfg, {"LANGSMITH_ENDPOINT": ls.url})
        assert quiet["trace_id"] and quiet["mode"] == "llm" and ls.requests == []
        # configured: retrieval, generation and validation are runs of one trace
        traced = _ask(llm_cfg, {"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "test-key",
                                "LANGSMITH_ENDPOINT": ls.url})
        runs = ls.runs()
        names = {r.get("name") for r in runs}
        assert {"ask", "retrieve", "generate", "validate"} <= names, names
        assert {r["trace_id"] for r in runs if r.get("trace_id")} == {traced["trace_id"]}
        bodies = b"".join(body for _, _, body in ls.requests)
        assert b"What does a converter do" in bodies  # the question is recorded as an input
        assert b"Context(config=" not in bodies and b'"ctx"' not in bodies  # the process context is not


def test_a_langsmith_that_never_answers_costs_an_answer_nothing(tmp_path):
    """LangSmith's defaults (a 60 s read timeout, three attempts per batch, sender threads the
    interpreter waits for) kept ``docs-rag ask`` from exiting for six minutes after printing its
    answer when the endpoint accepted connections and never answered. The client has short timeouts,
    no retries and daemon threads now, and the exit waits at most FLUSH_AT_EXIT_SECONDS; the guard
    below is ten times the few seconds that takes, not a measurement."""
    from .test_cli import DOCS_RAG

    index_guide(tmp_path)
    with ChatServer() as llm, LangSmithServer(hang=True) as ls:
        cfg = _llm_config(tmp_path, llm.url)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANGSMITH_")}
        env.update({"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "test-key", "LANGSMITH_ENDPOINT": ls.url,
                    "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "dh")})
        out = subprocess.run([*DOCS_RAG, "ask", "What does a converter do in data binding?"], capture_output=True,
                             text=True, env=env, cwd=tmp_path, timeout=120)
        assert ls.requests  # the runs were sent, and never answered
    assert out.returncode == 0, out.stderr
    assert "[1]" in out.stdout


def test_the_llm_is_reached_through_the_proxy_the_environment_names(tmp_path):
    """The whole-answer deadline once came from an httpx transport of its own, and a client given a
    transport ignores HTTP(S)_PROXY: behind a proxy the LLM was "unreachable". The LLM here has a name
    that does not resolve; the local server plays the proxy (it gets the absolute URL) and answers."""
    index_guide(tmp_path)
    with ChatServer() as proxy:
        cfg = _llm_config(tmp_path, "http://llm.invalid/v1")
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANGSMITH_")
               and k.upper() not in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")}
        env["HTTP_PROXY"] = proxy.url.rsplit("/v1", 1)[0]
        out = subprocess.run([sys.executable, "-c", SCRIPT, str(cfg)], capture_output=True, text=True, env=env,
                             timeout=120)
        assert out.returncode == 0, out.stderr
        answer = json.loads(out.stdout.strip().splitlines()[-1])
        assert answer["mode"] == "llm" and not answer["refused"], answer
        assert proxy.requests  # through the proxy


def test_a_key_the_llm_server_repeats_never_reaches_a_trace(tmp_path):
    """The generate run records the error it raised, with its traceback (the errors chained under it too):
    a 401 that repeats the key it got ("Incorrect API key provided: sk-live-…") put the key in the trace.
    The run records the error, the key masked."""
    key = "sk-live-SECRET0123456789abcdef"
    index_guide(tmp_path)
    with ChatServer() as llm, LangSmithServer() as ls:
        cfg = _llm_config(tmp_path, llm.url, model="keyecho")
        answer = _ask(cfg, {"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "test-key",
                            "LANGSMITH_ENDPOINT": ls.url, "OPENAI_API_KEY": key})
        assert answer["mode"] == "extractive"
        runs = ls.runs()
        bodies = b"".join(body for _, _, body in ls.requests)
    assert "generate" in {r.get("name") for r in runs}
    assert b"Incorrect API key provided: ***" in bodies  # the error is recorded
    assert key.encode() not in bodies


def test_a_langsmith_key_the_endpoint_repeats_is_masked_in_the_log(tmp_path):
    """A LangSmith endpoint that refused the key and repeated it (``401 {"detail": "Invalid token lsv2_…"}``)
    had it printed whole by langsmith's own log lines (``Failed to multipart ingest runs: …``) on the stderr
    of ``docs-rag ask`` and in the server log, where the LLM's and the embedding server's keys are masked
    (secrets F7). The line is still logged, the key as ``***``."""
    key = "lsv2_pt_SECRET0123456789abcdef"
    index_guide(tmp_path)
    with LangSmithServer(refuse=True) as ls:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANGSMITH_")}
        env.update({"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": key, "LANGSMITH_ENDPOINT": ls.url})
        out = subprocess.run([sys.executable, "-c", SCRIPT, str(write_config(tmp_path))], capture_output=True,
                             text=True, env=env, timeout=120)
        assert ls.requests  # the runs were sent, and refused
    assert out.returncode == 0, out.stderr
    assert "Invalid token ***" in out.stderr, out.stderr  # langsmith's line, the key masked
    assert key not in out.stderr + out.stdout


STREAM_SCRIPT = """
import gc, json, sys
from docs_rag_pipeline.query import ask_stream
from docs_rag_pipeline.tracing import flush
gc.disable()  # nothing but closing the events may close the LLM stream
events = ask_stream("What does a converter do in data binding?", config=sys.argv[1])
if sys.argv[2] == "leave":  # the first piece of the answer, then the reader goes away
    for name, data in events:
        if name == "delta":
            break
    events.close()
    print("left", flush=True)
    sys.stdin.read()  # alive until the test has seen the LLM stream closed (or not): exiting would close it
else:
    final = [data for name, data in events if name == "final"][-1]
    flush()
    print(json.dumps({"trace_id": final["trace_id"], "mode": final["mode"], "refused": final["refused"]}))
"""


def test_a_streamed_answer_is_one_trace_and_leaving_it_still_closes_the_llm_stream(tmp_path):
    """A streamed answer (POST /ask with "stream": true, the chat page's) was no trace of its own: no ask
    and no generate run, retrieve and validate each a root trace, and its trace_id a random id naming no
    trace (the chat page's feedback went to no run). It is one trace now, as an answer not streamed, and a
    reader that leaves still closes the LLM stream at once (langsmith's generator wrapper alone leaves
    the function's generator to the garbage collector, which is off here)."""
    index_guide(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGSMITH_")}
    with ChatServer() as llm, LangSmithServer() as ls:
        env.update({"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "test-key", "LANGSMITH_ENDPOINT": ls.url})
        cfg = _llm_config(tmp_path, llm.url)
        out = subprocess.run([sys.executable, "-c", STREAM_SCRIPT, str(cfg), "all"], capture_output=True, text=True,
                             env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        final = json.loads(out.stdout.strip().splitlines()[-1])
        assert final["mode"] == "llm" and not final["refused"], final
        runs = ls.runs()
        assert {"ask", "retrieve", "generate", "validate"} <= {r.get("name") for r in runs}, runs
        assert {r["trace_id"] for r in runs if r.get("trace_id")} == {final["trace_id"]}
        bodies = b"".join(body for _, _, body in ls.requests)
        assert b'"usage_metadata"' in bodies and b'"answer"' in bodies  # generate's tokens, ask's answer

        endless = write_config(tmp_path, extra=f"""
            llm:
              provider: openai
              model: endless
              base_url: {llm.url}
              timeout_seconds: 30
        """)
        leaving = subprocess.Popen([sys.executable, "-c", STREAM_SCRIPT, str(endless), "leave"], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        try:
            assert leaving.stdout.readline().strip() == "left"
            assert llm.hung_up.acquire(timeout=60), "the LLM stream was left open after the reader left"
        finally:
            leaving.kill()
            leaving.wait()


def test_every_documented_value_of_langsmith_tracing_sends_the_trace(tmp_path):
    """answers.md: "true, 1 or yes turns tracing on". docs-rag read all three (and any case), langsmith's own
    check only "true": with 1, yes or TRUE every step was wrapped and LangSmith called, but no run was
    recorded, and each trace id was a random one that named no trace."""
    index_guide(tmp_path)
    with ChatServer() as llm, LangSmithServer() as ls:
        cfg = _llm_config(tmp_path, llm.url)
        for value in ("1", "yes", "TRUE"):
            ls.requests.clear()
            traced = _ask(cfg, {"LANGSMITH_TRACING": value, "LANGSMITH_API_KEY": "test-key",
                                "LANGSMITH_ENDPOINT": ls.url})
            runs = ls.runs()
            assert {"ask", "retrieve", "generate", "validate"} <= {r.get("name") for r in runs}, (value, runs)
            assert {r["trace_id"] for r in runs if r.get("trace_id")} == {traced["trace_id"]}, value


def test_a_langsmith_key_a_header_cannot_carry_is_named_once_never_shown(tmp_path):
    """A LANGSMITH_API_KEY pasted with a typographic dash failed every upload with an encoding error whose
    text is the whole header value: the key, in clear, five times per `docs-rag ask` (and per answer in the
    server log), and nothing said which variable was wrong. Tracing is off with one warning naming the
    variable; the key is not shown."""
    index_guide(tmp_path)
    key = "lsv2_pt_SECRET0123456789\u2014"
    with ChatServer() as llm, LangSmithServer() as ls:
        cfg = _llm_config(tmp_path, llm.url)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANGSMITH_")}
        env.update({"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": key, "LANGSMITH_ENDPOINT": ls.url})
        out = subprocess.run([sys.executable, "-c", SCRIPT, str(cfg)], capture_output=True, text=True, env=env,
                             timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1])["mode"] == "llm"
    assert "SECRET0123456789" not in out.stderr, out.stderr
    assert out.stderr.count("LANGSMITH_API_KEY") == 1, out.stderr
    assert "U+2014" in out.stderr


MANY_SCRIPT = """
import sys
from docs_rag_pipeline import ask
from docs_rag_pipeline.tracing import flush
for _ in range(4):
    assert ask("What does a converter do in data binding?", config=sys.argv[1]).mode == "llm"
    flush()
"""


def test_a_langsmith_that_fails_is_logged_once_not_per_answer(tmp_path):
    """A LangSmith answering 500 cost no answer anything, but langsmith logged a warning for every batch of
    runs (2-4 per answer, hundreds of characters each) and told the operator to "update to the latest
    version of LangSmith". Each kind of failure is logged once a minute now."""
    from .local_http import LocalServer, QuietHandler

    class Failing(QuietHandler):
        def _handle(self):  # noqa: ANN202
            self.read_body()
            self.send_json(500, {"detail": "internal error"})

        do_GET = do_POST = do_PATCH = _handle

    index_guide(tmp_path)
    with ChatServer() as llm, LocalServer(Failing) as ls:
        cfg = _llm_config(tmp_path, llm.url)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANGSMITH_")}
        env.update({"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "test-key", "LANGSMITH_ENDPOINT": ls.url})
        out = subprocess.run([sys.executable, "-c", MANY_SCRIPT, str(cfg)], capture_output=True, text=True, env=env,
                             timeout=180)
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("Failed to multipart ingest runs") == 1, out.stderr
    assert "update to the latest version" not in out.stderr and "Traceback" not in out.stderr, out.stderr
