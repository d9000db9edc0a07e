"""PostgreSQL target: build in DuckDB (the engine that parses the files), copy staging,
refined and reject tables into fresh build schemas (`dia_build_<id>`, `..._staging`,
`..._rejects`), validate them there, then install them in one short transaction that moves the
tables into `public`, `staging` and `rejects` (the old ones move to `dia_prev_<id>...`, dropped
after the commit). Readers resolve names only when a statement starts, so they never wait on
the load or the validation: only on the swap's brief locks (`lock_timeout`, retried). A build
that is not accepted, or fails, drops its build schemas and leaves the installed tables; a
crash leaves only stray `dia_build_*`/`dia_prev_*` schemas, which the next build drops.
DDL is transpiled from DuckDB with sqlglot (docs/production.md, "Readers during a build")."""

from __future__ import annotations

import contextlib
import tempfile
import time
import uuid
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from dia_assets.agents.schema_creator import sqlgen
from dia_assets.agents.schema_creator.load import (
    LoadError,
    LoadResult,
    StepHook,
    TableLoad,
    build_into,
)
from dia_assets.contracts.manifest import Manifest, ManifestTable
from dia_assets.platform import limits
from dia_assets.platform.files.temp import temp_prefix
from dia_assets.platform.naming import quote_ident as q
from dia_assets.platform.naming import sql_str

if TYPE_CHECKING:
    import psycopg

BATCH = 10_000
REFINED = "public"
LAYERS = (REFINED, "staging", "rejects")
BUILD_PREFIX, PREV_PREFIX = "dia_build_", "dia_prev_"
# one builder per database at a time: the swap and the stray cleanup assume no other build
BUILD_LOCK = 0x44_49_41_50_47  # "DIAPG"
SWAP_LOCK_TIMEOUT_MS = 100  # the longest a reader queues behind one swap attempt
SWAP_PATIENCE_S = 60.0  # retrying while long reads hold the old tables, then give up
# (schemas: layer -> its build schema) -> accepted
SchemaCheck = Callable[[dict[str, str]], bool]


def pg_table_ddl(name: str, columns: list[tuple[str, str]], pk: list[str] | None = None) -> str:
    parts = [f"{q(c)} {sqlgen.pg_type(t)}" for c, t in columns]
    if pk:
        parts.append(f"PRIMARY KEY ({', '.join(q(c) for c in pk)})")
    return f"CREATE TABLE {name} ({', '.join(parts)})"


def schemas_for(build_id: str, prefix: str = BUILD_PREFIX) -> dict[str, str]:
    """Layer -> the schema a build (or the previous tables it replaces) lives in."""
    return {layer: f"{prefix}{build_id}" + ("" if layer == REFINED else f"_{layer}") for layer in LAYERS}


def _layers(table: ManifestTable, pk: bool, schemas: dict[str, str] | None = None,
            ) -> list[tuple[str, str, list[tuple[str, str]], list[str] | None]]:
    """(DuckDB name, PostgreSQL name, columns, primary key) of a table's three layers."""
    s = {layer: q(name) for layer, name in schemas.items()} if schemas else {layer: layer for layer in LAYERS}
    return [
        (f"staging.{q(table.name)}", f"{s['staging']}.{q(table.name)}", sqlgen.staging_columns(table), None),
        (f"rejects.{q(table.name)}", f"{s['rejects']}.{q(table.name)}",
         sqlgen.staging_columns(table, sqlgen.REJECT_EXTRA), None),
        (q(table.name), f"{s[REFINED]}.{q(table.name)}", [(c.name, c.type) for c in table.columns],
         table.primary_key if pk else None),
    ]


def ddl_script(manifest: Manifest) -> str:
    """The PostgreSQL DDL the loader runs, as planned (before the data is checked), with the
    names readers see: the build runs it in its build schemas, then moves the tables here."""
    out = ["CREATE SCHEMA IF NOT EXISTS staging", "CREATE SCHEMA IF NOT EXISTS rejects"]
    for table in manifest.tables:
        out += [pg_table_ddl(pg_name, columns, pk)
                for _, pg_name, columns, pk in _layers(table, table.primary_key_enforced)]
    for table in manifest.tables:
        out += [_fk_sql(table, fk) for fk in table.foreign_keys if fk.enforced]
    return ";\n".join(out) + ";\n"


def _fk_sql(table: ManifestTable, fk, schema: str = REFINED, parent_schema: str | None = None) -> str:
    s = schema if schema == REFINED else q(schema)
    p = s if parent_schema is None else (parent_schema if parent_schema == REFINED else q(parent_schema))
    return (f"ALTER TABLE {s}.{q(table.name)} ADD FOREIGN KEY ({', '.join(q(c) for c in fk.columns)}) "
            f"REFERENCES {p}.{q(fk.ref_table)} ({', '.join(q(c) for c in fk.ref_columns)})")


def _copy(con: duckdb.DuckDBPyConnection, cur: psycopg.Cursor, table: ManifestTable, duck_name: str,
          pg_name: str, names: str) -> None:
    """One layer of a table into PostgreSQL. A NUL byte, which DuckDB keeps in a value (it is data),
    cannot be stored in PostgreSQL text: the load stops, saying so, and nothing is altered."""
    import psycopg

    rel = con.execute(f"SELECT {names} FROM {duck_name}")
    try:
        with cur.copy(f"COPY {pg_name} ({names}) FROM STDIN") as copy:
            while rows := rel.fetchmany(BATCH):
                for row in rows:
                    copy.write_row(row)
    except psycopg.DataError as exc:
        if "NUL" not in str(exc):
            raise
        raise LoadError(f"{table.source_path}: a value of table {table.name!r} holds a NUL byte, which PostgreSQL "
                        "text cannot store; nothing was loaded (load it into DuckDB, or remove the NUL from the "
                        "export)") from exc


def load_postgres(
    manifest: Manifest, data_dir: str | Path, url: str, hook: StepHook | None = None,
    check: SchemaCheck | None = None, replace_anyway: bool = False,
    keep: Collection[str] = (), retire: Collection[str] = (),
) -> LoadResult:
    """Build, check (`check` gets the build schemas), then install by the swap. A build `check`
    refuses replaces installed tables only with `replace_anyway` (or when none are installed).

    An incremental reload (incremental.reload_postgres): the tables in `keep` stay installed,
    untouched (only their key columns are read, to check the rebuilt tables' foreign keys);
    the others are built and swapped in, and the tables in `retire` are moved out and dropped."""
    import psycopg

    changed = manifest.model_copy(update={"tables": [t for t in manifest.tables if t.name not in keep]})
    with tempfile.TemporaryDirectory(prefix=temp_prefix("dia-pg-")) as tmp, \
            psycopg.connect(url, autocommit=True) as pg:
        pg.execute("SELECT pg_advisory_lock(%s)", (BUILD_LOCK,))
        drop_strays(pg)
        con = duckdb.connect(str(Path(tmp) / "build.duckdb"))
        limits.plan_linearly(con)
        try:
            known = _kept_keys(pg, con, manifest, set(keep), Path(tmp))
            result = build_into(con, changed, data_dir, hook, known)
            build_id = uuid.uuid4().hex[:12]
            schemas = schemas_for(build_id)
            try:
                _copy_in(con, pg, changed, result, schemas, hook, set(keep))
                accepted = check(schemas) if check else True
                if accepted or replace_anyway or not _installed(pg, changed):
                    install(pg, [t.name for t in changed.tables], build_id, list(retire))
                else:
                    result.installed = False
                    result.rejected_build = (f"its PostgreSQL build schemas {schemas[REFINED]}* were dropped; "
                                             "the installed tables were left as they were")
            finally:
                _drop_schemas(pg, list(schemas.values()), quiet=True)
        finally:
            con.close()
    result.dialect = "postgres"
    result.warehouse = "postgresql://(redacted)"
    return result


def _kept_keys(pg: psycopg.Connection, con: duckdb.DuckDBPyConnection, manifest: Manifest, keep: set[str],
               tmp: Path) -> dict[str, TableLoad]:
    """The kept tables, as the DuckDB build knows them: whether PostgreSQL holds their primary
    key, and, for those a rebuilt table references, their key values (a DuckDB table of the key
    columns alone), so the rebuilt table's foreign keys are checked as in a full build."""
    known: dict[str, TableLoad] = {}
    tables = {t.name: t for t in manifest.tables}
    referenced = {fk.ref_table for t in manifest.tables if t.name not in keep for fk in t.foreign_keys if fk.enforced}
    for name in keep:
        table = tables[name]
        has_pk = bool(pg.execute(
            "SELECT count(*) FROM pg_constraint WHERE conrelid = to_regclass(%s) AND contype = 'p'",
            (f"{q(REFINED)}.{q(name)}",)).fetchone()[0])
        known[name] = TableLoad(name=name, primary_key_enforced=has_pk)
        if name not in referenced or not has_pk:
            continue
        types = {c.name: c.type for c in table.columns}
        keys = ", ".join(q(c) for c in table.primary_key)
        path = tmp / f"keys-{len(known)}.csv"
        with path.open("wb") as fh, pg.cursor().copy(
                f"COPY (SELECT {keys} FROM {q(REFINED)}.{q(name)}) TO STDOUT (FORMAT csv)") as copy:
            for block in copy:
                fh.write(block)
        columns = ", ".join(f"{sql_str(c)}: {sql_str(types[c])}" for c in table.primary_key)
        con.execute(f"CREATE TABLE {q(name)} ({', '.join(f'{q(c)} {types[c]}' for c in table.primary_key)}, "
                    f"PRIMARY KEY ({keys}))")
        con.execute(f"INSERT INTO {q(name)} SELECT * FROM read_csv({sql_str(str(path))}, header = false, "
                    f"columns = {{{columns}}})")
    return known


def _copy_in(con: duckdb.DuckDBPyConnection, pg: psycopg.Connection, manifest: Manifest, result: LoadResult,
             schemas: dict[str, str], hook: StepHook | None, kept: set[str] = frozenset()) -> None:
    """Every layer into the build schemas, committed (validation reads them from another
    connection); no reader resolves these names."""
    with pg.transaction(), pg.cursor() as cur:
        for schema in schemas.values():
            cur.execute(f"CREATE SCHEMA {q(schema)}")
        for table in manifest.tables:
            stats = result.tables[table.name]
            for duck_name, pg_name, columns, pk in _layers(table, stats.primary_key_enforced, schemas):
                cur.execute(pg_table_ddl(pg_name, columns, pk))
                _copy(con, cur, table, duck_name, pg_name, ", ".join(q(c) for c, _ in columns))
            if hook:
                hook(f"postgres:{table.name}")
        for table in manifest.tables:
            enforced = result.tables[table.name].foreign_keys_enforced
            for fk in table.foreign_keys:
                if f"({', '.join(fk.columns)}) -> {fk.ref_table}" in enforced:
                    cur.execute(_fk_sql(table, fk, schemas[REFINED],
                                        REFINED if fk.ref_table in kept else schemas[REFINED]))


def _installed(pg: psycopg.Connection, manifest: Manifest) -> bool:
    """Whether any refined table of this plan is installed (a first build is installed even
    when not accepted, as on DuckDB, so there is something to inspect)."""
    return any(pg.execute("SELECT to_regclass(%s)", (f"{q(REFINED)}.{q(t.name)}",)).fetchone()[0] is not None
               for t in manifest.tables)


def install(pg: psycopg.Connection, names: list[str], build_id: str, retire: list[str] = ()) -> None:
    """The swap: one transaction of catalog updates (move the old tables out, the new ones in,
    carry the old tables' grants over), under a short `lock_timeout` retried while readers hold
    the old tables, so a reader queues at most that long behind it. Then the old tables are
    dropped (readers still on them finish first; new statements already see the new ones)."""
    import psycopg

    build, prev = schemas_for(build_id), schemas_for(build_id, PREV_PREFIX)
    deadline = time.monotonic() + SWAP_PATIENCE_S
    while True:
        try:
            with pg.transaction():
                _swap(pg, names, list(retire), build, prev)
            break
        except psycopg.errors.LockNotAvailable as exc:
            if time.monotonic() > deadline:
                raise LoadError(f"readers held the installed tables for over {SWAP_PATIENCE_S:g} s: the build was "
                                "not installed (the installed tables are unchanged); run it again") from exc
            time.sleep(0.05)
    _drop_schemas(pg, list(prev.values()))


def _swap(pg: psycopg.Connection, names: list[str], retire: list[str], build: dict[str, str],
          prev: dict[str, str]) -> None:
    pg.execute(f"SET LOCAL lock_timeout = '{SWAP_LOCK_TIMEOUT_MS}ms'")
    for layer in LAYERS:
        pg.execute(f"CREATE SCHEMA IF NOT EXISTS {q(layer)}")
        pg.execute(f"CREATE SCHEMA {q(prev[layer])}")
    old = [(layer, name) for layer in LAYERS for name in [*names, *retire]
           if pg.execute("SELECT to_regclass(%s)", (f"{q(layer)}.{q(name)}",)).fetchone()[0] is not None]
    if old:
        pg.execute(f"LOCK TABLE {', '.join(f'{q(s)}.{q(n)}' for s, n in old)} IN ACCESS EXCLUSIVE MODE")
    for layer, name in old:
        if name in names:
            _carry_grants(pg, f"{q(layer)}.{q(name)}", f"{q(build[layer])}.{q(name)}")
        # its foreign keys go now, under the timeout: dropping them later would lock a kept parent
        for (constraint,) in pg.execute(
                "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'f'",
                (f"{q(layer)}.{q(name)}",)).fetchall():
            pg.execute(f"ALTER TABLE {q(layer)}.{q(name)} DROP CONSTRAINT {q(constraint)}")
        pg.execute(f"ALTER TABLE {q(layer)}.{q(name)} SET SCHEMA {q(prev[layer])}")
    for layer in LAYERS:
        for name in names:
            pg.execute(f"ALTER TABLE {q(build[layer])}.{q(name)} SET SCHEMA {q(layer)}")


def _carry_grants(pg: psycopg.Connection, old: str, new: str) -> None:
    """The privileges others had on the table it replaces (a reader's SELECT stays)."""
    from psycopg import sql

    rows = pg.execute(
        "SELECT CASE WHEN a.grantee = 0 THEN NULL ELSE a.grantee::regrole::text END, a.privilege_type "
        "FROM pg_class c, aclexplode(c.relacl) a WHERE c.oid = %s::regclass AND a.grantee <> c.relowner",
        (old,)).fetchall()
    for grantee, privilege in rows:
        who = sql.SQL("PUBLIC") if grantee is None else sql.SQL(grantee)  # regrole text is quoted already
        pg.execute(sql.SQL("GRANT {} ON {} TO {}").format(sql.SQL(privilege), sql.SQL(new), who))


def drop_strays(pg: psycopg.Connection) -> list[str]:
    """Build and previous-table schemas a crashed build left (the caller holds BUILD_LOCK)."""
    names = [r[0] for r in pg.execute(
        "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s OR nspname LIKE %s ORDER BY nspname",
        (BUILD_PREFIX.replace("_", r"\_") + "%", PREV_PREFIX.replace("_", r"\_") + "%")).fetchall()]
    _drop_schemas(pg, names)
    return names


def _drop_schemas(pg: psycopg.Connection, names: list[str], quiet: bool = False) -> None:
    """`quiet`: cleaning up after a failure, which must not hide it (a stray is dropped next time)."""
    import psycopg

    for name in names:
        with contextlib.suppress(psycopg.Error if quiet else psycopg.errors.InvalidSchemaName):
            pg.execute(f"DROP SCHEMA IF EXISTS {q(name)} CASCADE")
