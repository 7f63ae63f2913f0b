"""Citation markers belong to the system. Document text can carry its own ``[2]``, ``[1, 3]`` or
``NO_ANSWER:`` (footnotes, copied answers, a prompt injection); before such text reaches an
answer or a prompt, :func:`neutralise` removes them, so every marker in an answer is one that
the system placed and that ``citations`` lists. Footnote references (``[^1]``) and full-width
markers (``【1】``, ``【4:0†source】``) go too, and so do look-alikes: a zero-width space or word
joiner inside the brackets (``[\u200b2]``), full-width brackets (``［3］``), a range (``[4-5]``): an
agent or a person reading the answer could take them for citations. Code is left as written (``items[1]`` in a code span or block is code, and the chat page
never links inside code). What is code follows Markdown, as the chat page reads it (``app.js``
mirrors :func:`code_ranges`): a fenced block needs its closing fence (an unclosed fence line is text,
as in chunking), a code span its closing run of as many backticks (three backticks in a sentence
with no closing three are text), and a span never crosses a blank line.
"""

from __future__ import annotations

import re

MARKER_RE = re.compile(r"\[(\s*\d+\s*(?:[,;]\s*\d+\s*)*)\]")
#: a document's footnote reference ([^1], [^note]), a full-width marker that starts with a number,
#: a marker with a source tag ([9†source], as some chat models cite), or a bracketed superscript number ([¹], ⁽⁹⁾)
_OTHER_MARKER_RE = re.compile(r"\[\^[^\]\s]{1,40}\]|【\s*\d[^】\n]{0,40}】|\[\s*\d+\s*[†‡][^\]\n]{0,40}\]"
                              r"|[\[［⁽]\s*[⁰¹²³⁴⁵⁶⁷⁸⁹]+\s*[\]］⁾]")
#: what reads as a citation marker without being one to MARKER_RE: invisible characters inside the
#: brackets ([\u200b2]), full-width brackets (［3］), a range ([4-5], [4–6]); see :func:`_lookalike`
_DASH = r"[-–—‐‑−~]"
#: what a reader does not see: spaces, Unicode's default-ignorable code points (soft hyphen, the
#: combining grapheme joiner, format and bidi controls, variation selectors, tag characters, Hangul
#: fillers) and the blank Braille pattern
_INVISIBLE = (r"[\s\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
              r"\u2060-\u206f\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
              r"\U000e0000-\U000e0fff]")
#: a bracket or digit as a reader sees it, written plainly, full-width, Markdown-escaped (``\[``) or as
#: an HTML character reference (``&#91;``, ``&lbrack;``, ``&#57;``): a client that renders the answer
#: as Markdown shows each as ``[9]``
#: every square, tortoise-shell and lenticular bracket of Unicode (categories Ps and Pe), which a reader
#: takes for a citation's brackets around a number: ``〔3〕``, ``❲2❳``, ``⟦4⟧``, ``［3］``
OPEN_BRACKETS = ("[\u2045\u2772\u27e6\u27ec\u298b\u298d\u298f\u2997\u2e55\u2e57\u3010\u3014\u3016\u3018\u301a"
                 "\ufe17\ufe39\ufe3b\ufe47\ufe5d\uff3b")
CLOSE_BRACKETS = ("]\u2046\u2773\u27e7\u27ed\u298c\u298e\u2990\u2998\u2e56\u2e58\u3011\u3015\u3017\u3019\u301b"
                  "\ufe18\ufe3a\ufe3c\ufe48\ufe5e\uff3d")
#: a number a reader reads as one without a decimal digit: superscript and subscript digits, circled,
#: parenthesized and full-stop numbers (``①``, ``⑴``, ``⒈``, ``❶``, ``㉑``), and a digit decorated by a
#: combining mark after it (``1̲``, the keycap ``1⃣``, the enclosing circle ``1⃝``)
_NUMBER_FORMS = ("\u00b2\u00b3\u00b9\u2070\u2074-\u2079\u2080-\u2089\u2460-\u249b\u24ea-\u24ff\u2776-\u2793"
                 "\u3220-\u3229\u3248-\u324f\u3251-\u325f\u3280-\u3289\u32b1-\u32bf\U0001f100-\U0001f10c")
_COMBINING = "[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]"
_OPEN = rf"(?:[{re.escape(OPEN_BRACKETS)}]|\\\[|&(?:#0*91|#[xX]0*5[bB]|lbrack|lsqb);)"
_CLOSE = rf"(?:[{re.escape(CLOSE_BRACKETS)}]|\\\]|&(?:#0*93|#[xX]0*5[dD]|rbrack|rsqb);)"
_DIGITS = rf"(?:(?:\d|[{_NUMBER_FORMS}]|&#0*(?:4[89]|5[0-7]);|&#[xX]0*3[0-9];){_COMBINING}*)+"
_LOOKALIKE_RE = re.compile(rf"{_OPEN}{_INVISIBLE}*{_DIGITS}(?:{_INVISIBLE}*(?:[,;，；]|{_DASH}){_INVISIBLE}*{_DIGITS})*"
                           rf"{_INVISIBLE}*{_CLOSE}"
                           # a signed number ([-1], [+2]) not glued to a name, as `items[-1]` in prose is
                           rf"|(?<![\w\])])[\[［]{_INVISIBLE}*[-−+]\d+{_INVISIBLE}*[\]］]")
_REFUSAL_RE = re.compile(r"\bNO_ANSWER\b\s*:?", re.I)
_TICKS = re.compile(r"`+")


def code_ranges(text: str) -> list[tuple[int, int]]:
    """(start, end) of every piece of code in ``text``: fenced blocks with their closing fence, then
    code spans (a run of backticks up to the next run of the same length, within a paragraph)."""
    return [(a, b) for a, b, _ in _code_pieces(text)]


def _code_pieces(text: str) -> list[tuple[int, int, bool]]:
    """:func:`code_ranges` in order, each with True for a fenced block, False for a code span."""
    if "`" not in text and "~~~" not in text:
        return []
    from ..chunking import _fence_pairs

    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    blocks = sorted((starts[o], starts[c] + len(lines[c])) for o, c in _fence_pairs(lines).items())
    out: list[tuple[int, int, bool]] = []
    pos = 0
    for b_start, b_end in [*blocks, (len(text), len(text))]:
        out.extend((a, b, False) for a, b in _spans(text, pos, b_start))
        if b_end > b_start:
            out.append((b_start, b_end, True))
        pos = b_end
    return out


def plain_code_spans(text: str) -> str:
    """``text`` with the backticks of its code spans taken off (and the space a span is padded with
    when its code starts or ends with a backtick); fenced blocks stay as they are. Chunk text keeps a
    page's inline code as code spans (parsing's ``code_span``); what the embedding model reads of a chunk
    or of a sentence is this, the text as a reader sees it, as it was embedded before code spans were
    kept (so an index re-parsed for them keeps its vectors)."""
    pieces = [(a, b) for a, b, block in _code_pieces(text) if not block]
    if not pieces:
        return text
    out, pos = [], 0
    for a, b in pieces:
        run = len(re.match(r"`+", text[a:b]).group())
        inner = text[a + run : b - run]
        if len(inner) >= 2 and inner[0] == " " and inner[-1] == " " and inner.strip():
            inner = inner[1:-1]
        out += [text[pos:a], inner]
        pos = b
    return "".join(out) + text[pos:]


def _spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    out = []
    runs = list(_TICKS.finditer(text, start, end))
    k = 0
    while k < len(runs):
        m = runs[k]
        n = len(m.group(0))
        close = next((j for j in range(k + 1, len(runs)) if len(runs[j].group(0)) == n), None)
        if close is not None and not re.search(r"\n[ \t]*\n", text[m.end():runs[close].start()]):
            out.append((m.start(), runs[close].end()))
            k = close + 1
        else:  # no closing run in this paragraph: the backticks are text
            k += 1
    return out


def code_parts(text: str) -> list[str]:
    """``text`` cut into text and code, alternately (the even parts are text)."""
    parts, pos = [], 0
    for a, b in code_ranges(text):
        parts += [text[pos:a], text[a:b]]
        pos = b
    return [*parts, text[pos:]]


def number(digits: str) -> int:
    """The number a marker's digits write, bounded: ``int()`` refuses more than 4,300 digits (a
    ValueError that failed the whole answer), so a number of more than 18 digits counts as 10**18,
    which is no source either way."""
    d = digits.strip().lstrip("0") or "0"
    return int(d) if len(d) <= 18 else 10**18


def _lookalike(m: re.Match) -> str:
    """A bracketed number, list or range, as a reader takes a citation: cut. A "range" that does
    not go up from 1 or more (``[0-9]``, a character class in prose; ``[2023-01-05]``, a date) is
    no citation and stays."""
    for a, b in re.findall(rf"(\d+){_INVISIBLE}*{_DASH}{_INVISIBLE}*(\d+)", m.group()):
        if not 1 <= number(a) < number(b):
            return m.group()
    return _CUT


def neutralise(text: str, *, refusal: bool = True) -> str:
    """``text`` without bracketed numbers, footnote references or ``NO_ANSWER`` outside code,
    nor look-alikes of a marker (invisible characters inside, full-width brackets, a range).
    ``refusal=False`` keeps ``NO_ANSWER`` (a question may ask about it: :func:`question_text`)."""
    parts = code_parts(text)
    parts[0::2] = [neutralise_text(p, refusal=refusal) for p in parts[0::2]]  # the even parts are outside code
    return re.sub(r"[ \t]+$", "", "".join(parts))


#: an index written against a name or a call (``items[1]``, ``argv[0][1]``, ``f()[2]``): code, not a marker
_INDEXING_RE = re.compile(r"(?<=[\w)])(?:\[\d{1,4}\])+")


def question_text(question: str) -> str:
    """A question as the answer reads it: without the citation markers pasted with it from an earlier
    answer or a footnote (``How do I run the tests? [1]``), which name no word of it; before, the marker's
    ``1`` was a word of the question and brought in a table row keyed ``1``. A question that is nothing
    but markers is left as it is (and refused as such). An index glued to a name (``What does
    print(items[1]) print?``) is code the question asks about, and stays: it was cut to ``print(items )``.
    An answer puts a space before its markers, so a pasted one is never glued to a word."""
    held: list[str] = []
    # a private-use character the question does not hold stands for each index while markers go
    mark = next((chr(c) for c in range(0xE000, 0xF900) if chr(c) not in question), None)

    def hold(m: re.Match) -> str:
        held.append(m.group())
        return f"{mark}{len(held) - 1}{mark}"

    if mark is None:  # a question holding every one of them: read as document text is
        plain = neutralise(question, refusal=False)
    else:
        plain = neutralise(_INDEXING_RE.sub(hold, question), refusal=False)
        plain = re.sub(f"{mark}(\\d+){mark}", lambda m: held[int(m.group(1))], plain)
    return plain if plain.strip() else question


def neutralise_text(p: str, *, refusal: bool = True) -> str:
    """One piece of text with no code in it, without markers, look-alikes and ``NO_ANSWER``."""
    if not (_LOOKALIKE_RE.search(p) or _OTHER_MARKER_RE.search(p) or (refusal and _REFUSAL_RE.search(p))):
        return p  # the document's own spacing stays as written ("in .astro files")
    p = p.replace(_CUT, "")
    p = _LOOKALIKE_RE.sub(_lookalike, p)  # MARKER_RE's matches are among these
    p = _OTHER_MARKER_RE.sub(_CUT, p)
    p = _REFUSAL_RE.sub(_CUT, p) if refusal else p
    # a removed marker takes the spaces before it along where punctuation or a line end follows
    # ("see below [2]." → "see below."), else it just goes; at a line's start it takes the spaces after
    # it along, and the colon of a footnote's definition ("[^1]: The note." → "The note.")
    p = re.sub(rf"(?m)^{_CUT}(?:[ \t]*{_CUT})*(?:[ \t]*:(?=[ \t]))?[ \t]*", "", p)
    p = re.sub(rf"[ \t]*{_CUT}(?:[ \t]*{_CUT})*[ \t]*(?=[.,;:!?]|\n|$)", "", p)
    p = re.sub(rf"(?<=\S)[ \t]*{_CUT}(?:[ \t]*{_CUT})*[ \t]*(?=\S)", " ", p)
    return p.replace(_CUT, "")


_CUT = "\x00"  # where a marker was cut out (a NUL in a document's text is dropped with it)
