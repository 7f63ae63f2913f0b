"""Tables in answers: the parsers write a table's rows as ``a | b | c`` lines (see docs/formats.md and
``docs_rag_pipeline/table_row.py``); an answer shows a table as a GitHub-flavoured Markdown table,
which Markdown clients (and the chat page) draw as a table, and the CLI prints with its columns
lined up."""

from __future__ import annotations

import re

from ..table_row import is_row_line, is_rule_line, row_cells

__all__ = ["for_terminal", "header_rows", "is_markdown_table", "markdown_table", "strip_table_markup", "table_rows", "terminal_table"]

TABLE_SEPARATOR = re.compile(r"^\s*\|?(\s*:?-{3,}:?\s*\|)*\s*:?-{3,}:?\s*\|?\s*$")


def table_rows(block: str) -> list[list[str]] | None:
    """The cells of a block of rows (two rows or more, every line a row), else None: chunk text's row
    lines (``a | b | c``, read by :func:`~docs_rag_pipeline.table_row.row_cells`: an empty edge cell
    and a ``\\|`` in a cell stay what they are), or a Markdown table (rows between pipes, a ``| --- |``
    separator under the first). Each cell is the document's text, a ``|`` in it unescaped. A table that
    has no header row (chunk text's rows after a :func:`~docs_rag_pipeline.table_row.rule_line`) has an
    empty one, a cell a column, as a Markdown table without a header is written."""
    lines = [ln.strip() for ln in block.strip().split("\n")]
    if len(lines) < 2 or not all(is_row_line(ln) or ln.startswith("|") for ln in lines):
        return None
    markdown = is_markdown_table(block)
    rows = [_markdown_cells(ln) if markdown else row_cells(ln) for ln in lines if not TABLE_SEPARATOR.match(ln)]
    if not markdown and is_rule_line(lines[0]):  # a table without a header row: its header is empty
        rows.insert(0, [""] * max([len(row_cells(lines[0])), *map(len, rows)]))
    return rows if len(rows) >= 2 else None


def header_rows(block: str) -> list[str]:
    """Each row of a table under its first row (the header), as a table of two rows in the block's own
    form (chunk text's row lines, or a Markdown table with its separator); nothing for a block that is
    no table of two rows or more. A table without a header row has each row under its rule line: a
    row of it is never shown under another row as if that were the header."""
    if table_rows(block) is None:
        return []
    lines = [ln.strip() for ln in block.strip().split("\n")]
    markdown = is_markdown_table(block)
    rows = [ln for ln in lines if not (TABLE_SEPARATOR.match(ln) and "-" in ln)]
    if not markdown and is_rule_line(lines[0]):  # no header row: each row under the rule, a table of its own
        return [f"{lines[0]}\n{row}" for row in rows]
    if len(rows) < 2:
        return []
    head = f"{rows[0]}\n{lines[1]}" if markdown else rows[0]
    return [f"{head}\n{row}" for row in rows[1:]]


def _markdown_cells(line: str) -> list[str]:
    """The cells of a Markdown table's row: the pipes at its edges open and close it, they bound no
    empty cell as in chunk text."""
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    return row_cells(line)


def _padded(rows: list[list[str]]) -> list[list[str]]:
    """``rows`` with the short ones padded with empty cells to the widest one's count."""
    width = max(len(r) for r in rows)
    return [r + [""] * (width - len(r)) for r in rows]


def markdown_table(block: str) -> str:
    """``block`` as a Markdown table, its first row the header (a table's first row is its header in
    Markdown, and the header row in the HTML and AsciiDoc docs this parses); unchanged when it is not
    a table of two rows or more. A ``|`` inside a cell is escaped, an empty cell stays in its column."""
    rows = table_rows(block)
    if rows is None:
        return block
    rows = _padded(rows)

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(rows[0]), "| " + " | ".join(["---"] * len(rows[0])) + " |", *map(line, rows[1:])])


def is_markdown_table(block: str) -> bool:
    """A Markdown table: rows between pipes, the second line a ``| --- |`` separator."""
    lines = block.strip().split("\n")
    return len(lines) >= 2 and lines[0].lstrip().startswith("|") and bool(TABLE_SEPARATOR.match(lines[1])) \
        and "-" in lines[1]


def strip_table_markup(text: str) -> str:
    """``text`` without what makes rows a Markdown table (separator lines, pipes): what remains of a
    table in an answer is what remains of its rows in the chunk it came from."""
    lines = [ln for ln in text.split("\n") if not (TABLE_SEPARATOR.match(ln) and "-" in ln)]
    return "\n".join(lines).replace("\\|", " ").replace("|", " ")


def terminal_table(block: str) -> str:
    """A Markdown table with its columns padded to one width each, for a terminal (a ``|`` in a cell
    stays escaped, as the table's own markup)."""
    rows = table_rows(block)
    if rows is None:
        return block
    rows = [[c.replace("|", "\\|") for c in r] for r in _padded(rows)]
    sizes = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(sizes[i]) for i, c in enumerate(cells)) + " |"

    return "\n".join([line(rows[0]), "|" + "|".join("-" * (s + 2) for s in sizes) + "|", *map(line, rows[1:])])


_MARKER_LINE = re.compile(r"^\s*\[\d+\]\s*$")


def for_terminal(answer: str) -> str:
    """An answer as the CLI prints it: each Markdown table (with the citation marker on the line after
    it) lined up by :func:`terminal_table`; ``&lt;`` outside code as the ``<`` a Markdown client shows
    (an answer writes a tag-like ``<name attr>`` so, that no browser reads it as a tag; a terminal reads
    no tag); everything else as it is."""
    from .markers import code_parts

    parts = code_parts(answer)
    parts[0::2] = [p.replace("&lt;", "<") for p in parts[0::2]]
    answer = "".join(parts)
    out = []
    for block in answer.split("\n\n"):
        lines = block.split("\n")
        tail = [lines.pop()] if len(lines) > 2 and _MARKER_LINE.match(lines[-1]) else []
        body = "\n".join(lines)
        out.append("\n".join([terminal_table(body) if is_markdown_table(body) else body, *tail]))
    return "\n\n".join(out)
