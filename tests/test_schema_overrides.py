"""Overrides: template lists every decision and is never overwritten; valid overrides
are applied; invalid ones fail naming the line."""

from __future__ import annotations

import pytest
import yaml

from dia_assets.agents.schema_creator.build import prepare_overrides, write_plan
from dia_assets.agents.schema_creator.overrides import (
    OverrideError,
    parse_overrides,
    render_template,
)
from dia_assets.agents.schema_creator.plan import plan_manifest
from tests.schema_fixtures import EXAMPLES


def test_template_lists_every_decision_commented_out(example_interpretation):
    text = render_template(example_interpretation)
    # Commented out, table and column names included: parsing it applies nothing and names
    # nothing, so a column the data later loses cannot break a build.
    assert yaml.safe_load(text) == {"version": 1}
    assert plan_manifest(example_interpretation, parse_overrides(text)).decisions == \
        plan_manifest(example_interpretation).decisions
    for source in example_interpretation.sources:
        assert f"#   {source.name}:" in text
        for col in source.columns:
            assert f"#       {col.name}:" in text
            assert f"#         type: {col.inferred_type}" in text
    assert "#     primary_key: [shift_id]" in text
    assert "#         allow_orphans:" in text
    assert "#           'COMPLETED ': completed" in text
    # uncommenting a block gives valid overrides
    block = "\n".join(ln[2:] for ln in text.splitlines() if ln.startswith("# tables:") or ln.startswith("#   staff:")
                      or ln.startswith("#     rename: staff"))
    assert yaml.safe_load(block) == {"tables": {"staff": {"rename": "staff"}}}


def test_template_is_created_once_and_never_overwritten(tmp_path, example_interpretation):
    path = prepare_overrides(example_interpretation, tmp_path)
    assert path.read_text().startswith("# Expert overrides")
    path.write_text("version: 1\n# my edits\n")
    prepare_overrides(example_interpretation, tmp_path)
    write_plan(example_interpretation, tmp_path)
    assert path.read_text() == "version: 1\n# my edits\n"


OVERRIDES = """
version: 1
tables:
  staff:
    rename: employees
    columns:
      badge:
        rename: badge_no
      fte:
        type: DOUBLE
      phone:
        exclude: "personal data, not needed for staffing questions"
      role:
        categories: {RN: Registered Nurse}
  payroll:
    primary_key: [badge, period]
    foreign_keys:
      - columns: [badge]
        allow_orphans: "former employees"
  shifts:
    primary_key: []
    foreign_keys:
      - columns: [department_code]
        drop: true
  hospital_wards:
    foreign_keys:
      - columns: [department_code, ward_no]
        references: {table: hospital_wards, columns: [department_code, ward_no]}
"""


def test_overrides_are_applied(example_interpretation):
    m = plan_manifest(example_interpretation, parse_overrides(OVERRIDES))
    staff = m.table("employees")
    assert staff.sources == ["staff"] and staff.staging_table == "staging.employees"
    assert staff.primary_key == ["badge_no"]
    assert staff.column("badge_no").renamed_from == "badge"
    assert staff.column("fte").type == "DOUBLE"
    assert [e.source_column for e in staff.excluded_columns] == ["phone"]
    assert staff.column("role").category_map == {"RN": "Registered Nurse"}
    payroll = m.table("payroll")
    assert payroll.primary_key == ["badge", "period"] and payroll.primary_key_origin == "override"
    fk = payroll.foreign_keys[0]
    assert (fk.ref_table, fk.ref_columns, fk.allow_orphans) == ("employees", ["badge_no"], True)
    shifts = m.table("shifts")
    assert shifts.primary_key == []
    assert [fk.columns for fk in shifts.foreign_keys] == [["department_code", "ward_no"]]
    wards = m.table("hospital_wards")
    assert any(fk.origin == "override" and fk.ref_table == "hospital_wards" for fk in wards.foreign_keys)
    assert {d.origin for d in m.decisions} == {"interpreter", "override"}


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("tables:\n  staff:\n    columns:\n      hire_date:\n        type: DATEE\n", 5, "unknown SQL type 'DATEE'"),
        ("tables:\n  staff:\n    colums:\n      badge: {}\n", 3, "colums"),
        ("tables:\n  staff:\n    primary_key: [badge, nope]\n", 3, "primary key ['badge', 'nope'] depends on column 'nope'"),
        ("tables:\n  shifts:\n    foreign_keys:\n      - columns: [gone]\n        references: {table: staff, columns: [badge]}\n",
         4, "depends on column 'gone'"),
        ("tables:\n  shifts:\n    foreign_keys:\n      - columns: [status]\n        references: {table: nurses, columns: [id]}\n",
         5, "references table 'nurses'"),
        ("tables:\n  payroll:\n    foreign_keys:\n      - columns: [period]\n        allow_orphans: x\n", 4,
         "no foreign key ['period']"),
        ("tables:\n  staff:\n    dedup: sometimes\n", 3, "dedup"),
        ("tables:\n  staff: [\n", 3, "not valid YAML"),
    ],
)
def test_invalid_overrides_name_the_line(example_interpretation, text, line, words):
    with pytest.raises(OverrideError) as err:
        plan_manifest(example_interpretation, parse_overrides(text))
    message = str(err.value)
    assert f"line {line}" in message, message
    assert words in message, message


def test_committed_example_overrides_parse(example_interpretation):
    text = (EXAMPLES / "data" / "overrides.yaml").read_text()
    m = plan_manifest(example_interpretation, parse_overrides(text))
    assert m.table("payroll").primary_key == ["badge", "period"]
    assert all(fk.allow_orphans for fk in m.table("payroll").foreign_keys if fk.ref_table == "staff")


STALE = """
version: 1
tables:
  nurses:
    rename: x
  staff:
    columns:
      salary:
        type: INTEGER
      phone:
  shifts:
    foreign_keys:
      - columns: [no_such_column]
        drop: true
"""


def test_overrides_naming_what_the_data_lost_are_stale_not_errors(example_interpretation):
    """Issue 16: a renamed or deleted column or file never breaks a build through an override
    nobody touched; the build goes on and reports each stale line."""
    m = plan_manifest(example_interpretation, parse_overrides(STALE))
    stale = {s.where: s for s in m.stale_overrides}
    assert set(stale) == {"tables.nurses", "tables.staff.columns.salary", "tables.shifts.foreign_keys.0.columns"}
    assert stale["tables.nurses"].line == 4 and "unknown table 'nurses'" in stale["tables.nurses"].reason
    assert stale["tables.staff.columns.salary"].line == 8
    assert m.table("staff").column("phone")  # an empty entry for a live column is harmless
    assert plan_manifest(example_interpretation).stale_overrides == []


def test_old_style_template_with_live_names_survives_a_renamed_column(example_interpretation):
    """Workspaces made before the fix hold templates whose table and column names are live keys."""
    interp = example_interpretation.model_copy(deep=True)
    staff = next(s for s in interp.sources if s.name == "staff")
    staff.columns[-1].name = staff.columns[-1].name + "_renamed"
    old = "version: 1\ntables:\n  staff:\n    columns:\n" + "".join(
        f"      {c.name}:\n        # type: {c.inferred_type}\n" for c in example_interpretation.source("staff").columns)
    m = plan_manifest(interp, parse_overrides(old))
    assert [s.where for s in m.stale_overrides] == [f"tables.staff.columns.{example_interpretation.source('staff').columns[-1].name}"]


def test_keys_of_the_previous_manifest_stay_unless_their_columns_are_gone(example_interpretation):
    """Issue 16: a key is a contract. The interpreter proposing another key does not replace
    it (key_validity judges the data); a key whose column is gone changes, as a drift decision."""
    from dia_assets.contracts.interpretation import KeyCandidate

    previous = plan_manifest(example_interpretation)
    assert previous.table("staff").primary_key == ["badge"]
    moved = example_interpretation.model_copy(deep=True)
    staff = moved.source("staff")
    staff.primary_key = KeyCandidate(columns=["email"], confidence=0.92, reason="unique")
    moved.foreign_keys = [fk for fk in moved.foreign_keys if fk.to.source != "staff"]
    kept = plan_manifest(moved, previous=previous)
    assert kept.table("staff").primary_key == ["badge"] and kept.table("staff").primary_key_origin == "previous"
    assert any(fk.ref_table == "staff" and fk.origin == "previous" for fk in kept.table("payroll").foreign_keys)
    assert any(d.origin == "previous" and "kept from the previous build" in d.what for d in kept.decisions)
    # the expert decides otherwise: the override wins
    chosen = plan_manifest(moved, parse_overrides("tables:\n  staff:\n    primary_key: [email]\n"), previous=previous)
    assert chosen.table("staff").primary_key == ["email"]
    # the key's column is gone: the interpreter's key, recorded as a drift decision
    badge = staff.column("badge")
    badge.name = "badge_no"
    gone = plan_manifest(moved, previous=previous)
    assert gone.table("staff").primary_key == ["email"]
    assert any(d.origin == "drift" and "no longer exist" in d.what for d in gone.decisions)
