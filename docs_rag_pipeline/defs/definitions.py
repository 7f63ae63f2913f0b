"""``Definitions`` for ``dagster dev`` (see workspace.yaml)."""

from __future__ import annotations

from pathlib import Path

from dagster import Definitions, JobDefinition, definitions

from ..config import Config, config_name, load_config, without_userinfo
from .all_sources import RUN_IO, refresh_all_job
from .assets import ingest_assets
from .automation import (evaluate_job, evaluate_refreshed_sources, evaluate_sources_of_failed_refreshes, refresh_job,
                         schedules_for, sources_sensor)
from .checks import ingest_checks
from .compute_log_helpers import keep_ctrl_c_from_compute_log_helpers
from .evaluation import eval_scores
from .gaps import doc_gaps, question_log
from .resources import DocsRagResource, RunParquetIO, RunPickleIO


keep_ctrl_c_from_compute_log_helpers()  # a terminal's Ctrl-C: one line, no helper's traceback


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


#: the code location's reconstruction metadata that holds the config text the code location was loaded with
TEXT_KEY = "docs_rag/config_text"


def _load_context():  # noqa: ANN202 - dagster's DefinitionsLoadContext, or None
    try:  # not exported by dagster: read with care; without it, every load reads the file (as before)
        from dagster._core.definitions.definitions_load_context import DefinitionsLoadContext

        return DefinitionsLoadContext.get()
    except (ImportError, AttributeError):
        return None


def _code_location_config(name: Path) -> Config:
    """The config the code location is built from. A first load (the code server, which
    then says what is wrong with the file) reads the file. A run's worker and step processes load the
    code location again (a reconstruction); they build it from the text of the first load, never from
    the file as it is then: a config deleted or left half-edited while a run runs must not fail the
    run's next step (which reads the run's own copy of the file, resources.py). A run that loads the
    code location itself (``docs-rag ingest --parallel``) hands its step processes the text the same way."""
    context = _load_context()
    text = None
    try:
        if context is not None and context.load_type.value == "RECONSTRUCTION":
            text = context.reconstruction_metadata.get(TEXT_KEY)
    except AttributeError:  # a dagster whose context reads otherwise: the file, as before
        text = None
    if isinstance(text, str):
        config = load_config(name, data=text.encode("utf-8"))
    else:
        try:
            data: bytes | None = name.resolve().read_bytes()
        except OSError:
            data = None  # load_config says what is wrong with the path
        config = load_config(name, data=data)
        text = (data or b"").decode("utf-8")  # load_config took it as UTF-8
    if context is not None and hasattr(context, "add_to_pending_reconstruction_metadata"):
        # for the processes of its runs, kept in Dagster's run storage: without the passwords a URL may
        # carry (a git source's `repo`), which the definitions do not need (the steps read the run's copy)
        context.add_to_pending_reconstruction_metadata(TEXT_KEY, without_userinfo(text))
    return config


def build_definitions(config: Config | None = None, *, config_path: str | None = None) -> Definitions:
    """The project's definitions. Without ``config``, from the file ``config_path`` (default:
    ``DOCS_RAG_CONFIG``, else ./docs_rag.yaml). The resources are handed the file's name as given (made
    absolute; a symlink is not followed here), so each run reads through a link as it points then."""
    if config is None:
        name = config_name(config_path)
        config, path = _code_location_config(name), str(name)
    else:
        path = str(config.path) if config.path else config_path
    io_dir = io_folder(config)
    return Definitions(
        assets=[*ingest_assets, eval_scores, question_log, doc_gaps],
        asset_checks=ingest_checks,
        jobs=[refresh_job, refresh_all_job, evaluate_job],
        schedules=schedules_for(config),
        sensors=[sources_sensor, evaluate_refreshed_sources, evaluate_sources_of_failed_refreshes],
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


@definitions
def defs() -> Definitions:
    """The code location (``workspace.yaml``), built when Dagster loads it, not when the module is
    imported (a forkserver imports it ahead of the steps it forks)."""
    return build_definitions()
