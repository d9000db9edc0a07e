"""Spark target: build in DuckDB (the engine that parses the files, keeps every record and
routes rejects), write each layer of each table as Parquet into a new version folder
`<root>/<build>/{refined,staging,rejects}/<table>/`, register those folders as tables of the
version's databases (`dia_<build>`, `..._staging`, `..._rejects`), validate them there through
Spark, then install the version by replacing `<root>/CURRENT` (one atomic rename), which is what
every reader resolves at open (platform/warehouse/spark.py). A build that is not accepted
leaves CURRENT as it was and deletes its folder; the previous version is kept for readers that
opened on it, and older ones are deleted; a crash leaves only a folder no CURRENT names, which
the next build deletes."""

from __future__ import annotations

import fcntl
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Collection
from pathlib import Path

import duckdb

from dia_assets.agents.schema_creator import sqlgen
from dia_assets.agents.schema_creator.load import LoadResult, StepHook, build_into
from dia_assets.contracts.manifest import Manifest, ManifestTable
from dia_assets.platform import limits
from dia_assets.platform.files.temp import temp_prefix
from dia_assets.platform.naming import quote_ident as q
from dia_assets.platform.naming import sql_str
from dia_assets.platform.warehouse.spark import (
    LAYERS,
    current_build,
    databases,
    drop_version,
    end_session,
    new_session,
    parse_target,
    quote,
    register_version,
    set_current,
    sql_schemas,
)

# (schemas: layer -> its build database) -> accepted
SchemaCheck = Callable[[dict[str, str]], bool]
LOCK = ".build.lock"


# DuckDB types Spark has no type for, and the nearest type that keeps every value
_SPARK_TYPE = {"TIME": "VARCHAR", "TIMETZ": "VARCHAR", "TIME WITH TIME ZONE": "VARCHAR", "UUID": "VARCHAR",
               "INTERVAL": "VARCHAR", "JSON": "VARCHAR", "HUGEINT": "DECIMAL(38,0)", "UHUGEINT": "DECIMAL(38,0)",
               "UBIGINT": "DECIMAL(20,0)", "UINTEGER": "BIGINT", "USMALLINT": "INTEGER", "UTINYINT": "SMALLINT"}


def spark_type(duckdb_type: str) -> str | None:
    """The type a column is written as for Spark, where it differs from DuckDB's (else None)."""
    return _SPARK_TYPE.get(duckdb_type.upper().strip())


def _layers(table: ManifestTable) -> list[tuple[str, str, list[tuple[str, str | None]]]]:
    """(layer folder, DuckDB name, [(column, type to cast to or None)]) of a table's three layers."""
    staged = [(c, None) for c in table.source_columns] + [(c, None) for c, _ in sqlgen.PROVENANCE]
    return [
        ("staging", f"staging.{q(table.name)}", staged),
        ("rejects", f"rejects.{q(table.name)}", staged + [(c, None) for c, _ in sqlgen.REJECT_EXTRA]),
        ("refined", q(table.name), [(c.name, spark_type(c.type)) for c in table.columns]),
    ]


def ddl_script(manifest: Manifest) -> str:
    """What a build registers, as Spark DDL: tables over the Parquet folders of a version
    (`<build>` and `<root>` stand for each build's id and the warehouse root)."""
    names = databases("<build>")
    out = [f"CREATE SCHEMA IF NOT EXISTS {quote(db)}" for db in names.values()]
    for table in manifest.tables:
        for layer, _, _ in _layers(table):
            out.append(f"CREATE TABLE {quote(names[layer])}.{quote(table.name)} USING parquet "
                       f"LOCATION '<root>/<build>/{layer}/{table.name}'")
    return ";\n".join(out) + ";\n"


def _export(con: duckdb.DuckDBPyConnection, manifest: Manifest, folder: Path, hook: StepHook | None) -> None:
    """Every layer as one Parquet file per table (its column types kept: DECIMAL, DATE, ...)."""
    for table in manifest.tables:
        for layer, duck_name, columns in _layers(table):
            out = folder / layer / table.name
            out.mkdir(parents=True)
            select = ", ".join(q(c) if cast is None else f"CAST({q(c)} AS {cast}) AS {q(c)}" for c, cast in columns)
            con.execute(f"COPY (SELECT {select} FROM {duck_name}) TO {sql_str(str(out / 'part-0.parquet'))} "
                        "(FORMAT parquet, COMPRESSION zstd)")
        if hook:
            hook(f"spark:{table.name}")


def _is_version(path: Path) -> bool:
    """A folder a build wrote (its id, its layers): nothing else in the root is ever deleted."""
    return (path.is_dir() and re.fullmatch(r"[0-9a-f]{12}", path.name) is not None
            and any((path / layer).is_dir() for layer in LAYERS))


def _sweep(root: Path, keep: set[str]) -> list[str]:
    """Version folders no reader resolves any more (the caller holds the build lock)."""
    gone = []
    for path in root.iterdir():
        if _is_version(path) and path.name not in keep:
            shutil.rmtree(path, ignore_errors=True)
            gone.append(path.name)
    return gone


def load_spark(
    manifest: Manifest, data_dir: str | Path, target: str, hook: StepHook | None = None,
    check: SchemaCheck | None = None, replace_anyway: bool = False,
    keep: Collection[str] = (), retire: Collection[str] = (),
) -> LoadResult:
    """Build, check (`check` gets the version's databases by layer), then install by switching
    CURRENT. A build `check` refuses is installed only with `replace_anyway` (or when none is).
    `keep`/`retire`: a full build holds every table of the plan, so neither applies here."""
    del keep, retire
    spark_target = parse_target(target)
    root = spark_target.root
    root.mkdir(parents=True, exist_ok=True)
    with (root / LOCK).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder per root: the sweep assumes no other build
        before = current_build(root)
        previous = _previous(root)
        _sweep(root, {b for b in (before, previous) if b})
        build_id = uuid.uuid4().hex[:12]
        folder = root / build_id
        with tempfile.TemporaryDirectory(prefix=temp_prefix("dia-spark-")) as tmp:
            con = duckdb.connect(str(Path(tmp) / "build.duckdb"))
            limits.plan_linearly(con)
            try:
                result = build_into(con, manifest, data_dir, hook)
                _export(con, manifest, folder, hook)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            finally:
                con.close()
        spark = new_session(spark_target)
        try:
            _install(spark, root, build_id, before, previous, result, check, replace_anyway)
        finally:
            end_session(spark_target, spark)
    result.dialect = "spark"
    result.warehouse = "spark://(redacted)"
    return result


def _install(spark: object, root: Path, build_id: str, before: str | None, previous: str | None,
             result: LoadResult, check: SchemaCheck | None, replace_anyway: bool) -> None:
    """Register the version, check it, and switch CURRENT to it, or drop it."""
    installed = False
    try:
        register_version(spark, root, build_id)
        accepted = check(sql_schemas(build_id)) if check else True
        if accepted or replace_anyway or before is None:
            (root / ".previous").write_text(before or "", encoding="utf-8")
            set_current(root, build_id)
            installed = True
        else:
            result.installed = False
            result.rejected_build = (f"its Spark version {build_id} was deleted; the installed version "
                                     f"({before}) was left as it was")
    finally:
        if not installed:
            drop_version(spark, build_id)
            shutil.rmtree(root / build_id, ignore_errors=True)
    if installed and previous and previous != before:
        drop_version(spark, previous)  # the version before the previous: no reader opens it now
        _sweep(root, {build_id, before or ""})


def _previous(root: Path) -> str | None:
    try:
        return (root / ".previous").read_text(encoding="utf-8").strip() or None
    except OSError:
        return None

