"""HTML pages as API documentation generators write them (pkg.go.dev, Doxygen, ExDoc, Dokka, pdoc,
sphinx-book-theme): their markup, reduced to what each test is about, parsed as a crawl or a folder of
built HTML parses it."""

from __future__ import annotations

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
