"""Doc-gap report: refused and low-confidence questions from the question log, clustered by
embedding, each cluster named by its distinctive terms (tf-idf of the cluster against the others).
No Dagster here: the ``doc_gaps`` asset and ``docs-rag gaps`` both call :func:`gap_report`."""

from __future__ import annotations

import base64
import io
import re
from typing import Any, Callable, Sequence

import numpy as np

from .answering.extractive import content_terms
from .words import SPACELESS, words

def _terms(text: str) -> list[str]:
    """The content words of a question, each time it says them (the tf of its cluster counts repeats):
    the project's one tokenizer (``words.words``: letters of any alphabet, character bigrams of Chinese,
    Japanese, Korean, Thai) and the content words of the refusal signals (``extractive.content_terms``),
    whose stop words are English's and those of the question's language. Before, an ASCII-only pattern
    and English stop words cut ``Überwachung`` to ``berwachung``, named a Russian or Chinese cluster
    ``(no terms)`` and a German one by ``die`` and ``ich``."""
    keep = set(content_terms(text))  # lang detected from the question itself, as refusal reads it
    return [w for w in words(text) if w in keep]


def cluster(vectors: np.ndarray, *, threshold: float = 0.65) -> list[int]:
    """Agglomerative clustering (average linkage, cosine distance) cut at ``threshold``: a label per
    row. Unit vectors in; the number of clusters follows from the data."""
    n = len(vectors)
    if n == 0:
        return []
    if n == 1:
        return [0]
    from sklearn.cluster import AgglomerativeClustering

    model = AgglomerativeClustering(n_clusters=None, metric="cosine", linkage="average",
                                    distance_threshold=threshold)
    return [int(x) for x in model.fit_predict(np.asarray(vectors, dtype=np.float32))]


def name_clusters(texts: Sequence[str], labels: Sequence[int], *, top: int = 3) -> dict[int, list[str]]:
    """Each cluster's distinctive terms: tf-idf with one document per cluster (its questions joined),
    so a term common to every cluster weighs nothing."""
    groups: dict[int, list[str]] = {}
    for t, lab in zip(texts, labels):
        groups.setdefault(lab, []).extend(_terms(t))
    n = len(groups)
    df: dict[str, int] = {}
    for words in groups.values():
        for w in set(words):
            df[w] = df.get(w, 0) + 1
    out = {}
    for lab, words in groups.items():
        tf: dict[str, int] = {}
        for w in words:
            tf[w] = tf.get(w, 0) + 1
        score = {w: c * (np.log((1 + n) / (1 + df[w])) + 1.0) for w, c in tf.items()}
        ranked = [w for w, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))]
        questions = [q for q, x in zip(texts, labels) if x == lab]
        names: list[str] = []
        for w in ranked:
            name = _grown(w, questions)
            if not any(name in m or m in name for m in names):
                names.append(name)
            if len(names) == top:
                break
        out[lab] = names
    return out


_SPACELESS_RUN = re.compile(f"[{SPACELESS}]+")


def _grown(term: str, questions: Sequence[str], *, longest: int = 8) -> str:
    """A character bigram of a script written without spaces (``务器``, which pairs characters across
    words) grown, a character at a time, to the longest string that at least two of the cluster's
    questions hold (``代理服务器``, a word of theirs), within one run of that script and at most
    ``longest`` characters; a term of another script, or one that no two questions share, as it is."""
    if len(questions) < 2 or not _SPACELESS_RUN.fullmatch(term):
        return term
    runs = [r for q in questions for r in _SPACELESS_RUN.findall(q)]

    def held(s: str) -> int:
        return sum(1 for q in questions if any(s in r for r in _SPACELESS_RUN.findall(q)))

    if held(term) < 2:
        return term
    grown = True
    while grown and len(term) < longest:
        grown = False
        for longer in sorted({r[i - 1:i + len(term)] for r in runs for i in _starts(r, term) if i > 0}
                             | {r[i:i + len(term) + 1] for r in runs for i in _starts(r, term)
                                if i + len(term) < len(r)}):
            if held(longer) >= 2:
                term, grown = longer, True
                break
    return term


def _starts(run: str, term: str) -> list[int]:
    return [m.start() for m in re.finditer(f"(?={re.escape(term)})", run)]


def gap_report(rows: Sequence[dict[str, Any]], embed: Callable[[list[str]], Any], *,
               threshold: float = 0.65, examples: int = 3) -> list[dict[str, Any]]:
    """Clusters of gap questions, largest first: ``name``, ``terms``, ``count``, ``refused``, ``examples``.
    A question asked again is embedded and clustered once (the same text, the same cluster), and
    counted each time it was asked."""
    rows = [r for r in rows if r.get("refused") or r.get("low_confidence")]
    if not rows:
        return []
    texts = [r["question"] for r in rows]
    distinct = list(dict.fromkeys(texts))
    label_of = dict(zip(distinct, cluster(np.asarray(embed(distinct)), threshold=threshold)))
    labels = [label_of[t] for t in texts]
    names = name_clusters(texts, labels)
    out = []
    for lab in sorted(set(labels)):
        members = [r for r, x in zip(rows, labels) if x == lab]
        uniq = list(dict.fromkeys(r["question"] for r in members))
        out.append({"name": " / ".join(names[lab]) or "(no terms)", "terms": names[lab], "count": len(members),
                    "refused": sum(1 for r in members if r.get("refused")), "examples": uniq[:examples]})
    return sorted(out, key=lambda c: (-c["count"], c["name"]))


#: what would make text in a table cell more than text: Markdown's and HTML's punctuation (images,
#: links, emphasis, tags, entities, the cell separator), and the parts GFM turns into links by
#: themselves (``https://``, ``www.``, ``name@host``)
_MARKDOWN = re.compile(r"[\\`*_\[\]()!<>#|~&{}]|(?<=[A-Za-z]):(?=//)|(?<=[Ww]{3})\.|@")


def markdown_text(text: str) -> str:
    """``text`` (a question anyone may ask) as plain text inside a Markdown table cell: each character
    Markdown or HTML would act on is backslash-escaped and line breaks become spaces. The Dagster UI
    renders the ``gaps`` metadata, and its sanitizer keeps ``img[src]`` and ``a[href]``: an unescaped
    question could load an image from anywhere when the report is opened, or show a link to anywhere."""
    return _MARKDOWN.sub(lambda m: "\\" + m.group(), " ".join(text.split()))


def markdown_table(report: Sequence[dict[str, Any]], *, left_out: int = 0) -> str:
    """The report as a Markdown table; ``left_out``: the older questions the report did not read (said
    under the table, so a reader knows the counts are of the newest ones)."""
    if not report:
        return "No refused or low-confidence questions logged."
    lines = ["| gap | questions | refused | examples |", "|---|---|---|---|"]
    for c in report:
        ex = "; ".join(markdown_text(e) for e in c["examples"])
        lines.append(f"| {markdown_text(c['name'])} | {c['count']} | {c['refused']} | {ex} |")
    if left_out:
        lines += ["", left_out_note(sum(c["count"] for c in report), left_out)]
    return "\n".join(lines)


def left_out_note(read: int, left_out: int) -> str:
    return (f"{left_out} older refused or low-confidence questions are left out: the report reads the newest "
            f"{read} (api.gap_questions).")


def chart_labels(report: Sequence[dict[str, Any]]) -> list[str]:
    """A bar label per cluster, in the report's order: its name, and where clusters share a name (two
    clusters of questions made of stop words only, or whose best terms are alike) ``#1``, ``#2`` … in
    the order of the table, so each bar can be told apart and found in the table."""
    total: dict[str, int] = {}
    for c in report:
        total[c["name"]] = total.get(c["name"], 0) + 1
    seen: dict[str, int] = {}
    out = []
    for c in report:
        seen[c["name"]] = seen.get(c["name"], 0) + 1
        out.append(f"{c['name']} #{seen[c['name']]}" if total[c["name"]] > 1 else c["name"])
    return out


def chart_figure(report: Sequence[dict[str, Any]], *, title: str = "doc gaps"):  # noqa: ANN201 (a Figure)
    """The bar chart of the cluster sizes, largest on top: one bar per cluster at its own position (bars
    keyed by name drew clusters of the same name as one bar, hiding a count)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = chart_labels(report)[::-1] or ["(none)"]
    counts = [c["count"] for c in report][::-1] or [0]
    fig, ax = plt.subplots(figsize=(7, 0.5 * max(2, len(labels)) + 1), dpi=100)
    ax.barh(range(len(labels)), counts, tick_label=labels, color="#c0504d")
    ax.set_xlabel("questions")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def chart_png(report: Sequence[dict[str, Any]], *, title: str = "doc gaps") -> bytes:
    import matplotlib.pyplot as plt  # chart_figure has chosen the Agg backend

    fig = chart_figure(report, title=title)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def png_markdown(png: bytes, alt: str) -> str:
    """An image inside Markdown metadata: a base64 data URI (the Dagster UI shows it; no file path)."""
    return f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode()})"
