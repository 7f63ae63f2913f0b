"""A table row as chunk text holds it, one line: the cells joined with `` | `` (``a | b | c``). Every
parser writes rows with :func:`row_line`, and what reads them back (the answer that quotes a table,
chunking that repeats a table's header row) uses :func:`row_cells`, so the two agree on the cells.

Two things made the plain join ambiguous, and a quoted table put cells in the wrong columns: a ``|``
inside a cell (``a \\| b`` in Markdown), read as a cell boundary, and an empty first or last cell,
whose edge is a bare ``|``. So a ``|`` in a cell is written ``\\|``, and an empty edge cell keeps its
pipe: ``| 40 | unnamed`` (first cell empty), ``Walrus | 30 |`` (last cell empty). A row of
ordinary cells is written as before, so the chunk texts (and their embeddings) of such tables stay
the same.

A table's first row is its header row to every reader (chunking repeats it atop each piece of a long
table, an answer draws it as the header and shows a row it quotes under it). A table without one (an
HTML table with no ``<th>`` and no ``<thead>``: gtk-doc's parameter tables, ``array | a GArray``) starts
with :func:`rule_line` instead, ``--- | ---``, the line a Markdown table draws under its header: its
first row is a row like the others, and the readers take the rule for an empty header."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["headless_rule", "is_row_line", "is_rule_line", "row_cells", "row_line", "rule_line"]

#: a cell boundary: a ``|`` that no backslash escapes (a cell's own ``|`` is written ``\|``)
_BOUNDARY = re.compile(r"(?<!\\)\|")


def row_line(cells: Sequence[str]) -> str:
    """``cells`` (each one line of text) as a row line: joined with `` | ``, a ``|`` in a cell written
    ``\\|``; an empty first or last cell leaves its pipe at the line's edge (``| 40 | unnamed``). A
    single cell (the one cell of a layout table's row that holds text) is a line of text, as written."""
    if len(cells) == 1:
        return cells[0].strip()
    return " | ".join(c.replace("|", "\\|") for c in cells).strip()


def row_cells(line: str) -> list[str]:
    """The cells of a row line written by :func:`row_line`, empty ones included, each ``\\|`` a ``|``
    again: ``| 40 | unnamed`` → ``["", "40", "unnamed"]``, ``a \\| b | c`` → ``["a | b", "c"]``."""
    return [c.strip().replace("\\|", "|") for c in _BOUNDARY.split(line.strip())]


def is_row_line(line: str) -> bool:
    """``line`` reads as a row of two cells or more: a `` | `` between cells, or a pipe at its edge
    that an empty first or last cell left (``| 40``, ``30 |``)."""
    s = line.strip()
    return " | " in s or (len(s) > 1 and (s.startswith("| ") or s.endswith(" |")))


def rule_line(columns: int) -> str:
    """The first line of a table without a header row: a ``---`` cell a column (two at least), as the
    rule a Markdown table draws under its header (``--- | --- | ---``)."""
    return " | ".join(["---"] * max(2, columns))


def is_rule_line(line: str) -> bool:
    """``line`` is :func:`rule_line`'s: two cells or more, each ``---`` (a Markdown separator's
    ``:---:`` or longer dashes too)."""
    cells = row_cells(line)
    return len(cells) >= 2 and all(re.fullmatch(r":?-{3,}:?", c) for c in cells)


def headless_rule(rows: Sequence[str]) -> str | None:
    """The :func:`rule_line` a table of ``rows`` (its row lines) starts with when it has no header row, as
    each parser writes one; None for rows no reader takes for a table: fewer than two, or one that is no
    row of cells (a row of one cell, DocBook's ``simplelist``, a ``colspan`` label, is a line of text)."""
    if len(rows) < 2 or not all(is_row_line(r) for r in rows):
        return None
    return rule_line(max(len(row_cells(r)) for r in rows))
