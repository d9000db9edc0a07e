"""A dbt project DIA exported (possibly edited by an expert) as the builder of the refined tables
(issue 34, `DIA_DBT_PROJECT`): locate and check it, parse it into `manifest.json` when its files
changed, name the warehouse table each model rebuilds, and install what `dbt build` made.

Framework-free: the Dagster glue (`dia_assets/dagster/dbt_models.py`) turns the manifest into
assets with dagster-dbt and calls `scratch_build` and `install` around its `dbt build`.

"Installed" means: dbt builds in a scratch copy of the warehouse file (its own schemas, `dbt` and
`dbt_rejects`), and only when `dbt build` succeeded (every model built, every test of severity
error passed) are DIA's `main.<table>` and `rejects.<table>` replaced by what dbt built, in that
copy, which then replaces the warehouse by an atomic rename. A failed build leaves the warehouse
as it was and keeps the copy beside it for inspection.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import yaml

from dia_assets.agents.schema_creator.dbt_export import PROFILE, READER_REJECTS, STAGING
from dia_assets.contracts.manifest import ManifestTable
from dia_assets.platform.naming import quote_ident as q

DBT_MANIFEST = "manifest.json"  # dbt's own, in the project's target/ (not DIA's schema/manifest.json)
PARSED_STAMP = ".dia_parsed"  # in target/: the fingerprint of the files the manifest was parsed from
PROJECT_FILES = ("*.sql", "*.yml", "*.yaml", "*.md", "*.csv")
SKIP_DIRS = {"target", "logs", "dbt_packages", ".scratch"}
OFFLINE = {"DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}


class DbtProjectError(RuntimeError):
    """The project cannot be used (no dbt_project.yml, no profile, a parse error)."""


# ---------------------------------------------------------------- which table a dbt node is


def table_path(props: dict[str, Any]) -> list[str]:
    """The asset key path of a dbt node: a refined model (`meta.dia_table`) is DIA's
    `warehouse/<table>`, so the per-table checks, lineage and sensors keep their keys; a reject
    model `rejects/<table>`; the staging and reject sources are DIA's own build (`warehouse`); a
    model the expert added has no DIA table and is `dbt/<name>`."""
    if props.get("resource_type") == "source":
        if props.get("source_name") in (STAGING, READER_REJECTS):
            return ["warehouse"]
        return ["dbt", "source", props["source_name"], props["name"]]
    meta = (props.get("config") or {}).get("meta") or props.get("meta") or {}
    table, kind = meta.get("dia_table"), meta.get("dia_kind")
    if table and kind == "refined":
        return ["warehouse", table]
    if table and kind == "rejects":
        return ["rejects", table]
    return ["dbt", props["name"]]


# ---------------------------------------------------------------- the project and its manifest


def locate(project: str | Path) -> Path:
    """The project folder, checked: a dbt project with its profile beside it (as exported)."""
    root = Path(project).expanduser().resolve()
    if not (root / "dbt_project.yml").is_file():
        raise DbtProjectError(f"DIA_DBT_PROJECT={project}: no dbt_project.yml there; "
                              "write one with `dia dbt export DIR`")
    if not (root / "profiles.yml").is_file():
        raise DbtProjectError(f"DIA_DBT_PROJECT={project}: no profiles.yml beside dbt_project.yml "
                              "(`dia dbt export` writes it)")
    return root


def fingerprint(root: Path) -> str:
    """A hash of the project's own files (models, tests, macros, configuration)."""
    digest = hashlib.sha256()
    files = sorted({p for pattern in PROJECT_FILES for p in root.rglob(pattern)
                    if not SKIP_DIRS & set(p.relative_to(root).parts)})
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def dbt_executable() -> str:
    """dbt of this environment (beside its Python), else the one on PATH."""
    script = Path(sys.executable).with_name("dbt")
    return str(script) if script.is_file() else "dbt"


def prepare_manifest(project: str | Path) -> Path:
    """`target/manifest.json`, re-parsed (`dbt parse`, offline) when a file of the project changed
    since the last parse, so an expert's new or removed model shows at the next load."""
    root = locate(project)
    target = root / "target"
    manifest, stamp = target / DBT_MANIFEST, target / PARSED_STAMP
    current = fingerprint(root)
    if manifest.is_file() and stamp.is_file() and stamp.read_text(encoding="utf-8") == current:
        return manifest
    done = subprocess.run(
        [dbt_executable(), "parse", "--project-dir", str(root), "--profiles-dir", str(root),
         "--target-path", str(target), "--log-path", str(root / "logs"), "--quiet"],
        env={**os.environ, **OFFLINE}, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0 or not manifest.is_file():
        raise DbtProjectError(f"dbt parse of {root} failed: {(done.stdout + done.stderr).strip()[-2000:]}")
    stamp.write_text(current, encoding="utf-8")
    return manifest


# ---------------------------------------------------------------- building on a copy, installing


@dataclass
class Scratch:
    """Where one `dbt build` runs: a copy of the warehouse and a profile pointing dbt at it."""

    warehouse: Path
    copy: Path
    profiles_dir: Path
    target_path: Path

    @property
    def rejected(self) -> Path:
        return self.warehouse.with_name(self.warehouse.stem + "-dbt-rejected" + self.warehouse.suffix)


def scratch_build(project: Path, warehouse: str | Path, folder: Path) -> Scratch:
    """Copy the installed warehouse into `folder` (beside the warehouse: the install is a rename)
    and write a profile there that is the project's own with the copy as its path."""
    warehouse = Path(warehouse)
    if not warehouse.is_file():
        raise DbtProjectError(f"no warehouse at {warehouse}: build it first (the dbt models read its staging tables)")
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / f"{warehouse.stem}-dbt{warehouse.suffix}"
    shutil.copyfile(warehouse, copy)
    profiles = yaml.safe_load((project / "profiles.yml").read_text(encoding="utf-8")) or {}
    try:
        output = profiles[PROFILE]["outputs"][profiles[PROFILE].get("target", "dev")]
    except (KeyError, TypeError):
        raise DbtProjectError(f"{project / 'profiles.yml'} has no output of profile {PROFILE!r}") from None
    if output.get("type") != "duckdb":
        raise DbtProjectError(f"profile {PROFILE!r} is {output.get('type')!r}: only dbt-duckdb projects build here")
    output["path"] = str(copy)
    (folder / "profiles.yml").write_text(yaml.safe_dump(profiles, sort_keys=False), encoding="utf-8")
    return Scratch(warehouse=warehouse, copy=copy, profiles_dir=folder, target_path=folder / "target")


@dataclass(frozen=True)
class BuiltModel:
    """A model dbt built: where (schema, alias) and which DIA table it replaces."""

    table: str
    kind: str  # refined | rejects
    schema: str
    alias: str


def built_models(manifest: dict, run_results: dict) -> list[BuiltModel]:
    """The DIA models (`meta.dia_table`) the build ran successfully."""
    ok = {r["unique_id"] for r in run_results.get("results", []) if r.get("status") == "success"}
    out = []
    for uid, node in manifest.get("nodes", {}).items():
        meta = (node.get("config") or {}).get("meta") or node.get("meta") or {}
        if uid in ok and node.get("resource_type") == "model" and meta.get("dia_table"):
            out.append(BuiltModel(meta["dia_table"], meta.get("dia_kind", "refined"),
                                  node["schema"], node.get("alias") or node["name"]))
    return out


def parents_first(tables: list[ManifestTable]) -> list[str]:
    """Table names with every foreign key's target before the table (the manifest's order where free)."""
    names = [t.name for t in tables]
    refs = {t.name: {fk.ref_table for fk in t.foreign_keys if fk.ref_table in names and fk.ref_table != t.name}
            for t in tables}
    done: list[str] = []
    while len(done) < len(names):
        ready = [n for n in names if n not in done and refs[n] <= set(done)]
        done += ready or [n for n in names if n not in done][:1]  # a cycle: break it in manifest order
    return done


def install(scratch: Scratch, built: list[BuiltModel], tables: list[ManifestTable]) -> list[str]:
    """Replace DIA's tables in the copy by the ones dbt built, then rename the copy over the
    warehouse. The refined tables are dbt's as materialized: no DuckDB key constraints (dbt's
    unique, not_null and relationships tests hold the keys, and they passed). Returns what changed."""
    refined = {b.table: b for b in built if b.kind == "refined"}
    order = parents_first(tables)
    con = duckdb.connect(str(scratch.copy))
    try:
        present = {r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()}
        order = [n for n in order if n in present or n in refined]
        con.execute("BEGIN")
        con.execute("CREATE SCHEMA dia_keep")
        # every refined table is recreated (a table referenced by a foreign key cannot be replaced
        # alone): the ones dbt did not build this time are kept as they were
        for name in order:
            if name not in refined and name in present:
                con.execute(f"CREATE TABLE dia_keep.{q(name)} AS SELECT * FROM main.{q(name)}")
        for name in reversed(order):
            con.execute(f"DROP TABLE IF EXISTS main.{q(name)}")
        for name in order:
            source = f"{q(refined[name].schema)}.{q(refined[name].alias)}" if name in refined else f"dia_keep.{q(name)}"
            con.execute(f"CREATE TABLE main.{q(name)} AS SELECT * FROM {source}")
        for b in built:
            if b.kind == "rejects":
                con.execute(f"CREATE OR REPLACE TABLE rejects.{q(b.table)} AS SELECT * FROM {q(b.schema)}.{q(b.alias)}")
        con.execute("DROP SCHEMA dia_keep CASCADE")
        con.execute("COMMIT")
        con.execute("CHECKPOINT")
    finally:
        con.close()
    os.replace(scratch.copy, scratch.warehouse)
    return sorted(refined) + [f"rejects.{b.table}" for b in built if b.kind == "rejects"]


def keep_rejected(scratch: Scratch) -> Path:
    """A build that failed: the copy is kept beside the warehouse, which is untouched."""
    os.replace(scratch.copy, scratch.rejected)
    return scratch.rejected
