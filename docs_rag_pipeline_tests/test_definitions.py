"""The Dagster layer: definitions load, partitions follow the config, schedules are set."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from dagster import AssetKey, DagsterInstance, build_sensor_context

from docs_rag_pipeline.defs.automation import sources_sensor
from docs_rag_pipeline.defs.definitions import build_definitions

from .conftest import REPO, write_config
from .dagster_helpers import apply_partition_requests


def test_definitions_have_the_lineage_and_schedules(guide):
    defs = build_definitions(config_path=str(guide))
    graph = defs.resolve_asset_graph()
    assert graph.get(AssetKey("chunks")).parent_keys == {AssetKey("scraped_pages")}
    assert graph.get(AssetKey("embeddings")).parent_keys == {AssetKey("chunks")}
    assert graph.get(AssetKey("lancedb_chunks")).parent_keys == {AssetKey("embeddings"), AssetKey("scraped_pages")}
    for key in ("scraped_pages", "chunks", "embeddings", "lancedb_chunks"):
        # no Dagster pool: a killed run keeps its pool slot and wedges every later run; writers are
        # serialized by an OS file lock instead (test_ingest_safety.py)
        assert defs.resolve_assets_def(key).op.pool is None
    # several sources in one run: the multiprocess executor, a step per source and stage, no pool either
    job = defs.resolve_job_def("refresh_all_sources")
    assert job.executor_def.name == "multiprocess"
    assert {n.name for n in job.graph.nodes} == {"source_names", "scan_source", "chunk_source", "embed_source",
                                                 "write_source", "summarize_sources"}
    assert all(n.definition.pool is None for n in job.graph.nodes)
    sched = defs.resolve_schedule_def("refresh_guide")
    assert sched.cron_schedule == "0 4 * * *"
    assert graph.get(AssetKey("scraped_pages")).partitions_def.name == "sources"


def test_sensor_adds_and_removes_partitions(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    cfg = write_config(tmp_path, sources="""
      - {name: alpha, kind: local, path: docs}
      - {name: beta, kind: local, path: docs}
    """)
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(cfg))
    (tmp_path / "data" / "sources" / "gone").mkdir(parents=True)  # a source this storage held
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("sources", ["beta", "gone"])
        result = sources_sensor(build_sensor_context(instance=instance))
        adds = [r for r in result.dynamic_partitions_requests if type(r).__name__.startswith("Add")]
        dels = [r for r in result.dynamic_partitions_requests if type(r).__name__.startswith("Delete")]
        assert [list(r.partition_keys) for r in adds] == [["alpha"]]
        assert [list(r.partition_keys) for r in dels] == [["gone"]]
        assert [r.partition_key for r in result.run_requests] == ["alpha"]


def test_the_sensor_skips_a_tick_while_the_config_cannot_be_read(tmp_path, monkeypatch):
    """dagsterops F1: a config saved with a typo (or moved away) under the running code location failed
    every sensor tick with a ConfigError traceback, while the schedules skipped theirs with the reason.
    Now the tick is skipped with the reason too, and no partition is added or deleted."""
    from dagster import SkipReason

    (tmp_path / "docs").mkdir()
    cfg = write_config(tmp_path, sources="""
      - {name: alpha, kind: local, path: docs}
    """)
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(cfg))
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("sources", ["alpha"])
        cfg.write_text(cfg.read_text().replace("path: docs}", "path: docs, bogus: 1}"))
        result = sources_sensor(build_sensor_context(instance=instance))
        assert isinstance(result, SkipReason) and "the config cannot be read" in result.skip_message, result
        assert "bogus" in result.skip_message
        cfg.unlink()
        result = sources_sensor(build_sensor_context(instance=instance))
        assert isinstance(result, SkipReason) and "the config cannot be read" in result.skip_message, result
        assert list(instance.get_dynamic_partitions("sources")) == ["alpha"]


def test_a_removed_sources_partition_outlives_its_run_in_flight(tmp_path, monkeypatch):
    """ops3 F1: a source removed from the config while its run ran had its partition deleted under the
    run by the next tick, and the run failed at its next step with Dagster's raw "Partition range web to
    web is not a valid range. Nonexistent partition keys". The sensor now deletes the partition of a
    removed source only at a tick when no run of it (nor a refresh_all_sources run) is in flight."""
    import uuid

    from dagster import DagsterRunStatus
    from dagster._core.storage.dagster_run import DagsterRun

    (tmp_path / "docs").mkdir()
    cfg = write_config(tmp_path, sources="""
      - {name: alpha, kind: local, path: docs}
    """)
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(cfg))
    (tmp_path / "data" / "sources" / "gone").mkdir(parents=True)

    def deleted(instance):
        result = sources_sensor(build_sensor_context(instance=instance))
        return [list(r.partition_keys) for r in result.dynamic_partitions_requests
                if type(r).__name__.startswith("Delete")]

    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("sources", ["alpha", "gone"])
        run = instance.add_run(DagsterRun(job_name="refresh_source", run_id=uuid.uuid4().hex,
                                          status=DagsterRunStatus.STARTED, tags={"dagster/partition": "gone"}))
        assert deleted(instance) == []
        instance.report_run_failed(run)
        whole = instance.add_run(DagsterRun(job_name="refresh_all_sources", run_id=uuid.uuid4().hex,
                                            status=DagsterRunStatus.STARTED))
        assert deleted(instance) == []
        instance.report_run_failed(whole)
        assert deleted(instance) == [["gone"]]


def test_two_projects_sharing_a_dagster_home_keep_each_others_partitions(tmp_path, monkeypatch):
    """Two projects (own config, own storage) on one Dagster home (DAGSTER_HOME, one Postgres): each
    project's sensor deleted the other's partitions (breaking its running ingests) and the other then
    re-added them with a new first run, every minute, forever. A sensor deletes only the partitions
    of sources its storage held (their state folder is there), as ``docs-rag ingest`` does."""
    cfgs = {}
    for project, source in (("a", "alpha"), ("b", "beta")):
        (tmp_path / project / "docs").mkdir(parents=True)
        cfgs[project] = write_config(tmp_path / project, sources=f"- {{name: {source}, kind: local, path: docs}}")
        (tmp_path / project / "data" / "sources" / source).mkdir(parents=True)  # each has ingested its source
    with DagsterInstance.ephemeral() as instance:
        cursors: dict[str, str | None] = {"a": None, "b": None}
        first_runs, deleted = [], []
        for _ in range(3):  # three ticks of a daemon that runs both code locations' sensors
            for project in ("a", "b"):
                monkeypatch.setenv("DOCS_RAG_CONFIG", str(cfgs[project]))
                result = sources_sensor(build_sensor_context(instance=instance, cursor=cursors[project]))
                deleted += apply_partition_requests(instance, result)
                first_runs += [r.partition_key for r in result.run_requests]
                cursors[project] = result.cursor
        assert deleted == [] and first_runs == ["alpha", "beta"]
        assert sorted(instance.get_dynamic_partitions("sources")) == ["alpha", "beta"]

        # a source project a really removed (its state folder is in a's storage) still loses its partition
        cfgs["a"].write_text(cfgs["a"].read_text().replace("name: alpha", "name: alpha2"))
        monkeypatch.setenv("DOCS_RAG_CONFIG", str(cfgs["a"]))
        result = sources_sensor(build_sensor_context(instance=instance, cursor=cursors["a"]))
        assert [list(r.partition_keys) for r in result.dynamic_partitions_requests
                if type(r).__name__.startswith("Delete")] == [["alpha"]]


def test_a_source_renamed_before_its_first_scan_loses_its_partition(tmp_path, monkeypatch):
    """A source added with a typo (``tpyo``) and renamed before its first run scanned has no state
    folder, so the sensor, ``docs-rag ingest`` and ``docs-rag prune`` kept its partition forever (runs of it
    fail with ``unknown source``). The partitions this storage's sensor adds are recorded in the storage
    (``partitions.json``, not under ``sources/``), so that one goes; a partition of another project
    sharing the Dagster home, never added by this storage, is still kept."""
    (tmp_path / "docs").mkdir()
    cfg = tmp_path / "docs_rag.yaml"
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(cfg))
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("sources", ["theirs"])  # another project's, never scanned here either
        cursor, deleted = None, []
        for name in ("tpyo", "typo", "typo"):
            cfg.write_text(f"storage: data\nsources: [{{name: alpha, kind: local, path: docs}}, "
                           f"{{name: {name}, kind: local, path: docs}}]\n")
            result = sources_sensor(build_sensor_context(instance=instance, cursor=cursor))
            deleted += apply_partition_requests(instance, result)
            cursor = result.cursor
        assert deleted == ["tpyo"]
        assert sorted(instance.get_dynamic_partitions("sources")) == ["alpha", "theirs", "typo"]
        assert not (tmp_path / "data" / "sources").exists()  # nothing scanned: no state folder, no stray file
        # the deleted partition is off the record: one of that name another project adds later stays its own
        assert sorted(json.loads((tmp_path / "data" / "partitions.json").read_text())) == ["alpha", "typo"]


def test_a_source_removed_and_added_again_gets_a_first_run_again(tmp_path, monkeypatch):
    """Dagster launches one run per run key of a sensor, ever: with the key ``new-source-<name>`` a
    source taken out of the config and put back got its partition again but never its first run."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "data" / "sources" / "alpha").mkdir(parents=True)  # a source this storage held
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(tmp_path / "docs_rag.yaml"))
    with DagsterInstance.ephemeral() as instance:
        cursor, keys = None, []
        for sources in ("[{name: alpha, kind: local, path: docs}]", "[]", "[{name: alpha, kind: local, path: docs}]",
                        "[{name: alpha, kind: local, path: docs}]"):
            (tmp_path / "docs_rag.yaml").write_text(f"storage: data\nsources: {sources}\n")
            result = sources_sensor(build_sensor_context(instance=instance, cursor=cursor))
            apply_partition_requests(instance, result)
            keys += [r.run_key for r in result.run_requests]
            cursor = result.cursor
        assert len(keys) == 2 and len(set(keys)) == 2  # added twice: two first runs, then nothing
        assert list(instance.get_dynamic_partitions("sources")) == ["alpha"]


def test_dagster_loads_the_workspace(guide):
    env = {**os.environ, "DOCS_RAG_CONFIG": str(guide), "DAGSTER_HOME": str(guide.parent / "dh")}
    (guide.parent / "dh").mkdir()
    out = subprocess.run([sys.executable, "-m", "dagster", "definitions", "validate", "-w", "workspace.yaml"],
                         cwd=REPO, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    # the code location's name is the one docs/dagster.md gives (not the module path)
    assert re.search(r"Validation successful for code location docs_rag_pipeline\.$", out.stdout + out.stderr, re.M), \
        out.stdout + out.stderr


def test_the_schedule_of_a_source_removed_from_the_config_skips_its_ticks(tmp_path, monkeypatch):
    """Schedules are made when the code location loads. A source removed from the config while
    ``docs-rag ui`` runs kept its schedule until a reload, and every tick launched a run of a source that
    no longer exists (or failed on its deleted partition). The tick now re-reads the config and skips,
    naming the reload that drops the schedule; the other sources' ticks run as before."""
    from dagster import build_schedule_context, instance_for_test, partition_loading_context

    (tmp_path / "docs").mkdir()
    cfg = write_config(tmp_path, sources="""
      - {name: alpha, kind: local, path: docs}
      - {name: beta, kind: local, path: docs}
    """)
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(cfg))
    defs = build_definitions(config_path=str(cfg))
    write_config(tmp_path, sources="- {name: alpha, kind: local, path: docs}")  # beta removed
    repo = defs.get_repository_def()
    # a schedule's tick reads the instance through its ref (runs in flight), as under the daemon
    with instance_for_test() as instance, \
            partition_loading_context(dynamic_partitions_store=instance):
        instance.add_dynamic_partitions("sources", ["alpha", "beta"])
        tick = lambda name: defs.resolve_schedule_def(name).evaluate_tick(  # noqa: E731
            build_schedule_context(instance=instance, repository_def=repo))
        beta, alpha = tick("refresh_beta"), tick("refresh_alpha")
        assert not beta.run_requests and "no longer in the config" in beta.skip_message, beta
        assert [r.partition_key for r in alpha.run_requests] == ["alpha"], alpha
        (tmp_path / "docs_rag.yaml").write_text("sources: [\n")  # broken: nothing is launched, the tick says why
        alpha = tick("refresh_alpha")
    assert not alpha.run_requests and "cannot be read" in alpha.skip_message, alpha


def test_a_schedule_skips_its_tick_while_a_run_of_its_source_is_in_flight(tmp_path, monkeypatch):
    """daemonreal F1: runs of one source share its Parquet files between assets, so a schedule tick that
    launched a run while the last one still ran overwrote that run's pages between its steps, and it
    failed at lancedb_chunks (StaleInputsError); under a real daemon with runs longer than the cron
    interval every run failed and the source was never indexed. The tick now skips while a run of the
    source is in flight; an evaluate_source run (it reads the index only) and a run whose worker is gone
    hold nothing back, and the tick after the run ended launches again. A refresh_all_sources run that
    refreshes the source holds it back too (it scans and writes the same source's state and rows)."""
    import uuid

    from dagster import DagsterRunStatus, build_schedule_context, instance_for_test, partition_loading_context
    from dagster._core.storage.dagster_run import DagsterRun

    from docs_rag_pipeline.cli import WORKER_TAG, _this_machine

    (tmp_path / "docs").mkdir()
    cfg = write_config(tmp_path, sources="- {name: alpha, kind: local, path: docs, cron: '* * * * *'}")
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(cfg))
    defs = build_definitions(config_path=str(cfg))
    repo = defs.get_repository_def()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that no process holds now
    with instance_for_test() as instance, \
            partition_loading_context(dynamic_partitions_store=instance):
        instance.add_dynamic_partitions("sources", ["alpha"])

        def tick():  # noqa: ANN202
            return defs.resolve_schedule_def("refresh_alpha").evaluate_tick(
                build_schedule_context(instance=instance, repository_def=repo))

        def run(job: str, status: DagsterRunStatus, run_id: str | None = None, **tags: str) -> DagsterRun:
            return instance.add_run(DagsterRun(job_name=job, run_id=run_id or uuid.uuid4().hex, status=status,
                                               tags={"dagster/partition": "alpha", **tags}))

        running = run("refresh_source", DagsterRunStatus.STARTED)
        skipped = tick()
        assert not skipped.run_requests, skipped
        assert f"run {running.run_id} of source 'alpha' is still started" in skipped.skip_message
        instance.report_run_failed(running)
        starting = run("refresh_source", DagsterRunStatus.STARTING)
        assert "is still starting" in tick().skip_message
        instance.report_run_canceled(starting)
        run("evaluate_source", DagsterRunStatus.STARTED)
        # a refresh_all_sources run (no partition tag) of every source, or of a list that names this one
        for sources in ([], ["beta", "alpha"]):
            everything = instance.add_run(DagsterRun(job_name="refresh_all_sources", run_id=uuid.uuid4().hex,
                                                     status=DagsterRunStatus.STARTED, run_config={
                                                         "ops": {"source_names": {"config": {"sources": sources}}}}))
            assert f"run {everything.run_id} of source 'alpha' is still started" in tick().skip_message
            instance.report_run_failed(everything)
        instance.add_run(DagsterRun(job_name="refresh_all_sources", run_id=uuid.uuid4().hex,  # of others only
                                    status=DagsterRunStatus.STARTED,
                                    run_config={"ops": {"source_names": {"config": {"sources": ["beta"]}}}}))
        killed = uuid.uuid4().hex  # its worker was killed, and nothing marked it failed yet
        run("refresh_source", DagsterRunStatus.STARTED, killed, **{WORKER_TAG: f"{_this_machine()}:{dead.pid}:{killed}"})
        again = tick()
    assert [r.partition_key for r in again.run_requests] == ["alpha"], again


def test_the_code_location_fails_to_load_with_the_config_error(guide):
    """The code server (the UI, the daemon) reads the config file when it loads the code location and, when
    the file is invalid, fails with the message that names the key (troubleshooting.md). Only a run's
    own processes build it from the text of that load instead (test_run_config.py)."""
    guide.write_text(guide.read_text() + "chunking:\n  target_tokns: 64\n")
    env = {**os.environ, "DOCS_RAG_CONFIG": str(guide), "DAGSTER_HOME": str(guide.parent / "dh")}
    (guide.parent / "dh").mkdir()
    out = subprocess.run([sys.executable, "-m", "dagster", "definitions", "validate", "-w", "workspace.yaml"],
                         cwd=REPO, env=env, capture_output=True, text=True)
    assert out.returncode != 0, out.stdout + out.stderr
    said = out.stdout + out.stderr
    assert "ConfigError" in said and "chunking.target_tokns" in said, said


def test_a_config_named_through_a_symlink_is_read_through_the_link_as_it_points_then(tmp_path, monkeypatch):
    """ops4 F4: ``docs-rag --config current/cfg.yaml ui`` resolved the link once, at startup, so after a
    release switch (``current -> v2``) every run launched from the UI read v1 until a restart; with
    ``DOCS_RAG_CONFIG`` naming the link, runs read v2. Both keep the link now."""
    import hashlib

    from dagster import DagsterInstance, materialize

    from docs_rag_pipeline.cli import main
    from docs_rag_pipeline.defs.assets import ingest_assets
    from docs_rag_pipeline.defs.resources import CONFIG_TAG

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Notes\n\nThe on-call engineer answers pages within an hour.\n")
    for release, tokens in (("v1", 128), ("v2", 64)):
        (tmp_path / release).mkdir()
        (tmp_path / release / "cfg.yaml").write_text(
            f"storage: {tmp_path / 'data'}\nchunking: {{target_tokens: {tokens}}}\n"
            f"sources:\n  - {{name: notes, kind: local, path: {tmp_path / 'docs'}}}\n")
    (tmp_path / "current").symlink_to("v1")
    link = tmp_path / "current" / "cfg.yaml"
    monkeypatch.setenv("DOCS_RAG_CONFIG", "unset-by-the-test")  # restored after the test
    monkeypatch.chdir(tmp_path)
    assert main(["--config", "current/cfg.yaml", "sources"]) == 0
    assert os.environ["DOCS_RAG_CONFIG"] == str(link)  # absolute, and still the link
    resources = build_definitions().resources
    assert resources["docs_rag"].config_path == str(link)
    (tmp_path / "next").symlink_to("v2")
    (tmp_path / "next").rename(tmp_path / "current")  # the switch, atomic
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("sources", ["notes"])
        result = materialize(ingest_assets, partition_key="notes", instance=instance, resources=resources)
        assert result.success
        tag = instance.get_run_by_id(result.run_id).tags[CONFIG_TAG]
    assert tag.endswith(":" + hashlib.sha256((tmp_path / "v2" / "cfg.yaml").read_bytes()).hexdigest())


def test_the_code_location_hands_its_runs_the_config_text_without_passwords(tmp_path, monkeypatch):
    """A run's worker and step processes build the code location from the text its first load read
    (Dagster's reconstruction metadata, kept with each run in Dagster's run storage): never a password
    written into a URL (a git source's ``repo``), which the definitions do not need."""
    from dagster._core.code_pointer import ModuleCodePointer
    from dagster._core.definitions.reconstruct import (
        initialize_repository_def_from_pointer,
        reconstruct_repository_def_from_pointer,
    )

    from docs_rag_pipeline.defs.definitions import TEXT_KEY

    cfg = write_config(tmp_path, sources="- {name: priv, kind: git, repo: 'https://alice:s3cr3t@git.example.org/d.git'}")
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(cfg))
    pointer = ModuleCodePointer("docs_rag_pipeline.defs.definitions", "defs", str(REPO))
    data = initialize_repository_def_from_pointer(pointer).repository_load_data
    text = data.reconstruction_metadata[TEXT_KEY].data
    assert "s3cr3t" not in text and "alice" not in text
    assert "https://git.example.org/d.git" in text and str(tmp_path / "data") in text
    cfg.unlink()  # a run's processes rebuild it from that text, not from the file
    repo = reconstruct_repository_def_from_pointer(pointer, data)
    assert repo.get_job("refresh_source") is not None
