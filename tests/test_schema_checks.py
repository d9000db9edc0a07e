"""Each validation axis passes on a clean load and fails on purpose."""

from __future__ import annotations

from pathlib import Path

from dia_assets.agents.schema_creator import validate as v
from dia_assets.contracts.interpretation import ForeignKey, SourceRef
from tests.schema_fixtures import build_ws, csv_source, interpretation, tamper, target


def _data(tmp: Path, orphan: bool = False) -> tuple[Path, object]:
    data = tmp / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "parents.csv").write_text("id,name\n1,Ann\n2,Bob\n3,Cy\n")
    kids = "id,parent_id,amount\n10,1,1.50\n11,1,2.00\n12,2,3.25\n13,3,4.00\n" + ("14,9,5.00\n" if orphan else "")
    (data / "children.csv").write_text(kids)
    parents = csv_source("parents", data / "parents.csv", {"id": "INTEGER", "name": "VARCHAR"}, rows=3, pk=["id"])
    children = csv_source("children", data / "children.csv",
                          {"id": "INTEGER", "parent_id": "INTEGER", "amount": "DECIMAL(18,2)"},
                          rows=5 if orphan else 4, pk=["id"])
    fk = ForeignKey(**{"from": SourceRef(source="children", columns=["parent_id"])},
                    to=SourceRef(source="parents", columns=["id"]), coverage=1.0,
                    orphan_count=1 if orphan else 0, confidence=1.0)
    return data, interpretation(data, parents, children, foreign_keys=[fk])


def _build(tmp_path, overrides: str | None = None, orphan: bool = False):
    _, interp = _data(tmp_path, orphan)
    return build_ws(tmp_path, interp, overrides)


def test_clean_load_passes_every_axis(tmp_path):
    result = _build(tmp_path)
    assert result.report.accepted
    assert set(result.report.axes) == set(v.AXES)
    names = [q.name for q in result.report.test_queries]
    assert names == ["count parents", "first row of parents from staging", "lookup parents by key",
                     "count children", "rows per children(parent_id) from staging",
                     "sum children.amount from staging", "first row of children from staging",
                     "lookup children by key"]
    assert result.load.tables["children"].foreign_keys_enforced == ["(parent_id) -> parents"]


def test_row_count_reconciliation_fails_when_rows_vanish(tmp_path):
    result = _build(tmp_path)
    tamper(result.load.warehouse, "DELETE FROM children WHERE id = 13")
    with target(result.load.warehouse) as t:
        rows = {r.table: r for r in v.check_row_counts(t, result.manifest)}
        queries = v.run_test_queries(t, v.generate_test_queries(t, result.manifest))
    assert not rows["children"].passed and "1 rows unaccounted" in rows["children"].message
    assert rows["parents"].passed
    failed = [q for q in queries if not q.passed]
    # the vanished row also changes the rows per parent and the amount's sum, both from staging
    assert [q.name for q in failed] == ["count children", "rows per children(parent_id) from staging",
                                        "sum children.amount from staging"]  # id 13 is not the first row
    assert failed[0].error == "expected 4, got 3"


def test_row_count_reconciliation_fails_when_file_changed_since_interpretation(tmp_path):
    data, interp = _data(tmp_path)
    (data / "parents.csv").write_text("id,name\n1,Ann\n2,Bob\n3,Cy\n4,Di\n")
    result = build_ws(tmp_path, interp)
    bad = [r for r in result.report.row_counts if not r.passed]
    assert [r.table for r in bad] == ["parents"] and "changed since interpretation" in bad[0].message


def test_column_coverage(tmp_path):
    result = _build(tmp_path, "tables:\n  children:\n    columns:\n      amount:\n        exclude: 'not needed'\n")
    cov = {c.table: c for c in result.report.column_coverage}
    assert cov["children"].passed and cov["children"].excluded == {"amount": "not needed"}
    other = _build(tmp_path / "other")
    tamper(other.load.warehouse, "ALTER TABLE children DROP COLUMN amount")
    with target(other.load.warehouse) as t:
        cov = {c.table: c for c in v.check_column_coverage(t, other.manifest)}
    assert not cov["children"].passed and cov["children"].missing == ["amount"]


def test_column_coverage_reports_renames(tmp_path):
    result = _build(tmp_path, "tables:\n  parents:\n    columns:\n      name:\n        rename: full_name\n")
    cov = {c.table: c for c in result.report.column_coverage}
    assert cov["parents"].passed and cov["parents"].renamed == {"name": "full_name"}


def test_key_validity_fails_on_non_unique_override_key_and_lists_it(tmp_path):
    result = _build(tmp_path, "tables:\n  children:\n    primary_key: [parent_id]\n")
    assert not result.report.accepted
    pk = next(k for k in result.report.key_validity if k.table == "children" and k.kind == "primary_key")
    assert not pk.passed and pk.duplicate_keys == 1 and pk.examples == ["1"]
    assert not result.load.tables["children"].primary_key_enforced


def test_primary_key_check_scans_only_a_key_duckdb_does_not_enforce(tmp_path):
    """A key DuckDB enforces holds by construction; the same table without the constraint
    (here rebuilt with a duplicated row) is scanned and fails."""
    result = _build(tmp_path)
    children = result.manifest.table("children")
    with target(result.load.warehouse) as t:
        assert v.declared_primary_key(t, children) and v.primary_key_result(t, children).passed
    tamper(result.load.warehouse, "CREATE TABLE c2 AS SELECT * FROM children UNION ALL "
           "SELECT * FROM children WHERE id = 10; DROP TABLE children; ALTER TABLE c2 RENAME TO children")
    with target(result.load.warehouse) as t:
        assert not v.declared_primary_key(t, children)
        pk = v.primary_key_result(t, children)
    assert not pk.passed and pk.duplicate_keys == 1 and pk.examples == ["10"]


def test_key_validity_orphans_fail_unless_allowed(tmp_path):
    result = _build(tmp_path, orphan=True)
    fk = next(k for k in result.report.key_validity if k.kind == "foreign_key")
    assert not fk.passed and fk.orphan_rows == 1 and fk.examples == ["9"]
    assert not result.report.axes["key_validity"].passed


def test_key_validity_allowed_orphans_pass_and_are_reported(tmp_path):
    overrides = ("tables:\n  children:\n    foreign_keys:\n      - columns: [parent_id]\n"
                 "        allow_orphans: 'parent 9 was archived'\n")
    result = _build(tmp_path, overrides, orphan=True)
    fk = next(k for k in result.report.key_validity if k.kind == "foreign_key")
    assert fk.passed and fk.orphan_rows == 1 and fk.reason == "parent 9 was archived"
    assert result.report.accepted


def test_load_integrity_fails_when_too_many_rows_are_rejected(tmp_path):
    result = _build(tmp_path, "tables:\n  parents:\n    columns:\n      name:\n        type: INTEGER\n")
    li = {r.table: r for r in result.report.load_integrity}
    assert not li["parents"].passed and li["parents"].rejected == 3
    assert li["parents"].reasons == {"name: not a INTEGER": 3}
    assert li["children"].passed
    # The row count still reconciles: rejected rows are accounted for.
    assert all(r.passed for r in result.report.row_counts)


def test_load_integrity_allowance_is_an_override(tmp_path):
    result = _build(tmp_path, "tables:\n  parents:\n    max_reject_fraction: 1.0\n"
                              "    columns:\n      name:\n        type: INTEGER\n")
    assert all(r.passed for r in result.report.load_integrity)


def test_load_integrity_fails_for_a_reject_without_reason_or_provenance(tmp_path):
    result = _build(tmp_path, "tables:\n  parents:\n    max_reject_fraction: 1.0\n"
                              "    columns:\n      name:\n        type: INTEGER\n")
    tamper(result.load.warehouse, "UPDATE rejects.parents SET _reason = '' WHERE _source_row = 1")
    tamper(result.load.warehouse, "UPDATE rejects.parents SET _source_file = NULL WHERE _source_row = 2")
    with target(result.load.warehouse) as t:
        li = {r.table: r for r in v.check_load_integrity(t, result.manifest)}
        counts = v.layer_counts(t, result.manifest.table("parents"))
    assert not li["parents"].passed and li["parents"].message == "2 rejects without reason or provenance"
    assert li["children"].passed
    assert (counts.staged, counts.refined, counts.rejects, counts.rejected, counts.blind) == (3, 0, 3, 3, 2)


def test_test_queries_fail_when_sql_errors(tmp_path):
    result = _build(tmp_path)
    tamper(result.load.warehouse, "DROP TABLE children")
    with target(result.load.warehouse) as t:
        queries = v.run_test_queries(t, [q for q in result.report.test_queries])
    failed = [q for q in queries if not q.passed]
    assert failed and all("children" in q.sql for q in failed)
    assert all(q.error and "CatalogException" in q.error for q in failed)
    # they ran in one statement (validate.BATCH), which failed: each query then ran alone, so
    # the queries on parents still pass with their own values
    assert len(queries) <= v.BATCH
    assert [q.name for q in queries if q.passed] == ["count parents", "first row of parents from staging",
                                                     "lookup parents by key"]
    assert all(q.actual == 1 for q in queries[1:3]) and queries[0].actual == 3


def test_test_queries_catch_a_load_the_other_axes_miss(tmp_path):
    """Values moved between rows keep every count, key and coverage figure: only the test
    queries, whose expected values come from the staging text, see it."""
    result = _build(tmp_path)
    tamper(result.load.warehouse, "UPDATE children SET parent_id = 2 WHERE id = 11")  # a row under the wrong parent
    tamper(result.load.warehouse, "UPDATE children SET amount = 20.00 WHERE id = 11")  # a value mangled
    tamper(result.load.warehouse, "UPDATE parents SET name = 'Anne' WHERE id = 1")  # a text value changed
    with target(result.load.warehouse) as t:
        report = v.validate(t, result.manifest)
    assert report.axes["row_count_reconciliation"].passed and report.axes["column_coverage"].passed
    assert report.axes["key_validity"].passed and report.axes["load_integrity"].passed
    assert not report.axes["test_queries"].passed
    failed = {q.name for q in report.test_queries if not q.passed}
    assert failed == {"rows per children(parent_id) from staging", "sum children.amount from staging",
                      "first row of parents from staging"}


def test_batched_reads_give_each_query_its_own_result(tmp_path, monkeypatch):
    """The layer counts and key counts are read BATCH queries to a statement: each table's
    figures are its own (a batch of two, then one left over), as read one query at a time."""
    result = _build(tmp_path, "tables:\n  parents:\n    max_reject_fraction: 1.0\n"
                              "    columns:\n      name:\n        type: INTEGER\n", orphan=True)
    tables = result.manifest.tables
    tamper(result.load.warehouse, "CREATE TABLE c2 AS SELECT * FROM children UNION ALL "
           "SELECT * FROM children WHERE id = 10; DROP TABLE children; ALTER TABLE c2 RENAME TO children")
    monkeypatch.setattr(v, "BATCH", 2)
    with target(result.load.warehouse) as t:
        batched = v.all_layer_counts(t, result.manifest)
        alone = {table.name: v.layer_counts(t, table) for table in tables}
        keys = v.check_keys(t, result.manifest)
        sqls = [f"SELECT count(*) FROM {name}" for name in ("staging.parents", "children", "staging.parents")]
        assert v.one_rows(t, sqls) == [(3,), (6,), (3,)]
        assert v.scalars(t, sqls) == [3, 6, 3]
    assert batched == alone and batched["parents"].rejected == 3 and batched["children"].refined == 6
    pk = {k.table: k for k in keys if k.kind == "primary_key"}
    fk = next(k for k in keys if k.kind == "foreign_key")
    assert pk["children"].duplicate_keys == 1 and pk["children"].examples == ["10"] and pk["parents"].passed
    # every parent was rejected: each child row with a parent is an orphan, the duplicate too
    assert fk.orphan_rows == 6 and fk.examples == ["1", "2", "3", "9"]
