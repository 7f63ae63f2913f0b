"""Metadata filters: how frontmatter values become tags, and how filter values match them."""

from __future__ import annotations

from pathlib import Path

from dagster import DagsterInstance

from .conftest import write_config, write_docs
from .dagster_helpers import materialize_source


def _index(tmp_path: Path, files: dict[str, str], *, sources: str | None = None, names: tuple[str, ...] = ("guide",),
           roots: dict[str, dict[str, str]] | None = None) -> str:
    if roots:
        for folder, docs in roots.items():
            write_docs(tmp_path / folder, docs)
    else:
        write_docs(tmp_path / "docs", files)
    cfg = write_config(tmp_path, sources=sources)
    with DagsterInstance.ephemeral() as instance:
        for name in names:
            materialize_source(cfg, name, instance)
    return str(cfg)


def _urls(hits) -> list[str]:  # noqa: ANN001
    return sorted(h.url for h in hits)


def test_frontmatter_is_read_as_yaml_1_2_and_numbers_keep_their_written_form(tmp_path):
    """Frontmatter was read as YAML 1.1: ``version: 1.10`` became the number 1.1 (tag ``version=1.1``, so a
    filter on ``1.10`` found nothing and one on ``1.1`` found the 1.10 page too), ``NO`` false, ``on`` true,
    ``010`` the octal 8, ``1_000`` 1000. It is YAML 1.2's core schema now, and a number that would not read
    back as written keeps its written form: a filter finds each page by the value the page writes."""
    from docs_rag_pipeline import search

    cfg = _index(tmp_path, {
        "v110.md": "---\nversion: 1.10\ncountry: NO\nmode: on\nrelease: 010\nver: 1_000\n---\n"
                   "# Release ten\n\nThe ten release adds the splorkifier widget to the dashboard.\n",
        "v11.md": "---\nversion: 1.1\ncount: 10\nratio: 2.0\ndraft: false\n---\n"
                  "# Release one\n\nThe one release adds the grumbletron panel to the dashboard.\n",
    })
    q = "release dashboard splorkifier grumbletron"
    assert _urls(search(q, top_k=10, filters={"version": "1.10"}, config=cfg)) == ["https://docs.example.org/v110.md"]
    assert _urls(search(q, top_k=10, filters={"version": "1.1"}, config=cfg)) == ["https://docs.example.org/v11.md"]
    (ten,) = search(q, top_k=1, filters={"country": "NO", "mode": "on", "release": "010", "ver": "1_000"}, config=cfg)
    assert {k: ten.metadata[k] for k in ("version", "country", "mode", "release", "ver")} == {
        "version": "1.10", "country": "NO", "mode": "on", "release": "010", "ver": "1_000"}
    (one,) = search(q, top_k=1, filters={"draft": False}, config=cfg)
    assert {k: one.metadata[k] for k in ("version", "count", "ratio", "draft")} == {
        "version": 1.1, "count": 10, "ratio": 2.0, "draft": False}


def test_a_number_in_a_filter_matches_an_equal_number_however_written(tmp_path):
    """A number was matched by its Python text: ``count: 10`` was not found by ``{"count": 10.0}`` (what a
    JSON client's 10.0 is in Python), ``version: 2.0`` not by ``{"version": 2}``. Equal numbers match; a
    string still matches the text of the tag."""
    from docs_rag_pipeline import search

    cfg = _index(tmp_path, {"p.md": "---\ncount: 10\nversion: 2.0\nratio: 2.5\n---\n# P\n\n"
                                    "The frobnicator timeout is forty two seconds.\n"})
    for filters in ({"count": 10}, {"count": 10.0}, {"count": [3, 10.0]}, {"version": 2.0}, {"version": 2},
                    {"ratio": 2.5}, {"count": "10"}, {"version": "2.0"}):
        assert len(search("frobnicator timeout", filters=filters, config=cfg)) == 1, filters
    for filters in ({"count": 10.5}, {"ratio": 2}, {"version": "2"}):
        assert search("frobnicator timeout", filters=filters, config=cfg) == [], filters


def test_each_sources_metadata_rule_default_matches_its_own_pages(tmp_path):
    """Two sources with a rule on one key and different defaults: the defaults were merged into one
    (the last source's), so a filter on the key missed the first source's shared pages and matched the
    last one's default on every source's pages; a ``source`` in ``filters`` did not pick the rules as
    ``source=`` does. Each source's default now matches that source's pages."""
    from docs_rag_pipeline import search

    rule = "metadata_rules:\n  - key: version\n    pattern: '^v(\\d+\\.\\d+)/'\n    default: {}\n"
    sources = "".join(f"- name: src{s}\n  kind: local\n  path: {s}\n  base_url: https://{s}.example.org/\n"
                      + "  " + rule.format(default).replace("\n", "\n  ").rstrip() + "\n"
                      for s, default in (("d", "common"), ("e", "all")))
    docs = {s: {"v2.1/install.md": f"# Install {s}\n\nInstalling the plonkometer for version two point one of {s}.\n",
                "v3.0/install.md": f"# Install {s} 3\n\nInstalling the plonkometer for version three of {s}.\n",
                "shared.md": f"# Shared {s}\n\nThe plonkometer shared notes of product {s} apply to every version.\n",
                "v9.9/all.md": f"# Nine {s}\n\nThe plonkometer nine notes of {s}.\n"}
            for s in "de"}
    cfg = _index(tmp_path, {}, sources=sources, names=("srcd", "srce"), roots=docs)
    q = "plonkometer notes version install"
    assert _urls(search(q, top_k=20, filters={"version": "2.1"}, config=cfg)) == [
        "https://d.example.org/shared.md", "https://d.example.org/v2.1/install.md",
        "https://e.example.org/shared.md", "https://e.example.org/v2.1/install.md"]
    by_arg = _urls(search(q, top_k=20, source="srcd", filters={"version": "2.1"}, config=cfg))
    assert by_arg == ["https://d.example.org/shared.md", "https://d.example.org/v2.1/install.md"]
    assert _urls(search(q, top_k=20, filters={"version": "2.1", "source": "srcd"}, config=cfg)) == by_arg
    assert _urls(search(q, top_k=20, filters={"version": "2.1", "source": ["srce"]}, config=cfg)) == [
        "https://e.example.org/shared.md", "https://e.example.org/v2.1/install.md"]


def test_a_removed_sources_metadata_keys_are_no_filter_keys(tmp_path):
    """A source removed from the config (its rows not pruned yet) is never served, but its pages'
    metadata keys still counted as keys that exist: a filter on one gave an empty result (ask: a
    refusal, "the docs don't cover it") instead of ``unknown_filter``, and the message listing the keys
    named them."""
    import pytest

    from docs_rag_pipeline import ask, search

    sources = "".join(f"- name: {n}\n  kind: local\n  path: {n}\n  base_url: https://{n}.example.org/\n" for n in "ab")
    cfg = _index(tmp_path, {}, sources=sources, names=("a", "b"), roots={
        "a": {"secret.md": "---\nclearance: topsecret\n---\n# Secret\n\nThe vault code rotates every week.\n"},
        "b": {"cache.md": "---\naudience: admins\n---\n# Cache\n\nThe wibblewobble cache eviction happens every "
                          "ninety seconds.\n"}})
    assert len(search("vault code", filters={"clearance": "topsecret"}, config=cfg)) == 1
    b_only = tmp_path / "b_only.yaml"
    b_only.write_text(Path(cfg).read_text().split("sources:")[0] + "sources:\n" + sources.split("- name: b")[0]
                      .replace("name: a", "name: b").replace("path: a", "path: b").replace("//a.", "//b.")
                      .replace("- name", "  - name").replace("\n  ", "\n    "))
    for call in (search, ask):
        with pytest.raises(ValueError) as err:
            call("wibblewobble cache", filters={"clearance": "topsecret"}, config=str(b_only))
        assert getattr(err.value, "code", None) == "unknown_filter", err.value
        assert "clearance" not in str(err.value).split("keys that exist:")[1], err.value
    assert len(search("wibblewobble cache", filters={"audience": "admins"}, config=str(b_only))) == 1


def test_a_key_given_twice_to_the_cli_filter_is_a_usage_error(tmp_path):
    """``--filter labels=gamma --filter labels=alpha`` kept the last value only, silently: the page
    labelled alpha (not gamma) was found, and swapping the two found nothing. The --filter options must
    all match (cli.md), which one key with two values cannot; it is an error that says so."""
    from .test_cli import _run

    cfg = Path(_index(tmp_path, {"p.md": "---\nlabels: [alpha, beta]\n---\n# P\n\n"
                                         "The frobnicator timeout is forty two seconds.\n"}))
    for first, second in (("gamma", "alpha"), ("alpha", "gamma")):
        for command in ("search", "ask"):
            out = _run([command, "frobnicator timeout", "--filter", f"labels={first}", "--filter", f"labels={second}"],
                       cfg)
            assert out.returncode == 2, (out.stdout, out.stderr)
            assert (f"error: --filter labels: the key is given twice (labels={first}, labels={second}); give each "
                    "key once") in out.stderr, out.stderr
    out = _run(["search", "frobnicator timeout", "--filter", "labels=alpha", "--filter", "section=p", "--json"], cfg)
    assert out.returncode == 0 and '"https://docs.example.org/p.md"' in out.stdout, out.stderr


def test_a_search_limited_to_a_source_never_ingested_says_so(tmp_path):
    """A source just added to the config and not ingested yet, searched or asked alone (``source``, or
    ``source`` in ``filters``), gave an empty list and the refusal "the documentation doesn't cover this
    question" (CLI exit 0, HTTP 200): the docs were blamed for what was never indexed. It is now
    ``SourceNotIndexed`` (a ``NothingIndexed``) naming the source and ``docs-rag ingest --source``, as for
    an empty storage folder; a limit that takes in an ingested source, or an ingested source with
    nothing matching, is still an empty result."""
    import pytest
    import requests

    from docs_rag_pipeline import ask, search
    from docs_rag_pipeline.config import NothingIndexed, SourceNotIndexed
    from docs_rag_pipeline.serve.api import create_app

    from .test_api import serve

    one = "- name: kettle\n  kind: local\n  path: kettle\n  base_url: https://kettle.example.org/\n"
    cfg = Path(_index(tmp_path, {}, sources=one, names=("kettle",), roots={
        "kettle": {"kettle.md": "# Kettle\n\n## Descale\n\nPour white vinegar into the kettle and rinse it.\n"}}))
    write_docs(tmp_path / "blender", {"blender.md": "# Blender\n\n## Pulse\n\nHold the pulse button for short "
                                                    "bursts to crush ice.\n"})
    cfg.write_text(cfg.read_text() + "  - name: blender\n    kind: local\n    path: blender\n"
                                     "    base_url: https://blender.example.org/\n")
    q = "How do I use the pulse button?"
    for kw in ({"source": "blender"}, {"filters": {"source": "blender"}}, {"filters": {"source": ["blender"]}}):
        for call in (search, ask):
            with pytest.raises(SourceNotIndexed) as err:
                call(q, config=str(cfg), **kw)
            assert isinstance(err.value, NothingIndexed)
            assert "'blender'" in str(err.value) and "docs-rag ingest --source blender" in str(err.value), err.value
    assert [h.source for h in search("descale kettle", filters={"source": ["blender", "kettle"]}, config=str(cfg))] \
        == ["kettle"]
    assert search("descale kettle", source="kettle", filters={"source": "blender"}, config=str(cfg)) == []
    with serve(create_app(config_path=str(cfg))) as url:
        for route, body in (("search", {"query": q, "source": "blender"}), ("ask", {"question": q, "source": "blender"})):
            r = requests.post(f"{url}/{route}", json=body, timeout=60)
            assert r.status_code == 503, r.text
            err = r.json()["error"]
            assert err["code"] == "backend_unavailable" and "docs-rag ingest --source blender" in err["message"], err
            assert str(tmp_path) not in err["message"]
