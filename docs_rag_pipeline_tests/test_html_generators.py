"""HTML pages as API documentation generators write them (pkg.go.dev, Doxygen, ExDoc, Dokka, pdoc,
sphinx-book-theme): their markup, reduced to what each test is about, parsed as a crawl or a folder of
built HTML parses it."""

from __future__ import annotations

from docs_rag_pipeline.chunking import url_fragment
from docs_rag_pipeline.parsing.html import parse_html


def _text(html: str, url: str = "https://docs.example.org/page.html") -> str:
    return "\n".join(s.text for s in parse_html(html, url=url).sections)


def test_a_code_editors_text_area_is_read_as_code() -> None:
    """pkg.go.dev shows a runnable example's code in a ``<textarea class="Documentation-exampleCode code">``
    the reader may edit and run; it was dropped with the form fields, so the example read ``Code:`` and
    nothing. A text area whose class names no code, one in a form or an empty one stays out."""
    html = """<html><head><title>http</title></head><body><main><h4 id="Get">func Get</h4><p>Get issues a GET.</p>
<details id="example-Get" class="Documentation-exampleDetails"><summary>Example</summary>
<div class="Documentation-exampleDetailsBody"><p>Code:</p>
<textarea class="Documentation-exampleCode code" spellcheck="false">package main

func main() {
	res, err := http.Get(&#34;http://example.com/&#34;)
}
</textarea></div></details>
<form action="/feedback"><textarea name="msg" class="code">Tell us more</textarea></form><textarea class="code">
</textarea><textarea class="comment">Typed echidna.</textarea></main></body></html>"""
    assert _text(html) == ('Get issues a GET.\n\nExample\n\nCode:\n\n```\npackage main\n\nfunc main() {\n'
                           '\tres, err := http.Get("http://example.com/")\n}\n```')


def test_a_heading_inside_a_summary_opens_its_section() -> None:
    """pkg.go.dev folds each deprecated function in a ``<details>`` whose ``<summary>`` holds the function's
    ``<h4 id>``; the summary was read as a paragraph, so the function had no section nor anchor and its
    declaration and text were read as the end of the function before it."""
    html = """<html><head><title>http</title></head><body><main><h3 id="pkg-functions">Functions</h3>
<div class="Documentation-function"><h4 id="Get" class="Documentation-functionHeader"><span>func <a
href="https://cs.opensource.google/x">Get</a> <a class="Documentation-idLink" href="#Get">¶</a></span></h4>
<div class="Documentation-declaration"><pre>func Get(url string) (resp *Response, err error)</pre></div>
<p>Get issues a GET.</p></div>
<div class="Documentation-function"><details class="Documentation-deprecatedDetails js-deprecatedDetails"><summary>
<h4 tabindex="-1" id="ListenOld" data-kind="function" class="Documentation-functionHeader">
<span class="Documentation-deprecatedTitle">func <a href="https://cs.opensource.google/x">ListenOld</a>
<span class="Documentation-deprecatedTag">deprecated</span></span></h4></summary>
<div class="go-Message go-Message--warning Documentation-deprecatedItemBody">
<div class="Documentation-declaration"><pre>func ListenOld(addr string) error</pre></div>
<p>ListenOld serves the old way.</p></div></details></div>
<details><summary>Show the config</summary><p>port = 80</p></details></main></body></html>"""
    sections = parse_html(html, url="https://pkg.example.org/net/http").sections
    assert [(s.anchor, s.headings[-1], s.text) for s in sections if s.text] == [
        ("Get", "func Get", "```\nfunc Get(url string) (resp *Response, err error)\n```\n\nGet issues a GET."),
        ("ListenOld", "func ListenOld deprecated",
         "```\nfunc ListenOld(addr string) error\n```\n\nListenOld serves the old way.\n\nShow the config\n\nport = 80"),
    ]


def test_a_members_heading_after_its_header_icons_takes_its_sections_id() -> None:
    """ExDoc puts each function's title after its permalink icon and a "View Source"/"(since 1.1.0)" box in
    the header of ``<section class="detail" id="put_status/2">``; the anchor was a text fragment of the
    title, not the id every link of the site uses. A paragraph before a heading still keeps the section's
    id from it."""
    html = """<html><head><title>Plug.Conn</title></head><body><main><h1>Plug.Conn</h1><p>The connection.</p>
<section class="detail" id="put_status/2"><div class="detail-header">
<a href="#put_status/2" class="detail-link" aria-label="Link to this function"><i class="ri-link-m" aria-hidden="true"></i></a>
<div class="pull-right"><a class="icon-action" rel="help" href="https://github.com/x/conn.ex#L412" title="View Source"><i
class="ri-code-s-slash-line"></i><span class="sr-only">View Source</span></a> <span class="note">(since 1.1.0)</span></div>
<h1 class="signature" translate="no">put_status(conn, status)</h1></div>
<section class="docstring"><p>Stores the given status code.</p></section></section>
<section id="intro"><div><p>A paragraph first.</p><h2>Later heading</h2><p>Its text.</p></div></section>
</main></body></html>"""
    sections = parse_html(html, url="https://hexdocs.example.org/plug/Plug.Conn.html").sections
    assert [(s.anchor, s.headings[-1]) for s in sections if s.headings] == [
        ("put_status/2", "put_status(conn, status)"), (":~:text=Later%20heading", "Later heading")]


def test_a_copy_buttons_copied_popup_is_not_text() -> None:
    """Dokka follows every signature and code sample with the popup its copy button shows, "Content copied
    to clipboard", and every member's name with "Link copied to clipboard": both were indexed, a line of
    each member's text. A sentence about copying stays."""
    html = """<html><head><title>HttpClient</title></head><body><div class="main-content" id="content">
<h1 class="cover"><span>Http</span><wbr><span>Client</span></h1>
<div class="symbol monospace"><span class="token keyword">class </span><a href="index.html">HttpClient</a>(baseUrl: String)<span
class="top-right-position"><span class="copy-icon"></span><div class="copy-popup-wrapper popup-to-left"><span
class="copy-popup-icon"></span><span>Content copied to clipboard</span></div></span></div>
<p class="paragraph">A small HTTP client.</p>
<h2>Functions</h2><div class="table-row"><span class="inline-flex"><div><a href="get.html">get</a></div><span
class="anchor-icon"></span><div class="copy-popup-wrapper "><span class="copy-popup-icon"></span><span>Link copied to
clipboard</span></div></span><div class="symbol monospace">fun get(path: String): String</div></div>
<p>Text copied to the clipboard keeps its line breaks.</p><span class="tooltip">Copied!</span>
</div></body></html>"""
    assert _text(html) == ("class HttpClient(baseUrl: String)\n\nA small HTTP client.\nget\n\n"
                           "fun get(path: String): String\n\nText copied to the clipboard keeps its line breaks.")


def test_a_signature_laid_out_in_a_table_reads_as_one_line() -> None:
    """Doxygen lays each member's signature out in a table (``table.memname``: the name, ``(``, a row per
    parameter, ``)``), which read as rows of pipes, ``geo::Polygon::Polygon | ( | const std::vector< Point
    > & | points,``; it reads as the page shows it. A table of values stays rows."""
    html = """<html><head><title>MyLib: geo::Polygon Class Reference</title></head><body><div class="contents">
<a id="a1b2c3" name="a1b2c3"></a><h2 class="memtitle">Polygon()</h2>
<div class="memitem"><div class="memproto"><table class="memname">
<tr><td class="memname">geo::Polygon::Polygon </td><td>(</td><td class="paramtype">const std::vector&lt; <a class="el"
href="structgeo_1_1Point.html">Point</a> &gt; &amp;&#160;</td><td class="paramname"><em>points</em>, </td></tr>
<tr><td class="paramkey"></td><td></td><td class="paramtype">bool&#160;</td><td class="paramname"><em>closed</em>&#160;</td></tr>
<tr><td></td><td>)</td><td></td><td></td></tr></table></div>
<div class="memdoc"><p>Builds a polygon. </p><table><tr><td>(</td><td>opens a group</td></tr></table></div></div>
</div></body></html>"""
    section = [s for s in parse_html(html, url="https://docs.example.org/classgeo.html").sections if s.anchor == "a1b2c3"]
    assert section[0].text == ("geo::Polygon::Polygon ( const std::vector< Point > & points, bool closed )\n\n"
                               "Builds a polygon.\n\n( | opens a group")


def test_a_block_of_line_divs_is_code() -> None:
    """Doxygen writes a code fragment without a ``<pre>``: a ``div.fragment`` of one ``div.line`` per line,
    which was read as a paragraph per line, unfenced, its indentation lost. A docutils line block (verse, an
    address) stays text."""
    html = """<html><head><title>MyLib: Usage</title></head><body><div class="contents"><h1>Usage</h1>
<div class="textblock"><p>Sum the x values:</p>
<div class="fragment"><div class="line"><span class="keywordflow">for</span> (<span class="keyword">auto</span>&amp; p : points) {</div>
<div class="line">    total += p.x;</div>
<div class="line">}</div>
</div><!-- fragment --></div>
<div class="line-block"><div class="line">Jane Doe</div><div class="line">1 Main Street</div></div></div></body></html>"""
    assert _text(html) == ("Sum the x values:\n\n```\nfor (auto& p : points) {\n    total += p.x;\n}\n```\n\n"
                           "Jane Doe\n\n1 Main Street")


def test_a_permalink_glyph_in_a_span_of_the_permalink_class_is_not_in_the_heading() -> None:
    """Doxygen starts every member's heading with its permalink, ``<span class="permalink"><a>◆</a></span>``
    (the class on the span, not the link): the heading read ``◆ area()``."""
    html = """<html><head><title>MyLib: geo::Polygon Class Reference</title></head><body><div class="contents">
<h2 class="groupheader">Member Function Documentation</h2><a id="a4d5e6" name="a4d5e6"></a>
<h2 class="memtitle"><span class="permalink"><a href="#a4d5e6">&#9670;&#160;</a></span>area()</h2>
<div class="memitem"><div class="memdoc"><p>Area of the polygon. </p></div></div></div></body></html>"""
    sections = parse_html(html, url="https://docs.example.org/classgeo.html").sections
    assert [(s.anchor, s.headings[-1]) for s in sections if s.text] == [("a4d5e6", "area()")]


def test_the_source_a_view_source_toggle_reveals_is_not_indexed() -> None:
    """pdoc puts the source of the module atop its page and each member's under its signature, hidden until
    a CSS-only "View Source" toggle is clicked; the toggle's label went, the source stayed and was indexed
    as code of the page. The docstring's own example stays."""
    html = """<html><head><title>mylib.client</title></head><body><main class="pdoc">
<section class="module-info"><h1 class="modulename"><a href="./../mylib.html">mylib</a><wbr>.client</h1>
<div class="docstring"><p>HTTP client.</p><div class="pdoc-code codehilite"><pre><code>Client().get("/")</code></pre></div></div>
<input id="mod-client-view-source" class="view-source-toggle-state" type="checkbox" aria-hidden="true" tabindex="-1">
<label class="view-source-button" for="mod-client-view-source"><span>View Source</span></label>
<div class="pdoc-code codehilite"><pre><span></span><span id="L-1"><a href="#L-1"><span class="linenos">1</span></a>import requests
</span></pre></div></section>
<section id="Client"><input id="Client-view-source" class="view-source-toggle-state" type="checkbox" aria-hidden="true">
<div class="attr class"><span class="def">class</span> <span class="name">Client</span>:
<label class="view-source-button" for="Client-view-source"><span>View Source</span></label></div>
<a class="headerlink" href="#Client"></a>
<div class="pdoc-code codehilite"><pre><span></span><span id="Client-5"><a href="#Client-5"><span class="linenos">5</span></a>class Client:
</span></pre></div><div class="docstring"><p>A client.</p></div></section></main></body></html>"""
    assert _text(html) == 'HTTP client.\n\n```\nClient().get("/")\n```\n\nclass Client:\n\nA client.'


def test_a_dropdown_menu_of_the_theme_is_chrome() -> None:
    """sphinx-book-theme heads every article with its buttons' dropdown menus (Bootstrap's ``dropdown-menu``:
    "Repository", "Suggest edit", "Open issue", ".md", ".pdf"), which were read as a list atop each page;
    sphinx-design's dropdown, the author's, stays."""
    html = """<html><head><title>Configuration</title></head><body><main id="main-content" class="bd-main" role="main">
<div class="bd-header-article"><div class="article-header-buttons"><div class="dropdown dropdown-source-buttons">
<button class="btn dropdown-toggle" type="button" aria-label="Source repositories"><i class="fab fa-github"></i></button>
<ul class="dropdown-menu"><li><a href="https://github.com/me/p" class="btn btn-sm dropdown-item"><span class="btn__text-container">Repository</span></a></li>
<li><a href="https://github.com/me/p/edit/main/docs/config.md" class="btn btn-sm dropdown-item"><span class="btn__text-container">Suggest edit</span></a></li>
</ul></div><div class="dropdown dropdown-download-buttons"><ul class="dropdown-menu"><li><a href="../_sources/config.md"
class="btn btn-sm dropdown-item"><span class="btn__text-container">.md</span></a></li><li><button onclick="window.print()"
class="btn btn-sm dropdown-item"><span class="btn__text-container">.pdf</span></button></li></ul></div></div></div>
<article class="bd-article"><section id="configuration"><h1>Configuration</h1><p>Settings live in myproj.toml.</p>
<details class="sd-sphinx-override sd-dropdown sd-card"><summary class="sd-summary-title sd-card-header">Defaults</summary>
<div class="sd-summary-content sd-card-body"><p>port = 8080</p></div></details></section></article></main></body></html>"""
    assert _text(html) == "Settings live in myproj.toml.\n\nDefaults\n\nport = 8080"


def test_a_search_box_and_its_results_window_are_chrome() -> None:
    """Doxygen's pages have no ``<main>``; its search box and its results window (``#MSearchResultsWindow``,
    empty but for "Loading...", "Searching...", "No Matches") led every page. A section about searching
    that a heading opens, or a block of the page's text, stays."""
    html = """<html><head><title>MyLib: geo::Polygon Class Reference</title></head><body><div id="top">
<div id="main-nav"><ul id="main-menu" class="sm sm-dox"><li><a href="index.html">Main&#160;Page</a></li>
<li><div id="MSearchBox" class="MSearchBoxInactive"><span class="left"><span id="MSearchSelect">&#160;</span>
<input type="text" id="MSearchField" placeholder="Search"/></span></div></li></ul></div>
<div id="MSearchResultsWindow"><div id="MSearchResults"><div class="SRPage"><div id="SRIndex"><div id="SRResults"></div>
<div class="SRStatus" id="Loading">Loading...</div><div class="SRStatus" id="Searching">Searching...</div>
<div class="SRStatus" id="NoMatches">No Matches</div></div></div></div></div></div>
<div class="contents"><p>A closed polygon in the plane.</p><div class="research-note">Research shows it works.</div>
<div class="search-tips"><h2 id="searching">Searching</h2><p>Use find().</p></div></div></body></html>"""
    assert _text(html) == "A closed polygon in the plane.\n\nResearch shows it works.\nUse find()."


def test_titles_of_api_pages_lose_the_sites_name() -> None:
    """ExDoc titles a module's page ``Plug.Conn — Plug v1.15.3`` under the H1 ``Plug.Conn (Plug v1.15.3)``,
    pdoc ``mylib.client API documentation`` under the H1 ``mylib.client``: both kept the site's name in every
    citation. A title whose last part is no site's stays whole."""
    def title(doc_title: str, h1: str) -> str:
        html = f"<html><head><title>{doc_title}</title></head><body><main><h1>{h1}</h1><p>Text.</p></main></body></html>"
        return parse_html(html, url="https://docs.example.org/page.html").title
    assert title("Plug.Conn — Plug v1.15.3", '<span>Plug.Conn</span> <small class="app-vsn">(Plug v1.15.3)</small>') \
        == "Plug.Conn"
    assert title("mylib.client API documentation", '<a href="../mylib.html">mylib</a><wbr>.client') == "mylib.client"
    assert title("Install - Linux", "Install on Windows") == "Install - Linux"
    assert title("Routing guide", "Routing") == "Routing guide"


def test_a_permalink_glyph_outside_a_heading_is_not_text() -> None:
    """pkg.go.dev labels each example's toggle ``Example <a href="#example-Get">¶</a>``: the glyph, a link
    to the place it stands, was read as a word, ``Example (WithTimeout) ¶``. A link with words stays."""
    html = """<html><head><title>http</title></head><body><main><h4 id="Get">func Get</h4><p>Get issues a GET.</p>
<details id="example-Get" class="Documentation-exampleDetails"><summary class="Documentation-exampleDetailsHeader">Example
(WithTimeout) <a href="#example-Get">¶</a></summary><div><pre class="Documentation-exampleCode">http.Get(u)</pre></div></details>
<p>See <a href="#Get">§ Get</a> and <a href="#pkg-index">#</a>.</p></main></body></html>"""
    assert _text(html) == "Get issues a GET.\n\nExample (WithTimeout)\n\n```\nhttp.Get(u)\n```\n\nSee § Get and ."


def test_badges_beside_a_word_are_not_glued_to_it() -> None:
    """Doxygen's member labels (``<span class="mlabel">inline</span><span class="mlabel">noexcept</span>``)
    and pkg.go.dev's deprecated tag after an index entry are drawn as boxes of their own, and were read as
    one word with their neighbour: ``inlinenoexcept``, ``errordeprecated``. A label inside a word's
    punctuation, a GUI label in a sentence and code stay as written."""
    html = """<html><head><title>t</title></head><body><main><h2 id="area">area()</h2>
<p><span class="mlabels"><span class="mlabel">inline</span><span class="mlabel">noexcept</span></span></p>
<ul><li><a href="#ListenOld">func ListenOld(addr string) error</a><span class="Documentation-deprecatedTag">deprecated</span></li></ul>
<p>Click <span class="guilabel">OK</span>s and (<span class="badge">beta</span>).</p>
<pre><code><span class="token tag">&lt;div</span><span class="token tag">&gt;</span>x<span class="token tag">y</span></code></pre></main></body></html>"""
    assert _text(html) == ("inline noexcept\n\n- func ListenOld(addr string) error deprecated\n\nClick OKs and (beta)."
                           "\n\n```\n<div>xy\n```")


def test_a_toggle_written_folded_and_unfolded_is_read_once() -> None:
    """godoc (``godoc -http``) writes each toggle twice, folded (``div.collapsed``: "Overview ▹") and unfolded
    (``div.expanded``: "Overview ▾" and the text), of which the page shows one; both headings were read,
    with their triangles, and its top bar ("Go Documentation Server GoDoc ▽") led the page. A block that is
    only ``collapsed`` (a folded section without a twin) stays."""
    html = """<html><head><title>http - The Go Programming Language</title></head><body>
<div id="topbar" class="wide"><div class="container"><div class="top-heading" id="heading-wide"><a href="/pkg/">Go
Documentation Server</a></div><div class="top-heading" id="heading-narrow"><a href="/pkg/">GoDoc</a></div>
<a href="#" id="menu-button"><span id="menu-button-arrow">&#9661;</span></a></div></div>
<div id="page" class="wide"><div class="container"><h1>Package http</h1>
<div id="pkg-overview" class="toggleVisible"><div class="collapsed"><h2 class="toggleButton">Overview ▹</h2></div>
<div class="expanded"><h2 class="toggleButton">Overview ▾</h2><p>Package http provides HTTP clients.</p></div></div>
<div class="collapsed"><p>Folded notes.</p></div></div></div></body></html>"""
    sections = parse_html(html, url="https://godoc.example.org/pkg/net/http/").sections
    assert [(s.headings, s.text) for s in sections] == [
        (("Overview",), "Package http provides HTTP clients.\n\nFolded notes.")]


def test_a_permalink_that_is_its_headings_text_is_kept() -> None:
    """mandoc (manpages.debian.org, man.openbsd.org) wraps each section heading's whole text and each option's
    name in ``<a class="permalink" href="#ID">``; the link was dropped as a permalink icon with the text, so the
    headings read '' and the options lost their names. A permalink that shows a glyph, or words only a screen
    reader hears, beside the heading's text stays out."""
    html = """<html><head><title>FROB(1)</title></head><body><div class="manual-text">
<section class="Sh"><h1 class="Sh" id="NAME"><a class="permalink" href="#NAME">NAME</a></h1>
<p class="Pp">frob - turn widgets into gadgets</p></section>
<section class="Sh"><h1 class="Sh" id="OPTIONS"><a class="permalink" href="#OPTIONS">OPTIONS</a></h1>
<dl class="Bl-tag">
  <dt id="f"><a class="permalink" href="#f"><b>-f</b>, <b>--fast</b></a></dt><dd>Skip validation.</dd>
  <dt id="t"><a class="permalink" href="#t"><code class="Fl">-t</code></a> <var class="Ar">seconds</var></dt>
  <dd>Wait <i>seconds</i>.</dd>
</dl>
<section class="Ss"><h2 class="Ss" id="Exit_status"><a class="permalink" href="#Exit_status">Exit
  status</a></h2><p class="Pp">Zero on success.</p></section></section>
<h2 id="more">More <a class="headerlink" href="#more">¶</a></h2><p>Text.</p>
<h2 id="last"><a class="header-anchor" href="#last"><span class="visually-hidden">Jump to heading</span>
<span aria-hidden="true">#</span></a> Last</h2><p>End.</p></div></body></html>"""
    sections = parse_html(html, url="https://man.example.org/frob.1").sections
    assert [(s.headings, s.anchor) for s in sections] == [
        ((), ""), (("OPTIONS",), "OPTIONS"), (("OPTIONS", "Exit status"), "Exit_status"), (("More",), "more"),
        (("Last",), "last")]
    assert sections[1].text == "-f, --fast\n  Skip validation.\n`-t` `seconds`\n  Wait seconds."


def test_a_docbook_admonition_is_read_in_its_section_not_as_one() -> None:
    """DocBook XSL (PostgreSQL's manual, GTK-Doc) writes a note as ``<div class="note"><h3 class="title">Note</h3>``:
    its title heading opened a section "Note", with a text fragment for anchor, and the chapter's text after
    the note was filed under it. A block of that class holding more than its title's heading is the page's."""
    html = """<html><head><title>Chapter 1. Installation</title></head><body>
<div class="chapter"><div class="titlepage"><div><div><h1 class="title"><a name="install"></a>Chapter 1. Installation</h1>
</div></div></div><p>Install with the package manager.</p>
<div class="note" style="margin-left: 0.5in; margin-right: 0.5in;"><h3 class="title">Note</h3><p>Root is not needed.</p></div>
<div class="warning" style="margin-left: 0.5in; margin-right: 0.5in;"><h3 class="title">Hot gadgets</h3><p>Gadgets are hot.</p></div>
<p>After the warning comes more text.</p>
<div class="sect1"><div class="titlepage"><div><div><h2 class="title" style="clear: both"><a name="install-src"></a>From
source</h2></div></div></div><p>Download it.</p></div>
<div class="tip"><h2 id="tips">Tips</h2><p>Some tips.</p><h3 id="tip-1">Tip one</h3><p>Be quick.</p></div></div>
</body></html>"""
    sections = parse_html(html, url="https://docs.example.org/ch01.html").sections
    assert [(s.headings, s.anchor) for s in sections] == [
        ((), ""), (("From source",), "install-src"), (("Tips",), "tips"), (("Tips", "Tip one"), "tip-1")]
    assert sections[0].text == ("Install with the package manager.\n\nNote\nRoot is not needed.\n\n"
                                "Hot gadgets\nGadgets are hot.\n\nAfter the warning comes more text.")


def test_a_table_of_contents_under_its_own_heading_is_chrome() -> None:
    """texinfo (``makeinfo --html``, every GNU manual's top page) writes ``@contents`` as a block opened by an
    ``<h2>Table of Contents</h2>`` and a list of links to the chapters; it was indexed as a section of the
    chapters' titles. A section titled "Contents" that says more than its links stays."""
    html = """<html><head><title>Top (Frobnicator Manual 1.2)</title></head><body lang="en">
<h1 class="settitle" align="center">Frobnicator Manual 1.2</h1>
<div class="top" id="Top"><span id="Frobnicator"></span><h1 class="top">Frobnicator</h1>
<p>This manual documents the frobnicator.</p>
<div class="Contents_element" id="SEC_Contents"><h2 class="contents-heading">Table of Contents</h2>
<div class="contents"><ul class="no-bullet">
  <li><a id="toc-Overview-1" href="Overview.html">1 Overview</a></li>
  <li><a id="toc-Configuration-1" href="Configuration.html">2 Configuration</a>
  <ul class="no-bullet"><li><a id="toc-Syntax-1" href="Syntax.html">2.1 Syntax</a></li></ul></li>
</ul></div></div></div>
<section id="contents"><h2>Contents</h2><p>The box holds <a href="parts.html">the parts</a> and a manual.</p></section>
</body></html>"""
    sections = parse_html(html, url="https://www.example.org/manual/html_node/index.html").sections
    assert [(s.headings, s.text) for s in sections] == [
        (("Frobnicator",), "This manual documents the frobnicator."),
        (("Frobnicator", "Contents"), "The box holds the parts and a manual.")]


def test_a_list_of_links_to_the_pages_own_headings_is_chrome() -> None:
    """pod2html (Perl's POD) opens every page with ``<ul id="index">``, links to ``#NAME``, ``#SYNOPSIS``…, the
    page's own headings (man2html ends with such a list): it was the lead section's text. A list whose links
    lead elsewhere, that says more than its links, or that names fewer than half the page's headings (a
    list in the text: "The following methods are available:" in Node.js' manual) stays."""
    html = """<html><head><title>Frob</title></head><body>
<ul id="index">
  <li><a href="#NAME">NAME</a></li>
  <li><a href="#SYNOPSIS">SYNOPSIS</a></li>
  <li><a href="#lbAD">DESCRIPTION</a><ul><li><a href="#Methods">Methods</a></li></ul></li>
</ul>
<h1 id="NAME">NAME</h1><p>Frob - turn widgets into gadgets</p>
<ul><li><a href="#SYNOPSIS">SYNOPSIS</a>: how to call it</li><li><a href="#Methods">Methods</a></li></ul>
<ul><li><a href="#SYNOPSIS">SYNOPSIS</a></li><li><a href="#new-args">new</a></li></ul>
<h1 id="SYNOPSIS">SYNOPSIS</h1><pre><code>use Frob;</code></pre>
<a name="lbAD">&nbsp;</a><h1>DESCRIPTION</h1><p>Reads widgets.</p>
<h2 id="Methods">Methods</h2><dl><dt id="new-args">new(%args)</dt><dd><p>Creates one.</p></dd></dl>
<p>Also see:</p><ul><li><a href="#BUGS">BUGS</a></li><li><a href="#AUTHOR">AUTHOR</a></li></ul>
<h1 id="BUGS">BUGS</h1><p>None known.</p><h1 id="AUTHOR">AUTHOR</h1><p>Jane Doe</p>
</body></html>"""
    sections = parse_html(html, url="https://docs.example.org/Frob.html").sections
    assert sections[0].headings == ()
    assert sections[0].text == ("Frob - turn widgets into gadgets\n\n- SYNOPSIS: how to call it\n- Methods\n\n"
                                "- SYNOPSIS\n- new")
    assert sections[3].headings == ("DESCRIPTION", "Methods")
    assert sections[3].text == "new(%args)\n  Creates one.\n\nAlso see:\n\n- BUGS\n- AUTHOR"


def test_a_back_to_top_arrow_is_not_in_the_heading() -> None:
    """RDoc (darkfish: docs.ruby-lang.org) ends each heading with a pilcrow and a link back to the top that shows
    ``↑``; the pilcrow went, the arrow stayed in every heading ("Usage ↑"). An arrow in a heading's words stays."""
    html = """<html><head><title>class Frob - RDoc Documentation</title></head><body id="top"><main role="main">
<h1 id="class-Frob" class="class">class Frob</h1><section class="description">
<h1 id="class-Frob-label-Frobnicator">Frobnicator<span><a href="#class-Frob-label-Frobnicator">&para;</a>
<a href="#top">&uarr;</a></span></h1><p>Turns widgets into gadgets.</p>
<h2 id="class-Frob-label-Usage">Usage<span><a href="#class-Frob-label-Usage">&para;</a> <a href="#top">&uarr;</a></span></h2>
<pre class="ruby">f = Frob.new(timeout: 3)</pre>
<h2 id="keys">The ↑ key</h2><p>Scrolls.</p></section></main></body></html>"""
    sections = parse_html(html, url="https://docs.example.org/Frob.html").sections
    assert [s.headings for s in sections] == [
        ("Frobnicator",), ("Frobnicator", "Usage"), ("Frobnicator", "The ↑ key")]
    assert sections[1].text == "```ruby\nf = Frob.new(timeout: 3)\n```"


def test_a_notebook_cells_prompt_is_not_text() -> None:
    """Jupyter's nbconvert (lab and classic templates) and nbsphinx write each cell's execution count beside it,
    ``In [1]:`` / ``Out[1]:`` in a ``div.jp-InputPrompt`` or ``div.prompt``, ``[1]:`` in a ``<pre>``; it was a line
    of text (or a code block) before every cell's code and output. A block of a prompt's class that says
    more stays."""
    html = """<html><head><title>t</title></head><body class="jp-Notebook"><main>
<div class="jp-Cell jp-CodeCell"><div class="jp-InputArea jp-Cell-inputArea">
<div class="jp-InputPrompt jp-InputArea-prompt">In&nbsp;[1]:</div>
<div class="jp-CodeMirrorEditor jp-Editor"><div class="highlight hl-ipython3"><pre><span></span>for i in range(3):
    print(i)
</pre></div></div></div>
<div class="jp-OutputArea"><div class="jp-OutputPrompt jp-OutputArea-prompt">Out[1]:</div>
<div class="jp-RenderedText"><pre>0</pre></div></div></div>
<div class="cell border-box-sizing code_cell rendered"><div class="input"><div class="prompt input_prompt">In&nbsp;[&nbsp;]:</div>
<div class="inner_cell"><div class="input_area"><div class="highlight hl-ipython3"><pre>x = 1</pre></div></div></div></div></div>
<div class="nbinput docutils container"><div class="prompt highlight-none notranslate"><div class="highlight"><pre><span></span>[3]:
</pre></div></div><div class="input_area highlight-ipython3 notranslate"><div class="highlight"><pre>y = 2</pre></div></div></div>
<div class="prompt-tips"><p>Tip [1]: write short prompts.</p></div></main></body></html>"""
    assert _text(html) == ("```\nfor i in range(3):\n    print(i)\n```\n\n```\n0\n```\n\n```\nx = 1\n```\n\n"
                           "```ipython3\ny = 2\n```\n\nTip [1]: write short prompts.")


def test_a_man_pages_running_header_and_footer_are_chrome() -> None:
    """mandoc writes a man page's running header and footer as one-row tables (``table.head``: "FROB(1) | User
    Commands | FROB(1)", ``table.foot``: "March 2024 | frob 1.2"): they were the lead section's text. A table of
    that class with more rows is data and stays."""
    html = """<html><head><title>FROB(1)</title></head><body>
<table class="head"><tr><td class="head-ltitle">FROB(1)</td><td class="head-vol">User Commands</td>
<td class="head-rtitle">FROB(1)</td></tr></table>
<div class="manual-text">
<section class="Sh"><h1 class="Sh" id="NAME"><a class="permalink" href="#NAME">NAME</a></h1>
<p class="Pp">frob - turn widgets into gadgets</p></section>
<section class="Sh"><h1 class="Sh" id="FILES"><a class="permalink" href="#FILES">FILES</a></h1>
<table class="head"><tr><th>File</th><th>Use</th></tr><tr><td>/etc/frob.conf</td><td>settings</td></tr></table>
</section></div>
<table class="foot"><tr><td class="foot-date">March 2024</td><td class="foot-os">frob 1.2</td></tr></table>
</body></html>"""
    assert _text(html, "https://manpages.example.org/frob.1.html") == (
        "frob - turn widgets into gadgets\nFile | Use\n/etc/frob.conf | settings")


def test_a_title_blocks_author_and_date_headings_open_no_section() -> None:
    """pandoc's html4 writer (and pandoc 1's templates) writes the title block's author and date as
    ``<h2 class="author">`` and ``<h3 class="date">``, DocBook XSL its title page's author as ``<h3 class="author">``:
    they opened sections "Jane Doe" > "2024-03-01" that took the text before the first chapter. They are lines of
    the page's lead now, as pandoc's html5 writer's ``<p class="author">`` is."""
    html = """<html><head><title>Frobnicator User Guide</title></head><body>
<div id="header"><h1 class="title">Frobnicator User Guide</h1><h2 class="author">Jane Doe</h2>
<h3 class="date">2024-03-01</h3></div>
<p>Some words before the first chapter.</p>
<h1 id="introduction">Introduction</h1><p>The frobnicator turns widgets into gadgets.</p>
<h2 id="authors">Authors</h2><p>Jane.</p></body></html>"""
    sections = parse_html(html, url="https://docs.example.org/guide.html").sections
    assert [(s.headings, s.anchor, s.text) for s in sections] == [
        ((), "", "Jane Doe\n\n2024-03-01\n\nSome words before the first chapter."),
        (("Introduction",), "introduction", "The frobnicator turns widgets into gadgets."),
        (("Introduction", "Authors"), "authors", "Jane.")]


def test_a_toggles_advice_beside_a_methods_name_is_not_text() -> None:
    """RDoc (darkfish: docs.ruby-lang.org) writes ``<span class="method-click-advice">click to toggle source</span>``
    beside every method's name; it was read into each method's line, ``run() click to toggle source``. A span of
    such a class that says what it is about stays, and so does the advice's wording in the text."""
    html = """<html><head><title>class Frob - RDoc Documentation</title></head><body id="top"><main role="main">
<h1 id="class-Frob" class="class">class Frob</h1>
<div id="method-i-run" class="method-detail"><div class="method-heading"><span class="method-name">run</span><span
class="method-args">()</span> <span class="method-click-advice">click to toggle source</span></div>
<div class="method-description"><p>Runs it. Click to toggle source views.</p>
<span class="toggle-note">Toggle the frobnicator with run.</span></div></div></main></body></html>"""
    assert _text(html) == "run()\n\nRuns it. Click to toggle source views.\n\nToggle the frobnicator with run."


def test_docutils_contents_and_its_links_back_read_as_the_page_shows_them() -> None:
    """rst2html (docutils' HTML writers; older Sphinx; Sphinx's own pages with ``.. contents::``) writes a
    page's ``.. contents::`` as ``<div class="contents topic"><p class="topic-title">Contents</p><ul>…`` and
    every section heading as a link back to it, ``<h2><a class="toc-backref" href="#toc-entry-1">Tables</a></h2>``.
    The link's class names a "toc", so it was dropped as chrome with the heading's whole text (headings
    ``('', '')``, shown as ``Spec ›  › ``), while the contents list, titled by a paragraph rather than a heading,
    was indexed and quoted as an answer ("- How To Report A Bug\\n- Known Bugs"). A link that is its heading's
    whole text is the heading; a block titled "Contents" by its first paragraph whose other text is links is a
    table of contents, as one titled by a heading is."""
    html = """<html><head><title>Spec</title></head><body><div class="document" id="spec"><h1 class="title">Spec</h1>
<p>How to write tables.</p>
<div class="contents topic" id="contents"><p class="topic-title">Contents</p><ul>
<li><a class="reference internal" href="#tables" id="toc-entry-1">Tables</a><ul>
<li><a class="reference internal" href="#grid-tables" id="toc-entry-2">Grid Tables</a></li></ul></li></ul></div>
<div class="section" id="tables"><h2><a class="toc-backref" href="#toc-entry-1">Tables</a></h2>
<p>There are two syntaxes for tables in this markup language.</p>
<div class="section" id="grid-tables"><h3><a class="toc-backref" href="#toc-entry-2">Grid Tables</a></h3>
<p>Grid tables are drawn as ASCII art and allow row spans.</p></div></div>
<div class="section" id="contents-of-a-cell"><h2>Contents</h2><p>A cell holds <a href="#tables">tables</a> and
more: any body element.</p></div></div></body></html>"""
    sections = parse_html(html, url="https://docs.example.org/spec.html").sections
    assert [(s.headings, s.anchor, s.text) for s in sections] == [
        ((), "", "How to write tables."),
        (("Tables",), "tables", "There are two syntaxes for tables in this markup language."),
        (("Tables", "Grid Tables"), "grid-tables", "Grid tables are drawn as ASCII art and allow row spans."),
        (("Contents",), "contents-of-a-cell", "A cell holds tables and more: any body element.")]


def test_a_modal_window_of_the_theme_is_chrome() -> None:
    """MkDocs' Bootstrap themes (Django REST framework's docs) write a search box as a modal window,
    ``<div class="modal" role="dialog">`` with its heading, in the body before the content: every page
    opened with a section "Documentation search" that took the text before the H1, and the H1 was no longer
    the page's title heading. A window of role ``dialog`` is left out as a ``<dialog>`` is."""
    html = """<html><head><title>Settings - Django REST framework</title></head><body><div class="body-content">
<div id="mkdocs_search_modal" class="modal hide fade" tabindex="-1" role="dialog" aria-hidden="true">
<div class="modal-header"><button type="button" class="close">&times;</button><h3 id="myModalLabel">Documentation search</h3>
</div><div class="modal-body"><div id="mkdocs-search-results"></div></div></div>
<div id="main-content" class="span9"><blockquote><p>Namespaces are one honking great idea.</p></blockquote>
<h1 id="settings"><a class="toclink" href="#settings">Settings</a></h1><p>All settings are namespaced.</p>
<h2 id="accessing-settings"><a class="toclink" href="#accessing-settings">Accessing settings</a></h2>
<p>Use api_settings.</p></div></div></body></html>"""
    page = parse_html(html, url="https://docs.example.org/api-guide/settings/")
    assert [(s.headings, s.anchor) for s in page.sections] == [((), ""), (("Accessing settings",), "accessing-settings")]
    assert page.sections[0].text == "Namespaces are one honking great idea.\n\nAll settings are namespaced."
    assert page.title == "Settings"


def test_a_sites_menu_and_banner_are_chrome() -> None:
    """lxml's pages open with the site's menu, ``<div class="sidemenu">`` of ``<ul class="menu">`` lists
    (every page and section of the site), and a donation banner (``<div class="banner">``, inside the menu
    and again after it): they were the lead section of every page, before its first words. A block of a
    menu's or a banner's class that holds a heading or more than 40 words of its own is content and stays,
    and so does Sphinx's ``menuselection``."""
    items = "".join(f'<li class="menu item"><a href="p{i}.html#s{i}">Section {i}</a></li>' for i in range(20))
    banner = ('<div class="banner"><div class="banner_image"><img src="t.png"/></div><div class="banner_link">'
              '<a href="index.html#support">Like the tool? <br/>Help making it better!</a></div></div>')
    html = f"""<html><head><title>The lxml.etree Tutorial</title></head><body><div class="document">
<div class="sidemenu" id="sidemenu"><div class="menutrigger">Menu</div><div class="menu">{banner}
<ul id="lxml-section"><li><span class="section title">lxml</span><ul class="menu foreign"><li class="menu title">
<a href="index.html">lxml</a><ul class="submenu">{items}</ul></li></ul></li><li><a href="/sitemap.html">Sitemap</a></li>
</ul></div></div>{banner}<h1 class="title">The lxml.etree Tutorial</h1><p>This is a tutorial on lxml.etree.</p>
<p>Pick <span class="menuselection">File ‣ Open</span> to open a file.</p>
<div class="menu-card"><h2 id="menus">Menus</h2><p>Menus are lists.</p></div></div></body></html>"""
    assert _text(html) == "This is a tutorial on lxml.etree.\n\nPick File ‣ Open to open a file.\nMenus are lists."


def test_a_cell_spanning_rows_is_read_in_each_row_it_spans() -> None:
    """Django REST framework's router tables give one URL style and one URL name to the GET and the POST row
    (``<td rowspan=2>{prefix}/</td>``); each row was read with its own cells only, so the POST row read
    ``POST | create``, its method under "URL Style". A cell spanning rows is read in each row it spans, in its
    column; one spanning columns stays one cell, and a bad or too-large span reads as the rows there are."""
    html = """<html><head><title>Routers</title></head><body><main><h1>Routers</h1><table>
<tr><th>URL Style</th><th>HTTP Method</th><th>Action</th><th>URL Name</th></tr>
<tr><td rowspan=2>{prefix}/</td><td>GET</td><td>list</td><td rowspan=2>{basename}-list</td></tr></tr>
<tr><td>POST</td><td>create</td></tr>
<tr><td rowspan="x">{prefix}/{lookup}/</td><td>GET</td><td>retrieve</td><td rowspan="99">{basename}-detail</td></tr>
<tr><td>{prefix}/{lookup}/</td><td colspan="2">PUT or PATCH: update</td></tr>
</table></main></body></html>"""
    assert _text(html) == ("URL Style | HTTP Method | Action | URL Name\n{prefix}/ | GET | list | {basename}-list\n"
                           "{prefix}/ | POST | create | {basename}-list\n"
                           "{prefix}/{lookup}/ | GET | retrieve | {basename}-detail\n"
                           "{prefix}/{lookup}/ | PUT or PATCH: update | {basename}-detail")


def test_a_navbar_brand_names_the_site_a_title_ends_with() -> None:
    """Django REST framework's pages (MkDocs, a Bootstrap 2 theme) are titled ``<page> - Django REST
    framework``, with no ``og:site_name``; where the H1 differs from the page's part ("Tutorial 4:
    Authentication & Permissions" under "4 - Authentication and permissions - Django REST framework") the site's
    name stayed in every citation. The navbar's brand link (``a.brand``, ``a.navbar-brand``) names the site
    when there is no ``og:site_name``; a title whose last part is not that name stays whole."""
    def title(doc_title: str, h1: str, brand: str = "Django REST framework", cls: str = "brand") -> str:
        html = (f'<html><head><title>{doc_title}</title></head><body><div class="navbar"><a class="{cls}" href="/">'
                f'{brand}</a></div><div id="main-content"><h1>{h1}</h1><p>Text.</p></div></body></html>')
        return parse_html(html, url="https://docs.example.org/page.html").title
    assert title("4 - Authentication and permissions - Django REST framework",
                 "Tutorial 4: Authentication &amp; Permissions") == "4 - Authentication and permissions"
    assert title("Quickstart - Gadget", "Getting going", brand="Gadget", cls="navbar-brand") == "Quickstart"
    assert title("Install - Linux", "Setting up", brand="Gadget") == "Install - Linux"
    assert title("Install - Linux", "Setting up", brand="Linux is the name of a whole sentence long brand") \
        == "Install - Linux"


def test_a_notice_of_the_docs_version_is_chrome_by_its_words() -> None:
    """celery's Sphinx theme opens every page with ``<div class="deck"><p>This document describes the current
    stable version of Celery (5.2). For development docs, <a>go here</a>.</p></div>`` (a class that names no
    banner), which was the first text of all 350 pages' lead chunks; Python's and Django's docs write "This
    document is for an old version …" the same way. A short block before the page's first heading that opens
    with such a notice and links to the other docs is left out; the page's own text about versions, one
    without a link, or one in a section stays."""
    html = """<html><head><title>Configuration — Celery 5.2 documentation</title></head><body><div class="body">
<div class="deck"><p>This document describes the current stable version of Celery (5.2). For development docs,
<a href="http://docs.celeryproject.org/en/master/">go here</a>.</p></div>
<p class="note">This document is for an old version of Python that is no longer supported.
<a href="/3/">Read the current docs</a>.</p>
<section id="configuration"><h1>Configuration</h1><p>This document describes the configuration options available.</p>
<p>This document describes the current stable version of the wire protocol, see <a href="p.html">Protocol</a>.</p>
</section></div></body></html>"""
    assert _text(html) == ("This document describes the configuration options available.\n\nThis document describes the "
                           "current stable version of the wire protocol, see Protocol.")
    html2 = html.replace('<a href="http://docs.celeryproject.org/en/master/">go here</a>', "below")
    assert _text(html2).startswith("This document describes the current stable version of Celery (5.2).")


def test_a_version_notice_never_takes_the_page_that_holds_it_nor_a_long_spanned_cell_grows_the_text():
    """Two review findings of this session's HTML rules. A version notice is dropped before the first
    heading, but the wrapper that holds the notice and the heading (a page whose content div starts with
    it) matched too, and the whole page went with it. And a cell spanning rows is read in each row it
    spans: a long one copied into every row grew 77 KB of HTML to 60 MB of text; one over 200 characters
    is read once (its later rows show it empty)."""
    page = parse_html("<html><head><title>T</title></head><body><main><div class='body'><p>This document "
                      "describes the current stable version of Gizmo (2.1). For development docs, <a href='/dev/'>"
                      "go here</a>.</p><h1>Install</h1><p>Gizmo frobs widgets quickly.</p></div></main></body></html>",
                      url="https://x.org/a.html")
    text = " ".join(s.text for s in page.sections)
    assert "Gizmo frobs widgets quickly." in text and "development docs" not in text, page.sections
    long = "word " * 100
    rows = "".join(f"<tr><td>r{i}</td></tr>" for i in range(1, 50))
    page = parse_html(f"<html><body><h1>T</h1><table><tr><th>k</th><th>v</th></tr><tr><td rowspan='50'>{long}</td>"
                      f"<td>r0</td></tr>{rows}</table></body></html>", url="https://x.org/t.html")
    text = " ".join(s.text for s in page.sections)
    assert text.count("word word") < 200 and "r49" in text, len(text)
    short = parse_html("<html><body><h1>T</h1><table><tr><th>URL</th><th>Method</th></tr><tr><td rowspan='2'>"
                       "{prefix}/</td><td>GET</td></tr><tr><td>POST</td></tr></table></body></html>",
                       url="https://x.org/s.html")
    assert "{prefix}/ | POST" in " ".join(s.text for s in short.sections)  # a short one is in each row still


_DOXYGEN_FILE_PAGE = """<html><head><meta name="generator" content="Doxygen 1.9.4"/>
<title>Ring: src/ring.h File Reference</title></head><body><div id="top">
<div id="titlearea"><table cellspacing="0" cellpadding="0"><tbody><tr id="projectrow"><td id="projectalign">
<div id="projectname">Ring<span id="projectnumber">&#160;1.2</span></div>
<div id="projectbrief">Byte ring buffers for C</div></td></tr></tbody></table></div>
<div id="nav-path" class="navpath"><ul><li class="navelem"><a class="el" href="dir_6826.html">src</a></li></ul></div>
</div>
<div class="header"><div class="summary">
<a href="#nested-classes">Classes</a> &#124;
<a href="#func-members">Functions</a> &#124;
<a href="ring_8h-members.html">List of all members</a></div>
<div class="headertitle"><div class="title">ring.h File Reference</div></div></div>
<div class="contents"><p>A fixed-size ring buffer of bytes. <a href="#details">More...</a></p>
<table class="memberdecls"><tr class="heading"><td colspan="2"><h2 class="groupheader"><a id="nested-classes" name="nested-classes"></a>
Classes</h2></td></tr>
<tr class="memitem:"><td class="memItemLeft" align="right" valign="top">struct &#160;</td><td class="memItemRight" valign="bottom"><a class="el" href="structring.html">ring</a></td></tr>
<tr class="memdesc:"><td class="mdescLeft">&#160;</td><td class="mdescRight">A ring buffer.  <a href="structring.html#details">More...</a><br /></td></tr>
</table>
<table class="memberdecls"><tr class="heading"><td colspan="2"><h2 class="groupheader"><a id="func-members" name="func-members"></a>
Functions</h2></td></tr>
<tr class="memitem:a0f0"><td class="memItemLeft" align="right" valign="top">ring_t *&#160;</td><td class="memItemRight" valign="bottom"><a class="el" href="ring_8h.html#a0f0">ring_open</a> (size_t capacity, int flags)</td></tr>
<tr class="memdesc:a0f0"><td class="mdescLeft">&#160;</td><td class="mdescRight">Opens a ring buffer.  <a href="ring_8h.html#a0f0">More...</a><br /></td></tr>
</table>
<p>Jump to <a href="#nested-classes">Classes</a> | <a href="#func-members">Functions</a> when you need them.</p>
<p><a href="#func-members">Functions</a> | <a href="install.html">A guide to installing the library on every platform we support</a></p>
<p>Use the <a href="#func-members">more</a> powerful calls. Events stream in real-time. <a href="events.html">Read more…</a>.</p>
<ul><li><p><a href="#func-members">ring_open()</a> | <a href="#nested-classes">ring</a></p></li></ul>
<table><tr><td><p><a href="#func-members">Iterator</a> <a href="#id18">[1]</a></p></td><td>__next__</td></tr></table>
<p>You can <a href="cfg.html">read more</a> about the configuration. The guide says it all. <a href="g.html">Read more</a></p>
<p><a href="#id1"><span class="problematic">``</span></a><a href="#id3"><span class="problematic">`</span></a></p>
</div></body></html>"""


def test_doxygens_title_area_link_row_and_more_links_are_chrome() -> None:
    """Doxygen's pages have no ``<main>``. Its title area (``#titlearea``: the project's name, number and
    brief, "Ring 1.2 Byte ring buffers for C") led every page's first chunk; so did the row of links to the
    page's own member groups (``div.summary``, "Classes | Functions | List of all members"); every brief
    ended with a "More..." link to its details; and every title began with the project's name, "Ring:
    src/ring.h File Reference". The title loses the project's name (``#projectname``, without its number),
    and the rest is chrome. A sentence with such links in it stays, and so does a row with a long link."""
    page = parse_html(_DOXYGEN_FILE_PAGE, url="https://docs.example.org/ring_8h.html")
    assert page.title == "src/ring.h File Reference", page.title
    text = "\n".join(s.text for s in page.sections)
    for chrome in ("Ring 1.2", "Byte ring buffers", "List of all members", "More..."):
        assert chrome not in text, (chrome, text)
    assert text.startswith("ring.h File Reference\n\nA fixed-size ring buffer of bytes.\n"), text
    assert "A ring buffer." in text and "Opens a ring buffer." in text, text
    assert "Jump to Classes | Functions when you need them." in text, text
    assert "Functions | A guide to installing the library on every platform we support" in text, text
    # a link that says "more" in a sentence stays; "Read more…" goes with the stop after it; a row of links
    # that show no word (docutils' "problematic" markers of a broken ``` in reST) is no row of links
    assert "Use the more powerful calls. Events stream in real-time.\n" in text, text
    assert "```" in text.rsplit("\n\n", 1)[1], text
    # a row of links in a list item or a table cell is the author's (Python's collections.abc table: a name
    # and its footnote mark); "read more" inside a sentence stays, alone after one it goes
    assert "- ring_open() | ring\n" in text and "Iterator [1] | __next__" in text, text
    assert "You can read more about the configuration. The guide says it all.\n" in text, text
    # a title that only begins with a word of the project's name keeps it
    other = _DOXYGEN_FILE_PAGE.replace("Ring: src/ring.h File Reference", "Ringing: the bell API")
    assert parse_html(other, url="https://docs.example.org/ring_8h.html").title == "Ringing: the bell API"

def test_a_gutter_of_line_numbers_beside_code_is_left_out_whatever_its_class() -> None:
    """gtk-doc writes each example as a table, the line numbers in one cell's ``<pre>`` and the code in the
    next (``td.listing_lines`` beside ``td.listing_code``, every example of GLib's and GTK's references); the
    numbers were fenced as a code block of their own before the code. A cell whose one ``<pre>`` is nothing but
    consecutive numbers, beside a cell of code, is that gutter; a table of numbers and code that are not a
    gutter (not consecutive, or code in the cell of numbers) stays."""
    html = """<html><head><title>Arrays: GLib Reference Manual</title></head><body><div class="refentry">
<a name="glib-Arrays.description"></a><h2>Description</h2>
<p>Here is an example that stores integers in a GArray:</p>
<div class="informalexample"><table class="listing_frame" border="0" cellpadding="0" cellspacing="0"><tbody><tr>
<td class="listing_lines" align="right"><pre>1
2
3</pre></td>
<td class="listing_code"><pre class="programlisting"><span class="n">GArray</span> *garray;
garray = g_array_new (FALSE, FALSE, sizeof (gint));
g_array_free (garray, TRUE);</pre></td></tr></tbody></table></div>
<table><tr><td><pre>200
404</pre></td><td><pre>OK
Not Found</pre></td></tr></table></div></body></html>"""
    assert _text(html) == (
        "Here is an example that stores integers in a GArray:\n\n```\nGArray *garray;\n"
        "garray = g_array_new (FALSE, FALSE, sizeof (gint));\ng_array_free (garray, TRUE);\n```\n\n"
        "```\n200\n404\n```\n\n```\nOK\nNot Found\n```")


def test_texinfos_node_header_repeated_at_a_long_pages_bottom_is_navigation() -> None:
    """makeinfo 6 repeats a long page's node header after the text, "Next: …, Previous: …, Up: … [Contents]
    [Index]", and there its Next/Previous/Up links have neither ``rel`` nor ``accesskey`` (only Contents and
    Index have a ``rel``): the line ended 60 of GNU m4's 105 pages. A link right after a "Next:", "Previous:"
    or "Up:" label is a pager link too; a sentence with such a word and a link in its text stays."""
    html = """<html><head><title>Arguments (GNU M4 1.4.19 macro processor)</title></head><body lang="en">
<div class="section" id="Arguments"><div class="header"><p>
Next: <a href="Pseudo-Arguments.html" accesskey="n" rel="next">Special arguments to macros</a>, Previous: <a href="Define.html" accesskey="p" rel="prev">Defining a macro</a>, Up: <a href="Definitions.html" accesskey="u" rel="up">How to define new macros</a> &nbsp; [<a href="index.html#SEC_Contents" title="Table of contents" rel="contents">Contents</a>][<a href="Indices.html" title="Index" rel="index">Index</a>]</p>
</div><hr><span id="Arguments-to-macros"></span><h3 class="section">5.2 Arguments to macros</h3>
<p>Macros can have arguments. See the next node, up: <a href="Pseudo-Arguments.html">Special arguments</a>.</p>
</div><hr><div class="header"><p>
Next: <a href="Pseudo-Arguments.html">Special arguments to macros</a>, Previous: <a href="Define.html">Defining a macro</a>, Up: <a href="Definitions.html">How to define new macros</a> &nbsp; [<a href="index.html#SEC_Contents" title="Table of contents" rel="contents">Contents</a>][<a href="Indices.html" title="Index" rel="index">Index</a>]</p>
</div></body></html>"""
    assert _text(html) == "Macros can have arguments. See the next node, up: Special arguments."


def test_a_title_loses_the_sites_name_beside_a_top_heading_of_any_level() -> None:
    """The site's name was stripped from ``<title>`` only beside an H1. mdBook's chapter sections open with an
    <h2> ("Installation - The Rust Programming Language", 81 of the book's pages), gtk-doc's reference pages with
    an <h2> ("Arrays: GLib Reference Manual"), and a site-first title ("MySite | Install", texi2html's "GNU
    gettext utilities: 10. Producing Binary MO Files") was never matched. The page's first heading, of any level,
    with nothing before it, is matched as the H1 is, before or after a separator (a colon too, only against
    that heading); mdBook's menu-bar title names the site where the heading differs ("A - Keywords"); and
    makeinfo's "Node (Manual title)" keeps the node. A title that is no heading's stays whole."""
    def title(html: str) -> str:
        return parse_html(html, url="https://docs.example.org/p.html").title

    mdbook = """<!DOCTYPE HTML><html><head><!-- Book generated using mdBook --><title>{t}</title></head><body>
<div id="menu-bar" class="menu-bar"><h1 class="menu-title">The Rust Programming Language</h1>
<div class="right-buttons"><a href="print.html" title="Print this book"><i class="fa fa-print"></i></a></div></div>
<div id="content" class="content"><main><h2 id="x"><a class="header" href="#x">{h}</a></h2>
<p>The first step is to install Rust.</p></main></div></body></html>"""
    assert title(mdbook.format(t="Installation - The Rust Programming Language", h="Installation")) == "Installation"
    assert title(mdbook.format(t="A - Keywords - The Rust Programming Language", h="Appendix A: Keywords")) \
        == "A - Keywords"
    gtkdoc = """<html><head><title>Arrays: GLib Reference Manual</title></head><body><table class="navigation" id="top">
<tr><td><a accesskey="h" href="index.html"><img src="home.png" alt="Home"></a></td></tr></table>
<div class="refnamediv"><h2><span class="refentrytitle"><a name="glib-Arrays.top_of_page"></a>Arrays</span></h2>
<p>Arrays — arrays of arbitrary elements which grow automatically</p></div></body></html>"""
    assert title(gtkdoc) == "Arrays"
    texi2html = """<html><head><title>GNU gettext utilities: 10. Producing Binary MO Files</title></head><body>
<h1 class="chapter"> <a href="gettext_toc.html#TOC166">10. Producing Binary MO Files</a> </h1><p>Text.</p></body></html>"""
    assert title(texi2html) == "10. Producing Binary MO Files"
    makeinfo = """<html><head><title>Changequote (GNU M4 1.4.19 macro processor)</title>
<meta name="Generator" content="makeinfo"></head><body><div class="section" id="Changequote">
<h3 class="section">8.2 Changing the quote characters</h3><p>The default quote delimiters can be changed.</p>
</div></body></html>"""
    assert title(makeinfo) == "Changequote"
    # another generator's parentheses are the title's own; a title that names no heading stays whole
    assert title(makeinfo.replace("makeinfo", "Hugo 0.120")) == "Changequote (GNU M4 1.4.19 macro processor)"
    assert title("<html><head><title>Guide: Install</title></head><body><p>Intro first.</p><h2>Install</h2>"
                 "<p>Run make.</p></body></html>") == "Guide: Install"


def test_a_link_that_runs_or_copies_the_code_beside_it_is_chrome() -> None:
    """rustdoc writes a playground link after every runnable example, in the example's wrapper beside the
    ``<pre>`` (``<a class="test-arrow" href="https://play.rust-lang.org/?code=…">Run</a>``): it was read as a
    paragraph "Run" after the code, on every example of the standard library's API pages. A link there that
    only names an action on the code (Run, Try it, Copy, Open in playground) is left out; one that says more
    (a link to the full example) and a "Run" link in the text stay."""
    html = """<html><head><meta name="generator" content="rustdoc"><title>read_to_string in std::fs - Rust</title></head>
<body class="rustdoc fn"><section id="main-content" class="content"><div class="docblock">
<p>Read the entire contents of a file into a string.</p>
<div class="example-wrap"><pre class="rust rust-example-rendered"><code><span class="kw">use</span> std::fs;
<span class="kw">let</span> s = fs::read_to_string(<span class="string">"a.txt"</span>)?;</code></pre><a class="test-arrow"
target="_blank" href="https://play.rust-lang.org/?code=use%20std%3A%3Afs%3B&amp;edition=2021">Run</a></div>
<div class="example-wrap"><pre class="rust">let n = 1;</pre><a href="https://github.com/x/examples/main.rs">Full example
on GitHub</a></div>
<p><a href="https://play.rust-lang.org/">Run</a> it in your browser.</p></div></section></body></html>"""
    assert _text(html) == (
        "Read the entire contents of a file into a string.\n\n```rust\nuse std::fs;\n"
        'let s = fs::read_to_string("a.txt")?;\n```\n\n```rust\nlet n = 1;\n```\n\nFull example on GitHub\n\n'
        "Run it in your browser.")


def test_mdbooks_hidden_lines_of_an_example_are_left_out() -> None:
    """mdBook writes a Rust example's hidden lines (``# fn main() {`` in the source) as
    ``<span class="boring">``, which its script and CSS hide: the reader sees ``let s = "Hello, world!";``,
    the chunk read ``#![allow(unused)]`` and ``fn main() {`` around it (rustdoc leaves such lines out of its
    HTML). The lines the page shows stay, in their order."""
    html = """<!DOCTYPE HTML><html lang="en"><head><!-- Book generated using mdBook --><title>The Slice Type</title></head>
<body><main><h1 id="the-slice-type">The Slice Type</h1><p>String literals are slices.</p>
<pre><pre class="playground"><code class="language-rust">
<span class="boring">#![allow(unused)]
</span><span class="boring">fn main() {
</span>let s = &quot;Hello, world!&quot;;
let t = s;
<span class="boring">}
</span></code></pre></pre><p>The type of <code>s</code> here is <code>&amp;str</code>.</p></main></body></html>"""
    assert _text(html) == ('String literals are slices.\n\n```rust\nlet s = "Hello, world!";\nlet t = s;\n```\n\n'
                           "The type of `s` here is `&str`.")


def test_a_table_column_empty_in_every_row_is_left_out() -> None:
    """gtk-doc writes each function's parameters as a table of name, description and annotations, the
    annotations cell empty for most parameters: every row read ``func | a function to execute in the new
    thread |``, an empty column in every quoted parameter table. A column empty in every row (the header's
    cell too) is left out; an empty cell in a column that has text elsewhere keeps its place."""
    html = """<html><head><title>Threads: GLib Reference Manual</title></head><body><div class="refsect3">
<a name="g-thread-new.parameters"></a><h4>Parameters</h4><div class="informaltable"><table class="informaltable">
<colgroup><col class="parameters_name"><col class="parameters_description"><col class="parameters_annotations"></colgroup>
<tbody><tr><td class="parameter_name"><p>name</p></td><td class="parameter_description"><p>an (optional) name for the
new thread.</p></td><td class="parameter_annotations"> </td></tr>
<tr><td class="parameter_name"><p>func</p></td><td class="parameter_description"><p>a function to execute in the new
thread</p></td><td class="parameter_annotations"> </td></tr></tbody></table></div>
<table><tr><th>Key</th><th>Default</th><th>Note</th></tr><tr><td>a</td><td></td><td>x</td></tr>
<tr><td>b</td><td>2</td><td></td></tr></table></div></body></html>"""
    assert _text(html) == ("--- | ---\nname | an (optional) name for the new thread.\nfunc | a function to execute in the new thread"
                           "\n\nKey | Default | Note\na |  | x\nb | 2 |")


def test_texi2htmls_navigation_bar_is_navigation_by_its_links_titles() -> None:
    """texi2html writes its navigation bar as a table of bracketed links, "[ << ] [ >> ] … [Top] [Contents]
    [Index] [ ? ]", with neither ``rel`` nor ``accesskey``, only a ``title`` on each link ("Next chapter",
    "Beginning of this chapter or previous chapter", "Table of contents", "About (help)"): it was the first
    section of every page of GNU gettext's manual. A link whose title names a neighbour page or a part of the
    document is a pager link; a link titled otherwise, or one in a sentence, stays."""
    html = """<html><head><title>GNU gettext utilities: 10. Producing Binary MO Files</title></head><body lang="en">
<table cellpadding="1" cellspacing="1" border="0"><tr>
<td valign="middle" align="left">[<a href="gettext_9.html#SEC86" title="Beginning of this chapter or previous chapter"> &lt;&lt; </a>]</td>
<td valign="middle" align="left">[<a href="gettext_11.html#SEC196" title="Next chapter"> &gt;&gt; </a>]</td>
<td valign="middle" align="left"> &nbsp; </td>
<td valign="middle" align="left">[<a href="gettext_toc.html#SEC_Top" title="Cover (top) of document">Top</a>]</td>
<td valign="middle" align="left">[<a href="gettext_toc.html#SEC_Contents" title="Table of contents">Contents</a>]</td>
<td valign="middle" align="left">[<a href="gettext_21.html#SEC387" title="Index">Index</a>]</td>
<td valign="middle" align="left">[<a href="gettext_abt.html#SEC_About" title="About (help)"> ? </a>]</td></tr></table>
<hr size="2"><a name="SEC172"></a><h1 class="chapter"> <a href="gettext_toc.html#TOC166">10. Producing Binary MO Files</a> </h1>
<p>The msgfmt program writes a binary catalog; see the <a href="gettext_21.html" title="Index">index</a> for its options.</p>
<p>[<a href="msgfmt.html" title="The msgfmt manual page">msgfmt(1)</a>]</p></body></html>"""
    page = parse_html(html, url="https://www.gnu.org/software/gettext/manual/gettext_10.html")
    assert page.title == "10. Producing Binary MO Files"
    assert "\n".join(s.text for s in page.sections) == (
        "The msgfmt program writes a binary catalog; see the index for its options.\n\n[msgfmt(1)]")


def test_a_script_link_that_shows_a_glyph_is_a_toggle_not_text() -> None:
    """rustdoc 1.6x writes the collapse-all toggle beside an item's version stamp as a link, not a button
    (``<a id="toggle-all-docs" href="javascript:void(0)">[<span class="inner">−</span>]</a>``): the stamp read
    ``1.26.0 · · [−]`` atop every standard library page of that era. A link that runs a script and shows no
    word is a toggle, left out (and the stamp with it); a script link that names what it does stays."""
    html = """<html><head><title>read_to_string in std::fs - Rust</title></head><body class="rustdoc fn">
<section id="main-content" class="content"><div class="main-heading"><h1 class="fqn"><span class="in-band">Function
<a href="index.html">fs</a>::<a class="fn" href="#">read_to_string</a></span></h1><span class="out-of-band"><span
class="since" title="Stable since Rust version 1.26.0">1.26.0</span> · <a class="srclink" href="../../src/std/fs.rs.html#283"
>source</a> · <a id="toggle-all-docs" href="javascript:void(0)" title="collapse all docs">[<span class="inner">&#x2212;</span>]</a></span></div>
<div class="docblock"><p>Read the entire contents of a file into a string.
<a href="javascript:showAll()">Show all examples</a></p></div></section></body></html>"""
    assert _text(html) == "Read the entire contents of a file into a string. Show all examples"


def test_a_generators_credit_line_ending_the_page_is_chrome() -> None:
    """texi2html ends every page with its credit line, "This document was generated by Bruno Haible on July, 26
    2020 using texi2html 1.78a." (a ``<p><font size="-1">`` linking to texi2html's site), which was the last text
    of every page of GNU gettext's manual. A short block that ends the content, says the page was generated,
    created or built by or with something, and links to it is left out; the same words in the page's text, or
    without a link, stay."""
    html = """<html><head><title>GNU gettext utilities: 10. Producing Binary MO Files</title></head><body lang="en">
<h1 class="chapter">10. Producing Binary MO Files</h1>
<p>If a POT file is absent when building, it will be generated by scanning the source files with
<a href="xgettext.html">xgettext</a>.</p>
<p>
 <font size="-1">
  This document was generated by <em>Bruno Haible</em> on <em>July, 26 2020</em> using <a href="https://www.nongnu.org/texi2html/"><em>texi2html 1.78a</em></a>.
 </font>
 <br>
</p></body></html>"""
    assert _text(html) == ("If a POT file is absent when building, it will be generated by scanning the source files "
                           "with xgettext.")
    unlinked = html.replace('<a href="https://www.nongnu.org/texi2html/"><em>texi2html 1.78a</em></a>', "texi2html")
    assert _text(unlinked).endswith("This document was generated by Bruno Haible on July, 26 2020 using texi2html.")


def test_rules_for_generators_leave_the_authors_text_alone() -> None:
    """Review of the rules for makeinfo, texi2html, gtk-doc and mdBook pages, each tried on text of the same
    shape that an author wrote: a makeinfo manual's first page (node ``Top``) is titled by the manual, not
    "Top"; a package's "Home: <a>site</a>" and a single link labelled "Next:" are no pager; an ``Input |
    Output`` table of examples keeps its inputs (a gutter has a number for each line of the code beside it,
    from 1); a last paragraph "Built on Starlette …" is no generator's credit; a title's part before a colon
    is dropped only when it is the site's name ("Chapter 3: Introduction" stays whole)."""
    def page(body: str, title: str = "T", head: str = "") -> tuple[str, str]:
        p = parse_html(f"<html><head><title>{title}</title>{head}</head><body><main>{body}</main></body></html>",
                       url="https://docs.example.org/p.html")
        return p.title, "\n".join(s.text for s in p.sections)

    makeinfo = '<meta name="generator" content="makeinfo, texi2any 6.8">'
    assert page("<h1>GNU Texinfo</h1><p>This manual is for Texinfo.</p>", "Top (GNU Texinfo 6.8)", makeinfo)[0] \
        == "GNU Texinfo 6.8"
    assert page("<h2>Changequote</h2><p>Quotes.</p>", "Changequote (GNU M4 1.4.19 macro processor)", makeinfo)[0] \
        == "Changequote"
    _, text = page('<h1>Frob</h1><ul><li>Home: <a href="https://frob.example.org/">frob.example.org</a></li>'
                   '<li>License: MIT</li></ul><p>Next: <a href="b.html">Installing</a></p>')
    assert "Home: frob.example.org" in text and "Next: Installing" in text, text
    _, text = page("<h1>Conv</h1><table><tr><th>Input</th><th>Output</th></tr><tr><td><pre>1</pre></td>"
                   "<td><pre>[1]</pre></td></tr><tr><td><pre>5\n6</pre></td><td><pre>[5, 6]</pre></td></tr></table>")
    assert "```\n1\n```" in text and "```\n5\n6\n```" in text, text
    _, text = page('<h1>Frob</h1><p>Frob serves web APIs.</p><p>Built on <a href="https://www.starlette.io/">'
                   'Starlette</a> for the web parts.</p>')
    assert text.endswith("Built on Starlette for the web parts."), text
    assert page("<h1>Introduction</h1><p>Text.</p>", "Chapter 3: Introduction")[0] == "Chapter 3: Introduction"


def test_a_described_terms_id_is_a_target_in_its_sections_text() -> None:
    """A term a definition list describes under an id of its own (Sphinx's API entries and glossary
    terms, ``<dt id>``; an empty link target at the term's start, ``<a name>`` or ``<span id>``) is a
    target of its section: its id and where its line starts in the text, which the chunker links a chunk
    starting there by. A term with no id, or one whose target holds text, is none; the text is as before."""
    html = """<html><head><title>Glossary</title></head><body><main><h1>Glossary</h1>
<h2 id="terms">Terms</h2><p>Words used here.</p>
<dl class="glossary"><dt id="term-cache">cache</dt><dd><p>A copy kept to skip work.</p>
<dl class="py method"><dt id="Cache.clear"><span class="sig-name">clear</span>()</dt><dd><p>Empties it.</p></dd></dl></dd>
<dt>chunk</dt><dd><p>A piece of a page.</p></dd>
<dt><a name="opt-v"></a>-v, --verbose</dt><dd><p>Says more.</p></dd>
<dt><span id="embed"></span>embedding</dt><dd><p>A vector.</p></dd>
<dt><a id="lnk" href="#lnk">linked</a></dt><dd><p>Not a target.</p></dd></dl></main></body></html>"""
    (sec,) = parse_html(html, url="https://docs.example.org/glossary.html").sections
    assert sec.text == ("Words used here.\n\ncache\n  A copy kept to skip work.\n  clear()\n    Empties it.\nchunk\n"
                        "  A piece of a page.\n-v, --verbose\n  Says more.\nembedding\n  A vector.\nlinked\n  Not a target.")
    assert [(a, sec.text[o:].split("\n", 1)[0]) for o, a in sec.targets] == [
        ("term-cache", "cache"), ("Cache.clear", "clear()"), ("opt-v", "-v, --verbose"), ("embed", "embedding")]
    # a term after a nested section that ended: its section's text is joined from two parts, and the
    # target's place moves with the second
    html = """<html><head><title>API</title></head><body><main><h1>API</h1>
<section id="a"><h2>A</h2><p>First part of A.</p><section id="b"><h3>B</h3><p>All of B.</p></section>
<dl><dt id="A.run">run()</dt><dd><p>Runs A.</p></dd></dl></section></main></body></html>"""
    a, b = parse_html(html, url="https://docs.example.org/api.html").sections
    assert (a.anchor, a.text, b.targets) == ("a", "First part of A.\n\nrun()\n  Runs A.", ())
    assert [(x, a.text[o:]) for o, x in a.targets] == [("A.run", "run()\n  Runs A.")]


def test_a_targets_place_moves_with_the_characters_mending_takes_out_before_it() -> None:
    """Parsing takes soft hyphens, zero width spaces and control characters out of a page's text after the
    walker placed its targets; the targets move back with them (review6 F1). Before, every target after such
    a character named a place that many characters further on: ``pkg.second`` pointed into ``pkg.third``'s
    line and ``pkg.third`` past the text's end, so chunks starting in them linked the entry before."""
    from docs_rag_pipeline.parsing import parse_document

    para = "Use the sep\u00adarator when split\u00adting a zero\u200bwidth string.\x07 " * 20
    html = f"""<html><head><title>API</title></head><body><main><h1 id="api">API</h1>
<dl><dt id="pkg.first">pkg.first()</dt><dd><p>{para}</p></dd>
<dt id="pkg.second">pkg.second()</dt><dd><p>Second does things.</p></dd>
<dt id="pkg.third">pkg.third()</dt><dd><p>Third does other things.</p></dd></dl></main></body></html>"""
    (sec,) = parse_document(html, fmt="html", path="api.html").sections
    assert "\u00ad" not in sec.text and "\u200b" not in sec.text and "\x07" not in sec.text
    assert [(a, sec.text[o:].split("\n", 1)[0]) for o, a in sec.targets] == [
        ("pkg.first", "pkg.first()"), ("pkg.second", "pkg.second()"), ("pkg.third", "pkg.third()")]


def test_rustdocs_stamp_without_a_version_and_its_version_sticker_are_chrome() -> None:
    """rustdoc 1.6x's stamp of an item without a version (an unstable item, a keyword page: ``source · [−]``) read
    a lone ``·`` atop the page once its source link and toggle were left out (review5 F11), and rustdoc's
    standalone pages (the Rust book's old-edition stubs) opened their only chunk with the version sticker
    ``<div id="versioninfo">`` … ``Rust 1.63.0``. Both are chrome now; a version in the text, in a table cell, or a
    block of a version class that says more, stays."""
    item = """<html><head><title>get_backtrace_style in std::panic - Rust</title></head><body><main><div class="main-heading">
<h1 class="fqn"><span class="in-band">Function <a class="fn" href="#">get_backtrace_style</a></span></h1>
<span class="out-of-band"><a class="srclink" href="../../src/std/panic.rs.html#287-317">source</a> · <a id="toggle-all-docs"
href="javascript:void(0)" title="collapse all docs">[<span class="inner">&#x2212;</span>]</a></span></div>
<div class="docblock"><p>Checks whether the standard library’s panic hook will capture a backtrace.</p>
<p><span class="sep">a · b</span> stays.</p></div></main></body></html>"""
    assert _text(item) == ("Checks whether the standard library’s panic hook will capture a backtrace.\n\n"
                           "a · b stays.")
    stub = """<!DOCTYPE html><html><head><meta name="generator" content="rustdoc"><title>Testing</title></head>
<body class="rustdoc"><div id="versioninfo"><img src="../rust-logo-32x32-blk.png" width="32" height="32" alt="Rust logo"><br>
<span class="white-sticker"><a href="https://www.rust-lang.org">Rust</a> 1.63.0</span><br>
<a href="https://github.com/rust-lang/rust/commit/" class="hash white-sticker"></a></div>
<h1 class="title">Testing</h1><p><small>There is a new edition of the book and this is an old link.</small></p>
<div class="version-note">Rust 1.63.0 added scoped threads.</div>
<table><tr><th>Tool</th><th>Version</th></tr><tr><td>rustc</td><td><div class="version">Rust 1.63.0</div></td></tr></table>
</body></html>"""
    assert _text(stub) == ("There is a new edition of the book and this is an old link.\n\nRust 1.63.0 added scoped threads.\n\n"
                           "Tool | Version\nrustc | Rust 1.63.0")


def test_a_navigation_bars_buttons_without_a_link_go_with_the_bar() -> None:
    """texi2html draws a button without a link where there is no neighbour: ``[ << ]`` on a manual's first
    chapter, ``[ >> ]`` on its last. The bar's links went, these cells stayed and read ``[ << ]`` atop the page
    (gettext_1.html) or ``[ >> ]`` at both ends (gettext_30.html). A row of the bar left with nothing but such
    buttons and empty cells goes; a table that explains the buttons (words beside them, the About page) stays."""
    first = """<html><head><title>GNU gettext utilities: 1. Introduction</title></head><body lang="en">
<table cellpadding="1" cellspacing="1" border="0"><tr><td valign="middle" align="left">[ &lt;&lt; ]</td>
<td valign="middle" align="left">[<a href="gettext_2.html#SEC7" title="Next chapter"> &gt;&gt; </a>]</td>
<td valign="middle" align="left"> &nbsp; </td><td valign="middle" align="left"> &nbsp; </td>
<td valign="middle" align="left">[<a href="gettext_toc.html#SEC_Top" title="Cover (top) of document">Top</a>]</td>
<td valign="middle" align="left">[ Up ]</td>
<td valign="middle" align="left">[<a href="gettext_abt.html#SEC_About" title="About (help)"> ? </a>]</td></tr></table>
<hr size="2"><h1 class="chapter">1. Introduction</h1><p>This chapter explains the goals.</p>
<table border="1"><tr><th>Button</th><th>Name</th></tr><tr><td>[ &lt;&lt; ]</td><td>FastBack</td></tr>
<tr><td>[ Up ]</td><td>Up</td></tr></table>
<table><tr><td>[ &lt; ]</td><td>[ &gt; ]</td></tr></table></body></html>"""
    assert _text(first) == ("This chapter explains the goals.\n\nButton | Name\n[ << ] | FastBack\n[ Up ] | Up\n\n"
                            "[ < ] | [ > ]")


def test_a_docbook_sections_id_on_its_div_is_its_headings_anchor() -> None:
    """DocBook XSL's XHTML output (PostgreSQL 15's manual) gives a section's id to its ``<div class="sect2"
    id="DATATYPE-INT">`` and none to the heading inside its ``div.titlepage``: the parser knew only ``<section>``
    and ``div.section``, so 4,246 of the manual's 4,265 sections were cited by a text fragment of their heading
    instead of the id the page has. A DocBook section's div (``sect1``…``sect5``, ``refsect1``…, ``chapter``,
    ``appendix``…) is a section: its id is its heading's anchor, and text after a nested one is its parent's."""
    html = """<html><head><title>8.1. Numeric Types</title></head><body>
<div class="navheader"><table width="100%" summary="Navigation header"><tr><th colspan="5" align="center">8.1. Numeric
Types</th></tr></table><hr></div>
<div class="sect1" id="DATATYPE-NUMERIC"><div class="titlepage"><div><div><h2 class="title" style="clear: both">8.1.
Numeric Types</h2></div></div></div><p>Numeric types consist of integers and decimals.</p>
<div class="sect2" id="DATATYPE-INT"><div class="titlepage"><div><div><h3 class="title">8.1.1. Integer Types</h3></div>
</div></div><p>The types smallint, integer, and bigint store whole numbers.</p></div>
<div class="sect2" id="DATATYPE-FLOAT"><div class="titlepage"><div><div><h3 class="title">8.1.3. Floating-Point
Types</h3></div></div></div><p>The data types real and double precision are inexact.</p></div>
<p>Back in the section about numeric types.</p></div>
<div class="refsect1" id="id-1.9.3.69.5"><h2>Description</h2><p>It constructs an index.</p></div>
<div class="tip"><div class="titlepage"><div><div><h3 id="tips">Tips</h3></div></div></div><p>Be quick.</p></div>
</body></html>"""
    sections = parse_html(html, url="https://www.postgresql.org/docs/15/datatype-numeric.html").sections
    assert [(s.headings[-1], s.anchor, s.text) for s in sections] == [
        ("8.1. Numeric Types", "DATATYPE-NUMERIC",
         "Numeric types consist of integers and decimals.\n\nBack in the section about numeric types."),
        ("8.1.1. Integer Types", "DATATYPE-INT", "The types smallint, integer, and bigint store whole numbers."),
        ("8.1.3. Floating-Point Types", "DATATYPE-FLOAT", "The data types real and double precision are inexact."),
        ("Description", "id-1.9.3.69.5", "It constructs an index."),
        ("Tips", "tips", "Be quick.")]


def test_a_one_column_tables_row_of_a_signature_and_its_description_is_an_entry() -> None:
    """PostgreSQL's function tables (and its catalogs') give each function a row of one cell: the signature's
    paragraph (or several), the description's, the example's. A table of one cell a row was read as a box around
    content, its paragraphs loose, so the description an answer quoted did not name its function ("How do I
    convert a string to lower case?" was answered "Converts the first letter of each word to upper case…"). A
    row whose cell opens with short lines that are no prose (no stop, under four words outside code) followed
    by prose is read as a definition entry: those lines the term, the rest indented under it, and the first
    sentence of the description is quoted with its term. A row of only short lines, or one that opens with
    prose, and a table that holds a heading stay as they were."""
    from docs_rag_pipeline.answering.extractive import sentences

    html = """<html><head><title>9.4. String Functions</title></head><body><div class="sect1" id="FUNCTIONS-STRING">
<div class="titlepage"><div><div><h2 class="title">9.4. String Functions</h2></div></div></div>
<div class="table" id="FUNCTIONS-STRING-OTHER"><div class="table-contents"><table class="table"><colgroup><col></colgroup>
<thead><tr><th class="func_table_entry"><p class="func_signature">Function</p><p>Description</p><p>Example(s)</p></th></tr></thead>
<tbody><tr><td class="func_table_entry"><p class="func_signature"><code class="function">char_length</code> ( <code>text</code> )
→ <code class="returnvalue">integer</code></p><p class="func_signature"><code class="function">character_length</code> (
<code>text</code> ) → <code class="returnvalue">integer</code></p><p>Returns number of characters in the string.</p>
<p><code class="literal">char_length('josé')</code> → <code class="returnvalue">4</code></p></td></tr>
<tr><td class="func_table_entry"><p class="func_signature"><code class="function">timeofday</code> ( ) → <code>text</code></p>
<p>Current date and time (like <code>clock_timestamp</code>, but as a <code>text</code> string); see Section 9.9.5</p></td></tr>
<tr><td><p>A row that opens with prose.</p><p><code>x</code></p></td></tr>
<tr><td><p>Short</p><p>Lines</p></td></tr></tbody></table></div></div>
<table><tr><td><h3 id="usage">Usage</h3><p>Run it.</p></td></tr></table></div></body></html>"""
    text = _text(html)
    assert text == (
        "Function\n\nDescription\n\nExample(s)\n\n"
        "`char_length` ( `text` ) → `integer`\n`character_length` ( `text` ) → `integer`\n"
        "  Returns number of characters in the string.\n  `char_length('josé')` → `4`\n\n"
        "`timeofday` ( ) → `text`\n"
        "  Current date and time (like `clock_timestamp`, but as a `text` string); see Section 9.9.5\n\n"
        "A row that opens with prose.\n\n`x`\n\nShort\n\nLines\nRun it.")
    units = sentences(text)
    assert ("`char_length` ( `text` ) → `integer`\n`character_length` ( `text` ) → `integer`\n"
            "  Returns number of characters in the string.") in units, units
    assert any(u.startswith("`timeofday` ( ) → `text`\n  Current date and time") for u in units), units


def test_a_sites_tagline_beside_its_logo_is_chrome() -> None:
    """SQLite's pages put the site's tagline beside its logo and menu, ``<div class="tagline">Small. Fast.
    Reliable.<br>Choose any three.</div>``: it was the lead text of 210 of its 214 pages, in each first chunk and
    its embedding, and it kept the page's ``<h1>`` from being its title heading. A block of a tagline's or a
    slogan's class (``tagline``, ``site-tagline``, ``slogan``, WordPress' ``site-description``) is chrome as a
    banner is; one that holds a heading or more than 40 words stays."""
    html = """<html><head><title>UPSERT</title></head><body><div class=nosearch><a href="index.html"><img class="logo"
src="images/sqlite370_banner.gif" alt="SQLite"></a><div class="tagline desktoponly">Small. Fast. Reliable.<br>Choose
any three.</div><div class="menu mainmenu"><ul><li><a href="index.html">Home</a><li><a href="about.html">About</a></ul>
</div></div><p class="site-description">Just another docs site</p>
<div class=fancy><h1 id="description">Description</h1><p>UPSERT is a clause added to INSERT.</p>
<div class="tagline-examples"><h2 id="taglines">Taglines</h2><p>A tagline is a short phrase.</p></div></div></body></html>"""
    sections = parse_html(html, url="https://www.sqlite.org/lang_upsert.html").sections
    assert [(s.headings, s.text) for s in sections] == [
        ((), "UPSERT is a clause added to INSERT."), (("Taglines",), "A tagline is a short phrase.")]


def test_a_heros_tagline_under_the_pages_heading_is_its_text() -> None:
    """A tagline under the page's heading is the page's lead sentence, not the site's slogan: Starlight's splash
    page (``<h1 id="_top" data-page-title>`` then ``<div class="tagline">``, in ``<main>``) and VitePress' home
    (``<h1 class="heading">`` then ``<p class="tagline">``) say there what the project is. They were dropped as
    chrome with SQLite's tagline beside its logo (review6 F2); only a tagline neither under a heading of its
    block nor in the page's ``<main>``/``<article>`` is chrome now."""
    starlight = """<!doctype html><html><head><title>Starlight</title></head><body>
<header class="header"><a class="site-title" href="/">Starlight</a></header><main><div class="hero">
<div class="sl-flex copy"><h1 id="_top" data-page-title>Make your docs shine with Starlight</h1>
<div class="tagline">Everything you need to build a stellar documentation website.</div></div>
<div class="sl-flex actions"><a class="sl-link-button primary" href="/getting-started/">Get started</a></div></div>
<div class="sl-markdown-content"><h2 id="next-steps">Next steps</h2><p>Read the guides.</p></div></main></body></html>"""
    vitepress = """<!doctype html><html><head><title>Vite</title></head><body><div id="app"><div class="VPHero">
<div class="main"><h1 class="heading"><span class="name clip">Vite</span> <span class="text">Next Generation Frontend
Tooling</span></h1><p class="tagline">Get ready for a development environment that can finally catch up with you.</p>
</div></div><div class="vp-doc"><h2 id="features">Features</h2><p>Instant server start.</p></div></div></body></html>"""
    sections = parse_html(starlight, url="https://starlight.astro.build/").sections
    assert (sections[0].headings, sections[0].text.split("\n")[0]) == (
        (), "Everything you need to build a stellar documentation website.")
    sections = parse_html(vitepress, url="https://vite.dev/").sections
    assert [(s.headings, s.text) for s in sections] == [
        ((), "Get ready for a development environment that can finally catch up with you."),
        (("Features",), "Instant server start.")]


def test_a_one_column_tables_row_that_is_no_entry_is_read_once_whole() -> None:
    """Whether a one-column table's row is a definition entry is decided on its cell's blocks; the first version
    read the cell, then read it again when it was no entry, and reading an admonition takes its title out of
    it: a row holding a note lost its "Note". The cell is read once, its blocks kept whichever way they go."""
    html = """<html><head><title>T</title></head><body><h1>T</h1><table><tr><td><div class="admonition note">
<p class="admonition-title">Note</p><p>Root is not needed.</p></div></td></tr><tr><td><p>Plain row.</p></td></tr>
<tr><td><p><code>f</code> ( <code>x</code> )</p><p>Frobs the x.</p></td></tr></table></body></html>"""
    assert _text(html) == "Note\nRoot is not needed.\n\nPlain row.\n\n`f` ( `x` )\n  Frobs the x."


def test_a_described_terms_id_is_a_target_only_as_written_and_where_the_page_first_has_it() -> None:
    """A browser opens the first element whose id is the fragment, compared exactly. A ``<dt id=" padded ">``
    was a target named ``padded``, which no element has, and a repeated id (a second ``<dt id="dup">``, a
    term's id a heading above already has) a target whose link opens that other element (ops6 F3). Now
    the id is taken as written, and only where the page first has it; an id of nothing but spaces is none."""
    html = """<html><head><title>Terms</title></head><body><main><h1>Terms</h1>
<h2 id="sec">Sec</h2><p>Intro.</p>
<dl><dt id=" padded ">padded</dt><dd><p>One.</p></dd>
<dt id="dup">first</dt><dd><p>Two.</p></dd>
<dt id="dup">second</dt><dd><p>Three.</p></dd>
<dt id="sec">sec again</dt><dd><p>Four.</p></dd>
<dt id="   ">blank</dt><dd><p>Five.</p></dd>
<dt><a id="dup"></a>third</dt><dd><p>Six.</p></dd>
<dt><a name="sec"></a>named</dt><dd><p>Seven.</p></dd>
<dt><span id="own"></span>own</dt><dd><p>Eight.</p></dd></dl></main></body></html>"""
    (sec,) = parse_html(html, url="https://docs.example.org/terms.html").sections
    assert [(a, sec.text[o:].split("\n", 1)[0]) for o, a in sec.targets] == [
        (" padded ", "padded"), ("dup", "first"), ("own", "own")]
    assert url_fragment(" padded ") == "%20padded%20"


def test_an_entry_inside_a_list_item_or_a_one_column_row_keeps_its_target() -> None:
    """A described term's id is a target wherever its line is indented: in a ``<dl>`` of a list item, or in
    the description of a one-column table's row read as an entry. The list item and the row rebuilt their
    lines without the ids (each indented line was a new line with no anchor), so a chunk starting in such an
    entry linked its section's heading, not the entry; the list's first line lost its id the same way."""
    html = """<html><head><title>API</title></head><body><main><h1 id="api">API</h1>
<ul><li><p>Helpers of the module:</p><dl><dt id="mod.first">first()</dt><dd><p>Returns the first.</p></dd></dl></li>
<li><dl><dt id="mod.last">last()</dt><dd><p>Returns the last.</p></dd></dl></li></ul>
<table><tr><td><p><code>lower</code> ( <code>text</code> )</p><p>Converts the string to lower case.</p>
<dl><dt id="lower.locale">locale</dt><dd><p>The rules it follows.</p></dd></dl></td></tr></table></main></body></html>"""
    (sec,) = parse_html(html, url="https://docs.example.org/api.html").sections
    assert sec.text == (
        "- Helpers of the module:\n  first()\n    Returns the first.\n- last()\n    Returns the last.\n\n"
        "`lower` ( `text` )\n  Converts the string to lower case.\n  locale\n    The rules it follows.")
    assert [(a, sec.text[o:].split("\n", 1)[0]) for o, a in sec.targets] == [
        ("mod.first", "first()"), ("mod.last", "- last()"), ("lower.locale", "locale")]


def test_a_table_without_a_header_row_reads_after_a_rule_not_under_its_first_row() -> None:
    """A table's first row is its header to every reader of chunk text: chunking repeats it atop each piece
    of a long table, an answer draws it as the header and shows a row it quotes under it. gtk-doc writes
    each function's parameters as a table without ``<th>`` or ``<thead>``, so ``array | a GArray`` was the
    header of ``len | the number of elements to append``, drawn so in an answer. A table with no header row
    (no ``<thead>``, no row of ``<th>`` or of wholly bold cells) now starts with a rule, ``--- | ---``, the
    line a Markdown table draws under its header: the answer draws an empty header and quotes each row
    under it alone, and a long one's pieces each start with the rule. Tables with a header are as before."""
    from docs_rag_pipeline.answering.tables import header_rows, markdown_table, table_rows
    from docs_rag_pipeline.chunking import split_text

    params = """<div class="informaltable"><table class="informaltable"><tbody>
<tr><td class="parameter_name"><p>array</p></td><td class="parameter_description"><p>a GArray</p></td></tr>
<tr><td class="parameter_name"><p>data</p></td><td class="parameter_description"><p>a pointer to the elements</p></td></tr>
<tr><td class="parameter_name"><p>len</p></td><td class="parameter_description"><p>the number of elements to append</p></td>
</tr></tbody></table></div>"""
    page = f"<html><head><title>Arrays</title></head><body><h4>Parameters</h4>{params}</body></html>"
    text = _text(page)
    assert text == ("--- | ---\narray | a GArray\ndata | a pointer to the elements\n"
                    "len | the number of elements to append")
    assert header_rows(text)[2] == "--- | ---\nlen | the number of elements to append"
    assert markdown_table(header_rows(text)[2]) == "|  |  |\n| --- | --- |\n| len | the number of elements to append |"
    assert table_rows(text)[0] == ["", ""] and table_rows(text)[1] == ["array", "a GArray"]
    # a long one is cut into pieces that each start with the rule, not with the first parameter
    long = "\n".join(["--- | ---", *(f"p{i} | the parameter number {i} of this function" for i in range(60))])
    pieces = split_text(long, 64, 0, lambda t: len(t.split()))
    assert len(pieces) > 3 and all(p.startswith("--- | ---\np") for p in pieces)
    assert sum(p.count("\n") for p in pieces) == 60
    # a row of <th> cells, a <thead> of <td> cells, or a first row of bold cells is a header row; a row
    # header (<th> first in each row) is not a column header
    for head in ("<tr><th>Name</th><th>Meaning</th></tr>", "<thead><tr><td>Name</td><td>Meaning</td></tr></thead>",
                 "<tr><td><b>Name</b></td><td><strong>Meaning</strong></td></tr>", "<tr><td></td><th>Meaning</th></tr>"):
        html = f"<html><body><table>{head}<tr><td>a</td><td>first</td></tr><tr><td>b</td><td>second</td></tr></table></body></html>"
        assert not _text(html).startswith("---"), head
    html = ("<html><body><table><tr><th>a</th><td>first</td></tr><tr><th>b</th><td>second</td></tr>"
            "</table><table><tr><td>alone</td><td>one row</td></tr></table></body></html>")
    assert _text(html) == "--- | ---\na | first\nb | second\n\nalone | one row"  # one row is no table to draw
    # rows of one cell (DocBook's simplelist, a command a row) are lines of text, no table: no rule
    html = ('<html><body><p>Such commands include:</p><table class="simplelist"><tr><td><code>CLUSTER</code></td></tr>'
            '<tr><td><code>CREATE TABLE</code></td></tr></table></body></html>')
    assert _text(html) == "Such commands include:\n\n`CLUSTER`\n`CREATE TABLE`"


def test_a_layout_tables_rows_are_asked_once_whether_the_table_has_a_header(monkeypatch) -> None:
    """A layout table (``role="presentation"``) gives its plain rows between its blocks in groups, each group
    a table of its own, which starts with a rule when the table has no header row. Whether it has one was
    asked again for every group, over all the table's rows: a page of 250 groups took 26 s to parse. The
    rows are now looked at once a table (``bench/html_tables.py``, *layout table, rows between blocks*)."""
    from docs_rag_pipeline.parsing import html as html_parser

    calls: list[object] = []
    real = html_parser._header_row

    def counted(tr):  # noqa: ANN001, ANN202
        calls.append(tr)
        return real(tr)

    monkeypatch.setattr(html_parser, "_header_row", counted)
    body = "".join(f"<tr><td><p>Block {i} of the page.</p></td></tr><tr><td>int</td><td>f{i}(x)</td></tr>"
                   f"<tr><td>void</td><td>g{i}()</td></tr>" for i in range(40))
    text = _text(f"<html><body><main><table role=\"presentation\">{body}</table></main></body></html>")
    assert text.count("--- | ---\nint | f") == 40
    assert len(calls) <= 3 * 40


def _rustdoc_method(mid: str, signature: str, doc: str, examples: str, stamp: str) -> str:
    """A method as rustdoc 1.6x writes it: its heading in a ``<section>`` inside the toggle's ``<summary>``, beside
    its stamp (``rightside``), and its description after the summary, in the ``<details>``."""
    return (f'<details class="rustdoc-toggle method-toggle" open><summary><section id="{mid}" class="method has-srclink">'
            f'<span class="rightside">{stamp}</span><a href="#{mid}" class="anchor"></a>'
            f'<h4 class="code-header">{signature}</h4></section></summary><div class="docblock"><p>{doc}</p>'
            f'<h5 id="{examples}"><a href="#{examples}">Examples</a></h5><div class="example-wrap">'
            f'<pre class="rust rust-example-rendered"><code>let m = x;</code></pre></div></div></details>')


def test_a_methods_description_after_its_heading_only_section_is_the_methods() -> None:
    """rustdoc 1.6x (the standard library's docs, docs.rs) writes each method's heading alone in a ``<section
    id="method.new">`` inside the toggle's ``<summary>``, its description and examples after it. Once the stamp
    beside the heading (``1.0.0 · source``) was left out, the section held nothing but its heading and was read as
    a section that ended there: the text after it went to the section open before it, so on HashMap's page every
    method's section was empty and its description ("Creates an empty `HashMap`.") and its Examples were the end
    of the method before it (answers7 f1). A section that holds only its heading is that heading's header, and
    what follows is the heading's. A const function's stamp (``const: 1.48.0 · source``, ``1.33.0 (const:
    unstable) · source``) is chrome as a plain version's is; it read as a line at the end of the method before."""
    src = '<a class="srclink" href="../../src/std/collections/hash/map.rs.html#{}">source</a>'
    html = ('<html><head><meta name="generator" content="rustdoc"><title>HashMap in std::collections - Rust</title>'
            '</head><body class="rustdoc struct"><section id="main-content" class="content"><h1 class="fqn">Struct '
            'HashMap</h1><div class="docblock"><p>A hash map.</p></div><h2 id="implementations" class="small-section-'
            'header">Implementations</h2><div id="implementations-list"><details class="rustdoc-toggle '
            'implementors-toggle" open><summary><section id="impl" class="impl has-srclink"><span class="rightside">'
            + src.format(1) + '</span><a href="#impl" class="anchor"></a><h3 class="code-header in-band">impl&lt;K, '
            'V&gt; HashMap&lt;K, V&gt;</h3></section></summary><div class="impl-items">'
            + _rustdoc_method("method.new", "pub fn new() -&gt; HashMap&lt;K, V&gt;",
                              "Creates an empty <code>HashMap</code>.", "examples",
                              '<span class="since" title="Stable since Rust version 1.0.0">1.0.0</span> · ' + src.format(2))
            + _rustdoc_method("method.len", "pub const fn len(&amp;self) -&gt; usize",
                              "Returns the number of elements in the map.", "examples-1",
                              '<span class="since" title="const since 1.48.0">const: 1.48.0</span> · ' + src.format(3))
            + _rustdoc_method("method.as_pin_ref", "pub fn as_pin_ref(self) -&gt; bool",
                              "Converts from a pinned reference.", "examples-2",
                              '<span class="since" title="Stable since Rust version 1.33.0">1.33.0</span> (const: '
                              '<a href="https://github.com/rust-lang/rust/issues/91930">unstable</a>) · ' + src.format(4))
            + '</div></details></div></section></body></html>')
    page = parse_html(html, url="https://doc.rust-lang.org/std/collections/struct.HashMap.html")
    impl = ("Implementations", "impl<K, V> HashMap<K, V>")
    new, length = "pub fn new() -> HashMap<K, V>", "pub const fn len(&self) -> usize"
    pin = "pub fn as_pin_ref(self) -> bool"
    assert [(s.anchor, s.headings, s.text) for s in page.sections] == [
        ("", (), "A hash map."),
        ("implementations", ("Implementations",), ""),
        ("impl", impl, ""),
        ("method.new", (*impl, new), "Creates an empty `HashMap`."),
        ("examples", (*impl, new, "Examples"), "```rust\nlet m = x;\n```"),
        ("method.len", (*impl, length), "Returns the number of elements in the map."),
        ("examples-1", (*impl, length, "Examples"), "```rust\nlet m = x;\n```"),
        ("method.as_pin_ref", (*impl, pin), "Converts from a pinned reference."),
        ("examples-2", (*impl, pin, "Examples"), "```rust\nlet m = x;\n```"),
    ]
    # a section that holds its text still ends where it ends: what follows it is its parent's
    nested = ('<html><head><title>Guide</title></head><body><main><section id="guide"><h1>Guide</h1><p>Intro.</p>'
              '<section id="setup"><h2>Setup</h2><p>Install it.</p></section><p>Back in the guide.</p>'
              '</section></main></body></html>')
    assert [(s.anchor, s.text) for s in parse_html(nested, url="https://x.org/guide.html").sections] == [
        ("", "Intro.\n\nBack in the guide."), ("setup", "Install it.")]


def test_a_page_header_that_is_a_row_of_links_is_chrome() -> None:
    """docutils writes a document's ``.. header::`` as ``<div class="header">`` before the document, ending with
    ``<hr class="header">``; the Docutils site puts its navigation there, "Docutils | Overview | About | Users |
    Reference | Developers", atop 48 of its 64 pages, and it was the first line of every one's lead section
    (answers7 f2). A page header that is nothing but a row of short links and separators is the site's bar; one
    that shows other text (Doxygen's ``div.header`` with the page's title) stays, and so does such a row in the
    content."""
    html = """<html><head><meta name="generator" content="Docutils 0.19: https://docutils.sourceforge.io/" />
<title>Docutils Configuration</title></head><body>
<div class="header">
<a class="reference external" href="https://docutils.sourceforge.io">Docutils</a> | <a class="reference external"
href="../index.html">Overview</a> | <a class="reference external" href="../index.html#user">Users</a> | <a
class="reference external" href="../index.html#ref">Reference</a>
<hr class="header"/>
</div>
<div class="document" id="docutils-configuration"><h1 class="title">Docutils Configuration</h1>
<p>Configuration files are used for persistent customization.</p>
<p><a href="a.html">Tools</a> | <a href="b.html">Writers</a></p></div></body></html>"""
    assert _text(html) == "Configuration files are used for persistent customization.\n\nTools | Writers"
    doxygen = html.replace('<hr class="header"/>', '<div class="title">Widget Reference</div>')
    assert _text(doxygen).startswith("Docutils | Overview | Users | Reference\n\nWidget Reference\n\n")


def test_a_docutils_html4_footnote_table_reads_as_its_label_and_text() -> None:
    """docutils' html4css1 writer (``rst2html``'s default up to docutils 0.19) writes a footnote or a citation as a
    table of one row, its label cell and its text, which a footnote referenced more than once opens with the
    numbers of its back links, ``<em>(<a class="fn-backref">1</a>, <a …>2</a>)</em>``. It was read as a table
    row, ``[4] | (1, 2) Path relative to …``: the numbers in its text, and a row never quoted as text (answers7;
    157 such footnotes in docutils' own docs). It reads as a docutils >= 0.18 footnote does, ``[4] Path relative
    to …``; a table of that class that is no such footnote (more rows) is still a table."""
    html = """<html><head><title>Docutils Configuration</title></head><body><div class="document" id="x">
<h1 class="title">Docutils Configuration</h1><p>Settings take a path.<a class="footnote-reference" href="#f4"
id="footnote-reference-1">[4]</a></p>
<table class="docutils footnote" frame="void" id="f4" rules="none"><colgroup><col class="label" /><col /></colgroup>
<tbody valign="top"><tr><td class="label">[4]</td><td><em>(<a class="fn-backref" href="#footnote-reference-1">1</a>,
<a class="fn-backref" href="#footnote-reference-2">2</a>)</em> Path relative to the working directory of the process
at launch.</td></tr></tbody></table>
<table class="docutils footnote" frame="void" id="f5" rules="none"><colgroup><col class="label" /><col /></colgroup>
<tbody valign="top"><tr><td class="label"><a class="fn-backref" href="#footnote-reference-3">[5]</a></td><td>Images are
only added if they are embedded (1, 2 of them).</td></tr></tbody></table>
<table class="docutils citation" frame="void" id="cit2002" rules="none"><colgroup><col class="label" /><col />
</colgroup><tbody valign="top"><tr><td class="label">[CIT2002]</td><td><em>(<a class="fn-backref"
href="#citation-reference-1">1</a>, <a class="fn-backref" href="#citation-reference-2">2</a>)</em> <p>Citations are
text-labeled footnotes.</p><p>A second paragraph.</p></td></tr></tbody></table>
<table class="footnote"><tr><td class="label">a</td><td>1</td></tr><tr><td class="label">b</td><td>2</td></tr></table>
</div></body></html>"""
    assert _text(html) == (
        "Settings take a path.[4]\n\n[4] Path relative to the working directory of the process at launch.\n\n"
        "[5] Images are only added if they are embedded (1, 2 of them).\n\n"
        "[CIT2002] Citations are text-labeled footnotes.\nA second paragraph.\n\n--- | ---\na | 1\nb | 2")


def test_an_empty_subsection_outside_a_summary_ends_where_it_ends() -> None:
    """A section holding only its heading is its heading's header only where rustdoc writes one, in a toggle's
    ``<summary>``; elsewhere (an HTML5 page's empty subsection) it ends where it ends, and its parent's text
    after it stays its parent's (review7 R2: the closing text had moved into the empty subsection)."""
    html = """<html><body><main><h1>Page</h1><section id="a"><h2>Alpha</h2><p>Intro of alpha section.</p>
<section id="b"><h3>Beta</h3></section>
<p>Closing remarks that belong to alpha.</p></section>
<section id="c"><h2>Gamma</h2><p>Gamma text.</p></section></main></body></html>"""
    secs = {s.headings[-1]: s.text for s in parse_html(html, url="https://x.org/p.html").sections if s.headings}
    assert "Closing remarks that belong to alpha." in secs["Alpha"] and "Closing" not in secs.get("Beta", ""), secs


def test_a_bold_header_row_with_a_footnote_mark_or_a_plain_corner_stays_the_header() -> None:
    """A header row written in ``<td><strong>`` (CPython's ssl protocol matrix) was taken for a data row when a
    cell held a footnote mark (``TLS [3]``) or the corner cell was not bold (``client / server``), and the table
    started with a rule line, its quoted rows under an empty header (review7 R4)."""
    from docs_rag_pipeline.answering.tables import header_rows

    html = """<html><body><main><h1>SSL</h1><p>Which versions connect:</p><table>
<tr><td><em>client</em> / <strong>server</strong></td><td><strong>SSLv3</strong></td>
<td><strong>TLS</strong> <a class="footnote-reference" href="#f3">[3]</a></td><td><strong>TLSv1</strong></td></tr>
<tr><td>SSLv3</td><td>yes</td><td>no</td><td>no</td></tr>
<tr><td>TLS</td><td>no</td><td>yes</td><td>yes</td></tr></table>
<table><tr><td>alpha</td><td>one</td></tr><tr><td>beta</td><td>two</td></tr></table></main></body></html>"""
    text = parse_html(html, url="https://x.org/ssl.html").sections[-1].text
    matrix, plain = [b for b in text.split("\n\n") if " | " in b]
    assert matrix.split("\n")[0] == "client / server | SSLv3 | TLS [3] | TLSv1", matrix
    assert header_rows(matrix)[0] == "client / server | SSLv3 | TLS [3] | TLSv1\nSSLv3 | yes | no | no"
    assert plain == "--- | ---\nalpha | one\nbeta | two", plain


def test_an_entry_that_opens_a_footnote_keeps_its_target() -> None:
    """A footnote's label opens its first line (``[1] x.y()``); that line was rebuilt without its id, so an API
    entry first in a footnote (docutils' ``<aside class="footnote">`` or html4css1's footnote table) lost its
    target, as entries in list items had (review7 N1)."""
    html = """<html><body><main><h1 id="api">API</h1><p>Text.</p><aside class="footnote brackets" id="f1"
role="doc-footnote"><span class="label"><span class="fn-bracket">[</span>1<span class="fn-bracket">]</span></span>
<dl><dt id="x.y">x.y()</dt><dd><p>Does y.</p></dd></dl></aside><table class="docutils footnote" frame="void" id="f4"
rules="none"><tbody valign="top"><tr><td class="label">[4]</td><td><dl><dt id="x.z">x.z()</dt><dd><p>Does z.</p></dd>
</dl></td></tr></tbody></table></main></body></html>"""
    (sec,) = parse_html(html, url="https://x.org/a.html").sections
    assert sec.text == "Text.\n\n[1] x.y()\n  Does y.\n\n[4] x.z()\n  Does z."
    assert [(a, sec.text[o:].split("\n", 1)[0]) for o, a in sec.targets] == [("x.y", "[1] x.y()"), ("x.z", "[4] x.z()")]


def test_a_headings_hover_text_is_no_part_of_it() -> None:
    """rustdoc puts a tooltip in the heading of every method that returns a type with notable traits
    (``<span class="notable-traits"><span class="notable-traits-tooltip">ⓘ<span class="notable-traits-tooltiptext">
    Notable traits for Vec<u8, A> impl<A: Allocator> Write for …``): it was glued to the signature in the heading
    path, and so in every chunk's header and citation title of the section (review7 N3). A tooltip by class or
    role inside a heading is chrome; one in the text stays."""
    html = """<html><body><main><h1>Struct Vec</h1><section id="method.new"><h4 class="code-header">pub const fn
<a class="fn" href="#method.new">new</a>() -&gt; Vec&lt;T&gt;<span class="notable-traits"><span
class="notable-traits-tooltip">ⓘ<span class="notable-traits-tooltiptext"><span class="docblock"><span
class="notable">Notable traits for Vec&lt;u8&gt;</span><code class="content">impl Write for Vec&lt;u8&gt;</code>
</span></span></span></span></h4><div class="docblock"><p>Constructs a new, empty <code>Vec</code>.
<span class="tooltip">Hover text of the body stays.</span></p></div></section></main></body></html>"""
    sections = parse_html(html, url="https://doc.rust-lang.org/std/vec/struct.Vec.html").sections
    assert [(s.headings[-1], s.text) for s in sections if s.headings] == [
        ("pub const fn new() -> Vec<T>", "Constructs a new, empty `Vec`. Hover text of the body stays.")]
    # a tooltip's trigger that shows the heading's words (the common CSS tooltip) keeps them; its hover box goes
    # (review7 R10: the whole trigger went, and the section was headed "")
    html = """<html><body><main><h1>API</h1><h2 id="rate-limits"><span class="tooltip">Rate limits<span
class="tooltiptext">Requests per minute</span></span></h2><p>Each client may send 60 requests.</p></main></body></html>"""
    sections = parse_html(html, url="https://x.org/api.html").sections
    assert [(s.headings[-1], s.anchor) for s in sections if s.headings] == [("Rate limits", "rate-limits")]


def test_a_headerless_table_with_a_row_of_one_cell_gets_no_rule() -> None:
    """A table whose rows are not all rows of cells (a ``colspan`` label over its parameters) is no table to any
    reader of chunk text, so the rule line a headerless table starts with was noise atop it, glued to the label
    in the chunk, the prompt and the extractive unit (review7 R1b); such a table reads as its lines, as before."""
    html = ("<html><body><h1>T</h1><p>Intro.</p><table><tr><td colspan=2>Network options of the client.</td></tr>"
            "<tr><td>host</td><td>the host to connect to</td></tr><tr><td>port</td><td>the port to connect to</td></tr>"
            "</table></body></html>")
    text = parse_html(html, url="https://x.org/a.html").sections[-1].text
    assert text.endswith("Network options of the client.\nhost | the host to connect to\nport | the port to connect to"), text
    assert "---" not in text
