"""The Query Generator with pipelines: the same loop (contract, probes, submit, verification)
plus a `run_pipeline` tool whose SQL and semantic steps become tables in the session."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from dia_assets.agents.analysis.session import AnalysisSession
from dia_assets.agents.analysis.steps import PipelineError, Step
from dia_assets.agents.query.llm import ChatFn, ToolCall
from dia_assets.agents.query.loop import AgentSettings, AskUser, QueryAgent, _State
from dia_assets.agents.query.memory import QueryMemory
from dia_assets.agents.query.schema import SchemaIndex
from dia_assets.agents.query.tools import AGENT_TOOLS
from dia_assets.agents.semantic_ops.judge import prompts as semantic_prompts

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
        self.session = session
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
            records, notes = self.session.run(steps, self._gate, self.index)
        except PipelineError as err:
            done = [r.output for r in self.session.records]
            self._event("pipeline_error", error=str(err), done=done)
            return self._tool(call, {"error": str(err), "tables_so_far": done}, refused=True)
        self.plan_notes += notes
        for r in records:
            self._event("pipeline_step", **r.model_dump())
        payload = {"optimizations": notes, "steps": [
            {"output": r.output, "op": r.step.op, "rows": r.rows, "columns": r.columns,
             **({"stage_mix": r.operator["stage_mix"], "model_calls": r.operator["model_calls"],
                 "cost_usd": r.operator["cost_usd"]} if r.operator else {})} for r in records]}
        return self._tool(call, payload)
