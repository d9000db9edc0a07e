"""Column lineage of refined tables, derived from the load SQL with sqlglot."""

from __future__ import annotations

import json
from pathlib import Path

from sqlglot import exp, parse_one
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, build_scope

from dia_assets.agents.schema_creator.sqlgen import PROVENANCE, refined_select_sql
from dia_assets.contracts.manifest import Manifest, ManifestTable
from dia_assets.platform.workspace import Workspace


def select_lineage(sql: str, schema: dict, dialect: str = "duckdb") -> dict[str, list[tuple[str, str]]]:
    """Output column -> [(table, column)] it is computed from, in order of first use.

    One parse, one qualification and one walk of each scope's projections, memoized per
    (scope, column): linear in the columns. `sqlglot.lineage` copies the whole SELECT for
    every column it traces, which made a 1,000-column table's plan take minutes. Row filters
    are dropped before qualifying: they decide which rows, not which columns a value comes
    from, and a filter of one test per column is an AND chain as deep as the table is wide,
    whose every column the scope walk would climb (quadratic)."""
    tree = parse_one(sql, dialect=dialect)
    for select in tree.find_all(exp.Select):
        select.set("where", None)
    tree = qualify(tree, schema=schema, dialect=dialect)
    root = build_scope(tree)
    if root is None:
        return {}
    selects: dict[int, dict[str, exp.Expression]] = {}
    memo: dict[tuple[int, str], list[tuple[str, str]]] = {}

    def projection(scope: Scope, name: str) -> exp.Expression | None:
        if id(scope) not in selects:
            selects[id(scope)] = {p.alias_or_name: p for p in getattr(scope.expression, "selects", [])}
        return selects[id(scope)].get(name)

    def resolve(scope: Scope, name: str) -> list[tuple[str, str]]:
        key = (id(scope), name)
        if key in memo:
            return memo[key]
        memo[key] = []  # a cycle (never in generated SQL) ends here
        deps: list[tuple[str, str]] = []
        node = projection(scope, name)
        for col in node.find_all(exp.Column) if node is not None else ():
            source = scope.sources.get(col.table)
            if isinstance(source, Scope):
                found = resolve(source, col.name)
            elif isinstance(source, exp.Table):
                found = [(source.name, col.name)]
            else:
                found = []
            deps += [d for d in found if d not in deps]
        memo[key] = deps
        return deps

    return {name: resolve(root, name) for name in tree.named_selects}


# table_lineage results by (load SQL, staging columns): every code-location load (the code
# server, each run worker) asked for each table's lineage twice (its column_lineage metadata
# and its Markdown), parsing and qualifying its SQL with sqlglot each time: 7-8 s of a run
# worker's start on the example under load (issue 31, bench/ui.py).
_MEMO: dict[tuple[str, tuple[str, ...]], dict[str, list[str]]] = {}
_MEMO_MAX = 4096


def _lineage_inputs(table: ManifestTable) -> tuple[str, dict[str, str]]:
    columns = {c: "VARCHAR" for c in table.source_columns} | {n: t for n, t in PROVENANCE}
    # `refused` stands the per-column row checks (and the raw texts they read) down to one NOT
    # EXISTS filter, which select_lineage drops anyway: half the SQL to parse, the same lineage.
    return refined_select_sql(table, refused="__lineage"), columns


def _memo_key(sql: str, columns: dict[str, str]) -> tuple[str, tuple[str, ...]]:
    return sql, tuple(f"{n} {t}" for n, t in columns.items())


def table_lineage(table: ManifestTable) -> dict[str, list[str]]:
    """Refined column -> staging (= source) columns it is computed from, read off the
    SELECT that the load inserts into the refined table (memoized per SQL in the process)."""
    sql, columns = _lineage_inputs(table)
    key = _memo_key(sql, columns)
    if key not in _MEMO:
        traced = select_lineage(sql, {"staging": {table.name: columns}})
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        _MEMO[key] = {col.name: [c for _t, c in traced.get(col.name, [])] for col in table.columns}
    return {col: list(deps) for col, deps in _MEMO[key].items()}


def remember_planned_lineage(workspace: str | Path, tables: list[ManifestTable]) -> list[str]:
    """Seed table_lineage with `schema/lineage.json`, which the plan that wrote
    `schema/manifest.json` derived with it (write_plan writes the manifest first, then the
    lineage): a code location loading a built workspace reads each table's lineage instead of
    parsing its SQL again. Ignored when older than the manifest or unreadable, and per table
    when its columns differ from the manifest's. Returns the tables seeded."""
    files = Workspace(Path(workspace))
    path, manifest = files.schema_lineage, files.manifest
    try:
        if not manifest.exists() or path.stat().st_mtime < manifest.stat().st_mtime:
            return []
        planned = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    seeded = []
    for table in tables:
        entry = planned.get(table.name) if isinstance(planned, dict) else None
        if not isinstance(entry, dict) or set(entry) != {c.name for c in table.columns}:
            continue
        try:
            lineage = {col: [str(d["column"]) for d in deps] for col, deps in entry.items()}
        except (KeyError, TypeError):
            continue
        _MEMO[_memo_key(*_lineage_inputs(table))] = lineage
        seeded.append(table.name)
    return seeded


Lineage = dict[str, dict[str, list[dict[str, str]]]]


def manifest_lineage(manifest: Manifest, known: Lineage | None = None) -> Lineage:
    """table -> column -> [{source, file, column}] for a reviewer-readable artifact. `known`:
    entries of tables whose plan is unchanged since they were derived (an incremental reload
    re-derives only the changed tables)."""
    out: Lineage = {}
    for table in manifest.tables:
        if known and table.name in known:
            out[table.name] = known[table.name]
            continue
        out[table.name] = {
            col: [{"source": table.sources[0], "file": table.files_label(), "column": dep} for dep in deps]
            for col, deps in table_lineage(table).items()
        }
    return out
