"""``kind: local`` on a hostile folder: symlinks out of it, link loops, unreadable files and
folders, text that is not UTF-8. Real files, real links, a really unreadable file (see
:func:`_ingest_without_dac_override`), real Dagster runs and a real LanceDB table."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance

from docs_rag_pipeline import refresh
from docs_rag_pipeline.config import load_config, parse_config
from docs_rag_pipeline.context import Context
from docs_rag_pipeline.query import search
from docs_rag_pipeline.retrieval import page_rows
from docs_rag_pipeline.sources.local import LocalSource

from .conftest import GUIDE, REPO, write_config, write_docs
from .dagster_helpers import materialize_source

BASE = "https://docs.example.org/"
SECRET = "The launch code of the aardwolf vault is 7-OSPREY-42."


def _chunks(cfg: Path) -> dict[str, list[dict]]:
    """page_url → its chunk rows."""
    out: dict[str, list[dict]] = {}
    for r in Context(load_config(cfg)).chunks.rows("source = 'guide'"):
        out.setdefault(r["page_url"], []).append(r)
    return out


def _without_time(chunks: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """The rows without ``updated_at``, which a rewrite sets to its own second (the same rows compared
    equal only when both writes fell in one second: the test passed alone and failed in the suite)."""
    return {url: [{k: v for k, v in r.items() if k != "updated_at"} for r in rows] for url, rows in chunks.items()}


def _scan_docs(root: Path):  # noqa: ANN202 - (the scan, its log lines)
    """A scan of the local source ``root/docs`` and the lines it logged."""
    cfg = parse_config({"sources": [{"name": "guide", "kind": "local", "path": "docs", "base_url": BASE}]},
                       root=root).sources[0]
    lines: list[str] = []
    return LocalSource(cfg, workdir=root / "w").scan({}, log=lines.append), lines


def test_symlinks_out_of_the_folder_are_never_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_docs(outside, {"secret.md": f"# Secret\n\n{SECRET}\n", "more/notes.md": f"# Notes\n\n{SECRET}\n"})
    docs = tmp_path / "docs"
    write_docs(docs, GUIDE)
    (docs / "passwd.md").symlink_to("/etc/passwd")
    (docs / "secret.md").symlink_to(outside / "secret.md")
    (docs / "relative.md").symlink_to("../outside/secret.md")
    (docs / "more").symlink_to(outside / "more")  # a folder outside
    (docs / "alias.md").symlink_to("install.md")  # a file inside: indexed at the link's path
    (docs / "forms" / "parent").symlink_to("..")  # a loop
    (docs / "broken.md").symlink_to("missing.md")
    cfg = write_config(tmp_path)
    with DagsterInstance.ephemeral() as instance:
        out = materialize_source(cfg, "guide", instance)
    pages = _chunks(cfg)
    assert set(pages) == {BASE + p for p in (*GUIDE, "alias.md")}
    assert not any("OSPREY" in r["text"] or "root:" in r["text"] for rows in pages.values() for r in rows)
    for url in ("passwd.md", "secret.md", "relative.md", "more/notes.md"):
        assert page_rows(Context(load_config(cfg)), BASE + url) == []
    assert all("OSPREY" not in h.text for h in search("launch code of the aardwolf vault", config=cfg))

    mat = out["_result"].asset_materializations_for_node("scraped_pages")[0].metadata
    assert mat["scan_skipped_links"].value == 6
    listed = mat["scan_skipped_link_list"].value
    root = docs.resolve()
    assert f"passwd.md -> /etc/passwd: its real path /etc/passwd is outside the folder {root}" in listed
    assert f"more -> {outside / 'more'}: its real path {outside.resolve() / 'more'} is outside the folder {root}" \
        in listed
    assert "forms/parent -> ..: a loop (it points to a folder it is inside)" in listed
    assert "broken.md -> missing.md: it points to nothing" in listed
    log = out["_log"]
    assert log.count("[DISCOVER] guide: skipped the symlink secret.md -> ") == 1  # once per link
    assert log.count("skipped the symlink") == 6


def test_asciidoc_includes_stay_inside_the_folder(tmp_path: Path) -> None:
    """An include never reads out of the folder nor a hidden file, also through a link inside the folder
    (gitedge F2: ``notes.txt -> .env`` and ``gitdir -> .git`` put a key and a token in the page's text,
    and then in search results; the scan itself skipped those links)."""
    write_docs(tmp_path / "outside", {"secret.adoc": f"{SECRET}\n"})
    docs = tmp_path / "docs"
    write_docs(docs, {"page.adoc": "= Page\n\nBefore.\n\ninclude::../outside/secret.adoc[]\n\n"
                                   "include::partials/link.adoc[]\n\ninclude::partials/ok.adoc[]\n\n"
                                   "include::.env[]\n\ninclude::partials/../.git/config[]\n\n"
                                   "include::notes.txt[]\n\ninclude::gitdir/config[]\n",
                      "partials/ok.adoc": "Included from inside about herons.\n",
                      # a folder that is a git checkout: hidden files inside it are no more read than outside
                      ".env": "OPENAI_API_KEY=sk-HIDDEN-DOTENV-KEY\n",
                      ".git/config": "[remote]\n  url = https://alice:ghp_TOKEN@example.org/docs.git\n"})
    (docs / "partials" / "link.adoc").symlink_to(tmp_path / "outside" / "secret.adoc")
    (docs / "notes.txt").symlink_to(".env")
    (docs / "gitdir").symlink_to(".git")
    scan, lines = _scan_docs(tmp_path)
    pages = {p.path: p for p in scan.pages}
    assert set(pages) == {"page.adoc", "partials/ok.adoc"}  # partials/link.adoc is no page either
    body = pages["page.adoc"].body or ""
    assert "herons" in body and "OSPREY" not in body and "HIDDEN" not in body and "ghp_" not in body
    outside = (tmp_path / "outside" / "secret.adoc").resolve()
    assert pages["page.adoc"].metadata["unresolved_includes"] == [
        "../outside/secret.adoc", f"partials/link.adoc (its real path {outside} is outside the folder "
        f"{docs.resolve()})", ".env (a hidden file or folder: never read)",
        "partials/../.git/config (a hidden file or folder: never read)",
        "notes.txt (a link into a hidden file or folder: never read)",
        "gitdir/config (a link into a hidden file or folder: never read)"]
    assert "[DISCOVER] guide: page.adoc: include::notes.txt[] cannot be resolved: a link into a hidden file or " \
           "folder: never read; skipped" in lines, lines


def test_links_that_lead_nowhere_are_logged_and_counted_whatever_their_name(tmp_path: Path) -> None:
    """docswalk2 F11: a link named like a folder that points to nothing (``shared`` -> a volume that
    is not mounted) and two such links that point to each other were skipped without a line or a
    count: only a link whose own name was a page's (``dead.md``) was logged. A linked folder of
    documents that disappeared left no trace; now each is logged and counted, as the git source does."""
    docs = tmp_path / "docs"
    write_docs(docs, {"good.md": "# Good\n\nGood text about widgets.\n"})
    (docs / "shared").symlink_to(tmp_path / "not-mounted" / "shared-docs")
    (docs / "l1").symlink_to("l2")
    (docs / "l2").symlink_to("l1")
    (docs / "dead.md").symlink_to("nowhere.md")
    scan, lines = _scan_docs(tmp_path)
    assert [p.path for p in scan.pages] == ["good.md"]
    expected = ["dead.md -> nowhere.md: it points to nothing", "l1 -> l2: a loop of links",
                "l2 -> l1: a loop of links",
                f"shared -> {tmp_path / 'not-mounted' / 'shared-docs'}: it points to nothing"]
    assert scan.notes["skipped_links"] == 4 and scan.notes["skipped_link_list"] == expected
    assert [ln for ln in lines if "skipped the symlink" in ln] == [f"[DISCOVER] guide: skipped the symlink {e}"
                                                                   for e in expected]


def test_a_path_that_is_a_loop_of_links_is_named_with_its_fix(tmp_path: Path) -> None:
    """gitedge F8: ``path: docs`` with ``docs -> docs`` failed with a bare ``RuntimeError: Symlink loop``."""
    (tmp_path / "docs").symlink_to("docs")
    cfg = parse_config({"sources": [{"name": "guide", "kind": "local", "path": "docs"}]}, root=tmp_path).sources[0]
    with pytest.raises(Exception) as err:
        LocalSource(cfg, workdir=tmp_path / "w").scan({}, log=lambda _: None)
    assert type(err.value).__name__ == "SourceError", err.value
    assert str(err.value) == (f"sources.guide.path: {str(tmp_path / 'docs')!r} is a loop of symbolic links (it never "
                              "reaches a folder); point it at the folder itself or fix the link, or fix the path in "
                              "the config (nothing was removed from the index)")


def test_text_that_is_not_utf8_is_decoded(tmp_path: Path) -> None:
    write_docs(tmp_path / "docs", {
        "latin1.md": "# Café notes\n\nCrème brûlée is served on Fridays.\n".encode("latin-1"),
        "broken.md": b"# Broken\n\nMostly UTF-8 \xc3\xa9 with one bad byte \xff here.\n",
        "index.md": "# Home\n\nHello.\n"})
    cfg = write_config(tmp_path)
    stats = refresh.refresh(Context(load_config(cfg)), "guide")
    assert stats.pages_new == 3 and stats.pages_failed == 0 and stats.pages_skipped == 0
    pages = _chunks(cfg)
    assert "Crème brûlée is served on Fridays." in pages[BASE + "latin1.md"][0]["text"]
    assert pages[BASE + "latin1.md"][0]["title"] == "Café notes"
    assert "UTF-8 é with one bad byte \ufffd here" in pages[BASE + "broken.md"][0]["text"]


def test_a_heading_id_equal_to_a_slug_gives_each_section_its_own_url(tmp_path: Path) -> None:
    """An explicit ``{#install}`` after an ``## Install`` heading gave both sections the URL
    ``…#install``: a citation of one linked to the other. The explicit id keeps its value."""
    write_docs(tmp_path / "docs", {"setup.md": "# Setup guide\n\n## Install\n\nThe quokka package installs in a minute.\n\n"
                                               "## Setup {#install}\n\nThe numbat settings file is read at start.\n"})
    cfg = write_config(tmp_path)
    refresh.refresh(Context(load_config(cfg)), "guide")
    urls = {r["headings"][-1]: r["url"] for r in _chunks(cfg)[BASE + "setup.md"]}
    assert urls == {"Install": BASE + "setup.md#install-1", "Setup": BASE + "setup.md#install"}


def test_a_file_declaring_a_charset_that_is_no_text_encoding_is_read_as_utf8(tmp_path: Path) -> None:
    """One HTML file declaring ``<meta charset="hex">`` (or base64, rot13, zlib: Python codecs that are no
    text encodings; idna, undefined: codecs that fail even under "replace") failed the whole scan with a
    LookupError, so no file of the folder was indexed. The label is ignored, as a browser ignores one it
    does not know, and the file is read as any undeclared one."""
    labels = ("hex", "base64", "rot13", "zlib", "idna", "undefined")
    write_docs(tmp_path / "docs", {
        "index.md": "# Home\n\nThe wombat tunnels are open.\n",
        **{f"{c}.html": f'<html><head><meta charset="{c}"><title>{c}</title></head><body><h1>Odd {c}</h1>'
                        f"<p>Café notes about the {c} label, read as UTF-8.</p></body></html>".encode()
           for c in labels}})
    cfg = write_config(tmp_path)
    stats = refresh.refresh(Context(load_config(cfg)), "guide")
    assert stats.pages_new == 1 + len(labels) and stats.pages_failed == 0 and stats.pages_skipped == 0
    pages = _chunks(cfg)
    for c in labels:
        assert f"Café notes about the {c} label, read as UTF-8." in pages[f"{BASE}{c}.html"][0]["text"]


def test_file_names_with_url_characters_and_newlines_are_pages(tmp_path: Path) -> None:
    """A file is named as its system allows: `#`, `?` and spaces are part of the name (not a URL's
    fragment and query, which once made `C# and F#?.md` no page at all), the page URL a user clicks
    encodes them, and a newline in a name is shown escaped in the progress log, never as a line break."""
    docs = tmp_path / "docs"
    write_docs(docs, GUIDE)
    (docs / "C# and F#?.md").write_text("# Sharp languages\n\nThe gorbleflax compiler builds both languages.\n")
    (docs / "new\nline.md").write_text("# Odd name\n\nThe wimbleshank page has a newline in its file name.\n")
    cfg = write_config(tmp_path)
    with DagsterInstance.ephemeral() as instance:
        out = materialize_source(cfg, "guide", instance)
    pages = _chunks(cfg)
    assert BASE + "C%23%20and%20F%23%3F.md" in pages and BASE + "new%0Aline.md" in pages, sorted(pages)
    hit = search("gorbleflax compiler", config=cfg, top_k=1)[0]
    assert hit.page_url == BASE + "C%23%20and%20F%23%3F.md" and hit.url.startswith(hit.page_url)
    log = out["_log"]
    assert "[PARSE] new\\nline.md: new" in log and "[PARSE] new\nline.md" not in log


def test_a_bidi_control_in_a_file_name_is_shown_escaped_in_the_progress_log(tmp_path: Path) -> None:
    """hostiledocs F4: a right-to-left override in a file name (``report<RLO>gnp.exe.md``, shown as
    "report" + "md.exe.gnp" reversed) reached the terminal raw in the [PARSE] and [CHUNK] lines, which then
    drew the rest of the line reversed, while a newline or an ESC in a name was shown escaped. Every bidi
    control (overrides, embeddings, isolates, the marks) is shown escaped now; the page is indexed as ever."""
    docs = tmp_path / "docs"
    write_docs(docs, {"report\u202egnp.exe.md": "# Report\n\nThe report lists every cup of tea.\n",
                      "marks\u200f\u2067x\u2069\u061c.md": "# Marks\n\nThe marks page names the teapot.\n"})
    cfg = write_config(tmp_path)
    with DagsterInstance.ephemeral() as instance:
        out = materialize_source(cfg, "guide", instance)
    log = out["_log"]
    assert "[PARSE] report\\u202egnp.exe.md: new" in log and "[CHUNK] report\\u202egnp.exe.md: 1 chunks" in log, log
    assert "[PARSE] marks\\u200f\\u2067x\\u2069\\u061c.md: new" in log, log
    assert not any(ch in log for ch in "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    assert BASE + "report%E2%80%AEgnp.exe.md" in _chunks(cfg)


def test_folders_linked_to_each_other_and_names_that_are_not_utf8(tmp_path: Path) -> None:
    """Four folders that each link to the other three once made the listing walk every ordering of
    them (pages without end); now a folder is walked through at most one link, so each page is
    indexed at most twice (at its own path and under one link). Two files linked to each other are
    a loop of links, not "points to nothing". A file or folder whose name is not UTF-8 (the bytes a
    latin-1 system writes) once ended the whole source with UnicodeEncodeError: now it is skipped,
    logged and listed, and everything else is indexed."""
    docs = tmp_path / "docs"
    write_docs(docs, GUIDE)
    for n in "abcd":
        write_docs(docs / n, {"page.md": f"# Folder {n}\n\nThe folder {n} page.\n"})
        for m in "abcd":
            if m != n:
                (docs / n / f"to_{m}").symlink_to(f"../{m}")
    (docs / "loop1.md").symlink_to("loop2.md")
    (docs / "loop2.md").symlink_to("loop1.md")
    (docs / "x").symlink_to("y")  # a loop without a document's name: is_dir() itself raised ELOOP,
    (docs / "y").symlink_to("x")  # which failed the whole scan
    raw = os.fsencode(docs)
    os.mkdir(raw + b"/d\xe9j\xe0")
    for name in (b"/d\xe9j\xe0/vu.md", b"/caf\xe9.md"):
        with open(raw + name, "w") as f:
            f.write("# Latin-1 name\n\nThe zorbulon page has a latin-1 file name.\n")
    cfg = write_config(tmp_path)
    with DagsterInstance.ephemeral() as instance:
        out = materialize_source(cfg, "guide", instance)
    linked = {"a/page.md", "a/to_b/page.md", "a/to_b/to_c/page.md", "a/to_b/to_c/to_d/page.md", "b/page.md",
              "b/to_a/page.md", "c/page.md", "d/page.md"}
    assert set(_chunks(cfg)) == {BASE + p for p in (*GUIDE, *linked)}
    mat = out["_result"].asset_materializations_for_node("scraped_pages")[0].metadata
    assert mat["scan_names_not_utf8"].value == ["caf\\xe9.md", "d\\xe9j\\xe0"]
    listed = mat["scan_skipped_link_list"].value
    assert "a/to_c -> ../c: that folder is already listed through the link a/to_b/to_c" in listed
    assert "skipped the symlink loop1.md -> loop2.md: a loop of links" in out["_log"]
    assert "[DISCOVER] guide: skipped caf\\xe9.md: its name is not valid UTF-8; rename it to UTF-8" in out["_log"]
    assert search("zorbulon latin-1", config=cfg, top_k=1)[0].page_url != BASE + "caf%E9.md"


def test_an_upgrade_of_the_parser_reparses_by_itself(tmp_path: Path) -> None:
    """The recorded settings hold a fingerprint of the parsing and chunking code: an index written by
    another docs-rag (another fingerprint, or none: an older one) is re-parsed at the next refresh,
    from what is stored, as after a change of settings; before, its pages kept the old parser's
    chunks until someone ran ``--mode reparse``."""
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    refresh.refresh(Context(load_config(cfg)), "guide")
    before = _chunks(cfg)
    settings = tmp_path / "data" / "sources" / "guide" / refresh.SETTINGS_FILE
    recorded = json.loads(settings.read_text())
    assert recorded[refresh.PARSER_KEY] == refresh.parser_fingerprint()
    for older in ({**recorded, refresh.PARSER_KEY: "0123456789abcdef"},  # another docs-rag
                  {k: v for k, v in recorded.items() if k != refresh.PARSER_KEY}):  # one from before the key
        settings.write_text(json.dumps(older))
        lines: list[str] = []
        st = refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
        assert any("the parsing or chunking code changed since the last ingest (docs-rag was upgraded)" in ln
                   and "(mode reparse)" in ln for ln in lines), lines
        assert st.pages_changed == len(GUIDE) and st.chunks_embedded == 0
        assert {u: [r["chunk_id"] for r in rs] for u, rs in _chunks(cfg).items()} == \
            {u: [r["chunk_id"] for r in rs] for u, rs in before.items()}
        assert json.loads(settings.read_text()) == recorded
    assert refresh.refresh(Context(load_config(cfg)), "guide").pages_unchanged == len(GUIDE)

    # the fingerprint follows the code: a copy of the package with one parser file edited has another
    copy = tmp_path / "pkg"
    shutil.copytree(Path(refresh.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "cli.py").write_text("# not parser code\n")
    assert refresh.parser_fingerprint(copy) == recorded[refresh.PARSER_KEY]
    # table_row.py writes the parsers' table rows (chatpage F3): parser code too
    (copy / "table_row.py").write_text((copy / "table_row.py").read_text() + "\n# edited\n")
    assert refresh.parser_fingerprint(copy) != recorded[refresh.PARSER_KEY]
    shutil.copy2(Path(refresh.__file__).parent / "table_row.py", copy / "table_row.py")
    assert refresh.parser_fingerprint(copy) == recorded[refresh.PARSER_KEY]
    (copy / "parsing" / "markdown.py").write_text((copy / "parsing" / "markdown.py").read_text() + "\n# edited\n")
    assert refresh.parser_fingerprint(copy) != recorded[refresh.PARSER_KEY]


def _texts(cfg: Path) -> dict[str, list[str]]:
    """page_url → its chunk texts, in order."""
    return {u: [r["text"] for r in sorted(rs, key=lambda r: r["chunk_index"])] for u, rs in _chunks(cfg).items()}


def test_a_write_of_chunks_made_with_other_settings_records_them_as_such(tmp_path: Path) -> None:
    """A run that scanned, chunked and embedded and failed at its write, finished after a config edit
    (a re-execution from failure, or lancedb_chunks materialized alone, reads the config as it is then):
    the write stored chunks of the old chunking settings and recorded the new ones, so the next refresh
    re-parsed nothing and the edit never applied (upgrade probe F2). Now the pages and chunks carry the
    settings they were made with, the write records that they differ, and the next refresh re-parses:
    the index equals a clean ingest under the new settings."""
    write_docs(tmp_path / "docs", GUIDE)
    small, large = "chunking: {target_tokens: 40, overlap_tokens: 0}\n", "chunking: {target_tokens: 400, overlap_tokens: 0}\n"
    cfg = write_config(tmp_path, extra=small)
    refresh.refresh(Context(load_config(cfg)), "guide")
    (tmp_path / "docs" / "index.md").write_text((tmp_path / "docs" / "index.md").read_text() + "\nA new line.\n")
    old = Context(load_config(cfg))  # the run whose write failed: its scan, chunks and vectors
    pages = refresh.scan_pages(old, "guide")
    rows = refresh.embed_rows(old, refresh.build_chunks(old, "guide", pages))
    cfg = write_config(tmp_path, extra=large)  # the edit, then the write step run again
    refresh.write_index(Context(load_config(cfg)), "guide", rows, pages)
    lines: list[str] = []
    refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    assert any("the last write stored pages parsed or chunked with other settings" in ln and "(mode reparse)" in ln
               for ln in lines), lines
    clean = tmp_path / "clean"
    write_docs(clean / "docs", GUIDE)
    shutil.copy2(tmp_path / "docs" / "index.md", clean / "docs" / "index.md")
    refresh.refresh(Context(load_config(write_config(clean, extra=large))), "guide")
    assert _texts(cfg) == _texts(clean / "docs_rag.yaml")
    assert refresh.refresh(Context(load_config(cfg)), "guide").pages_unchanged == len(GUIDE)  # once


def test_a_run_of_an_older_docs_rag_finished_after_the_upgrade_is_reparsed(tmp_path: Path) -> None:
    """A run of the older release that failed at its write, finished after the upgrade (re-execute
    from failure): the new code wrote the old parser's chunks and recorded its own parser's fingerprint,
    so the upgrade's re-parse never came and the old parser's text stayed for good (upgrade probe F1).
    The older release's pages and chunks carry no record of what made them: the write says so and the
    next refresh re-parses. Here the older parser's output is this one's with a word changed."""
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    refresh.refresh(Context(load_config(cfg)), "guide")
    (tmp_path / "docs" / "index.md").write_text((tmp_path / "docs" / "index.md").read_text() + "\nA new line.\n")
    ctx = Context(load_config(cfg))
    pages = refresh.scan_pages(ctx, "guide")
    for p in pages:  # as the older release's Parquet files are read back: another text, no stamp
        p.pop("made_with", None)
        if p["sections"]:
            p["sections"] = p["sections"].replace("toolkit", "OLDPARSER")
    rows = refresh.build_chunks(ctx, "guide", pages)
    assert any("OLDPARSER" in r["text"] for r in rows)
    for r in rows:
        r.pop("made_with", None)
    refresh.write_index(ctx, "guide", refresh.embed_rows(ctx, rows), pages)
    lines: list[str] = []
    refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    assert any("(mode reparse)" in ln for ln in lines), lines
    assert not any("OLDPARSER" in t for ts in _texts(cfg).values() for t in ts)


def test_a_change_of_the_openai_models_window_chunks_every_page_again(tmp_path: Path) -> None:
    """With the openai provider and chunking.target_tokens unset, embedding.max_tokens (null: 512) is
    the chunks' budget. It was not among the recorded settings (nor does it name the table), so after it
    changed the pages whose bytes had not kept chunks cut for the old window for good, beside new pages
    cut for the new one (upgrade probe F3). Now it is recorded, and its change re-parses every page: the
    index equals a clean ingest."""
    from docs_rag_pipeline.embedding import FakeEmbedder

    from .fake_openai import EmbeddingsServer

    write_docs(tmp_path / "docs", GUIDE)
    with EmbeddingsServer(FakeEmbedder(dimensions=64).embed) as srv:
        def config(root: Path, window: int) -> Path:
            return write_config(root, extra=f"""
                embedding: {{provider: openai, model: fake-64, base_url: '{srv.url}', dimensions: 64,
                             max_tokens: {window}, max_retries: 0}}
                chunking: {{overlap_tokens: 0}}
            """)

        refresh.refresh(Context(load_config(config(tmp_path, 40))), "guide")
        narrow = _texts(tmp_path / "docs_rag.yaml")
        cfg = config(tmp_path, 1000)
        lines: list[str] = []
        refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
        assert any("chunking changed since the last ingest" in ln and "(mode reparse)" in ln for ln in lines), lines
        clean = tmp_path / "clean"
        write_docs(clean / "docs", GUIDE)
        refresh.refresh(Context(load_config(config(clean, 1000))), "guide")
        assert _texts(cfg) == _texts(clean / "docs_rag.yaml") != narrow


def test_an_index_without_recorded_settings_is_reparsed_once_by_itself(tmp_path: Path) -> None:
    """Storage written by a docs-rag from before settings.json (or whose sources/ folder was lost) holds
    rows whose parser is unknown: the first refresh after the upgrade re-parsed nothing, said nothing,
    and recorded the current parser's fingerprint, so the old chunks stayed for good (upgrade probe F1).
    Now it re-parses once, says why, and the index equals a fresh ingest; a web source with no cached
    copy to re-parse from (a machine new to shared storage) is refreshed as usual."""
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    refresh.refresh(Context(load_config(cfg)), "guide")
    settings = tmp_path / "data" / "sources" / "guide" / refresh.SETTINGS_FILE
    recorded = json.loads(settings.read_text())
    # an older docs-rag's chunks: another chunker (another budget) and no record of it
    old = write_config(tmp_path, extra="chunking: {target_tokens: 60}")
    refresh.refresh(Context(load_config(old)), "guide")
    shutil.rmtree(settings.parent)
    cfg = write_config(tmp_path)
    lines: list[str] = []
    notes: dict = {}
    pages = refresh.scan_pages(Context(load_config(cfg)), "guide", log=lines.append, notes=notes)
    assert any("no record of the settings and parsing code that made them" in ln and "(mode reparse)" in ln
               for ln in lines), lines
    assert notes["settings_changed"] == ["unrecorded"] and {p["status"] for p in pages} == {"changed"}
    st = refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    assert st.pages_changed == len(GUIDE) and json.loads(settings.read_text()) == recorded

    fresh = tmp_path / "fresh"
    write_docs(fresh / "docs", GUIDE)
    fcfg = write_config(fresh)
    refresh.refresh(Context(load_config(fcfg)), "guide")
    ids = lambda c: sorted(r["chunk_id"] for rs in _chunks(c).values() for r in rs)  # noqa: E731
    assert ids(cfg) == ids(fcfg)
    assert refresh.refresh(Context(load_config(cfg)), "guide").pages_unchanged == len(GUIDE)

    web = parse_config({"storage": str(tmp_path / "web-data"), "sources": [
        {"name": "site", "kind": "web", "seed_urls": ["http://127.0.0.1:9/index.html"]}]}, root=tmp_path)
    assert refresh._mode_for_unrecorded_settings(Context(web), "site", log=lines.append, notes=None) == "refresh"


def test_reparse_rechunks_unchanged_pages_and_keeps_what_did_not_change(tmp_path: Path) -> None:
    """A page whose bytes did not change is not parsed again by a refresh, so chunks made by an older
    parser or chunker stayed; ``mode="reparse"`` re-parses and re-chunks every page, and a chunk whose
    text is the same keeps its id and its embedding. A change of the ``chunking`` settings (here the
    token budget) now makes the next refresh a reparse by itself (it kept the stale chunks before)."""
    long = "\n\n".join(f"Paragraph {i} describes how the sensor number {i} reports its readings to the "
                        "dashboard, with enough words to fill a chunk." for i in range(12))
    write_docs(tmp_path / "docs", {"index.md": "# Home\n\nHello.\n", "sensors.md": f"# Sensors\n\n{long}\n"})
    cfg = write_config(tmp_path, extra="chunking: {target_tokens: 200}")
    refresh.refresh(Context(load_config(cfg)), "guide")
    before = _chunks(cfg)
    cfg = write_config(tmp_path, extra="chunking: {target_tokens: 60}")
    lines: list[str] = []
    st = refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    assert any("chunking changed since the last ingest" in ln and "(mode reparse)" in ln for ln in lines), lines
    after = _chunks(cfg)
    assert st.pages_changed == 2 and st.pages_new == 0
    assert len(after[BASE + "sensors.md"]) > len(before[BASE + "sensors.md"])
    assert all(r["token_count"] <= 60 for r in after[BASE + "sensors.md"])
    assert [r["chunk_id"] for r in after[BASE + "index.md"]] == [r["chunk_id"] for r in before[BASE + "index.md"]]
    assert st.chunks_embedded == len(after[BASE + "sensors.md"])  # only the new texts were embedded
    again = refresh.refresh(Context(load_config(cfg)), "guide")  # once: the settings are recorded
    assert again.pages_unchanged == 2 and again.chunks_embedded == 0
    st = refresh.refresh(Context(load_config(cfg)), "guide", mode="reparse")  # asked for: the same chunks
    assert st.pages_changed == 2 and st.chunks_embedded == 0
    assert _without_time(_chunks(cfg)) == _without_time(after)  # rewritten: the same rows, a new updated_at
    with pytest.raises(ValueError, match="mode: 'again' is not one of refresh, reparse, force"):
        refresh.refresh(Context(load_config(cfg)), "guide", mode="again")


def test_a_reparse_writes_only_the_rows_that_differ_and_logs_no_version_when_none_does(tmp_path: Path) -> None:
    """refresh.md: "Rows identical to what is stored ... are left out of the write." A reparse of an
    unchanged source (asked for, or by itself after an upgrade of the parser or a restore) wrote every
    row of every page again and logged a new restorable version that changed nothing (docswalk F11).
    Now it writes nothing and commits nothing; a reparse that re-chunks one page writes that page's
    new rows and deletes only its rows that vanished; a row whose full-text column an older docs-rag
    wrote differently is written again."""
    long = "\n\n".join(f"Paragraph {i} describes how the sensor number {i} reports its readings to the "
                        "dashboard, with enough words to fill a chunk." for i in range(12))
    write_docs(tmp_path / "docs", {**GUIDE, "sensors.md": f"# Sensors\n\n{long}\n"})
    cfg = write_config(tmp_path, extra="chunking: {target_tokens: 200}")
    refresh.refresh(Context(load_config(cfg)), "guide")
    ctx = Context(load_config(cfg))
    before, version, logged = _chunks(cfg), ctx.chunks.version(), len(refresh.versions(ctx))

    st = refresh.refresh(Context(load_config(cfg)), "guide", mode="reparse")
    ctx = Context(load_config(cfg))
    assert st.pages_changed == len(GUIDE) + 1 and st.chunks_embedded == 0
    assert (st.rows_written, st.rows_deleted) == (0, 0)
    assert ctx.chunks.version() == version and len(refresh.versions(ctx)) == logged
    assert _chunks(cfg) == before  # updated_at included: not one row was rewritten

    # an older docs-rag wrote another full-text column for one row: only that row is written again
    first = before[BASE + "install.md"][0]
    ctx.chunks.open().update(where=f"chunk_id = '{first['chunk_id']}'", values={"search_text": "stale words"})
    st = refresh.refresh(Context(load_config(cfg)), "guide", mode="reparse")
    assert (st.rows_written, st.rows_deleted) == (1, 0)
    tbl = Context(load_config(cfg)).chunks.open()
    [row] = tbl.search().where(f"chunk_id = '{first['chunk_id']}'").select(["search_text"]).to_list()
    assert "stale" not in row["search_text"] and first["text"].split()[0] in row["search_text"]

    # a smaller budget re-chunks the long page only: its new rows are written, its old ones deleted,
    # the other pages' rows stay as they were
    cfg = write_config(tmp_path, extra="chunking: {target_tokens: 60}")
    middle = _chunks(cfg)
    st = refresh.refresh(Context(load_config(cfg)), "guide")
    after = _chunks(cfg)
    old_ids = {r["chunk_id"] for r in before[BASE + "sensors.md"]}
    new_ids = {r["chunk_id"] for r in after[BASE + "sensors.md"]}
    assert st.rows_written == len(new_ids - old_ids) and st.rows_deleted == len(old_ids - new_ids) > 0
    assert {u: rs for u, rs in after.items() if u != BASE + "sensors.md"} == \
        {u: rs for u, rs in middle.items() if u != BASE + "sensors.md"}


# --------------------------------------------------------------------------------------------
# An unreadable file. Tests run as root, and root reads a chmod-000 file (the capabilities
# CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH let it bypass permissions). So the ingest runs as the real
# `docs-rag ingest --json` (the CLI, Dagster, LanceDB) in a subprocess started by util-linux
# `setpriv` with those two capabilities dropped: still root, but chmod 000 takes effect.
# --------------------------------------------------------------------------------------------


def _ingest_without_dac_override(work: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DOCS_RAG_CONFIG": str(work / "docs_rag.yaml"),
           "DAGSTER_HOME": str(work / "dagster_home"), "PYTHONPATH": str(REPO)}
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without util-linux `setpriv`: no way to make a file unreadable")
        prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
    return subprocess.run([*prefix, sys.executable, "-m", "docs_rag_pipeline", "ingest", "--json"],
                          capture_output=True, text=True, env=env, cwd=work, timeout=600)


def test_an_unreadable_page_is_counted_and_keeps_its_chunks(tmp_path: Path) -> None:
    work = tmp_path
    try:
        write_docs(work / "docs", GUIDE)
        cfg = write_config(work)
        first = _ingest_without_dac_override(work)
        assert first.returncode == 0, first.stderr
        assert json.loads(first.stdout)["guide"]["pages_new"] == len(GUIDE)
        before = _chunks(cfg)

        (work / "docs/forms.md").chmod(0o000)  # the page
        (work / "docs/forms").chmod(0o000)  # a folder: forms/binding.md cannot even be listed
        install = work / "docs/install.md"
        install.write_text(install.read_text() + "\nKingfishers nest in the riverbank behind the depot.\n")
        (work / "docs/deploy/cloud.md").unlink()  # not removed: the scan could not see every folder
        second = _ingest_without_dac_override(work)
        assert second.returncode == 0, second.stderr
        summary = json.loads(second.stdout)["guide"]
        assert summary["pages_failed"] == 1 and summary["pages_changed"] == 1
        assert summary["pages_deleted"] == 0
        assert "stopped_early" not in json.loads(first.stdout)["guide"]
        # said where a script reads it, and as a failed WARN check (the exit status stays 0)
        assert summary["stopped_early"] == "1 folder(s) could not be listed, first forms: Permission denied"
        assert "[guide] check scan_completed failed: the scan stopped early: 1 folder(s) could not be listed" \
            in second.stderr
        assert "[DISCOVER] guide: forms.md cannot be read: Permission denied; its indexed chunks are kept" \
            in second.stderr
        assert "[DISCOVER] guide: cannot list forms (Permission denied); nothing is removed" in second.stderr

        after = _chunks(cfg)
        for page in ("forms.md", "forms/binding.md", "deploy/cloud.md"):  # kept as they were
            assert after[BASE + page] == before[BASE + page], page
        assert "Kingfishers nest" in " ".join(r["text"] for r in after[BASE + "install.md"])
        assert search("kingfishers nest in the riverbank", config=cfg)[0].page_url == BASE + "install.md"

        with DagsterInstance.from_config(str(work / "dagster_home")) as instance:
            scraped = instance.get_latest_materialization_event(AssetKey("scraped_pages")).asset_materialization
            indexed = instance.get_latest_materialization_event(AssetKey("lancedb_chunks")).asset_materialization
        assert scraped.metadata["pages_failed"].value == 1 and indexed.metadata["pages_failed"].value == 1
        assert scraped.metadata["scan_unreadable_files"].value == ["forms.md"]
        assert scraped.metadata["scan_unlisted_folders"].value == ["forms: Permission denied"]

        (work / "docs/forms.md").chmod(0o644)  # fixed: the next refresh reads it again
        (work / "docs/forms").chmod(0o755)
        third = _ingest_without_dac_override(work)
        summary = json.loads(third.stdout)["guide"]
        assert summary["pages_failed"] == 0 and summary["pages_deleted"] == 1  # now cloud.md goes
        assert "stopped_early" not in summary and "scan_completed" not in third.stderr
    finally:  # let pytest clean up
        for p in (work / "docs/forms.md", work / "docs/forms"):
            if p.exists():
                p.chmod(0o755)


def test_patterns_that_leave_out_every_document_are_named(tmp_path: Path) -> None:
    """``include: ["docs/*.md"]`` for a source whose ``path`` is ``docs`` (patterns are relative
    to the folder) indexed nothing and said only "0 files": now the scan warns that the patterns
    leave out every document, names them and counts the documents left out."""
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path, sources="""
      - name: guide
        kind: local
        path: docs
        include: ["docs/*.md"]
    """)
    lines: list[str] = []
    notes: dict = {}
    assert refresh.scan_pages(Context(load_config(cfg)), "guide", log=lines.append, notes=notes) == []
    assert notes["unmatched_documents"] == len(GUIDE)
    assert any(f"warning: include ['docs/*.md'] and exclude [] leave out all {len(GUIDE)} documents" in ln
               for ln in lines), lines


def test_a_source_that_indexes_nothing_fails_the_ingest(tmp_path: Path) -> None:
    """An empty folder (or globs that match nothing) ingested as "done … 0 chunks indexed" with exit 0,
    while the docs said the blocking check chunks_are_well_formed needs at least one chunk: now the
    check fails, the ingest exits 1 and says why; a document added later makes the next ingest pass."""
    (tmp_path / "docs").mkdir()
    cfg = write_config(tmp_path)
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "dh")}
    out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "ingest"], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=540)
    assert out.returncode == 1, out.stderr
    assert "[guide] check chunks_are_well_formed failed: no chunks: the source has no indexed document; check its " \
           "[DISCOVER] and [PARSE] lines {'chunks': 0," in out.stderr, out.stderr
    write_docs(tmp_path / "docs", GUIDE)
    out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "ingest"], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=540)
    assert out.returncode == 0 and "check chunks_are_well_formed failed" not in out.stderr, out.stderr


def test_a_page_over_max_chunks_per_page_is_cut_to_its_first_chunks_with_a_warning(tmp_path: Path) -> None:
    """A page within max_bytes can chunk into tens of thousands (a crawled page of 60,000 headings),
    each an embedding: it is cut to its first chunking.max_chunks_per_page, and the log says so."""
    many = "# Many\n\n" + "\n\n".join(f"## Heading {i}\n\nThe text of part {i} of the page." for i in range(12))
    write_docs(tmp_path / "docs", {"many.md": many, "small.md": "# Small\n\nA small page about otters.\n"})
    cfg = write_config(tmp_path, extra="chunking:\n  max_chunks_per_page: 5\n")
    with DagsterInstance.ephemeral() as instance:
        out = materialize_source(cfg, "guide", instance)
    assert ("[CHUNK] warning: many.md: 12 chunks, over chunking.max_chunks_per_page (5): only its first 5 are "
            "indexed; raise chunking.max_chunks_per_page to index all of it") in out["_log"]
    rows = Context(load_config(cfg)).chunks.rows("source = 'guide'")
    by_page = {}
    for r in rows:
        by_page.setdefault("many" if "many" in r["page_url"] else "small", []).append(r["chunk_index"])
    assert sorted(by_page["many"]) == [0, 1, 2, 3, 4] and len(by_page["small"]) == 1, by_page


def test_max_chunks_per_page_must_be_at_least_one(tmp_path: Path) -> None:
    from docs_rag_pipeline.config import ConfigError

    with pytest.raises(ConfigError, match="max_chunks_per_page"):
        load_config(write_config(tmp_path, extra="chunking:\n  max_chunks_per_page: 0\n"))


def test_redirect_stubs_of_a_built_site_are_not_pages(tmp_path: Path) -> None:
    """A folder of built HTML holds the stubs its generator writes for moved pages (mkdocs-redirects,
    Jekyll's redirect_from, sphinx-reredirects: a meta refresh and "Redirecting…"). They were indexed as
    pages that said "Redirecting..."; the web source left them out only when they also said noindex. A
    stub is no page now, whatever its robots tag, and a page that became a stub (moved) loses its chunks;
    a page that only refreshes itself, or has text of its own beside a refresh, stays a page."""
    page = "<html><head><title>{t}</title>{head}</head><body><main>{body}</main></body></html>"
    write_docs(tmp_path / "docs", {
        "guide/forms.html": page.format(t="Forms", head="", body="<h1>Forms</h1><p>Forms validate input "
                                        "before it reaches the server, field by field.</p>"),
        "old-forms.html": page.format(t="Redirecting...", head='<meta http-equiv="refresh" content="0; '
                                      'url=guide/forms.html"><meta name="robots" content="noindex">',
                                      body="Redirecting..."),
        "jekyll.html": page.format(t="Redirecting", head="<meta http-equiv='refresh' content='0;URL=guide/forms.html'>",
                                   body="<h1>Redirecting…</h1><a href='guide/forms.html'>Click here if you are "
                                        "not redirected.</a>"),
        "status.html": page.format(t="Status", head='<meta http-equiv="refresh" content="30">',
                                   body="<h1>Status</h1><p>The build farm reports every queue as healthy.</p>"),
        "install.html": page.format(t="Installing", head="",
                                    body="<h1>Installing</h1><p>Install with pip, then run the setup wizard.</p>"),
    })
    cfg = write_config(tmp_path)
    lines: list[str] = []
    stats = refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    assert set(_chunks(cfg)) == {BASE + "guide/forms.html", BASE + "status.html", BASE + "install.html"}
    assert stats.pages_skipped == 2
    assert "[PARSE] old-forms.html: skipped: old-forms.html: a redirect to guide/forms.html (meta refresh), " \
           "not a page of its own" in lines, lines
    # install moved: its old file is a stub now, and its chunks go
    moved = page.format(t="Redirecting...", head='<meta http-equiv="refresh" content="0; url=setup/install.html">',
                        body="Redirecting...")
    (tmp_path / "docs" / "install.html").write_text(moved)
    lines.clear()
    stats = refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    assert stats.pages_deleted == 1 and BASE + "install.html" not in _chunks(cfg)
    assert any("install.html: install.html: a redirect to setup/install.html (meta refresh), not a page of its "
               "own: its indexed chunks are removed" in line for line in lines), lines


def test_a_file_moved_to_a_path_with_the_same_url_and_bytes_is_parsed_again(tmp_path: Path) -> None:
    """``guide.md`` moved to ``guide/index.md`` and then renamed ``guide/index.rst``, bytes unchanged,
    both ``…/guide/`` under the url_template: the status compared only the URL and the bytes, so the
    page kept the old path's ``metadata_rules`` values and the old format's parse. Each move is now
    ``changed`` and parsed again; its unchanged chunk texts keep their embeddings."""
    docs = tmp_path / "docs"
    guide = "# Setup guide\n\nInstall it with pip.\n\n## Options\n\nSet `--fast` to skip the checks.\n"
    write_docs(docs, {"index.md": GUIDE["index.md"], "guide.md": guide})
    cfg = write_config(tmp_path, sources=f"""
      - name: guide
        kind: local
        path: docs
        url_template: "{BASE}{{path}}/"
        metadata_rules: [{{key: kind, values: {{"guide/**": guide-page, "**": other}}}}]
    """)
    refresh.refresh(Context(load_config(cfg)), "guide", log=lambda _: None)
    assert {r["metadata"]["kind"] for r in _chunks(cfg)[f"{BASE}guide/"]} == {"other"}

    (docs / "guide").mkdir()
    (docs / "guide.md").rename(docs / "guide" / "index.md")
    stats = refresh.refresh(Context(load_config(cfg)), "guide", log=lambda _: None)
    assert stats.pages_changed == 1 and stats.chunks_embedded == 0, stats
    assert {r["metadata"]["kind"] for r in _chunks(cfg)[f"{BASE}guide/"]} == {"guide-page"}

    (docs / "guide" / "index.md").rename(docs / "guide" / "index.rst")
    stats = refresh.refresh(Context(load_config(cfg)), "guide", log=lambda _: None)
    assert stats.pages_changed == 1, stats
    rows = _chunks(cfg)[f"{BASE}guide/"]
    assert len(rows) == 1 and not any("#options" in r["url"] for r in rows), rows  # the reST parse
    again = refresh.refresh(Context(load_config(cfg)), "guide", log=lambda _: None)
    assert again.pages_unchanged == 2 and again.pages_changed == 0, again


def test_a_folder_of_mkdocs_markdown_is_linked_by_the_anchors_mkdocs_gives(tmp_path: Path) -> None:
    """A Markdown folder that MkDocs builds: its sections are linked by Python-Markdown's ids once the
    source says ``heading_anchors: python-markdown`` (``#install-configure``, ``#install-configure_1``,
    where GitHub's slugs were ``#install--configure-1``, no section of the built site). Switching the key
    re-parses the unchanged pages at the next refresh, so no chunk keeps the old anchors."""
    write_docs(tmp_path / "docs", {"setup.md": """
        # Setup

        ## Install & configure

        Install the walrus agent with pip before anything else.

        ## Install & configure

        Configure the walrus agent with a YAML file named walrus.yml.
    """})
    sources = """
      - name: guide
        kind: local
        path: docs
        url_template: "https://docs.example.org/{path}/"
    """
    (tmp_path / "mkdocs.yml").write_text("site_name: Walrus\ndocs_dir: docs\n")
    cfg = write_config(tmp_path, sources=sources)
    lines: list[str] = []
    refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    # the folder above the documents holds mkdocs.yml: the ingest says what to set
    assert f"[DISCOVER] guide: hint: {tmp_path / 'mkdocs.yml'} is beside the documents, so MkDocs probably " \
           "builds the site, and MkDocs links a heading by Python-Markdown's id (#install-configure_1), not " \
           "GitHub's slug (#install--configure-1); set heading_anchors: python-markdown for this source so that " \
           "its citations open their sections" in lines, lines
    urls = sorted(r["url"] for rows in _chunks(cfg).values() for r in rows)
    assert urls == ["https://docs.example.org/setup/#install--configure",
                    "https://docs.example.org/setup/#install--configure-1"], urls
    cfg = write_config(tmp_path, sources=sources + "    heading_anchors: python-markdown\n")
    lines: list[str] = []
    refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    urls = sorted(r["url"] for rows in _chunks(cfg).values() for r in rows)
    assert urls == ["https://docs.example.org/setup/#install-configure",
                    "https://docs.example.org/setup/#install-configure_1"], (urls, lines)
    assert not any("hint" in ln for ln in lines), lines
    hit = search("which file configures the walrus agent", top_k=1, config=cfg)[0]
    assert hit.url == "https://docs.example.org/setup/#install-configure_1"
    with pytest.raises(Exception, match="heading_anchors"):
        load_config(write_config(tmp_path, sources=sources + "    heading_anchors: mkdocs\n"))


def test_a_jupyter_notebook_is_a_page_of_its_markdown_code_and_text_outputs(tmp_path: Path) -> None:
    """A folder of notebooks (Jupyter Book, nbsphinx, myst-nb) is documentation: with ``**/*.ipynb`` in
    ``include``, a notebook is a page of its Markdown cells, its code cells fenced in the kernel's language and
    their text outputs; an image's data is no text, and a notebook cut off mid-JSON is a failed page named
    with its fix while the others are indexed."""
    docs = tmp_path / "docs"
    docs.mkdir()
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Quickstart\n", "\n", "Load the otter dataset with `load()`."]},
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": ["import otters\n", "print(otters.count())"],
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1312\n"]}]},
        {"cell_type": "markdown", "metadata": {}, "source": "## Plot the otters\n\nCall `plot()` to draw them."},
        {"cell_type": "code", "metadata": {}, "execution_count": 2, "source": "otters.plot()",
         "outputs": [{"output_type": "display_data", "metadata": {},
                      "data": {"image/png": "iVBORw0KGgoAAAANSUhEUg==", "text/plain": ["<Figure size 640x480>"]}}]},
    ]
    nb = {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
          "metadata": {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}}
    (docs / "quickstart.ipynb").write_text(json.dumps(nb))
    (docs / "broken.ipynb").write_text(json.dumps(nb)[:150])
    cfg = write_config(tmp_path, sources="""
      - name: guide
        kind: local
        path: docs
        include: ["**/*.ipynb"]
        base_url: https://docs.example.org/
    """)
    lines: list[str] = []
    refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    rows = _chunks(cfg)
    assert list(rows) == [BASE + "quickstart.ipynb"]
    text = "\n\n".join(r["text"] for r in sorted(rows[BASE + "quickstart.ipynb"], key=lambda r: r["chunk_index"]))
    assert text == ("Load the otter dataset with `load()`.\n\n```python\nimport otters\nprint(otters.count())\n```\n\n"
                    "```output\n1312\n```\n\nCall `plot()` to draw them.\n\n```python\notters.plot()\n```")
    assert rows[BASE + "quickstart.ipynb"][0]["title"] == "Quickstart"
    assert any("broken.ipynb: not a Jupyter notebook: invalid JSON" in ln and "raise max_bytes" in ln
               for ln in lines), lines
    hit = search("how do I draw the otters", top_k=1, config=cfg)[0]
    assert hit.url == BASE + "quickstart.ipynb#plot-the-otters"


def test_a_notebook_cut_off_at_max_bytes_is_indexed_up_to_its_last_whole_cell(tmp_path: Path) -> None:
    """A notebook's plots (base64 PNGs) make it larger than ``max_bytes`` where its text is small: cut off
    there, it is indexed up to the cut, as a page of any other format is, its cells that end before the cut
    read as a page; before, it was a failed page (invalid JSON) and none of it was searchable. A notebook
    whose JSON is broken in the middle (it still ends with ``}``) stays a failed page: it was not cut."""
    from docs_rag_pipeline.parsing import ParseError
    from docs_rag_pipeline.parsing.notebook import notebook_markdown

    docs = tmp_path / "docs"
    docs.mkdir()
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# Tide tables\n\nRead a tide table with `tides.read()`."},
        {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": "t = tides.read('brest.csv')",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["730 tides\n"]}]},
        {"cell_type": "code", "execution_count": 2, "metadata": {}, "source": "t.plot()",
         "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBOR" + "A" * 20000}}]},
        {"cell_type": "markdown", "metadata": {}, "source": "## Export\n\nWrite the table back with `tides.write()`."},
    ]
    nb = {"cells": cells, "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    body = json.dumps(nb, sort_keys=True, indent=1)  # as Jupyter writes a notebook: "cells" first
    (docs / "tides.ipynb").write_text(body)
    cfg = write_config(tmp_path, sources="""
      - name: guide
        kind: local
        path: docs
        include: ["**/*.ipynb"]
        max_bytes: 10000
        base_url: https://docs.example.org/
    """)
    lines: list[str] = []
    refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    assert any("cut off tides.ipynb" in ln for ln in lines), lines
    rows = _chunks(cfg)[BASE + "tides.ipynb"]
    assert rows[0]["title"] == "Tide tables"
    # the cells before the plot's (cut) output; the kernel's language is in the metadata, after the cut
    assert "\n\n".join(r["text"] for r in rows) == ("Read a tide table with `tides.read()`.\n\n"
                                                   "```\nt = tides.read('brest.csv')\n```\n\n```output\n730 tides\n```")
    assert search("how do I read a tide table", top_k=1, config=cfg)[0].url == BASE + "tides.ipynb"

    broken = body.replace('"## Export', '"## Export" "', 1)
    assert broken != body and broken.rstrip().endswith("}")
    with pytest.raises(ParseError, match="tides.ipynb: not a Jupyter notebook: invalid JSON"):
        notebook_markdown(broken, path="tides.ipynb")


MATERIAL_MKDOCS_YML = """site_name: Морж
theme:
  name: material
markdown_extensions:
  - admonition
  - toc:
      permalink: true
      slugify: !!python/object/apply:pymdownx.slugs.slugify
        kwds:
          case: lower
  - pymdownx.emoji:
      emoji_index: !!python/name:material.extensions.emoji.twemoji
extra:
  analytics:
    property: !ENV GOOGLE_ANALYTICS_KEY
"""


def test_an_mkdocs_site_slugging_with_pymdownx_is_linked_by_its_ids(tmp_path: Path) -> None:
    """An MkDocs site whose headings are in another script sets the ``toc`` slugify Material for MkDocs'
    docs give (``pymdownx.slugs.slugify`` with ``case: lower``): ``## Установка`` is ``#установка`` there,
    where Python-Markdown's own slugify keeps ASCII only (``#_1``), so every citation of such a page
    opened its top. ``heading_anchors: pymdownx`` links the sections by the ids that site has (checked
    against Python-Markdown's own HTML with that slugify), and an ingest with another style that finds
    such an ``mkdocs.yml`` says what to set; one whose slugify no style reproduces says so."""
    import markdown
    from pymdownx.slugs import slugify

    from docs_rag_pipeline.parsing.slugs import mkdocs_anchor_style

    page = """# Морж

## Установка

Установите агента моржа через pip до всего остального.

## Настройка & запуск

Настройте агента моржа файлом walrus.yml.

## Установка

Второй раздел установки: обновление агента.
"""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "setup.md").write_text(page)
    (tmp_path / "mkdocs.yml").write_text(MATERIAL_MKDOCS_YML)
    html = markdown.markdown(page, extensions=["toc"], extension_configs={"toc": {"slugify": slugify(case="lower")}})
    site_ids = re.findall(r'<h2 id="([^"]+)"', html)
    assert site_ids == ["установка", "настройка--запуск", "установка_1"], site_ids
    sources = """
      - name: guide
        kind: local
        path: docs
        url_template: "https://docs.example.org/{path}/"
    """
    for style in ("github", "python-markdown"):
        cfg = write_config(tmp_path, sources=sources + f"    heading_anchors: {style}\n")
        lines: list[str] = []
        refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
        assert any("hint:" in ln and "pymdownx.slugs.slugify (case: lower)" in ln
                   and "set heading_anchors: pymdownx for this source" in ln for ln in lines), lines
    cfg = write_config(tmp_path, sources=sources + "    heading_anchors: pymdownx\n")
    lines = []
    refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    assert not any("hint" in ln for ln in lines), lines
    urls = sorted(r["url"] for rows in _chunks(cfg).values() for r in rows)
    assert urls == sorted(f"https://docs.example.org/setup/#{i}" for i in site_ids), urls
    # what a site's mkdocs.yml says, read without running its tags
    assert mkdocs_anchor_style("site_name: x\nmarkdown_extensions:\n  - toc:\n      permalink: true\n") == "python-markdown"
    assert mkdocs_anchor_style(MATERIAL_MKDOCS_YML.replace("case: lower", "case: fold")) is None
    custom = "markdown_extensions:\n  - toc:\n      slugify: !!python/name:my_site.slugs.slugify\n"
    assert mkdocs_anchor_style(custom) is None
    (tmp_path / "mkdocs.yml").write_text(custom)
    lines = []
    refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    assert any("its toc extension's slugify is a function docs-rag does not reproduce" in ln for ln in lines), lines


def test_restructuredtext_includes_are_resolved_inside_the_folder(tmp_path: Path) -> None:
    """``.. include::`` in reStructuredText was dropped, with all it brought: CPython's ``venv.rst`` lost its
    "Creating virtual environments" section (rst3 f11). It is resolved as Sphinx resolves it, inside the
    source's folder: a path from the including file's folder, one starting with ``/`` from the top folder,
    nested includes, ``:start-after:``/``:end-before:``, ``:literal:`` and ``.. literalinclude::`` as a code
    block, the text at the directive's indentation; one shown in a literal block is text. A missing file, a hidden one or a loop stays
    unresolved, logged, and the page is indexed without it."""
    write_docs(tmp_path / "docs", {
        "library/venv.rst": """
            venv --- Creating virtual environments
            ======================================

            The venv module creates lightweight virtual environments.

            .. include:: /using/venv-create.inc

            .. note::

               .. include:: ../includes/wasm.rst
                  :start-after: .. begin
                  :end-before: .. end

            Example config:

            .. include:: pyvenv.cfg
               :literal:

            .. include:: missing.rst

            .. include:: ../.env

            .. include:: venv.rst

            .. literalinclude:: ../examples/make_env.py
               :start-after: # begin
               :end-before: # end

            .. literalinclude:: ../examples/make_env.py
               :pyobject: main

            To show a file in your own page, write::

               .. include:: ../includes/wasm.rst
        """,
        "using/venv-create.inc": """
            Creating virtual environments
            -----------------------------

            Run ``python -m venv /path/to/new/env`` to create a walrus environment.

            .. include:: tip.rst
        """,
        "using/tip.rst": "Activate it with ``source bin/activate``.\n",
        "includes/wasm.rst": "Header text.\n\n.. begin\n\nThis module does not work on WebAssembly platforms.\n\n.. end\n\nTrailer.\n",
        "library/pyvenv.cfg": "home = /usr/bin\ninclude-system-site-packages = false\n",
        "examples/make_env.py": "import venv\n\n# begin\nvenv.create('walrus-env', with_pip=True)\n# end\n",
        ".env": "SECRET=hunter2\n",
    })
    cfg = write_config(tmp_path, sources="""
      - name: guide
        kind: local
        path: docs
        include: ["**/*.rst"]
        exclude: ["using/**", "includes/**", "examples/**"]
        base_url: https://docs.example.org/
    """)
    lines: list[str] = []
    refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    rows = _chunks(cfg)[BASE + "library/venv.rst"]
    text = "\n\n".join(r["text"] for r in sorted(rows, key=lambda r: r["chunk_index"]))
    for shown in ("to create a walrus environment", "Activate it with `source bin/activate`",
                  "This module does not work on WebAssembly platforms", "include-system-site-packages = false"):
        assert shown in text, (shown, text)
    assert "Header text" not in text and "Trailer" not in text and "hunter2" not in text
    assert ".. include:: ../includes/wasm.rst" in text  # in a literal block: shown as written, not included
    # a literalinclude is a code block in its file's language, cut by its options; no object main: not shown
    assert "```python\nvenv.create('walrus-env', with_pip=True)\n```" in text and "import venv" not in text, text
    assert "```text\nhome = /usr/bin" in text, text
    assert any(r["url"] == BASE + "library/venv.rst#creating-virtual-environments" for r in rows), [r["url"] for r in rows]
    logged = [ln for ln in lines if ".. include::" in ln]
    assert any("library/venv.rst: .. include:: missing.rst cannot be resolved; skipped" in ln for ln in logged), logged
    assert any(".. include:: ../.env cannot be resolved: a hidden file or folder: never read" in ln for ln in logged), logged
    assert any(".. include:: venv.rst cannot be resolved" in ln for ln in logged), logged
    assert any("../examples/make_env.py cannot be resolved: :pyobject: main is not defined in the file" in ln
               for ln in logged), logged
    hit = search("how do I create a walrus environment", top_k=1, config=cfg)[0]
    assert hit.url == BASE + "library/venv.rst#creating-virtual-environments", hit.url
    # a file saved with CRLF line ends: the target is not read with its \r (it was never found)
    from docs_rag_pipeline.parsing.rst import resolve_rst_includes

    got = resolve_rst_includes("T\r\n=\r\n\r\n.. include:: a.rst\r\n", path="i.rst", read={"a.rst": "Hi\r\n"}.get)
    assert "Hi" in got.text and not got.unresolved, got


def test_a_quarto_project_is_indexed_with_its_callouts_tabs_and_code_chunks(tmp_path: Path) -> None:
    """A Quarto project's pages are ``.qmd`` files, which no parser read: a folder of them indexed nothing
    and said only ``0 files`` (with ``include: ["**/*.qmd"]`` too). They are Pandoc's Markdown, read by the
    Markdown parser and in the default ``include``: a callout (``::: {.callout-note}`` with its title
    heading, ``{.callout-warning title=…}``) reads as an admonition, not as a code block or a paragraph
    holding its ``:::`` lines; a ``.panel-tabset``'s headings are its tabs, not sections; another div
    keeps its text; a code chunk loses its ``#|`` options and one with ``echo: false`` shows nothing. An
    include pattern naming a format no parser reads is logged."""
    write_docs(tmp_path / "docs", {
        "analysis.qmd": """
            ---
            title: "Frob analysis guide"
            ---

            ## Loading data

            ::: {.callout-note}
            ## Before you start
            Install the plinkerton package first.
            :::

            ::: {.callout-warning title="Memory use"}
            Large files need 8 GB of memory.
            :::

            ::: {.panel-tabset}
            ## Python

            ```{python}
            #| label: load
            # read the file
            frob.load("data.csv")
            ```

            ## R

            Use `frob_load()` from R.
            :::

            ::: {#fig-a .column-margin}
            The margin says hello.
            :::

            ```{python}
            #| echo: false
            secret_setup()
            ```

            ## Plotting

            Call `frob.plot()`.
        """,
        "notes.txt": "Not a page.\n",
    })
    cfg = write_config(tmp_path, sources="""
      - name: guide
        kind: local
        path: docs
        base_url: https://docs.example.org/
    """)
    lines: list[str] = []
    refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    rows = sorted(_chunks(cfg)[BASE + "analysis.qmd"], key=lambda r: r["chunk_index"])
    assert rows[0]["title"] == "Frob analysis guide"
    text = "\n\n".join(r["text"] for r in rows)
    assert "[note Before you start]\n\nInstall the plinkerton package first.\n\n[/note]" in text, text
    assert "[warning Memory use]\n\nLarge files need 8 GB of memory.\n\n[/warning]" in text, text
    assert "[Tab Python]\n\n```python\n# read the file\nfrob.load(\"data.csv\")\n```\n\n[/Tab]" in text, text
    assert "[Tab R]\n\nUse `frob_load()` from R.\n\n[/Tab]" in text, text
    assert "The margin says hello." in text and "secret_setup" not in text and ":::" not in text and "#|" not in text
    assert {tuple(r["headings"]) for r in rows} == {("Loading data",), ("Plotting",)}, [r["headings"] for r in rows]
    # a pattern naming a format no parser reads says so
    cfg = write_config(tmp_path, sources="""
      - name: guide
        kind: local
        path: docs
        include: ["**/*.qmd", "**/*.txt"]
        base_url: https://docs.example.org/
    """)
    lines = []
    refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    assert any("warning: include '**/*.txt' names .txt files, which no parser reads" in ln for ln in lines), lines
    assert not any("'**/*.qmd'" in ln for ln in lines), lines


def test_markdown_includes_are_resolved_inside_the_folder(tmp_path: Path) -> None:
    """Markdown and MDX includes were dropped without a word (VitePress' ``<!--@include:`` is an HTML
    comment, an MDX partial a component that shows nothing, Quarto's include a shortcode, pymdownx's
    ``--8<--`` an extension line), so the including section was empty and a partial indexed on its own
    was cited at a URL the site never serves. They are resolved as each generator resolves them, inside
    the source's folder: VitePress' with a line range, a region and ``@/``, nested, an included page's
    frontmatter left out, and its code import ``<<<`` as a code block; an MDX partial at its component's
    indentation (``/snippets/…`` from the top folder); Quarto's ``{{< include >}}`` and Jekyll's
    ``{% include_relative %}``; pymdownx.snippets
    from the top folder, in a code block too, with a line range. A missing or hidden file or a loop
    stays unresolved, is logged, and the page is indexed without it."""
    write_docs(tmp_path / "docs", {
        "guide/config.md": """
            # Config

            ## Limits

            <!--@include: ./parts/limits.md-->

            ## Lines

            <!--@include: ./parts/long.md{3,4}-->

            ## Region

            <!--@include: @/guide/parts/region.md#intro-->

            ## Code

            <<< @/snippets/app.js

            <!--@include: ./parts/missing.md-->

            <!--@include: ../.env-->
        """,
        "guide/parts/limits.md": "---\ntitle: Limits part\n---\nThe zorblax limit is 42.\n\n<!--@include: ./nested.md-->\n",
        "guide/parts/nested.md": "Nested quill text.\n",
        "guide/parts/long.md": "line one\nline two\nline three zorb\nline four quux\nline five\n",
        "guide/parts/region.md": "# Region\n<!-- #region intro -->\nThe intro mentions glimmerwort.\n<!-- #endregion intro -->\nOutside.\n",
        "snippets/app.js": "export default {\n  zeta: 7\n}\n",
        ".env": "SECRET=hunter2\n",
        "install.mdx": """
            ---
            title: Install
            ---
            import Intro from '/snippets/intro.mdx';
            import Loop from './loop.mdx';

            ## Setup

            <Tabs>
              <TabItem label="npm">
                <Intro />
              </TabItem>
            </Tabs>

            <Loop />
        """,
        "snippets/intro.mdx": "---\ntitle: ignored\n---\nimport Inner from './inner.mdx';\n\nRun frob init for the snorkelwick.\n\n<Inner />\n",
        "snippets/inner.mdx": "Inner snippet text.\n",
        "loop.mdx": "import Loop from './loop.mdx';\n\nLoop text.\n\n<Loop />\n",
        "analysis.qmd": "---\ntitle: Analysis\n---\n\n## Data\n\n{{< include _setup.qmd >}}\n",
        "_setup.qmd": "The setup step downloads the wumpusfield dataset.\n",
        "mk.md": """
            # MkDocs

            ## Snippets

            --8<-- "snips/abbr.md"

            ```python
            --8<-- "snips/app.py:2:3"
            ```
        """,
        "snips/abbr.md": "Abbreviations say gorp.\n",
        "jekyll/page.md": "---\ntitle: J\n---\n\n## Part\n\n{% include_relative parts/part.md %}\n\n{% include note.html %}\n",
        "jekyll/parts/part.md": "The relative part says blimpwort.\n",
        "snips/app.py": "import os\ndef main():\n    run()\nmain()\n",
    })
    cfg = write_config(tmp_path, sources="""
      - name: guide
        kind: local
        path: docs
        exclude: ["**/parts/**", "snippets/**", "snips/**", "**/_*", "loop.mdx"]
        base_url: https://docs.example.org/
    """)
    lines: list[str] = []
    refresh.refresh(Context(load_config(cfg)), "guide", log=lines.append)
    chunks = _chunks(cfg)

    def text(page: str) -> str:
        return "\n\n".join(r["text"] for r in sorted(chunks[BASE + page], key=lambda r: r["chunk_index"]))

    config = text("guide/config.md")
    for shown in ("The zorblax limit is 42.", "Nested quill text.", "line three zorb line four quux",
                  "The intro mentions glimmerwort.", "```js\nexport default {\n  zeta: 7\n}\n```"):
        assert shown in config, (shown, config)
    assert "Limits part" not in config and "line two" not in config and "Outside" not in config
    assert "hunter2" not in config
    install = text("install.mdx")
    assert "[TabItem npm]\n\nRun frob init for the snorkelwick.\n\nInner snippet text.\n\n[/TabItem]" in install, install
    assert "import" not in install and "Loop text." in install
    assert "The setup step downloads the wumpusfield dataset." in text("analysis.qmd")
    mk = text("mk.md")
    assert "Abbreviations say gorp." in mk and "```python\ndef main():\n    run()\n```" in mk, mk
    assert text("jekyll/page.md") == "The relative part says blimpwort."  # {% include x.html %}: a template, not read
    logged = [ln for ln in lines if "cannot be resolved" in ln]
    assert "[DISCOVER] guide: guide/config.md: <!--@include: ./parts/missing.md--> cannot be resolved: no such file " \
           "in the source; skipped" in logged, logged
    assert any("<!--@include: ../.env--> cannot be resolved: a hidden file or folder: never read" in ln
               for ln in logged), logged
    assert any("install.mdx: import Loop from './loop.mdx' cannot be resolved: it includes itself" in ln
               for ln in logged), logged
    hit = search("what is the zorblax limit", top_k=1, config=cfg)[0]
    assert hit.url == BASE + "guide/config.md#limits", hit.url


def test_mdx_and_quarto_partials_are_not_pages(tmp_path: Path) -> None:
    """Docusaurus, Astro and Quarto never publish a file or folder named ``_…`` as a page: it is a partial,
    shown where a page includes it. Such ``.mdx`` and ``.qmd`` files were indexed as pages of their own and
    cited at URLs the site never serves; they are left out now (logged with their count) and read where a
    page includes them. A ``.md`` file so named stays a page (Hugo's ``_index.md`` is its section's page)."""
    write_docs(tmp_path / "docs", {
        "install.mdx": "import Shared from './_shared.mdx';\n\n# Install\n\n<Shared />\n",
        "_shared.mdx": "Run frob init to create the snorkelwick folder.\n",
        "_parts/more.mdx": "More partial text.\n",
        "analysis.qmd": "---\ntitle: Analysis\n---\n\n{{< include _setup.qmd >}}\n",
        "_setup.qmd": "The setup step downloads wumpusfield.\n",
        "blog/_index.md": "# Blog\n\nThe blog section.\n",
    })
    scan, lines = _scan_docs(tmp_path)
    pages = {p.path: p.body for p in scan.pages}
    assert set(pages) == {"install.mdx", "analysis.qmd", "blog/_index.md"}, set(pages)
    assert "snorkelwick" in pages["install.mdx"] and "wumpusfield" in pages["analysis.qmd"]
    assert "[DISCOVER] guide: left out 3 partial(s) (.mdx and .qmd files or folders named _…, which Docusaurus, " \
           "Astro and Quarto never publish as pages); they are read where a page includes them" in lines, lines
