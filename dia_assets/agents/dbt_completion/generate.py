"""Small Spider2-DBT instances from a DIA build: the exported dbt project (`dia dbt export`)
plus derived models read off its schema tests (per single-column foreign key: an aggregate of
the child per parent key, and the child joined to a label of the parent) is the gold project;
each instance removes or breaks one to three derived models and says what they should hold.

Per instance (the benchmark's layout, `tasks.py`): `examples/<id>/` the project with its DuckDB
file (the staging and reject tables DIA loaded, every model built except the ones to complete),
`evaluation_suite/gold/<id>/<name>.duckdb` the database the full project builds, and
`gold/<id>/solution/` the removed models (for the oracle).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import yaml

from dia_assets.agents.dbt_completion.scoring import MatchSpec
from dia_assets.agents.dbt_completion.scratch import ScratchProject
from dia_assets.platform.naming import quote_ident as q
from dia_assets.platform.naming import sql_str

DERIVED = "models/derived"
NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "DECIMAL", "NUMERIC", "DOUBLE", "REAL", "FLOAT")
TEXT = ("VARCHAR", "TEXT", "STRING")
STUB = "-- TODO: this model is not finished\nselect 1 as todo\n"


@dataclass(frozen=True)
class Derived:
    name: str
    sql: str
    description: str


@dataclass(frozen=True)
class ForeignKey:
    child: str
    column: str
    parent: str
    field: str


def _unquote(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') and name.endswith('"') else name


def _models(project: Path) -> dict[str, dict[str, Any]]:
    """The exported refined models' schema entries, by name."""
    data = yaml.safe_load((project / "models" / "refined" / "schema.yml").read_text(encoding="utf-8"))
    return {m["name"]: m for m in data.get("models", [])}


def foreign_keys(models: dict[str, dict[str, Any]]) -> list[ForeignKey]:
    """Single-column `relationships` tests: child.column -> parent.field."""
    out = []
    for name, model in models.items():
        for col in model.get("columns", []):
            for test in col.get("data_tests", []) or []:
                if isinstance(test, dict) and "relationships" in test:
                    args = test["relationships"].get("arguments", test["relationships"])
                    parent = str(args["to"]).split("'")[1]
                    out.append(ForeignKey(name, col["name"], parent, _unquote(str(args["field"]))))
    return out


def _type(col: dict[str, Any]) -> str:
    return str(col.get("data_type", "")).upper().split("(")[0]


def _unique(col: dict[str, Any]) -> bool:
    return "unique" in (col.get("data_tests") or [])


def derived_models(models: dict[str, dict[str, Any]]) -> list[Derived]:
    """Per foreign key an aggregate and (when the parent has a text column to show) a join."""
    out: list[Derived] = []
    for fk in foreign_keys(models):
        child, parent = models[fk.child]["columns"], models[fk.parent]["columns"]
        ref_c, ref_p = "{{ ref('" + fk.child + "') }}", "{{ ref('" + fk.parent + "') }}"
        on = f"c.{q(fk.column)} = p.{q(fk.field)}"
        num = next((c["name"] for c in child if _type(c) in NUMERIC and c["name"] != fk.column and not _unique(c)), None)
        total = f", sum(c.{q(num)}) as {q('total_' + num)}" if num else ""
        out.append(Derived(
            f"agg_{fk.child}_by_{fk.column}".lower(),
            f"select p.{q(fk.field)} as {q(fk.field)}, count(c.{q(fk.column)}) as child_rows{total}\n"
            f"from {ref_p} p\nleft join {ref_c} c on {on}\ngroup by p.{q(fk.field)}\n",
            f"One row per {fk.parent} ({fk.field}): the number of {fk.child} rows whose {fk.column} "
            f"refers to it (child_rows, 0 when none)" + (f" and the sum of their {num} (total_{num})" if num else "")
            + "."))
        names = {c["name"] for c in child}
        label = next((c["name"] for c in parent if _type(c) in TEXT and not _unique(c)
                      and f"{fk.parent}_{c['name']}" not in names), None)
        if label:
            out.append(Derived(
                f"join_{fk.child}_{fk.column}".lower(),
                f"select c.*, p.{q(label)} as {q(fk.parent + '_' + label)}\nfrom {ref_c} c\n"
                f"left join {ref_p} p on {on}\n",
                f"Every {fk.child} row with all its columns, plus the {label} of the {fk.parent} its "
                f"{fk.column} refers to, as {fk.parent}_{label} (NULL when none)."))
    return out


def _copy_sources(warehouse: Path, db: Path) -> None:
    """A DuckDB file holding the warehouse's staging and reject tables, nothing else."""
    with duckdb.connect(str(db)) as con:
        con.execute(f"ATTACH {sql_str(str(warehouse))} AS w (READ_ONLY)")
        for schema in ("staging", "rejects"):
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            for (table,) in con.execute("SELECT table_name FROM information_schema.tables WHERE "
                                        "table_catalog = 'w' AND table_schema = ?", [schema]).fetchall():
                con.execute(f"CREATE TABLE {schema}.{q(table)} AS SELECT * FROM w.{schema}.{q(table)}")
        con.execute("DETACH w")


def _profile(project: Path, db_name: str) -> None:
    """The project's own profile: dbt-duckdb over the DuckDB file beside it, schema main."""
    profile = yaml.safe_load((project / "dbt_project.yml").read_text(encoding="utf-8"))["profile"]
    (project / "profiles.yml").write_text(yaml.safe_dump({profile: {"target": "dev", "outputs": {"dev": {
        "type": "duckdb", "path": db_name, "schema": "main", "threads": 1}}}}), encoding="utf-8")


def _columns(db: Path, table: str) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return len(con.execute(f"DESCRIBE main.{q(table)}").fetchall())


def generate_tasks(project: Path, warehouse: Path, root: Path, name: str, instances: int = 5,
                   max_derived: int = 8) -> list[tuple[str, str, MatchSpec]]:
    """Write `instances` tasks `<name>001...` under `root` from the exported `project` over
    `warehouse`; returns (instance_id, instruction, spec) for `tasks.write_task_files`."""
    work = root / "_work" / name
    shutil.rmtree(work, ignore_errors=True)
    base = work / "base"
    shutil.copytree(project, base, ignore=shutil.ignore_patterns("target", "logs"))
    db_name = f"{name}.duckdb"
    _profile(base, db_name)
    derived = derived_models(_models(base))[:max_derived]
    if not derived:
        raise ValueError(f"{project}: no single-column foreign key to derive models from")
    (base / DERIVED).mkdir(parents=True)
    for d in derived:
        (base / DERIVED / f"{d.name}.sql").write_text(d.sql, encoding="utf-8")
    (base / DERIVED / "schema.yml").write_text(yaml.safe_dump({"version": 2, "models": [
        {"name": d.name, "description": d.description} for d in derived]}, sort_keys=False), encoding="utf-8")
    _copy_sources(warehouse, base / db_name)
    gold = ScratchProject(base, base / db_name, work / "gold")
    run = gold.dbt("run")
    if not run.ok:
        raise RuntimeError(f"the gold project of {name} does not build:\n{run.output}")
    out = []
    for i in range(instances):
        iid = f"{name}{i + 1:03d}"
        k = 1 + i % 3
        targets = [derived[(i + j) % len(derived)] for j in range(k)]
        broken = {t.name for j, t in enumerate(targets) if (i + j) % 2}
        example, gold_dir = root / "examples" / iid, root / "evaluation_suite" / "gold" / iid
        for folder in (example, gold_dir):
            shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(base, example, ignore=shutil.ignore_patterns(db_name))
        (gold_dir / "solution" / DERIVED).mkdir(parents=True)
        shutil.copy2(gold.database, gold_dir / db_name)
        shutil.copy2(gold.database, example / db_name)
        with duckdb.connect(str(example / db_name)) as con:
            for t in targets:
                con.execute(f"DROP TABLE main.{q(t.name)}")
        lines = []
        for t in targets:
            model = example / DERIVED / f"{t.name}.sql"
            (gold_dir / "solution" / DERIVED / model.name).write_text(t.sql, encoding="utf-8")
            if t.name in broken:
                model.write_text(STUB, encoding="utf-8")
                lines.append(f"the model {t.name} is not finished: {t.description}")
            else:
                model.unlink()
                lines.append(f"the model {t.name} is missing: {t.description}")
        instruction = "Complete this dbt project so that it builds these tables: " + " ".join(
            f"({n + 1}) {line}" for n, line in enumerate(lines))
        spec = MatchSpec(gold=db_name, condition_tabs=[t.name for t in targets],
                         condition_cols=[list(range(_columns(gold.database, t.name))) for t in targets],
                         ignore_orders=[True] * len(targets))
        out.append((iid, instruction, spec))
    shutil.rmtree(root / "_work", ignore_errors=True)
    return out
