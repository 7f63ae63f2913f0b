"""A schedule per source (cron from the config) and a sensor that keeps partitions = sources."""


from dagster import (AssetSelection, DefaultScheduleStatus, DefaultSensorStatus, RunRequest,
                     ScheduleDefinition, SensorEvaluationContext, SensorResult, define_asset_job, sensor)

from ..config import Config, load_config
from .assets import ingest_assets
from .evaluation import eval_scores
from .partitions import sources_partitions

refresh_job = define_asset_job("refresh_source", selection=AssetSelection.assets(*ingest_assets, eval_scores),
                               partitions_def=sources_partitions,
                               description="Refresh one documentation source: pages → chunks → embeddings → LanceDB, then "
                                           "eval_scores (a source without eval/<source>.jsonl records 0 cases).")


def schedules_for(config: Config) -> list[ScheduleDefinition]:
    out = []
    for src in config.sources:
        def run_for(context, _name=src.name):  # noqa: ANN001, ANN202
            return RunRequest(partition_key=_name, run_key=None, tags={"source": _name})

        out.append(ScheduleDefinition(name=f"refresh_{src.name.replace('-', '_')}", cron_schedule=src.cron,
                                      job=refresh_job, execution_fn=run_for,
                                      default_status=DefaultScheduleStatus.RUNNING,
                                      description=f"Refresh source {src.name!r} ({src.cron})"))
    return out


def partition_requests(configured: list[str], existing: list[str]) -> tuple[list[str], list[str]]:
    """Which partitions to add and remove so the partitions equal the configured sources."""
    return ([n for n in configured if n not in existing], [n for n in existing if n not in configured])


@sensor(job=refresh_job, minimum_interval_seconds=60, default_status=DefaultSensorStatus.RUNNING,
        description="Adds a partition (and a first run) for each new source in the config; removes deleted ones.")
def sources_sensor(context: SensorEvaluationContext) -> SensorResult:
    configured = [s.name for s in load_config().sources]
    existing = list(context.instance.get_dynamic_partitions(sources_partitions.name))
    add, remove = partition_requests(configured, existing)
    requests = []
    if add:
        requests.append(sources_partitions.build_add_request(add))
    if remove:
        requests.append(sources_partitions.build_delete_request(remove))
    return SensorResult(run_requests=[RunRequest(partition_key=n, run_key=f"new-source-{n}") for n in add],
                        dynamic_partitions_requests=requests)
