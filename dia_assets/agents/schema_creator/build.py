"""The whole Schema Creator run: plan -> artifacts -> load -> validate -> report."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from dia_assets.agents.locations import default_warehouse, is_postgres
from dia_assets.agents.schema_creator import sqlgen
from dia_assets.agents.schema_creator.er import er_diagram
from dia_assets.agents.schema_creator.lineage import manifest_lineage
from dia_assets.agents.schema_creator.load import LoadResult, StepHook, load_duckdb
from dia_assets.agents.schema_creator.overrides import load_overrides, write_template
from dia_assets.agents.schema_creator.plan import plan_manifest
from dia_assets.agents.schema_creator.target import Target
from dia_assets.agents.schema_creator.validate import render_markdown, validate
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.contracts.manifest import Manifest
from dia_assets.contracts.report import ValidationReport

OVERRIDES = ("review", "interpretation_overrides.yaml")


def overrides_path(workspace: str | Path) -> Path:
    return Path(workspace).joinpath(*OVERRIDES)


def prepare_overrides(interp: Interpretation, workspace: str | Path, seed: str | Path | None = None) -> Path:
    """Create the overrides file once (from `seed` or the template); never overwrite it."""
    path = overrides_path(workspace)
    if not path.exists():
        if seed is not None and Path(seed).exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(seed, path)
        else:
            write_template(interp, path)
    return path


def write_plan(interp: Interpretation, workspace: str | Path, dialect: str = "duckdb",
               seed: str | Path | None = None) -> tuple[Manifest, dict[str, Path]]:
    """schema/manifest.json, ddl.sql, load.sql, er.mmd, lineage.json from interpretation + overrides."""
    ws = Path(workspace)
    path = prepare_overrides(interp, ws, seed)
    manifest = plan_manifest(interp, load_overrides(path), dialect=dialect)
    schema = ws / "schema"
    schema.mkdir(parents=True, exist_ok=True)
    paths = {
        "manifest": manifest.write(schema / "manifest.json"),
        "ddl": schema / "ddl.sql",
        "load": schema / "load.sql",
        "er": schema / "er.mmd",
        "lineage": schema / "lineage.json",
        "overrides": path,
    }
    if dialect == "postgres":
        from dia_assets.agents.schema_creator.postgres import ddl_script as pg_ddl

        paths["ddl"].write_text(pg_ddl(manifest), encoding="utf-8")
    else:
        paths["ddl"].write_text(sqlgen.ddl_script(manifest), encoding="utf-8")
    paths["load"].write_text(sqlgen.load_script(manifest), encoding="utf-8")
    paths["er"].write_text(er_diagram(manifest), encoding="utf-8")
    paths["lineage"].write_text(json.dumps(manifest_lineage(manifest), indent=2), encoding="utf-8")
    return manifest, paths


def load_warehouse(manifest: Manifest, warehouse: str, hook: StepHook | None = None) -> LoadResult:
    if is_postgres(warehouse):
        from dia_assets.agents.schema_creator.postgres import load_postgres

        return load_postgres(manifest, manifest.data_dir, warehouse, hook)
    return load_duckdb(manifest, manifest.data_dir, warehouse, hook)


def validate_warehouse(manifest: Manifest, warehouse: str, workspace: str | Path,
                       interp: Interpretation | None = None) -> ValidationReport:
    with Target(warehouse) as target:
        report = validate(target, manifest, interp)
    out = Path(workspace) / "validation"
    report.write(out / "report.json")
    (out / "report.md").write_text(render_markdown(report), encoding="utf-8")
    return report


@dataclass
class BuildResult:
    manifest: Manifest
    load: LoadResult
    report: ValidationReport
    paths: dict[str, Path]


def run(data_dir: str | Path, workspace: str | Path, warehouse: str | None = None,
        interpretation: Interpretation | None = None, overrides_seed: str | Path | None = None,
        hook: StepHook | None = None) -> BuildResult:
    ws = Path(workspace).resolve()
    ws.mkdir(parents=True, exist_ok=True)
    interp = interpretation
    if interp is None:
        from dia_assets.agents.interpreter import interpret

        interp = interpret(data_dir)
        (ws / "interpretation.json").write_text(interp.to_json(), encoding="utf-8")
    target = warehouse or default_warehouse(ws)
    dialect = "postgres" if is_postgres(target) else "duckdb"
    manifest, paths = write_plan(interp, ws, dialect, overrides_seed)
    loaded = load_warehouse(manifest, target, hook)
    report = validate_warehouse(manifest, target, ws, interp)
    paths["report"] = ws / "validation" / "report.json"
    paths["report_md"] = ws / "validation" / "report.md"
    return BuildResult(manifest=manifest, load=loaded, report=report, paths=paths)


def build(data_dir: str | Path, workspace: str | Path, warehouse: str | None = None,
          overrides_seed: str | Path | None = None) -> ValidationReport:
    """Interpret, plan, load and validate; the entry point for `dia build`."""
    return run(data_dir, workspace, warehouse, overrides_seed=overrides_seed).report


def summary(report: ValidationReport) -> str:
    lines = [f"accepted: {str(report.accepted).lower()}  ({report.warehouse})"]
    for name, axis in report.axes.items():
        lines.append(f"  {'PASS' if axis.passed else 'FAIL'} {name}: {axis.summary}")
    nulled = {r.table: r.values_nulled for r in report.load_integrity}
    for r in report.row_counts:
        lines.append(f"  {r.table}: {r.source_rows} source = {r.refined} refined + {r.rejected} rejected"
                     f" + {r.duplicates_removed} duplicates" + (f" + {r.unparsed_lines} bad lines" if r.unparsed_lines else "")
                     + (f" ({nulled[r.table]} rows kept with a bad value NULLed, raw value in rejects)"
                        if nulled.get(r.table) else ""))
    return "\n".join(lines)
