"""Doc-gap report: the ``doc_gaps`` asset (real Dagster) and ``docs-rag gaps`` over a real question log."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

from dagster import DagsterInstance, materialize

from docs_rag_pipeline import feedback
from docs_rag_pipeline.config import load_config
from docs_rag_pipeline.defs.definitions import build_definitions
from docs_rag_pipeline.defs.gaps import doc_gaps
from docs_rag_pipeline.records import Answer, Citation

from .conftest import write_config
from .test_cli import _run

KUBERNETES = ["How do I deploy the dashboard on a Kubernetes cluster?",
              "Is there a Kubernetes helm chart for the dashboards?",
              "Kubernetes pod keeps restarting after deploy, what now?"]
PDF = ["How can I export a dashboard as a PDF file?",
       "Is PDF export of reports supported?",
       "Print the dashboard to PDF with the charts included"]


def _log(cfg: Path) -> None:
    config = load_config(cfg)
    Path(config.storage_path).mkdir(parents=True, exist_ok=True)  # made by an ingest; a log never makes it
    for i, q in enumerate(KUBERNETES + PDF):
        feedback.log_answer(config, q, Answer(answer="not in the docs", citations=[], refused=True,
                                              trace_id=f"refused{i}"), source="guide" if i % 2 else None)
    # a confident answer is not a gap; a question asked of another source is not this source's
    good = Citation(n=1, chunk_id="c1", url="https://docs.example.org/forms.md", title="Forms", snippet="…",
                    score=0.9, supported=True)
    feedback.log_answer(config, "How do forms validate input?", Answer(answer="Validators [1].", citations=[good],
                                                                      refused=False, trace_id="good"))
    feedback.log_answer(config, "Kubernetes operator for the other product?",
                        Answer(answer="no", citations=[], refused=True, trace_id="other"), source="other")


def test_doc_gaps_asset_clusters_and_names_two_topics(tmp_path):
    cfg = write_config(tmp_path, sources="""
      - name: guide
        kind: local
        path: docs
      - name: other
        kind: local
        path: docs
    """)
    (tmp_path / "docs").mkdir()
    _log(cfg)
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("sources", ["guide"])
        result = materialize([doc_gaps], partition_key="guide", instance=instance,
                             resources=build_definitions(config_path=str(cfg)).resources)
        assert result.success
        meta = {k: v.value for k, v in result.asset_materializations_for_node("doc_gaps")[0].metadata.items()}
    assert meta["questions"] == 6 and meta["clusters"] == 2
    report = meta["report"]
    names = [c["name"] for c in report]
    assert any("kubernetes" in n for n in names) and any("pdf" in n for n in names), names
    by = {("kubernetes" if "kubernetes" in c["name"] else "pdf"): c for c in report}
    assert by["kubernetes"]["count"] == 3 and by["pdf"]["count"] == 3
    assert set(by["kubernetes"]["examples"]) == set(KUBERNETES) and set(by["pdf"]["examples"]) == set(PDF)
    assert "forms" not in meta["gaps"].lower() and "operator" not in meta["gaps"].lower()
    assert "| gap | questions |" in meta["gaps"] and by["pdf"]["name"] in meta["gaps"]
    # the bar chart is an image inside the metadata (a data URI), not a path
    m = re.fullmatch(r"!\[[^\]]*\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)", meta["chart"])
    assert m, meta["chart"][:80]
    assert base64.b64decode(m.group(1)).startswith(b"\x89PNG")

    # the CLI prints the same table
    out = _run(["gaps", "--source", "guide"], cfg)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == meta["gaps"].strip()
    bad = _run(["gaps", "--source", "nope"], cfg)
    assert bad.returncode == 2 and "nope" in bad.stderr


HOSTILE = ["How do I configure the ![](https://evil.example/pixel.png?op=1) zorblax? "
           "[Session expired: sign in again](https://evil.example/login)",
           "Where is <img src=https://evil.example/p.png> the <a href='https://evil.example'>zorblax</a> guide?",
           "Is the zorblax at www.evil.example, <https://evil.example/a> or admin@evil.example &lt;b&gt; **now** "
           "`code` a\\|b\r# h [ref][1]\n\n[1]: https://evil.example/ref"]


def _refused_questions(root: Path, questions: list[str]) -> Path:
    """A config whose question log holds ``questions``, each asked and refused: its path."""
    cfg = write_config(root)
    (root / "docs").mkdir()
    config = load_config(cfg)
    Path(config.storage_path).mkdir(parents=True, exist_ok=True)
    for i, q in enumerate(questions):
        feedback.log_answer(config, q, Answer(answer="not in the docs", citations=[], refused=True,
                                              trace_id=f"refused{i}"))
    return cfg


def test_questions_in_the_gap_table_are_text_not_markdown(tmp_path):
    """Anyone who can ask can put a question in the report the Dagster UI renders: no image, link or
    HTML of theirs may come out of it, and the question still reads as it was asked."""
    from markdown_it import MarkdownIt

    cfg = _refused_questions(tmp_path, HOSTILE)
    out = _run(["gaps"], cfg)
    assert out.returncode == 0, out.stderr
    table = out.stdout.strip()
    tokens = MarkdownIt("commonmark").enable("table").enable("strikethrough").parse(table)
    kinds = {t.type for t in tokens} | {c.type for t in tokens for c in t.children or []}
    assert not kinds & {"image", "link_open", "html_inline", "html_block", "em_open", "strong_open", "code_inline",
                        "heading_open", "s_open"}, (kinds, table)
    assert not re.search(r"https://|www\.|(?<!\\)@", table), table  # what GFM makes a link by itself
    # one table: a header and a row per cluster, four cells each; every question reads as asked
    rows = [t for t in tokens if t.type == "tr_open"]
    report = json.loads(_run(["gaps", "--json"], cfg).stdout)
    assert len(rows) == 1 + len(report)
    cells = [t.content for t in tokens if t.type == "inline"]
    assert len(cells) == 4 * len(rows), cells
    shown = " ".join("".join(x.content for x in t.children) for t in tokens if t.type == "inline")
    for q in HOSTILE:
        assert " ".join(q.split()) in shown, (q, shown)


OTHER_LANGUAGES = ["Wie konfiguriere ich die Überwachung?", "¿Cómo configuro la autenticación de dos factores?",
                   "Как настроить аутентификацию?", "Как настроить аутентификацию пользователей?",
                   "如何配置身份验证？", "كيف أقوم بإعداد المصادقة؟"]


def test_clusters_of_questions_in_other_languages_are_named_by_their_words(tmp_path):
    """Cluster names were read with an ASCII-only pattern and English stop words: ``Überwachung``
    became ``berwachung``, a German cluster was named by ``die`` and ``ich``, and the Russian, Chinese
    and Arabic clusters were all ``(no terms)``, which the chart (one bar per name) drew as one bar.
    Names now come from the project's tokenizer and the stop words of the question's language, and
    clusters that still share a name are each a bar of their own, told apart by ``#1``, ``#2``."""
    from docs_rag_pipeline import gaps

    cfg = _refused_questions(tmp_path, OTHER_LANGUAGES)
    out = _run(["gaps", "--json"], cfg)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    terms_of = {q: c["terms"] for c in report for q in c["examples"]}
    assert set(terms_of) == set(OTHER_LANGUAGES), report
    german, spanish = terms_of[OTHER_LANGUAGES[0]], terms_of[OTHER_LANGUAGES[1]]
    assert "überwachung" in german and not {"die", "ich", "wie"} & set(german), german
    assert "autenticación" in spanish and not {"la", "de"} & set(spanish), spanish
    assert "настроить" in terms_of[OTHER_LANGUAGES[2]] + terms_of[OTHER_LANGUAGES[3]]
    assert all(terms_of[q] for q in OTHER_LANGUAGES), report  # no cluster of words is "(no terms)"
    assert not any(t in ("berwachung", "autenticaci") for ts in terms_of.values() for t in ts)
    names = [c["name"] for c in report]
    assert len(set(names)) == len(names), names

    # the chart: a bar per cluster, each with its own label, even where names are the same
    same = [{"name": "(no terms)", "count": 3}, {"name": "(no terms)", "count": 2},
            {"name": "kubernetes / helm", "count": 2}, {"name": "(no terms)", "count": 1}]
    assert gaps.chart_labels(same) == ["(no terms) #1", "(no terms) #2", "kubernetes / helm", "(no terms) #3"]
    fig = gaps.chart_figure(same)
    ax = fig.axes[0]
    assert sorted(p.get_width() for p in ax.patches) == [1, 2, 2, 3]
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == sorted(gaps.chart_labels(same))
    assert gaps.chart_png(same).startswith(b"\x89PNG")


def test_the_report_reads_the_newest_questions_and_embeds_each_once(tmp_path):
    """Anyone who can ask adds to the log: the report reads the newest ``api.gap_questions`` of it (and
    says how many older ones it left out), and a question asked again is embedded once."""
    from docs_rag_pipeline import gaps
    from docs_rag_pipeline.context import get_context

    cfg = write_config(tmp_path, extra="api:\n  gap_questions: 6\n")
    (tmp_path / "docs").mkdir()
    config = load_config(cfg)
    Path(config.storage_path).mkdir(parents=True, exist_ok=True)
    old = [f"Ancient question number {i} about the teleporter?" for i in range(4)]
    asked = old + KUBERNETES + [KUBERNETES[0]] + PDF[:2]  # the newest six hold one question twice
    for i, q in enumerate(asked):
        feedback.log_answer(config, q, Answer(answer="not in the docs", citations=[], refused=True,
                                              trace_id=f"q{i:02d}"))
    out = _run(["gaps"], cfg)
    assert out.returncode == 0, out.stderr
    assert "teleporter" not in out.stdout.lower() and "ancient" not in out.stdout.lower(), out.stdout
    assert "4 older refused or low-confidence questions are left out" in out.stdout
    assert "newest 6 (api.gap_questions)" in out.stdout
    js = _run(["gaps", "--json"], cfg)
    assert js.returncode == 0, js.stderr
    assert sum(c["count"] for c in json.loads(js.stdout)) == 6 and "4 older" in js.stderr

    rows, left_out = feedback.gap_questions(config)
    assert [r["question"] for r in rows] == asked[-6:] and left_out == 4
    embedded: list[str] = []

    def embed(texts: list[str]):  # noqa: ANN202
        embedded.extend(texts)
        return get_context(cfg).embedder.embed(texts)

    report = gaps.gap_report(rows, embed)
    assert sorted(embedded) == sorted(set(asked[-6:])) and len(embedded) == 5
    assert sum(c["count"] for c in report) == 6


def test_the_question_log_forgets_old_asks_but_not_those_with_feedback(tmp_path):
    """The log kept every question anyone typed, for ever: ``api.keep_questions_days`` deletes the
    older asks as new ones are logged, except those that took feedback (their draft cases need them);
    ``null`` keeps all."""
    import sqlite3
    import time

    def ask(config, q: str, trace: str) -> None:  # noqa: ANN001
        feedback.log_answer(config, q, Answer(answer="not in the docs", citations=[], refused=True, trace_id=trace))

    for extra, kept in (("api:\n  keep_questions_days: 30\n", {"rated", "new", "newer"}),
                        ("api:\n  keep_questions_days: null\n", {"old", "rated", "new", "newer"})):
        root = tmp_path / str(len(kept))
        root.mkdir()
        config = load_config(write_config(root, extra=extra))
        Path(config.storage_path).mkdir(parents=True, exist_ok=True)
        for trace in ("old", "rated", "new"):
            ask(config, f"Question {trace} about the teleporter?", trace)
        feedback.record_feedback(config, "rated", "down", "wrong page")
        with sqlite3.connect(feedback.db_path(config)) as con:  # two of them asked 40 days ago
            con.execute("UPDATE questions SET at = ? WHERE trace_id IN ('old', 'rated')", (time.time() - 40 * 86400,))
        ask(config, "Question newer about the teleporter?", "newer")
        assert {r["trace_id"] for r in feedback.questions(config)} == kept
        assert [r["trace_id"] for r in feedback.feedback_rows(config)] == ["rated"]


def test_a_long_backlog_is_forgotten_in_batches_and_feedback_never_loses_its_question(tmp_path):
    """The first ask after an upgrade deleted the whole backlog in its own request, holding the log's
    lock for seconds per 300,000 rows; and feedback, stored after a LangSmith call in a second
    transaction, could lose its question to the retention of another process's ask in between."""
    import sqlite3
    import time

    config = load_config(write_config(tmp_path, extra="api:\n  keep_questions_days: 30\n"))
    Path(config.storage_path).mkdir(parents=True, exist_ok=True)
    feedback.log_answer(config, "Is the teleporter documented?", Answer(answer="no", citations=[], refused=True,
                                                                         trace_id="seed"))
    old = time.time() - 40 * 86400
    with sqlite3.connect(feedback.db_path(config)) as con:
        con.executemany(f"INSERT INTO questions ({', '.join(feedback.COLUMNS[:12])}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                        [(f"old{i}", old, "q", None, 1, 1, None, None, None, "a", "[]", "[]")
                         for i in range(feedback.FORGET_BATCH * 2 + 10)])
    feedback.log_answer(config, "A new question?", Answer(answer="no", citations=[], refused=True, trace_id="new"))
    assert feedback.count_questions(config) == 2 + feedback.FORGET_BATCH + 10  # one batch went
    for i in range(2):
        feedback.log_answer(config, "Again?", Answer(answer="no", citations=[], refused=True, trace_id=f"n{i}"))
    assert {r["trace_id"] for r in feedback.questions(config)} == {"seed", "new", "n0", "n1"}

    # feedback on an ask at the edge of the window: once stored, no later ask deletes its question
    with sqlite3.connect(feedback.db_path(config)) as con:
        con.execute("UPDATE questions SET at = ? WHERE trace_id = 'seed'", (old,))
    feedback.record_feedback(config, "seed", "down", "wrong")
    feedback.log_answer(config, "Later?", Answer(answer="no", citations=[], refused=True, trace_id="later"))
    assert [r["trace_id"] for r in feedback.feedback_rows(config)] == ["seed"]
    try:
        feedback.record_feedback(config, "gone", "up")
    except feedback.FeedbackError as exc:
        assert exc.code == "unknown_trace_id"
    else:
        raise AssertionError("feedback on an unknown trace id was stored")


def test_prune_trims_the_question_log_when_nobody_asks(tmp_path):
    """Old asks were deleted only as new ones were logged: a server nobody asks (or one with
    log_questions off since) kept them for good. ``docs-rag prune`` deletes them too."""
    import sqlite3
    import time

    cfg = write_config(tmp_path, extra="api:\n  keep_questions_days: 30\n")
    (tmp_path / "docs").mkdir()
    config = load_config(cfg)
    Path(config.storage_path).mkdir(parents=True, exist_ok=True)
    for i in range(3):
        feedback.log_answer(config, f"Question {i}?", Answer(answer="no", citations=[], refused=True, trace_id=f"t{i}"))
    with sqlite3.connect(feedback.db_path(config)) as con:
        con.execute("UPDATE questions SET at = ? WHERE trace_id IN ('t0', 't1')", (time.time() - 40 * 86400,))
    rows, left_out = feedback.gap_questions(config)  # the report reads none of them, deleted yet or not
    assert [r["trace_id"] for r in rows] == ["t2"] and left_out == 0
    out = _run(["prune"], cfg)
    assert out.returncode == 0, out.stderr
    assert "question log: 2 asks older than api.keep_questions_days (30) deleted" in out.stderr
    assert [r["trace_id"] for r in feedback.questions(config)] == ["t2"]


def test_a_chinese_or_japanese_cluster_is_named_by_the_words_its_questions_share():
    """Questions in Chinese or Japanese are counted in character bigrams, and the cluster was named by
    its top bigrams: ``代理 / 务器 / 服务`` for questions about a proxy server, ``务器`` a pair of
    characters across two words that no one writes. A bigram now grows to the longest string that two
    of the cluster's questions or more hold (``代理服务器``), and a name inside another goes."""
    from docs_rag_pipeline.gaps import name_clusters

    chinese = ["如何配置代理服务器？", "代理服务器的端口怎么设置？", "怎么给代理服务器设置密码？"]
    english = ["How do I set the proxy port?", "proxy port for the server"]
    names = name_clusters([*chinese, *english], [0, 0, 0, 1, 1])
    assert names[0][0] == "代理服务器" and "务器" not in names[0] and "服务" not in names[0], names
    assert set(names[1]) == {"port", "proxy", "server"}, names  # words of spaced scripts as before
    japanese = name_clusters(["データベースのバックアップ方法", "データベースを復元する"], [0, 0])
    assert japanese[0][0] == "データベース", japanese
    # a bigram that only one question holds is not grown into that question's text
    assert name_clusters(["如何配置代理服务器？"], [0])[0][0] in {"代理", "配置", "服务", "务器", "如何", "何配", "置代", "理服"}
