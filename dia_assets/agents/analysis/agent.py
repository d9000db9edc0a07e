"""The Query Generator with pipelines: the same loop (contract, probes, submit, verification)
plus a `run_pipeline` tool whose SQL and semantic steps become tables in the session.

`Pipelines` extends a plain QueryAgent through its public extension points only: one more
`Tool`, an `AnswerHooks` object (a system prompt paragraph, the result's caveats) and, for the
on-demand agent, `AnswerRun.use_database` when the first pipeline opens the session."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from dia_assets.agents.analysis.caveats import answer_note, unverified_decisions, unverified_rows
from dia_assets.agents.analysis.session import AnalysisSession
from dia_assets.agents.analysis.steps import PipelineError
from dia_assets.agents.query import (
    AgentRun,
    AnswerHooks,
    AnswerRun,
    QueryAgent,
    SchemaIndex,
    Tool,
    ToolOutput,
    query_tools,
    refuse,
)
from dia_assets.agents.semantic_ops import SemanticModelUnavailable
from dia_assets.agents.semantic_ops import judge_prompts as semantic_prompts
from dia_assets.contracts.analysis_steps import Step
from dia_assets.platform.model.base import ChatFn
from dia_assets.platform.warehouse.base import Database

_STR = {"type": "string"}
RUN_PIPELINE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"steps": {"type": "array", "items": {
        "type": "object",
        "properties": {
            "output": _STR,
            "op": {"type": "string", "enum": ["sql", "sem_filter", "sem_extract", "sem_group", "sem_join"]},
            "sql": _STR, "table": _STR, "column": _STR, "where": _STR, "condition": _STR,
            "fields": {}, "labels": {"type": "array", "items": _STR}, "k": {"type": "integer"},
            "instruction": _STR, "left": _STR, "left_column": _STR, "right": _STR, "right_column": _STR,
        },
        "required": ["output", "op"]}}},
    "required": ["steps"],
}


class Pipelines(AnswerHooks):
    """`run_pipeline` for one question's QueryAgent: the tool, the session it runs in (given,
    or opened by `open_session` on the first call, after which the run continues on the
    session's database), the planner's notes, and the caveats added to the result."""

    def __init__(self, session: AnalysisSession | None = None,
                 open_session: Callable[[], AnalysisSession] | None = None) -> None:
        if session is None and open_session is None:
            raise ValueError("Pipelines needs a session or a way to open one")
        self.session = session
        self.plan_notes: list[str] = []
        self._open_session = open_session
        self.tool = Tool("run_pipeline", semantic_prompts()["run_pipeline"], RUN_PIPELINE_PARAMETERS,
                         self.run_pipeline)

    def agent(self, db: Database, index: SchemaIndex, chat: ChatFn, **kwargs: Any) -> QueryAgent:
        """A QueryAgent offered `run_pipeline` beside its own tools. Never a modification: that
        is SQL on the warehouse (allow_writes is dropped)."""
        kwargs.pop("allow_writes", None)
        return QueryAgent(db, index, chat, allow_writes=False, tools=[*query_tools(), self.tool],
                          hooks=self, **kwargs)

    # -- hooks -----------------------------------------------------------------------------

    def opening(self, run: AnswerRun, messages: list[dict[str, Any]]) -> None:
        messages[0]["content"] += "\n\n" + semantic_prompts()["pipeline_system"].strip()

    def finished(self, run: AnswerRun, agent_run: AgentRun) -> None:
        if self.session is None:
            return
        agent_run.trace["pipeline"] = [r.model_dump() for r in self.session.records]
        agent_run.trace["optimizations"] = self.plan_notes
        caveats = unverified_decisions(self.session.records)
        if caveats:  # "passed" covers the checks; say what they could not cover
            agent_run.result.verification.unverified = caveats
            agent_run.trace["verification"]["unverified"] = caveats
            if agent_run.result.status == "answered":
                rows = unverified_rows(self.session.records)
                agent_run.result.message += f"; semantic decisions of {rows} rows not verified"
            if agent_run.result.answer:
                agent_run.result.answer += "\n\n" + answer_note(caveats)

    # -- the tool ----------------------------------------------------------------------------

    def run_pipeline(self, run: AnswerRun, args: dict[str, Any]) -> ToolOutput:
        raw = args.get("steps")
        if not isinstance(raw, list) or not raw:
            return refuse({"error": "run_pipeline needs a non-empty list of steps"})
        try:
            steps = [Step.model_validate(s) for s in raw]
        except ValidationError as err:
            first = err.errors()[0]
            return refuse({"error": f"bad step: {'.'.join(map(str, first['loc']))}: {first['msg']}"})
        try:
            session = self._session_for(run)
            records, notes = session.run(steps, run.gate, run.index)
        except PipelineError as err:
            done = [r.output for r in self.session.records] if self.session is not None else []
            run.event("pipeline_error", error=str(err), done=done)
            return refuse({"error": str(err), "tables_so_far": done})
        except SemanticModelUnavailable as err:  # no answer can stand on it: stop, keep the tables
            return self._stop_on_outage(run, err)
        self.plan_notes += notes
        for r in records:
            run.event("pipeline_step", **r.model_dump())
        return ToolOutput({"optimizations": notes, "steps": [
            {"output": r.output, "op": r.step.op, "rows": r.rows, "columns": r.columns,
             **({"stage_mix": r.operator["stage_mix"], "model_calls": r.operator["model_calls"],
                 "cost_usd": r.operator["cost_usd"]} if r.operator else {}),
             **({"estimated": r.estimate} if r.estimate else {})} for r in records]})

    def _session_for(self, run: AnswerRun) -> AnalysisSession:
        """The session; opened on first use, and the run moves onto its database (the warehouse
        attached read-only, step tables beside it)."""
        if self.session is None:
            assert self._open_session is not None
            self.session = self._open_session()
            # step tables join a copy of the index: the warehouse's own is cached across questions
            index = SchemaIndex(run.index.dialect, dict(run.index.tables))
            index.refresh()
            run.use_database(self.session.db, index)
            run.event("pipeline_session", warehouse_tables=sorted(self.session.warehouse_tables))
        return self.session

    def _stop_on_outage(self, run: AnswerRun, err: SemanticModelUnavailable) -> ToolOutput:
        """A model stage is unreachable: the run ends failed with one line naming the model,
        the cause and what was kept (the partial step's tables, exported with the others)."""
        records = self.session.records if self.session is not None else []
        last = records[-1] if records and records[-1].status == "partial" else None
        kept = ""
        if last is not None and last.operator:
            mix = last.operator.get("stage_mix", {})
            decided = sum(v for k, v in mix.items() if k not in ("undecided", "unresolved"))
            kept = (f"; {last.step.op} -> {last.output} stopped after deciding {decided} of "
                    f"{last.operator.get('rows_in', 0)} rows (kept, the rest marked _stage='undecided')")
        message = f"{err}{kept}"
        run.event("pipeline_stopped", error=message, done=[r.output for r in records])
        run.finish("failed", message)
        return refuse({"error": message})
