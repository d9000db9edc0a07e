"""The example export: every true key found, every planted problem reported, no false FK."""

from __future__ import annotations

from dia_assets.contracts.policy import HIGH


def _fks(interp, min_conf=HIGH):
    return {
        (f.from_.source, tuple(f.from_.columns), f.to.source, tuple(f.to.columns))
        for f in interp.foreign_keys if f.confidence >= min_conf
    }


def test_every_source_is_read(example_interpretation, example_truth):
    got = {s.name: s.row_count for s in example_interpretation.sources}
    want = {name: spec["row_count"] for name, spec in example_truth["sources"].items()}
    assert got == want
    assert all(s.parse.ok for s in example_interpretation.sources)


def test_primary_keys_match_truth(example_interpretation, example_truth):
    for name, spec in example_truth["sources"].items():
        pk = example_interpretation.source(name).primary_key
        assert pk is not None, name
        assert pk.columns == spec["primary_key"], name


def test_foreign_keys_match_truth_and_nothing_false_is_high(example_interpretation, example_truth):
    truth = {
        (f["from"]["source"], tuple(f["from"]["columns"]), f["to"]["source"], tuple(f["to"]["columns"]))
        for f in example_truth["foreign_keys"]
    }
    assert _fks(example_interpretation) == truth
    orphans = {(f.from_.source, tuple(f.from_.columns)): f.orphan_count for f in example_interpretation.foreign_keys}
    for f in example_truth["foreign_keys"]:
        assert orphans[(f["from"]["source"], tuple(f["from"]["columns"]))] == f["orphan_rows"]


def _issue(interp, kind, source, column):
    return [q for q in interp.quality_issues if q.kind == kind and q.source == source
            and (column is None or q.column == column)]


def test_every_planted_problem_is_reported(example_interpretation, example_truth):
    interp = example_interpretation
    for planted in example_truth["planted"]:
        kind, source, column, count = planted["kind"], planted["source"], planted["column"], planted["count"]
        if kind == "unique_key_not_named_id":
            src = interp.source(source)
            assert src.primary_key.columns == [column] and src.column(column).semantic_type == "id"
            assert src.column(column).distinct_count == count
            continue
        if kind == "composite_key":
            assert interp.source(source).primary_key.columns == planted["columns"]
            continue
        found = _issue(interp, kind, source, column)
        assert found, f"{kind} on {source}.{column} not reported"
        if kind == "inconsistent_categories":
            # case and whitespace variants are found; an abbreviation (RN) needs the expert
            assert 0 < found[0].count <= count
        else:
            assert found[0].count == count, (kind, source, column, found[0].count, count)


def test_text_columns_get_types_that_keep_values(example_interpretation):
    staff = example_interpretation.source("staff")
    assert staff.parse.encoding == "cp1252" and staff.parse.delimiter == ";"
    assert staff.column("postal_code").inferred_type == "VARCHAR"  # leading zeros kept
    assert staff.column("hourly_rate").inferred_type.startswith("DECIMAL")
    assert staff.column("hourly_rate").value_format.decimal_separator == ","
    hire = staff.column("hire_date")
    assert hire.inferred_type == "DATE" and hire.value_format.date_formats == ["%Y-%m-%d", "%d/%m/%Y", "%d %b %Y"]
    assert staff.column("email").semantic_type == "email"
    assert staff.column("phone").semantic_type == "phone"
    pay = example_interpretation.source("payroll").column("gross_pay")
    assert pay.semantic_type == "currency" and pay.inferred_type.startswith("DECIMAL")
    assert pay.value_format.currency_symbols == ["$"] and pay.value_format.thousands_separator == ","
    shifts = example_interpretation.source("shifts")
    assert shifts.column("start_time").inferred_type == "TIME"
    assert shifts.column("status").semantic_type == "categorical"


def test_null_like_values_are_counted_separately(example_interpretation):
    phone = example_interpretation.source("staff").column("phone")
    assert (phone.null_count, phone.blank_count, phone.null_token_count) == (0, 8, 20)
    assert phone.value_format.null_tokens == ["-", "n/a", "null"]


def test_join_paths_connect_related_sources(example_interpretation):
    paths = {tuple(p.sources): p for p in example_interpretation.join_paths}
    assert paths[("payroll", "staff", "shifts_assignments")].joins == [
        "payroll.badge = staff.badge", "shifts_assignments.badge = staff.badge"]
    # two relationships between the same tables: the path takes the stronger one
    assert paths[("hospital_departments", "staff")].joins == [
        "staff.department_code = hospital_departments.department_code"]
