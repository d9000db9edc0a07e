"""JSON nesting, Excel header search and sheet handling, on small files made here."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl

from dia_assets.agents.interpreter import interpret


def test_jsonl_nested_array_becomes_child_source_keyed_to_parent(tmp_path: Path):
    rows = [
        {"order_id": 1, "customer": {"name": "A", "tier": "gold"}, "lines": [{"sku": "X1", "qty": 2}, {"sku": "X2", "qty": 1}]},
        {"order_id": 2, "customer": {"name": "B", "tier": "silver"}, "lines": [{"sku": "X1", "qty": 2}]},
    ]
    (tmp_path / "orders.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    interp = interpret(tmp_path)
    parent, child = interp.source("orders"), interp.source("orders_lines")
    assert [c.name for c in parent.columns] == ["order_id", "customer_name", "customer_tier"]
    assert child.row_count == 3 and child.parent.source == "orders" and child.parent.columns == ["order_id"]
    assert [c.name for c in child.columns] == ["order_id", "ordinal", "sku", "qty"]
    assert child.parse.json_path == "$.lines[*]"
    fk = next(f for f in interp.foreign_keys if f.from_.source == "orders_lines" and f.to.source == "orders")
    assert fk.from_.columns == ["order_id"] and fk.confidence == 1.0
    assert child.primary_key.columns in (["order_id", "ordinal"], ["order_id", "sku"])


def test_json_array_file_and_parent_without_key_gets_row_number(tmp_path: Path):
    data = [{"name": "a", "tags": ["x", "y"]}, {"name": "a", "tags": ["z"]}]
    (tmp_path / "items.json").write_text(json.dumps(data))
    interp = interpret(tmp_path)
    assert interp.source("items").row_count == 2
    child = interp.source("items_tags")
    assert [c.name for c in child.columns] == ["row_no", "ordinal", "value"] and child.row_count == 3


def test_excel_every_sheet_and_title_rows_above_header(tmp_path: Path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Departments"
    ws.append(["Department register - exported 2026-10-01"])
    ws.append([])
    ws.append(["dept_code", "Name", "Budget"])
    ws.append(["CARD", "Cardiology", 1200000])
    ws.append(["ONC", "Oncology", 950000.5])
    other = wb.create_sheet("Wards")
    other.append(["dept_code", "ward_no", "beds"])
    other.append(["CARD", 1, 20])
    other.append(["CARD", 2, 12])
    other.append(["ONC", 1, 12])
    wb.save(tmp_path / "Hospital Data.xlsx")
    interp = interpret(tmp_path)
    dept, wards = interp.source("hospital_data_departments"), interp.source("hospital_data_wards")
    assert dept.parse.header_row == 3 and dept.row_count == 2
    assert [c.name for c in dept.columns] == ["dept_code", "name", "budget"]
    assert [c.original_name for c in dept.columns] == ["dept_code", "Name", "Budget"]
    assert dept.column("budget").inferred_type.startswith("DECIMAL")
    assert wards.parse.header_row == 1 and wards.primary_key.columns == ["dept_code", "ward_no"]
    assert any(q.kind == "header_not_first_row" and q.source == dept.name for q in interp.quality_issues)


def test_parquet_keeps_its_types(tmp_path: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [1, 2, 3], "amount": [1.5, 2.0, 3.25], "day": pa.array([0, 1, 2], pa.int32()).cast(pa.date32())}),
                   tmp_path / "facts.parquet")
    src = interpret(tmp_path).source("facts")
    assert [(c.name, c.physical_type) for c in src.columns] == [("id", "BIGINT"), ("amount", "DOUBLE"), ("day", "DATE")]
    assert src.primary_key.columns == ["id"]


def test_columns_named_like_internal_aliases(tmp_path: Path):
    """Profiling SQL must not confuse a source column `v` or `n` with its own aliases."""
    rows = "".join(f"{i},{'ab'[i % 2]},{i % 3},{i % 5}.5,2024-0{1 + i % 2}-1{i % 9}\n" for i in range(60))
    (tmp_path / "t.csv").write_text("k,v,n,x,p\n" + rows)
    src = interpret(tmp_path).source("t")
    assert src.column("v").top_values[0][1] == 30 and src.column("p").inferred_type == "DATE"
