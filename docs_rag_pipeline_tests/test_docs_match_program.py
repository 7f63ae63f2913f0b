"""The user docs name what the program has, and the program has what the docs name: the CLI's
subcommands and options (docs/interfaces/cli.md), the MCP tools and their arguments (README.md,
docs/interfaces/mcp.md), the HTTP routes (docs/interfaces/http.md) and the config keys
(docs/configuration.md). Each side is read from the object the program runs (the argparse parser,
the MCP server's tool list, the Flask app's url_map, the pydantic models), so a flag, tool, route or
key added, renamed or removed on one side only fails here. Fast: nothing is ingested."""

from __future__ import annotations

import argparse
import asyncio
import re
from pathlib import Path

import pytest

from docs_rag_pipeline import config as config_module
from docs_rag_pipeline.cli import build_parser

from .conftest import REPO, write_config
from .test_doc_links import _FENCE

DOCS = REPO / "docs"
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


# ---- the MCP tools: README.md and docs/interfaces/mcp.md against the server's tool list ----------


def _mcp_tools(tmp_path: Path) -> dict[str, dict]:
    """Tool name → its input schema, as the server lists them to a client (tools/list)."""
    from docs_rag_pipeline.serve.mcp import create_server

    server = create_server(write_config(tmp_path))
    return {t.name: t.input_schema for t in asyncio.run(server.list_tools())}


def test_the_mcp_tools_and_their_arguments_are_the_documented_ones(tmp_path: Path) -> None:
    tools = _mcp_tools(tmp_path)
    names = set(tools)
    mcp_doc = _read(DOCS / "interfaces" / "mcp.md")
    rows = {r[0].strip("`"): r for r in _table_rows(_sections(mcp_doc, 2)["Tools"])}
    readme = re.search(r"docs-rag mcp` \| .*\(tools ([^)]*)\)", _read(REPO / "README.md"))
    assert readme, "README.md's command table no longer lists the MCP tools after `docs-rag mcp`"
    unknown_tool = re.search(r"no tool named 'nope'; tools: ([^`]*)`", mcp_doc)
    assert unknown_tool, "mcp.md no longer quotes the unknown-tool error with its list of tools"
    subs_action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    # argparse keeps a subcommand's help= in _choices_actions only (no public accessor)
    parser_help = next(a.help for a in subs_action._choices_actions if a.dest == "mcp")
    lists = {
        "mcp.md's Tools table": set(rows),
        "README.md's line of `docs-rag mcp`": set(_TICKED.findall(readme.group(1))),
        "mcp.md's unknown-tool message": set(unknown_tool.group(1).split(", ")),
        "the help of `docs-rag mcp`": set(re.search(r"\(tools: ([^)]*)\)", parser_help).group(1).split(", ")),
    }
    problems = []
    for where, listed in lists.items():
        problems += [f"{where} names the tool '{t}', which the server does not have" for t in sorted(listed - names)]
        problems += [f"the server has the tool '{t}', which {where} does not name" for t in sorted(names - listed)]
    for name, schema in tools.items():
        if name not in rows:
            continue
        # `arg` (type, required), `arg` …: the parenthesis says whether it is required
        documented = {m.group(1): "required" in (m.group(2) or "")
                      for m in re.finditer(r"`([a-z_]+)`(?:\s*\(([^()]*)\))?", rows[name][1])}
        takes = {p: p in schema.get("required", []) for p in schema["properties"]}
        problems += [f"mcp.md: {name} takes '{a}'? the tool has no such argument"
                     for a in sorted(set(documented) - set(takes))]
        problems += [f"mcp.md: {name}'s argument '{a}' is not in its row" for a in sorted(set(takes) - set(documented))]
        problems += [f"mcp.md: {name}'s '{a}' is {'required' if takes[a] else 'optional'}, the row says otherwise"
                     for a in sorted(set(takes) & set(documented)) if takes[a] != documented[a]]
    takes_msg = re.search(r"unknown argument '\w+'; (\w+) takes: ([^`]*)`", mcp_doc)
    if takes_msg and takes_msg.group(1) in tools:
        quoted = takes_msg.group(2).split(", ")
        if quoted != sorted(tools[takes_msg.group(1)]["properties"]):
            problems.append(f"mcp.md quotes '{takes_msg.group(1)} takes: {takes_msg.group(2)}'; the tool takes "
                            f"{', '.join(sorted(tools[takes_msg.group(1)]['properties']))}")
    assert not problems, "\n".join(problems)


# ---- the HTTP routes: docs/interfaces/http.md against the Flask app's url_map --------------------

_ROUTE = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE) (/[^\s`?|]*)")


def _app_routes(tmp_path: Path) -> set[tuple[str, str]]:
    from docs_rag_pipeline.serve.api import create_app

    app = create_app(config_path=str(write_config(tmp_path)))
    out = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue  # Flask's static folder: the chat page's files, documented with GET / (checked below)
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"<\1>", rule.rule)  # <path:x> is written <x> in the docs
        out |= {(m, path) for m in rule.methods - {"HEAD", "OPTIONS"}}
    return out


def test_the_http_routes_are_the_documented_ones(tmp_path: Path) -> None:
    routes = _app_routes(tmp_path)
    doc = _read(DOCS / "interfaces" / "http.md")
    sections = _sections(doc, 2)
    table = {m.groups() for r in _table_rows(sections["Routes"]) for m in _ROUTE.finditer(r[0])}
    headed = {m.groups() for h in sections for m in _ROUTE.finditer(h.replace("&lt;", "<").replace("&gt;", ">"))}
    problems = [f"http.md's Routes table lists {m} {p}, which the app does not serve"
                for m, p in sorted(table - routes)]
    problems += [f"the app serves {m} {p}, which http.md's Routes table does not list"
                 for m, p in sorted(routes - table)]
    problems += [f"http.md has a section '## {m} {p}', a route the app does not serve"
                 for m, p in sorted(headed - routes)]
    if "/static/" not in sections["Routes"]:
        problems.append("http.md's Routes table no longer says the chat page's files are under /static/")
    assert not problems, "\n".join(problems)


# ---- the config keys: docs/configuration.md against the pydantic models ------------------------


def _keys_of(section: str, columns: tuple[int, ...] = (0,)) -> set[str]:
    """The keys a section's tables name: the `key` in its key column(s), ``retrieval.x`` read as ``x``."""
    out = set()
    for row in _table_rows(section):
        for col in columns:
            if col < len(row):
                out |= {k.split(".")[-1] for k in _TICKED.findall(row[col]) if re.fullmatch(r"[a-z][a-z0-9_.]*", k)}
    return out


def _documented_config() -> tuple[dict[str, set[str]], set[str]]:
    """What docs/configuration.md documents, per part of the config; a source kind's keys are the
    common ones (its "## sources" table) and those of its "### kind: X" section."""
    text = _read(DOCS / "configuration.md")
    h2, h3 = _sections(text, 2), _sections(text, 3)
    top = re.search(r"The allowed top-level keys are ([^;]+);", h2["Top-level keys"])
    assert top, "configuration.md no longer lists the allowed top-level keys"
    git = re.search(r"Besides the common keys: (.+?)\. [A-Z]", h3["kind: git"], re.S)
    assert git, "configuration.md's kind: git no longer lists its keys after 'Besides the common keys:'"
    common = _keys_of(h3["sources"])
    kinds = {
        "local": _keys_of(h3["kind: local"]),
        "web": _keys_of(h3["kind: web"], columns=(0, 2)),
        # each key of the sentence, not the words in its parentheses
        "git": set(_TICKED.findall(re.sub(r"\([^()]*\)", "", git.group(1)))),
    }
    return {
        "top-level": set(_TICKED.findall(top.group(1))) | {h for h in h2 if re.fullmatch(r"[a-z_]+", h)},
        "storage (mapping)": _keys_of(h2["storage"]) - {"storage"},
        **{s: _keys_of(h3[s]) for s in ("embedding", "llm", "chunking", "retrieval", "api", "eval")},
        "retrieval.rerank": _keys_of(h3["retrieval.rerank"]),
        **{f"kind: {k}": common | keys for k, keys in kinds.items()},
        "url_rules": set(re.findall(r"exactly the keys `(\w+)` and `(\w+)`", h3["url_rules"])[0]),
        # the sources of a value, one numbered item each, and the key it sets ("A rule needs `key`")
        "metadata_rules": set(re.findall(r"^\d+\. `(\w+)`:", h3["metadata_rules"], re.M)
                              + re.findall(r"A rule needs `(\w+)`", h3["metadata_rules"])),
    }, common


def _config_keys() -> dict[str, set[str]]:
    """What the config models accept, per part of the config (the YAML keys, not the fields it fills)."""
    c = config_module
    return {
        "top-level": set(c.Config._keys or ()),  # the YAML keys; its fields also hold what storage: {…} fills
        "storage (mapping)": set(c.StorageConfig.model_fields),
        **{s: set(c.Config.model_fields[s].annotation.model_fields)
           for s in ("embedding", "llm", "chunking", "retrieval", "api", "eval")},
        "retrieval.rerank": set(c.RerankConfig.model_fields),
        **{f"kind: {k}": set(keys) for k, keys in c.SOURCE_KEYS.items()},
        "url_rules": set(c.UrlRule.model_fields),
        "metadata_rules": set(c.MetadataRule.model_fields),
    }


def test_every_config_key_is_documented_and_every_documented_key_exists() -> None:
    (documented, common), accepted = _documented_config(), _config_keys()
    assert set(documented) == set(accepted)
    every_kind = set.intersection(*(accepted[f"kind: {k}"] for k in config_module.SOURCE_KEYS))
    problems = [f"configuration.md says every source kind accepts '{k}'; not every kind does"
                for k in sorted(common - every_kind)]
    for part in accepted:
        problems += [f"configuration.md ({part}) documents '{k}', which the config does not accept"
                     for k in sorted(documented[part] - accepted[part])]
        problems += [f"the config accepts '{k}' ({part}), which configuration.md does not document"
                     for k in sorted(accepted[part] - documented[part])]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("raw", [{"storag": "data"}, {"retrieval": {"topk": 3}}], ids=["top-level", "retrieval"])
def test_the_unknown_key_errors_quoted_in_the_docs_are_the_ones_the_config_gives(raw: dict) -> None:
    # these two messages list the allowed keys: a key added or removed changes them
    with pytest.raises(config_module.ConfigError) as err:
        config_module.parse_config(raw, where="docs_rag.yaml")
    quoted = _sections(_read(DOCS / "configuration.md"), 2)["Validation errors"]
    assert str(err.value) in quoted.splitlines(), f"configuration.md does not quote the error as it is: {err.value}"


def test_the_api_keys_http_md_documents_exist() -> None:
    # http.md shows the api keys a server operator needs; configuration.md has them all
    section = _sections(_read(DOCS / "interfaces" / "http.md"), 2)["The api section of the config"]
    unknown = _keys_of(section) - set(config_module.ApiConfig.model_fields)
    assert not unknown, f"http.md documents api keys the config does not accept: {sorted(unknown)}"



def test_every_error_code_the_http_api_answers_is_in_http_md() -> None:
    """httpfuzz F5: the API answered invalid_stream, invalid_task, invalid_params and invalid_chunk_id,
    which http.md named nowhere. Every code api.py and schemas.py raise (``ApiError(status, "code"``,
    ``InputError("code"``, a ``("code", message)`` of a table of fixes) is in http.md's Errors table."""
    from docs_rag_pipeline import schemas
    from docs_rag_pipeline.serve import api

    code = Path(api.__file__).read_text(encoding="utf-8") + Path(schemas.__file__).read_text(encoding="utf-8")
    raised = set(re.findall(r'ApiError\(\d+, "([a-z_]+)"', code)) | set(re.findall(r'InputError\("([a-z_]+)"', code))
    raised |= set(re.findall(r'": \("([a-z_]+)", ', code))
    raised.discard("missing_")  # "missing_" + the text field: missing_query, missing_question
    errors = _sections(_read(DOCS / "interfaces" / "http.md"), 2)["Errors"]
    undocumented = sorted(c for c in raised if f"`{c}`" not in errors)
    assert not undocumented, f"http.md's Errors table does not name the error codes {undocumented}"


def test_every_exit_status_the_cli_returns_is_in_the_table() -> None:
    """docswalk2 F6: cli.md's Exit status table missed 69 (object store) and 74 (damaged or full
    storage). Every integer a function of cli.py that returns an exit status (``-> int``) returns as
    a literal, also in ``a if c else b``, is a row of the table."""
    import ast

    from docs_rag_pipeline import cli

    tree = ast.parse(Path(cli.__file__).read_text(encoding="utf-8"))
    returned: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and isinstance(fn.returns, ast.Name) and fn.returns.id == "int":
            for node in ast.walk(fn):
                if isinstance(node, ast.Return) and node.value is not None:
                    values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
                    returned |= {v.value for v in values if isinstance(v, ast.Constant) and type(v.value) is int}
    table = _sections(_cli_doc()[0], 2)["Exit status"]
    documented = {int(row[0].strip("`")) for row in _table_rows(table)}
    assert {0, 1, 2, 69, 74} <= returned, returned  # the scan still sees the statuses
    assert returned <= documented, f"cli.py returns exit statuses cli.md's table lacks: {sorted(returned - documented)}"

# ---- the ranges of the config's numbers: configuration.md's range table against the models ------

def _bounds(metadata: list) -> dict[str, float]:
    """The bounds (ge, gt, le, lt) among a field's constraints (pydantic keeps them as annotated_types)."""
    import annotated_types as at

    return {k: getattr(m, k) for m in metadata for k, kind in (("ge", at.Ge), ("gt", at.Gt), ("le", at.Le), ("lt", at.Lt))
            if isinstance(m, kind)}


def _range_text(b: dict[str, float]) -> str:
    """A field's bounds as the table writes them: ``0–1``, ``> 0``, ``≥ 32``, ``> 0, ≤ 86400``."""
    def num(x: float) -> str:
        return str(int(x)) if x == int(x) else f"{x:g}"

    low = num(b["ge"]) if "ge" in b else None
    if low is not None and "le" in b:
        return f"{low}–{num(b['le'])}"
    if set(b) == {"gt", "le"}:
        return f"> {num(b['gt'])}, ≤ {num(b['le'])}"
    assert set(b) in ({"ge"}, {"gt"}), f"a bound the range table has no form for: {b}"
    return f"≥ {low}" if low is not None else f"> {num(b['gt'])}"


def _ranged_keys() -> dict[str, str]:
    """Every config key with a range → its range, as the table writes it (``sources[].KEY``: a source's)."""
    import typing

    from pydantic import BaseModel

    def model_of(annotation: object) -> type[BaseModel] | None:
        for t in (annotation, *typing.get_args(annotation)):  # RerankConfig | None too
            if isinstance(t, type) and issubclass(t, BaseModel):
                return t
        return None

    def walk(model: type[BaseModel], prefix: str, out: dict[str, str]) -> dict[str, str]:
        for name, f in model.model_fields.items():
            if (sub := model_of(f.annotation)) is not None:
                walk(sub, f"{prefix}{name}.", out)
                continue
            metadata = [*f.metadata, *(m for a in typing.get_args(f.annotation)  # int | None with its Field
                                       if typing.get_origin(a) is typing.Annotated
                                       for x in a.__metadata__ for m in getattr(x, "metadata", [x]))]
            if b := _bounds(metadata):
                out[prefix + name] = _range_text(b)
        return out

    c = config_module
    out: dict[str, str] = {}
    for s in ("embedding", "llm", "chunking", "retrieval", "api", "eval"):
        walk(c.Config.model_fields[s].annotation, f"{s}.", out)
    walk(c.StorageConfig, "storage.", out)
    walk(c.SourceConfig, "sources[].", out)
    return out


def test_the_range_table_names_every_ranged_key_with_its_range() -> None:
    """docswalk2 F7: the table said it was the list of ranges and missed ten ranged keys."""
    section = _sections(_read(DOCS / "configuration.md"), 2)["Validation errors"]
    documented: dict[str, str] = {}
    for rng, keys in (row[:2] for row in _table_rows(section) if len(row) >= 2):
        for key in _TICKED.findall(keys):
            assert key not in documented, f"configuration.md's range table names {key} twice"
            documented[key] = rng
    assert documented, "configuration.md has no range table under Validation errors"
    ranged = _ranged_keys()
    problems = [f"{k}: the config's range is {ranged[k]}, the table says {documented.get(k, 'nothing')}"
                for k in sorted(ranged) if documented.get(k) != ranged[k]]
    problems += [f"{k}: in the range table, but the config gives it no range" for k in sorted(set(documented) - set(ranged))]
    assert not problems, "\n".join(problems)


def test_the_filter_key_pattern_http_md_gives_is_the_one_the_server_uses() -> None:
    """docswalk2 F4: http.md kept the ASCII pattern after filter keys of any script were allowed."""
    from docs_rag_pipeline.store import FILTER_KEY_RE

    section = _sections(_read(DOCS / "interfaces" / "http.md"), 2)["GET /openapi.json"]
    assert f"a filter key outside `{FILTER_KEY_RE.pattern}`" in section


def test_what_http_md_says_search_answers_before_the_first_ingest_is_what_the_server_answers(tmp_path: Path) -> None:
    """docswalk F1: http.md's POST /search said `{"hits": []}` before the first ingest; the server
    answers 503 backend_unavailable (an empty list would read as "the docs don't cover it")."""
    import requests

    from docs_rag_pipeline.serve.api import create_app

    from .test_api import serve

    section = _sections(_read(DOCS / "interfaces" / "http.md"), 2)["POST /search"]
    said = re.search(r"Before anything is ingested[^\n]*", section)
    assert said, "http.md's POST /search no longer says what it answers before the first ingest"
    with serve(create_app(config_path=str(write_config(tmp_path)))) as url:
        answers = {route: requests.post(f"{url}/{route}", json={key: "waitress worker threads"}, timeout=60)
                   for route, key in (("search", "query"), ("ask", "question"))}
    for route, r in answers.items():
        assert r.status_code == 503 and r.json()["error"]["code"] == "backend_unavailable", (route, r.text)
        assert "does not exist (nothing was ingested yet, or it was moved)" in r.json()["error"]["message"]
    assert '{"hits": []}' not in said.group(0), said.group(0)
    assert "503 `backend_unavailable`" in said.group(0) and "does not exist (nothing was ingested yet" in said.group(0)
