"""The Data Interpreter (DIA §3.3): raw files in, an interpretation out, all by executed code."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from dia_assets.agents.interpreter import keys, quality
from dia_assets.agents.interpreter.declared_keys import apply_declared
from dia_assets.agents.interpreter.discover import discover, hash_and_check_utf8
from dia_assets.agents.interpreter.naming import snake_case
from dia_assets.agents.interpreter.profile import SourceProfile, profile_table
from dia_assets.agents.interpreter.readers import LoadedSource, read_source, scratch_dir
from dia_assets.contracts.interpretation import Interpretation, ParseInfo, QualityIssue, Source

log = logging.getLogger("dia.interpreter")
Progress = Callable[[str], None]


def interpret(data_dir: str | Path, progress: Progress | None = None) -> Interpretation:
    """Profile every source under `data_dir`. One bad file never fails the run."""
    say = progress or log.info
    root = Path(data_dir).resolve()
    files = discover(root)
    result = Interpretation(data_dir=str(root), generated_at=datetime.now(UTC).isoformat(timespec="seconds"))
    con = duckdb.connect(config={"preserve_insertion_order": True})
    con.execute("SET enable_progress_bar = false")
    infos: list[keys.TableInfo] = []
    used: set[str] = set()
    with scratch_dir() as tmp:
        con.execute(f"SET temp_directory = '{Path(tmp) / 'spill'}'")
        for index, raw in enumerate(files):
            name = _source_name(root, raw.path, used)
            rel = str(raw.path.relative_to(root))
            if raw.format is None:
                result.quality_issues.append(QualityIssue(
                    source=name, kind="unsupported_format", severity="info",
                    message=f"{rel}: format {raw.path.suffix or '(no extension)'} is not read",
                    suggested_action="Convert to CSV, JSON, Excel or Parquet, or remove it from the folder.",
                ))
                continue
            say(f"[{index + 1}/{len(files)}] reading {rel}")
            digest, utf8_ok = hash_and_check_utf8(raw.path)
            size = raw.path.stat().st_size
            for loaded in read_source(con, raw.path, raw.format, name, f"src_{index}", Path(tmp), utf8_ok):
                source, profile = _profile(con, loaded, rel, digest, size, say)
                used.add(source.name)
                result.sources.append(source)
                result.quality_issues.extend(loaded.issues)
                if loaded.table and profile is not None and source.columns:
                    infos.append(keys.TableInfo(source, loaded.table))
                    result.quality_issues.extend(quality.column_issues(con, source, loaded.table, profile))
        say(f"finding keys in {len(infos)} sources")
        for info in infos:
            keys.find_keys(con, info)
            result.quality_issues.extend(quality.key_issues(info.source))
        result.foreign_keys = keys.find_foreign_keys(con, infos)
        if keys.prefer_link_keys(infos, result.foreign_keys):
            result.foreign_keys = keys.find_foreign_keys(con, infos)
        result.quality_issues.extend(quality.fk_issues(result.foreign_keys))
        apply_declared(result, con, {i.source.name: i.table for i in infos})  # a .sql's keys win
        result.join_paths = keys.join_paths(result.sources, result.foreign_keys)
    con.close()
    return result


def _source_name(root: Path, path: Path, used: set[str]) -> str:
    name = snake_case(path.stem)
    if name in used and path.parent != root:
        name = snake_case(f"{path.parent.name}_{path.stem}")
    return name


def _profile(
    con: duckdb.DuckDBPyConnection, loaded: LoadedSource, rel: str, digest: str, size: int, say: Progress
) -> tuple[Source, SourceProfile | None]:
    source = Source(
        name=loaded.name, path=rel, format=loaded.format, content_hash=digest, size_bytes=size,
        parse=loaded.parse if loaded.parse else ParseInfo(), parent=loaded.parent,
        declared=loaded.declared,
    )
    if not loaded.table:
        return source, None
    say(f"    profiling {loaded.name}")
    profile = profile_table(con, loaded.table)
    originals = dict(zip([c.name for c in profile.columns], loaded.original_columns, strict=False))
    for col in profile.columns:
        col.original_name = originals.get(col.name, col.name)
    source.columns = profile.columns
    source.row_count = profile.rows
    source.duplicate_rows = profile.duplicate_rows
    return source, profile
