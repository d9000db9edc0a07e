"""Generated SQL: golden value expressions, and every generated statement parses with
sqlglot in DuckDB's dialect and transpiles to PostgreSQL."""

from __future__ import annotations

import json

import sqlglot

from dia_assets.agents.schema_creator import sqlgen
from dia_assets.agents.schema_creator.er import er_diagram
from dia_assets.agents.schema_creator.lineage import table_lineage
from dia_assets.agents.value_parsing import value_sql
from dia_assets.contracts.interpretation import ValueFormat
from dia_assets.contracts.manifest import ManifestColumn


def _col(name: str, type_: str, **kw) -> ManifestColumn:
    return ManifestColumn(name=name, type=type_, source="s", source_column=name, **kw)


def test_text_is_kept_verbatim_without_evidence():
    assert value_sql(_col("note", "VARCHAR"), '"note"') == '"note"'


def test_text_normalizations_follow_evidence():
    col = _col("status", "VARCHAR", value_format=ValueFormat(trim=True, null_tokens=["n/a"]),
               category_map={"Done ": "done"})
    assert value_sql(col, "x") == (
        "(CASE WHEN trim(x) = '' OR lower(trim(x)) IN ('n/a') THEN NULL ELSE "
        "(CASE trim(x) WHEN 'Done ' THEN 'done' WHEN 'Done' THEN 'done' ELSE trim(x) END) END)")


def test_typed_values_use_the_interpreters_expressions():
    col = _col("rate", "DECIMAL(18,2)", value_format=ValueFormat(decimal_separator=","))
    sql = value_sql(col, "x")
    assert sql.startswith("TRY_CAST(replace((CASE WHEN x IS NULL OR trim(x) = ''")
    assert sql.endswith("THEN NULL ELSE trim(x) END), ',', '.') AS DECIMAL(18,2))")
    assert sqlgen.failure_sql(col, "x").endswith("THEN 'rate: not a DECIMAL(18,2)' END")
    assert sqlgen.failure_sql(_col("n", "VARCHAR"), "x") is None


def test_every_generated_statement_parses_and_transpiles(example_interpretation):
    from dia_assets.agents.schema_creator.plan import plan_manifest

    manifest = plan_manifest(example_interpretation)
    script = sqlgen.ddl_script(manifest) + sqlgen.load_script(manifest)
    statements = [s for s in sqlglot.parse(script, read="duckdb") if s is not None]
    assert len(statements) == 2 + 3 * len(manifest.tables) + 4 * len(manifest.tables)
    assert sqlglot.transpile(sqlgen.create_refined_sql(manifest.table("staff")), read="duckdb", write="postgres")
    lineage = table_lineage(manifest.table("payroll"))
    assert lineage["gross_pay"] == ["gross_pay"] and set(lineage) == {c.name for c in manifest.table("payroll").columns}
    er = er_diagram(manifest)
    assert "staff ||--o{ payroll" in er and "VARCHAR badge PK" in er


def test_plain_parse_is_used_only_where_it_gives_the_same_values():
    """The cheap parse (no null-token test) is chosen per column by running the parse on
    every blank and null-token spelling; where it is chosen, it agrees with the full one."""
    import duckdb

    from dia_assets.contracts.manifest import ManifestTable

    cols = [
        _col("n", "INTEGER"), _col("d", "DECIMAL(18,2)", value_format=ValueFormat(decimal_separator=",")),
        _col("day", "DATE", value_format=ValueFormat(date_formats=["%d/%m/%Y"])),
        _col("x", "DOUBLE"),  # 'nan' parses as a DOUBLE: the token test must stay
        _col("flag", "BOOLEAN", value_format=ValueFormat(true_values=["yes"], false_values=["-"])),
        _col("ok", "BOOLEAN"), _col("note", "VARCHAR"),
    ]
    table = ManifestTable(name="t", sources=["s"], source_path="s.csv", source_format="csv",
                          source_columns=[c.name for c in cols], columns=cols, content_hash="h",
                          staging_table="staging.t", reject_table="rejects.t")
    con = duckdb.connect()
    plain = sqlgen.plain_parse_columns(lambda sql: con.execute(sql).fetchall(), table)
    assert plain == {"n", "d", "day", "ok"}
    texts = [None, "", "  ", " 12 ", "N/A", " NaN ", "nİl", "(NULL)", "-", "1,5", "03/02/2024", "yes", "true", "abc"]
    for col in cols:
        if col.name == "note":
            continue
        full, cheap = value_sql(col, "v"), value_sql(col, "v", plain=True)
        rows = con.execute(f"SELECT v, {full} IS NOT DISTINCT FROM {cheap} FROM (SELECT unnest(?) AS v) t",
                           [texts]).fetchall()
        differ = [v for v, same in rows if not same]
        assert (differ == []) == (col.name in plain), (col.name, differ)


def test_a_code_location_reads_the_planned_lineage_instead_of_parsing_again(example_interpretation, tmp_path,
                                                                             monkeypatch) -> None:
    """Every code-location load (code server, each run worker) needs each table's column lineage;
    it reads the `schema/lineage.json` the plan wrote (the same derivation) instead of parsing
    and qualifying every load SQL again, and derives it anew when that file is older than the
    manifest or describes other columns."""
    import os

    from dia_assets.agents.schema_creator import lineage as lineage_mod
    from dia_assets.agents.schema_creator.build import write_plan

    manifest, paths = write_plan(example_interpretation, tmp_path)
    derived = {t.name: table_lineage(t) for t in manifest.tables}
    seen: list[str] = []
    real = lineage_mod.select_lineage
    monkeypatch.setattr(lineage_mod, "select_lineage", lambda sql, *a, **k: seen.append(sql) or real(sql, *a, **k))

    monkeypatch.setattr(lineage_mod, "_MEMO", {})
    assert lineage_mod.remember_planned_lineage(tmp_path, manifest.tables) == [t.name for t in manifest.tables]
    assert {t.name: table_lineage(t) for t in manifest.tables} == derived and seen == []

    # a lineage.json older than the manifest (a plan that stopped between the two) is not read
    monkeypatch.setattr(lineage_mod, "_MEMO", {})
    stamp = paths["manifest"].stat().st_mtime
    os.utime(paths["lineage"], (stamp - 60, stamp - 60))
    assert lineage_mod.remember_planned_lineage(tmp_path, manifest.tables) == []
    assert {t.name: table_lineage(t) for t in manifest.tables} == derived and len(seen) == len(manifest.tables)

    # nor the entry of a table whose columns differ from the manifest's
    monkeypatch.setattr(lineage_mod, "_MEMO", {})
    planned = json.loads(paths["lineage"].read_text())
    planned["payroll"].pop("gross_pay")
    paths["lineage"].write_text(json.dumps(planned))
    assert "payroll" not in lineage_mod.remember_planned_lineage(tmp_path, manifest.tables)
    assert table_lineage(manifest.table("payroll")) == derived["payroll"]
