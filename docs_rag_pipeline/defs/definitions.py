"""``Definitions`` for ``dagster dev`` (see workspace.yaml)."""

from __future__ import annotations

from dagster import Definitions, JobDefinition

from ..config import Config, load_config
from .all_sources import RUN_IO, refresh_all_job
from .assets import ingest_assets
from .automation import evaluate_job, evaluate_refreshed_sources, refresh_job, schedules_for, sources_sensor
from .checks import ingest_checks
from .evaluation import eval_scores
from .gaps import doc_gaps, question_log
from .resources import DocsRagResource, RunParquetIO, RunPickleIO


def io_folder(config: Config) -> str:
    """Where the Parquet between assets goes: ``DOCS_RAG_DAGSTER_IO``, for runs whose steps do not
    share a disk (k8s_job_executor, celery), an object-store URI (needs s3fs), docs/deploy.md; by
    default ``<storage>/dagster_io`` (:func:`..refresh.io_folder`, which the prune of removed sources
    also reads)."""
    from ..refresh import io_folder as folder

    return folder(config)


def run_io_folder(config: Config) -> str:
    """Where ``refresh_all_sources`` keeps its steps' outputs: ``<io folder>/runs/<run id>/``."""
    return f"{io_folder(config).rstrip('/')}/runs"


def build_definitions(config: Config | None = None, *, config_path: str | None = None) -> Definitions:
    config = config or load_config(config_path)
    io_dir = io_folder(config)
    path = str(config.path) if config.path else config_path
    return Definitions(
        assets=[*ingest_assets, eval_scores, question_log, doc_gaps],
        asset_checks=ingest_checks,
        jobs=[refresh_job, refresh_all_job, evaluate_job],
        schedules=schedules_for(config),
        sensors=[sources_sensor, evaluate_refreshed_sources],
        resources={  # each reads the config as the run's first step read it (resources.py)
            "docs_rag": DocsRagResource(config_path=path),
            "parquet_io": RunParquetIO(base_dir=io_dir, config_path=path),
            RUN_IO: RunPickleIO(base_dir=run_io_folder(config), config_path=path),
        },
    )


def refresh_all_sources_job(config_path: str | None = None) -> JobDefinition:
    """``refresh_all_sources`` with its resources: what ``docs-rag ingest --parallel`` executes, and
    what each of its step processes rebuilds (``build_reconstructable_job`` names this function)."""
    return build_definitions(config_path=config_path).resolve_job_def(refresh_all_job.name)


defs = build_definitions()
