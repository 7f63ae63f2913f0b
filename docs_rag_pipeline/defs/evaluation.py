"""The ``eval_scores`` asset: golden cases through the real search and ask, metrics as metadata,
asset checks with thresholds from the config."""

import time

from dagster import (AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, AssetExecutionContext, MaterializeResult,
                     MetadataValue, asset)

from .. import evaluation
from .assets import lancedb_chunks
from .partitions import sources_partitions
from .resources import DocsRagResource

CHECKS = evaluation.THRESHOLD_CHECKS


def _chart_md(path, source: str) -> str:  # noqa: ANN001
    """The history chart as an image in the metadata (a base64 data URI, not a path)."""
    from ..gaps import png_markdown

    return png_markdown(path.read_bytes(), f"eval history: {source}")


@asset(partitions_def=sources_partitions, group_name="evaluation", deps=[lancedb_chunks], kinds={"python"},
       check_specs=[AssetCheckSpec(f"eval_{name}", asset="eval_scores",
                                   description=f"{name.replace('_', ' ')} stays above its threshold (config eval.)")
                    for name in CHECKS],
       description="Golden cases (eval/<source>.jsonl) through search and ask: retrieval, refusal, citation and "
                   "keyword metrics, with full-text-only and vector-only ablations.")
def eval_scores(context: AssetExecutionContext, docs_rag: DocsRagResource):
    ctx = docs_rag.context()
    source = context.partition_key
    path = evaluation.cases_path(ctx.config, source)
    if not path.is_file():
        context.log.warning(f"no golden cases at {path}; write some to evaluate source {source!r}")
        yield MaterializeResult(metadata={"cases": 0, "cases_file": str(path)})
        for name in CHECKS:
            yield AssetCheckResult(check_name=f"eval_{name}", passed=True, severity=AssetCheckSeverity.WARN,
                                   metadata={"skipped": "no cases file"})
        return
    t0 = time.perf_counter()
    cases = evaluation.load_cases(path, root_url=evaluation.source_root_url(ctx.config.source(source)))
    report = evaluation.evaluate(ctx, source, cases, top_k=ctx.config.eval.top_k)
    files = evaluation.write_results(report, evaluation.results_dir(ctx.config))
    project = evaluation.upload_to_langsmith(report, cases)
    context.log.info(f"[EVAL] {source}: {len(cases)} cases\n{evaluation.print_table(report)}")
    unknown = evaluation.unindexed_warning(report)
    if unknown:
        context.log.warning(f"[EVAL] {source}: {unknown}")
    yield MaterializeResult(metadata={
        **evaluation.flat_metrics(report),
        "cases": len(cases),
        "cases_expecting_unindexed_pages": MetadataValue.json(report["unindexed_expected"]),
        "by_category": MetadataValue.md(evaluation.markdown_table(report)),
        "calibrated_refusal": MetadataValue.json(report["calibration"]),
        "intervals_95": MetadataValue.json(report["intervals"]),
        "results": MetadataValue.path(str(files["latest"])),
        "chart": MetadataValue.md(_chart_md(files["chart"], source)),
        "chart_file": MetadataValue.path(str(files["chart"])),
        "langsmith_experiment": project or "not configured",
        "seconds": round(time.perf_counter() - t0, 3),
    })
    for name, value, threshold in evaluation.threshold_results(report, ctx.config.eval):
        yield AssetCheckResult(check_name=f"eval_{name}", passed=value is None or value >= threshold,
                               severity=AssetCheckSeverity.ERROR,
                               metadata={"value": value if value is not None else "no case measures it",
                                         "threshold": threshold})
