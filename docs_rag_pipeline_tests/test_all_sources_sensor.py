"""``refresh_all_sources`` launched from the UI or the daemon runs no asset check and no ``eval_scores``:
the sensor ``evaluate_refreshed_sources`` requests one ``evaluate_source`` run per source that a
successful run refreshed, read from that run's event log. Real job, real instance, real checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import (AssetCheckKey, AssetKey, DagsterEventType, DagsterInstance, DefaultSensorStatus, RunRequest,
                     build_run_status_sensor_context)

from docs_rag_pipeline import cli
from docs_rag_pipeline.defs import automation
from docs_rag_pipeline.defs.automation import evaluate_refreshed_sources
from docs_rag_pipeline.defs.definitions import build_definitions

from .conftest import GUIDE, write_config, write_docs

HANDBOOK = {
    "index.md": """
        # On-call handbook

        The on-call engineer answers pages within fifteen minutes.
    """,
    "escalation.md": """
        # Escalation

        Escalate to the platform lead when the QUOKKA_7 alarm fires twice in one hour.
    """,
}

LANCEDB_CHECKS = {"chunks_are_well_formed", "parent_links_resolve"}


class Setup:
    """Two local sources, their definitions and an instance that ran refresh_all_sources for both."""

    def __init__(self, root: Path, instance: DagsterInstance) -> None:
        write_docs(root / "guide_docs", GUIDE)
        write_docs(root / "handbook_docs", HANDBOOK)
        self.cfg = write_config(root, sources="""
          - {name: guide, kind: local, path: guide_docs, base_url: "https://docs.example.org/"}
          - {name: handbook, kind: local, path: handbook_docs, base_url: "https://oncall.example.org/"}
        """)
        self.defs = build_definitions(config_path=str(self.cfg))
        self.instance = instance
        self.both = self.refresh_all()

    def refresh_all(self, sources: list[str] | None = None):  # noqa: ANN201 - an ExecuteInProcessResult
        """One run of refresh_all_sources, in process (the in-process executor), on the instance."""
        job = self.defs.resolve_job_def("refresh_all_sources")
        result = job.execute_in_process(instance=self.instance,
                                        run_config={"ops": {"source_names": {"config": {"sources": sources or []}}}})
        assert result.success
        return result

    def sensor(self, result, *, run=None):  # noqa: ANN001, ANN201 - the run's result, an optional DagsterRun
        """The sensor evaluated for the success of ``result``'s run: its run requests."""
        context = build_run_status_sensor_context(
            sensor_name=evaluate_refreshed_sources.name, dagster_event=result.get_run_success_event(),
            dagster_instance=self.instance, dagster_run=run or result.dagster_run)
        out = evaluate_refreshed_sources(context)
        return [r for r in (out or []) if isinstance(r, RunRequest)]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory):
    with DagsterInstance.ephemeral() as instance:
        yield Setup(tmp_path_factory.mktemp("all_sources_sensor"), instance)


def written(result) -> dict[str, dict]:  # noqa: ANN001
    """The run's lancedb_chunks summaries by source."""
    return {m.partition: m.metadata["summary"].value for m in result.asset_materializations_for_node("write_source")}


def test_the_job_and_sensor_are_registered(setup: Setup):
    job = setup.defs.resolve_job_def("evaluate_source")
    assert job.partitions_def.name == "sources"
    assert {k.to_user_string() for k in job.asset_layer.selected_asset_keys} == {"eval_scores"}
    checks = {k for data in job.asset_layer.data for k in data.assets_def.check_keys}
    assert {k.name for k in checks if k.asset_key == AssetKey("lancedb_chunks")} == LANCEDB_CHECKS
    assert {k.name for k in checks if k.asset_key == AssetKey("scraped_pages")} == {"scan_completed"}
    assert {k for k in checks if k.asset_key == AssetKey("eval_scores")} == set(automation.eval_scores.check_keys)
    sensor = setup.defs.resolve_sensor_def("evaluate_refreshed_sources")
    assert sensor.default_status == DefaultSensorStatus.RUNNING
    assert sensor.job_name == "evaluate_source"
    assert [j.name for j in sensor._monitored_jobs] == ["refresh_all_sources"]  # noqa: SLF001 - no public accessor
    # runs of `docs-rag ingest --parallel` are left to the CLI, which runs the checks itself
    assert automation.INGEST_TAG is cli.INGEST_TAG


def test_a_run_of_two_sources_requests_one_evaluation_each_and_it_runs_the_gates(setup: Setup):
    run_id = setup.both.run_id
    assert set(written(setup.both)) == {"guide", "handbook"}
    requests = setup.sensor(setup.both)
    assert sorted((r.partition_key, r.run_key) for r in requests) == [
        ("guide", f"{run_id}:guide"), ("handbook", f"{run_id}:handbook")]
    assert all(r.tags["docs_rag/refreshed_by"] == run_id for r in requests)

    # the requested run, as the daemon would launch it: evaluate_source for one partition
    request = next(r for r in requests if r.partition_key == "handbook")
    job = setup.defs.resolve_job_def("evaluate_source")
    result = job.execute_in_process(instance=setup.instance, partition_key=request.partition_key,
                                    tags=request.tags)
    assert result.success
    evaluation = setup.instance.get_run_by_id(result.run_id)
    assert evaluation.tags["dagster/partition"] == "handbook"

    # eval_scores materialized for that partition (no golden cases here: 0 cases), by this run
    event = setup.instance.get_latest_materialization_event(AssetKey("eval_scores"))
    assert event.run_id == result.run_id
    assert event.asset_materialization.partition == "handbook"
    assert event.asset_materialization.metadata["cases"].value == 0
    # lancedb_chunks itself was not rewritten: its latest materialization is still refresh_all_sources'
    assert setup.instance.get_latest_materialization_event(AssetKey("lancedb_chunks")).run_id == run_id

    # the lancedb_chunks checks ran in it, on that source's chunks only, and passed
    checks = [r.event_log_entry.dagster_event.asset_check_evaluation_data for r in
              setup.instance.get_records_for_run(result.run_id,
                                                 of_type=DagsterEventType.ASSET_CHECK_EVALUATION).records]
    lancedb = {c.check_name: c for c in checks if c.asset_key == AssetKey("lancedb_chunks")}
    assert set(lancedb) == LANCEDB_CHECKS
    assert all(c.passed for c in lancedb.values()), lancedb
    handbook_chunks = written(setup.both)["handbook"]["chunks_total"]
    assert handbook_chunks < sum(s["chunks_total"] for s in written(setup.both).values())
    assert lancedb["chunks_are_well_formed"].metadata["chunks"].value == handbook_chunks
    assert lancedb["parent_links_resolve"].metadata["chunks"].value == handbook_chunks
    # and the scan check, on the scan refresh_all_sources logged for that source
    scan = next(c for c in checks if c.check_name == "scan_completed")
    assert scan.passed and scan.metadata["stopped_early"].value == "no"
    # the blocking check gates eval_scores: its step starts only after the check's step succeeded
    steps = [(r.event_log_entry.step_key, r.event_log_entry.dagster_event_type) for r in
             setup.instance.get_records_for_run(result.run_id, of_type={DagsterEventType.STEP_START,
                                                                        DagsterEventType.STEP_SUCCESS}).records]
    assert steps.index(("lancedb_chunks_chunks_are_well_formed", DagsterEventType.STEP_SUCCESS)) < \
        steps.index(("eval_scores", DagsterEventType.STEP_START)), steps
    # and eval_scores' own checks
    assert {c.check_name for c in checks if c.asset_key == AssetKey("eval_scores")} == {
        k.name for k in automation.eval_scores.check_keys}
    assert setup.instance.event_log_storage.get_asset_check_execution_history(
        AssetCheckKey(AssetKey("lancedb_chunks"), "chunks_are_well_formed"), limit=1)[0].run_id == result.run_id


def test_a_run_of_one_source_requests_only_that_one(setup: Setup):
    # both partitions were materialized before (by the first run); this run refreshes only guide
    one = setup.refresh_all(["guide"])
    assert set(written(one)) == {"guide"}
    requests = setup.sensor(one)
    assert [(r.partition_key, r.run_key) for r in requests] == [("guide", f"{one.run_id}:guide")]


def test_removed_partitions_and_cli_runs_are_skipped(setup: Setup):
    instance = setup.instance
    instance.delete_dynamic_partition("sources", "guide")
    try:
        assert [r.partition_key for r in setup.sensor(setup.both)] == ["handbook"]
    finally:
        instance.add_dynamic_partitions("sources", ["guide"])
    run = setup.both.dagster_run
    assert len(setup.sensor(setup.both)) == 2
    # `docs-rag ingest --parallel` tags its run and runs the checks (and --eval) itself afterwards
    cli_run = run.with_tags({**run.tags, cli.INGEST_TAG: "token"})
    assert setup.sensor(setup.both, run=cli_run) == []


def test_a_run_where_one_source_failed_gets_the_others_it_wrote_evaluated(tmp_path):
    """daemonreal F2: a refresh_all_sources run launched from the UI in which one source failed (its git
    remote gone, its folder moved) still wrote the other sources' rows, but the run ended FAILURE and
    evaluate_refreshed_sources watches successes only: no evaluate_source run was requested, so their new
    rows never met chunks_are_well_formed nor eval_scores (``docs-rag ingest --parallel`` checks them).
    The sensor evaluate_sources_of_failed_refreshes requests one for each source such a run wrote."""
    write_docs(tmp_path / "guide_docs", GUIDE)
    cfg = write_config(tmp_path, sources="""
      - {name: guide, kind: local, path: guide_docs, base_url: "https://docs.example.org/"}
      - {name: moved, kind: local, path: moved_away, base_url: "https://moved.example.org/"}
    """)
    defs = build_definitions(config_path=str(cfg))
    sensor = defs.resolve_sensor_def("evaluate_sources_of_failed_refreshes")
    assert sensor.default_status == DefaultSensorStatus.RUNNING and sensor.job_name == "evaluate_source"
    assert [j.name for j in sensor._monitored_jobs] == ["refresh_all_sources"]  # noqa: SLF001 - no public accessor
    with DagsterInstance.ephemeral() as instance:
        result = defs.resolve_job_def("refresh_all_sources").execute_in_process(
            instance=instance, raise_on_error=False, run_config={"ops": {"source_names": {"config": {"sources": []}}}})
        assert not result.success and set(written(result)) == {"guide"}
        context = build_run_status_sensor_context(
            sensor_name=sensor.name, dagster_event=result.get_run_failure_event(), dagster_instance=instance,
            dagster_run=result.dagster_run)
        requests = [r for r in (sensor(context) or []) if isinstance(r, RunRequest)]
        assert [(r.partition_key, r.run_key) for r in requests] == [("guide", f"{result.run_id}:guide")]
        assert requests[0].tags["docs_rag/refreshed_by"] == result.run_id
        # a failed `docs-rag ingest --parallel` run is left to the CLI, which checks what it wrote
        cli_run = result.dagster_run.with_tags({**result.dagster_run.tags, cli.INGEST_TAG: "token"})
        context = build_run_status_sensor_context(
            sensor_name=sensor.name, dagster_event=result.get_run_failure_event(), dagster_instance=instance,
            dagster_run=cli_run)
        assert not [r for r in (sensor(context) or []) if isinstance(r, RunRequest)]
