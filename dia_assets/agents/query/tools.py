"""The agent's tools: `Tool` objects (name, description, JSON-schema parameters, a function of
the run and the arguments), the exploration tools, and the delimiting of tool results.

Tool results are JSON inside `<tool_result name=...>` blocks; every `<` inside is escaped
(`\\u003c`), so a data value can never close the block or open another one. The loop acts
only on the structured tool calls it allows, never on text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import yaml

from dia_assets.agents.jsonable import jsonable
from dia_assets.agents.query.dialects import Database, QueryOutput
from dia_assets.agents.query.memory import QueryMemory
from dia_assets.agents.query.schema import SchemaIndex
from dia_assets.platform.settings import get_settings
from dia_assets.platform.sql.gate import Gate, privacy_mode
from dia_assets.platform.sql.safety import SQLRefused

PROMPTS = Path(__file__).resolve().parents[2] / "prompts" / "query_agent.yaml"

_STR = {"type": "string"}
_PARAMETERS: dict[str, dict[str, Any]] = {
    "declare_contract": {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": ["analytical", "modification"]},
            "columns": {"type": "array", "items": _STR},
            "granularity": {
                "type": "object",
                "properties": {"description": _STR, "key_columns": {"type": "array", "items": _STR}},
            },
            "order": {
                "type": "array",
                "items": {"type": "object", "properties": {
                    "column": _STR, "direction": {"type": "string", "enum": ["asc", "desc"]}},
                    "required": ["column"]},
            },
            "filters": {
                "type": "array",
                "items": {"type": "object", "properties": {
                    "description": _STR, "column": _STR, "op": _STR, "value": {}},
                    "required": ["description"]},
            },
            "entity_key": _STR,
            "allow_empty": {"type": "boolean"},
            "limit": {"type": "integer"},
            "revises": {"type": "array", "items": _STR},
            "reason": _STR,
            "targets": {"type": "array", "items": _STR},
            "post_condition_sql": _STR,
        },
        "required": ["kind"],
    },
    "probe": {"type": "object", "properties": {"sql": _STR}, "required": ["sql"]},
    "describe_table": {"type": "object", "properties": {"name": _STR}, "required": ["name"]},
    "search_schema": {"type": "object", "properties": {"term": _STR}, "required": ["term"]},
    "recall": {"type": "object", "properties": {"query": _STR}, "required": ["query"]},
    "read_memory": {"type": "object", "properties": {"id": _STR}, "required": ["id"]},
    "submit": {"type": "object", "properties": {"sql": _STR, "answer": _STR,
                                                "candidates": {"type": "array", "items": _STR}},
               "required": ["sql"]},
    "ask": {"type": "object", "properties": {"question": _STR}, "required": ["question"]},
    "write_lesson": {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": ["join", "aggregation", "filter", "output_convention",
                                                "grounding", "formula", "preference"]},
            "title": _STR, "rule": _STR, "probe_sql": _STR,
            "evidence": {"type": "array", "items": _STR},
        },
        "required": ["kind", "title", "rule", "probe_sql"],
    },
}
AGENT_TOOLS = ("declare_contract", "probe", "describe_table", "search_schema", "recall",
               "read_memory", "submit", "ask")


@lru_cache(maxsize=1)
def prompts() -> dict[str, Any]:
    return yaml.safe_load(PROMPTS.read_text(encoding="utf-8"))


def fill(template: str, **values: Any) -> str:
    """Replace `{name}` placeholders only; other braces in prompt text stay as written."""
    for key, value in values.items():
        template = template.replace("{" + key + "}", str(value))
    return template


@dataclass
class ToolOutput:
    """What a tool function returns: the payload the model reads, whether the call was refused,
    and extra fields for the trace's `tool` event (e.g. the policy that refused it)."""

    payload: Any
    refused: bool = False
    event: dict[str, Any] = field(default_factory=dict)


def refuse(payload: Any, **event: Any) -> ToolOutput:
    return ToolOutput(payload, refused=True, event=event)


# the function of a tool: (the AnswerRun, the parsed arguments) -> a ToolOutput, or a plain
# payload meaning an accepted call
ToolFunction = Callable[[Any, dict[str, Any]], Any]


@dataclass(frozen=True)
class Tool:
    """One tool the agent offers: what the model sees (name, description, JSON-schema
    parameters) and what runs. The loop dispatches by name through the agent's list of tools,
    so an agent built on the Query Generator adds a Tool instead of overriding the loop."""

    name: str
    description: str  # `{max_rows}` and `{timeout_s}` are filled from the agent's settings
    parameters: dict[str, Any]
    function: ToolFunction

    def spec(self, max_rows: int = 50, timeout_s: float = 10.0) -> dict[str, Any]:
        """The litellm (OpenAI) tool schema."""
        return {"type": "function", "function": {
            "name": self.name,
            "description": fill(self.description, max_rows=max_rows, timeout_s=timeout_s).strip(),
            "parameters": self.parameters,
        }}


def prompt_tool(name: str, function: ToolFunction) -> Tool:
    """A tool whose description is in prompts/query_agent.yaml and schema in `_PARAMETERS`."""
    return Tool(name, prompts()["tools"][name], _PARAMETERS[name], function)


def _not_dispatched(run: Any, args: dict[str, Any]) -> Any:
    raise RuntimeError("this tool's calls are read by the loop itself, never dispatched")


def tool_specs(names: tuple[str, ...], max_rows: int = 50, timeout_s: float = 10.0) -> list[dict[str, Any]]:
    """Schemas of the named prompt tools (the reflection's `write_lesson`, benches, tests)."""
    return [prompt_tool(name, _not_dispatched).spec(max_rows, timeout_s) for name in names]



def data_text(text: Any) -> str:
    """Text placed inside a <data> block of a prompt: it can never close or open a tag."""
    return str(text).replace("<", "\\u003c")


def wrap(name: str, payload: Any) -> str:
    """Delimit a tool result; data can never close the block."""
    body = json.dumps(jsonable(payload), ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
    return f'<tool_result name="{name}">\n{body}\n</tool_result>'


def result_bytes() -> int:
    """The byte cap on rows returned to a model or an MCP host (DIA_RESULT_BYTES, default 1 MB)."""
    return max(1_000, int(get_settings().result_bytes))


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


def capped_rows(rows: list[tuple[Any, ...]], max_bytes: int) -> tuple[list[list[Any]], str | None]:
    """The leading rows whose JSON fits in `max_bytes`, and a note when some were left out.
    A first row too big on its own is kept with its long values cut, so the caller still
    sees the columns' shape."""
    kept: list[list[Any]] = []
    used = 2
    for row in rows:
        cells = [jsonable(v) for v in row]
        size = _size(cells) + 1
        if used + size <= max_bytes:
            kept.append(cells)
            used += size
            continue
        if kept:
            return kept, (f"rows cut at {max_bytes:,} bytes (DIA_RESULT_BYTES): {len(kept)} of "
                          f"{len(rows)} rows shown; aggregate or select fewer columns")
        share = max(16, max_bytes // (2 * max(1, len(cells))))
        cut = [_cut(v, share) for v in cells]
        while _size(cut) > max_bytes and share > 16:  # escapes can make JSON longer than the text
            share //= 2
            cut = [_cut(v, share) for v in cells]
        return [cut], (f"values longer than {share:,} bytes cut to stay within {max_bytes:,} bytes "
                       "(DIA_RESULT_BYTES); select a shorter expression (left(x, n)) or aggregate")
    return kept, None


def _cut(value: Any, limit: int) -> Any:
    """`value` as at most `limit` bytes of UTF-8 text plus `…` when it is longer (lists and
    structs as their JSON text)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    data = text.encode("utf-8")
    if len(data) <= limit:
        return value
    return data[:limit].decode("utf-8", "ignore") + "…"


def table_payload(output: QueryOutput, limit: int = 20, max_bytes: int | None = None) -> dict[str, Any]:
    rows, note = capped_rows(output.rows[:limit], max_bytes or result_bytes())
    payload: dict[str, Any] = {
        "columns": output.columns,
        "rows": rows,
        "row_count": output.row_count if not output.truncated else f">{output.row_count}",
        "shown": len(rows),
    }
    if note:
        payload["cut"] = note
    return payload


class Explorer:
    """The read-only exploration tools over one warehouse, schema index and memory. Every
    statement goes through the gate."""

    def __init__(self, db: Database, index: SchemaIndex, memory: QueryMemory | None,
                 max_rows: int = 50, timeout_s: float = 10.0, gate: Gate | None = None) -> None:
        self.db, self.index, self.memory = db, index, memory
        self.max_rows, self.timeout_s = max_rows, timeout_s
        self.gate = gate or Gate(db, index.qualify_schema(), privacy_mode())
        self.max_bytes = result_bytes()  # a bad DIA_RESULT_BYTES fails here, before any question
        self.memory_checked: dict[str, tuple[bool, str, str]] = {}  # id -> (usable, detail, title)

    def probe(self, sql: str) -> dict[str, Any]:
        try:
            checked = self.gate.check(sql)
            _, out = self.gate.read(checked, max_rows=self.max_rows, timeout_s=self.timeout_s)
        except SQLRefused as err:
            return {"error": str(err), "refused": True}
        except Exception as err:
            return {"error": self.gate.error_text(err)}
        return table_payload(out, self.max_rows, self.max_bytes)

    def probe_rows(self, sql: str) -> list[tuple[Any, ...]]:
        """For memory probes: the same gate, raising on refusal."""
        return list(self.gate.rows(sql, 5, self.timeout_s))

    def describe_table(self, name: str) -> dict[str, Any]:
        info = self.index.describe(name)
        if info is None:
            from difflib import get_close_matches

            close = get_close_matches(name, list(self.index.tables), n=3, cutoff=0.4)
            return {"error": f"no table {name!r}", "closest": close}
        return info

    def search_schema(self, term: str) -> dict[str, Any]:
        return {"term": term, "matches": self.index.search(term)}

    def recall(self, query: str) -> dict[str, Any]:
        if self.memory is None:
            return {"refs": [], "note": "no memory configured"}
        return {"refs": [{"id": r.id, "title": r.title, "score": r.score, "kind": r.kind}
                         for r in self.memory.recall(query, k=5)]}

    def read_memory(self, item_id: str) -> dict[str, Any]:
        if self.memory is None:
            return {"error": "no memory configured"}
        item = self.memory.pull(str(item_id))
        if item is None:
            return {"error": f"no memory item {item_id}"}
        usable, detail = self.memory.verify(item, self.probe_rows)
        self.memory_checked[item.id] = (usable, detail, item.title)
        if not usable:
            return {"id": item.id, "title": item.title, "refused": True,
                    "detail": f"stale: its precondition does not hold on this database ({detail}); do not use it"}
        return {"id": item.id, "title": item.title, "kind": item.kind, "rule": item.body,
                "probe_sql": item.probe_sql, "verified": detail}


class ExplorerRun(Protocol):
    """What the exploration tools need of a run (loop.AnswerRun)."""

    explorer: Explorer

    def memory_down(self, step: str, err: BaseException) -> None: ...


def _probe(run: ExplorerRun, args: dict[str, Any]) -> Any:
    return run.explorer.probe(str(args.get("sql", "")))


def _describe_table(run: ExplorerRun, args: dict[str, Any]) -> Any:
    return run.explorer.describe_table(str(args.get("name", "")))


def _search_schema(run: ExplorerRun, args: dict[str, Any]) -> Any:
    return run.explorer.search_schema(str(args.get("term", "")))


def _recall(run: ExplorerRun, args: dict[str, Any]) -> Any:
    try:  # the memory store may be down; the answer goes on without it
        return run.explorer.recall(str(args.get("query", "")))
    except Exception as err:
        run.memory_down("recall", err)
        return {"error": "the memory store is unavailable; continue without it"}


def _read_memory(run: ExplorerRun, args: dict[str, Any]) -> Any:
    try:
        return run.explorer.read_memory(str(args.get("id", "")))
    except Exception as err:
        run.memory_down("recall", err)
        return {"error": "the memory store is unavailable; continue without it"}


EXPLORER_FUNCTIONS: dict[str, ToolFunction] = {
    "probe": _probe, "describe_table": _describe_table, "search_schema": _search_schema,
    "recall": _recall, "read_memory": _read_memory,
}
