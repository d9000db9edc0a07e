"""Source names: one per file, always distinct, stable for the same folder.

`a b.csv` and `a_b.csv` snake-case to the same name; the second file in sorted path
order gets `a_b_2` and an issue says so, so two files never share a table."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path

from dia_assets.contracts.interpretation import QualityIssue
from dia_assets.platform.files.compressed import data_stem
from dia_assets.platform.files.declared import schema_file_problems
from dia_assets.platform.files.discover import RawFile
from dia_assets.platform.naming import snake_case


def source_name(root: Path, path: Path, used: set[str]) -> tuple[str, QualityIssue | None]:
    """A name for `path` not in `used` (which it joins), and an issue if it had to change."""
    base = snake_case(data_stem(path))
    wanted = base
    if base in used and path.parent != root:
        base = snake_case(f"{path.parent.name}_{data_stem(path)}")
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{base}_{n}"
    used.add(name)
    if name == wanted or (n == 1 and path.parent != root):
        return name, None
    rel = path.relative_to(root)
    return name, QualityIssue(
        source=name, kind="source_renamed", severity="info",
        message=f"{rel}: its name {wanted!r} is taken by another file in the folder; read as {name!r}",
        suggested_action="Rename the table in the overrides if another name suits it better.",
    )


def refused_issues(root: Path, refused: list[RawFile]) -> list[QualityIssue]:
    """One error per file that was not read for safety or because it is not a regular file."""
    return [
        QualityIssue(
            source=snake_case(raw.stem), kind="refused_file", severity="error",
            message=f"{raw.path.relative_to(root)}: not read: {raw.refused}",
            suggested_action="Put the data itself in the data folder as a regular file.",
        )
        for raw in refused
    ]


def schema_file_issues(root: Path) -> list[QualityIssue]:
    """One warning per schema file that could not be read whole (a limit or a parse failure);
    the data files are read all the same, without what it would have declared."""
    return [
        QualityIssue(
            source=snake_case(path.stem), kind="schema_file_unreadable", severity="warning",
            message=f"{path.relative_to(root)}: schema file {problem}",
            suggested_action="Check the schema file; keys and columns it would declare are inferred from the data.",
        )
        for path, problem in schema_file_problems(root)
    ]


def distinct_derived_names(entries: list, file_name: str, used: set[str], rel: str) -> list[QualityIssue]:
    """Sheets and nested arrays are named `<file>_<part>`, which another file may already
    use: such an entry gets `_2` (and its children follow it). The loader finds a renamed
    entry by its source reference (path, sheet, JSON path), which does not change."""
    renames: dict[str, str] = {}
    issues = []
    for index, entry in enumerate(entries):
        if entry.parent is not None and entry.parent.source in renames:
            entry.parent.source = renames[entry.parent.source]
        if index == 0 and entry.name == file_name:
            continue
        if entry.name not in used:
            used.add(entry.name)
            continue
        name, n = entry.name, 1
        while name in used:
            n += 1
            name = f"{entry.name}_{n}"
        used.add(name)
        renames[entry.name] = name
        for issue in entry.issues:
            if issue.source == entry.name:
                issue.source = name
        issues.append(QualityIssue(
            source=name, kind="source_renamed", severity="info",
            message=f"{rel}: part {entry.name!r} has the name of another source in the folder; read as {name!r}",
            suggested_action="Rename the table in the overrides if another name suits it better.",
        ))
        entry.name = name
    return issues


_CLEAN_FILE = re.compile(r"[a-z0-9_]+(\.[a-z0-9]+)?")


@lru_cache(maxsize=1 << 18)  # the data sensor names every file of the folder on every tick
def raw_key_name(rel: str) -> str:
    """The Dagster asset-key name of a raw file, distinct per file: a plain top-level
    name (`staff.csv`) keeps its snake-case form; any other path (`a b.csv`,
    `2024/orders.csv`) adds a short hash of the path, so two files never share a key."""
    base = snake_case(Path(rel).name)
    if _CLEAN_FILE.fullmatch(rel):
        return base
    return f"{base}_{hashlib.sha1(rel.encode()).hexdigest()[:6]}"
