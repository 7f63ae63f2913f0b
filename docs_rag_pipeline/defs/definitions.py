"""``Definitions`` for ``dagster dev`` (see workspace.yaml)."""

from __future__ import annotations

import os
from pathlib import Path

from dagster import Definitions
from dagster_polars import PolarsParquetIOManager

from ..config import Config, load_config
from .assets import ingest_assets
from .automation import refresh_job, schedules_for, sources_sensor
from .checks import ingest_checks
from .evaluation import eval_scores
from .gaps import doc_gaps, question_log
from .resources import DocsRagResource


def build_definitions(config: Config | None = None, *, config_path: str | None = None) -> Definitions:
    config = config or load_config(config_path)
    # DOCS_RAG_DAGSTER_IO: where the Parquet between assets goes when a run's steps do not share a disk
    # (k8s_job_executor, celery): an object-store URI (needs s3fs), docs/deploy.md; default: local
    io_dir = os.environ.get("DOCS_RAG_DAGSTER_IO") or str(Path(config.storage_path) / "dagster_io")
    return Definitions(
        assets=[*ingest_assets, eval_scores, question_log, doc_gaps],
        asset_checks=ingest_checks,
        jobs=[refresh_job],
        schedules=schedules_for(config),
        sensors=[sources_sensor],
        resources={
            "docs_rag": DocsRagResource(config_path=str(config.path) if config.path else config_path),
            "parquet_io": PolarsParquetIOManager(base_dir=io_dir),
        },
    )


defs = build_definitions()
