"""The Query Generator's agent loop (DIA §3.5): declare, explore, submit, verify, repair.

A plain loop over litellm tool calls. Each turn the model returns tool calls; the loop
dispatches the ones it allows, in order, by name through the agent's `Tool` objects, and
appends their delimited results. One call's state lives in an `AnswerRun`, never on the agent. Policies
(App. D.5) gate the dispatch: nothing runs before a valid contract, a repeated submission
is refused, and after three failures with the same signature only `ask` is accepted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import sqlglot

from dia_assets.agents.query.contract import (
    PARTS,
    ContractError,
    changed_parts,
    describe_contract,
    parse_contract,
    weakenings,
)
from dia_assets.agents.query.dialects import Database, QueryOutput, transpile_all
from dia_assets.agents.query.linking import LinkPlan
from dia_assets.agents.query.memory import Lesson, QueryMemory
from dia_assets.agents.query.modification import run_modification
from dia_assets.agents.query.policies import (
    ForcedClarification,
    PreviousAnswer,
    ResubmissionControl,
    apply_carryover,
    carryover_prompt,
)
from dia_assets.agents.query.schema import SchemaIndex
from dia_assets.agents.query.tools import (
    AGENT_TOOLS,
    EXPLORER_FUNCTIONS,
    Explorer,
    Tool,
    ToolOutput,
    capped_rows,
    data_text,
    fill,
    jsonable,
    prompt_tool,
    prompts,
    refuse,
    result_bytes,
    tool_specs,
    wrap,
)
from dia_assets.agents.query.verify import signature, verify_result
from dia_assets.contracts.query_result import (
    Check,
    Clarification,
    ContractRevision,
    MemoryUse,
    ModificationOutcome,
    OutputContract,
    QueryResult,
    Usage,
    Verification,
)
from dia_assets.platform.model.base import ChatFn, Reply, ToolCall
from dia_assets.platform.model.errors import ModelUnavailable
from dia_assets.platform.sql.gate import Gate, privacy_mode, shows_values
from dia_assets.platform.sql.lineage import column_lineage
from dia_assets.platform.sql.reads import sql_reads
from dia_assets.platform.sql.redaction import error_kind
from dia_assets.platform.sql.safety import SQLRefused, clean_sql, normalize_name
from dia_assets.platform.warehouse import REGISTRY

AskUser = Callable[[str], str | None]


@dataclass
class AgentSettings:
    max_turns: int = 24
    max_attempts: int = 6
    max_asks: int = 3
    probe_rows: int = 50
    result_rows: int = 100_000
    preview_rows: int = 20
    timeout_s: float = 10.0
    clarify_after: int = 3
    max_revisions: int = 2
    # Data Agents §III-D feedback: candidates the model submits alongside are cross-validated;
    # pipeline-to-NL describes the SQL back in words and compares it with the question:
    # "off", "overlap" (word overlap), "embedding" (cosine similarity, WordLlama) or "judge"
    # (one model call)
    nl_check: str = "off"
    nl_threshold: float = 0.5
    resubmission_window: int = 5
    link_tables: int = 6  # schema linking: tables rendered in full (types, sample values)
    # the first prompt (system + user + tool schemas, gpt-4o tokens) is filled up to this with
    # more linked tables, column names only; None: only `link_tables` (bench/linking.py)
    link_budget_tokens: int | None = 4000
    memory_refs: int = 3
    reflect: bool = True
    transpile_to: tuple[str, ...] = ("snowflake", "bigquery")


@dataclass
class AgentRun:
    result: QueryResult
    output: QueryOutput | None
    trace: dict[str, Any]


def _tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """Prompt tokens as litellm counts them for gpt-4o (the budget's unit); litellm is imported
    on this path anyway, to call the model."""
    from dia_assets.platform.model.litellm import token_count

    return token_count(messages, tools)


def shown_rows(sql: str | None, dialect: str, rows: list[Any], limit: int) -> list[list[Any]]:
    """The preview: a result without a top-level ORDER BY comes back in any order (DuckDB groups
    in parallel), so it is shown sorted; two runs of one answer then show the same rows."""
    ordered = True
    if sql:
        try:
            ordered = sqlglot.parse_one(sql, read=dialect).args.get("order") is not None
        except sqlglot.errors.SqlglotError:
            ordered = True  # unparseable here: keep the engine's order
    shown = list(rows) if ordered else sorted(rows, key=lambda r: repr(jsonable(list(r))))
    return [list(jsonable(list(r))) for r in shown[:limit]]


def preference_probe(sql: str | None, dialect: str, schema: dict[str, dict[str, str]]) -> str | None:
    """The precondition of a preference the answer was built on: every stored value the
    accepted SQL filters on still exists (`SELECT EXISTS(...) AND ...`). None when the SQL
    filters on no literal value of a warehouse column (the preference is then unverifiable)."""
    if not sql:
        return None
    import sqlglot
    from sqlglot import exp

    from dia_assets.platform.sql.predicates import conjuncts, literal_filter

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.SqlglotError:
        return None
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    tests = []
    for where in tree.find_all(exp.Where):
        for pred in conjuncts(where.this):
            flt = literal_filter(pred, tree, ctes)
            if flt is None or "." not in flt["column"] or flt["op"] not in ("=", "in", "like", "ilike"):
                continue
            table, column = flt["column"].split(".", 1)
            if column.lower() not in schema.get(table.lower(), {}):
                continue
            values = flt["value"] if isinstance(flt["value"], list) else [flt["value"]]
            for v in values:
                literal = exp.Literal.string(v) if isinstance(v, str) else exp.Literal.number(v)
                op = "LIKE" if flt["op"] in ("like", "ilike") else "="
                tests.append(f"EXISTS (SELECT 1 FROM {exp.to_identifier(table).sql(dialect)} WHERE "
                             f"{exp.to_identifier(column).sql(dialect)} {op} {literal.sql(dialect)})")
    if not tests:
        return None
    return "SELECT " + " AND ".join(dict.fromkeys(tests))


class AnswerHooks:
    """Extension points of `QueryAgent.answer` for an agent built on it (agents/analysis adds
    a system prompt paragraph and the pipeline caveats this way). Each gets the run; the
    defaults change nothing."""

    def opening(self, run: AnswerRun, messages: list[dict[str, Any]]) -> None:
        """Amend the first two messages (system, user), after schema linking chose the tables."""

    def finished(self, run: AnswerRun, agent_run: AgentRun) -> None:
        """Amend the result and trace before `answer` returns them."""


@dataclass
class AnswerRun:
    """One `QueryAgent.answer` call: the question, the database it reads, the policies, the
    trace and the outcome so far. Like pydantic-ai's RunContext it is made per call and handed
    to every tool function, so two answers on one agent never see each other's state; the
    agent holds configuration only."""

    agent: QueryAgent
    question: str
    question_id: str
    previous: PreviousAnswer | None
    db: Database
    index: SchemaIndex
    gate: Gate
    explorer: Explorer
    resubmit: ResubmissionControl
    clarify: ForcedClarification
    started: float
    model_s: float = 0.0
    usage: Usage = field(default_factory=Usage)
    events: list[dict[str, Any]] = field(default_factory=list)
    failure_notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)  # the tables schema linking put in the prompt
    # the outcome
    contract: OutputContract | None = None
    attempts: int = 0
    asks: int = 0
    nudges: int = 0
    finished: bool = False
    status: str = "failed"
    message: str = ""
    sql: str | None = None
    answer: str = ""
    output: QueryOutput | None = None
    verification: Verification = field(default_factory=Verification)
    modification: ModificationOutcome | None = None
    clarifications: list[Clarification] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    last_failed: list[str] = field(default_factory=list)  # check names of the last failed submit
    revisions: list[ContractRevision] = field(default_factory=list)

    @property
    def settings(self) -> AgentSettings:
        return self.agent.settings

    def event(self, event_name: str, /, **data: Any) -> None:
        """One entry of the trace's events."""
        self.events.append({"t": round(time.perf_counter() - self.started, 4), "event": event_name, **jsonable(data)})

    def call_model(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: int) -> Reply:
        """One model call, its usage and latency counted for this run."""
        t0 = time.perf_counter()
        reply = self.agent.chat(messages, tools)
        elapsed = time.perf_counter() - t0
        self.model_s += elapsed
        usage = {**reply.usage, "latency_s": round(reply.usage.get("latency_s", elapsed), 4)}
        self.usage.add(usage)
        self.event("model_call", turn=turn, usage=usage, content=reply.content,
                   tool_calls=[{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls])
        return reply

    def tool_result(self, call: ToolCall, out: Any) -> str:
        """The delimited tool message for `call` (a ToolOutput, or a payload of an accepted
        call), recorded in the trace."""
        out = out if isinstance(out, ToolOutput) else ToolOutput(out)
        text = wrap(call.name, out.payload)
        self.event("tool", name=call.name, arguments=call.arguments, refused=out.refused,
                   result=text[:4000], **out.event)
        return text

    def finish(self, status: str, message: str) -> None:
        """End the loop with `status`; later tool calls in the same reply are skipped."""
        self.finished, self.status, self.message = True, status, message
        self.event("finish", status=status, message=message)

    def fail(self, sig: str, payload: dict[str, Any], verification: Verification | None = None) -> ToolOutput:
        """A failed attempt with signature `sig`: counted, fed to forced clarification and
        reflection, and refused to the model with what went wrong."""
        s = self.settings
        self.failures.append(sig)
        self.failure_notes.append(f"{sig}: {json.dumps(jsonable(payload), ensure_ascii=False)[:300]}")
        if verification is not None:
            self.verification = verification
        must_ask = self.clarify.failure(sig)
        payload = {**payload, "attempt": f"{self.attempts} of {s.max_attempts}", "signature": sig}
        if self.attempts >= s.max_attempts:
            self.finish("failed", f"no verified answer after {self.attempts} attempts (last: {sig})")
        elif must_ask:
            payload["policy"] = (f"forced clarification: {s.clarify_after} consecutive failures with "
                                 f"signature {sig}; your next action must be ask")
        self.event("failure", attempt=self.attempts, signature=sig, must_ask=must_ask)
        return refuse(payload)

    def memory_down(self, step: str, err: BaseException) -> None:
        """A memory outage costs the lesson, never the answer (issue 11)."""
        what = "memory not consulted" if step == "recall" else "lesson not recorded"
        warning = f"{what}: the memory store is unavailable ({type(err).__name__}: {err})"[:300]
        if any(w.startswith(what) for w in self.warnings):
            return
        self.warnings.append(warning)
        self.event("memory_unavailable", step=step, warning=warning)

    def use_database(self, db: Database, index: SchemaIndex) -> None:
        """Continue this run on another database (the analysis session: the warehouse attached
        read-only beside the step tables). The gate and the exploration tools follow; the
        memory items checked so far stay checked. The agent's own database is untouched."""
        s = self.settings
        checked = self.explorer.memory_checked
        self.db, self.index = db, index
        self.gate = Gate(db, index.qualify_schema(), self.agent.privacy)
        self.explorer = Explorer(db, index, self.agent.memory, s.probe_rows, s.timeout_s, gate=self.gate)
        self.explorer.memory_checked = checked


class QueryAgent:
    """One warehouse, one schema index, one model, the tools and hooks: configuration only.
    `answer` makes an AnswerRun per question and runs the loop on it."""

    def __init__(
        self,
        db: Database,
        index: SchemaIndex,
        chat: ChatFn,
        memory: QueryMemory | None = None,
        settings: AgentSettings | None = None,
        ask_user: AskUser | None = None,
        allow_writes: bool = False,
        privacy: str | None = None,
        catalog_link: Callable[[str], list[str]] | None = None,
        tools: Sequence[Tool] | None = None,
        hooks: AnswerHooks | None = None,
    ) -> None:
        self.privacy = privacy_mode(privacy)
        # semantic catalog (Data Agents III-A): tables whose labels match the question
        self.catalog_link = catalog_link
        # without samples the prompt, describe_table and search_schema carry no data value
        index = index if shows_values(self.privacy) else index.without_values()
        self.db, self.index, self.chat, self.memory = db, index, chat, memory
        self.settings = settings or AgentSettings()
        self.ask_user = ask_user
        self.allow_writes = allow_writes
        # the tools offered and dispatched, in order (default: query_tools()); an agent built on
        # this one passes its own list (agents/analysis adds run_pipeline)
        self.tools: tuple[Tool, ...] = tuple(tools) if tools is not None else query_tools()
        self._by_name = {t.name: t for t in self.tools}
        if len(self._by_name) != len(self.tools):
            raise ValueError(f"two tools share a name: {[t.name for t in self.tools]}")
        self.hooks = hooks or AnswerHooks()

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)

    def tool_specs(self) -> list[dict[str, Any]]:
        """The tool schemas sent with every loop call."""
        return [t.spec(self.settings.probe_rows, self.settings.timeout_s) for t in self.tools]

    # -- the loop -----------------------------------------------------------------------

    def start(self, question: str, question_id: str = "adhoc",
              previous: PreviousAnswer | None = None) -> AnswerRun:
        """A fresh run for one question over the agent's database."""
        s = self.settings
        started = time.perf_counter()
        gate = Gate(self.db, self.index.qualify_schema(), self.privacy)
        return AnswerRun(
            agent=self, question=question, question_id=question_id, previous=previous,
            db=self.db, index=self.index, gate=gate,
            explorer=Explorer(self.db, self.index, self.memory, s.probe_rows, s.timeout_s, gate=gate),
            resubmit=ResubmissionControl(self.db.dialect, s.resubmission_window),
            clarify=ForcedClarification(s.clarify_after), started=started,
        )

    def answer(
        self,
        question: str,
        question_id: str = "adhoc",
        previous: PreviousAnswer | None = None,
        known_clarifications: list[Clarification] | None = None,
    ) -> AgentRun:
        s = self.settings
        run = self.start(question, question_id, previous)
        tools = self.tool_specs()

        messages = self.opening(run, known_clarifications or [])
        run.event("start", question=question, question_id=question_id, privacy=self.privacy,
                  prompt_chars=sum(len(m["content"]) for m in messages),
                  linked_tables=run.linked)
        turn = 0
        while not run.finished and turn < s.max_turns:
            turn += 1
            try:
                reply = run.call_model(messages, tools, turn)
            except Exception as err:  # provider down, auth, rate limit: keep the trace, say why
                why = str(err) if isinstance(err, ModelUnavailable) else f"{type(err).__name__}: {err}"
                run.finish("failed", f"model call failed: {why}"[:500])
                break
            messages.append(reply.as_message())
            if not reply.tool_calls:
                run.nudges += 1
                if run.nudges > 3:
                    run.finish("failed", "the model stopped calling tools")
                    break
                messages.append({"role": "user", "content": fill(prompts()["nudge"], tools=", ".join(self.tool_names))})
                continue
            for call in reply.tool_calls:
                # every tool call gets a result (providers require it); none runs after the end
                content = (wrap(call.name, {"skipped": "the loop has already finished"}) if run.finished
                           else self._dispatch(run, call))
                messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content})
        if not run.finished:
            run.finish("failed", f"no accepted answer within {s.max_turns} turns")

        lessons = self._after(run, messages)
        agent_run = self._result(run, lessons, messages)
        self.hooks.finished(run, agent_run)
        return agent_run

    def opening(self, run: AnswerRun, clarifications: list[Clarification] | None = None) -> list[dict[str, Any]]:
        """The first two messages (system, user) for `run`'s question; sets `run.linked`."""
        question, previous, clarifications = run.question, run.previous, clarifications or []
        p = prompts()
        engine = REGISTRY.get(run.db.dialect)  # the engine's own words (platform/warehouse/<name>.py)
        system = fill(p["system"],
            dialect_name=engine.title if engine else run.db.dialect,
            dialect_notes=engine.prompt_notes if engine else "",
        )
        found: list[str] = []
        if self.catalog_link is not None:
            try:
                found = [t for t in self.catalog_link(question) if t in run.index.tables]
            except Exception as err:  # the catalog is an aid: link without it, say so in the trace
                found = []
                run.event("catalog_unavailable", error=f"{type(err).__name__}: {err}"[:300])
        memory = ""
        if self.memory is not None and self.settings.memory_refs:
            try:
                refs = self.memory.recall(question, self.settings.memory_refs)
            except Exception as err:  # memory down: answer without it, say so
                refs = []
                run.memory_down("recall", err)
            run.event("recall", query=question, refs=[r.__dict__ for r in refs], auto=True)
            if refs:
                memory = fill(p["memory_refs"],
                    refs="\n".join(data_text(f"[{r.id}] {r.title} (kind {r.kind}, score {r.score})") for r in refs)
                ) + "\n"
        carry = carryover_prompt(previous) + "\n" if previous else ""
        known = ""
        if clarifications:
            known = "Earlier clarifications from the user (short-term memory):\n<data>\n" + "\n".join(
                data_text(f"Q: {c.question}\nA: {c.answer}") for c in clarifications if c.answer
            ) + "\n</data>\n"
        index = run.index

        def opening(plan: LinkPlan | None) -> list[dict[str, Any]]:
            """The two messages; with no plan, the frame alone (what the schema text must fit beside)."""
            schema = index.render(plan.full) if plan else ""
            if plan and plan.compact:
                schema += "\n" + index.render_compact(plan.compact, prefer=plan.names_column)
            others = sorted(set(index.tables) - set(plan.tables)) if plan else []
            user = fill(p["user"], question=question, schema=data_text(schema),
                        all_tables=", ".join(others) or "(none)", memory=memory, carryover=carry,
                        clarifications=known)
            return [{"role": "system", "content": system}, {"role": "user", "content": user}]

        s = self.settings
        linker = index.linker()
        if s.link_budget_tokens is None:
            plan = linker.plan(question, s.link_tables, extra=found)
        else:
            tools = self.tool_specs()
            room = s.link_budget_tokens - _tokens(opening(None), tools)
            plan = linker.plan(question, s.link_tables, budget_tokens=room, extra=found)
            while len(plan.tables) > 1 and _tokens(opening(plan), tools) > s.link_budget_tokens:
                if plan.compact:  # the character estimate was short
                    plan.compact = plan.compact[:-2]
                else:
                    plan.full = plan.full[:-1]
        run.linked = plan.tables
        if self.catalog_link is not None:
            run.event("catalog_link", tables=found, added=[t for t in found if t in plan.tables])
        messages = opening(plan)
        self.hooks.opening(run, messages)
        return messages

    # -- dispatch -----------------------------------------------------------------------

    def _dispatch(self, run: AnswerRun, call: ToolCall) -> str:
        name = call.name
        tool = self._by_name.get(name)
        if tool is None:
            return run.tool_result(call, refuse({"error": f"unknown tool {name!r}; allowed: {', '.join(self.tool_names)}"}))
        try:
            args = call.args()
        except ValueError as err:
            return run.tool_result(call, refuse({"error": str(err)}))
        if run.clarify.must_ask and name != "ask":
            return run.tool_result(call, refuse({"error": (
                f"policy (forced clarification): {self.settings.clarify_after} consecutive failures "
                f"with the same signature ({run.clarify.last_signature}); your next action must be "
                "ask: put one precise question to the user")}))
        if run.contract is None and name not in ("declare_contract", "ask"):
            return run.tool_result(call, refuse({"error": "declare the output contract first (declare_contract); nothing else runs before it"}))
        return run.tool_result(call, tool.function(run, args))

    # -- after the answer: outcomes, reflection, preference lessons -------------------------

    def _after(self, run: AnswerRun, messages: list[dict[str, Any]]) -> list[str]:
        written: list[str] = []
        try:
            self._after_memory(run, messages, written)
        except Exception as err:  # the verified answer stands; the lesson waits for next time
            run.memory_down("reflection", err)
        return written

    def _after_memory(self, run: AnswerRun, messages: list[dict[str, Any]], written: list[str]) -> list[str]:
        question = run.question
        if self.memory is None:
            return written
        for item_id, (usable, _detail, _title) in run.explorer.memory_checked.items():
            if usable:
                self.memory.record_outcome(item_id, run.status == "answered")
        if run.status != "answered":
            return written
        if self.settings.reflect:
            written += self._reflect(run, messages)
        answered = [c for c in run.clarifications if c.answer]
        probe = preference_probe(run.sql, run.db.dialect, run.index.qualify_schema()) if answered else None
        for c in answered:
            title = f"User preference: {c.question}"[:200]
            if probe is None:  # nothing in the data tests it: unverifiable, so never stored as usable
                run.event("lesson_refused", kind="preference", title=title,
                            reason="unverifiable: the accepted SQL filters on no stored value a probe could test")
                continue
            lesson = Lesson(
                kind="preference",
                title=title,
                rule=f"Asked '{c.question}', the user answered: {c.answer}. It led to a verified answer to: {question}",
                probe_sql=probe,
                evidence=[f"question: {question}", f"accepted SQL: {run.sql}"],
                question=question,
            )
            written.append(self.memory.write_lesson(lesson))
            run.event("lesson", kind="preference", title=lesson.title, probe_sql=probe)
        return written

    def _reflect(self, run: AnswerRun, messages: list[dict[str, Any]]) -> list[str]:
        question = run.question
        assert self.memory is not None
        failures = "\n".join(data_text(f) for f in run.failure_notes) or "none"
        convo = [*messages, {"role": "user", "content": fill(prompts()["reflect"], failures=failures)}]
        run.event("reflection_prompt", content=convo[-1]["content"])  # the trace shows all that was sent
        written: list[str] = []
        try:
            reply = run.call_model(convo, tool_specs(("write_lesson",)), turn=0)
        except Exception as err:
            run.event("lesson_refused", reason=f"reflection call failed: {type(err).__name__}: {err}"[:300])
            return written
        for call in reply.tool_calls:
            if call.name != "write_lesson":
                continue
            try:
                args = call.args()
                lesson = Lesson(
                    kind=str(args.get("kind", "aggregation")), title=str(args["title"]),
                    rule=str(args["rule"]), probe_sql=str(args["probe_sql"]),
                    evidence=[*map(str, args.get("evidence") or []), f"question: {question}",
                              f"accepted SQL: {run.sql}"],
                    question=question,
                )
                rows = run.explorer.probe_rows(lesson.probe_sql)
            except Exception as err:
                run.event("lesson_refused", reason=f"{type(err).__name__}: {err}"[:300])
                continue
            from dia_assets.agents.query.memory import probe_confirms

            if not probe_confirms(rows):
                run.event("lesson_refused", reason="its precondition probe does not confirm here", title=lesson.title)
                continue
            written.append(self.memory.write_lesson(lesson))
            run.event("lesson", kind=lesson.kind, title=lesson.title, probe_sql=lesson.probe_sql)
        return written

    # -- result ------------------------------------------------------------------------------

    def _result(self, run: AnswerRun, lessons: list[str], messages: list[dict[str, Any]]) -> AgentRun:
        question, question_id, started = run.question, run.question_id, run.started
        s = self.settings
        total = time.perf_counter() - started
        out = run.output
        result = QueryResult(
            question_id=question_id, question=question, status=run.status,  # type: ignore[arg-type]
            message=run.message, sql=run.sql, dialect=run.db.dialect,
            transpiled=transpile_all(run.sql, run.db.dialect, s.transpile_to) if run.sql else {},
            contract=run.contract, verification=run.verification, attempts=run.attempts,
            contract_revisions=run.revisions,
            row_count=out.row_count if out else 0, columns=out.columns if out else [],
            preview=shown_rows(run.sql, run.db.dialect, out.rows, s.preview_rows) if out else [],
            answer=run.answer,
            lineage=(column_lineage(run.sql, run.index.qualify_schema(), run.db.dialect)
                     if run.sql and out is not None else {}),
            reads=(sql_reads(run.sql, run.index.qualify_schema(), run.db.dialect)
                   if run.sql and out is not None else {}),
            memory_used=[MemoryUse(id=i, title=t, verified=u, detail=d)
                         for i, (u, d, t) in run.explorer.memory_checked.items()],
            lessons_written=lessons, clarifications=run.clarifications,
            modification=run.modification, tokens=run.usage,
            latency_s=round(total, 4), overhead_s=round(total - run.model_s, 4),
            privacy=self.privacy, warnings=list(run.warnings),
        )
        trace = {
            "version": 1, "question_id": question_id, "question": question,
            "dialect": run.db.dialect, "warehouse": run.db.location,
            "settings": jsonable(s.__dict__), "status": run.status, "failures": run.failures,
            "contract": run.contract.model_dump() if run.contract else None,
            "sql": run.sql, "verification": run.verification.model_dump(),
            "contract_revisions": [r.model_dump() for r in run.revisions],
            "events": run.events, "messages": jsonable(messages),
            "usage": run.usage.model_dump(), "latency_s": result.latency_s,
            "privacy": self.privacy, "warnings": run.warnings,
            "overhead_s": result.overhead_s,
        }
        return AgentRun(result=result, output=out, trace=trace)


# -- the Query Generator's tools -------------------------------------------------------------


@lru_cache(maxsize=1)
def query_tools() -> tuple[Tool, ...]:
    """The Query Generator's tools, in the order offered (AGENT_TOOLS)."""
    functions = {**EXPLORER_FUNCTIONS, "declare_contract": _declare_contract, "submit": _submit, "ask": _ask}
    return tuple(prompt_tool(name, functions[name]) for name in AGENT_TOOLS)


def _declare_contract(run: AnswerRun, args: dict[str, Any]) -> Any:
    try:
        contract = parse_contract(args, run.index.qualify_schema(), run.db.dialect)
    except ContractError as err:
        return refuse({"error": str(err)})
    revised = run.contract is not None
    if revised and contract.kind != run.contract.kind:  # type: ignore[union-attr]
        # text in the data must never turn a question into a write (or back)
        return refuse({"error": (
            f"the contract's kind is {run.contract.kind} for this run and cannot change "  # type: ignore[union-attr]
            f"to {contract.kind}; ask a new question for a {contract.kind} task")})
    if revised:
        refusal = _revision_refusal(run, contract, args)
        if isinstance(refusal, str):
            return refuse({"error": refusal}, policy="contract_revision")
        run.revisions.append(refusal)
        run.last_failed = []
    run.contract = contract
    run.event("contract", contract=contract.model_dump(), revised=revised)
    return ToolOutput({"accepted": True, "contract": describe_contract(contract)})


def _revision_refusal(run: AnswerRun, contract: OutputContract,
                     args: dict[str, Any]) -> str | ContractRevision:
    """A re-declaration is budgeted, names the declared fact that was wrong, and never
    removes the declaration a check just failed on (so it cannot weaken to pass)."""
    old = run.contract
    assert old is not None
    budget = run.settings.max_revisions
    if len(run.revisions) >= budget:
        return (f"policy (contract revisions): the contract was already revised {budget} times; "
                "repair the SQL against it, or ask")
    changed = changed_parts(old, contract)
    raw = args.get("revises") or []
    named = [str(p).strip().lower() for p in ([raw] if isinstance(raw, str) else raw) if str(p).strip()]
    reason = str(args.get("reason") or "").strip()
    if run.last_failed:
        if not named or not reason:
            return ("a revision after a failed check names the declared fact that was wrong: give "
                    f"revises (one or more of {', '.join(PARTS)}) and reason (what the data or the "
                    f"question showed); the last failed checks: {', '.join(run.last_failed)}")
        unknown = [p for p in named if p not in PARTS]
        if unknown:
            return f"revises names unknown parts {unknown}; use {', '.join(PARTS)}"
        unnamed = [p for p in changed if p not in named]
        if unnamed:
            return f"the revision also changes {unnamed}, which revises does not name"
        weak = weakenings(old, contract, run.last_failed)
        if weak:
            return ("the revision weakens the contract to pass instead of fixing the SQL: "
                    + "; ".join(weak) + ". Correct the declared fact (e.g. the value as stored) or the SQL")
    if not changed:
        return "the revision changes nothing; repair the SQL instead"
    revision = ContractRevision(after_failure=list(run.last_failed), revises=named or changed,
                                reason=reason, before=describe_contract(old), after=describe_contract(contract))
    run.event("contract_revision", **revision.model_dump())
    return revision


def _ask(run: AnswerRun, args: dict[str, Any]) -> Any:
    question = str(args.get("question", "")).strip()
    run.clarify.asked()
    run.asks += 1
    if not question:
        return refuse({"error": "ask needs a question"})
    if run.agent.ask_user is None:
        run.clarifications.append(Clarification(question=question))
        run.finish("needs_clarification", question)
        return ToolOutput({"note": "no user is available; the question is returned to the caller"})
    if run.asks > run.settings.max_asks:
        return refuse({"error": f"at most {run.settings.max_asks} questions per answer; decide with the information you have"})
    answer = run.agent.ask_user(question)
    run.clarifications.append(Clarification(question=question, answer=answer or None))
    if not answer:
        return ToolOutput({"user_answer": None, "note": "the user gave no answer: choose the most plausible reading and say so in the answer"})
    return ToolOutput({"user_answer": answer})


def _submit(run: AnswerRun, args: dict[str, Any]) -> Any:
    s = run.settings
    contract = run.contract
    assert contract is not None
    raw = clean_sql(str(args.get("sql", "")))
    sql = apply_carryover(raw, run.previous, run.db.dialect)
    if run.resubmit.is_repeat(sql):
        return refuse({"error": (
            "policy (resubmission control): this SQL equals a recent submission after "
            "normalization; change the structural approach or ask")}, policy="resubmission")
    run.resubmit.remember(sql)
    run.attempts += 1
    if contract.kind == "modification":
        return _modify(run, sql, contract)
    gate = run.gate
    try:
        checked = gate.check(sql)
    except SQLRefused as err:
        return run.fail(err.signature, {"refused_before_execution": str(err)})
    try:  # the result goes to the user, not the model: shown=False
        _, output = gate.read(checked, max_rows=s.result_rows, timeout_s=max(s.timeout_s, 30.0), shown=False)
    except Exception as err:
        return run.fail(f"execution_error:{error_kind(err)}",
                          {"execution_error": gate.error_text(err, 600, sql=checked.text)})
    assert checked.qualified is not None
    verification = verify_result(contract, checked.text, checked.qualified, output, run.db, run.index,
                                 s.timeout_s, gate=gate, question=run.question)
    run.event("verification", attempt=run.attempts, sql=sql, passed=verification.passed,
                checks=[c.model_dump() for c in verification.checks])
    if not verification.passed:
        result: dict[str, Any] = {"columns": output.columns, "row_count": output.row_count}
        if shows_values(run.agent.privacy):
            result["first_rows"] = capped_rows(output.rows[:5], result_bytes())[0]
        run.last_failed = [c.name for c in verification.failed()]
        return run.fail(signature(verification), {
            "result": result,
            "verification_failed": [f"{c.name}: {c.detail}" for c in verification.failed()],
        }, verification=verification)
    feedback = _feedback(run, checked.text, output, args)
    if feedback:
        verification = Verification(passed=all(c.passed for c in feedback), checks=[*verification.checks, *feedback])
    if not verification.passed:
        failed = [c for c in feedback if not c.passed]
        run.last_failed = [c.name for c in failed]
        return run.fail(failed[0].name,
                          {"verification_failed": [f"{c.name}: {c.detail}" for c in failed]},
                          verification=verification)
    run.sql, run.output, run.verification = sql, output, verification
    run.answer = str(args.get("answer") or "")
    capped = f" (result capped at {output.row_count} rows)" if output.truncated else ""
    run.finish("answered", "verified against the contract" + capped)
    return ToolOutput({"accepted": True, "row_count": output.row_count,
                             "checks": [c.name for c in verification.checks]})


def _feedback(run: AnswerRun, sql: str, output: QueryOutput, args: dict[str, Any]) -> list[Check]:
    """Cross-validation against the submitted candidates, then pipeline-to-NL."""
    from dia_assets.agents.query.crosscheck import cross_validate, describe_sql, nl_agreement

    s = run.settings
    candidates = [str(c) for c in (args.get("candidates") or []) if str(c).strip()]
    if candidates:
        results: list[Any] = [output.rows]
        for cand in candidates[:4]:
            try:
                _, out = run.gate.read(clean_sql(cand), max_rows=s.result_rows, timeout_s=s.timeout_s, shown=False)
                results.append(out.rows)
            except Exception:
                results.append(None)
        ordered = bool(run.contract and run.contract.order)
        votes = cross_validate(results, ordered)
        agree = votes[0].frequency - 1
        run.event("cross_validation", candidates=len(candidates), agree=agree,
                    frequencies=[v.frequency for v in votes])
        if not votes[0].confirmed:
            return [Check(name="cross_validation", passed=False, detail=(
                f"{agree} of {len(candidates)} candidates give the submitted result; the majority "
                "disagrees or there is none: find which reading of the question is right and repair"))]
        checks = [Check(name="cross_validation", passed=True,
                        detail=f"{agree} of {len(candidates)} candidates agree (coverage {votes[0].coverage})")]
    else:
        checks = []
    if s.nl_check == "off":
        return checks
    description = describe_sql(sql, run.db.dialect)
    if s.nl_check in ("overlap", "embedding"):
        if s.nl_check == "overlap":
            score = nl_agreement(description, run.question)
        else:
            from dia_assets.agents.query.crosscheck import nl_similarity

            score = nl_similarity(description, run.question)
        ok = score >= s.nl_threshold
        detail = f"the SQL described as '{description[:200]}' scores {score:.2f} against the question ({s.nl_check})"
    else:
        prompt = fill(prompts()["nl_judge"], question=data_text(run.question), description=data_text(description))
        try:
            reply = run.call_model([{"role": "user", "content": prompt}], [], turn=-1)
        except Exception as err:  # no verdict: the contract's checks stand
            run.event("nl_judge_unavailable", error=f"{type(err).__name__}: {err}"[:200])
            return checks
        verdict = (reply.content or "").strip()
        ok = verdict.lower().startswith("yes")
        detail = f"judge on '{description[:160]}': {verdict[:200]}"
    run.event("pipeline_to_nl", passed=ok, detail=detail)
    return [*checks, Check(name="pipeline_to_nl", passed=ok, detail=detail)]


def _modify(run: AnswerRun, sql: str, contract: OutputContract) -> Any:
    try:
        checked = run.gate.check(sql, write=True)
    except SQLRefused as err:
        return run.fail(err.signature, {"refused_before_execution": str(err)})
    if not checked.is_write:
        return run.fail("not_a_modification",
                          {"error": "this is a modification task: submit the DDL/DML statement itself"})
    undeclared = checked.written_tables - {normalize_name(t) for t in contract.targets}
    if undeclared:
        return run.fail("undeclared_target", {"refused_before_execution": (
            f"the statement writes {', '.join(sorted(undeclared))}, which the contract does not "
            f"declare (targets: {', '.join(contract.targets)})")})
    assert contract.post_condition_sql
    outcome = run_modification(run.gate, [checked], contract.post_condition_sql, run.agent.allow_writes,
                               max(run.settings.timeout_s, 30.0))
    run.modification = outcome
    checks = [
        Check(name="post_condition", passed=outcome.scratch_passed, detail=outcome.detail),
        Check(name="applied", passed=True, detail="applied" if outcome.applied else "not applied"),
    ]
    verification = Verification(passed=outcome.scratch_passed, checks=checks)
    run.event("modification", sql=sql, outcome=outcome.model_dump())
    if not outcome.scratch_passed:
        return run.fail("post_condition", {"modification": outcome.detail}, verification=verification)
    run.sql, run.verification = sql, verification
    run.finish("answered", outcome.detail)
    return ToolOutput({"accepted": True, "modification": outcome.detail})
