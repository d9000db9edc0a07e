"""The Query Generator with pipelines: the same loop (contract, probes, submit, verification)
plus a `run_pipeline` tool whose SQL and semantic steps become tables in the session."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from dia_assets.agents.analysis.caveats import answer_note, unverified_decisions, unverified_rows
from dia_assets.agents.analysis.session import AnalysisSession
from dia_assets.agents.analysis.steps import PipelineError
from dia_assets.agents.query import AGENT_TOOLS, Explorer, QueryMemory, SchemaIndex
from dia_assets.agents.query.loop import AgentSettings, AskUser, QueryAgent, _State
from dia_assets.agents.semantic_ops import SemanticModelUnavailable
from dia_assets.agents.semantic_ops import judge_prompts as semantic_prompts
from dia_assets.contracts.analysis_steps import Step
from dia_assets.platform.model.base import ChatFn, ToolCall
from dia_assets.platform.sql.gate import Gate
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


class PipelineAgent(QueryAgent):
    """A QueryAgent over an AnalysisSession's database, with `run_pipeline`."""

    tool_names = (*AGENT_TOOLS, "run_pipeline")

    def __init__(self, session: AnalysisSession, index: SchemaIndex, chat: ChatFn,
                 memory: QueryMemory | None = None, settings: AgentSettings | None = None,
                 ask_user: AskUser | None = None, privacy: str | None = None,
                 catalog_link: Any = None) -> None:
        super().__init__(session.db, index, chat, memory=memory, settings=settings, ask_user=ask_user,
                         allow_writes=False, privacy=privacy, catalog_link=catalog_link)
        self.session: AnalysisSession | None = session
        self.plan_notes: list[str] = []

    def _tool_specs(self) -> list[dict[str, Any]]:
        specs = super()._tool_specs()
        specs.append({"type": "function", "function": {
            "name": "run_pipeline", "description": semantic_prompts()["run_pipeline"].strip(),
            "parameters": RUN_PIPELINE_PARAMETERS}})
        return specs

    def _opening(self, question: str, previous: Any, clarifications: list[Any]) -> list[dict[str, Any]]:
        messages = super()._opening(question, previous, clarifications)
        messages[0]["content"] += "\n\n" + semantic_prompts()["pipeline_system"].strip()
        return messages

    def _pipeline_session(self) -> AnalysisSession:
        return self.session

    def _result(self, *args: Any, **kwargs: Any) -> Any:
        run = super()._result(*args, **kwargs)
        if self.session is not None:
            run.trace["pipeline"] = [r.model_dump() for r in self.session.records]
            run.trace["optimizations"] = self.plan_notes
            caveats = unverified_decisions(self.session.records)
            if caveats:  # "passed" covers the checks; say what they could not cover
                run.result.verification.unverified = caveats
                run.trace["verification"]["unverified"] = caveats
                if run.result.status == "answered":
                    rows = unverified_rows(self.session.records)
                    run.result.message += f"; semantic decisions of {rows} rows not verified"
                if run.result.answer:
                    run.result.answer += "\n\n" + answer_note(caveats)
        return run

    def _tool_run_pipeline(self, call: ToolCall, args: dict[str, Any], state: _State) -> str:
        raw = args.get("steps")
        if not isinstance(raw, list) or not raw:
            return self._tool(call, {"error": "run_pipeline needs a non-empty list of steps"}, refused=True)
        try:
            steps = [Step.model_validate(s) for s in raw]
        except ValidationError as err:
            first = err.errors()[0]
            return self._tool(call, {"error": f"bad step: {'.'.join(map(str, first['loc']))}: {first['msg']}"},
                              refused=True)
        try:
            session = self._pipeline_session()
            records, notes = session.run(steps, self._gate, self.index)
        except PipelineError as err:
            done = [r.output for r in self.session.records] if self.session is not None else []
            self._event("pipeline_error", error=str(err), done=done)
            return self._tool(call, {"error": str(err), "tables_so_far": done}, refused=True)
        except SemanticModelUnavailable as err:  # no answer can stand on it: stop, keep the tables
            return self._stop_on_outage(call, err, state)
        self.plan_notes += notes
        for r in records:
            self._event("pipeline_step", **r.model_dump())
        payload = {"optimizations": notes, "steps": [
            {"output": r.output, "op": r.step.op, "rows": r.rows, "columns": r.columns,
             **({"stage_mix": r.operator["stage_mix"], "model_calls": r.operator["model_calls"],
                 "cost_usd": r.operator["cost_usd"]} if r.operator else {}),
             **({"estimated": r.estimate} if r.estimate else {})} for r in records]}
        return self._tool(call, payload)


    def _stop_on_outage(self, call: ToolCall, err: SemanticModelUnavailable, state: _State) -> str:
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
        self._event("pipeline_stopped", error=message, done=[r.output for r in records])
        self._finish(state, "failed", message)
        return self._tool(call, {"error": message}, refused=True)


class OnDemandPipelineAgent(PipelineAgent):
    """The Query Generator over the warehouse itself, offered `run_pipeline` too: the model
    decides. Until it runs a pipeline, everything (probes, gate, submit) is the plain
    QueryAgent's; the first `run_pipeline` opens the analysis session (the warehouse attached
    read-only, step tables beside it) and the loop continues there."""

    def __init__(self, db: Database, index: SchemaIndex, chat: ChatFn,
                 open_session: Callable[[], AnalysisSession], **kwargs: Any) -> None:
        kwargs.pop("allow_writes", None)  # a modification is SQL on the warehouse: never offered here
        QueryAgent.__init__(self, db, index, chat, allow_writes=False, **kwargs)
        self.session = None
        self.plan_notes = []
        self._open_session = open_session

    def _pipeline_session(self) -> AnalysisSession:
        if self.session is None:
            self.session = self._open_session()
            old = self._explorer
            s = self.settings
            self.db = self.session.db
            # step tables join a copy of the index: the warehouse's own is cached across questions
            self.index = SchemaIndex(self.index.dialect, dict(self.index.tables))
            self.index._build_terms()
            self._gate = Gate(self.db, self.index.qualify_schema(), self.privacy)
            self._explorer = Explorer(self.db, self.index, self.memory, s.probe_rows, s.timeout_s, gate=self._gate)
            self._explorer.memory_checked = old.memory_checked
            self._event("pipeline_session", warehouse_tables=sorted(self.session.warehouse_tables))
        return self.session
