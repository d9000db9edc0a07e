"""Solvers: whatever turns a question into SQL. The harness depends only on `Solver`.

- `OracleSolver` returns the gold SQL directly (no agent, no model): a plumbing check of the
  adapters, databases and scoring.
- `AgentSolver` runs the Query Generator (`dia_assets.agents.query.answer_question`) with a
  litellm model. `model="oracle"` selects the oracle provider (`oracle.py`), which answers
  with the gold SQL through the agent's full tool-calling path.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from dia_assets.agents.evaluation.databases import Database
from dia_assets.agents.evaluation.datasets import transpile_gold
from dia_assets.agents.evaluation.models import EvalInstance, Prediction


@runtime_checkable
class Solver(Protocol):
    name: str

    def solve(self, instance: EvalInstance, db: Database) -> Prediction: ...


class OracleSolver:
    """The first acceptable gold query, in the database's dialect."""

    name = "oracle-direct"

    def solve(self, instance: EvalInstance, db: Database) -> Prediction:
        started = time.perf_counter()
        sql = transpile_gold(instance.gold_sql[0], instance.dialect, db.dialect, db.column_types)
        return Prediction(sql=sql, status="answered", attempts=1, latency_s=time.perf_counter() - started)


class AgentSolver:
    """The Query Generator with a litellm model (or the `oracle` provider).

    `score_unverified`: when the agent ends without an accepted answer, score its last
    submitted SQL instead of counting "no SQL" (off by default: the agent's answer is what
    it accepts). `trace_dir`: write each question's agent trace there as `<id>.json`.
    `memory`: a function from the database to the agent's `QueryMemory` (None: no memory, the
    default, so runs are independent of question order)."""

    def __init__(self, model: str, settings: Any = None, score_unverified: bool = False,
                 timeout_s: float = 30.0, trace_dir: str | Path | None = None,
                 memory: Callable[[Database], Any] | None = None) -> None:
        from dia_assets.agents.evaluation.oracle import ORACLE_NAMES

        self.oracle = model in ORACLE_NAMES
        self.model = model
        self.name = "agent:oracle" if self.oracle else f"agent:{model}"
        self.settings = settings
        self.score_unverified = score_unverified
        self.timeout_s = timeout_s
        self.trace_dir = Path(trace_dir) if trace_dir else None
        self.memory = memory

    def solve(self, instance: EvalInstance, db: Database) -> Prediction:
        if not self.oracle:
            return self._solve(instance, db)
        from dia_assets.agents.evaluation.oracle import REGISTRY

        with REGISTRY.claim(instance.prompt()):  # one question text at a time
            return self._solve(instance, db)

    def _solve(self, instance: EvalInstance, db: Database) -> Prediction:
        from dia_assets.agents.query import answer_question

        model, key = self.model, None
        try:
            if self.oracle:
                model, key = self._register_oracle(instance, db)
            result, run = answer_question(
                instance.prompt(), _agent_target(db), question_id=_safe_id(instance.id),
                model=model, settings=self.settings or _eval_settings(),
                memory=self.memory(db) if self.memory else None,
            )
        except Exception as err:  # the agent crashed: scored as no SQL, reported
            return Prediction(sql=None, status="error", sql_source="none",
                              error=f"{type(err).__name__}: {err}"[:500])
        finally:
            if key is not None:
                from dia_assets.agents.evaluation.oracle import REGISTRY

                REGISTRY.drop(key)
        if self.trace_dir is not None and run is not None:
            self.trace_dir.mkdir(parents=True, exist_ok=True)
            path = self.trace_dir / f"{_safe_id(instance.id)}.json"
            path.write_text(json.dumps(run.trace, indent=1, default=str), encoding="utf-8")
        return to_prediction(result, run, self.score_unverified)

    def _register_oracle(self, instance: EvalInstance, db: Database) -> tuple[str, str]:
        from dia_assets.agents.evaluation.gold_contract import gold_contract
        from dia_assets.agents.evaluation.oracle import (
            REGISTRY,
            OracleAnswer,
            ensure_registered,
            not_null_columns,
        )

        model = ensure_registered()
        sql = transpile_gold(instance.gold_sql[0], instance.dialect, db.dialect, db.column_types)
        res = db.query(sql, self.timeout_s)
        key = instance.prompt()
        declared = gold_contract(sql, db.dialect, res.columns, not res.rows)
        if "entity_key" not in declared and (entity := _count_entity(sql, db)):
            declared["entity_key"] = entity
        REGISTRY.put(key, OracleAnswer(sql=sql, columns=res.columns, allow_empty=not res.rows,
                                       not_null_columns=not_null_columns(sql, db.dialect), declared=declared))
        return model, key


def _eval_settings() -> Any:
    """The agent's defaults, minus work a score never reads (transpiling the answer to other
    dialects)."""
    from dia_assets.agents.query import AgentSettings

    settings = AgentSettings()
    if hasattr(settings, "transpile_to"):
        settings.transpile_to = ()
    return settings


def _count_entity(sql: str, db: Database) -> str | None:
    """What the gold's plain COUNT counts (`verify.count_entity`), on the agent's own view of
    the database; None when it cannot be told."""
    try:
        from dia_assets.agents.query import count_entity, schema_index
        from dia_assets.platform.warehouse.base import connect as open_database

        agent_db = open_database(_agent_target(db))
        try:
            return count_entity(sql, agent_db, schema_index(agent_db), 30.0)
        finally:
            agent_db.close()
    except Exception:
        return None


def _agent_target(db: Database) -> str:
    """The agent's `open_database` picks SQLite by suffix; say so explicitly for SQLite."""
    if db.dialect == "sqlite":
        return f"sqlite:///{db.target}"
    return db.target


def _safe_id(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:80] or "q"


def last_submitted_sql(trace: dict[str, Any] | None) -> str | None:
    """The SQL of the agent's last `submit` call, from its trace."""
    sql = None
    for event in (trace or {}).get("events", []):
        if event.get("event") == "tool" and event.get("name") == "submit":
            try:
                sql = json.loads(event.get("arguments") or "{}").get("sql") or sql
            except (json.JSONDecodeError, AttributeError):
                continue
    return sql


def to_prediction(result: Any, run: Any, score_unverified: bool = False) -> Prediction:
    """A Query Generator `QueryResult` (and its run) as a Prediction."""
    tokens = result.tokens
    sql, source = result.sql, "accepted"
    if not sql:
        source = "none"
        if score_unverified and run is not None:
            sql = last_submitted_sql(run.trace)
            source = "last_attempt" if sql else "none"
    return Prediction(
        sql=sql, status=result.status if result.status in ("answered", "needs_clarification", "failed", "no_model") else "failed",
        attempts=result.attempts, prompt_tokens=tokens.prompt_tokens, completion_tokens=tokens.completion_tokens,
        tokens=tokens.total_tokens, cost_usd=tokens.cost_usd, latency_s=result.latency_s,
        error=None if result.status == "answered" else (result.message or None), sql_source=source,  # type: ignore[arg-type]
        meta={"model_calls": tokens.model_calls, "model": tokens.model},
    )
