"""Expert overrides: `review/interpretation_overrides.yaml`.

The file is created once from a template that lists every interpreter decision as a
commented-out line; an expert uncomments and edits lines in place. Agents never
overwrite it. Every error names the file and line.

Names in the file are interpretation names: source names for tables, snake-case
source column names for columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from dia_assets.contracts.interpretation import FileGroup, Interpretation, Source


class OverrideError(ValueError):
    """An override that cannot be applied; the message names file and line."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ColumnOverride(_Strict):
    rename: str | None = None
    type: str | None = None
    exclude: str | None = None
    categories: dict[str, str] | None = None
    trim: bool | None = None
    null_tokens: list[str] | None = None
    blank_as_null: bool | None = None
    on_error: Literal["reject_row", "null_value"] | None = None


class FkRef(_Strict):
    table: str
    columns: list[str]


class FkOverride(_Strict):
    columns: list[str]
    references: FkRef | None = None
    allow_orphans: str | None = None
    drop: bool = False


FilesDecision = Literal["union", "separate"]


class TableOverride(_Strict):
    rename: str | None = None
    # Files that may be one table (interpretation `file_groups`): one table, their union, or
    # separate tables. Taken by the interpreter (which reads them as one source or apart).
    files: FilesDecision | None = None
    exclude: str | None = None
    primary_key: list[str] | None = None
    dedup: Literal["exact_rows", "none"] | None = None
    max_reject_fraction: float | None = None
    columns: dict[str, ColumnOverride | None] | None = None
    foreign_keys: list[FkOverride] | None = None


class Overrides(_Strict):
    version: int = 1
    tables: dict[str, TableOverride | None] | None = None


@dataclass
class OverridesFile:
    """Parsed overrides plus the line of every key, for error messages."""

    overrides: Overrides = field(default_factory=Overrides)
    path: Path | None = None
    lines: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def line(self, *loc: Any) -> int | None:
        for n in range(len(loc), -1, -1):
            if loc[:n] in self.lines:
                return self.lines[loc[:n]]
        return None

    def error(self, message: str, *loc: Any) -> OverrideError:
        where = str(self.path) if self.path else "overrides"
        line = self.line(*loc)
        return OverrideError(f"{where}, line {line}: {message}" if line else f"{where}: {message}")

    @property
    def tables(self) -> dict[str, TableOverride]:
        return {k: (v or TableOverride()) for k, v in (self.overrides.tables or {}).items()}

    @property
    def files(self) -> dict[str, FilesDecision]:
        """The `files` decisions: file group name -> union | separate."""
        return {name: tov.files for name, tov in self.tables.items() if tov.files}


def _line_map(node: yaml.Node | None, loc: tuple[Any, ...], out: dict[tuple[Any, ...], int]) -> None:
    if node is None:
        return
    out.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            out[(*loc, key.value)] = key.start_mark.line + 1
            _line_map(value, (*loc, key.value), out)
            out[(*loc, key.value)] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_map(item, (*loc, i), out)


def parse_overrides(text: str, path: Path | None = None) -> OverridesFile:
    where = str(path) if path else "overrides"
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f", line {mark.line + 1}" if mark else ""
        raise OverrideError(f"{where}{line}: not valid YAML: {getattr(exc, 'problem', exc)}") from exc
    lines: dict[tuple[Any, ...], int] = {}
    _line_map(node, (), lines)
    result = OverridesFile(path=path, lines=lines)
    if data is None:
        return result
    try:
        result.overrides = Overrides.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(p for p in first["loc"] if not (isinstance(p, str) and p[0].isupper()))
        raise result.error(f"{'.'.join(map(str, loc))}: {first['msg']}", *loc) from exc
    return result


def load_overrides(path: str | Path | None) -> OverridesFile:
    """The overrides at `path`; an absent file means no overrides."""
    if path is None or not Path(path).exists():
        return OverridesFile(path=Path(path) if path else None)
    return parse_overrides(Path(path).read_text(encoding="utf-8"), Path(path))


def file_decisions(path: str | Path | None) -> dict[str, FilesDecision]:
    """The expert's `files` decisions (group name -> union | separate), for the interpreter. An
    overrides file that does not parse gives none here: planning reports its error."""
    try:
        return load_overrides(path).files
    except OverrideError:
        return {}


# ---------------------------------------------------------------- template


def _flow(items: list[str]) -> str:
    return "[" + ", ".join(items) + "]"


def _suggested_categories(source: Source, column: str) -> dict[str, str]:
    """Variant spelling -> most frequent spelling of the same normalized word."""
    col = source.column(column)
    groups: dict[str, list[tuple[str, int]]] = {}
    for value, count in col.top_values:
        if value is None:
            continue
        groups.setdefault(" ".join(value.split()).lower(), []).append((value, count))
    mapping: dict[str, str] = {}
    for variants in groups.values():
        canonical = max(variants, key=lambda vc: (vc[1], vc[0] == vc[0].strip()))[0]
        for value, _ in variants:
            if value != canonical:
                mapping[value] = canonical
    return mapping


def render_template(interp: Interpretation) -> str:
    """Every interpreter decision as a commented-out override line.

    Nothing below `version` is live YAML, not even table and column names: a template line
    the expert never touched cannot name a column that a later file no longer has. To
    override, uncomment the table line, the `columns:` line, the column line and the option
    (remove the leading `# `)."""
    out = [
        "# Expert overrides for the Schema Creator (DIA). Agents create this file once and",
        "# never overwrite it. Every suggestion below is commented out; to apply one, remove",
        "# the leading '# ' from its line and from the table/column lines above it.",
        "# Names are interpretation names: source names for tables, snake-case source",
        "# columns for columns. Options per table: rename, exclude (reason), primary_key",
        "# ([] drops it), dedup (exact_rows | none), max_reject_fraction, columns, foreign_keys,",
        "# files (union | separate: files that may be one table, named as in the interpretation's file groups).",
        "# Options per column: rename, type, exclude (reason), categories {raw: canonical},",
        "# trim, null_tokens, blank_as_null, on_error (reject_row | null_value). Foreign keys: columns, references {table, columns},",
        "# allow_orphans (reason), drop: true.",
        "# An override naming a table or column the data no longer has is reported as stale",
        "# (validation report, with its line) and otherwise ignored.",
        "version: 1",
        "# tables:",
    ]
    issues: dict[tuple[str, str | None], list[str]] = {}
    for issue in interp.quality_issues:
        issues.setdefault((issue.source, issue.column), []).append(f"{issue.kind} ({issue.count})")
    groups = {g.name: g for g in interp.file_groups}
    names = {s.name for s in interp.sources}
    for group in interp.file_groups:
        if group.name not in names:
            out += [f"#   {group.name}:", _files_line(group)]
    for source in interp.sources:
        if not source.columns:
            continue
        out.append(f"#   {source.name}:")
        if source.name in groups:
            out.append(_files_line(groups[source.name]))
        out.append(f"#     rename: {source.name}")
        if source.primary_key:
            pk = source.primary_key
            out.append(f"#     primary_key: {_flow(pk.columns)}   # confidence {pk.confidence:.2f}: {pk.reason}")
        else:
            out.append("#     primary_key: []   # the interpreter found no key")
        if source.duplicate_rows:
            out.append(f"#     dedup: exact_rows   # {source.duplicate_rows} exact duplicate rows")
        out.append("#     columns:")
        for col in source.columns:
            notes = issues.get((source.name, col.name), [])
            fmt = col.value_format.model_dump(exclude_defaults=True)
            out.append(f"#       {col.name}:")
            out.append(f"#         type: {col.inferred_type}   # {col.semantic_type}"
                       + (f", format {fmt}" if fmt else "")
                       + (f", {col.unparseable_count} unparseable" if col.unparseable_count else ""))
            if notes:
                out.append(f"#         # -- interpreter saw: {', '.join(notes)}")
            if any(n.startswith("inconsistent_categories") for n in notes):
                mapping = _suggested_categories(source, col.name)
                if mapping:
                    out.append("#         categories:")
                    for raw, canonical in mapping.items():
                        out.append(f"#           {yaml.safe_dump(raw).splitlines()[0]}: {yaml.safe_dump(canonical).splitlines()[0]}")
            if col.unparseable_count:
                out.append("#         on_error: null_value   # keep the row, NULL the value (raw value kept in rejects)")
            if any(n.startswith("blank_strings") for n in notes):
                out.append("#         blank_as_null: true")
            out.append("#         exclude: \"reason\"")
            out.append(f"#         rename: {col.name}")
        fks = [fk for fk in interp.foreign_keys if fk.from_.source == source.name]
        if fks:
            out.append("#     foreign_keys:")
            for fk in fks:
                out.append(f"#       - columns: {_flow(fk.from_.columns)}")
                out.append(f"#         references: {{table: {fk.to.source}, columns: {_flow(fk.to.columns)}}}"
                           f"   # confidence {fk.confidence:.2f}, {fk.orphan_count} orphan rows")
                if fk.orphan_count:
                    out.append("#         allow_orphans: \"why these orphans are expected\"")
                out.append("#         drop: true")
    return "\n".join(out) + "\n"


def _files_line(group: FileGroup) -> str:
    """The `files` decision of a file group: as the interpreter took it, or the question to decide."""
    files = ", ".join(group.files)
    if group.status == "question":
        return (f"#     files: union   # DECIDE union or separate (no build is accepted until then): {files}: "
                f"{group.reason}")
    now, other = ("union", "separate") if group.status == "united" else ("separate", "union")
    return f"#     files: {now}   # {files}: {group.reason}; or {other}"


def write_template(interp: Interpretation, path: str | Path) -> bool:
    """Create the overrides file from the template; never overwrite. True if written."""
    target = Path(path)
    if target.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_template(interp), encoding="utf-8")
    return True
