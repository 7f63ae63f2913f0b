"""Jupyter notebooks (``.ipynb``): the page a notebook renders as, read as Markdown.

A Markdown cell is Markdown; a code cell is a fenced block in the kernel's language; a code cell's text
output (a stream, or a result's ``text/plain``) is a fenced ``output`` block after it, cut to
:data:`MAX_OUTPUT_LINES` lines; images, HTML and widget outputs show nothing to index; a raw cell is left
out. The notebook's ``metadata.title`` (as Jupyter Book and nbsphinx read it) is the title, else the
first H1 of its Markdown, as for a Markdown page.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..records import ParsedPage
from .errors import ParseError
from .markdown import fence_block, parse_markdown

#: the most lines of one output kept: a long log or a printed table says little more after them
MAX_OUTPUT_LINES = 20


def _text(value: Any) -> str:
    """A cell's ``source`` or an output's text: a string, or a list of lines."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(x for x in value if isinstance(x, str))
    return ""


def _fence(code: str, info: str) -> str:
    return "\n".join(line.text for line in fence_block(code.rstrip(), info))


def _outputs(cell: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for o in cell.get("outputs") or []:
        if not isinstance(o, dict):
            continue
        if o.get("output_type") == "stream":
            text = _text(o.get("text"))
        elif o.get("output_type") in ("execute_result", "display_data"):
            data = o.get("data") if isinstance(o.get("data"), dict) else {}
            text = _text(data.get("text/plain")) if "text/html" not in data and not any(
                k.startswith("image/") for k in data) else ""
        else:  # an error's traceback is terminal escapes and frames, not documentation
            text = ""
        lines = text.rstrip().split("\n") if text.strip() else []
        if len(lines) > MAX_OUTPUT_LINES:
            lines = lines[:MAX_OUTPUT_LINES] + ["…"]
        if lines:
            out.append(_fence("\n".join(lines), "output"))
    return out


_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _cut_notebook(body: str) -> dict[str, Any] | None:
    """The notebook ``body`` cut off at a source's ``max_bytes`` (its plots' base64 make a notebook large),
    as far as it is whole: the top-level keys before ``cells`` and the cells that end before the cut, as a
    page of any other format is indexed up to its cut. None when ``body`` is not such a cut: no whole cell
    before the bad JSON, or bad JSON after them in a file that still ends as a notebook does (with ``}``),
    which was broken, not cut."""
    nb: dict[str, Any] = {}
    pos = _WS.match(body).end()
    if not body.startswith("{", pos):
        return None
    pos += 1
    try:
        while True:
            pos = _WS.match(body, pos).end()
            key, pos = _DECODER.raw_decode(body, pos)
            pos = _WS.match(body, pos).end()
            if not isinstance(key, str) or not body.startswith(":", pos):
                return None
            pos = _WS.match(body, pos + 1).end()
            if key == "cells" and body.startswith("[", pos):
                break
            nb[key], pos = _DECODER.raw_decode(body, pos)
            pos = _WS.match(body, pos).end()
            if not body.startswith(",", pos):
                return None
            pos += 1
    except json.JSONDecodeError:
        return None
    cells: list[Any] = []
    pos += 1
    while True:
        pos = _WS.match(body, pos).end()
        try:
            cell, pos = _DECODER.raw_decode(body, pos)
        except json.JSONDecodeError:
            break
        cells.append(cell)
        pos = _WS.match(body, pos).end()
        if not body.startswith(",", pos):
            break
        pos += 1
    if not cells or (pos < len(body) and body.rstrip().endswith("}")):
        return None
    nb["cells"] = cells
    return nb


def notebook_markdown(body: str, *, path: str) -> tuple[str, str | None]:
    """The notebook ``body`` (its JSON) as Markdown, and its ``metadata.title`` (None if it has none)."""
    try:
        nb = json.loads(body)
    except json.JSONDecodeError as exc:
        nb = _cut_notebook(body)
        if nb is None:
            raise ParseError(f"{path}: not a Jupyter notebook: invalid JSON ({exc.msg} at line {exc.lineno}); if the "
                             "file was cut off at the source's max_bytes, raise max_bytes or exclude it") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ParseError(f"{path}: not a Jupyter notebook: no list of cells (nbformat 4 has one under 'cells'); "
                         "convert it with `jupyter nbconvert --to notebook` or exclude it")
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    kernel = meta.get("kernelspec") if isinstance(meta.get("kernelspec"), dict) else {}
    info = meta.get("language_info") if isinstance(meta.get("language_info"), dict) else {}
    lang = next(iter(str(kernel.get("language") or info.get("name") or "").split()), "")
    blocks: list[str] = []
    for cell in nb["cells"]:
        if not isinstance(cell, dict):
            continue
        source = _text(cell.get("source"))
        if cell.get("cell_type") == "markdown" and source.strip():
            blocks.append(source.strip("\n"))
        elif cell.get("cell_type") == "code":
            if source.strip():
                blocks.append(_fence(source, lang))
            blocks.extend(_outputs(cell))
    title = meta.get("title")
    return "\n\n".join(blocks) + "\n", (str(title) if isinstance(title, str | int | float) and str(title).strip()
                                         else None)


def parse_notebook(body: str, *, path: str, anchors: str = "github") -> ParsedPage:
    text, title = notebook_markdown(body, path=path)
    page = parse_markdown(text, path=path, anchors=anchors)
    return ParsedPage(title=" ".join(title.split()), sections=page.sections, metadata=page.metadata) if title \
        else page
