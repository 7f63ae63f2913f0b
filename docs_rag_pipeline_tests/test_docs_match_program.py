"""The user docs name what the program has, and the program has what the docs name: the CLI's
subcommands and options (docs/interfaces/cli.md), read from the argparse parser the program runs, so
a flag or subcommand added, renamed or removed on one side only fails here. Fast: nothing is ingested."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from docs_rag_pipeline.cli import build_parser

from .conftest import REPO

DOCS = REPO / "docs"
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_TICKED = re.compile(r"`([^`\n]+)`")


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _sections(text: str, level: int) -> dict[str, str]:
    """Heading (without its #s) → its text up to the next heading of the same or a higher level.
    Headings inside code blocks are not headings."""
    fenced = [m.span() for m in _FENCE.finditer(text)]
    heading = re.compile(rf"^#{{1,{level}}}[ \t]+(.+?)[ \t]*$", re.M)
    marks = [m for m in heading.finditer(text) if not any(a <= m.start() < b for a, b in fenced)]
    out = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out[m.group(1)] = text[m.end():end]
    return out


def _table_rows(text: str) -> list[list[str]]:
    """The body rows of every Markdown table in ``text``, as lists of cells (header and rule left out)."""
    rows, header_seen = [], False
    for line in text.splitlines():
        if not line.startswith("|"):
            header_seen = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if all(re.fullmatch(r":?-+:?", c) for c in cells if c):
            header_seen = True
        elif header_seen:
            rows.append(cells)
    return rows


# ---- the command line: docs/interfaces/cli.md against build_parser() ---------------------------

_NUMBER_WORDS = dict(enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                               "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()))


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    # argparse has no public way to list a parser's subcommands or options: its _actions (and the
    # _SubParsersAction among them, whose choices are the subparsers) are the only record of them
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """Every --flag the parser accepts (its own -h/--help included)."""
    return {o for a in parser._actions for o in a.option_strings if o.startswith("--")}


def _positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]


def _invocations(text: str, subcommands: set[str]) -> list[tuple[str, str]]:
    """(subcommand, the rest of the line or code span) for each ``docs-rag [--config X] SUB …`` in ``text``:
    the flags after it are that subcommand's, whichever section mentions it."""
    out = []
    for m in re.finditer(r"docs-rag(?:\s+--config\s+\S+)?\s+([a-z]+)\b([^`\n]*)", text):
        if m.group(1) in subcommands:
            out.append((m.group(1), m.group(2)))
    return out


def _cli_doc() -> tuple[str, dict[str, str]]:
    text = _read(DOCS / "interfaces" / "cli.md")
    return text, _sections(text, 2)


def test_every_subcommand_is_documented_and_every_documented_one_exists() -> None:
    subs = set(_subparsers(build_parser()))
    text, sections = _cli_doc()
    headed = {h.split()[1] for h in sections if re.fullmatch(r"docs-rag [a-z]+", h)}
    intro = re.search(r"It has (\w+) subcommands: ([^.]+)\.", text)
    assert intro, "cli.md's first paragraph no longer says 'It has N subcommands: …'"
    listed = set(_TICKED.findall(intro.group(2)))
    # every code line that runs docs-rag names a subcommand that exists (a synopsis, an example)
    code = "\n".join(m.group(0) for m in _FENCE.finditer(text))
    run = {m.group(1) for m in re.finditer(r"^docs-rag(?:\s+--config\s+\S+)?\s+([a-z]+)", code, re.M)}
    problems = []
    for what, names in (("a '## docs-rag X' section", headed), ("the first paragraph's list", listed),
                        ("a code example", run)):
        problems += [f"{what} documents '{n}', which the parser does not have" for n in sorted(names - subs)]
        if what != "a code example":
            problems += [f"'{n}' is a subcommand but not in {what}" for n in sorted(subs - names)]
    if _NUMBER_WORDS.get(len(subs)) != intro.group(1):
        problems.append(f"the first paragraph says '{intro.group(1)} subcommands'; the parser has {len(subs)}")
    assert not problems, "\n".join(problems)


def test_every_option_of_each_subcommand_is_in_its_section_and_every_documented_one_exists() -> None:
    parser = build_parser()
    subs = _subparsers(parser)
    global_opts = _options(parser)  # --config, --help: cli.md presents them once, in their own section
    _, sections = _cli_doc()
    problems = []
    for name, sub in subs.items():
        section = sections.get(f"docs-rag {name}")
        if section is None:
            continue  # the subcommand test reports it
        accepted = _options(sub)
        # the options this section names for its own subcommand: those of its docs-rag lines, and
        # the ones in its prose, which are not after another subcommand's "docs-rag X"
        named_here = {f for other, rest in _invocations(section, set(subs)) if other == name
                      for f in _FLAG.findall(rest)}
        prose = re.sub(r"docs-rag(?:\s+--config\s+\S+)?\s+[a-z]+\b[^`\n]*", "", section)
        named_here |= set(_FLAG.findall(prose))
        problems += [f"{name}: cli.md names {f}, which `docs-rag {name}` does not accept"
                     for f in sorted(named_here - accepted - global_opts)]
        problems += [f"{name}: the parser accepts {f}, which its section of cli.md never names"
                     for f in sorted(accepted - named_here - {"--help"})]
        # a section with an options table explains every option in it, not only in the synopsis
        rows = [r for r in _table_rows(section) if r and r[0].startswith("`--")]
        if rows:
            in_table = {_FLAG.search(r[0]).group(0) for r in rows}
            problems += [f"{name}: {f} has no row in the options table of cli.md"
                         for f in sorted(accepted - in_table - {"--help"})]
        for action in sub._actions:  # each choice of an option or positional is named (refresh|reparse|force)
            for choice in action.choices or ():
                if not re.search(rf"(?<![\w-]){re.escape(str(choice))}(?![\w-])", section):
                    problems.append(f"{name}: {action.dest} may be '{choice}', which cli.md does not say")
        synopsis = "\n".join(m.group(0) for m in _FENCE.finditer(section))
        for action in _positionals(sub):
            shown = (action.metavar or action.dest).upper()
            if not action.choices and shown not in synopsis:
                problems.append(f"{name}: the argument {shown} is not in its synopsis")
    assert not problems, "\n".join(problems)


def test_the_global_options_and_the_flags_outside_the_sections_exist() -> None:
    parser = build_parser()
    subs = _subparsers(parser)
    global_opts = _options(parser)
    text, sections = _cli_doc()
    glob = next(body for head, body in sections.items() if head.startswith("The global option"))
    named = set(_FLAG.findall(re.sub(r"docs-rag(?:\s+--config\s+\S+)?\s+[a-z]+\b[^`\n]*", "", glob)))
    problems = [f"the global options' section names {f}, which the parser does not take before a subcommand"
                for f in sorted(named - global_opts)]
    problems += [f"the parser's global option {f} is not in cli.md's global options' section"
                 for f in sorted(global_opts - named - {"--help"})]
    # a "docs-rag X --flag" anywhere in the page (an example in another section) is an option of X
    for name, rest in _invocations(text, set(subs)):
        problems += [f"cli.md runs `docs-rag {name} … {f}`, which {name} does not accept"
                     for f in _FLAG.findall(rest) if f not in _options(subs[name]) | global_opts]
    # the other sections (the introduction, exit status) name options of some subcommand
    every = set().union(*map(_options, subs.values())) | global_opts
    rest = "".join(body for head, body in sections.items()
                   if not head.startswith(("docs-rag ", "The global option")))
    problems += [f"cli.md names {f}, which no subcommand accepts" for f in sorted(set(_FLAG.findall(rest)) - every)]
    assert not problems, "\n".join(problems)
