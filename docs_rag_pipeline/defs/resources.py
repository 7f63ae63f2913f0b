
from dagster import ConfigurableResource

from ..context import Context, get_context


class DocsRagResource(ConfigurableResource):
    """The project's config file (``DOCS_RAG_CONFIG`` or ./docs_rag.yaml when unset)."""

    config_path: str | None = None

    def context(self) -> Context:
        return get_context(self.config_path)
