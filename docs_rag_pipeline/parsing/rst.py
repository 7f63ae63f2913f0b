"""reStructuredText documents to a :class:`ParsedPage`, through docutils.

``docutils.core.publish_doctree`` parses the document the way Sphinx does (no document-title
promotion: the first section title is the page title); its node tree is walked into plain-text
sections. Section anchors are the docutils ids Sphinx puts on the section element (``ids[0]``:
``"Getting Started"`` → ``getting-started``). Sphinx's own directives and roles, which plain
docutils does not know, are registered permissively before parsing: code directives
(``code-block``, ``sourcecode``) give code blocks, ``toctree``/``index``/``highlight``/… are
dropped, ``seealso`` and ``todo`` are admonitions titled as Sphinx titles them, the version
directives (``versionadded``, ``deprecated``, …) keep their text after a label, and any other
unknown directive keeps its argument and its content; unknown roles
(``:ref:``, ``:doc:``, ``:py:func:``, …) become their text (``Title <target>`` → ``Title``). What Sphinx's HTML
shows is followed where one file tells it: its smart quotes, the ``()`` of function references, a ``:ref:``
to a label of the page as its section's title, object signatures with their kind and module (``class
argparse.ArgumentParser(…)``) and grouped info fields, doctest directives, ``highlight`` languages,
``productionlist`` grammars, and the section ids of its SortIds transform.
Nothing is read from disk here: a local or git source resolves ``include`` and ``literalinclude`` first
(:func:`resolve_rst_includes`); those left are reported in ``metadata["unresolved_includes"]`` and skipped;
no warning reaches the output.
"""

from __future__ import annotations

import ast
import io
import posixpath
import re
import unicodedata
from typing import Any

from ..records import ParsedPage
from ..table_row import headless_rule, row_line
from .binary import check_text
from .errors import ParseError
from .markdown import OutLine, SectionBuilder, code_span, fence_block, humanize_stem, indented, list_item, split_frontmatter

__all__ = ["parse_rst"]

_DROP_DIRECTIVES = {
    "toctree", "index", "highlight", "currentmodule", "module", "program", "tabularcolumns", "sectionauthor",
    "moduleauthor", "codeauthor", "default-role", "default-domain", "autosummary", "automodule", "autoclass",
    "autofunction", "automethod", "autoattribute", "autodata", "autoexception", "literalinclude", "include", "graphviz",
    "digraph", "graph", "inheritance-diagram", "plot", "mermaid", "cssclass", "meta", "raw", "spelling:word-list",
}
#: Sphinx's version directives: ``.. versionadded:: 2.1`` and its text read "New in version 2.1: text"
_VERSION_LABELS = {
    "versionadded": "New in version", "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version", "versionremoved": "Removed in version",
}
#: Sphinx's admonitions that docutils lacks: rendered as an admonition with this title, as ``note``
_TITLED_ADMONITIONS = {"seealso": "See also", "todo": "Todo"}
#: directives whose argument is a build condition, not text (``.. only:: html``, ``.. ifconfig::
#: releaselevel == 'final'``): the condition is not shown; the content is kept unless it is ``only``
#: content that an HTML build leaves out (:func:`_only_in_html`)
_CONDITIONAL = frozenset({"only", "ifconfig"})
#: Sphinx's tags in an HTML build (the builder's format, ``format_html``), and those of other builders,
#: which it lacks; any other tag (one a project sets with ``-t``, ``dirhtml``, a theme's) is unknown
_HTML_TAGS = frozenset({"html", "format_html"})
_OTHER_BUILDERS = ("latex", "epub", "man", "texinfo", "text", "xml", "pseudoxml", "gettext", "linkcheck", "changes",
                   "pdf", "rinoh", "latexpdf", "info", "qthelp", "devhelp", "applehelp", "htmlhelp")
_NOT_HTML_TAGS = frozenset({*_OTHER_BUILDERS, *(f"format_{b}" for b in _OTHER_BUILDERS),
                            *(f"builder_{b}" for b in _OTHER_BUILDERS)})


def _only_in_html(expression: str) -> bool:
    """Whether an HTML build of the site may show the content of ``.. only:: expression``: False only
    when the expression is false whatever the unknown tags are (``latex``, ``not html``, ``latex or
    man``), as Sphinx evaluates it with the tags of an HTML build; an expression it cannot read is kept.
    Indexed, ``.. only:: latex`` text was cited for a page that never shows it."""
    import ast

    def value(node: ast.AST) -> bool | None:  # None: unknown (Kleene logic)
        if isinstance(node, ast.Name):
            return True if node.id in _HTML_TAGS else False if node.id in _NOT_HTML_TAGS else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            v = value(node.operand)
            return None if v is None else not v
        if isinstance(node, ast.BoolOp):
            vs = [value(v) for v in node.values]
            if isinstance(node.op, ast.And):
                return False if False in vs else None if None in vs else True
            return True if True in vs else None if None in vs else False
        raise ValueError("not a tag expression")

    try:
        return value(ast.parse(expression.strip(), mode="eval").body) is not False
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True


def _rendered_block(text: str) -> Any:
    """A docutils node holding a block already rendered as this parser writes text (a table's rows, a
    fenced code block): its lines are written as they are."""
    from docutils import nodes

    return nodes.container("", classes=["docs-rag-rendered"], rendered=text)


def _raw_html_text(html: str) -> list[str]:
    """The paragraphs of text that ``.. raw:: html`` shows on the page: the HTML's own text, as an HTML
    page's is read, without its scripts and styles. Before, the block was dropped with the other raw
    formats, and the words it shows were in no chunk."""
    from .html import parse_html

    try:
        page = parse_html(f"<html><body><main>{html}</main></body></html>", url="raw.html")
    except Exception:  # noqa: BLE001 - a fragment that cannot be read shows nothing indexed
        return []
    out = [page.title] if page.title and re.search(r"<h1[\s>]", html, re.I) else []  # else the file name's
    for s in page.sections:
        out += [*s.headings[-1:], *(p.strip() for p in s.text.split("\n\n") if p.strip())]
    return out
#: object descriptions of Sphinx's Python and standard domains (also ``py:``/``std:`` prefixed): their
#: argument is one signature a line (``.. function:: open(file)`` then ``open(fd, mode)``), as
#: Sphinx shows them; read as one paragraph, the signatures ran together
_SIGNATURES = frozenset({
    "function", "method", "class", "classmethod", "staticmethod", "decorator", "decoratormethod", "exception",
    "data", "attribute", "property", "type", "coroutinefunction", "coroutinemethod", "abstractmethod",
    "awaitablefunction", "awaitablemethod", "option", "cmdoption", "envvar", "describe", "object",
})
_CODE_DIRECTIVES = ("code-block", "sourcecode", "code")
#: sphinx.ext.doctest's directives and the language Sphinx shows their code in; ``testsetup`` and
#: ``testcleanup`` (and any of them with ``:hide:``) are not shown on the page
_DOCTEST_DIRECTIVES = {"doctest": "pycon", "testcode": "python", "testoutput": "none", "testsetup": None,
                       "testcleanup": None}
#: Sphinx's trim_doctest_flags (on by default): a ``# doctest: +SKIP`` flag and a ``<BLANKLINE>`` marker
#: are not shown in a Python console session
_DOCTEST_FLAG = re.compile(r"[ \t]*#\s*doctest:.+$", re.M)
_BLANKLINE = re.compile(r"^\s*<BLANKLINE>", re.M)
#: directive names Sphinx resolves in its default (Python) domain before docutils' own: in a Sphinx
#: project ``.. class:: Name(args)`` documents a class (signature, then body) and docutils' ``class``
#: (an HTML class for what follows) is spelled ``rst-class``. Read as docutils' it lost every class's
#: signature, and its whole body where the signature is no class name docutils accepts (``[*,``)
_SPHINX_OVER_DOCUTILS = frozenset({"class"})
#: the argument of docutils' own ``class`` directive as plain reST writes it: lower-case class names
#: (``.. class:: special``, ``.. class:: red borderless``) with no content of its own, where a Python
#: class has a capital, a dot or a signature (``Session(url)``) and usually a body
_DOCUTILS_CLASS_VALUES = re.compile(r"[a-z][a-z0-9-]*(?: [a-z][a-z0-9-]*)*")
_ADMONITION_LABELS = {
    "attention": "Attention", "caution": "Caution", "danger": "Danger", "error": "Error", "hint": "Hint",
    "important": "Important", "note": "Note", "tip": "Tip", "warning": "Warning",
}
_DIRECTIVE_NAME_RE = re.compile(r"^[ \t]*\.\.[ \t]+([\w][\w:.+-]*)[ \t]*::", re.M)
_ROLE_NAME_RE = re.compile(r"(?<![\w`]):([\w][\w:.+-]*):`")
_ROLE_TARGET_RE = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)

_registered = False


def _setup() -> None:
    """Register the generic Sphinx directives once (docutils' registries are process-wide)."""
    global _registered
    if _registered:
        return
    from docutils.parsers.rst import directives

    for name in _CODE_DIRECTIVES:  # docutils' own "code" refuses Sphinx's options (linenos, caption, …)
        directives.register_directive(name, _code_directive())
    for name in _DOCTEST_DIRECTIVES:
        directives.register_directive(name, _doctest_directive(name))
    # and docutils' raw (off here: it read no file, and showed nothing): ``.. raw:: html`` shows its text
    for name in (*_SPHINX_OVER_DOCUTILS, "raw"):
        directives.register_directive(name, _generic_directive(name))
    _registered = True


class _AnyOptions(dict):
    """An option spec accepting any option (its value kept as text); never empty, since docutils
    reads options only when the spec is truthy."""

    def __init__(self) -> None:
        super().__init__(name=None)

    def __getitem__(self, key: str):  # noqa: ANN204
        from docutils.parsers.rst import directives

        return directives.unchanged

    def __contains__(self, key: object) -> bool:
        return True


def _code_directive():  # noqa: ANN202
    from docutils import nodes
    from docutils.parsers.rst import Directive

    class CodeBlock(Directive):
        has_content = True
        optional_arguments = 1
        final_argument_whitespace = False
        option_spec = _AnyOptions()

        def run(self):  # noqa: ANN202
            code = "\n".join(self.content)
            node = nodes.literal_block(code, code)
            node["language"] = self.arguments[0] if self.arguments else ""
            caption = self.options.get("caption")
            if caption:
                return [nodes.paragraph(caption, caption), node]
            return [node]

    return CodeBlock


def _doctest_directive(name: str):  # noqa: ANN202
    """sphinx.ext.doctest's ``name`` directive as Sphinx shows it: its code in a block (``doctest`` a
    console session, ``testcode`` Python, ``testoutput`` plain), its argument (the test's groups) not
    shown, and nothing at all for ``testsetup``, ``testcleanup`` or a test with ``:hide:``. Before, their
    content was read as reST: set-up code the page never shows was indexed as paragraphs."""
    from docutils import nodes
    from docutils.parsers.rst import Directive

    class DoctestBlock(Directive):
        has_content = True
        optional_arguments = 1
        final_argument_whitespace = True
        option_spec = _AnyOptions()

        def run(self):  # noqa: ANN202
            language = _DOCTEST_DIRECTIVES[name]
            if language is None or "hide" in self.options or not self.content:
                return []
            code = "\n".join(self.content)
            node = nodes.literal_block(code, code)
            node["language"] = language
            if "no-trim-doctest-flags" in self.options:
                node["trim_flags"] = False
            return [node]

    return DoctestBlock


def _trimmed_doctest(node: Any, code: str, language: str) -> str:
    """``code`` without the doctest flags and ``<BLANKLINE>`` markers Sphinx trims from a console session
    (its TrimDoctestFlagsTransform): a doctest block, a ``pycon`` block, or a Python (or unnamed) block
    that starts with ``>>>``."""
    if not node.get("trim_flags", True):
        return code
    if language not in ("pycon", "pycon3") and not (
            language in ("", "py", "python", "py3", "python3", "default") and code.startswith(">>>")):
        return code
    return _DOCTEST_FLAG.sub("", _BLANKLINE.sub("", code))


def _generic_directive(name: str):  # noqa: ANN202
    from docutils import nodes
    from docutils.parsers.rst import Directive

    class Generic(Directive):
        has_content = True
        optional_arguments = 1
        final_argument_whitespace = True
        option_spec = _AnyOptions()

        def run(self):  # noqa: ANN202
            # docutils turns only a DirectiveError into a (silent) message; anything else a handler
            # raises leaves publish_doctree, and the page was skipped whole at ingest
            try:
                return self._read()
            except RecursionError:
                raise  # parse_document names a page nested too deeply
            except Exception:  # noqa: BLE001 - one directive's odd argument must not lose its page
                return self._body_only()

        def _read(self):  # noqa: ANN202
            if name == "class" and not self.content and _DOCUTILS_CLASS_VALUES.fullmatch(" ".join(self.arguments)):
                return []  # docutils' own class directive (``.. class:: special``): no text, as before
            if name == "only" and not _only_in_html(" ".join(self.arguments)):
                return []  # content an HTML build of the site leaves out
            if name == "raw" and "html" in " ".join(self.arguments).lower().split() and self.content:
                return [_rendered_block(t) for t in _raw_html_text("\n".join(self.content))]
            if _default_domain_name(name) == "productionlist":
                code = _productions(" ".join(self.arguments))
                return [nodes.literal_block(code, code)] if code else []
            if name == "highlight":  # the language of the literal blocks after it that name none
                return [nodes.comment("", "", docs_rag_highlight=(self.arguments[0] if self.arguments else "").strip())]
            if _default_domain_name(name) in ("module", "currentmodule"):  # the module Sphinx names objects in
                module = " ".join(self.arguments).strip()
                self.state.document["docs_rag_py_module"] = None if module in ("", "None") else module
                self.state.document["docs_rag_py_class"] = None
            if _default_domain_name(name) in _DROP_DIRECTIVES:
                if name in ("literalinclude", "include") and self.arguments:
                    self.state.document.setdefault("docs_rag_unresolved", []).append(self.arguments[0])
                return []
            arg = "" if name in _CONDITIONAL else " ".join(self.arguments).strip()
            if name in _TITLED_ADMONITIONS:
                # Sphinx's seealso/todo is an admonition titled "See also", its argument the body's first
                # paragraph: it reads like a note ("See also: Other page."), not its argument's first word
                # taken for a version ("See also Other: page.")
                box = nodes.admonition(classes=[name])
                box += nodes.title(_TITLED_ADMONITIONS[name], _TITLED_ADMONITIONS[name])
            else:
                box = nodes.container(classes=["directive", name])
            label = _VERSION_LABELS.get(name)
            if label:
                version, arg = (arg.split(None, 1) + [""])[:2]
                label = f"{label} {version}".strip()
            # as Sphinx splits them: a backslash at a line's end continues the signature
            signatures = [s.strip() for s in re.sub(r"\\\n[ \t]*", "", arg).split("\n") if s.strip()]
            py_object = _python_object(name)
            document = self.state.document
            context = None
            ids: list[str | None] = []
            if py_object and signatures:
                shown = [_py_signature(py_object, sig, self.options, document) for sig in signatures]
                signatures = [text for text, _, _ in shown]
                context = shown[-1][1]
                # Sphinx writes no id for an object described with :no-index: (ObjectDescription.run adds
                # a target only without it), and one already on the page gets ``id0``, naming no object
                ids = [] if "no-index" in self.options or "noindex" in self.options else \
                    _page_ids([node_id for _, _, node_id in shown], document)
            elif name in _C_KEYWORDS and signatures:
                signatures = [_c_signature(name, sig) for sig in signatures]
            if signatures and _object_description(name):
                # as Sphinx shows a signature: as written, no reST markup read in it, no smart quotes
                # (``print(*objects, sep=' ', end='\n')``, ``.. option:: --verbose``)
                code = "\n".join(signatures)
                box += nodes.literal_block(code, code, docs_rag_signature=True, docs_rag_ids=ids)
            elif arg:
                parsed, _messages = self.state.inline_text(arg, self.lineno)
                box += nodes.paragraph(arg, "", *parsed)
            if self.content:
                outer = document.get("docs_rag_py_class")
                if context is not None:  # the class its members are documented in (Sphinx's py:class)
                    document["docs_rag_py_class"] = context or None
                try:
                    self.state.nested_parse(self.content, self.content_offset, box)
                finally:
                    document["docs_rag_py_class"] = outer
                if _object_description(name):
                    _transform_doc_fields(box)
            if label:
                _label_version(box, label)
            return [box]

        def _body_only(self):  # noqa: ANN202
            """The argument and the content as text, for a directive :meth:`_read` failed on."""
            box = nodes.container(classes=["directive", name])
            arg = " ".join(self.arguments).strip()
            if arg:
                box += nodes.paragraph(arg, arg)
            if self.content:
                try:
                    self.state.nested_parse(self.content, self.content_offset, box)
                except RecursionError:
                    raise
                except Exception:  # noqa: BLE001 - the words, unparsed, rather than none
                    lines = "\n".join(self.content)
                    box += nodes.paragraph(lines, lines)
            return [box]

    return Generic


def _label_version(box: Any, label: str) -> None:
    """Put a version directive's label before its text, as Sphinx does: at the start of its first
    paragraph ("New in version 2.1: The foo parameter."), on a line of its own before a body that
    opens otherwise (a list, code), or as a sentence of its own when it has no text ("Deprecated since
    version 3.1."): never a "…version 2.1:" lead-in line left before the next paragraph."""
    from docutils import nodes

    if len(box) and isinstance(box[0], nodes.paragraph):
        box[0].insert(0, nodes.Text(f"{label}: "))
    else:
        box.insert(0, nodes.paragraph("", f"{label}:" if len(box) else f"{label}."))


#: Sphinx's Python object directives (and those of CPython's own extension, which other projects copy):
#: what each shows before its name, whether it shows ``()`` when written without arguments, and whether its
#: body documents the members of the class it names (Sphinx's ``allow_nesting``)
_PY_OBJECTS: dict[str, tuple[str, bool, bool]] = {
    "function": ("", True, False), "method": ("", True, False), "classmethod": ("classmethod", True, False),
    "staticmethod": ("static", True, False), "class": ("class", False, True),
    "exception": ("exception", False, True), "data": ("", False, False), "attribute": ("", False, False),
    "property": ("property", False, False), "decorator": ("", False, False), "decoratormethod": ("", False, False),
    "coroutinefunction": ("coroutine", True, False), "coroutinemethod": ("coroutine", True, False),
    "awaitablefunction": ("awaitable", True, False), "awaitablemethod": ("awaitable", True, False),
    "abstractmethod": ("abstractmethod", True, False),
}
#: flag options that add a word before a function's or method's name, in Sphinx's order
_PY_FLAGS = (("final", "final"), ("abstractmethod", "abstract"), ("async", "async"), ("classmethod", "classmethod"),
             ("staticmethod", "static"))
#: Sphinx's ``py_sig_re``: ``module.Class.`` prefix, name, argument list, return annotation
_PY_SIGNATURE = re.compile(r"^([\w.]*\.)?(\w+)\s*(?:\(\s*(.*)\s*\)(?:\s*->\s*(.*))?)?$")


#: the keyword Sphinx's C domain shows before a declaration of these kinds
_C_KEYWORDS = {"c:type": "type", "c:struct": "struct", "c:union": "union", "c:enum": "enum",
               "c:enumerator": "enumerator"}


def _c_signature(name: str, sig: str) -> str:
    """A C declaration as Sphinx's C domain shows it: its kind's keyword first (``.. c:type:: Py_UCS4`` is
    ``type Py_UCS4``, ``.. c:struct:: PyCompilerFlags`` ``struct PyCompilerFlags``), ``typedef`` for a type
    with parameters (``typedef int (*visitproc)(PyObject *object, void *arg)``)."""
    keyword = _C_KEYWORDS[name]
    if keyword == "type" and "(" in sig:
        keyword = "typedef"
    return sig if sig.split(None, 1)[0] == keyword else f"{keyword} {sig}"


_GRAMMAR_TOKEN = re.compile(r"`(~?(?:[\w-]*:)?\w+)`")


def _productions(argument: str) -> str:
    """A ``productionlist`` as Sphinx shows it, one production a line, ``name ::= tokens``, a continuation
    (``: | rule``) under its production's tokens, the ```token``` quotes not shown and a first line without a
    colon (the grammar's group, ``python-grammar``) not shown. It read as one paragraph of all productions,
    the group first."""
    def token(m: re.Match[str]) -> str:
        text = m.group(1)
        if ":" in text and text.startswith("~"):
            return text.split(":", 1)[1]
        return text[1:] if text.startswith(":") else text

    lines = re.sub(r"\\\n", "", argument).split("\n")
    if lines and ":" not in lines[0]:
        lines = lines[1:]
    rules = []
    for line in lines:
        if ":" not in line:
            break
        name, tokens = line.split(":", 1)
        rules.append((name.strip(), _GRAMMAR_TOKEN.sub(token, tokens).strip()))
    width = max((len(name) for name, _ in rules), default=0)
    return "\n".join(f"{name.ljust(width)} ::= {tokens}" if name else f"{' ' * width}     {tokens}"
                     for name, tokens in rules)


def _python_object(name: str) -> str | None:
    """The Python object directive ``name`` is (``function``, ``py:class`` …), or None."""
    domain, sep, bare = name.partition(":")
    bare = bare if sep else domain
    return bare if (not sep or domain == "py") and bare in _PY_OBJECTS else None


def _sphinx_make_id(text: str) -> str:
    """Sphinx's ``_make_id`` (sphinx.util.nodes), the id ``make_id`` gives a Python object from its full name:
    docutils' ``make_id`` keeping case, dots and underscores: accents folded to ASCII (``café`` ``cafe``),
    other characters dropped, runs of what is left one ``-``, no ``-``, digit, ``.`` or ``_`` at its start
    (``_private`` is ``private``) and no ``-`` at its end."""
    from docutils import nodes

    out = text.translate(nodes._non_id_translate_digraphs).translate(nodes._non_id_translate)
    out = unicodedata.normalize("NFKD", out).encode("ascii", "ignore").decode("ascii")
    out = re.sub(r"[^a-zA-Z0-9._]+", "-", " ".join(out.split()))
    return re.sub(r"^[-0-9._]+|-+$", "", out)


def _page_ids(node_ids: list[str | None], document: Any) -> list[str | None]:
    """The id Sphinx writes for each Python signature of an object description (``make_id``): its full
    name as :func:`_sphinx_make_id` writes it, None for one Sphinx cannot read, a name it makes no id of
    or an id the page already has (a second signature of the name, the object documented twice, a
    section's id): Sphinx gives that one a serial ``id0``, which names no object."""
    taken = document.setdefault("docs_rag_py_ids", set())
    out: list[str | None] = []
    for node_id in node_ids:
        made = _sphinx_make_id(node_id) if node_id else ""
        if made and made not in taken and made not in document.ids:
            taken.add(made)
            out.append(made)
        else:
            out.append(None)
    return out


def _py_signature(kind: str, sig: str, options: Any, document: Any) -> tuple[str, str | None, str | None]:
    """A Python object's signature as Sphinx shows it, the class its body documents members of ("" for
    none, None to leave it as it is) and the id Sphinx gives it (the module and the full name,
    ``argparse.ArgumentParser.parse_args``; None for a signature it cannot read): the kind's word (``class``, ``exception``, ``coroutine``, the flags
    ``:async:``, ``:classmethod:`` …), the module the page documents (``.. module::``/``.. currentmodule::``,
    or the ``:module:`` option) before a name that is not in a class and has no prefix of its own, ``()`` for
    a function written without arguments, ``@`` before a decorator, `` → type`` for a return annotation and
    ``: type`` / ``= value`` for a variable. ``.. class:: ArgumentParser(prog=None)`` under ``.. module::
    argparse`` is ``class argparse.ArgumentParser(prog=None)``, its method ``parse_args(args=None)``; a
    signature Sphinx cannot read is shown as written, as Sphinx does."""
    word, needs_arglist, nests = _PY_OBJECTS[kind]
    m = _PY_SIGNATURE.match(sig)
    if not m:
        return sig, None, None
    prefix, name, arglist, retann = m.groups()
    module = options.get("module") or document.get("docs_rag_py_module")
    classname = document.get("docs_rag_py_class")
    if classname:
        add_module = False
        if prefix and (prefix == classname or prefix.startswith(classname + ".")):
            fullname = prefix + name
            prefix = prefix[len(classname):].lstrip(".")
        elif prefix:
            fullname = f"{classname}.{prefix}{name}"
        else:
            fullname = f"{classname}.{name}"
    else:
        add_module = True
        fullname = (prefix or "") + name
    words = [word] if word else []
    if kind in ("function", "method", "property"):
        words = [*(shown for flag, shown in _PY_FLAGS if flag in options and kind != "function"), *words]
        if kind == "function" and "async" in options:
            words = ["async"]
    shown = (prefix or (f"{module}." if module and add_module else "")) + name
    if kind in ("decorator", "decoratormethod"):
        shown = "@" + shown
    arglist = (arglist or "").strip()
    if arglist:
        shown += f"({arglist})"
    elif needs_arglist:
        shown += "()"
    if retann:
        shown += f" → {retann.strip()}"
    if kind in ("data", "attribute", "property") and options.get("type"):
        shown += f": {str(options['type']).strip()}"
    if kind in ("data", "attribute") and options.get("value"):
        shown += f" = {str(options['value']).strip()}"
    shown = " ".join([*words, shown])
    node_id = f"{module}.{fullname}" if module else fullname  # Sphinx's PyObject.add_target_and_index
    if nests:
        return shown, fullname, node_id
    return shown, (prefix.rstrip(".") if prefix else None), node_id


#: Sphinx's info fields of an object description (its DocFieldTransformer, Python, C and C++ domains):
#: field name -> (group label, kind): "typed" lists ``name (type) – text``, "grouped" ``name – text``,
#: "field" is the text alone; ``:type x:`` / ``:vartype x:`` give a typed entry its type
_DOC_FIELDS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("param", "parameter", "arg", "argument", "keyword", "kwarg", "kwparam"), ("Parameters", "typed")),
    **dict.fromkeys(("var", "ivar", "cvar"), ("Variables", "typed")),
    **dict.fromkeys(("raises", "raise", "exception", "except", "throws", "throw"), ("Raises", "grouped")),
    **dict.fromkeys(("retval", "retvals"), ("Return values", "grouped")),
    **dict.fromkeys(("returns", "return"), ("Returns", "field")),
    "rtype": ("Return type", "field"), "yields": ("Yields", "field"), "ytype": ("Yield type", "field"),
    "tparam": ("Template Parameters", "typed"),
}
_DOC_FIELD_TYPES = {"type": "Parameters", "paramtype": "Parameters", "vartype": "Variables"}


def _object_description(name: str) -> bool:
    """Whether ``name`` is an object description whose info fields Sphinx transforms (a Python object,
    ``option``/``describe``…, or a ``c:``/``cpp:``/``js:`` one)."""
    domain, sep, bare = name.partition(":")
    return (_default_domain_name(name) in _SIGNATURES) or (sep and domain in ("c", "cpp", "js"))


def _transform_doc_fields(box: Any) -> None:
    """The info fields of an object description's body as Sphinx shows them: ``:param int x: The x.``,
    ``:type x:``, ``:returns:``, ``:rtype:``, ``:raises ValueError: …`` become the groups ``Parameters:``
    (``x (int) – The x.``; a list when there are several), ``Returns:``, ``Return type:``, ``Raises:``
    (``ValueError – …``), in the order they first appear; another field keeps its name, capitalized. Before,
    they read ``param int x: The x.``, as written."""
    from docutils import nodes

    for field_list in [c for c in box.children if isinstance(c, nodes.field_list)]:
        groups: dict[str, tuple[str, list]] = {}  # label -> (kind, entries)
        types: dict[tuple[str, str], list] = {}
        order: list[Any] = []  # labels and untouched fields, in order
        for field in field_list.children:
            if not isinstance(field, nodes.field) or len(field) < 2:
                continue
            name = field[0].astext().strip()
            fieldtype, _, fieldarg = name.partition(" ")
            fieldarg = fieldarg.strip()
            spec = _DOC_FIELDS.get(fieldtype.lower())
            body = list(field[1].children)
            if fieldtype.lower() in _DOC_FIELD_TYPES and fieldarg:
                types[(_DOC_FIELD_TYPES[fieldtype.lower()], fieldarg)] = body
                continue
            if spec is None or (spec[1] == "field") == bool(fieldarg):
                field[0].children[:] = []
                field[0] += nodes.Text(name[:1].upper() + name[1:])
                order.append(field)
                continue
            label, kind = spec
            argtype = None
            if kind == "typed" and " " in fieldarg:
                argtype, fieldarg = fieldarg.rsplit(None, 1)
            if label not in groups:
                groups[label] = (kind, [])
                order.append(label)
            groups[label][1].append((fieldarg, argtype, body))
        fields = []
        for item in order:
            if not isinstance(item, str):
                fields.append(item)
                continue
            kind, entries = groups[item]
            if kind == "field":
                content = [c for _arg, _t, b in entries for c in b]
            else:
                paras = []
                for arg, argtype, body in entries:
                    para = nodes.paragraph("", arg)
                    type_nodes = types.get((item, arg))
                    if type_nodes or argtype:
                        shown = [nodes.Text(argtype)] if argtype else \
                            [c for t in type_nodes for c in (t.children if isinstance(t, nodes.paragraph) else [t])]
                        para += [nodes.Text(" ("), *shown, nodes.Text(")")]
                    rest = list(body)
                    if rest and isinstance(rest[0], nodes.paragraph):
                        para += [nodes.Text(" – "), *rest.pop(0).children]
                    paras.append([para, *rest])
                if len(paras) == 1:
                    content = paras[0]
                else:
                    content = [nodes.bullet_list("", *(nodes.list_item("", *p) for p in paras))]
            fields.append(nodes.field("", nodes.field_name(item, item), nodes.field_body("", *content)))
        field_list.children[:] = []
        field_list += fields


def _default_domain_name(name: str) -> str:
    """``name`` without the prefix of the domains Sphinx resolves unprefixed names in, its default
    Python domain and the standard one: ``py:module`` is ``module``, ``std:program`` ``program``."""
    domain, sep, bare = name.partition(":")
    return bare if sep and domain in ("py", "std") else name


def _generic_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None,
                  content: Any = None):  # noqa: ANN202
    from docutils import nodes

    text = text.strip()
    bare = name.split(":")[-1]
    if bare in _SHOWN_ROLES:
        shown = _SHOWN_ROLES[bare](text)
        return [nodes.literal(rawtext, shown) if bare in _CODE_ROLES else nodes.Text(shown)], []
    m = _ROLE_TARGET_RE.match(text)
    titled = bool(m and m.group(1))
    shown = m.group(1) if titled else (m.group(2) if m else text)
    if not titled and _python_role(name):  # .datetime: the dot only says where to look the name up
        shown = shown.lstrip("!").lstrip(".")
    if shown.startswith("~"):  # ~pkg.mod.func shows func
        shown = shown.rsplit(".", 1)[-1]
    shown = shown.lstrip("~!")
    if not titled and _adds_parentheses(name):  # Sphinx's add_function_parentheses: open()
        shown = shown.removesuffix("()") + "()"
    if not titled and _default_domain_name(name) == "ref":  # the title of the section it names, if on this page
        return [nodes.inline(rawtext, shown, reflabel=nodes.fully_normalize_name(shown))], []
    return [nodes.literal(rawtext, shown) if name.split(":")[-1] in _CODE_ROLES else nodes.Text(shown)], []


def _gui_label(text: str) -> str:
    """A ``:guilabel:`` as Sphinx shows it: ``&`` marks the accelerator key (underlined) and is not shown,
    ``&&`` is one ``&``."""
    return re.sub(r"(?<!&)&(?![&\s])", "", text).replace("&&", "&")


def _emphasized_literal(text: str) -> str:
    """A ``:samp:`` or ``:file:`` as Sphinx shows it: ``{name}`` is a variable part, shown (emphasized)
    without its braces; ``\\{`` is a brace."""
    return re.sub(r"\\([{}])|[{}]", lambda m: m.group(1) or "", text)


#: Sphinx roles whose text is shown otherwise than written
_SHOWN_ROLES = {
    # LIFO (last-in, first-out): the abbreviation, the explanation a tooltip
    "abbr": lambda t: re.sub(r"\s*\((.*)\)$", "", t, flags=re.S) or t,
    "guilabel": _gui_label,
    "menuselection": lambda t: _gui_label(t.replace("-->", "\N{TRIANGULAR BULLET}")),
    "samp": _emphasized_literal,
    "file": _emphasized_literal,
}


def _python_role(role: str) -> bool:
    """Whether ``role`` refers to a Python object (``:class:``, ``:py:meth:`` …)."""
    domain, sep, bare = role.partition(":")
    return (bare if sep else domain) in _PY_ROLES and (not sep or domain == "py")


_PY_ROLES = frozenset({"func", "meth", "class", "mod", "attr", "data", "const", "exc", "obj"})


def _adds_parentheses(role: str) -> bool:
    """Whether Sphinx shows a reference of ``role`` without a title of its own with ``()`` after it
    (``add_function_parentheses``, on by default): a function or method of the Python domain, a function
    of the C and C++ ones; ``:func:`len``` shows ``len()`` on the page."""
    domain, sep, bare = role.partition(":")
    if not sep:
        return role in ("func", "meth")
    return (domain == "py" and bare in ("func", "meth")) or (domain in ("c", "cpp") and bare == "func")


_CODE_ROLES = {"func", "meth", "class", "mod", "attr", "data", "const", "exc", "obj", "option", "envvar",
               "command", "program", "file", "samp", "code", "kbd", "makevar", "token", "keyword", "type",
               "member", "var", "macro", "struct", "enum", "enumerator", "any", "dfn"}


def _register_unknown(text: str) -> None:
    """Register generic handlers for the directives and roles ``text`` uses that docutils lacks."""
    from docutils.parsers.rst import directives, roles
    from docutils.parsers.rst.languages import en

    for name in set(_DIRECTIVE_NAME_RE.findall(text)):
        lname = name.lower()
        known = lname in directives._directives or lname in directives._directive_registry \
            or lname in getattr(en, "directives", {})
        if lname in _CODE_DIRECTIVES or (known and lname != "include"):
            continue
        directives.register_directive(lname, _generic_directive(lname))
    for name in set(_ROLE_NAME_RE.findall(text)):
        lname = name.lower()
        known = lname in roles._roles or lname in roles._role_registry or lname in getattr(en, "roles", {})
        if not known:
            roles.register_local_role(lname, _generic_role)


def parse_rst(text: str, *, path: str) -> ParsedPage:
    """Parse a reStructuredText document into title, sections and metadata (docinfo fields and,
    if present, a leading YAML frontmatter block as MyST and some Sphinx themes allow)."""
    try:
        from docutils import nodes
        from docutils.core import publish_doctree
        from docutils.utils import SystemMessage
    except ImportError as exc:  # pragma: no cover - docutils is a dependency
        raise ParseError(f"{path}: reStructuredText needs docutils; install it with 'pip install docutils'") from exc
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    text = check_text(text, path=path)
    metadata: dict[str, Any] = {}
    if text.startswith("---\n"):
        metadata, text = split_frontmatter(text, path=path)
    _setup()
    _register_unknown(text)
    settings = {
        "report_level": 5, "halt_level": 5, "warning_stream": io.StringIO(), "file_insertion_enabled": False,
        "raw_enabled": False, "doctitle_xform": False, "sectsubtitle_xform": False, "syntax_highlight": "none",
        "input_encoding": "unicode", "_disable_config": True, "traceback": True, "character_level_inline_markup": False,
        # Sphinx's default_settings: an id docutils cannot derive from a title (a Chinese or Russian one, a
        # repeated one) is "id1", "id2" … on the published page, not docutils' own "section-1"
        "auto_id_prefix": "id",
        # Sphinx's smartquotes (on by default, "qDe"): "x" and 'x' are typographic quotes, --- an em dash,
        # -- an en dash, ... an ellipsis, outside code and signatures, as the published page shows them
        "smart_quotes": True,
    }
    try:
        doc = publish_doctree(text, source_path=path, settings_overrides=settings)
    except SystemMessage as exc:  # pragma: no cover - halt_level 5 makes this unlikely
        raise ParseError(f"{path}: not valid reStructuredText ({exc}); fix the markup or exclude the file") from exc

    _sort_ids(doc, nodes)
    walker = _Walker(nodes, doc)
    builder = SectionBuilder()
    for child in doc.children:
        walker.top(child, builder, 1)
    metadata.update(walker.docinfo)
    unresolved = list(doc.get("docs_rag_unresolved", []))
    if unresolved:
        metadata["unresolved_includes"] = unresolved
    title = metadata.get("title")
    if not isinstance(title, str | int | float) or not str(title).strip():
        title = builder.title_heading or humanize_stem(path)
    return ParsedPage(title=" ".join(str(title).split()), sections=builder.finish(), metadata=metadata)


def _sort_ids(doc: Any, nodes: Any) -> None:
    """Sphinx's ``SortIds`` transform: a section whose first id starts with ``id`` (docutils' automatic
    ``id9``, given to a title whose slug a label above it took: ``.. _partial-objects:`` over ``partial
    Objects``) has it moved last, so the label is the id Sphinx writes on the section. Cited as ``#id9``,
    74 of CPython's 4074 sections named no element of the built page."""
    for section in doc.findall(nodes.section):
        if len(section["ids"]) > 1 and section["ids"][0].startswith("id"):
            section["ids"] = section["ids"][1:] + section["ids"][:1]


class _Walker:
    """Renders docutils nodes to plain-text lines; sections go to a :class:`SectionBuilder`."""

    def __init__(self, nodes: Any, document: Any = None) -> None:
        self.n = nodes
        self.docinfo: dict[str, Any] = {}
        self.document = document
        self.highlight = ""  # the language ``.. highlight::`` set last (Sphinx's conf default is not known)

    def reference_title(self, node: Any) -> str:
        """What a ``:ref:`label``` without a title of its own shows: the title of the section the label
        names when that section is on this page, as Sphinx shows it (``:ref:`json-commandline``` reads
        "Command Line Interface"); a label of another page cannot be looked up here and shows as written."""
        document, label = self.document, node["reflabel"]
        explicit = document is not None and document.nametypes.get(label)  # a label, not a title's own name
        target = document.ids.get(document.nameids.get(label) or "") if explicit else None
        if isinstance(target, self.n.section):
            title = target.next_node(self.n.title)
            if title is not None:
                return " ".join(title.astext().split())
        return node.astext()

    def top(self, node: Any, builder: SectionBuilder, level: int) -> None:
        n = self.n
        if isinstance(node, n.section):
            title_node = node.next_node(n.title)
            title = " ".join(title_node.astext().split()) if title_node is not None else ""
            anchor = node["ids"][0] if node["ids"] else None
            builder.heading(level, title, anchor)
            for child in node.children:
                if isinstance(child, n.title):
                    continue
                self.top(child, builder, level + 1)
            return
        if isinstance(node, n.docinfo):
            for field in node.children:
                if isinstance(field, n.field):
                    self.docinfo[field[0].astext().strip().lower()] = field[1].astext().strip()
                else:
                    self.docinfo[field.tagname] = field.astext().strip()
            return
        if isinstance(node, n.field_list) and "metadata" in node.get("classes", []):
            return
        lines = self.render(node)
        if lines:
            builder.add_lines(lines)

    # ---------------------------------------------------------------------------------------
    def blocks(self, children: Any) -> list[OutLine]:
        out: list[OutLine] = []
        for child in children:
            lines = self.render(child)
            if lines and out:
                out.append(OutLine(""))
            out.extend(lines)
        return out

    def inline(self, node: Any) -> str:
        n = self.n
        parts: list[str] = []

        def walk(x: Any) -> None:
            for c in x.children:
                if isinstance(c, n.Text):
                    parts.append(str(c))
                elif isinstance(c, (n.problematic, n.system_message, n.target, n.substitution_definition)):
                    if isinstance(c, n.problematic):
                        parts.append(c.astext())
                    continue
                elif isinstance(c, n.literal):  # ``code`` and the code roles (:func:, :option:, …): code stays code
                    parts.append(code_span(c.astext()))
                elif isinstance(c, (n.footnote_reference, n.citation_reference)):
                    parts.append(f"[{c.astext()}]")
                elif isinstance(c, n.image):
                    parts.append(c.get("alt", ""))
                elif isinstance(c, n.inline) and c.get("reflabel"):
                    parts.append(self.reference_title(c))
                else:
                    walk(c)

        walk(node)
        return " ".join("".join(parts).split())

    def render(self, node: Any) -> list[OutLine]:  # noqa: C901 - one branch per node kind
        n = self.n
        if isinstance(node, n.comment) and node.get("docs_rag_highlight") is not None:
            self.highlight = node["docs_rag_highlight"]  # Sphinx's highlight directive, in document order
            return []
        if isinstance(node, (n.comment, n.system_message, n.target, n.substitution_definition, n.raw,
                             n.transition, n.pending, n.meta if hasattr(n, "meta") else n.comment)):
            return []
        if isinstance(node, (n.paragraph, n.title, n.subtitle, n.rubric, n.attribution, n.caption, n.term,
                             n.line)):
            text = self.inline(node)
            return [OutLine(text)] if text else []
        if isinstance(node, n.section):  # a section nested in a block (rare): title and content
            return self.blocks(node.children)
        if isinstance(node, n.literal_block) and node.get("docs_rag_signature"):  # an object's signatures
            # each signature line is its object's target (a repeated id, a second signature of one
            # object, is Sphinx's ``id1``, which names no object: the first one stays the target)
            given = node.get("docs_rag_ids") or []
            ids = [node_id if node_id not in given[:i] else None for i, node_id in enumerate(given)]
            return [OutLine(line, anchor=(ids[i] if i < len(ids) else None) or "")
                    for i, line in enumerate(node.astext().split("\n"))]
        if isinstance(node, n.literal_block):
            lang = node.get("language") or next((c for c in node.get("classes", []) if c not in ("code", "literal-block")), "")
            if not lang and node.rawsource == node.astext():  # not a parsed-literal, which Sphinx never highlights
                lang = self.highlight  # a ``::`` block, or code-block without a language: the highlight's
            if lang == "none":  # Sphinx's name for no highlighting
                lang = ""
            code = node.astext()
            if node.rawsource == code:  # not a parsed-literal
                code = _trimmed_doctest(node, code, str(lang))
            return fence_block(code, str(lang))
        if isinstance(node, n.doctest_block):
            return fence_block(_trimmed_doctest(node, node.astext(), "pycon"), "pycon")
        if isinstance(node, (n.bullet_list, n.enumerated_list)):
            ordered = isinstance(node, n.enumerated_list)
            start = int(node.get("start", 1) or 1)
            out: list[OutLine] = []
            for idx, item in enumerate(node.children):
                lines = self.blocks(item.children)
                prefix = f"{start + idx}. " if ordered else "- "
                out.extend(self._item(prefix, lines))
            return out
        if isinstance(node, n.definition_list):
            out = []
            for item in node.children:
                terms = [self.inline(c) for c in item.children if isinstance(c, (n.term, n.classifier))]
                definition = next((c for c in item.children if isinstance(c, n.definition)), None)
                body = self.blocks(definition.children) if definition is not None else []
                out.extend(self._item(" : ".join(t for t in terms if t) + ": ", body))
            return out
        if isinstance(node, n.field_list):
            out = []
            for field in node.children:
                name = self.inline(field[0])
                body = list(field[1].children)
                if body and isinstance(body[0], (n.bullet_list, n.enumerated_list)):
                    # a list opens on the line after its field's name, as a list after an admonition's label
                    out.append(OutLine(f"{name}:"))
                    out.extend(indented(self.blocks(body)))
                    continue
                out.extend(self._item(f"{name}: ", self.blocks(body)))
            return out
        if isinstance(node, n.option_list):
            out = []
            for item in node.children:
                opts = item[0].astext()
                desc = self.blocks(item[1].children)
                out.extend(self._item(f"{opts}: ", desc))
            return out
        if isinstance(node, n.line_block):
            return [OutLine(self.inline(c)) for c in node.traverse(n.line) if self.inline(c)]
        if isinstance(node, n.container) and node.get("rendered") is not None:  # _rendered_block
            text = str(node["rendered"])
            if text.startswith(("```", "~~~")):  # a fenced code block: its lines as they are
                return [OutLine(line, verbatim=True) for line in text.split("\n")]
            return [OutLine(line) for line in text.split("\n")]
        if isinstance(node, n.table):
            rows: list[OutLine] = []
            title = node.next_node(n.title)
            if title is not None and title.parent is node:
                rows += [OutLine(self.inline(title)), OutLine("")]  # a block of its own, as an HTML <caption>
            body: list[OutLine] = []
            for row in node.traverse(n.row):
                cells = [" ".join(ln.text for ln in self.blocks(entry.children) if ln.text.strip() and not ln.text.startswith("```"))
                         for entry in row.children]
                if any(cells):
                    body.append(OutLine(row_line([" ".join(c.split()) for c in cells])))
            if not any(True for _ in node.traverse(n.thead)) and (rule := headless_rule([b.text for b in body])):
                body.insert(0, OutLine(rule))  # no header row: the rows start with a rule (table_row.py)
            return rows + body
        if isinstance(node, n.Admonition):
            label = _ADMONITION_LABELS.get(node.tagname)
            children = list(node.children)
            if label is None:  # generic admonition: its title is the label
                title = next((c for c in children if isinstance(c, n.title)), None)
                label = self.inline(title) if title is not None else "Note"
                children = [c for c in children if c is not title]
            inner = self.blocks(children)
            # the label opens the body's first paragraph ("Note: Be careful."); before a list or code
            # it is a line of its own, so the first item keeps its "- " ("See also:" then "- a")
            opens_with_text = bool(children) and isinstance(children[0], n.paragraph)
            if inner and opens_with_text and not inner[0].verbatim and inner[0].text:
                return [OutLine(f"{label}: {inner[0].text}"), *inner[1:]]
            return [OutLine(f"{label}:"), *inner]
        if isinstance(node, (n.footnote, n.citation)):
            label = node.next_node(n.label)
            inner = self.blocks([c for c in node.children if not isinstance(c, n.label)])
            return self._item(f"[{label.astext()}] " if label is not None else "", inner)
        if isinstance(node, (n.image,)):
            alt = node.get("alt", "")
            return [OutLine(alt)] if alt else []
        if isinstance(node, n.figure):
            return self.blocks(node.children)
        if isinstance(node, n.legend):
            return self.blocks(node.children)
        if isinstance(node, (n.topic, n.sidebar)):
            return self.blocks(node.children)
        if isinstance(node, n.TextElement):
            text = self.inline(node)
            return [OutLine(text)] if text else []
        # block_quote, container, compound, generic directive boxes, …
        return self.blocks(node.children)

    @staticmethod
    def _item(prefix: str, lines: list[OutLine]) -> list[OutLine]:
        return list_item(prefix, [ln for ln in lines if ln.text or ln.verbatim])


# ---- includes: ``.. include::`` resolved by the source, as AsciiDoc's ``include::`` is ----------------

#: an include directive's line: ``.. include:: ../includes/note.rst`` (at any indentation)
_RST_INCLUDE_RE = re.compile(r"^(?P<indent>[ \t]*)\.\.[ \t]+(?P<kind>include|literalinclude)::[ \t]*(?P<target>\S.*?)[ \t]*$")
#: a literalinclude's language from its file's extension, where no ``:language:`` names it (Sphinx guesses
#: it with Pygments from the file name)
_EXTENSION_LANGUAGES = {".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript",
                        ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".ini": "ini", ".cfg": "ini",
                        ".sh": "bash", ".bash": "bash", ".c": "c", ".h": "c", ".cpp": "cpp", ".hpp": "cpp", ".rs": "rust",
                        ".go": "go", ".java": "java", ".rb": "ruby", ".html": "html", ".xml": "xml", ".css": "css",
                        ".sql": "sql", ".rst": "rst", ".md": "markdown", ".txt": "text"}
#: a directive whose content is shown as written: a directive line inside it is text, not an include
_LITERAL_OPENER_RE = re.compile(r"^[ \t]*\.\.[ \t]+(?:(?:code-block|code|sourcecode|parsed-literal|doctest|testcode|"
                                r"testoutput|testsetup|testcleanup|productionlist|literalinclude)::|raw::)")
#: one of its options, on the lines after it (indented deeper): ``:start-after: .. begin``, ``:literal:``
_RST_OPTION_RE = re.compile(r"^[ \t]+:(?P<name>[\w-]+):(?:[ \t]+(?P<value>.*?))?[ \t]*$")


def resolve_rst_includes(text: str, *, path: str, read: Any, root: str = "") -> Any:
    """``text`` (the reStructuredText file at repository path ``path``) with each ``.. include::`` replaced
    (and ``.. literalinclude::``, as a code block in its ``:language:`` or its extension's) by the file it names,
    read with ``read(repo_path)`` (None when it is not there; the source's reader, which
    refuses a link out of the folder or into a hidden file), as Sphinx and docutils include it: the file's
    lines at the directive's indentation, from ``:start-line:``/``:start-after:`` up to ``:end-line:``/
    ``:end-before:``, a ``:literal:`` or ``:code: lang`` include as a code block; includes inside included
    files are resolved from their own folder, and a target starting with ``/`` from ``root`` (the source's
    top folder, Sphinx's source directory). Before, every include was dropped: CPython's ``venv.rst`` lost
    its whole "Creating virtual environments" section. A standard include (``<isonum.txt>``), a URL, a path
    out of the source, a missing or refused file, a loop, or a page grown past
    :data:`~.asciidoc.MAX_INCLUDED_CHARS` stays a directive the parser drops, listed in ``unresolved``.
    Returns an :class:`~.asciidoc.IncludeResult`."""
    from .asciidoc import IncludeResult, _include_path, read_include

    result = IncludeResult("")
    size = [len(text)]

    def target_path(target: str, current: str) -> str | None:
        if target.startswith("/") and not target.startswith("//"):
            joined = posixpath.normpath(posixpath.join(root or ".", target.lstrip("/")))
            return None if joined == ".." or joined.startswith(("../", "/")) else joined
        return _include_path(target, current)

    def expand(lines: list[str], current: str, depth: int, chain: tuple[str, ...]) -> list[str]:
        out: list[str] = []
        literal: int | None = None  # the indentation of the line that opened a literal block being read
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            width = len(line) - len(line.lstrip(" \t"))
            if literal is not None and (not line.strip() or width > literal):
                out.append(line)  # a literal block shows a directive as text (a page about reST's include)
                continue
            literal = None
            m = _RST_INCLUDE_RE.match(line)
            if m is None:
                if _LITERAL_OPENER_RE.match(line) or (line.rstrip().endswith("::")
                                                      and not line.lstrip().startswith("..")):
                    literal = width
                out.append(line)
                continue
            indent, target = m.group("indent"), m.group("target")
            options: dict[str, str] = {}
            directive = [line]
            while i < len(lines) and (o := _RST_OPTION_RE.match(lines[i])) is not None \
                    and len(lines[i]) - len(lines[i].lstrip()) > len(indent.expandtabs()):
                options[o.group("name")] = o.group("value") or ""
                directive.append(lines[i])
                i += 1
            if target.startswith("<") and target.endswith(">"):  # docutils' own (<isonum.txt>): not a file here
                out.extend(directive)
                continue
            literal_include = m.group("kind") == "literalinclude"
            repo_path = None if "://" in target else target_path(target, current)
            inc = read_include(target, repo_path, read=read, result=result, size=size, depth=depth, chain=chain)
            if inc is None:
                out.extend(directive)
                continue
            if literal_include:
                inc, problem = _literal_lines(inc, options)
                if problem:  # Sphinx warns and shows nothing
                    result.unresolved.append(f"{target} ({problem})")
                    out.extend(directive)
                    continue
            else:
                inc = _included_lines(inc, options)
            if literal_include or "literal" in options or "code" in options:
                language = (options.get("language") or options.get("code") or "").strip() or (
                    _EXTENSION_LANGUAGES.get(posixpath.splitext(repo_path)[1].lower(), "text") if literal_include
                    else "text")
                caption = [f"{indent}{options['caption']}", ""] if options.get("caption", "").strip() else []
                out += ["", *caption, f"{indent}.. code-block:: {language}", ""] + [
                    f"{indent}   {x}" if x.strip() else "" for x in inc] + [""]
                continue
            inc = expand(inc, repo_path, depth + 1, (*chain, repo_path))
            out += [""] + [f"{indent}{x}" if x.strip() else "" for x in inc] + [""]
        return out

    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # a file saved with CRLF line ends too
    result.text = "\n".join(expand(lines, path, 0, (path,))) if any(
        _RST_INCLUDE_RE.match(x) for x in lines) else text
    return result


def _included_lines(lines: list[str], options: dict[str, str]) -> list[str]:
    """The lines of an included file its options select, as docutils selects them: ``:start-line:`` and
    ``:end-line:`` (Python slice indexes), then the text after ``:start-after:`` and before ``:end-before:``
    (the first occurrence of each; text that does not occur leaves the file unselected)."""
    def number(name: str) -> int | None:
        try:
            return int(options[name]) if options.get(name, "").strip() else None
        except ValueError:
            return None

    lines = lines[number("start-line"):number("end-line")]
    text = "\n".join(lines)
    after, before = options.get("start-after", ""), options.get("end-before", "")
    if after and after in text:
        text = text.split(after, 1)[1]
    if before and before in text:
        text = text.split(before, 1)[0]
    out = text.split("\n")
    while out and not out[-1].strip():
        out.pop()
    return out


def python_object_lines(source: str) -> dict[str, tuple[int, int]]:
    """Where each class and function of a Python module is, as Sphinx's ``:pyobject:`` finds it: dotted
    names (``Class.method``, also a function inside a function or an ``if``/``try`` block) to the 1-based
    first line (its first decorator's) and last line. A later definition of a name wins, as it does when
    the module runs. A module Python cannot parse has none."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # nested too deep for Python's parser too
        return {}
    found: dict[str, tuple[int, int]] = {}

    def walk(nodes: list[Any], prefix: str) -> None:
        for node in nodes:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                name = prefix + node.name
                if name not in found or found[name][0] < start:
                    found[name] = (start, node.end_lineno or node.lineno)
                walk(node.body, name + ".")
                continue
            for field in ("body", "handlers", "orelse", "finalbody", "cases"):
                walk(getattr(node, field, None) or [], prefix)

    walk(tree.body, "")
    return found


def _literal_lines(lines: list[str], options: dict[str, str]) -> tuple[list[str], str]:
    """The lines of a ``literalinclude`` its options select, in Sphinx's order: ``:pyobject:`` (a class or
    function of a Python file, ``Class.method``), ``:start-after:``/``:start-at:`` and
    ``:end-before:``/``:end-at:`` (the first line holding the text, without or with that line; ``end-before``
    passes over the first line, as Sphinx does), ``:lines:`` (``1,3,5-10,20-``, 1-based, of what is left), ``:dedent:`` (that
    many columns, or the common indentation), ``:prepend:``/``:append:``. Where Sphinx warns and shows
    nothing (no such object, a text that does not occur, lines out of range) the second value says why."""
    name = options.get("pyobject", "").strip()
    if name:
        where = python_object_lines("\n".join(lines)).get(name)
        if where is None:
            return [], f":pyobject: {name} is not defined in the file"
        lines = lines[where[0] - 1:where[1]]
    for names in (("start-at", "start-after"), ("end-at", "end-before")):
        option = next((x for x in names if x in options), None)
        text = options.get(option or "", "")
        if not text:
            continue
        first = 1 if option == "end-before" else 0
        at = next((n for n, x in enumerate(lines) if n >= first and text in x), None)
        if at is None:
            return [], f":{option}: {text} is not in the file"
        lines = {"start-at": lines[at:], "start-after": lines[at + 1:],
                 "end-at": lines[:at + 1], "end-before": lines[:at]}[option]
    spec = options.get("lines", "").strip()
    if spec:
        keep: list[int] = []
        for part in spec.split(","):
            lo, dash, hi = part.strip().partition("-")
            try:
                start = int(lo) if lo.strip() else 1
                end = (int(hi) if hi.strip() else len(lines)) if dash else start
            except ValueError:
                continue
            keep += range(max(1, start), min(end, len(lines)) + 1)
        if not keep:
            return [], f":lines: {spec} selects no line of the file"
        lines = [lines[n - 1] for n in keep]
    if "dedent" in options:
        value = options["dedent"].strip()
        width = int(value) if value.isdigit() else min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
        lines = [x[width:] if x[:width].strip() == "" else x.lstrip() for x in lines]
    if options.get("prepend", "").strip():
        lines = [options["prepend"], *lines]
    if options.get("append", "").strip():
        lines = [*lines, options["append"]]
    while lines and not lines[-1].strip():
        lines.pop()
    return lines, ""


def rst_unresolved_line(entry: str) -> str:
    """An entry of ``unresolved`` as a log line's middle: ``.. include:: x.rst cannot be resolved``, with
    the reason after a colon when the entry carries one."""
    target, sep, reason = entry.partition(" (")
    if sep and reason.endswith(")"):
        return f".. include:: {target} cannot be resolved: {reason[:-1]}"
    return f".. include:: {entry} cannot be resolved"
