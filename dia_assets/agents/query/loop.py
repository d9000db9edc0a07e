"""The Query Generator's agent loop (DIA §3.5): declare, explore, submit, verify, repair.

A plain loop over litellm tool calls. Each turn the model returns tool calls; the loop
dispatches the ones it allows, in order, and appends their delimited results. Policies
(App. D.5) gate the dispatch: nothing runs before a valid contract, a repeated submission
is refused, and after three failures with the same signature only `ask` is accepted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
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
    Explorer,
    capped_rows,
    data_text,
    fill,
    jsonable,
    prompts,
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

AskUser = Callable[[str], str | None]
DIALECT_NAMES = {"duckdb": "DuckDB", "postgres": "PostgreSQL", "sqlite": "SQLite"}


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


@dataclass
class _State:
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


class QueryAgent:
    """One warehouse, one schema index, one model; `answer` runs the loop for a question."""

    # the tools offered and dispatched; a subclass adds its own (agents/analysis/agent.py)
    tool_names: tuple[str, ...] = AGENT_TOOLS

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

    # -- the loop -----------------------------------------------------------------------

    def answer(
        self,
        question: str,
        question_id: str = "adhoc",
        previous: PreviousAnswer | None = None,
        known_clarifications: list[Clarification] | None = None,
    ) -> AgentRun:
        s = self.settings
        started = time.perf_counter()
        self._model_s = 0.0
        self._events: list[dict[str, Any]] = []
        self._usage = Usage()
        self._failure_notes: list[str] = []
        self._started = started
        self._previous = previous
        self._question = question
        self._warnings: list[str] = []
        self._gate = Gate(self.db, self.index.qualify_schema(), self.privacy)
        explorer = Explorer(self.db, self.index, self.memory, s.probe_rows, s.timeout_s, gate=self._gate)
        self._explorer = explorer
        self._resubmit = ResubmissionControl(self.db.dialect, s.resubmission_window)
        self._clarify = ForcedClarification(s.clarify_after)
        state = _State()
        tools = self._tool_specs()

        messages = self._opening(question, previous, known_clarifications or [])
        self._event("start", question=question, question_id=question_id, privacy=self.privacy,
                    prompt_chars=sum(len(m["content"]) for m in messages),
                    linked_tables=self._linked)
        turn = 0
        while not state.finished and turn < s.max_turns:
            turn += 1
            try:
                reply = self._call(messages, tools, turn)
            except Exception as err:  # provider down, auth, rate limit: keep the trace, say why
                why = str(err) if isinstance(err, ModelUnavailable) else f"{type(err).__name__}: {err}"
                self._finish(state, "failed", f"model call failed: {why}"[:500])
                break
            messages.append(reply.as_message())
            if not reply.tool_calls:
                state.nudges += 1
                if state.nudges > 3:
                    self._finish(state, "failed", "the model stopped calling tools")
                    break
                messages.append({"role": "user", "content": fill(prompts()["nudge"], tools=", ".join(self.tool_names))})
                continue
            for call in reply.tool_calls:
                # every tool call gets a result (providers require it); none runs after the end
                content = (wrap(call.name, {"skipped": "the loop has already finished"}) if state.finished
                           else self._dispatch(call, state))
                messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content})
        if not state.finished:
            self._finish(state, "failed", f"no accepted answer within {s.max_turns} turns")

        lessons = self._after(question, state, messages)
        return self._result(question, question_id, state, lessons, messages, started)

    def _tool_specs(self) -> list[dict[str, Any]]:
        return tool_specs(AGENT_TOOLS, self.settings.probe_rows, self.settings.timeout_s)

    def _opening(self, question: str, previous: PreviousAnswer | None,
                 clarifications: list[Clarification]) -> list[dict[str, Any]]:
        p = prompts()
        dialect = self.db.dialect
        system = fill(p["system"],
            dialect_name=DIALECT_NAMES.get(dialect, dialect),
            dialect_notes=p["dialect_notes"].get(dialect, "").strip(),
        )
        found: list[str] = []
        if self.catalog_link is not None:
            try:
                found = [t for t in self.catalog_link(question) if t in self.index.tables]
            except Exception as err:  # the catalog is an aid: link without it, say so in the trace
                found = []
                self._event("catalog_unavailable", error=f"{type(err).__name__}: {err}"[:300])
        memory = ""
        if self.memory is not None and self.settings.memory_refs:
            try:
                refs = self.memory.recall(question, self.settings.memory_refs)
            except Exception as err:  # memory down: answer without it, say so
                refs = []
                self._memory_down("recall", err)
            self._event("recall", query=question, refs=[r.__dict__ for r in refs], auto=True)
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

        def opening(plan: LinkPlan | None) -> list[dict[str, Any]]:
            """The two messages; with no plan, the frame alone (what the schema text must fit beside)."""
            schema = self.index.render(plan.full) if plan else ""
            if plan and plan.compact:
                schema += "\n" + self.index.render_compact(plan.compact, prefer=plan.names_column)
            others = sorted(set(self.index.tables) - set(plan.tables)) if plan else []
            user = fill(p["user"], question=question, schema=data_text(schema),
                        all_tables=", ".join(others) or "(none)", memory=memory, carryover=carry,
                        clarifications=known)
            return [{"role": "system", "content": system}, {"role": "user", "content": user}]

        s = self.settings
        linker = self.index.linker()
        if s.link_budget_tokens is None:
            plan = linker.plan(question, s.link_tables, extra=found)
        else:
            tools = self._tool_specs()
            room = s.link_budget_tokens - _tokens(opening(None), tools)
            plan = linker.plan(question, s.link_tables, budget_tokens=room, extra=found)
            while len(plan.tables) > 1 and _tokens(opening(plan), tools) > s.link_budget_tokens:
                if plan.compact:  # the character estimate was short
                    plan.compact = plan.compact[:-2]
                else:
                    plan.full = plan.full[:-1]
        self._linked = plan.tables
        if self.catalog_link is not None:
            self._event("catalog_link", tables=found, added=[t for t in found if t in plan.tables])
        return opening(plan)

    def _call(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: int) -> Reply:
        t0 = time.perf_counter()
        reply = self.chat(messages, tools)
        elapsed = time.perf_counter() - t0
        self._model_s += elapsed
        usage = {**reply.usage, "latency_s": round(reply.usage.get("latency_s", elapsed), 4)}
        self._usage.add(usage)
        self._event("model_call", turn=turn, usage=usage, content=reply.content,
                    tool_calls=[{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls])
        return reply

    def _event(self, event_name: str, /, **data: Any) -> None:
        self._events.append({"t": round(time.perf_counter() - self._started, 4), "event": event_name, **jsonable(data)})

    # -- dispatch -----------------------------------------------------------------------

    def _dispatch(self, call: ToolCall, state: _State) -> str:
        name = call.name
        if name not in self.tool_names:
            return self._tool(call, {"error": f"unknown tool {name!r}; allowed: {', '.join(self.tool_names)}"}, refused=True)
        try:
            args = call.args()
        except ValueError as err:
            return self._tool(call, {"error": str(err)}, refused=True)
        if self._clarify.must_ask and name != "ask":
            return self._tool(call, {"error": (
                f"policy (forced clarification): {self.settings.clarify_after} consecutive failures "
                f"with the same signature ({self._clarify.last_signature}); your next action must be "
                "ask: put one precise question to the user")}, refused=True)
        if state.contract is None and name not in ("declare_contract", "ask"):
            return self._tool(call, {"error": "declare the output contract first (declare_contract); nothing else runs before it"}, refused=True)
        handler = getattr(self, f"_tool_{name}", None)
        if handler is not None:
            return handler(call, args, state)
        ex = self._explorer
        if name == "probe":
            payload = ex.probe(str(args.get("sql", "")))
        elif name == "describe_table":
            payload = ex.describe_table(str(args.get("name", "")))
        elif name == "search_schema":
            payload = ex.search_schema(str(args.get("term", "")))
        else:  # recall, read_memory: the memory store may be down; the answer goes on without it
            try:
                payload = (ex.recall(str(args.get("query", ""))) if name == "recall"
                           else ex.read_memory(str(args.get("id", ""))))
            except Exception as err:
                self._memory_down("recall", err)
                payload = {"error": "the memory store is unavailable; continue without it"}
        return self._tool(call, payload)

    def _tool(self, call: ToolCall, payload: Any, refused: bool = False, **extra: Any) -> str:
        text = wrap(call.name, payload)
        self._event("tool", name=call.name, arguments=call.arguments, refused=refused,
                    result=text[:4000], **extra)
        return text

    def _tool_declare_contract(self, call: ToolCall, args: dict[str, Any], state: _State) -> str:
        try:
            contract = parse_contract(args, self.index.qualify_schema(), self.db.dialect)
        except ContractError as err:
            return self._tool(call, {"error": str(err)}, refused=True)
        revised = state.contract is not None
        if revised and contract.kind != state.contract.kind:  # type: ignore[union-attr]
            # text in the data must never turn a question into a write (or back)
            return self._tool(call, {"error": (
                f"the contract's kind is {state.contract.kind} for this run and cannot change "  # type: ignore[union-attr]
                f"to {contract.kind}; ask a new question for a {contract.kind} task")}, refused=True)
        if revised:
            refusal = self._revision_refusal(state, contract, args)
            if isinstance(refusal, str):
                return self._tool(call, {"error": refusal}, refused=True, policy="contract_revision")
            state.revisions.append(refusal)
            state.last_failed = []
        state.contract = contract
        self._event("contract", contract=contract.model_dump(), revised=revised)
        return self._tool(call, {"accepted": True, "contract": describe_contract(contract)})

    def _revision_refusal(self, state: _State, contract: OutputContract,
                          args: dict[str, Any]) -> str | ContractRevision:
        """A re-declaration is budgeted, names the declared fact that was wrong, and never
        removes the declaration a check just failed on (so it cannot weaken to pass)."""
        old = state.contract
        assert old is not None
        budget = self.settings.max_revisions
        if len(state.revisions) >= budget:
            return (f"policy (contract revisions): the contract was already revised {budget} times; "
                    "repair the SQL against it, or ask")
        changed = changed_parts(old, contract)
        raw = args.get("revises") or []
        named = [str(p).strip().lower() for p in ([raw] if isinstance(raw, str) else raw) if str(p).strip()]
        reason = str(args.get("reason") or "").strip()
        if state.last_failed:
            if not named or not reason:
                return ("a revision after a failed check names the declared fact that was wrong: give "
                        f"revises (one or more of {', '.join(PARTS)}) and reason (what the data or the "
                        f"question showed); the last failed checks: {', '.join(state.last_failed)}")
            unknown = [p for p in named if p not in PARTS]
            if unknown:
                return f"revises names unknown parts {unknown}; use {', '.join(PARTS)}"
            unnamed = [p for p in changed if p not in named]
            if unnamed:
                return f"the revision also changes {unnamed}, which revises does not name"
            weak = weakenings(old, contract, state.last_failed)
            if weak:
                return ("the revision weakens the contract to pass instead of fixing the SQL: "
                        + "; ".join(weak) + ". Correct the declared fact (e.g. the value as stored) or the SQL")
        if not changed:
            return "the revision changes nothing; repair the SQL instead"
        revision = ContractRevision(after_failure=list(state.last_failed), revises=named or changed,
                                    reason=reason, before=describe_contract(old), after=describe_contract(contract))
        self._event("contract_revision", **revision.model_dump())
        return revision

    def _tool_ask(self, call: ToolCall, args: dict[str, Any], state: _State) -> str:
        question = str(args.get("question", "")).strip()
        self._clarify.asked()
        state.asks += 1
        if not question:
            return self._tool(call, {"error": "ask needs a question"}, refused=True)
        if self.ask_user is None:
            state.clarifications.append(Clarification(question=question))
            self._finish(state, "needs_clarification", question)
            return self._tool(call, {"note": "no user is available; the question is returned to the caller"})
        if state.asks > self.settings.max_asks:
            return self._tool(call, {"error": f"at most {self.settings.max_asks} questions per answer; decide with the information you have"}, refused=True)
        answer = self.ask_user(question)
        state.clarifications.append(Clarification(question=question, answer=answer or None))
        if not answer:
            return self._tool(call, {"user_answer": None, "note": "the user gave no answer: choose the most plausible reading and say so in the answer"})
        return self._tool(call, {"user_answer": answer})

    def _tool_submit(self, call: ToolCall, args: dict[str, Any], state: _State) -> str:
        s = self.settings
        contract = state.contract
        assert contract is not None
        raw = clean_sql(str(args.get("sql", "")))
        sql = apply_carryover(raw, self._previous, self.db.dialect)
        if self._resubmit.is_repeat(sql):
            return self._tool(call, {"error": (
                "policy (resubmission control): this SQL equals a recent submission after "
                "normalization; change the structural approach or ask")}, refused=True, policy="resubmission")
        self._resubmit.remember(sql)
        state.attempts += 1
        if contract.kind == "modification":
            return self._modify(call, sql, contract, state)
        gate = self._gate
        try:
            checked = gate.check(sql)
        except SQLRefused as err:
            return self._fail(call, state, err.signature, {"refused_before_execution": str(err)})
        try:  # the result goes to the user, not the model: shown=False
            _, output = gate.read(checked, max_rows=s.result_rows, timeout_s=max(s.timeout_s, 30.0), shown=False)
        except Exception as err:
            return self._fail(call, state, f"execution_error:{error_kind(err)}",
                              {"execution_error": gate.error_text(err, 600, sql=checked.text)})
        assert checked.qualified is not None
        verification = verify_result(contract, checked.text, checked.qualified, output, self.db, self.index,
                                     s.timeout_s, gate=gate, question=self._question)
        self._event("verification", attempt=state.attempts, sql=sql, passed=verification.passed,
                    checks=[c.model_dump() for c in verification.checks])
        if not verification.passed:
            result: dict[str, Any] = {"columns": output.columns, "row_count": output.row_count}
            if shows_values(self.privacy):
                result["first_rows"] = capped_rows(output.rows[:5], result_bytes())[0]
            state.last_failed = [c.name for c in verification.failed()]
            return self._fail(call, state, signature(verification), {
                "result": result,
                "verification_failed": [f"{c.name}: {c.detail}" for c in verification.failed()],
            }, verification=verification)
        feedback = self._feedback(checked.text, output, args, state)
        if feedback:
            verification = Verification(passed=all(c.passed for c in feedback), checks=[*verification.checks, *feedback])
        if not verification.passed:
            failed = [c for c in feedback if not c.passed]
            state.last_failed = [c.name for c in failed]
            return self._fail(call, state, failed[0].name,
                              {"verification_failed": [f"{c.name}: {c.detail}" for c in failed]},
                              verification=verification)
        state.sql, state.output, state.verification = sql, output, verification
        state.answer = str(args.get("answer") or "")
        capped = f" (result capped at {output.row_count} rows)" if output.truncated else ""
        self._finish(state, "answered", "verified against the contract" + capped)
        return self._tool(call, {"accepted": True, "row_count": output.row_count,
                                 "checks": [c.name for c in verification.checks]})

    def _feedback(self, sql: str, output: QueryOutput, args: dict[str, Any], state: _State) -> list[Check]:
        """Cross-validation against the submitted candidates, then pipeline-to-NL."""
        from dia_assets.agents.query.crosscheck import cross_validate, describe_sql, nl_agreement

        s = self.settings
        candidates = [str(c) for c in (args.get("candidates") or []) if str(c).strip()]
        if candidates:
            results: list[Any] = [output.rows]
            for cand in candidates[:4]:
                try:
                    _, out = self._gate.read(clean_sql(cand), max_rows=s.result_rows, timeout_s=s.timeout_s, shown=False)
                    results.append(out.rows)
                except Exception:
                    results.append(None)
            ordered = bool(state.contract and state.contract.order)
            votes = cross_validate(results, ordered)
            agree = votes[0].frequency - 1
            self._event("cross_validation", candidates=len(candidates), agree=agree,
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
        description = describe_sql(sql, self.db.dialect)
        if s.nl_check in ("overlap", "embedding"):
            if s.nl_check == "overlap":
                score = nl_agreement(description, self._question)
            else:
                from dia_assets.agents.query.crosscheck import nl_similarity

                score = nl_similarity(description, self._question)
            ok = score >= s.nl_threshold
            detail = f"the SQL described as '{description[:200]}' scores {score:.2f} against the question ({s.nl_check})"
        else:
            prompt = fill(prompts()["nl_judge"], question=data_text(self._question), description=data_text(description))
            try:
                reply = self._call([{"role": "user", "content": prompt}], [], turn=-1)
            except Exception as err:  # no verdict: the contract's checks stand
                self._event("nl_judge_unavailable", error=f"{type(err).__name__}: {err}"[:200])
                return checks
            verdict = (reply.content or "").strip()
            ok = verdict.lower().startswith("yes")
            detail = f"judge on '{description[:160]}': {verdict[:200]}"
        self._event("pipeline_to_nl", passed=ok, detail=detail)
        return [*checks, Check(name="pipeline_to_nl", passed=ok, detail=detail)]

    def _modify(self, call: ToolCall, sql: str, contract: OutputContract, state: _State) -> str:
        try:
            checked = self._gate.check(sql, write=True)
        except SQLRefused as err:
            return self._fail(call, state, err.signature, {"refused_before_execution": str(err)})
        if not checked.is_write:
            return self._fail(call, state, "not_a_modification",
                              {"error": "this is a modification task: submit the DDL/DML statement itself"})
        undeclared = checked.written_tables - {normalize_name(t) for t in contract.targets}
        if undeclared:
            return self._fail(call, state, "undeclared_target", {"refused_before_execution": (
                f"the statement writes {', '.join(sorted(undeclared))}, which the contract does not "
                f"declare (targets: {', '.join(contract.targets)})")})
        assert contract.post_condition_sql
        outcome = run_modification(self._gate, [checked], contract.post_condition_sql, self.allow_writes,
                                   max(self.settings.timeout_s, 30.0))
        state.modification = outcome
        checks = [
            Check(name="post_condition", passed=outcome.scratch_passed, detail=outcome.detail),
            Check(name="applied", passed=True, detail="applied" if outcome.applied else "not applied"),
        ]
        verification = Verification(passed=outcome.scratch_passed, checks=checks)
        self._event("modification", sql=sql, outcome=outcome.model_dump())
        if not outcome.scratch_passed:
            return self._fail(call, state, "post_condition", {"modification": outcome.detail}, verification=verification)
        state.sql, state.verification = sql, verification
        self._finish(state, "answered", outcome.detail)
        return self._tool(call, {"accepted": True, "modification": outcome.detail})

    def _fail(self, call: ToolCall, state: _State, sig: str, payload: dict[str, Any],
              verification: Verification | None = None) -> str:
        s = self.settings
        state.failures.append(sig)
        self._failure_notes.append(f"{sig}: {json.dumps(jsonable(payload), ensure_ascii=False)[:300]}")
        if verification is not None:
            state.verification = verification
        must_ask = self._clarify.failure(sig)
        payload = {**payload, "attempt": f"{state.attempts} of {s.max_attempts}", "signature": sig}
        if state.attempts >= s.max_attempts:
            self._finish(state, "failed", f"no verified answer after {state.attempts} attempts (last: {sig})")
        elif must_ask:
            payload["policy"] = (f"forced clarification: {s.clarify_after} consecutive failures with "
                                 f"signature {sig}; your next action must be ask")
        self._event("failure", attempt=state.attempts, signature=sig, must_ask=must_ask)
        return self._tool(call, payload, refused=True)

    def _finish(self, state: _State, status: str, message: str) -> None:
        state.finished, state.status, state.message = True, status, message
        self._event("finish", status=status, message=message)

    # -- after the answer: outcomes, reflection, preference lessons -------------------------

    def _memory_down(self, step: str, err: BaseException) -> None:
        """A memory outage costs the lesson, never the answer (issue 11)."""
        what = "memory not consulted" if step == "recall" else "lesson not recorded"
        warning = f"{what}: the memory store is unavailable ({type(err).__name__}: {err})"[:300]
        if any(w.startswith(what) for w in self._warnings):
            return
        self._warnings.append(warning)
        self._event("memory_unavailable", step=step, warning=warning)

    def _after(self, question: str, state: _State, messages: list[dict[str, Any]]) -> list[str]:
        written: list[str] = []
        try:
            self._after_memory(question, state, messages, written)
        except Exception as err:  # the verified answer stands; the lesson waits for next time
            self._memory_down("reflection", err)
        return written

    def _after_memory(self, question: str, state: _State, messages: list[dict[str, Any]],
                      written: list[str]) -> list[str]:
        if self.memory is None:
            return written
        for item_id, (usable, _detail, _title) in self._explorer.memory_checked.items():
            if usable:
                self.memory.record_outcome(item_id, state.status == "answered")
        if state.status != "answered":
            return written
        if self.settings.reflect:
            written += self._reflect(question, state, messages)
        answered = [c for c in state.clarifications if c.answer]
        probe = preference_probe(state.sql, self.db.dialect, self.index.qualify_schema()) if answered else None
        for c in answered:
            title = f"User preference: {c.question}"[:200]
            if probe is None:  # nothing in the data tests it: unverifiable, so never stored as usable
                self._event("lesson_refused", kind="preference", title=title,
                            reason="unverifiable: the accepted SQL filters on no stored value a probe could test")
                continue
            lesson = Lesson(
                kind="preference",
                title=title,
                rule=f"Asked '{c.question}', the user answered: {c.answer}. It led to a verified answer to: {question}",
                probe_sql=probe,
                evidence=[f"question: {question}", f"accepted SQL: {state.sql}"],
                question=question,
            )
            written.append(self.memory.write_lesson(lesson))
            self._event("lesson", kind="preference", title=lesson.title, probe_sql=probe)
        return written

    def _reflect(self, question: str, state: _State, messages: list[dict[str, Any]]) -> list[str]:
        assert self.memory is not None
        failures = "\n".join(data_text(f) for f in self._failure_notes) or "none"
        convo = [*messages, {"role": "user", "content": fill(prompts()["reflect"], failures=failures)}]
        self._event("reflection_prompt", content=convo[-1]["content"])  # the trace shows all that was sent
        written: list[str] = []
        try:
            reply = self._call(convo, tool_specs(("write_lesson",)), turn=0)
        except Exception as err:
            self._event("lesson_refused", reason=f"reflection call failed: {type(err).__name__}: {err}"[:300])
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
                              f"accepted SQL: {state.sql}"],
                    question=question,
                )
                rows = self._explorer.probe_rows(lesson.probe_sql)
            except Exception as err:
                self._event("lesson_refused", reason=f"{type(err).__name__}: {err}"[:300])
                continue
            from dia_assets.agents.query.memory import probe_confirms

            if not probe_confirms(rows):
                self._event("lesson_refused", reason="its precondition probe does not confirm here", title=lesson.title)
                continue
            written.append(self.memory.write_lesson(lesson))
            self._event("lesson", kind=lesson.kind, title=lesson.title, probe_sql=lesson.probe_sql)
        return written

    # -- result ------------------------------------------------------------------------------

    def _result(self, question: str, question_id: str, state: _State, lessons: list[str],
                messages: list[dict[str, Any]], started: float) -> AgentRun:
        s = self.settings
        total = time.perf_counter() - started
        out = state.output
        result = QueryResult(
            question_id=question_id, question=question, status=state.status,  # type: ignore[arg-type]
            message=state.message, sql=state.sql, dialect=self.db.dialect,
            transpiled=transpile_all(state.sql, self.db.dialect, s.transpile_to) if state.sql else {},
            contract=state.contract, verification=state.verification, attempts=state.attempts,
            contract_revisions=state.revisions,
            row_count=out.row_count if out else 0, columns=out.columns if out else [],
            preview=shown_rows(state.sql, self.db.dialect, out.rows, s.preview_rows) if out else [],
            answer=state.answer,
            lineage=(column_lineage(state.sql, self.index.qualify_schema(), self.db.dialect)
                     if state.sql and out is not None else {}),
            reads=(sql_reads(state.sql, self.index.qualify_schema(), self.db.dialect)
                   if state.sql and out is not None else {}),
            memory_used=[MemoryUse(id=i, title=t, verified=u, detail=d)
                         for i, (u, d, t) in self._explorer.memory_checked.items()],
            lessons_written=lessons, clarifications=state.clarifications,
            modification=state.modification, tokens=self._usage,
            latency_s=round(total, 4), overhead_s=round(total - self._model_s, 4),
            privacy=self.privacy, warnings=list(self._warnings),
        )
        trace = {
            "version": 1, "question_id": question_id, "question": question,
            "dialect": self.db.dialect, "warehouse": self.db.location,
            "settings": jsonable(s.__dict__), "status": state.status, "failures": state.failures,
            "contract": state.contract.model_dump() if state.contract else None,
            "sql": state.sql, "verification": state.verification.model_dump(),
            "contract_revisions": [r.model_dump() for r in state.revisions],
            "events": self._events, "messages": jsonable(messages),
            "usage": self._usage.model_dump(), "latency_s": result.latency_s,
            "privacy": self.privacy, "warnings": self._warnings,
            "overhead_s": result.overhead_s,
        }
        return AgentRun(result=result, output=out, trace=trace)
