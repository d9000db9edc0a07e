"""Apache Spark: a warehouse of Parquet tables in the Spark catalog (pyspark, `pip install
dia[spark]`). A target names the master and the warehouse root, the folder every build's
Parquet files live in: `spark://local[2]/abs/root` (local mode), `spark://host:7077/abs/root`
(a cluster: the root must be storage every executor reads), or `sc://host:15002/abs/root`
(Spark Connect; `;token=...` parameters follow the root).

Each accepted build is one version: its tables are Parquet folders under `<root>/<build>/`
(`refined/`, `staging/`, `rejects/`), registered as external tables in the databases
`dia_<build>`, `dia_<build>_staging` and `dia_<build>_rejects`. The file `<root>/CURRENT` names
the installed version, and readers resolve names through it when they open a connection: a build
is installed by replacing that one small file (an atomic rename), so a reader sees the previous
version or the new one, never a half-installed warehouse (schema_creator/spark.py).

Spark SQL has no read-only mode and no roles, so the agent's connection enforces its own least
privilege below the gate: one query statement (SELECT/WITH/set operations), reading only the
installed version's refined tables, `spark.sql.runSQLOnFiles=false` (no `parquet.\\`/path\\``),
a row cap (`take`) and a timeout (the statement's job group is cancelled; on Spark Connect, which
has no SparkContext, its session tag is interrupted). Tested on local mode, a standalone cluster
and a Connect server, each on loopback (tests/test_spark_{build,cluster,connect}.py)."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

from dia_assets.platform.warehouse.base import (
    Dialect,
    QueryOutput,
    QueryTimeout,
    TableMeta,
    group,
    register,
)

LAYERS = ("refined", "staging", "rejects")
CURRENT = "CURRENT"
PREFIX = "dia_"


@dataclass(frozen=True)
class SparkTarget:
    """What a `spark://` or `sc://` target names."""

    master: str  # `local[2]`, `spark://host:7077`; empty for Spark Connect
    remote: str  # `sc://host:15002/;token=...`; empty for a classic session
    root: Path  # the warehouse root: every version's Parquet folders and CURRENT

    @property
    def key(self) -> str:
        return self.remote or self.master


def is_spark(target: str) -> bool:
    return target.startswith(("spark://", "sc://"))


def parse_target(target: str | Path) -> SparkTarget:
    text = str(target)
    if text.startswith("sc://"):
        hostport, _, rest = text.removeprefix("sc://").partition("/")
        path, _, params = rest.partition(";")
        root = "/" + path.strip("/")
        return SparkTarget("", f"sc://{hostport}/" + (f";{params}" if params else ""), Path(root))
    if not text.startswith("spark://"):
        raise ValueError(f"not a Spark target: {text!r} (spark://MASTER/ROOT or sc://HOST:PORT/ROOT)")
    master, _, path = text.removeprefix("spark://").partition("/")
    if not path.strip("/"):
        raise ValueError(f"{text}: a Spark target names its warehouse root folder after the master, "
                         "as spark://local[2]/abs/path or spark://host:7077/abs/path")
    return SparkTarget(master if master.startswith("local") else f"spark://{master}", "", Path("/" + path.strip("/")))


# --- the session: one JVM (or one Connect client) per process and master ---------------------

_SESSIONS: dict[str, Any] = {}
_LOCK = threading.Lock()


def _require_pyspark() -> Any:
    try:
        import pyspark.sql
    except ImportError as err:
        raise RuntimeError("a spark:// warehouse needs pyspark: pip install 'dia[spark]' "
                           "(Java 17 or newer on the PATH)") from err
    return pyspark.sql


# SQL settings every session gets: a Spark Connect server makes each new session from its own
# defaults, not from the client's builder, so they are set on each session, not once
SESSION_CONF = {"spark.sql.session.timeZone": "UTC", "spark.sql.shuffle.partitions": "4"}


def _connect_session(remote: str) -> Any:
    """A Spark Connect session from Connect's own builder: pyspark's generic builder marks the
    whole process as Connect-only (SPARK_CONNECT_MODE_ENABLED), after which a classic master
    cannot start; `create`, not `getOrCreate`, which returns the session of whichever server
    came first."""
    try:
        from pyspark.sql.connect.session import SparkSession
    except ImportError as err:
        raise RuntimeError("an sc:// warehouse needs pyspark's Spark Connect client: pip install 'dia[spark]'") from err
    return SparkSession.builder.remote(remote).create()


def base_session(target: SparkTarget) -> Any:
    """The process's session for this master, started once (a local JVM takes seconds). A
    process holds one classic master at a time (one SparkContext per JVM): opening another
    stops the previous one; Spark Connect sessions are clients and coexist."""
    sql = _require_pyspark()
    with _LOCK:
        if target.key not in _SESSIONS:
            if target.remote:
                spark = _connect_session(target.remote)
            else:
                for key in [k for k in _SESSIONS if not k.startswith("sc://")]:
                    _SESSIONS.pop(key).stop()
                spark = (sql.SparkSession.builder.master(target.master).appName("dia")
                         .config("spark.ui.enabled", "false")
                         .config("spark.ui.showConsoleProgress", "false")
                         # tables a session creates itself (a scratch copy's) live beside the versions
                         .config("spark.sql.warehouse.dir", str(target.root / "_managed"))
                         .getOrCreate())
                spark.sparkContext.setLogLevel("OFF")
            _SESSIONS[target.key] = spark
        return _SESSIONS[target.key]


def new_session(target: SparkTarget) -> Any:
    """A session of its own (current database, SQL settings, temporary views) on the shared JVM
    or Connect server; `end_session` ends it."""
    spark = base_session(target).newSession()
    if target.remote:
        _CONNECT_OPEN.add(spark)
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, value)
    return spark


def end_session(target: SparkTarget, spark: Any) -> None:
    """End a `new_session`: a Connect session is released on the server and its channel closed
    now (left to the garbage collector, pyspark closes it while the interpreter exits and the
    process hangs); a classic session is only forgotten (stopping it would stop the JVM's
    SparkContext)."""
    if target.remote:
        _CONNECT_OPEN.discard(spark)
        spark.stop()


def release(target: SparkTarget) -> None:
    """Stop this process's session for the target (the next `base_session` starts a new one)."""
    with _LOCK:
        spark = _SESSIONS.pop(target.key, None)
    if spark is not None:
        spark.stop()


_CONNECT_OPEN: weakref.WeakSet[Any] = weakref.WeakSet()


@atexit.register
def _end_connect_sessions() -> None:
    """Connect sessions still open at exit, ended while the interpreter still runs (see above)."""
    for spark in [*_CONNECT_OPEN, *(s for k, s in _SESSIONS.items() if k.startswith("sc://"))]:
        with contextlib.suppress(Exception):
            spark.stop()


@contextlib.contextmanager
def cancellable(spark: Any, remote: bool, tag: str) -> Iterator[Callable[[], None]]:
    """Run the block's statements under `tag`; yields what cancels their running work. Spark
    Connect has no SparkContext: its statements carry a session tag (`interruptTag`). A classic
    session uses a job group: pyspark's classic tags do not reach the jobs (4.x)."""
    if remote:
        spark.addTag(tag)
        try:
            yield lambda: spark.interruptTag(tag)
        finally:
            spark.removeTag(tag)
        return
    context = spark.sparkContext
    context.setJobGroup(tag, "dia query", interruptOnCancel=True)
    try:
        yield lambda: context.cancelJobGroup(tag)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)


# --- versions: which build readers resolve ---------------------------------------------------


def databases(build_id: str) -> dict[str, str]:
    """Layer -> the database a version's tables are registered in."""
    return {layer: PREFIX + build_id + ("" if layer == "refined" else f"_{layer}") for layer in LAYERS}


def current_build(root: Path) -> str | None:
    """The installed version, or None when nothing was installed yet."""
    try:
        return str(json.loads((root / CURRENT).read_text(encoding="utf-8"))["build"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def set_current(root: Path, build_id: str) -> None:
    """Install a version: one atomic rename of a small file (what every reader resolves)."""
    tmp = root / f".{CURRENT}.{uuid.uuid4().hex[:8]}"
    tmp.write_text(json.dumps({"build": build_id, "installed_at": time.time()}), encoding="utf-8")
    os.replace(tmp, root / CURRENT)


def register_version(spark: Any, root: Path, build_id: str, layers: tuple[str, ...] = LAYERS) -> dict[str, str]:
    """Make a version's Parquet folders tables of this JVM's catalog (metadata only; idempotent).
    The agents' connection registers the refined layer alone: it reads nothing else."""
    names = databases(build_id)
    for layer, db in names.items():
        if layer not in layers:
            continue
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote(db)}")
        folder = root / build_id / layer
        for table in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []:
            location = str(table).replace("\\", "\\\\").replace("'", "\\'")
            spark.sql(f"CREATE TABLE IF NOT EXISTS {quote(db)}.{quote(table.name)} USING parquet "
                      f"LOCATION '{location}'")
    return names


def drop_version(spark: Any, build_id: str) -> None:
    for db in databases(build_id).values():
        spark.sql(f"DROP DATABASE IF EXISTS {quote(db)} CASCADE")


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sql_schemas(build_id: str) -> dict[str, str]:
    """Layer, by the names validation and lineage SQL uses (`default`, `staging`, `rejects`) ->
    the version's database: what that SQL is renamed to (platform/tables/target.py)."""
    names = databases(build_id)
    return {"default": names["refined"], "staging": names["staging"], "rejects": names["rejects"]}


def spark_schema_of(root: Path) -> dict[str, str] | None:
    """The installed version's `sql_schemas`, or None when nothing is installed."""
    build_id = current_build(root)
    return None if build_id is None else sql_schemas(build_id)


# --- types as information_schema spells them ---------------------------------------------------

_TYPES = {"string": "VARCHAR", "int": "INTEGER", "integer": "INTEGER", "bigint": "BIGINT", "smallint": "SMALLINT",
          "tinyint": "TINYINT", "double": "DOUBLE", "float": "FLOAT", "boolean": "BOOLEAN", "date": "DATE",
          "timestamp": "TIMESTAMP WITH TIME ZONE", "timestamp_ntz": "TIMESTAMP", "binary": "BLOB"}


def sql_type(spark_type: str) -> str:
    text = spark_type.lower()
    return _TYPES.get(text, text.upper())


def table_columns(spark: Any, db: str, table: str) -> list[tuple[str, str]]:
    return [(c.name, sql_type(c.dataType)) for c in spark.catalog.listColumns(f"{quote(db)}.{quote(table)}")]


def catalog_tables(spark: Any, db: str) -> list[str]:
    return sorted(t.name for t in spark.catalog.listTables(db) if not t.isTemporary)


# --- the agent's connection -------------------------------------------------------------------


def _read_only_reason(sql: str, db: str) -> str | None:
    """Why the read-only connection refuses a statement (None: it is one query of `db`'s tables)."""
    import sqlglot
    from sqlglot import exp

    try:
        statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except sqlglot.errors.ParseError as err:
        return f"it does not parse ({str(err).splitlines()[0]})"
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        return "the read-only Spark connection runs one query (SELECT, WITH, UNION) and nothing else"
    for table in statements[0].find_all(exp.Table):
        if table.catalog or (table.db and table.db != db):
            return f"{table.sql('spark')} is outside the installed warehouse's refined tables"
        if not isinstance(table.this, exp.Identifier) and not _spine(table.this):
            return f"{table.sql('spark')} is a table function the read-only connection does not run"
    return None


def _aware(frame: Any, row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A TIMESTAMP (an instant) as an aware UTC datetime, as DuckDB and PostgreSQL return a
    TIMESTAMPTZ: pyspark hands it over naive, in the machine's local time."""
    from pyspark.sql.types import TimestampType

    zoned = [i for i, f in enumerate(frame.schema.fields) if isinstance(f.dataType, TimestampType)]
    if not zoned:
        return row
    out = list(row)
    for i in zoned:
        if out[i] is not None:
            out[i] = out[i].astimezone(UTC)
    return tuple(out)


def _spine(node: Any) -> bool:
    """Table functions over values only: number ranges and unnesting."""
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return str(node.this).lower() == "range"
    return isinstance(node, (exp.Explode, exp.Unnest, exp.Posexplode, exp.Inline))


class SparkDatabase:
    """The agents' connection: the installed version's refined tables, read-only (see above)."""

    dialect = "spark"

    def __init__(self, target: str | Path, read_only: bool = True) -> None:
        self.target = parse_target(target)
        self.location = str(target)
        self.read_only = read_only
        build_id = current_build(self.target.root)
        if build_id is None:
            raise FileNotFoundError(f"no warehouse installed at {target} (no {self.target.root / CURRENT})")
        self.spark = new_session(self.target)
        self.spark.conf.set("spark.sql.runSQLOnFiles", "false")
        self.db = register_version(self.spark, self.target.root, build_id, ("refined",))["refined"]
        self.spark.sql(f"USE {quote(self.db)}")
        self._scratch_db: str | None = None

    def query(self, sql: str, max_rows: int = 200, timeout_s: float = 10.0) -> QueryOutput:
        if self.read_only:
            reason = _read_only_reason(sql, self.db)
            if reason:
                raise PermissionError(f"refused: {reason}")
        started = time.perf_counter()
        tag = f"dia-{uuid.uuid4().hex[:12]}"
        fired, done = threading.Event(), threading.Event()

        def stop() -> None:
            """Cancel the statement's work, again until it returns: a job planned after the
            first cancel (a cold JVM still parsing, adaptive stages) is cancelled too."""
            fired.set()
            while not done.is_set():
                cancel()
                done.wait(0.2)

        with cancellable(self.spark, bool(self.target.remote), tag) as cancel:
            timer = threading.Timer(timeout_s, stop)
            timer.start()
            try:
                frame = self.spark.sql(sql)
                columns = list(frame.columns)
                rows = [_aware(frame, tuple(r)) for r in frame.take(max_rows + 1)] if columns else []
            except Exception as err:
                if fired.is_set():
                    raise QueryTimeout(f"query exceeded {timeout_s:g} s and was interrupted") from err
                raise
            finally:
                done.set()
                timer.cancel()
        return QueryOutput(columns, rows[:max_rows], len(rows) > max_rows, round(time.perf_counter() - started, 4))

    def tables(self) -> list[TableMeta]:
        return group([(t, c, ty) for t in catalog_tables(self.spark, self.db)
                      for c, ty in table_columns(self.spark, self.db, t)])

    def execute_script(self, statements: list[str]) -> None:
        for stmt in statements:
            self.spark.sql(stmt)

    # Spark SQL has no transactions: a modification is tried in a scratch database
    def begin(self) -> None:
        pass

    def commit(self) -> None:
        pass

    def rollback(self) -> None:
        pass

    def scratch(self) -> SparkDatabase:
        """A writable scratch database of views over the refined tables, dropped on close: a
        table created there never reaches the installed version."""
        db = SparkDatabase.__new__(SparkDatabase)
        db.target, db.location, db.read_only = self.target, self.location, False
        db.spark = new_session(self.target)
        db.db = db._scratch_db = f"dia_scratch_{uuid.uuid4().hex[:12]}"
        db.spark.sql(f"CREATE DATABASE {quote(db.db)}")
        for table in catalog_tables(self.spark, self.db):
            db.spark.sql(f"CREATE VIEW {quote(db.db)}.{quote(table)} AS SELECT * FROM {quote(self.db)}.{quote(table)}")
        db.spark.sql(f"USE {quote(db.db)}")
        return db

    def writable(self) -> SparkDatabase:
        raise PermissionError("a Spark warehouse is changed only by a build (its tables are versioned Parquet)")

    def reopen(self) -> None:
        pass

    def close(self) -> None:
        if self._scratch_db:
            with contextlib.suppress(Exception):
                self.spark.sql(f"DROP DATABASE IF EXISTS {quote(self._scratch_db)} CASCADE")
            self._scratch_db = None
        end_session(self.target, self.spark)


class _Result:
    """The DB-API reads `Target` makes of a Spark statement."""

    def __init__(self, frame: Any) -> None:
        self.description = [(name,) for name in frame.columns] if frame is not None else []
        self._rows = [tuple(r) for r in frame.collect()] if self.description else []

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None


_USE = re.compile(r"^\s*USE\s+", re.IGNORECASE)


class SparkOwner:
    """The Schema Creator's read connection (privileged, uncapped): validation, lineage and
    statistics read the installed version, or a build not installed yet (`Target(schemas=...)`)."""

    autocommit = True

    def __init__(self, target: str) -> None:
        self.target = parse_target(target)
        self.spark = new_session(self.target)
        build_id = current_build(self.target.root)
        if build_id is not None:
            self.spark.sql(f"USE {quote(register_version(self.spark, self.target.root, build_id)['refined'])}")

    def execute(self, sql: str) -> _Result:
        frame = self.spark.sql(sql)
        return _Result(None if _USE.match(sql) else frame)

    def columns(self, schema: str, table: str) -> list[tuple[str, str]]:
        return table_columns(self.spark, schema, table)

    def close(self) -> None:
        end_session(self.target, self.spark)


def _open(target: str | Path, read_only: bool = True) -> SparkDatabase:
    return SparkDatabase(target, read_only=read_only)


SPARK = register(Dialect(
    name="spark", sqlglot="spark", claims=is_spark, opener=_open, owner=SparkOwner, file_based=False,
    title="Apache Spark SQL",
    prompt_notes=("Spark SQL: date_trunc('MONTH', d), date_format(d, 'yyyy-MM'), year(d), EXTRACT(YEAR FROM d), "
                  "COUNT(DISTINCT x), backticks quote names, integer / integer is a fractional DOUBLE."),
    redacted_target="spark://(redacted)", credentials_in_target=True, loads_from_duckdb=True,
    transactional_ddl=False, lenient_cast=False, has_strptime=False, default_schema="default",
    asset_kinds=("spark", "parquet", "table"), nulls_first=(True, False), dbt_adapter="spark",
    search_path_sql=lambda path: f"USE {quote(path[0])}", installed_schemas=lambda t: spark_schema_of(parse_target(t).root),
))
