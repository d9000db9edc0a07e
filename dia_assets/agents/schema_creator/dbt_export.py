"""The built warehouse as a dbt project (issue 34, `dia dbt export DIR`), for dbt-core with dbt-duckdb,
or dbt-postgres for a PostgreSQL warehouse, or dbt-spark (session method) for a Spark warehouse.

The staging tables are dbt `sources`; each refined table is a model whose SQL is the Schema
Creator's own typed load (`sqlgen.refined_typed_sql`) and each reject table a model made of the
loader's reject routing (`sqlgen.reject_select_sql`), both with the staging table read through
`source()`: the builder and the export share one function per table, so they cannot drift.
The schema tests are what validation checks (keys: unique + not_null; foreign keys:
relationships, a warning where validation lets orphans pass; the parts of a split wide table:
relationships both ways on the key), plus accepted_values where the
interpreter saw a closed domain; descriptions come from the interpretation.

The reader's unparseable lines (`_raw_line`) never reach staging: a reject model takes them from
DIA's reject table (the `dia_rejects` source), as dbt does not read raw files.

A PostgreSQL warehouse was built in DuckDB and copied in, so its load SQL is DuckDB's: the
models are that same SQL rendered for PostgreSQL (`pg_render.to_postgres`), with the function
it needs created in dbt's schema by an `on-run-start` hook. A Spark warehouse was built in DuckDB
too: its models are rendered for Spark SQL (`spark_render.to_spark`), and as Spark has no shared
metastore, `on-run-start` registers the staging and reject Parquet folders of the build the export
was made from (`spark_sources`) in dbt-spark's own session.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import yaml

from dia_assets.agents.schema_creator.layout import REJECT_EXTRA
from dia_assets.agents.schema_creator.pg_render import (
    FUNCTIONS,
    UnsupportedFormat,
    renders,
    strptime_pattern,
    to_postgres,
)
from dia_assets.agents.schema_creator.spark_render import renders as spark_renders
from dia_assets.agents.schema_creator.spark_render import spark_str, to_spark
from dia_assets.agents.schema_creator.sqlgen import (
    refined_typed_sql,
    reject_select_sql,
    staging_columns,
)
from dia_assets.agents.value_parsing import is_text_type, value_sql
from dia_assets.contracts.interpretation import Column, Interpretation, Source
from dia_assets.contracts.manifest import (
    Manifest,
    ManifestColumn,
    ManifestForeignKey,
    ManifestTable,
)
from dia_assets.platform.naming import quote_ident as q
from dia_assets.platform.naming import sql_str
from dia_assets.platform.warehouse import target_dialect
from dia_assets.platform.warehouse.spark import quote as spark_quote

PROJECT = "dia_warehouse"
PROFILE = "dia"
STAGING = "staging"  # the dbt source of the staging tables (schema `staging`)
READER_REJECTS = "dia_rejects"  # the dbt source of DIA's reject tables (schema `rejects`)
REJECTS_SUFFIX = "__rejects"
MARKER = "# written by `dia dbt export`"
# DIA's own tables (DuckDB's main, PostgreSQL's public, a PostgreSQL build's swap schemas): dbt never builds over them
RESERVED_SCHEMAS = ("main", "public", "staging", "rejects")
RESERVED_PREFIXES = ("dia_build_", "dia_prev_")
MAX_DOMAIN = 50  # more distinct values than this is not a closed domain worth a test

_GENERIC_TESTS = """\
{# Written by `dia dbt export`: the composite-key forms of unique and relationships
   (dbt's built-in tests take one column; the project has no packages, so no dbt_utils). #}
{% test dia_unique_combination(model, columns) %}
select {{ columns | join(', ') }}, count(*) as n
from {{ model }}
group by {{ columns | join(', ') }}
having count(*) > 1
{% endtest %}

{% test dia_relationships(model, columns, to, fields) %}
select c.*
from {{ model }} c
where {% for col in columns %}c.{{ col }} is not null{% if not loop.last %} and {% endif %}{% endfor %}
  and not exists (
    select 1 from {{ to }} p
    where {% for col in columns %}p.{{ fields[loop.index0] }} = c.{{ col }}{% if not loop.last %} and {% endif %}{% endfor %}
  )
{% endtest %}
"""


class ExportError(RuntimeError):
    """The project cannot be written (a folder that is not a DIA export, a warehouse no dbt adapter here
    reads, a date format or type the PostgreSQL or Spark models cannot read as DuckDB does, a Spark
    warehouse not in local mode or with no build installed)."""


@dataclass
class DbtExport:
    """What was written: the project folder, its models and its schema tests by kind."""

    root: Path
    warehouse: str
    schema: str
    refined_models: list[str] = field(default_factory=list)
    reject_models: list[str] = field(default_factory=list)
    tests: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        tests = ", ".join(f"{n} {kind}" for kind, n in sorted(self.tests.items())) or "none"
        return (f"wrote dbt project {self.root}: {len(self.refined_models)} refined and "
                f"{len(self.reject_models)} reject models over {self.warehouse} (schema {self.schema}); "
                f"schema tests: {tests}")


def reject_model(table: ManifestTable) -> str:
    return f"{table.name}{REJECTS_SUFFIX}"


def _source(source: str, table: str) -> str:
    return "{{ source(" + repr(source) + ", " + repr(table) + ") }}"


def _jinja(sql: str, refs: dict[str, str]) -> str:
    """`sql` as a dbt model: each placeholder in `refs` becomes its Jinja call and every other
    stretch of text that Jinja would read (`{{`, `{%`, `{#` in a literal or a quoted name) is
    kept verbatim in a raw block."""
    pieces: list[str] = [sql]
    for placeholder, call in refs.items():
        pieces = [part for piece in pieces for part in _split_keep(piece, placeholder, call)]
    out = []
    for piece in pieces:
        if piece in refs.values() or not any(m in piece for m in ("{{", "{%", "{#")):
            out.append(piece)
        elif "endraw" in piece:
            raise ExportError("SQL text contains 'endraw', which a dbt model cannot quote")
        else:
            out.append("{% raw %}" + piece + "{% endraw %}")
    return "".join(out)


def _split_keep(text: str, sep: str, replacement: str) -> list[str]:
    parts = text.split(sep)
    out = [parts[0]]
    for part in parts[1:]:
        out += [replacement, part]
    return out


_STAGING_PLACEHOLDER = "\x00staging\x00"
_READER_PLACEHOLDER = "\x00reader\x00"
# the same for SQL that sqlglot parses first (PostgreSQL, Spark): names, as a NUL byte does not parse
_PARSED_PLACEHOLDERS = ("dia_export_staging_source_", "dia_export_reader_source_", "dia_export_function_schema_")
FUNCTION_SCHEMA = "{{ adapter.quote(target.schema) }}"  # where the on-run-start hook creates dia_strptime


def _model(table: ManifestTable, sql: Callable[[str, str], str], adapter: str) -> str:
    """A model from `sql(staging, reader)`, the DuckDB SQL over those two references, with the
    table's `source()` calls in their place; rendered for the dbt adapter's engine."""
    if adapter == "duckdb":
        return _jinja(sql(_STAGING_PLACEHOLDER, _READER_PLACEHOLDER),
                      {_STAGING_PLACEHOLDER: _source(STAGING, table.name),
                       _READER_PLACEHOLDER: _source(READER_REJECTS, table.name)})
    staging, reader, functions = _PARSED_PLACEHOLDERS
    duck = sql(staging, reader)
    rendered = to_spark(duck) if adapter == "spark" else to_postgres(duck, functions)
    return _jinja(rendered + "\n", {staging: _source(STAGING, table.name), reader: _source(READER_REJECTS, table.name),
                                     functions: FUNCTION_SCHEMA})


def refined_model_sql(table: ManifestTable, adapter: str = "duckdb") -> str:
    """The refined table's model: the Schema Creator's typed load over the staging source."""
    return _model(table, lambda staging, _reader: refined_typed_sql(table, staging=staging) + "\n", adapter)


def reject_model_sql(table: ManifestTable, adapter: str = "duckdb") -> str:
    """The reject table's model: the loader's reject routing over the staging source, then the
    lines the file reader could not split, which only DIA's reject table holds. Every column is
    cast to the reject table's declared type, in its order."""
    columns = staging_columns(table, REJECT_EXTRA)
    routed = ", ".join(f"CAST({'NULL' if n == '_raw_line' else q(n)} AS {t}) AS {q(n)}" for n, t in columns)
    read = ", ".join(f"CAST({q(n)} AS {t}) AS {q(n)}" for n, t in columns)
    return _model(table, lambda staging, reader: (
        f"SELECT {routed} FROM ({reject_select_sql(table, staging=staging)}) routed\n"
        f"UNION ALL\nSELECT {read} FROM {reader} WHERE _raw_line IS NOT NULL\n"), adapter)


def check_renderable(table: ManifestTable, engine: str) -> None:
    """Every column type and date format of the table has a rendering for `engine` ("PostgreSQL"
    or "Spark"; both read date formats through `strptime_pattern`), else the export stops, naming it."""
    reads = spark_renders if engine == "Spark" else renders
    for col in table.columns:
        if not reads(col.type):
            raise ExportError(f"{table.name}.{col.name}: type {col.type} has no {engine} rendering that "
                              "parses as DIA's DuckDB load does")
        for fmt in col.value_format.date_formats:
            try:
                strptime_pattern(fmt)
            except UnsupportedFormat as exc:
                raise ExportError(f"{table.name}.{col.name}: {exc}; the {engine} models would not read "
                                  "it as DIA's DuckDB load does") from exc


# ---------------------------------------------------------------- descriptions and domains


def _sources(interp: Interpretation | None) -> dict[str, Source]:
    return {s.name: s for s in interp.sources} if interp else {}


def _interp_column(sources: dict[str, Source], col: ManifestColumn) -> Column | None:
    source = sources.get(col.source)
    return next((c for c in source.columns if c.name == col.source_column), None) if source else None


def table_description(table: ManifestTable, sources: dict[str, Source]) -> str:
    """The interpreter's description of the table's source when it has one, else what it found."""
    found = [s.description for name in table.sources if (s := sources.get(name)) and s.description]
    facts = f"Refined by DIA from {table.files_label()} ({table.source_format}, {table.source_rows} rows read)"
    if table.primary_key:
        facts += f"; primary key ({', '.join(table.primary_key)})"
    return " ".join([*found, facts + "."])


def column_description(col: ManifestColumn, icol: Column | None, file: str) -> str:
    """The interpreter's description when it wrote one, then what it found about the column."""
    header = (icol.original_name if icol else None) or col.original_name or col.source_column
    facts = [f"header {header!r} in {file}", f"{col.semantic_type}, {col.type}"]
    if icol is not None:
        approx = "about " if icol.distinct_approximate else ""
        facts.append(f"{approx}{icol.distinct_count:,} distinct values, {icol.null_fraction:.0%} missing as read")
    if col.on_error == "null_value":
        facts.append("an unparseable value is NULL here, kept raw in the reject table")
    facts += col.normalizations
    head = [icol.description] if icol is not None and icol.description else []
    return "; ".join([*head, *facts]) + "."


def closed_domain(col: ManifestColumn, icol: Column | None, con: duckdb.DuckDBPyConnection) -> list[str] | None:
    """The refined values of a text column the interpreter counted completely (every distinct
    value in its top values, counted exactly, at most `MAX_DOMAIN`): each raw value through the
    load's own parse (`value_sql`: trims, category maps, null tokens)."""
    if icol is None or not is_text_type(col.type) or icol.semantic_type != "categorical":
        return None
    raw = [v for v, _n in icol.top_values if v is not None]
    if icol.distinct_approximate or not raw or len(icol.top_values) != icol.distinct_count \
            or icol.distinct_count > MAX_DOMAIN:
        return None
    texts = ", ".join(sql_str(v) for v in raw)
    rows = con.execute(f"SELECT DISTINCT {value_sql(col, 'v')} AS x FROM (SELECT unnest([{texts}]) AS v) t "
                       "WHERE x IS NOT NULL ORDER BY 1").fetchall()
    return [r[0] for r in rows] or None


# ---------------------------------------------------------------- schema tests


def _quoted(name: str) -> bool:
    """Whether dbt must quote the column name (anything but a plain lower-case identifier)."""
    return not (name.isidentifier() and name == name.lower() and name.isascii())


def _severity(fk: ManifestForeignKey) -> str:
    """Validation fails a build on orphans only for a blocking key without an allowance."""
    return "warn" if fk.allow_orphans or not fk.blocking else "error"


def _test(name: str, arguments: dict | None = None, severity: str | None = None) -> Any:
    if not arguments and not severity:
        return name
    body: dict[str, Any] = {}
    if arguments:
        body["arguments"] = arguments
    if severity:
        body["config"] = {"severity": severity}
    return {name: body}


def _model_entry(table: ManifestTable, sources: dict[str, Source], names: set[str],
                 con: duckdb.DuckDBPyConnection, counts: dict[str, int],
                 q: Callable[[str], str] = q) -> dict:
    """The model's schema.yml entry; `q` quotes a column name in the tests' SQL (Spark: backticks,
    as a double-quoted name is a string there)."""
    col_tests: dict[str, list] = {c.name: [] for c in table.columns}
    model_tests: list = []

    def add(kind: str, test: Any, column: str | None = None) -> None:
        (col_tests[column] if column else model_tests).append(test)
        counts[kind] = counts.get(kind, 0) + 1

    for key in table.primary_key:
        add("not_null", "not_null", key)
    if len(table.primary_key) == 1:
        add("unique", "unique", table.primary_key[0])
    elif table.primary_key:
        add("unique", _test("dia_unique_combination", {"columns": [q(c) for c in table.primary_key]}))
    for fk in table.foreign_keys:
        if fk.ref_table not in names:
            continue
        ref = f"ref({fk.ref_table!r})"
        if len(fk.columns) == 1:
            add("relationships", _test("relationships", {"to": ref, "field": q(fk.ref_columns[0])},
                                       _severity(fk)), fk.columns[0])
        else:
            add("relationships", _test("dia_relationships", {
                "columns": [q(c) for c in fk.columns], "to": ref, "fields": [q(c) for c in fk.ref_columns]},
                _severity(fk)))
    # slice_join: the parts of a split wide table hold the same keys (each unique, tested
    # above), so they join 1:1; a key on one side only fails the part's test
    key = [q(c) for c in table.primary_key]
    for other in ([table.split_of] if table.split_of else table.parts[1:]):
        add("slice_join", _test("dia_relationships", {"columns": key, "to": f"ref({other!r})", "fields": key}))
    columns = []
    for col in table.columns:
        icol = _interp_column(sources, col)
        if not table.source_files and (values := closed_domain(col, icol, con)):
            # the interpreter's domain, not a rule validation enforces: a new value warns
            add("accepted_values", _test("accepted_values", {"values": values}, "warn"), col.name)
        entry: dict[str, Any] = {"name": col.name, "description": column_description(col, icol, table.files_label()),
                                 "data_type": col.type}
        if _quoted(col.name):
            entry["quote"] = True
        if col_tests[col.name]:
            entry["data_tests"] = col_tests[col.name]
        columns.append(entry)
    entry = {"name": table.name, "description": table_description(table, sources),
             "config": {"meta": {"dia_table": table.name, "dia_kind": "refined"}}, "columns": columns}
    if model_tests:
        entry["data_tests"] = model_tests
    return entry


def _reject_entry(table: ManifestTable) -> dict:
    return {"name": reject_model(table), "description": (
        f"Rows of {table.files_label()} that did not reach {table.name} as read: raw values, provenance "
        "and the reason (`_reason`); `_row_kept` rows reached it with the failing values NULL."),
        "config": {"alias": table.name, "meta": {"dia_table": table.name, "dia_kind": "rejects"}}}


def _source_tables(tables: Iterable[ManifestTable], reject: bool) -> list[dict]:
    out = []
    for table in tables:
        extra = REJECT_EXTRA if reject else []
        out.append({"name": table.name, "description": (
            f"DIA's reject table of {table.name}: read for the lines the file reader could not split "
            "(`_raw_line`)" if reject else f"Every record of {table.files_label()} as text, with provenance"),
            "columns": [{"name": n, "data_type": t, **({"quote": True} if _quoted(n) else {})}
                        for n, t in staging_columns(table, extra)]})
    return out


# ---------------------------------------------------------------- the project


def _yaml(data: dict) -> str:
    return MARKER + "\n" + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def _prepare(root: Path) -> None:
    """An empty folder, or a previous export (its generated folders are replaced)."""
    project = root / "dbt_project.yml"
    if project.exists():
        if not project.read_text(encoding="utf-8").startswith(MARKER):
            raise ExportError(f"{root} holds a dbt project DIA did not write; export into an empty folder")
        for sub in ("models", "macros"):
            shutil.rmtree(root / sub, ignore_errors=True)
    elif root.exists() and any(root.iterdir()):
        raise ExportError(f"{root} is not empty; export into an empty folder or a previous export")
    root.mkdir(parents=True, exist_ok=True)


def schema_problem(schema: str) -> str | None:
    """Why dbt may not build in `schema`: DIA's own schemas, or one named like a reject schema."""
    name = schema.lower()
    if name in RESERVED_SCHEMAS or name.endswith("_rejects") or name.startswith(RESERVED_PREFIXES):
        return f"schema {schema!r} is one of DIA's own or a reject schema; pick another, e.g. 'dbt'"
    return None


def export_project(manifest: Manifest, interpretation: Interpretation | None, warehouse: str | Path,
                   out: str | Path, schema: str = "dbt") -> DbtExport:
    """Write the dbt project for the warehouse built from `manifest` into `out`. Its profile
    (`profiles.yml`, beside the project) points dbt-duckdb at `warehouse` (or at
    `$DIA_DBT_WAREHOUSE`, a copy, when set), dbt-postgres at a PostgreSQL warehouse
    (`postgres_profile`) or dbt-spark at a Spark one (`spark_profile`); models are built in
    `schema` and reject models in `<schema>_rejects`, never over DIA's own tables."""
    if problem := schema_problem(schema):
        raise ExportError(problem)
    dialect = target_dialect(warehouse)
    adapter = dialect.dbt_adapter
    if adapter not in ("duckdb", "postgres", "spark"):  # the profiles below
        raise ExportError(f"{dialect.redacted_target or warehouse} is a {dialect.title or dialect.name} "
                          "warehouse: the export writes dbt-duckdb, dbt-postgres and dbt-spark projects only")
    postgres = adapter == "postgres"
    hooks: list[str] = []
    build = spark_root = ""
    if postgres:
        for table in manifest.tables:
            check_renderable(table, "PostgreSQL")
        output, shown = postgres_profile(str(warehouse), schema)
        hooks = ["{{ dia_functions() }}"]
    elif adapter == "spark":
        for table in manifest.tables:
            check_renderable(table, "Spark")
        output, shown, build, spark_root = spark_profile(str(warehouse), schema)
        hooks = spark_hooks(manifest, build)
    else:
        shown = str(dialect.local_path(str(warehouse)).resolve())
        output = {"type": "duckdb", "path": "{{ env_var('DIA_DBT_WAREHOUSE', " + repr(shown) + ") }}",
                  "schema": schema, "threads": 1}
    root = Path(out)
    _prepare(root)
    result = DbtExport(root=root, warehouse=shown, schema=schema)
    sources = _sources(interpretation)
    names = {t.name for t in manifest.tables}
    (root / "models" / "refined").mkdir(parents=True)
    (root / "models" / "rejects").mkdir(parents=True)
    (root / "macros").mkdir()
    refined, rejects = [], []
    con = duckdb.connect()
    try:
        for table in manifest.tables:
            (root / "models" / "refined" / f"{table.name}.sql").write_text(
                refined_model_sql(table, adapter), encoding="utf-8")
            (root / "models" / "rejects" / f"{reject_model(table)}.sql").write_text(
                reject_model_sql(table, adapter), encoding="utf-8")
            refined.append(_model_entry(table, sources, names, con, result.tests,
                                        spark_quote if adapter == "spark" else q))
            rejects.append(_reject_entry(table))
            result.refined_models.append(table.name)
            result.reject_models.append(reject_model(table))
    finally:
        con.close()
    source_schemas = spark_databases(build) if adapter == "spark" else {"staging": "staging", "rejects": "rejects"}
    project = {
        "name": PROJECT, "version": "1.0.0", "config-version": 2, "profile": PROFILE,
        "model-paths": ["models"], "macro-paths": ["macros"],
        "flags": {"send_anonymous_usage_stats": False},
        "models": {PROJECT: {"+materialized": "table", "rejects": {"+schema": "rejects"}}},
    }
    if hooks:
        project["on-run-start"] = hooks
    if spark_root:
        project["vars"] = {"dia_spark_root": spark_root}
    files = {
        "dbt_project.yml": project,
        "profiles.yml": {PROFILE: {"target": "dev", "outputs": {"dev": output}}},
        "models/sources.yml": {"version": 2, "sources": [
            {"name": STAGING, "schema": source_schemas["staging"], "description": "DIA's staging tables: every record as "
             "text with its provenance (_source_file, _source_row, _loaded_at, _content_hash).",
             "tables": _source_tables(manifest.tables, reject=False)},
            {"name": READER_REJECTS, "schema": source_schemas["rejects"], "description": "DIA's reject tables, read only "
             "for the lines the file reader could not split (they never reach staging).",
             "tables": _source_tables(manifest.tables, reject=True)}]},
        "models/refined/schema.yml": {"version": 2, "models": refined},
        "models/rejects/schema.yml": {"version": 2, "models": rejects},
    }
    for name, data in files.items():
        (root / name).write_text(_yaml(data), encoding="utf-8")
    (root / "macros" / "dia_tests.sql").write_text(_spark_tests() if adapter == "spark" else _GENERIC_TESTS,
                                                   encoding="utf-8")
    if postgres:
        (root / "macros" / "dia_functions.sql").write_text(FUNCTIONS, encoding="utf-8")
    if adapter == "spark":
        (root / "macros" / "dia_sources.sql").write_text(_SPARK_SOURCES, encoding="utf-8")
    return result


def postgres_profile(url: str, schema: str) -> tuple[dict, str]:
    """dbt-postgres's output for the warehouse at `url` (a URL or keyword conninfo), and the
    warehouse as the export reports it. Each connection field may be overridden by
    `$DIA_DBT_PG_<FIELD>` (another database, e.g. a copy); the password is never written:
    dbt reads it from `$DIA_DBT_PG_PASSWORD`, required when the URL has one."""
    from psycopg.conninfo import conninfo_to_dict

    info = {k: str(v) for k, v in conninfo_to_dict(url).items()}

    def field(name: str, default: str) -> str:
        return "{{ env_var('DIA_DBT_PG_" + name.upper() + "', " + repr(default) + ") }}"

    host, port = info.get("host", "localhost"), info.get("port", "5432")
    user, dbname = info.get("user", "postgres"), info.get("dbname", info.get("user", "postgres"))
    output = {"type": "postgres", "host": field("host", host),
              "port": field("port", port)[:-3] + " | as_number }}",
              "user": field("user", user),
              "password": ("{{ env_var('DIA_DBT_PG_PASSWORD') }}" if info.get("password")
                           else field("password", "")),
              "dbname": field("dbname", dbname), "schema": schema, "threads": 1}
    if "sslmode" in info:
        output["sslmode"] = info["sslmode"]
    return output, f"postgresql://{user}@{host}:{port}/{dbname}"


# ---------------------------------------------------------------- Spark (dbt-spark, session method)

_SPARK_SOURCES = """\
{# Written by `dia dbt export`: DIA's Spark warehouse has no shared metastore, so each dbt run
   registers the staging and reject Parquet folders of the exported build as tables of its own
   session's catalog (on-run-start). The root follows $DIA_DBT_SPARK_ROOT when set. #}
{% macro dia_spark_database(database) %}
create database if not exists `{{ database }}`
{% endmacro %}

{% macro dia_spark_source(database, table, folder) %}
create table if not exists `{{ database }}`.`{{ table }}` using parquet
location '{{ env_var("DIA_DBT_SPARK_ROOT", var("dia_spark_root")) }}/{{ folder }}'
{% endmacro %}
"""


def _spark_tests() -> str:
    """The generic tests with aliases no column shares: Spark reads `c.x` as a field of a column
    `c` before it reads it as the alias `c`'s column (a split table's part may have a column `c`)."""
    text = re.sub(r"\bc(\.|\n)", r"dia_child\1", _GENERIC_TESTS)
    return re.sub(r"\bp(\.|\n)", r"dia_parent\1", text)


def spark_databases(build: str) -> dict[str, str]:
    """Layer -> the database the export's sources are registered in (the build's own names)."""
    from dia_assets.platform.warehouse.spark import databases

    names = databases(build)
    return {"staging": names["staging"], "rejects": names["rejects"]}


def spark_profile(url: str, schema: str) -> tuple[dict, str, str, str]:
    """dbt-spark's output (session method: a local Spark in dbt's own process) for the Spark
    warehouse at `url`, the warehouse as the export reports it, the installed build the models
    read and the warehouse root. dbt's catalog (a Derby metastore) and its tables live under `ROOT/_dbt/`
    (`$DIA_DBT_SPARK_HOME` otherwise); the session time zone is UTC, as DIA's load reads a time
    without an offset."""
    from dia_assets.platform.warehouse.spark import current_build, parse_target

    if schema.lower().startswith("dia_"):
        raise ExportError(f"schema {schema!r} is named like DIA's own Spark databases (dia_...); pick another")
    target = parse_target(url)
    if target.remote or not target.master.startswith("local"):
        raise ExportError("the dbt-spark export runs Spark in dbt's own process (session method): "
                          "export a local-mode warehouse (spark://local[N]/ROOT), not a cluster or Spark Connect")
    build = current_build(target.root)
    if build is None:
        raise ExportError(f"no build installed under {target.root} (no CURRENT): build the warehouse first")
    home = "{{ env_var('DIA_DBT_SPARK_HOME', " + repr(str(target.root / "_dbt")) + ") }}"
    output = {"type": "spark", "method": "session", "host": "localhost", "schema": schema, "threads": 1,
              "server_side_parameters": {
                  "spark.master": "{{ env_var('DIA_DBT_SPARK_MASTER', " + repr(target.master) + ") }}",
                  "spark.sql.warehouse.dir": home + "/warehouse",
                  "spark.hadoop.javax.jdo.option.ConnectionURL":
                      "jdbc:derby:;databaseName=" + home + "/metastore_db;create=true",
                  "spark.driver.extraJavaOptions": "-Dderby.stream.error.file=" + home + "/derby.log",
                  "spark.sql.session.timeZone": "UTC",
                  # an instant as Parquet's UTC-adjusted timestamp, as DIA writes it (Spark's default: INT96)
                  "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
                  "spark.ui.enabled": "false",
                  "spark.sql.shuffle.partitions": "4"}}
    return output, f"spark://{target.master}{target.root} (build {build})", build, str(target.root)


def spark_hooks(manifest: Manifest, build: str) -> list[str]:
    """on-run-start: the exported build's staging and reject folders as tables of dbt's session."""
    names = spark_databases(build)
    hooks = [f"{{{{ dia_spark_database({spark_str(db)}) }}}}" for db in names.values()]
    for layer, db in names.items():
        hooks += [f"{{{{ dia_spark_source({spark_str(db)}, {spark_str(t.name)}, "
                  f"{spark_str(f'{build}/{layer}/{t.name}')}) }}}}" for t in manifest.tables]
    return hooks
