"""A schedule per source (cron from the config), a sensor that keeps partitions = sources, and one
that evaluates the sources a ``refresh_all_sources`` run refreshed."""

from collections.abc import Iterator

from dagster import (AssetKey, DagsterInvalidDefinitionError, AssetSelection, DagsterEventType, DagsterInstance, DagsterRunStatus,
                     DefaultScheduleStatus, DefaultSensorStatus, RunRequest, RunStatusSensorContext,
                     ScheduleDefinition, SensorEvaluationContext, SensorResult, SkipReason, define_asset_job,
                     RunsFilter, run_status_sensor, sensor)

from ..config import Config, ConfigError, dagster_name, load_config
from ..cli import INGEST_TAG
from .all_sources import refresh_all_job
from .assets import ingest_assets, lancedb_chunks, scraped_pages
from .evaluation import eval_scores
from .partitions import sources_partitions

refresh_job = define_asset_job("refresh_source", selection=AssetSelection.assets(*ingest_assets, eval_scores),
                               partitions_def=sources_partitions,
                               description="Refresh one documentation source: pages → chunks → embeddings → LanceDB, then "
                                           "eval_scores (a source without eval/<source>.jsonl records 0 cases).")


def schedules_for(config: Config) -> list[ScheduleDefinition]:
    out = []
    for i, src in enumerate(config.sources):
        def run_for(context, _name=src.name):  # noqa: ANN001, ANN202
            # the schedules are made when the code location loads: a source removed from the config since
            # keeps its schedule until a reload, and its partition is gone (or never had a run): skip
            try:
                configured = [s.name for s in load_config().sources]
            except ConfigError as exc:  # an invalid config: say so on the tick, launch nothing
                return SkipReason(f"the config cannot be read ({exc}); fix it, and this schedule runs again")
            if _name not in configured:
                return SkipReason(f"source {_name!r} is no longer in the config; reload the code location "
                                  "(Deployment > Reload in the UI, or restart docs-rag ui) to drop this schedule")
            # runs of one source share its Parquet files between assets: a second run would overwrite the
            # first's pages between its steps and fail it (and a run longer than the cron interval, every run)
            busy = _refresh_in_flight(context.instance, _name)
            if busy is not None:
                return SkipReason(f"run {busy.run_id} of source {_name!r} is still {busy.status.value.lower()}; "
                                  "this tick is skipped (two runs of one source overwrite each other's pages "
                                  "between steps and fail); the next tick refreshes it again")
            return RunRequest(partition_key=_name, run_key=None, tags={"source": _name})

        try:
            out.append(ScheduleDefinition(name=f"refresh_{dagster_name(src.name)}", cron_schedule=src.cron,
                                          job=refresh_job, execution_fn=run_for,
                                          default_status=DefaultScheduleStatus.RUNNING,
                                          description=f"Refresh source {src.name!r} ({src.cron})"))
        except DagsterInvalidDefinitionError:  # a cron croniter reads but Dagster does not (e.g. '15W')
            raise ConfigError(f"{config.path or 'docs_rag.yaml'}: sources[{i}].cron: {src.cron!r} is not a cron "
                              "expression Dagster schedules accept; use minute hour day-of-month month day-of-week "
                              "with numbers, names, '*', ',', '-' and '/', e.g. '0 4 * * *'") from None
    return out


def partition_requests(configured: list[str], existing: list[str]) -> tuple[list[str], list[str]]:
    """Which partitions to add and remove so the partitions equal the configured sources."""
    return ([n for n in configured if n not in existing], [n for n in existing if n not in configured])


@sensor(job=refresh_job, minimum_interval_seconds=60, default_status=DefaultSensorStatus.RUNNING,
        description="Adds a partition (and a first run) for each new source in the config; removes deleted ones.")
def sources_sensor(context: SensorEvaluationContext) -> SensorResult | SkipReason:
    from ..shared_storage import SiblingConfigUnreadable, record_added_partitions, removable_partitions

    try:
        config = load_config()
    except ConfigError as exc:  # saved with a typo, or moved: the tick says so; no partition added or deleted
        return SkipReason(f"the config cannot be read ({exc}); fix it, and the next tick adds and removes "
                          "source partitions again")
    configured = [s.name for s in config.sources]
    existing = list(context.instance.get_dynamic_partitions(sources_partitions.name))
    add, _ = partition_requests(configured, existing)
    try:
        # only the partitions of sources this storage held or added that no config of it lists: another
        # project sharing the Dagster home (its own storage) keeps its partitions
        remove = removable_partitions(config, existing)
    except SiblingConfigUnreadable as exc:  # which partitions are its sources is unknown: delete none
        context.log.warning(str(exc))
        remove = []
    busy = _partitions_in_flight(context.instance, remove)
    for name, run_id in busy.items():
        context.log.info(f"source {name!r} was removed from the config; its partition is deleted at a tick after "
                         f"its run {run_id} ends (deleting it under the run failed the run)")
    remove = [n for n in remove if n not in busy]
    requests = []
    if add:  # recorded as this storage's: removed before its first scan (no state folder), it still goes
        record_added_partitions(config, add)
        requests.append(sources_partitions.build_add_request(add))
    if remove:
        requests.append(sources_partitions.build_delete_request(remove))
    # Dagster launches one run per run key of a sensor, ever: a source removed and added again needs a
    # new key for its first run, so the key carries how many ticks added sources (kept in the cursor)
    additions = _additions(context.cursor) + (1 if add else 0)
    return SensorResult(run_requests=[RunRequest(partition_key=n, run_key=f"new-source-{n}-{additions}") for n in add],
                        dynamic_partitions_requests=requests, cursor=str(additions))


IN_FLIGHT = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
             DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]


def _refresh_in_flight(instance: DagsterInstance, name: str):  # noqa: ANN202 - a DagsterRun or None
    """A run not yet ended that refreshes the partition ``name`` through the assets (``refresh_source``,
    ``docs-rag ingest``, a materialization from the UI): those runs share the source's Parquet files. An
    ``evaluate_source`` run only reads the index, and a run whose worker on this machine is gone (killed,
    not yet marked failed) runs nothing: neither holds a tick back."""
    from ..cli import _dead_worker, _this_machine

    for run in instance.get_runs(RunsFilter(statuses=IN_FLIGHT, tags={"dagster/partition": name})):
        if run.job_name != evaluate_job.name and _dead_worker(run, _this_machine()) is None:
            return run
    # a refresh_all_sources run (no partition tag) scans and writes each source it names (none: all of them)
    for run in instance.get_runs(RunsFilter(statuses=IN_FLIGHT, job_name=refresh_all_job.name)):
        if name in (_sources_of(run) or [name]) and _dead_worker(run, _this_machine()) is None:
            return run
    return None


def _sources_of(run) -> list[str]:  # noqa: ANN001 - a DagsterRun
    """The sources a ``refresh_all_sources`` run was given (``ops.source_names.config.sources``); empty: all."""
    conf = run.run_config or {}
    try:
        return list(conf["ops"]["source_names"]["config"]["sources"] or [])
    except (KeyError, TypeError):
        return []


def _partitions_in_flight(instance: DagsterInstance, names: list[str]) -> dict[str, str]:
    """Which of the partitions ``names`` a run not yet ended works on (its ``dagster/partition`` tag; a
    ``refresh_all_sources`` run, which has none, works on all of them), with that run's id. A partition
    deleted under its run failed the run at its next step with Dagster's "Nonexistent partition keys"."""
    if not names:
        return {}
    busy: dict[str, str] = {}
    for run in instance.get_runs(RunsFilter(statuses=IN_FLIGHT)):
        partition = run.tags.get("dagster/partition")
        if partition in names:
            busy.setdefault(partition, run.run_id)
        elif partition is None and run.job_name == "refresh_all_sources":
            for n in names:
                busy.setdefault(n, run.run_id)
    return busy


def _additions(cursor: str | None) -> int:
    return int(cursor) if cursor and cursor.isdecimal() else 0


evaluate_job = define_asset_job(
    "evaluate_source", selection=AssetSelection.assets(eval_scores) | AssetSelection.checks_for_assets(lancedb_chunks, scraped_pages),
    partitions_def=sources_partitions,
    description="The quality gates of one source whose index is already written: the asset checks of "
                "lancedb_chunks, then eval_scores and its checks. Launched by evaluate_refreshed_sources after "
                "each successful refresh_all_sources run (which runs neither).")


def refreshed_sources(instance: DagsterInstance, run_id: str) -> list[str]:
    """The ``lancedb_chunks`` partitions that the run ``run_id`` materialized, in the order it wrote
    them, from the run's event log."""
    out: list[str] = []
    cursor = None
    while True:
        conn = instance.get_records_for_run(run_id, cursor=cursor, of_type=DagsterEventType.ASSET_MATERIALIZATION,
                                            limit=1000)
        for record in conn.records:
            mat = record.event_log_entry.asset_materialization
            if mat is not None and mat.asset_key == AssetKey("lancedb_chunks") and mat.partition \
                    and mat.partition not in out:
                out.append(mat.partition)
        if not conn.has_more:
            return out
        cursor = conn.cursor


def _evaluate_sources_of(context: RunStatusSensorContext) -> Iterator[RunRequest | SkipReason]:
    """One ``evaluate_source`` request per source whose ``lancedb_chunks`` partition the run that
    ended materialized (and whose partition still exists)."""
    run = context.dagster_run
    # runs of `docs-rag ingest --parallel` carry the CLI's tag; the CLI runs the checks (and with
    # --eval eval_scores) itself after them, so they are left alone
    if INGEST_TAG in run.tags:
        yield SkipReason(f"run {run.run_id} is a `docs-rag ingest --parallel` run: the CLI ran the checks itself")
        return
    existing = set(context.instance.get_dynamic_partitions(sources_partitions.name))
    sources = [s for s in refreshed_sources(context.instance, run.run_id) if s in existing]
    if not sources:
        yield SkipReason(f"run {run.run_id} materialized no lancedb_chunks partition that still exists")
    for source in sources:
        yield RunRequest(partition_key=source, run_key=f"{run.run_id}:{source}",
                         tags={"source": source, "docs_rag/refreshed_by": run.run_id})


def _evaluation_sensor(status: DagsterRunStatus, name: str, description: str):  # noqa: ANN202
    """A sensor on ``refresh_all_sources`` runs that end with ``status``: :func:`_evaluate_sources_of`."""
    @run_status_sensor(name=name, run_status=status, monitored_jobs=[refresh_all_job], request_job=evaluate_job,
                       default_status=DefaultSensorStatus.RUNNING, description=description)
    def sensor(context: RunStatusSensorContext) -> Iterator[RunRequest | SkipReason]:
        yield from _evaluate_sources_of(context)

    return sensor


evaluate_refreshed_sources = _evaluation_sensor(
    DagsterRunStatus.SUCCESS, "evaluate_refreshed_sources",
    "After a successful refresh_all_sources run: one evaluate_source run (lancedb_chunks' checks, eval_scores) "
    "per source whose lancedb_chunks partition that run materialized.")
# a run in which one source failed (a git remote gone) still wrote the others: their rows are gated too,
# as `docs-rag ingest --parallel` checks each source it wrote whether or not the run failed
evaluate_sources_of_failed_refreshes = _evaluation_sensor(
    DagsterRunStatus.FAILURE, "evaluate_sources_of_failed_refreshes",
    "After a failed refresh_all_sources run: one evaluate_source run per source whose lancedb_chunks partition "
    "that run still materialized (the sources that did not fail).")
