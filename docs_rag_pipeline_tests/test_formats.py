"""Every common docs format: AsciiDoc, reStructuredText, MDX; URL mapping; the real corpora.

Small fixtures written here cover the syntax; the real public docs in ``../shared/corpora``
(Astro's MDX, Asciidoctor's AsciiDoc in an Antora layout) are ingested whole when present.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from docs_rag_pipeline.answering.markers import code_parts
from docs_rag_pipeline.chunking import Budget, chunk_page
from docs_rag_pipeline.config import UrlRule, parse_config
from docs_rag_pipeline.parsing import format_for_path, parse_document
from docs_rag_pipeline.parsing.asciidoc import generate_id, inline_text, parse_asciidoc, prepare_asciidoc
from docs_rag_pipeline.parsing.rst import parse_rst
from docs_rag_pipeline.sources.local import map_url, path_glob, template_path

from .conftest import write_config, write_docs

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
ASTRO = CORPORA / "astro-docs-en"
ASCIIDOCTOR = CORPORA / "asciidoctor-docs"


def by_headings(page):
    return {tuple(s.headings): s for s in page.sections}


def prose(text: str) -> list[str]:
    """The lines of a section text outside fenced code blocks."""
    out, fence = [], None
    for line in text.split("\n"):
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if m and (fence is None or line.strip() == fence):
            fence = m.group(1) if fence is None else None
            continue
        if fence is None:
            out.append(line)
    return out


# --------------------------------------------------------------------------------------------
# Formats and URLs
# --------------------------------------------------------------------------------------------


def test_format_for_new_extensions() -> None:
    assert format_for_path("docs/a.adoc") == "asciidoc"
    assert format_for_path("docs/a.asciidoc") == "asciidoc"
    assert format_for_path("docs/a.rst") == "rst"
    assert format_for_path("docs/a.txt") is None


def test_a_template_with_text_after_path_keeps_the_index_page_name() -> None:
    # {path} ending the template or followed by "/" publishes a folder's index page at the folder;
    # text after it ("{path}.html", as Sphinx, MkDocs without directory URLs and Node's doc tool
    # publish) keeps the index name: the root index.md is index.html, never ".html"
    node = "https://nodejs.org/docs/latest-v20.x/api/{path}.html"
    assert map_url("index.md", url_template=node) == "https://nodejs.org/docs/latest-v20.x/api/index.html"
    assert map_url("fs.md", url_template=node) == "https://nodejs.org/docs/latest-v20.x/api/fs.html"
    assert map_url("guide/index.rst", url_template="https://d.org/{path}.html") == "https://d.org/guide/index.html"
    assert map_url("guide/README.md", url_template="https://d.org/{path}.html") == "https://d.org/guide/README.html"
    assert map_url("guide/index.md", url_template="https://d.org/{path}/") == "https://d.org/guide/"
    assert map_url("guide/index.md", url_template="https://d.org/{path}") == "https://d.org/guide"
    assert map_url("guide/index.md", url_template="https://d.org/{path}/x.html") == "https://d.org/guide/x.html"


def test_template_path_and_url_rules() -> None:
    assert template_path("guides/index.mdx") == "guides"
    assert template_path("index.mdx") == ""
    assert template_path("a/b/c.md") == "a/b/c"
    tmpl = "https://docs.astro.build/en/{path}/"
    assert map_url("guides/index.mdx", url_template=tmpl) == "https://docs.astro.build/en/guides/"
    assert map_url("index.mdx", url_template=tmpl) == "https://docs.astro.build/en/"
    assert map_url("guides/deploy/netlify.mdx", url_template=tmpl) == "https://docs.astro.build/en/guides/deploy/netlify/"
    rules = (UrlRule(r"^modules/ROOT/pages/(.*/)?index\.adoc$", r"https://d.org/latest/\1"),
             UrlRule(r"^modules/ROOT/pages/(.*)\.adoc$", r"https://d.org/latest/\1/"),
             UrlRule(r"^modules/([^/]+)/pages/(.*/)?index\.adoc$", r"https://d.org/latest/\1/\2"),
             UrlRule(r"^modules/([^/]+)/pages/(.*)\.adoc$", r"https://d.org/latest/\1/\2/"))
    assert map_url("modules/ROOT/pages/index.adoc", url_rules=rules) == "https://d.org/latest/"
    assert map_url("modules/ROOT/pages/features.adoc", url_rules=rules) == "https://d.org/latest/features/"
    assert map_url("modules/cli/pages/index.adoc", url_rules=rules) == "https://d.org/latest/cli/"
    assert map_url("modules/cli/pages/man1/asciidoctor.adoc", url_rules=rules) == "https://d.org/latest/cli/man1/asciidoctor/"
    assert map_url("modules/cli/nav.adoc", url_rules=rules) is None  # no rule: the caller warns
    # rules first, then the template
    assert map_url("x/y.md", url_rules=rules, url_template="https://e.org/{path}") == "https://e.org/x/y"
    assert path_glob("modules/ROOT/pages/index.adoc", "modules/*/pages/**/*.adoc")
    assert path_glob("modules/cli/pages/man1/a.adoc", "modules/*/pages/**/*.adoc")
    assert not path_glob("modules/cli/nav.adoc", "modules/*/pages/**/*.adoc")


def test_local_source_url_rules_and_unmapped_warning(tmp_path: Path) -> None:
    from docs_rag_pipeline.sources.local import LocalSource

    write_docs(tmp_path / "docs", {"modules/ROOT/pages/index.adoc": "= Home\n\nHello.\n",
                                   "modules/ROOT/pages/intro.adoc": "= Intro\n\nText.\n",
                                   "extra/notes.md": "# Notes\n\nUnmapped.\n"})
    cfg = parse_config({"sources": [{"name": "l", "kind": "local", "path": "docs", "url_rules": [
        {"match": r"^modules/ROOT/pages/(.*/)?index\.adoc$", "url": r"https://d.org/\1"},
        {"match": r"^modules/ROOT/pages/(.*)\.adoc$", "url": r"https://d.org/\1/"}]}]}, root=tmp_path)
    lines: list[str] = []
    scan = LocalSource(cfg.sources[0], workdir=tmp_path / "w").scan({}, log=lines.append)
    urls = {p.path: p.page_url for p in scan.pages}
    assert urls["modules/ROOT/pages/index.adoc"] == "https://d.org/"
    assert urls["modules/ROOT/pages/intro.adoc"] == "https://d.org/intro/"
    assert urls["extra/notes.md"] == (tmp_path / "docs" / "extra/notes.md").resolve().as_uri()
    assert any("warning" in ln and "extra/notes.md" in ln for ln in lines)
    assert scan.notes["unmapped_files"] == 1


# --------------------------------------------------------------------------------------------
# AsciiDoc
# --------------------------------------------------------------------------------------------

ADOC = """\
= Binding Data to Forms
:navtitle: Data binding
:product: Acme Flow
:url-docs: https://docs.acme.dev
// a comment line that must not show

The *{product}* binder connects _fields_ to `bean properties`.
See link:https://example.org/guide[the guide^], {url-docs}/binder[the binder docs] and
xref:validation.adoc#rules[validation rules], or <<converters,converters>> and <<_two_way_binding>>.
Press kbd:[Ctrl+S] to save. It ends here.footnote:[With a note.]

== Two-way binding

Changes flow both ways. +
A hard break came before this line.

NOTE: Two-way binding needs a **setter**.

[[converters]]
=== Converters

A converter turns text into the property type.

.Converter example
[source,java]
----
Binder<Person> binder = new Binder<>(Person.class); // <1>
binder.forField(age).withConverter(new StringToIntegerConverter("Not a number")); // <2>
----
<1> Create the binder.
<2> Add the converter.

[#custom-id]
=== Two-way binding

Same title as above, with an explicit id.

== Lists and tables

* First item
** Nested item with `code`
* Second item
+
A paragraph attached to the second item.

// a comment line ends the list (else the next list would nest, as in Asciidoctor)
. Step one
. Step two
.. Sub-step

Name:: The field name.
Type:: The property type.

.Field types
[cols="1,2",options="header"]
|===
|Field |Use

|TextField
|Free text, validated with a `Validator`.

|DatePicker
a|Dates:

* ISO format
|===

[%header,format=csv]
|===
Key,Value
a,1
|===

== Admonitions and literals

[WARNING]
====
Never store passwords in a bean.
====

 $ mvn install

....
literal block
  keeps indentation
....

[TIP]
Use *validation* early.

== Section with 'quotes' & symbols (C)

Text.

== Section with 'quotes' & symbols (C)

Repeated title.
"""


def test_asciidoc_headings_anchors_and_title() -> None:
    page = parse_asciidoc(ADOC, path="modules/ROOT/pages/binding.adoc")
    assert page.title == "Binding Data to Forms"
    assert page.metadata["navtitle"] == "Data binding"
    assert page.metadata["product"] == "Acme Flow"
    anchors = [(s.headings, s.anchor, s.level) for s in page.sections]
    assert anchors == [
        ((), "", 1),
        (("Two-way binding",), "_two_way_binding", 2),
        (("Two-way binding", "Converters"), "converters", 3),
        (("Two-way binding", "Two-way binding"), "custom-id", 3),
        (("Lists and tables",), "_lists_and_tables", 2),
        (("Admonitions and literals",), "_admonitions_and_literals", 2),
        (("Section with 'quotes' & symbols (C)",), "_section_with_quotes_symbols", 2),
        (("Section with 'quotes' & symbols (C)",), "_section_with_quotes_symbols_2", 2),
    ]


def test_asciidoc_inline_markup_removed() -> None:
    page = parse_asciidoc(ADOC, path="binding.adoc")
    intro = page.sections[0].text
    assert intro == (
        "The Acme Flow binder connects fields to `bean properties`. See the guide, the binder docs and "
        "validation rules, or converters and Two-way binding. Press Ctrl+S to save. It ends here. (With a note.)")
    two_way = by_headings(page)[("Two-way binding",)].text
    assert two_way == ("Changes flow both ways.\nA hard break came before this line.\n\n"
                       "NOTE: Two-way binding needs a setter.")


def test_asciidoc_blocks_lists_tables() -> None:
    page = parse_asciidoc(ADOC, path="binding.adoc")
    s = by_headings(page)
    conv = s[("Two-way binding", "Converters")].text
    assert "Converter example\n```java\nBinder<Person> binder = new Binder<>(Person.class);\n" in conv
    assert "<1>" not in conv.split("```")[1]  # callout marks removed from the code
    assert "(1) Create the binder.\n(2) Add the converter." in conv
    lists = s[("Lists and tables",)].text
    assert "- First item\n  - Nested item with `code`\n- Second item\n  A paragraph attached to the second item." in lists
    assert "1. Step one\n2. Step two\n  1. Sub-step" in lists
    assert "Name: The field name.\nType: The property type." in lists
    assert "Field types\n\nField | Use\nTextField | Free text, validated with a `Validator`.\nDatePicker | Dates: - ISO format" in lists
    assert "Key | Value\na | 1" in lists
    adm = s[("Admonitions and literals",)].text
    assert "WARNING: Never store passwords in a bean." in adm
    assert "```\n$ mvn install\n```" in adm
    assert "```\nliteral block\n  keeps indentation\n```" in adm
    assert "TIP: Use validation early." in adm
    for sec in page.sections:
        for line in prose(sec.text):
            assert not re.search(r"^\[|^----|^\|===|^====|^//|\{[\w-]+\}|\*\*|xref:|link:|<<|kbd:", line), line


@pytest.mark.timeout(120)
def test_asciidoc_marks_that_never_close_keep_a_long_paragraph_linear() -> None:
    """Release notes list issue references and underscore names: "Fixed #101 and _h101, #102 ...".
    Each ``#`` or ``_`` that opens no formatting made the lazy pattern scan to the end of the paragraph
    again (1,600 references took 3 s, 16,000 several minutes; the suite's time limit on this test is the
    guard, linear is well under a second). Marks that close are still formatting, those that don't text."""
    para = "Fixed " + ", ".join(f"#{i} and _h{i} and *s{i} and `c{i} and +p{i}" for i in range(16_000)) + "."
    out = inline_text(para)
    assert out.startswith("Fixed #0 and _h0 and *s0 and `c0 and +p0, #1 and _h1") and out.endswith("+p15999.")
    assert inline_text("Fixed #1, #2 and #marked# text, _x_ and *b* then #3 and `c` and _h4 +p+ *") == \
        "Fixed 1, #2 and #marked text, x and b then #3 and c and _h4 p *"
    assert inline_text("a `code``x and **b** c ++d++ e", code=True) == "a `code``x and b c d e"
    page = parse_asciidoc("= T\n\n== Notes\n\n" + para + "\n", path="t.adoc")
    assert page.sections[-1].text.endswith("+p15999.")


def test_asciidoc_ids_follow_idprefix_and_idseparator() -> None:
    seen: dict[str, int] = {}
    assert generate_id("Backend and converter", seen) == "_backend_and_converter"
    assert generate_id("Backend and converter", seen) == "_backend_and_converter_2"
    assert generate_id("What's new in 2.0?", {}) == "_whats_new_in_2_0"
    assert generate_id("Backend and converter", {}, prefix="", separator="-") == "backend-and-converter"
    page = parse_asciidoc("= T\n:idprefix:\n:idseparator: -\n\n== Backend and Converter\n\nx\n", path="t.adoc")
    assert page.sections[-1].anchor == "backend-and-converter"


def test_asciidoc_ids_of_many_sections_of_one_title_are_found_without_recounting() -> None:
    """A generated reference page repeats "== Parameters" for every method: the n-th repeat's id
    (``_parameters_n``) used to be found by trying ``_2``, ``_3``, ... again each time, work growing with
    the square of the sections (2,000 of them took seconds). The ids looked up stay about one per id
    given, the ids are Asciidoctor's, and an id taken in between (``[#_parameters_5]``) is still skipped."""
    class Counting(dict):
        lookups = 0

        def __contains__(self, key: object) -> bool:
            Counting.lookups += 1
            return super().__contains__(key)

    seen = Counting()
    ids = [generate_id("Parameters", seen) for _ in range(3)]
    seen.setdefault("_parameters_5", 1)
    ids += [generate_id("Parameters", seen) for _ in range(997)]
    assert ids[:5] == ["_parameters", "_parameters_2", "_parameters_3", "_parameters_4", "_parameters_6"]
    assert ids[-1] == "_parameters_1001" and len(set(ids)) == 1000
    assert generate_id("Parameters", seen, prefix="", separator="-") == "parameters"
    assert generate_id("Parameters", seen, prefix="", separator="-") == "parameters-2"
    assert Counting.lookups < 5 * 1000, Counting.lookups  # was about 500,000
    page = parse_asciidoc("= T\n\n" + "== Parameters\n\nx\n\n" * 3 + "[#_parameters_4]\n----\nc\n----\n\n"
                          + "== Parameters\n\nx\n", path="t.adoc")
    assert [s.anchor for s in page.sections if s.anchor][-4:] == ["_parameters", "_parameters_2", "_parameters_3",
                                                                  "_parameters_5"]


def test_asciidoc_generated_ids_skip_ids_taken_earlier_in_the_document() -> None:
    # the expected ids are what Asciidoctor 2.0.18 (`asciidoctor -s`) gives the same text: it registers
    # block anchors, a paragraph's inline anchors, an anchor opening a list item and discrete headings'
    # ids in document order, and a section's generated id skips them (else the citation opens the block)
    cases = {
        "= T\n\n[#_install]\n----\ncode\n----\n\n== Install\n\ntext\n": ["_install_2"],
        "= T\n\nSee [[_setup]]here.\n\n== Setup\n\ntext\n": ["_setup_2"],
        "= T\n\n[[_usage]]\nA paragraph.\n\n== Usage\n\ntext\n": ["_usage_2"],
        "= T\n\nSee anchor:_install[]here.\n\n== Install\n\ntext\n": ["_install_2"],
        "= T\n\nNOTE: see [[_install]]x\n\n== Install\n\ntext\n": ["_install_2"],
        "= T\n\n* [[_install]]item\n\n== Install\n\ntext\n": ["_install_2"],
        "= T\n\n[bibliography]\n* [[[_install]]] Book.\n\n== Install\n\ntext\n": ["_install_2"],
        "= T\n\n====\nsee [[_install]]x\n====\n\n== Install\n\nx\n": ["_install_2"],
        "= T\n\n|===\na|see [[_install]]x\n|===\n\n== Install\n\ntext\n": ["_install_2"],
        "= T\n\n[discrete]\n== Floating\n\nx\n\n== Floating\n\ny\n": ["_floating_2"],
        "= T\n\n== Install\n\n[#_install_2]\n----\nx\n----\n\n== Install\n\nx\n": ["_install", "_install_3"],
        "= T\n:idprefix:\n:idseparator: -\n\n[#install]\n.Install command\n----\nnpm i\n----\n\n== Install\n\ntext\n":
            ["install-2"],
        # not registered by the parser: anchors in a listing, a plain table cell, mid list item, a block title
        "= T\n\n----\n[[_install]]x\n----\n\n== Install\n\ntext\n": ["_install"],
        "= T\n\n|===\n|cell [[_install]]x\n|===\n\n== Install\n\ntext\n": ["_install"],
        "= T\n\n* item [[_install]]x\n\n== Install\n\ntext\n": ["_install"],
        "= T\n\n.Title [[_install]]x\n----\nc\n----\n\n== Install\n\ntext\n": ["_install"],
        # :sectids!: — no id at all: the section links the page, not a fragment that names nothing
        "= T\n:sectids!:\n\n== Install\n\ntext\n": [""],
        "= T\n\n== a->b\n\ntext\n": ["_ab"],
    }
    for src, want in cases.items():
        page = parse_asciidoc(src, path="t.adoc")
        assert [sec.anchor for sec in page.sections if sec.headings] == want, src
    # a reference without text to the skipped id still finds the section's title
    page = parse_asciidoc("= T\n\n== A\n\nSee <<_install_2>>.\n\n[#_install]\n----\nx\n----\n\n== Install\n\nz\n",
                          path="t.adoc")
    assert "See Install." in page.sections[0].text


def test_asciidoc_an_anchor_ending_a_section_title_is_its_id() -> None:
    # Asciidoctor's InlineSectionAnchorRx: ` [[id]]` / ` [[id,reftext]]` at the end of a title is the
    # section's id (the page has <h2 id="install-steps">, no _installation); before, it was dropped
    # and the section cited with a generated id the page lacks
    doc = ("= Guide\n\nSee <<install-steps>>.\n\n== Installation [[install-steps]]\n\nRun the installer.\n\n"
           "== Configuration [[config,Config reference]]\n\nSet the level.\n\n"
           "== Escaped \\[[not-an-id]]\n\nx\n\n[#above]\n== Both [[inline]]\n\ny\n\n"
           "== Installation\n\nz\n")
    page = parse_asciidoc(doc, path="guide.adoc")
    assert [(s.anchor, s.headings) for s in page.sections if s.headings] == [
        ("install-steps", ("Installation",)), ("config", ("Configuration",)),
        ("_escaped_not_an_id", ("Escaped [[not-an-id]]",)),  # escaped: text, as Asciidoctor shows it
        ("above", ("Both",)),  # an id above the title wins; the inline one is an anchor in the title
        ("_installation", ("Installation",))]
    assert page.sections[0].text == "See Installation."  # <<id>> without text: the title it names
    # the document title's own anchor, and a discrete heading's
    page = parse_asciidoc("= Guide [[top]]\n\nIntro.\n\n[discrete]\n== Float [[fl]]\n\n== Float\n\nx\n",
                          path="guide.adoc")
    assert page.title == "Guide"
    assert [(s.anchor, s.headings) for s in page.sections] == [("", ()), ("_float", ("Float",))]
    assert page.sections[0].text == "Intro.\n\nFloat"


def test_asciidoc_a_reference_without_text_shows_the_sections_reftext() -> None:
    # Asciidoctor shows ``<<id>>`` as the section's reftext when it has one (``[[id,reftext]]`` above or
    # at the end of the title, ``[#id,reftext=…]``), else its title; before, always the title
    doc = ("= Guide\n\nSee <<inst>>, <<cfg>>, <<oth>>, <<plain>> and <<inst,the steps>>.\n\n"
           "[[inst,Setup guide]]\n== Installing things\n\nx\n\n"
           "[#cfg,reftext=\"Config chapter\"]\n== Configuration\n\ny\n\n"
           "== Other [[oth,Other _stuff_]]\n\nz\n\n[[plain]]\n== Plain one\n\nw\n")
    page = parse_asciidoc(doc, path="guide.adoc")
    assert page.sections[0].text == "See Setup guide, Config chapter, Other stuff, Plain one and the steps."
    assert [s.headings for s in page.sections[1:]] == [("Installing things",), ("Configuration",), ("Other",),
                                                        ("Plain one",)]  # the headings keep their titles


def test_asciidoc_two_line_section_titles_are_sections_as_asciidoctor_reads_them() -> None:
    # Asciidoctor reads a two-line (underlined) title by default: a line with a letter or digit over a
    # line of one of = - ~ ^ + (levels 0-4) of its length within one. Before, the underline opened a
    # listing: the title and the section's text were code in the section before, cited with its anchor
    doc = textwrap.dedent("""\
        Guide
        =====

        Intro.

        == Configuration

        The widget level is set in the main file.

        Troubleshooting Tips
        --------------------

        If the zorbulator overheats, lower the dial.

        Deeper
        ~~~~~~

        Level three.

        Deepest
        ^^^^^^

        Level four, underline one shorter.

        Fifth
        ++++++

        Level five, underline one longer.

        Run this command:
        ----
        make install
        ----

        .A block title
        --------------
        titled code
        --------------

        [TIP]
        ====
        An example block under an attribute line.
        ====

        ----
        end
        ----
        """)
    page = parse_asciidoc(doc, path="guide.adoc")
    assert page.title == "Guide"
    assert [(s.anchor, s.headings, s.level) for s in page.sections] == [
        ("", (), 1), ("_configuration", ("Configuration",), 2),
        ("_troubleshooting_tips", ("Troubleshooting Tips",), 2),
        ("_deeper", ("Troubleshooting Tips", "Deeper"), 3),
        ("_deepest", ("Troubleshooting Tips", "Deeper", "Deepest"), 4),
        ("_fifth", ("Troubleshooting Tips", "Deeper", "Deepest", "Fifth"), 5)]
    texts = [s.text for s in page.sections]
    assert texts[:5] == ["Intro.", "The widget level is set in the main file.",
                         "If the zorbulator overheats, lower the dial.", "Level three.",
                         "Level four, underline one shorter."]
    # an underline whose length is not the line's within one, a `.title` line, a delimiter line and an
    # attribute line above a delimiter open blocks as before
    assert texts[5] == ("Level five, underline one longer.\n\nRun this command:\n\n```\nmake install\n```\n\n"
                        "A block title\n```\ntitled code\n```\n\n"
                        "TIP: An example block under an attribute line.\n\n```\nend\n```")
    # a level-0 two-line title after the document title makes a book with parts, its `=` underline is
    # no example block; a title's own anchor and an id above it work as for one-line titles
    book = parse_asciidoc("Book\n====\n\nPart One\n========\n\nChapter [[ch]]\n--------------\n\nText.\n\n"
                          "[#other]\nOther\n-----\n\nMore.\n", path="book.adoc")
    assert book.title == "Book"
    assert [(s.anchor, s.headings, s.level, s.text) for s in book.sections] == [
        ("_part_one", ("Part One",), 2, ""), ("ch", ("Part One", "Chapter"), 3, "Text."),
        ("other", ("Part One", "Other"), 3, "More.")]


def test_asciidoc_generated_ids_keep_combining_marks_as_asciidoctors_word_class() -> None:
    # Asciidoctor drops [^ \p{Word}\-.] (Ruby's \p{Word}: letters, combining marks, decimal digits,
    # connector punctuation); Python's \w has no marks, so the vowel signs and viramas of Hindi, Thai,
    # Tamil headings were dropped, and it has the other numbers (², ①) that Asciidoctor drops
    cases = {
        "हिन्दी दस्तावेज़": "_हिन्दी_दस्तावेज़",
        "การติดตั้ง": "_การติดตั้ง",
        "நிறுவல்": "_நிறுவல்",
        "Cafe\u0301 menu": "_cafe\u0301_menu",
        "Area in m² ①": "_area_in_m",
    }
    doc = "= Doc\n\n" + "".join(f"== {title}\n\ntext {i}\n\n" for i, title in enumerate(cases))
    page = parse_asciidoc(doc, path="doc.adoc")
    assert [s.anchor for s in page.sections if s.headings] == list(cases.values())
    # an explicit id with a combining mark is an anchor (BlockAnchorRx: [\p{Alpha}_:][\p{Word}\-:.]*):
    # before, `[[हिन्दी]]` and the title below it read as a paragraph of the section before
    page = parse_asciidoc("= Doc\n\n== Before\n\nb\n\n[[हिन्दी]]\n== Title\n\nx\n", path="doc.adoc")
    assert [(s.anchor, s.headings, s.text) for s in page.sections if s.headings] == [
        ("_before", ("Before",), "b"), ("हिन्दी", ("Title",), "x")]
    page = parse_asciidoc("= Doc\n\nSee [[_नोट]]here.\n\n== नोट\n\nx\n", path="doc.adoc")
    assert page.sections[0].text == "See here."  # an inline anchor with a mark: no text, and its id taken
    assert page.sections[-1].anchor == "_नोट_2"


def test_asciidoc_includes_conditionals_and_unresolved(tmp_path: Path) -> None:
    repo = {
        "docs/antora.yml": "name: acme\nversion: '2.0'\nasciidoc:\n  attributes:\n    release: '2.0.1@'\n",
        "docs/modules/ROOT/pages/install.adoc": textwrap.dedent("""\
            = Install
            :shared: yes

            Version {release} of {page-component-name}.

            include::partial$success.adoc[]

            include::example$app.rb[tag=main]

            include::example$app.rb[tags=setup;main]

            include::other:partial$note.adoc[leveloffset=+1]

            include::missing.adoc[]

            include::https://example.org/remote.adoc[]

            include::../../../../../outside.adoc[]

            \\include::literal.adoc[]

            ifdef::env-github[]
            Shown on GitHub.
            endif::[]
            ifndef::env-site[]
            Not on the site.
            endif::[]
            """),
        "docs/modules/ROOT/partials/success.adoc": "It worked: `asciidoctor --version`.\n",
        "docs/modules/ROOT/examples/app.rb": "# tag::main[]\nputs 'main'\n# end::main[]\nputs 'other'\n",
        "docs/modules/other/partials/note.adoc": "= Shared note\n\nA note from another module.\n",
    }

    def read(path: str) -> str | None:
        return repo.get(path)

    body, res = prepare_asciidoc(repo["docs/modules/ROOT/pages/install.adoc"], path="docs/modules/ROOT/pages/install.adoc",
                                 read=read)
    assert res.deps == {"docs/antora.yml": True, "docs/modules/ROOT/partials/success.adoc": True,
                        "docs/modules/ROOT/examples/app.rb": True, "docs/modules/other/partials/note.adoc": True,
                        "docs/modules/ROOT/pages/missing.adoc": False}
    # a tag the file does not have: Asciidoctor warns; it was dropped without a word
    assert res.unresolved == ["example$app.rb (tag 'setup' not found in it)", "missing.adoc",
                              "https://example.org/remote.adoc", "../../../../../outside.adoc"]
    page = parse_asciidoc(body, path="docs/modules/ROOT/pages/install.adoc")
    assert page.title == "Install"
    # the parser sees the directives left in the text; the missing tag's include was resolved
    assert page.metadata["unresolved_includes"] == res.unresolved[1:]
    assert page.metadata["conditions"] == ["ifdef::env-github", "ifndef::env-site"]
    assert "release" not in page.metadata  # the component's attributes are not page metadata
    intro = "\n\n".join(s.text for s in page.sections)
    assert "Version 2.0.1 of acme." in intro
    assert "It worked: `asciidoctor --version`." in intro
    assert "puts 'main'" in intro and "puts 'other'" not in intro and "tag::" not in intro
    assert "include::literal.adoc[]" in intro  # an escaped directive is text
    assert "Shown on GitHub." in intro and "Not on the site." in intro
    assert "missing.adoc" not in intro and "remote.adoc" not in intro
    # the included document title, one level down, became a section
    assert by_headings(page)[("Shared note",)].text.startswith("A note from another module.")
    # through parse_document, includes are resolved from the file system with root=
    for rel, text in repo.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    direct = parse_document(repo["docs/modules/ROOT/pages/install.adoc"], fmt="asciidoc",
                            path="docs/modules/ROOT/pages/install.adoc", root=tmp_path)
    assert "It worked" in direct.sections[0].text
    assert "missing.adoc" in direct.metadata["unresolved_includes"]


def test_asciidoc_attribute_and_include_bombs_stay_bounded(tmp_path: Path) -> None:
    """Hostile AsciiDoc: forty attributes that each double the one before ("billion laughs") once
    made one page need terabytes (an ingest was OOM-killed at 23 GB); a page that includes a
    partial 500 times, which includes another 500 times, would be 250,000 copies. Expansion now has
    a budget per document: past it, references stay as written and includes stay unresolved with
    the reason, and the page's ordinary attributes and includes still work."""
    from docs_rag_pipeline.parsing.asciidoc import MAX_ATTRIBUTE_EXPANSION, MAX_INCLUDED_CHARS

    laughs = "".join(f":a{i}: {{a{i - 1 if i else ''}}}{{a{i - 1 if i else ''}}}\n" for i in range(40))
    text = f"= Laughs\n:product: Widgets\n:a: xxxxxxxxxx\n{laughs}\n== Use\n\n{{product}} expand {{a39}}.\n"
    page = parse_asciidoc(text, path="laughs.adoc")
    body = " ".join(sec.text for sec in page.sections)
    assert len(body) < 2 * MAX_ATTRIBUTE_EXPANSION and "Widgets expand" in body
    ten = parse_asciidoc(f"= T\n:a: xxxxxxxxxx\n{laughs[:laughs.index(':a10:')]}\n{{a9}}\n", path="ten.adoc")
    assert "x" * 5120 in ten.sections[0].text  # within the budget, attributes expand as before

    files = {"inner.adoc": "A line of the inner partial that is about one hundred characters long, give or take.\n",
             "outer.adoc": "include::inner.adoc[]\n" * 500,
             "page.adoc": "= Page\n\ninclude::small.adoc[]\n\n" + "include::outer.adoc[]\n" * 500,
             "small.adoc": "The small partial is included whole.\n"}
    body, res = prepare_asciidoc(files["page.adoc"], path="page.adoc", read=files.get)
    assert MAX_INCLUDED_CHARS // 2 < len(body) <= MAX_INCLUDED_CHARS
    assert "The small partial is included whole." in body
    assert res.unresolved and res.unresolved[0].startswith("inner.adoc (not included: the page with its includes "
                                                           "would be over 5,000,000 characters)")


def test_asciidoc_inline_edge_cases() -> None:
    assert inline_text("Use `+*.adoc+` and `**/*.md`", {}) == "Use *.adoc and **/*.md"
    assert inline_text("a [.path]_my-doc.adoc_ file", {}) == "a my-doc.adoc file"
    assert inline_text("{missing}/x[Linked text^] and {missing}", {}) == "Linked text and {missing}"
    assert inline_text("https://example.org[] and mailto:a@b.org[mail]", {}) == "https://example.org and mail"
    assert inline_text(r"escaped \*not bold* and 2 * 3 * 4", {}) == "escaped *not bold* and 2 * 3 * 4"
    assert inline_text("users`' needs", {}) == "users' needs"


# --------------------------------------------------------------------------------------------
# reStructuredText
# --------------------------------------------------------------------------------------------

RST = """\
:author: Jane Doe

.. _install-guide:

Installing Widgets
==================

Widgets install with **pip**. See :ref:`the configuration <config-label>`, :doc:`/usage`
and :py:func:`widgets.run` or :func:`~widgets.core.start`.

.. code-block:: python
   :linenos:
   :caption: example.py

   import widgets
   widgets.run()

.. note::

   Python 3.11 or newer is required.

.. versionadded:: 2.0
   The ``--fast`` flag.

.. toctree::
   :maxdepth: 2

   usage

.. _config-label:

Configuration Options
---------------------

* ``fast``: go fast
* ``slow``: go slow

  1. nested one

.. list-table:: Options
   :header-rows: 1

   * - Name
     - Meaning
   * - fast
     - Go fast

Deep Details
~~~~~~~~~~~~

.. tabs::

   .. tab:: Linux

      Run ``make``.

.. literalinclude:: ../examples/x.py

.. warning:: Do not run as root.

term
   Its definition.

Configuration Options
---------------------

Second section with the same title.
"""


def test_rst_a_literalinclude_picks_a_python_object_and_cuts_in_sphinxs_order() -> None:
    """``:pyobject:`` was never read, so a literalinclude naming one class or method stayed unresolved and the
    page lost its example; and the cutting options ran ``:lines:`` before ``:start-at:``, where Sphinx runs
    it on what the start and end options leave. Each case below was checked against sphinx-build 9.0's text
    output of the same file: the object from its first decorator to its last line, then start/end, then
    lines, dedent, prepend/append; an object or a text that is not there shows nothing and says why."""
    from docs_rag_pipeline.parsing.rst import resolve_rst_includes

    module = textwrap.dedent('''\
        import functools


        def helper(x):
            return x + 1


        class Walrus:
            """A walrus."""

            @functools.cache
            def swim(self, depth):
                # dive
                return depth * 2

            def eat(self):
                return "fish"


        def main():
            w = Walrus()
            print(w.swim(3))
    ''')

    def included(options: str) -> str:
        page = ".. literalinclude:: mod.py\n" + "".join(f"   {x}\n" for x in options.strip().splitlines())
        got = resolve_rst_includes(page, path="index.rst", read={"mod.py": module}.get)
        return "\n".join(x[3:] for x in got.text.splitlines() if x.startswith("   ")) if not got.unresolved \
            else "unresolved: " + got.unresolved[0]

    assert included(":pyobject: Walrus.swim") == (
        "    @functools.cache\n    def swim(self, depth):\n        # dive\n        return depth * 2")
    assert included(":pyobject: Walrus\n:start-after: def eat\n:dedent:") == 'return "fish"'
    assert included(":start-at: def main\n:lines: 2-") == "    w = Walrus()\n    print(w.swim(3))"
    assert included(":pyobject: helper\n:prepend: # from mod.py\n:append: # end") == (
        "# from mod.py\ndef helper(x):\n    return x + 1\n# end")
    assert included(":pyobject: Walrus.fly") == "unresolved: mod.py (:pyobject: Walrus.fly is not defined in the file)"
    assert included(":pyobject: helper\n:end-before: def helper") == (
        "unresolved: mod.py (:end-before: def helper is not in the file)")  # its first line is passed over
    assert included(":start-after: no such text") == "unresolved: mod.py (:start-after: no such text is not in the file)"
    page = parse_rst("T\n=\n\n" + resolve_rst_includes(
        ".. literalinclude:: mod.py\n   :pyobject: Walrus.eat\n", path="i.rst", read={"mod.py": module}.get).text,
        path="i.rst")
    # a code block of the page (its common indentation off, as for every code block)
    assert '```python\ndef eat(self):\n    return "fish"\n```' in page.sections[0].text, page.sections[0].text


def test_rst_sections_and_anchors_as_sphinx() -> None:
    page = parse_rst(RST, path="docs/install.rst")
    assert page.title == "Installing Widgets"
    assert page.metadata["author"] == "Jane Doe"
    assert page.metadata["unresolved_includes"] == ["../examples/x.py"]
    assert [(s.headings, s.anchor, s.level) for s in page.sections] == [
        ((), "", 1),
        (("Configuration Options",), "configuration-options", 2),
        (("Configuration Options", "Deep Details"), "deep-details", 3),
        (("Configuration Options",), "id1", 2),  # Sphinx's id for a repeated title (sphinx-build 8.2)
    ]
    s = page.sections
    assert s[0].text.startswith("Widgets install with pip. See the configuration, /usage and `widgets.run()` or `start()`.")
    assert "example.py\n\n```python\nimport widgets\nwidgets.run()\n```" in s[0].text
    assert "Note: Python 3.11 or newer is required." in s[0].text
    assert "New in version 2.0: The `--fast` flag." in s[0].text
    assert "usage" not in s[0].text.split("flag.")[1]  # the toctree is dropped
    assert "- `fast`: go fast\n- `slow`: go slow\n  1. nested one" in s[1].text
    assert "Options\n\nName | Meaning\nfast | Go fast" in s[1].text  # a table's title: a block of its own
    assert "Linux\n\nRun `make`." in s[2].text
    assert "Warning: Do not run as root." in s[2].text
    assert "term: Its definition." in s[2].text
    for sec in page.sections:
        for line in prose(sec.text):
            assert not re.search(r"^\.\. |:\w+:`|``|\*\*", line), line


def test_rst_ids_docutils_cannot_derive_are_sphinxs_idN() -> None:
    """A title with no ASCII letter (Chinese, Russian) gives docutils no id to derive: it numbered them
    ``section-1``, ``section-2`` (its own default), but Sphinx sets ``auto_id_prefix`` to ``id`` and
    publishes ``id1``, ``id2`` …, counted with the page's other automatic ids (a footnote reference here),
    so each citation named no element of the page. The ids are those ``sphinx-build -b html`` writes."""
    text = ("Title\n=====\n\nIntro [#f]_ text.\n\nExample\n-------\n\na\n\nOther\n-----\n\n"
            "Example\n-------\n\nb\n\n配置\n----\n\nc\n\nНастройка прокси\n----------------\n\nd\n\n"
            ".. [#f] foot\n")
    page = parse_rst(text, path="docs/index.rst")
    assert [(s.headings, s.anchor) for s in page.sections] == [
        ((), ""), (("Example",), "example"), (("Other",), "other"), (("Example",), "id2"),
        (("配置",), "id3"), (("Настройка прокси",), "id4"),
    ]
    page = parse_rst("安装指南\n========\n\n配置代理服务器\n--------------\n\n要配置。\n", path="docs/install.rst")
    assert [s.anchor for s in page.sections] == ["id2"]  # the title's section is id1


def test_rst_a_label_that_took_its_titles_slug_is_the_sections_anchor() -> None:
    """A label above a section that spells its title's slug (``.. _partial-objects:`` over ``partial
    Objects``) takes that id first, so docutils gives the title an automatic ``id9``; Sphinx's SortIds moves
    an ``id…`` first id last and writes the label as the section's id, and the built page has no ``#id9``.
    Before, the anchor was ``id9``: 74 of CPython's 4074 sections cited an id its page lacks."""
    text = textwrap.dedent("""\
        Title
        =====

        .. _partial-objects:

        :class:`partial` Objects
        ------------------------

        a

        .. _search-vs-match:

        search() vs. match()
        --------------------

        b

        .. _tut-informal:

        An Informal Introduction
        ------------------------

        c
        """)
    page = parse_rst(text, path="library/functools.rst")
    assert [s.anchor for s in page.sections if s.headings] == [
        "partial-objects", "search-vs-match", "an-informal-introduction"]


def test_rst_doctest_directives_show_what_sphinx_shows() -> None:
    """sphinx.ext.doctest's directives were read as unknown ones, their content as reST: the set-up code
    of ``testsetup`` (which the page never shows) was indexed as a paragraph, so was a test with
    ``:hide:`` (the itertools recipes' hidden checks), a ``testcode`` block lost its lines, and the doctest
    flags Sphinx trims (``# doctest: +SKIP``, ``<BLANKLINE>``) stayed in the code. Each is now shown as
    Sphinx shows it: code in a block, the group name not shown, hidden ones not at all."""
    text = textwrap.dedent("""\
        Title
        =====

        .. testsetup:: group1

           import secret_setup

        .. doctest:: group1
           :hide:

           >>> hidden_check()
           True

        .. testcode::

           for x in shown_code:
               print(x)

        .. testoutput::
           :options: +NORMALIZE_WHITESPACE

           1 2

        .. doctest::

           >>> print("a\\n\\nb")  # doctest: +NORMALIZE_WHITESPACE
           a
           <BLANKLINE>
           b

        >>> f()  # doctest: +SKIP
        1

        .. testcleanup::

           cleanup_secret()
        """)
    body = parse_rst(text, path="library/x.rst").sections[0].text
    assert "secret" not in body and "hidden_check" not in body and "group1" not in body
    assert "```python\nfor x in shown_code:\n    print(x)\n```" in body
    assert "```\n1 2\n```" in body
    assert '```pycon\n>>> print("a\\n\\nb")\na\n\nb\n```' in body
    assert "```pycon\n>>> f()\n1\n```" in body
    assert "doctest:" not in body and "BLANKLINE" not in body


def test_rst_unknown_directives_and_roles_do_not_crash() -> None:
    text = ".. mystery:: arg\n   :weird: 1\n\n   Kept text.\n\nA :made-up:`role text` here.\n\n.. raw:: html\n\n   <b>x</b>\n"
    page = parse_document(text, fmt="rst", path="x.rst")
    assert page.title == "X"
    body = page.sections[0].text
    assert "arg" in body and "Kept text." in body and "A role text here." in body
    assert "<b>" not in body


def test_rst_seealso_reads_as_an_admonition_and_version_labels_open_their_text() -> None:
    """``.. seealso::`` was handled as a version directive: its argument's first word was taken for a
    version (``.. seealso:: Other page.`` read "See also Other: page."), and a seealso or todo with a
    body only failed the whole page (ValueError). It is an admonition titled "See also", read as a note
    is ("See also: Other page."; before a list its label is a line of its own). A version directive's
    label opens its text as Sphinx writes it, also when the text is a paragraph after a blank line,
    and one without text is a sentence ("Deprecated since version 3.1."), not a lead-in line ending in
    ":" before the next paragraph."""
    text = textwrap.dedent("""\
        Title
        =====

        .. seealso:: Other page.

        .. seealso::

           :doc:`Other <other>` page.

           And more.

        .. seealso::

           - :doc:`a`
           - :doc:`b`

        .. note:: Be careful.

        .. todo::

           Write it.

        .. versionadded:: 2.1
           The *foo* parameter.

        .. versionchanged:: 3.0

           Now returns a list.

        .. deprecated:: 3.1

        Next paragraph.
        """)
    assert parse_rst(text, path="x.rst").sections[0].text == (
        "See also: Other page.\n\nSee also: Other page.\n\nAnd more.\n\nSee also:\n- a\n- b"
        "\n\nNote: Be careful.\n\nTodo: Write it.\n\nNew in version 2.1: The foo parameter."
        "\n\nChanged in version 3.0: Now returns a list.\n\nDeprecated since version 3.1.\n\nNext paragraph.")


@pytest.mark.parametrize("name", ["seealso", "todo", "versionadded", "versionchanged", "deprecated",
                                  "versionremoved", "impl-detail", "only", "availability", "class", "mystery"])
def test_rst_a_directive_without_argument_never_loses_the_page(name: str) -> None:
    """``.. seealso::`` and ``.. todo::`` are usually written without an argument; the generic
    handler split that missing argument into a version and the rest, raised ValueError, and the
    page was skipped whole at ingest (165 of CPython's 497 reST sources). No directive the generic
    handler reads (labelled, unknown, Sphinx's ``class``) raises without one."""
    text = f"Title\n=====\n\nBody text.\n\n.. {name}::\n\n   Operating system interfaces.\n\nAfter.\n"
    body = parse_rst(text, path="library/pwd.rst").sections[0].text
    assert re.search(r"Body text\.\n\n(.*\n\n|[A-Z][\w ]*: )?Operating system interfaces\.\n\nAfter\.$", body), body


def test_rst_a_one_line_seealso_keeps_its_words_in_order() -> None:
    """Only the version directives start with a version: ``.. seealso:: The os module`` read as
    version ``The`` and text ``os module`` (``See also The: os module``)."""
    body = parse_rst("T\n=\n\n.. seealso:: The :mod:`os` module\n\n.. versionadded:: 3.2 The flag.\n",
                     path="a.rst").sections[0].text
    assert re.search(r"\bThe `os` module\b", body) and "New in version 3.2: The flag." in body, body


def test_rst_only_content_an_html_build_leaves_out_and_raw_html_are_read_as_the_site_shows_them() -> None:
    """``.. only:: latex`` text, which the HTML site never shows, was indexed and could be cited for the
    page; ``.. raw:: html``, which the site shows, was dropped with the other raw formats. Now ``only`` is
    evaluated with the tags of an HTML build, an unknown tag (one a project sets with ``-t``) keeping the
    content; raw HTML is read as an HTML page is, without its scripts; raw LaTeX shows nothing."""
    from docs_rag_pipeline.parsing import parse_document

    doc = textwrap.dedent("""\
        Title
        =====

        .. only:: html

           Shown on the web site.

        .. only:: latex

           Printed in the PDF only.

        .. only:: not latex and (html or draft)

           Shown unless printed.

        .. only:: draft

           A tag the project may set.

        .. only:: latex or man or format_epub

           Never on the web.

        .. only:: html and

           An expression Sphinx cannot read either.

        .. raw:: html

           <div class="note"><h3>Quota</h3><p>Each <b>walrus</b> tier holds 30 GB.</p>
           <script>alert("x")</script>
           <table><tr><th>Tier</th><th>GB</th></tr><tr><td>walrus</td><td>30</td></tr></table></div>

        .. raw:: latex

           \\newpage

        - An item

          .. raw:: html

             <p>Raw text in a list.</p>
        """)
    text = "\n\n".join(s.text for s in parse_document(doc, fmt="rst", path="quota.rst").sections)
    assert text == ("Shown on the web site.\n\nShown unless printed.\n\nA tag the project may set.\n\n"
                    "An expression Sphinx cannot read either.\n\nQuota\n\nEach walrus tier holds 30 GB.\n\n"
                    "Tier | GB\nwalrus | 30\n\n- An item\n  Raw text in a list."), text


def test_rst_a_directive_the_generic_handler_fails_on_keeps_its_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """docutils turns only a DirectiveError into a message; any other exception of a directive's
    handler left ``publish_doctree`` and lost the whole page. Should the generic handler fail on a
    directive (here its version label raises, as the version split did on ``.. seealso::``), the
    directive's argument and content are kept as text and the rest of the page parses."""
    from docs_rag_pipeline.parsing import rst

    def broken(box: object, label: str) -> None:
        raise ValueError("not enough values to unpack")

    monkeypatch.setattr(rst, "_label_version", broken)
    text = ("Title\n=====\n\nBody text.\n\n.. deprecated:: 3.1 Module :mod:`os`\n\n   Operating *system* interfaces.\n\n"
            "Next\n----\n\nAfter.\n")
    page = parse_rst(text, path="library/pwd.rst")
    assert [(s.headings, s.text) for s in page.sections] == [
        ((), "Body text.\n\n3.1 Module :mod:`os`\n\nOperating system interfaces."), (("Next",), "After.")]


def test_rst_a_build_condition_is_no_text_and_its_content_is_kept() -> None:
    """``.. only:: html`` and ``.. ifconfig:: releaselevel == 'final'`` name a build condition,
    which Sphinx never shows: it read as a paragraph (``html``). Their content is kept, unless an HTML
    build of the site leaves it out (``latex and not html``: the page a citation links to never shows it;
    see ``test_rst_only_content_an_html_build_leaves_out_and_raw_html_are_read_as_the_site_shows_them``)."""
    text = ("Title\n=====\n\n.. only:: html\n\n   Click the prompt to hide it.\n\n"
            ".. only:: latex and not html\n\n   See the printed index.\n\n"
            ".. ifconfig:: releaselevel in ('alpha', 'beta')\n\n   This is a preview.\n")
    assert parse_rst(text, path="tutorial/introduction.rst").sections[0].text == (
        "Click the prompt to hide it.\n\nThis is a preview.")


def test_rst_an_object_description_shows_one_signature_a_line() -> None:
    """A Python-domain (or ``option``, ``envvar``, …) directive lists one signature a line, and
    Sphinx shows each on its own line (a backslash at a line's end continues one). They read as one
    paragraph, ``open(file, mode='r') open(fd)``; a wrapped title of another directive stays one."""
    text = textwrap.dedent("""\
        Title
        =====

        .. function:: open(file, mode='r')
                      open(fd)

           Open it.

        .. py:method:: Session.get(url, \\
                                   timeout=None)
                       Session.get(request)

        .. tab:: A long
           title

           Tab body.
        """)
    assert parse_rst(text, path="library/io.rst").sections[0].text == (
        "open(file, mode='r')\nopen(fd)\n\nOpen it.\n\nSession.get(url, timeout=None)\nSession.get(request)\n\n"
        "A long title\n\nTab body.")


def test_rst_a_python_object_signature_reads_as_sphinx_shows_it() -> None:
    """A Python object's signature read as written, ``ArgumentParser(prog=None)``, where Sphinx shows
    ``class argparse.ArgumentParser(prog=None)``: the kind's word (``class``, ``exception``, ``coroutine``,
    ``static`` …) and the module the page documents were missing, so a search for ``argparse.ArgumentParser``
    or ``asyncio.sleep`` did not find the object's own definition (CPython's pages missed 1,298 "class" and
    377 "exception"). Members in a class's body show their bare name, an object with a prefix of its own
    shows the prefix instead of the module, and a function written without arguments shows ``()``."""
    text = textwrap.dedent("""\
        Title
        =====

        .. module:: argparse

        .. class:: ArgumentParser(prog=None)

           Create a parser.

           .. method:: parse_args(args=None)

           .. method:: ArgumentParser.format_help() -> str
              :classmethod:

           .. attribute:: prog
              :type: str
              :value: 'x'

        .. function:: main
           :async:

        .. exception:: ArgumentError

        .. py:currentmodule:: asyncio

        .. coroutinefunction:: sleep(delay, result=None)

        .. method:: Task.cancel(msg=None)

        .. decorator:: coroutine

        .. data:: os.sep

        .. function:: open(file, end='\\n')
                      open(fd)
        """)
    body = parse_rst(text, path="library/argparse.rst").sections[0].text
    assert body == (
        "class argparse.ArgumentParser(prog=None)\n\nCreate a parser.\n\nparse_args(args=None)\n\n"
        "classmethod format_help() → str\n\nprog: str = 'x'\n\nasync argparse.main()\n\n"
        "exception argparse.ArgumentError\n\ncoroutine asyncio.sleep(delay, result=None)\n\n"
        "Task.cancel(msg=None)\n\n@asyncio.coroutine\n\nos.sep\n\n"
        "asyncio.open(file, end='\\n')\nasyncio.open(fd)")
    # each object's signature line is a target with the id Sphinx gives it (what Sphinx 9.0.4 writes for
    # this text, CPython's coroutinefunction aside): a chunk starting in its description links it; a second
    # signature of one object gets no id of its own from Sphinx
    section = parse_rst(text, path="library/argparse.rst").sections[0]
    assert [(a, section.text[o:].split("\n", 1)[0]) for o, a in section.targets] == [
        ("argparse.ArgumentParser", "class argparse.ArgumentParser(prog=None)"),
        ("argparse.ArgumentParser.parse_args", "parse_args(args=None)"),
        ("argparse.ArgumentParser.format_help", "classmethod format_help() → str"),
        ("argparse.ArgumentParser.prog", "prog: str = 'x'"), ("argparse.main", "async argparse.main()"),
        ("argparse.ArgumentError", "exception argparse.ArgumentError"),
        ("asyncio.sleep", "coroutine asyncio.sleep(delay, result=None)"), ("asyncio.Task.cancel", "Task.cancel(msg=None)"),
        ("asyncio.coroutine", "@asyncio.coroutine"), ("asyncio.os.sep", "os.sep"),
        ("asyncio.open", "asyncio.open(file, end='\\n')")]



def test_rst_an_object_sphinx_writes_no_id_for_is_no_target() -> None:
    """Sphinx writes no id for an object description marked ``:no-index:`` (``:noindex:`` before 7.2), gives
    an object documented a second time a serial ``id0`` and makes the id of a full name with its ``make_id``
    (no leading ``_``, accents folded). Each was a target with the full name as written, so a chunk in such
    an entry was cited at an anchor the page lacks, or at the other entry of the name (ops6 F2). Now such a
    signature is no target (a chunk starting in it links the target before it, or the heading), and an id is
    the one Sphinx writes."""
    words = " ".join(f"word{i}" for i in range(40)) + "."
    text = (f"Spam\n====\n\n.. module:: mod\n\nIntro.\n\n.. function:: spam(x)\n\n   {words}\n\n"
            f".. function:: foo(x)\n   :no-index:\n\n   {words}\n\n.. function:: bar(x)\n   :noindex:\n\n   {words}\n\n"
            f".. function:: spam(x, y)\n\n   Again.\n\n.. function:: café()\n\n   Accents.\n\n"
            f".. currentmodule:: None\n\n.. function:: _private()\n\n   Private.\n")
    page = parse_rst(text, path="library/mod.rst")
    (section,) = page.sections
    assert [(a, section.text[o:].split("\n", 1)[0]) for o, a in section.targets] == [
        ("mod.spam", "mod.spam(x)"), ("mod.cafe", "mod.café()"), ("private", "_private()")]
    chunks = chunk_page(page, source="s", page_url="https://docs.example.org/library/mod.html", content_hash="h",
                        updated_at="now", budget=Budget(window=60, overlap=0), count=lambda t: len(t.split()))
    assert {c.url.split("#", 1)[-1] for c in chunks} <= {"https://docs.example.org/library/mod.html", "mod.spam",
                                                          "mod.cafe", "private"}

def test_rst_info_fields_of_an_object_read_as_sphinx_groups_them() -> None:
    """The info fields of a function's or class's body (``:param int x:``, ``:type x:``, ``:returns:``,
    ``:rtype:``, ``:raises E:``) read as written, ``param float timeout: How many seconds.``, where Sphinx
    shows the groups ``Parameters:`` (``timeout (float) – How many seconds.``, a list for several),
    ``Returns:``, ``Return type:``, ``Raises:`` (CPython's sqlite3, turtle, logging pages). A field list
    outside an object description stays as written, as Sphinx leaves it."""
    text = textwrap.dedent("""\
        Title
        =====

        .. function:: connect(database, timeout=5.0)

           Open it.

           :param database:
               The path to the database file.
               Pass ``:memory:``.
           :type database: :term:`path-like object`
           :param float timeout: How many seconds.
           :returns: A connection.
           :rtype: Connection
           :raises ValueError: When bad.
           :example: see below

        .. method:: close()

           :param bool force: Close now.

        :param url: the URL.
        """)
    body = parse_rst(text, path="library/sqlite3.rst").sections[0].text
    assert body == (
        "connect(database, timeout=5.0)\n\nOpen it.\n\nParameters:\n"
        "  - database (path-like object) – The path to the database file. Pass `:memory:`.\n"
        "  - timeout (float) – How many seconds.\nReturns: A connection.\nReturn type: Connection\n"
        "Raises: ValueError – When bad.\nExample: see below\n\nclose()\n\n"
        "Parameters: force (bool) – Close now.\n\nparam url: the URL.")


def test_rst_a_function_reference_shows_the_parentheses_sphinx_adds() -> None:
    """Sphinx shows a ``:func:`` or ``:meth:`` reference without a title of its own with ``()``
    (``add_function_parentheses``): ``When to use :meth:`__new__` vs. :meth:`__init__``` is the heading
    "When to use __new__() vs. __init__()" on the page, which the citation named without them. A titled
    reference and other roles show their text as written, and written ``()`` are not doubled. The dot that
    opens a Python reference (``:class:`.datetime```, look the name up in the page's module first) is not
    shown, as the ``!`` of one that links nowhere is not; the heading read ".datetime Objects"."""
    text = textwrap.dedent("""\
        Title
        =====

        When to use :meth:`__new__` vs. :meth:`__init__`
        ------------------------------------------------

        Use :func:`open`, :py:meth:`~io.IOBase.close`, :func:`len()`, :c:func:`PyObject_Call`,
        :func:`the builtin <len>`, :class:`dict` and :c:macro:`Py_INCREF`.

        :class:`.datetime` Objects
        --------------------------

        Use :meth:`.datetime.now` or :class:`!Unknown`.
        """)
    sections = parse_rst(text, path="howto/enum.rst").sections
    assert [s.headings[-1] for s in sections] == ["When to use __new__() vs. __init__()", "datetime Objects"]
    assert sections[-1].text == "Use `datetime.now()` or `Unknown`."
    section = sections[0]
    assert section.anchor == "when-to-use-new-vs-init"
    assert section.text == ("Use `open()`, `close()`, `len()`, `PyObject_Call()`, `the builtin`, `dict` and "
                            "`Py_INCREF`.")


def test_rst_sphinx_text_roles_show_what_the_page_shows() -> None:
    """Some Sphinx roles show their text otherwise than written, and were read as written:
    ``:abbr:`LIFO (last-in, first-out)``` is "LIFO" on the page (the explanation is a tooltip),
    ``:menuselection:`Start --> Programs``` "Start ‣ Programs", ``:guilabel:`&Cancel``` "Cancel" (``&``
    marks the accelerator key), and ``:samp:`print({x})``` / ``:file:`{prefix}/lib``` show the variable part
    without its braces."""
    text = textwrap.dedent("""\
        Title
        =====

        Use :abbr:`LIFO (last-in, first-out)`, :menuselection:`Start --> &Programs`, :guilabel:`&Cancel`,
        :guilabel:`Save && Quit`, :samp:`print({x}, y)` and :file:`{prefix}/lib`.
        """)
    body = parse_rst(text, path="howto/gui.rst").sections[0].text
    assert body == "Use LIFO, Start ‣ Programs, Cancel, Save & Quit, `print(x, y)` and `prefix/lib`."


def test_rst_a_ref_to_a_section_of_the_same_page_shows_its_title() -> None:
    """Sphinx shows a ``:ref:`label``` without a title of its own as the title of the section the label
    names; it read as the label, ``See json-commandline for the tool.``, a word the page never shows. A
    label on this page now shows its section's title; one of another page (not known here), one that names
    no section, or a section's own name (which ``:ref:`` does not resolve) shows as written."""
    text = textwrap.dedent("""\
        Title
        =====

        See :ref:`json-commandline` for the tool, :ref:`the options <json-options>`,
        :ref:`tut-informal`, :ref:`a-note` and :ref:`Other Part`.

        .. _json-commandline:

        Command Line Interface
        ----------------------

        .. _a-note:

        A paragraph.

        .. _json-options:

        Command Line Options (:func:`main`)
        -----------------------------------

        Other Part
        ----------
        """)
    body = parse_rst(text, path="library/json.rst").sections[0].text
    assert body == ("See Command Line Interface for the tool, the options, tut-informal, a-note and "
                    "Other Part.")
    text = text.replace(":ref:`the options <json-options>`", ":ref:`json-options`")
    body = parse_rst(text, path="library/json.rst").sections[0].text
    assert body.startswith("See Command Line Interface for the tool, Command Line Options (main()),")


def test_rst_quotes_and_dashes_are_typographic_as_sphinx_publishes_them() -> None:
    """Sphinx's smartquotes (on by default) publish ``"x"`` as “x”, ``it's`` as it’s, ``---`` as an em dash,
    ``--`` as an en dash and ``...`` as an ellipsis; they were left as typed, so the page title
    ``argparse --- Parser`` was not the page's ``argparse — Parser`` (most of the 309 CPython titles that
    differed from their pages). Code, literal blocks and object signatures keep what is typed, as on the
    page (``print(*objects, sep=' ', end='\\n')``, ``--verbose``); anchors are the ids of the typed title."""
    text = textwrap.dedent("""\
        argparse --- Parser for "options"
        =================================

        It's here... ``--raw "x"`` stays.

        Use --- or -- "Now".

        .. function:: print(*objects, sep=' ', end='\\n')

           It's printed.

        .. option:: --verbose, -v

           Say more.

        ::

           echo "it's" --- here
        """)
    page = parse_rst(text, path="library/argparse.rst")
    assert page.title == "argparse — Parser for “options”"
    assert page.sections[0].text == (
        "It’s here… `--raw \"x\"` stays.\n\nUse — or – “Now”.\n\n"
        "print(*objects, sep=' ', end='\\n')\n\nIt’s printed.\n\n--verbose, -v\n\nSay more.\n\n"
        "```\necho \"it's\" --- here\n```")
    page = parse_rst("Intro\n=====\n\nThe \"Big\" One\n---------------\n\nx\n", path="a.rst")
    assert [(s.headings, s.anchor) for s in page.sections] == [(("The “Big” One",), "the-big-one")]


def test_rst_a_literal_block_is_in_the_language_the_highlight_directive_sets() -> None:
    """``.. highlight:: c`` sets the language Sphinx highlights the literal blocks after it in (a ``::``
    block, a ``code-block`` without a language), until the next one; they were fenced without a language.
    A block that names its language keeps it, a parsed literal is never highlighted, and ``none`` is no
    language."""
    text = textwrap.dedent("""\
        Title
        =====

        Before::

           x = 1

        .. highlight:: c

        In C::

           int x;

        .. code-block::

           int y;

        .. code-block:: python

           z = 2

        .. parsed-literal::

           gcc *file*

        .. highlight:: none

        Plain::

           output
        """)
    assert parse_rst(text, path="extending/x.rst").sections[0].text == (
        "Before:\n\n```\nx = 1\n```\n\nIn C:\n\n```c\nint x;\n```\n\n```c\nint y;\n```\n\n"
        "```python\nz = 2\n```\n\n```\ngcc file\n```\n\nPlain:\n\n```\noutput\n```")


def test_rst_a_c_declaration_shows_the_keyword_sphinx_shows() -> None:
    """Sphinx's C domain shows a type, struct, union, enum or enumerator with its kind's keyword first
    (``type Py_UCS4``, ``struct PyCompilerFlags``, ``typedef int (*visitproc)(…)``); they read as the bare
    declaration. Functions, macros, members and variables are shown as written, and no reST markup is read
    in a declaration (``PyObject *o`` kept its star)."""
    text = textwrap.dedent("""\
        Title
        =====

        .. c:type:: Py_UCS4

        .. c:type:: int (*visitproc)(PyObject *object, void *arg)

        .. c:struct:: PyCompilerFlags

        .. c:function:: int PyUnicode_KIND(PyObject *o, int *p)

           Return the kind.
        """)
    assert parse_rst(text, path="c-api/unicode.rst").sections[0].text == (
        "type Py_UCS4\n\ntypedef int (*visitproc)(PyObject *object, void *arg)\n\nstruct PyCompilerFlags\n\n"
        "int PyUnicode_KIND(PyObject *o, int *p)\n\nReturn the kind.")


def test_rst_a_productionlist_reads_as_sphinx_shows_its_grammar() -> None:
    """A ``productionlist`` read as one paragraph that began with the grammar's group and ran all its
    productions together (``python-grammar if_stmt: "if" `assignment_expression` ":" …``); Sphinx shows one
    production a line, ``name ::= tokens``, a continuation under its production's tokens, the group and the
    token quotes not shown, in a block of its own whose quotes stay as typed."""
    text = textwrap.dedent("""\
        Title
        =====

        .. productionlist:: python-grammar
           if_stmt: "if" `assignment_expression` ":" `suite`
                  : ("elif" `assignment_expression` ":" `suite`)*
           suite: `~python-grammar:stmt_list` NEWLINE

        After.
        """)
    assert parse_rst(text, path="reference/compound_stmts.rst").sections[0].text == (
        '```\nif_stmt ::= "if" assignment_expression ":" suite\n'
        '            ("elif" assignment_expression ":" suite)*\n'
        "suite   ::= stmt_list NEWLINE\n```\n\nAfter.")


def test_rst_context_directives_show_nothing_also_with_their_domain_prefix() -> None:
    """``module``, ``currentmodule``, ``program`` and ``moduleauthor`` set context (or an author
    Sphinx shows only with ``show_authors``) and put nothing on the page; ``py:module`` and
    ``py:currentmodule`` are the same directives (the Python domain is Sphinx's default), and
    ``std:program`` is ``program``. Their argument read as a paragraph (``os``, ``python``,
    ``Fred L. Drake, Jr. <fdrake@acm.org>``)."""
    text = ("Title\n=====\n\n.. py:module:: os\n   :synopsis: OS routines\n\n"
            ".. moduleauthor:: Fred L. Drake, Jr. <fdrake@acm.org>\n\n.. py:currentmodule:: os.path\n\n"
            ".. program:: python\n\n.. std:program:: pip\n\n.. option:: -c <command>\n\n   Run the command.\n")
    assert parse_rst(text, path="library/os.rst").sections[0].text == "-c <command>\n\nRun the command."


def test_rst_a_plain_docutils_class_directive_adds_no_text() -> None:
    """``.. class::`` is read as Sphinx's Python class (signature, then body), but in plain reST it is
    docutils' own directive, an HTML class for what follows: lower-case class names and no content of
    its own (``.. class:: special``). Such a one adds no text, as before Sphinx's reading was added;
    one with a capital, a signature or a body is a Python class."""
    text = textwrap.dedent("""\
        Title
        =====

        .. class:: special

        This paragraph gets a class.

        .. class:: red borderless

        +---+---+
        | a | b |
        +---+---+

        .. class:: Session(url)

           A session.

        .. class:: Point
        """)
    assert parse_rst(text, path="x.rst").sections[0].text == (
        "This paragraph gets a class.\n\na | b\n\nclass Session(url)\n\nA session.\n\nclass Point")


def test_rst_class_directive_is_sphinxs_python_class_with_its_signature_and_body() -> None:
    """In a Sphinx project ``.. class:: Name(args)`` documents a Python class, as ``.. function::``
    documents a function: its signature line, then its body. Read as docutils' own ``class``
    directive (an HTML class for what follows), the signature never reached the text, and a
    signature docutils cannot make a class name of (``[*,``) dropped the class's whole body,
    methods included (CPython's ``library/contextvars.rst``). docutils' directive stays reachable
    as Sphinx spells it, ``rst-class``, and adds no text."""
    text = textwrap.dedent("""\
        Context Variables
        =================

        .. class:: Session(url, timeout=None)

           A session keeps cookies between requests.

        .. class:: ContextVar(name, [*, default])

           This class is used to declare a new Context Variable.

           .. method:: get([default])

              Return a value for the context variable.

        .. exception:: LookupFailed(msg)

           Raised when nothing is set.

        .. rst-class:: borderless

        +------+-------+
        | cell | other |
        +------+-------+
        """)
    body = parse_rst(text, path="library/contextvars.rst").sections[0].text
    assert body == (
        "class Session(url, timeout=None)\n\nA session keeps cookies between requests.\n\n"
        "class ContextVar(name, [*, default])\n\nThis class is used to declare a new Context Variable.\n\n"
        "get([default])\n\nReturn a value for the context variable.\n\n"
        "exception LookupFailed(msg)\n\nRaised when nothing is set.\n\n"
        "cell | other")


# --------------------------------------------------------------------------------------------
# MDX: nested components
# --------------------------------------------------------------------------------------------


def test_mdx_nested_components() -> None:
    text = textwrap.dedent("""\
        ---
        title: Install
        framework: flow
        ---
        import { Tabs, TabItem, Aside } from '@astrojs/starlight/components';

        # Install

        <Tabs>
          <TabItem label="npm">
            <Aside type="tip">
              Use **npm** 9.
            </Aside>

            ```sh
            npm install
            ```
          </TabItem>
          <TabItem label="pnpm">
            Run `pnpm add`.
          </TabItem>
        </Tabs>
        """)
    page = parse_document(text, fmt="mdx", path="install.mdx")
    assert page.title == "Install" and page.metadata["framework"] == "flow"
    assert page.sections[0].text == (
        "[Tabs]\n\n[TabItem npm]\n\n[Aside tip]\n\nUse npm 9.\n\n[/Aside]\n\n```sh\nnpm install\n```\n\n"
        "[/TabItem]\n\n[TabItem pnpm]\n\nRun `pnpm add`.\n\n[/TabItem]\n\n[/Tabs]")


# --------------------------------------------------------------------------------------------
# The real corpora, ingested whole as git sources
# --------------------------------------------------------------------------------------------

ASCIIDOCTOR_RULES = """
    url_rules:
      - {match: '^modules/ROOT/pages/(.*/)?index\\.adoc$', url: 'https://docs.asciidoctor.org/asciidoctor/latest/\\1'}
      - {match: '^modules/ROOT/pages/(.*)\\.adoc$', url: 'https://docs.asciidoctor.org/asciidoctor/latest/\\1/'}
      - {match: '^modules/([^/]+)/pages/(.*/)?index\\.adoc$', url: 'https://docs.asciidoctor.org/asciidoctor/latest/\\1/\\2'}
      - {match: '^modules/([^/]+)/pages/(.*)\\.adoc$', url: 'https://docs.asciidoctor.org/asciidoctor/latest/\\1/\\2/'}
"""


def git_snapshot(src: Path, dest: Path) -> Path:
    """A git repository in ``dest`` holding a copy of ``src`` (one commit)."""
    shutil.copytree(src, dest)
    env = ["-c", "user.name=Test", "-c", "user.email=test@example.org", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run(["git", *env, *args], cwd=dest, check=True, capture_output=True)
    return dest


def _corpora_config(root: Path, astro: Path, asciidoctor: Path) -> Path:
    return write_config(root, sources=f"""
      - name: astro
        kind: git
        repo: {astro}
        include: ["**/*.mdx"]
        url_template: "https://docs.astro.build/en/{{path}}/"
      - name: asciidoctor
        kind: git
        repo: {asciidoctor}
        include: ["modules/*/pages/**/*.adoc"]
        asciidoc_attributes: {{idprefix: "", idseparator: "-"}}  # as docs.asciidoctor.org's playbook sets them
        {textwrap.indent(textwrap.dedent(ASCIIDOCTOR_RULES).strip(), '        ').strip()}
    """)


def _need_corpora() -> None:
    if not ASTRO.is_dir() or not ASCIIDOCTOR.is_dir():
        pytest.skip(f"the docs corpora are not available at {CORPORA} (see shared/corpora/README.md)")


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Both corpora whole, each a git repository in a temp dir, through the pipeline's scan, parse
    and chunk stages (``refresh.scan_pages`` + ``refresh.build_chunks``). Embedding all ~6,400
    chunks with the CPU model takes 5-10 minutes here, so the embedding ingest through Dagster
    runs on a subset (``test_corpora_subset_ingest_through_dagster``)."""
    from docs_rag_pipeline import refresh
    from docs_rag_pipeline.context import get_context

    _need_corpora()
    root = tmp_path_factory.mktemp("corpora")
    cfg = _corpora_config(root, git_snapshot(ASTRO, root / "astro"), git_snapshot(ASCIIDOCTOR, root / "asciidoctor"))
    ctx = get_context(cfg)
    out: dict[str, dict] = {}
    for name in ("astro", "asciidoctor"):
        notes: dict = {}
        log: list[str] = []
        pages = refresh.scan_pages(ctx, name, notes=notes, log=log.append)
        chunks = refresh.build_chunks(ctx, name, pages)
        by_url: dict[str, dict] = {}
        for p in pages:
            by_url[p["page_url"]] = {"title": p["title"], "path": p["path"], "status": p["status"], "chunks": [],
                                     "sections": json.loads(p["sections"] or "[]")}
        for c in chunks:
            c["metadata"] = json.loads(c["metadata"])
            by_url[c["page_url"]]["chunks"].append(c)
        out[name] = {"pages": by_url, "notes": notes, "log": log}
    return out


def test_corpora_parse_whole_every_page_titled(corpora: dict[str, dict]) -> None:
    astro_files = len(list(ASTRO.rglob("*.mdx")))
    adoc_files = len(list(ASCIIDOCTOR.glob("modules/*/pages/**/*.adoc")))
    for name, files in (("astro", astro_files), ("asciidoctor", adoc_files)):
        pages = corpora[name]["pages"]
        assert len(pages) == files, name
        assert {p["status"] for p in pages.values()} == {"new"}, [(u, p["status"]) for u, p in pages.items()
                                                                  if p["status"] != "new"][:5]
        assert all(p["title"] and p["title"].strip() for p in pages.values())
        assert all(p["chunks"] for p in pages.values())
        notes = corpora[name]["notes"]
        assert notes["files_added"] == files and notes["fallback"] == "first sync"
        assert {c["metadata"]["commit"] for p in pages.values() for c in p["chunks"]} == {notes["commit"]}


def test_corpora_urls_and_anchors(corpora: dict[str, dict]) -> None:
    astro = corpora["astro"]["pages"]
    assert "https://docs.astro.build/en/getting-started/" in astro
    assert "https://docs.astro.build/en/guides/deploy/" in astro  # guides/deploy/index.mdx → its folder
    netlify = astro.get("https://docs.astro.build/en/guides/deploy/netlify/")
    if netlify is not None:
        assert netlify["title"] == "Deploy your Astro Site to Netlify"
        assert "https://docs.astro.build/en/guides/deploy/netlify/#netlifytoml-file" in {c["url"] for c in netlify["chunks"]}

    adoc = corpora["asciidoctor"]["pages"]
    base = "https://docs.asciidoctor.org/asciidoctor/latest/"
    assert adoc[base]["path"] == "modules/ROOT/pages/index.adoc"
    html = adoc[base + "html-backend/"]
    assert html["title"] == "Generate HTML from AsciiDoc"
    urls = {c["url"] for c in html["chunks"]}
    assert base + "html-backend/#backend-and-converter" in urls  # the anchor the published site uses
    assert base + "html-backend/#xhtml" in urls  # an explicit [#xhtml] id
    create = next(c for c in html["chunks"] if c["headings"] == ["Generate HTML", "Create and save an AsciiDoc document"])
    assert create["url"] == base + "html-backend/#create-and-save-an-asciidoc-document"
    # the example included from modules/html-backend/examples with tags=title;body, inside the listing
    assert "= The Dangers of Wolpertingers" in create["text"] and "tag::" not in create["text"]
    macos = adoc[base + "install/macos/"]
    # partial$success.adoc included, its {release-version} from antora.yml
    assert any("Asciidoctor 2.1.0.alpha.0 [https://asciidoctor.org]" in c["text"] for c in macos["chunks"])
    assert adoc[base + "cli/man1/asciidoctor/"]["path"] == "modules/cli/pages/man1/asciidoctor.adoc"
    # cross-file hierarchy: a module page's parent is the module's index page
    custom = adoc[base + "convert/custom/"]["chunks"][0]
    assert custom["parent_id"] == adoc[base + "convert/"]["chunks"][0]["chunk_id"]


def test_corpora_unresolved_includes_reported_and_skipped(corpora: dict[str, dict]) -> None:
    reported = [ln for ln in corpora["asciidoctor"]["log"] if "cannot be resolved" in ln]
    # the corpus left out the Ruby/Groovy example files its pages include: each one reported
    assert corpora["asciidoctor"]["notes"]["unresolved_includes"] == len(reported) >= 1
    custom = corpora["asciidoctor"]["pages"]["https://docs.asciidoctor.org/asciidoctor/latest/convert/custom/"]
    assert custom["status"] == "new"  # the page is indexed, the include skipped
    assert "example$text-converter.rb" in custom["chunks"][0]["metadata"]["unresolved_includes"]
    assert any("convert/pages/custom.adoc: include::example$text-converter.rb[]" in ln for ln in reported)
    assert not any("include::example$" in c["text"] for c in custom["chunks"])


_ADOC_LEFTOVER = re.compile(
    r"^(?:include|ifn?def|endif|image|toc)::|\bxref:\S+\[|\blink:\S*\[|<<[\w#.-]+(?:,[^>]*)?>>|^\[\[[\w-]+\]\]|"
    r"^\[[\w.#%,=\"' -]*\]$|^(?:-{4,}|={4,}|\.{4,}|\*{4,}|\|===|////)$|^//(?!/)|\bpass:\[|\bkbd:\[|"
    r"(?<![\w*])\*\*?\w[^*\n]*\w\*\*?(?![\w*])|(?<![\w`])`\w[^`\n]*`(?!\w)")
_MDX_LEFTOVER = re.compile(r"^\s*(?:import|export)\s|<Aside|</[A-Z]|\{/\*|^\s*:::")


def _code_spans(src: str) -> list[str]:
    """Literal text the source shows as code or passthrough (it may legitimately contain markup)."""
    spans = set()
    for m in re.finditer(r"`\+(.+?)\+`|``(.+?)``|`([^`\n]+)`|\+\+\+(.+?)\+\+\+|pass:\[(.+?)\]|(?<![\w+])\+([^+\n]+)\+(?![\w+])", src):
        text = next(g for g in m.groups() if g is not None)
        spans.add(text.replace("\\", ""))
    return sorted((s for s in spans if s.strip()), key=len, reverse=True)


def test_corpora_no_markup_left(corpora: dict[str, dict]) -> None:
    problems: list[str] = []
    for name, src_root, rx in (("asciidoctor", ASCIIDOCTOR, _ADOC_LEFTOVER), ("astro", ASTRO, _MDX_LEFTOVER)):
        for url, page in corpora[name]["pages"].items():
            src = (src_root / page["path"]).read_text(encoding="utf-8")
            if name == "asciidoctor":  # what the pages include may be shown too
                src += "".join(p.read_text(encoding="utf-8") for p in sorted(src_root.glob("modules/*/partials/*.adoc")))
                src += "".join(p.read_text(encoding="utf-8") for p in sorted(src_root.glob("modules/*/examples/*.adoc")))
            spans = _code_spans(src)
            for section in page["sections"]:  # the parsed sections (chunks may split a code block)
                for line in prose(section["text"]):
                    line = "".join(code_parts(line)[0::2])  # inline code is code spans now: what is outside them
                    for span in spans:
                        line = line.replace(span, "")
                    if rx.search(line):
                        problems.append(f"{url} {section['headings']}: {line[:140]}")
    assert not problems, "\n".join(problems[:30])


ASTRO_SUBSET = ["install-and-setup.mdx", "getting-started.mdx", "guides/deploy/index.mdx", "guides/deploy/netlify.mdx"]
ADOC_SUBSET = ["antora.yml", "modules/ROOT/pages/index.adoc", "modules/install/pages/index.adoc",
               "modules/install/pages/macos.adoc", "modules/install/partials/success.adoc",
               "modules/html-backend/pages/index.adoc", "modules/html-backend/examples/my-document.adoc"]


def test_corpora_subset_ingest_through_dagster(tmp_path: Path) -> None:
    """The embedding ingest through the real asset graph, on a subset of both corpora (cost: ~30 s)."""
    from dagster import DagsterInstance

    from docs_rag_pipeline.query import search

    from .dagster_helpers import materialize_source

    _need_corpora()
    for name, src, files in (("astro", ASTRO, ASTRO_SUBSET), ("asciidoctor", ASCIIDOCTOR, ADOC_SUBSET)):
        for rel in files:
            if not (src / rel).is_file():
                pytest.skip(f"{rel} is not in this copy of the {name} corpus")
            (tmp_path / "sub" / name / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src / rel, tmp_path / "sub" / name / rel)
    astro = git_snapshot(tmp_path / "sub" / "astro", tmp_path / "astro")
    adoc = git_snapshot(tmp_path / "sub" / "asciidoctor", tmp_path / "asciidoctor")
    cfg = _corpora_config(tmp_path, astro, adoc)
    with DagsterInstance.ephemeral() as inst:
        for name, pages in (("astro", 4), ("asciidoctor", 4)):
            summary = materialize_source(cfg, name, inst)
            assert summary["pages_new"] == pages and summary["pages_skipped"] == 0, summary
            assert summary["chunks_embedded"] + summary["chunks_cached"] == summary["rows_written"] > 0
            assert all(summary["_checks"].values()), summary["_checks"]
            scan = summary["_result"].asset_materializations_for_node("scraped_pages")[0].metadata
            assert re.fullmatch(r"[0-9a-f]{40}", scan["scan_commit"].value)
    hits = search("install Asciidoctor with Homebrew on macOS", config=cfg, filters={"source": "asciidoctor"})
    assert hits and hits[0].url.startswith("https://docs.asciidoctor.org/asciidoctor/latest/install/macos/#")
    hits = search("deploy to Netlify", config=cfg, filters={"source": "astro"})
    assert hits and hits[0].page_url == "https://docs.astro.build/en/guides/deploy/netlify/"


def test_hostile_lines_of_markdown_and_its_includes_parse_as_text():
    """Review findings of this session's Markdown code: lines no real page holds, but a hostile or broken
    one can: a Quarto chunk's ```` ```{a ```` with a long run of spaces and no ``}``, a Hugo ``{{<`` never
    closed, a VitePress ``<<< a{x{x…`` code import, an ``<!--@include:`` never closed, an MDX component
    line never closed. Each regex could split the run every way, cubic or quadratic in the line's length
    (4 KB took minutes each, an ingest of such a page never ended). Each is read in one pass now and the
    lines stay text; the forms each was written for still read as before (their own tests). A block of a
    thousand list pieces no longer overflows the answer's sentence splitter, and a module Python's parser
    cannot nest deep enough for is no ``:pyobject:`` (it failed the whole scan)."""
    from docs_rag_pipeline.answering.extractive import sentences
    from docs_rag_pipeline.parsing.markdown import parse_markdown
    from docs_rag_pipeline.parsing.md_includes import resolve_markdown_includes
    from docs_rag_pipeline.parsing.rst import python_object_lines

    spaces = " " * 4000
    page = parse_markdown(f"# T\n\n```{{a{spaces}\n\nText {{{{<{spaces} after.\n", path="a.md")
    assert "after." in page.sections[0].text
    got = resolve_markdown_includes("<<< a" + "{x" * 3200 + "#\n\n" + "`<!--@include:`" * 3000 + "\n",
                                    path="p.md", read=lambda p: None)
    assert got.text.startswith("<<< a{x{x"), got.text[:40]
    got = resolve_markdown_includes('import A from "./a.mdx"\n\n<A' + " " * 30000 + "x\n", path="p.mdx",
                                    read=lambda p: None, mdx=True)
    assert got.text.endswith("x\n") or got.text.endswith("x"), got.text[-10:]
    block = "\n".join(f"  - item {i}\nText {i}." for i in range(1500))  # 3,000 pieces: a list, then text
    assert len(sentences(block)) >= 1500
    assert python_object_lines("x = " + " + ".join(["1"] * 3000) + "\ndef f():\n    pass\n") in ({}, {"f": (2, 3)})
    # a "cut here" mark around text to paste (no line of it names a file) is no pymdownx snippet block
    from docs_rag_pipeline.sources.local import markdown_body

    mail = "# Mail\n\nPaste this:\n\n```\n-----8<-----\nretries = 3\n-----8<-----\n```\n"
    body = markdown_body(mail, path="README.md", fmt="markdown", read=lambda r: None)
    assert body[0] == mail and body[2] == [], body
    # the same missing include met a thousand times (a file included a thousand times) is listed once
    twice = markdown_body("<!--@include: ./b.md-->\n" * 100, path="a.md", fmt="markdown",
                          read={"b.md": "<!--@include: ./c.md-->\n" * 100}.get)
    assert len(twice[2]) == 1 and twice[2][0].startswith("<!--@include: ./c.md-->"), twice[2][:3]
    # an ATX heading's closing #s go, its title's own stay; a line of spaces after it is read in one pass
    from docs_rag_pipeline.parsing.markdown import _ATX_HEADING_RE, _atx_title

    assert [_atx_title(_ATX_HEADING_RE.match(t)) for t in ("## Title ##", "# C#", "## a ## b", "# T #  ")] == [
        "Title", "C#", "a ## b", "T"]
    tabs = parse_markdown("# T\n\n::: {.panel-tabset}\n\n## pip" + " " * 20000 + "x\n\nRun pip.\n\n:::\n", path="t.qmd")
    assert "Run pip." in " ".join(x.text for x in tabs.sections)
    # VitePress slugs as JavaScript reads \d: only an ASCII digit gets the leading _
    from docs_rag_pipeline.parsing.slugs import vitepress_slugify

    assert (vitepress_slugify("٣ apples"), vitepress_slugify("2024 plans")) == ("٣-apples", "_2024-plans")


def test_markdown_includes_read_code_blocks_as_the_parser_does():
    """The include resolver tracked code fences by rules of its own: a fence indented four spaces (a list
    item's code block, as MkDocs pages write steps) was not one, so an include line shown as code there was
    replaced by the file; and the state did not follow what a snippet spliced in, so a snippet that opens a
    code block (its closing fence in another) left the lines after it read as text. Fences are now the
    Markdown parser's, over the spliced lines too: a Quarto include line inside code stays as written. Jekyll
    runs Liquid over the whole file first, so its ``include_relative`` inside a code block is the included
    file's text (a config file shown as code), unless ``{% raw %}`` makes the tag text."""
    from docs_rag_pipeline.parsing.md_includes import resolve_markdown_includes

    files = {"open.md": "```text\nliteral output:", "_part.qmd": "PART TEXT", "close.md": "end of output\n```",
             "_config.yml": "title: Site\ntheme: minima", "_part.md": "JEKYLL PART"}
    page = ('# T\n\n--8<-- "open.md"\n{{< include _part.qmd >}}\n--8<-- "close.md"\n\n'
            "{{< include _part.qmd >}}\n\n1. Step:\n\n    ```md\n    {{< include _part.qmd >}}\n    ```\n")
    got = resolve_markdown_includes(page, path="page.qmd", read=files.get)
    assert got.text == ("# T\n\n```text\nliteral output:\n{{< include _part.qmd >}}\nend of output\n```\n\n\n"
                        "PART TEXT\n\n\n1. Step:\n\n    ```md\n    {{< include _part.qmd >}}\n    ```\n"), got.text
    assert got.unresolved == [] and set(got.deps) == {"open.md", "close.md", "_part.qmd"}, (got.unresolved, got.deps)
    page = ("```yaml\n{% include_relative _config.yml %}\n```\n\n{% raw %}\n```liquid\n{% include_relative _part.md %}\n"
            "```\n{% endraw %}\n")
    got = resolve_markdown_includes(page, path="page.md", read=files.get)
    assert got.text == ("```yaml\ntitle: Site\ntheme: minima\n```\n\n{% raw %}\n```liquid\n"
                        "{% include_relative _part.md %}\n```\n{% endraw %}\n"), got.text
    got = resolve_markdown_includes("{% raw %}\n{% include_relative _part.md %}\n{% endraw %}\n", path="p.md",
                                    read=files.get)
    assert "JEKYLL PART" not in got.text, got.text  # between raw tags outside a code block too


def test_rst_an_object_in_a_list_item_or_a_field_keeps_its_target() -> None:
    """A Python object described inside a list item or under a field's name is indented with the item's
    other lines; those lines were rebuilt without their ids, so its signature was no target and a chunk
    starting in its description linked the section's heading instead of the object Sphinx gives an id."""
    text = textwrap.dedent("""\
        Title
        =====

        .. module:: pkg

        - The helpers:

          .. function:: first(items)

             Returns the first.

        :Deprecated:
           - Use the others.

             .. function:: old()
        """)
    section = parse_rst(text, path="api.rst").sections[0]
    assert [(a, section.text[o:].split("\n", 1)[0].strip()) for o, a in section.targets] == [
        ("pkg.first", "pkg.first(items)"), ("pkg.old", "pkg.old()")]


def test_rst_and_asciidoc_tables_without_a_header_row_start_with_a_rule() -> None:
    """A table's first row is its header to every reader of chunk text (docs/formats.md, *Tables*); a
    reST table without header rows (a ``list-table`` without ``:header-rows:``, a simple table without
    its ``===`` under the first row: CPython's asyncio index tables) and an AsciiDoc table without a header
    (no ``header`` option, and no blank line after its first line, Asciidoctor's implicit header: the
    CodeRay languages table) start with a rule, ``--- | ---``, as an HTML table without ``<th>`` does, so
    no row is drawn or quoted as the header. Tables with a header row read as before."""
    from docs_rag_pipeline.parsing import parse_document

    rst = """T
=

.. list-table::

   * - ``run()``
     - Create event loop, run a coroutine, close the loop.
   * - ``Runner``
     - A context manager.

.. list-table::
   :header-rows: 1

   * - Name
     - Meaning
   * - a
     - first

=====  =====
a      first
b      second
=====  =====

=====  =====
Name   Meaning
=====  =====
a      first
=====  =====
"""
    assert parse_document(rst, fmt="rst", path="t.rst").sections[0].text == (
        "--- | ---\n`run()` | Create event loop, run a coroutine, close the loop.\n`Runner` | A context manager.\n\n"
        "Name | Meaning\na | first\n\n--- | ---\na | first\nb | second\n\nName | Meaning\na | first")
    adoc = """= T

|===
|C |C++ |Clojure
|Delphi |diff |ERB
|===

[%header]
|===
|Name |Meaning
|a |first
|===

|===
|Name |Meaning

|a |first
|===

[%noheader]
|===
|x |y

|z |w
|===
"""
    assert parse_document(adoc, fmt="asciidoc", path="t.adoc").sections[0].text == (
        "--- | --- | ---\nC | C++ | Clojure\nDelphi | diff | ERB\n\nName | Meaning\na | first\n\n"
        "Name | Meaning\na | first\n\n--- | ---\nx | y\nz | w")
    # rows of one cell are lines of text, no table: no rule
    assert parse_document("= T\n\n|===\n|a\n|b\n|===\n", fmt="asciidoc", path="t.adoc").sections[0].text == "a\nb"
    assert parse_document("T\n=\n\n.. list-table::\n\n   * - a\n   * - b\n", fmt="rst", path="t.rst").sections[0].text == "a\nb"


def test_a_titled_rst_or_asciidoc_table_is_a_table_under_its_title() -> None:
    """A table's title (``.. list-table:: Pairs``, AsciiDoc's ``.Pairs``) was the first line of the table's own
    block, so no reader took the block for a table: none of its rows was ever quoted under its header, and a long
    one's pieces did not repeat it (review7 R9). The title is a block of its own, as an HTML ``<caption>`` is."""
    from docs_rag_pipeline.answering.tables import header_rows
    from docs_rag_pipeline.parsing.asciidoc import parse_asciidoc

    rst = "T\n=\n\nIntro.\n\n.. list-table:: Pairs\n   :header-rows: 1\n\n   * - Name\n     - Value\n   * - alpha\n     - one\n   * - beta\n     - two\n"
    adoc = "= T\n\nIntro.\n\n.Pairs\n[%header]\n|===\n|Name |Value\n|alpha |one\n|beta |two\n|===\n"
    for page in (parse_rst(rst, path="a.rst"), parse_asciidoc(adoc, path="a.adoc")):
        blocks = page.sections[-1].text.split("\n\n")
        assert blocks[-2:] == ["Pairs", "Name | Value\nalpha | one\nbeta | two"], blocks
        assert header_rows(blocks[-1]) == ["Name | Value\nalpha | one", "Name | Value\nbeta | two"]
