"""The Dagster layer: thin assets over the core. Import :mod:`.definitions` for ``Definitions``."""
