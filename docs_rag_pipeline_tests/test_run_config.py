"""Which config a run uses: the config file as the run's first step read it. Each step used to read the
file anew, so a config edited while a run crawled (ops3's follow-up) gave the run a scan under the old
config and its chunks, vectors and index write under the new one: another chunk size, another model,
another storage folder (the Parquet between steps then missing), or a source it no longer knew.

Each test edits the config from the site's server while the run's first step is crawling, as an
operator editing the file at that moment would."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from dagster import DagsterInstance

from docs_rag_pipeline.context import get_context
from docs_rag_pipeline.defs.resources import CONFIG_TAG

from .conftest import REPO, write_config, write_docs
from .dagster_helpers import materialize_source
from .web_helpers import ScriptedHandler, page, scripted_server

PAGES = {
    "/": ("Acme Widgets Guide", "<p>Acme Widgets builds dashboards from sensor data. Read install and forms.</p>"),
    "/install.html": ("Installing", "<p>Install with pip. If the import fails with ZX81_QUANTUM_FLUX, delete the "
                                    "cache folder and install again.</p>"),
    "/forms.html": ("Forms", "<p>Forms collect user input and validate it before it reaches the server.</p>"),
}


def site_that_edits(edit: dict[str, Path | str]):  # noqa: ANN201 - a LiveServer
    """A three-page site whose last page, when fetched, writes ``edit["text"]`` to ``edit["file"]``."""

    def last(h: ScriptedHandler) -> None:
        Path(edit["file"]).write_text(str(edit["text"]))
        h.reply(200, page(*PAGES["/forms.html"]))

    links = ("install.html", "forms.html")
    return scripted_server({"/": lambda h: h.reply(200, page(*PAGES["/"], links=links)),
                            "/install.html": lambda h: h.reply(200, page(*PAGES["/install.html"])),
                            "/forms.html": last})


def configs(root: Path, url: str, *, second: bool = False) -> tuple[Path, str, str]:
    """The config file (source ``web``, and with ``second`` a local source ``notes``, for a run of
    ``ingest --parallel``; storage ``root/data``) and, as text, the edit made mid-run: the source renamed,
    another storage folder, another chunk size."""
    source = f"""
      - name: web
        kind: web
        seed_urls: ["{url}/"]
        sitemaps: "off"
        respect_robots: false
        delay_seconds: 0
        max_retries: 0
    """
    if second:
        write_docs(root / "notes", {"index.md": "# Notes\n\nThe on-call engineer answers pages within an hour.\n"})
        source += """
      - {name: notes, kind: local, path: notes}
    """
    cfg = write_config(root, sources=source)
    original = cfg.read_text()
    edited = (original.replace(str(root / "data"), str(root / "moved"))
              .replace("name: web", "name: renamed") + "chunking:\n  target_tokens: 64\n  overlap_tokens: 8\n")
    assert edited.count("renamed") == 1 and str(root / "moved") in edited
    return cfg, original, edited


def indexed(cfg: Path, source: str) -> set[str]:
    rows = get_context(cfg).chunks.open().to_arrow().select(["page_url", "source"]).to_pylist()
    return {r["page_url"].rsplit("/", 1)[-1] for r in rows if r["source"] == source}


def test_a_run_in_process_uses_the_config_it_started_with(tmp_path: Path, monkeypatch):
    edit: dict[str, Path | str] = {}
    with site_that_edits(edit) as srv:
        cfg, original, edited = configs(tmp_path, srv.url)
        edit.update(file=cfg, text=edited)
        monkeypatch.setenv("DOCS_RAG_CONFIG", str(cfg))
        with DagsterInstance.ephemeral() as instance:
            summary = materialize_source(cfg, "web", instance)
            run = instance.get_run_by_id(summary["_result"].run_id)
            assert cfg.read_text() == edited  # the edit came during the run
            assert summary["pages_new"] == 3, summary
            # every step read the text the run started with: the old storage holds the index, the new
            # storage was never made, and the run names the text it read
            cfg.write_text(original)
            assert indexed(cfg, "web") == {"", "install.html", "forms.html"}
            assert not (tmp_path / "moved").exists()
            assert run.tags[CONFIG_TAG] == f"{run.run_id}:{hashlib.sha256(original.encode()).hexdigest()}"
            # the next run reads the file as it is then
            cfg.write_text(edited)
            later = materialize_source(cfg, "renamed", instance)
            assert later["pages_new"] == 3 and indexed(cfg, "renamed") == {"", "install.html", "forms.html"}
            assert (tmp_path / "moved").is_dir()


def test_a_run_whose_steps_are_processes_of_their_own_uses_the_config_it_started_with(tmp_path: Path):
    """``docs-rag ingest --parallel`` (two sources): the multiprocess executor, each step in a process that
    loads the code location again (which reads the config file as it is then)."""
    edit: dict[str, Path | str] = {}
    with site_that_edits(edit) as srv:
        cfg, original, edited = configs(tmp_path, srv.url, second=True)
        edit.update(file=cfg, text=edited)
        out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "ingest", "--parallel", "2", "--json"],
                             capture_output=True, text=True, cwd=tmp_path, timeout=540,
                             env={**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "dh")})
    assert out.returncode == 0, out.stderr
    assert cfg.read_text() == edited
    assert "in one Dagster run of refresh_all_sources" in out.stderr
    assert json.loads(out.stdout)["web"]["pages_new"] == 3
    cfg.write_text(original)
    assert indexed(cfg, "web") == {"", "install.html", "forms.html"} and indexed(cfg, "notes") == {"index.md"}
    assert not (tmp_path / "moved").exists()


def test_a_step_that_finds_no_copy_of_the_runs_config_fails_when_the_file_changed(tmp_path: Path):
    """A step on a machine that does not share Dagster's storage folder finds no copy of the run's config
    (here: the copy is deleted as the config is edited). It cannot know the run's text then, and fails
    with a message saying so, rather than run under another config; nothing stored is lost."""
    home = tmp_path / "dh"
    edit: dict[str, Path | str] = {}
    with site_that_edits(edit) as srv:
        cfg, original, edited = configs(tmp_path, srv.url, second=True)
        # the edit keeps the source and storage, so the message is the one that tells what happened
        edited = original + "chunking:\n  target_tokens: 64\n  overlap_tokens: 8\n"
        edit.update(file=cfg, text=edited)
        routes = srv.httpd.routes  # type: ignore[attr-defined]
        last = routes["/forms.html"]

        def forget_the_copy(h: ScriptedHandler) -> None:
            for copy in (home / "storage").glob("*/docs_rag_config.yaml"):
                copy.unlink()
            last(h)

        routes["/forms.html"] = forget_the_copy
        out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "ingest", "--parallel", "2", "--json"],
                             capture_output=True, text=True, cwd=tmp_path, timeout=540,
                             env={**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(home)})
    assert out.returncode == 1, out.stderr
    assert "changed since run" in out.stderr and "does not share Dagster's storage folder" in out.stderr, out.stderr
    assert "launch the run again" in out.stderr


def test_a_run_that_carries_its_parents_config_tag_reads_the_file_as_it_is(tmp_path: Path):
    """A re-execution copies its parent's tags, ``docs_rag/config`` among them: it is a run of its own and
    reads the config file as it is when it starts (a run that failed on a bad value runs with the fixed
    one), not the parent's text; its tag then names its own run and text."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Notes\n\nThe on-call engineer answers pages within an hour.\n")
    cfg = write_config(tmp_path, sources="- {name: notes, kind: local, path: docs}")
    text = cfg.read_bytes()
    parent = "0" * 8 + "-0000-0000-0000-" + "0" * 12
    with DagsterInstance.ephemeral() as instance:
        copy = Path(instance.storage_directory()) / parent / "docs_rag_config.yaml"
        copy.parent.mkdir(parents=True)
        copy.write_text("storage: /nonexistent/parent-storage\nsources: []\n")  # the parent's text, now stale
        from dagster import materialize

        from docs_rag_pipeline.defs.assets import ingest_assets
        from docs_rag_pipeline.defs.definitions import build_definitions

        instance.add_dynamic_partitions("sources", ["notes"])
        result = materialize(ingest_assets, partition_key="notes", instance=instance,
                             resources=build_definitions(config_path=str(cfg)).resources,
                             tags={CONFIG_TAG: f"{parent}:{'f' * 64}", "dagster/parent_run_id": parent})
        assert result.success
        run = instance.get_run_by_id(result.run_id)
        assert run.tags[CONFIG_TAG] == f"{run.run_id}:{hashlib.sha256(text).hexdigest()}"
        assert (Path(instance.storage_directory()) / run.run_id / "docs_rag_config.yaml").read_bytes() == text
    assert indexed(cfg, "notes") == {"index.md"}


def test_a_run_whose_config_is_deleted_mid_run_finishes_on_the_text_it_started_with(tmp_path: Path):
    """ops4 F1: each step process loads the code location again, which read the config file as it was then:
    a config deleted (or left half-edited) while a run ran failed the run at its next step, with no step
    error. Step processes now build the code location from the text its first load read (Dagster's
    reconstruction metadata), and the steps read the run's copy. Here through ``docs-rag ingest --parallel``
    (a forkserver and a process per step); the UI's runs go the same way (a worker process per run)."""
    edit: dict[str, Path | str] = {}
    with site_that_edits(edit) as srv:
        cfg, original, _ = configs(tmp_path, srv.url, second=True)
        edit.update(file=cfg, text="storage: [this is no longer a valid config\n")  # an editor's half-save
        routes = srv.httpd.routes  # type: ignore[attr-defined]
        half_saved = routes["/forms.html"]

        def delete_after_the_half_save(h: ScriptedHandler) -> None:
            half_saved(h)
            cfg.unlink()

        routes["/forms.html"] = delete_after_the_half_save
        out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "ingest", "--parallel", "2", "--json"],
                             capture_output=True, text=True, cwd=tmp_path, timeout=540,
                             env={**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "dh")})
    assert not cfg.exists()  # gone while the run ran
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["web"]["pages_new"] == 3
    cfg.write_text(original)
    assert indexed(cfg, "web") == {"", "install.html", "forms.html"} and indexed(cfg, "notes") == {"index.md"}


def _broken_model(root: Path) -> Path:
    """A copy of the packaged embedding model whose weights are cut short: the run fails at its embeddings."""
    import shutil

    from docs_rag_pipeline.embedding import packaged_model_dir

    model = packaged_model_dir("all-MiniLM-L6-v2")
    copy = root / "broken-model"
    shutil.copytree(model, copy, ignore=shutil.ignore_patterns("model.safetensors"))
    (copy / "model.safetensors").write_bytes((Path(model) / "model.safetensors").read_bytes()[:1000])
    return copy


def test_a_reexecution_that_would_reuse_outputs_made_under_another_config_says_so(tmp_path: Path, monkeypatch):
    """ops4 F2/F3: a re-execution from a failed step reuses its parent's outputs, made under the parent's
    config. After the model was fixed it refused at the index write with a wrong reason (another refresh
    wrote the source); after ``storage`` moved, with a raw FileNotFoundError of the Parquet between steps.
    It now says which settings changed and what to do; re-executing all steps then applies the edit, and
    an edit of comments only changes nothing."""
    from dagster import DagsterInstance, ReexecutionOptions, execute_job
    from dagster._core.definitions.reconstruct import ReconstructableRepository

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Notes\n\nThe on-call engineer answers pages within an hour.\n")
    broken = _broken_model(tmp_path)

    def write(storage: str, model: str, comment: str = "") -> None:
        cfg.write_text(f"{comment}storage: {tmp_path / storage}\nembedding: {{provider: local, model: {model}}}\n"
                       "sources:\n  - {name: notes, kind: local, path: docs}\n")

    cfg = tmp_path / "docs_rag.yaml"
    write("data", str(broken))
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(cfg))
    job = ReconstructableRepository.for_module("docs_rag_pipeline.defs.definitions", "defs",
                                               working_directory=str(REPO)).get_reconstructable_job("refresh_source")
    in_process = {"execution": {"config": {"in_process": {}}}}
    (tmp_path / "dh").mkdir()
    with DagsterInstance.from_config(str(tmp_path / "dh")) as instance:
        instance.add_dynamic_partitions("sources", ["notes"])

        def run(reexecute: ReexecutionOptions | None = None):  # noqa: ANN202 - the result and its step errors
            result = execute_job(job, instance, run_config=in_process, tags={"dagster/partition": "notes"},
                                 reexecution_options=reexecute, raise_on_error=False)
            errors = {e.step_key: str(e.event_specific_data.error) for e in result.all_events
                      if e.is_step_failure}
            return result, errors

        parent, errors = run()
        assert not parent.success and set(errors) == {"embeddings"}, errors
        # a comment only: the reused outputs are loaded, and the step fails again on the same model
        write("data", str(broken), comment="# still the broken model\n")
        again, errors = run(ReexecutionOptions.from_failure(parent.run_id, instance))
        assert set(errors) == {"embeddings"} and "was made by run" not in errors["embeddings"], errors
        for storage, changed in (("data", "changed: embedding.model)"), ("moved", "changed: embedding.model, storage)")):
            write(storage, "all-MiniLM-L6-v2")
            result, errors = run(ReexecutionOptions.from_failure(parent.run_id, instance))
            message = errors.get("embeddings", "")
            assert not result.success and f"input 'chunks' was made by run {parent.run_id}" in message, errors
            assert changed in message and "Re-execute all steps" in message, message
            assert "FileNotFoundError" not in message and "another refresh" not in message, message
        # all steps again: the edit applies (the new storage, the fixed model)
        result, errors = run(ReexecutionOptions(parent_run_id=parent.run_id))
        assert result.success, errors
    assert indexed(cfg, "notes") == {"index.md"} and (tmp_path / "moved" / "lancedb").is_dir()



def test_a_reexecution_of_refresh_all_sources_that_would_reuse_outputs_of_another_config_says_so(tmp_path: Path):
    """The same for ``refresh_all_sources`` (``docs-rag ingest --parallel``), whose steps hand each other
    pickles under ``<io folder>/runs/<run id>/``: a re-execution from its failed steps after the model was
    fixed refuses at the first output it would reuse, naming the change."""
    from dagster import DagsterInstance, ReexecutionOptions, build_reconstructable_job, execute_job

    write_docs(tmp_path / "docs", {"index.md": "# Notes\n\nThe on-call engineer answers pages within an hour.\n"})
    write_docs(tmp_path / "more", {"index.md": "# More\n\nThe night shift rotates every second week.\n"})
    cfg = write_config(tmp_path, extra=f"embedding: {{provider: local, model: {_broken_model(tmp_path)}}}\n", sources="""
      - {name: notes, kind: local, path: docs}
      - {name: more, kind: local, path: more}
    """)
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "dh")}
    out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "ingest", "--parallel", "2"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=540, env=env)
    assert out.returncode == 1, out.stderr
    cfg.write_text(cfg.read_text().replace(str(tmp_path / "broken-model"), "all-MiniLM-L6-v2"))
    job = build_reconstructable_job("docs_rag_pipeline.defs.definitions", "refresh_all_sources_job",
                                    reconstructable_kwargs={"config_path": str(cfg)})
    with DagsterInstance.from_config(str(tmp_path / "dh")) as instance:
        parent = next(r for r in instance.get_runs() if r.job_name == "refresh_all_sources")
        failed = {e.step_key for e in instance.all_logs(parent.run_id) if e.is_dagster_event
                  and e.dagster_event.is_step_failure}
        assert failed and all(k.startswith("embed_source") for k in failed), failed
        result = execute_job(job, instance, run_config=parent.run_config, raise_on_error=False,
                             reexecution_options=ReexecutionOptions.from_failure(parent.run_id, instance))
        errors = {e.step_key: str(e.event_specific_data.error) for e in result.all_events if e.is_step_failure}
    assert not result.success and set(errors) == failed, errors
    assert all(f"input 'chunks' was made by run {parent.run_id}" in e and "changed: embedding.model)" in e
               for e in errors.values()), errors


def test_the_copy_of_a_private_config_is_private(tmp_path: Path):
    """gitedge F6: a config kept at 0600 (a password in a git source's ``repo``) was copied for every run
    to Dagster's storage folder at 0644, readable by every local user. The copy keeps the file's mode
    (never writable by others)."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Notes\n\nThe on-call engineer answers pages within an hour.\n")
    cfg = write_config(tmp_path, sources="- {name: notes, kind: local, path: docs}")
    with DagsterInstance.ephemeral() as instance:
        for mode in (0o600, 0o644, 0o666):
            cfg.chmod(mode)
            run = materialize_source(cfg, "notes", instance)["_result"].run_id
            copy = Path(instance.storage_directory()) / run / "docs_rag_config.yaml"
            assert copy.read_bytes() == cfg.read_bytes()
            assert copy.stat().st_mode & 0o777 == mode & 0o755, (oct(mode), oct(copy.stat().st_mode))
