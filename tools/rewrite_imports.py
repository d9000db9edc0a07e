"""Rewrite imports of the top-level folders `resources` and `sensors` to their package names,
`dia_assets.resources` and `dia_assets.sensors` (how a wheel installs them; see setup.py).

Idempotent, so it can be run again after merging branches that still use the old names:
    python tools/rewrite_imports.py            # rewrite the tracked .py files, list them
    python tools/rewrite_imports.py --check    # exit 1 if any file still needs it

Rewritten: `from resources... import`, `import sensors.x as y`, and quoted module paths such
as importlib.import_module("sensors.drift_sensor") when the module exists in the folder (so a
file name like "sensors.csv" is left alone).

Also rewritten: modules that moved into `dia_assets.platform` (MOVED), so a branch written
before the move still merges; `dia_assets.agents.query.llm`, whose names went to two modules,
is listed for a hand edit."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("resources", "sensors")
PACKAGE = "dia_assets"

_NAMES = "|".join(FOLDERS)
_FROM = re.compile(rf"^(\s*)from ({_NAMES})(?=[\s.])", re.MULTILINE)
_IMPORT_AS = re.compile(rf"^(\s*)import ({_NAMES})((?:\.\w+)*\s+as\s)", re.MULTILINE)
_QUOTED = re.compile(rf"""(["'])({_NAMES})((?:\.\w+)+)\1""")

# modules moved into the platform layer (issue 32, slice 2): old dotted path -> new one
MOVED = {
    "dia_assets.agents.settings": "dia_assets.platform.settings",
    "dia_assets.agents.models.door": "dia_assets.platform.model.litellm",
    "dia_assets.agents.models.errors": "dia_assets.platform.model.errors",
    "dia_assets.agents.models.doctor": "dia_assets.platform.model.doctor",
    # slice 4
    "dia_assets.agents.memory.embedder": "dia_assets.platform.embeddings",
    # issue 32, infrastructure: raw-file reading (names moved too, by hand: value_parsing.sql_str
    # -> platform.naming, locations.temp_prefix/TEMP_KINDS -> platform.files.temp,
    # interpreter.one_table.undone_decisions -> contracts.interpretation, schema_creator.build
    # run/build/BuildResult -> dia_assets.pipeline)
    "dia_assets.agents.interpreter.compressed": "dia_assets.platform.files.compressed",
    "dia_assets.agents.interpreter.csv_lines": "dia_assets.platform.files.csv_lines",
    "dia_assets.agents.interpreter.csv_prepare": "dia_assets.platform.files.csv_prepare",
    "dia_assets.agents.interpreter.declared": "dia_assets.platform.files.declared",
    "dia_assets.agents.interpreter.dialect": "dia_assets.platform.files.dialect",
    "dia_assets.agents.interpreter.discover": "dia_assets.platform.files.discover",
    "dia_assets.agents.interpreter.encodings": "dia_assets.platform.files.encodings",
    "dia_assets.agents.interpreter.excel_formulas": "dia_assets.platform.files.excel_formulas",
    "dia_assets.agents.interpreter.final_record": "dia_assets.platform.files.final_record",
    "dia_assets.agents.interpreter.header": "dia_assets.platform.files.header",
    "dia_assets.agents.interpreter.json_keys": "dia_assets.platform.files.json_keys",
    "dia_assets.agents.interpreter.languages": "dia_assets.platform.files.languages",
    "dia_assets.agents.interpreter.parse_checks": "dia_assets.platform.files.parse_checks",
    "dia_assets.agents.interpreter.readers": "dia_assets.platform.files.readers",
    "dia_assets.agents.interpreter.record_count": "dia_assets.platform.files.record_count",
    "dia_assets.agents.interpreter.rewrite": "dia_assets.platform.files.rewrite",
    "dia_assets.agents.interpreter.scanned_read": "dia_assets.platform.files.scanned",
    # the memory store (names imported from the package dia_assets.agents.memory, but for
    # MaintenancePolicy, now come from dia_assets.platform.memory: by hand)
    "dia_assets.agents.memory.bulk": "dia_assets.platform.memory.bulk",
    "dia_assets.agents.memory.conflicts": "dia_assets.platform.memory.conflicts",
    "dia_assets.agents.memory.connection": "dia_assets.platform.memory.connection",
    "dia_assets.agents.memory.embedded_pg": "dia_assets.platform.memory.embedded_pg",
    "dia_assets.agents.memory.events": "dia_assets.platform.memory.events",
    "dia_assets.agents.memory.migrations": "dia_assets.platform.memory.migrations",
    "dia_assets.agents.memory.models": "dia_assets.platform.memory.models",
    "dia_assets.agents.memory.placement": "dia_assets.platform.memory.placement",
    "dia_assets.agents.memory.retrieval": "dia_assets.platform.memory.retrieval",
    "dia_assets.agents.memory.server": "dia_assets.platform.memory.server",
    "dia_assets.agents.memory.store": "dia_assets.platform.memory.store",
    "dia_assets.agents.memory.verify": "dia_assets.platform.memory.verify",
    # the built warehouse read back (names moved by hand: schema_creator.sqlgen.transpile ->
    # platform.tables.target, .value_sql and plan.is_text_type -> agents.value_parsing,
    # schema_creator.swap.file_identity -> platform.warehouse.fingerprint)
    "dia_assets.agents.schema_creator.target": "dia_assets.platform.tables.target",
    "dia_assets.agents.schema_creator.table_stats": "dia_assets.platform.tables.stats",
    # slice 6: the Dagster glue under dia_assets/dagster/, the CLI under dia_assets/cli/
    "dia_assets.sensors.automation": "dia_assets.dagster.sensors.automation",
    "dia_assets.sensors.data_sensors": "dia_assets.dagster.sensors.data_sensors",
    "dia_assets.sensors.drift_sensor": "dia_assets.dagster.sensors.drift_sensor",
    "dia_assets.sensors.jobs": "dia_assets.dagster.sensors.jobs",
    "dia_assets.sensors.quality_sensor": "dia_assets.dagster.sensors.quality_sensor",
    "dia_assets.sensors.run_outcome": "dia_assets.dagster.sensors.run_outcome",
    "dia_assets.sensors.schedules": "dia_assets.dagster.sensors.schedules",
    "dia_assets.sensors.settings": "dia_assets.dagster.sensors.settings",
    "dia_assets.resources.embeddings": "dia_assets.dagster.resources.embeddings",
    "dia_assets.resources.llm": "dia_assets.dagster.resources.llm",
    "dia_assets.resources.memory": "dia_assets.dagster.resources.memory",
    "dia_assets.resources.warehouse": "dia_assets.dagster.resources.warehouse",
    "dia_assets.resources.workspace": "dia_assets.dagster.resources.workspace",
    "dia_assets.analysis_assets": "dia_assets.dagster.analysis",
    "dia_assets.catalog_assets": "dia_assets.dagster.catalog",
    "dia_assets.interpretation_assets": "dia_assets.dagster.interpretation",
    "dia_assets.lineage_assets": "dia_assets.dagster.lineage",
    "dia_assets.memory_assets": "dia_assets.dagster.memory",
    "dia_assets.query_assets": "dia_assets.dagster.query",
    "dia_assets.schema_assets": "dia_assets.dagster.schema",
    "dia_assets.table_specs": "dia_assets.dagster.tables",
    "dia_assets.question_metadata": "dia_assets.dagster.question_metadata",
    "dia_assets.question_outcomes": "dia_assets.dagster.question_outcomes",
    "dia_assets.run_writer": "dia_assets.dagster.run_writer",
    "dia_assets.instance": "dia_assets.dagster.instance",
    "dia_assets.dev_session": "dia_assets.dagster.dev_session",
    "dia_assets.devserver": "dia_assets.dagster.devserver",
    "dia_assets.warm_run_workers": "dia_assets.dagster.warm_run_workers",
    "dia_assets.demo": "dia_assets.cli.demo",
    "dia_assets.mcp_server": "dia_assets.cli.mcp_server",
    "dia_assets.cli_analysis": "dia_assets.cli.analysis",
    "dia_assets.cli_ask": "dia_assets.cli.ask",
    "dia_assets.cli_catalog": "dia_assets.cli.catalog",
    "dia_assets.cli_chart": "dia_assets.cli.chart",
    "dia_assets.cli_common": "dia_assets.cli.common",
    "dia_assets.cli_compat": "dia_assets.cli.compat",
    "dia_assets.cli_config": "dia_assets.cli.config",
    "dia_assets.cli_doctor": "dia_assets.cli.doctor",
    "dia_assets.cli_errors": "dia_assets.cli.errors",
    "dia_assets.cli_eval": "dia_assets.cli.eval",
    "dia_assets.cli_lineage": "dia_assets.cli.lineage",
    "dia_assets.cli_mcp": "dia_assets.cli.mcp",
    "dia_assets.cli_memory": "dia_assets.cli.memory",
    # slice 5: the interpreter's keys.py and foreign_keys.py split into the package keys/ (primary,
    # foreign, features, score, assign); `keys` kept its path, its package exports what both did
    "dia_assets.agents.interpreter.foreign_keys": "dia_assets.agents.interpreter.keys",
}
_MOVED = re.compile(r"\b(" + "|".join(re.escape(k) for k in MOVED) + r")\b")
# split between platform.model.base (ChatFn, Reply (was ChatReply), ToolCall), .errors
# (NO_MODEL_MESSAGE, ModelUnavailable) and .litellm (litellm_chat, completion)
_SPLIT = re.compile(r"^.*\bdia_assets\.agents\.(?:query\.llm|models)\b.*$", re.MULTILINE)


def _is_module(folder: str, dotted: str) -> bool:
    """Whether `<folder><dotted>` names a module or package of the folder."""
    parts = dotted.strip(".").split(".")
    base = ROOT / folder
    moved = {f"{PACKAGE}.{folder}." + ".".join(parts[:n]) for n in (len(parts), len(parts) - 1) if n}
    return (base.joinpath(*parts).with_suffix(".py").is_file()
            or (base.joinpath(*parts) / "__init__.py").is_file()
            or (len(parts) > 1 and base.joinpath(*parts[:-1]).with_suffix(".py").is_file())
            or bool(moved & MOVED.keys()))  # a module that moved out of the folder (slice 6)


def rewrite(text: str) -> str:
    """The text with every import of a top-level folder moved under the package."""
    text = _FROM.sub(rf"\1from {PACKAGE}.\2", text)
    text = _IMPORT_AS.sub(rf"\1import {PACKAGE}.\2\3", text)
    text = _QUOTED.sub(
        lambda m: f"{m[1]}{PACKAGE}.{m[2]}{m[3]}{m[1]}" if _is_module(m[2], m[3]) else m[0], text
    )
    return _MOVED.sub(lambda m: MOVED[m[1]], text)  # last: a folder's module may have moved on


def bare_imports(text: str) -> list[str]:
    """`import resources` / `import sensors.x` without `as`, and `from dia_assets[.x] import <a moved
    module>` (`from dia_assets.agents.interpreter import foreign_keys`, one line or in parentheses):
    the bound name would change, so these are reported for a hand edit rather than rewritten."""
    bare = re.findall(rf"^\s*import (?:{_NAMES})\b(?!(?:\.\w+)*\s+as\s).*$", text, re.MULTILINE)
    moved_from = [m[0].strip().splitlines()[0] for m in re.finditer(
                      rf"^[ \t]*from ({PACKAGE}(?:\.\w+)*) import (\([^)]*\)|.*)$", text, re.MULTILINE)
                  if any(f"{m[1]}.{name}" in MOVED for name in re.findall(r"\w+", m[2]))]
    return bare + moved_from + [line for line in _SPLIT.findall(_MOVED.sub(lambda m: MOVED[m[1]], text))]


def python_files() -> list[Path]:
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "*.py"], capture_output=True,
                            text=True, check=True).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def sort_imports(paths: list[Path]) -> None:
    """The moved imports join the dia_assets block: ruff's isort rule (only) re-sorts the
    rewritten files, nothing else."""
    cmd = [sys.executable, "-m", "ruff", "check", "--select", "I", "--fix", "--quiet", *map(str, paths)]
    if subprocess.run(cmd, cwd=ROOT).returncode != 0:
        print("ruff could not sort every import: run `ruff check --select I --fix` on the files above",
              file=sys.stderr)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    changed, manual = [], []
    for path in python_files():
        if path == Path(__file__).resolve():
            continue
        text = path.read_text()
        manual += [f"{path.relative_to(ROOT)}: {line.strip()}" for line in bare_imports(text)]
        new = rewrite(text)
        if new != text:
            changed.append(path.relative_to(ROOT))
            if not check:
                path.write_text(new)
    for name in changed:
        print(f"{'needs rewrite' if check else 'rewrote'}: {name}")
    if changed and not check:
        sort_imports(changed)
    for line in manual:
        print(f"edit by hand: {line}", file=sys.stderr)
    return 1 if manual or (check and changed) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
