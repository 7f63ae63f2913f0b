"""Ingest as an unlucky operator runs it: killed processes, two ingests at once, a repetitive source,
a source removed from the config, two embedders that share a model name, and an asset materialized
alone on stale inputs. Real subprocesses, a real Dagster instance, a real LanceDB."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from dagster import DagsterInstance, materialize

from docs_rag_pipeline import locks, retrieval
from docs_rag_pipeline.answering.refusal import corpus_stats
from docs_rag_pipeline.context import get_context
from docs_rag_pipeline.defs.assets import chunks, ingest_assets, lancedb_chunks, scraped_pages
from docs_rag_pipeline.defs.definitions import build_definitions
from docs_rag_pipeline.query import search

from .conftest import GUIDE, write_config, write_docs
from .dagster_helpers import apply_partition_requests, materialize_source

DOCS_RAG = [sys.executable, "-m", "docs_rag_pipeline"]


def _env(cfg: Path) -> dict[str, str]:
    return {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(cfg.parent / "dagster_home")}


def _run(args: list[str], cfg: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*DOCS_RAG, *args], capture_output=True, text=True, env=_env(cfg), cwd=cfg.parent,
                          timeout=600, **kw)


def _partitions(cfg: Path) -> list[str]:
    """The Dagster partitions of sources in the Dagster home the CLI used for ``cfg``."""
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(cfg.parent / "dagster_home")) as instance:
        return sorted(instance.get_dynamic_partitions("sources"))


def _start(args: list[str], cfg: Path) -> subprocess.Popen:
    return subprocess.Popen([*DOCS_RAG, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(cfg), cwd=cfg.parent, stdin=subprocess.DEVNULL)


def _stderr_until(proc: subprocess.Popen, marker: str) -> str:
    """Read the process's stderr line by line until a line holds ``marker``; the text read so far."""
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if marker in line:
            return "".join(seen)
    raise AssertionError(f"the ingest ended (rc {proc.wait()}) before printing {marker!r}:\n{''.join(seen)}")


def _drain(proc: subprocess.Popen) -> list[str]:
    """Keep reading a process's stderr in the background (a full pipe would block it)."""
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True).start()
    return lines


def _ids(cfg: Path) -> list[str]:
    ctx = get_context(cfg)
    return sorted(r["chunk_id"] for r in ctx.chunks._scan(None, ["chunk_id"]).to_pylist())


def _project(root: Path) -> Path:
    write_docs(root / "docs", GUIDE)
    return write_config(root)


@pytest.fixture(scope="module")
def clean_ids(tmp_path_factory) -> list[str]:
    cfg = _project(tmp_path_factory.mktemp("clean"))
    out = _run(["ingest"], cfg)
    assert out.returncode == 0, out.stderr
    ids = _ids(cfg)
    assert len(ids) > 5
    return ids


@pytest.mark.parametrize("kill_at", ["[PARSE]", "[CHUNK]", "[EMBED]", "[LOCK] waiting", "[INDEX]"])
def test_sigkill_in_any_stage_never_wedges_the_next_ingest(tmp_path, clean_ids, kill_at):
    cfg = _project(tmp_path)
    storage = tmp_path / "data"
    if kill_at.startswith("[LOCK]"):
        # another writer holds the LanceDB lock: the ingest waits for it, says so, and is killed waiting
        with locks.writer_lock(storage, purpose="the test, holding the lock"):
            proc = _start(["ingest"], cfg)
            seen = _stderr_until(proc, kill_at)
            assert "the test, holding the lock" in seen and f"pid {os.getpid()}" in seen
            proc.kill()
            proc.wait()
    else:
        proc = _start(["ingest"], cfg)
        _stderr_until(proc, kill_at)
        proc.kill()
        assert proc.wait() == -signal.SIGKILL
    # the next ingest neither waits forever nor keeps anything half done
    out = _run(["ingest", "--json"], cfg)
    assert out.returncode == 0, out.stderr
    assert _ids(cfg) == clean_ids  # same chunk ids and count as a clean ingest, no duplicates


def test_sigterm_stops_an_ingest_waiting_for_the_writer_lock(tmp_path):
    cfg = _project(tmp_path)
    with locks.writer_lock(tmp_path / "data", purpose="the test"):
        proc = _start(["ingest"], cfg)
        _stderr_until(proc, "[LOCK] waiting")
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=120)
        rest = proc.stderr.read()
    assert rc != 0 and "SIGTERM" in rest, rest
    assert _run(["ingest"], cfg).returncode == 0  # nothing left behind that blocks the next one


def test_a_lock_wait_is_bounded_and_says_who_holds_it(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCS_RAG_LOCK_TIMEOUT", "1")
    lines: list[str] = []
    with locks.writer_lock(tmp_path, purpose="holder in a thread"):
        err: list[BaseException] = []

        def other() -> None:
            try:
                with locks.writer_lock(tmp_path, purpose="waiter", log=lines.append):
                    pass
            except BaseException as exc:  # noqa: BLE001
                err.append(exc)

        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert len(err) == 1 and isinstance(err[0], locks.LockTimeout)
    assert "gave up after 1 s" in str(err[0]) and "DOCS_RAG_LOCK_TIMEOUT" in str(err[0])
    monkeypatch.setenv("DOCS_RAG_LOCK_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="DOCS_RAG_LOCK_TIMEOUT: 'soon'"):
        locks.default_timeout()


def test_a_source_whose_lock_stays_held_is_skipped_and_the_others_still_run(tmp_path, monkeypatch):
    """concurrency F1: when another process held one source's lock past DOCS_RAG_LOCK_TIMEOUT (someone's
    long ingest of it), ``docs-rag ingest`` stopped there with exit status 75: the sources after it were
    never refreshed and ``--json`` printed nothing, against cli.md's "the remaining sources still run"
    (``--parallel`` already ran them). Now that source is skipped with its error line, the others run
    and are printed, and the exit status is still 75."""
    write_docs(tmp_path / "docs", GUIDE)
    write_docs(tmp_path / "more", {"m.md": "# More\n\nThe heron setting runs every five minutes.\n"})
    cfg = write_config(tmp_path, sources="""
      - {name: alpha, kind: local, path: docs, base_url: "https://docs.example.org/"}
      - {name: beta, kind: local, path: more, base_url: "https://more.example.org/"}
    """)
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("DOCS_RAG_LOCK_TIMEOUT", "2")
    with locks.source_lock(tmp_path / "data", "alpha", purpose="an operator's long ingest of alpha"):
        out = _run(["ingest", "--json"], cfg)
    assert out.returncode == 75, out.stderr
    assert "[alpha] error: " in out.stderr and "an operator's long ingest of alpha" in out.stderr, out.stderr
    assert "not refreshed, the other sources still run" in out.stderr
    summary = json.loads(out.stdout)
    assert list(summary) == ["alpha", "beta"] and summary["beta"]["rows_written"] == 1, summary
    assert "an operator's long ingest of alpha" in summary["alpha"]["error"], summary  # refresh.md `error`
    assert search("heron setting", config=cfg)[0].url.startswith("https://more.example.org/m")


def test_two_ingests_started_at_once_run_one_after_the_other(tmp_path, clean_ids):
    cfg = _project(tmp_path)
    # hold the source lock so both are surely started and waiting, then let them race for it
    with locks.source_lock(tmp_path / "data", "guide", purpose="the test"):
        procs = [_start(["ingest", "--json"], cfg) for _ in range(2)]
        seen = [_stderr_until(p, "[LOCK] waiting") for p in procs]
    logs = [_drain(p) for p in procs]
    rcs = [p.wait(timeout=600) for p in procs]
    assert rcs == [0, 0], [s + "".join(x) for s, x in zip(seen, logs)]
    assert _ids(cfg) == clean_ids  # no duplicate chunk_id, the same rows as one ingest
    summaries = [json.loads(p.stdout.read())["guide"] for p in procs]
    assert sorted(s["rows_written"] for s in summaries) == [0, len(clean_ids)]  # the second found it done
    with DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        runs = sorted(instance.get_run_records(), key=lambda r: r.start_time)
        assert len(runs) == 2 and runs[0].end_time <= runs[1].start_time  # the runs did not overlap


def test_repetitive_source_with_a_failing_vector_index_still_ingests(tmp_path, monkeypatch):
    from docs_rag_pipeline.store import ChunksTable

    # 10,250 chunks of 10 distinct texts: k-means can form 10 clusters, far fewer than the partitions
    docs = tmp_path / "rep"
    for p in range(250):
        body = "\n".join(f"## Note {(p * 41 + j) % 10}\n\nThis note repeats the same words about item "
                         f"{(p * 41 + j) % 10} again and again.\n" for j in range(41))
        write_docs(docs, {f"page{p:04d}.md": f"# Notes\n\n{body}"})
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path, sources="""
      - {name: rep, kind: local, path: rep}
      - {name: guide, kind: local, path: docs, base_url: https://docs.example.org/}
    """)
    assert ChunksTable.ann_min_rows <= 10_250
    # the partition count sqrt(rows) asks for on ~100k such rows (LanceDB refuses more than 256 then)
    monkeypatch.setattr(ChunksTable, "target_partitions", staticmethod(lambda n: 316))
    with DagsterInstance.ephemeral() as instance:
        rep = materialize_source(cfg, "rep", instance)
        assert rep["chunks_total"] == 10_250
        mat = instance.get_latest_materialization_event(lancedb_chunks.key).asset_materialization
        note = mat.metadata["ann_index"].value
        assert note.startswith("ivf_flat (10 partitions)") and "k-means could only form 10" in note, note
        guide = materialize_source(cfg, "guide", instance)  # another source still ingests afterwards
        assert guide["pages_new"] == 5
    assert get_context(cfg).chunks.has_ann_index()  # searched through the 10-partition index
    assert search("ZX81_QUANTUM_FLUX", config=cfg)[0].url.endswith("#troubleshooting")


def test_a_removed_source_is_never_served_and_is_pruned(tmp_path):
    write_docs(tmp_path / "a", GUIDE)
    write_docs(tmp_path / "b", {"only-b.md": "# Beta only\n\nThe QUUXPLATYPUS setting lives only in source beta.\n"})
    both = """
      - {name: alpha, kind: local, path: a}
      - {name: beta, kind: local, path: b}
    """
    cfg = write_config(tmp_path, sources=both)
    assert _run(["ingest"], cfg).returncode == 0
    assert search("QUUXPLATYPUS", config=cfg)[0].source == "beta"
    beta_row = get_context(cfg).chunks.rows("source = 'beta'")[0]
    cfg = write_config(tmp_path, sources="- {name: alpha, kind: local, path: a}")
    # before any ingest: beta's rows are still stored, but never served: not by search, nor as a chunk,
    # a page or a parent (/chunks, /pages, /view, MCP get_chunk and get_page served them), nor do its
    # words count for refusal (the vocabulary and word statistics read the whole table)
    assert all(h.source == "alpha" for h in search("QUUXPLATYPUS", top_k=8, config=cfg))
    ctx = get_context(cfg)
    assert retrieval.get_chunk(ctx, beta_row["chunk_id"]) is None
    assert retrieval.parent_chain(ctx, beta_row["chunk_id"]) == []
    assert retrieval.page_rows(ctx, beta_row["page_url"]) == []
    assert "quuxplatypus" not in ctx.chunks.vocabulary()
    assert "quuxplatypus" not in corpus_stats(ctx.chunks)[1]
    beta_rows = get_context(cfg).chunks.count("beta")
    assert beta_rows > 0
    assert _partitions(cfg) == ["alpha", "beta"]
    out = _run(["ingest", "--json"], cfg)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["alpha"]["rows_pruned"] == beta_rows
    assert "[PRUNE] source 'beta' is not in the config any more" in out.stderr
    assert get_context(cfg).chunks.count("beta") == 0 and get_context(cfg).chunks.count("alpha") > 0
    # and its Dagster partition goes, as the sources sensor removes it where a daemon runs
    assert _partitions(cfg) == ["alpha"]
    assert "[beta] its partition is deleted: the source is no longer in the config" in out.stderr

    # `docs-rag prune` does the same without an ingest
    cfg = write_config(tmp_path, sources="- {name: beta, kind: local, path: b}")
    out = _run(["prune", "--json"], cfg)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["rows_pruned"]["alpha"] > 0
    assert get_context(cfg).chunks.count("alpha") == 0
    assert _partitions(cfg) == []  # and its partition: once its state folder is gone, an ingest cannot tell
    out = _run(["prune"], cfg)
    assert out.returncode == 0 and "nothing to prune" in out.stderr


def test_prune_deletes_the_partition_of_a_removed_source_that_has_no_rows(tmp_path):
    """A removed source with a state folder but no rows (its pages had no text; or a prune killed right
    after its row delete left it so) lost its folder to `docs-rag prune`, but kept its Dagster partition
    for good: an ingest, the sensor and a prune delete only the partitions of sources whose folder is
    here. And prune ended with "nothing to prune" right after saying it deleted the folder. Now the
    partition goes first, rows or not, the folder last, and prune says what it did."""
    write_docs(tmp_path / "a", GUIDE)
    write_docs(tmp_path / "e", {"empty.md": "# Empty\n\n\n"})  # no text: its ingest indexes no chunk
    write_docs(tmp_path / "k", {"k.md": "# Killed\n\nThe ZORBLAX page of a source whose prune was killed.\n"})
    cfg = write_config(tmp_path, sources="""
      - {name: alpha, kind: local, path: a}
      - {name: empty, kind: local, path: e}
      - {name: killed, kind: local, path: k}
    """)
    _run(["ingest"], cfg)  # exit 1 (empty's check: no chunk), but every source has its partition and folder
    state = tmp_path / "data" / "sources"
    assert _partitions(cfg) == ["alpha", "empty", "killed"] and (state / "empty").is_dir()
    chunks = get_context(cfg).chunks
    assert chunks.count("empty") == 0 and chunks.count("killed") > 0
    chunks.delete("source = 'killed'")  # what a prune killed after its row delete committed leaves

    cfg = write_config(tmp_path, sources="""
      - {name: alpha, kind: local, path: a}
      - {name: killed, kind: local, path: k}
    """)
    out = _run(["prune"], cfg)
    assert out.returncode == 0, out.stderr
    assert _partitions(cfg) == ["alpha", "killed"] and not (state / "empty").exists()
    assert "[empty] its partition is deleted: the source is no longer in the config" in out.stderr
    assert "[PRUNE] source 'empty' is not in the config any more: its local state was deleted" in out.stderr
    assert "nothing to prune" not in out.stderr, out.stderr

    cfg = write_config(tmp_path, sources="- {name: alpha, kind: local, path: a}")  # the rerun of the killed prune
    out = _run(["prune", "--json"], cfg)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"rows_pruned": {"killed": 0}, "partitions_deleted": ["killed"]}
    assert _partitions(cfg) == ["alpha"] and not (state / "killed").exists() and (state / "alpha").is_dir()
    assert [v["action"] for v in json.loads(_run(["versions", "--json"], cfg).stdout)].count("prune") == 0
    out = _run(["prune"], cfg)
    assert out.returncode == 0 and "nothing to prune: every indexed source is configured" in out.stderr, out.stderr


def test_ingest_and_prune_delete_the_partition_of_a_source_removed_before_its_first_scan(tmp_path, monkeypatch):
    """A source the sensor added (with its first run queued) and that was renamed or removed before any
    run scanned it has no state folder and no rows: `docs-rag ingest` and `docs-rag prune` kept its
    partition forever (prune said "nothing to prune"). The partitions this storage added are recorded
    in it, so both delete theirs; a partition of another project sharing the Dagster home stays."""
    from dagster import build_sensor_context

    from docs_rag_pipeline.defs.automation import sources_sensor

    write_docs(tmp_path / "a", GUIDE)
    (tmp_path / "dagster_home").mkdir()
    (tmp_path / "dagster_home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    cfg = write_config(tmp_path, sources="""
      - {name: alpha, kind: local, path: a}
      - {name: tpyo, kind: local, path: a}
      - {name: oops, kind: local, path: a}
    """)
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(cfg))
    with DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        instance.add_dynamic_partitions("sources", ["theirs"])  # another project's on the same Dagster home
        result = sources_sensor(build_sensor_context(instance=instance))
        apply_partition_requests(instance, result)
    assert _partitions(cfg) == ["alpha", "oops", "theirs", "tpyo"]

    cfg = write_config(tmp_path, sources="""
      - {name: alpha, kind: local, path: a}
      - {name: oops, kind: local, path: a}
    """)
    out = _run(["ingest", "--source", "alpha"], cfg)
    assert out.returncode == 0, out.stderr
    assert "[tpyo] its partition is deleted: the source is no longer in the config" in out.stderr
    assert _partitions(cfg) == ["alpha", "oops", "theirs"]

    cfg = write_config(tmp_path, sources="- {name: alpha, kind: local, path: a}")
    out = _run(["prune", "--json"], cfg)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"rows_pruned": {}, "partitions_deleted": ["oops"]}
    assert _partitions(cfg) == ["alpha", "theirs"]
    assert sorted(p.name for p in (tmp_path / "data" / "sources").iterdir()) == ["alpha"]


def test_a_removed_source_leaves_no_parquet_files_between_assets(tmp_path):
    """A source taken out of the config (say, because it should never have been indexed) lost its rows,
    state folder and partition, but ``dagster_io/{scraped_pages,chunks,embeddings}/<name>.parquet``
    kept its pages' full text and vectors forever. The prune of an ingest and ``docs-rag prune`` delete
    them, and say so; the configured sources keep theirs."""
    write_docs(tmp_path / "a", {"a.md": "# Public\n\nPublic widgets.\n"})
    write_docs(tmp_path / "s", {"s.md": "# Salaries\n\nCONFIDENTIAL: the salary of Alice is 123456.\n"})
    write_docs(tmp_path / "t", {"t.md": "# Secrets\n\nCONFIDENTIAL: the door code is 9876.\n"})
    cfg = write_config(tmp_path, sources="""
      - {name: public, kind: local, path: a}
      - {name: secret, kind: local, path: s}
      - {name: other, kind: local, path: t}
    """)
    assert _run(["ingest"], cfg).returncode == 0
    io = tmp_path / "data" / "dagster_io"

    def files(name: str) -> list[str]:
        return sorted(str(p.relative_to(io)) for p in io.glob(f"*/{name}.parquet"))

    assert files("secret") == ["chunks/secret.parquet", "embeddings/secret.parquet", "scraped_pages/secret.parquet"]
    cfg = write_config(tmp_path, sources="""
      - {name: public, kind: local, path: a}
      - {name: other, kind: local, path: t}
    """)
    out = _run(["ingest", "--source", "public"], cfg)  # the prune of an ingest
    assert out.returncode == 0, out.stderr
    assert files("secret") == [] and len(files("public")) == 3 and len(files("other")) == 3
    assert (f"[PRUNE] source 'secret' is not in the config any more: its Parquet files between assets were "
            f"deleted ({io}/{{scraped_pages,chunks,embeddings}}/secret.parquet)") in out.stderr
    cfg = write_config(tmp_path, sources="- {name: public, kind: local, path: a}")
    out = _run(["prune"], cfg)  # `docs-rag prune`
    assert out.returncode == 0, out.stderr
    assert files("other") == [] and len(files("public")) == 3
    import polars as pl

    assert not [p for p in io.rglob("*.parquet") if "CONFIDENTIAL" in str(pl.read_parquet(p).to_dicts())]


def test_two_config_files_sharing_one_storage_keep_each_others_sources(tmp_path):
    """``team.yaml`` (alpha) and ``personal.yaml`` (beta) with one ``storage:``: each ingest pruned
    the other config's source, rows and local state, without a word, and the two ping-ponged. A
    source another recorded config file lists for the same storage is kept, with a line that says
    why; once that file is gone, its sources are pruned as before."""
    write_docs(tmp_path / "a", GUIDE)
    write_docs(tmp_path / "b", {"only-b.md": "# Beta only\n\nThe QUUXPLATYPUS setting lives only in source beta.\n"})
    team = write_config(tmp_path, sources="- {name: alpha, kind: local, path: a}")
    team = team.rename(tmp_path / "team.yaml")
    personal = write_config(tmp_path, sources="- {name: beta, kind: local, path: b}")
    personal = personal.rename(tmp_path / "personal.yaml")
    assert _run(["ingest"], team).returncode == 0
    out = _run(["ingest", "--json"], personal)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["beta"]["rows_pruned"] == 0
    assert f"[PRUNE] source 'alpha' is kept: {team} lists it and writes to the same storage folder" in out.stderr
    out = _run(["ingest", "--json"], team)
    assert out.returncode == 0 and json.loads(out.stdout)["alpha"]["rows_pruned"] == 0, out.stderr
    chunks = get_context(personal).chunks
    assert chunks.count("alpha") > 0 and chunks.count("beta") > 0
    assert _partitions(personal) == ["alpha", "beta"]  # the other config's partition is kept too
    assert _run(["prune"], personal).returncode == 0 and chunks.count("alpha") > 0

    team.unlink()  # the team's config is gone: its source is an orphan now
    out = _run(["ingest", "--json"], personal)
    assert out.returncode == 0 and json.loads(out.stdout)["beta"]["rows_pruned"] > 0, out.stderr
    assert chunks.count("alpha") == 0 and chunks.count("beta") > 0


def test_a_sibling_config_that_cannot_be_read_keeps_its_sources(tmp_path, monkeypatch):
    """While ``team.yaml`` (alpha), which shares the storage with ``personal.yaml`` (beta), has a YAML
    typo or is half saved, an ingest of ``personal.yaml`` pruned alpha (rows, state folder, partition)
    as if the team file listed nothing, without a word. Now nothing is pruned that run, a warning
    names the file and its error, ``docs-rag prune`` refuses (exit 2) and the sensor deletes no
    partition; once the file is fixed, all is as before."""
    from dagster import build_sensor_context

    from docs_rag_pipeline.defs.automation import sources_sensor

    write_docs(tmp_path / "a", GUIDE)
    write_docs(tmp_path / "b", {"only-b.md": "# Beta only\n\nThe QUUXPLATYPUS setting lives only in source beta.\n"})
    team = write_config(tmp_path, sources="- {name: alpha, kind: local, path: a}").rename(tmp_path / "team.yaml")
    personal = write_config(tmp_path, sources="- {name: beta, kind: local, path: b}").rename(tmp_path / "personal.yaml")
    assert _run(["ingest"], team).returncode == 0
    assert _run(["ingest"], personal).returncode == 0
    good = team.read_text()
    team.write_text(good.replace("sources:", "sources: ["))  # a typo, or a save caught half way

    (tmp_path / "b" / "only-b.md").write_text("# Beta only\n\nChanged: QUUXPLATYPUS lives here.\n")
    out = _run(["ingest", "--json"], personal)
    assert out.returncode == 0 and json.loads(out.stdout)["beta"]["rows_pruned"] == 0, out.stderr
    chunks = get_context(personal).chunks
    assert chunks.count("alpha") > 0 and (tmp_path / "data" / "sources" / "alpha").is_dir()
    assert _partitions(personal) == ["alpha", "beta"]
    warning = [line for line in out.stderr.splitlines() if "[PRUNE] warning:" in line]
    assert len(warning) == 1 and f"{team}: not valid YAML" in warning[0] and "no source is pruned" in warning[0]

    out = _run(["prune"], personal)  # refused before anything is deleted
    assert out.returncode == 2 and out.stderr.startswith("error: ") and f"{team}: not valid YAML" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and chunks.count("alpha") > 0

    monkeypatch.setenv("DOCS_RAG_CONFIG", str(personal))  # the sensor of personal.yaml's code location
    with DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        result = sources_sensor(build_sensor_context(instance=instance))
    assert not [r for r in result.dynamic_partitions_requests if type(r).__name__.startswith("Delete")]

    team.write_text(good)  # fixed: alpha is the team's again; deleted: it is pruned as before
    assert _run(["prune"], personal).returncode == 0 and chunks.count("alpha") > 0
    team.unlink()
    out = _run(["prune", "--json"], personal)
    assert out.returncode == 0 and json.loads(out.stdout)["rows_pruned"]["alpha"] > 0, out.stderr


ADD_PARTITION = r"""
import sys
from dagster import DagsterInstance
from docs_rag_pipeline.cli import _sync_source_partitions
from docs_rag_pipeline.config import load_config
config = load_config()
with DagsterInstance.get() as instance:
    instance.get_dynamic_partitions("sources")
    print("ready", flush=True)
    sys.stdin.readline()
    _sync_source_partitions(instance, config, ["guide"])
    print(sorted(instance.get_dynamic_partitions("sources")), flush=True)
"""


def test_a_partition_another_process_adds_at_the_same_moment_is_no_error(tmp_path):
    """Two ingests that find a new source (two cron lines, or an ingest while the daemon's sensor adds
    it) add its partition at once: Dagster reads, then inserts under a unique index, so the loser died
    with an IntegrityError traceback (exit 1). Here another writer inserts the partition between the
    ingest's read and its insert (it holds the write lock of the real SQLite event log meanwhile):
    the partition is there, and the ingest goes on."""
    import sqlite3

    (tmp_path / "docs").mkdir()
    cfg = write_config(tmp_path)
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with DagsterInstance.from_config(str(home)) as instance:  # creates the storage
        assert list(instance.get_dynamic_partitions("sources")) == []
    proc = subprocess.Popen([sys.executable, "-c", ADD_PARTITION], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(cfg), cwd=tmp_path)
    assert proc.stdout.readline().strip() == "ready"
    other = sqlite3.connect(home / "history" / "runs" / "index.db", timeout=60, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # the other process's insert, not committed yet: the ingest reads no row
    other.execute("INSERT INTO dynamic_partitions (partitions_def_name, partition) VALUES ('sources', 'guide')")
    proc.stdin.write("go\n")
    proc.stdin.flush()
    # the ingest reads (no row yet) and waits for the write lock to insert; the other commits first
    threading.Event().wait(2)
    other.execute("COMMIT")
    other.close()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert out.strip() == "['guide']"
    assert _partitions(cfg) == ["guide"]


def test_two_embedders_with_one_model_name_never_share_vectors(tmp_path, monkeypatch):
    from docs_rag_pipeline.embedding import LocalEmbedder

    from .fake_openai import EmbeddingsServer

    write_docs(tmp_path / "docs", GUIDE)
    monkeypatch.setenv("TEST_KEY", "k")
    local = LocalEmbedder()
    tables, embedded = [], []
    with EmbeddingsServer(local.embed) as one, EmbeddingsServer(local.embed) as two:
        with DagsterInstance.ephemeral() as instance:
            for srv in (one, two):
                cfg = write_config(tmp_path, extra=f"""
                    embedding:
                      provider: openai
                      model: same-name
                      base_url: {srv.url}
                      api_key_env: TEST_KEY
                """)
                out = materialize_source(cfg, "guide", instance)
                ctx = get_context(cfg)
                tables.append(ctx.chunks.name)
                embedded.append((out["chunks_embedded"], out["chunks_total"]))
                assert ctx.embedder.name == "openai:same-name"
    assert tables[0] != tables[1]
    # the second server's model embedded every chunk itself: no vector came from the first's cache
    assert embedded[1][0] == embedded[1][1] and len(two.requests) > 1


def test_materializing_the_write_alone_on_stale_inputs_is_refused(tmp_path):
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    resources = build_definitions(config_path=str(cfg)).resources
    with DagsterInstance.ephemeral() as instance:
        materialize_source(cfg, "guide", instance)
        before = _ids(cfg)
        (tmp_path / "docs" / "forms.md").write_text("# Forms\n\nForms now collect sketches, not text.\n")
        # a refresh whose embeddings step never ran: pages and chunks are new, the vectors are old
        materialize(ingest_assets, selection=[scraped_pages, chunks], partition_key="guide", instance=instance,
                    resources=resources)
        result = materialize(ingest_assets, selection=[lancedb_chunks], partition_key="guide", instance=instance,
                             resources=resources, raise_on_error=False)
        assert not result.success
        failure = next(e for e in result.all_events if e.is_step_failure)
        msg = str(failure.step_failure_data.error.cause or failure.step_failure_data.error)
        assert "re-run the whole refresh" in msg and "nothing was written" in msg, msg
        assert _ids(cfg) == before  # forms.md kept every row
        out = materialize_source(cfg, "guide", instance)  # the whole refresh puts it right
        assert out["pages_changed"] == 1
    assert "sketches" in search("what do forms collect", config=cfg)[0].text


def test_locks_are_reentrant_in_a_process_and_exclusive_across_processes(tmp_path):
    with locks.source_lock(tmp_path, "s", purpose="outer"):
        with locks.source_lock(tmp_path, "s", purpose="inner (same thread)"):
            pass
        code = ("import sys; from docs_rag_pipeline import locks\n"
                "try:\n"
                "    with locks.hold(sys.argv[1], 'source-s', purpose='child', timeout=0.5): print('got it')\n"
                "except locks.LockTimeout as e: print('timeout', e)\n")
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
        assert out.stdout.startswith("timeout") and "outer" in out.stdout, out.stdout + out.stderr
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("got it"), out.stdout + out.stderr
    shutil.rmtree(tmp_path / "locks")


def test_an_ingest_killed_while_embedding_keeps_what_it_embedded(tmp_path):
    """The embedding cache was written once, after every text was embedded: an ingest killed an
    hour into embedding a large source lost the hour. Each step of batches is now cached as it is
    done, so after SIGKILL the next ingest takes those vectors from the cache and embeds only the
    rest, and the index equals a clean ingest's."""
    from docs_rag_pipeline.refresh import EMBED_STEP_BATCHES

    pages = {f"topic{i}.md": f"# Topic {i}\n\n" + "\n\n".join(
        f"Paragraph {j} of topic {i} explains setting number {i * 10 + j} and what it changes in the "
        f"widget renderer, with enough words to be a chunk of its own." for j in range(8)) for i in range(24)}
    write_docs(tmp_path / "docs", pages)
    cfg = write_config(tmp_path, extra="embedding: {batch_size: 1}\nchunking: {target_tokens: 40, overlap_tokens: 0}")
    step = max(EMBED_STEP_BATCHES, 32)  # texts per step with batch_size 1
    proc = _start(["ingest"], cfg)
    _stderr_until(proc, f"[EMBED] {step}/")
    proc.kill()
    assert proc.wait() == -signal.SIGKILL
    out = _run(["ingest", "--json"], cfg)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)["guide"]
    assert summary["chunks_cached"] >= step and summary["chunks_embedded"] + summary["chunks_cached"] > 2 * step

    clean = tmp_path / "clean"
    write_docs(clean / "docs", pages)
    clean_cfg = write_config(clean, extra="embedding: {batch_size: 1}\nchunking: {target_tokens: 40, overlap_tokens: 0}")
    assert _run(["ingest"], clean_cfg).returncode == 0
    assert _ids(cfg) == _ids(clean_cfg)


def test_queries_never_miss_a_page_while_ingests_rewrite_the_index(tmp_path):
    """An operator's usual day: the API answers while the schedule refreshes the source. Three
    ingests in a subprocess rewrite every page (new chunk ids), add one page and remove another,
    with index builds and compaction; meanwhile a reader in this process searches for each lasting
    page by a word only that page has. Every search must succeed and find its page: a page is never
    half written or briefly gone, and the reader sees each new version."""
    from docs_rag_pipeline.query import search

    animals = ["aardvark", "bonobo", "caracal", "dugong", "echidna", "fossa", "gharial", "hoatzin"]

    def write(gen: int) -> None:
        pages = {f"{a}.md": f"# The {a} page\n\nRevision {gen} of the page about the {a}, the only page that "
                            f"names it.\n\n" + "\n\n".join(f"Paragraph {j} of revision {gen} covers detail {j} "
                                                          f"of the {a}." for j in range(6)) for a in animals}
        pages[f"extra{gen}.md"] = f"# Extra {gen}\n\nA page that exists only in revision {gen}.\n"
        shutil.rmtree(tmp_path / "docs", ignore_errors=True)
        write_docs(tmp_path / "docs", pages)

    write(0)
    cfg = write_config(tmp_path)
    assert _run(["ingest"], cfg).returncode == 0
    stop = threading.Event()
    errors: list[str] = []
    searches = [0]

    def reader() -> None:
        while not stop.is_set():
            for a in animals:
                try:
                    hits = search(f"the {a}", config=cfg, top_k=3)
                except Exception as exc:  # noqa: BLE001 - any error is a failure of the test
                    errors.append(f"{a}: {type(exc).__name__}: {exc}")
                    continue
                searches[0] += 1
                if not hits or not hits[0].page_url.endswith(f"/{a}.md"):
                    errors.append(f"{a}: {[h.page_url for h in hits]}")

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    try:
        for gen in (1, 2, 3):
            write(gen)
            out = _run(["ingest"], cfg)
            assert out.returncode == 0, out.stderr
    finally:
        stop.set()
        t.join(timeout=60)
    assert not errors, errors[:5]
    assert searches[0] >= 4 * len(animals)
    # a reader re-reads the table's latest version within a second of a write (read_consistency_interval,
    # deploy.md): the reader thread's last search may have read it just before the last ingest ended
    for _ in range(20):
        hits = search("the aardvark revision", config=cfg, top_k=1)
        if "revision 3" in hits[0].text.lower():
            break
        time.sleep(0.5)
    assert "revision 3" in hits[0].text.lower(), hits[0].text


def test_a_full_disk_stops_the_ingest_with_a_clear_error_and_keeps_the_index(tmp_path):
    """A disk that fills during an ingest (checked by hand on a 24 MB tmpfs filled up) ended in a
    Dagster traceback: ``sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) disk I/O error``.
    It is now one line naming the storage folder and what to do, exit status 74 (EX_IOERR), and the
    index is the one before. Here the run storage is /dev/full (every write: ENOSPC), a real full
    device with no mount needed; with the disk back, the next ingest indexes the change."""
    cfg = _project(tmp_path)
    assert _run(["ingest"], cfg).returncode == 0
    before = _ids(cfg)
    page = tmp_path / "docs" / "forms.md"
    page.write_text(page.read_text() + "\n## Zebra appendix\n\nThe zebra quokka protocol validates marmalade.\n")
    runs_db = tmp_path / "dagster_home" / "history" / "runs.db"
    runs_db.rename(runs_db.with_suffix(".kept"))
    runs_db.symlink_to("/dev/full")
    out = _run(["ingest"], cfg)
    assert out.returncode == 74 and "Traceback" not in out.stderr, out.stderr
    assert (f"error: the disk holding the storage folder {tmp_path / 'data'} is full or failing: "
            "(sqlite3.OperationalError) database or disk is full; free space (or fix the disk) and run the "
            "command again: what was stored before is kept") in out.stderr
    assert _ids(cfg) == before
    runs_db.unlink()
    runs_db.with_suffix(".kept").rename(runs_db)
    assert _run(["ingest"], cfg).returncode == 0
    hits = search("zebra quokka marmalade", config=cfg)
    assert "The zebra quokka protocol validates marmalade." in hits[0].text


def test_a_disk_that_fills_inside_a_step_is_a_full_disk_too(tmp_path):
    """Where the disk fills decided the outcome: in Dagster's run storage, exit 74 and the line above;
    inside a step (its Parquet output, an index write), exit 1 and a bare `step … failed` line, as a
    broken page would. Here the step's output file is /dev/full: the same exit 74 and line now."""
    cfg = _project(tmp_path)
    assert _run(["ingest"], cfg).returncode == 0
    before = _ids(cfg)
    page = tmp_path / "docs" / "forms.md"
    page.write_text(page.read_text() + "\n## Zebra appendix\n\nThe zebra quokka protocol validates marmalade.\n")
    output = tmp_path / "data" / "dagster_io" / "scraped_pages" / "guide.parquet"
    output.unlink()
    output.symlink_to("/dev/full")
    out = _run(["ingest"], cfg)
    assert out.returncode == 74 and "Traceback" not in out.stderr, out.stderr
    assert f"error: the disk holding the storage folder {tmp_path / 'data'} is full or failing: " in out.stderr
    assert "No space left on device" in out.stderr and _ids(cfg) == before
    output.unlink()
    assert _run(["ingest"], cfg).returncode == 0
    assert "The zebra quokka protocol validates marmalade." in search("zebra quokka marmalade", config=cfg)[0].text


def test_a_damaged_index_says_how_to_get_back(tmp_path):
    """A data file of the chunks table deleted (by hand, by a disk): ``docs-rag search`` ended in a
    LanceDB traceback, and every ingest failed on ``lance error: Not found`` with no way back named.
    Both now say which table is damaged and the two ways back (restore a version, or delete the
    table and ingest again); following the second gives the same index with no text embedded again."""
    import re

    cfg = _project(tmp_path)
    assert _run(["ingest"], cfg).returncode == 0
    before = _ids(cfg)
    (table,) = (tmp_path / "data" / "lancedb").glob("chunks__*.lance")
    next((table / "data").glob("*.lance")).unlink()
    hint = (rf"the index cannot be read: a file of the table {table.name[:-6]} is missing or damaged \(.*Not found.*\)\. "
            r"Go back to a version that reads: `docs-rag versions`, then `docs-rag restore VERSION`; or rebuild the "
            rf"table: delete {re.escape(str(table))} and run `docs-rag ingest` \(the vectors come back from the "
            r"embedding cache\)")
    out = _run(["search", "forms"], cfg)
    assert out.returncode == 74 and "Traceback" not in out.stderr
    assert re.search(rf"^error: {hint}$", out.stderr, re.M), out.stderr
    out = _run(["ingest"], cfg)
    assert out.returncode == 1 and re.search(rf"^\[guide\] {hint}$", out.stderr, re.M), out.stderr
    shutil.rmtree(table)
    out = _run(["ingest", "--json"], cfg)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)["guide"]
    assert summary["chunks_embedded"] == 0 and summary["chunks_cached"] == len(before)
    assert _ids(cfg) == before


@pytest.mark.parametrize("damage", ["a data file cut short", "the newest manifest cut short"])
def test_a_file_of_the_index_cut_short_is_named_with_the_way_back(tmp_path, damage):
    """A file of the chunks table cut short (a disk that filled up, a copy stopped half way): LanceDB says
    ``failed to fill whole buffer`` (a data file cut anywhere) or ``file size is too small`` (a manifest),
    which were not read as damage: ``search``, ``ask``, ``versions`` and ``restore`` ended in a traceback
    with exit status 1, and ``ingest`` failed on the bare Rust line. Now they name the table and the ways
    back, as for a file deleted, and ``versions`` lists what still reads."""
    import re

    cfg = _project(tmp_path)
    assert _run(["ingest"], cfg).returncode == 0
    (table,) = (tmp_path / "data" / "lancedb").glob("chunks__*.lance")
    if damage == "a data file cut short":
        for f in (table / "data").glob("*.lance"):
            os.truncate(f, f.stat().st_size // 2)
    else:
        newest = min((table / "_versions").glob("*.manifest"))  # named by ~version: the newest sorts first
        os.truncate(newest, newest.stat().st_size // 2)
    hint = (rf"the index cannot be read: a file of the table {table.name[:-6]} is missing or damaged \(.*\)\. "
            r"Go back to a version that reads: `docs-rag versions`, then `docs-rag restore VERSION`; or rebuild the "
            rf"table: delete {re.escape(str(table))} and run `docs-rag ingest`")
    for cmd in (["search", "forms"], ["ask", "How do I install it?"]):
        out = _run(cmd, cfg)
        assert out.returncode == 74 and "Traceback" not in out.stderr, out.stderr
        assert re.search(rf"^error: {hint}", out.stderr, re.M), out.stderr
    out = _run(["versions"], cfg)
    assert "Traceback" not in out.stderr, out.stderr
    if damage == "a data file cut short":  # the table opens: its versions are listed, the served one marked
        assert out.returncode == 0 and "CANNOT BE READ" in out.stdout, out.stdout + out.stderr
        assert f"{table.name[:-6]}, served now, cannot be read: a file of it is missing or damaged" in out.stderr
    else:  # the table does not open at all
        assert out.returncode == 74 and re.search(rf"^error: {hint}", out.stderr, re.M), out.stderr
    out = _run(["ingest"], cfg)
    assert out.returncode == 1 and re.search(rf"^\[guide\] {hint}", out.stderr, re.M), out.stderr
    shutil.rmtree(table)  # the way back the line gives
    assert _run(["ingest"], cfg).returncode == 0
    assert _run(["search", "forms"], cfg).returncode == 0


def test_a_table_whose_versions_folder_is_gone_is_named_with_the_rebuild(tmp_path):
    """A chunks table folder whose ``_versions/`` is gone (deleted by hand, a copy that skipped it): LanceDB
    lists the table but says only ``Table '…' was not found``, so ``search``, ``ask`` and ``versions`` said
    that line with exit status 2, ``ingest`` failed on it, and the HTTP API answered 500 on every route.
    Now it is the damaged-index line naming the table and the rebuild (no version is left to restore),
    exit status 74, and the API's 503 ``backend_unavailable``; following the rebuild gives the index back."""
    import re

    from docs_rag_pipeline.serve.api import create_app

    cfg = _project(tmp_path)
    assert _run(["ingest"], cfg).returncode == 0
    before = _ids(cfg)
    (table,) = (tmp_path / "data" / "lancedb").glob("chunks__*.lance")
    shutil.rmtree(table / "_versions")
    hint = (rf"the index cannot be read: a file of the table {table.name[:-6]} is missing or damaged \(.*_versions/.*\)\. "
            rf"Rebuild the table: delete {re.escape(str(table))} and run `docs-rag ingest` \(the vectors come back "
            r"from the embedding cache\)")
    for cmd in (["search", "forms"], ["ask", "How do I install it?"], ["versions"]):
        out = _run(cmd, cfg)
        assert out.returncode == 74 and "Traceback" not in out.stderr, out.stderr
        assert re.search(rf"^error: {hint}$", out.stderr, re.M), out.stderr
    out = _run(["ingest"], cfg)
    assert out.returncode == 1 and re.search(rf"^\[guide\] {hint}$", out.stderr, re.M), out.stderr
    client = create_app(config_path=str(cfg)).test_client()
    for resp in (client.get("/health"), client.post("/search", json={"query": "forms"}),
                 client.post("/ask", json={"question": "How do I install it?"})):
        assert resp.status_code == 503 and resp.get_json()["error"]["code"] == "backend_unavailable", resp.get_json()
    shutil.rmtree(table)  # the way back the line gives
    assert _run(["ingest"], cfg).returncode == 0
    assert _ids(cfg) == before


@pytest.mark.parametrize("blocker", ["a file", "a link to nowhere", "a file named locks"])
def test_a_storage_path_blocked_by_a_file_or_a_dead_link_says_what_is_in_the_way(tmp_path, blocker):
    """``storage:`` naming a file, a link to a folder that does not exist (a disk not mounted), or a storage
    folder whose ``locks`` is a file: the ingest said ``cannot be written (File exists); … make it writable``,
    a permission problem that chmod does not fix. Now the line says what is in the way and what to do."""
    cfg = _project(tmp_path)
    storage = tmp_path / "data"
    if blocker == "a file":
        storage.write_text("not a folder")
        want = f"error: storage: {storage} cannot be made a folder: {storage} is a file, not a folder; move that file away"
    elif blocker == "a link to nowhere":
        os.symlink(tmp_path / "unmounted" / "data", storage)
        want = (f"error: storage: {storage} cannot be made a folder: {storage} is a link to {tmp_path}/unmounted/data, "
                "which does not exist; create the folder it points to (a disk that is not mounted?) or remove the link")
    else:
        storage.mkdir()
        (storage / "locks").write_text("not a folder")
        want = (f"error: storage: {storage}: docs-rag ingest of guide needs its source-guide lock file "
                f"{storage}/locks/source-guide.lock, and {storage}/locks is a file, not a folder; move that file away")
    out = _run(["ingest"], cfg)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert want in out.stderr and "File exists" not in out.stderr and "writable" not in out.stderr, out.stderr
    if blocker == "a file named locks":
        return
    # a search, a question and the HTTP API said the folder "does not exist … `docs-rag ingest` creates it",
    # which the ingest above refuses (ops6 F5): they name what is in the way too
    what = want.split(" cannot be made a folder: ", 1)[1]
    for command in (["search", "forms"], ["ask", "How do I install it?"]):
        out = _run(command, cfg)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        assert f"error: storage: {storage} is no folder: {what}, or point `storage` at the index folder" in out.stderr, out.stderr
        assert "does not exist (nothing was ingested" not in out.stderr and "creates it" not in out.stderr
    from docs_rag_pipeline.serve.api import create_app

    client = create_app(config_path=str(cfg)).test_client()
    for resp in (client.post("/search", json={"query": "forms"}), client.post("/ask", json={"question": "How do I install it?"})):
        body = resp.get_json()["error"]
        assert resp.status_code == 503 and body["code"] == "backend_unavailable", body
        assert "storage path is no folder" in body["message"] and "creates it" not in body["message"], body


def test_a_dagster_storage_left_half_made_by_a_kill_is_made_again(tmp_path):
    """A kill of the first ``docs-rag ingest`` while it created the Dagster storage (a window of a
    fraction of a second after ``runs.db`` appears) left a storage some tables short; ``runs.db``
    existing counted as "created", so every later ingest failed with Dagster's "run dagster instance
    migrate" traceback. Creation now ends with a marker; a storage without it is checked, and one
    left half made (no run in it) is made again. One that holds runs is named, with the repair."""
    import sqlite3

    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    home = Path(_env(cfg)["DAGSTER_HOME"])
    home.mkdir(parents=True)
    # the state such a kill leaves: the storage made some tables short (the event log's partitions)
    subprocess.run([sys.executable, "-c", "from dagster import DagsterInstance\nwith DagsterInstance.get(): pass"],
                   env={**os.environ, "DAGSTER_HOME": str(home)}, check=True, capture_output=True)

    def empty_index() -> None:
        with sqlite3.connect(home / "history" / "runs" / "index.db") as db:
            db.execute("DROP TABLE dynamic_partitions")

    empty_index()
    out = _run(["ingest"], cfg)
    assert out.returncode == 0, out.stderr
    assert "its storage was left half made (a process killed while creating it); made again" in out.stderr
    assert (home / ".created").is_file() and list(home.glob("history.half-made-*"))
    assert _run(["ingest"], cfg).returncode == 0

    (home / ".created").unlink()  # the same damage in a storage that holds runs: named, not thrown away
    empty_index()
    out = _run(["ingest"], cfg)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert f"the Dagster storage in {home} is damaged and holds" in out.stderr
    assert f"DAGSTER_HOME={home} dagster instance migrate" in out.stderr


def test_a_dagster_home_damaged_after_its_creation_is_named_with_the_fix(tmp_path):
    """A Dagster home whose ``dagster.yaml`` got a YAML typo (docs/deploy.md has users edit it) or one
    of whose SQLite files was overwritten (a disk fault, a bad copy) after its creation: the ingest died
    with a 70-100 line traceback. Now one ``error:`` line names the file and the fix (exit status 2),
    and nothing stored is touched."""
    write_docs(tmp_path / "docs", {"a.md": "# Widgets\n\nAcme widgets are blue.\n"})
    cfg = write_config(tmp_path)
    assert _run(["ingest"], cfg).returncode == 0
    home = Path(_env(cfg)["DAGSTER_HOME"])
    good = tmp_path / "home.good"
    shutil.copytree(home, good)
    rows = get_context(cfg).chunks.count("guide")
    for rel, damage, says in (
            ("dagster.yaml", b"telemetry: [enabled: false\n",
             "is not valid YAML (line 2): expected ',' or ']', but got '<stream end>'; fix it (docs/deploy.md), "
             "or move it away and run the command again"),
            ("history/runs/index.db", bytes(range(256)) * 80, "is damaged (file is not a database); move"),
            ("schedules/schedules.db", bytes(range(256)) * 20, "is damaged (file is not a database); move")):
        shutil.rmtree(home)
        shutil.copytree(good, home)
        (home / rel).write_bytes(damage)
        for command in (["ingest"], ["prune"]):  # prune: said before it deletes anything
            out = _run(command, cfg)
            assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, (command, out.stderr)
            assert out.stderr.startswith("error: ") and str(home / rel) in out.stderr and says in out.stderr, out.stderr
            assert get_context(cfg).chunks.count("guide") == rows


def test_a_dagster_yaml_left_empty_by_a_full_disk_is_written_again(tmp_path, monkeypatch):
    """The first ingest on a full disk created ``dagster.yaml`` and could not write it (exit 74, fine);
    the file stayed empty, and since only a missing one was written, every later ingest ran Dagster
    with its defaults: telemetry on (``.telemetry/``, ``logs/event.log`` in the home), where docs-rag's
    file turns it off. The file is now written whole or not at all, and an empty one (or white space
    only) is written again; one with content is the operator's and kept."""
    from docs_rag_pipeline.cli import DAGSTER_YAML, ensure_dagster_home
    from docs_rag_pipeline.config import load_config

    cfg = write_config(tmp_path)
    home = tmp_path / "data" / "dagster_home"
    home.mkdir(parents=True)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # <storage>/dagster_home; ensure_dagster_home sets it
    for left in (b"", b"\n  \n"):
        (home / "dagster.yaml").write_bytes(left)
        assert ensure_dagster_home(load_config(cfg)) == home.resolve()
        assert (home / "dagster.yaml").read_text() == DAGSTER_YAML
    assert not (home / ".telemetry").exists() and not (home / "logs").exists()
    mine = "telemetry:\n  enabled: false\nretention:\n  schedule:\n    purge_after_days: 30\n"
    (home / "dagster.yaml").write_text(mine)
    ensure_dagster_home(load_config(cfg))
    assert (home / "dagster.yaml").read_text() == mine
    assert not [p.name for p in home.iterdir() if p.name.startswith(".dagster.yaml.")]  # no temporary file


WORKER = """
import sys
from dagster import DagsterInstance, materialize
from docs_rag_pipeline.config import load_config
from docs_rag_pipeline.defs.assets import ingest_assets
from docs_rag_pipeline.defs.definitions import build_definitions

with DagsterInstance.get() as instance:  # as the run worker the UI or daemon launches: no docs-rag ingest tags
    materialize(ingest_assets, partition_key="guide", instance=instance,
                resources=build_definitions(load_config()).resources)
"""


def test_a_run_whose_worker_was_killed_with_the_ui_is_marked_failed(tmp_path):
    """A run the UI or the daemon launched (Dagster's default run launcher, no run monitoring for it)
    stayed STARTED forever when its worker was killed with them (SIGKILL of docs-rag ui's process group):
    the UI showed it in progress through every restart, and prune kept its files. Its first step now names
    its worker process on the run (``docs_rag/worker``: machine, pid, run id), and the next ingest (or
    docs-rag ui, or prune) marks it failed once that process is gone."""
    from dagster import DagsterRunStatus

    from docs_rag_pipeline.cli import WORKER_TAG

    cfg = _project(tmp_path)
    assert _run(["ingest"], cfg).returncode == 0  # the Dagster home and the partition exist
    (tmp_path / "docs" / "new.md").write_text("# New\n\nA new page about quasar calibration.\n")
    (tmp_path / "worker.py").write_text(WORKER)
    with locks.writer_lock(tmp_path / "data", purpose="the test, holding the lock"):
        proc = subprocess.Popen([sys.executable, str(tmp_path / "worker.py")], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, env=_env(cfg), cwd=tmp_path, stdin=subprocess.DEVNULL)
        _stderr_until(proc, "[LOCK] waiting")  # its run is under way, waiting to write
        proc.kill()
        assert proc.wait() == -signal.SIGKILL
    with DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        killed = instance.get_runs(limit=1)[0]
        assert killed.status == DagsterRunStatus.STARTED
        assert killed.tags[WORKER_TAG].endswith(f":{proc.pid}:{killed.run_id}"), killed.tags
    out = _run(["ingest"], cfg)
    assert out.returncode == 0, out.stderr
    assert f"run {killed.run_id}: its run worker process (pid {proc.pid}) is gone; marked failed" in out.stderr
    with DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        assert instance.get_run_by_id(killed.run_id).status == DagsterRunStatus.FAILURE


def test_the_run_of_a_killed_ingest_is_marked_failed_by_the_next(tmp_path):
    """A ``docs-rag ingest`` killed by SIGKILL (or the OOM killer) left its Dagster run ``STARTED``
    forever (in-process runs have no run monitoring): the UI showed it and its partition in progress.
    The next ingest marks such a run failed, when its process on this machine is gone."""
    from dagster import DagsterRunStatus

    cfg = _project(tmp_path)
    with locks.writer_lock(tmp_path / "data", purpose="the test, holding the lock"):
        proc = _start(["ingest"], cfg)
        _stderr_until(proc, "[LOCK] waiting")  # its run is under way, waiting to write
        proc.kill()
        assert proc.wait() == -signal.SIGKILL
    home = tmp_path / "dagster_home"
    with DagsterInstance.from_config(str(home)) as instance:
        killed = instance.get_runs()[0]
        assert killed.status == DagsterRunStatus.STARTED
        # a re-execution of it running now (the UI, the retry daemon): Dagster copies the parent's tags,
        # the dead pid's included; it is not this ingest's to mark failed
        rerun = instance.add_run(killed._replace(run_id=uuid.uuid4().hex, tags={
            **killed.tags, "dagster/parent_run_id": killed.run_id, "dagster/root_run_id": killed.run_id}))
    out = _run(["ingest"], cfg)
    assert out.returncode == 0, out.stderr
    assert f"run {killed.run_id}: its docs-rag ingest process (pid {proc.pid}) is gone; marked failed" in out.stderr
    with DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_run_by_id(killed.run_id).status == DagsterRunStatus.FAILURE
        assert [r.run_id for r in instance.get_runs() if r.status == DagsterRunStatus.STARTED] == [rerun.run_id]
