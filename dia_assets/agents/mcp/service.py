"""What `dia mcp` serves, as plain Python: the tools and resources over one warehouse and
workspace (DIA_WAREHOUSE, DIA_WORKSPACE). `dia_assets/cli/mcp_server.py` only wires these into
the MCP SDK.

An MCP host is a model: everything returned here is shown to one, so the privacy mode
(DIA_PRIVACY) applies as it does to the Query Generator's own model:

- `run_sql` is the agent's `probe` tool: the same gate (allow-list, refined tables only, no
  writes), the same least-privileged connection and timeout, and the same privacy rule on
  what comes back (schema-only: counts only; aggregates: aggregate statistics only), a page
  at a time with a cursor for the next (agents/mcp/paging.py);
- `describe_table` carries sample values only in `samples` mode;
- `ask` returns result rows only in `samples` mode (otherwise the SQL, verification, row
  count and chart without rows; the user reads the rows in `queries/<id>/`);
- engine errors come back redacted (agents/query/redaction.py): the error class, the failure
  and the column, never the value that failed;
- the interpretation, manifest and validation report (whole, and so their summaries) are
  shown through `privacy.artifact_view` outside `samples` mode: no value-bearing fields (top
  values, examples, min/max, category maps, ...), SQL without its literals, quoted text cut;
  `list_answers` leaves out answer text there, and masks SQL literals the same way.

Every tool checks its inputs (INPUT_LIMITS, NUMBER_LIMITS) and answers with a message, and
rows are capped in bytes as well as in number (DIA_RESULT_BYTES, default 1 MB): the rest
comes on the next page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dia_assets.agents.locations import default_warehouse, workspace_root
from dia_assets.agents.mcp.privacy import artifact_view
from dia_assets.agents.query import AgentSettings, capped_rows, checked_question_id, result_bytes
from dia_assets.platform.model.base import ChatFn
from dia_assets.platform.model.errors import NO_MODEL_MESSAGE
from dia_assets.platform.settings import get_settings
from dia_assets.platform.sql.gate import Gate, privacy_mode, shows_values
from dia_assets.platform.sql.redaction import schema_words
from dia_assets.platform.sql.safety import SQLRefused
from dia_assets.platform.warehouse.base import target_dialect
from dia_assets.platform.workspace import Workspace

# the longest input each tool takes, in characters (a SELECT or a lineage target may be long)
INPUT_LIMITS = {"name": 512, "sql": 100_000, "question": 8_000, "question_id": 200, "target": 100_000,
                "query": 2_000, "cursor": 1_000}
# the bounds of numeric inputs (inclusive); the MCP server publishes the same in its schemas
NUMBER_LIMITS = {"k": (1, 50), "page_size": (1, 500)}


_RELATIVE = Workspace(Path())  # the tree's paths relative to its root
RESOURCES = {
    "interpretation": (str(_RELATIVE.interpretation), "The Data Interpreter's interpretation of the raw files."),
    "manifest": (str(_RELATIVE.manifest), "The Schema Creator's manifest: tables, columns, keys, sources."),
    "validation": (str(_RELATIVE.report), "The validation report of the last build."),
}


class ToolRefused(ValueError):
    """A tool call refused or failed with a message for the host; never a traceback."""


def bounded_number(field_name: str, value: Any) -> int:
    """A tool's whole-number input, refused with a message outside NUMBER_LIMITS."""
    low, high = NUMBER_LIMITS[field_name]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ToolRefused(f"{field_name} must be a whole number from {low} to {high} (got {value!r})")
    return value


def bounded(field_name: str, value: Any) -> str:
    """A tool's text input, refused with a message when it is not text or too long."""
    if not isinstance(value, str):
        raise ToolRefused(f"{field_name} must be text (got {type(value).__name__})")
    limit = INPUT_LIMITS[field_name]
    if len(value) > limit:
        raise ToolRefused(f"{field_name} is {len(value):,} characters long; at most {limit:,} are accepted")
    return value


@dataclass
class DiaService:
    """Tools and resources over one warehouse. Opens a read-only connection per call, so a
    build can swap the warehouse while the server runs."""

    warehouse: str = field(default_factory=default_warehouse)
    workspace: Path = field(default_factory=workspace_root)
    privacy: str = field(default_factory=privacy_mode)
    settings: AgentSettings = field(default_factory=AgentSettings)
    chat: ChatFn | None = None  # default: litellm over DIA_MODEL
    memory_factory: Callable[[], Any] | None = None  # default: the shared store (DIA_MEMORY_URL or pgdata)
    use_memory: bool = True
    _store: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.workspace = Path(self.workspace)
        self.privacy = privacy_mode(self.privacy)

    @property
    def files(self) -> Workspace:
        """The workspace tree (platform/workspace.py)."""
        return Workspace(self.workspace)

    # -- plumbing ---------------------------------------------------------------------

    def _open(self) -> Any:
        from dia_assets.platform.warehouse.base import connect as open_database

        if target_dialect(self.warehouse).file_based and not Path(self.warehouse).exists():
            raise ToolRefused(f"no warehouse at {self.warehouse}: build one first (dia build DIR or make demo), "
                              "or set DIA_WAREHOUSE")
        try:
            return open_database(self.warehouse)
        except Exception as err:
            raise ToolRefused(f"cannot open the warehouse {self.warehouse}: {type(err).__name__}: {err}") from err

    def _index(self, db: Any) -> Any:
        from dia_assets.agents.query import schema_index

        index = schema_index(db, self.files.manifest)
        return index if shows_values(self.privacy) else index.without_values()

    def _with_db(self, fn: Callable[[Any, Any], Any]) -> Any:
        db = self._open()
        try:
            return fn(db, self._index(db))
        finally:
            db.close()

    # -- tools ------------------------------------------------------------------------

    def list_tables(self) -> dict[str, Any]:
        """The warehouse's refined tables with row and column counts and keys."""
        def run(db: Any, index: Any) -> dict[str, Any]:
            return {"dialect": db.dialect, "privacy": self.privacy, "tables": [
                {"table": t.name, "rows": t.row_count, "columns": len(t.columns),
                 "primary_key": t.primary_key, "description": t.description}
                for t in sorted(index.tables.values(), key=lambda t: t.name)
            ]}
        return self._with_db(run)

    def describe_table(self, name: str) -> dict[str, Any]:
        """Columns, types, keys; sample values only in `samples` mode."""
        name = bounded("name", name)

        def run(db: Any, index: Any) -> dict[str, Any]:
            info = index.describe(name)
            if info is None:
                from difflib import get_close_matches

                close = get_close_matches(name, list(index.tables), n=3, cutoff=0.4)
                raise ToolRefused(f"no table {name!r}" + (f"; closest: {', '.join(close)}" if close else ""))
            return info
        return self._with_db(run)

    def run_sql(self, sql: str, cursor: str | None = None, page_size: int | None = None) -> dict[str, Any]:
        """One read-only SELECT through the agent's gate, on the agent's connection, with the
        agent's timeout; refused statements raise ToolRefused. Results come a page at a time
        (default: the agent's probe row cap) with a cursor for the next (agents/mcp/paging.py)."""
        from dia_assets.agents.mcp.paging import (
            BadCursor,
            decode_cursor,
            encode_cursor,
            paged_statement,
        )

        sql = bounded("sql", sql)
        size = bounded_number("page_size", self.settings.probe_rows if page_size is None else page_size)
        try:
            offset = decode_cursor(bounded("cursor", cursor) if cursor is not None else None, sql)
        except BadCursor as err:
            raise ToolRefused(str(err)) from None

        def run(db: Any, index: Any) -> dict[str, Any]:
            gate = Gate(db, index.qualify_schema(), self.privacy)
            try:
                checked = gate.check(sql)
                if checked.is_write:
                    raise SQLRefused("only a read-only SELECT may run here", "write_refused")
                shape = checked.qualified if checked.qualified is not None else checked.tree
                text = paged_statement(checked.tree, len(shape.selects), offset, size, db.dialect)
                _, out = gate.read(text, max_rows=size + 1, timeout_s=self.settings.timeout_s)
            except SQLRefused as err:
                raise ToolRefused(f"refused: {err}") from None
            except ToolRefused:
                raise
            except Exception as err:
                raise ToolRefused(f"failed: {gate.error_text(err)}") from None
            rows, cut = capped_rows([tuple(r) for r in out.rows[:size]], result_bytes())
            more = len(out.rows) > size or len(rows) < min(size, len(out.rows))
            page: dict[str, Any] = {
                "columns": out.columns, "rows": rows, "shown": len(rows), "offset": offset, "page_size": size,
                "next_cursor": encode_cursor(sql, offset + len(rows)) if more and rows else None,
                "timeout_s": self.settings.timeout_s,
            }
            if cut:
                page["cut"] = cut
            return page
        return self._with_db(run)

    def ask(self, question: str, question_id: str | None = None) -> dict[str, Any]:
        """The full Query Generator (contract, probes, verification, repair) on one question;
        artifacts (with the chart) in queries/<id>/."""
        from dia_assets.agents.query import answer_question
        from dia_assets.platform.model.litellm import litellm_chat

        question = bounded("question", question).strip()
        if not question:
            raise ToolRefused("the question is empty")
        if question_id is not None:
            bounded("question_id", question_id)
            try:
                checked_question_id(question_id)
            except ValueError as exc:
                raise ToolRefused(str(exc)) from None
        chat = self.chat
        if chat is None:
            model = get_settings().model
            if not model:
                raise ToolRefused(NO_MODEL_MESSAGE)
            chat = litellm_chat(model)
        self._open().close()  # a clear message when there is no warehouse
        result, _ = answer_question(
            question, self.warehouse, question_id=question_id, chat=chat, memory=self._query_memory(),
            manifest_path=self.files.manifest, workspace=self.workspace,
            settings=self.settings, privacy=self.privacy,
        )
        out: dict[str, Any] = {
            "question_id": result.question_id, "status": result.status, "message": result.message,
            "sql": result.sql, "answer": result.answer, "dialect": result.dialect,
            "verification": result.verification.model_dump(), "attempts": result.attempts,
            "row_count": result.row_count, "columns": result.columns, "privacy": result.privacy,
            "warnings": result.warnings, "folder": str(self.files.query(result.question_id).folder),
        }
        if result.chart is not None:
            out["chart"] = {"kind": result.chart.kind, "reason": result.chart.reason,
                            "chosen_by": result.chart.chosen_by, "files": result.chart.files}
        if shows_values(self.privacy):
            out["rows"], cut = capped_rows([tuple(r) for r in result.preview], result_bytes())
            if cut:
                out["rows_cut"] = cut
        else:
            out["rows_withheld"] = f"DIA_PRIVACY={self.privacy}: rows are not shown to a model; see {out['folder']}"
        return out

    def chart_png(self, answer: dict[str, Any]) -> bytes | None:
        """The answer's chart image for the host, only in `samples` mode: its labels and bars
        are data values."""
        png = (answer.get("chart") or {}).get("files", {}).get("png")
        if not png or not shows_values(self.privacy) or not Path(png).exists():
            return None
        return Path(png).read_bytes()

    def lineage(self, target: str) -> dict[str, Any]:
        """Column lineage of a saved answer (question id), a table or table.column, or a SELECT."""
        from dia_assets.agents.mcp.lineage import lineage_of

        text = bounded("target", target).strip()
        if not text:
            raise ToolRefused("the lineage target is empty: give a question id, a table, table.column or a SELECT")

        def run(db: Any, index: Any) -> dict[str, Any]:
            schema = index.qualify_schema()
            checked = text
            if text.lower().startswith(("select", "with", "(")):
                try:  # the same gate as every model-influenced statement (nothing runs)
                    checked = Gate(db, schema, self.privacy).check(text).text
                except SQLRefused as err:
                    raise ToolRefused(f"refused: {err}") from err
            try:
                return lineage_of(checked, self.workspace, schema, db.dialect)
            except ValueError as err:
                raise ToolRefused(str(err)) from err
        return self._with_db(run)

    def search_memory(self, query: str, k: int = 5) -> dict[str, Any]:
        """Lessons and examples from shared memory for this warehouse (hybrid retrieval), each
        with its rule and whether its precondition probe holds on the warehouse now."""
        query = bounded("query", query)
        k = bounded_number("k", k)
        memory = self._query_memory(required=True)

        def run(db: Any, index: Any) -> dict[str, Any]:
            gate = Gate(db, index.qualify_schema(), self.privacy)
            items = []
            for ref in memory.recall(query, k):
                item = memory.pull(ref.id)
                entry: dict[str, Any] = {"id": ref.id, "title": ref.title, "kind": ref.kind, "score": ref.score}
                if item is not None:
                    usable, detail = memory.verify(item, gate.rows)
                    entry |= {"rule": item.body, "tier": item.tier, "holds_now": usable, "check": detail}
                items.append(entry)
            return {"query": query, "items": items}
        return self._with_db(run)

    def _query_memory(self, required: bool = False) -> Any:
        if not self.use_memory:
            if required:
                raise ToolRefused("shared memory is off for this server")
            return None
        try:
            from dia_assets.agents.query import StoreMemory, warehouse_fingerprint

            if self._store is None:  # opened once per server (connect, migrate), then reused
                if self.memory_factory is not None:
                    self._store = self.memory_factory()
                else:
                    from dia_assets.platform.memory import MemoryStore

                    self._store = MemoryStore.open(url=get_settings().memory_url,
                                                   pgdata=self.files.pgdata)
            return StoreMemory(self._store, warehouse_fingerprint(self.warehouse))
        except Exception as err:
            if required:
                raise ToolRefused(f"shared memory unavailable: {type(err).__name__}: {err}") from err
            return None  # `ask` answers without memory, as the agent does when the store is down

    def list_answers(self, cursor: str | None = None, page_size: int = 50) -> dict[str, Any]:
        """The answers saved in the workspace (queries/<id>/result.json), sorted by question
        id, a page at a time. Outside `samples` the answer text is left out and SQL literals
        are masked (an answer saved earlier, under `samples`, may quote data values)."""
        from dia_assets.agents.mcp.paging import BadCursor, page
        from dia_assets.contracts.query_result import QueryResult

        size = bounded_number("page_size", page_size)
        saved = []
        for path in self.files.saved_answers():
            try:
                r = QueryResult.read(path)
            except (ValueError, OSError):
                continue  # a half-written or foreign file: not an answer
            saved.append({"question_id": r.question_id, "question": r.question, "status": r.status,
                          "verified": bool(r.verification.passed), "row_count": r.row_count,
                          "columns": r.columns, "sql": r.sql, "answer": r.answer or None,
                          "folder": str(path.parent)})
        try:
            chunk, next_cursor = page(saved, bounded("cursor", cursor) if cursor is not None else None,
                                      "list_answers", size)
        except BadCursor as err:
            raise ToolRefused(str(err)) from None
        if not shows_values(self.privacy):
            dialect, names = self._names()
            chunk = [artifact_view(a | {"answer": None}, self.privacy, dialect, names) for a in chunk]
        return {"answers": chunk, "total": len(saved), "next_cursor": next_cursor}

    def relationships(self, table: str | None = None, to: str | None = None) -> dict[str, Any]:
        """Foreign keys of the built warehouse (all, or those touching `table`) and, with `to`,
        the shortest join path from `table` to `to`."""
        from dia_assets.agents.lineage import LineageError, workspace_manifest
        from dia_assets.agents.mcp.relationships import foreign_keys, join_path

        try:
            manifest = workspace_manifest(self.workspace)
        except (LineageError, ValueError, OSError) as err:
            raise ToolRefused(f"{err}".splitlines()[0] if str(err) else "no schema manifest: run `dia build DIR`") from None
        names = {t.name.lower(): t.name for t in manifest.tables}

        def known(value: str | None, field_name: str) -> str | None:
            if value is None:
                return None
            text = bounded("name", value).strip()
            if text.lower() not in names:
                raise ToolRefused(f"{field_name}: no table {text!r}; tables: {', '.join(sorted(names.values()))}")
            return names[text.lower()]

        start, goal = known(table, "table"), known(to, "to")
        if goal is not None and start is None:
            raise ToolRefused("to needs table: the join path runs from table to to")
        keys = foreign_keys(manifest)
        out: dict[str, Any] = {"foreign_keys": [k for k in keys if start is None or goal is not None
                                                or start in (k["table"], k["ref_table"])]}
        if goal is not None and start is not None:
            path = join_path(keys, start, goal)
            if path is None:
                raise ToolRefused(f"no join path from {start} to {goal} over the warehouse's foreign keys")
            out["join_path"] = path
            out["foreign_keys"] = [k for k in keys if k["join"] in path["joins"]]
        return out

    # -- resources --------------------------------------------------------------------

    def resource(self, name: str) -> str:
        """A short summary of a workspace document, naming the resource with all of it."""
        from dia_assets.agents.mcp.documents import summary

        return json.dumps(summary(name, self._document(name)), indent=1)

    def document(self, name: str) -> str:
        """A whole workspace document as JSON text; value-bearing fields removed outside `samples`."""
        if name not in RESOURCES:
            raise ToolRefused(f"no document {name!r}; documents: {', '.join(RESOURCES)}")
        return json.dumps(self._document(name), indent=2)

    def _document(self, name: str) -> dict[str, Any]:
        relative, _ = RESOURCES[name]
        path = self.workspace / relative
        if not path.exists():
            raise ToolRefused(f"no {name} yet at {path}: run `dia build DIR` (or make demo) first")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ToolRefused(f"cannot read {path}: {type(err).__name__}; rebuild with `dia build DIR`") from None
        if not shows_values(self.privacy):
            dialect, names = self._names()
            data = artifact_view(data, self.privacy, dialect, names)
        return data

    def _names(self) -> tuple[str | None, frozenset[str]]:
        """The warehouse's dialect and table and column names, from the last build's manifest:
        quoted text that is one of these names may stay in a redacted resource."""
        path = self.files.manifest
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
            schema = {t["name"]: {c["name"]: "" for c in t.get("columns", [])} for t in manifest.get("tables", [])}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None, frozenset()
        return manifest.get("dialect"), frozenset(schema_words(schema))
