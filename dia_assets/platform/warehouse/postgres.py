"""PostgreSQL: every query in a READ ONLY transaction with a `statement_timeout`, as a role
created for the agent with SELECT on the refined schema only (`DIA_QUERY_PG_ROLE`, default
`dia_query_reader`) whenever the given URL is a superuser's, the embedded default included;
never as a superuser. A scratch copy is a transaction that is rolled back."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dia_assets.platform.settings import get_settings
from dia_assets.platform.warehouse.base import (
    Dialect,
    QueryOutput,
    QueryTimeout,
    TableMeta,
    fetch,
    group,
    register,
)


class PostgresDatabase:
    """Every analytical query runs in its own READ ONLY transaction with a statement timeout.
    The scratch copy of a modification is a transaction that is rolled back."""

    dialect = "postgres"

    def __init__(self, conninfo: str, schema: str = "public", read_only: bool = True) -> None:
        import psycopg

        self.conninfo = conninfo
        self.location = _redact(conninfo)
        self.schema = schema
        self.read_only = read_only
        self._in_tx = False
        self.role = ""
        self.reader = ""  # the role DIA created for reads, when the URL was a superuser's
        if read_only:
            self.con, self.role = connect_least_privileged(conninfo, schema)
            self.reader = self.role if self.role == get_settings().query_pg_role else ""
        else:
            self.con = psycopg.connect(conninfo, autocommit=True)

    def query(self, sql: str, max_rows: int = 200, timeout_s: float = 10.0) -> QueryOutput:
        import psycopg

        started = time.perf_counter()
        try:
            if self._in_tx:  # inside a modification's transaction: see its changes
                self.con.execute("SELECT set_config('statement_timeout', %s, true)", (str(int(timeout_s * 1000)),))
                columns, rows, truncated = fetch(self.con.execute(sql), max_rows)  # type: ignore[arg-type]
            else:
                with self.con.transaction(force_rollback=self.read_only):
                    if self.read_only:
                        self.con.execute("SET TRANSACTION READ ONLY")
                    self.con.execute(
                        "SELECT set_config('statement_timeout', %s, true)", (str(int(timeout_s * 1000)),)
                    )
                    self.con.execute(f"SET LOCAL search_path TO {self.schema}")
                    cursor = self.con.execute(sql)  # type: ignore[arg-type]
                    columns, rows, truncated = fetch(cursor, max_rows)
        except psycopg.errors.QueryCanceled as err:
            raise QueryTimeout(f"query exceeded {timeout_s:g} s and was interrupted") from err
        return QueryOutput(columns, rows, truncated, round(time.perf_counter() - started, 4))

    def tables(self) -> list[TableMeta]:
        rows = self.con.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = %s ORDER BY table_name, ordinal_position", (self.schema,)
        ).fetchall()
        return group(rows)

    def execute_script(self, statements: list[str]) -> None:
        for stmt in statements:
            self.con.execute(stmt)  # type: ignore[arg-type]

    def begin(self) -> None:
        self.con.execute("BEGIN")
        self._in_tx = True
        self.con.execute(f"SET LOCAL search_path TO {self.schema}")

    def commit(self) -> None:
        self._in_tx = False
        self.con.execute("COMMIT")

    def rollback(self) -> None:
        self._in_tx = False
        self.con.execute("ROLLBACK")

    @contextmanager
    def reading_as(self, role: str) -> Iterator[None]:
        """Inside a modification's transaction, run the next reads as the read-only role
        (which is granted SELECT on what the statements just created)."""
        if not role or not self._in_tx:
            yield
            return
        from psycopg import sql

        ident = sql.Identifier(role)
        self.con.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(
            sql.Identifier(self.schema), ident))
        self.con.execute(sql.SQL("SET LOCAL ROLE {}").format(ident))
        try:
            yield
        finally:
            with contextlib.suppress(Exception):  # an aborted transaction is rolled back anyway
                self.con.execute("RESET ROLE")

    def scratch(self) -> PostgresDatabase:
        """PostgreSQL runs DDL transactionally: the scratch copy is a rolled-back transaction."""
        db = PostgresDatabase(self.conninfo, self.schema, read_only=False)
        db.scratch_is_transaction = True  # type: ignore[attr-defined]
        return db

    def writable(self) -> PostgresDatabase:
        return PostgresDatabase(self.conninfo, self.schema, read_only=False)

    def reopen(self) -> None:
        pass

    def close(self) -> None:
        self.con.close()


READER_ROLE = "dia_query_reader"


def connect_least_privileged(conninfo: str, schema: str = "public") -> tuple[Any, str]:
    """A connection that can only read the refined schema. A superuser's URL creates and
    refreshes the agent's own role, then logs in as it; any other URL is used as given, and
    must already be a SELECT-only role (README, Safety)."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    role = get_settings().query_pg_role
    with psycopg.connect(conninfo, autocommit=True) as admin:
        row = admin.execute(
            "SELECT rolsuper, current_user FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        superuser, user = row if row else (False, "")
        if not superuser:
            return psycopg.connect(conninfo, autocommit=True), str(user)
        ident = sql.Identifier(role)
        db = admin.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        statements = [
            sql.SQL("ALTER ROLE {} NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS "
                    "NOINHERIT").format(ident),
            sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(db), ident),
            sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), ident),
            sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(sql.Identifier(schema), ident),
        ]
        for attempt in range(5):  # concurrent openers may collide on the catalog rows
            try:
                if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
                    admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(ident))
                for stmt in statements:
                    admin.execute(stmt)
                break
            except psycopg.errors.DatabaseError:
                if attempt == 4:
                    raise
                time.sleep(0.05 * (attempt + 1))
    try:
        con = psycopg.connect(make_conninfo(conninfo, user=role, password=""), autocommit=True)
    except psycopg.OperationalError as err:
        raise PermissionError(
            f"could not log in as the agent's read-only role {role!r} ({err}); the warehouse URL "
            "is a superuser's, which the agent never uses: give it a URL for a role with SELECT "
            "on the refined schema only"
        ) from err
    return con, role


def _redact(conninfo: str) -> str:
    text = re.sub(r"://([^:@/]+):[^@/]+@", r"://\1:***@", conninfo)
    return re.sub(r"password=\S+", "password=***", text)



def is_conninfo(target: str) -> bool:
    """A PostgreSQL URL (`postgresql://...`) or keyword conninfo (`host=... dbname=...`)."""
    return target.startswith(("postgresql://", "postgres://")) or bool(re.match(r"^\s*\w+=", target))


def _owner(target: str) -> Any:
    """The URL's own role, autocommit: the Schema Creator validates what it loaded."""
    import psycopg

    return psycopg.connect(target, autocommit=True)


def _open(target: str | Path, read_only: bool = True) -> PostgresDatabase:
    return PostgresDatabase(str(target), read_only=read_only)


POSTGRES = register(Dialect(
    name="postgres", sqlglot="postgres", claims=is_conninfo, opener=_open, owner=_owner, file_based=False,
    title="PostgreSQL", redacted_target="postgresql://(redacted)",
    # MaxHeapAttributeNumber: a wider table is refused (schema_creator/width.py)
    max_columns=1600,
    prompt_notes=("PostgreSQL SQL: date_trunc('month', d), to_char(d, 'YYYY-MM'), EXTRACT(year FROM d), "
                  "integer division truncates: cast to numeric for ratios."),
    credentials_in_target=True, loads_from_duckdb=True, transactional_ddl=True,
    # PostgreSQL refuses to cast malformed text (no lenient TRY_CAST) and has no try_strptime
    lenient_cast=False, has_strptime=False, default_schema="public", dbt_adapter="postgres",
    asset_kinds=("postgres", "table"), nulls_first=(False, True),
))
