"""The project's resources. Each reads the config as its run's first step read it: a config edited while
a run runs (chunk size, model, storage, a source's path or rules) applies from the next run, and never
to half of one (docs/dagster.md, "Which config a run uses")."""

import hashlib
from pathlib import Path

from dagster import ConfigurableResource, FilesystemIOManager, InitResourceContext, InputContext
from dagster._core.storage.fs_io_manager import PickledObjectFilesystemIOManager
from dagster_polars import PolarsParquetIOManager
from pydantic import PrivateAttr

from ..config import Config, ConfigError, config_name, copy_config, load_config
from ..context import Context, get_context

#: the run tag that names the config text a run reads: ``<run id>:<sha256 of the text>``
CONFIG_TAG = "docs_rag/config"
#: the tag of a run that reads the config of another run (the run id)
CONFIG_OF_TAG = "docs_rag/config_of"
#: the run's copy of the config file, in the run's folder of Dagster's storage (beside its compute logs)
COPY_NAME = "docs_rag_config.yaml"

#: the text each run of this process read (run id -> bytes): each step's resource and IO managers ask
_texts: dict[str, bytes] = {}


def run_config_text(context: InitResourceContext, config_path: str | None) -> bytes | None:
    """The config file's text as the run's first step read it (copied to ``<Dagster storage>/<run id>/``
    then, and named by the run's ``docs_rag/config`` tag); None outside a run: the file as it is. A run
    tagged ``docs_rag/config_of: <run id>`` reads that run's copy (``docs-rag ingest --parallel`` runs the
    checks of each source in a run of their own). A step on a machine that does not share Dagster's
    storage folder finds no copy and reads the file: when the file changed since the run started,
    :class:`ConfigError`, since its text then is not the run's. A re-execution is a run of its own: it
    reads the file as it is when it starts (and an output it reuses from its parent, made under another
    text, is refused: :func:`check_reused_input`). Read once per run and process."""
    instance, run = context.instance, context.dagster_run
    if instance is None or run is None:
        return None
    if (known := _texts.get(run.run_id)) is not None:
        return known
    data = _read_run_config(instance, run, config_path)
    while len(_texts) >= 256:  # a long-lived process (an in-process executor) keeps the recent runs'
        del _texts[next(iter(_texts))]
    _texts[run.run_id] = data
    return data


def _read_run_config(instance, run, config_path: str | None) -> bytes:  # noqa: ANN001 - dagster's
    # the run as stored now: a step process may be handed the run as it was when the run was launched
    tags = (instance.get_run_by_id(run.run_id) or run).tags
    owner = tags.get(CONFIG_OF_TAG) or run.run_id
    copy = Path(instance.storage_directory()) / owner / COPY_NAME
    tagged_run, _, tagged_sha = tags.get(CONFIG_TAG, "").partition(":")
    if tagged_run == owner and not copy.exists():
        data = copy_config(config_path, copy)
        if hashlib.sha256(data).hexdigest() != tagged_sha:
            copy.unlink(missing_ok=True)
            raise ConfigError(f"config file {config_name(config_path)}: "
                              f"changed since run {owner} started, and this step's machine does not share "
                              "Dagster's storage folder, which holds the run's copy of it; launch the run again "
                              "(it then reads the file as it is), or share the folder (docs/deploy.md)")
        return data
    data = copy_config(config_path, copy)
    if tagged_run != owner:  # the first step; a re-execution holds its parent's tag until now
        instance.add_run_tags(run.run_id, {CONFIG_TAG: f"{owner}:{hashlib.sha256(data).hexdigest()}"})
    return data


def _changed(old: object, new: object, where: str = "") -> list[str]:
    """The keys (dotted, as the config file writes them) whose values differ between two configs."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [k for key in sorted(set(old) | set(new), key=str)
                for k in _changed(old.get(key), new.get(key), f"{where}.{key}" if where else str(key))]
    return [] if old == new else [where or "(the whole file)"]


def check_reused_input(context: InputContext, config_path: str | None) -> None:
    """An input this run did not make (a re-execution from a failed or a chosen step reuses what its
    parent made) was made under that run's config. When that differs from this run's (the file was edited
    between the two: another storage folder, model or chunk size), the input's file is elsewhere or was
    made for other settings, and this run would mix the two: say so, and how to go on, rather than fail
    on a missing file or on a refusal with a wrong reason."""
    upstream = context.upstream_output
    try:
        source = upstream.run_id if upstream is not None else None
        run_id = context.step_context.run_id
    except Exception:  # noqa: BLE001 - an input from outside any run (an asset this job does not make)
        return
    mine = _texts.get(run_id)
    if not source or source == run_id or mine is None:
        return
    instance = context.instance
    made_by = instance.get_run_by_id(source)
    owner, _, sha = (made_by.tags.get(CONFIG_TAG, "") if made_by is not None else "").partition(":")
    if not sha or sha == hashlib.sha256(mine).hexdigest():
        return  # the same text (or a run made before runs kept their text: nothing to compare with)
    copy = Path(instance.storage_directory()) / owner / COPY_NAME
    try:
        theirs = load_config(config_path, data=copy.read_bytes()).model_dump(mode="json", exclude={"path"})
        ours = load_config(config_path, data=mine).model_dump(mode="json", exclude={"path"})
        keys = _changed(theirs, ours)
    except (OSError, ConfigError):
        keys = ["(its copy is gone or no longer valid)"]
    if not keys:
        return  # the texts differ only in comments or layout
    raise ConfigError(
        f"input {context.name!r} was made by run {source}, which this run re-executes, under "
        f"another config than this run read (changed: {', '.join(keys[:8])}{' …' if len(keys) > 8 else ''}): "
        f"its data was made for the old settings, or is in the old storage folder. Re-execute all steps "
        f"(the UI's 'Re-execute all', or launch the job anew) to apply the edit; or, to finish run {source} "
        f"as it started, put back the text it read (kept in {copy}) and re-execute from the failure again")


class DocsRagResource(ConfigurableResource):
    """The project's config file (``DOCS_RAG_CONFIG`` or ./docs_rag.yaml when unset), as the run read it
    at its start (:func:`run_config_text`)."""

    config_path: str | None = None
    _init: InitResourceContext | None = PrivateAttr(default=None)
    _text: bytes | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        # every step that uses the project names its run's worker process on the run, so a run whose
        # worker was killed (the UI or daemon SIGKILLed with it) is marked failed later (cli.py)
        from ..cli import tag_run_worker

        if context.instance is not None and context.dagster_run is not None:
            tag_run_worker(context.instance, context.dagster_run)
        self._init = context

    def context(self) -> Context:
        # read here, not in setup_for_execution: a config error then fails the step that needs the
        # config with its own message (naming the file and key), not as "error initializing resource"
        if self._text is None and self._init is not None:
            self._text = run_config_text(self._init, self.config_path)
        return get_context(self.config_path, data=self._text)


def _run_config(context: InitResourceContext, config_path: str | None) -> Config | None:
    """The run's config (:func:`run_config_text`) for an IO manager's folder; None when it cannot be read,
    and the step's own read of it then says what is wrong."""
    try:
        data = run_config_text(context, config_path)
        return load_config(config_path, data=data) if data is not None else None
    except (ConfigError, OSError):
        return None


class RunParquetIO(PolarsParquetIOManager):
    """The Parquet the assets hand each other, in the io folder of the run's config (``base_dir``, the
    folder of the config the code location loaded, when the run's cannot be read)."""

    config_path: str | None = None

    def setup_for_execution(self, context: InitResourceContext) -> None:
        super().setup_for_execution(context)
        from upath import UPath

        from ..refresh import io_folder

        config = _run_config(context, self.config_path)
        if config is not None and (folder := io_folder(config)) != self.base_dir:
            self._base_path = UPath(folder)

    def load_input(self, context: InputContext):  # noqa: ANN201 - a DataFrame or LazyFrame
        check_reused_input(context, self.config_path)
        return super().load_input(context)


class _ReusedCheckedPickleIO(PickledObjectFilesystemIOManager):
    def __init__(self, base_dir: str, config_path: str | None) -> None:
        super().__init__(base_dir=base_dir)
        self._config_path = config_path

    def load_input(self, context: InputContext):  # noqa: ANN201 - what the step pickled
        check_reused_input(context, self._config_path)
        return super().load_input(context)


class RunPickleIO(FilesystemIOManager):
    """``refresh_all_sources``' step outputs, in ``<io folder>/runs`` of the run's config (``base_dir``
    when the run's cannot be read)."""

    config_path: str | None = None

    def create_io_manager(self, context: InitResourceContext) -> PickledObjectFilesystemIOManager:
        from .definitions import run_io_folder

        config = _run_config(context, self.config_path)
        base = run_io_folder(config) if config is not None else self.base_dir
        return _ReusedCheckedPickleIO(base or context.instance.storage_directory(), self.config_path)
