"""Evaluation: cases files, metrics through the real search/ask, the eval_scores asset, the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from dagster import DagsterInstance, materialize

from docs_rag_pipeline.defs.definitions import build_definitions
from docs_rag_pipeline.defs.evaluation import eval_scores
from docs_rag_pipeline.evaluation import (CaseResult, EvalCaseError, _history_rows, load_cases, normalise_url,
                                          page_rank, plot_history, resolve_expected, summarise)
from docs_rag_pipeline.records import Hit

from .conftest import GUIDE, write_config, write_docs
from .dagster_helpers import materialize_source
from .fake_langsmith import LangSmithServer

CASES = [
    {"id": "conv", "question": "What does a converter do in data binding?", "expected_urls": ["forms/binding.md"],
     "expected_keywords": ["converter"], "should_refuse": False, "category": "answerable"},
    {"id": "flux", "question": "How do I fix the ZX81_QUANTUM_FLUX import error?",
     "expected_urls": ["https://docs.example.org/install.md#troubleshooting"], "expected_keywords": ["cache"],
     "should_refuse": False},
    {"id": "deploy", "question": "Which environment variable must be set before starting the container?",
     "expected_urls": ["deploy/cloud.md"], "should_refuse": False, "category": "boundary"},
    {"id": "bread", "question": "What is the best temperature to bake sourdough bread?", "should_refuse": True,
     "category": "refuse"},
    {"id": "k8s", "question": "How do I deploy the dashboards on Kubernetes with Helm charts?", "should_refuse": True,
     "category": "refuse"},
]


def test_url_matching_rules():
    assert normalise_url("https://x.org/a/index.html#s") == normalise_url("https://x.org/a/") == "https://x.org/a"
    assert resolve_expected("forms/binding.md", "https://docs.example.org/") == "https://docs.example.org/forms/binding.md"
    assert resolve_expected("binding.md", "docs/") == "docs/binding.md"
    # ./ and ../ against a relative root as against an absolute one (docs/./install.md matched no page: evalcheck F11)
    assert resolve_expected("./install.md", "docs/") == resolve_expected("guide/../install.md", "docs/") == "docs/install.md"
    assert resolve_expected("docs/a.md", "docs/") == "docs/a.md" and resolve_expected("a.md?v=1", "docs/") == "docs/a.md?v=1"
    hits = [Hit(chunk_id=str(i), source="s", url=u + "#x", page_url=u, title="", headings=[], text="", score=0,
                parent_id=None) for i, u in enumerate(["https://x.org/a", "https://x.org/a", "https://x.org/b/"])]
    assert page_rank(hits, ["https://x.org/b/index.html"]) == 2  # pages deduplicated in rank order


@pytest.mark.parametrize("line, needle", [
    ('{"id": "a", "question": "q"}', ":1: should_refuse: required"),
    ('{"id": "a", "question": "", "should_refuse": true}', ":1: question: required, a non-empty string"),
    ('{"question": "q", "should_refuse": true}', ":1: id: required"),
    ('{"id": "a", "question": "q", "should_refuse": false}', ":1: expected_urls: required unless"),
    ('{"id": "a", "question": "q", "should_refuse": true, "category": "maybe"}', ":1: category: 'maybe'"),
    ('{"id": "a", "question": "q", "should_refuse": true, "colour": 1}', ":1: colour: unknown field"),
    ('{"id": "a", "question": "q", "should_refuse": true}\n{"id": "a", "question": "r", "should_refuse": true}',
     ":2: id: duplicate id 'a'"),
    ('{"id": "a", "question": "q", "should_refuse": true}\n{not json', ":2: not valid JSON"),
    ('{"id": "a", "question": "q \\ud800", "should_refuse": true}', ":1: question: is not valid Unicode text"),
    # a lone surrogate in a field's name, or in a value checked against a list first (unicode F4)
    ('{"\\ud800": 1, "id": "a", "question": "q", "should_refuse": true}',
     ":1: a field name is not valid Unicode text (a lone surrogate U+D800 at position 0); allowed fields:"),
    ('{"id": "a", "question": "q", "should_refuse": true, "split": "\\ud800"}',
     ":1: split: is not valid Unicode text (a lone surrogate)"),
    ('{"id": "a", "question": "q", "should_refuse": "yes"}', ":1: should_refuse: required, true or false"),
    ('{"id": "a", "question": "q", "should_refuse": false, "expected_urls": [""]}', ":1: expected_urls: a list of URLs"),
    # an empty keyword is in every answer, so it always counted as found (evalcheck F12)
    ('{"id": "a", "question": "q", "should_refuse": false, "expected_urls": ["a.md"], "expected_keywords": ["", "x"]}',
     ":1: expected_keywords: a list of non-empty strings"),
    ('{"id": "a", "question": "q", "should_refuse": false, "expected_urls": ["a.md"], "expected_keywords": [" "]}',
     ":1: expected_keywords: a list of non-empty strings"),
    ('{"id": "a", "question": "q", "should_refuse": false, "expected_urls": ["http://[docs.example.org/a.md"]}',
     ":1: expected_urls: 'http://[docs.example.org/a.md' is not a valid URL (Invalid IPv6 URL)"),
    ('{"id": "a", "question": "q", "should_refuse": true}\n' + "[" * 100_000, ":2: nested too deeply to read"),
    ('{"id": "a", "question": "q", "should_refuse": true, "note": %s}' % ("9" * 5000), ":1: not valid JSON"),
])
def test_bad_cases_name_line_and_field(tmp_path, line, needle):
    p = tmp_path / "cases.jsonl"
    p.write_text(line + "\n")
    with pytest.raises(EvalCaseError) as e:
        load_cases(p)
    assert needle in str(e.value)


def test_a_cases_file_that_is_not_utf8_names_file_line_and_byte(tmp_path):
    p = tmp_path / "cases.jsonl"
    p.write_bytes(b'{"id": "a", "question": "q", "should_refuse": true}\n{"id": "b", "question": "caf\xe9?", '
                  b'"should_refuse": true}\n')
    with pytest.raises(EvalCaseError, match=rf"^{re.escape(str(p))}:2: not UTF-8 text \(byte 0xe9\); save the file "
                                            "as UTF-8$"):
        load_cases(p)


def test_line_separators_inside_a_question_and_a_bom_are_read_as_json_lines(tmp_path):
    """U+2028, U+2029, U+0085 and \\x1c inside a JSON string (a question pasted from a PDF or a web page,
    written raw by ``feedback export``) broke the line for ``str.splitlines()``: the whole file failed
    to load. A BOM (Notepad's "UTF-8 with BOM") failed line 1. JSON Lines end at ``\\n`` only."""
    p = tmp_path / "cases.jsonl"
    odd = "install\u2028on Windows\u2029now\u0085or\x1clater"
    p.write_bytes("\ufeff".encode() + json.dumps({"id": "a", "question": odd, "should_refuse": True},
                                                  ensure_ascii=False).encode() + b"\r\n"
                  + json.dumps({"id": "b", "question": "q", "should_refuse": True}).encode() + b"\n")
    cases = load_cases(p)
    assert [c.id for c in cases] == ["a", "b"] and cases[0].question == odd


def test_a_history_line_cut_short_by_a_kill_does_not_fail_the_next_eval(tmp_path):
    """``eval/results/<source>-history.jsonl`` gets a line per run; a run killed while appending it
    left half a line, and every later eval failed at its end, drawing the chart (a JSONDecodeError
    after all the work). Such lines are left out of the chart."""
    history = tmp_path / "guide-history.jsonl"
    history.write_bytes(b'{"at": "20260101T000000", "retrieval_recall_at_1": 0.5}\n{"at": "2026010\n'
                        b'{"at": "20260102T000000", "retrieval_recall_at_1": 0.75}\n[1]\n\xff\xfe broken bytes\n')
    out = tmp_path / "chart.png"
    plot_history(history, out, title="eval: guide")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [r["retrieval_recall_at_1"] for r in _history_rows(history)] == [0.5, 0.75]



def test_a_history_line_cut_short_loses_only_itself(tmp_path):
    """The next run's line was appended right after a cut line (no newline), so it was glued to it and
    left out as well: runs 1, a killed 2 and 3 gave one row, not two (evalcheck F6)."""
    from docs_rag_pipeline.evaluation import write_results

    report = summarise("guide", [CaseResult(id="a", category="answerable", question="q", should_refuse=False,
                                            refused=False, rank=1, rank_fulltext=1, rank_vector=1, cited=0,
                                            invalid_cited=0, unsupported=0, keywords_found=0, keywords_total=0,
                                            similarity=0.5, coverage=0.5, unknown_terms=[], search_ms=1, ask_ms=2,
                                            answer="a")])
    report["cost"] = {"cost_per_100_calls": 0.0}
    files = write_results(report, tmp_path)
    with files["history"].open("ab") as f:
        f.write(b'{"at": "2026')  # run 2 killed while appending its line
    write_results(report, tmp_path)
    write_results(report, tmp_path)
    lines = files["history"].read_bytes().split(b"\n")
    assert len(_history_rows(files["history"])) == 3 and len(lines) == 5 and lines[-1] == b"", lines

def test_metrics_from_known_results():
    def r(cid, should, refused, rank, cited=1, invalid=0, unsupported=0, kw=(1, 1), cat="answerable"):
        return CaseResult(id=cid, category=cat, question="q", should_refuse=should, refused=refused, rank=rank,
                          rank_fulltext=rank, rank_vector=None, cited=0 if refused else cited,
                          invalid_cited=invalid, unsupported=unsupported, keywords_found=kw[0], keywords_total=kw[1],
                          similarity=0.5, coverage=0.5, unknown_terms=[], search_ms=10, ask_ms=20, answer="a")
    rep = summarise("s", [r("a", False, False, 1), r("b", False, False, 3, cited=2, invalid=1, unsupported=1, kw=(0, 2)),
                          r("c", False, True, None), r("d", True, True, None, cat="refuse"),
                          r("e", True, False, None, cat="refuse")])
    assert rep["retrieval"] == {"recall_at_1": round(1 / 3, 4), "recall_at_5": round(2 / 3, 4),
                                "mrr_at_10": round((1 + 1 / 3) / 3, 4)}
    assert rep["refusal"] == {"precision": 0.5, "recall": 0.5, "accuracy": 0.6}
    assert rep["citations"] == {"precision": round(3 / 4, 4), "grounding": round(2 / 3, 4), "supported": 0.75,
                                "cite_correct": None}  # no answer sentence with a citation was measured
    assert rep["ablations"]["vector"]["recall_at_5"] == 0.0
    assert rep["keyword_coverage"] == round((1 + 0 + 1) / 3, 4)


def _result(cid, should, refused, *, cited=0, kw=(0, 0)):
    return CaseResult(id=cid, category="refuse" if should else "answerable", question="q", should_refuse=should,
                      refused=refused, rank=None if should else 1, rank_fulltext=None, rank_vector=None, cited=cited,
                      invalid_cited=0, unsupported=0, keywords_found=kw[0], keywords_total=kw[1], similarity=0.5,
                      coverage=0.5, unknown_terms=[], search_ms=10, ask_ms=20, answer="a")


def test_a_figure_no_case_measures_is_null_not_perfect_nor_zero(tmp_path):
    """Refusal precision and recall of a file where nothing was refused were 0/0 reported as 1.0 (while
    their interval was the no-case [0, 1]), citation figures of no citation 1.0, and keyword coverage
    of no keyword case 0.0 (evalcheck F3). Each is None now: null in the JSON, n/a in the table, left
    out of the history line (a gap in the chart) and passing its threshold check."""
    from docs_rag_pipeline.config import EvalConfig
    from docs_rag_pipeline.evaluation import flat_metrics, print_table, threshold_results, write_results

    answered = summarise("s", [_result("a", False, False, cited=1), _result("b", False, False, cited=1)])
    assert answered["refusal"] == {"precision": None, "recall": None, "accuracy": 1.0}
    assert answered["keyword_coverage"] is None and answered["citations"]["precision"] == 1.0
    refused = summarise("s", [_result("r", True, True)])
    assert refused["citations"] == {"precision": None, "grounding": None, "supported": None, "cite_correct": None}
    assert refused["refusal"] == {"precision": 1.0, "recall": 1.0, "accuracy": 1.0}
    table = print_table(answered)
    assert re.search(r"^refusal precision\s+n/a\s*$", table, re.M) and re.search(r"^keyword coverage\s+n/a\s*$", table, re.M)
    flat = flat_metrics(answered)
    assert "refusal_precision" not in flat and "keyword_coverage" not in flat and flat["refusal_accuracy"] == 1.0
    checks = {name: value for name, value, _ in threshold_results(refused, EvalConfig())}
    assert checks["citation_precision"] is None
    for report in (answered, refused):  # the history line and its chart cope with the gaps
        files = write_results({**report, "cost": {"cost_per_100_calls": 0.0}}, tmp_path)
        assert files["chart"].read_bytes()[:4] == b"\x89PNG"
    assert [set(r) >= {"refusal_accuracy"} for r in _history_rows(files["history"])] == [True, True]




def test_retrieval_over_no_answerable_case_is_null_not_zero(tmp_path):
    """A run with no answerable case (refusals only) reported recall@1, recall@5 and MRR@10 as 0.0 for
    hybrid, the ablations and the baseline, in the table, the JSON, the history line (a drop to zero in
    the chart) and the asset's metadata, with a certain MRR interval [0, 0] (evalreport F1). They are not
    figures: None (null, n/a), left out of the history line, and MRR's interval is the whole range."""
    from docs_rag_pipeline.evaluation import flat_metrics, print_table, retrieval_metrics, write_results

    rep = summarise("s", [_result("r", True, True), _result("q", True, False)])
    none = {"recall_at_1": None, "recall_at_5": None, "mrr_at_10": None}
    assert rep["answerable"] == 0 and rep["retrieval"] == none
    assert rep["ablations"] == {"fulltext": none, "vector": none}
    assert rep["intervals"]["mrr_at_10"] == [0.0, 1.0] and rep["intervals"]["recall_at_1"] == (0.0, 1.0)
    rep["baseline"] = retrieval_metrics([])
    table = print_table(rep)
    for label in ("recall@1", "recall@5", "MRR@10"):
        assert re.search(rf"^{label}\s+n/a\s+n/a\s+n/a\s+n/a\s*$", table, re.M), table
    assert "MRR@10 [0.00, 1.00]" in table
    flat = flat_metrics(rep)
    assert not [k for k in flat if "recall" in k and "refusal" not in k or "mrr" in k], flat
    files = write_results({**rep, "cost": {"cost_per_100_calls": 0.0}}, tmp_path)
    row = _history_rows(files["history"])[-1]
    assert "retrieval_recall_at_5" not in row and "vector_only_mrr_at_10" not in row and row["refusal_accuracy"] == 0.5


def test_each_kind_of_run_has_results_files_of_its_own():
    """A cases file named ``test.jsonl`` (feedback drafts) wrote ``<source>-test-*``, the golden test
    half's files: it replaced that half's latest report and joined its history (evalreport F4). Each
    kind of run (golden, half, cases file, a cases file's half) is named apart now."""
    from docs_rag_pipeline.evaluation import results_label

    runs = [(None, "all"), (None, "test"), (None, "calibration"), ("drafts/test.jsonl", "all"),
            ("x/calibration.jsonl", "all"), ("drafts.jsonl", "all"), ("drafts.jsonl", "test"),
            ("drafts.test.jsonl", "all"), ("drafts-test.jsonl", "all"), ("test.jsonl", "test")]
    labels = [results_label(f, split) for f, split in runs]
    assert len(set(labels)) == len(labels), labels
    assert labels[:3] == ["", "test", "calibration"]  # the golden run and its halves keep their names
    assert labels[3] == "cases.test" and labels[6] == "cases.drafts.test"


def test_calibration_keeps_the_configs_other_refusal_gates():
    """The threshold search scored each grid point with RetrievalConfig(<four values>), every other gate
    at its default: with min_sentence_similarity 0.6 in the config it promised accuracy 1.0 where its
    four values give 0.33 in that config (evalcheck F5). It starts from the config the cases ran with."""
    from docs_rag_pipeline.config import RetrievalConfig
    from docs_rag_pipeline.evaluation import _would_refuse, calibrate_refusal

    def res(cid, should):
        return CaseResult(id=cid, category="refuse" if should else "answerable", question="q", should_refuse=should,
                          refused=True, rank=None, rank_fulltext=None, rank_vector=None, cited=0, invalid_cited=0,
                          unsupported=0, keywords_found=0, keywords_total=0, similarity=0.9 if not should else 0.05,
                          coverage=1.0 if not should else 0.0, unknown_terms=[], search_ms=1, ask_ms=1, answer="",
                          sentence_similarity=0.5)
    results = [res("a", False), res("b", False), res("r", True)]
    config = RetrievalConfig(min_sentence_similarity=0.6)
    cal = calibrate_refusal(results, config)
    four = config.model_copy(update={k: v for k, v in cal.items() if k != "accuracy"})
    assert cal["accuracy"] == round(sum(_would_refuse(r, four) == r.should_refuse for r in results) / 3, 4) == 0.3333
    assert calibrate_refusal(results)["accuracy"] == 1.0  # with the default gates the answerable two pass


def test_a_category_without_answerable_cases_has_no_recall():
    """``by_category`` gave ``refuse`` (and a boundary category of near misses only) recall@1, @5 and
    MRR 0.0 over no case, shown as "0.00" in the asset's table (evalcheck F8). They are None, "n/a"."""
    from docs_rag_pipeline.evaluation import markdown_table

    rep = summarise("s", [_result("a", False, False), _result("r", True, True)])
    assert rep["by_category"]["refuse"] == {"cases": 1, "refusal_accuracy": 1.0, "recall_at_1": None,
                                            "recall_at_5": None, "mrr_at_10": None}
    assert rep["by_category"]["answerable"]["recall_at_1"] == 1.0
    assert "| refuse | 1 | 1.00 | n/a | n/a | n/a |" in markdown_table(rep).splitlines()


def test_the_calibration_thresholds_come_from_the_calibration_half_only():
    """The report's ``calibration`` (values the doc says to copy into the config) was searched on every
    case that ran: the test half with ``--split test``, both halves by default, though thresholds are
    chosen on calibration halves only (evalcheck F9). It is the calibration half's now, or none."""
    from docs_rag_pipeline.config import RetrievalConfig
    from docs_rag_pipeline.evaluation import Case, calibrate_refusal, calibration_report

    def case(cid, should, split):
        return Case(id=cid, question="q", expected_urls=() if should else ("a.md",), expected_keywords=(),
                    should_refuse=should, category="refuse" if should else "answerable", split=split)
    cases = [case("a", False, "calibration"), case("r", True, "calibration"), case("t", False, "test")]
    results = [_result("a", False, False), _result("r", True, True), _result("t", False, True)]
    for r in results:
        r.similarity, r.coverage = (0.05, 0.0) if r.id != "a" else (0.9, 1.0)  # "t" looks like a refusal
    config = RetrievalConfig()
    both = calibration_report(cases, results, config)
    assert both == {"cases": 2, **calibrate_refusal(results[:2], config)} and both["accuracy"] == 1.0
    test_only = calibration_report(cases[2:], results[2:], config)
    assert test_only["cases"] == 0 and "min_similarity" not in test_only

def test_latency_p50_is_the_median_and_p95_interpolates():
    """p50 was the nearest rank, the lower of the two middle values of an even count: 4 cases of 10,
    20, 30 and 1000 ms said p50 20 where the median is 25 (evalcheck F7)."""
    rep = summarise("s", [CaseResult(id=str(i), category="answerable", question="q", should_refuse=False,
                                     refused=False, rank=1, rank_fulltext=1, rank_vector=1, cited=0,
                                     invalid_cited=0, unsupported=0, keywords_found=0, keywords_total=0,
                                     similarity=0.5, coverage=0.5, unknown_terms=[], search_ms=ms, ask_ms=ms * 2,
                                     answer="a") for i, ms in enumerate([30.0, 10.0, 1000.0, 20.0])])
    assert rep["latency_ms"]["search_p50"] == 25.0 and rep["latency_ms"]["ask_p50"] == 50.0
    assert rep["latency_ms"]["search_p95"] == 30.0 + 0.85 * 970.0  # between the 3rd and 4th value

@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval")
    write_docs(root / "docs", GUIDE)
    cfg = write_config(root, extra="""
        eval:
          min_recall_at_5: 0.5
          min_refusal_accuracy: 0.5
          min_citation_precision: 0.9
    """)
    (root / "eval").mkdir()
    (root / "eval" / "guide.jsonl").write_text("\n".join(json.dumps(c) for c in CASES) + "\n")
    with DagsterInstance.ephemeral() as instance:
        materialize_source(cfg, "guide", instance)
        res = materialize([eval_scores], partition_key="guide", instance=instance,
                          resources=build_definitions(config_path=str(cfg)).resources)
        yield root, cfg, res


def test_eval_asset_reports_metrics_checks_and_files(evaluated):
    root, cfg, res = evaluated
    assert res.success
    md = res.asset_materializations_for_node("eval_scores")[0].metadata
    for key in ("retrieval_recall_at_1", "retrieval_recall_at_5", "retrieval_mrr_at_10", "refusal_precision",
                "refusal_recall", "refusal_accuracy", "citations_precision", "citations_grounding",
                "citations_supported", "keyword_coverage", "latency_search_p50_ms", "latency_ask_p95_ms",
                "fulltext_only_recall_at_5", "vector_only_mrr_at_10"):
        assert isinstance(md[key].value, float), key
    assert md["retrieval_recall_at_5"].value == 1.0 and md["refusal_accuracy"].value >= 0.8
    assert md["citations_precision"].value == 1.0
    assert "| answerable |" in md["by_category"].value and "| refuse |" in md["by_category"].value
    # each headline figure with its 95% interval (Wilson; a bootstrap for MRR), which contains it
    iv = md["intervals_95"].value
    assert iv["recall_at_5"][0] <= md["retrieval_recall_at_5"].value <= iv["recall_at_5"][1]
    assert iv["refusal_precision"][0] <= md["refusal_precision"].value <= iv["refusal_precision"][1]
    assert iv["mrr_at_10"][0] <= md["retrieval_mrr_at_10"].value <= iv["mrr_at_10"][1]
    checks = {c.asset_check_key.name: c.passed for c in res.get_asset_check_evaluations()}
    assert checks == {"eval_recall_at_5": True, "eval_refusal_accuracy": True, "eval_citation_precision": True}
    latest = json.loads((root / "eval" / "results" / "guide-latest.json").read_text())
    assert [c["id"] for c in latest["per_case"]] == [c["id"] for c in CASES]
    png = root / "eval" / "results" / "guide-history.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and md["chart_file"].value == str(png)
    # the chart itself is an image in the metadata (a base64 data URI the UI shows), not a path
    assert md["chart"].value.startswith("![eval history: guide](data:image/png;base64,iVBORw0KGgo")


def strict_config(root, cfg, name: str):  # noqa: ANN001, ANN201
    """The same index with one more answerable case whose page does not exist, so recall@5 is
    3/4, below an eval.min_recall_at_5 of 0.8: the config's path."""
    (root / name / "eval").mkdir(parents=True)
    cases = [*CASES, {"id": "nowhere", "question": "How do I configure the frobnicator?",
                      "expected_urls": ["nowhere.md"], "should_refuse": False}]
    (root / name / "eval" / "guide.jsonl").write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    strict = root / name / "docs_rag.yaml"
    strict.write_text(cfg.read_text().replace("min_recall_at_5: 0.5", "min_recall_at_5: 0.8")
                      .replace("path: docs", f"path: {root / 'docs'}"))
    return strict


def test_eval_check_fails_below_threshold(evaluated):
    root, cfg, _ = evaluated
    strict = strict_config(root, cfg, "strict")
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("sources", ["guide"])
        res = materialize([eval_scores], partition_key="guide", instance=instance, raise_on_error=False,
                          resources=build_definitions(config_path=str(strict)).resources)
    checks = {c.asset_check_key.name: c.passed for c in res.get_asset_check_evaluations()}
    assert checks["eval_recall_at_5"] is False and checks["eval_citation_precision"] is True


def _cli(args, cfg, env_extra=None):
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "docs_rag_pipeline", *args], capture_output=True, text=True,
                          env=env, cwd=cfg.parent, timeout=300)


def test_cli_eval_json_and_errors(evaluated):
    root, cfg, _ = evaluated
    out = _cli(["eval", "--source", "guide", "--json", str(root / "report.json"), "--top-k", "5"], cfg)
    assert out.returncode == 0, out.stderr
    assert "recall@5" in out.stdout and "refusal accuracy" in out.stdout
    rep = json.loads((root / "report.json").read_text())
    assert set(rep) >= {"source", "cases", "retrieval", "refusal", "citations", "keyword_coverage", "latency_ms",
                        "ablations", "per_case"}
    assert set(rep["latency_ms"]) == {"search_p50", "search_p95", "ask_p50", "ask_p95"}
    assert set(rep["ablations"]) == {"fulltext", "vector"} and rep["cases"] == len(CASES)
    bad = root / "bad.jsonl"
    bad.write_text('{"id": "x", "question": "q", "should_refuse": true}\n{"id": "y", "should_refuse": false}\n')
    out = _cli(["eval", "--source", "guide", "--cases", str(bad)], cfg)
    assert out.returncode == 2 and "bad.jsonl:2: question" in out.stderr and "Traceback" not in out.stderr
    out = _cli(["eval", "--source", "guide", "--top-k", "0"], cfg)  # ran with eval.top_k without a word
    assert out.returncode == 2 and "--top-k: 0 is not a number of results; give 1 or more" in out.stderr


def test_a_case_whose_expected_page_is_not_indexed_is_named(evaluated):
    """An expected URL with a typo (or of a page moved or removed since the case was written) scored the
    case as a miss without a word: the run names the case and its URL, in the report and on stderr."""
    root, cfg, _ = evaluated
    drafts = root / "typo.jsonl"
    drafts.write_text(json.dumps({**CASES[0], "expected_urls": ["forms/bindings.md"]}) + "\n"
                      + json.dumps({**CASES[1], "expected_urls": [*CASES[1]["expected_urls"], "install.md"]}) + "\n"
                      + json.dumps(CASES[3]) + "\n")
    out = _cli(["eval", "--source", "guide", "--cases", str(drafts), "--json", str(root / "typo.json")], cfg)
    assert out.returncode == 0, out.stderr
    rep = json.loads((root / "typo.json").read_text())
    assert rep["unindexed_expected"] == {"conv": ["https://docs.example.org/forms/bindings.md"]}
    assert rep["retrieval"]["recall_at_5"] == 0.5  # still scored as a miss: the figure is not bent
    warned = [ln for ln in out.stderr.splitlines() if ln.startswith("warning: [guide] 1 case(s) expect a page")]
    assert warned and "conv: https://docs.example.org/forms/bindings.md" in warned[0], out.stderr
    # a case to refuse is scored by its refusal alone: its URL is named, but not as a miss
    drafts.write_text(json.dumps({**CASES[3], "expected_urls": ["bakery.md"]}) + "\n" + json.dumps(CASES[0]) + "\n")
    out = _cli(["eval", "--source", "guide", "--cases", str(drafts), "--json", str(root / "typo.json")], cfg)
    warned = [ln for ln in out.stderr.splitlines() if ln.startswith("warning: [guide] 1 case(s) expect a page")]
    assert warned and "bread: https://docs.example.org/bakery.md" in warned[0], out.stderr
    assert "count as misses" not in warned[0] and "cases to refuse, whose URLs no figure reads" in warned[0], warned[0]
    out = _cli(["eval", "--source", "guide", "--json", str(root / "golden.json")], cfg)
    assert json.loads((root / "golden.json").read_text())["unindexed_expected"] == {}
    assert "expect a page that is not indexed" not in out.stderr


def test_cli_eval_json_with_a_source_without_cases(evaluated):
    root, cfg, _ = evaluated
    two = root / "two.yaml"  # the first source has no eval/alpha.jsonl; guide has cases
    two.write_text(cfg.read_text().replace("sources:\n", "sources:\n  - {name: alpha, kind: local, path: docs}\n"))
    out = _cli(["--config", str(two), "eval", "--json", str(root / "two.json")], cfg)
    assert out.returncode == 0, out.stderr
    assert "[alpha] no cases at" in out.stderr and "skipped" in out.stderr
    rep = json.loads((root / "two.json").read_text())
    assert set(rep) == {"guide"} and rep["guide"]["cases"] == len(CASES)


def test_cli_eval_of_a_source_with_nothing_indexed_is_an_error_not_zeros(evaluated):
    """A source with cases but no ingest would score 0 everywhere and refuse every question, which
    reads like a broken pipeline; the command says what to run instead, and still evaluates the rest."""
    root, cfg, _ = evaluated
    three = root / "three.yaml"
    three.write_text(cfg.read_text().replace("sources:\n", "sources:\n  - {name: beta, kind: local, path: docs}\n"))
    (root / "eval" / "beta.jsonl").write_text((root / "eval" / "guide.jsonl").read_text())
    try:
        out = _cli(["--config", str(three), "eval", "--json", str(root / "three.json")], cfg)
    finally:
        (root / "eval" / "beta.jsonl").unlink()
    assert out.returncode == 2, out.stderr
    assert "error: [beta] nothing is indexed for this source" in out.stderr
    assert "run `docs-rag ingest --source beta` first" in out.stderr and "Traceback" not in out.stderr
    rep = json.loads((root / "three.json").read_text())
    assert set(rep) == {"guide"} and rep["guide"]["retrieval"]["recall_at_5"] == 1.0


def test_a_bad_cases_file_of_a_later_source_stops_eval_before_any_source_runs(evaluated):
    """With several sources, a mistake in a later source's cases file was found only after the earlier
    sources were evaluated: the command stopped there (exit 2), and their ``--json`` report and ``--check``
    result were lost (evalreport F2). Every cases file is read first: a bad one fails before anything runs."""
    root, cfg, _ = evaluated
    four = root / "four.yaml"  # guide (cases fine) first, then gamma, whose file has a duplicate id
    four.write_text(cfg.read_text() + "  - {name: gamma, kind: local, path: docs}\n")
    bad = root / "eval" / "gamma.jsonl"
    bad.write_text('{"id": "a", "question": "q", "should_refuse": true}\n{"id": "a", "question": "r", "should_refuse": true}\n')
    try:
        out = _cli(["--config", str(four), "eval", "--json", str(root / "four.json")], cfg)
    finally:
        bad.unlink()
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert f"{bad}:2: id: duplicate id 'a'" in out.stderr, out.stderr
    assert "[guide]" not in out.stdout and "recall@5" not in out.stdout, out.stdout  # nothing was evaluated
    assert not (root / "four.json").exists()


def test_langsmith_dataset_and_experiment(evaluated):
    root, cfg, _ = evaluated

    class Server(LangSmithServer):
        def reply(self, method, path, body):  # noqa: ANN001, ANN201
            import uuid

            if method == "GET" and "/datasets" in path:
                return []  # no dataset yet
            if method == "POST" and path.startswith("/examples"):
                return [{"id": str(uuid.uuid4())} for _ in json.loads(body)]
            now = "2026-01-01T00:00:00+00:00"
            return {"id": str(uuid.uuid4()), "name": "x", "example_ids": [str(uuid.uuid4()) for _ in CASES],
                    "count": len(CASES), "created_at": now, "modified_at": now, "start_time": now,
                    "tenant_id": str(uuid.uuid4()), "description": None, "data_type": "kv", "reference_dataset_id": str(uuid.uuid4())}

    with Server() as ls:
        out = _cli(["eval", "--source", "guide"], cfg, {"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "k",
                                                         "LANGSMITH_ENDPOINT": ls.url})
        assert out.returncode == 0, out.stderr
        paths = [(m, p.split("?")[0]) for m, p, _ in ls.requests]
        assert ("POST", "/datasets") in paths and ("POST", "/sessions") in paths
        assert any(p.startswith("/examples") for m, p in paths if m == "POST")
        body = b"".join(b for _, _, b in ls.requests)
        assert b"refusal_correct" in body and b"hit_at_5" in body and b"sourdough" in body
    ls2 = LangSmithServer()
    with ls2:
        out = _cli(["eval", "--source", "guide"], cfg, {"LANGSMITH_ENDPOINT": ls2.url})
        assert out.returncode == 0 and ls2.requests == []


def test_ingest_with_eval_exits_non_zero_when_a_check_fails(evaluated):
    root, cfg, _ = evaluated
    strict = strict_config(root, cfg, "strict-cli")
    env = {"DAGSTER_HOME": str(root / "dh")}
    out = _cli(["--config", str(strict), "ingest", "--eval", "--source", "guide"], strict, env)
    assert out.returncode == 1, out.stderr
    assert "check eval_recall_at_5 failed" in out.stderr
    ok = _cli(["--config", str(cfg), "ingest", "--eval", "--source", "guide"], cfg, env)
    assert ok.returncode == 0, ok.stderr
    # the metrics are printed
    assert f"[guide] eval: {len(CASES)} cases" in ok.stdout
    assert "retrieval_recall_at_5" in ok.stdout and "refusal_accuracy" in ok.stdout


def test_refresh_job_runs_eval_when_cases_exist_and_passes_without(evaluated):
    root, cfg, _ = evaluated
    (root / "nocases").mkdir()
    nocases = root / "nocases" / "docs_rag.yaml"
    nocases.write_text(cfg.read_text().replace("path: docs", f"path: {root / 'docs'}"))
    for path, cases in ((cfg, len(CASES)), (nocases, 0)):
        defs = build_definitions(config_path=str(path))
        with DagsterInstance.ephemeral() as instance:
            instance.add_dynamic_partitions("sources", ["guide"])
            res = defs.get_job_def("refresh_source").execute_in_process(partition_key="guide", instance=instance)
            assert res.success
            md = res.asset_materializations_for_node("eval_scores")[0].metadata
            assert md["cases"].value == cases


def test_cite_correct_reads_a_quoted_link_as_its_text():
    """A page of raw Markdown (Black's manual as Debian builds it) holds ``[found here](../style.md)``; the
    extractive answer quotes a link to a target no source gives as its text, ``found here``, which
    cite-correct did not find in the chunk: black's cite-correct fell to 0.94 on answers that quoted
    their chunks word for word. A link is read as its text on both sides, and a character reference as its
    character; a sentence the chunk does not hold still counts as wrong."""
    from docs_rag_pipeline.evaluation import cite_correct
    from docs_rag_pipeline.records import Citation

    chunks = {"c1": "A fuller explanation can be [found here](../style.md#how-black-wraps-lines). Git supports "
                    "[ignoring revisions](https://git-scm.com/docs/git-blame#x(y)) in blame."}
    cites = [Citation(n=1, chunk_id="c1", url="u1", title="Style", snippet="", score=0.1)]
    answer = ("A fuller explanation can be found here. [1]\n\nGit supports [ignoring revisions]"
              "(https://git-scm.com/docs/git-blame#x(y)) in blame. [1]\n\nA fuller explanation is elsewhere. [1]")
    assert cite_correct(answer, cites, chunks.get) == (2, 3)
    # an answer writes a "<" that would open a tag as ``&lt;``, which a Markdown client shows as "<"
    sig = {"c1": "class Blueprint(name, cli_group=<object object>)"}
    assert cite_correct("class Blueprint(name, cli_group=&lt;object object>) [1]", cites, sig.get) == (1, 1)


def test_cite_correct_of_a_model_answer_is_its_support_check():
    """A model paraphrases, so "the cited chunk contains the sentence" scored a faithful model answer
    near 0 (#11: for the LLM path, measure cite-correctness with the support check). ``cite_supported``
    counts a statement correct when every chunk it cites supports it, as the answer's own support check
    does (content words, else embedding similarity), with the real embedding model."""
    from docs_rag_pipeline.embedding import LocalEmbedder
    from docs_rag_pipeline.evaluation import cite_correct, cite_supported
    from docs_rag_pipeline.records import Citation

    chunks = {"c1": "A converter turns the text typed by the user into the value stored in the model, and back.",
              "c2": "The nightly refresh rebuilds the search index at 04:00 UTC."}
    cites = [Citation(n=1, chunk_id="c1", url="u1", title="Binding", snippet="", score=0.1),
             Citation(n=2, chunk_id="c2", url="u2", title="Refresh", snippet="", score=0.1)]
    faithful = ("Converters change what the user typed into the model's stored value and back again [1]. "
                "The search index is rebuilt every night at 04:00 UTC [2].")
    wrong = faithful.replace("[2]", "[1]") + " Dashboards can be exported as PDF files [2]."
    emb = LocalEmbedder()
    assert cite_correct(faithful, cites, chunks.get)[0] == 0  # containment: a paraphrase is never found
    assert cite_supported(faithful, cites, chunks.get, emb.embed) == (2, 2)
    assert cite_supported(wrong, cites, chunks.get, emb.embed) == (1, 3)
    code = "Run it with:\n```console\n$ acme [1]\n```\n[1]"  # a marker inside code is code, not a citation
    assert cite_supported(code, cites, {"c1": "Run it with: $ acme [1]"}.get, emb.embed) == (1, 1)


def test_cli_eval_of_no_case_a_refusal_only_file_or_a_draft_keeps_the_golden_results(evaluated):
    """A ``--split`` that selects no case was scored as a failing run of zeros that replaced
    ``guide-latest.json`` and added a row of zeros to its history; a cases file of refusals only
    reported recall 0.0 and failed ``--check``; a ``--cases`` draft or a half run overwrote the golden
    results. Now: no case is an error (exit 2, nothing written); a metric no case measures passes its
    check; a draft's or a half's results have files of their own."""
    root, cfg, _ = evaluated
    results = root / "eval" / "results"
    golden = (results / "guide-latest.json").read_text()
    history = (results / "guide-history.jsonl").read_text()

    pinned = root / "pinned.jsonl"
    pinned.write_text("\n".join(json.dumps({**c, "split": "calibration"}) for c in CASES) + "\n")
    out = _cli(["--config", str(cfg), "eval", "--cases", str(pinned), "--split", "test"], cfg)
    assert out.returncode == 2, out.stderr
    assert f"error: [guide] no case of {pinned} is in the test half" in out.stderr

    refusals = root / "refusals.jsonl"
    refusals.write_text("\n".join(json.dumps(c) for c in CASES if c["should_refuse"]) + "\n")
    out = _cli(["--config", str(cfg), "eval", "--cases", str(refusals), "--check", "--json", str(root / "r.json")], cfg)
    assert out.returncode == 0, out.stderr
    assert "below threshold" not in out.stderr and json.loads((root / "r.json").read_text())["answerable"] == 0
    assert (results / "guide-cases.refusals-latest.json").is_file()

    out = _cli(["--config", str(cfg), "eval", "--split", "calibration"], cfg)
    assert out.returncode == 0, out.stderr
    assert (results / "guide-calibration-latest.json").is_file()
    assert (results / "guide-latest.json").read_text() == golden
    assert (results / "guide-history.jsonl").read_text() == history

    empty = root / "emptied"
    empty.mkdir(exist_ok=True)
    gone = root / "gone.yaml"  # the folder was emptied (unmounted) since the ingest: --baseline scans it
    gone.write_text(cfg.read_text().replace("path: docs", f"path: {empty}"))
    out = _cli(["--config", str(gone), "eval", "--cases", str(refusals), "--baseline"], cfg)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.startswith("error: [guide] ") or "\nerror: [guide] " in out.stderr, out.stderr


def test_a_full_disk_under_the_results_folder_names_that_folder_not_the_storage(evaluated):
    """The results folder (eval/results beside the cases) on a full disk ended the eval with
    `error: the disk holding the storage folder <storage> is full or failing: [Errno 28] …`: the storage
    had room, and the folder that filled was not named. The line names the results folder now (exit
    status 74 still). Here the run's history file is /dev/full, a real full device."""
    root, cfg, _ = evaluated
    results = root / "eval" / "results"
    cases = root / "full.jsonl"
    cases.write_text("\n".join(json.dumps(c) for c in CASES) + "\n")
    history = results / "guide-cases.full-history.jsonl"
    history.symlink_to("/dev/full")
    try:
        out = _cli(["--config", str(cfg), "eval", "--cases", str(cases)], cfg)
    finally:
        history.unlink()
    assert out.returncode == 74 and "Traceback" not in out.stderr, out.stderr
    assert f"error: the disk holding {results} is full or failing: [Errno 28] No space left on device" in out.stderr
    assert "storage folder" not in out.stderr


def test_an_ingest_while_an_eval_runs_changes_none_of_its_figures(tmp_path, monkeypatch):
    """``docs-rag eval`` (or ``eval_scores``) while an ingest rewrote the source: each case's citations
    were checked against whatever version was newest by then, so a cited chunk replaced in between
    counted as invented (citation precision 1.0 → 0.35, ``--check`` failed). The evaluation now reads
    the version it started on. Here every answer is followed at once by a write that changes the
    cited page's text (so its chunk ids)."""
    from docs_rag_pipeline import evaluation, refresh
    from docs_rag_pipeline.config import load_config
    from docs_rag_pipeline.context import Context

    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    refresh.refresh(Context(load_config(cfg)), "guide")
    cases = [evaluation.Case(id=str(i), question="How do I fix the ZX81_QUANTUM_FLUX import error?",
                             expected_urls=("https://docs.example.org/install.md",), expected_keywords=(),
                             should_refuse=False, category="answerable") for i in range(3)]
    real = evaluation.answer_question
    writes = []

    def answer_then_ingest(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        ans = real(*args, **kwargs)
        page = tmp_path / "docs" / "install.md"
        page.write_text(page.read_text() + f"\n\nEdited {len(writes)}: ZX81_QUANTUM_FLUX again.\n")
        writes.append(refresh.refresh(Context(load_config(cfg)), "guide"))
        return ans

    monkeypatch.setattr(evaluation, "answer_question", answer_then_ingest)
    report = evaluation.evaluate(Context(load_config(cfg)), "guide", cases, top_k=5)
    assert len(writes) == 3 and all(w.pages_changed == 1 for w in writes)
    assert report["citations"]["precision"] == 1.0 and report["citations"]["grounding"] == 1.0, report["citations"]
    assert report["retrieval"]["recall_at_1"] == 1.0


def test_the_baseline_ranks_the_indexed_pages_not_the_source_as_it_is_now(tmp_path):
    """``--baseline`` built its index from a forced scan of the live source (a re-crawl of a web site,
    a git fetch): a page added since the last ingest was found by the baseline only and counted as its
    win. It now reads the indexed pages as a reparse does, and keeps one baseline table per source."""
    import lancedb

    from docs_rag_pipeline import evaluation, refresh
    from docs_rag_pipeline.config import load_config
    from docs_rag_pipeline.context import Context

    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    refresh.refresh(Context(load_config(cfg)), "guide")
    write_docs(tmp_path / "docs", {"upgrade.md": "# Upgrading\n\nTo upgrade the widget run `widget migrate --to 3`.\n"})
    cases = [evaluation.Case(id="new", question="How do I upgrade the widget with migrate?",
                             expected_urls=("https://docs.example.org/upgrade.md",), expected_keywords=(),
                             should_refuse=False, category="answerable"),
             evaluation.Case(id="flux", question="How do I fix the ZX81_QUANTUM_FLUX import error?",
                             expected_urls=("https://docs.example.org/install.md",), expected_keywords=(),
                             should_refuse=False, category="answerable")]
    report = evaluation.evaluate(Context(load_config(cfg)), "guide", cases, top_k=5, baseline=True)
    ranks = {c["id"]: (c["rank"], c["rank_baseline"]) for c in report["per_case"]}
    assert ranks["new"] == (None, None) and ranks["flux"][1] == 1, ranks

    page = tmp_path / "docs" / "install.md"
    page.write_text(page.read_text() + "\n\nOne more line.\n")
    refresh.refresh(Context(load_config(cfg)), "guide")
    evaluation.evaluate(Context(load_config(cfg)), "guide", cases, top_k=5, baseline=True)
    db = lancedb.connect(str(tmp_path / "data" / "eval_baseline"))
    names = db.list_tables()
    assert len([n for n in getattr(names, "tables", names) if n.startswith("guide_")]) == 1


def _evaluate_one_with_the_last_source_cited(tmp_path, docs: dict[str, str], question: str, expected: str, *,
                                              top_k: int, extra: str = "") -> tuple[dict, list[dict]]:
    """One answerable case evaluated with an LLM (fake_llm's ``last`` model: it cites the last source it
    was given): the report and the requests the model got."""
    from docs_rag_pipeline import evaluation, refresh
    from docs_rag_pipeline.config import load_config
    from docs_rag_pipeline.context import Context

    from .fake_llm import ChatServer

    write_docs(tmp_path / "docs", docs)
    with ChatServer() as srv:
        cfg = write_config(tmp_path, extra=f"""
            {extra}
            llm: {{provider: openai, model: last, base_url: {srv.url}, timeout_seconds: 5, context_tokens: 4000}}
        """)
        refresh.refresh(Context(load_config(cfg)), "guide")
        cases = [evaluation.Case(id="q", question=question, expected_urls=(expected,), expected_keywords=(),
                                 should_refuse=False, category="answerable")]
        report = evaluation.evaluate(Context(load_config(cfg)), "guide", cases, top_k=top_k)
        return report, list(srv.requests)


def test_a_citation_of_a_chunk_ask_was_given_beyond_the_top_10_is_not_invented(tmp_path):
    """With ``--top-k`` above 10, citations were checked against the top 10 of a separate search, so a
    model citing the 12th chunk it was given counted as inventing it (citation precision 0.6 and
    ``--check`` failed with no invented citation: evalcheck F4). They are checked against what ask had."""
    topics = ["archives", "levels", "threads", "memory", "cache", "plugins", "proxies", "tokens", "mirrors",
              "checksums", "signals", "locales", "uploads", "downloads"]
    report, requests = _evaluate_one_with_the_last_source_cited(
        tmp_path, {f"t{i}.md": f"# Frob {t}\n\nThe frob tool logs every {t} event to frob.log.\n" for i, t in enumerate(topics)},
        "Which events does the frob tool log to frob.log?", "t0.md", top_k=12, extra="retrieval: {candidates: 100}")
    given = [re.findall(r"^\[(\d+)\] ", r["messages"][-1]["content"], re.M) for r in requests]
    assert given and given[-1][-1] == "12", given  # the model cited source 12 of the 12 it was given
    case = report["per_case"][0]
    assert not case["refused"] and case["cited"] == 1, case
    assert case["invalid_cited"] == 0 and report["citations"]["precision"] == 1.0, report["citations"]


def test_a_citation_of_the_parent_section_a_prompt_showed_is_not_invented(tmp_path):
    """A thin chunk's parent section is a source of its own in an LLM's prompt (build_prompt), so a model
    may cite it; the check against "the chunks ask was given" must count it as given, not invented."""
    report, requests = _evaluate_one_with_the_last_source_cited(
        tmp_path, {"frob.md": "# Frob\n\nThe frob tool reads its settings from frob.toml in the project folder, and "
                              "writes every event it handles to frob.log, one line per event, with the time and the "
                              "event's name.\n\n## Rotation\n\nfrob.log rotates daily.\n"},
        "How often does frob.log rotate?", "frob.md", top_k=1)
    prompt = requests[-1]["messages"][-1]["content"]
    assert "rotates daily" in prompt and "frob.toml" in prompt, prompt  # the hit, then its parent as source 2
    case = report["per_case"][0]
    assert not case["refused"] and case["cited"] == 1, case
    assert case["invalid_cited"] == 0 and report["citations"]["precision"] == 1.0, report["citations"]


def test_a_citation_is_checked_against_ask_s_own_search_with_a_small_candidate_pool(tmp_path):
    """With ``retrieval.candidates`` below 40, ask searched with a pool of max(candidates, 4 * top_k) while
    the eval checked its citations against the first top_k of its own top-10 search (a pool of 40), another
    ranking: a citation of a chunk ask was given counted as invented (citation precision and grounding 0.0,
    the citation gate failed: evalreport F5). The eval checks against ask's own search now."""
    from docs_rag_pipeline import evaluation, refresh
    from docs_rag_pipeline.answering.service import answer_question
    from docs_rag_pipeline.config import load_config
    from docs_rag_pipeline.context import Context
    from docs_rag_pipeline.retrieval import search

    secs = "\n\n".join(f"## Widget colour option {i}\n\n" + " ".join(
        f"The widget colour option {i} part {j} changes the widget colour settings of panel {i}." for j in range(20))
        for i in range(20))
    write_docs(tmp_path / "docs", {"a.md": "# Widget colour settings\n\n" + secs + "\n",
                                   "b.md": "# Widget colour themes\n\nA theme file changes the widget colour "
                                           "settings of the whole application.\n"})
    cfg = write_config(tmp_path, extra="retrieval: {candidates: 20}")
    refresh.refresh(Context(load_config(cfg)), "guide")
    question = "How do I change the widget colour settings?"
    ctx = Context(load_config(cfg))
    given = {h.chunk_id for h in search(ctx, question, top_k=5, source="guide")}
    assert given != {h.chunk_id for h in search(ctx, question, top_k=10, source="guide")[:5]}  # the two rankings differ
    cited = [c.chunk_id for c in answer_question(ctx, question, top_k=5, source="guide").citations]
    assert cited and set(cited) <= given, (cited, given)
    case = evaluation.Case(id="c1", question=question, expected_urls=("https://docs.example.org/b.md",),
                           expected_keywords=(), should_refuse=False, category="answerable")
    report = evaluation.evaluate(Context(load_config(cfg)), "guide", [case], top_k=5)
    assert report["per_case"][0]["invalid_cited"] == 0, report["per_case"][0]
    assert report["citations"]["precision"] == 1.0 and report["citations"]["grounding"] == 1.0, report["citations"]
