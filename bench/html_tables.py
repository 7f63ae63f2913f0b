"""Parsing an HTML page with a large table: time per page as the table grows.

The layout-table rule of 51e4e06 (a table with a heading in it lays out a page, and its cell's id may
name chrome) searched a cell's whole table for a heading, once per cell: parsing a page was quadratic
in its table's size. The search now runs only for a cell whose id names chrome. Baseline: lxml's parse
of the same page and its text (``BeautifulSoup(html, "lxml").get_text()``), the floor every parse pays,
in the same process. Prints seconds per page and the ratio per size, and the growth of each from the
smallest size to the largest (1.0 is linear, 2.0 quadratic). Run: ``python bench/html_tables.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bs4 import BeautifulSoup  # noqa: E402

from docs_rag_pipeline.parsing.html import parse_html  # noqa: E402
from timing import best_of, growth  # noqa: E402 - bench/timing.py, beside this script

SHAPES = {
    "data table, plain cells": lambda i: f"<tr><td>name{i}</td><td>value {i}</td><td>what {i} does</td></tr>",
    "data table, every cell with an id": lambda i: (f"<tr><td id='n{i}'>name{i}</td><td id='v{i}'>value {i}</td>"
                                                    f"<td id='d{i}'>what {i} does</td></tr>"),
}
#: rows between blocks in a layout table (``role="presentation"``): each group of plain rows is asked whether
#: the table has a header row (no <th>: it starts with a rule, see table_row.rule_line); the table's rows are
#: looked at once, not once per group
LAYOUT = {"layout table, rows between blocks": lambda i: (f"<tr><td><p>Block {i} of the page.</p></td></tr>"
                                                         f"<tr><td>int</td><td>f{i}(x)</td></tr><tr><td>void</td><td>g{i}()</td></tr>")}
SIZES = (250, 500, 1_000, 2_000)


def page(shape, rows: int) -> str:
    body = "".join(shape(i) for i in range(rows))
    role = ' role="presentation"' if shape in LAYOUT.values() else ""
    return (f"<html><head><title>T</title></head><body><main><h1>T</h1><p>Intro.</p><table{role}>{body}</table>"
            "</main></body></html>")



def main() -> None:
    print(f"{'shape':38} {'rows':>6} {'baseline s':>11} {'now s':>8} {'ratio':>7}")
    for name, shape in {**SHAPES, **LAYOUT}.items():
        first = last = None
        for rows in SIZES:
            html = page(shape, rows)
            base = best_of(lambda h: BeautifulSoup(h, "lxml").get_text(), html)
            now = best_of(lambda h: parse_html(h, url="https://example.org/t.html"), html)
            print(f"{name:38} {rows:>6} {base:>11.4f} {now:>8.4f} {now / base:>6.1f}x")
            first = first or (rows, base, now)
            last = (rows, base, now)
        print(f"{'':38} growth {first[0]}→{last[0]} rows: baseline n^{growth(first[0], last[0], first[1], last[1]):.1f}, "
              f"now n^{growth(first[0], last[0], first[2], last[2]):.1f}")


if __name__ == "__main__":
    main()
