"""The Dagster layer: definitions load, partitions follow the config, schedules are set."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from dagster import AssetKey, DagsterInstance, build_sensor_context

from docs_rag_pipeline.defs.automation import sources_sensor
from docs_rag_pipeline.defs.definitions import build_definitions

from .conftest import REPO, write_config


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
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("sources", ["beta", "gone"])
        result = sources_sensor(build_sensor_context(instance=instance))
        adds = [r for r in result.dynamic_partitions_requests if type(r).__name__.startswith("Add")]
        dels = [r for r in result.dynamic_partitions_requests if type(r).__name__.startswith("Delete")]
        assert [list(r.partition_keys) for r in adds] == [["alpha"]]
        assert [list(r.partition_keys) for r in dels] == [["gone"]]
        assert [r.partition_key for r in result.run_requests] == ["alpha"]


def test_a_source_removed_and_added_again_gets_a_first_run_again(tmp_path, monkeypatch):
    """Dagster launches one run per run key of a sensor, ever: with the key ``new-source-<name>`` a
    source taken out of the config and put back got its partition again but never its first run."""
    (tmp_path / "docs").mkdir()
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(tmp_path / "docs_rag.yaml"))
    with DagsterInstance.ephemeral() as instance:
        cursor, keys = None, []
        for sources in ("[{name: alpha, kind: local, path: docs}]", "[]", "[{name: alpha, kind: local, path: docs}]",
                        "[{name: alpha, kind: local, path: docs}]"):
            (tmp_path / "docs_rag.yaml").write_text(f"storage: data\nsources: {sources}\n")
            result = sources_sensor(build_sensor_context(instance=instance, cursor=cursor))
            for r in result.dynamic_partitions_requests:  # as the daemon applies them
                if type(r).__name__.startswith("Add"):
                    instance.add_dynamic_partitions("sources", list(r.partition_keys))
                else:
                    for key in r.partition_keys:
                        instance.delete_dynamic_partition("sources", key)
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
