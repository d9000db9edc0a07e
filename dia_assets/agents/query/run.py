"""One question end to end: open the warehouse, link the schema, run the loop, write the
artifacts `queries/<id>/` (query.sql, result.parquet, trace.json, answer.md). Used by the
`query_result` asset, `dia ask` and the benchmark."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dia_assets.agents.charts import (
    ChartModel,
    chart_for_result,
    chart_model_from_env,
    workspace_semantic_types,
)
from dia_assets.agents.query.dialects import Database, QueryOutput, open_database
from dia_assets.agents.query.loop import AgentRun, AgentSettings, AskUser, QueryAgent
from dia_assets.agents.query.memory import QueryMemory
from dia_assets.agents.query.policies import PreviousAnswer
from dia_assets.agents.query.questions import (  # noqa: F401 - re-exported
    default_questions_path,
    load_questions,
    markdown_table,
    slug,
)
from dia_assets.agents.query.schema import SchemaIndex
from dia_assets.contracts.chart import ChartSpec
from dia_assets.contracts.query_result import Clarification, QueryResult
from dia_assets.platform.model.base import ChatFn
from dia_assets.platform.model.errors import NO_MODEL_MESSAGE
from dia_assets.platform.model.litellm import litellm_chat
from dia_assets.platform.settings import get_settings
from dia_assets.platform.workspace import QueryFiles, Workspace

_INDEX_CACHE: dict[tuple[str, float], SchemaIndex] = {}


QUESTION_ID = re.compile(r"[A-Za-z0-9_-]{1,80}")


def checked_question_id(question_id: str) -> str:
    """A question id names its folder under queries/: anything but a plain name could
    reach outside it (`../x`), so every caller (CLI, MCP, Dagster) goes through here."""
    if not QUESTION_ID.fullmatch(question_id):
        raise ValueError(f"question id must be 1-80 letters, digits, '_' or '-' (got {question_id[:100]!r})")
    return question_id


def schema_index(db: Database, manifest_path: str | Path | None = None) -> SchemaIndex:
    """Built once per warehouse file version and reused across questions."""
    key = (db.location, _mtime(db.location))
    if key[1] and key in _INDEX_CACHE:
        return _INDEX_CACHE[key]
    index = SchemaIndex.build(db, manifest=SchemaIndex.load_manifest(manifest_path))
    if key[1]:
        _INDEX_CACHE[key] = index
    return index


def _mtime(location: str) -> float:
    try:
        return Path(location).stat().st_mtime
    except OSError:
        return 0.0


def previous_answer(workspace: str | Path, question_id: str) -> PreviousAnswer | None:
    """The accepted SQL of an earlier question, from its queries/<id>/result.json."""
    path = Workspace(workspace).query(checked_question_id(question_id)).result
    if not path.exists():
        return None
    result = QueryResult.read(path)
    if result.status != "answered" or not result.sql:
        return None
    return PreviousAnswer(result.question, result.sql)


def no_model_result(question_id: str, question: str) -> QueryResult:
    return QueryResult(question_id=question_id, question=question, status="no_model", message=NO_MODEL_MESSAGE)


def answer_question(
    question: str,
    warehouse: str | Path,
    *,
    question_id: str | None = None,
    model: str | None = None,
    chat: ChatFn | None = None,
    memory: QueryMemory | None = None,
    manifest_path: str | Path | None = None,
    workspace: str | Path | None = None,
    ask_user: AskUser | None = None,
    allow_writes: bool = False,
    previous: PreviousAnswer | None = None,
    clarifications: list[Clarification] | None = None,
    settings: AgentSettings | None = None,
    chart_model: ChartModel | None = None,
    privacy: str | None = None,
    catalog_link: Callable[[str], list[str]] | None = None,
    agent_factory: Callable[..., QueryAgent] = QueryAgent,
) -> tuple[QueryResult, AgentRun | None]:
    """Answer one question; writes artifacts when `workspace` is given. `chart_model` is the
    optional model pass over the chart (default `DIA_CHART_MODEL`, unset = rules only);
    `privacy` overrides DIA_PRIVACY. `agent_factory` builds the agent over (db, index, chat)
    (agents/analysis/auto.py passes one that can also run pipelines)."""
    qid = checked_question_id(question_id) if question_id is not None else slug(question)
    if chat is None:
        model = model or get_settings().model
        if not model:
            result = no_model_result(qid, question)
            if workspace:
                write_artifacts(result, None, None, Workspace(workspace).query(qid).folder)
            return result, None
        chat = litellm_chat(model)
    db = open_database(warehouse)
    try:
        index = schema_index(db, manifest_path)
        agent = agent_factory(db, index, chat, memory=memory, settings=settings,
                              ask_user=ask_user, allow_writes=allow_writes, privacy=privacy,
                              catalog_link=catalog_link)
        run = agent.answer(question, qid, previous=previous, known_clarifications=clarifications)
    finally:
        db.close()
    if workspace:
        write_artifacts(run.result, run.output, run.trace, Workspace(workspace).query(qid).folder,
                        chart_model=chart_model if chart_model is not None else chart_model_from_env())
    return run.result, run


def write_artifacts(result: QueryResult, output: QueryOutput | None, trace: dict[str, Any] | None,
                    folder: Path, chart_model: ChartModel | None = None) -> QueryResult:
    folder.mkdir(parents=True, exist_ok=True)
    files = QueryFiles(folder)
    paths = {"answer": files.answer, "result_json": files.result}
    if result.sql:
        paths["sql"] = files.sql
        paths["sql"].write_text(result.sql.rstrip() + ";\n", encoding="utf-8")
    if output is not None and output.columns:
        paths["parquet"] = files.parquet
        _write_parquet(output, paths["parquet"])
    if result.status == "answered" and output is not None and output.columns:
        paths.update(_write_chart(result, output, trace, folder, chart_model))
    if trace is not None:
        paths["trace"] = files.trace
        paths["trace"].write_text(json.dumps(trace, indent=2, default=str), encoding="utf-8")
    result.artifacts = {k: str(v) for k, v in paths.items()}
    paths["answer"].write_text(render_answer(result), encoding="utf-8")
    paths["result_json"].write_text(result.to_json(), encoding="utf-8")
    return result


def _write_chart(result: QueryResult, output: QueryOutput, trace: dict[str, Any] | None, folder: Path,
                 chart_model: ChartModel | None) -> dict[str, Path]:
    """The Visualization agent: chart.json (+ chart.png, chart.svg unless a table fits best).
    A chart is an aid: when it cannot be made the answer stands, with a warning."""
    usage: list[dict[str, Any]] = []
    try:
        chart = chart_for_result(result.question, output.columns, output.rows, folder,
                                 model=chart_model, privacy=result.privacy, usage=usage, sql=result.sql,
                                 semantic_types=workspace_semantic_types(result.lineage, folder.parent.parent))
    except Exception as err:  # noqa: BLE001 - rendering must not cost the answer
        result.warnings.append(f"chart not made: {type(err).__name__}: {err}"[:300])
        return {}
    for call in usage:
        result.tokens.add(call)
    if trace is not None:
        trace["chart"] = {"spec": chart.model_dump(mode="json"), "model_calls": usage}
    result.chart = chart
    result.warnings += [f"chart: {w}" for w in chart.warnings]
    out = {"chart_json": QueryFiles(folder).chart}
    out.update({f"chart_{kind}": Path(path) for kind, path in chart.files.items()})
    return out


def _write_parquet(output: QueryOutput, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = _unique(output.columns)
    columns = list(zip(*output.rows, strict=True)) if output.rows else [[] for _ in names]
    arrays = []
    for col in columns:
        try:
            arrays.append(pa.array(list(col)))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays.append(pa.array([None if v is None else str(v) for v in col], type=pa.string()))
    pq.write_table(pa.table(dict(zip(names, arrays, strict=True))), path)


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}_{seen[n]}")
    return out


def chart_markdown(chart: ChartSpec, image: str = "chart.png") -> list[str]:
    """answer.md lines for a chart: the image (beside answer.md) and why it was chosen."""
    by = "the model" if chart.chosen_by == "model" else "the rules"
    lines = [f"![{chart.kind} chart]({image})", ""] if "png" in chart.files else []
    lines.append(f"- {chart.kind.replace('_', ' ')} chosen by {by}: {chart.reason}")
    if chart.chosen_by == "model":
        lines.append(f"- the rules chose {chart.rule_kind.replace('_', ' ')}")
    if chart.override_refused:
        lines.append(f"- a model's proposal was not taken: {chart.override_refused}")
    return lines


def render_answer(result: QueryResult) -> str:
    lines = [f"# {result.question}", "", f"- status: **{result.status}**"]
    if result.message:
        lines.append(f"- {result.message}")
    lines += [f"- warning: {w}" for w in result.warnings]
    if result.status == "no_model":
        return "\n".join(lines) + "\n"
    lines += [f"- dialect: {result.dialect}; attempts: {result.attempts}; rows: {result.row_count}",
              f"- tokens: {result.tokens.total_tokens} (cost USD {result.tokens.cost_usd:.4f}); "
              f"latency {result.latency_s:.2f} s, agent overhead {result.overhead_s:.3f} s"]
    if result.contract:
        from dia_assets.agents.query.contract import describe_contract

        lines.append(f"- contract: {describe_contract(result.contract)}")
    if result.answer:
        lines += ["", result.answer]
    if result.sql:
        lines += ["", "## SQL", "", "```sql", result.sql.rstrip(), "```"]
    if result.chart is not None:
        lines += ["", "## Chart", ""] + chart_markdown(result.chart)
    if result.preview:
        lines += ["", "## Result (preview)", "", markdown_table(result.columns, result.preview)]
    if result.verification.checks or result.verification.unverified:
        lines += ["", "## Verification", ""]
        lines += [f"- {'PASS' if c.passed else 'FAIL'} {c.name}: {c.detail}" for c in result.verification.checks]
        lines += [f"- NOT VERIFIED {u}" for u in result.verification.unverified]
    if result.clarifications:
        lines += ["", "## Clarifications", ""]
        lines += [f"- {c.question} -> {c.answer or '(no answer)'}" for c in result.clarifications]
    if result.memory_used:
        lines += ["", "## Memory", ""]
        lines += [f"- [{m.id}] {m.title}: {'used' if m.verified else 'refused'} ({m.detail})" for m in result.memory_used]
    return "\n".join(lines) + "\n"
