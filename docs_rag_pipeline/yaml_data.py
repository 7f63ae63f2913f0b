"""YAML from documents (frontmatter, Antora descriptors), loaded safely and bounded.

``yaml.safe_load`` runs no code, but aliases let a few lines describe a huge value: nine lists of nine
aliases of the list before (a "billion laughs") are a 3 KB frontmatter that expands to 387 million
strings once it is copied or written as JSON, and ``&a [*a]`` is a list that contains itself. The
document is composed first and its expanded size counted on the node graph (each shared node once),
so such a block is an error before anything is built. So is a string that a ``"\\udc80"`` escape
made a lone UTF-16 surrogate (a pair of escapes, ``"\\ud83c\\udf89"`` as JSON writes an emoji, is its one
character): no Unicode text, it would fail where the value is written (Arrow,
JSON, the tokenizer) and stop the whole run instead of this document.
"""

from __future__ import annotations

from typing import Any

import yaml

from .unicode_text import LONE_SURROGATE, joined_pairs

import math
import re

__all__ = ["MAX_YAML_VALUES", "FrontmatterLoader", "YamlDuplicateKey", "YamlNotText", "YamlTooLarge", "load_yaml"]

#: the most values (scalars, lists, mappings, keys) a document's YAML block may expand to
MAX_YAML_VALUES = 100_000

#: the most digits an integer may have (Python's own limit for converting text, sys.get_int_max_str_digits)
MAX_INT_DIGITS = 4_300


class YamlTooLarge(yaml.YAMLError):
    """A YAML block whose aliases expand it past :data:`MAX_YAML_VALUES` or make it contain itself."""


class YamlNotText(yaml.MarkedYAMLError):
    """A YAML string holding a lone UTF-16 surrogate (from an escape such as ``"\\udc80"``)."""


class YamlDuplicateKey(yaml.YAMLError):
    """A mapping that gives one key twice (YAML says keys are unique; PyYAML keeps the last silently).
    ``path``: the key's path (``sources[0].path``); ``lines``: the 1-based lines of both."""

    def __init__(self, path: str, lines: tuple[int, int]) -> None:
        where = f"lines {lines[0]} and {lines[1]}" if lines[0] != lines[1] else f"both on line {lines[0]}"
        super().__init__(f"{path}: the key is given twice ({where}); keep one")
        self.path, self.lines = path, lines


class _CoreResolver(yaml.resolver.BaseResolver):
    """YAML 1.2's core schema for plain scalars (what js-yaml, so Astro and Starlight, and Hugo read): only
    ``true``/``false`` are booleans (``on``, ``NO``, ``yes`` are text), ``010`` is decimal, ``1_000`` and
    ``=`` are text; YAML 1.1's dates and times and the ``<<`` merge key are kept (js-yaml's default schema)."""


for _tag, _pattern, _first in (
        ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
        ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
        ("float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                  r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", "-+.0123456789"),
        ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
        ("merge", r"^(?:<<)$", "<"),
        ("timestamp", yaml.resolver.Resolver.yaml_implicit_resolvers["2"][-1][1], "0123456789")):
    _CoreResolver.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(_pattern), list(_first))


class _WrittenNumbers(yaml.constructor.SafeConstructor):
    """A number that reads back as written (``10``, ``-3``, ``2.0``, ``1.5``) is the number; one written in
    another form (``1.10``, ``010``, ``+5``, ``1e3``, ``0x1f``) is the text as written: a version ``1.10``
    is not the number 1.1 (the tag ``version=1.1`` of a 1.1 page), and a filter takes the value as the page
    writes it. ``.inf``, ``-.inf`` and ``.nan`` stay the floats they are (stored as ``inf``, ``-inf``, ``nan``)."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int | str:
        text = node.value
        number = (int(text[2:], 8) if text.startswith("0o") else int(text[2:], 16) if text.startswith("0x")
                  else int(text, 10))
        return number if str(number) == text else text

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float | str:
        text = node.value
        if text.lstrip("+-").startswith("."):
            if text.lstrip("+-").lower() in (".inf", ".nan"):
                return super().construct_yaml_float(node)
        number = float(text)
        return number if math.isfinite(number) and repr(number) == text else text


_WrittenNumbers.add_constructor("tag:yaml.org,2002:int", _WrittenNumbers.construct_yaml_int)
_WrittenNumbers.add_constructor("tag:yaml.org,2002:float", _WrittenNumbers.construct_yaml_float)


class FrontmatterLoader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, yaml.composer.Composer,
                        _WrittenNumbers, _CoreResolver):
    """The loader of a document's frontmatter: YAML 1.2's core schema (:class:`_CoreResolver`), numbers
    kept as written when they would read back otherwise (:class:`_WrittenNumbers`)."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        _WrittenNumbers.__init__(self)
        _CoreResolver.__init__(self)


def load_yaml(text: str, *, max_values: int = MAX_YAML_VALUES, unique_keys: bool = False,
              spellings: dict[str, str] | None = None, loader: type = yaml.SafeLoader) -> Any:
    """``yaml.safe_load(text)``, refusing a block that expands to more than ``max_values`` values or
    contains itself, or nests deeper than Python's stack (:class:`YamlTooLarge`, a ``yaml.YAMLError``).
    ``unique_keys``: a key given twice in one mapping is :class:`YamlDuplicateKey` (the config file: a
    second ``sources:`` block silently replaced the first). ``spellings`` (with ``unique_keys``): filled with
    key path → the text as written of each unquoted number, or text with a digit (``012`` is the int 10,
    ``1e3`` a string), for messages. ``loader``: :class:`FrontmatterLoader` for a document's frontmatter
    (YAML 1.2), PyYAML's ``SafeLoader`` (YAML 1.1) for the config file and Antora descriptors."""
    try:
        return _load(text, max_values, unique_keys, spellings, loader)
    except RecursionError:
        raise YamlTooLarge("it nests too deeply for the YAML parser; flatten it") from None


_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


def _duplicate_keys(node: yaml.Node, spellings: dict[str, str] | None = None) -> None:
    """:class:`YamlDuplicateKey` for the first mapping (depth first) that gives a key twice. Keys are
    compared as written with their tag (``1`` and ``"1"`` differ); ``<<`` merges are left to PyYAML
    (a key given in the mapping overrides a merged one, as YAML's merge key says)."""
    seen_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, str]] = [(node, "")]
    while stack:
        n, path = stack.pop()
        if id(n) in seen_nodes:  # an alias: checked where it was defined
            continue
        seen_nodes.add(id(n))
        if (spellings is not None and isinstance(n, yaml.ScalarNode) and not n.style
                and (n.tag in _NUMBER_TAGS or n.tag == "tag:yaml.org,2002:str" and any(c.isdigit() for c in n.value))):
            spellings[path] = n.value  # unquoted: 012 (the int 10), 1e3 (text to YAML 1.1)
        if isinstance(n, yaml.SequenceNode):
            stack.extend((c, f"{path}[{i}]") for i, c in reversed(list(enumerate(n.value))))
        elif isinstance(n, yaml.MappingNode):
            first: dict[tuple[str, str], int] = {}
            children = []
            for k, v in n.value:
                if not isinstance(k, yaml.ScalarNode) or k.tag == "tag:yaml.org,2002:merge":
                    continue
                key_path = f"{path}.{k.value}" if path else k.value
                line = k.start_mark.line + 1
                if (k.tag, k.value) in first:
                    raise YamlDuplicateKey(key_path, (first[k.tag, k.value], line))
                first[k.tag, k.value] = line
                children.append((v, key_path))
            stack.extend(reversed(children))


def _load(text: str, max_values: int, unique_keys: bool = False, spellings: dict[str, str] | None = None,
          loader_class: type = yaml.SafeLoader) -> Any:
    node = yaml.compose(text, Loader=loader_class)
    if node is None:
        return None
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(n: yaml.Node) -> int:
        key = id(n)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise YamlTooLarge("an alias refers to the value it is part of, so the value would contain "
                               "itself; write the value out instead of the alias")
        open_nodes.add(key)
        total = 1
        if isinstance(n, yaml.ScalarNode):
            # a pair of escapes (what json.dumps writes for an emoji; JSON is YAML 1.2) is one character
            n.value = joined_pairs(n.value)
        if isinstance(n, yaml.ScalarNode) and (m := LONE_SURROGATE.search(n.value)):
            raise YamlNotText(problem=f"the string holds \\u{ord(m.group()):04x}, an escape for half of a UTF-16 "
                                      "surrogate pair, which is not a Unicode character; write the character itself "
                                      "(or its \\U escape) or remove the escape", problem_mark=n.start_mark)
        if (isinstance(n, yaml.ScalarNode) and n.tag == "tag:yaml.org,2002:int"
                and sum(c.isdigit() for c in n.value) > MAX_INT_DIGITS):
            # Python refuses to convert more than 4,300 digits (a ValueError, not a YAML error)
            raise yaml.MarkedYAMLError(problem=f"the number has more than {MAX_INT_DIGITS:,} digits, more than an "
                                               "integer may have here; quote it to keep it as text",
                                       problem_mark=n.start_mark)
        if isinstance(n, yaml.ScalarNode) and n.tag == "tag:yaml.org,2002:timestamp":
            try:  # 2024-13-45 matches YAML's date pattern; building it was a bare ValueError
                yaml.SafeLoader("").construct_yaml_timestamp(n)
            except ValueError as exc:
                raise yaml.MarkedYAMLError(problem=f"{n.value!r} is no date or time ({exc}); correct it, or "
                                                   "quote it to keep it as text", problem_mark=n.start_mark) from None
        if isinstance(n, yaml.SequenceNode):
            total += sum(size(c) for c in n.value)
        elif isinstance(n, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in n.value)
        open_nodes.discard(key)
        sizes[key] = total
        if total > max_values:
            raise YamlTooLarge(f"its aliases expand it to more than {max_values:,} values; write the "
                               "values out or shorten it")
        return total

    size(node)
    if unique_keys:
        _duplicate_keys(node, spellings)
    loader = loader_class("")  # what safe_load does, from the node checked (and its pairs joined)
    try:
        return loader.construct_document(node)
    finally:
        loader.dispose()
