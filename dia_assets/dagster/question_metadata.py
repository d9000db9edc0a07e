"""What a question asset (`query_result`, `analysis_result`) records about one answer: its
metadata (SQL, contract, verification, preview, chart, reads and column lineage), the pipeline's
steps when one ran, and the `answered` check. Shared by both assets, so neither imports the other."""

from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetKey,
    MetadataValue,
    TableColumn,
    TableColumnDep,
    TableColumnLineage,
    TableSchema,
)

from dia_assets.agents.query.questions import markdown_table
from dia_assets.dagster.question_outcomes import ANSWERED_CHECK
from dia_assets.platform import markdown

if TYPE_CHECKING:
    from dia_assets.contracts.analysis_result import AnalysisResult
    from dia_assets.contracts.query_result import QueryResult



def answered_check(result: "QueryResult", asset_key: AssetKey, workspace: Path | None = None) -> AssetCheckResult:
    """An unanswered question is not a success: the check fails and says why. Nor is an answer
    from a warehouse the last build could not replace (the workspace's state is STALE): it
    answers from data that is no longer the current data."""
    from dia_assets.agents.schema_creator.state import stale_reason

    stale = stale_reason(workspace) if workspace is not None else None
    answered = result.status == "answered" and not stale
    head = f"STALE warehouse, the answer is from old data: {stale}. " if stale else ""
    return AssetCheckResult(
        asset_key=asset_key, check_name=ANSWERED_CHECK, passed=answered, severity=AssetCheckSeverity.ERROR,
        description=f"{head}{result.status}: {result.message}"[:2000],
        metadata={"status": result.status, "attempts": MetadataValue.int(result.attempts),
                  "rows": MetadataValue.int(result.row_count or 0)},
    )


def result_metadata(result: "QueryResult") -> dict[str, Any]:
    checks = markdown.table(["check", "passed", "detail"],
                            [[c.name, "yes" if c.passed else "NO", c.detail] for c in result.verification.checks])
    meta: dict[str, Any] = {
        "status": result.status,
        "question": result.question,
        "message": result.message,
        "sql": MetadataValue.md(f"```sql\n{result.sql or ''}\n```"),
        "contract": MetadataValue.json(result.contract.model_dump() if result.contract else {}),
        "verification_passed": result.verification.passed,
        "verification_checks": MetadataValue.md(checks),
        "attempts": result.attempts,
        "dagster/row_count": result.row_count,
        "preview": MetadataValue.md(markdown_table(result.columns, result.preview) or "(no rows)"),
        "tokens": MetadataValue.json(result.tokens.model_dump()),
        "total_tokens": result.tokens.total_tokens,
        "cost_usd": result.tokens.cost_usd,
        "latency_s": result.latency_s,
        "agent_overhead_s": result.overhead_s,
        "memory_used": MetadataValue.json([m.model_dump() for m in result.memory_used]),
        "lessons_written": len(result.lessons_written),
        "dialect": result.dialect,
        "privacy": result.privacy,
    }
    if result.chart is not None:
        from dia_assets.agents.charts.render import inline_markdown

        meta["chart"] = MetadataValue.md(inline_markdown(result.chart))
        meta["chart_kind"] = result.chart.kind
    if result.warnings:
        meta["warnings"] = MetadataValue.md("\n".join(f"- {w}" for w in result.warnings))
    for name, path in result.artifacts.items():
        meta[f"path/{name}"] = MetadataValue.path(path)
    if result.columns:
        meta["dagster/column_schema"] = TableSchema(columns=[TableColumn(name=c) for c in result.columns])
    if result.reads:  # what the SQL read anywhere (lineage audit: `dia lineage`, `lineage_report`)
        meta["dia/tables_read"] = MetadataValue.json(result.reads)
        meta["dia/columns_read"] = MetadataValue.md(
            "\n".join(f"- `{t}`: {', '.join(cols) or '(rows only)'}" for t, cols in result.reads.items()))
    if result.lineage:
        deps = {out: [lineage_dep(src) for src in srcs] for out, srcs in result.lineage.items() if srcs}
        if deps:
            meta["dagster/column_lineage"] = TableColumnLineage(deps_by_column=deps)
    return meta


def lineage_dep(source: str) -> TableColumnDep:
    """`table.column` read by an answer -> that column of the `warehouse/<table>` asset."""
    table, _, column = source.rpartition(".")
    return TableColumnDep(asset_key=AssetKey(["warehouse", table]) if table else AssetKey("warehouse"),
                          column_name=column or source)


def _steps_md(result: "AnalysisResult") -> str:
    lines = ["| # | op | output | rows | stage mix | calls | cost USD |", "|---|---|---|---|---|---|---|"]
    for r in result.steps:
        op = r.operator or {}
        lines.append(f"| {r.position} | {r.step.op} | {r.output} | {r.rows} | {op.get('stage_mix', '')} "
                     f"| {op.get('model_calls', '')} | {op.get('cost_usd', '')} |")
    return "\n".join(lines)


def pipeline_metadata(result: "AnalysisResult") -> dict[str, Any]:
    """What a pipeline did, for `analysis_result` and for a `query_result` whose agent ran one."""
    q = result.query
    meta: dict[str, Any] = {
        "pipeline_steps": MetadataValue.md(_steps_md(result) if result.steps else "(no pipeline: SQL only)"),
        "tables_used": MetadataValue.json(result.warehouse_tables_used),
        "operators_used": MetadataValue.json(result.operators_used),
        "stage_mix": MetadataValue.json(result.stage_mix),
        "semantic_model_calls": result.model_calls,
        "semantic_cost_usd": result.semantic_cost_usd,
        "optimizations": MetadataValue.md("\n".join(f"- {n}" for n in result.optimizations) or "none"),
        "preview": MetadataValue.md(markdown_table(q.columns, q.preview) or "(no rows)"),
    }
    for name, path in result.artifacts.items():
        meta[f"path/{name}"] = MetadataValue.path(path)
    return meta
