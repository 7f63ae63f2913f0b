from dagster import DagsterInstance, DynamicPartitionsDefinition

from ..config import Config

#: one partition per configured documentation source
sources_partitions = DynamicPartitionsDefinition(name="sources")


def add_source_partitions(instance: DagsterInstance, config: Config, names: list[str]) -> None:
    """Add the partitions among ``names`` that do not exist, recorded first as ``config``'s storage's
    (:func:`~docs_rag_pipeline.shared_storage.record_added_partitions`: a source removed before its
    first scan then loses its partition like any other removed source). Dagster's add reads, then inserts under a
    unique index: another process that adds the same partition in between (two ingests that find a new
    source, an ingest and the sources sensor) made the insert fail with an IntegrityError. The
    partition is there then, as wanted: read again and add only what is still missing."""
    from sqlalchemy.exc import IntegrityError

    from ..shared_storage import record_added_partitions

    for _ in range(5):
        existing = set(instance.get_dynamic_partitions(sources_partitions.name))
        missing = [n for n in names if n not in existing]
        if not missing:
            return
        record_added_partitions(config, missing)
        try:
            instance.add_dynamic_partitions(sources_partitions.name, missing)
            return
        except IntegrityError:  # another process added one of them since the read
            continue
    missing = [n for n in names if n not in set(instance.get_dynamic_partitions(sources_partitions.name))]
    record_added_partitions(config, missing)
    instance.add_dynamic_partitions(sources_partitions.name, missing)
