from dagster import DynamicPartitionsDefinition

#: one partition per configured documentation source
sources_partitions = DynamicPartitionsDefinition(name="sources")
