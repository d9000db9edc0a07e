"""Chart a stored answer again, without any model: `dia chart QUESTION_ID`.

Every answer (`dia ask`, the `query_result` asset) leaves `queries/<id>/result.json` (question,
SQL, column lineage) and `result.parquet` (all result rows). The rules chart them as they would
a fresh result (`choose.rule_chart`, the same dressing), so a chart improves with the rules
and never needs a model. It lives with the query agent because it rewrites the query agent's
stored answer (result.json, answer.md): the charts agent draws, and knows nothing of answers on
disk, so charts never imports query (tools/layers.py COMPOSES: query -> charts).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dia_assets.agents.charts import (
    choose_chart,
    render_chart,
    workspace_semantic_types,
    write_chart_file,
)
from dia_assets.agents.query.run import checked_question_id, render_answer
from dia_assets.contracts.chart import ChartSpec
from dia_assets.contracts.query_result import QueryResult
from dia_assets.platform.workspace import QueryFiles, Workspace


class StoredAnswerError(LookupError):
    """No stored answer (or no stored rows) to chart; the message says which and how to fix it."""


def saved_ids(workspace: Path) -> list[str]:
    return [p.parent.name for p in Workspace(workspace).saved_answers()]


def stored_rows(folder: Path, result: QueryResult) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The answer's columns and every row, from its result.parquet (DuckDB keeps the types:
    dates stay dates, decimals decimals)."""
    import duckdb

    path = QueryFiles(folder).parquet
    if not path.exists():
        raise StoredAnswerError(f"answer {folder.name!r} has no stored rows ({path} is missing; status "
                                f"{result.status})")
    con = duckdb.connect()
    try:
        cur = con.execute("SELECT * FROM read_parquet(?)", [str(path)])
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()
    finally:
        con.close()
    # result.parquet makes repeated names unique (x, x_2); result.json keeps the names as answered
    columns = result.columns if len(result.columns) == len(names) else names
    return columns, rows


def chart_stored(workspace: str | Path, question_id: str, output: str | Path | None = None) -> ChartSpec:
    """Chart `queries/<question_id>/` by the rules. Without `output` the chart files in the
    answer's folder are replaced (and result.json, answer.md updated to match); with it, one
    file is written there (.png, .svg, .html or .json) and the folder is left as it was."""
    ws = Path(workspace)
    files = Workspace(ws).query(checked_question_id(question_id))
    folder = files.folder
    if not files.result.exists():
        known = ", ".join(saved_ids(ws)) or "none"
        raise StoredAnswerError(f"no saved answer {question_id!r} under {Workspace(ws).queries_dir} (saved: {known})")
    result = QueryResult.read(files.result)
    columns, rows = stored_rows(folder, result)
    spec = choose_chart(result.question, columns, rows, model=None, privacy=result.privacy, sql=result.sql,
                        semantic_types=workspace_semantic_types(result.lineage, ws))
    if output is not None:
        write_chart_file(spec, columns, rows, output)
        return spec.model_copy(update={"files": {Path(output).suffix.lstrip(".").lower(): str(output)}})
    done = render_chart(spec, columns, rows, folder)
    result.chart = done
    for kind in ("png", "svg"):
        result.artifacts.pop(f"chart_{kind}", None)
    result.artifacts.update({"chart_json": str(files.chart)}
                            | {f"chart_{k}": v for k, v in done.files.items()})
    files.answer.write_text(render_answer(result), encoding="utf-8")
    result.write(files.result)
    return done
