"""``docs-rag``: ingest through Dagster, search, ask, serve, open the UI."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from . import __version__
from ._console import Terminated, sigterm_is_ctrl_c as _sigterm_is_ctrl_c
from .config import Config, ConfigError, StorageMissing, config_name, given_config, load_config
from .embedding import EmbeddingConfigError, EmbeddingError
from .evaluation import EvalCaseError
from .feedback import FeedbackStoreError, forget_old_questions
from .locks import LockTimeout
from .threads import ThreadsUnavailable, forget_expired_threads

DAGSTER_YAML = """# written by docs-rag; see docs/architecture.md
telemetry:
  enabled: false
# LanceDB writers are serialized by an OS file lock on the storage (docs_rag_pipeline/locks.py),
# not by a Dagster pool: a lock dies with its process, a pool slot of a killed run does not.
"""


def ensure_dagster_home(config: Config) -> Path:
    """DAGSTER_HOME (default: <storage>/dagster_home) with a dagster.yaml (telemetry off). A storage
    folder or Dagster home that cannot be written is a ConfigError naming it, before Dagster starts."""
    home = _dagster_home_path(config).resolve()
    _check_sqlite_url_safe(home, "DAGSTER_HOME" if os.environ.get("DAGSTER_HOME") else
                           "DAGSTER_HOME (unset: <storage>/dagster_home)")
    _check_writable(Path(config.storage_path), "storage", "point `storage` at another folder")
    _check_writable(home, "DAGSTER_HOME", "point DAGSTER_HOME at another folder")
    _check_tmpdir()
    cfg = home / "dagster.yaml"
    if not _has_content(cfg):  # none, or left empty by a full disk or a kill: Dagster's defaults, telemetry on
        from .files import atomic_write

        atomic_write(cfg, DAGSTER_YAML.encode())  # whole or not at all: a full disk leaves no empty file
    _check_dagster_home_files(home)
    os.environ["DAGSTER_HOME"] = str(home)
    _create_instance_once(home)
    return home


def _has_content(path: Path) -> bool:
    """Whether ``path`` is a file with something in it other than white space (an unreadable one counts:
    it is not ours to replace, and Dagster names it)."""
    try:
        return bool(path.read_bytes().strip())
    except FileNotFoundError:
        return False
    except OSError:
        return True


#: the SQLite files of a Dagster home's default storage that every ingest opens
DAGSTER_DBS = ("history/runs.db", "history/runs/index.db", "schedules/schedules.db")


def _check_dagster_home_files(home: Path) -> None:
    """A Dagster home damaged after its creation (a ``dagster.yaml`` edited with a YAML typo, as
    docs/deploy.md has users edit it; a SQLite file overwritten by a disk fault or a bad copy) is a
    ConfigError naming the file and the fix, not a Dagster traceback of 70 lines."""
    import sqlite3

    import yaml

    cfg = home / "dagster.yaml"
    try:
        yaml.safe_load(cfg.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        where = f" (line {exc.problem_mark.line + 1})" if getattr(exc, "problem_mark", None) else ""
        raise ConfigError(f"{cfg} is not valid YAML{where}: {' '.join(str(getattr(exc, 'problem', None) or exc).split())}; "
                          "fix it (docs/deploy.md), or move it away and run the command again (a default one is "
                          "written; it holds no index data)") from None
    except OSError:
        pass  # unreadable: Dagster says so itself
    for rel in DAGSTER_DBS:
        db = home / rel
        if not db.is_file():
            continue
        try:
            con = sqlite3.connect(db)
            try:
                con.execute("SELECT count(*) FROM sqlite_master").fetchone()
            finally:
                con.close()
        except sqlite3.DatabaseError as exc:  # "file is not a database", "database disk image is malformed"
            if isinstance(exc, sqlite3.OperationalError):  # locked, full disk, …: not a damage
                continue
            raise ConfigError(f"the Dagster storage file {db} is damaged ({exc}); move {home} away (it holds the "
                              "run history only; the index is not in it) and run the command again") from None


def _check_sqlite_url_safe(home: Path, what: str) -> None:
    """Dagster opens its SQLite files by URL (``sqlite:///<home>/history/runs.db``) without quoting the
    path: a '?' starts the URL's query and '%xx' is decoded, so the run history would go to another file
    (``/tmp/we`` for ``/tmp/we?ird``) and the instance fail with "no such table". Refused, with the fix."""
    bad = re.search(r"\?|%[0-9A-Fa-f]{2}", str(home))
    if bad:
        raise ConfigError(f"{what}: {home} holds {bad.group()!r}, which Dagster's SQLite storage reads as part of a "
                          "URL (its run history would be written to another file); set DAGSTER_HOME to a folder "
                          "whose path has no '?' and no '%' followed by two hex digits")


def _check_writable(folder: Path, what: str, other: str) -> None:
    """Create ``folder`` and a file in it (removed at once), or raise a ConfigError saying why not: an
    ingest writes its index, caches and run history there."""
    import tempfile

    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
            pass
    except OSError as exc:
        from .files import in_the_way

        if (way := in_the_way(folder)) is not None:  # mkdir's "File exists" is no permission problem
            raise ConfigError(f"{what}: {folder} cannot be made a folder: {way[0]}; {way[1]}, or {other}") from None
        raise ConfigError(f"{what}: {folder} cannot be written ({exc.strerror or exc}); an ingest writes its "
                          f"index, caches and run history there: make it writable or {other}") from None


def _check_tmpdir() -> None:
    """A TMPDIR that is missing or cannot be written: a ConfigError before any work. Python falls back
    to another temporary folder, LanceDB's writes do not: the ingest scanned, parsed and embedded
    everything, then failed at its write with a raw "Failed to create temp dir"."""
    tmp = os.environ.get("TMPDIR")
    if not tmp:
        return
    if not os.path.isdir(tmp) or not os.access(tmp, os.W_OK | os.X_OK):
        why = "does not exist" if not os.path.exists(tmp) else "is not a folder" if not os.path.isdir(tmp) \
            else "cannot be written"
        raise ConfigError(f"TMPDIR={tmp} {why}; the index writes its temporary files there: create it, "
                          "or unset TMPDIR")


def _create_instance_once(home: Path) -> None:
    """Create the Dagster instance's storage under a file lock: two processes creating a fresh
    sqlite storage at once both stamp its schema version, and the home is unusable after. The check
    for an existing storage is made under the lock too, and is a marker written when the creation is
    complete: ``runs.db`` exists from the start of a creation, so a process that saw it (or a kill
    that came before the rest) left a storage some tables short."""
    import fcntl

    done = home / ".created"  # written once the storage is whole: a kill mid-creation leaves none
    with open(home / ".create.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes (or the process dies)
        if done.exists():
            return
        from dagster import DagsterInstance

        existed = (home / "history" / "runs.db").exists()
        with DagsterInstance.get() as instance:  # creates and migrates the storage (a no-op when it exists)
            whole = not existed or _storage_whole(instance)
            if not whole:  # made before this marker, or half made by a kill: migrating may complete it
                with contextlib.redirect_stdout(sys.stderr):
                    instance.upgrade()
                whole = _storage_whole(instance)
            runs = instance.get_runs_count() if not whole else 0
        if not whole:
            if runs:
                raise ConfigError(f"the Dagster storage in {home} is damaged and holds {runs} runs; repair it "
                                  f"with `DAGSTER_HOME={home} dagster instance migrate`, or move {home} away "
                                  "(the index is not in it) and run the command again")
            # a creation killed half way: nothing in it but the half; it is made again from scratch
            stamp = time.strftime("%Y%m%dT%H%M%S")
            for part in ("history", "schedules"):
                if (home / part).exists():
                    (home / part).rename(home / f"{part}.half-made-{stamp}")
            print(f"[DAGSTER] {home}: its storage was left half made (a process killed while creating it); "
                  "made again", file=sys.stderr)
            with DagsterInstance.get():
                pass
        done.write_text("created\n")


def _storage_whole(instance) -> bool:  # noqa: ANN001 - a DagsterInstance
    """Whether the storage has what an ingest reads (runs, the event log's dynamic partitions)."""
    try:
        instance.get_runs_count()
        instance.get_dynamic_partitions("sources")
        return True
    except Exception:  # noqa: BLE001 - any failure here means: not whole
        return False


def _progress_to_stderr() -> None:
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(logging.Formatter("%(message)s"))
    lg = logging.getLogger("docs_rag_pipeline.progress")
    lg.handlers[:] = [h]
    lg.setLevel(logging.INFO)
    lg.propagate = False


class _ShortEventLogErrors:
    """stderr, where Dagster writes ``Exception while writing logger call to event log: <error>``
    whole when its run storage fails (on a full disk: SQLAlchemy's statement and kilobytes of
    parameters, for every log line): only the first line of each such message is kept."""

    PREFIX = "Exception while writing logger call to event log:"

    def __init__(self, stream) -> None:  # noqa: ANN001 - a text stream
        self._stream = stream

    def write(self, text: str) -> int:
        if text.startswith(self.PREFIX) and "\n" in text.rstrip("\n"):
            text = text.split("\n", 1)[0][:300] + "\n"
        return self._stream.write(text)

    def __getattr__(self, name: str):  # noqa: ANN204 - everything else is the stream's
        return getattr(self._stream, name)


def _disk_full_steps(failures: list[tuple[str, str]]) -> None:
    """Raise ENOSPC when a failed step's message says the disk is full or failing (a step's SQLite or
    LanceDB write): the ingest then ends as any full disk does, exit 74 and one line naming the
    storage folder, not as a broken page (exit 1)."""
    import errno

    for step, msg in failures:
        if _says_disk_full(msg):
            raise OSError(errno.ENOSPC, f"step {step} failed: {msg.splitlines()[0][:200]}")


def _sync_source_partitions(instance, config: Config, names: list[str]) -> list[str]:  # noqa: ANN001 - DagsterInstance
    """A partition for each source to ingest, and none for a source no longer configured (here nor in
    another config sharing the storage), as the sources sensor keeps them where no daemon runs it: of
    the sources this storage held or whose partition it added only. Returns the partitions deleted."""
    from .defs.partitions import add_source_partitions, sources_partitions
    from .shared_storage import SiblingConfigUnreadable, removable_partitions

    existing = list(instance.get_dynamic_partitions(sources_partitions.name))
    if [n for n in names if n not in existing]:
        add_source_partitions(instance, config, names)  # another process may add them at the same moment
    try:
        # only a source this storage held (its state folder is here) or whose partition it added: a
        # Dagster home that DAGSTER_HOME names may be shared by projects with other storage, whose
        # partitions are theirs
        return _delete_partitions(instance, removable_partitions(config, existing))
    except SiblingConfigUnreadable as exc:  # which partitions are its sources is unknown: delete none
        print(f"warning: {exc}", file=sys.stderr)
        return []


def _delete_partitions(instance, names: list[str]) -> list[str]:  # noqa: ANN001 - DagsterInstance
    """Delete the source partitions among ``names`` that exist, each with a line saying why; those deleted."""
    from .defs.partitions import sources_partitions

    existing = set(instance.get_dynamic_partitions(sources_partitions.name))
    deleted = []
    for name in names:
        if name in existing:
            instance.delete_dynamic_partition(sources_partitions.name, name)
            print(f"[{name}] its partition is deleted: the source is no longer in the config", file=sys.stderr)
            deleted.append(name)
    return deleted


def cmd_ingest(args: argparse.Namespace, config: Config) -> int:
    names = [args.source] if args.source else [s.name for s in config.sources]
    for n in names:
        config.source(n)  # a clear error for an unknown name, before Dagster starts
    if not names:
        print("no sources configured: add one under `sources:` in the config", file=sys.stderr)
        return 2
    if args.parallel < 1:
        raise ConfigError("--parallel must be at least 1")
    from .environment import check_environment

    check_environment()  # DOCS_RAG_* variables: a bad one is one line naming it, before Dagster starts
    ensure_dagster_home(config)
    _progress_to_stderr()
    _sigterm_is_ctrl_c()
    if not isinstance(sys.stderr, _ShortEventLogErrors):
        sys.stderr = _ShortEventLogErrors(sys.stderr)
    if args.parallel > 1 and len(names) > 1:
        return _ingest_parallel(args, config, names)
    from dagster import DagsterInstance, materialize

    from .defs.assets import ingest_assets
    from .defs.checks import ingest_checks
    from .defs.definitions import build_definitions
    from .defs.evaluation import eval_scores

    from .locks import source_lock

    resources = build_definitions(config).resources
    summaries: dict[str, dict] = {}
    failed = False
    locked_out: list[str] = []  # sources whose lock another process held past DOCS_RAG_LOCK_TIMEOUT
    with DagsterInstance.get() as instance:
        _fail_runs_of_dead_ingests(instance)
        _sync_source_partitions(instance, config, names)
        for name in names:
            print(f"[{name}] materializing scraped_pages → chunks → embeddings → lancedb_chunks", file=sys.stderr)
            selection = [*ingest_assets, *ingest_checks] + ([eval_scores] if args.eval else [])
            # one ingest of a source at a time, whatever started it: a second waits (and says for whom)
            try:
                with source_lock(config.storage_path, name, purpose=f"docs-rag ingest of {name}",
                                 log=lambda m, _n=name: print(f"[{_n}] {m}", file=sys.stderr, flush=True)):
                    result = materialize(selection, partition_key=name, instance=instance, resources=resources,
                                         raise_on_error=False, tags={"source": name, **_pid_tag()},
                                         run_config={**QUIET_CONSOLE,
                                                     "ops": {"scraped_pages": {"config": {"mode": args.mode}}}})
            except LockTimeout as exc:  # this source only: the others still run (as with --parallel)
                print(f"[{name}] error: {exc}; not refreshed, the other sources still run", file=sys.stderr)
                locked_out.append(name)
                summaries[name] = {"error": f"{exc}; not refreshed"}
                continue
            if _interrupted(result):  # SIGTERM or Ctrl-C during the run: stop here, no further source
                raise Terminated()
            mats = result.asset_materializations_for_node("lancedb_chunks")
            summary = mats[0].metadata["summary"].value if mats else {}
            if summary:
                summaries[name] = summary
            failed = _check_failures(name, result, summary) or failed
            if not result.success:
                failed = True
                errors: dict[str, list[str]] = {}
                _print_step_failures(result.all_events, lambda _key, _n=name: _n, config.lancedb_uri, errors)
                if not summary:  # nothing written: the --json object still names the source and why
                    summaries[name] = {"error": "; ".join(errors.get(name, [])) or
                                       f"run {result.run_id} failed; see `docs-rag ui`"}
                    continue
            if args.eval:
                _print_eval(name, result, sys.stderr if args.json else sys.stdout)
            _print_done(name, summary, result.run_id)
    if args.json:
        print(json.dumps(summaries, indent=2))
    return 75 if locked_out else 1 if failed else 0


#: Dagster's own console logger stays quiet: the progress lines are ours (stderr, prefixed by source)
QUIET_CONSOLE = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def _check_failures(name: str, result, summary: dict | None = None) -> bool:  # noqa: ANN001 - a Dagster result
    """Print the failed asset checks of a run; True when one of them has severity ERROR. A scan that
    stopped early is also put in ``summary`` (the ``--json`` counts) as ``stopped_early``."""
    from dagster import AssetCheckSeverity

    failed = False
    for check in result.get_asset_check_evaluations():
        if not check.passed and check.asset_check_key.name == "scan_completed" and summary:
            summary["stopped_early"] = check.metadata["stopped_early"].value
        if not check.passed:
            failed = failed or check.severity == AssetCheckSeverity.ERROR
            why = f"{check.description} " if check.description else ""
            print(f"[{name}] check {check.asset_check_key.name} failed: {why}"
                  f"{ {k: v.value for k, v in check.metadata.items()} }", file=sys.stderr)
    return failed


def _print_step_failures(events, source_of, lancedb_uri: str | None = None,  # noqa: ANN001
                         errors: dict[str, list[str]] | None = None) -> set[str]:
    """Print each failed step (DagsterEvents; ``source_of``: step key → source) with its error's message
    (one plain line for an object store's failure), and the way back when the message says the index is
    damaged; the sources whose steps failed. ``errors`` gets each source's lines (for ``--json``)."""
    from .store import object_store_failure

    failed: set[str] = set()
    messages: list[tuple[str, str]] = []
    crashed = {}  # step key → how its process ended, from the executor's engine event before the failure
    for ev in events:
        if ev.is_step_failure:
            err = ev.step_failure_data.error
            msg = (err.cause or err).message.strip() if err else ev.message
            if err and err.cls_name == "ChildProcessCrashException":  # its message is only the class name
                msg = _crash_message(crashed.get(ev.step_key))
            # our own errors' messages say what is wrong and how to fix it: without the class's module path
            msg = _OUR_ERROR.sub("", msg or "", count=1)
            name = source_of(ev.step_key)
            failed.add(name)
            messages.append((ev.step_key, msg or ""))
            plain = object_store_failure(msg or "", lancedb_uri) if lancedb_uri else None
            print(f"[{name}] step {ev.step_key} failed: {plain or msg}", file=sys.stderr)
            if errors is not None:
                errors.setdefault(name, []).append(f"step {ev.step_key} failed: {plain or msg}")
            hint = None if plain else damaged_index_hint(msg or "", lancedb_uri)
            if hint:
                print(f"[{name}] {hint}", file=sys.stderr)
        elif ev.is_engine_event and ev.step_key and (m := _CHILD_EXIT.search(ev.message or "")):
            crashed[ev.step_key] = int(m.group(1) or -int(m.group(2)))
    _disk_full_steps(messages)
    return failed


#: Dagster's message of an exception of this package starts with its class's dotted path
_OUR_ERROR = re.compile(r"^docs_rag_pipeline(?:\.\w+)+: ")
#: the multiprocess executor's word on a step process that died (dagster._utils.get_run_crash_explanation)
_CHILD_EXIT = re.compile(r"child process for step \S+ (?:unexpectedly exited with code (-?\d+)|was terminated by "
                         r"signal (\d+))")


def _crash_message(code: int | None) -> str:
    """A step whose process died without a word (``--parallel``), in plain words with what to do."""
    import signal

    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if -code == signal.SIGKILL:
            return (f"the step's process was killed ({name}), most often by the out-of-memory killer: give the "
                    "machine or container more memory, or run fewer steps at once (a lower --parallel); what was "
                    "stored is kept, and the next ingest redoes the step")
        return f"the step's process was stopped by {name}; what was stored is kept, and the next ingest redoes the step"
    how = f"exited with code {code}" if code is not None else "died"
    return f"the step's process {how} without reporting an error; what was stored is kept, and the next ingest " \
           "redoes the step"


def _print_done(name: str, summary: dict, run_id: str) -> None:
    print(f"[{name}] done in {summary.get('seconds')} s: {summary.get('chunks_total')} chunks indexed, "
          f"{summary.get('chunks_embedded')} embedded, {summary.get('chunks_cached')} from cache, "
          f"{summary.get('rows_written')} rows written, {summary.get('rows_deleted')} deleted "
          f"(run {run_id})", file=sys.stderr)


def _print_eval(name: str, result, out) -> None:  # noqa: ANN001 - dagster.ExecuteInProcessResult, a file
    """The eval_scores metrics of an ``ingest --eval`` run (stdout; stderr with ``--json``)."""
    mats = result.asset_materializations_for_node("eval_scores")
    if not mats:
        print(f"[{name}] eval_scores did not run (see the failed step above)", file=out)
        return
    meta = {k: v.value for k, v in mats[0].metadata.items()}
    if not meta.get("cases"):
        print(f"[{name}] eval: no golden cases ({meta.get('cases_file')}); nothing evaluated", file=out)
        return
    print(f"[{name}] eval: {meta['cases']} cases", file=out)
    for key in ("retrieval_recall_at_1", "retrieval_recall_at_5", "retrieval_mrr_at_10", "refusal_accuracy",
                "citations_precision", "citations_supported", "keyword_coverage"):
        if key in meta:
            print(f"  {key:<24} {float(meta[key]):.3f}", file=out)


def cmd_feedback(args: argparse.Namespace, config: Config) -> int:
    from . import feedback

    if args.action == "export":
        if args.source:
            config.source(args.source)  # an unknown name is an error naming the configured ones
        out = Path(args.out)
        if out.is_dir():
            raise ValueError(f"--out {out} is a folder; name the cases file to write, e.g. "
                             f"--out {out / 'feedback-drafts.jsonl'}")
        if out.exists() and not args.force:  # reviewed drafts or a golden set: never replaced without a word
            raise ValueError(f"--out {out} exists (it may hold cases you reviewed); name a new file with --out, "
                             "or pass --force to replace it")
        try:
            cases = feedback.export_cases(config, out, source=args.source)
        except OSError as exc:
            if _disk_failure(exc):  # the disk of --out, not the storage's (the question log is read, not written)
                raise OSError(exc.errno, exc.strerror, str(out)) from exc
            raise ValueError(f"--out {out} cannot be written: {exc.strerror or exc}"
                             + (f" ({exc.filename})" if exc.filename else "")) from None
        _note_skipped(cases, config)
        if not cases:  # no file: `eval --cases` refuses a file of no cases, and it would block the next export
            print(f"nothing to export: no thumbs-down feedback yet"
                  + (f" on questions asked of {args.source}" if args.source else "")
                  + f"; {out} was not written", file=sys.stderr)
            return 0
        print(f"wrote {len(cases)} draft eval case(s) from thumbs-down feedback to {out}; review each `note`, "
              f"then run: docs-rag eval --cases {out} --source {args.source or 'NAME'}", file=sys.stderr)
        return 0
    rows = feedback.feedback_rows(config)
    _note_skipped(rows, config)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no feedback yet")
    for r in rows:
        print(f"{r['rating']:>4}  {r['trace_id']}  {_one_line(r['question'])}"
              + (f"  — {_one_line(r['comment'])}" if r["comment"] else ""))
    return 0


def _note_skipped(rows: Any, config: Config) -> None:
    """A ``warning:`` line on stderr for the damaged rows of the question log that were left out."""
    note = rows.skipped_note(config)
    if note:
        print(f"warning: {note}", file=sys.stderr)


#: the characters that break a line (those of ``str.splitlines``) and the tab, as a Python string
#: literal writes them
_LINE_BREAKS = {c: ascii(c)[1:-1] for c in "\n\r\t\v\f\x1c\x1d\x1e\x85\u2028\u2029"}
_LINE_BREAK = re.compile("[" + "".join(_LINE_BREAKS) + "]")


def _one_line(text: str) -> str:
    """``text`` typed by anyone (a question, a comment) on one line, each line break and tab escaped
    (``\\n``): printed as they are, they would start lines that read as the command's own records."""
    return _LINE_BREAK.sub(lambda m: _LINE_BREAKS[m.group()], text)


def cmd_gaps(args: argparse.Namespace, config: Config) -> int:
    from . import feedback, gaps
    from .context import get_context

    if args.source:
        config.source(args.source)
    rows, left_out = feedback.gap_questions(config, source=args.source)
    _note_skipped(rows, config)
    report = gaps.gap_report(rows, get_context(config.path).embedder.embed) if rows else []
    if args.json:
        print(json.dumps(report, indent=2))
        if left_out:
            print(f"note: {gaps.left_out_note(len(rows), left_out)}", file=sys.stderr)
    else:
        print(gaps.markdown_table(report, left_out=left_out))
    return 0


#: the tag that finds the run of one ``docs-rag ingest --parallel`` (its id is not known before it ends)
INGEST_TAG = "docs_rag/ingest"
#: ``<host>:<pid>`` of the ``docs-rag ingest`` process a run runs in (in process, or its launcher)
PID_TAG = "docs_rag/pid"


def _this_machine() -> str:
    """The host name, its boot and the PID namespace where there are (two containers, or two hosts,
    may share a host name and a Dagster home, not their processes)."""
    import socket

    try:
        ns = os.readlink("/proc/self/ns/pid")  # 'pid:[4026531836]'
    except OSError:
        ns = ""
    try:  # the root PID namespace has the same number on every Linux host: the boot tells hosts apart
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        boot = ""
    return f"{socket.gethostname()}{'/' + boot if boot else ''}{'/' + ns.removeprefix('pid:') if ns else ''}"


def _pid_tag() -> dict[str, str]:
    return {PID_TAG: f"{_this_machine()}:{os.getpid()}"}


#: ``<host>:<pid>:<run id>`` of the process a run runs in, written by the run's first step (see
#: :func:`tag_run_worker`); the run id tells it from a copy a re-execution took from its parent's tags
WORKER_TAG = "docs_rag/worker"


def _is_self_or_ancestor(pid: int) -> bool:
    """``pid`` is this process or one it descends from (a step process of the multiprocess executor is
    the run worker's child, or its forkserver's); False where /proc cannot tell."""
    me = os.getpid()
    for _ in range(8):
        if me == pid:
            return True
        try:
            stat = Path(f"/proc/{me}/stat").read_text()
            me = int(stat[stat.rindex(")") + 2:].split()[1])  # the field after the state: the parent's pid
        except (OSError, ValueError, IndexError):
            return False
        if me <= 1:
            return False
    return False


def tag_run_worker(instance, run) -> None:  # noqa: ANN001 - DagsterInstance, DagsterRun
    """Tag ``run`` with the machine and pid of its worker (the process that started it, its RUN_START
    event's), when that process is this one or an ancestor: a run the UI or the daemon launched then
    carries what :func:`_fail_runs_of_dead_ingests` needs to tell a killed run from a live one. A step on
    another machine (a Kubernetes or Celery executor) is not the worker's descendant and writes nothing."""
    from dagster import DagsterEventType

    if run.tags.get(WORKER_TAG, "").endswith(f":{run.run_id}") or PID_TAG in run.tags and \
            "dagster/parent_run_id" not in run.tags:
        return  # already named (by a step before, or by docs-rag ingest, which runs it in its own process)
    try:
        records = instance.get_records_for_run(run.run_id, of_type=DagsterEventType.RUN_START, limit=1).records
        pid = records[0].event_log_entry.dagster_event.pid if records else None
        if pid and _is_self_or_ancestor(pid):
            instance.add_run_tags(run.run_id, {WORKER_TAG: f"{_this_machine()}:{pid}:{run.run_id}"})
    except Exception:  # noqa: BLE001 - a tag is bookkeeping: never fail a step for it
        return


def _dead_worker(run, host: str) -> str | None:  # noqa: ANN001 - DagsterRun
    """The pid of ``run``'s process when it is on this machine (and PID namespace) and gone; else None."""
    at, _, pid = run.tags.get(PID_TAG, "").rpartition(":")
    if at != host or not pid.isdecimal() or "dagster/parent_run_id" in run.tags or run.parent_run_id:
        # a re-execution (the UI, the retry daemon) copies its parent's tags, the pid tag too; the
        # worker tag names its run
        at, pid, rid = (run.tags.get(WORKER_TAG, "").rsplit(":", 2) + ["", "", ""])[:3]
        if at != host or not pid.isdecimal() or rid != run.run_id:
            return None
    try:
        os.kill(int(pid), 0)
        return None  # alive (or its pid taken by another process: left as it is)
    except ProcessLookupError:
        return pid
    except PermissionError:  # a process of another user holds that pid now
        return None


def _fail_runs_of_dead_ingests(instance) -> None:  # noqa: ANN001 - DagsterInstance
    """Mark failed the runs still ``STARTED`` whose process, on this machine (and in this PID namespace),
    is gone (killed by SIGKILL or the OOM killer, or its machine restarted): a ``docs-rag ingest``
    (tagged ``docs_rag/pid``) or a run the UI or the daemon launched (tagged ``docs_rag/worker`` by its
    first step). In-process runs and Dagster's default run launcher have no run monitoring, so the UI
    showed them, and their partitions, in progress forever, and ``prune`` kept their files."""
    from dagster import DagsterRunStatus, RunsFilter

    host = _this_machine()
    for run in instance.get_runs(filters=RunsFilter(statuses=[DagsterRunStatus.STARTED, DagsterRunStatus.STARTING]),
                                 limit=1000):
        pid = _dead_worker(run, host)
        if pid is None:
            continue
        what = "docs-rag ingest process" if PID_TAG in run.tags and WORKER_TAG not in run.tags else "run worker process"
        instance.report_run_failed(run, message=f"its {what} (pid {pid}) is gone: killed (SIGKILL, out of memory, "
                                                "its UI or daemon killed with it) before the run ended")
        print(f"run {run.run_id}: its {what} (pid {pid}) is gone; marked failed", file=sys.stderr)


def _ingest_parallel(args: argparse.Namespace, config: Config, names: list[str]) -> int:
    """``--parallel N``: one Dagster run of the ``refresh_all_sources`` job for all the sources, under
    the multiprocess executor with at most N steps at a time, each step in a process of its own: one
    source is scanned while another is parsed or embedded. The LanceDB writes do not overlap: the
    steps take the storage's writer lock (locks.py) around the embedding-cache and index writes.
    Then a short run per refreshed source for the ingest checks (and ``eval_scores`` with ``--eval``),
    which the one-source-at-a-time ingest runs in its own run."""
    import uuid

    from dagster import AssetKey, DagsterInstance, build_reconstructable_job, execute_job

    from .defs.all_sources import step_labels

    print(f"ingesting {len(names)} sources in one Dagster run of refresh_all_sources, up to {args.parallel} steps "
          f"at a time, each in its own process; LanceDB writes wait for the writer lock "
          f"({config.storage_path / 'locks'})", file=sys.stderr, flush=True)
    job = build_reconstructable_job("docs_rag_pipeline.defs.definitions", "refresh_all_sources_job",
                                    reconstructable_kwargs={"config_path": str(config.path) if config.path else None})
    # forkserver: a step process forks from a server that imported the project once (spawn imports
    # Dagster, LanceDB and the project again for every step)
    run_config = {**QUIET_CONSOLE, "ops": {"source_names": {"config": {"sources": names}},
                                           "scan_source": {"config": {"mode": args.mode}}},
                  "execution": {"config": {"max_concurrent": args.parallel, "start_method": {"forkserver": {}}}}}
    token = uuid.uuid4().hex
    label_to_name = {label: name for name, label in step_labels(names).items()}
    tail_done = threading.Event()
    tail = threading.Thread(target=_print_run_log, daemon=True,
                            kwargs={"tags": {INGEST_TAG: token}, "done": tail_done,
                                    "source_of": lambda key: label_to_name.get(_mapping_key(key))})
    tail.start()
    summaries: dict[str, dict] = {}
    with DagsterInstance.get() as instance:
        _fail_runs_of_dead_ingests(instance)
        _sync_source_partitions(instance, config, names)
        try:
            with _stderr_without_dagster_debug():
                try:
                    result = execute_job(job, instance=instance, run_config=run_config,
                                         tags={INGEST_TAG: token, "sources": ",".join(names), **_pid_tag()})
                finally:
                    tail_done.set()
                    tail.join(timeout=60)
        except KeyboardInterrupt:
            raise Terminated() from None
        with result:
            if _interrupted(result):
                raise Terminated()
            if result.success:
                _forget_run_outputs(config, result.run_id)
            events = result.all_events
            for ev in events:
                mat = ev.event_specific_data.materialization if ev.is_step_materialization else None
                if mat is not None and mat.asset_key == AssetKey("lancedb_chunks"):
                    summaries[mat.partition] = mat.metadata["summary"].value
            errors: dict[str, list[str]] = {}
            failed = _print_step_failures(events, lambda key: label_to_name.get(_mapping_key(key), key),
                                          config.lancedb_uri, errors)
            if not result.success and not failed:
                failed = {n for n in names if n not in summaries}
                print(f"run {result.run_id} failed before its steps did: see `docs-rag ui`", file=sys.stderr)
            for name in names:  # a source with nothing written: the --json object still names it and why
                if name not in summaries and (name in failed or not result.success):
                    summaries[name] = {"error": "; ".join(errors.get(name, [])) or
                                       f"run {result.run_id} failed before its steps did; see `docs-rag ui`"}
            for name in names:
                if "error" in summaries.get(name, {}):
                    continue
                if name in summaries and name not in failed and _after_run(args, config, name, instance,
                                                                           summaries[name], result.run_id):
                    failed.add(name)
                if name in summaries:
                    _print_done(name, summaries[name], result.run_id)
    if args.json:
        print(json.dumps(summaries, indent=2))
    for name in sorted(set(names) & failed):
        print(f"[{name}] ingest failed", file=sys.stderr)
    return 1 if failed else 0


#: a line of Dagster's default console logger at DEBUG, as a step process prints it while it starts
#: (before the run's logger config applies): ``2026-01-02 03:04:05 +0000 - dagster - DEBUG - …``
DAGSTER_DEBUG_LINE = re.compile(rb"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4} - dagster - DEBUG - ")


@contextlib.contextmanager
def _stderr_without_dagster_debug() -> Iterator[None]:
    """While the block runs, this process's stderr, and so that of every step process it starts, goes
    through a pipe that drops :data:`DAGSTER_DEBUG_LINE` lines (``STEP_WORKER_STARTED`` for each
    step) and passes everything else on, in order: the progress lines and any traceback."""
    end = b"\0docs-rag: end of the run's stderr\n"
    sys.stderr.flush()
    real = os.dup(2)
    read, write = os.pipe()
    os.dup2(write, 2)
    os.close(write)

    def pump() -> None:
        with os.fdopen(read, "rb") as pipe:
            for line in pipe:
                if line == end:
                    return
                if not DAGSTER_DEBUG_LINE.match(line):
                    os.write(real, line)

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        # the step processes have ended; a forkserver may keep the pipe open, so the pump stops at a
        # marker written after everything else rather than at the end of the pipe
        os.write(2, end)
        os.dup2(real, 2)
        thread.join()  # before closing `real`: the pump may still be passing lines on to it
        os.close(real)


def _forget_run_outputs(config: Config, run_id: str) -> None:
    """Delete what the steps of a successful run handed each other (every page's text and every
    vector, per run): nothing re-executes a run that succeeded. A failed run's are kept, for
    re-execution from the failed step in the UI. Local folders only (expire object-store ones with
    a lifecycle rule)."""
    import shutil

    from .defs.definitions import run_io_folder

    folder = run_io_folder(config)
    if "://" not in folder:
        shutil.rmtree(Path(folder) / run_id, ignore_errors=True)


def _mapping_key(step_key: str) -> str:
    """``scan_source[guide]`` → ``guide``."""
    return step_key.rpartition("[")[2].rstrip("]")


def _after_run(args: argparse.Namespace, config: Config, name: str, instance,  # noqa: ANN001
               summary: dict, run_id: str) -> bool:
    """The ingest checks of one source refreshed by ``refresh_all_sources`` run ``run_id`` (and
    ``eval_scores`` with ``--eval``), in a run of that source's partition that reads the config as run
    ``run_id`` did; True when a check with severity ERROR failed."""
    from dagster import AssetSelection, materialize

    from .defs.assets import ingest_assets, lancedb_chunks, scraped_pages
    from .defs.checks import ingest_checks
    from .defs.definitions import build_definitions
    from .defs.evaluation import eval_scores
    from .defs.resources import CONFIG_OF_TAG

    selection = AssetSelection.checks_for_assets(lancedb_chunks, scraped_pages)
    if args.eval:
        selection = selection | AssetSelection.assets(eval_scores)
    # the partition as a tag: materialize() wants a partition_key to belong to a selected asset, and
    # the checks alone select none
    result = materialize([*ingest_assets, *ingest_checks, eval_scores], selection=selection, instance=instance,
                         resources=build_definitions(config).resources, raise_on_error=False,
                         tags={"source": name, "dagster/partition": name, CONFIG_OF_TAG: run_id, **_pid_tag()},
                         run_config=QUIET_CONSOLE)
    if _interrupted(result):
        raise Terminated()
    failed = _check_failures(name, result, summary)
    if not result.success:
        failed = bool(_print_step_failures(result.all_events, lambda _key: name, config.lancedb_uri)) or failed
    if args.eval:
        _print_eval(name, result, sys.stderr if args.json else sys.stdout)
    return failed


def _print_run_log(*, tags: dict[str, str], done: threading.Event, source_of) -> None:  # noqa: ANN001
    """Print the log lines of the run tagged ``tags`` as its steps log them, from the run's event log,
    until ``done`` is set and all are printed. Each line starts with its source (``[guide] …``): the
    steps' progress lines do, Dagster's own (``Dependencies for step … failed``) get the source of
    their step (``source_of(step key)``)."""
    from dagster import DagsterInstance, RunsFilter

    with DagsterInstance.get() as instance:
        run_id, cursor = None, None
        while True:
            finished = done.is_set()  # read before the last poll, so nothing logged before it is missed
            if run_id is None:
                runs = instance.get_runs(filters=RunsFilter(tags=tags), limit=1)
                run_id = runs[0].run_id if runs else None
            if run_id is not None:
                conn = instance.get_records_for_run(run_id, cursor=cursor)
                cursor = conn.cursor
                for rec in conn.records:
                    entry = rec.event_log_entry
                    if entry.dagster_event is None and entry.level >= logging.INFO:
                        msg = entry.user_message
                        name = source_of(entry.step_key) if entry.step_key else None
                        print(msg if not name or msg.startswith(f"[{name}]") else f"[{name}] {msg}",
                              file=sys.stderr, flush=True)
                if conn.has_more:
                    continue
            if finished:
                return
            done.wait(0.3)


def _interrupted(result) -> bool:  # noqa: ANN001 - dagster.ExecuteInProcessResult
    """Whether a signal stopped the run: a step failed with DagsterExecutionInterruptedError, or the run
    did (the signal came while no step was running, e.g. while a step process was starting)."""
    def by_signal(error) -> bool:  # noqa: ANN001 - a SerializableErrorInfo or None
        return error is not None and "DagsterExecutionInterruptedError" in (error.cls_name or "")

    return any((ev.is_step_failure and by_signal(ev.step_failure_data.error))
               or (ev.is_run_failure and by_signal(ev.event_specific_data.error)) for ev in result.all_events)


def _dagster_home_path(config: Config) -> Path:
    """The Dagster home the CLI uses: DAGSTER_HOME, else ``<storage>/dagster_home``."""
    return Path(os.environ.get("DAGSTER_HOME") or Path(config.storage_path) / "dagster_home")


@contextlib.contextmanager
def _existing_instance(config: Config) -> Iterator[Any]:
    """The DagsterInstance of the CLI's Dagster home, or None when no ingest has made one yet (a prune
    never creates it). ``cmd_prune``, its caller, has checked the home's files before deleting anything."""
    home = _dagster_home_path(config)
    if not (home / "dagster.yaml").is_file():
        yield None
        return
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(home)) as instance:
        yield instance


def _delete_source_partitions(config: Config, names: list[str]) -> list[str]:
    """Delete the Dagster partitions of ``names`` (sources about to be pruned, rows or only local state)
    in the Dagster home the CLI uses, when there is one; those deleted. Called before their state folder
    goes: after that, nothing tells a later ingest, the sensor or a prune that they were this storage's."""
    with _existing_instance(config) as instance:
        return _delete_partitions(instance, names) if instance is not None else []


def _forget_outputs_of_ended_runs(config: Config) -> None:
    """``docs-rag prune``: delete the step outputs (``<io folder>/runs/<run id>/``: every changed page's
    text and vectors) of the ``refresh_all_sources`` runs that ended (failed, killed and marked failed,
    canceled, succeeded) in the Dagster home the CLI uses. A folder whose run is in progress, or not
    in that home, is kept, and so is that of a run a re-execution in progress descends from (it loads the
    unchanged steps' outputs from there). A failed run cannot be re-executed from its failed step after this."""
    import shutil

    from .defs.definitions import run_io_folder

    where = str(run_io_folder(config))
    folder = Path(where)
    if "://" in where or not folder.is_dir():
        return
    from dagster import DagsterRunStatus

    ended = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
    gone = []
    with _existing_instance(config) as instance:
        if instance is None:
            return
        from dagster import RunsFilter

        _fail_runs_of_dead_ingests(instance)  # a run whose process was killed has ended: its files can go
        # the runs whose outputs a run not yet ended may load: its parent, and theirs, up to the root
        needed: set[str] = set()
        live = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
                DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
        for run in instance.get_runs(filters=RunsFilter(statuses=live)):
            parent = run.parent_run_id
            while parent and parent not in needed:
                needed.add(parent)
                above = instance.get_run_by_id(parent)
                parent = above.parent_run_id if above is not None else None
            if run.root_run_id:
                needed.add(run.root_run_id)
        for d in sorted(p for p in folder.iterdir() if p.is_dir()):
            run = instance.get_run_by_id(d.name)
            if run is not None and run.status in ended and d.name not in needed:
                shutil.rmtree(d, ignore_errors=True)
                gone.append(d.name)
    if gone:
        print(f"[PRUNE] step outputs of {len(gone)} ended refresh_all_sources run(s) deleted from {folder} "
              f"({', '.join(gone[:5])}{' …' if len(gone) > 5 else ''})", file=sys.stderr)


def cmd_prune(args: argparse.Namespace, config: Config) -> int:
    from .context import get_context
    from .refresh import prune

    home = _dagster_home_path(config)
    if (home / "dagster.yaml").is_file():  # damaged: said before anything is deleted
        _check_dagster_home_files(home)

    partitions: list[str] = []
    pruned = prune(get_context(config.path), log=lambda m: print(m, file=sys.stderr),
                   before_delete=lambda names: partitions.extend(_delete_source_partitions(config, names)))
    with _existing_instance(config) as instance:  # a removed source that never scanned: no rows, no folder
        if instance is not None:
            partitions.extend(_sync_source_partitions(instance, config, []))
    _forget_outputs_of_ended_runs(config)
    forgotten = forget_old_questions(config)
    if forgotten:
        print(f"[PRUNE] question log: {forgotten} asks older than api.keep_questions_days "
              f"({config.api.keep_questions_days}) deleted", file=sys.stderr)
    try:
        expired = forget_expired_threads(config)
    except ThreadsUnavailable as exc:
        print(f"error: the conversation store cannot be trimmed ({exc}); check the file, its folder's permissions "
              "and the disk, then run the command again", file=sys.stderr)
        return 74
    if expired:
        print(f"[PRUNE] conversations: {expired} expired (no question for api.thread_ttl_minutes, "
              f"{config.api.thread_ttl_minutes}) deleted", file=sys.stderr)
    if args.json:
        print(json.dumps({"rows_pruned": pruned, "partitions_deleted": partitions}, indent=2))
    elif not pruned and not partitions:
        print("nothing to prune: every indexed source is configured", file=sys.stderr)
    return 0


def cmd_versions(args: argparse.Namespace, config: Config) -> int:
    from .context import get_context
    from .refresh import version_listing

    ctx = get_context(config.path)
    rows, unreadable = version_listing(ctx)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no restorable versions of {ctx.chunks.name} yet: each `docs-rag ingest` that changes the index "
              "records one", file=sys.stderr)
        return 0
    print(f"{'VERSION':>9}  {'TIME (UTC)':<20} {'ACTION':<8} {'SOURCE':<16} {'WRITTEN':>8} {'DELETED':>8} "
          f"{'CHUNKS':>7}  DETAIL")
    for r in rows:
        mark = "*" if r["current"] else " " if r["readable"] else "!"
        print(f"{mark}{r['version']:>8}  {r['time'].replace('+00:00', 'Z'):<20} {r['action']:<8} "
              f"{r['source'] or '-':<16} {r['rows_written']:>8} {r['rows_deleted']:>8} {r['chunks_total']:>7}  "
              f"{'' if r['readable'] else 'CANNOT BE READ '}{r['detail'] or ''}")
    if unreadable:
        print(f"\nwarning: version {ctx.chunks.version()} of table {ctx.chunks.name}, served now, cannot be read: a "
              f"file of it is missing or damaged ({unreadable}). `docs-rag restore VERSION` brings back one above "
              "that reads (! = cannot be read either); or rebuild the table: delete "
              f"{config.lancedb_uri.rstrip('/')}/{ctx.chunks.name}.lance and run `docs-rag ingest`", file=sys.stderr)
    elif rows[0]["current"]:
        print(f"\n* = served now (table {ctx.chunks.name}); `docs-rag restore VERSION` brings back another",
              file=sys.stderr)
    else:
        print(f"\nwarning: table {ctx.chunks.name} serves version {ctx.chunks.version()}, whose write could not be "
              "logged (a full disk, or the process was killed after the write); none above is served now. "
              "`docs-rag restore VERSION` brings back one of them; the next `docs-rag ingest` (or `docs-rag prune`) "
              "logs it", file=sys.stderr)
    return 0


def cmd_restore(args: argparse.Namespace, config: Config) -> int:
    from .context import get_context
    from .refresh import parse_version, restore

    res = restore(get_context(config.path), parse_version(args.version), log=lambda m: print(m, file=sys.stderr))
    if args.json:
        print(json.dumps(res, indent=2))
    elif res["changed"]:
        undo = f"`docs-rag restore {res['previous']}` undoes this, " if res["previous"] is not None else ""
        print(f"restored version {res['restored']} as version {res['version']} ({res['chunks_total']} chunks); "
              f"{undo}the next `docs-rag ingest` re-applies source changes")
    if str(res.get("version_tag", "")).startswith("failed"):
        print(f"warning: version {res['version']} is served but could not be logged ({res['version_tag']}); "
              "`docs-rag versions` will not list it. Free space in the storage folder; the next ingest that "
              "changes the index logs its version", file=sys.stderr)
    return 0


def _print_hits(hits) -> None:  # noqa: ANN001
    if not hits:
        print("no results")
    for i, h in enumerate(hits, 1):
        text = " ".join(h.text.split())
        print(f"{i}. {h.title}{' › ' + ' › '.join(h.headings) if h.headings else ''}\n   {h.url}\n"
              f"   {text[:200]}{'…' if len(text) > 200 else ''}\n")


def _filters(raw: list[str] | None) -> dict | None:
    if not raw:
        return None
    out: dict[str, str] = {}
    for item in raw:
        if "=" not in item:
            raise ConfigError(f"--filter {item!r}: expected KEY=VALUE, e.g. --filter section=guides")
        k, v = item.split("=", 1)
        if k.strip() in out:  # a dict keeps one value: the last one was the filter, silently
            raise ConfigError(f"--filter {k.strip()}: the key is given twice ({k.strip()}={out[k.strip()]}, "
                              f"{item.strip()}); give each key once: the --filter options must all match, and "
                              "a key matches one value here (the HTTP API and Python take a list of values, any of them)")
        out[k.strip()] = v.strip()
    return out


def _request(model: type, args: argparse.Namespace, text_field: str, config: Config):  # noqa: ANN202
    """The command's arguments, validated by the request model the HTTP API and MCP tools use."""
    from .context import get_context
    from .schemas import InputError, parse_request

    ctx = get_context(config.path)
    data = {text_field: getattr(args, text_field), "top_k": args.top_k, "source": args.source,
            "filters": _filters(args.filter)}
    if getattr(args, "thread", None) is not None:
        data["thread_id"] = args.thread
    try:
        return ctx, parse_request(model, {k: v for k, v in data.items() if v is not None}, ctx)
    except InputError as exc:
        msg = re.sub(r"^'filters\.([^']*)'", r"--filter \1", exc.message)  # 'filters.source': … → --filter source: …
        for name, flag in (("'top_k'", "--top-k"), ("'source'", "--source"), ("'filters'", "--filter"),
                           ("filters:", "--filter:"), ("filters.", "--filter "),
                           ("'thread_id'", "--thread")):
            msg = msg.replace(name, flag, 1) if msg.startswith(name) else msg
        raise InputError(exc.code, exc.field, msg, exc.status) from None


def cmd_search(args: argparse.Namespace, config: Config) -> int:
    from .query import search
    from .schemas import SearchRequest, resolve_top_k

    ctx, req = _request(SearchRequest, args, "query", config)
    hits = search(req.query, top_k=resolve_top_k(ctx, req), source=req.source, filters=req.filters, config=config.path)
    if hits.warning:  # the reranker failed: fused order
        print(f"warning: {hits.warning}", file=sys.stderr)
    if args.json:
        print(json.dumps([h.to_dict() for h in hits], indent=2))
    else:
        _print_hits(hits)
    return 0


def cmd_ask(args: argparse.Namespace, config: Config) -> int:
    from .answering.tables import for_terminal
    from .query import ask
    from .schemas import AskRequest, InputError, resolve_top_k

    ctx, req = _request(AskRequest, args, "question", config)
    try:
        ans = ask(req.question, thread_id=req.thread_id, top_k=resolve_top_k(ctx, req), source=req.source,
                  filters=req.filters, config=config.path)
    except InputError as exc:
        if exc.code != "threads_unavailable":
            raise
        # the storage, not the input, is at fault: its file and what is wrong (a server logs them instead)
        print(f"error: the conversation cannot be read ({exc.__cause__}); ask again without --thread to start "
              "a new one", file=sys.stderr)
        return 74  # EX_IOERR, as for a damaged question log or index
    if args.json:
        print(json.dumps(ans.to_dict(), indent=2))
        return 0
    print(for_terminal(ans.answer))  # tables lined up; code stays fenced
    if ans.citations:
        print()
        for c in ans.citations:
            print(f"[{c.n}] {c.title} — {c.url}")
    print(f"\ntrace: {ans.trace_id}")
    if ans.thread_id:
        print(f"thread: {ans.thread_id} (ask a follow-up with --thread {ans.thread_id})")
    if ans.warning:
        print(f"note: {ans.warning}", file=sys.stderr)
    return 0


def _port(value: str) -> int:
    """A TCP port for --port: 1 to 65535 (not folded modulo 65536, as a raw socket would)."""
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number; give one from 1 to 65535") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number; give one from 1 to 65535")
    return port


def cmd_serve(args: argparse.Namespace, config: Config) -> int:
    from .serve import workers

    if args.workers < 1 or args.threads < 1:
        raise ConfigError("--workers and --threads must be at least 1")
    try:
        workers.check_bind(args.host, args.port)
    except OSError as exc:
        raise ConfigError(str(exc)) from None
    path = str(config_name(args.config))  # the name, not its target: a ConfigMap update switches the link
    if args.workers == 1:
        workers.serve_waitress(path, args.host, args.port, args.threads)
    else:
        workers.serve_gunicorn(path, args.host, args.port, args.workers, args.threads)
    return 0


def cmd_mcp(args: argparse.Namespace, config: Config) -> int:
    from .serve.mcp import run_stdio

    print(f"docs-rag MCP server on stdio (config {config.path})", file=sys.stderr)
    run_stdio(str(config_name(args.config)))  # read through a link as it points at each call, as serve does
    return 0


def cmd_eval(args: argparse.Namespace, config: Config) -> int:
    from . import evaluation
    from .context import get_context
    from .sources.base import SourceError

    names = [args.source] if args.source else [s.name for s in config.sources]
    if args.cases and len(names) != 1:
        raise ConfigError("--cases needs --source NAME when more than one source is configured")
    if args.top_k is not None and args.top_k < 1:  # 0 used eval.top_k without a word
        raise ConfigError(f"--top-k: {args.top_k} is not a number of results; give 1 or more")
    if args.json:  # said before the run, not after it (its figures would be lost)
        out_file = Path(args.json)
        if out_file.is_dir():
            raise ConfigError(f"--json: {out_file} is a folder; give the path of a file to write, e.g. {out_file / 'eval.json'}")
        if not out_file.parent.is_dir():
            raise ConfigError(f"--json: the folder {out_file.parent} does not exist; create it or write elsewhere")
        if not os.access(out_file if out_file.exists() else out_file.parent, os.W_OK):
            raise ConfigError(f"--json: {out_file} cannot be written (permission denied); write elsewhere")
    # every cases file is read (and a bad one said) before any source is evaluated: a mistake in a later
    # source's file stopped the command after the earlier sources ran, and their --json report was lost
    loaded: dict[str, tuple[Path, list]] = {}
    for name in names:
        src = config.source(name)
        path = Path(args.cases) if args.cases else evaluation.cases_path(config, name)
        if not args.cases and not path.is_file():
            print(f"[{name}] no cases at {path}; skipped", file=sys.stderr)
            continue
        loaded[name] = (path, evaluation.select_split(
            evaluation.load_cases(path, root_url=evaluation.source_root_url(src)), args.split))
    ctx = get_context(config.path)
    reports = {}
    below = []
    unindexed = []
    for name, (path, cases) in loaded.items():
        if ctx.chunks.count(name) == 0:  # every case would score 0 and every question be refused
            print(f"error: [{name}] nothing is indexed for this source (table {ctx.chunks.name}); "
                  f"run `docs-rag ingest --source {name}` first", file=sys.stderr)
            unindexed.append(name)
            continue
        if not cases:  # scored, it was a failing run of zeros that replaced the last real results
            print(f"error: [{name}] no case of {path} is in the {args.split} half (each case's `split`, else "
                  "its id, decides); run with --split all, or give cases to that half", file=sys.stderr)
            unindexed.append(name)
            continue
        try:
            report = evaluation.evaluate(ctx, name, cases, top_k=args.top_k if args.top_k is not None else config.eval.top_k,
                                         baseline=args.baseline)
        except SourceError as exc:  # --baseline scans the source: it may be unreachable now
            print(f"error: [{name}] {exc}", file=sys.stderr)
            unindexed.append(name)
            continue
        print(f"[{name}] {len(cases)} cases from {path}\n{evaluation.print_table(report)}\n", flush=True)
        unknown = evaluation.unindexed_warning(report)
        if unknown:
            print(f"warning: [{name}] {unknown}", file=sys.stderr)
        folder = evaluation.results_dir(config)
        try:
            evaluation.write_results(report, folder, label=evaluation.results_label(args.cases, args.split))
        except OSError as exc:
            if _disk_failure(exc):  # exit 74 as a full disk, naming the results folder (not always the storage's)
                raise OSError(exc.errno, exc.strerror, str(folder)) from exc
            print(f"warning: [{name}] the results files could not be written to {folder} ({exc.strerror or exc}); "
                  "the figures above are not kept there: make the folder writable", file=sys.stderr)
        evaluation.upload_to_langsmith(report, cases)
        reports[name] = report
        below += [f"{name}: {check} {value} < {threshold}"
                  for check, value, threshold in evaluation.threshold_results(report, config.eval)
                  if value is not None and value < threshold]
    if args.json:
        # one source asked for: its report; several: a report per source that has cases
        out = next(iter(reports.values()), {}) if len(names) == 1 else reports
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.json}", file=sys.stderr)
    for line in below:
        print(f"below threshold: {line}", file=sys.stderr)
    if unindexed:
        return 2
    return 3 if (args.check and below) else 0


def cmd_ui(args: argparse.Namespace, config: Config) -> int:
    from .serve.workers import check_bind

    try:  # dagster dev would go on without its webserver (the daemon and code server running, no UI)
        check_bind(args.host, args.port)
    except OSError as exc:
        raise ConfigError(str(exc)) from None
    home = ensure_dagster_home(config)
    from dagster import DagsterInstance

    with DagsterInstance.get() as instance:  # runs of a UI or daemon killed before: failed, not in progress
        _fail_runs_of_dead_ingests(instance)
    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, "-m", "dagster", "dev", "-w", str(root / "workspace.yaml"), "-h", args.host,
           "-p", str(args.port)]
    print(f"DAGSTER_HOME={home}; {' '.join(cmd)}", file=sys.stderr)
    os.execv(sys.executable, cmd)
    return 0  # pragma: no cover


def cmd_sources(args: argparse.Namespace, config: Config) -> int:
    from .masking import without_url_userinfo

    for s in config.sources:  # where each reads from: a folder, the site's first seed URL, the repository
        # a URL without the user name and password (a token) written into it, as every message shows it
        where = (s.path if s.kind == "local"
                 else without_url_userinfo(s.seed_urls[0] if s.seed_urls else s.base_url or "") if s.kind == "web"
                 else f"{without_url_userinfo(s.repo or '')}{'@' + s.branch if s.branch else ''}"
                      f"{' ' + s.subpath if s.subpath else ''}")
        print(f"{s.name}\t{s.kind}\t{where}\t{s.cron}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="docs-rag", description="Documentation → cited answers.")
    p.add_argument("--config", help="config file (default: $DOCS_RAG_CONFIG or ./docs_rag.yaml)")
    p.add_argument("--version", action="version", version=f"docs-rag {__version__}",
                   help="print the version (as an MCP client and the agent card see it) and exit")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("ingest", help="materialize the asset graph for the source(s) through Dagster")
    s.add_argument("--source", help="only this source")
    s.add_argument("--json", action="store_true", help="end with one JSON object of counts per source")
    s.add_argument("--eval", action="store_true", help="also materialize eval_scores (its checks gate the exit status)")
    s.add_argument("--mode", choices=["refresh", "reparse", "force"], default="refresh",
                   help="refresh: only changed pages (default); reparse: parse and chunk every page again from "
                        "what is stored (after an upgrade of docs-rag; no network, unchanged chunks keep their "
                        "embeddings); force: fetch and process everything again")
    s.add_argument("--parallel", type=int, default=1, metavar="N",
                   help="ingest the sources in one Dagster run, N steps at a time in their own processes "
                        "(refresh_all_sources; LanceDB writes stay serialized)")
    s.set_defaults(fn=cmd_ingest)
    for name, arg, fn, helptext in (("search", "query", cmd_search, "hybrid search"),
                                    ("ask", "question", cmd_ask, "a cited answer")):
        s = sub.add_parser(name, help=helptext)
        s.add_argument(arg)
        s.add_argument("--top-k", type=int, default=None, help="how many results (default: retrieval.top_k)")
        s.add_argument("--source")
        s.add_argument("--filter", action="append", metavar="KEY=VALUE")
        s.add_argument("--json", action="store_true")
        if name == "ask":
            s.add_argument("--thread", metavar="ID", help="continue the conversation of a previous answer's thread id")
        s.set_defaults(fn=fn)
    s = sub.add_parser("serve", help="the HTTP API (waitress; gunicorn with --workers > 1)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=_port, default=8000)
    s.add_argument("--workers", type=int, default=1,
                   help="worker processes sharing the port and the table (> 1: gunicorn); default 1")
    s.add_argument("--threads", type=int, default=8, help="threads per worker process; default 8")
    s.set_defaults(fn=cmd_serve)
    s = sub.add_parser("mcp", help="a Model Context Protocol server on stdio (tools: search, get_page, get_chunk, ask, feedback)")
    s.set_defaults(fn=cmd_mcp)
    s = sub.add_parser("eval", help="run golden cases through search and ask; print the metrics")
    s.add_argument("--source", help="only this source")
    s.add_argument("--cases", help="a cases file (default: eval/<source>.jsonl)")
    s.add_argument("--json", metavar="OUT", help="write the full report as JSON")
    s.add_argument("--top-k", type=int, default=None)
    s.add_argument("--check", action="store_true", help="exit 3 when a metric is below its eval.* threshold")
    s.add_argument("--split", choices=["all", "calibration", "test"], default="all",
                   help="only this half of the cases (see docs/evaluation.md#golden-sets); default all")
    s.add_argument("--baseline", action="store_true",
                   help="also rank pages with the naive baseline (300-word chunks, BM25 + dense, RRF)")
    s.set_defaults(fn=cmd_eval)
    s = sub.add_parser("feedback", help="answer feedback: list it, or export thumbs-down answers as eval cases")
    s.add_argument("action", choices=["list", "export"], help="list: every rating; export: draft eval cases")
    s.add_argument("--out", default="eval/feedback-drafts.jsonl", help="export: the cases file to write "
                                                                        "(default eval/feedback-drafts.jsonl)")
    s.add_argument("--force", action="store_true", help="export: replace the --out file when it exists")
    s.add_argument("--source", help="export: only questions asked of this source (or of all sources)")
    s.add_argument("--json", action="store_true", help="list: as JSON")
    s.set_defaults(fn=cmd_feedback)
    s = sub.add_parser("gaps", help="doc-gap report: refused and low-confidence questions, clustered")
    s.add_argument("--source", help="only questions asked of this source (or of all sources)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_gaps)
    s = sub.add_parser("ui", help="the Dagster UI (dagster dev)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=_port, default=3000)
    s.set_defaults(fn=cmd_ui)
    s = sub.add_parser("prune", help="delete the rows and local state of sources no longer in the config")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_prune)
    s = sub.add_parser("versions", help="the restorable versions of the index: what each refresh wrote")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_versions)
    s = sub.add_parser("restore", help="roll the index back to a version listed by `docs-rag versions`")
    s.add_argument("version", help="a version number from `docs-rag versions`")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_restore)
    s = sub.add_parser("sources", help="list the configured sources")
    s.set_defaults(fn=cmd_sources)
    return p


def _default_signals() -> None:
    """Ctrl-C and SIGTERM stop every command, even when the parent left them ignored (a job started
    with ``&`` from a script ignores SIGINT, and Dagster maps SIGTERM to the SIGINT handler)."""
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``docs-rag`` command: what it prints shows control characters instead of obeying them."""
    from ._console import TerminalText

    streams = sys.stdout, sys.stderr
    sys.stdout = TerminalText(sys.stdout, name="stdout") if sys.stdout is not None else None  # None: `>&-`
    sys.stderr = TerminalText(sys.stderr, bidi=True) if sys.stderr is not None else None
    try:
        code = _main(argv)
    except BaseException:
        if argv is not None:  # a caller in Python gets its streams back; the console script keeps the
            sys.stdout, sys.stderr = streams  # wrapper for the traceback the interpreter prints next
        raise
    sys.stdout, sys.stderr = streams
    return code


def _output_failed(exc: BaseException) -> int:
    """stdout could not be written: the reader left (141, quietly, as `yes | head` does), or the file it
    goes to is full or failing (74, said: not the storage's disk). What is still buffered is dropped, so
    the flush at exit cannot fail again."""
    if not isinstance(exc, BrokenPipeError):
        print(f"error: {exc}; the output is incomplete: free space where it goes, or send it elsewhere",
              file=sys.stderr)
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 141 if isinstance(exc, BrokenPipeError) else 74  # EX_IOERR


def _main(argv: Sequence[str] | None = None) -> int:
    from ._console import OutputError

    try:  # --help and --version print, then exit 0: a write of theirs that failed was dropped without a word
        args = build_parser().parse_args(argv)
    except OutputError as exc:  # (argparse ignores an OSError of its write, and the flush at exit was not seen)
        return _output_failed(exc)
    except SystemExit as exc:
        if not exc.code and sys.stdout is not None:
            try:
                sys.stdout.flush()
            except (BrokenPipeError, OutputError) as failed:
                return _output_failed(failed)
        raise
    if argv is None:  # the console script, not a call from Python code that owns its signals
        _default_signals()
        if args.fn in (cmd_serve, cmd_mcp, cmd_ui):  # servers stop by SIGTERM as their servers do: the
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # handler _console.main set for the start-up goes
        else:
            _sigterm_is_ctrl_c()  # SIGTERM is Ctrl-C from the start: exit 130 with the line, not 143
    config: Config | None = None
    try:
        if given_config(args.config, name="--config"):
            os.environ["DOCS_RAG_CONFIG"] = str(config_name(args.config))  # a link stays a link (config_name)
        config = load_config(args.config)
        code = args.fn(args, config)
        if sys.stdout is not None:  # None: started with stdout closed (`>&-`); print() then writes nothing
            sys.stdout.flush()  # inside the try: a reader gone before the last byte is a BrokenPipeError here
        return code
    except (BrokenPipeError, OutputError) as exc:  # `docs-rag search … | head -1`; `… > /dev/full`
        return _output_failed(exc)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except EvalCaseError as exc:
        print(f"error: bad cases file: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # QueryError and friends: bad input, said plainly
        unreachable = _object_store_failure(exc, config)
        print(f"error: {unreachable or exc}", file=sys.stderr)
        return 69 if unreachable else 2  # EX_UNAVAILABLE: the object store, not the input
    except KeyboardInterrupt:
        from ._console import STOPPED

        print(STOPPED, file=sys.stderr)
        return 130
    except LockTimeout as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 75
    except StorageMissing as exc:  # a command that reads the index, before the first ingest
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FeedbackStoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 74  # EX_IOERR, as for a damaged index
    except EmbeddingConfigError as exc:  # embedding.model, .provider or the key's variable cannot work here
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except EmbeddingError as exc:  # the embedding server is down, refuses, or answers vectors that cannot be used
        print(f"error: {exc}", file=sys.stderr)
        return 69  # EX_UNAVAILABLE, as for the object store
    except Exception as exc:
        unreachable = _object_store_failure(exc, config)
        if unreachable:
            print(f"error: {unreachable}", file=sys.stderr)
            return 69
        damaged = damaged_index_hint(str(exc), config.lancedb_uri if config is not None else None)
        if damaged:
            print(f"error: {damaged}", file=sys.stderr)
            return 74
        reason = _disk_failure(exc)
        if reason is None:
            raise
        print(f"error: the disk holding {_filled_place(exc, config)} {reason}; free space (or fix the disk) and run "
              "the command again: what was stored before is kept", file=sys.stderr)
        return 74  # EX_IOERR


_LANCE_TABLE = re.compile(r"([^\s,/]+)\.lance/")
_RUST_LOCATION = re.compile(r",\s*/\S+\.rs:\d+:\d+")


def _object_store_failure(exc: BaseException, config: Config | None) -> str | None:
    """One plain line for an error of the object store that holds the index (``storage: s3://…``)."""
    if config is None or config.storage_is_local:
        return None
    from .store import object_store_failure

    return object_store_failure(str(exc), config.lancedb_uri)


def damaged_index_hint(message: str, lancedb_uri: str | None = None) -> str | None:
    """For a LanceDB error that says a file of a table is missing or damaged (someone deleted a data
    file, a disk lost it): what happened and the two ways back, else None."""
    from .store import LANCE_DAMAGE, NO_VERSIONS

    if not LANCE_DAMAGE.search(message):
        return None
    table = _LANCE_TABLE.search(message)
    detail = _RUST_LOCATION.sub("", message.strip().splitlines()[0])[:300]
    if not table:  # reads name their table (store.naming_table); this is for one that does not
        under = lancedb_uri.rstrip("/") if lancedb_uri else "<storage>/lancedb"
        return (f"the index cannot be read: a file of one of its tables is missing or damaged ({detail}). Go back "
                "to a version that reads: `docs-rag versions`, then `docs-rag restore VERSION`; or rebuild the "
                f"damaged table: delete its folder (<table>.lance) under {under} and run `docs-rag ingest`")
    name = table.group(1)
    where = (f"{lancedb_uri.rstrip('/')}/{name}.lance" if lancedb_uri
             else f"the folder {name}.lance under <storage>/lancedb")  # a URI keeps its //: s3://bucket/…
    after = {"embedding_cache": "every text is embedded again", "version_log": "the version list starts again"}.get(
        name, "the vectors come back from the embedding cache")
    back = ("Go back to a version that reads: `docs-rag versions`, then `docs-rag restore VERSION`; or rebuild the "
            "table" if name.startswith("chunks__") and NO_VERSIONS not in message
            else "Rebuild the table")  # restore: chunks tables that still have versions
    return (f"the index cannot be read: a file of the table {name} is missing or damaged ({detail}). {back}: "
            f"delete {where} and run `docs-rag ingest` ({after})")


#: what SQLite (Dagster's run storage, the stores beside the index), the OS and Rust's I/O errors
#: (LanceDB, Polars: "… (os error 28)") say when a disk is full
_DISK_ERRORS = ("database or disk is full", "disk i/o error", "no space left on device", "os error 28")


def _says_disk_full(message: str) -> bool:
    """Whether an error message says the disk is full or failing."""
    text = message.lower()
    return any(e in text for e in _DISK_ERRORS)


def _filled_place(exc: BaseException, config: Config | None) -> str:
    """What the full disk holds: the file an error in ``exc``'s chain names when it is outside the storage
    folder (an eval results folder, an export's --out), else the storage folder. Before, every full disk
    was the storage's, and an operator freed space where there was room."""
    storage = Path(config.storage_path).resolve() if config is not None else None
    for cur in _chain(exc):
        name = getattr(cur, "filename", None) if isinstance(cur, OSError) else None
        if isinstance(name, (str, os.PathLike)):
            path = Path(name).resolve()
            if storage is None or (path != storage and storage not in path.parents):
                return str(path)
    return f"the storage folder {config.storage_path}" if config is not None else "the storage folder"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or during (``__cause__``, else ``__context__``), each once."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def _disk_failure(exc: BaseException) -> str | None:
    """"is full or failing: …" when ``exc`` or an exception in its chain says the disk is full or failing
    (ENOSPC, SQLite's "database or disk is full" / "disk I/O error"), else None."""
    from .files import disk_full

    for cur in _chain(exc):
        if disk_full(cur) or _says_disk_full(str(cur)):
            detail = str(cur).splitlines()[0][:200] if str(cur) else type(cur).__name__
            return f"is full or failing: {detail}"
    return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
