"""What every warehouse engine must provide, written once (dbt's `BaseSimpleMaterializations`,
design review 2026-12-02 §6.4): a dialect is `class TestX(BaseWarehouseSuite)` with a `target`
fixture (a warehouse holding the tiny staff/departments/shifts schema and a secret the agent must
not reach) and its engine-specific escape cases. The base checks classification, read-only,
timeout, row cap, least privilege, gate refusals and a DDL round trip in a scratch copy."""

from __future__ import annotations

import pytest

from dia_assets.platform.sql.allowlist import for_dialect
from dia_assets.platform.sql.gate import Gate, schema_of
from dia_assets.platform.sql.safety import SQLRefused
from dia_assets.platform.warehouse import QueryTimeout, connect, dialect_for, target_dialect
from dia_assets.platform.warehouse.base import Connection

STAFF_ROWS = 4
TABLES = ["departments", "shifts", "staff"]
# refused by the gate in every dialect: writes on the read path, two statements, other schemas
GATE_ESCAPES = [
    "DELETE FROM staff",
    "UPDATE staff SET hourly_rate = 0",
    "DROP TABLE staff",
    "SELECT COUNT(*) FROM staff; DROP TABLE staff",
    "WITH gone AS (DELETE FROM staff RETURNING *) SELECT COUNT(*) FROM gone",
    "SELECT * FROM staging.secrets",
    "SELECT * FROM information_schema.tables",
]


class BaseWarehouseSuite:
    """Subclasses set `dialect`, `SLOW_SQL` (runs far longer than a second), `ESCAPES` (refused
    by the gate in this dialect) and `CONNECTION_REFUSES` (SQL the read-only connection refuses
    on its own, below the gate), and provide a `target` fixture."""

    dialect: str = ""
    SLOW_SQL: str = ""
    ESCAPES: list[str] = []
    CONNECTION_REFUSES: list[str] = []

    @pytest.fixture
    def target(self) -> str:
        raise NotImplementedError("a dialect's suite provides its warehouse")

    @pytest.fixture
    def db(self, target: str) -> Connection:
        con = connect(target)
        yield con
        con.close()

    def count(self, target: str) -> int:
        con = connect(target)
        try:
            return con.query("SELECT COUNT(*) FROM staff").rows[0][0]
        finally:
            con.close()

    def test_the_target_is_classified_as_this_dialect(self, target: str, db: Connection) -> None:
        dialect = dialect_for(self.dialect)
        assert target_dialect(target) is dialect and db.dialect == dialect.name
        assert for_dialect(dialect.name).dialect == dialect.name  # the gate vetted it

    def test_it_lists_and_reads_the_refined_tables(self, db: Connection) -> None:
        tables = {t.name: [c.name for c in t.columns] for t in db.tables()}
        assert sorted(tables) == TABLES
        assert tables["staff"][:2] == ["badge", "first_name"]
        assert db.query("SELECT COUNT(*) FROM staff").rows == [(STAFF_ROWS,)]

    def test_the_row_cap_truncates_and_says_so(self, db: Connection) -> None:
        out = db.query("SELECT badge FROM staff ORDER BY badge", max_rows=2)
        assert [r[0] for r in out.rows] == ["B1", "B2"] and out.truncated
        out = db.query("SELECT badge FROM staff", max_rows=STAFF_ROWS)
        assert out.row_count == STAFF_ROWS and not out.truncated

    def test_a_slow_query_is_interrupted_by_the_timeout(self, db: Connection) -> None:
        with pytest.raises(QueryTimeout):
            db.query(self.SLOW_SQL, timeout_s=0.5)
        assert db.query("SELECT COUNT(*) FROM staff").rows == [(STAFF_ROWS,)]  # still usable

    def test_the_connection_is_read_only(self, target: str, db: Connection) -> None:
        for sql in ["DELETE FROM staff", "DROP TABLE staff", "CREATE TABLE t (x INTEGER)"]:
            with pytest.raises(Exception):  # noqa: B017 - each engine raises its own error class
                db.query(sql)
        assert self.count(target) == STAFF_ROWS

    def test_least_privilege_below_the_gate(self, target: str, db: Connection) -> None:
        assert self.CONNECTION_REFUSES, "a dialect names what its connection refuses on its own"
        for sql in self.CONNECTION_REFUSES:
            with pytest.raises(Exception):  # noqa: B017 - each engine raises its own error class
                out = db.query(sql)
                pytest.fail(f"the connection ran {sql!r}: {out.rows[:3]}")
        assert self.count(target) == STAFF_ROWS

    def test_the_gate_refuses_escapes(self, target: str, db: Connection) -> None:
        gate = Gate(db, schema_of(db))
        for sql in GATE_ESCAPES + self.ESCAPES:
            with pytest.raises(SQLRefused):
                gate.read(sql, max_rows=10, timeout_s=5)
        _, out = gate.read("SELECT COUNT(*) AS n FROM staff", max_rows=10, timeout_s=5)
        assert out.rows == [(STAFF_ROWS,)]
        assert self.count(target) == STAFF_ROWS

    def test_ddl_round_trip_in_a_scratch_copy(self, target: str, db: Connection) -> None:
        """Create, fill, read and drop a table where a modification is tried; the warehouse in
        place never sees it, and a declared transactional DDL is undone by a rollback."""
        scratch = db.scratch()
        try:
            scratch.begin()
            scratch.execute_script([
                "CREATE TABLE dia_conformance (id INTEGER, label VARCHAR(10))",
                "INSERT INTO dia_conformance VALUES (1, 'a'), (2, 'b')",
            ])
            out = scratch.query("SELECT label FROM dia_conformance ORDER BY id")
            assert [r[0] for r in out.rows] == ["a", "b"]
            if dialect_for(self.dialect).transactional_ddl:
                scratch.rollback()
                names = [t.name for t in scratch.tables()]
                assert "dia_conformance" not in names and "staff" in names
            else:
                scratch.commit()
        finally:
            scratch.close()
        again = connect(target)
        try:
            assert "dia_conformance" not in [t.name for t in again.tables()]
        finally:
            again.close()
        assert self.count(target) == STAFF_ROWS
