"""A local source against an unlucky file system: folders that can be read but not searched, links to
folders inside linked ones, a tree a thousand folders deep, includes that cannot be reached, the
storage folder inside the source's folder, gitignore-style excludes, ``~user`` paths.

Permissions: tests run as root, and root passes every permission check (CAP_DAC_OVERRIDE and
CAP_DAC_READ_SEARCH). So the scans that need a mode bit to take effect run in a subprocess started by
util-linux ``setpriv`` with those two capabilities dropped (still root, but a folder's missing x bit
stops it). Such a test is skipped only when it runs as root without ``setpriv``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import DagsterInstance

from docs_rag_pipeline.config import ConfigError, load_config, parse_config
from docs_rag_pipeline.context import Context
from docs_rag_pipeline.sources.local import LocalSource

from .conftest import REPO, write_docs
from .dagster_helpers import materialize_source

BASE = "https://d.example/"

_SCAN = """
import json, sys
from pathlib import Path
from docs_rag_pipeline.config import parse_config
from docs_rag_pipeline.sources.local import LocalSource
root, state = Path(sys.argv[1]), json.loads(sys.argv[2])
cfg = parse_config({"sources": [{"name": "guide", "kind": "local", "path": "docs", "base_url": sys.argv[3]}]},
                   root=root).sources[0]
lines = []
try:
    res = LocalSource(cfg, workdir=root / "w").scan(state, log=lines.append)
except Exception as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}", "lines": lines}))
else:
    print(json.dumps({"pages": {p.path: [p.status, p.error, p.metadata.get("unresolved_includes")]
                                for p in res.pages},
                      "deleted": res.deleted, "complete": res.complete, "notes": res.notes, "lines": lines},
                     default=str))
"""


def _scan_without_dac_override(root: Path, state: dict[str, str] | None = None) -> dict:
    """The scan of ``root/docs`` as a user whom mode bits stop: its pages, notes and log lines."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without util-linux `setpriv`: no way to take a permission away")
        prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search",
                  "--inh-caps=-dac_override,-dac_read_search"]
    r = subprocess.run([*prefix, sys.executable, "-c", _SCAN, str(root), json.dumps(state or {}), BASE],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _scan(root: Path, **keys: object):  # noqa: ANN202 - (the scan, its log lines)
    cfg = parse_config({"sources": [{"name": "guide", "kind": "local", "path": "docs", "base_url": BASE, **keys}]},
                       root=root).sources[0]
    lines: list[str] = []
    return LocalSource(cfg, workdir=root / "w").scan({}, log=lines.append), lines


def test_a_folder_that_can_be_read_but_not_searched_fails_its_entries_not_the_source(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, {"a.md": "# A\n\nAlpha.\n", "sub/b.md": "# B\n\nBeta.\n", "other/o.md": "# O\n\nOther.\n"})
    (docs / "sub/link.md").symlink_to("../other/o.md")
    (docs / "sub/ldir").symlink_to("../other")
    (docs / "sub").chmod(0o644)  # readable, not searchable: a chmod 644 by mistake
    try:
        out = _scan_without_dac_override(tmp_path)
    finally:
        (docs / "sub").chmod(0o755)
    assert "error" not in out, out  # was: PermissionError from os.readlink, and no page refreshed
    assert out["pages"]["a.md"][0] == out["pages"]["other/o.md"][0] == "new"
    assert out["pages"]["sub/b.md"][:2] == ["failed", "cannot be read: Permission denied"]
    assert out["pages"]["sub/link.md"][:2] == ["failed", "cannot be read: Permission denied"]
    # the link to a folder may hold indexed pages: the scan is incomplete and removes nothing
    assert out["notes"]["unlisted_folders"] == ["sub/ldir: Permission denied"] and out["complete"] is False


def test_a_link_whose_target_cannot_be_reached_keeps_its_page(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, {"top.md": "# Top\n\nTop.\n", "tgt/t.md": "# Tee\n\nGaskets.\n"})
    (docs / "l.md").symlink_to("tgt/t.md")
    first, _ = _scan(tmp_path)
    state = {p.page_url: p.content_hash for p in first.pages}
    assert BASE + "l.md" in state
    (docs / "tgt").chmod(0o600)  # the folder loses its x bit
    try:
        out = _scan_without_dac_override(tmp_path, state)
    finally:
        (docs / "tgt").chmod(0o755)
    assert out["deleted"] == []  # was: l.md deleted, "it points to nothing"
    assert not any("points to nothing" in line for line in out["lines"]), out["lines"]
    assert out["pages"]["l.md"][:2] == ["failed", "cannot be read: Permission denied"]
    assert "[DISCOVER] guide: l.md cannot be read: Permission denied; its indexed chunks are kept" in out["lines"]


def test_a_source_folder_whose_parent_cannot_be_searched_is_named_with_its_fix(tmp_path: Path) -> None:
    priv = tmp_path / "priv"
    write_docs(priv / "docs", {"a.md": "# A\n\nAlpha.\n"})
    (tmp_path / "docs").symlink_to(priv / "docs")  # the config's path: docs, resolved through priv/
    priv.chmod(0o600)
    try:
        out = _scan_without_dac_override(tmp_path)
    finally:
        priv.chmod(0o755)
    assert out["error"] == (
        f"SourceError: sources.guide.path: '{tmp_path / 'docs'}' cannot be reached (Permission denied on {priv}); "
        "give the ingest user search permission on that folder, or fix the path in the config (nothing was "
        "removed from the index)")


def test_an_include_that_cannot_be_reached_leaves_the_page_indexed(tmp_path: Path) -> None:
    long_name = "x" * 300 + ".adoc"
    write_docs(tmp_path / "docs", {"main.adoc": "= Main\n\nBefore.\n\ninclude::partials/x.adoc[]\n\n"
                                                f"include::{long_name}[]\n\nAfter.\n",
                                   "partials/x.adoc": "Partial text.\n"})
    (tmp_path / "docs/partials").chmod(0o600)  # readable, not searchable
    try:
        out = _scan_without_dac_override(tmp_path)
    finally:
        (tmp_path / "docs/partials").chmod(0o755)
    # was: "main.adoc cannot be read: Permission denied; not indexed", the include never named
    status, error, unresolved = out["pages"]["main.adoc"]
    assert status == "new" and error is None
    assert unresolved == ["partials/x.adoc (cannot be read: Permission denied)",
                          f"{long_name} (cannot be read: File name too long)"]
    assert ("[DISCOVER] guide: main.adoc: include::partials/x.adoc[] cannot be resolved: cannot be read: "
            "Permission denied; skipped") in out["lines"]


def test_an_include_of_a_loop_of_links_is_unresolved_and_the_source_is_scanned(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, {"main.adoc": "= Main\n\nBefore.\n\ninclude::l1.adoc[]\n\nAfter.\n", "other.md": "# O\n\nO.\n"})
    (docs / "l1.adoc").symlink_to("l2.adoc")
    (docs / "l2.adoc").symlink_to("l1.adoc")
    res, lines = _scan(tmp_path)  # was: RuntimeError: Symlink loop, no page refreshed
    pages = {p.path: p for p in res.pages}
    assert set(pages) == {"main.adoc", "other.md"} and pages["main.adoc"].status == "new"
    assert pages["main.adoc"].metadata["unresolved_includes"] == ["l1.adoc (a loop of links)"]
    assert "After." in pages["main.adoc"].body
    assert "[DISCOVER] guide: main.adoc: include::l1.adoc[] cannot be resolved: a loop of links; skipped" in lines


def test_an_antora_descriptor_that_is_a_loop_of_links_is_taken_as_absent(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, {"modules/ROOT/pages/x.adoc": "= X\n\nThe x page.\n"})
    (docs / "antora.yml").symlink_to("antora2.yml")
    (docs / "antora2.yml").symlink_to("antora.yml")
    res, _ = _scan(tmp_path)  # was: RuntimeError: Symlink loop (the whole source), then a failed page
    assert [(p.path, p.status) for p in res.pages] == [("modules/ROOT/pages/x.adoc", "new")]


def test_a_link_to_a_folder_inside_a_linked_folder_does_not_index_its_files_again(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, {"v2/intro.md": "# Intro\n\nIntro.\n", "v2/api/auth.md": "# Auth\n\nTokens.\n"})
    (docs / "latest").symlink_to("v2")
    (docs / "api").symlink_to("v2/api")  # a shortcut to a folder inside the linked one
    res, lines = _scan(tmp_path)
    paths = sorted(p.path for p in res.pages)
    # each file at most at its own path and under one link (was: auth.md three times)
    assert paths == ["api/auth.md", "latest/intro.md", "v2/api/auth.md", "v2/intro.md"]
    assert "[DISCOVER] guide: skipped the folder latest/api: that folder is already listed through the link api" \
        in lines
    (docs / "api").unlink()  # the other way round: the link to the inner folder comes after
    (docs / "zapi").symlink_to("v2/api")
    paths = sorted(p.path for p in _scan(tmp_path)[0].pages)
    assert paths == ["latest/api/auth.md", "latest/intro.md", "v2/api/auth.md", "v2/intro.md"]


def test_a_tree_a_thousand_folders_deep_is_walked(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, {"top.md": "# Top\n\nTop.\n"})
    deep = docs
    for _ in range(1100):  # one level at a time (Path.mkdir(parents=True) recurses)
        deep = deep / "a"
        deep.mkdir()
    (deep / "deep.md").write_text("# Deep\n\nDeep.\n")
    try:
        res, _ = _scan(tmp_path)  # was: RecursionError, no folder named
        assert sorted(p.path for p in res.pages) == ["a/" * 1100 + "deep.md", "top.md"]
    finally:  # pytest's clean-up (shutil.rmtree) recurses: a tree this deep would fail it, in every session
        subprocess.run(["rm", "-rf", "--", str(docs / "a")], check=True)


@pytest.mark.parametrize("pattern", ["drafts/", "drafts", "drafts/*", "**/drafts/"])
def test_an_exclude_naming_a_folder_leaves_out_the_folder(tmp_path: Path, pattern: str) -> None:
    write_docs(tmp_path / "docs", {"a.md": "# A\n\nPublic.\n", "drafts/secret.md": "# S\n\nUnreleased.\n",
                                   "drafts/more/deeper.md": "# D\n\nUnreleased.\n",
                                   "drafts-old.md": "# Old\n\nKept.\n"})
    res, _ = _scan(tmp_path, exclude=[pattern])
    assert sorted(p.path for p in res.pages) == ["a.md", "drafts-old.md"]  # was: drafts/ indexed for two


def test_a_nested_folder_is_left_out_by_a_pattern_for_any_level(tmp_path: Path) -> None:
    write_docs(tmp_path / "docs", {"a.md": "# A\n\nPublic.\n", "guide/drafts/s.md": "# S\n\nUnreleased.\n"})
    assert [p.path for p in _scan(tmp_path, exclude=["drafts/"])[0].pages] == ["a.md", "guide/drafts/s.md"]
    assert [p.path for p in _scan(tmp_path, exclude=["**/drafts/"])[0].pages] == ["a.md"]


@pytest.mark.parametrize("key", ["include", "exclude"])
def test_a_negated_pattern_is_a_config_error(tmp_path: Path, key: str) -> None:
    with pytest.raises(ConfigError) as e:  # was: accepted, matching nothing: the drafts were indexed
        parse_config({"sources": [{"name": "guide", "kind": "local", "path": "docs", "base_url": BASE,
                                   key: ["**/*.md", "!drafts/**"]}]}, root=tmp_path)
    assert (f"sources[0].{key}: '!drafts/**' starts with '!', but patterns have no negation (a '!' would match "
            "only names starting with it); to leave those files out, put 'drafts/**' in exclude") in str(e.value)


@pytest.mark.parametrize("key,value,needle", [
    ("path", "~nosuchuser42/docs", "sources[0].path: '~nosuchuser42/docs': no home folder for the user "
                                   "'nosuchuser42' (no such user?); write the folder's full path"),
    ("storage", "~nosuchuser42/data", "storage: '~nosuchuser42/data': no home folder for the user 'nosuchuser42'"),
])
def test_a_home_folder_of_an_unknown_user_is_a_config_error(tmp_path: Path, key: str, value: str,
                                                           needle: str) -> None:
    path = value if key == "path" else "docs"
    storage = value if key == "storage" else "data"
    cfg = tmp_path / "docs_rag.yaml"
    cfg.write_text(f"storage: {storage}\nsources:\n  - {{name: guide, kind: local, path: '{path}', "
                   f"base_url: '{BASE}'}}\n")
    with pytest.raises(ConfigError) as e:  # was: RuntimeError: Could not determine home directory.
        load_config(cfg)
    assert needle in str(e.value)


def test_the_storage_folder_inside_the_source_folder_is_never_a_document(tmp_path: Path) -> None:
    write_docs(tmp_path, {"README.md": "# Proj\n\nProject readme about llamas.\n"})
    cached = tmp_path / "data/sources/web/raw/9e43.html"  # a web source's cache of a page
    cached.parent.mkdir(parents=True)
    cached.write_text("<html><head><title>Kiwi</title></head><body><h1>Kiwi</h1><p>Prune kiwi vines.</p></body>"
                      "</html>")
    (tmp_path / "notes.md").write_text("# Notes\n\nNotes about the project.\n")
    cfg = tmp_path / "docs_rag.yaml"
    cfg.write_text(f"storage: data\nsources:\n  - {{name: here, kind: local, path: ., base_url: '{BASE}'}}\n")
    with DagsterInstance.ephemeral() as instance:
        summary = materialize_source(cfg, "here", instance)
    urls = sorted({r["page_url"] for r in Context(load_config(cfg)).chunks.rows("source = 'here'")})
    assert urls == [BASE + "README.md", BASE + "notes.md"]  # was: also data/sources/web/raw/9e43.html
    assert "[DISCOVER] here: skipped data: it is docs-rag's own folder" in summary["_log"]
