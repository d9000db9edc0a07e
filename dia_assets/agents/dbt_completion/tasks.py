"""The Spider2-DBT task layout (xlang-ai/Spider2, `spider2-dbt/`), read as the benchmark lays it out:

    examples/spider2-dbt.jsonl                  {"instance_id", "instruction", "type": "DBT"} a line
    examples/<instance_id>/                     the dbt project to complete, with its DuckDB file
    evaluation_suite/gold/spider2_eval.jsonl    {"instance_id", "evaluation": {"func": "duckdb_match",
                                                 "parameters": {gold, condition_tabs, condition_cols,
                                                 ignore_orders}}}
    evaluation_suite/gold/<instance_id>/<gold>  the gold DuckDB file

Ours add one folder the benchmark does not have, `gold/<instance_id>/solution/`: the gold model
files by their path in the project, which the oracle model writes (a plumbing check).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from dia_assets.agents.dbt_completion.scoring import MatchSpec

TASKS_FILE = "spider2-dbt.jsonl"
EVAL_FILE = "spider2_eval.jsonl"


@dataclass(frozen=True)
class DbtTask:
    instance_id: str
    instruction: str
    project: Path  # the dbt project folder as handed to the agent (never written)
    gold_dir: Path
    spec: MatchSpec

    @property
    def gold_db(self) -> Path:
        return self.gold_dir / self.spec.gold

    @property
    def solution(self) -> Path:
        return self.gold_dir / "solution"

    def project_db(self) -> Path:
        """The project's DuckDB file: the one named like the gold, else the only one there."""
        named = self.project / self.spec.gold
        if named.is_file():
            return named
        found = sorted(self.project.glob("*.duckdb"))
        if len(found) != 1:
            raise ValueError(f"{self.project}: expected one .duckdb file, found {len(found)}")
        return found[0]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def tasks_file(path: Path) -> Path | None:
    """`spider2-dbt.jsonl` itself, or found in PATH or PATH/examples; None if not this layout."""
    for candidate in (path, path / TASKS_FILE, path / "examples" / TASKS_FILE):
        if candidate.is_file() and candidate.name == TASKS_FILE:
            return candidate
    return None


def load_tasks(path: str | Path, gold: str | Path | None = None, limit: int | None = None) -> list[DbtTask]:
    """The DBT instances under `path` (the file, the examples folder or the spider2-dbt folder)
    with their gold (default: `evaluation_suite/gold` beside `examples/`)."""
    found = tasks_file(Path(path))
    if found is None:
        raise ValueError(f"{path}: no {TASKS_FILE}")
    examples = found.parent
    gold_root = Path(gold) if gold else examples.parent / "evaluation_suite" / "gold"
    evals = {e["instance_id"]: e["evaluation"] for e in _jsonl(gold_root / EVAL_FILE)}
    out = []
    for item in _jsonl(found):
        if item.get("type", "DBT") != "DBT":
            continue
        iid = item["instance_id"]
        evaluation = evals.get(iid)
        if evaluation is None or evaluation.get("func") != "duckdb_match":
            raise ValueError(f"{iid}: no duckdb_match evaluation in {gold_root / EVAL_FILE}")
        out.append(DbtTask(iid, item["instruction"], examples / iid, gold_root / iid,
                           MatchSpec.from_json(evaluation["parameters"])))
    return out[:limit] if limit is not None else out


def write_task_files(root: Path, tasks: list[tuple[str, str, MatchSpec]]) -> None:
    """The two JSONL files of the layout for (instance_id, instruction, spec)."""
    (root / "examples").mkdir(parents=True, exist_ok=True)
    (root / "evaluation_suite" / "gold").mkdir(parents=True, exist_ok=True)
    with open(root / "examples" / TASKS_FILE, "w", encoding="utf-8") as f:
        for iid, instruction, _spec in tasks:
            f.write(json.dumps({"instance_id": iid, "instruction": instruction, "type": "DBT"}) + "\n")
    with open(root / "evaluation_suite" / "gold" / EVAL_FILE, "w", encoding="utf-8") as f:
        for iid, _instruction, spec in tasks:
            f.write(json.dumps({"instance_id": iid, "evaluation": spec.as_json()}) + "\n")
