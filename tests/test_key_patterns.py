"""The key patterns of real schemas, each on a small generated export (issue: real enterprise
exports). Names in these tests are ordinary enterprise names; the rules under test read
positions, values and name structure, never these particular words."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from dia_assets.agents.interpreter import interpret
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.pipeline import run


def _write(folder: Path, name: str, header: list[str], rows: list[list[object]]) -> None:
    with (folder / f"{name}.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


def _pk(interp: Interpretation, source: str) -> list[str]:
    return interp.source(source).primary_key.columns


def _high(interp: Interpretation) -> set[tuple[str, str, str, str]]:
    return {(f.from_.source, ",".join(f.from_.columns), f.to.source, ",".join(f.to.columns))
            for f in interp.foreign_keys if f.confidence >= 0.8}


@pytest.fixture(scope="module")
def enterprise(tmp_path_factory) -> Interpretation:
    """A person/employee/sales-person hierarchy with addresses, history and localized rows."""
    d = tmp_path_factory.mktemp("enterprise")
    persons = range(1, 301)
    employees = range(1, 121)  # a subtype of person
    sales = range(1, 41)  # a subtype of employee
    _write(d, "person", ["person_id", "first_name", "last_name"],
           [[p, f"F{p}", f"L{p:04d}"] for p in persons])
    _write(d, "employee", ["person_id", "hire_date", "manager_id"],
           [[e, f"2020-01-{e % 28 + 1:02d}", None if e == 1 else (e - 1) // 10 + 1] for e in employees])
    _write(d, "sales_person", ["person_id", "quota"], [[s, s * 1000] for s in sales])
    _write(d, "address", ["address_id", "city"], [[a, f"C{a % 17}"] for a in range(1, 401)])
    _write(d, "address_type", ["address_type_id", "name"], [[t, f"T{t}"] for t in range(1, 4)])
    # association with its own attributes and a surrogate GUID that is unique by construction
    rows, n = [], 0
    for p in persons:
        for t in (1, 2) if p % 3 else (1,):
            n += 1
            rows.append([p, (p * 7) % 400 + 1 if t == 1 else (p * 7) % 400 + 1, t, f"{n:08x}-aaaa-bbbb-cccc-{n:012x}"])
    _write(d, "person_address", ["person_id", "address_id", "address_type_id", "rowguid"], rows)
    # the same relationship where (person, address) happens to be unique: still keyed by all three
    _write(d, "vendor_address", ["person_id", "address_id", "address_type_id"],
           [[p, (p * 5 + t) % 400 + 1, t] for p in range(1, 101) for t in (1, 2, 3) if (p + t) % 2])
    # history keyed by entity and date
    _write(d, "pay_history", ["person_id", "rate_change_date", "rate"],
           [[e, f"20{10 + k}-01-01", 10 + k] for e in employees for k in range(1 + e % 3)])
    # localized rows
    _write(d, "culture", ["culture_id", "name"], [["en", "English"], ["fr", "French"], ["de", "German"]])
    _write(d, "product_model", ["product_model_id", "name"], [[m, f"M{m}"] for m in range(1, 61)])
    _write(d, "product_model_culture", ["product_model_id", "culture_id", "description"],
           [[m, c, f"{c}:{m}"] for m in range(1, 61) for c in ("en", "fr", "de")])
    # orders: role-named references, and a column NULL in every row but named like a key
    _write(d, "currency", ["currency_code", "name"], [["EUR", "Euro"], ["USD", "Dollar"], ["GBP", "Pound"]])
    _write(d, "sales_order", ["sales_order_id", "sales_person_id", "ship_to_address_id",
                              "bill_to_address_id", "currency_code", "original_currency_code", "total"],
           [[o, o % 40 + 1, o % 400 + 1, (o * 3) % 400 + 1, ["EUR", "USD"][o % 2], None, o * 2.5]
            for o in range(1, 501)])
    # departments led by employees: the same role name as employee.manager_id
    _write(d, "department", ["department_id", "name", "manager_id"],
           [[k, f"D{k}", k * 7] for k in range(1, 16)])
    return interpret(d)


def test_association_key_beats_unique_guid(enterprise):
    assert _pk(enterprise, "person_address") == ["person_id", "address_id", "address_type_id"]


def test_relationship_keyed_by_its_leading_references(enterprise):
    assert _pk(enterprise, "vendor_address") == ["person_id", "address_id", "address_type_id"]


def test_history_table_keyed_by_entity_and_date(enterprise):
    assert _pk(enterprise, "pay_history") == ["person_id", "rate_change_date"]


def test_localized_rows_keyed_by_entity_and_culture(enterprise):
    assert _pk(enterprise, "product_model_culture") == ["product_model_id", "culture_id"]


def test_subtypes_point_at_the_most_specific_parent(enterprise):
    fks = _high(enterprise)
    assert ("employee", "person_id", "person", "person_id") in fks
    assert ("sales_person", "person_id", "employee", "person_id") in fks
    # never a sibling or a more general table for the same column
    assert ("sales_person", "person_id", "person", "person_id") not in fks
    # a reference over all persons is to person, not to a subtype that covers only some
    assert ("person_address", "person_id", "person", "person_id") in fks
    assert ("pay_history", "person_id", "employee", "person_id") in fks


def test_role_named_references(enterprise):
    fks = _high(enterprise)
    assert ("sales_order", "sales_person_id", "sales_person", "person_id") in fks
    assert ("sales_order", "ship_to_address_id", "address", "address_id") in fks
    assert ("sales_order", "bill_to_address_id", "address", "address_id") in fks
    assert ("employee", "manager_id", "employee", "person_id") in fks
    # the same role name elsewhere takes the same parent when the values agree
    assert ("department", "manager_id", "employee", "person_id") in fks


def test_all_null_column_named_like_a_key(enterprise):
    fk = next(f for f in enterprise.foreign_keys if f.from_.columns == ["original_currency_code"])
    assert fk.to.source == "currency" and fk.confidence >= 0.8 and fk.strength == "weak"
    assert any("NULL" in e for e in fk.evidence)


def test_each_column_has_at_most_one_high_parent(enterprise):
    seen: dict[tuple[str, tuple[str, ...]], str] = {}
    for fk in enterprise.foreign_keys:
        if fk.confidence >= 0.8:
            key = (fk.from_.source, tuple(fk.from_.columns))
            assert key not in seen, f"{key} -> {seen[key]} and {fk.to.source}"
            seen[key] = fk.to.source


def test_no_reference_to_an_ordinary_unique_column(tmp_path):
    """`last_name` is unique in both tables by accident: it is no key to point at."""
    _write(tmp_path, "customers", ["customer_id", "last_name", "city"],
           [[i, f"Name{i}", f"C{i % 5}"] for i in range(1, 51)])
    _write(tmp_path, "salespersons", ["salesperson_id", "last_name"],
           [[i, f"Name{i * 3}"] for i in range(1, 11)])
    interp = interpret(tmp_path)
    assert not [f for f in interp.foreign_keys if f.from_.columns == ["last_name"]]


def test_stem_without_key_name_needs_values_spread_over_the_parent(tmp_path):
    """`rental_duration` values 3..7 sit in a corner of rental ids 1..2000: not a reference."""
    _write(tmp_path, "rental", ["rental_id", "film_id"], [[i, i % 50 + 1] for i in range(1, 2001)])
    _write(tmp_path, "film", ["film_id", "rental_duration"], [[i, 3 + i % 5] for i in range(1, 51)])
    interp = interpret(tmp_path)
    assert not [f for f in interp.foreign_keys if f.from_.columns == ["rental_duration"]]
    assert ("rental", "film_id", "film", "film_id") in _high(interp)


# ------------------------------------------------------------------ acceptance on clean data


def _clean_export(d: Path) -> None:
    _write(d, "doctors", ["doctor_id", "last_name"], [[i, f"Doc{i}"] for i in range(1, 21)])
    _write(d, "patients", ["patient_id", "last_name", "doctor_id"],
           [[i, f"Pat{i}", i % 20 + 1] for i in range(1, 201)])


def test_clean_export_is_accepted_without_overrides(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    _clean_export(data)
    result = run(data, tmp_path / "ws")
    assert result.report.accepted, [a.summary for a in result.report.axes.values()]


def test_weak_key_with_orphans_is_for_review_strong_key_blocks(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    _write(data, "staff", ["badge", "name"], [[f"B{i:03d}", f"N{i}"] for i in range(1, 51)])
    # a role-named (weak) reference with two orphans
    _write(data, "wards", ["ward_code", "head_badge"], [[f"W{i}", f"B{i:03d}" if i > 2 else f"X{i:03d}"]
                                                         for i in range(1, 31)])
    result = run(data, tmp_path / "ws")
    weak = next(k for k in result.report.key_validity if k.columns == ["head_badge"])
    assert weak.orphan_rows == 2 and not weak.passed and not weak.blocking
    assert result.report.accepted
    assert "for review" in result.report.axes["key_validity"].summary
    assert "review" in result.paths["report_md"].read_text()
    # the same orphans under an exact-name (strong) reference fail acceptance
    _write(data, "shifts", ["shift_id", "badge"], [[i, f"B{i % 50 + 1:03d}" if i > 2 else "B999"]
                                                  for i in range(1, 101)])
    result = run(data, tmp_path / "ws2")
    strong = next(k for k in result.report.key_validity if k.table == "shifts" and k.columns == ["badge"])
    assert strong.orphan_rows == 2 and strong.blocking and not result.report.accepted


def test_all_null_reference_takes_the_key_type_and_builds(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    _write(data, "language", ["language_id", "name"], [[i, f"L{i}"] for i in range(1, 7)])
    _write(data, "film", ["film_id", "language_id", "original_language_id"],
           [[i, i % 6 + 1, None] for i in range(1, 101)])
    result = run(data, tmp_path / "ws")
    assert result.report.accepted, [a.summary for a in result.report.axes.values()]
    film = next(t for t in result.manifest.tables if t.name == "film")
    types = {c.name: c.type for c in film.columns}
    assert types["original_language_id"] == types["language_id"]
    assert any(fk.columns == ["original_language_id"] for fk in film.foreign_keys)
