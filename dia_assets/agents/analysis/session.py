"""One analysis: an in-memory DuckDB in which the warehouse is attached READ_ONLY and seen
through views of the same names, and every pipeline step's result is a table. Model SQL
runs only through the gate (SELECT allow-list over the warehouse views and the step
tables); after setup, external access is off and the configuration locked, so nothing can
reach a file; the only writable things are the step tables this session creates."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import sqlglot
from sqlglot import exp

from dia_assets.agents.analysis import plan
from dia_assets.agents.analysis.steps import PipelineError
from dia_assets.agents.catalog import HIGH, LOW, UNKNOWN, Estimate, estimate_filter
from dia_assets.agents.query import ColumnInfo, SchemaIndex, TableInfo
from dia_assets.agents.semantic_ops import (
    CascadeConfig,
    InProcessIndex,
    SemanticModelUnavailable,
    SemanticOpError,
    SemanticOps,
    VectorIndex,
    qcol,
)
from dia_assets.contracts.analysis_steps import ROW_WISE, SEMANTIC_OPS, Step, StepRecord
from dia_assets.contracts.semantic_catalog import CatalogNode
from dia_assets.platform.embeddings import Embedder
from dia_assets.platform.sql.gate import Gate, schema_of, shows_values
from dia_assets.platform.sql.safety import SQLRefused
from dia_assets.platform.warehouse.duckdb import DuckDBDatabase, duckdb_config


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class AnalysisSession:
    """Warehouse views + step tables on one connection; `run(steps, gate)` executes a plan."""

    def __init__(self, warehouse: str | Path, embedder: Embedder, config: CascadeConfig | None = None,
                 vector_index: VectorIndex | None = None, catalog: dict[str, CatalogNode] | None = None,
                 row_cap: int = 100_000, timeout_s: float = 60.0) -> None:
        if str(warehouse).startswith(("postgres://", "postgresql://")):
            raise PipelineError("pipelines run over a DuckDB warehouse; this one is PostgreSQL")
        if not Path(warehouse).exists():
            raise PipelineError(f"no warehouse at {warehouse}: build it first (dia build)")
        cfg = {k: v for k, v in duckdb_config().items() if k not in ("enable_external_access", "lock_configuration")}
        self.con = duckdb.connect(":memory:", config=cfg)
        self.con.execute(f"ATTACH {_literal(str(warehouse))} AS wh (READ_ONLY)")
        names = [r[0] for r in self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'wh' "
            "AND table_schema = 'main' ORDER BY 1").fetchall()]
        for name in names:
            self.con.execute(f"CREATE VIEW main.{qcol(name)} AS SELECT * FROM wh.main.{qcol(name)}")
        self.con.execute("SET enable_external_access = false")
        self.con.execute("SET lock_configuration = true")
        self.warehouse = str(warehouse)
        self.warehouse_tables = {n.lower() for n in names}
        self.db = DuckDBDatabase.from_connection(self.con, location=f"analysis over {warehouse}")
        self.embedder = embedder
        self.config = config or CascadeConfig()
        self.ops = SemanticOps(self.con, embedder, self.config, index=vector_index or InProcessIndex())
        self.catalog = catalog or {}
        self.row_cap, self.timeout_s = row_cap, timeout_s
        self.records: list[StepRecord] = []
        self.step_tables: list[str] = []

    # -- tables -------------------------------------------------------------------------------

    def tables(self) -> set[str]:
        return {t.name.lower() for t in self.db.tables()}

    def columns(self, table: str) -> list[str]:
        return [d[0] for d in self.con.execute(f"SELECT * FROM {qcol(table)} LIMIT 0").description]

    def sql_tables(self, step: Step) -> list[str]:
        if step.op != "sql":
            return step.inputs()
        try:
            tree = sqlglot.parse_one(step.sql or "", read="duckdb")
        except sqlglot.errors.SqlglotError:
            return []
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        return sorted({t.name.lower() for t in tree.find_all(exp.Table)} - ctes)

    def _register(self, names: list[str], gate: Gate | None, index: SchemaIndex | None) -> None:
        """New step tables become visible to the gate and to the schema index."""
        fresh = {k: v for k, v in schema_of(self.db).items() if k in names}
        if gate is not None:
            gate.schema.update(fresh)
        if index is not None:
            for name in names:
                cols = [ColumnInfo(c, t) for c, t in fresh.get(name, {}).items()]
                info = TableInfo(name, cols)
                info.row_count = self.con.execute(f"SELECT count(*) FROM {qcol(name)}").fetchone()[0]
                info.description = "pipeline step result"
                index.tables[name] = info
            index._qualify = None
            index._build_terms()

    # -- estimates ------------------------------------------------------------------------------

    def selectivity(self, step: Step) -> float:
        return self.estimate(step).selectivity

    def estimate(self, step: Step) -> Estimate:
        """Rows in and share kept for a row-wise semantic step, before it runs. Over a
        warehouse table the catalog answers: its row count, and for sem_filter the share of
        the column's catalog samples that match the condition (catalog/estimate.py). Over a
        step table (or with no catalog entry): counted rows, and a 20-row sample of the input
        column scored the same way. sem_extract and sem_group keep every row."""
        table, column, condition = (step.table or "").lower(), step.column or "", step.condition or ""
        node = self.catalog.get(f"entity:{table}") if table in self.warehouse_tables else None
        if node is not None and node.row_count is not None:
            rows_in, rows_basis = int(node.row_count), "catalog row count"
        else:
            try:
                rows_in, rows_basis = int(self.con.execute(f"SELECT count(*) FROM {qcol(table)}").fetchone()[0]), "counted"
            except duckdb.Error:
                rows_in, rows_basis = None, "unknown"
        if step.op != "sem_filter":
            return Estimate(table, column, rows_in, 1.0, f"{rows_basis}; row-wise, every row kept")
        if table in self.warehouse_tables and f"attribute:{table}.{column}" in self.catalog:
            est = estimate_filter(self.catalog, table, column, condition, self.embedder)
            return Estimate(table, column, rows_in, est.selectivity, f"{rows_basis}; {est.basis}")
        try:
            rows = self.con.execute(f"SELECT {qcol(column)} FROM {qcol(table)} USING SAMPLE reservoir(20 ROWS) REPEATABLE (42)").fetchall()
        except duckdb.Error:
            return Estimate(table, column, rows_in, UNKNOWN, f"{rows_basis}; no sample: prior 0.5")
        values = [str(v) for (v,) in rows if v is not None and str(v).strip()]
        if not values:
            return Estimate(table, column, rows_in, UNKNOWN, f"{rows_basis}; no sample: prior 0.5")
        sims = self.embedder.embed(values) @ self.embedder.embed([condition])[0]
        sel = float(min(0.95, max(0.05, np.clip((sims - LOW) / (HIGH - LOW), 0, 1).mean())))
        return Estimate(table, column, rows_in, round(sel, 4), f"{rows_basis}; {len(values)} sampled input values")

    # -- execution -----------------------------------------------------------------------------

    def optimize(self, steps: list[Step]) -> tuple[list[Step], list[str], dict[str, float]]:
        def input_columns(table: str) -> set[str]:
            try:
                return {c.lower() for c in self.columns(table)}
            except duckdb.Error:
                return set()

        steps, notes = plan.push_down_filters(steps, input_columns, self.sql_tables)
        steps, more, estimates = plan.order_semantic_filters(steps, self.selectivity, self.sql_tables)
        return steps, notes + more, estimates

    def run(self, steps: list[Step], gate: Gate, index: SchemaIndex | None = None,
            optimize: bool = True) -> tuple[list[StepRecord], list[str]]:
        """Execute the (optimized) plan in order; stops at the first failing step (raised)."""
        notes: list[str] = []
        estimates: dict[str, float] = {}
        if optimize:
            steps, notes, estimates = self.optimize(steps)
        done: list[StepRecord] = []
        for step in steps:
            est = self.estimate(step) if step.op in ROW_WISE and step.table else None
            if est is not None and step.where:
                est.basis += "; rows before its `where`"
            record = self._run_one(step, gate, index)
            record.estimated_selectivity = estimates.get(step.output, est.selectivity if est else None)
            if est is not None:
                record.estimate = {"rows_in": est.rows_in, "selectivity": est.selectivity,
                                   "rows_out": None if est.rows_out is None else round(est.rows_out, 1),
                                   "basis": est.basis}
            record.notes = [n for n in notes if repr(step.output) in n]
            done.append(record)
        return done, notes

    def _check_output(self, name: str) -> None:
        if name in self.tables():
            raise PipelineError(f"a table named {name!r} exists already; give the step another output name")

    def _create_from_select(self, name: str, sql: str, gate: Gate) -> None:
        try:
            checked = gate.check(sql)
        except SQLRefused as err:
            raise PipelineError(f"refused by the SQL gate: {err}") from err
        if checked.is_write:
            raise PipelineError("a pipeline SQL step is a SELECT; it cannot write")
        fired = threading.Event()

        def stop() -> None:
            fired.set()
            self.con.interrupt()

        timer = threading.Timer(self.timeout_s, stop)
        timer.start()
        try:
            self.con.execute(f"CREATE TABLE {qcol(name)} AS SELECT * FROM ({checked.text}) AS step "
                             f"LIMIT {int(self.row_cap)}")
        except duckdb.Error as err:
            if fired.is_set():
                raise PipelineError(f"step {name!r} exceeded {self.timeout_s:g} s and was interrupted") from err
            # the model reads this: no data value in it outside `samples` (gate.error_text)
            raise PipelineError(gate.error_text(err, 500, sql=checked.text).splitlines()[0]) from err
        finally:
            timer.cancel()

    def _run_one(self, step: Step, gate: Gate, index: SchemaIndex | None) -> StepRecord:
        started = time.perf_counter()
        self._check_output(step.output)
        created = [step.output]
        report = None
        stopped: SemanticModelUnavailable | None = None
        if step.op == "sql":
            self._create_from_select(step.output, step.sql or "", gate)
        else:
            if not shows_values(gate.privacy):
                raise PipelineError(f"{step.op} sends data values to a model; the privacy mode "
                                    f"{gate.privacy!r} forbids that (DIA_PRIVACY=samples allows it)")
            missing = [t for t in step.inputs() if t.lower() not in self.tables()]
            if missing:
                raise PipelineError(f"{step.op} reads {missing}, which is neither a warehouse table nor "
                                    "an earlier step's output")
            table = step.table
            if step.where and step.op != "sem_join":
                table = f"{step.output}__input"
                self._create_from_select(table, f"SELECT * FROM {qcol(step.table or '')} WHERE {step.where}", gate)
                created.append(table)
            try:
                report = self._semantic(step, table)
            except SemanticOpError as err:
                raise PipelineError(str(err)) from err
            except SemanticModelUnavailable as err:  # the partial tables stay, recorded as partial
                if err.report is None:
                    raise
                report, stopped = err.report, err
            created.append(f"{step.output}__decisions")
        self.step_tables += created
        self._register(created, gate, index)
        rows = self.con.execute(f"SELECT count(*) FROM {qcol(step.output)}").fetchone()[0]
        record = StepRecord(position=len(self.records) + 1, step=step, output=step.output,
                            inputs=self.sql_tables(step), rows=int(rows), columns=self.columns(step.output),
                            operator=report.summary() if report is not None else None,
                            seconds=round(time.perf_counter() - started, 3))
        self.records.append(record)
        if stopped is not None:
            record.status, record.error = "partial", str(stopped)
            raise stopped
        return record

    def _semantic(self, step: Step, table: str | None) -> Any:
        ops, out = self.ops, step.output
        if step.op == "sem_filter":
            return ops.sem_filter(table or "", step.column or "", step.condition or "", out=out)
        if step.op == "sem_extract":
            return ops.sem_extract(table or "", step.column or "", step.fields or [], out=out,
                                   instruction=step.instruction)
        if step.op == "sem_group":
            return ops.sem_group(table or "", step.column or "", out=out, labels=step.labels, k=step.k,
                                 instruction=step.instruction)
        assert step.op in SEMANTIC_OPS
        return ops.sem_join(step.left or "", step.left_column or "", step.right or "",
                            step.right_column or "", step.condition or "", out=out)

    # -- export --------------------------------------------------------------------------------

    def export(self, path: str | Path) -> Path:
        """Step tables (with their provenance columns) into a DuckDB file for review."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        out = duckdb.connect(str(target))
        try:
            for name in self.step_tables:
                data = self.con.execute(f"SELECT * FROM {qcol(name)}").to_arrow_table()
                out.register("__step", data)
                out.execute(f"CREATE TABLE {qcol(name)} AS SELECT * FROM __step")
                out.unregister("__step")
        finally:
            out.close()
        return target

    def close(self) -> None:
        self.con.close()
