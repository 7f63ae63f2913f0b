"""Run the real asset graph for one source in a real (ephemeral) Dagster instance."""

from __future__ import annotations

from pathlib import Path

from dagster import DagsterInstance, materialize

from docs_rag_pipeline.defs.assets import ingest_assets
from docs_rag_pipeline.defs.checks import ingest_checks
from docs_rag_pipeline.defs.definitions import build_definitions


def apply_partition_requests(instance: DagsterInstance, result) -> list[str]:  # noqa: ANN001 - a SensorResult
    """Apply a sensor result's dynamic partition requests to ``instance`` as the daemon does (adds,
    then deletes, in order); the partition keys it deleted."""
    deleted: list[str] = []
    for r in result.dynamic_partitions_requests:
        if type(r).__name__.startswith("Add"):
            instance.add_dynamic_partitions("sources", list(r.partition_keys))
        else:
            deleted += list(r.partition_keys)
            for key in r.partition_keys:
                instance.delete_dynamic_partition("sources", key)
    return deleted


def materialize_source(config_path: Path, source: str, instance: DagsterInstance) -> dict:
    defs_resources = build_definitions(config_path=str(config_path)).resources
    if source not in instance.get_dynamic_partitions("sources"):
        instance.add_dynamic_partitions("sources", [source])
    result = materialize([*ingest_assets, *ingest_checks], partition_key=source, instance=instance,
                         resources=defs_resources)
    assert result.success
    mats = result.asset_materializations_for_node("lancedb_chunks")
    summary = dict(mats[0].metadata["summary"].value)
    summary["_checks"] = {e.asset_check_key.name: e.passed for e in result.get_asset_check_evaluations()}
    summary["_result"] = result
    summary["_log"] = "\n".join(e.user_message for e in instance.all_logs(result.run_id))
    return summary


def index_guide(root: Path) -> Path:
    """The GUIDE docs under ``root/docs``, a config for them and a materialized index: the config path."""
    from .conftest import GUIDE, write_config, write_docs

    write_docs(root / "docs", GUIDE)
    cfg = write_config(root)
    with DagsterInstance.ephemeral() as instance:
        materialize_source(cfg, "guide", instance)
    return cfg
