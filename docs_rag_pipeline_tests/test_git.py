"""``kind: git`` sources: real repositories made in temp dirs, real Dagster runs, the real model.

A bare "remote" repository is pushed to from a work tree; the source fetches it by path.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from dagster import DagsterInstance

from docs_rag_pipeline import refresh
from docs_rag_pipeline.context import get_context
from docs_rag_pipeline.query import search
from docs_rag_pipeline.retrieval import parent_chain
from docs_rag_pipeline.sources.git import GitError, GitSource

from .conftest import write_config, write_docs
from .dagster_helpers import materialize_source


def git(cwd: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.org", "-c", "init.defaultBranch=main", *args]
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


class Repo:
    """A work tree and the bare repository it pushes to."""

    def __init__(self, root: Path) -> None:
        self.work = root / "work"
        self.remote = root / "remote.git"
        self.work.mkdir(parents=True)
        git(self.work, "init", "-q")
        git(root, "init", "-q", "--bare", str(self.remote))
        git(self.work, "remote", "add", "origin", str(self.remote))

    def commit(self, message: str, files: dict[str, str] | None = None, *, delete: tuple[str, ...] = (),
               rename: dict[str, str] | None = None, force: bool = False) -> str:
        write_docs(self.work, files or {})
        for rel in delete:
            git(self.work, "rm", "-q", rel)
        for old, new in (rename or {}).items():
            (self.work / new).parent.mkdir(parents=True, exist_ok=True)
            git(self.work, "mv", old, new)
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", message)
        git(self.work, "push", "-q", *(["--force"] if force else []), "origin", "HEAD:main")
        return git(self.work, "rev-parse", "HEAD")


@pytest.fixture
def instance():
    with DagsterInstance.ephemeral() as inst:
        yield inst


SITE = "https://docs.acme.dev/"
DOCS = {
    "docs/index.md": """
        # Acme Docs

        Acme builds dashboards from sensor readings.
    """,
    "docs/guide/install.md": """
        # Installing

        Install the package with pip; Python 3.11 or newer is required.

        ## On Linux

        Run `pip install acme` inside a virtual environment.

        ## Troubleshooting

        If the import fails, delete the cache folder at `~/.cache/acme` and install again.
    """,
    "docs/guide/config.md": """
        # Configuration

        Settings live in `acme.toml`. The `refresh_seconds` key sets how often panels redraw.
    """,
    "docs/api/reference.md": """
        # API reference

        The `Panel.render()` method draws a panel. It raises QUUX_PANEL_GONE when the panel was closed.
    """,
    "src/app.py": "print('not documentation')\n",
    "README.md": "# Repository readme, outside the docs subpath\n",
}


def _config(tmp_path: Path, repo: Repo, extra: str = "") -> Path:
    return write_config(tmp_path, sources=f"""
      - name: acme
        kind: git
        repo: {repo.remote}
        subpath: docs
        url_template: "{SITE}{{path}}/"
        {extra}
    """)


def _chunks(cfg: Path) -> dict[str, list[dict]]:
    by_page: dict[str, list[dict]] = {}
    for r in get_context(cfg).chunks.rows("source = 'acme'"):
        by_page.setdefault(r["page_url"], []).append(r)
    return by_page


def _scan_meta(summary: dict) -> dict:
    meta = summary["_result"].asset_materializations_for_node("scraped_pages")[0].metadata
    return {k: v.value for k, v in meta.items() if k.startswith("scan_")}


def test_git_delta_sync_add_modify_delete_rename_force_push(tmp_path: Path, instance) -> None:
    repo = Repo(tmp_path / "repo")
    c1 = repo.commit("initial", DOCS)
    cfg = _config(tmp_path, repo)

    # first sync: everything below docs/, nothing else
    first = materialize_source(cfg, "acme", instance)
    assert first["pages_new"] == 4 and first["pages_deleted"] == 0
    assert first["chunks_embedded"] == first["chunks_total"] == first["rows_written"]
    assert all(first["_checks"].values()), first["_checks"]
    notes = _scan_meta(first)
    assert notes["scan_commit"] == c1 and notes["scan_fallback"] == "first sync" and notes["scan_files_added"] == 4
    chunks = _chunks(cfg)
    assert set(chunks) == {SITE, f"{SITE}guide/install/", f"{SITE}guide/config/", f"{SITE}api/reference/"}
    assert {c["metadata"]["commit"] for rows in chunks.values() for c in rows} == {c1}
    assert "[DISCOVER]" in first["_log"] and "[FETCH]" in first["_log"]
    install_before = {c["text"] for c in chunks[f"{SITE}guide/install/"]}

    # no new commit: nothing read, nothing embedded, nothing written
    again = materialize_source(cfg, "acme", instance)
    assert again["pages_unchanged"] == 4 and again["chunks_embedded"] == again["rows_written"] == 0
    assert _scan_meta(again)["scan_files_read"] == 0

    # one commit: modify one section of install.md, add upgrade.md, delete reference.md
    c2 = repo.commit("edit, add, delete", {
        "docs/guide/install.md": DOCS["docs/guide/install.md"].replace(
            "delete the cache folder at `~/.cache/acme`", "run `acme doctor`"),
        "docs/guide/upgrade.md": """
            # Upgrading

            Upgrade with `pip install -U acme`.

            ## From 1.x

            The `refresh` setting was renamed to `refresh_seconds`.
        """}, delete=("docs/api/reference.md",))
    second = materialize_source(cfg, "acme", instance)
    assert (second["pages_new"], second["pages_changed"], second["pages_deleted"], second["pages_unchanged"]) == (1, 1, 1, 2)
    notes = _scan_meta(second)
    assert notes["scan_commit"] == c2 and notes["scan_previous_commit"] == c1 and "scan_fallback" not in notes
    assert (notes["scan_files_added"], notes["scan_files_modified"], notes["scan_files_deleted"],
            notes["scan_files_renamed"]) == (1, 1, 1, 0)
    assert notes["scan_files_read"] == 2  # only what the diff names
    chunks = _chunks(cfg)
    upgrade = chunks[f"{SITE}guide/upgrade/"]
    changed_install = [c for c in chunks[f"{SITE}guide/install/"] if c["text"] not in install_before]
    # only the changed files are re-embedded: the edited section and the new page
    assert len(changed_install) == 1 and "acme doctor" in changed_install[0]["text"]
    assert second["chunks_embedded"] == len(upgrade) + 1
    assert {c["metadata"]["commit"] for c in chunks[f"{SITE}guide/install/"] + upgrade} == {c2}
    assert {c["metadata"]["commit"] for c in chunks[SITE]} == {c1}  # unchanged pages keep theirs
    # a deleted file leaves no chunk
    assert f"{SITE}api/reference/" not in chunks
    assert all("reference" not in h.page_url for h in search("QUUX_PANEL_GONE Panel.render", config=cfg))

    # a rename (same text, new URL): the old URL goes, the new one comes, nothing is re-embedded
    c3 = repo.commit("rename", rename={"docs/guide/config.md": "docs/guide/configuration.md"})
    third = materialize_source(cfg, "acme", instance)
    assert (third["pages_new"], third["pages_deleted"], third["pages_changed"]) == (1, 1, 0)
    assert third["chunks_embedded"] == 0 and third["chunks_cached"] >= 1
    assert _scan_meta(third)["scan_files_renamed"] == 1
    chunks = _chunks(cfg)
    assert f"{SITE}guide/config/" not in chunks and f"{SITE}guide/configuration/" in chunks
    assert chunks[f"{SITE}guide/configuration/"][0]["metadata"]["commit"] == c3

    # a force-push that rewrites history (the stored commit is gone from the branch): full comparison
    git(repo.work, "reset", "-q", "--hard", c1)
    c4 = repo.commit("rewritten", {"docs/index.md": "# Acme Docs\n\nAcme builds dashboards; see the guide.\n"},
                     force=True)
    fourth = materialize_source(cfg, "acme", instance)
    notes = _scan_meta(fourth)
    assert notes["scan_commit"] == c4 and "force-push" in notes["scan_fallback"]
    chunks = _chunks(cfg)
    # the index matches the rewritten branch exactly
    assert set(chunks) == {SITE, f"{SITE}guide/install/", f"{SITE}guide/config/", f"{SITE}api/reference/"}
    assert (fourth["pages_new"], fourth["pages_changed"], fourth["pages_deleted"]) == (2, 2, 2)
    # text seen before (reference.md, config.md, the original install.md sections) comes from the cache
    assert fourth["chunks_embedded"] == 1 and fourth["chunks_cached"] >= 4
    assert all(fourth["_checks"].values())


def test_git_failed_materialization_does_not_lose_changes(tmp_path: Path, instance) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit("initial", DOCS)
    cfg = _config(tmp_path, repo)
    materialize_source(cfg, "acme", instance)
    c2 = repo.commit("edit", {"docs/guide/config.md": "# Configuration\n\nSettings now live in `acme.yaml`.\n"})
    # a scan whose later stages never ran (as if embedding failed): the stored commit advances ...
    pages = refresh.scan_pages(get_context(cfg), "acme")
    assert [p["path"] for p in pages if p["status"] == "changed"] == ["guide/config.md"]
    state = json.loads((tmp_path / "data" / "sources" / "acme" / "state.json").read_text())
    assert state["commit"] == c2
    # ... yet the next run still finds the change, because pages are compared with the index
    summary = materialize_source(cfg, "acme", instance)
    assert summary["pages_changed"] == 1 and summary["chunks_embedded"] == 1
    assert "acme.yaml" in _chunks(cfg)[f"{SITE}guide/config/"][0]["text"]


def test_git_reparse_and_force_modes(tmp_path: Path, instance) -> None:
    repo = Repo(tmp_path / "repo")
    c1 = repo.commit("initial", DOCS)
    cfg = _config(tmp_path, repo)
    materialize_source(cfg, "acme", instance)
    ctx = get_context(cfg)
    # force: fetch, then every page again
    notes: dict = {}
    pages = refresh.scan_pages(ctx, "acme", mode="force", notes=notes)
    assert {p["status"] for p in pages} == {"changed"} and notes["files_read"] == 4
    # reparse: from the clone, without fetching (the remote is gone)
    repo.remote.rename(tmp_path / "elsewhere.git")
    lines: list[str] = []
    pages = refresh.scan_pages(ctx, "acme", mode="reparse", notes=notes, log=lines.append)
    assert {p["status"] for p in pages} == {"changed"} and len(pages) == 4
    assert notes["commit"] == c1 and any("no fetch" in ln for ln in lines)
    # a refresh needs the remote: a clear error, nothing deleted
    with pytest.raises(GitError, match="could not reach .*remote.git") as err:
        refresh.scan_pages(ctx, "acme")
    assert "\n" not in str(err.value)  # git's several stderr lines, as one line for the run log


def test_git_unmapped_files_and_default_branch(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    git(repo.remote, "symbolic-ref", "HEAD", "refs/heads/trunk")  # the remote's default is trunk
    repo.commit("initial", {"docs/modules/ROOT/pages/index.adoc": "= Home\n\nHello.\n",
                            "docs/modules/ROOT/nav.adoc": "* xref:index.adoc[]\n",
                            "docs/modules/ROOT/pages/C# and F#?.adoc": "= Sharp\n\nBoth languages.\n"})
    git(repo.work, "push", "-q", "origin", "HEAD:trunk")
    cfg = write_config(tmp_path, sources=f"""
      - name: acme
        kind: git
        repo: file://{repo.remote}
        subpath: docs
        url_rules:
          - {{match: '^modules/ROOT/pages/(.*/)?index\\.adoc$', url: 'https://docs.acme.dev/\\1'}}
    """)
    lines: list[str] = []
    notes: dict = {}
    pages = {p["path"]: p for p in refresh.scan_pages(get_context(cfg), "acme", log=lines.append, notes=notes)}
    assert notes["branch"] == "trunk"
    assert pages["modules/ROOT/pages/index.adoc"]["page_url"] == "https://docs.acme.dev/"
    # a file no rule maps: indexed under its repository path, with a warning
    assert pages["modules/ROOT/nav.adoc"]["page_url"] == "docs/modules/ROOT/nav.adoc"
    # a file name with URL characters is a page, its path percent-encoded where it becomes a URL
    assert pages["modules/ROOT/pages/C# and F#?.adoc"]["page_url"] == "docs/modules/ROOT/pages/C%23%20and%20F%23%3F.adoc"
    assert notes["unmapped_files"] == 2
    assert any("warning" in ln and "modules/ROOT/nav.adoc" in ln for ln in lines)


def test_git_token_only_in_the_request_never_on_disk_or_in_errors(tmp_path: Path, monkeypatch) -> None:
    seen: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            seen.append(self.headers.get("Authorization"))
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args) -> None:  # noqa: ANN002
            return None

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    secret = "s3cr3t-token-value-123"
    monkeypatch.setenv("ACME_GIT_TOKEN", secret)
    try:
        cfg = write_config(tmp_path, sources=f"""
          - name: acme
            kind: git
            repo: http://127.0.0.1:{server.server_port}/acme/docs.git
            branch: main
            token_env: ACME_GIT_TOKEN
        """)
        logs: list[str] = []
        with pytest.raises(GitError) as err:
            refresh.scan_pages(get_context(cfg), "acme", log=logs.append)
    finally:
        server.shutdown()
        server.server_close()
    expected = "Basic " + base64.b64encode(f"x-access-token:{secret}".encode()).decode()
    assert expected in seen  # the header reached the server
    assert secret not in str(err.value) and expected.split()[1] not in str(err.value)
    assert not any(secret in ln for ln in logs)
    for f in (tmp_path / "data").rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f
            assert expected.split()[1].encode() not in f.read_bytes(), f

    monkeypatch.delenv("ACME_GIT_TOKEN")
    with pytest.raises(GitError, match="ACME_GIT_TOKEN is not set"):
        refresh.scan_pages(get_context(cfg), "acme")


def test_a_token_written_as_the_user_name_of_repo_is_in_no_error(tmp_path: Path) -> None:
    """``repo: https://<token>@github.com/acme/docs.git`` (a token as the user name, a common way to give git
    one): when the server refused it (expired, revoked), git said ``could not read Password for
    'https://<token>@github.com'`` and the step's error, the CLI and Dagster's run storage showed the token
    (secrets F8). git's messages lose the user info of every URL in them, and the repo's token."""
    class Refuse(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:  # noqa: ANN002
            return None

    server = HTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    token = "ghp_TokenAsUser9f31"
    logs: list[str] = []
    try:
        for branch in ("", "branch: main"):  # ls-remote for the default branch; fetch of a named one
            cfg = write_config(tmp_path, sources=f"""
              - name: acme
                kind: git
                repo: http://{token}@127.0.0.1:{server.server_port}/acme/docs.git
                {branch}
            """)
            with pytest.raises(GitError) as err:
                refresh.scan_pages(get_context(cfg), "acme", log=logs.append)
            said = str(err.value)
            assert f"http://127.0.0.1:{server.server_port}/acme/docs.git" in said, said
            assert "terminal prompts disabled" in said or "Authentication failed" in said, said  # git's reason stays
            assert token not in said and not any(token in ln for ln in logs), (said, logs)
    finally:
        server.shutdown()
        server.server_close()


def test_a_password_with_an_apostrophe_in_repo_is_in_no_log_error_or_state(tmp_path: Path) -> None:
    """``repo: "https://alice:Pa'ss@host/docs.git"``: an apostrophe is a character of a password that RFC 3986
    allows raw in a URL and git sends, but the user info was only removed up to a quote, so the password
    was in ``[DISCOVER] acme: fetching …``, in the fetch's error, in state.json and in the config text
    Dagster keeps with each run (secrets F5). Served over HTTP with basic auth, as a git host does."""
    import http.server

    from docs_rag_pipeline.config import without_userinfo

    repo = Repo(tmp_path)
    repo.commit("docs", DOCS)
    git(repo.remote, "update-server-info")
    password = "Pa'ss-6c0d"
    wanted = "Basic " + base64.b64encode(f"alice:{password}".encode()).decode()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
            super().__init__(*args, directory=str(tmp_path), **kwargs)

        def do_GET(self) -> None:  # noqa: N802
            if self.headers.get("Authorization") != wanted:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            super().do_GET()

        def log_message(self, *args) -> None:  # noqa: ANN002
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host = f"127.0.0.1:{server.server_port}"
    logs: list[str] = []
    try:
        cfg = write_config(tmp_path, sources=f"""
          - name: acme
            kind: git
            repo: "http://alice:{password}@{host}/remote.git"
            subpath: docs
            url_template: "{SITE}{{path}}/"
          - {{name: other, kind: git, repo: 'http://bob:{password.replace("'", "''")}@{host}/nope.git', branch: main}}
        """)
        refresh.scan_pages(get_context(cfg), "acme", log=logs.append)  # the password is right: it syncs
        with pytest.raises(GitError) as err:
            refresh.scan_pages(get_context(cfg), "other", log=logs.append)
    finally:
        server.shutdown()
        server.server_close()
    assert any(f"fetching http://{host}/remote.git branch main" in ln for ln in logs), logs
    assert f"http://{host}/nope.git" in str(err.value)
    assert not any("Pa'ss" in ln for ln in logs) and "Pa'ss" not in str(err.value), (logs, err.value)
    for f in (tmp_path / "data").rglob("state.json"):
        assert b"Pa'ss" not in f.read_bytes(), f
    shown = without_userinfo(cfg.read_text())  # the config text Dagster keeps with each run
    assert "Pa'ss" not in shown and "Pa''ss" not in shown and f"repo: \"http://{host}/remote.git\"" in shown, shown


def test_git_source_class_is_registered() -> None:
    from docs_rag_pipeline.sources import SOURCE_KINDS

    assert SOURCE_KINDS["git"] == "git:GitSource" and issubclass(GitSource, object)


# --------------------------------------------------------------------------------------------
# Vaadin-like AsciiDoc docs: framework filter and the parent chain across files
# --------------------------------------------------------------------------------------------

VAADIN = {
    "articles/index.adoc": """
        = Vaadin Docs

        Vaadin builds web apps in Java with Flow or in React with Hilla.
    """,
    "articles/flow/index.adoc": """
        = Flow

        Flow lets you build the whole user interface in server-side Java.
    """,
    "articles/flow/binding-data/index.adoc": """
        = Binding Data to Forms

        The Binder class connects form fields to the properties of a Java bean.
    """,
    "articles/flow/binding-data/validation.adoc": """
        = Validating Form Input
        :page-aliases: flow/binding/validation.adoc

        Form validation in Flow runs on the server.

        == Validators

        Add validators to a binding with `withValidator`.

        === Validation error messages

        [source,java]
        ----
        binder.forField(email).withValidator(new EmailValidator("Not a valid email address")).bind(Person::setEmail);
        ----

        Each rejected value shows its form validation error message next to the field.
    """,
    "articles/hilla/index.adoc": """
        = Hilla

        Hilla pairs a Spring Boot backend with a React frontend.
    """,
    "articles/hilla/guides/forms.adoc": """
        = Form Validation in Hilla

        Form validation in Hilla uses the useForm hook; validation error messages show next to each field.
    """,
    "articles/components/text-field/index.adoc": """
        = Text Field

        A text field accepts text input. Form validation error messages appear below the text field.
    """,
}


def test_framework_filter_and_parent_chain(tmp_path: Path, instance) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit("docs", {k: textwrap.dedent(v).lstrip() for k, v in VAADIN.items()})
    cfg = write_config(tmp_path, sources=f"""
      - name: acme
        kind: git
        repo: {repo.remote}
        subpath: articles
        url_template: "https://vaadin.example/docs/{{path}}"
        metadata_rules:
          - key: framework
            values: {{"**/flow/**": flow, "**/hilla/**": hilla}}
            default: common
    """)
    summary = materialize_source(cfg, "acme", instance)
    assert summary["pages_new"] == 7 and all(summary["_checks"].values())

    query = "form validation error messages"
    unfiltered = search(query, config=cfg, top_k=10)
    assert any(h.metadata.get("framework") == "hilla" for h in unfiltered)  # Hilla is relevant too
    hits = search(query, config=cfg, top_k=10, filters={"framework": "flow"})
    frameworks = {h.metadata.get("framework") for h in hits}
    assert frameworks == {"flow", "common"}  # Flow and shared pages, never Hilla
    assert not any("/hilla" in h.page_url for h in hits)

    # the parent chain of the deepest section reaches the top-level section (flow) and the root
    ctx = get_context(cfg)
    rows = ctx.chunks.rows("source = 'acme'")
    deep = next(r for r in rows if r["headings"] == ["Validators", "Validation error messages"])
    assert deep["url"] == "https://vaadin.example/docs/flow/binding-data/validation#_validation_error_messages"
    chain = [(r["page_url"].removeprefix("https://vaadin.example/docs/"), tuple(r["headings"]))
             for r in parent_chain(ctx, deep["chunk_id"])]
    assert chain == [
        ("flow/binding-data/validation", ("Validators", "Validation error messages")),
        ("flow/binding-data/validation", ("Validators",)),
        ("flow/binding-data/validation", ()),
        ("flow/binding-data", ()),
        ("flow", ()),
        ("", ()),
    ]


def test_git_asciidoc_include_change_reprocesses_including_page(tmp_path: Path) -> None:
    """A commit that changes only a partial re-reads the pages that include it (and nothing else)."""
    from docs_rag_pipeline.config import parse_config

    repo = Repo(tmp_path / "repo")
    repo.commit("initial", {
        "antora.yml": "name: acme\nversion: '1.0'\nasciidoc:\n  attributes:\n    product: Acme\n",
        "modules/ROOT/pages/index.adoc": "= Home\n\nWelcome to {product}.\n",
        "modules/ROOT/pages/install.adoc": "= Install\n\ninclude::partial$steps.adoc[]\n\ninclude::example$gone.rb[]\n",
        "modules/ROOT/partials/steps.adoc": "Run `acme setup`.\n",
    })
    cfg = parse_config({"storage": str(tmp_path / "data"), "sources": [{
        "name": "acme", "kind": "git", "repo": str(repo.remote), "include": ["modules/*/pages/**/*.adoc"],
        "url_rules": [{"match": r"^modules/ROOT/pages/(.*?)(?:index)?\.adoc$", "url": r"https://acme.dev/\1"}]}]})
    src = GitSource(cfg.sources[0], workdir=tmp_path / "data" / "sources" / "acme")
    lines: list[str] = []
    first = src.scan({}, log=lines.append)
    pages = {p.path: p for p in first.pages}
    assert set(pages) == {"modules/ROOT/pages/index.adoc", "modules/ROOT/pages/install.adoc"}
    assert "Run `acme setup`." in pages["modules/ROOT/pages/install.adoc"].body
    assert ":product: Acme" in pages["modules/ROOT/pages/index.adoc"].body
    assert pages["modules/ROOT/pages/install.adoc"].metadata["unresolved_includes"] == ["example$gone.rb"]
    assert first.notes["unresolved_includes"] == 1
    assert any("include::example$gone.rb[] cannot be resolved" in ln for ln in lines)
    state = {p.page_url: p.content_hash for p in first.pages}

    repo.commit("partial only", {"modules/ROOT/partials/steps.adoc": "Run `acme setup --all`.\n"})
    second = src.scan(state, log=lines.append)
    status = {p.path: p.status for p in second.pages}
    assert status == {"modules/ROOT/pages/index.adoc": "unchanged", "modules/ROOT/pages/install.adoc": "changed"}
    assert second.notes["files_read"] == 1 and second.notes["files_modified"] == 0  # the partial is no page
    install = next(p for p in second.pages if p.status == "changed")
    assert "acme setup --all" in install.body and install.metadata["commit"] == second.notes["commit"]


def test_git_restructuredtext_include_change_reprocesses_including_page(tmp_path: Path) -> None:
    """reStructuredText includes are resolved in a git source as AsciiDoc's are (a ``/`` target from
    ``subpath``, Sphinx's source directory), and a commit that changes only an included file re-reads the
    pages that include it."""
    from docs_rag_pipeline.config import parse_config

    repo = Repo(tmp_path / "repo")
    repo.commit("initial", {
        "Doc/index.rst": "Home\n====\n\nWelcome.\n",
        "Doc/library/venv.rst": "venv\n====\n\n.. include:: /includes/create.inc\n\n.. include:: gone.rst\n",
        "Doc/includes/create.inc": "Run ``python -m venv env``.\n",
    })
    cfg = parse_config({"storage": str(tmp_path / "data"), "sources": [{
        "name": "py", "kind": "git", "repo": str(repo.remote), "subpath": "Doc", "include": ["**/*.rst"]}]})
    src = GitSource(cfg.sources[0], workdir=tmp_path / "data" / "sources" / "py")
    lines: list[str] = []
    first = src.scan({}, log=lines.append)
    pages = {p.path: p for p in first.pages}
    assert set(pages) == {"index.rst", "library/venv.rst"}
    assert "Run ``python -m venv env``." in pages["library/venv.rst"].body
    assert pages["library/venv.rst"].metadata["unresolved_includes"] == ["gone.rst"]
    assert any(".. include:: gone.rst cannot be resolved" in ln for ln in lines), lines
    state = {p.page_url: p.content_hash for p in first.pages}

    repo.commit("include only", {"Doc/includes/create.inc": "Run ``python -m venv --upgrade-deps env``.\n"})
    second = src.scan(state, log=lines.append)
    assert {p.path: p.status for p in second.pages} == {"index.rst": "unchanged", "library/venv.rst": "changed"}
    assert "--upgrade-deps" in next(p for p in second.pages if p.status == "changed").body


def test_git_markdown_include_change_reprocesses_including_page(tmp_path: Path) -> None:
    """Markdown and MDX includes (VitePress' ``<!--@include:``, an MDX partial) are resolved in a git
    source as reStructuredText's are (an ``@/`` or ``/`` target from ``subpath``), and a commit that
    changes only an included file re-reads the pages that include it; a page without includes keeps the
    hash of its own bytes."""
    from docs_rag_pipeline.config import parse_config

    repo = Repo(tmp_path / "repo")
    repo.commit("initial", {
        "docs/index.md": "# Home\n\nWelcome.\n",
        "docs/guide/config.md": "# Config\n\n## Limits\n\n<!--@include: @/parts/limits.md-->\n\n"
                                "<!--@include: ./gone.md-->\n",
        "docs/guide/install.mdx": "import Setup from '/snippets/setup.mdx';\n\n# Install\n\n<Setup />\n",
        "docs/parts/limits.md": "The zorblax limit is 42.\n",
        "docs/snippets/setup.mdx": "Run frob init first.\n",
        "docs/guide/site.mdx": "import Part from '@site/docs/parts/_part.mdx';\n\n# Site\n\n<Part />\n",
        "docs/parts/_part.mdx": "From the site folder: quillwort.\n",
        "docs/guide/_note.mdx": "A partial no page includes.\n",
    })
    cfg = parse_config({"storage": str(tmp_path / "data"), "sources": [{
        "name": "vp", "kind": "git", "repo": str(repo.remote), "subpath": "docs",
        "exclude": ["parts/**", "snippets/**"]}]})
    src = GitSource(cfg.sources[0], workdir=tmp_path / "data" / "sources" / "vp")
    lines: list[str] = []
    first = src.scan({}, log=lines.append)
    pages = {p.path: p for p in first.pages}
    assert set(pages) == {"index.md", "guide/config.md", "guide/install.mdx", "guide/site.mdx"}
    assert "quillwort" in pages["guide/site.mdx"].body  # @site/ is the folder above subpath (Docusaurus' site)
    assert any(ln.startswith("[DISCOVER] vp: left out 1 partial(s)") for ln in lines), lines  # guide/_note.mdx
    assert "The zorblax limit is 42." in pages["guide/config.md"].body
    assert "Run frob init first." in pages["guide/install.mdx"].body
    assert pages["guide/config.md"].metadata["unresolved_includes"] == [
        "<!--@include: ./gone.md--> (no such file in the source)"]
    assert any("guide/config.md: <!--@include: ./gone.md--> cannot be resolved: no such file in the source; skipped"
               in ln for ln in lines), lines
    state = {p.page_url: p.content_hash for p in first.pages}

    repo.commit("includes only", {"docs/parts/limits.md": "The zorblax limit is 64.\n",
                                  "docs/snippets/setup.mdx": "Run frob init --fast first.\n"})
    second = src.scan(state, log=lines.append)
    assert {p.path: p.status for p in second.pages} == {
        "index.md": "unchanged", "guide/config.md": "changed", "guide/install.mdx": "changed", "guide/site.mdx": "unchanged"}
    bodies = {p.path: p.body for p in second.pages}
    assert "limit is 64" in bodies["guide/config.md"] and "--fast" in bodies["guide/install.mdx"]


def test_text_that_is_not_utf8_is_decoded(tmp_path: Path) -> None:
    from docs_rag_pipeline.config import parse_config

    repo = Repo(tmp_path / "repo")
    repo.commit("initial", {"latin1.md": "# Café\n\nCrème brûlée on Fridays.\n".encode("latin-1"),
                            "page.adoc": "= Page\n\ninclude::part.adoc[]\n",
                            "part.adoc": "Naïve café.\n".encode("latin-1")})
    cfg = parse_config({"storage": str(tmp_path / "data"), "sources": [{
        "name": "acme", "kind": "git", "repo": str(repo.remote)}]})
    scan = GitSource(cfg.sources[0], workdir=tmp_path / "data" / "sources" / "acme").scan({}, log=lambda _: None)
    pages = {p.path: p for p in scan.pages}
    assert "Crème brûlée on Fridays." in pages["latin1.md"].body
    assert "Naïve café." in pages["page.adoc"].body


def test_a_file_name_that_is_not_utf8_is_skipped_and_named(tmp_path: Path) -> None:
    """A repository file named in latin-1 bytes once ended the whole git source (UnicodeEncodeError
    where its path became a URL); it is skipped with its bytes shown escaped, the rest is synced,
    and the next sync still works (the state file holds no such name)."""
    from docs_rag_pipeline.config import parse_config

    repo = Repo(tmp_path / "repo")
    write_docs(repo.work, {"ok.md": "# Fine\n\nA fine page.\n"})
    with open(bytes(repo.work) + b"/caf\xe9.md", "w") as f:
        f.write("# Cafe\n\nA page with a latin-1 file name.\n")
    repo.commit("initial")
    cfg = parse_config({"storage": str(tmp_path / "data"), "sources": [{
        "name": "acme", "kind": "git", "repo": str(repo.remote)}]})
    src = GitSource(cfg.sources[0], workdir=tmp_path / "data" / "sources" / "acme")
    lines: list[str] = []
    scan = src.scan({}, log=lines.append)
    assert [p.path for p in scan.pages] == ["ok.md"] and scan.notes["names_not_utf8"] == ["caf\\xe9.md"]
    assert any("skipped caf\\xe9.md: its name is not valid UTF-8; rename it" in ln for ln in lines)
    repo.commit("more", {"two.md": "# Two\n\nAnother page.\n"})
    again = src.scan({p.page_url: p.content_hash for p in scan.pages}, log=lambda _: None)
    assert sorted((p.path, p.status) for p in again.pages) == [("ok.md", "unchanged"), ("two.md", "new")]


def test_a_document_cannot_claim_what_the_source_records(tmp_path: Path) -> None:
    """The commit a page was read at is the source's record, not the page's claim: frontmatter
    saying ``commit: 0000000`` (or ``unresolved_includes``) once replaced what git said."""
    repo = Repo(tmp_path / "repo")
    head = repo.commit("initial", {"docs/page.md": """
        ---
        commit: "0000000"
        unresolved_includes: []
        audience: admins
        ---
        # Page

        The quillwright tool trims feathers.
    """, "docs/other.adoc": "= Other\n:commit: 1111111\n\ninclude::missing.adoc[]\n\nText.\n"})
    cfg = _config(tmp_path, repo)
    pages = {p["path"]: p for p in refresh.scan_pages(get_context(cfg), "acme")}
    page = json.loads(pages["page.md"]["metadata"])
    assert page["commit"] == head and "unresolved_includes" not in page and page["audience"] == "admins"
    other = json.loads(pages["other.adoc"]["metadata"])
    assert other["commit"] == head and other["unresolved_includes"] == ["missing.adoc"]


def test_symlinks_inside_the_repository_are_followed_and_the_rest_is_named(tmp_path: Path) -> None:
    """A git source skipped every symbolic link and submodule without a word, so a docs folder that
    links the repository's README or a shared folder lost those pages silently. Links inside the
    repository are now read as the files they point to; links out of it, into hidden folders, in a
    loop or to nothing, and submodules, are skipped with a line that says why and counted."""
    repo = Repo(tmp_path / "repo")
    repo.commit("files", {"README.md": "# Readme\n\nThe quillwright CLI trims feathers.\n",
                          "shared/glossary.md": "# Glossary\n\nA plume is a large feather.\n",
                          "docs/index.md": "# Home\n\nWelcome.\n"})
    for link, target in {"docs/about.md": "../README.md", "docs/shared": "../shared", "docs/again.md": "about.md",
                         "docs/passwd.md": "/etc/passwd", "docs/up.md": "../../outside.md", "docs/loop": "..",
                         "docs/gone.md": "nothing.md", "docs/a.md": "b.md", "docs/b.md": "a.md",
                         "docs/secret.md": "../.github/secret.md"}.items():
        os.symlink(target, repo.work / link)
    sub = Repo(tmp_path / "sub")
    sub.commit("sub", {"page.md": "# Sub\n\nSubmodule page.\n"})
    git(repo.work, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub.remote), "docs/vendor")
    head = repo.commit("links")
    cfg = _config(tmp_path, repo)
    lines: list[str] = []
    notes: dict = {}
    pages = {p["path"]: p for p in refresh.scan_pages(get_context(cfg), "acme", log=lines.append, notes=notes)}
    assert set(pages) == {"index.md", "about.md", "again.md", "shared/glossary.md"}, sorted(pages)
    assert pages["about.md"]["sections"] == pages["again.md"]["sections"]  # the same file's text under two paths
    sections = json.loads(pages["shared/glossary.md"]["sections"])
    assert "A plume is a large feather." in sections[0]["text"]
    why = {"passwd.md -> /etc/passwd": "it points outside the repository",
           "up.md -> ../../outside.md": "it points outside the repository",
           "loop -> ..": "it loops back to a folder that contains it",
           "secret.md -> ../.github/secret.md": "it points into a hidden file or folder",
           "gone.md -> nothing.md": "it points to nothing in the repository",
           "a.md -> b.md": "too many levels of links (a loop of links", "b.md -> a.md": "too many levels of links"}
    for link, reason in why.items():
        assert any(f"skipped the symlink docs/{link}: {reason}" in ln for ln in lines), (link, lines)
    assert notes["skipped_links"] == len(why) and notes["commit"] == head
    assert any("skipped the submodule docs/vendor: submodules are not fetched" in ln for ln in lines)
    assert notes["skipped_submodules"] == ["docs/vendor"]
    # delta sync: a change to the linked file (outside subpath) reaches the pages that link it
    refresh.refresh(get_context(cfg), "acme")
    repo.commit("edit", {"README.md": "# Readme\n\nThe quillwright CLI trims and polishes feathers.\n"})
    again = {p["path"]: p["status"] for p in refresh.scan_pages(get_context(cfg), "acme", log=lambda m: None)}
    assert again == {"index.md": "unchanged", "shared/glossary.md": "unchanged", "about.md": "changed",
                     "again.md": "changed"}


def _scan_links(tmp_path: Path, repo: Repo, subpath: str = "") -> tuple[dict[str, str], list[str]]:
    """A scan of ``repo`` by a git source (path → body) and its log lines."""
    from docs_rag_pipeline.config import parse_config

    cfg = parse_config({"storage": str(tmp_path / "data"), "sources": [
        {"name": "acme", "kind": "git", "repo": str(repo.remote), "subpath": subpath}]})
    lines: list[str] = []
    pages = GitSource(cfg.sources[0], workdir=tmp_path / "w").scan({}, log=lines.append).pages
    return {p.path: p.body or "" for p in pages}, lines


def test_folders_that_link_to_one_another_cannot_multiply_the_pages(tmp_path: Path) -> None:
    """A linked folder's files were copied under the link with the files that had come into it
    through other links, so N folders holding two links each to the one below gave 2^N pages of one
    file (24 links: 8191 pages; 50: the refresh never ends). As in a local folder, a second link to a
    folder already walked through a link is skipped and named, and a link back to a folder that
    contains it (through another link) is a loop."""
    repo = Repo(tmp_path / "repo")
    repo.commit("leaf", {"d00/leaf.md": "# Leaf\n\nleaf text\n", "x/x.md": "# X\n\nx text\n"})
    for i in range(1, 13):
        for name in ("a", "b"):
            (repo.work / f"d{i:02}").mkdir(exist_ok=True)
            os.symlink(f"../d{i - 1:02}", repo.work / f"d{i:02}/{name}")
    (repo.work / "y").mkdir()
    os.symlink("../y", repo.work / "x/to_y")
    os.symlink("../x", repo.work / "y/to_x")
    repo.commit("links")
    pages, lines = _scan_links(tmp_path, repo)
    assert set(pages) == {"d00/leaf.md", "d01/a/leaf.md", "x/x.md", "y/to_x/x.md"}, len(pages)
    assert "skipped the symlink d01/b -> ../d00: that folder is already listed through the link d01/a" \
        in "\n".join(lines)
    assert "skipped the symlink d02/a/a -> ../d00: that folder is already listed through the link d01/a" \
        in "\n".join(lines)
    for loop in ("x/to_y/to_x -> ../x", "y/to_x/to_y -> ../y"):
        assert f"skipped the symlink {loop}: it loops back to a folder that contains it" in "\n".join(lines)


def test_links_resolve_as_in_a_checkout_whatever_their_order_or_place(tmp_path: Path) -> None:
    """A link inside a linked folder was missing below the folder link when the folder link sorted
    first (``docs/latest -> v2`` lost ``latest/faq.md``, ``docs/v2/faq.md -> ../../shared/faq.md``,
    without a word), and a link whose target goes through a link outside ``subpath`` was skipped as
    pointing to nothing. Paths resolve part by part over the whole repository, as a checkout does."""
    repo = Repo(tmp_path / "repo")
    repo.commit("files", {"docs/v2/install.md": "# Install\n\ninstall text\n", "shared/faq.md": "# FAQ\n\nfaq text\n",
                          "common/glossary.md": "# Glossary\n\nglossary text\n"})
    for link, target in {"docs/v2/faq.md": "../../shared/faq.md", "docs/latest": "v2", "alias": "common",
                         "docs/glossary.md": "../alias/glossary.md", "docs/up.md": "latest/../v2/install.md"}.items():
        os.symlink(target, repo.work / link)
    repo.commit("links")
    pages, lines = _scan_links(tmp_path, repo, subpath="docs")
    docs = repo.work / "docs"
    in_checkout = {os.path.relpath(os.path.join(d, f), docs) for d, _, names in os.walk(docs, followlinks=True)
                   for f in names}
    assert set(pages) == in_checkout == {"v2/install.md", "v2/faq.md", "latest/install.md", "latest/faq.md",
                                         "glossary.md", "up.md"}, sorted(pages)
    assert pages["latest/faq.md"].startswith("# FAQ") and pages["glossary.md"].startswith("# Glossary")
    assert pages["up.md"].startswith("# Install")
    assert not [ln for ln in lines if "skipped the symlink" in ln], lines


def test_a_chain_of_links_resolves_to_40_links_and_a_longer_one_is_named(tmp_path: Path) -> None:
    """A chain of more than 8 links was skipped as "it points to nothing in the repository (a
    missing file, or a loop of links)", though a checkout reads it (Linux follows 40 links). Chains
    resolve to 40 links, as the OS does; a longer one is skipped as too many levels of links."""
    repo = Repo(tmp_path / "repo")
    repo.commit("real", {"real.md": "# Real\n\nreal text\n"})
    for i in range(1, 42):  # l01 -> l02 -> … -> l41 -> real.md: 41 links from l01, 40 from l02
        os.symlink(f"l{i + 1:02}.md" if i < 41 else "real.md", repo.work / f"l{i:02}.md")
    repo.commit("chain")
    assert not (repo.work / "l01.md").exists() and (repo.work / "l02.md").read_text().startswith("# Real")
    pages, lines = _scan_links(tmp_path, repo)
    assert set(pages) == {"real.md"} | {f"l{i:02}.md" for i in range(2, 42)}, sorted(pages)
    assert all(pages[f"l{i:02}.md"].startswith("# Real") for i in range(2, 42))
    assert [ln.split(": ", 1)[1] for ln in lines if "skipped the symlink" in ln] == [
        "skipped the symlink l01.md -> l02.md: too many levels of links (a loop of links, or a chain of more than 40)"]


def test_locks_left_by_a_killed_fetch_do_not_stop_every_later_refresh(tmp_path: Path) -> None:
    """A git fetch killed mid-way (SIGKILL, a lost machine) leaves ``*.lock`` files in the clone;
    git then refuses to update those refs, so every later refresh of the source failed with
    "Unable to create …/main.lock: File exists" until someone removed them by hand. The clone is
    the source's own and the scan holds the source lock, so they are stale: removed, and said."""
    repo = Repo(tmp_path / "repo")
    repo.commit("one", DOCS)
    cfg = _config(tmp_path, repo)
    refresh.refresh(get_context(cfg), "acme")
    clone = tmp_path / "data/sources/acme/clone"
    left = ["refs/remotes/origin/main.lock", "packed-refs.lock", "shallow.lock", "config.lock"]
    for rel in left:  # what a fetch killed between taking its locks and committing them leaves
        (clone / rel).write_text("")
    head = repo.commit("two", {"docs/guide/config.md": "# Configuration\n\nSettings live in `acme.yaml` now.\n"})
    lines: list[str] = []
    stats = refresh.refresh(get_context(cfg), "acme", log=lines.append)
    assert stats.pages_changed == 1
    assert json.loads((tmp_path / "data/sources/acme/state.json").read_text())["commit"] == head
    for rel in left:
        assert not (clone / rel).exists()
        assert any(f"removed {rel} from the clone" in ln for ln in lines), (rel, lines)


def test_a_huge_file_is_cut_at_max_bytes_and_the_next_blob_still_reads(tmp_path: Path) -> None:
    """A 50 MB Markdown file in a repository was read whole into memory (and parsed, chunked and
    embedded whole); web pages stop at max_bytes. Git and local sources read at most max_bytes of a
    file too, log the cut, and the blobs after it in ``git cat-file --batch`` are still read right."""
    from docs_rag_pipeline.config import parse_config
    from docs_rag_pipeline.sources.local import LocalSource

    big = "# Big\n\n" + "".join(f"Paragraph {i} about the avocets of the marsh.\n\n" for i in range(5000))
    repo = Repo(tmp_path / "repo")
    repo.commit("initial", {"a.md": "# A\n\nBefore the big one.\n", "big.md": big, "z.md": "# Z\n\nAfter it.\n"})
    write_docs(tmp_path / "folder", {"big.md": big, "z.md": "# Z\n\nAfter it.\n"})
    cfg = parse_config({"storage": str(tmp_path / "data"), "sources": [
        {"name": "acme", "kind": "git", "repo": str(repo.remote), "max_bytes": 10_000},
        {"name": "folder", "kind": "local", "path": str(tmp_path / "folder"), "max_bytes": 10_000}]})
    for src in (GitSource(cfg.sources[0], workdir=tmp_path / "w1"), LocalSource(cfg.sources[1], workdir=tmp_path / "w2")):
        lines: list[str] = []
        pages = {p.path: p for p in src.scan({}, log=lines.append).pages}
        assert len(pages["big.md"].body) == 10_000 and big.startswith(pages["big.md"].body), src
        assert pages["z.md"].body == "# Z\n\nAfter it.\n"
        assert any(f"cut off big.md: the file is over max_bytes (10000 bytes); only its first max_bytes are "
                   "indexed" in ln for ln in lines), lines


def test_a_cut_at_max_bytes_never_splits_a_character(tmp_path: Path) -> None:
    """scale F1: a file or page cut at ``max_bytes`` in the middle of a multi-byte character (``é`` is
    two bytes in UTF-8, ``日`` two in Shift_JIS) was indexed with a U+FFFD the document never held. The
    cut now drops the split character's bytes: git, local and web sources alike."""
    from docs_rag_pipeline.config import parse_config
    from docs_rag_pipeline.sources.local import LocalSource

    from .test_web import web_source
    from .web_helpers import static_server

    text = "# B\n\n" + "é" * 200 + " the bison setting.\n"  # byte 300 falls inside an é
    repo = Repo(tmp_path / "repo")
    repo.commit("initial", {"b.md": text})
    write_docs(tmp_path / "folder", {"b.md": text})
    cfg = parse_config({"storage": str(tmp_path / "data"), "sources": [
        {"name": "acme", "kind": "git", "repo": str(repo.remote), "max_bytes": 300},
        {"name": "folder", "kind": "local", "path": str(tmp_path / "folder"), "max_bytes": 300}]})
    for src in (GitSource(cfg.sources[0], workdir=tmp_path / "w1"), LocalSource(cfg.sources[1], workdir=tmp_path / "w2")):
        body = next(p.body for p in src.scan({}, log=lambda m: None).pages if p.path == "b.md")
        assert "\ufffd" not in body and body == text[: len(body)] and len(body.encode()) == 299, (src, body[-5:])
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_bytes(("<html><head><meta charset='shift_jis'><title>J</title></head><body><main>"
                                       "<h1>J</h1><p>" + "日本語" * 100 + "</p></main></body></html>").encode("shift_jis"))
    with static_server(site) as srv:
        pages = web_source(tmp_path, seed_urls=[srv.url + "/"], sitemaps="off", max_bytes=301).scan({}, log=lambda m: None).pages
    assert pages and "\ufffd" not in pages[0].body and "日本語日" in pages[0].body, pages[0].body[-20:]


def test_settings_that_shape_pages_reach_pages_indexed_before(tmp_path: Path) -> None:
    """Raising ``max_bytes`` or adding ``metadata``/``metadata_rules`` changed no page already indexed:
    a page's status follows its bytes, and the git source's cache held the hash of the cut file, so the
    next ingest said "unchanged" and the page stayed cut, without the new keys (``search --filter``
    found nothing). A change of these settings now re-reads every page (a reparse: no fetch, unchanged
    texts keep their embeddings), once."""
    from docs_rag_pipeline.config import load_config
    from docs_rag_pipeline.context import Context

    repo = Repo(tmp_path / "repo")
    big = "# Big\n\nThe start of a long page.\n\n" + "Filler words about panels. " * 40 + "\n\nThe AARDVARKIUM sensor is last.\n"
    repo.commit("docs", {"docs/index.md": DOCS["docs/index.md"], "docs/big.md": big})
    cfg = _config(tmp_path, repo, extra="max_bytes: 300")
    lines: list[str] = []
    refresh.refresh(Context(load_config(cfg)), "acme", log=lines.append)
    assert any("cut off big.md" in ln for ln in lines)
    assert not search("AARDVARKIUM", top_k=3, config=cfg) or "AARDVARKIUM" not in search("AARDVARKIUM", config=cfg)[0].text

    cfg = _config(tmp_path, repo, extra="max_bytes: 100000\n        metadata: {product: acme}\n"
                                         "        metadata_rules: [{key: team, default: docs}]")
    lines.clear()
    out = refresh.refresh(Context(load_config(cfg)), "acme", log=lines.append)
    assert out.pages_changed == 2 and out.pages_unchanged == 0, out
    assert any("max_bytes, metadata, metadata_rules changed since the last ingest" in ln for ln in lines), lines
    hit = search("AARDVARKIUM sensor", top_k=1, config=cfg, filters={"team": "docs", "product": "acme"})[0]
    assert "AARDVARKIUM" in hit.text and hit.page_url.endswith("/big/")

    again = refresh.refresh(Context(load_config(cfg)), "acme", log=lambda m: None)
    assert again.pages_unchanged == 2 and again.pages_changed == 0  # once: the settings are recorded


def test_a_symlink_entry_with_a_huge_blob_is_not_read_whole(tmp_path: Path) -> None:
    """A mode-120000 entry whose blob is megabytes (git allows it) was read whole, whatever
    ``max_bytes``: a 150 MB one cost 1 GB, and its whole "target" went into a log line and the run's
    metadata. A link target is read to 4,096 bytes (a path is no longer); a longer one is skipped."""
    from docs_rag_pipeline.config import load_config

    repo = Repo(tmp_path / "repo")
    repo.commit("docs", {"docs/index.md": DOCS["docs/index.md"]})
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"a" * 2_000_000)
    sha = git(repo.work, "hash-object", "-w", str(blob))
    git(repo.work, "update-index", "--add", "--cacheinfo", f"120000,{sha},docs/evil.md")
    git(repo.work, "commit", "-q", "-m", "a link blob of 2 MB")
    git(repo.work, "push", "-q", "origin", "HEAD:main")
    cfg = _config(tmp_path, repo)
    lines: list[str] = []
    from docs_rag_pipeline.context import Context

    out = refresh.refresh(Context(load_config(cfg)), "acme", log=lines.append)
    assert out.pages_new == 1
    said = [ln for ln in lines if "evil.md" in ln]
    assert said and all(len(ln) < 600 for ln in said), [len(ln) for ln in said]
    assert any("its target is longer than 4096 bytes, no path" in ln for ln in said)


def test_a_git_source_made_local_loses_its_clone_on_its_next_ingest_or_a_prune(tmp_path: Path, instance) -> None:
    """A git source whose ``kind`` became ``local`` kept its bare clone (and synced commit) under
    ``<storage>/sources/<name>/`` for ever: neither an ingest (the name is still configured) nor
    ``docs-rag prune`` (which removed only unconfigured names) deleted it. The next ingest of the
    source as its new kind deletes it, and a prune does for the sources not ingested since."""
    repo = Repo(tmp_path / "repo")
    repo.commit("one", DOCS)
    cfg = write_config(tmp_path, sources=f"""
      - {{name: acme, kind: git, repo: {repo.remote}, subpath: docs, url_template: "{SITE}{{{{path}}}}/"}}
      - {{name: beta, kind: git, repo: {repo.remote}, subpath: docs, url_template: "https://beta.acme.dev/{{{{path}}}}/"}}
    """)
    for name in ("acme", "beta"):
        refresh.refresh(get_context(cfg), name)
    sources = tmp_path / "data/sources"
    for name in ("acme", "beta"):
        assert (sources / name / "clone/HEAD").is_file() and (sources / name / "state.json").is_file()
    assert len(_chunks(cfg)) == 4

    write_docs(tmp_path / "local", {"handbook.md": "# Handbook\n\nThe pangolin handbook lives in a folder now.\n"})
    write_config(tmp_path, sources="""
      - {name: acme, kind: local, path: local, base_url: "https://docs.acme.dev/"}
      - {name: beta, kind: local, path: local, base_url: "https://beta.acme.dev/"}
    """)
    out = materialize_source(cfg, "acme", instance)
    assert not (sources / "acme/clone").exists() and not (sources / "acme/state.json").exists()
    assert (sources / "acme").is_dir()  # the source's folder and its other state stay
    assert "[PRUNE] source 'acme' is a local source now" in out["_log"]
    assert sorted(_chunks(cfg)) == [SITE + "handbook.md"]
    assert (sources / "beta/clone/HEAD").is_file()  # not ingested since: untouched

    lines: list[str] = []
    assert refresh.prune(get_context(cfg), log=lines.append) == {}
    assert not (sources / "beta/clone").exists() and not (sources / "beta/state.json").exists()
    assert any("'beta' is a local source now" in ln for ln in lines), lines
    assert (tmp_path / "repo/remote.git/HEAD").is_file()  # the repository itself is never touched


def _acme_ingested_from_git(tmp_path: Path) -> Path:
    """A config with one git source ``acme`` (DOCS, one commit), ingested; its path."""
    repo = Repo(tmp_path / "repo")
    repo.commit("one", DOCS)
    cfg = write_config(tmp_path, sources=f"""
      - {{name: acme, kind: git, repo: {repo.remote}, subpath: docs, url_template: "{SITE}{{{{path}}}}/"}}
    """)
    refresh.refresh(get_context(cfg), "acme")
    return cfg


def test_a_clone_folder_a_local_source_now_reads_is_not_deleted(tmp_path: Path) -> None:
    """Switching a git source to ``local`` with its ``path`` inside the folder docs-rag kept as its clone
    (a checkout the operator made there) deleted that folder with the clone, and the ingest failed on a
    missing path. A folder a configured local source reads is kept, and the log says how to move it."""
    cfg = _acme_ingested_from_git(tmp_path)
    clone = tmp_path / "data/sources/acme/clone"
    write_docs(clone / "checkout", {"handbook.md": "# Handbook\n\nThe pangolin handbook, checked out by hand.\n"})
    write_config(tmp_path, sources=f"""
      - {{name: acme, kind: local, path: {clone / 'checkout'}, base_url: "https://docs.acme.dev/"}}
    """)
    lines: list[str] = []
    refresh.refresh(get_context(cfg), "acme", log=lines.append)
    assert (clone / "checkout/handbook.md").is_file()
    assert any("is kept: the local source(s) acme read from it" in ln for ln in lines), lines
    assert sorted(_chunks(cfg)) == [SITE + "handbook.md"]


def test_a_source_that_changes_kind_is_parsed_again_even_where_its_pages_are_the_same(tmp_path: Path) -> None:
    """A git source made local whose files map to the same URLs had the same content hashes, so its
    pages counted as unchanged and their chunks kept what the git source stamped on them (the
    ``commit`` it was read at) for good. A change of ``kind`` re-parses the source."""
    cfg = _acme_ingested_from_git(tmp_path)
    before = _chunks(cfg)
    assert before and all(r["metadata"].get("commit") for rows in before.values() for r in rows)
    write_docs(tmp_path, DOCS)
    write_config(tmp_path, sources=f"""
      - {{name: acme, kind: local, path: docs, url_template: "{SITE}{{{{path}}}}/"}}
    """)
    lines: list[str] = []
    refresh.refresh(get_context(cfg), "acme", log=lines.append)
    after = _chunks(cfg)
    assert sorted(after) == sorted(before)  # the same pages, at the same URLs
    assert not any(r["metadata"].get("commit") for rows in after.values() for r in rows), after
    assert any("kind changed since the last ingest" in ln for ln in lines), lines


def test_a_removed_git_source_whose_clone_a_local_source_reads_keeps_its_folder(tmp_path: Path) -> None:
    """Renaming a git source to a local one that reads a checkout made in the old source's folder:
    the prune of the removed name deleted that whole folder, the new source's documents with it."""
    cfg = _acme_ingested_from_git(tmp_path)
    checkout = tmp_path / "data/sources/acme/clone/checkout"
    write_docs(checkout, {"handbook.md": "# Handbook\n\nThe pangolin handbook, checked out by hand.\n"})
    write_config(tmp_path, sources=f"""
      - {{name: handbook, kind: local, path: {checkout}, base_url: "https://docs.acme.dev/"}}
    """)
    lines: list[str] = []
    refresh.refresh(get_context(cfg), "handbook", log=lines.append)
    assert (checkout / "handbook.md").is_file()
    assert any("'acme' is not in the config any more, but its folder" in ln for ln in lines), lines


def _clone_moved_and_linked_back(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The git source ``acme`` ingested, its clone moved out of the storage and linked back in its place,
    with a checkout made in it: the link, where it leads, and the configured path through the link."""
    cfg = _acme_ingested_from_git(tmp_path)
    clone = tmp_path / "data/sources/acme/clone"
    moved = tmp_path / "moved"
    shutil.move(clone, moved)
    os.symlink(moved, clone)
    write_docs(moved / "checkout", {"handbook.md": "# Handbook\n\nThe pangolin handbook, checked out by hand.\n"})
    return cfg, clone, clone / "checkout"


def test_a_linked_clone_a_local_source_path_goes_through_is_not_unlinked(tmp_path: Path) -> None:
    """A clone folder that is a link was unlinked when the source became local, even when the local
    source's path goes through it (``<storage>/sources/acme/clone/checkout``): the data was safe where
    the link led, but the source lost its path and the ingest failed. The link is kept."""
    cfg, clone, checkout = _clone_moved_and_linked_back(tmp_path)
    write_config(tmp_path, sources=f"""
      - {{name: acme, kind: local, path: {checkout}, base_url: "https://docs.acme.dev/"}}
    """)
    lines: list[str] = []
    refresh.refresh(get_context(cfg), "acme", log=lines.append)
    assert clone.is_symlink() and (checkout / "handbook.md").is_file()
    assert any("is kept: the local source(s) acme read from it" in ln for ln in lines), lines
    assert sorted(_chunks(cfg)) == [SITE + "handbook.md"]


def test_a_removed_git_source_keeps_its_folder_when_a_local_path_goes_through_its_linked_clone(tmp_path: Path) -> None:
    """The prune of a removed source deleted its folder, and the link to the clone in it, when the new
    local source's path went through that link."""
    cfg, clone, checkout = _clone_moved_and_linked_back(tmp_path)
    write_config(tmp_path, sources=f"""
      - {{name: handbook, kind: local, path: {checkout}, base_url: "https://docs.acme.dev/"}}
    """)
    lines: list[str] = []
    refresh.refresh(get_context(cfg), "handbook", log=lines.append)
    assert clone.is_symlink() and (checkout / "handbook.md").is_file()
    assert any("'acme' is not in the config any more, but its folder" in ln for ln in lines), lines
    refresh.refresh(get_context(cfg), "handbook", log=lines.append)  # the next ingest still reads it
    assert {r["page_url"] for r in get_context(cfg).chunks.rows("source = 'handbook'")} == {SITE + "handbook.md"}


FAKE_SSH = """#!/bin/sh
# a stand-in for ssh (no sshd here): records how git started it and whether it could reach a terminal
if (: </dev/tty) 2>/dev/null; then tty=tty; else tty=notty; fi
echo "$tty $(basename "$0") $*" >> "$FAKE_SSH_LOG"
exit 255
"""

SCAN_UNDER_A_TERMINAL = """
import os, sys
from pathlib import Path
from docs_rag_pipeline.config import SourceConfig
from docs_rag_pipeline.sources.git import GitError, GitSource
os.close(os.open("/dev/tty", os.O_RDWR))  # the scan has a terminal, as `docs-rag ingest` typed in a shell
for repo in sys.argv[2:]:
    try:
        GitSource(SourceConfig(name="acme", kind="git", repo=repo), workdir=Path(sys.argv[1])).scan({}, log=print)
    except GitError as exc:
        print("GitError:", exc)
"""


def _ssh_seen_by_a_scan_under_a_terminal(tmp_path: Path, **env: str) -> list[str]:
    """Scans two SSH repositories in a child process whose controlling terminal is a pseudo-terminal;
    what the stand-in ssh (first on PATH, also as ``plink``) saw, one line per start."""
    import docs_rag_pipeline
    import fcntl
    import sys
    import termios

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("ssh", "plink"):
        (bin_dir / name).write_text(FAKE_SSH)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "ssh.log"
    log.unlink(missing_ok=True)
    child_env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_SSH_LOG": str(log),
                 "PYTHONPATH": str(Path(docs_rag_pipeline.__file__).parent.parent), **env}
    master, slave = os.openpty()

    def take_the_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    try:
        proc = subprocess.run([sys.executable, "-c", SCAN_UNDER_A_TERMINAL, str(tmp_path / "wd"),
                               "ssh://git@127.0.0.1/acme/docs.git", "git@127.0.0.1:acme/docs.git"],
                              stdin=slave, capture_output=True, text=True, env=child_env,
                              preexec_fn=take_the_terminal, timeout=300)
    finally:
        os.close(master)
        os.close(slave)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("GitError:") == 2, proc.stdout
    return log.read_text().splitlines()


def test_ssh_never_prompts_on_the_terminal(tmp_path: Path) -> None:
    """For ``ssh://`` and ``git@host:`` repositories git started ssh without BatchMode and with the
    terminal in reach: GIT_TERMINAL_PROMPT does not reach ssh, so a real ssh asked to accept a host
    key, or for a password or passphrase, and waited up to the git timeout. ssh now gets
    ``-o BatchMode=yes`` (added to the operator's own ssh command, never replacing it) and git runs
    with no controlling terminal, so even an ssh replacement that ignores BatchMode cannot ask."""
    seen = _ssh_seen_by_a_scan_under_a_terminal(tmp_path)
    assert len(seen) == 2 and all(ln.startswith("notty ssh ") and "-o BatchMode=yes" in ln for ln in seen), seen
    # the operator's GIT_SSH_COMMAND is kept, with the option added
    seen = _ssh_seen_by_a_scan_under_a_terminal(tmp_path, GIT_SSH_COMMAND="ssh -o Marker=operator")
    assert len(seen) == 2 and all("-o Marker=operator -o BatchMode=yes" in ln and ln.startswith("notty")
                                  for ln in seen), seen
    # so is core.sshCommand from the operator's git config
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text('[core]\n\tsshCommand = ssh -o Marker=config\n')
    seen = _ssh_seen_by_a_scan_under_a_terminal(tmp_path, GIT_CONFIG_GLOBAL=str(gitconfig))
    assert len(seen) == 2 and all("-o Marker=config -o BatchMode=yes" in ln and ln.startswith("notty")
                                  for ln in seen), seen
    # a command that is not OpenSSH gets no option it may not know, and still no terminal
    seen = _ssh_seen_by_a_scan_under_a_terminal(tmp_path, GIT_SSH_COMMAND="plink -batch")
    assert len(seen) == 2 and all(ln.startswith("notty plink ") and "BatchMode" not in ln for ln in seen), seen


@pytest.fixture
def stalled_server():
    """A 127.0.0.1 server that accepts every connection and never answers; its port."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(50)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except (TimeoutError, OSError):
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def _processes_naming(text: str) -> list[str]:
    """The command lines of the live processes whose command line holds ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if entry.name.isdigit() and text in cmdline and "pytest" not in cmdline:
            found.append(f"{entry.name}: {cmdline}")
    return found


def _scan_stalled(tmp_path: Path, port: int, *, timeout: float, scheme: str = "http") -> str:
    from docs_rag_pipeline.config import SourceConfig

    cfg = SourceConfig(name="acme", kind="git", repo=f"{scheme}://127.0.0.1:{port}/stalled-docs.git", branch="main",
                       timeout_seconds=timeout)
    with pytest.raises(GitError) as err:
        GitSource(cfg, workdir=tmp_path / "wd").scan({}, log=lambda m: None)
    return str(err.value)


@pytest.mark.timeout(300)
def test_a_stalled_http_server_ends_at_the_low_speed_limit(tmp_path: Path, stalled_server: int, monkeypatch) -> None:
    """A server that accepts the connection and never answers held every git command for the whole
    GIT_TIMEOUT_SECONDS (600 s, documented nowhere): git had no low-speed limit. Now a transfer under
    GIT_LOW_SPEED_BYTES per second for GIT_LOW_SPEED_SECONDS ends with git's own error first."""
    import docs_rag_pipeline.sources.git as git_source

    monkeypatch.setattr(git_source, "GIT_LOW_SPEED_SECONDS", 2, raising=False)
    message = _scan_stalled(tmp_path, stalled_server, timeout=30)
    assert "Operation too slow" in message and "took longer than" not in message, message


@pytest.mark.timeout(300)
def test_an_ssh_host_that_never_answers_ends_at_the_connect_timeout(tmp_path: Path, stalled_server: int,
                                                                     monkeypatch) -> None:
    """An ``ssh://`` repository whose host accepts the connection and never answers (a dead sshd, a
    firewall that holds the connection) held the refresh for the whole GIT_TIMEOUT_SECONDS: ssh was
    started without a connect timeout or keep-alives. It now gets ConnectTimeout, ServerAliveInterval and
    ServerAliveCountMax after the operator's own options, so ssh's own error ends it first."""
    import docs_rag_pipeline.sources.git as git_source
    from docs_rag_pipeline.config import SourceConfig

    monkeypatch.setattr(git_source, "SSH_CONNECT_SECONDS", 2, raising=False)
    cfg = SourceConfig(name="acme", kind="git", repo=f"ssh://git@127.0.0.1:{stalled_server}/acme/docs.git",
                       branch="main", timeout_seconds=60)
    with pytest.raises(GitError) as err:
        GitSource(cfg, workdir=tmp_path / "wd").scan({}, log=lambda m: None)
    message = str(err.value)
    assert "timed out" in message and "took longer than" not in message, message
    # the operator's own value comes first, and ssh takes the first value of an option
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -o ConnectTimeout=1")
    command = git_source._Git(tmp_path / "wd2", token=None, repo="")._batch_ssh_command(dict(os.environ))
    assert command.startswith("ssh -o ConnectTimeout=1 -o BatchMode=yes -o ConnectTimeout=2 "), command


@pytest.mark.timeout(300)
@pytest.mark.parametrize("variable, value", [("GIT_HTTP_LOW_SPEED_LIMIT", "1000"), ("GIT_HTTP_LOW_SPEED_TIME", "2")])
def test_one_low_speed_setting_of_the_operators_keeps_the_stall_limit(tmp_path: Path, stalled_server: int, monkeypatch,
                                                                      variable: str, value: str) -> None:
    """git applies its low-speed check only when both settings are set: an operator who set one (as git.md
    invites, to give a slow link more time) lost the check altogether, since docs-rag then added neither,
    and a stalled server held every git command for the whole GIT_TIMEOUT_SECONDS. The other is filled in."""
    import docs_rag_pipeline.sources.git as git_source

    monkeypatch.setattr(git_source, "GIT_LOW_SPEED_SECONDS", 2)
    monkeypatch.setenv(variable, value)
    message = _scan_stalled(tmp_path, stalled_server, timeout=30)
    assert "Operation too slow. Less than 1000 bytes/sec transferred the last 2 seconds" in message, message


@pytest.mark.timeout(300)
def test_a_git_command_past_the_timeout_leaves_no_git_process(tmp_path: Path, stalled_server: int, monkeypatch) -> None:
    """When the timeout killed ``git fetch``, its ``git remote-http`` children were left running,
    reparented to init, as long as the server held the socket: two more with every refresh. The
    whole process group git started is killed now."""
    import time

    import docs_rag_pipeline.sources.git as git_source

    monkeypatch.setattr(git_source, "GIT_LOW_SPEED_SECONDS", 600, raising=False)  # the overall timeout ends it here
    message = _scan_stalled(tmp_path, stalled_server, timeout=3)
    assert "took longer than 3 s (sources.acme.timeout_seconds)" in message, message
    assert message.endswith("or raise sources.acme.timeout_seconds for a big repository on a slow link"), message
    url = f"127.0.0.1:{stalled_server}/stalled-docs.git"
    deadline = time.monotonic() + 60  # SIGKILL is delivered at once; this only waits for the kernel
    while _processes_naming(url) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _processes_naming(url)


@pytest.mark.timeout(300)
def test_a_stalled_git_protocol_remote_ends_at_the_sources_timeout_seconds(tmp_path: Path, stalled_server: int) -> None:
    """A ``git://`` remote that accepts the connection and never answers has no low-speed or connect limit
    in git: only the limit on one git command ends it, which was GIT_TIMEOUT_SECONDS, 600 s in the code,
    that no setting changed (a stalled daemon held every refresh ten minutes, and a first clone of a big
    repository that needs longer could never be made). A git source's ``timeout_seconds`` sets it (600 s
    unset, as before) and the error names that key; the index is not touched."""
    from docs_rag_pipeline.config import load_config

    repo = Repo(tmp_path / "repo")
    repo.commit("one", DOCS)
    cfg = _config(tmp_path, repo)
    refresh.refresh(get_context(cfg), "acme")
    indexed = sorted(_chunks(cfg))
    assert load_config(cfg).sources[0].timeout_seconds == 600
    text = cfg.read_text()
    line = next(ln for ln in text.splitlines() if ln.strip() == f"repo: {repo.remote}")
    indent = line[:len(line) - len(line.lstrip())]
    cfg.write_text(text.replace(line, f"{indent}repo: git://127.0.0.1:{stalled_server}/docs.git\n"
                                      f"{indent}timeout_seconds: 2"))
    assert load_config(cfg).sources[0].timeout_seconds == 2
    with pytest.raises(GitError) as err:
        refresh.refresh(get_context(cfg), "acme")
    # no branch set: ls-remote asks the remote for its default branch first, and is the command that stalls
    assert "git ls-remote took longer than 2 s (sources.acme.timeout_seconds); check that " in str(err.value), err.value
    assert not str(err.value).endswith("token_env"), err.value  # a stall is no wrong repo, branch or token
    assert sorted(_chunks(cfg)) == indexed


def _indexed_with_its_clone_behind_a_link(tmp_path: Path):  # noqa: ANN202
    """A source indexed, then its clone moved to another disk (``bigdisk/clone``) and linked back:
    (repo, config, the indexed chunks, the clone's link, the folder it leads to)."""
    repo = Repo(tmp_path / "repo")
    repo.commit("one", DOCS)
    cfg = _config(tmp_path, repo)
    refresh.refresh(get_context(cfg), "acme")
    indexed = sorted(_chunks(cfg))
    clone = tmp_path / "data/sources/acme/clone"
    disk = tmp_path / "bigdisk/clone"
    disk.parent.mkdir()
    shutil.move(clone, disk)
    os.symlink(disk, clone)
    return repo, cfg, indexed, clone, disk


def test_a_linked_clone_whose_folder_comes_back_empty_is_cloned_again(tmp_path: Path) -> None:
    """A clone moved to another disk and linked back, whose folder then came back empty (a re-created
    volume), failed every ingest with "OSError: Cannot call rmtree on a symbolic link": no path, no
    fix, never again a clone. It is cloned again into the empty folder, the link kept; a link that leads
    to nothing is named with the fix, and nothing is removed, there or from the index."""
    repo, cfg, indexed, clone, disk = _indexed_with_its_clone_behind_a_link(tmp_path)
    shutil.rmtree(disk)
    disk.mkdir()  # the disk came back empty
    repo.commit("two", {"docs/guide/config.md": "# Configuration\n\nSettings live in `acme.yaml` now.\n"})
    lines: list[str] = []
    stats = refresh.refresh(get_context(cfg), "acme", log=lines.append)
    assert stats.pages_changed == 1
    assert clone.is_symlink() and (disk / "HEAD").is_file() and (disk / "objects").is_dir()
    assert any(f"is a link to the empty folder {disk}; cloning again into it" in ln for ln in lines), lines
    # the link's folder is gone (a disk that is not mounted): the path and the fix, nothing lost
    shutil.rmtree(disk)
    with pytest.raises(GitError) as err:
        refresh.refresh(get_context(cfg), "acme")
    assert f"the clone folder {clone} is a link to {disk}, which does not exist" in str(err.value)
    assert "remove the link" in str(err.value) and clone.is_symlink()
    # a folder there that holds something else is not the source's to delete
    write_docs(disk, {"notes.md": "# Someone else's notes\n"})
    with pytest.raises(GitError, match="which holds files but no git clone"):
        refresh.refresh(get_context(cfg), "acme")
    assert (disk / "notes.md").is_file() and sorted(_chunks(cfg)) == indexed


def _pack_refs_then_garble(clone: Path) -> None:
    git(clone, "--git-dir", str(clone), "pack-refs", "--all")
    with (clone / "packed-refs").open("a") as f:
        f.write("garbage\n")


@pytest.mark.parametrize("damage", [
    pytest.param(lambda c: (c / "HEAD").write_text(""), id="empty HEAD"),
    pytest.param(lambda c: (c / "HEAD").write_text("\0\0garbage"), id="garbled HEAD"),
    pytest.param(lambda c: (c / "config").write_text("[[[\n"), id="garbled config"),
    pytest.param(lambda c: (c / "refs/remotes/origin/main").write_text(""), id="empty tracking ref"),
    pytest.param(lambda c: (c / "refs/remotes/origin/main").write_text("1" * 40 + "\n"), id="ref to a lost object"),
    pytest.param(_pack_refs_then_garble, id="garbled packed-refs"),
])
def test_a_clone_damaged_by_a_crash_or_full_disk_is_cloned_again(tmp_path: Path, damage) -> None:
    """A crash or a full disk that left the clone's ``HEAD``, ``config`` or a ref file empty or garbled
    failed every refresh for good: with a bare "git for-each-ref failed (128): fatal: not a git
    repository" (no source named), or with "could not fetch branch 'main' …: fatal: bad object
    refs/remotes/origin/main …; check repo, branch and … token_env", which blamed the remote. The clone
    is the source's own copy: it is cloned again, and said; the index is kept until the new scan compares."""
    repo = Repo(tmp_path / "repo")
    repo.commit("one", DOCS)
    cfg = _config(tmp_path, repo)
    refresh.refresh(get_context(cfg), "acme")
    before = _chunks(cfg)
    clone = tmp_path / "data/sources/acme/clone"
    damage(clone)
    head = repo.commit("two", {"docs/guide/config.md": "# Configuration\n\nSettings live in `acme.yaml` now.\n"})
    lines: list[str] = []
    stats = refresh.refresh(get_context(cfg), "acme", log=lines.append)
    assert stats.pages_changed == 1 and stats.pages_new == 0 and stats.pages_deleted == 0
    assert any(f"acme: the clone {clone} is damaged" in ln and "cloning again, the index is kept" in ln
               for ln in lines), lines
    assert json.loads((tmp_path / "data/sources/acme/state.json").read_text())["commit"] == head
    after = _chunks(cfg)
    assert sorted(after) == sorted(before)
    for url in before:  # the pages that did not change are not written again
        if not url.endswith("/guide/config/"):
            assert sorted(r["chunk_id"] for r in after[url]) == sorted(r["chunk_id"] for r in before[url])
    assert refresh.refresh(get_context(cfg), "acme", log=lines.append).pages_changed == 0  # a sound clone now


def test_a_fetch_that_fills_the_disk_says_so_not_check_repo_branch_token(tmp_path: Path, monkeypatch) -> None:
    """A fetch whose clone filled the disk (seen on a tmpfs filled up by hand: git says `fatal: unable to
    write loose object file: No space left on device`) was reported as `could not fetch branch 'main' of
    …; check repo, branch and, for a private repository, token_env`: nothing about them was wrong. The
    error names the clone's disk and what to do; it still reads as a full disk to the CLI (exit 74). git's
    own message is given here as git wrote it on the full disk; no test may fill a real disk."""
    from docs_rag_pipeline import cli
    from docs_rag_pipeline.sources import git as git_source

    repo = Repo(tmp_path / "repo")
    repo.commit("one", DOCS)
    cfg = _config(tmp_path, repo)
    real = git_source._Git.run

    def full_disk(self, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        if args and args[0] == "fetch":
            raise GitError("git fetch failed (128): fatal: unable to write loose object file: No space left on "
                           "device; fatal: unpack-objects failed")
        return real(self, *args, **kw)

    monkeypatch.setattr(git_source._Git, "run", full_disk)
    with pytest.raises(GitError) as failed:
        refresh.refresh(get_context(cfg), "acme")
    said = str(failed.value)
    clone = tmp_path / "data/sources/acme/clone"
    assert f"sources.acme: the disk holding the clone {clone} is full" in said, said
    assert "check repo" not in said and "token_env" not in said
    assert cli._says_disk_full(said)
    monkeypatch.setattr(git_source._Git, "run", real)  # space again
    assert refresh.refresh(get_context(cfg), "acme").pages_new > 0


def test_an_object_lost_from_the_clone_is_fetched_again_by_cloning_again(tmp_path: Path) -> None:
    """A loose object of the clone left empty by a crash or a full disk (``object file … is empty``) made
    every refresh that read it fail for good with a bare ``git cat-file: object … is missing from the
    clone``: the refs and their commits are whole, so nothing cloned again, and no fetch sends an object
    the remote believes the clone has. The clone is the source's own copy: it is cloned again, said."""
    repo = Repo(tmp_path / "repo")
    repo.commit("one", DOCS)
    cfg = _config(tmp_path, repo)
    refresh.refresh(get_context(cfg), "acme")
    clone = tmp_path / "data/sources/acme/clone"
    sha = git(repo.work, "rev-parse", "HEAD:docs/guide/install.md")
    loose = clone / "objects" / sha[:2] / sha[2:]
    loose.chmod(0o644)
    loose.write_bytes(b"")
    text = (repo.work / "docs/guide/install.md").read_text()
    repo.commit("renamed", {"docs/guide/setup.md": text}, delete=("docs/guide/install.md",))  # its blob is read
    lines: list[str] = []
    stats = refresh.refresh(get_context(cfg), "acme", log=lines.append)
    assert (stats.pages_new, stats.pages_deleted, stats.chunks_embedded) == (1, 1, 0)
    assert any(f"acme: the clone {clone} is damaged" in ln and sha in ln and "cloning again, the index is kept" in ln
               for ln in lines), lines
    assert f"{SITE}guide/setup/" in _chunks(cfg)
    assert refresh.refresh(get_context(cfg), "acme", mode="force").pages_changed == 4  # every blob reads again


def test_a_corrupt_object_in_the_clones_pack_is_cloned_again_not_blamed_on_the_remote(tmp_path: Path) -> None:
    """A few bytes of the clone's pack damaged (a disk fault, a bad copy) inside an object the refs do not
    name made every refresh fail for good at the fetch, with "packed object … (stored in …/clone/objects/
    pack/…) is corrupt; … check repo, branch and, for a private repository, token_env", which blamed the
    remote. It is the clone's own damage: cloned again, said; the index is kept."""
    repo = Repo(tmp_path / "repo")
    repo.commit("one", DOCS)
    cfg = _config(tmp_path, repo)
    refresh.refresh(get_context(cfg), "acme")
    clone = tmp_path / "data/sources/acme/clone"
    git(clone, "--git-dir", str(clone), "repack", "-adq")  # one pack, as git gc or a larger fetch leaves it
    pack = next((clone / "objects/pack").glob("*.pack"))
    listed = subprocess.run(["git", "show-index"], stdin=pack.with_suffix(".idx").open("rb"), capture_output=True,
                            text=True, check=True).stdout.split("\n")
    offset = {ln.split()[1]: int(ln.split()[0]) for ln in listed if ln}[git(repo.work, "rev-parse", "HEAD^{tree}")]
    data = bytearray(pack.read_bytes())
    data[offset + 4:offset + 12] = bytes(b ^ 0xFF for b in data[offset + 4:offset + 12])  # inside its zlib stream
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    repo.commit("two", {"docs/guide/config.md": "# Configuration\n\nSettings live in `acme.yaml` now.\n"})
    lines: list[str] = []
    stats = refresh.refresh(get_context(cfg), "acme", log=lines.append)
    assert (stats.pages_changed, stats.pages_new, stats.pages_deleted) == (1, 0, 0)
    assert any(f"acme: the clone {clone} is damaged" in ln and "is corrupt" in ln
               and "cloning again, the index is kept" in ln for ln in lines), lines
    assert any("acme.yaml" in r["text"] for r in _chunks(cfg)[f"{SITE}guide/config/"])


def test_a_shallow_repository_is_indexed_and_its_next_commit_too(tmp_path: Path) -> None:
    """A shallow repository as ``repo`` (a CI checkout of depth 1, a ``--depth`` mirror): git's fetch
    rejected its branch with only a warning (shallow roots are not accepted without --update-shallow),
    so every refresh failed with a bare "git rev-parse failed (128): fatal: Needed a single revision"."""
    full = Repo(tmp_path / "full")
    full.commit("one", DOCS)
    full.commit("two", {"docs/extra.md": "# Extra\n\nAn extra page about gauges.\n"})
    shallow = tmp_path / "shallow.git"
    git(tmp_path, "clone", "-q", "--bare", "--depth", "1", f"file://{full.remote}", str(shallow))
    cfg = write_config(tmp_path, sources=f"""
      - name: acme
        kind: git
        repo: {shallow}
        subpath: docs
        url_template: "{SITE}{{path}}/"
    """)
    assert refresh.refresh(get_context(cfg), "acme").pages_new == 5
    full.commit("three", {"docs/later.md": "# Later\n\nA later page about dials.\n"})
    git(shallow, "--git-dir", str(shallow), "fetch", "-q", "--depth", "1", f"file://{full.remote}",
        "+refs/heads/main:refs/heads/main")  # the mirror fetched again at depth 1: the history is cut again
    stats = refresh.refresh(get_context(cfg), "acme")
    assert (stats.pages_new, stats.pages_unchanged, stats.pages_deleted) == (1, 5, 0)
    assert f"{SITE}later/" in _chunks(cfg)


def test_a_damaged_clone_behind_a_link_is_named_and_nothing_is_removed(tmp_path: Path) -> None:
    """A damaged clone that is a link to a folder elsewhere: what the link leads to is never removed, so
    the refresh stops with the path, the cause and the fix, and keeps the index."""
    repo, cfg, indexed, clone, disk = _indexed_with_its_clone_behind_a_link(tmp_path)
    (disk / "HEAD").write_text("")
    with pytest.raises(GitError) as err:
        refresh.refresh(get_context(cfg), "acme")
    msg = str(err.value)
    assert msg.startswith(f"sources.acme: the clone {clone} (a link to {disk}) is damaged"), msg
    assert f"Empty the folder {disk}" in msg and "nothing was removed" in msg
    assert clone.is_symlink() and (disk / "objects").is_dir() and sorted(_chunks(cfg)) == indexed


@pytest.mark.timeout(300)
def test_a_git_process_left_running_by_a_killed_refresh_is_stopped_before_its_locks_are_removed(
        tmp_path: Path, stalled_server: int) -> None:
    """git runs in a session of its own (so that nothing it starts can prompt), which a kill of the
    refresh's process group does not reach: a refresh killed during a fetch left git working on the
    clone. The next refresh removed the locks of that live git (the clone is the source's alone), and
    two gits then wrote the same refs. It stops such a process first, then removes its locks."""
    import subprocess

    repo = Repo(tmp_path / "repo")
    repo.commit("one", DOCS)
    cfg = _config(tmp_path, repo)
    refresh.refresh(get_context(cfg), "acme")
    clone = tmp_path / "data/sources/acme/clone"
    # what a killed refresh leaves: a git fetch on the clone, in its own session, holding a ref's lock
    left = subprocess.Popen(["git", "--git-dir", str(clone), "fetch", f"http://127.0.0.1:{stalled_server}/x.git"],
                            start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    (clone / "refs" / "heads" / "main.lock").write_text("")
    repo.commit("two", {"docs/guide/config.md": "# Configuration\n\nSettings live in `acme.yaml` now.\n"})
    lines: list[str] = []
    try:
        stats = refresh.refresh(get_context(cfg), "acme", log=lines.append)
        assert left.wait(timeout=60) is not None  # stopped, not left to run
    finally:
        if left.poll() is None:
            left.kill()
            left.wait()
    assert stats.pages_changed == 1
    assert any(f"stopped git process {left.pid}, left running on the clone by a refresh that was killed" in ln
               for ln in lines), lines
    assert any("removed refs/heads/main.lock from the clone" in ln for ln in lines), lines


@pytest.mark.parametrize("old, new", [("release", "release/1.0"), ("docs/v1", "docs")])
def test_a_branch_that_nests_under_the_one_synced_before_is_fetched(tmp_path: Path, old: str, new: str) -> None:
    """``branch: release`` changed to ``release/1.0`` (the server replaced one by the other): the clone
    still held ``refs/remotes/origin/release``, which git's refs-as-files cannot hold beside
    ``refs/remotes/origin/release/1.0``, and ``--prune`` on a one-branch refspec never removed it, so
    every refresh failed ("cannot lock ref …; check repo, branch and … token_env") until someone deleted
    the clone. The conflicting tracking ref is this source's own: removed, said, and the branch fetched."""
    repo = Repo(tmp_path / "repo")
    repo.commit("one", {"docs/index.md": DOCS["docs/index.md"]})
    git(repo.work, "push", "-q", "origin", f"HEAD:{old}")
    cfg = _config(tmp_path, repo, extra=f"branch: {old}")
    assert len(refresh.scan_pages(get_context(cfg), "acme")) == 1
    git(repo.remote, "branch", "-D", old)
    repo.commit("two", {"docs/guide/config.md": DOCS["docs/guide/config.md"]})
    git(repo.work, "push", "-q", "origin", f"HEAD:{new}")
    cfg = _config(tmp_path, repo, extra=f"branch: {new}")
    lines: list[str] = []
    notes: dict = {}
    pages = refresh.scan_pages(get_context(cfg), "acme", log=lines.append, notes=notes)
    assert notes["branch"] == new and len(pages) == 2
    assert any(f"removed refs/remotes/origin/{old} from the clone" in ln for ln in lines), lines


def _index_of(cfg: Path) -> dict[str, dict]:
    """chunk_id → what a reader sees of it (the commit and write time left out)."""
    out = {}
    for r in get_context(cfg).chunks.rows("source = 'acme'"):
        meta = {k: v for k, v in r["metadata"].items() if k != "commit"}
        out[r["chunk_id"]] = {**{k: r[k] for k in ("page_url", "url", "title", "text", "parent_id")},
                              "headings": list(r["headings"]), "metadata": meta}
    return out


def _clean_index_of(tmp_path: Path, repo: Repo, extra: str) -> dict[str, dict]:
    fresh = tmp_path / "clean"
    fresh.mkdir(exist_ok=True)
    shutil.rmtree(fresh / "data", ignore_errors=True)
    cfg = _config(fresh, repo, extra=extra)
    refresh.refresh(get_context(cfg), "acme", log=lambda _: None)
    return _index_of(cfg)


def test_a_file_moved_to_a_path_with_the_same_url_and_bytes_is_parsed_again(tmp_path: Path) -> None:
    """``git mv docs/guide.md docs/guide/index.md`` (both ``…/guide/`` under the url_template), then
    ``docs/guide/index.rst``, without editing the file: the page's status compared only its URL and bytes,
    so it stayed ``unchanged`` with the old path's ``metadata_rules`` values and the old format's parse
    (a Markdown title and anchors the live page does not have). The path is part of what the page is
    made from: each move is ``changed``, and the index equals a clean ingest of the commit, with the
    chunk texts that did not change served from the embedding cache."""
    extra = 'metadata_rules: [{key: kind, values: {"guide/**": guide-page, "**": other}}]'
    guide = "# Setup guide\n\nInstall it with pip.\n\n## Options\n\nSet `--fast` to skip the checks.\n"
    repo = Repo(tmp_path / "repo")
    repo.commit("one", {"docs/index.md": DOCS["docs/index.md"], "docs/guide.md": guide})
    cfg = _config(tmp_path, repo, extra=extra)
    refresh.refresh(get_context(cfg), "acme", log=lambda _: None)
    assert {r["metadata"]["kind"] for r in _chunks(cfg)[f"{SITE}guide/"]} == {"other"}

    repo.commit("guide.md becomes the folder's index", rename={"docs/guide.md": "docs/guide/index.md"})
    stats = refresh.refresh(get_context(cfg), "acme", log=lambda _: None)
    assert stats.pages_changed == 1 and stats.chunks_embedded == 0, stats
    assert {r["metadata"]["kind"] for r in _chunks(cfg)[f"{SITE}guide/"]} == {"guide-page"}
    assert _index_of(cfg) == _clean_index_of(tmp_path, repo, extra)

    repo.commit("now reStructuredText", rename={"docs/guide/index.md": "docs/guide/index.rst"})
    stats = refresh.refresh(get_context(cfg), "acme", log=lambda _: None)
    assert stats.pages_changed == 1, stats
    assert not any("#options" in r["url"] for r in _chunks(cfg)[f"{SITE}guide/"])  # no Markdown anchor left
    assert _index_of(cfg) == _clean_index_of(tmp_path, repo, extra)
    again = refresh.refresh(get_context(cfg), "acme", log=lambda _: None)
    assert again.pages_unchanged == 2 and again.pages_changed == 0, again


def test_a_remote_head_naming_a_missing_branch_is_said_so(tmp_path: Path) -> None:
    """No ``branch`` key, and the remote's HEAD names ``main``, which was deleted (or never pushed: an
    empty repository). The error said the remote "does not say which branch is its default", sending the
    operator to look for a config problem, without the ``sources.acme:`` prefix of the other errors."""
    repo = Repo(tmp_path / "repo")
    repo.commit("one", {"docs/index.md": DOCS["docs/index.md"]})
    git(repo.work, "push", "-q", "origin", "HEAD:trunk")
    git(repo.remote, "symbolic-ref", "HEAD", "refs/heads/main")
    git(repo.remote, "branch", "-D", "main")
    cfg = _config(tmp_path, repo)
    with pytest.raises(GitError) as err:
        refresh.scan_pages(get_context(cfg), "acme")
    msg = str(err.value)
    assert msg.startswith("sources.acme: the default branch of ") and "(its HEAD) is 'main', which does not exist" in msg
    assert "set sources.acme.branch" in msg
    empty = Repo(tmp_path / "empty")
    git(empty.remote, "symbolic-ref", "HEAD", "refs/heads/docs")
    (tmp_path / "e").mkdir()
    with pytest.raises(GitError, match="HEAD\\) is 'docs', which does not exist there \\(an empty repository"):
        refresh.scan_pages(get_context(_config(tmp_path / "e", empty)), "acme")


def test_an_asciidoc_include_through_a_link_outside_subpath_reads_as_in_a_checkout(tmp_path: Path) -> None:
    """``docs/page.adoc`` includes ``../shared/partial.adoc``, a link to ``../common/partial.adoc``, both
    outside ``subpath: docs``: the include was looked up among the listed files only (links only below
    ``subpath``), so it was "cannot be resolved" and its text missing, where a checkout reads it. It
    resolves through links anywhere in the repository now, never outside it, and a change to the file
    the link leads to re-reads the page."""
    repo = Repo(tmp_path / "repo")
    write_docs(repo.work, {"common/partial.adoc": "The partial says ZORBLAX-42.\n",
                           "docs/page.adoc": "= Page\n\nIntro.\n\ninclude::../shared/partial.adoc[]\n\n"
                                             "include::../shared/passwd.adoc[]\n"})
    (repo.work / "shared").mkdir()
    os.symlink("../common/partial.adoc", repo.work / "shared/partial.adoc")
    os.symlink("/etc/passwd", repo.work / "shared/passwd.adoc")
    repo.commit("one")
    cfg = _config(tmp_path, repo, extra="include: ['**/*.adoc']")
    lines: list[str] = []
    notes: dict = {}
    pages = refresh.scan_pages(get_context(cfg), "acme", log=lines.append, notes=notes)
    assert len(pages) == 1 and "ZORBLAX-42" in pages[0]["sections"]
    assert json.loads(pages[0]["metadata"])["unresolved_includes"] == ["../shared/passwd.adoc"]  # never outside
    state = {pages[0]["page_url"]: pages[0]["content_hash"]}

    repo.commit("the partial changes", {"common/partial.adoc": "The partial says QUUXLY-7.\n"})
    src = GitSource(get_context(cfg).config.source("acme"), workdir=tmp_path / "data/sources/acme")
    again = src.scan(state, log=lines.append)
    assert [p.status for p in again.pages] == ["changed"] and "QUUXLY-7" in (again.pages[0].body or "")


def test_a_vitepress_repository_is_linked_by_vitepress_ids_once_the_source_says_so(tmp_path: Path) -> None:
    """VitePress slugs a heading with its own function, not github-slugger (the docs said it did):
    ``## What's new in v1.2?`` is ``#what-s-new-in-v1-2`` on the site and was cited ``#whats-new-in-v12``,
    no section of it. A repository with ``docs/.vitepress/config.mts`` beside the pages gets a hint; with
    ``heading_anchors: vitepress`` the pages are re-parsed and linked by VitePress' ids (runs of
    punctuation one ``-``, ``_`` before a leading digit, an inline component left out, ``-1`` for a repeat)."""
    from docs_rag_pipeline.config import load_config
    from docs_rag_pipeline.context import Context

    repo = Repo(tmp_path / "repo")
    repo.commit("docs", {"docs/.vitepress/config.mts": "export default { title: 'Acme' }\n",
                         "docs/notes.md": "# Release notes\n\n## What's new in v1.2?\n\nThe glorpish exporter.\n\n"
                                          "## netlify.toml file\n\nThe build command.\n\n## 2024 plans\n\nMore.\n\n"
                                          "## Setup <Badge type=\"tip\" text=\"beta\" />\n\nOne.\n\n## Setup\n\nTwo.\n"})
    lines: list[str] = []
    refresh.refresh(Context(load_config(_config(tmp_path, repo))), "acme", log=lines.append)
    assert any(ln.startswith("[DISCOVER] acme: hint: docs/.vitepress/config.mts of the repository is beside the "
                             "documents, so VitePress probably builds the site")
               and "set heading_anchors: vitepress" in ln for ln in lines), lines
    cfg = _config(tmp_path, repo, extra="heading_anchors: vitepress")
    lines.clear()
    out = refresh.refresh(Context(load_config(cfg)), "acme", log=lines.append)
    assert out.pages_changed == 1 and not any("hint" in ln for ln in lines), lines
    assert sorted(r["url"] for rows in _chunks(cfg).values() for r in rows) == [
        f"{SITE}notes/#_2024-plans", f"{SITE}notes/#netlify-toml-file", f"{SITE}notes/#setup",
        f"{SITE}notes/#setup-1", f"{SITE}notes/#what-s-new-in-v1-2"]


def test_an_mkdocs_repository_is_linked_by_python_markdowns_ids_once_the_source_says_so(tmp_path: Path) -> None:
    """A repository that MkDocs builds (mkdocs.yml at its root, the pages in docs/): the ingest says
    that its headings are linked by GitHub's slugs and what to set; with ``heading_anchors:
    python-markdown`` the next refresh re-parses the unchanged pages with MkDocs' ids, and says nothing."""
    from docs_rag_pipeline.config import load_config
    from docs_rag_pipeline.context import Context

    repo = Repo(tmp_path / "repo")
    repo.commit("docs", {"mkdocs.yml": "site_name: Acme\n",
                         "docs/setup.md": "# Setup\n\n## Install & configure\n\nInstall the acme agent first.\n\n"
                                          "## Install & configure\n\nConfigure the acme agent in acme.yml.\n"})
    lines: list[str] = []
    refresh.refresh(Context(load_config(_config(tmp_path, repo))), "acme", log=lines.append)
    assert any(ln.startswith("[DISCOVER] acme: hint: mkdocs.yml of the repository is beside the documents")
               and "set heading_anchors: python-markdown" in ln for ln in lines), lines
    cfg = _config(tmp_path, repo, extra="heading_anchors: python-markdown")
    lines.clear()
    out = refresh.refresh(Context(load_config(cfg)), "acme", log=lines.append)
    assert out.pages_changed == 1 and not any("hint" in ln for ln in lines), lines
    assert sorted(r["url"] for rows in _chunks(cfg).values() for r in rows) == [
        f"{SITE}setup/#install-configure", f"{SITE}setup/#install-configure_1"]
