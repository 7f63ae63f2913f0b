"""Tests for docs_rag_pipeline.parsing: Markdown, MDX and HTML to plain-text sections."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docs_rag_pipeline.chunking import Budget, chunk_page
from docs_rag_pipeline.parsing import (
    ParseError,
    format_for_path,
    parse_document,
    parse_html,
    parse_markdown,
)
from docs_rag_pipeline.parsing.slugs import github_slug
from docs_rag_pipeline.records import ParsedPage, Section

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
ASTRO = CORPORA / "astro-docs-en"


def by_headings(page: ParsedPage) -> dict[tuple[str, ...], Section]:
    return {s.headings: s for s in page.sections}


def prose_lines(text: str) -> list[str]:
    """The lines of a section text outside code fences."""
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        m = re.match(r"^(`{3,}|~{3,})", line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is None:
            out.append(line)
    return out


# --------------------------------------------------------------------------------------------
# Slugs
# --------------------------------------------------------------------------------------------


def test_github_slug_basics_and_duplicates() -> None:
    seen: dict[str, int] = {}
    assert github_slug("Hello, World!", seen) == "hello-world"
    assert github_slug("Hello World", seen) == "hello-world-1"
    assert github_slug("Hello World", seen) == "hello-world-2"
    assert github_slug("`netlify.toml` file", seen) == "netlifytoml-file"
    assert github_slug("snake_case and-dash", seen) == "snake_case-and-dash"
    assert github_slug("Überblick & Ärger", seen) == "überblick--ärger"
    assert github_slug("C++ / C#", seen) == "c--c"
    # a new page starts over
    assert github_slug("Hello World", {}) == "hello-world"


# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------

MARKDOWN = """---
title: Getting Started
tags: [install, setup]
updated: 2024-01-02
---

# Welcome page

Welcome to **Foo**, see [the docs](https://example.com) and call `foo()`.
A ![Logo image](logo.png) too.

> Quoted *advice*.

## Install {#setup}

1. First step
2. Second step
   - nested *a*
     - deeper
   - nested b

Paragraph after the list.

### On Linux

```bash
# not a heading
echo "<Aside>"  # stays verbatim
```

    indented code
    # also kept

## Install

| Name | Value |
|------|-------|
| `a`  | 1     |
| b    | **2** |

<div class="note">
  <b>Raw</b> HTML &amp; text
</div>

## Empty

## Ünïcödé & Ñame!

Line<br>break.
"""


def test_markdown_title_metadata_and_intro() -> None:
    page = parse_markdown(MARKDOWN, path="docs/getting-started.md")
    assert page.title == "Getting Started"
    assert page.metadata == {"title": "Getting Started", "tags": ["install", "setup"], "updated": "2024-01-02"}
    intro = page.sections[0]
    # the frontmatter title names the page; the H1 of other words is the heading the page shows, so it opens
    # the first section and heads the rest (before, its words were in no section: test_front_matter_urls.py)
    assert (intro.headings, intro.anchor, intro.level) == (("Welcome page",), "", 1)  # the page top: no id
    assert intro.text == (
        "Welcome to Foo, see the docs and call `foo()`. A Logo image too.\n\nQuoted advice."
    )


def test_markdown_sections_paths_anchors_and_levels() -> None:
    page = parse_markdown(MARKDOWN, path="docs/getting-started.md")
    summary = [(s.headings, s.anchor, s.level) for s in page.sections[1:]]
    w = "Welcome page"  # the H1 (the frontmatter's title is another)
    assert summary == [
        ((w, "Install"), "setup", 2),  # explicit {#id}, stripped from the heading
        ((w, "Install", "On Linux"), "on-linux", 3),
        ((w, "Install"), "install", 2),  # a later H2 resets the path
        ((w, "Empty"), "empty", 2),
        ((w, "Ünïcödé & Ñame!"), "ünïcödé--ñame", 2),
    ]
    assert page.sections[4].text == ""  # empty sections are kept, stripped


def test_attribute_list_ids_of_mkdocs_and_kramdown_are_explicit_ids() -> None:
    """Python-Markdown's attr_list (MkDocs) and kramdown (Jekyll) write an explicit id as
    ``{: #id }`` or ``{ #id .class }``; only the tight ``{#id}`` was taken, so the anchor was the slug
    of the braces (``install-on-linux--linux-``) and the heading kept ``{: #linux }``."""
    for src in ("## Install on Linux {#linux}", "## Install on Linux { #linux }", "## Install on Linux {: #linux }",
                "## Install on Linux {:#linux}", "## Install on Linux {: #linux .important }",
                "## Install on Linux {: .important #linux }"):
        page = parse_markdown(src + "\n\ntext\n", path="docs/install.md")
        assert [(s.headings, s.anchor) for s in page.sections] == [(("Install on Linux",), "linux")], src
    # braces that hold no id are heading text
    page = parse_markdown("## Object {a: 1}\n\ntext\n", path="docs/o.md")
    assert [(s.headings, s.anchor) for s in page.sections] == [(("Object {a: 1}",), "object-a-1")]


def test_an_mkdocs_sites_anchors_are_the_ids_python_markdown_gives_its_headings() -> None:
    """MkDocs slugs headings with Python-Markdown's toc extension, not as GitHub does: ASCII only
    (``Café crème`` is ``#cafe-creme``), a run of spaces and dashes is one ``-`` (``Install & configure``
    is ``#install-configure``, not ``#install--configure``), a repeat gets ``_1``, a heading of no ASCII
    letter ``_1``. Every such citation of a Markdown repository built with MkDocs linked to no section.
    With ``heading_anchors: python-markdown`` each section's anchor is the id the extension itself gives
    (compared with the real library, explicit ``{#id}`` included); GitHub's slugs stay the default."""
    import markdown

    doc = ("# Guide\n\nIntro.\n\n## Install & configure\n\na\n\n## Install & configure\n\nb\n\n"
           "## Café crème — *fast*\n\nc\n\n## `mkdocs.yml` file\n\nd\n\n## Step 1 -- set up\n\ne\n\n"
           "## 日本語\n\nf\n\n## Setup {#install-configure_2}\n\ng\n\n## Install & configure\n\nh\n\n"
           "### What's new in 2.0?\n\ni\n\n## Guide\n\nj\n")
    page = parse_markdown(doc, path="docs/guide.md", anchors="python-markdown")
    ids = re.findall(r'<h\d id="([^"]*)"', markdown.markdown(doc, extensions=["toc", "attr_list"]))
    assert [s.anchor for s in page.sections] == ["", *ids[1:]], ids  # the title's section is the page's top
    assert ids[1:5] == ["install-configure", "install-configure_1", "cafe-creme-fast", "mkdocsyml-file"]
    github = parse_markdown(doc, path="docs/guide.md")
    assert [s.anchor for s in github.sections][1:4] == ["install--configure", "install--configure-1",
                                                        "café-crème--fast"]


def test_an_mkdocs_page_of_many_same_titled_headings_gets_its_anchors_without_recounting() -> None:
    """A reference page built with MkDocs repeats "## Parameters" for every function: with
    ``heading_anchors: python-markdown`` each repeat's anchor was found by copying the page's ids and
    trying ``_1``, ``_2``, ... again, work growing with the square of the headings (4,000 took seconds).
    The ids looked up stay a few per heading, and the anchors are still the ones Python-Markdown gives
    (an explicit id in between, ``{#parameters_3}``, is skipped)."""
    import markdown

    from docs_rag_pipeline.parsing.slugs import python_markdown_slug

    class Counting(dict):
        lookups = 0

        def __contains__(self, key: object) -> bool:
            Counting.lookups += 1
            return super().__contains__(key)

        def __iter__(self):  # noqa: ANN204 - a copy of the ids walks them all
            Counting.lookups += len(self)
            return super().__iter__()

    seen = Counting()
    slugs = [python_markdown_slug("Parameters", seen) for _ in range(1000)]
    assert slugs[:3] == ["parameters", "parameters_1", "parameters_2"] and slugs[-1] == "parameters_999"
    assert Counting.lookups < 10 * 1000, Counting.lookups  # was about 1,000,000
    doc = "# API\n\n" + "## Parameters\n\nx\n\n" * 3 + "## Other {#parameters_3}\n\ny\n\n" + "## Parameters\n\nz\n\n" * 2
    page = parse_markdown(doc, path="docs/api.md", anchors="python-markdown")
    ids = re.findall(r'<h\d id="([^"]*)"', markdown.markdown(doc, extensions=["toc", "attr_list"]))
    assert [s.anchor for s in page.sections if s.anchor] == ids[1:]  # the title's section is the page's top
    assert ids[-3:] == ["parameters_3", "parameters_4", "parameters_5"]


@pytest.mark.timeout(120)
def test_an_html_block_of_many_unclosed_comments_is_read_in_linear_time() -> None:
    """A commented-out draft whose ``<!--`` never closes runs, as an HTML block, to the end of the file;
    each further ``<!--``, ``<?``, ``<!`` or ``<script`` in it made the pattern that drops comments scan to
    the end again (2,000 lines took 2.7 s in Markdown, 3.3 s in MDX; 20,000 several minutes: the
    suite's time limit on this test is the guard, linear is about a second). What is dropped is unchanged."""
    from docs_rag_pipeline.parsing.markdown import _mdx_html_to_markdown, strip_html

    line = "a <!-- b <? c <script d <!x"
    page = parse_markdown("Intro.\n\n<!-- draft notes follow\n" + f"{line}\n" * 20_000, path="docs/draft.md")
    assert [s.text for s in page.sections] == ["Intro.\n\n<!-- draft notes follow " + " ".join([line] * 20_000)]
    mdx = parse_markdown("Intro.\n\n<div>\n" + f"{line}\n" * 20_000, path="docs/draft.mdx", mdx=True)
    assert [s.text for s in mdx.sections] == ["Intro.\n\n" + " ".join([line] * 20_000)]
    # the same text out as before: what closes is dropped, what never closes is kept
    assert strip_html("x <!-- c --> y <script>z</script> <?p q?> <!d> <![CDATA[e]]> <b>w</b> <!-- open") == \
        "x y w <!-- open"
    assert _mdx_html_to_markdown("<div>`<b>` <!-- c --> <p>t</p> <!x <? <script") == \
        "\n\n`<b>`  \n\nt\n\n <!x <? <script"


def test_explicit_ids_win_and_every_section_of_a_page_has_its_own_anchor() -> None:
    """``## Install`` then ``## Setup {#install}`` gave both sections the anchor ``install`` (the
    explicit id was taken as is after the slug had handed it out), so a citation of the first
    section linked to the second. Explicit ids keep their exact value wherever they stand; a
    slugged heading skips every id taken on the page, as a static site generator makes them."""
    page = parse_markdown(
        "# Guide\n\nIntro.\n\n## Install\n\na\n\n## Setup {#install}\n\nb\n\n## Install\n\nc\n\n"
        "## Notes {#install-1}\n\nd\n\n## Guide\n\ne\n\n## Install 2\n\nf\n", path="docs/guide.md")
    summary = [(s.headings, s.anchor) for s in page.sections[1:]]
    assert summary == [
        (("Install",), "install-2"),
        (("Setup",), "install"),  # the explicit id, exactly
        (("Install",), "install-3"),
        (("Notes",), "install-1"),  # explicit, though a slug would have made it before
        (("Guide",), "guide-1"),  # the H1 title took "guide"
        (("Install 2",), "install-2-1"),
    ]
    anchors = [s.anchor for s in page.sections]
    assert len(set(anchors)) == len(anchors)
    # an HTML page's own ids are its anchors; a heading without one links a text fragment, never an id
    # the live page lacks (test_a_web_heading_without_an_id_links_a_text_fragment_not_an_invented_id)
    html = parse_html("<html><body><main><h1>T</h1><h2>Install</h2><p>a</p><h2 id='install'>Setup</h2>"
                      "<p>b</p></main></body></html>", url="https://docs.example.org/guide.html")
    assert [(s.headings, s.anchor) for s in html.sections] == [(("Install",), ":~:text=Install"),
                                                               (("Setup",), "install")]


def test_markdown_lists_code_tables_and_html() -> None:
    sections = parse_markdown(MARKDOWN, path="docs/getting-started.md").sections
    assert sections[1].text == (
        "1. First step\n2. Second step\n  - nested a\n    - deeper\n  - nested b\n\nParagraph after the list."
    )
    assert sections[2].text == (
        '```bash\n# not a heading\necho "<Aside>"  # stays verbatim\n```\n\n```\nindented code\n# also kept\n```'
    )
    assert sections[3].text == "Name | Value\n`a` | 1\nb | 2\n\nRaw HTML & text"  # inline code stays code
    assert sections[5].text == "Line\nbreak."
    for section in sections:
        for line in prose_lines(section.text):
            assert not re.search(r"\*\*|\]\(|<[a-z/]|^#+ |&amp;", line), line


def test_markdown_title_fallbacks() -> None:
    assert parse_markdown("# The H1\n\nText.\n", path="a/b.md").title == "The H1"
    assert parse_markdown("Just text.\n", path="docs/getting-started.md").title == "Getting started"
    assert parse_markdown("Text.\n", path="docs/install_guide/index.md").title == "Install guide"
    # an H1 that is not the first heading is a section
    page = parse_markdown("## First\n\na\n\n# Later\n\nb\n\n## Under\n\nc\n", path="x.md")
    assert page.title == "X"
    assert [(s.headings, s.level) for s in page.sections] == [
        (("First",), 2),
        (("Later",), 1),
        (("Later", "Under"), 2),
    ]


def test_markdown_duplicate_headings_get_suffixes() -> None:
    text = "# Title\n\n## Usage\n\nx\n\n## Usage\n\ny\n\n### Usage\n\nz\n"
    anchors = [s.anchor for s in parse_markdown(text, path="dup.md").sections]
    assert anchors == ["usage", "usage-1", "usage-2"]


def test_markdown_intro_without_h1_and_ordered_start() -> None:
    page = parse_markdown("Intro text.\n\n3. three\n4. four\n\n## A\n\nbody\n", path="p.md")
    assert page.sections[0] == Section((), "", 1, "Intro text.\n\n3. three\n4. four")
    assert page.sections[1] == Section(("A",), "a", 2, "body")


def test_markdown_code_containing_fences_gets_another_fence() -> None:
    text = "## Doc\n\n````md\n```js\nx\n```\n````\n"
    assert parse_markdown(text, path="f.md").sections[0].text == "~~~md\n```js\nx\n```\n~~~"
    text = "## Doc\n\n````md\n```js\n~~~\n```\n````\n"
    assert parse_markdown(text, path="f.md").sections[0].text == "````md\n```js\n~~~\n```\n````"


def test_markdown_directives_become_markers() -> None:
    text = "## A\n\n:::tip[Pro tip]\nUse **this**.\n:::\n"
    assert parse_markdown(text, path="d.md").sections[0].text == "[tip Pro tip]\n\nUse this.\n\n[/tip]"


def test_invalid_frontmatter_raises_parse_error() -> None:
    with pytest.raises(ParseError, match=r"docs/bad\.md: invalid YAML frontmatter"):
        parse_markdown("---\ntitle: [unclosed\n---\n\nText\n", path="docs/bad.md")
    with pytest.raises(ParseError, match=r"docs/list\.md: .*not a mapping"):
        parse_markdown("---\n- a\n- b\n---\n\nText\n", path="docs/list.md")


def test_hugos_toml_front_matter_is_read_as_metadata() -> None:
    """Hugo writes front matter in TOML between ``+++`` lines (its own archetypes' format); it was not
    read: the page began with the paragraph ``+++ title = "…" weight = 10 +++`` and took its title from
    the file name. It is metadata now, as YAML frontmatter is: the title, numbers as written (``1.10``
    stays text), tables, dates as ISO text; invalid TOML is a parse error naming the file's line. A
    reStructuredText page keeps a ``+++`` line (a title's adornment)."""
    page = parse_markdown('+++\ntitle = "Configure the zorbulator"\nweight = 10\nversion = 1.10\nratio = 1.5\n'
                          'date = 2024-01-05\n[params]\n  author = "Jane"\n+++\n\n## Intro\n\nText.\n',
                          path="content/config.md")
    assert page.title == "Configure the zorbulator"
    assert page.metadata == {"title": "Configure the zorbulator", "weight": 10, "version": "1.10", "ratio": 1.5,
                             "date": "2024-01-05", "params": {"author": "Jane"}}, page.metadata
    assert [(s.headings, s.text) for s in page.sections] == [(("Intro",), "Text.")]
    with pytest.raises(ParseError, match=r"content/bad\.md: invalid TOML front matter \(.*at line 2"):
        parse_markdown('+++\ntitle = unquoted\n+++\n\nText\n', path="content/bad.md")
    # an integer longer than Python converts raised a bare ValueError naming a Python setting
    with pytest.raises(ParseError, match=r"content/big\.md: invalid TOML front matter \(a number too long"):
        parse_markdown("+++\nid = " + "9" * 5000 + "\n+++\n\nText\n", path="content/big.md")
    rst = parse_document("+++\nFoo\n+++\n\nText.\n", fmt="rst", path="a.rst")
    assert rst.title == "Foo", rst.title


def test_binary_markdown_raises_parse_error() -> None:
    with pytest.raises(ParseError, match="looks binary"):
        parse_markdown("PK\x03\x04\x00\x00binary", path="img.md")


@pytest.mark.parametrize("fmt", ["markdown", "mdx", "asciidoc", "rst", "html"])
def test_binary_without_nul_bytes_and_lfs_pointers_are_parse_errors(fmt: str) -> None:
    """Bytes that are not text (an image or archive with no NUL in its first kilobytes, read as
    windows-1252) and Git LFS pointers (the file's content was never fetched) were indexed as
    text in every format but HTML; now each is a ParseError that says what to do."""
    import random

    from docs_rag_pipeline.sources.base import decode_body

    from .test_pipeline import LFS_POINTER

    noise = decode_body(bytes(b for b in random.Random(3).randbytes(5000) if b), None)
    with pytest.raises(ParseError, match=r"doc\.x: the document looks binary .*exclude"):
        parse_document(noise, fmt=fmt, path="doc.x")
    with pytest.raises(ParseError, match=r"doc\.x: the file is a Git LFS pointer.*git lfs pull"):
        parse_document(LFS_POINTER, fmt=fmt, path="doc.x")
    # text with a few control characters (a pasted terminal colour code) is still text
    colour = "# Colours\n\nThe log prints \x1b[31mred\x1b[0m for errors and green for success.\n" * 5
    assert parse_document(colour if fmt != "html" else f"<p>{colour}</p>", fmt=fmt, path="doc.x").sections


def test_parse_error_is_a_value_error() -> None:
    assert issubclass(ParseError, ValueError)


# --------------------------------------------------------------------------------------------
# MDX
# --------------------------------------------------------------------------------------------

MDX = """---
title: Components
description: MDX fixture
---
import { Aside, Tabs } from '@astrojs/starlight/components';
import {
  Steps,
  Card,
} from '../components';
export const meta = {
  author: 'me',
  tags: ['a', 'b'],
};

{/* a hidden comment */}

Intro with an inline <Badge text="New" /> badge<Since v="4.0" />.

<Aside type="tip">
  Indented **tip** text.

  - item one
  - item two
</Aside>

## Tabs

<Tabs>
  <Tabs.Item label="npm">
    ```sh
    npm install foo
    # <Aside> in code stays
    ```
  </Tabs.Item>
  <Tabs.Item
    label="pnpm"
    icon={icons.pnpm}
  >
    Run `pnpm add foo` (not `<Tabs>`).
  </Tabs.Item>
</Tabs>

<Image src={logo} alt="Logo" />
<LinkCard title="Read the guide" href="/guide/" />

## Steps

<Steps>
1. Install it

    <Aside type="caution" title="Heads up">
    Nested in a list item.
    </Aside>

2. Run it
</Steps>

<ReadMore>See [the guide](/guide/) for more.</ReadMore>

Text with <kbd>Ctrl</kbd> and <abbr title="x">HTML</abbr>.
"""


def test_mdx_drops_esm_comments_and_flattens_components() -> None:
    page = parse_markdown(MDX, path="guide.mdx", mdx=True)
    assert page.title == "Components"
    assert page.metadata["description"] == "MDX fixture"
    sections = by_headings(page)
    assert sections[()].text == (
        "Intro with an inline [Badge New] badge[Since 4.0].\n\n[Aside tip]\n\nIndented tip text.\n\n- item one\n- item two\n\n[/Aside]"
    )
    assert sections[("Tabs",)].text == (
        "[Tabs]\n\n[Tabs.Item npm]\n\n```sh\nnpm install foo\n# <Aside> in code stays\n```\n\n"
        "[/Tabs.Item]\n\n[Tabs.Item pnpm]\n\nRun `pnpm add foo` (not `<Tabs>`).\n\n[/Tabs.Item]\n\n[/Tabs]\n\n"
        "[Image Logo]\n\n[LinkCard Read the guide]"
    )


def test_mdx_components_inside_lists_and_inline_closing() -> None:
    sections = by_headings(parse_markdown(MDX, path="guide.mdx", mdx=True))
    assert sections[("Steps",)].text == (
        "[Steps]\n\n1. Install it\n  [Aside caution]\n  Heads up\n  Nested in a list item.\n  [/Aside]\n2. Run it\n\n[/Steps]\n\n"
        "[ReadMore]\n\nSee the guide for more.\n\n[/ReadMore]\n\nText with Ctrl and HTML."
    )


def test_mdx_output_has_no_jsx_or_esm_left() -> None:
    page = parse_markdown(MDX, path="guide.mdx", mdx=True)
    for section in page.sections:
        for line in prose_lines(section.text):
            line = line.replace("(not `<Tabs>`)", "")  # inline code keeps its content, as code
            assert not re.search(r"^(import|export) |\{/\*|<[A-Za-z]|</|\*\*|\]\(", line), line


def test_mdx_self_closing_component_with_label_and_multiline_export() -> None:
    text = (
        "export default function Layout({ children }) {\n  return children;\n}\n\n"
        "# Title\n\n<Card label='Quick start' />\n\nBody.\n"
    )
    page = parse_markdown(text, path="x.mdx", mdx=True)
    assert page.title == "Title"
    assert page.sections == [Section((), "", 1, "[Card Quick start]\n\nBody.")]


def test_markdown_mode_leaves_jsx_like_text_as_html() -> None:
    # In plain Markdown, <Aside> is raw HTML: the tag goes, the text stays.
    page = parse_markdown("<Aside>\nplain\n</Aside>\n", path="x.md")
    assert page.sections[0].text == "plain"


# --------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------

SPHINX = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Installation &#8212; MyLib 2.0 documentation</title>
<meta name="description" content="How to install MyLib.">
<meta property="article:modified_time" content="2024-03-01T10:00:00+00:00">
</head><body>
<div role="navigation" aria-label="breadcrumbs navigation"><ul class="wy-breadcrumbs">
<li><a href="index.html" class="icon icon-home" aria-label="Home"></a></li>
<li><a href="guide.html">User guide</a></li>
<li class="breadcrumb-item active">Installation</li>
<li class="wy-breadcrumbs-aside"><a href="_sources/install.rst.txt">View page source</a></li></ul></div>
<div class="sphinxsidebar" role="navigation"><h3>Navigation</h3><ul><li>Contents</li></ul></div>
<div class="body" role="main">
<section id="installation">
<h1>Installation<a class="headerlink" href="#installation" title="Link to this heading">¶</a></h1>
<p>MyLib runs on   Python
 3.10+.</p>
<section id="from-pypi">
<span id="pypi-label"></span><h2>From PyPI<a class="headerlink" href="#from-pypi">¶</a></h2>
<p>Use <code class="docutils literal"><span class="pre">pip</span></code>:</p>
<div class="highlight-console notranslate"><div class="highlight"><pre><span></span><span class="gp">$ </span>pip install mylib
<span class="gp">$ </span>python -c "import mylib"
</pre></div></div>
<div class="admonition note">
<p class="admonition-title">Note</p>
<p>Use a virtual environment.</p>
</div>
<section id="extras">
<h3>Extras<a class="headerlink" href="#extras">¶</a></h3>
<ul class="simple"><li><p><strong>fast</strong>: C speedups</p></li><li><p>docs</p><ul><li>sphinx</li></ul></li></ul>
<table class="docutils"><thead><tr><th>Extra</th><th>Adds</th></tr></thead>
<tbody><tr><td>fast</td><td>cython</td></tr></tbody></table>
</section></section>
<div class="section" id="from-source">
<h2>From source</h2>
<dl class="py function"><dt class="sig" id="mylib.build"><span class="sig-name">build</span>(<em>path</em>)<a class="headerlink" href="#mylib.build">¶</a></dt>
<dd><p>Build it.</p></dd></dl>
</div></section>
</div>
<footer>© 2024 MyLib</footer>
<script>var x = "<p>nope</p>";</script>
</body></html>"""


def test_sphinx_page() -> None:
    page = parse_html(SPHINX, url="https://mylib.dev/install.html")
    assert page.title == "Installation"
    assert page.metadata == {
        "breadcrumbs": ["User guide", "Installation"],
        "updated": "2024-03-01T10:00:00+00:00",
        "description": "How to install MyLib.",
    }
    assert [(s.headings, s.anchor, s.level) for s in page.sections] == [
        ((), "", 1),
        (("From PyPI",), "from-pypi", 2),
        (("From PyPI", "Extras"), "extras", 3),
        (("From source",), "from-source", 2),
    ]
    intro, pypi, extras, source = (s.text for s in page.sections)
    assert intro == "MyLib runs on Python 3.10+."
    assert pypi == (
        'Use `pip`:\n\n```console\n$ pip install mylib\n$ python -c "import mylib"\n```\n\n'
        "Note\nUse a virtual environment."
    )
    assert extras == "- fast: C speedups\n- docs\n  - sphinx\n\nExtra | Adds\nfast | cython"
    assert source == "build(path)\n  Build it."
    everything = "\n".join(s.text for s in page.sections)
    for chrome in ("¶", "Navigation", "View page source", "© 2024", "nope"):
        assert chrome not in everything


DOCUSAURUS = """<html lang="en"><head><title>Create a Page | My Site</title></head><body>
<div role="region" aria-label="Skip to main content"><a class="skipToContent_fXgn" href="#main">Skip to main content</a></div>
<nav class="navbar"><a href="/">My Site</a></nav>
<div class="main-wrapper">
<aside class="theme-doc-sidebar-container"><ul><li>Tutorial Intro</li></ul></aside>
<main class="docMainContainer_TBSr"><div class="row"><div class="col docItemCol"><article>
<nav class="theme-doc-breadcrumbs" aria-label="Breadcrumbs"><ul class="breadcrumbs">
<li class="breadcrumbs__item"><a aria-label="Home page" class="breadcrumbs__link" href="/"><svg viewBox="0 0 24 24"><path d="M10"></path></svg></a></li>
<li class="breadcrumbs__item"><span class="breadcrumbs__link">Tutorial - Basics</span></li>
<li class="breadcrumbs__item breadcrumbs__item--active"><span class="breadcrumbs__link">Create a Page</span></li></ul></nav>
<div class="tocCollapsible_ETCw theme-doc-toc-mobile"><button>On this page</button></div>
<div class="theme-doc-markdown markdown"><header><h1>Create a Page</h1></header>
<p>Add <strong>Markdown or React</strong> files to <code>src/pages</code>.</p>
<h2 class="anchor" id="create-your-first-react-page">Create your first React Page<a href="#create-your-first-react-page" class="hash-link" aria-label="Direct link" title="Direct link">&#8203;</a></h2>
<div class="language-jsx codeBlockContainer_Ckt0"><div class="codeBlockContent_biex"><pre tabindex="0" class="prism-code language-jsx"><code class="codeBlockLines_e6Vv"><span class="token-line"><span class="token keyword">export</span><span class="token plain"> default function Page() {</span><br></span><span class="token-line"><span class="token plain">  return 1;</span><br></span><span class="token-line"><span class="token plain">}</span><br></span></code></pre><div class="buttonGroup__atx"><button type="button" class="clean-btn">Copy</button></div></div></div>
<div class="theme-admonition theme-admonition-tip alert alert--success"><div class="admonitionHeading_Gvgb"><span class="admonitionIcon_Rf37"><svg></svg></span>tip</div><div class="admonitionContent_BuS1"><p>Pages are <em>cool</em>.</p></div></div>
<h2 id="create-your-first-react-page-1">Create your first React Page</h2><p>Again.</p>
</div>
<footer class="theme-doc-footer"><div class="theme-last-updated">Last updated on <time datetime="2024-05-02T00:00:00.000Z">May 2, 2024</time></div><a href="https://github.com/x/edit/main/docs/page.md" class="theme-edit-this-page">Edit this page</a></footer>
</article><nav class="pagination-nav" aria-label="Docs pages"><a href="/docs/intro">Previous</a></nav></div>
<div class="col col--3"><div class="tableOfContents_bqdL theme-doc-toc-desktop"><ul class="table-of-contents"><li><a href="#x">On this page link</a></li></ul></div></div>
</div></main></div>
<footer class="footer"><div>Copyright Site</div></footer></body></html>"""


def test_docusaurus_page() -> None:
    page = parse_html(DOCUSAURUS.encode(), url="https://site.dev/docs/tutorial-basics/create-a-page")
    assert page.title == "Create a Page"
    assert page.metadata == {"breadcrumbs": ["Tutorial - Basics", "Create a Page"], "updated": "2024-05-02T00:00:00.000Z"}
    assert page.sections == [
        Section((), "", 1, "Add Markdown or React files to `src/pages`."),
        Section(
            ("Create your first React Page",),
            "create-your-first-react-page",
            2,
            "```jsx\nexport default function Page() {\n  return 1;\n}\n```\n\ntip\nPages are cool.",
        ),
        Section(("Create your first React Page",), "create-your-first-react-page-1", 2, "Again."),
    ]
    everything = "\n".join(s.text for s in page.sections)
    for chrome in ("Skip to main", "Tutorial Intro", "On this page", "Copy", "Edit this page", "Previous", "Copyright", "\u200b"):
        assert chrome not in everything


def test_html_text_after_a_nested_section_is_its_parent_sections() -> None:
    """Sections were cut at headings only, so the text after a nested ``<section>`` (respec and bikeshed
    specs, hand-written pages) was cited with the nested section's id and heading path; it is the
    parent's, and text after a closed section before the next heading is the section's that held it."""
    html = """<html><head><title>T</title></head><body><main><h1>T</h1><p>Intro.</p>
    <section id="limits"><h2>Limits</h2><p>General limits apply to every account.</p>
      <section id="limits-free"><h3>Free plan</h3><p>The free plan allows ten projects.</p></section>
      <p>Enterprise customers can ask support to raise any limit.</p>
      <div class="section" id="limits-old"><h3>Old plans</h3><p>Old plans keep their limits.</p></div>
      <p>Limits are checked hourly.</p>
      <h3 id="limits-team">Team plan</h3><p>Teams get fifty.</p>
    </section>
    <p>Questions? Ask support.</p>
    <section id="billing"><h2>Billing</h2><p>Invoices are monthly.</p></section>
    <div class="note-wrapper"><h2 id="faq">FAQ</h2><p>Answers.</p></div><p>More answers.</p>
    </main></body></html>"""
    page = parse_html(html, url="https://ex.org/limits.html")
    assert [(s.anchor, s.headings, s.text) for s in page.sections] == [
        ("", (), "Intro.\n\nQuestions? Ask support."),
        ("limits", ("Limits",), "General limits apply to every account.\n\n"
                                "Enterprise customers can ask support to raise any limit.\n\nLimits are checked hourly."),
        ("limits-free", ("Limits", "Free plan"), "The free plan allows ten projects."),
        ("limits-old", ("Limits", "Old plans"), "Old plans keep their limits."),
        ("limits-team", ("Limits", "Team plan"), "Teams get fifty."),
        ("billing", ("Billing",), "Invoices are monthly."),
        ("faq", ("FAQ",), "Answers.\n\nMore answers.")]  # a <div> that is no section ends nothing


def test_html_anchor_fallbacks_selector_and_title_rules() -> None:
    html = """<html><head><title>Guide · Other Site</title></head><body>
    <div id="doc"><h1>Something else</h1>
    <a name="legacy"></a><h2>Named anchor</h2><p>one</p>
    <h2><a id="inner"></a>Inner anchor</h2><p>two</p>
    <h2>Plain heading!</h2><p>three <br> four</p>
    <div class="sidebar">side</div><div class="cookie-banner">cookies</div>
    </div><div id="other"><p>outside the selector</p></div></body></html>"""
    page = parse_html(html, url="https://x.dev/guide/", content_selector="#doc")
    assert page.title == "Guide · Other Site"  # the H1 does not match the part before ' · '
    assert [(s.anchor, s.text) for s in page.sections] == [
        ("legacy", "one"),
        ("inner", "two"),
        (":~:text=Plain%20heading%21", "three\nfour"),  # no id: a text fragment of the heading
    ]
    # a selector that matches nothing falls back to body
    fallback = parse_html(html, url="https://x.dev/guide/", content_selector="#missing")
    assert "outside the selector" in "\n".join(s.text for s in fallback.sections)


def test_html_title_from_h1_or_url_when_no_title_tag() -> None:
    assert parse_html("<body><h1>Only H1</h1><p>x</p></body>", url="u").title == "Only H1"
    assert parse_html("<body><p>text</p></body>", url="https://x.dev/docs/quick-start.html").title == "Quick start"


def test_html_placeholder_titles_fall_back_to_the_h1_or_the_file_name() -> None:
    """Sphinx titles a page whose source it could not read ``<no title>``, and a broken build can leave
    bare punctuation; a citation titled so names nothing, so the H1 and then the file name stand in."""
    def title(doc_title: str, h1: str, url: str = "https://x.dev/usage/the_basics.html") -> str:
        return parse_html(f"<html><head><title>{doc_title}</title></head><body><h1>{h1}</h1><p>Some text.</p>"
                          "</body></html>", url=url).title

    assert title("&lt;no title&gt; &#8212; Black 23.1.0 documentation", "") == "The basics"
    assert title(") &#8212; Black 23.1.0 documentation", ")") == "The basics"
    assert title("&lt;no title&gt;", "Configuration files") == "Configuration files"
    assert title("Untitled", "", url="https://x.dev/faq.html") == "Faq"
    # real titles, however short or odd, are kept
    assert title("C++ &#8212; docs", "") == "C++"
    assert title("None of the above", "") == "None of the above"
    assert title("Quickstart &#8212; Flask 2.2 documentation", "Quickstart") == "Quickstart"


def test_latin1_bytes_with_meta_charset() -> None:
    html = '<html><head><meta charset="ISO-8859-1"><title>Caf\xe9</title></head><body><h1>Caf\xe9</h1><p>Cr\xe8me br\xfbl\xe9e \x96 yes</p></body></html>'
    page = parse_html(html.encode("latin-1"), url="https://x.dev/cafe")  # 0x96: an en dash in windows-1252
    assert page.title == "Café"
    assert page.sections[0].text == "Crème brûlée – yes"


def test_http_equiv_charset_and_utf8_default() -> None:
    html = '<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1252"></head><body><p>na\xefve</p></body></html>'
    assert parse_html(html.encode("cp1252"), url="u").sections[0].text == "naïve"
    assert parse_html("<p>naïve \u2713</p>".encode(), url="u").sections[0].text == "naïve \u2713"
    # undecodable bytes are replaced, not fatal
    assert parse_html(b"<p>bad \xff byte</p>", url="u").sections[0].text == "bad \ufffd byte"


def test_binary_or_empty_html_raises_parse_error() -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00\x00\x00\x01\x00\x08\x06\x00\x00\x00" * 4
    with pytest.raises(ParseError, match="looks binary"):
        parse_html(png, url="https://x.dev/logo.png")
    with pytest.raises(ParseError, match="no text"):
        parse_html("<html><head><title>T</title><script>x()</script></head><body> </body></html>", url="https://x.dev/e")


# --------------------------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------------------------


def test_format_for_path() -> None:
    assert format_for_path("docs/a.md") == "markdown"
    assert format_for_path("docs/a.MARKDOWN") == "markdown"
    assert format_for_path("docs/a.mdx") == "mdx"
    assert format_for_path("https://x.dev/a.html?x=1") == "html"
    assert format_for_path("a.htm") == "html"
    assert format_for_path("a.rst") == "rst"
    assert format_for_path("Makefile") is None


def test_parse_document_dispatch() -> None:
    assert parse_document("# T\n\nx", fmt="markdown", path="a.md").title == "T"
    mdx = parse_document("import X from 'x';\n\n# T\n\n<X>y</X>\n", fmt="mdx", path="a.mdx")
    assert mdx.sections[0].text == "[X]\n\ny\n\n[/X]"
    assert parse_document("<h1>T</h1><p>x</p>", fmt="html", path="a.html").sections[0].text == "x"
    with pytest.raises(ParseError, match=r"a\.txt: unsupported document format 'txt'.*markdown, mdx, html, asciidoc, rst"):
        parse_document("x", fmt="txt", path="a.txt")


# --------------------------------------------------------------------------------------------
# The real Astro docs corpus
# --------------------------------------------------------------------------------------------

_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)
_LEFTOVER = re.compile(r"^\s*(?:import|export)\s|<Aside|</|\{/\*|^\s*:::")


@pytest.fixture(scope="module")
def astro_pages() -> dict[Path, tuple[str, ParsedPage]]:
    if not ASTRO.is_dir():
        pytest.skip(f"the Astro docs corpus is not available at {ASTRO}")
    files = sorted(ASTRO.rglob("*.mdx"))
    if not files:
        pytest.skip(f"no .mdx files under {ASTRO}")
    return {
        f: (src, parse_markdown(src, path=str(f.relative_to(ASTRO)), mdx=True))
        for f in files
        for src in [f.read_text(encoding="utf-8")]
    }


def test_astro_corpus_parses_with_titles(astro_pages: dict[Path, tuple[str, ParsedPage]]) -> None:
    assert len(astro_pages) > 50
    for path, (_, page) in astro_pages.items():
        assert page.title.strip(), path
        assert page.sections, path
        for section in page.sections:
            assert section.text == section.text.strip(), path


def test_astro_corpus_has_no_mdx_syntax_left(astro_pages: dict[Path, tuple[str, ParsedPage]]) -> None:
    problems: list[str] = []
    for path, (src, page) in astro_pages.items():
        # inline code keeps its content (e.g. `</body>`), so code span texts are allowed
        spans = sorted(
            {" ".join(m.group(2).split()) for m in _CODE_SPAN.finditer(src)} - {""}, key=len, reverse=True
        )
        spans = [s for s in spans if re.search(r"import|export|<Aside|</|\{/\*|:::", s)]
        for section in page.sections:
            for line in prose_lines(section.text):
                for span in spans:
                    line = line.replace(span, "")
                if _LEFTOVER.search(line):
                    problems.append(f"{path.relative_to(ASTRO)} {section.headings}: {line[:120]}")
    assert not problems, "\n".join(problems[:20])


def test_astro_netlify_page_structure(astro_pages: dict[Path, tuple[str, ParsedPage]]) -> None:
    path = ASTRO / "guides" / "deploy" / "netlify.mdx"
    if path not in astro_pages:
        pytest.skip(f"{path} is not in this copy of the corpus")
    page = astro_pages[path][1]
    assert page.title == "Deploy your Astro Site to Netlify"
    sections = by_headings(page)
    toml = sections[("How to deploy", "Website UI deployment", "netlify.toml file")]
    assert toml.anchor == "netlifytoml-file" and toml.level == 4
    steps = sections[("How to deploy", "CLI deployment")].text
    assert steps.startswith("You can also create")
    assert "[Steps]\n\n1. Install Netlify's CLI globally\n```bash\nnpm install --global netlify-cli\n```\n2. Run" in steps


def test_html_nested_too_deep_is_flattened_not_a_crash() -> None:
    """Broken HTML nests every unclosed <div> in the one before (a thousand unclosed tags are a
    thousand levels), and a hostile page can nest 50,000: the walker once hit Python's recursion
    limit from 900 levels on and the page was skipped with a RecursionError. Such a page is
    flattened (wrappers first): the headings, the paragraphs kept apart and all the text, in order."""
    unclosed = "<html><body><h1>Broken page</h1>" + "<div><p>filler" * 1000 + "<h2 id='end'>The end</h2>" \
               "<p>The lighthouse keeper signs the log.</p></body></html>"
    page = parse_html(unclosed, url="https://x.org/broken.html")
    assert page.title == "Broken page" and [s.headings for s in page.sections] == [(), ("The end",)]
    assert page.sections[-1].anchor == "end" and "lighthouse keeper signs the log" in page.sections[-1].text
    assert page.sections[0].text.split("\n\n") == ["filler"] * 1000
    hostile = ("<html><body><h1>Deep</h1>" + "<div><span>" * 25_000 + "bottom text" + "</span></div>" * 25_000
               + "<p>After the pit.</p></body></html>")
    text = " ".join(s.text for s in parse_html(hostile, url="https://x.org/deep.html").sections)
    assert text.index("bottom text") < text.index("After the pit.")
    # lists and description lists (no mere wrappers): unwrapping them one at a time took minutes for
    # a 37 KB page of 2,000 nested lists, and lost the text from 250 levels down
    for opening, closing in (("<ul><li>item", "</li></ul>"), ("<dl><dt>term</dt><dd>", "</dd></dl>")):
        lists = (f"<html><body><main><h1>Lists</h1>{opening * 2000}<b>deepest</b> text{closing * 2000}"
                 "<h2>After</h2><p>The lighthouse keeper signs the log.</p></main></body></html>")
        page = parse_html(lists, url="https://x.org/lists.html")
        assert [s.headings for s in page.sections] == [(), ("After",)]
        assert "deepest text" in page.sections[0].text and "lighthouse keeper" in page.sections[1].text


@pytest.mark.parametrize("fmt", ["markdown", "mdx"])
def test_markdown_nested_deep_loses_nothing_after_it(fmt: str) -> None:
    """markdown-it's CommonMark preset stops at 20 nesting levels and then skips the rest of the
    enclosing block, which at the top of a page is the rest of the page: a configuration reference
    with ten nested list levels lost its deepest item and every section after it. Twelve levels keep
    their structure; hostile nesting (hundreds of quotes or list markers) keeps its text, flattened."""
    nested = "".join("  " * i + f"- option{i}\n" for i in range(12))
    page = parse_document(f"# Config\n\n{nested}\n## After\n\nThe lighthouse keeper signs the log.\n",
                          fmt=fmt, path="config.md")
    assert [s.headings for s in page.sections] == [(), ("After",)]
    assert page.sections[0].text == "\n".join("  " * i + f"- option{i}" for i in range(12))
    assert page.sections[1].text == "The lighthouse keeper signs the log."
    for deep in (">" * 500 + " bottom text", "- " * 500 + "bottom text", "> 1. " * 300 + "bottom text",
                 "".join("  " * i + f"- level{i}\n" for i in range(300)) + "  " * 300 + "bottom text"):
        page = parse_document(f"# Deep\n\n{deep}\n\n## After\n\nThe lighthouse keeper signs the log.\n",
                              fmt=fmt, path="deep.md")
        assert [s.headings for s in page.sections] == [(), ("After",)]
        assert "bottom text" in page.sections[0].text
        if "level" in deep:
            assert re.findall(r"level\d+\b", page.sections[0].text) == [f"level{i}" for i in range(300)]
        assert page.sections[1].text == "The lighthouse keeper signs the log."


@pytest.mark.parametrize("fmt", ["markdown", "mdx"])
def test_emphasis_nested_without_end_is_read_as_text(fmt: str) -> None:
    """A run of 20,000 '*' on each side nests emphasis 10,000 deep: the syntax tree built from it
    copied the rest of the line at every level (600 KB of them: 2.6 GB) and the page was skipped with
    a RecursionError. Emphasis carries no text, so the text is read without it."""
    body = "# Stars\n\nBefore " + "*" * 20_000 + "the deep word" + "*" * 20_000 + " after.\n\n" \
           "A *normal* and **strong** line.\n"
    page = parse_document(body, fmt=fmt, path="stars.md")
    assert page.sections[0].text.startswith("Before the deep word") and page.sections[0].text.endswith(
        "A normal and strong line.")


def test_a_document_nested_past_the_stack_is_a_parse_error_that_names_it() -> None:
    """docutils and the AsciiDoc parser recurse per nesting level: 400 indented reStructuredText
    blocks or 1,500 nested AsciiDoc blocks raised a bare RecursionError ("parser failed with
    RecursionError: maximum recursion depth exceeded"). It is a ParseError naming the file, the
    format and the fix, so the page is skipped with that reason and its stored chunks stay."""
    rst = "Title\n=====\n\n" + "".join(" " * i + f"para{i}\n\n" for i in range(400))
    adoc = "= T\n\n" + "".join("=" * (4 + i) + "\n" for i in range(1500)) + "x\n" \
           + "".join("=" * (4 + i) + "\n" for i in reversed(range(1500)))
    for body, fmt, path in ((rst, "rst", "guide/deep.rst"), (adoc, "asciidoc", "guide/deep.adoc")):
        with pytest.raises(ParseError, match=rf"^{re.escape(path)}: nested too deeply for the {fmt} parser .*"
                                             r"flatten its nesting or exclude the file$"):
            parse_document(body, fmt=fmt, path=path)


def test_frontmatter_aliases_that_expand_or_contain_themselves_are_parse_errors() -> None:
    """YAML aliases let a few lines describe a huge value: seven lists of nine aliases of the list
    before expand to 4.8 million strings when the metadata is copied and written as JSON (nine
    levels: 387 million, an out-of-memory kill), and ``&a [x, *a]`` contains itself. Both are
    ParseErrors naming the fix (the page is skipped, its stored chunks stay); ordinary aliases work."""
    bomb = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 7))
    cases = {bomb: "its aliases expand it to more than 100,000 values; write the values out or shorten it",
             "a: &a [x, *a]\n": "an alias refers to the value it is part of",
             "a: " + "[" * 5000 + "]" * 5000 + "\n": "it nests too deeply for the YAML parser; flatten it"}
    for frontmatter, reason in cases.items():
        with pytest.raises(ParseError, match=rf"^guide/page\.md: invalid YAML frontmatter \({re.escape(reason)}"):
            parse_document(f"---\ntitle: T\n{frontmatter}---\n\n# H\n\ntext\n", fmt="markdown", path="guide/page.md")
    page = parse_document("---\ntitle: T\nbase: &base {level: 2}\nused: *base\n---\n\n# H\n\ntext\n",
                          fmt="markdown", path="guide/page.md")
    assert page.metadata == {"title": "T", "base": {"level": 2}, "used": {"level": 2}}


def test_a_lone_surrogate_escape_in_yaml_is_a_parse_error_not_a_failed_run() -> None:
    """YAML's ``"\\udc80"`` escape makes a string holding half a UTF-16 surrogate pair, which is no Unicode
    text: it passed the parser and stopped every later refresh of the whole source where the value was
    written (Arrow, the tokenizer). It is this page's ParseError naming the line and the fix, in the
    frontmatter of Markdown and AsciiDoc alike; a real character (escaped with \\U) is kept."""
    for fmt, path in (("markdown", "guide/page.md"), ("mdx", "guide/page.mdx")):
        with pytest.raises(ParseError, match=rf"^{re.escape(path)}: invalid YAML frontmatter \(the string holds "
                                             r"\\udc80, an escape for half of a UTF-16 surrogate pair, .* or remove "
                                             rf"the escape in \"{re.escape(path)}\", line 3, column 14:"):
            parse_document('---\ntitle: T\ndescription: "bad \\udc80 byte"\n---\n\n# H\n\ntext\n', fmt=fmt, path=path)
    page = parse_document('---\ntitle: "smile \\U0001F600"\n---\n\n# H\n\ntext\n', fmt="markdown", path="guide/p.md")
    assert page.metadata["title"] == "smile \U0001F600"
    # the two halves of a pair, as json.dumps writes an emoji (JSON is YAML 1.2), are its one character;
    # before, the page was skipped as holding half a pair (unicode F6)
    page = parse_document('---\n{"title": "Party \\ud83c\\udf89 time", "tag\\ud83c\\udf89": "x"}\n---\n\n# H\n\ntext\n',
                          fmt="markdown", path="guide/party.md")
    assert page.title == "Party \U0001F389 time" and page.metadata["tag\U0001F389"] == "x", page.metadata
    # an integer of more than 4,300 digits: Python's int() refused it with a bare ValueError
    with pytest.raises(ParseError, match=r"^big\.md: invalid YAML frontmatter \(the number has more than 4,300 "
                                         r"digits, .* quote it to keep it as text in \"big\.md\", line 2, column 10:"):
        parse_document("---\nversion: " + "9" * 5000 + "\n---\n# Big\n\ntext\n", fmt="markdown", path="big.md")


def test_a_date_that_does_not_exist_is_a_frontmatter_error_naming_its_line() -> None:
    """``updated: 2024-13-45`` matches YAML's date pattern, and building the date raised a bare
    ValueError: the page was skipped with ``parser failed with ValueError: month must be in 1..12``,
    naming neither the frontmatter nor its line. It is the frontmatter's error, with the line and the
    fix; a real date and a quoted impossible one are kept."""
    for fmt, path in (("markdown", "guide/page.md"), ("mdx", "guide/page.mdx")):
        with pytest.raises(ParseError, match=rf"^{re.escape(path)}: invalid YAML frontmatter \('2024-13-45' is no "
                                             r"date or time \(month must be in 1\.\.12\); correct it, or quote it "
                                             rf"to keep it as text in \"{re.escape(path)}\", line 3, column 10:"):
            parse_document("---\ntitle: T\nupdated: 2024-13-45\n---\n\n# H\n\ntext\n", fmt=fmt, path=path)
    with pytest.raises(ParseError, match=r"'2024-01-01 25:00:00' is no date or time \(hour must be in 0\.\.23\)"):
        parse_document("---\nupdated: 2024-01-01 25:00:00\n---\n# H\n\ntext\n", fmt="markdown", path="p.md")
    page = parse_document('---\nupdated: 2024-01-05\nwhen: "2024-13-45"\n---\n# H\n\ntext\n', fmt="markdown",
                          path="p.md")
    assert page.metadata == {"updated": "2024-01-05", "when": "2024-13-45"}


def test_one_stray_nul_in_a_short_page_is_dropped_not_a_binary_page() -> None:
    """A page under 100 characters with one stray NUL was skipped as binary (the one-NUL-per-100-characters
    rule), against troubleshooting.md's "a few stray NUL bytes in a text file are dropped"; two NULs in
    so short a text still read as binary."""
    page = parse_document("# Tiny\n\nShort page\x00 text here.\n", fmt="markdown", path="tiny.md")
    assert "Short page text here." in page.sections[0].text
    with pytest.raises(ParseError, match="looks binary"):
        parse_document("# Tiny\n\nShort\x00 page\x00 text.\n", fmt="markdown", path="tiny.md")


def test_a_binary_file_under_64_characters_is_binary_too() -> None:
    """A binary file too short for the one-in-ten share of control characters (a truncated PNG of 47
    bytes, a 5-byte blob under a .md name) was indexed as a page of junk (``‰PNG    !"#$%&'``); now it
    is the binary ParseError. A short text with one pasted control character is still text."""
    from docs_rag_pipeline.sources.base import decode_body

    for name, data in {"png-header.md": b"\x89PNG\r\n\x1a\n" + bytes(range(1, 40)),
                       "blob.md": b"\x00\x01\x02\xff\xfe"}.items():
        with pytest.raises(ParseError, match=f"{name}: the document looks binary"):
            parse_document(decode_body(data, None), fmt="markdown", path=name)
    page = parse_document("# Short\n\nPress \x07 to ring.\n", fmt="markdown", path="bell.md")
    assert "to ring" in page.sections[0].text


def test_no_parser_hands_on_a_lone_surrogate() -> None:
    """A character reference to half a UTF-16 surrogate pair becomes U+FFFD, as the HTML and Markdown
    specs say; reStructuredText's ``unicode:: U+DC80`` kept the surrogate itself, which is no Unicode
    text and failed where the chunk was written, stopping the whole run."""
    lone = re.compile("[\ud800-\udfff]")
    cases = {"markdown": "# T\n\nA &#xDC80; b &#55296; c\n",
             "html": "<html><head><title>T</title></head><body><h1>T</h1><p>a &#xDC80; b &#55296;</p></body></html>",
             "rst": "T\n=\n\n.. |x| unicode:: U+DC80\n\na |x| b\n\n|x| heading\n-----------\n\ntext\n\n:field: |x|\n",
             "asciidoc": "= T\n\na &#xDC80; b &#55296; c\n"}
    for fmt, body in cases.items():
        page = parse_document(body, fmt=fmt, path=f"p.{fmt}")
        strings = [page.title, *(x for s in page.sections for x in (s.text, s.anchor, *s.headings)),
                   *map(str, page.metadata.values())]
        assert not any(lone.search(x) for x in strings), (fmt, page)
        assert "\ufffd" in page.sections[0].text, (fmt, page)


def test_every_tab_panel_is_indexed_with_its_label_and_invisible_text_is_not() -> None:
    """Docusaurus and Starlight mark every tab panel but the first ``hidden``: they are content (a
    reader clicks the tab), framed by the tab's markers as a Markdown tab is (``[Tab npm]`` … ``[/Tab]``);
    text styled invisible is not."""
    docusaurus = """<html><head><title>Install</title></head><body><main><h1>Install</h1>
    <p>Install the package with your package manager.</p>
    <div class="tabs-container"><ul role="tablist" class="tabs">
    <li role="tab" aria-selected="true" class="tabs__item">npm</li><li role="tab" class="tabs__item">Yarn</li></ul>
    <div class="margin-top--md"><div role="tabpanel"><pre><code>npm install frobnicate</code></pre></div>
    <div role="tabpanel" hidden=""><pre><code>yarn add frobnicate</code></pre></div></div></div>
    <p style="color: red; display:none !important">Placeholder zebra.</p>
    <p style="visibility: hidden">Invisible quokka.</p><div hidden>Hidden platypus.</div>
    <header hidden><h2>Hidden header</h2></header><span style="font-size: 0px">Tiny wombat.</span>
    <select><option>v1.0 yak</option></select><textarea>Typed echidna.</textarea>
    </main></body></html>"""
    page = parse_html(docusaurus, url="https://x.dev/install/")
    assert [s.text for s in page.sections] == [
        "Install the package with your package manager.\n\n[Tab npm]\n\n```\nnpm install frobnicate\n```\n\n[/Tab]\n\n"
        "[Tab Yarn]\n\n```\nyarn add frobnicate\n```\n\n[/Tab]"
    ]
    starlight = """<html><head><title>Run</title></head><body><main><h1>Run</h1><starlight-tabs>
    <div class="tablist-wrapper"><ul role="tablist"><li role="presentation"><a role="tab" href="#tab-panel-0" id="tab-0"
    aria-selected="true">macOS</a></li><li role="presentation"><a role="tab" href="#tab-panel-1" id="tab-1">Windows</a></li></ul></div>
    <section id="tab-panel-1" aria-labelledby="tab-1" role="tabpanel" hidden><p>Run setup.exe as administrator.</p></section>
    <section id="tab-panel-0" aria-labelledby="tab-0" role="tabpanel"><p>Drag the app to Applications.</p></section>
    </starlight-tabs><p style="display: block">Shown text.</p></main></body></html>"""
    text = parse_html(starlight, url="https://x.dev/run/").sections[0].text
    assert text == ("[Tab Windows]\n\nRun setup.exe as administrator.\n\n[/Tab]\n\n[Tab macOS]\n\n"
                    "Drag the app to Applications.\n\n[/Tab]\n\nShown text.")


def test_a_stray_escape_loses_only_itself_not_the_text_after_it():
    """A whole OSC sequence goes with its ESC only when it is terminated: an unterminated one
    (``ESC ]`` in prose) took up to 2 KB of the page's text with it."""
    from docs_rag_pipeline.parsing import parse_document

    page = parse_document("# Keys\n\nPress \x1b] to jump.\n\nNext section: install with pip.\n"
                          "A link \x1b]8;;https://x.example/\x07here\x1b]8;;\x07 and \x1b[1mbold\x1b[0m.\n",
                          fmt="markdown", path="keys.md")
    text = " ".join(s.text for s in page.sections)
    assert "Press ] to jump." in text and "install with pip." in text, text
    assert "A link here and bold." in text and "\x1b" not in text and "\x07" not in text


@pytest.mark.parametrize("fmt", ["markdown", "html", "rst", "asciidoc"])
def test_bidi_controls_that_reorder_the_text_after_them_are_not_indexed(fmt) -> None:
    """chatpage F5: a right-to-left override (U+202E) in a sentence reverses the rest of its line where
    it is shown, the system's citation marker after it included, and makes ``\u202efdp.exe`` read as
    "exe.pdf" (the Trojan Source trick). Embeddings and overrides go, and an isolate left open; a closed
    isolate (``\u2067שלום\u2069``, a right-to-left word in a left-to-right sentence) and the marks stay."""
    from docs_rag_pipeline.parsing import parse_document

    line = ("The exporter writes \u202efdp.exe\u202c and \u202bx\u202c files, named \u2067שלום\u2069\u200f, "
            "to the \u2066outbox folder.")
    body = {"markdown": f"# Export\n\n{line}\n", "html": f"<h1>Export</h1><p>{line}</p>",
            "rst": f"Export\n======\n\n{line}\n", "asciidoc": f"= Export\n\n{line}\n"}[fmt]
    text = " ".join(s.text for s in parse_document(body, fmt=fmt, path="export.x").sections)
    assert ("The exporter writes fdp.exe and x files, named \u2067שלום\u2069\u200f, to the outbox folder."
            in text), repr(text)


def test_a_web_heading_without_an_id_links_a_text_fragment_not_an_invented_id() -> None:
    """A web heading with no id anywhere (hand-written HTML, CMS pages, an id on a plain wrapper
    ``div``) was linked with a GitHub slug that names no element of the live page, so the citation
    opened the top of the page. It now links a text fragment of the heading (``#:~:text=…``), which
    browsers that support text fragments scroll to and the others open at the top, as before."""
    html = ("<html><head><title>Plain page</title></head><body><main><h1>Plain page</h1><p>Intro.</p>"
            "<h2>No id here</h2><p>First.</p>"
            "<div id='wrapper-config'><h2>Configuration</h2><p>In a wrapper.</p></div>"
            "<h2>Foo-bar, &amp; baz: Café</h2><p>x</p>"
            "<h2 id='install'>Install</h2><p>Has an id.</p></main></body></html>")
    page = parse_html(html, url="https://example.org/plain.html")
    assert [s.anchor for s in page.sections] == [
        "", ":~:text=No%20id%20here", ":~:text=Configuration", ":~:text=Foo%2Dbar%2C%20%26%20baz%3A%20Caf%C3%A9",
        "install"]
    chunks = chunk_page(page, source="web", page_url="https://example.org/plain.html", content_hash="h",
                        updated_at="2026-01-01T00:00:00Z", budget=Budget(window=256, overlap=0),
                        count=lambda t: len(t.split()))
    assert [c.url for c in chunks] == [
        "https://example.org/plain.html",
        "https://example.org/plain.html#:~:text=No%20id%20here",
        "https://example.org/plain.html#:~:text=Configuration",
        # "-", "," and "&" are the directive's syntax: encoded in the text
        "https://example.org/plain.html#:~:text=Foo%2Dbar%2C%20%26%20baz%3A%20Caf%C3%A9",
        "https://example.org/plain.html#install",
    ]
    # Markdown headings keep their GitHub slugs: the site generator gives them those ids
    md = parse_markdown("# T\n\n## No id here\n\nx\n", path="docs/t.md")
    assert [s.anchor for s in md.sections] == ["no-id-here"]


def test_a_text_fragment_names_its_sections_first_words_when_the_page_shows_the_heading_earlier() -> None:
    """A browser opens the first place a page shows a text fragment's text: two id-less
    "Example" headings both opened the first, and a heading named in an earlier sentence opened that
    sentence. Such a heading's fragment also names the first words of its section (``,-suffix``),
    which the earlier place is not followed by. A ``<br>`` in a heading is a space ("Foo Bar", not
    "FooBar", which the page does not show)."""
    html = ("<html><head><title>P</title></head><body><main><h1>P</h1><p>Read Limits first.</p>"
            "<h2>Example</h2><p>Run it once.</p><h2>Limits</h2><p>At most `ten` calls.</p>"
            "<h2>Example</h2><p>Run it twice, then stop.</p><h2>Example</h2><pre>code</pre>"
            "<h2>Foo<br>Bar</h2><p>x</p><h2>Limits</h2><ol><li>Download the file first.</li></ol>"
            "<h2>Limits</h2><div class='admonition' aria-label='Warning'><p>Back up first.</p></div>"
            "</main></body></html>")
    page = parse_html(html, url="https://example.org/p.html")
    assert [(s.headings, s.anchor) for s in page.sections] == [
        ((), ""),
        (("Example",), ":~:text=Example"),
        (("Limits",), ":~:text=Limits,-At%20most"),  # words up to the first with markup
        (("Example",), ":~:text=Example,-Run%20it%20twice%2C%20then"),
        (("Example",), ":~:text=Example"),  # a code block opens it: no words to name
        (("Foo Bar",), ":~:text=Foo%20Bar"),
        # words the page does not show right after the heading as the parser writes them (a list's
        # "1.", drawn by CSS; a title read from aria-label): no suffix (review6 F3)
        (("Limits",), ":~:text=Limits"),
        (("Limits",), ":~:text=Limits"),
    ]
    chunks = chunk_page(page, source="web", page_url="https://example.org/p.html", content_hash="h",
                        updated_at="2026-01-01T00:00:00Z", budget=Budget(window=256, overlap=0),
                        count=lambda t: len(t.split()))
    assert chunks[3].url == "https://example.org/p.html#:~:text=Example,-Run%20it%20twice%2C%20then"


def test_markdown_slugs_are_github_sluggers_of_the_rendered_heading_text() -> None:
    """The slug was made from the display text (spaces collapsed, image alt text added) and kept
    every number; GitHub, rehype-slug and Docusaurus slug the rendered text content. The expected
    ids are github-slugger 2.0.0's for the same text (checked with its own code under node)."""
    cases = [
        ("markdown", "## Foo  Bar\n\nx\n", "foo--bar", "Foo Bar"),
        ("markdown", "## ![logo](logo.png) Setup\n\nx\n", "-setup", "logo Setup"),
        ("markdown", "## Area in m²\n\nx\n", "area-in-m", "Area in m²"),  # No (other) numbers dropped
        ("markdown", "## Tier ½ price\n\nx\n", "tier--price", "Tier ½ price"),
        ("markdown", "## Step Ⅻ\n\nx\n", "step-ⅻ", "Step Ⅻ"),  # Nl (letter) numbers kept
        ("mdx", '## Foo <Badge text="New" /> Bar\n\nx\n', "foo--bar", "Foo Bar"),
    ]
    for fmt, src, anchor, shown in cases:
        page = parse_document(src, fmt=fmt, path="docs/x.mdx" if fmt == "mdx" else "docs/x.md")
        assert [(s.headings, s.anchor) for s in page.sections] == [((shown,), anchor)], src


def test_a_heading_nested_in_a_blockquote_or_list_takes_its_slug_first() -> None:
    """``> ## Setup`` gets the id ``setup`` on GitHub and in every rehype-based generator; it opens no
    section here but took no slug either, so the later real ``## Setup`` was linked ``#setup``,
    which is the quoted heading (github-slugger 2.0.0 gives the real one ``setup-1``)."""
    for src in ("# T\n\n> ## Setup\n> quoted\n\n## Setup\n\nreal\n",
                "# T\n\n- item\n\n  ## Setup\n\n## Setup\n\nreal\n",
                "# T\n\n> ## Quoted {#setup}\n\n## Setup\n\nreal\n"):
        page = parse_markdown(src, path="docs/t.md")
        assert [(s.headings, s.anchor) for s in page.sections if s.headings] == [(("Setup",), "setup-1")], src


def test_a_trailing_hash_of_an_html_heading_is_its_text_not_a_permalink() -> None:
    """``<h2>Using C#</h2>`` was cited as "Using C" and ``<h2>F#</h2>`` as "F": the strip meant for
    permalink glyphs ate the heading's own last character. A glyph is dropped only when a link shows
    nothing else, or when it stands as a word of its own."""
    html = ("<html><head><title>Langs</title></head><body><main><h1>Langs</h1><p>x</p>"
            "<h2 id='using-c'>Using C#<a class='headerlink' href='#using-c'>¶</a></h2><p>a</p>"
            "<h2 id='f'>F#</h2><p>b</p>"
            "<h2 id='setup'>Setup<a href='#setup'>#</a></h2><p>c</p>"
            "<h2 id='run'>Run #</h2><p>d</p>"
            "<h2 id='notes'>Notes¶</h2><p>e</p>"
            "<h2 id='s'>Laws <span>§</span></h2><p>f</p></main></body></html>")
    page = parse_html(html, url="https://docs.example.org/langs.html")
    assert [s.headings[-1] for s in page.sections if s.headings] == ["Using C#", "F#", "Setup", "Run", "Notes", "Laws"]


def test_sphinx_viewcode_source_links_are_chrome_not_signature_text() -> None:
    """Sphinx's viewcode extension puts a "[source]" link after every API signature; its text was kept,
    so chunks and answers read ``class client.auth.DigestAuth(username, password)[source]``. It is page
    chrome like the permalink glyph: dropped by its class, or, without it, as a link into ``_modules/``
    that shows only "[source]". A link elsewhere that says "[source]" is text."""
    html = """<html><head><title>API</title></head><body><main><h1>API</h1>
<dl class="py class"><dt class="sig sig-object py" id="client.auth.DigestAuth"><em class="property">class </em>
<span class="sig-prename descclassname">client.auth.</span><span class="sig-name descname">DigestAuth</span>
<span class="sig-paren">(</span><em class="sig-param">username</em>, <em class="sig-param">password</em><span class="sig-paren">)</span>
<a class="reference internal" href="_modules/client/auth.html#DigestAuth"><span class="viewcode-link"><span class="pre">[source]</span></span></a>
<a class="headerlink" href="#client.auth.DigestAuth" title="Permalink to this definition">¶</a></dt>
<dd><p>Attaches HTTP Digest Authentication to the given request object.</p></dd>
<dt id="client.get">client.get(url)<a href="../_modules/client/api.html#get">[source]</a></dt><dd><p>Sends a GET request.</p></dd></dl>
<p>The raw page is linked as <a href="raw.html">[source]</a>.</p></main></body></html>"""
    text = parse_html(html, url="https://docs.example.org/api.html").sections[0].text
    assert "(username, password)\n" in text and "client.get(url)\n" in text, text
    assert text.count("[source]") == 1 and "linked as [source]." in text, text


def test_a_percent_encoded_permalink_href_is_decoded_to_the_id_it_names() -> None:
    """A heading whose only anchor is its permalink link writes the fragment percent-encoded, as URLs
    are (``href="#%E5%A4%87%E4%BB%BD"`` for the id ``备份``): it was taken as the id itself and encoded
    again when cited, ``#%25E5%25A4%2587…``, which names nothing on the page. It is the id decoded."""
    from docs_rag_pipeline.chunking import url_fragment

    html = ("<html><head><meta charset='utf-8'><title>配置</title></head><body><main><h1>配置</h1>"
            "<h2>备份 <a class='headerlink' href='#%E5%A4%87%E4%BB%BD'>¶</a></h2><p>备份每天创建。</p>"
            "<h2>Größe <a class='headerlink' href='#gr%C3%B6%C3%9Fe'>¶</a></h2><p>Text.</p>"
            "<h2>Plain <a class='headerlink' href='#plain'>¶</a></h2><p>Text.</p></main></body></html>")
    page = parse_html(html, url="https://docs.example.org/zh/config.html")
    assert [s.anchor for s in page.sections if s.headings] == ["备份", "größe", "plain"]
    assert [url_fragment(s.anchor) for s in page.sections if s.headings] == ["备份", "größe", "plain"]


def test_a_section_about_the_sidebar_or_the_toc_is_content_not_chrome() -> None:
    """Chrome was found by words in an element's classes and id, headings and sections included: a
    Sphinx ``<section id="sidebar-configuration">`` lost all its text, a Docusaurus or MkDocs heading
    ``id="default-sidebar"``/``"table-of-contents"`` was dropped and its text cited under the section
    before. A heading is content, and a section that a heading opens is judged by its classes only;
    a sidebar by its id or class is still chrome."""
    sphinx = """<html><head><title>Config</title></head><body><div class="body" role="main">
    <section id="config"><h1>Config<a class="headerlink" href="#config">¶</a></h1><p>Intro.</p>
    <section id="sidebar-configuration"><h2>Sidebar configuration<a class="headerlink" href="#sidebar-configuration">¶</a></h2>
    <p>Set html_sidebars in conf.py.</p></section>
    <div class="section" id="the-breadcrumb-trail"><h2>The breadcrumb trail</h2><p>Breadcrumbs show the path.</p></div>
    <section id="toc"><ul><li><a href="#config">Config</a></li></ul></section>
    <div id="sidebar"><h3>Navigation</h3><p>Menu text.</p></div>
    <dl class="py method"><dt class="sig sig-object py" id="flask.Response.set_cookie">set_cookie(key, value)</dt>
    <dd><p>Sets a cookie.</p></dd></dl>
    </section></div></body></html>"""
    page = parse_html(sphinx, url="https://x.dev/config.html")
    assert [(s.anchor, s.text) for s in page.sections] == [  # (the <dl> after the trail's </div> is the page's)
        ("", "Intro.\n\nset_cookie(key, value)\n  Sets a cookie."), ("sidebar-configuration", "Set html_sidebars in conf.py."),
        ("the-breadcrumb-trail", "Breadcrumbs show the path.")]
    docusaurus = """<html><head><title>Sidebar | Site</title></head><body><main><article><div class="markdown">
    <header><h1>Sidebar</h1></header><p>Intro text.</p>
    <h2 class="anchor anchorWithStickyNavbar_LWe7" id="default-sidebar">Default sidebar<a href="#default-sidebar"
    class="hash-link">&#8203;</a></h2><p>Autogenerated sidebar items.</p>
    <h2 id="table-of-contents">Table of contents</h2><p>Set the toc depth.</p>
    <div class="table-of-contents"><a href="#default-sidebar">Default sidebar</a></div>
    </div></article></main></body></html>"""
    page = parse_html(docusaurus, url="https://x.dev/sidebar/")
    assert [(s.anchor, s.text) for s in page.sections] == [
        ("", "Intro text."), ("default-sidebar", "Autogenerated sidebar items."),
        ("table-of-contents", "Set the toc depth.")]
    # a table layout's sidebar cell, and a nav block whose class only holds "section" (review5 F5)
    layout = """<html><head><title>Old</title></head><body><table><tr>
    <td id="sidebar"><h3>Links</h3><p>Home page link.</p></td>
    <td><h1>Old</h1><h2 id="usage">Usage</h2><p>Run it.</p></td></tr></table>
    <div class="md-nav__section" id="toc"><h3>On this page</h3><p>Usage link.</p></div></body></html>"""
    page = parse_html(layout, url="https://x.dev/old.html")
    assert [(s.anchor, s.text) for s in page.sections] == [("usage", "Run it.")]
    # Doxygen's member table: a group heading in a row, the members rows of plain cells, each one line
    doxygen = """<html><head><title>C</title></head><body><div class="contents"><table class="memberdecls">
    <tr class="heading"><td colspan="2"><h2 class="groupheader"><a name="pub-methods"></a>Public Member Functions</h2></td></tr>
    <tr><td class="memItemLeft">int</td><td class="memItemRight"><a href="x">foo</a> (int x)</td></tr>
    <tr><td class="memItemLeft">void</td><td class="memItemRight">bar ()</td></tr></table></div></body></html>"""
    assert [(s.anchor, s.text) for s in parse_html(doxygen, url="https://x.dev/c.html").sections] == [
        ("pub-methods", "--- | ---\nint | foo (int x)\nvoid | bar ()")]
    # a data table's id is its label's (Sphinx), content however it is named (review6 F1)
    data = """<html><head><title>Opts</title></head><body><main><h1>Opts</h1><p>The options:</p>
    <table id="cookie-options"><tr><th>Option</th><th>Meaning</th></tr><tr><td id="sidebar-width">secure</td>
    <td>Only sent over HTTPS</td></tr></table></main></body></html>"""
    assert parse_html(data, url="https://x.dev/opts.html").sections[0].text == (
        "The options:\n\nOption | Meaning\nsecure | Only sent over HTTPS")


def test_a_br_separates_the_words_it_stands_between() -> None:
    """A ``<br>`` was dropped from the text: ``<p>Line one<br>line two</p>`` read "Line oneline two",
    a word that is on no page. Where the block keeps its lines (a paragraph, an address, a list item,
    a description) it breaks the line, as the Markdown parser keeps a hard break; where a line must
    stay one (a table cell, a term, a heading) it is a space; in a ``<pre>`` it is a line of the code."""
    html = """<html><head><title>Br</title></head><body><main><h1>Br</h1>
    <p>Line one<br>line two</p><p>Slash one<br/>slash two</p>
    <p>See <code>run</code><br>then <em>more<br>words</em></p>
    <address>1 Main St<br>Springfield</address>
    <ul><li>Item a<br>item b</li><li><p>Para a<br>para b</p></li></ul>
    <dl><dt>Term<br>two</dt><dd>Def a<br>def b</dd></dl>
    <table><tr><th>Name<br>(alias)</th><th>Use</th></tr><tr><td>Cell a<br>cell b</td><td>x</td></tr></table>
    <h2 id="h">Head<br>two</h2><pre>code a<br>code b</pre></main></body></html>"""
    intro, section = parse_html(html, url="https://x.dev/br.html").sections
    assert intro.text == (
        "Line one\nline two\n\nSlash one\nslash two\n\nSee `run`\nthen more\nwords\n\n1 Main St\nSpringfield"
        "\n\n- Item a\n  item b\n- Para a\n  para b\n\nTerm two\n  Def a\n  def b"
        "\n\nName (alias) | Use\nCell a cell b | x")
    assert (section.headings, section.text) == (("Head two",), "```\ncode a\ncode b\n```")


def test_blocks_inside_a_table_cell_are_words_apart() -> None:
    """parsefidelity F4: a data table's cell was read as one string of its text nodes, so the blocks in
    it ran together: two paragraphs "First para.Second para.", a list "fastslow", a nested table
    "in1in2" (a table holding a table is read as a layout, its inner table a table of its own), and a page laid out in a table with no heading (a menu column beside the content)
    "HomeIntroductionThis document…". A block in a cell is set apart by spaces, as a browser shows it."""
    html = """<html><head><title>Cells</title></head><body><main><h1>Cells</h1>
    <table><tr><th>Key</th><th>Value</th></tr>
    <tr><td><p>First para.</p><p>Second para.</p></td><td><ul><li>fast</li><li>slow</li></ul></td></tr>
    <tr><td><div>Div a</div>after</td><td>See <code>a</code><div>then</div></td></tr></table>
    <table><tr><td>outer</td><td><table><tr><td>in1</td><td>in2</td></tr></table></td></tr></table>
    <table><tr><td><ul><li><a href="index.html">Home</a></li><li><a href="intro.html">Introduction</a></li></ul></td>
    <td><p>This document describes libxslt.</p><p>Here are some key points:</p></td></tr></table>
    </main></body></html>"""
    (section,) = parse_html(html, url="https://x.dev/cells.html").sections
    assert section.text == (
        "Key | Value\nFirst para. Second para. | fast slow\nDiv a after | See `a` then"
        "\n\nouter\n\nin1 | in2"
        "\n\nHome Introduction | This document describes libxslt. Here are some key points:")


def test_a_page_laid_out_in_nested_tables_reads_as_its_blocks() -> None:
    """An old site lays its page out in nested tables without a heading in them (libxslt's docs: a
    menu column beside a box of boxes holding the content). Read as a data table, the whole page was one
    row, one line of run-together text. A table holding a table, or whose rows have one cell each, lays
    out a page: its cells' paragraphs and lists are blocks, and a row of plain values stays a row."""
    html = """<html><head><title>Introduction</title></head><body>
    <table><tr><td><h1>The C library</h1><h2>Introduction</h2></td></tr></table>
    <table><tr><td><table><tr><td><b>Main Menu</b></td></tr><tr><td><ul><li><a href="index.html">Home</a></li>
    <li><a href="faq.html">FAQ</a></li></ul></td></tr></table></td>
    <td><table><tr><td><table><tr><td><p>This document describes the library.</p><p>Key points:</p>
    <ul><li>It is written in C</li><li>It is fast</li></ul></td></tr></table></td></tr></table></td></tr></table>
    <table><tr><td>Option</td><td>Default</td></tr><tr><td>mode</td><td>fast</td></tr></table>
    </body></html>"""
    text = "\n".join(s.text for s in parse_html(html, url="https://x.dev/intro.html").sections)
    assert text == ("Main Menu\n\n- Home\n- FAQ\n\nThis document describes the library.\n\nKey points:\n\n"
                    "- It is written in C\n- It is fast\n\n--- | ---\nOption | Default\nmode | fast")


def test_prose_that_starts_with_three_backticks_never_opens_a_code_fence() -> None:
    """extractaudit F9: a paragraph whose visible text starts with three backticks (a page about
    Markdown writes "``` on a line of its own opens a code block", as text or in ``<code>``) gave a chunk
    line starting with ```: chunking, the extractive answer and every Markdown client read the page's
    prose as a code block up to the next such line, its first sentence hidden as the info string. Such
    a run at the start of a prose line (tildes too, in a list item too) is now a code span, ``"` ``` `"``
    (a code span takes the shortest backtick run its code does not hold), and only code is fenced;
    the embedded text, the marker rules and cite-correct read it as the page's text."""
    from markdown_it import MarkdownIt

    from docs_rag_pipeline.answering.extractive import extractive_answer
    from docs_rag_pipeline.answering.markers import code_ranges, neutralise, plain_code_spans
    from docs_rag_pipeline.config import RetrievalConfig
    from docs_rag_pipeline.embedding import LocalEmbedder
    from docs_rag_pipeline.evaluation import cite_correct
    from docs_rag_pipeline.records import Hit

    html = """<html><head><title>Code blocks</title></head><body><main><h1>Code blocks</h1>
    <p>``` on a line of its own opens a fenced code block in Markdown.</p>
    <p>Everything up to the closing fence is shown verbatim, in a monospace font.</p>
    <p><code>```</code> on a later line closes the block again.</p>
    <ul><li>~~~ opens a block too.</li></ul><pre>```\nraw\n```</pre></main></body></html>"""
    text = parse_html(html, url="https://x.dev/code.html").sections[0].text
    assert text == ("` ``` ` on a line of its own opens a fenced code block in Markdown.\n\n"
                    "Everything up to the closing fence is shown verbatim, in a monospace font.\n\n"
                    "` ``` ` on a later line closes the block again.\n\n- `~~~` opens a block too.\n\n"
                    "~~~\n```\nraw\n```\n~~~")
    md = parse_markdown("# T\n\n\\`\\`\\` opens a block.\n\n- \\~~~ too\n", path="t.md").sections[0].text
    assert md == "` ``` ` opens a block.\n\n- `~~~` too"
    chunk = chunk_page(ParsedPage("Code blocks", [Section((), "", 1, text)]), source="s",
                       page_url="https://x.dev/code.html", content_hash="h", updated_at="2026-01-01T00:00:00Z",
                       budget=Budget(window=256, overlap=0), count=lambda t: len(t.split()))[0]
    assert len(code_ranges(chunk.text)) == 4  # three spans and the <pre>, no block made of prose
    assert plain_code_spans(chunk.text).startswith("``` on a line of its own opens")  # what is embedded
    assert neutralise(chunk.text) == chunk.text
    hits = [Hit(chunk_id="c1", source="s", url=chunk.url, page_url=chunk.page_url, title="Code blocks",
                headings=[], text=chunk.text, score=0.03, parent_id=None, vector_similarity=0.7)]
    ans = extractive_answer("How do I open a fenced code block in Markdown?", hits, LocalEmbedder(),
                            RetrievalConfig(min_chunk_coverage=0))
    assert not ans.refused and "opens a fenced code block" in ans.answer, ans.answer
    rendered = MarkdownIt("commonmark").render(ans.answer)
    assert "<pre>" not in rendered and "<code>```</code> on a line" in rendered, rendered
    ok, total = cite_correct(ans.answer, ans.citations, lambda cid: chunk.text if cid == "c1" else None)
    assert total >= 1 and ok == total, (ok, total, ans.answer)


@pytest.mark.parametrize("fmt", ["markdown", "mdx"])
def test_a_br_in_a_markdown_table_cell_keeps_its_row_one_line(fmt: str) -> None:
    """A ``<br>`` in a GFM table cell (the only way to break a line in one) became a line break in the
    row: ``| a<br>b | c |`` was the lines "a" and "b | c", a row cut in two that read as a sentence and
    a row of other columns. A row is one line: the ``<br>`` is a space, as in an HTML table's cell. In a
    paragraph it still breaks the line."""
    text = "# T\n\n| Option | Meaning |\n|---|---|\n| `--fast`<br/>`-f` | Go fast.<br>Skips checks. |\n\nOne<br>two\n"
    assert parse_document(text, fmt=fmt, path="t.md").sections[0].text == (
        "Option | Meaning\n`--fast` `-f` | Go fast. Skips checks.\n\nOne\ntwo")
_CELLS_TABLES = {
    "markdown": ("t.md", "# T\n\n| Tier | Quota | Note |\n|---|---|---|\n| Walrus | 30 | <svg onload=alert(1)> |\n"
                         "|  | 40 | unnamed |\n| Lynx | a \\| b | either |\n"),
    "html": ("t.html", "<html><head><title>T</title></head><body><main><h1>T</h1><table>"
                       "<tr><th>Tier</th><th>Quota</th><th>Note</th></tr><tr><td>Walrus</td><td>30</td><td></td></tr>"
                       "<tr><td></td><td>40</td><td>unnamed</td></tr><tr><td>Lynx</td><td>a | b</td><td>either</td></tr>"
                       "</table></main></body></html>"),
    "rst": ("t.rst", "T\n=\n\n.. list-table::\n   :header-rows: 1\n\n   * - Tier\n     - Quota\n     - Note\n"
                     "   * - Walrus\n     - 30\n     -\n   * -\n     - 40\n     - unnamed\n"
                     "   * - Lynx\n     - a | b\n     - either\n"),
    "asciidoc": ("t.adoc", "= T\n\n[options=\"header\"]\n|===\n|Tier |Quota |Note\n|Walrus |30 |\n| |40 |unnamed\n"
                           "|Lynx |a \\| b |either\n|===\n"),
}


@pytest.mark.parametrize("fmt", sorted(_CELLS_TABLES))
def test_a_table_row_keeps_its_empty_edge_cells_and_a_pipe_in_a_cell(fmt: str) -> None:
    """Rows were written ``a | b | c``, so an empty first or last cell (or one holding only a tag the
    parser drops) and a ``|`` inside a cell could not be told from the cell boundaries: a quoted table
    drew "30 |" and "| 40" in the wrong columns and "a", "b" in two (chatpage F3). Every parser now
    writes a ``|`` in a cell as ``\\|`` and keeps an empty edge cell's pipe, and the row reads back as
    the document's cells; an ordinary row is written as before."""
    from docs_rag_pipeline.table_row import row_cells

    path, source = _CELLS_TABLES[fmt]
    text = parse_document(source, fmt=fmt, path=path).sections[0].text
    assert text == "Tier | Quota | Note\nWalrus | 30 |\n| 40 | unnamed\nLynx | a \\| b | either"
    assert [row_cells(ln) for ln in text.split("\n")] == [
        ["Tier", "Quota", "Note"], ["Walrus", "30", ""], ["", "40", "unnamed"], ["Lynx", "a | b", "either"]]


def test_docutils_footnotes_topics_and_sidebar_directives_are_content_a_site_aside_is_not() -> None:
    """docutils >= 0.18 (Sphinx >= 5) writes footnotes, citations, ``.. topic::`` and ``.. sidebar::``
    as ``<aside>``; every ``<aside>`` but an admonition was dropped as chrome, so CPython lost the
    footnotes of 69 pages and its topics' text. They are the author's text, read as the reST parser
    reads them: a footnote as one line led by its label, a topic or sidebar directive (its
    ``p.sidebar-title``) as its title then its body. A site's ``<aside>`` sidebar and a docutils table of
    contents stay chrome (parsefidelity F3)."""
    html = """<html><head><title>Intro</title></head><body><main><h1>Intro</h1>
<p>Quotes give the same result<a class="footnote-reference brackets" href="#id4" id="id2" role="doc-noteref">
<span class="fn-bracket">[</span>2<span class="fn-bracket">]</span></a>.</p>
<nav class="contents" id="contents" role="doc-toc"><p class="topic-title">Contents</p><ul><li>Intro</li></ul></nav>
<aside class="topic contents"><p class="topic-title">Contents</p><ul><li>Old toc</li></ul></aside>
<aside class="topic"><p class="topic-title">Abstract</p><p>Best practices for annotations.</p></aside>
<aside class="sidebar"><p class="sidebar-title">Tutorial</p><p>For a gentler introduction, see the tutorial.</p></aside>
<aside class="sidebar"><h3>Site menu</h3><ul><li>Home</li></ul></aside>
<aside class="theme-doc-sidebar-container"><ul><li>Tutorial Intro</li></ul></aside>
<aside class="footnote-list brackets">
<aside class="footnote brackets" id="id4" role="note"><span class="label"><span class="fn-bracket">[</span>
<a role="doc-backlink" href="#id2">2</a><span class="fn-bracket">]</span></span>
<span class="backrefs">(<a role="doc-backlink" href="#id2">1</a>,<a role="doc-backlink" href="#id3">2</a>)</span>
<p>Special characters such as \\n mean the same in both quotes.</p></aside></aside>
</main></body></html>"""
    assert parse_html(html, url="https://docs.example.org/intro.html").sections[0].text == (
        "Quotes give the same result [2].\n\nAbstract\nBest practices for annotations.\n\n"
        "Tutorial\nFor a gentler introduction, see the tutorial.\n\n"
        "[2] Special characters such as \\n mean the same in both quotes.")


def test_a_pre_whose_lines_are_elements_gives_one_code_line_per_element() -> None:
    """Expressive Code (Starlight's code renderer) writes each line of a block as
    ``<div class="ec-line">`` with no newline between them, some highlighters a ``<span class="line">``
    or a ``<div>`` per line: the whole block was read as one line, ``npm create astro@latestcd
    my-project``. Each line element is a line; lines already ended by a newline get no blank line
    between them (parsefidelity F5)."""
    blocks = [
        '<pre data-language="sh"><code><div class="ec-line"><div class="code"><span>npm</span><span> create '
        'astro@latest</span></div></div><div class="ec-line"><div class="code"><span>cd my-project</span></div>'
        '</div><div class="ec-line"><div class="code"><span>npm run dev</span></div></div></code></pre>',
        '<pre class="shiki"><code><span class="line"><span>npm</span><span> create astro@latest</span></span>'
        '<span class="line">cd my-project</span><span class="line">npm run dev</span></code></pre>',
        "<pre><div>npm create astro@latest</div><div>cd my-project</div><div>npm run dev</div></pre>",
        '<pre><code><span class="line">npm create astro@latest</span>\n<span class="line">cd my-project</span>\n'
        '<span class="line">npm run dev\n</span></code></pre>',
    ]
    for block in blocks:
        html = f"<html><head><title>Install</title></head><body><main><h1>Install</h1>{block}</main></body></html>"
        text = parse_html(html, url="https://docs.example.org/install/").sections[0].text
        assert "\nnpm create astro@latest\ncd my-project\nnpm run dev\n```" in text, (block, text)


def test_a_first_h1_after_text_that_the_title_does_not_name_is_a_section_not_the_title() -> None:
    """Doxygen shows a page's title in ``div.headertitle`` (no heading) and writes each ``\\section`` as
    an ``<h1>``: the first of them was taken for the page title, so its section lost its heading and
    anchor (its text cited as the page top) and its subsections lost it from their path. A first H1 with
    text before it that the ``<title>`` does not name opens a section; an H1 at the top, or one the
    ``<title>`` names after a banner, is still the title (parsefidelity F7)."""
    doxygen = """<html><head><title>Doxygen: Doxywizard usage</title></head><body>
<div class="header"><div class="headertitle"><div class="title">Doxywizard usage</div></div></div>
<div class="contents"><div class="textblock"><p>Doxywizard is a GUI front-end.</p>
<h1><a class="anchor" id="dw_wizard"></a>Wizard tab</h1><p>The Wizard tab has two panes.</p>
<h2><a class="anchor" id="dw_wizard_project"></a>Project settings</h2><p>Set the project name.</p>
<h1><a class="anchor" id="dw_expert"></a>Expert tab</h1><p>All options.</p></div></div></body></html>"""
    page = parse_html(doxygen, url="https://www.doxygen.nl/manual/doxywizard_usage.html")
    assert page.title == "Doxygen: Doxywizard usage"
    assert [(s.headings, s.anchor, s.text) for s in page.sections] == [
        ((), "", "Doxywizard usage\n\nDoxywizard is a GUI front-end."),
        (("Wizard tab",), "dw_wizard", "The Wizard tab has two panes."),
        (("Wizard tab", "Project settings"), "dw_wizard_project", "Set the project name."),
        (("Expert tab",), "dw_expert", "All options.")]
    banner = """<html><head><title>Install | Acme Docs</title></head><body><main>
<p>This is the documentation of an old version.</p><h1 id="install">Install</h1><p>Run it.</p></main></body></html>"""
    page = parse_html(banner, url="https://docs.example.org/install/")
    assert (page.title, [(s.headings, s.text) for s in page.sections]) == (
        "Install", [((), "This is the documentation of an old version.\n\nRun it.")])
    top = """<html><head><title>Setup guide</title></head><body><main><h1>Installing</h1><p>Run it.</p>
<h1>Usage</h1><p>Use it.</p></main></body></html>"""
    page = parse_html(top, url="https://docs.example.org/setup/")
    assert (page.title, [(s.headings, s.text) for s in page.sections]) == (
        "Setup guide", [((), "Run it."), (("Usage",), "Use it.")])


def test_a_table_keeps_its_caption_and_the_cells_beside_its_code() -> None:
    """A table's ``<caption>`` was dropped (only rows were read: Sphinx's ``.. table:: Title``, Javadoc's
    summaries), and a data table holding a ``<pre>`` kept only its code, not its header row or the
    descriptions beside each example. The caption is a line before the table; each row's other cells
    are a row before its code. A Sphinx line-numbered code table still gives only its code
    (parsefidelity F8)."""
    html = """<html><head><title>Opts</title></head><body><main><h1>Opts</h1>
<table class="docutils" id="id1"><caption><span class="caption-text">Priority ranges</span>
<a class="headerlink" href="#id1">¶</a></caption><thead><tr><th>Priority</th><th>Purpose</th></tr></thead>
<tbody><tr><td>0-99</td><td>Fix invalid nodes.</td></tr></tbody></table>
<table><tr><th>Option</th><th>Example</th></tr><tr><td>Enable the cache</td><td><pre>cache: true</pre></td></tr>
<tr><td>Disable telemetry</td><td><pre>telemetry: off</pre></td></tr></table>
<div class="highlight-python"><table class="highlighttable"><tr><td class="linenos"><div class="linenodiv">
<pre>1\n2</pre></div></td><td class="code"><div class="highlight"><pre>import os\nprint(os.sep)</pre></div></td></tr>
</table></div></main></body></html>"""
    assert parse_html(html, url="https://docs.example.org/opts.html").sections[0].text == (
        "Priority ranges\n\nPriority | Purpose\n0-99 | Fix invalid nodes.\n\n"
        "Option | Example\n\nEnable the cache\n\n```\ncache: true\n```\n\n"
        "Disable telemetry\n\n```\ntelemetry: off\n```\n\n```python\nimport os\nprint(os.sep)\n```")


def test_a_line_numbered_code_table_keeps_its_language() -> None:
    """Sphinx's ``:linenos:`` writes Pygments' line-numbered table: the ``<pre>`` is in a cell of its
    own, more than three levels under the ``highlight-python`` block that names its language, which
    was lost (the code fenced without it). The line numbers stay out of the text."""
    html = """<html><head><title>Run</title></head><body><main><h1>Run</h1><p>Start it:</p>
<div class="highlight-python notranslate"><div class="highlight"><table class="highlighttable"><tbody><tr>
<td class="linenos"><div class="linenodiv"><pre><span class="normal">1</span>\n<span class="normal">2</span></pre></div></td>
<td class="code"><div class="highlight"><pre><span></span>import os\nprint(os.sep)</pre></div></td></tr></tbody>
</table></div></div></main></body></html>"""
    assert parse_html(html, url="https://docs.example.org/run.html").sections[0].text == (
        "Start it:\n\n```python\nimport os\nprint(os.sep)\n```")


@pytest.mark.parametrize("generator, block", [
    # Hugo (Chroma) with lineNos inline: a number span before each line's code span, inside the <pre>
    ("hugo-inline", '<div class="highlight"><pre tabindex="0" class="chroma"><code class="language-sh" data-lang="sh">'
                    '<span class="line"><span class="ln">1</span><span class="cl">hugo new site quickstart\n</span></span>'
                    '<span class="line"><span class="ln">2</span><span class="cl">cd quickstart\n</span></span></code></pre></div>'),
    # Hugo (Chroma) with lineNos: table: the numbers in a <pre> of a cell of their own
    ("hugo-table", '<div class="highlight"><div class="chroma"><table class="lntable"><tr><td class="lntd">'
                   '<pre tabindex="0" class="chroma"><code><span class="lnt">1\n</span><span class="lnt">2\n</span></code></pre></td>'
                   '<td class="lntd"><pre tabindex="0" class="chroma"><code class="language-sh" data-lang="sh">'
                   '<span class="line"><span class="cl">hugo new site quickstart\n</span></span>'
                   '<span class="line"><span class="cl">cd quickstart\n</span></span></code></pre></td></tr></table></div></div>'),
    # VitePress (line-numbers-mode): the numbers in an aria-hidden wrapper beside the <pre>
    ("vitepress", '<div class="language-sh vp-adaptive-theme line-numbers-mode"><pre class="shiki vp-code" tabindex="0">'
                  '<code><span class="line"><span>hugo new site quickstart</span></span>\n<span class="line"><span>cd quickstart'
                  '</span></span></code></pre><div class="line-numbers-wrapper" aria-hidden="true">'
                  '<span class="line-number">1</span><br><span class="line-number">2</span><br></div></div>'),
    # Prism's line-numbers plugin, its rows written out
    ("prism", '<pre class="line-numbers language-sh"><code class="language-sh">hugo new site quickstart\ncd quickstart'
              '<span aria-hidden="true" class="line-numbers-rows"><span>1</span><span>2</span></span></code></pre>'),
])
def test_line_numbers_of_generators_beside_their_code_stay_out_of_it(generator: str, block: str) -> None:
    """A code block's line numbers are its renderer's, not the code's: Hugo's were glued to each line
    (``1hugo new site quickstart``) or read as a code block of their own (``1\n2``), VitePress' and
    Prism's as text after the code; only Pygments' (Sphinx, MkDocs) stayed out."""
    html = (f"<html><head><title>Install</title></head><body><main><h1>Install</h1><p>Create a site:</p>{block}"
            "</main></body></html>")
    assert parse_html(html, url="https://docs.example.org/install/").sections[0].text == (
        "Create a site:\n\n```sh\nhugo new site quickstart\ncd quickstart\n```"), generator


def _install_page_sections(main: str) -> list[tuple[str, str]]:
    """(anchor, text) of each section of a page titled Install whose ``<main>`` holds ``main``."""
    page = parse_html(f"<html><head><title>Install</title></head><body><main>{main}</main></body></html>",
                      url="https://docs.example.org/install/")
    return [(s.anchor, s.text) for s in page.sections]


@pytest.mark.parametrize(("generator", "block", "label"), [
    ("vitepress", '<div class="language-sh vp-adaptive-theme"><button title="Copy Code" class="copy"></button>'
     '<span class="lang">sh</span><pre class="shiki vp-code"><code><span class="line"><span>npm</span>'
     '<span> add -D vitepress</span></span></code></pre></div>', ""),
    ("label after the code, in a wrapper", '<div class="highlight-sh"><div class="highlight"><pre>npm add -D vitepress'
     '</pre></div><div class="code-lang">Sh</div></div>', ""),
    ("a file name", '<div class="language-sh"><span class="filename">install.sh</span><pre><code>npm add -D vitepress'
     '</code></pre></div>', "install.sh\n\n"),
])
def test_a_code_blocks_language_label_is_not_read_as_text(generator: str, block: str, label: str) -> None:
    """VitePress writes a code block's language in its corner (``<span class="lang">sh</span>``), and it
    was read as a line of text before the code (``sh``), which the fence already names; a label beside
    the code that says more than the language (a file name) stays."""
    html = (f"<html><head><title>Start</title></head><body><main><h1>Start</h1><p>Install it:</p>{block}"
            "<p>sh</p></main></body></html>")
    assert parse_html(html, url="https://docs.example.org/start/").sections[0].text == (
        f"Install it:\n\n{label}```sh\nnpm add -D vitepress\n```\n\nsh"), generator


@pytest.mark.parametrize(("generator", "block", "fence"), [
    ("Pandoc", '<div class="sourceCode" id="cb1"><pre class="sourceCode python"><code class="sourceCode python">'
     '<span id="cb1-1"><a href="#cb1-1" aria-hidden="true" tabindex="-1"></a>run(x)</span></code></pre></div>',
     "python"),
    ("Pandoc, numbered lines", '<div class="sourceCode" id="cb2"><pre class="sourceCode numberSource r numberLines">'
     '<code class="sourceCode r">run(x)</code></pre></div>', "r"),
    ("Quarto", '<div class="sourceCode cell-code" id="cb3"><pre class="sourceCode python code-with-copy">'
     '<code class="sourceCode python">run(x)</code></pre></div>', "python"),
    ("rustdoc", '<div class="example-wrap"><pre class="rust rust-example-rendered"><code>run(x)</code></pre></div>',
     "rust"),
    ("a styling class only", '<pre class="literal-block highlight"><code>run(x)</code></pre>', ""),
    ("a language class on the wrapper only", '<div class="python"><pre><code>run(x)</code></pre></div>', ""),
])
def test_a_code_blocks_language_is_read_from_pandoc_and_bare_classes(generator: str, block: str, fence: str) -> None:
    """Pandoc and Quarto name a block's language by a class of its own after ``sourceCode``, rustdoc by a bare
    ``rust``; the fence had no language for them (a ``sourceCode `` prefix was looked for, which no class can
    hold). A bare class is a language only on the ``<pre>`` or ``<code>`` and only a common language's name."""
    html = f"<html><head><title>Run</title></head><body><main><h1>Run</h1><p>Call it:</p>{block}</main></body></html>"
    assert parse_html(html, url="https://docs.example.org/run/").sections[0].text == (
        f"Call it:\n\n```{fence}\nrun(x)\n```"), generator


def test_a_list_used_for_layout_gives_its_headings_sections() -> None:
    """Javadoc puts each member's details, headed by an ``<h3>`` in a ``<section id="trimToSize()">``, in a
    ``<li>``: the whole page read as one nested list (``- Method Details``, ``  - trimToSize``), so no member had
    its section nor the anchor Javadoc's links point at. A list that holds no heading stays a list."""
    html = ('<html><head><title>ArrayList</title></head><body><main><h1>Class ArrayList</h1><p>A resizable array.</p>'
            '<ul><li>Fast</li><li>Ordered</li></ul>'
            '<section class="details"><ul class="details-list"><li><section class="method-details" id="method-detail">'
            '<h2>Method Details</h2><ul class="member-list"><li><section class="detail" id="trimToSize()"><h3>trimToSize'
            '</h3><div class="member-signature">public void trimToSize()</div><div class="block">Trims the capacity.</div>'
            '</section></li><li><section class="detail" id="ensureCapacity(int)"><h3>ensureCapacity</h3><div class="block">'
            'Increases the capacity.</div></section></li></ul></section></li></ul></section></main></body></html>')
    page = parse_html(html, url="https://docs.example.org/api/ArrayList.html")
    got = [(s.anchor, s.headings, s.text) for s in page.sections if s.text]
    assert got == [("", (), "A resizable array.\n\n- Fast\n- Ordered"),
                   ("trimToSize()", ("Method Details", "trimToSize"), "public void trimToSize()\n\nTrims the capacity."),
                   ("ensureCapacity(int)", ("Method Details", "ensureCapacity"), "Increases the capacity.")]


def test_typedocs_member_index_is_chrome_and_its_title_loses_the_site_name() -> None:
    """TypeDoc opens a class page with an "Index" accordion listing its members' links under headings that the
    members' own sections repeat; they were read as sections of the page (``Methods``: ``connect close``) and
    its title kept the site's name (``Client | my-lib``: the H1 names the kind, ``Class Client``). An "Index"
    that holds text of its own stays."""
    index = ('<details class="tsd-index-content tsd-accordion" open><summary class="tsd-accordion-summary"><h5>Index'
             '</h5></summary><div><section><h3>Methods</h3><div class="tsd-index-list"><a href="Client.html#connect">'
             '<span>connect</span></a> <a href="Client.html#close"><span>close</span></a></div></section></div></details>')
    prose = '<details><summary>Index</summary><p>An index speeds up lookups by <a href="#key">key</a>.</p></details>'
    html = ('<html><head><title>Client | my-lib</title></head><body><main><h1>Class Client</h1><p>A client.</p>{}'
            '<section><h2>Methods</h2><section><h3 id="connect">connect</h3><p>Opens the connection.</p></section>'
            '</section></main></body></html>')
    page = parse_html(html.format(index), url="https://docs.example.org/classes/Client.html")
    assert page.title == "Client"
    assert [(s.headings, s.text) for s in page.sections if s.text] == [
        ((), "A client."), (("Methods", "connect"), "Opens the connection.")]
    page = parse_html(html.format(prose), url="https://docs.example.org/classes/Client.html")
    assert page.sections[0].text == "A client.\n\nIndex\n\nAn index speeds up lookups by key."


@pytest.mark.parametrize(("summary", "kept"), [
    ('<summary class="hideme"><span>Expand description</span></summary>', ""),  # rustdoc's top doc
    ("<summary>Click to expand</summary>", ""),
    ("<summary>Show more</summary>", ""),
    ("<summary>Code</summary>", ""),  # Quarto's code-fold
    ("<summary>Show the code</summary>", ""),
    ("<summary>Show the config file</summary>", "Show the config file\n\n"),
    ("<summary>Expanding variables</summary>", "Expanding variables\n\n"),
])
def test_a_summary_that_only_names_its_toggle_is_not_text(summary: str, kept: str) -> None:
    """rustdoc opens every item's description with a toggle labelled "Expand description", which was read as
    the first line of the description; a summary that says what the details hold stays."""
    html = (f"<html><head><title>Vec</title></head><body><main><h1>Vec</h1><details open>{summary}<div><p>A growable "
            "array type.</p></div></details></main></body></html>")
    assert parse_html(html, url="https://docs.example.org/vec/").sections[0].text == f"{kept}A growable array type."


@pytest.mark.parametrize(("generator", "ref", "note"), [
    ("Python-Markdown (MkDocs)", '<sup id="fnref:1"><a class="footnote-ref" href="#fn:1">1</a></sup>',
     '<div class="footnote"><hr><ol><li id="fn:1"><p>In mkdocs.yml.&nbsp;<a class="footnote-backref" href="#fnref:1" '
     'title="Jump back to footnote 1 in the text">&#8617;</a></p></li></ol></div>'),
    ("Pandoc", '<a href="#fn1" class="footnote-ref" id="fnref1" role="doc-noteref"><sup>1</sup></a>',
     '<section id="footnotes" class="footnotes" role="doc-endnotes"><hr><ol><li id="fn1"><p>In mkdocs.yml.'
     '<a href="#fnref1" class="footnote-back" role="doc-backlink">↩︎</a></p></li></ol></section>'),
    ("remark-gfm (Docusaurus)", '<sup><a href="#user-content-fn-1" id="user-content-fnref-1" data-footnote-ref '
     'aria-describedby="footnote-label">1</a></sup>',
     '<section data-footnotes class="footnotes"><ol><li id="user-content-fn-1"><p>In mkdocs.yml. '
     '<a href="#user-content-fnref-1" data-footnote-backref aria-label="Back to reference 1" '
     'class="data-footnote-backref">↩</a></p></li></ol></section>'),
    ("kramdown (Jekyll)", '<sup id="fnref:1" role="doc-noteref"><a href="#fn:1" class="footnote" rel="footnote">1</a></sup>',
     '<div class="footnotes" role="doc-endnotes"><ol><li id="fn:1" role="doc-endnote"><p>In mkdocs.yml. '
     '<a href="#fnref:1" class="reversefootnote" role="doc-backlink">&#8617;</a></p></li></ol></div>'),
])
def test_a_footnote_reference_reads_as_its_label_and_its_back_link_is_left_out(generator: str, ref: str,
                                                                              note: str) -> None:
    """Markdown renderers write a footnote's reference as its bare number, which was glued to the word
    before it (``theme1``, a word of its own for search), and end the note with a ``↩`` back link; the
    reference now reads ``[1]``, as docutils writes it, and the glyph link goes."""
    html = (f"<html><head><title>Setup</title></head><body><main><h1>Setup</h1><p>Configure the theme{ref}.</p>"
            f"{note}</main></body></html>")
    text = "\n\n".join(s.text for s in parse_html(html, url="https://docs.example.org/setup/").sections)
    assert text == "Configure the theme[1].\n\n1. In mkdocs.yml.", generator


def test_a_docutils_footnote_keeps_its_label_and_back_link() -> None:
    """docutils' reference and note already read ``[1]``; the back link there is the note's label."""
    html = ('<html><head><title>S</title></head><body><main><h1>S</h1><p>See the theme<a class="footnote-reference '
            'brackets" href="#id2" id="id1" role="doc-noteref"><span class="fn-bracket">[</span>1<span '
            'class="fn-bracket">]</span></a>.</p><aside class="footnote brackets" id="id2" role="doc-footnote"><span '
            'class="label"><span class="fn-bracket">[</span><a role="doc-backlink" href="#id1">1</a><span '
            'class="fn-bracket">]</span></span><p>In conf.py.</p></aside></main></body></html>')
    assert parse_html(html, url="https://docs.example.org/s/").sections[0].text == "See the theme[1].\n\n[1] In conf.py."


@pytest.mark.parametrize(("generator", "tabs"), [
    ("MkDocs Material (pymdownx.tabbed, alternate style)",
     '<div class="tabbed-set tabbed-alternate" data-tabs="1:2"><input checked="checked" id="__tabbed_1_1" '
     'name="__tabbed_1" type="radio"><input id="__tabbed_1_2" name="__tabbed_1" type="radio"><div class="tabbed-labels">'
     '<label for="__tabbed_1_1">pip</label><label for="__tabbed_1_2">docker</label></div><div class="tabbed-content">'
     '<div class="tabbed-block"><p>pip install it.</p></div><div class="tabbed-block"><p>docker pull it.</p></div>'
     '</div></div>'),
    ("sphinx-design", '<div class="sd-tab-set docutils"><input checked="checked" id="sd-tab-item-0" name="sd-tab-set-0" '
     'type="radio"><label class="sd-tab-label" for="sd-tab-item-0">pip</label><div class="sd-tab-content docutils">'
     '<p>pip install it.</p></div><input id="sd-tab-item-1" name="sd-tab-set-0" type="radio"><label '
     'class="sd-tab-label" for="sd-tab-item-1">docker</label><div class="sd-tab-content docutils"><p>docker pull it.'
     '</p></div></div>'),
])
def test_tabs_made_of_radio_buttons_lead_each_panel_with_its_label(generator: str, tabs: str) -> None:
    """CSS-only tabs (radio inputs and their labels, no ARIA roles) read as ARIA tabs do: each panel framed by
    its tab's markers (``[Tab pip]`` … ``[/Tab]``). Material's row of labels was read as one run of words, ``pipdocker``, before
    panels that named no tab; sphinx-design's labels were lines without the lead-in."""
    html = (f"<html><head><title>Install</title></head><body><main><h1>Install</h1><p>Pick one.</p>{tabs}"
            "</main></body></html>")
    assert parse_html(html, url="https://docs.example.org/install/").sections[0].text == (
        "Pick one.\n\n[Tab pip]\n\npip install it.\n\n[/Tab]\n\n[Tab docker]\n\ndocker pull it.\n\n[/Tab]"), generator


@pytest.mark.parametrize("notice", [
    '<div class="theme-doc-version-banner alert alert--warning" role="alert"><div>This is unreleased documentation '
    'for Site <b>Next</b> version.</div></div><span class="theme-doc-version-badge badge">Version: Next</span>',
    '<div id="version-warning" class="admonition"><p>You are not reading the most recent version of this '
    'documentation.</p></div>',
    '<div class="announcementBar_mb4j" role="banner">Version 3.0 is out!</div>',
    '<div class="version-switcher__container dropdown"><button>v2.1 (stable)</button><div>v2.0 v1.9</div></div>',
])
def test_a_sites_version_banner_badge_switcher_or_announcement_is_chrome(notice: str) -> None:
    """A site's notice about its own versions (Docusaurus' unreleased-version banner and ``Version: Next``
    badge, an outdated-version warning, a version switcher) or an announcement bar was the first text
    of every page's first chunk; a section about versions that its heading opens stays content."""
    assert _install_page_sections(f'{notice}<h1>Install</h1><p>Run make.</p><section id="version-warning"><h2>Version '
                                  'warning</h2><p>Set version_warning: true.</p></section>') == [
        ("", "Run make."), ("version-warning", "Set version_warning: true.")], notice


@pytest.mark.parametrize(("generator", "html", "expected"), [
    ("Starlight: a permalink's text for screen readers",
     '<div class="sl-heading-wrapper level-h2"><h2 id="title">Title</h2><a class="sl-anchor-link" href="#title"><span '
     'aria-hidden="true" class="sl-anchor-icon"><svg></svg></span><span class="sr-only">Section titled “Title”'
     '</span></a></div><p>The site title.</p>', [("", "Run make."), ("title", "The site title.")]),
    ("Docsy: a Bootstrap alert's heading is its title, not a section",
     '<div class="alert alert-warning" role="alert"><h4 class="alert-heading">Warning</h4>Use the extended edition.</div>'
     '<p>Then build.</p>', [("", "Run make.\n\nWarning\nUse the extended edition.\n\nThen build.")]),
    ("a page's date: Docusaurus, Docsy, GitBook (no class)",
     '<span class="theme-last-updated">Last updated on <b><time datetime="2024-01-01">Jan 1, 2024</time></b></span>'
     '<div class="td-page-meta__lastmod">Last modified January 1, 2024: <a href="/c/abc">Fix typo (abc1234)</a></div>'
     '<div class="flex"><p class="text-sm">Last updated 3 months ago</p></div>', [("", "Run make.")]),
    ("GitBook: a pager link and a feedback question without classes",
     '<div class="flex mt-6"><a class="group text-sm" href="/intro"><span class="flex"><span class="text-xs">Previous'
     '</span><span>Introduction</span></span></a><a href="/next"><span>Next</span><span>Usage</span></a></div>'
     '<div class="flex"><p>Was this helpful?</p></div>', [("", "Run make.")]),
    ("just-the-docs: a collapsed table of contents",
     '<details open=""><summary class="text-delta">Table of contents</summary><ol id="markdown-toc"><li><a '
     'href="#logo" id="markdown-toc-logo">Logo</a></li></ol></details>', [("", "Run make.")]),
    ("Antora: a toolbar that is an ARIA navigation landmark, and the page's version menu",
     '<div class="toolbar" role="navigation"><button class="nav-toggle"></button><div class="page-versions"><button '
     'class="version-menu-toggle">2.0</button><div class="version-menu"><a class="version is-current" href="a.html">2.0'
     '</a><a class="version" href="../1.5/a.html">1.5</a></div></div></div><div class="page-versions">2.0</div>',
     [("", "Run make.")]),
    ("Mintlify: a navigation bar named by its id, and a search landmark",
     '<div id="navbar" class="z-30 fixed top-0 w-full"><a href="/">Acme</a><a href="/api">API Reference</a></div>'
     '<div role="search"><input type="text"> Search or ask</div>', [("", "Run make.")]),
    ("rustdoc: a source link beside a signature",
     '<section id="method.new" class="method"><a class="src rightside" href="../../src/alloc/vec/mod.rs.html#420">'
     'source</a><h4 class="code-header">pub const fn new() -&gt; Vec&lt;T&gt;</h4><p>Constructs a new Vec.</p></section>',
     [("", "Run make."), ("method.new", "Constructs a new Vec.")]),
])
def test_site_text_of_doc_themes_is_chrome(generator: str, html: str, expected: list) -> None:
    """Text a doc theme adds to every page was indexed as the page's: a permalink's screen-reader text
    (``Section titled “Title”``, the first words of every section of a Starlight site), an alert's heading
    taken for a section that swallowed the text after the alert, the page's date, a pager link read as
    ``PreviousIntroduction``, "Was this helpful?", the label of a collapsed table of contents, rustdoc's
    ``source`` link glued to each method's signature."""
    assert _install_page_sections(f"<h1>Install</h1><p>Run make.</p>{html}") == expected, generator


def test_an_asciidoctor_admonition_reads_as_its_label_and_text() -> None:
    """Asciidoctor's HTML (Antora sites) writes an admonition as a table of an icon cell and a content cell:
    it read as a table row, ``| Use the API.``, without its label. It reads as other admonitions do,
    its label (the icon's text or title, else its kind) a line before its text."""
    html = ('<html><head><title>Attributes</title></head><body><main><h1>Attributes</h1><div class="admonitionblock tip">'
            '<table><tr><td class="icon"><i class="fa icon-tip" title="Tip"></i></td><td class="content">Use the API.</td>'
            '</tr></table></div><div class="admonitionblock warning"><table><tr><td class="icon"></td><td class="content">'
            '<div class="paragraph"><p>Back up first.</p></div></td></tr></table></div></main></body></html>')
    assert parse_html(html, url="https://docs.example.org/attributes/").sections[0].text == (
        "Tip\nUse the API.\n\nWarning\nBack up first.")


@pytest.mark.parametrize(("generator", "end", "kept"), [
    ("Nextra: two neighbour links, arrows only", '<div class="mt-16"></div><div class="mb-8 flex items-center border-t">'
     '<a title="Introduction" class="flex" href="/docs"><svg></svg>Introduction</a><a title="Themes" class="flex ml-auto"'
     ' href="/docs/themes">Themes<svg></svg></a></div>', ""),
    ("Mintlify: one link to the next page", '<div class="mb-12 px-0.5 flex"><a class="flex group" href="/introduction">'
     '<svg></svg><span class="group-hover:text-gray-900">Introduction</span></a></div>', ""),
    ("a link out of the site", '<div><a href="https://github.com/acme/acme">Acme on GitHub</a></div>',
     "\n\nAcme on GitHub"),
    ("a list of pages", '<ul><li><a href="/a">Install</a></li><li><a href="/b">Configure</a></li></ul>',
     "\n\n- Install\n- Configure"),
    ("a link with words around it", '<div>Next, read <a href="/b">Configure</a>.</div>', "\n\nNext, read Configure."),
])
def test_unlabelled_links_to_neighbour_pages_that_end_the_content_are_chrome(generator: str, end: str,
                                                                            kept: str) -> None:
    """Nextra and Mintlify end a page with links to the previous and next page that show only their
    titles and arrows: they were read as the page's last sentence, ``IntroductionThemes``. A block of one or
    two links to the site's pages and nothing else, ending the content, is navigation; a link out of the
    site, a list of links or a link in a sentence stays."""
    html = (f"<html><head><title>Start</title></head><body><main><h1>Start</h1><p>Install the packages.</p>{end}"
            "</main></body></html>")
    assert parse_html(html, url="https://docs.example.org/start/").sections[0].text == (
        f"Install the packages.{kept}"), generator


def test_the_button_of_a_css_only_toggle_is_not_text() -> None:
    """pdoc shows each function's source behind a checkbox and its ``<label for>`` ("View Source"), which
    was read as a line of every entry; a radio tab's label still leads its panel."""
    html = ('<html><head><title>acme.client</title></head><body><main><h1>acme.client</h1><p>The client module.</p>'
            '<input id="connect-view-source" class="view-source-toggle-state" type="checkbox" aria-hidden="true">'
            '<div class="attr function"><span class="name">connect(url)</span><label class="view-source-button" '
            'for="connect-view-source"><span>View Source</span></label></div><p>Open a connection.</p>'
            '</main></body></html>')
    assert parse_html(html, url="https://docs.example.org/acme/client.html").sections[0].text == (
        "The client module.\n\nconnect(url)\n\nOpen a connection.")


def test_short_text_about_dates_or_help_inside_the_content_stays() -> None:
    """The rules above read a short block's whole text: a sentence that mentions an update or help stays."""
    html = ("<html><head><title>Cache</title></head><body><main><h1>Cache</h1><p>Last updated entries are kept.</p>"
            "<p>Was this command helpful to you in CI? Tell us.</p><details><summary>Contents of the cache</summary>"
            "<p>Keys and values.</p></details></main></body></html>")
    assert parse_html(html, url="https://docs.example.org/cache/").sections[0].text == (
        "Last updated entries are kept.\n\nWas this command helpful to you in CI? Tell us.\n\n"
        "Contents of the cache\n\nKeys and values.")


@pytest.mark.parametrize("widget", [
    '<div class="feedback">Was this page helpful? <button>Yes</button><button>No</button></div>',
    '<div class="feedback-toolbar"><span>Was this page helpful?</span><button>Yes</button><button>No</button></div>',
    '<section class="md-feedback" hidden><h4 class="md-feedback__title">Was this page helpful?</h4></section>',
    '<div id="page-feedback"><p>Did this page help you?</p><a href="/issues/new">Open an issue</a></div>',
])
def test_a_was_this_page_helpful_widget_is_chrome(widget: str) -> None:
    """A feedback widget under the page ("Was this page helpful? Yes / No") was indexed as the last
    sentence of the page's last section, and answered questions about help; a section about feedback,
    opened by its heading, stays content."""
    assert _install_page_sections(f'<h1>Install</h1><p>Run make.</p>{widget}<section id="feedback"><h2>Feedback</h2>'
                                  '<p>Send feedback with POST /feedback.</p></section>') == [
        ("", "Run make."), ("feedback", "Send feedback with POST /feedback.")], widget


def test_navigation_without_nav_elements_is_chrome() -> None:
    """Generators that mark navigation without ``<nav>`` had it indexed as text, neighbour pages' titles
    in the first and last chunk of every page: DocBook XSL's ``div.navheader``/``div.navfooter``
    (Valgrind), texinfo 7's ``div.nav-panel`` and texinfo 6's ``div.header`` (libffi: ``Next: Types,
    Previous: The Basics, Up: …``, a class that names nothing: its links lead to neighbour pages by
    ``rel``/``accesskey``), Doxygen's ``div.navpath`` and "Generated by" ``address.footer``. A class
    whose name holds ``nav`` as a part, or a block of nothing but such links, is chrome; a paragraph
    with a ``rel="next"`` link among other text, and a class like ``canvas-note``, are content
    (parsefidelity F9)."""
    docbook = """<html><head><title>Chapter 3. Using Things</title></head><body>
<div class="navheader"><table summary="Navigation header"><tr><th colspan="3">Chapter 3. Using Things</th></tr>
<tr><td><a accesskey="p" href="ch02.html">Prev</a></td><th> </th><td><a accesskey="n" href="ch04.html">Next</a></td></tr>
</table><hr></div><div class="chapter"><h1 class="title"><a name="using"></a>Chapter 3. Using Things</h1>
<p>Real chapter text.</p><p class="canvas-note">Drawn on a canvas.</p>
<p>Read <a rel="next" href="ch04.html">the next chapter</a> once this one works for you.</p></div>
<div class="navfooter"><hr><table summary="Navigation footer"><tr><td><a accesskey="p" href="ch02.html">Prev</a></td>
<td><a accesskey="u" href="index.html">Up</a></td><td><a accesskey="n" href="ch04.html">Next</a></td></tr>
<tr><td>Chapter 2. Installing Zebras</td><td><a accesskey="h" href="index.html">Home</a></td>
<td>Chapter 4. Configuring Llamas</td></tr></table></div></body></html>"""
    texinfo6 = """<html><head><title>Simple Example (libffi)</title></head><body><div class="section" id="Simple-Example">
<div class="header"><p>Next: <a href="Types.html" accesskey="n" rel="next">Types</a>, Previous: <a href="The-Basics.html"
accesskey="p" rel="prev">The Basics</a>, Up: <a href="Using-libffi.html" accesskey="u" rel="up">Using libffi</a> &nbsp;
[<a href="Index.html" title="Index" rel="index">Index</a>]</p></div><hr>
<h3 class="section">2.2 Simple Example</h3><p>Here is a trivial example.</p></div></body></html>"""
    texinfo7 = texinfo6.replace('class="header"', 'class="nav-panel"').replace(' accesskey="n" rel="next"', "")
    doxygen = """<html><head><title>Doxygen: FAQ</title></head><body><div id="nav-path" class="navpath">
<ul><li class="navelem"><a class="el" href="index.html">Doxygen</a></li></ul></div>
<div class="contents"><div class="textblock"><p>Answers to questions.</p></div></div>
<hr class="footer"/><address class="footer"><small>Generated by&#160;<a href="https://www.doxygen.org/">doxygen</a>
1.9.4</small></address></body></html>"""
    texts = ["\n".join(s.text for s in parse_html(html, url="https://e.org/p.html").sections)
             for html in (docbook, texinfo6, texinfo7, doxygen)]
    assert texts == [
        "Real chapter text.\n\nDrawn on a canvas.\n\nRead the next chapter once this one works for you.",
        "Here is a trivial example.", "Here is a trivial example.", "Answers to questions."]


def test_a_theme_wrapper_named_after_navigation_keeps_the_content() -> None:
    """A theme names the wrapper of the page after the navigation beside it (Read the Docs'
    ``wy-nav-content``, ``wy-grid-for-nav``): a class holding ``nav`` makes navigation chrome only when
    the element holds no heading and no more than 40 words outside links, or a page without
    ``role="main"`` lost all of its text."""
    prose = " ".join(f"word{i}" for i in range(45))
    pages = [
        '<html><head><title>T</title></head><body><div class="wy-grid-for-nav"><div class="wy-nav-content">'
        '<h1>T</h1><p>Body words here.</p><h2 id="o">Options</h2><p>The level.</p></div></div></body></html>',
        f'<html><head><title>T</title></head><body><div class="wy-nav-content"><p>{prose}</p></div></body></html>',
    ]
    texts = [[(s.headings, s.text) for s in parse_html(h, url="https://e.org/p.html").sections] for h in pages]
    assert texts == [[((), "Body words here."), (("Options",), "The level.")], [((), prose)]]


def test_soft_hyphens_are_not_indexed_in_any_format() -> None:
    """A soft hyphen (U+00AD, ``&shy;``) is a hyphenation hint a browser shows only at a line break; it
    stayed inside the indexed word (``docu\\xadmentation``), which no search for "documentation" finds.
    Every format's text, headings and title lose it; an anchor keeps it, since it must name the id the
    page has (parsefidelity F10)."""
    html = ("<html><head><title>Docu&shy;mentation</title></head><body><main><h1>Docu&shy;mentation</h1>"
            "<h2 id='bu&shy;ild'>Build&shy;ing</h2><p>The docu&shy;mentation build.</p></main></body></html>")
    page = parse_document(html, fmt="html", path="https://docs.example.org/docs.html")
    assert (page.title, [(s.headings, s.anchor, s.text) for s in page.sections]) == (
        "Documentation", [(("Building",), "bu\u00adild", "The documentation build.")])
    page = parse_document("# Docu\u00admentation\n\n## Build&shy;ing\n\nThe docu&shy;mentation build.\n",
                          fmt="markdown", path="docs.md")
    assert (page.title, [(s.headings, s.text) for s in page.sections]) == (
        "Documentation", [(("Building",), "The documentation build.")])
    page = parse_document("Docu\u00admentation\n=============\n\nThe docu\u00admentation build.\n", fmt="rst",
                          path="docs.rst")
    assert (page.title, [s.text for s in page.sections]) == ("Documentation", ["The documentation build."])


def test_an_xhtml_page_is_parsed_without_a_warning() -> None:
    """A page that opens with ``<?xml …?>`` (XHTML, as DocBook and old sites write it) made bs4 warn
    on stderr, once per page of every ingest, that it looked like XML; a browser reads it as HTML and
    so do we, with no warning."""
    import warnings

    html = ('<?xml version="1.0" encoding="ISO-8859-1"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
            '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n<html xmlns="http://www.w3.org/1999/xhtml">'
            '<head><meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1" /><style type="text/css">\n'
            + "TD {font-family: Verdana,Arial,Helvetica}\n" * 20 + "</style>"  # bs4 misreads one of over 512 bytes
            "<title>Intro</title></head><body><h1>Intro</h1><p>Some text.</p></body></html>")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        page = parse_html(html, url="https://x.dev/intro.html")
    assert [str(w.message)[:60] for w in caught] == []
    assert [s.text for s in page.sections] == ["Some text."]


def test_an_mdx_component_keeps_the_text_its_attributes_show() -> None:
    """A self-closing component without a label attribute disappeared, and with one kept only the
    label: ``<Since v="5.7.0" />`` (577 badges in the Astro docs, *Added in: astro@5.7.0*) lost the
    version, a ``<LinkCard>``'s description was lost (a card grid read as a list of titles), an
    Aside's title too. Now a component's text attributes (title, label, description, caption, alt,
    summary) are its label and lines after its marker, and a self-closing one with none of them shows
    its other short string attributes, never ids, classes, links, sizes, icons, booleans or
    ``client:`` directives."""
    src = (
        "## Config\n\n"
        "<Since v=\"5.7.0\" />\n\n"
        "Added with <Since pkg=\"@astrojs/netlify\" v=\"8.0.0\" /> inline.\n\n"
        "<Badge class=\"neutral-badge\" text=\"Community\" />\n\n"
        "<Widget id=\"w1\" className=\"c\" src=\"/img/a.png\" href=\"https://x.org/\" to=\"/en/guide/\" width=\"3\" "
        "icon=\"rocket\" client:load hidden=\"true\" data-x=\"y\" />\n\n"
        "<DontEditWarning/>\n\n"
        "<CardGrid>\n  <LinkCard\n    title=\"Understand your codebase\"\n"
        "    description=\"Learn about the file structure.\"\n    href=\"/en/basics/project-structure/\"\n  />\n"
        "</CardGrid>\n\n"
        "<Image src={logo} alt=\"The logo\" />\n\n"
        "<Aside type=\"caution\" title=\"Heads up\">\nMind the gap.\n</Aside>\n\n"
        "## Foo <Badge text=\"New\" /> Bar\n\nx\n"
    )
    sections = by_headings(parse_markdown(src, path="c.mdx", mdx=True))
    assert sections[("Config",)].text == (
        "[Since 5.7.0]\n\nAdded with [Since @astrojs/netlify 8.0.0] inline.\n\n[Badge Community]\n\n"
        "[CardGrid]\n\n[LinkCard Understand your codebase]\nLearn about the file structure.\n\n[/CardGrid]\n\n"
        "[Image The logo]\n\n[Aside caution]\nHeads up\n\nMind the gap.\n\n[/Aside]"
    )
    # a heading is its text without a badge's value, and its slug is the site's
    assert sections[("Foo Bar",)].anchor == "foo--bar"


def test_an_api_fields_component_keeps_the_fields_name() -> None:
    """Mintlify's API reference fields, ``<ParamField query="limit" type="integer">`` and ``<ResponseField
    name="id" type="string">``, read ``[ParamField integer]`` and ``[ResponseField string]``: the label was
    the type, the field's name was in no chunk, and every field of a page read alike (asked about the
    ``limit`` parameter, the answer quoted the descriptions of three other fields). The field's name is
    the label now, and its type, ``required``, ``deprecated`` and default a line after the marker, as
    Mintlify shows them; a component without a field's name keeps its label as before."""
    src = (
        "## Parameters\n\n"
        '<ParamField query="limit" type="integer" default="10" required>\n  At most this many results.\n</ParamField>\n\n'
        '<ParamField header="X-Api-Key" type="string" deprecated>\n  Your key.\n</ParamField>\n\n'
        '<ParamField path="/users/{id}">\n  Not a field: a path with no type.\n</ParamField>\n\n'
        '<ResponseField name="metadata" type="object">\n  <Expandable title="properties">\n'
        '    <ResponseField name="created_at" type="string">\n      When the user was created.\n'
        '    </ResponseField>\n  </Expandable>\n</ResponseField>\n\n'
        '<Aside type="caution" title="Heads up">\nMind the gap.\n</Aside>\n\n'
        "## Icons <Icon name=\"star\" />\n\nx\n"
    )
    sections = by_headings(parse_markdown(src, path="api/users.mdx", mdx=True))
    assert sections[("Parameters",)].text == (
        "[ParamField limit]\ninteger, required, default: 10\n\nAt most this many results.\n\n[/ParamField]\n\n"
        "[ParamField X-Api-Key]\nstring, deprecated\n\nYour key.\n\n[/ParamField]\n\n"
        "[ParamField]\n\nNot a field: a path with no type.\n\n[/ParamField]\n\n"
        "[ResponseField metadata]\nobject\n\n[Expandable properties]\n\n[ResponseField created_at]\nstring\n\n"
        "When the user was created.\n\n[/ResponseField]\n\n[/Expandable]\n\n[/ResponseField]\n\n"
        "[Aside caution]\nHeads up\n\nMind the gap.\n\n[/Aside]"
    ), sections[("Parameters",)].text
    assert ("Icons",) in sections  # an icon's name is no part of its heading


def test_a_table_of_contents_marker_and_a_snippets_block_show_nothing() -> None:
    """VitePress' ``[[toc]]`` (markdown-it's table-of-contents plugins; ``${toc}`` too) is drawn as the
    page's table of contents and was indexed as the text ``[[toc]]``; the block form of a pymdownx.snippets
    include (a bare ``--8<--`` line, one file a line, a bare ``--8<--``) left its file names as a paragraph.
    Both show nothing now (a source resolves the snippets first); in code they stay as written."""
    src = ("# Guide\n\n[[toc]]\n\nIntro.\n\n## Setup\n\n${toc}\n\n--8<--\nincludes/a.md\nincludes/b.md\n--8<--\n\n"
           "Text.\n\n```md\n[[toc]]\n```\n")
    page = parse_markdown(src, path="guide.md")
    assert [s.text for s in page.sections] == ["Intro.", "Text.\n\n```md\n[[toc]]\n```"], page.sections


def test_mkdocs_admonitions_and_content_tabs_read_as_their_text_not_as_code() -> None:
    """MkDocs writes an admonition (``!!! note "Title"``, pymdownx.details' ``??? tip``) and a content tab
    (``=== "pip"``) with its body indented under it, which Markdown reads as an indented code block: the
    admonition's prose was code, and a tab's fenced code a code block wrapping the fence. Each is now a
    marker pair, its body read as Markdown; a fence that shows the syntax, and a line that only looks
    like it, stay as written."""
    src = ('## Install\n\n!!! note "Before you start"\n\n    Make sure Python is *installed*.\n\n    Then make a venv.\n\n'
           "???+ tip\n    A hidden tip.\n\n"
           '=== "pip"\n\n    Run:\n\n    ```bash\n    pip install foo\n    ```\n\n'
           '=== "Markdown"\n\n    ``` markdown\n    !!! note\n\n        Lorem ipsum\n    ```\n\n'
           "After the tabs: !!! is not a block here.\n\n"
           '- A step.\n\n    !!! warning "Careful"\n        Back up first.\n')
    text = parse_document(src, fmt="markdown", path="install.md").sections[0].text
    assert text == ("[note Before you start]\n\nMake sure Python is installed.\n\nThen make a venv.\n\n[/note]\n\n"
                    "[tip]\n\nA hidden tip.\n\n[/tip]\n\n"
                    "[Tab pip]\n\nRun:\n\n```bash\npip install foo\n```\n\n[/Tab]\n\n"
                    "[Tab Markdown]\n\n```markdown\n!!! note\n\n    Lorem ipsum\n```\n\n[/Tab]\n\n"
                    "After the tabs: !!! is not a block here.\n\n"
                    "- A step.\n  [warning Careful]\n  Back up first.\n  [/warning]")


def test_a_md_page_that_imports_and_uses_components_is_read_as_mdx() -> None:
    """Docusaurus compiles ``.md`` files as MDX: such a page's ``import`` lines were its first sentence and its
    tabs lost their labels. A ``.md`` page that imports and uses a component is read as MDX now; one that only
    shows an import in code, or only writes an HTML tag, stays Markdown."""
    src = ("import Tabs from '@theme/Tabs';\nimport TabItem from '@theme/TabItem';\n\n## Install\n\n<Tabs>\n"
           '<TabItem value="npm" label="npm">\n\nRun `npm i foo`.\n\n</TabItem>\n</Tabs>\n')
    assert parse_document(src, fmt="markdown", path="install.md").sections[0].text == (
        "[Tabs]\n\n[TabItem npm]\n\nRun `npm i foo`.\n\n[/TabItem]\n\n[/Tabs]")
    plain = "## Use\n\n```js\nimport Tabs from '@theme/Tabs';\n```\n\n<Tabs>{x}</Tabs> stays.\n"
    assert parse_document(plain, fmt="markdown", path="use.md").sections[0].text == (
        "```js\nimport Tabs from '@theme/Tabs';\n```\n\n{x} stays.")


def test_markdown_extension_lines_that_show_nothing_are_not_text() -> None:
    """Lines the page never shows were text: attribute lists (``{: .note }``, glued to the paragraph they mark),
    abbreviation definitions, pymdownx.snippets' ``--8<--`` includes, ``[TOC]``; mkdocstrings'
    ``::: mypkg.client.Client`` was read as a ``:::`` directive ``[mypkg .client.Client]`` and its options as
    code. The object's name is a line of code now; a ``:::tip`` directive is still one."""
    src = ("## Callouts\n\n{: .note }\nA note.\n\nA warning.\n{: .warning }\n\n*[HTML]: Hyper Text Markup Language\n\n"
           '--8<-- "includes/abbreviations.md"\n\n[TOC]\n\n::: mypkg.client.Client\n    options:\n      show_source: false\n\n'
           "Text after.\n\n:::tip\nA directive.\n:::\n")
    assert parse_document(src, fmt="markdown", path="c.md").sections[0].text == (
        "A note.\n\nA warning.\n\n`mypkg.client.Client`\n\nText after.\n\n[tip]\n\nA directive.\n\n[/tip]")


def test_hugo_shortcodes_inside_a_line_and_escaped_ones_read_as_the_page_shows_them() -> None:
    """A Hugo shortcode inside a line (``{{< param "version" >}} is current.``, ``{{< youtube id >}}``, a pair
    around a word) was indexed as written; an escaped one, as Hugo's own docs show a shortcode
    (``{{</* notice */>}}``, in code above all), read ``{{</* notice />}}``. A shortcode inside a line shows its
    text arguments or nothing (its output is not known), a pair keeps the text it holds, and an escaped one
    reads as the page shows it, ``{{< notice >}}``, in code too; a code span keeps what it holds."""
    src = ('## Use\n\nPress {{< kbd >}}Ctrl{{< /kbd >}} now. {{< param "version" >}} is current. '
           'Video: {{< youtube w7Ft2ymGmfc >}} {{< figure src="a.png" caption="The dashboard" >}}\n\n'
           'Write `{{< param "x" >}}` or {{</* notice */>}}.\n\n```go-html-template\n{{</* notice warning */>}}\nText\n'
           '{{</* /notice */>}}\n```\n')
    assert parse_markdown(src, path="use.md").sections[0].text == (
        "Press Ctrl now. is current. Video: The dashboard\n\n"
        "Write `{{< param \"x\" >}}` or {{< notice >}}.\n\n```go-html-template\n{{< notice warning >}}\nText\n{{< /notice >}}\n```")


def test_hugo_shortcodes_and_liquid_tags_read_as_the_page_shows_them() -> None:
    """A Hugo or Jekyll page's template tags were text: ``{{< highlight go >}} fmt.Println() {{< /highlight >}}``
    one paragraph, a notice's ``{{% notice tip %}}`` around its text, a link written ``[Install]({{< ref
    "install.md" >}})`` not read as a link, a ``{% comment %}`` block shown. A tag shown in code stays."""
    src = ('## Hugo\n\nSee [Install]({{< ref "install.md" >}}) and [docs]({{ site.baseurl }}/docs/).\n\n'
           '{{< highlight go "linenos=table" >}}\nfmt.Println("hi")\n{{< /highlight >}}\n\n'
           "{{% notice tip %}}\nUse **hugo server**.\n{{% /notice %}}\n\n"
           '{{< figure src="x.png" caption="The build graph" >}}\n\n{{< youtube w7Ft2ymGmfc >}}\n\n'
           '{% include note.html content="Keep it short." %}\n\n{% highlight ruby %}\nputs 1\n{% endhighlight %}\n\n'
           "{% raw %}{{ page.title }}{% endraw %}\n\n{% comment %}\nhidden\n{% endcomment %}\n\n"
           "Write `{% raw %}` or `{{ site.baseurl }}` in code.\n\n```liquid\n{% include x.html %}\n```\n")
    assert parse_document(src, fmt="markdown", path="hugo.md").sections[0].text == (
        "See Install and docs.\n\n```go\nfmt.Println(\"hi\")\n```\n\n[notice tip]\n\nUse hugo server.\n\n[/notice]\n\n"
        "[figure The build graph]\n\nKeep it short.\n\n```ruby\nputs 1\n```\n\n{{ page.title }}\n\n"
        "Write `{% raw %}` or `{{ site.baseurl }}` in code.\n\n```liquid\n{% include x.html %}\n```")


def test_a_github_alert_reads_as_an_admonition() -> None:
    """``> [!WARNING]`` opened the quote's first sentence (``[!WARNING] Back up your data.``); a GitHub alert
    (or an Obsidian callout with its title) is a marker pair around its body now. ``[!NOTE]`` inside a quote,
    or shown in code, stays as written."""
    src = ("## Backups\n\n> [!WARNING]\n> Back up your data.\n> Twice.\n\n> [!tip] Before you start\n> Read *this*.\n\n"
           "> first line\n> [!NOTE]\n> not an alert\n\n```md\n> [!NOTE]\n> shown syntax\n```\n")
    assert parse_document(src, fmt="markdown", path="backups.md").sections[0].text == (
        "[warning]\n\nBack up your data. Twice.\n\n[/warning]\n\n[tip Before you start]\n\nRead this.\n\n[/tip]\n\n"
        "first line [!NOTE] not an alert\n\n```md\n> [!NOTE]\n> shown syntax\n```")


def test_myst_directives_roles_and_targets_read_as_the_page_shows_them() -> None:
    """MyST (Sphinx's Markdown): an admonition fence ```` ```{warning} ```` was a code block of prose, a
    ```` ```{code-block} python ```` a block without its language and with its ``:caption:`` and
    ``:linenos:`` lines as code, a ``{toctree}`` a code block of page paths, a role ``{py:func}`~pkg.run```
    text with its ``{py:func}``, and ``(install)=`` and ``%`` comment lines text. A page without MyST's
    marks keeps a line starting with ``%``, and code keeps what looks like a role."""
    src = ("(install)=\n## Install\n\n% a comment\n\nCall {py:func}`~mypkg.core.run`, see {ref}`the setup <setup>`.\n\n"
           "```{warning}\nBack up first.\n```\n\n:::{dropdown} Advanced\n:open:\n\nSet `cache`.\n:::\n\n"
           "````{tab-set}\n```{tab-item} pip\nRun pip.\n```\n````\n\n"
           "```{code-block} python\n:caption: conf.py\n:linenos:\n\nextensions = []\n```\n\n"
           "```{toctree}\n:maxdepth: 2\n\ninstall\n```\n\n```python\nx = {py:func}`run`\n```\n")
    text = parse_document(src, fmt="markdown", path="install.md").sections[0].text
    assert text == ("Call `run`, see the setup.\n\n[warning]\n\nBack up first.\n\n[/warning]\n\n"
                    "[dropdown Advanced]\n\nSet `cache`.\n\n[/dropdown]\n\n"
                    "[tab-set]\n\n[tab-item pip]\n\nRun pip.\n\n[/tab-item]\n\n[/tab-set]\n\n"
                    "conf.py\n```python\nextensions = []\n```\n\n```python\nx = {py:func}`run`\n```")
    plain = "## Rates\n\n%d of requests fail.\n\nIt supports `${rotation}` and `{pid}`, `{x}`.\n"
    assert parse_document(plain, fmt="markdown", path="rates.md").sections[0].text == (
        "%d of requests fail.\n\nIt supports `${rotation}` and `{pid}`, `{x}`.")


def test_a_code_groups_tab_labels_and_a_fences_language_read_as_the_site_shows_them() -> None:
    """A VitePress code group's tabs are labelled in brackets (```` ```sh [npm] ````) and a Mintlify
    ``<CodeGroup>``'s by the words after the language (```` ```bash yarn ````): the blocks read without
    them, so an answer quoted two install commands without saying which is whose. The label is a line
    above its block now, as a ``title="…"`` is. VitePress' highlighted lines and options after the
    language (```` ```js{4} ````, ```` ```ts:line-numbers ````) were fenced as the language ``js{4`` and
    ``ts:line-numbers``; the language is ``js`` and ``ts``. Options an MDX page writes after the
    language (``showLineNumbers``, ``{1,3}``, ``frame="terminal"``, ``npm2yarn``) are no title."""
    vp = ("## Install\n\n::: code-group\n\n```sh [npm]\nnpm install frob\n```\n\n```sh [pnpm]\npnpm add frob\n```\n\n:::\n\n"
          "```js{4}\nconst a = 1\n```\n\n```ts:line-numbers {1}\nlet b\n```\n")
    assert parse_markdown(vp, path="g.md").sections[0].text == (
        "[code-group]\n\nnpm\n```sh\nnpm install frob\n```\n\npnpm\n```sh\npnpm add frob\n```\n\n[/code-group]\n\n"
        "```js\nconst a = 1\n```\n\n```ts\nlet b\n```")
    mint = ("## Install\n\n<CodeGroup>\n\n```bash npm\nnpm i -g frob\n```\n\n```bash yarn\nyarn global add frob\n```\n\n"
            "</CodeGroup>\n\n```js showLineNumbers {1,3} frame=\"terminal\" npm2yarn\nx\n```\n\n"
            "```astro /<slot .*?/>/ \"Astro props\"\ny\n```\n")
    assert parse_markdown(mint, path="g.mdx", mdx=True).sections[0].text == (
        "[CodeGroup]\n\nnpm\n```bash\nnpm i -g frob\n```\n\nyarn\n```bash\nyarn global add frob\n```\n\n[/CodeGroup]\n\n"
        "```js\nx\n```\n\n```astro\ny\n```")


def test_a_myst_ref_to_a_label_of_the_same_page_shows_its_sections_title() -> None:
    """A MyST ``{ref}`setup-label``` to a ``(setup-label)=`` target of the same page read as the label,
    ``See setup-label``, words the page never shows: Sphinx shows the title of the section the label
    names, as the reStructuredText parser already reads ``:ref:``. A ref with a title of its own, or to a
    label of another page, reads as before."""
    src = ("# P\n\n(Setup-Label)=\n## Setting *things* up {#setup}\n\nx\n\n## Other\n\n"
           "See {ref}`setup-label`, {ref}`the setup <setup-label>` and {ref}`elsewhere`.\n")
    sections = by_headings(parse_markdown(src, path="g.md"))
    assert sections[("Other",)].text == "See Setting things up, the setup and elsewhere."


def test_a_docusaurus_code_block_component_reads_as_its_code_block() -> None:
    """Docusaurus' ``<CodeBlock language="yaml" title="frob.yml">{`…`}</CodeBlock>`` shows a code block; its
    template literal read as one line of prose, ``level: 3 cache: true``. It is that code block, its title a
    line above; one whose code is a variable (``{Source}``, a raw-loader import) stays as before, and a page
    that shows the component in code keeps it."""
    src = ("## Config\n\n<CodeBlock language=\"yaml\" title=\"frob.yml\">\n{`level: 3\ncache: true\n  nested: \\`x\\``}\n"
           "</CodeBlock>\n\n```jsx\n<CodeBlock language=\"js\">{`a`}</CodeBlock>\n```\n")
    assert parse_markdown(src, path="c.mdx", mdx=True).sections[0].text == (
        "frob.yml\n```yaml\nlevel: 3\ncache: true\n  nested: `x`\n```\n\n"
        "```jsx\n<CodeBlock language=\"js\">{`a`}</CodeBlock>\n```")


def test_a_vitepress_home_page_is_indexed_with_the_text_its_frontmatter_shows() -> None:
    """A VitePress home page (``layout: home``) shows its hero and features from its frontmatter and has
    little Markdown of its own: it was indexed empty (or skipped), titled from its file name. Its hero's
    name, text and tagline and its features (title and details, HTML read as its text) lead its text now,
    and the hero's name is its title when the frontmatter has no ``title``; another page's ``hero`` is
    metadata only."""
    src = ("---\nlayout: home\nhero:\n  name: Frob\n  text: The fastest frobnicator\n  tagline: Uses <code>x</code> &amp; y\n"
           "  actions:\n    - text: Get Started\n      link: /guide/\nfeatures:\n  - title: Blazing fast\n"
           "    details: Ten million <b>widgets</b> a second.\n  - icon: x\n---\n\n## More\n\nBody.\n")
    page = parse_markdown(src, path="index.md")
    assert page.title == "Frob"
    assert [(s.headings, s.text) for s in page.sections] == [
        ((), "Frob\nThe fastest frobnicator\nUses x & y\n\n- Blazing fast: Ten million widgets a second."),
        (("More",), "Body.")]
    other = parse_markdown("---\nhero:\n  name: Frob\n---\n\nBody.\n", path="about.md")
    assert other.title == "About" and [s.text for s in other.sections] == ["Body."]


def test_a_tab_without_a_label_is_labelled_by_its_value() -> None:
    """Docusaurus labels a ``<TabItem value="npm">`` without a ``label`` by its value; it read ``[TabItem]``."""
    src = "## Install\n\n<Tabs>\n<TabItem value=\"npm\">\n\nnpm text\n\n</TabItem>\n<TabItem value=\"yarn\" label=\"Yarn\">\n\nyarn text\n\n</TabItem>\n</Tabs>\n"
    assert parse_markdown(src, path="t.mdx", mdx=True).sections[0].text == (
        "[Tabs]\n\n[TabItem npm]\n\nnpm text\n\n[/TabItem]\n\n[TabItem Yarn]\n\nyarn text\n\n[/TabItem]\n\n[/Tabs]")


@pytest.mark.parametrize("fmt", ["markdown", "mdx"])
def test_a_code_blocks_title_is_kept_as_a_line_above_it(fmt: str) -> None:
    """```` ```astro title="src/pages/post/[slug].astro" ```` (Expressive Code, Docusaurus, MkDocs
    Material: the file name shown above the code) lost its title; the info string was cut to the
    language. Now the title is a line right above the block, as AsciiDoc's ``.Title`` is."""
    src = ("## Add a page\n\nCreate the page:\n\n```astro title=\"src/pages/post/[slug].astro\" {2}\n<h1>{slug}</h1>\n```\n\n"
           "- In a list:\n\n  ```js filename='astro.config.mjs'\n  x\n  ```\n\n```sh\nplain\n```\n")
    text = parse_document(src, fmt=fmt, path="g.mdx" if fmt == "mdx" else "g.md").sections[0].text
    assert text == ("Create the page:\n\nsrc/pages/post/[slug].astro\n```astro\n<h1>{slug}</h1>\n```\n\n"
                    "- In a list:\n  astro.config.mjs\n```js\nx\n```\n\n```sh\nplain\n```")


def test_a_literal_jsx_expression_in_mdx_text_reads_as_its_value() -> None:
    """``**Default:** {Infinity}`` read ``Default: {Infinity}``; the page shows *Default: Infinity*.
    A literal (a number, Infinity, a string) is its value, a boolean or null shows nothing, and any
    other expression stays as written."""
    src = ("## T\n\n**Default:** {Infinity}\n\nThe answer is {42}, {1e3} and {\"quoted *text*\"};{' '}"
           "done{true}.\n\nName: {props.name}.\n\nCode `{42}` stays.\n")
    assert parse_markdown(src, path="c.mdx", mdx=True).sections[0].text == (
        "Default: Infinity\n\nThe answer is 42, 1000 and quoted *text*; done.\n\nName: {props.name}.\n\n"
        "Code `{42}` stays."
    )


def test_a_version_stamp_beside_a_signature_is_chrome():
    """rustdoc's stamp beside an item's heading and each method (``1.0.0 · source · [−]``) read
    ``1.0.0 · ·`` atop the page and ``1.0.0 · pub const fn new()`` before each signature; a version
    in a sentence or a table stays."""
    html = """<html><body><main><div class="main-heading"><h1>Struct Vec</h1><span class="out-of-band">
<span class="since" title="Stable since Rust version 1.0.0">1.0.0</span> · <a class="src"
href="../../src/alloc/vec/mod.rs.html#397">source</a> · <button id="toggle-all-docs">[<span>&#x2212;</span>]</button></span></div>
<p>A contiguous growable array type, stable since 1.0.0.</p>
<h2 id="implementations">Implementations</h2><section id="method.new" class="method"><span class="rightside">
<span class="since">1.0.0</span> · <a class="src" href="../../src/alloc/vec/mod.rs.html#420">source</a></span>
<h4 class="code-header">pub const fn new() -&gt; Vec&lt;T&gt;</h4></section><p>Constructs a new, empty vector.</p>
<table><tr><td>2.1.0</td><td>released</td></tr></table></main></body></html>"""
    page = parse_html(html, url="https://doc.example/std/vec/struct.Vec.html")
    text = "\n".join(s.text for s in page.sections)
    assert "·" not in text and "1.0.0 ·" not in page.title
    assert "A contiguous growable array type, stable since 1.0.0." in text
    assert page.sections[-1].headings[-1] == "pub const fn new() -> Vec<T>"
    assert "2.1.0 | released" in text
