
from dagster import ConfigurableResource, InitResourceContext

from ..context import Context, get_context


class DocsRagResource(ConfigurableResource):
    """The project's config file (``DOCS_RAG_CONFIG`` or ./docs_rag.yaml when unset)."""

    config_path: str | None = None

    def setup_for_execution(self, context: InitResourceContext) -> None:
        # every step that uses the project names its run's worker process on the run, so a run whose
        # worker was killed (the UI or daemon SIGKILLed with it) is marked failed later (cli.py)
        from ..cli import tag_run_worker

        if context.instance is not None and context.dagster_run is not None:
            tag_run_worker(context.instance, context.dagster_run)

    def context(self) -> Context:
        return get_context(self.config_path)
