"""``docs-rag``: ingest through Dagster, search, ask, serve, open the UI."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Sequence

from .config import Config, ConfigError, load_config
from .evaluation import EvalCaseError
from .locks import LockTimeout

DAGSTER_YAML = """# written by docs-rag; see docs/architecture.md
telemetry:
  enabled: false
# LanceDB writers are serialized by an OS file lock on the storage (docs_rag_pipeline/locks.py),
# not by a Dagster pool: a lock dies with its process, a pool slot of a killed run does not.
"""


def ensure_dagster_home(config: Config) -> Path:
    """DAGSTER_HOME (default: <storage>/dagster_home) with a dagster.yaml (telemetry off)."""
    home = Path(os.environ.get("DAGSTER_HOME") or Path(config.storage_path) / "dagster_home").resolve()
    home.mkdir(parents=True, exist_ok=True)
    cfg = home / "dagster.yaml"
    if not cfg.exists():
        cfg.write_text(DAGSTER_YAML)
    os.environ["DAGSTER_HOME"] = str(home)
    _create_instance_once(home)
    return home


def _create_instance_once(home: Path) -> None:
    """Create the Dagster instance's storage under a file lock: two processes creating a fresh
    sqlite storage at once both stamp its schema version, and the home is unusable after."""
    if (home / "history" / "runs.db").exists():
        return
    import fcntl

    with open(home / ".create.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes (or the process dies)
        from dagster import DagsterInstance

        with DagsterInstance.get():  # creates and migrates the storage (a no-op when it exists)
            pass


def _progress_to_stderr() -> None:
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(logging.Formatter("%(message)s"))
    lg = logging.getLogger("docs_rag_pipeline.progress")
    lg.handlers[:] = [h]
    lg.setLevel(logging.INFO)
    lg.propagate = False


def cmd_ingest(args: argparse.Namespace, config: Config) -> int:
    names = [args.source] if args.source else [s.name for s in config.sources]
    for n in names:
        config.source(n)  # a clear error for an unknown name, before Dagster starts
    if not names:
        print("no sources configured: add one under `sources:` in the config", file=sys.stderr)
        return 2
    if args.parallel < 1:
        raise ConfigError("--parallel must be at least 1")
    ensure_dagster_home(config)
    if args.parallel > 1 and len(names) > 1:
        return _ingest_parallel(args, config, names)
    _progress_to_stderr()
    from dagster import AssetCheckSeverity, DagsterInstance, materialize

    from .defs.assets import ingest_assets
    from .defs.checks import ingest_checks
    from .defs.definitions import build_definitions
    from .defs.evaluation import eval_scores
    from .defs.partitions import sources_partitions

    from .locks import source_lock

    resources = build_definitions(config).resources
    summaries: dict[str, dict] = {}
    failed = False
    _sigterm_stops_ingest()
    with DagsterInstance.get() as instance:
        existing = set(instance.get_dynamic_partitions(sources_partitions.name))
        missing = [n for n in names if n not in existing]
        if missing:
            instance.add_dynamic_partitions(sources_partitions.name, missing)
        for name in names:
            print(f"[{name}] materializing scraped_pages → chunks → embeddings → lancedb_chunks", file=sys.stderr)
            selection = [*ingest_assets, *ingest_checks] + ([eval_scores] if args.eval else [])
            # one ingest of a source at a time, whatever started it: a second waits (and says for whom)
            with source_lock(config.storage_path, name, purpose=f"docs-rag ingest of {name}",
                             log=lambda m, _n=name: print(f"[{_n}] {m}", file=sys.stderr, flush=True)):
                result = materialize(selection, partition_key=name, instance=instance,
                                     resources=resources, raise_on_error=False, tags={"source": name},
                                     run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}})
            if _interrupted(result):  # SIGTERM or Ctrl-C during the run: stop here, no further source
                raise Terminated()
            mats = result.asset_materializations_for_node("lancedb_chunks")
            summary = mats[0].metadata["summary"].value if mats else {}
            if summary:
                summaries[name] = summary
            for check in result.get_asset_check_evaluations():
                if not check.passed:
                    failed = failed or check.severity == AssetCheckSeverity.ERROR
                    print(f"[{name}] check {check.asset_check_key.name} failed: "
                          f"{ {k: v.value for k, v in check.metadata.items()} }", file=sys.stderr)
            if not result.success:
                failed = True
                for ev in result.all_events:
                    if ev.is_step_failure:
                        err = ev.step_failure_data.error
                        msg = (err.cause or err).message.strip() if err else ev.message
                        print(f"[{name}] step {ev.step_key} failed: {msg}", file=sys.stderr)
                if not summary:
                    continue
            if args.eval:
                _print_eval(name, result, sys.stderr if args.json else sys.stdout)
            print(f"[{name}] done in {summary.get('seconds')} s: {summary.get('chunks_total')} chunks indexed, "
                  f"{summary.get('chunks_embedded')} embedded, {summary.get('chunks_cached')} from cache, "
                  f"{summary.get('rows_written')} rows written, {summary.get('rows_deleted')} deleted "
                  f"(run {result.run_id})", file=sys.stderr)
    if args.json:
        print(json.dumps(summaries, indent=2))
    return 1 if failed else 0


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
        out = Path(args.out)
        cases = feedback.export_cases(config, out)
        print(f"wrote {len(cases)} draft eval case(s) from thumbs-down feedback to {out}; review each `note`, "
              f"then run: docs-rag eval --cases {out} --source NAME", file=sys.stderr)
        return 0
    rows = feedback.feedback_rows(config)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no feedback yet")
    for r in rows:
        print(f"{r['rating']:>4}  {r['trace_id']}  {r['question']}" + (f"  — {r['comment']}" if r["comment"] else ""))
    return 0


def cmd_gaps(args: argparse.Namespace, config: Config) -> int:
    from . import feedback, gaps
    from .context import get_context

    if args.source:
        config.source(args.source)
    rows = feedback.questions(config, source=args.source, gaps_only=True)
    report = gaps.gap_report(rows, get_context(config.path).embedder.embed) if rows else []
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(gaps.markdown_table(report))
    return 0


def _ingest_parallel(args: argparse.Namespace, config: Config, names: list[str]) -> int:
    """``--parallel N``: each source is ingested by its own ``docs-rag ingest --source NAME`` process
    (its own Dagster run in the same DAGSTER_HOME), N at a time. Scanning, parsing, chunking and
    embedding overlap; the LanceDB writes do not: every process takes the storage's writer lock
    (locks.py) around its embedding-cache and index writes, so they run one after the other."""
    import subprocess
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from dagster import DagsterInstance

    from .defs.partitions import sources_partitions

    with DagsterInstance.get() as instance:  # once, here: the children would race to add them
        missing = [n for n in names if n not in set(instance.get_dynamic_partitions(sources_partitions.name))]
        if missing:
            instance.add_dynamic_partitions(sources_partitions.name, missing)
    workers = min(args.parallel, len(names))
    print(f"ingesting {len(names)} sources in {workers} processes; LanceDB writes wait for the writer lock "
          f"({config.storage_path / 'locks'})", file=sys.stderr, flush=True)
    base = [sys.executable, "-m", "docs_rag_pipeline"] + (["--config", str(config.path)] if config.path else [])
    out_lock = threading.Lock()
    procs: list[subprocess.Popen] = []

    def one(name: str) -> tuple[str, int, dict]:
        cmd = [*base, "ingest", "--source", name, "--json"] + (["--eval"] if args.eval else [])
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        procs.append(proc)
        for line in proc.stderr:  # the child's progress, a line at a time, each naming its source
            with out_lock:
                sys.stderr.write(line if line.startswith(f"[{name}]") else f"[{name}] {line}")
                sys.stderr.flush()
        stdout = proc.stdout.read()
        proc.wait()
        try:
            summary = json.loads(stdout).get(name, {}) if stdout.strip() else {}
        except ValueError:
            summary = {}
        return name, proc.returncode, summary

    summaries: dict[str, dict] = {}
    codes: dict[str, int] = {}
    try:
        with ThreadPoolExecutor(workers) as pool:
            for name, code, summary in pool.map(one, names):
                codes[name] = code
                if summary:
                    summaries[name] = summary
    except KeyboardInterrupt:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        raise
    if args.json:
        print(json.dumps(summaries, indent=2))
    failed = {n: c for n, c in codes.items() if c}
    for n, c in failed.items():
        print(f"[{n}] ingest failed (exit {c})", file=sys.stderr)
    return 0 if not failed else (130 if 130 in failed.values() else max(failed.values()))


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C so the run stops cleanly (Dagster marks it as failed)."""


def _sigterm_stops_ingest() -> None:
    """SIGTERM outside a run raises :class:`Terminated`; inside one, Dagster maps it to its SIGINT
    handler (the step fails with DagsterExecutionInterruptedError, which :func:`_interrupted` sees)."""
    import signal

    def on_term(signum, frame):  # noqa: ANN001, ANN202
        raise Terminated()

    signal.signal(signal.SIGTERM, on_term)


def _interrupted(result) -> bool:  # noqa: ANN001 - dagster.ExecuteInProcessResult
    return any(ev.is_step_failure and ev.step_failure_data.error is not None
               and "DagsterExecutionInterruptedError" in (ev.step_failure_data.error.cls_name or "")
               for ev in result.all_events)


def cmd_prune(args: argparse.Namespace, config: Config) -> int:
    from .context import get_context
    from .refresh import prune

    pruned = prune(get_context(config.path), log=lambda m: print(m, file=sys.stderr))
    if args.json:
        print(json.dumps({"rows_pruned": pruned}, indent=2))
    elif not pruned:
        print("nothing to prune: every indexed source is configured", file=sys.stderr)
    return 0


def cmd_versions(args: argparse.Namespace, config: Config) -> int:
    from .context import get_context
    from .refresh import versions

    ctx = get_context(config.path)
    rows = versions(ctx)
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
        mark = "*" if r["current"] else " "
        print(f"{mark}{r['version']:>8}  {r['time'].replace('+00:00', 'Z'):<20} {r['action']:<8} "
              f"{r['source'] or '-':<16} {r['rows_written']:>8} {r['rows_deleted']:>8} {r['chunks_total']:>7}  "
              f"{r['detail'] or ''}")
    print(f"\n* = served now (table {ctx.chunks.name}); `docs-rag restore VERSION` brings back another",
          file=sys.stderr)
    return 0


def cmd_restore(args: argparse.Namespace, config: Config) -> int:
    from .context import get_context
    from .refresh import parse_version, restore

    res = restore(get_context(config.path), parse_version(args.version), log=lambda m: print(m, file=sys.stderr))
    if args.json:
        print(json.dumps(res, indent=2))
    elif res["changed"]:
        print(f"restored version {res['restored']} as version {res['version']} ({res['chunks_total']} chunks); "
              f"`docs-rag restore {res['previous']}` undoes this, the next `docs-rag ingest` re-applies source changes")
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
        msg = exc.message
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
    if args.json:
        print(json.dumps([h.to_dict() for h in hits], indent=2))
    else:
        _print_hits(hits)
    return 0


def cmd_ask(args: argparse.Namespace, config: Config) -> int:
    from .query import ask
    from .schemas import AskRequest, resolve_top_k

    ctx, req = _request(AskRequest, args, "question", config)
    ans = ask(req.question, thread_id=req.thread_id, top_k=resolve_top_k(ctx, req), source=req.source,
              filters=req.filters, config=config.path)
    if args.json:
        print(json.dumps(ans.to_dict(), indent=2))
        return 0
    print(ans.answer)
    if ans.citations:
        print()
        for c in ans.citations:
            print(f"[{c.n}] {c.title} — {c.url}")
    print(f"\ntrace: {ans.trace_id}")
    print(f"thread: {ans.thread_id} (ask a follow-up with --thread {ans.thread_id})")
    return 0


def cmd_serve(args: argparse.Namespace, config: Config) -> int:
    from .serve import workers

    if args.workers < 1 or args.threads < 1:
        raise ConfigError("--workers and --threads must be at least 1")
    path = str(config.path) if config.path else None
    if args.workers == 1:
        workers.serve_waitress(path, args.host, args.port, args.threads)
    else:
        workers.serve_gunicorn(path, args.host, args.port, args.workers, args.threads)
    return 0


def cmd_mcp(args: argparse.Namespace, config: Config) -> int:
    from .serve.mcp import run_stdio

    print(f"docs-rag MCP server on stdio (config {config.path})", file=sys.stderr)
    run_stdio(str(config.path) if config.path else None)
    return 0


def cmd_eval(args: argparse.Namespace, config: Config) -> int:
    from . import evaluation
    from .context import get_context

    names = [args.source] if args.source else [s.name for s in config.sources]
    if args.cases and len(names) != 1:
        raise ConfigError("--cases needs --source NAME when more than one source is configured")
    ctx = get_context(config.path)
    reports = {}
    below = []
    for name in names:
        src = config.source(name)
        path = Path(args.cases) if args.cases else evaluation.cases_path(config, name)
        if not args.cases and not path.is_file():
            print(f"[{name}] no cases at {path}; skipped", file=sys.stderr)
            continue
        cases = evaluation.select_split(evaluation.load_cases(path, root_url=evaluation.source_root_url(src)),
                                        args.split)
        report = evaluation.evaluate(ctx, name, cases, top_k=args.top_k or config.eval.top_k,
                                     baseline=args.baseline)
        evaluation.write_results(report, evaluation.results_dir(config))
        evaluation.upload_to_langsmith(report, cases)
        reports[name] = report
        print(f"[{name}] {len(cases)} cases from {path}\n{evaluation.print_table(report)}\n")
        below += [f"{name}: {check} {value} < {threshold}"
                  for check, value, threshold in evaluation.threshold_results(report, config.eval) if value < threshold]
    if args.json:
        # one source asked for: its report; several: a report per source that has cases
        out = next(iter(reports.values()), {}) if len(names) == 1 else reports
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.json}", file=sys.stderr)
    for line in below:
        print(f"below threshold: {line}", file=sys.stderr)
    return 3 if (args.check and below) else 0


def cmd_ui(args: argparse.Namespace, config: Config) -> int:
    home = ensure_dagster_home(config)
    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, "-m", "dagster", "dev", "-w", str(root / "workspace.yaml"), "-h", args.host,
           "-p", str(args.port)]
    print(f"DAGSTER_HOME={home}; {' '.join(cmd)}", file=sys.stderr)
    os.execv(sys.executable, cmd)
    return 0  # pragma: no cover


def cmd_sources(args: argparse.Namespace, config: Config) -> int:
    for s in config.sources:
        print(f"{s.name}\t{s.kind}\t{s.path}\t{s.cron}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="docs-rag", description="Documentation → cited answers.")
    p.add_argument("--config", help="config file (default: $DOCS_RAG_CONFIG or ./docs_rag.yaml)")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("ingest", help="materialize the asset graph for the source(s) through Dagster")
    s.add_argument("--source", help="only this source")
    s.add_argument("--json", action="store_true", help="end with one JSON object of counts per source")
    s.add_argument("--eval", action="store_true", help="also materialize eval_scores (its checks gate the exit status)")
    s.add_argument("--parallel", type=int, default=1, metavar="N",
                   help="ingest N sources at a time, each in its own process (LanceDB writes stay serialized)")
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
    s.add_argument("--port", type=int, default=8000)
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
    s.add_argument("--json", action="store_true", help="list: as JSON")
    s.set_defaults(fn=cmd_feedback)
    s = sub.add_parser("gaps", help="doc-gap report: refused and low-confidence questions, clustered")
    s.add_argument("--source", help="only questions asked of this source (or of all sources)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_gaps)
    s = sub.add_parser("ui", help="the Dagster UI (dagster dev)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=3000)
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
    args = build_parser().parse_args(argv)
    if argv is None:  # the console script, not a call from Python code that owns its signals
        _default_signals()
    try:
        if args.config:
            os.environ["DOCS_RAG_CONFIG"] = str(Path(args.config).resolve())
        config = load_config(args.config)
        return args.fn(args, config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except EvalCaseError as exc:
        print(f"error: bad cases file: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # QueryError and friends: bad input, said plainly
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stopped by a signal (SIGTERM or Ctrl-C): what was committed before stays; "
              "run the command again to finish", file=sys.stderr)
        return 130
    except LockTimeout as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 75


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
