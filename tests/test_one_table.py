"""Several files that are one table (`one_table.py`): one source with its files and each record's
provenance, or a blocking question for the expert; never a second table with an invented key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from dagster import AssetKey, asset, materialize
from dagster_duckdb import DuckDBResource

from dia_assets.agents.adaptation.snapshot import interpreted_snapshot, snapshot
from dia_assets.agents.interpreter import interpret
from dia_assets.agents.interpreter.one_table import file_name
from dia_assets.agents.schema_creator.build import overrides_path, summary
from dia_assets.agents.schema_creator.plan import plan_manifest
from dia_assets.contracts.interpretation import ForeignKey, SourceRef
from dia_assets.dagster.resources.workspace import WorkspaceResource
from dia_assets.dagster.schema import schema_definitions
from dia_assets.dagster.tables import manifest_tables, table_metadata
from dia_assets.pipeline import run
from tests.memory_fixtures import pg_server  # noqa: F401  (fixture)

KINDS = [(i, f"kind {i}", f"{i * 1.25:.2f}") for i in range(1, 21)]


def _csv(path: Path, header: list[str], rows: list[tuple]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([",".join(header), *(",".join(map(str, r)) for r in rows)]) + "\n")


def _kinds_folder(data: Path, other_columns: bool = False) -> None:
    """kinds.csv, kinds.json and items.csv pointing at them. kinds.json holds the same rows plus two new
    (its numbers written as JSON numbers: `2.5` for the CSV's `2.50`), or, with `other_columns`, two
    new rows with a `colour` where the CSV has a `weight`."""
    _csv(data / "kinds.csv", ["kind_id", "label", "weight"], KINDS)
    if other_columns:
        rows = [{"kind_id": k, "label": f"kind {k}", "colour": f"colour {k}"} for k in (21, 22)]
    else:
        rows = [{"kind_id": k, "label": label, "weight": float(w)}
                for k, label, w in [*KINDS, (21, "kind 21", "26.25"), (22, "kind 22", "27.50")]]
    (data / "kinds.json").write_text(json.dumps(rows))
    _csv(data / "items.csv", ["item_id", "kind_id", "name"], [(i, i % 20 + 1, f"item {i}") for i in range(1, 61)])


def _decide(ws: Path, name: str, decision: str) -> None:
    path = overrides_path(ws)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"version: 1\ntables:\n  {name}:\n    files: {decision}\n")


def _rows(ws: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _tables(ws: Path) -> set[str]:
    return {r[0] for r in _rows(ws, "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'")}


def test_names_that_make_one_table() -> None:
    def table(rel: str) -> tuple[str, str, bool]:
        named = file_name(rel)
        return named.folder, named.table, named.numbered

    assert table("kinds.csv") == table("kinds.json") == table("kinds.csv.gz") == (".", "kinds", False)
    assert table("orders_2024_01.csv") == table("orders-2024-02.csv") == table("orders_20240301.csv") == (
        ".", "orders", False)
    assert table("exports/orders/part-0001.parquet") == ("exports/orders", "orders", False)
    assert table("sales/2024_01.csv") == ("sales", "sales", False)
    assert table("part-00000-1f2e-c000.snappy.parquet")[1] != "part"  # no folder names a top-level part
    # a plain number is weak evidence: an encoding, a level, or a batch
    assert table("cities_iso_8859_2.csv") == table("cities_iso_8859_5.csv") == (".", "cities_iso_8859", True)
    # a name that only looks alike is its own table
    assert table("film_actor.csv")[1] == "film_actor" and table("orders_v2.csv")[1] == "orders_v2"
    assert table("a b.csv")[1] != table("a_b.csv")[1]  # names that only snake-case alike


def test_numbered_files_with_the_same_columns_stay_apart_without_an_invented_key(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for n in (1, 2):
        _csv(data / f"orders_{n}.csv", ["order_id", "total"], [(i, f"{i}.50") for i in range(1, 30)])
    interp = interpret(data)
    assert sorted(s.name for s in interp.sources) == ["orders_1", "orders_2"]
    assert [(g.name, g.status) for g in interp.file_groups] == [("orders", "separate")]
    assert [i.kind for i in interp.quality_issues if i.source == "orders"] == ["files_kept_separate"]
    assert not interp.foreign_keys
    assert not plan_manifest(interp).questions
    united = interpret(data, decisions={"orders": "union"})
    assert [s.name for s in united.sources] == ["orders"] and united.sources[0].row_count == 58


def test_csv_and_json_of_one_table_are_one_source_with_provenance_and_no_invented_key(tmp_path: Path) -> None:
    data, ws = tmp_path / "data", tmp_path / "ws"
    _kinds_folder(data)
    result = run(data, ws)
    interp = json.loads((ws / "interpretation.json").read_text())
    names = [s["name"] for s in interp["sources"]]
    assert sorted(names) == ["items", "kinds"]  # no kinds_2
    kinds = next(s for s in interp["sources"] if s["name"] == "kinds")
    assert [(f["path"], f["row_count"]) for f in kinds["files"]] == [("kinds.csv", 20), ("kinds.json", 22)]
    assert kinds["row_count"] == 42 and kinds["duplicate_rows"] == 20 and kinds["primary_key"]["columns"] == ["kind_id"]
    across = next(i for i in interp["quality_issues"] if i["kind"] == "duplicate_rows_across_files")
    assert across["count"] == 20 and "kinds.json: 20" in across["examples"]
    # the only key is the one between tables; none between the files of kinds
    assert [(f["from"]["source"], f["to"]["source"]) for f in interp["foreign_keys"]] == [("items", "kinds")]

    report = result.report
    assert report.accepted, summary(report)
    assert _tables(ws) == {"items", "kinds"}
    # each record keeps its file and its row in that file; the copies are loaded once (dedup policy)
    assert _rows(ws, "SELECT _source_file, count(*), min(_source_row), max(_source_row) FROM staging.kinds "
                     "GROUP BY 1 ORDER BY 1") == [("kinds.csv", 20, 1, 20), ("kinds.json", 22, 1, 22)]
    assert _rows(ws, "SELECT count(*), count(DISTINCT kind_id) FROM kinds") == [(22, 22)]
    rows = next(r for r in report.row_counts if r.table == "kinds")
    assert (rows.source_rows, rows.refined, rows.duplicates_removed) == (42, 22, 20)
    assert [(f.file, f.staged, f.refined, f.duplicates_removed, f.passed) for f in rows.files] == [
        ("kinds.csv", 20, 20, 0, True), ("kinds.json", 22, 2, 20, True)]
    assert any("drop 20 exact duplicate rows" in d.what for d in result.manifest.decisions)
    assert _rows(ws, "SELECT constraint_text FROM duckdb_constraints() WHERE table_name = 'items' "
                     "AND constraint_type = 'FOREIGN KEY'") == [("FOREIGN KEY (kind_id) REFERENCES kinds(kind_id)",)]
    # the sensors' record of what is built lists both files: the folder is not seen as changed
    assert interpreted_snapshot(ws, data) == snapshot(data)

    # the dedup decision is the expert's: keeping every copy breaks the key, and the build says so
    path = overrides_path(ws)
    path.write_text("version: 1\ntables:\n  kinds:\n    dedup: none\n")
    kept = run(data, ws).report
    assert not kept.accepted and next(r for r in kept.row_counts if r.table == "kinds").duplicates_removed == 0
    assert any(k.table == "kinds" and k.kind == "primary_key" and not k.passed for k in kept.key_validity)


def test_monthly_batches_are_one_table_and_a_new_month_reloads_it(tmp_path: Path) -> None:
    data, ws = tmp_path / "data", tmp_path / "ws"
    for month in (1, 2, 3):
        _csv(data / f"orders_2024_{month:02d}.csv", ["order_id", "customer", "total"],
             [(month * 100 + i, f"c{i % 7}", f"{i * 3.5:.2f}") for i in range(1, 31)])
    _csv(data / "customers.csv", ["customer", "city"], [(f"c{i}", f"city {i}") for i in range(7)])
    first = run(data, ws, incremental=True)
    assert first.report.accepted, summary(first.report)
    assert _tables(ws) == {"orders", "customers"}
    orders = first.manifest.table("orders")
    assert [f.path for f in orders.source_files] == [f"orders_2024_{m:02d}.csv" for m in (1, 2, 3)]
    assert _rows(ws, "SELECT _source_file, count(*) FROM staging.orders GROUP BY 1 ORDER BY 1") == [
        (f"orders_2024_{m:02d}.csv", 30) for m in (1, 2, 3)]
    assert _rows(ws, "SELECT count(*) FROM orders") == [(90,)]

    _csv(data / "orders_2024_04.csv", ["order_id", "customer", "total"],
         [(400 + i, f"c{i % 7}", "1.00") for i in range(1, 11)])
    second = run(data, ws, incremental=True).report
    assert second.accepted, summary(second)
    assert second.reload.mode == "incremental" and "customers" in second.reload.kept
    assert second.reload.reasons["orders"] == "orders_2024_04.csv added (content hash)"
    assert _rows(ws, "SELECT count(*) FROM orders") == [(100,)]
    counts = next(r for r in second.row_counts if r.table == "orders")
    assert [(f.file, f.staged) for f in counts.files][-1] == ("orders_2024_04.csv", 10)


def test_a_same_named_file_with_other_columns_blocks_until_the_expert_decides(tmp_path: Path) -> None:
    data, ws = tmp_path / "data", tmp_path / "ws"
    _kinds_folder(data, other_columns=True)
    open_ = run(data, ws)
    interp = json.loads((ws / "interpretation.json").read_text())
    question = next(i for i in interp["quality_issues"] if i["kind"] == "one_table_question")
    assert question["severity"] == "error" and question["source"] == "kinds"
    assert "files: union" in question["suggested_action"] and "files: separate" in question["suggested_action"]
    assert not any({f["from"]["source"], f["to"]["source"]} == {"kinds", "kinds_2"} for f in interp["foreign_keys"])
    report = open_.report
    assert not report.accepted and report.open_questions
    assert "QUESTION" in summary(report)
    failing = {r.table for r in report.row_counts if not r.passed}
    assert failing == {"kinds", "kinds_2"}  # every record is loaded, but not accepted
    assert _rows(ws, "SELECT (SELECT count(*) FROM kinds), (SELECT count(*) FROM kinds_2)") == [(20, 2)]

    _decide(ws, "kinds", "separate")
    apart = run(data, ws).report
    assert apart.accepted and not apart.open_questions, summary(apart)
    manifest = json.loads((ws / "schema" / "manifest.json").read_text())
    assert not any(fk["ref_table"] in ("kinds", "kinds_2") for t in manifest["tables"]
                   if t["name"] in ("kinds", "kinds_2") for fk in t["foreign_keys"])

    _decide(ws, "kinds", "union")
    one = run(data, ws).report
    assert one.accepted, summary(one)
    assert _tables(ws) == {"items", "kinds"}
    # a column a file lacks is NULL in that file's rows
    assert _rows(ws, "SELECT _source_file, count(weight), count(colour) FROM staging.kinds GROUP BY 1 ORDER BY 1") == [
        ("kinds.csv", 20, 0), ("kinds.json", 0, 2)]
    assert _rows(ws, "SELECT count(*) FROM kinds") == [(22,)]


def test_plan_drops_a_previous_key_between_files_of_one_table(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _kinds_folder(data, other_columns=True)
    interp = interpret(data)
    invented = interp.model_copy(deep=True)
    invented.foreign_keys.append(ForeignKey.model_validate({
        "from": SourceRef(source="kinds", columns=["kind_id"]), "to": SourceRef(source="kinds_2", columns=["kind_id"]),
        "coverage": 1.0, "confidence": 0.95}))
    before = plan_manifest(invented)  # as an earlier build planned it
    assert before.table("kinds").foreign_keys
    after = plan_manifest(interp, previous=before)
    assert not after.table("kinds").foreign_keys
    assert any(d.origin == "drift" and "may be one table" in d.what for d in after.decisions)
    assert [q.tables for q in after.questions] == [["kinds", "kinds_2"]]


def test_batches_with_nothing_in_common_stay_separate_tables_without_a_question(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _csv(data / "level_1.csv", ["region", "population"], [(f"r{i}", i) for i in range(5)])
    _csv(data / "level_2.csv", ["city", "mayor", "founded"], [(f"x{i}", f"m{i}", 1900 + i) for i in range(5)])
    interp = interpret(data)
    assert sorted(s.name for s in interp.sources) == ["level_1", "level_2"]
    assert [g.status for g in interp.file_groups] == ["separate"]
    assert not any(i.kind == "one_table_question" for i in interp.quality_issues)
    assert not plan_manifest(interp).questions


def test_part_files_of_a_folder_are_one_table_asset_fed_by_each_partition(tmp_path: Path) -> None:
    data, ws = tmp_path / "data", tmp_path / "ws"
    con = duckdb.connect()
    for n in (1, 2):
        (data / "orders").mkdir(parents=True, exist_ok=True)
        con.execute(f"COPY (SELECT {n} * 1000 + i AS order_id, i % 5 AS store FROM range(50) t(i)) "
                    f"TO '{data}/orders/part-000{n}.parquet' (FORMAT parquet)")
    con.close()
    assert run(data, ws).report.accepted
    tables = manifest_tables(ws)
    assert [t.name for t in tables] == ["orders"]
    assert table_metadata(tables[0], None)["raw_files_partition"].count(",") == 1

    @asset(name="interpretation")
    def interpretation() -> None:
        """The interpretation the build above wrote."""

    assets, checks = schema_definitions(tables)
    result = materialize([interpretation, *assets, *checks], raise_on_error=False, resources={
        "workspace": WorkspaceResource(root=str(ws), data_dir=str(data)),
        "duckdb": DuckDBResource(database=str(ws / "warehouse.duckdb"))})
    assert result.success
    rows = next(e for e in result.get_asset_check_evaluations()
                if e.asset_key == AssetKey(["warehouse", "orders"]) and e.check_name == "row_count_reconciliation")
    assert rows.passed and "100 = 100 refined" in rows.description


@pytest.mark.parametrize("moved", ["kinds.json"])
def test_a_union_file_gone_since_interpretation_is_a_clear_error(tmp_path: Path, moved: str) -> None:
    data, ws = tmp_path / "data", tmp_path / "ws"
    _kinds_folder(data)
    result = run(data, ws)
    shutil.move(str(data / moved), str(tmp_path / moved))
    from dia_assets.agents.schema_creator.load import SourceMissingError, check_sources

    with pytest.raises(SourceMissingError, match="kinds.json"):
        check_sources(result.manifest, data)


def test_a_files_decision_is_built_from_a_new_interpretation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster import DagsterInstance, build_sensor_context

    from dia_assets.dagster.sensors.data_sensors import review_gate_sensor

    data, ws = tmp_path / "data", tmp_path / "ws"
    _kinds_folder(data, other_columns=True)
    run(data, ws)
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    monkeypatch.setenv("DIA_DATA_DIR", str(data))
    instance = DagsterInstance.ephemeral()
    seen = review_gate_sensor(build_sensor_context(instance=instance))
    _decide(ws, "kinds", "union")  # taken only by the interpreter
    union = review_gate_sensor(build_sensor_context(instance=instance, cursor=seen.cursor))
    assert union.run_requests[0].job_name == "build_job"
    _decide(ws, "kinds", "separate")  # the files are apart already: a new plan takes it
    apart = review_gate_sensor(build_sensor_context(instance=instance, cursor=union.cursor))
    assert apart.run_requests[0].job_name == "schema_job"


def test_a_second_file_of_a_table_joins_it_on_an_incremental_build(tmp_path: Path) -> None:
    data, ws = tmp_path / "data", tmp_path / "ws"
    _kinds_folder(data)
    (data / "kinds.json").unlink()
    assert run(data, ws, incremental=True).report.accepted
    _kinds_folder(data)  # kinds.json arrives beside the unchanged kinds.csv, whose profile was kept
    report = run(data, ws, incremental=True).report
    assert report.accepted, summary(report)
    assert report.reload.mode == "incremental" and report.reload.reasons["kinds"] == "kinds.json added (content hash)"
    assert _tables(ws) == {"items", "kinds"} and _rows(ws, "SELECT count(*) FROM kinds") == [(22,)]


def test_the_overrides_template_asks_the_question() -> None:
    from dia_assets.agents.schema_creator.overrides import parse_overrides, render_template
    from dia_assets.contracts.interpretation import FileGroup, Interpretation

    interp = Interpretation(data_dir="/d", generated_at="now", file_groups=[FileGroup(
        name="orders", files=["orders_1.csv", "orders_2.csv"], sources=["orders_1", "orders_2"], status="question",
        reason="2 columns in common")])
    text = render_template(interp)
    assert "#   orders:\n#     files: union   # DECIDE union or separate" in text
    # uncommented, the line is a valid decision
    live = "\n".join(line[2:] if line.startswith(("#   orders", "#     files")) else line for line in text.splitlines())
    assert parse_overrides(live.replace("# tables:", "tables:")).files == {"orders": "union"}


def test_a_table_of_two_files_loads_and_reconciles_per_file_in_postgres(tmp_path: Path, pg_server) -> None:  # noqa: F811
    import os

    import psycopg

    from tests.memory_fixtures import fresh_database_url

    url = fresh_database_url(pg_server, f"one_table_{os.getpid()}")
    data = tmp_path / "data"
    _kinds_folder(data)
    report = run(data, tmp_path / "ws", warehouse=url).report
    assert report.dialect == "postgres" and report.accepted, summary(report)
    rows = next(r for r in report.row_counts if r.table == "kinds")
    assert [(f.file, f.staged, f.duplicates_removed) for f in rows.files] == [("kinds.csv", 20, 0), ("kinds.json", 22, 20)]
    with psycopg.connect(url) as con:
        assert con.execute("SELECT count(*) FROM public.kinds").fetchone()[0] == 22
        assert con.execute("SELECT count(DISTINCT _source_file) FROM staging.kinds").fetchone()[0] == 2
