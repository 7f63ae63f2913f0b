"""``docs-rag ingest --parallel N``: the sources refreshed in ONE Dagster run of ``refresh_all_sources``
under the multiprocess executor, their steps in processes of their own at the same time, their LanceDB
writes serialized by the writer lock (locks.py), as its history and the version log show."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

from dagster import AssetKey, AssetRecordsFilter, DagsterEventType, DagsterInstance, materialize

from docs_rag_pipeline import locks
from docs_rag_pipeline.config import load_config
from docs_rag_pipeline.context import get_context
from docs_rag_pipeline.defs.all_sources import step_labels
from docs_rag_pipeline.defs.assets import ingest_assets, lancedb_chunks
from docs_rag_pipeline.defs.definitions import build_definitions, run_io_folder

from .conftest import GUIDE, write_config, write_docs
from .dagster_helpers import materialize_source
from .web_helpers import LiveServer, ScriptedHandler, page, scripted_server

ASSETS = ("scraped_pages", "chunks", "embeddings", "lancedb_chunks")

#: two documentation sites: path → (title, body), "/" linking to the others
SITES = {
    "alpha": {
        "/": ("Acme Widgets Guide", "<p>Acme Widgets builds dashboards from sensor data. Read install and forms.</p>"),
        "/install.html": ("Installing", "<p>Install with pip. If the import fails with ZX81_QUANTUM_FLUX, delete "
                                        "the cache folder and install again.</p><h2 id='linux'>On Linux</h2>"
                                        "<p>Use a virtual environment; no compiler is needed.</p>"),
        "/forms.html": ("Forms", "<p>Forms collect user input and validate it before it reaches the server.</p>"),
    },
    "beta": {
        "/": ("On-call handbook", "<p>The on-call engineer answers pages within fifteen minutes.</p>"),
        "/escalation.html": ("Escalation", "<p>Escalate to the platform lead when the QUOKKA_7 alarm fires twice "
                                           "in one hour.</p>"),
    },
}


class FirstPageGate:
    """Holds the first request for ``/`` of each of two sites until the other site's has arrived too
    (a barrier of 2). A serial ingest, one source after the other, can never get past it: the first
    source's request waits for one that only comes after it. When the wait times out the site answers
    503, that page fails, and so does the test."""

    def __init__(self, *, timeout: float) -> None:
        self.barrier = threading.Barrier(2, timeout=timeout)
        self.lock = threading.Lock()
        self.opened: set[str] = set()
        self.timed_out: list[str] = []

    def route(self, site: str, html: str):  # noqa: ANN201 - a web_helpers route
        def answer(h: ScriptedHandler) -> None:
            with self.lock:
                first = site not in self.opened
                self.opened.add(site)
            if first:
                try:
                    self.barrier.wait()
                except threading.BrokenBarrierError:
                    self.timed_out.append(site)
                    h.reply(503, "<p>the other site's first request never came</p>")
                    return
            h.reply(200, html)

        return answer


def serve_sites(gate: FirstPageGate) -> dict[str, LiveServer]:
    servers = {}
    for site, pages in SITES.items():
        links = tuple(p.lstrip("/") for p in pages if p != "/")
        routes = {path: (gate.route(site, page(title, body, links=links)) if path == "/" else
                         (lambda h, _html=page(title, body): h.reply(200, _html)))
                  for path, (title, body) in pages.items()}
        servers[site] = scripted_server(routes)
    return servers


def web_sources(servers: dict[str, LiveServer]) -> str:
    """The sources of a config: one web source per site, no robots.txt or sitemap requests, no retry
    (a 503 fails its page), a request timeout longer than the gate's."""
    return "".join(f"""
      - name: {site}
        kind: web
        seed_urls: ["{srv.url}/"]
        sitemaps: "off"
        respect_robots: false
        delay_seconds: 0
        timeout_seconds: 600
        max_retries: 0
    """ for site, srv in servers.items())


def chunk_ids(cfg: Path) -> dict[str, set[str]]:
    rows = get_context(cfg).chunks.open().to_arrow().select(["chunk_id", "source"]).to_pylist()
    out: dict[str, set[str]] = {}
    for r in rows:
        out.setdefault(r["source"], set()).add(r["chunk_id"])
    return out


def test_one_run_ingests_two_sources_in_parallel_processes_and_serializes_the_writes(tmp_path: Path):
    gate = FirstPageGate(timeout=300)
    servers = serve_sites(gate)
    try:
        _ingest_in_one_run(tmp_path, servers, gate)
    finally:
        for srv in servers.values():
            srv.close()


def _ingest_in_one_run(tmp_path: Path, servers: dict[str, LiveServer], gate: FirstPageGate) -> None:
    (tmp_path / "parallel").mkdir()
    cfg = write_config(tmp_path / "parallel", sources=web_sources(servers))
    config = load_config(cfg)
    home = tmp_path / "dagster_home"
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(home)}
    lines: list[str] = []
    both_waiting = threading.Event()

    def waiting(name: str) -> bool:
        return any(line.startswith(f"[{name}]") and "[LOCK] waiting" in line and "writer lock" in line
                   for line in lines)

    # the test holds the writer lock, so both sources' embed steps must reach their first write and wait
    # for it at the same time: when it is released they contend, and only the lock keeps them apart
    with locks.writer_lock(config.storage_path, purpose="test: hold until both sources' steps wait"):
        proc = subprocess.Popen([sys.executable, "-m", "docs_rag_pipeline", "ingest", "--parallel", "2", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cfg.parent)

        def read() -> None:
            for line in proc.stderr:
                lines.append(line)
                if waiting("alpha") and waiting("beta"):
                    both_waiting.set()
            both_waiting.set()  # the process ended: the assertions below say why

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        both_waiting.wait(timeout=540)
        assert waiting("alpha") and waiting("beta"), "".join(lines)
    stdout = proc.stdout.read()
    proc.wait(timeout=540)
    reader.join(timeout=60)
    log = "".join(lines)
    assert proc.returncode == 0, log
    assert not gate.timed_out, f"the first pages of {gate.timed_out} waited in vain for the other site's: {log}"
    assert gate.opened == {"alpha", "beta"}
    assert "ingesting 2 sources in one Dagster run of refresh_all_sources, up to 2 steps at a time" in log
    # every line says its source (Dagster's own DEBUG lines of the step processes are dropped)
    assert all(line.startswith(("[alpha] ", "[beta] ", "ingesting ")) for line in lines), log
    summaries = json.loads(stdout)
    assert set(summaries) == {"alpha", "beta"}
    assert summaries["alpha"]["pages_new"] == 3 and summaries["beta"]["pages_new"] == 2
    assert summaries["alpha"]["pages_failed"] == summaries["beta"]["pages_failed"] == 0
    assert "[alpha] [LOCK] got the writer lock after waiting" in log
    assert "[beta] [LOCK] got the writer lock after waiting" in log

    with DagsterInstance.from_config(str(home)) as instance:
        run_id = _one_run_with_parallel_steps(instance, proc.pid)
    assert f"(run {run_id})" in log
    assert not (Path(run_io_folder(config)) / run_id).exists()  # a successful run's step outputs are deleted

    # the writer lock's history: every hold by the run's step processes, none overlapping another
    holds = [h for h in locks.history(config.storage_path, "writer") if h["pid"] != os.getpid()]
    purposes = " | ".join(h["purpose"] for h in holds)
    assert "index write of alpha" in purposes and "index write of beta" in purposes, purposes
    assert len({h["pid"] for h in holds}) >= 2, holds  # embed and write steps of two sources
    holds.sort(key=lambda h: h["acquired"])
    for before, after in zip(holds, holds[1:]):
        assert after["acquired"] >= before["released"], (before, after)
    # the two embed steps' cache writes both began with a wait (the contention the lock resolved)
    cache_writes = [h for h in holds if h["purpose"].startswith("embedding cache write")]
    assert len(cache_writes) == 2 and all(h["waited"] for h in cache_writes), cache_writes

    # the table: every chunk once; one version per source's index write
    from docs_rag_pipeline.context import Context
    from docs_rag_pipeline.refresh import versions

    ctx = Context(config)
    ids = ctx.chunks.open().to_arrow().column("chunk_id").to_pylist()
    assert len(ids) == len(set(ids)) == summaries["alpha"]["chunks_total"] + summaries["beta"]["chunks_total"]
    vs = [v for v in versions(ctx) if v["action"] == "refresh"]
    assert sorted(v["source"] for v in vs) == ["alpha", "beta"], vs

    # the same chunks as two separate single-source ingests of the same sites (the gate is open now)
    (tmp_path / "separate").mkdir()
    separate = write_config(tmp_path / "separate", sources=web_sources(servers))
    with DagsterInstance.ephemeral() as instance:
        for name in ("alpha", "beta"):
            materialize_source(separate, name, instance)
    assert chunk_ids(cfg) == chunk_ids(separate)

    # both are searchable
    from docs_rag_pipeline.query import search

    assert search("QUOKKA_7 alarm", top_k=3, config=cfg)[0].url.startswith(servers["beta"].url)
    assert search("ZX81_QUANTUM_FLUX", top_k=3, config=cfg)[0].url.startswith(servers["alpha"].url)


def _one_run_with_parallel_steps(instance: DagsterInstance, cli_pid: int) -> str:
    """The ingest was one run of refresh_all_sources: both sources' assets materialized by it, for their
    partitions, by steps in processes of their own; its summary names both. Returns its id."""
    runs = instance.get_runs()
    job_runs = [r for r in runs if r.job_name == "refresh_all_sources"]
    assert len(job_runs) == 1, [(r.job_name, r.tags) for r in runs]
    run_id = job_runs[0].run_id
    for key in ASSETS:
        for name in ("alpha", "beta"):
            rec = instance.fetch_materializations(AssetRecordsFilter(asset_key=AssetKey(key), asset_partitions=[name]),
                                                  limit=1).records
            assert rec and rec[0].run_id == run_id, (key, name)
    starts = {r.event_log_entry.step_key: r.event_log_entry.dagster_event.pid
              for r in instance.get_records_for_run(run_id, of_type=DagsterEventType.STEP_START).records}
    assert {f"{stage}_source[{name}]" for stage in ("scan", "chunk", "embed", "write")
            for name in ("alpha", "beta")} <= set(starts), starts
    assert len(set(starts.values())) >= 2 and cli_pid not in starts.values(), starts
    assert starts["scan_source[alpha]"] != starts["scan_source[beta]"]
    outputs = [r.event_log_entry.dagster_event for r in
               instance.get_records_for_run(run_id, of_type=DagsterEventType.STEP_OUTPUT).records
               if r.event_log_entry.step_key == "summarize_sources"]
    table = outputs[0].step_output_data.metadata["sources"].value
    assert "| alpha |" in table and "| beta |" in table, table
    # the checks ran after it, one run per source's partition
    checks = [r for r in runs if r.tags.get("dagster/partition") in ("alpha", "beta")]
    assert sorted(r.tags["dagster/partition"] for r in checks) == ["alpha", "beta"]
    return run_id


def test_writing_alone_after_a_refresh_all_sources_run_is_refused(tmp_path: Path):
    """refresh_all_sources scans and writes without touching the Parquet files the assets read. A
    later lancedb_chunks materialized alone reads pages of an older scan: refused, even where the
    index is back in the state that scan saw (a page it added, deleted since, would come back)."""
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    defs = build_definitions(config_path=str(cfg))
    extra = tmp_path / "docs" / "extra.md"
    with DagsterInstance.ephemeral() as instance:
        materialize_source(cfg, "guide", instance)
        extra.write_text("# Extra\n\nA page that is added, then removed again: FLAMINGO_42.\n")
        added = materialize_source(cfg, "guide", instance)  # its Parquet files: extra.md new
        assert added["pages_new"] == 1
        extra.unlink()
        job = defs.resolve_job_def("refresh_all_sources")
        result = job.execute_in_process(instance=instance,
                                        run_config={"ops": {"source_names": {"config": {"sources": ["guide"]}}}})
        assert result.success  # the job's own write is never refused
        mats = [e.asset_key.to_user_string() for e in result.asset_materializations_for_node("write_source")]
        assert mats == ["lancedb_chunks"]
        summary = result.output_for_node("summarize_sources")[0]
        assert summary["source"] == "guide" and summary["pages_deleted"] == 1
        before = chunk_ids(cfg)
        alone = materialize(ingest_assets, selection=[lancedb_chunks], partition_key="guide", instance=instance,
                            resources=defs.resources, raise_on_error=False)
        assert not alone.success
        failure = next(e for e in alone.all_events if e.is_step_failure)
        msg = str(failure.step_failure_data.error.cause or failure.step_failure_data.error)
        assert "scanned again since" in msg and "nothing was written" in msg, msg
        assert chunk_ids(cfg) == before
        assert not any(r["page_url"].endswith("extra.md") for r in get_context(cfg).chunks.rows("source = 'guide'"))
        again = materialize_source(cfg, "guide", instance)  # a whole partitioned refresh after it is fine
        assert again["pages_unchanged"] == 5 and again["rows_written"] == again["rows_deleted"] == 0


def test_a_failing_source_fails_the_ingest_and_the_others_still_finish(tmp_path: Path):
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path, sources="""
      - name: guide
        kind: local
        path: docs
        base_url: https://docs.example.org/
      - name: gone-repo
        kind: git
        repo: file:///nonexistent/repo.git
    """)
    out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "ingest", "--parallel", "2", "--json"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=540,
                         env={**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "dh")})
    assert out.returncode == 1, out.stderr
    assert "[gone-repo] step scan_source[gone_repo] failed: " in out.stderr and "nonexistent" in out.stderr
    assert "[gone-repo] ingest failed" in out.stderr
    assert "[guide] done in" in out.stderr and "[guide] ingest failed" not in out.stderr
    summaries = json.loads(out.stdout)
    assert set(summaries) == {"guide", "gone-repo"} and summaries["guide"]["pages_new"] == 5
    assert summaries["gone-repo"]["error"].startswith("step scan_source[gone_repo] failed: ")  # refresh.md `error`
    assert chunk_ids(cfg).keys() == {"guide"}


def test_step_labels_are_unique_dagster_mapping_keys():
    assert step_labels(["guide", "project-docs", "project_docs", "a-b-c"]) == {
        "guide": "guide", "project-docs": "project_docs", "project_docs": "project_docs_2", "a-b-c": "a_b_c"}


def test_parallel_must_be_positive(tmp_path: Path):
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "--config", str(cfg), "ingest", "--parallel", "0"],
                         capture_output=True, text=True, env={**os.environ, "DAGSTER_HOME": str(tmp_path / "dh")})
    assert out.returncode == 2 and "--parallel must be at least 1" in out.stderr


def test_sigterm_while_the_first_step_process_starts_stops_with_130_and_keeps_stderr(tmp_path: Path):
    """SIGTERM to ``ingest --parallel`` while a step process was still starting: Dagster interrupts the
    run before any step reports a failure, so the CLI said "failed before its steps did" and exited 1
    (not the 130 of every other stop by a signal), and the thread passing the step processes' stderr on
    could die on a closed descriptor (a traceback, the progress lines lost)."""
    import fcntl
    import signal
    import time

    write_docs(tmp_path / "docs", GUIDE)
    write_docs(tmp_path / "more", {"a.md": "# A\n\nAnother page.\n"})
    cfg = write_config(tmp_path, sources="""
      - {name: guide, kind: local, path: docs}
      - {name: more, kind: local, path: more}
    """)
    home = tmp_path / "dh"
    proc = subprocess.Popen([sys.executable, "-m", "docs_rag_pipeline", "ingest", "--parallel", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(home)})
    deadline = time.monotonic() + 300
    starting = False
    while not starting and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
        if not (home / "dagster.yaml").exists():
            continue
        with open(home / ".create.lock", "a") as lock:  # as the CLI: never open the storage while it is created
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (home / "history" / "runs.db").exists():
                continue
        with DagsterInstance.from_config(str(home)) as instance:
            runs = instance.get_runs(limit=1)
            if runs:  # the first step process is starting (its forkserver imports the project: seconds)
                events = {e.dagster_event.event_type for e in instance.all_logs(runs[0].run_id) if e.dagster_event}
                starting = DagsterEventType.STEP_WORKER_STARTING in events
    assert starting, proc.communicate()[1]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert "stopped by a signal (SIGTERM or Ctrl-C)" in err and "failed before its steps did" not in err, err
    assert "Traceback" not in err, err
    again = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "ingest", "--json"], capture_output=True,
                           text=True, cwd=tmp_path, timeout=540,
                           env={**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(home)})
    assert again.returncode == 0, again.stderr
    assert {name: s["pages_failed"] for name, s in json.loads(again.stdout).items()} == {"guide": 0, "more": 0}


def test_prune_deletes_the_step_outputs_of_runs_that_ended(tmp_path: Path):
    """A failed or killed ``--parallel`` run kept its steps' outputs (every changed page's text and
    vectors) under ``dagster_io/runs/<run id>/`` forever: only a successful run's were deleted, and
    ``docs-rag prune`` did not touch them. It deletes those of runs that ended; a folder whose run is
    unknown to the Dagster home (or in progress) is kept."""
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path, sources="""
      - {name: guide, kind: local, path: docs, base_url: https://docs.example.org/}
      - {name: gone-repo, kind: git, repo: file:///nonexistent/repo.git}
    """)
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "dh")}
    out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "ingest", "--parallel", "2"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=540, env=env)
    assert out.returncode == 1, out.stderr
    runs = Path(run_io_folder(load_config(cfg)))
    failed = [d.name for d in runs.iterdir()]
    assert len(failed) == 1 and any((runs / failed[0]).rglob("*"))  # the failed run's outputs, kept
    (runs / "not-a-run-of-this-home").mkdir()
    # a re-execution of the failed run in progress (the UI's "from failure") loads its outputs: kept
    from dagster import DagsterInstance, DagsterRunStatus

    with DagsterInstance.from_config(str(tmp_path / "dh")) as instance:
        parent = instance.get_run_by_id(failed[0])
        rerun = instance.add_run(parent._replace(run_id=uuid.uuid4().hex, status=DagsterRunStatus.STARTED,
                                                 parent_run_id=failed[0], root_run_id=failed[0]))
    prune = [sys.executable, "-m", "docs_rag_pipeline", "prune"]
    out = subprocess.run(prune, capture_output=True, text=True, cwd=tmp_path, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert sorted(d.name for d in runs.iterdir()) == sorted([failed[0], "not-a-run-of-this-home"]), out.stderr
    with DagsterInstance.from_config(str(tmp_path / "dh")) as instance:
        instance.delete_run(rerun.run_id)  # the re-execution is over
    out = subprocess.run(prune, capture_output=True, text=True, cwd=tmp_path, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert sorted(d.name for d in runs.iterdir()) == ["not-a-run-of-this-home"]
    assert f"[PRUNE] step outputs of 1 ended refresh_all_sources run(s) deleted from {runs} ({failed[0]})" in out.stderr


def test_a_step_process_killed_by_the_oom_killer_is_named_as_such(tmp_path: Path, capsys):
    """A `--parallel` step whose process the out-of-memory killer ends (SIGKILL) was printed as
    `step … failed: dagster._core.executor.child_process_executor.ChildProcessCrashException`, naming
    neither the kill nor memory. The real multiprocess executor runs a step that SIGKILLs itself."""
    from dagster import DagsterInstance, execute_job, reconstructable

    from docs_rag_pipeline.cli import _print_step_failures

    from .crash_job import crash_job

    (tmp_path / "home").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "home")) as instance:
        result = execute_job(reconstructable(crash_job), instance=instance, raise_on_error=False)
        assert not result.success
        failed = _print_step_failures(result.all_events, lambda _key: "docs")
    err = capsys.readouterr().err
    assert failed == {"docs"}
    assert ("[docs] step killed_step failed: the step's process was killed (SIGKILL), most often by the "
            "out-of-memory killer: give the machine or container more memory, or run fewer steps at once (a lower "
            "--parallel); what was stored is kept, and the next ingest redoes the step") in err, err
    assert not [line for line in err.splitlines() if line.startswith("[docs]") and "ChildProcessCrash" in line]
