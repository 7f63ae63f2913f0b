"""The ``doc_gaps`` asset: refused and low-confidence questions from the question log, clustered and
named, per source (see docs/dagster.md#doc-gaps).

The question log is written by the query path (every ``ask``: HTTP, MCP, CLI), not by Dagster, so it
is declared as an *external* asset (``question_log``, an :class:`AssetSpec` without a materialize
function): the lineage graph shows where ``doc_gaps`` reads from, and no run ever tries to build it.
It is not partitioned (one log for all sources); ``doc_gaps`` is partitioned by source and reads the
questions asked of that source or of all sources.
"""

from dagster import AssetExecutionContext, AssetSpec, MaterializeResult, MetadataValue, asset

from .. import feedback, gaps
from .partitions import sources_partitions
from .resources import DocsRagResource

question_log = AssetSpec("question_log", group_name="feedback", kinds={"sqlite"},
                         description="Every ask (question, refused, confidence signals, cited pages, trace id, "
                                     "time) in <storage>/feedback.sqlite, written by the query path "
                                     "(api.log_questions). External: not materialized by Dagster.")


@asset(partitions_def=sources_partitions, group_name="feedback", deps=[question_log], kinds={"python"},
       description="Coverage gaps: refused and low-confidence questions clustered by embedding, each cluster "
                   "named by its distinctive terms, with counts and examples.")
def doc_gaps(context: AssetExecutionContext, docs_rag: DocsRagResource) -> MaterializeResult:
    ctx = docs_rag.context()
    source = context.partition_key
    rows, left_out = feedback.gap_questions(ctx.config, source=source)
    if rows.skipped:
        context.log.warning(f"[GAPS] {source}: {rows.skipped_note(ctx.config)}")
    report = gaps.gap_report(rows, ctx.embedder.embed)
    table = gaps.markdown_table(report, left_out=left_out)
    context.log.info(f"[GAPS] {source}: {len(rows)} questions ({left_out} older left out), {len(report)} clusters\n"
                     f"{table}")
    chart = gaps.png_markdown(gaps.chart_png(report, title=f"doc gaps: {source}"), f"doc gaps: {source}")
    return MaterializeResult(metadata={
        "questions": len(rows),
        "questions_left_out": left_out,
        "clusters": len(report),
        "gaps": MetadataValue.md(table),
        "chart": MetadataValue.md(chart),
        "report": MetadataValue.json(report),
    })
