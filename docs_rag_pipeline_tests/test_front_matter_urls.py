"""A Markdown page's URL and title as its front matter sets them (Docusaurus ``slug``/``id``, Jekyll
``permalink``, Hugo ``url``/``slug``, ``title``), for local folders and git repositories: real files, real
``git`` repositories, the real refresh (scan, parse, chunk, embed, write) into a real LanceDB table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docs_rag_pipeline.config import ConfigError, load_config
from docs_rag_pipeline.context import Context
from docs_rag_pipeline.parsing import parse_markdown
from docs_rag_pipeline.refresh import refresh
from docs_rag_pipeline.sources.git import GitSource

from .conftest import write_config, write_docs
from .test_git import Repo

SITE = "https://docs.example.org/docs/"


def _source(tmp_path: Path, kind: str, files: dict[str, str | bytes], *, extra: str = "",
            template: str = SITE + "{path}") -> tuple[Path, Repo | None]:
    """A local folder or a git repository holding ``files``, and the config of a source ``site`` over it."""
    repo = None
    if kind == "git":
        repo = Repo(tmp_path / "repo")
        repo.commit("first", files)
        where = f"repo: {repo.remote}"
    else:
        write_docs(tmp_path / "docs", files)
        where = "path: docs"
    cfg = write_config(tmp_path, sources=f"""
      - name: site
        kind: {kind}
        {where}
        url_template: "{template}"
        {extra}
    """)
    return cfg, repo


def _ingest(cfg: Path) -> tuple[object, list[str]]:
    lines: list[str] = []
    return refresh(Context(load_config(cfg)), "site", log=lines.append), lines


def _rows(cfg: Path) -> list[dict]:
    return Context(load_config(cfg)).chunks.rows("source = 'site'")


def _change(tmp_path: Path, kind: str, repo: Repo | None, files: dict[str, str]) -> None:
    if repo is not None:
        repo.commit("change", files)
    else:
        write_docs(tmp_path / "docs", files)


ROUTED = {
    "guides/install.md": "---\nslug: /setup\n---\n\n# Install\n\nRun pip install frobnitz.\n\n## Verify\n\nRun frob --version.\n",
    "guides/rel.mdx": "---\nslug: relative-page\n---\n\n# Rel\n\nThe plonk setting.\n",
    "guides/up.md": "---\nslug: ../top-level\n---\n\n# Up\n\nThe snark setting.\n",
    "guides/config.md": "---\nid: configuration\n---\n\n# Config\n\nThe zibble setting.\n",
    "guides/index.md": "---\nid: overview\n---\n\n# Guides\n\nAll the guides.\n",
    "about.md": "---\npermalink: /about-us/\nslug: ignored-when-a-permalink-is-set\n---\n\n# About\n\nWe make frobs.\n",
    "news.md": "+++\nurl = '/press/news/'\n+++\n\n# News\n\nNew frobs.\n",
    "plain.md": "---\ntitle: Plain\n---\n\nNo URL key here.\n",
    "notes.rst": "Notes\n=====\n\nreStructuredText keeps its path.\n",
}


@pytest.mark.parametrize("kind", ["local", "git"])
def test_front_matter_sets_the_url_the_site_publishes_the_page_at(tmp_path: Path, kind: str) -> None:
    """Docusaurus' absolute and relative ``slug`` (``..`` resolved beside the file) and ``id`` (not for a
    folder's index page), Jekyll's ``permalink`` and Hugo's (TOML) ``url``, as written from the template's
    root, give the page's URL and every section's; a page without such a key, and a format without front
    matter, keep their path's. Before, every page was cited at its file's path, where the site has none."""
    cfg, _ = _source(tmp_path, kind, ROUTED)
    _ingest(cfg)
    urls = {(r["text"].split(".")[0], r["url"]) for r in _rows(cfg)}
    assert urls == {
        ("Run pip install frobnitz", SITE + "setup"), ("Run frob --version", SITE + "setup#verify"),
        ("The plonk setting", SITE + "guides/relative-page"), ("The snark setting", SITE + "top-level"),
        ("The zibble setting", SITE + "guides/configuration"), ("All the guides", SITE + "guides"),
        ("We make frobs", SITE + "about-us/"), ("New frobs", SITE + "press/news/"),
        ("No URL key here", SITE + "plain"), ("reStructuredText keeps its path", SITE + "notes")}


def test_a_slug_takes_the_templates_ending_and_a_permalink_is_whole(tmp_path: Path) -> None:
    """With ``{path}/`` (a site with trailing slashes) a slug's URL ends in ``/`` like every page's, while a
    permalink is the path as written; ``slug: /`` is the template's root."""
    cfg, _ = _source(tmp_path, "local", {
        "a.md": "---\nslug: /setup\n---\n\n# A\n\nAlpha.\n", "b.md": "---\npermalink: /b.html\n---\n\n# B\n\nBravo.\n",
        "c/intro.md": "---\nslug: /\n---\n\n# C\n\nCharlie.\n"}, template=SITE + "{path}/")
    _ingest(cfg)
    assert {r["text"]: r["url"] for r in _rows(cfg)} == {
        "Alpha.": SITE + "setup/", "Bravo.": SITE + "b.html", "Charlie.": SITE}


@pytest.mark.parametrize("kind", ["local", "git"])
def test_a_slug_change_moves_the_page_and_embeds_nothing_again(tmp_path: Path, kind: str) -> None:
    """A refresh after a page's slug changed deletes the rows at its old URL and writes them at the new one;
    its text is unchanged, so every vector comes from the embedding cache."""
    cfg, repo = _source(tmp_path, kind, {"a.md": "---\nslug: /one\n---\n\n# A\n\nThe wumpus lives in the pit.\n",
                                         "b.md": "# B\n\nOther text.\n"})
    _ingest(cfg)
    assert {r["page_url"] for r in _rows(cfg)} == {SITE + "one", SITE + "b"}
    _change(tmp_path, kind, repo, {"a.md": "---\nslug: /two\n---\n\n# A\n\nThe wumpus lives in the pit.\n"})
    st, _ = _ingest(cfg)
    assert {r["page_url"] for r in _rows(cfg)} == {SITE + "two", SITE + "b"}
    assert (st.pages_new, st.pages_deleted, st.pages_unchanged, st.chunks_embedded) == (1, 1, 1, 0)
    st, _ = _ingest(cfg)
    assert (st.pages_new, st.pages_changed, st.pages_deleted, st.rows_written) == (0, 0, 0, 0)


@pytest.mark.parametrize("kind", ["local", "git"])
def test_two_pages_claiming_one_url_are_both_indexed_with_a_warning(tmp_path: Path, kind: str) -> None:
    """Two pages with one slug, and a slug that is another file's path URL: the first claim (a file's own
    path first, then front matter in path order) keeps the URL, the other page is indexed at its own file's
    URL, and a warning names both; nothing is lost."""
    cfg, _ = _source(tmp_path, kind, {
        "a.md": "---\nslug: /same\n---\n\n# A\n\nAlpha text.\n", "b.md": "---\nslug: /same\n---\n\n# B\n\nBravo text.\n",
        "c.md": "---\nslug: /d\n---\n\n# C\n\nCharlie text.\n", "d.md": "# D\n\nDelta text.\n"})
    _, lines = _ingest(cfg)
    assert {r["text"]: r["page_url"] for r in _rows(cfg)} == {
        "Alpha text.": SITE + "same", "Bravo text.": SITE + "b", "Charlie text.": SITE + "c", "Delta text.": SITE + "d"}
    assert (f"[DISCOVER] site: warning: b.md: its front matter puts it at {SITE}same, where a.md is already; "
            f"indexed at its file's URL {SITE}b instead (give one of them another URL)") in lines
    assert any(ln.startswith(f"[DISCOVER] site: warning: c.md: its front matter puts it at {SITE}d, where d.md")
               for ln in lines), lines


HOSTILE = {
    "js": "'javascript:alert(1)'", "abs": "https://other.site/x", "host": "//other.site/x", "long": "x" * 10_000,
    "nul": '"a\\0b"', "q": "'/a?b#c'", "list": "[a, b]", "bs": "'\\\\other.site\\x'", "yes": "true",
}


@pytest.mark.parametrize("kind", ["local", "git"])
def test_a_hostile_front_matter_url_stays_on_the_site_or_is_ignored_with_its_reason(tmp_path: Path, kind: str) -> None:
    """A value that is no path of the site (a scheme, another host, a backslash, ``?``/``#``, a control
    character, 10,000 characters, not a string, Jekyll placeholders) is ignored with a warning saying why,
    and the page keeps its path's URL; ``..`` never climbs above the template's root; a file that is not
    UTF-8 gives a percent-encoded path on the site."""
    files: dict[str, str | bytes] = {f"{k}.md": f"---\nslug: {v}\n---\n\n# {k}\n\nText of {k}.\n" for k, v in HOSTILE.items()}
    files["up.md"] = "---\nslug: '../../../etc/passwd'\n---\n\n# up\n\nText of up.\n"
    files["perm.md"] = "---\npermalink: /:path/:basename:output_ext\n---\n\n# perm\n\nText of perm.\n"
    files["bytes.md"] = b"---\nslug: /caf\xe9\n---\n\n# bytes\n\nText of bytes.\n"
    cfg, _ = _source(tmp_path, kind, files)
    _, lines = _ingest(cfg)
    got = {r["text"]: r["page_url"] for r in _rows(cfg)}
    for k in [*HOSTILE, "perm"]:
        assert got[f"Text of {k}."] == f"{SITE}{k}"
        assert any(ln.startswith(f"[DISCOVER] site: warning: {k}.md: front matter ") and " ignored: " in ln
                   and ln.endswith(f"; indexed at {SITE}{k}") and len(ln) < 400 for ln in lines), (k, lines)
    assert got["Text of up."] == SITE + "etc/passwd"
    assert got["Text of bytes."] == SITE + "caf%C3%A9"  # windows-1252, as the whole file is read
    assert "javascript:alert(1)' ignored: it is a URL with a scheme" in "\n".join(lines)


@pytest.mark.parametrize("setting", ["front_matter_urls: false", "heading_anchors: vitepress",
                                     "heading_anchors: python-markdown"])
def test_a_site_whose_generator_ignores_front_matter_urls_keeps_file_urls(tmp_path: Path, setting: str) -> None:
    """``front_matter_urls: false``, and a source whose ``heading_anchors`` says MkDocs or VitePress builds
    it (they publish a page at its file's path whatever its front matter says), keep the path's URL."""
    cfg, _ = _source(tmp_path, "local", {"a.md": "---\nslug: /setup\n---\n\n# A\n\nAlpha.\n"}, extra=setting)
    _ingest(cfg)
    assert {r["page_url"] for r in _rows(cfg)} == {SITE + "a"}


def test_url_rules_and_base_url_are_not_overridden(tmp_path: Path) -> None:
    """A ``url_rules`` entry is the config's own word on a page's URL, and ``base_url`` publishes files as
    files: front matter changes neither."""
    write_docs(tmp_path / "docs", {"a.md": "---\nslug: /setup\n---\n\n# A\n\nAlpha.\n",
                                   "b.md": "---\nslug: /other\n---\n\n# B\n\nBravo.\n"})
    cfg = write_config(tmp_path, sources=f"""
      - name: site
        kind: local
        path: docs
        url_rules: [{{match: '^a\\.md$', url: '{SITE}rule-a'}}]
        url_template: "{SITE}{{path}}"
      - name: files
        kind: local
        path: docs
        base_url: https://github.com/o/r/blob/main/docs/
    """)
    ctx = Context(load_config(cfg))
    refresh(ctx, "site")
    refresh(ctx, "files")
    assert {r["page_url"] for r in ctx.chunks.rows("true")} == {
        SITE + "rule-a", SITE + "other", "https://github.com/o/r/blob/main/docs/a.md",
        "https://github.com/o/r/blob/main/docs/b.md"}


def test_a_git_cache_from_before_front_matter_urls_reads_each_page_once(tmp_path: Path) -> None:
    """A git source's file cache written before front matter set URLs (no ``route``) reads each Markdown
    blob once for it: the pages get their front-matter URLs, and a page whose URL did not change stays
    ``unchanged``."""
    cfg, repo = _source(tmp_path, "git", {"a.md": "---\nslug: /setup\n---\n\n# A\n\nAlpha.\n", "b.md": "# B\n\nBravo.\n"})
    _ingest(cfg)
    ctx = Context(load_config(cfg))
    src = GitSource(ctx.config.source("site"), workdir=ctx.source_dir("site"))
    state = src.load_state()
    for entry in state["files"].values():
        del entry["route"]
    src.save_state(state)
    st, _ = _ingest(cfg)
    assert {r["page_url"] for r in _rows(cfg)} == {SITE + "setup", SITE + "b"}
    assert (st.pages_unchanged, st.pages_new, st.pages_deleted) == (2, 0, 0)
    assert all("route" in e for e in src.load_state()["files"].values())


def test_an_unreadable_page_keeps_its_rows_at_its_front_matter_url(tmp_path: Path) -> None:
    """A page its slug put elsewhere that cannot be read at a later refresh is ``failed`` at the URL its
    slug gave (recorded at the last scan), so its indexed chunks stay, as any unreadable page's do."""
    from .test_local_source import _ingest_without_dac_override

    cfg, _ = _source(tmp_path, "local", {"a.md": "---\nslug: /setup\n---\n\n# A\n\nAlpha.\n", "b.md": "# B\n\nBravo.\n"})
    _ingest(cfg)
    (tmp_path / "docs" / "a.md").chmod(0)
    try:
        out = _ingest_without_dac_override(tmp_path)
    finally:
        (tmp_path / "docs" / "a.md").chmod(0o644)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout)["site"]["pages_failed"] == 1
    assert "[DISCOVER] site: a.md cannot be read: Permission denied; its indexed chunks are kept" in out.stderr
    assert {r["page_url"] for r in _rows(cfg)} == {SITE + "setup", SITE + "b"}
    assert json.loads((tmp_path / "data" / "sources" / "site" / "front_matter_urls.json").read_text()) == {
        "a.md": SITE + "setup"}



def test_a_front_matter_title_keeps_the_h1_it_differs_from(tmp_path: Path) -> None:
    """A front-matter ``title`` names the page (its <title>, what citations show), and an H1 with words the
    title lacks is the heading the page shows: it opens the first section and heads the others, so its words
    are indexed (before, they were in no row). An H1 whose words the title holds (the same, or ``Installing``
    under ``Installing Acme Widgets``) is the title and no section, as before."""
    page = parse_markdown("---\ntitle: Installing Frobnitz\n---\n\n# Install the grobble CLI\n\nRun pip.\n\n"
                          "## Verify\n\nRun frob.\n", path="install.md")
    assert page.title == "Installing Frobnitz"
    assert [(s.headings, s.anchor, s.text) for s in page.sections] == [
        (("Install the grobble CLI",), "", "Run pip."),  # the page's top (Docusaurus gives its H1 no id)
        (("Install the grobble CLI", "Verify"), "verify", "Run frob.")]
    for title, h1 in (("Install  the CLI", "Install the cli"), ("Installing Acme Widgets", "Installing")):
        same = parse_markdown(f"---\ntitle: {title}\n---\n\n# {h1}\n\nRun pip.\n\n## Verify\n\nRun frob.\n", path="i.md")
        assert same.title == " ".join(title.split()) and [s.headings for s in same.sections] == [(), ("Verify",)]
    cfg, _ = _source(tmp_path, "local", {"install.md": "---\ntitle: Installing Frobnitz\n---\n\n"
                                                      "# Install the grobble CLI\n\nRun pip install frobnitz.\n"})
    _ingest(cfg)
    [row] = _rows(cfg)
    assert (row["title"], list(row["headings"])) == ("Installing Frobnitz", ["Install the grobble CLI"])
    assert row["url"] == SITE + "install"
    # its slug stays taken: a later heading of the same text is the site's "-1"
    again = parse_markdown("---\ntitle: T\n---\n\n# Setup\n\nA.\n\n## Setup\n\nB.\n", path="s.md")
    assert [(s.headings, s.anchor) for s in again.sections] == [(("Setup",), ""), (("Setup", "Setup"), "setup-1")]


def test_a_relative_slug_of_an_index_page_is_beside_it_as_docusaurus_reads_it() -> None:
    """``guides/index.md`` with ``slug: start`` is ``guides/start`` (Docusaurus resolves a relative slug against
    the file's folder); Hugo's page-bundle reading (the folder renamed) needs a url_rules entry, which wins."""
    from docs_rag_pipeline.sources.front_matter import Route, page_route, route_url

    route, ignored = page_route({"slug": "start"}, rel="guides/index.md")
    assert (route, ignored) == (Route("slug", "guides/start", False), [])
    assert route_url(route, SITE + "{path}/") == SITE + "guides/start/"


@pytest.mark.parametrize("kind", ["local", "git"])
def test_a_draft_is_not_indexed_unless_the_source_says_so(tmp_path: Path, kind: str) -> None:
    """A page its front matter marks as a draft (``draft: true``: Docusaurus, Hugo, Astro; ``published:
    false``: Jekyll) is one the site does not publish, and was indexed and cited at a URL that is not there.
    It is skipped, with the reason and the way to index drafts logged; a published page that becomes a draft
    loses its chunks, and one that is published again is indexed. ``index_drafts: true`` indexes drafts,
    and so does a source whose ``heading_anchors`` says MkDocs or VitePress builds the site (neither reads them)."""
    files = {"live.md": "# Live\n\nThe live page.\n", "wip.md": "---\ndraft: true\n---\n\n# Wip\n\nA page in the works.\n",
             "old.md": "---\npublished: false\n---\n\n# Old\n\nA retired page.\n",
             "soon.md": "---\ndraft: false\n---\n\n# Soon\n\nA page with draft false.\n"}
    cfg, repo = _source(tmp_path, kind, files)
    _, lines = _ingest(cfg)
    assert {r["text"] for r in _rows(cfg)} == {"The live page.", "A page with draft false."}
    assert any("wip.md: skipped: wip.md: a draft (front matter draft: true), which the site does not publish; "
               "set index_drafts: true on the source to index drafts" in ln for ln in lines), lines
    assert any("old.md: skipped" in ln and "published: false" in ln for ln in lines), lines
    _change(tmp_path, kind, repo, {"live.md": "---\ndraft: true\n---\n\n# Live\n\nThe live page.\n",
                                   "wip.md": "# Wip\n\nA page in the works.\n"})
    _, lines = _ingest(cfg)
    assert {r["text"] for r in _rows(cfg)} == {"A page in the works.", "A page with draft false."}
    assert any("live.md" in ln and "its indexed chunks are removed" in ln for ln in lines), lines
    everything = {"The live page.", "A page in the works.", "A retired page.", "A page with draft false."}
    text = cfg.read_text()
    cfg.write_text(text.replace("url_template:", "index_drafts: true\n    url_template:"))
    _ingest(cfg)
    assert {r["text"] for r in _rows(cfg)} == everything
    # MkDocs publishes every page of its folder, whatever the front matter says
    cfg.write_text(text.replace("url_template:", "heading_anchors: python-markdown\n    url_template:"))
    _ingest(cfg)
    assert {r["text"] for r in _rows(cfg)} == everything


def test_a_blank_value_sets_no_url_and_a_percent_encoded_one_is_not_encoded_again() -> None:
    """``slug: "  "`` is no value (it routed the page to its folder, where another page is), as ``slug: ""``
    is; ``slug: caf%C3%A9`` is the URL the site serves, which was encoded again (``caf%25C3%25A9``); a ``%``
    that starts no escape is encoded."""
    from docs_rag_pipeline.sources.front_matter import page_route, route_url

    def url(value: str) -> str | None:
        route, _ = page_route({"slug": value}, rel="guides/p.md")
        return route_url(route, SITE + "{path}") if route is not None else None

    assert url("  ") is None and url("") is None
    assert url("caf%C3%A9") == url("café") == SITE + "guides/caf%C3%A9"
    assert url("a b%zz") == SITE + "guides/a%20b%25zz"


def test_a_template_of_a_repositorys_file_view_takes_no_front_matter_url(tmp_path: Path) -> None:
    """A ``url_template`` that is a repository's file view (``…/blob/main/docs/{path}.md``) serves each file at
    its path; a Docusaurus ``slug`` or ``id`` (common in such docs) had moved the page to a URL the view does
    not have, silently, since ``front_matter_urls`` is on by default."""
    view = "https://github.com/acme/frob/blob/main/docs/{path}.md"
    cfg, _ = _source(tmp_path, "local", {"guides/install.md": "---\nslug: /setup\nid: installing\n---\n\n# Install\n\nRun pip.\n"},
                     template=view)
    _ingest(cfg)
    assert {r["url"] for r in _rows(cfg)} == {"https://github.com/acme/frob/blob/main/docs/guides/install.md"}


NUMBERED = {
    "01-intro.md": "# Intro\n\nAlpha text.\n",
    "02-guides/03-setup.md": "# Setup\n\nBravo text.\n",
    "02-guides/02-guides.md": "# Guides\n\nCharlie text.\n",
    "02-guides/04-moved.md": "---\nslug: moved-here\n---\n\n# Moved\n\nDelta text.\n",
    "8.0-notes.md": "# Notes\n\nEcho text.\n",
    "section/_index.md": "# Section\n\nFoxtrot text.\n",
    "Bundle Post/index.md": "# Post\n\nGolf text.\n",
    "README.md": "# Readme\n\nHotel text.\n",
    "01.md": "---\nid: one\n---\n\n# One\n\nIndia text.\n",
}


@pytest.mark.parametrize("kind", ["local", "git"])
@pytest.mark.parametrize("generator", ["plain", "docusaurus", "hugo"])
def test_url_paths_says_whose_rules_turn_a_files_path_into_its_url(tmp_path: Path, kind: str, generator: str) -> None:
    """``url_paths: docusaurus``: number prefixes of files and folders are no part of the URL (``01-intro.md`` is
    ``intro``, ``02-guides/03-setup.md`` ``guides/setup``; ``8.0-notes`` is a version and stays), a file named as
    its folder is the folder, a relative slug is beside the published folder. ``url_paths: hugo``:
    ``section/_index.md`` and a leaf bundle's ``index.md`` are their folder, paths are lowercase with ``-`` for a
    space. Before, the template kept ``01-intro`` and ``section/_index``, URLs these sites do not have; ``plain``
    (the default) still does."""
    template = SITE + ("{path}/" if generator == "hugo" else "{path}")
    cfg, _ = _source(tmp_path, kind, NUMBERED, template=template,
                     extra=f"url_paths: {generator}" if generator != "plain" else "")
    _ingest(cfg)
    urls = {r["text"].split()[0]: r["url"] for r in _rows(cfg)}
    want = {
        "plain": {"Alpha": "01-intro", "Bravo": "02-guides/03-setup", "Charlie": "02-guides/02-guides",
                  "Delta": "02-guides/moved-here", "Echo": "8.0-notes", "Foxtrot": "section/_index",
                  "Golf": "Bundle%20Post", "Hotel": "", "India": "one"},
        "docusaurus": {"Alpha": "intro", "Bravo": "guides/setup", "Charlie": "guides", "Delta": "guides/moved-here",
                       "Echo": "8.0-notes", "Foxtrot": "section/_index", "Golf": "Bundle%20Post", "Hotel": "",
                       "India": "one"},
        "hugo": {"Alpha": "01-intro/", "Bravo": "02-guides/03-setup/", "Charlie": "02-guides/02-guides/",
                 "Delta": "02-guides/moved-here/", "Echo": "8.0-notes/", "Foxtrot": "section/",
                 "Golf": "bundle-post/", "Hotel": "readme/", "India": "one/"},
    }[generator]
    assert urls == {k: SITE + v for k, v in want.items()}


def test_url_paths_hugo_leaves_out_the_characters_hugo_keeps_out_of_a_path(tmp_path: Path) -> None:
    """Hugo writes a path as its ``paths.Sanitize`` does, lowercased: letters, digits, marks and ``. / _ # + ~ - @``
    kept, every other character left out, a run of spaces one ``-`` (review6 F3). Before, only spaces became
    ``-``, so ``What's New (2024).md`` was cited at ``what%27s-new-%282024%29/``, a page the site does not have
    (Hugo publishes it at ``whats-new-2024/``)."""
    files = {"Posts/What's New (2024).md": "# New\n\nAlpha text.\n", "Posts/Q&A, part 1.md": "# QA\n\nBravo text.\n",
             "two  spaces - here.md": "# Two\n\nCharlie text.\n", "Getting Started/_index.md": "# GS\n\nDelta text.\n",
             "C++ & café.md": "# Cpp\n\nEcho text.\n"}
    cfg, _ = _source(tmp_path, "local", files, template=SITE + "{path}/", extra="url_paths: hugo")
    _ingest(cfg)
    assert {r["text"].split()[0]: r["url"] for r in _rows(cfg)} == {
        "Alpha": SITE + "posts/whats-new-2024/", "Bravo": SITE + "posts/qa-part-1/", "Charlie": SITE + "two-spaces-here/",
        "Delta": SITE + "getting-started/", "Echo": SITE + "c%2B%2B-caf%C3%A9/"}


def test_url_paths_leaves_a_repositorys_file_view_alone_and_a_bad_value_names_the_choices(tmp_path: Path) -> None:
    """A template of a repository's file view shows every file at its path, whatever builds the site; a value
    that is none of the generators is a config error naming the key and the values."""
    view = "https://github.com/acme/frob/blob/main/docs/{path}.md"
    cfg, _ = _source(tmp_path, "local", {"01-intro.md": "# Intro\n\nAlpha text.\n"}, template=view,
                     extra="url_paths: docusaurus")
    _ingest(cfg)
    assert {r["url"] for r in _rows(cfg)} == {"https://github.com/acme/frob/blob/main/docs/01-intro.md"}
    cfg, _ = _source(tmp_path / "bad", "local", {"a.md": "# A\n\nAlpha.\n"}, extra="url_paths: jekyll")
    with pytest.raises(ConfigError, match=r"sources\[0\]\.url_paths: unknown value 'jekyll'; use 'plain', "
                                          r"'docusaurus' or 'hugo'"):
        load_config(cfg)


def test_url_paths_without_a_url_template_is_a_config_error(tmp_path: Path) -> None:
    """``url_paths`` turns a file's path into a url_template's ``{path}``; beside ``base_url`` (or with only
    ``url_rules``) it did nothing, and a Hugo site given ``base_url`` and ``url_paths: hugo`` was cited at
    ``…/section/_index.md`` without a word (review6 F8). It is a config error naming the key and the fix;
    ``url_paths: plain`` needs nothing."""
    root = tmp_path / "site"
    (root / "docs").mkdir(parents=True)
    for value, ok in (("hugo", False), ("docusaurus", False), ("plain", True)):
        cfg = root / f"{value}.yaml"
        cfg.write_text(f"storage: {root / 'data'}\nsources:\n  - name: site\n    kind: local\n    path: docs\n"
                       f"    base_url: https://docs.example.org/\n    url_paths: {value}\n")
        if ok:
            assert load_config(cfg).sources[0].url_paths == "plain"
            continue
        with pytest.raises(ConfigError, match=rf"sources\[0\]\.url_paths: '{value}' applies only under a url_template"):
            load_config(cfg)


@pytest.mark.parametrize("kind", ["local", "git"])
def test_a_docusaurus_or_hugo_site_is_hinted_to_set_url_paths(tmp_path: Path, kind: str) -> None:
    """A ``docusaurus.config.js`` (or ``hugo.toml``) beside the documents or above them, while ``url_paths`` says
    another generator and that generator's rules would give a file another path, logs a hint naming the key;
    none once it is set, and none for a site whose paths the rules leave as they are."""
    for generator, config, files, hinted in (
            ("docusaurus", "docusaurus.config.js", {"01-intro.md": "# Intro\n\nAlpha text.\n"}, True),
            ("hugo", "hugo.toml", {"section/_index.md": "# Section\n\nAlpha text.\n"}, True),
            ("docusaurus", "docusaurus.config.js", {"intro.md": "# Intro\n\nAlpha text.\n"}, False)):
        for extra in ("", f"url_paths: {generator}"):
            where = tmp_path / f"{generator}-{hinted}-{bool(extra)}"
            cfg, _ = _source(where, kind, {**files, config: "module.exports = {};\n"}, extra=extra)
            _, lines = _ingest(cfg)
            hints = [ln for ln in lines if "hint:" in ln and "url_paths" in ln]
            assert bool(hints) == (hinted and not extra), (generator, extra, lines)
            if hints:
                assert f"set url_paths: {generator} for this source" in hints[0] and config in hints[0]
