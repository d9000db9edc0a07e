"""Plan: interpretation + overrides -> manifest (tables, columns, keys, normalizations)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlglot import exp
from sqlglot.errors import ParseError

from dia_assets.agents.schema_creator.overrides import (
    ColumnOverride,
    FkOverride,
    OverridesFile,
    TableOverride,
)
from dia_assets.agents.schema_creator.width import too_wide
from dia_assets.agents.value_parsing import is_text_type
from dia_assets.contracts.interpretation import Column, Interpretation, Source, undone_decisions
from dia_assets.contracts.manifest import (
    Decision,
    ExcludedColumn,
    Manifest,
    ManifestColumn,
    ManifestFile,
    ManifestForeignKey,
    ManifestTable,
    OpenQuestion,
    StaleOverride,
    UnreadableSource,
)
from dia_assets.contracts.policy import HIGH
from dia_assets.platform.naming import snake_case
from dia_assets.platform.settings import get_settings


def check_type(sql_type: str) -> str:
    """The type in upper case if DuckDB and sqlglot know it; ValueError otherwise."""
    try:
        built = exp.DataType.build(sql_type, dialect="duckdb")
    except (ParseError, ValueError) as exc:
        raise ValueError(f"unknown SQL type {sql_type!r}") from exc
    if built.this == exp.DataType.Type.USERDEFINED:
        raise ValueError(f"unknown SQL type {sql_type!r}")
    return sql_type.strip().upper()


def stale(manifest: Manifest, ov: OverridesFile, reason: str, *loc: object) -> None:
    """Record an override that names what the data no longer has; the build goes on without it."""
    manifest.stale_overrides.append(StaleOverride(where=".".join(map(str, loc)), line=ov.line(*loc), reason=reason))


def plan_manifest(
    interp: Interpretation, overrides: OverridesFile | None = None, dialect: str = "duckdb",
    previous: Manifest | None = None,
) -> Manifest:
    """`previous`: the last build's manifest, whose keys stay unless an expert or a recorded
    drift decision changes them (a key the new data violates then fails key_validity)."""
    ov = overrides or OverridesFile()
    known = {s.name for s in interp.sources}
    manifest = Manifest(
        dialect=dialect,
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        data_dir=interp.data_dir,
        interpretation_generated_at=interp.generated_at,
        overrides_path=str(ov.path) if ov.path else None,
    )
    groups = {g.name for g in interp.file_groups}
    table_ovs = {}
    for name, tov in ov.tables.items():
        if tov.files and name not in groups:
            stale(manifest, ov, f"no files that may be one table are named {name!r} (file groups: "
                  f"{', '.join(sorted(groups)) or 'none'}); the decision is ignored", "tables", name, "files")
        if name in known:
            table_ovs[name] = tov
        elif name in groups:
            others = sorted(tov.model_fields_set - {"files"})
            if others:
                stale(manifest, ov, f"{name!r} names files that are read as separate sources, not a table: only "
                      f"`files` applies to it, not {others}; those options are ignored", "tables", name)
        else:
            stale(manifest, ov, f"unknown table {name!r}: no such source in the data (known: "
                  f"{', '.join(sorted(known))}); the override is ignored", "tables", name)
    names: dict[str, str] = {}  # source -> table
    col_names: dict[tuple[str, str], str] = {}  # (source, source column) -> refined column
    for source in interp.sources:
        tov = table_ovs.get(source.name, TableOverride())
        if tov.exclude:  # first: the expert may exclude a file that cannot be read
            manifest.skipped_sources.append(ExcludedColumn(source_column=source.name, reason=tov.exclude))
            manifest.decisions.append(Decision(table=source.name, what=f"excluded: {tov.exclude}", origin="override"))
            continue
        table = None
        if source.parse.ok and source.columns:
            table = _plan_table(source, tov, ov, manifest, _previous_table(previous, source.name))
        wide = too_wide(dialect, _widest_part(table) if table is not None else len(source.columns))
        if not source.parse.ok or not source.columns or wide:
            reason = wide or "; ".join(source.parse.errors) or "no columns"
            manifest.skipped_sources.append(ExcludedColumn(source_column=source.name, reason=reason))
            if not source.parse.ok or wide:
                manifest.unreadable_sources.append(
                    UnreadableSource(name=source.name, source_path=source.path, reason=reason))
            continue
        table.reader_stem = _reader_stem(interp, source)
        table.blocking_issues = _blocking_issues(interp, source, table)
        names[source.name] = table.name
        for col in table.columns:
            col_names[(source.name, col.source_column)] = col.name
        manifest.tables.append(table)
    taken = [t.name for t in manifest.tables]
    dupes = {n for n in taken if taken.count(n) > 1}
    if dupes:
        raise ov.error(f"two tables would be named {sorted(dupes)}; rename one", "tables")
    _plan_file_groups(interp, ov, manifest, names)
    _plan_foreign_keys(interp, ov, manifest, names, col_names, previous)
    _order_and_enforce(manifest)
    _split_wide(manifest)
    return manifest


def _split_limit() -> int:
    return get_settings().wide_split


def _widest_part(table: ManifestTable) -> int:
    """Source columns of the widest table the source becomes: all of them, or a part's."""
    if not table.primary_key or len(table.columns) <= _split_limit():
        return len(table.source_columns)
    return _split_limit() + len(table.excluded_columns)


def _split_wide(manifest: Manifest) -> None:
    """A keyed table of more than DIA_WIDE_SPLIT columns becomes parts `t`, `t__part2`, ... of at
    most that many columns, each carrying the primary key, each loaded from the same file with
    every record (the wide-table layout, docs/schema-creator.md). A part keeps every row: a value
    that does not parse is NULL with its raw text in the part's rejects (null_value), so the parts
    join 1:1 on the key (slice_join); foreign-key columns stay in the first part."""
    limit = _split_limit()
    out: list[ManifestTable] = []
    for table in manifest.tables:
        out.append(table)
        if not table.primary_key or len(table.columns) <= limit:
            continue
        key = [table.column(c) for c in table.primary_key]
        linked = {c for fk in table.foreign_keys for c in fk.columns}
        rest = sorted((c for c in table.columns if c.name not in table.primary_key),
                      key=lambda c: c.name not in linked)  # stable: file order otherwise
        per = max(1, limit - len(key))
        slices = [rest[i:i + per] for i in range(0, len(rest), per)]
        names = [table.name] + [f"{table.name}__part{i}" for i in range(2, len(slices) + 1)]
        nulled = 0
        for col in rest:
            nulled += col.on_error != "null_value" and not is_text_type(col.type)
            col.on_error = "null_value"
        excluded = [e.source_column for e in table.excluded_columns]
        every = list(table.source_columns)
        file_columns = [list(f.columns) for f in table.source_files]
        parts = []
        for index, (name, cols) in enumerate(zip(names, slices, strict=True), start=1):
            part = table if index == 1 else table.model_copy(deep=True, update={
                "name": name, "foreign_keys": [], "excluded_columns": [], "blocking_issues": [],
                "staging_table": f"staging.{name}", "reject_table": f"rejects.{name}"})
            part.columns = [c.model_copy(deep=True) for c in key] + list(cols) if index > 1 else key + list(cols)
            own = {c.source_column for c in part.columns} | (set(excluded) if index == 1 else set())
            part.source_columns = [c for c in every if c in own]
            for file, columns in zip(part.source_files, file_columns, strict=True):
                file.columns = [c for c in columns if c in own]
            part.split_of, part.part = (None, 1) if index == 1 else (table.name, index)
            part.constraints = [c for c in part.constraints if c.startswith("PRIMARY KEY")] if index > 1 else part.constraints
            parts.append(part)
        table.parts = names
        out.extend(parts[1:])
        manifest.decisions.append(Decision(
            table=table.name, what=f"{len(table.source_columns):,} columns split into {len(names)} tables "
            f"({', '.join(names)}) of at most {limit:,} columns (DIA_WIDE_SPLIT), each with the key "
            f"({', '.join(table.primary_key)}); they join 1:1 on it. Unparseable values -> NULL, row kept, raw "
            f"value in the part's rejects ({nulled:,} typed columns), so every part keeps every row"))
    manifest.tables = out


def _plan_file_groups(interp: Interpretation, ov: OverridesFile, manifest: Manifest, names: dict[str, str]) -> None:
    """Files that may be one table: the union the interpreter made, or the question it asked,
    closed by the expert's `files` decision. A question left open (or a decision the interpretation
    was made without) is an open question: no build is accepted while there is one."""
    undone = set(undone_decisions(interp.file_groups, ov.files))
    for group in interp.file_groups:
        decided = ov.files.get(group.name)
        tables = [names[s] for s in group.sources if s in names]
        files = ", ".join(group.files)
        if group.name in undone:
            message = (f"{files}: the overrides decide files: {decided} for {group.name!r}, but the interpretation "
                       f"was made without that decision ({group.status}); interpret again (`dia build` does)")
        elif group.status == "question" and decided is None and len(tables) > 1:
            message = (f"{files} may be one table ({group.reason}); set files: union or files: separate for "
                       f"{group.name!r} in the overrides")
        else:
            if group.status == "united":
                manifest.decisions.append(Decision(
                    table=names.get(group.name, group.name), origin="override" if decided else "interpreter",
                    what=f"one table from {len(group.files)} files ({files}): their union, each record keeping "
                    f"its file in _source_file ({group.reason})"))
            elif decided == "separate":
                manifest.decisions.append(Decision(
                    table=group.name, origin="override", what=f"{files} loaded as separate tables "
                    f"{', '.join(tables)} (files: separate)"))
            continue
        manifest.questions.append(OpenQuestion(name=group.name, files=list(group.files), tables=tables, message=message))


def _previous_table(previous: Manifest | None, source: str) -> ManifestTable | None:
    if previous is None:
        return None
    return next((t for t in previous.tables if t.sources == [source]), None)


def _plan_table(source: Source, tov: TableOverride, ov: OverridesFile, manifest: Manifest,
                prev: ManifestTable | None = None) -> ManifestTable:
    loc = ("tables", source.name)
    name = source.name
    if tov.rename:
        name = snake_case(tov.rename)
        manifest.decisions.append(Decision(table=name, what=f"renamed from {source.name}", origin="override"))
    known_cols = {c.name for c in source.columns}
    col_ovs = {}
    for cname, cov in (tov.columns or {}).items():
        if cname in known_cols:
            col_ovs[cname] = cov or ColumnOverride()
        else:
            stale(manifest, ov, f"table {source.name!r} has no column {cname!r} (columns: "
                  f"{', '.join(sorted(known_cols))}); the override is ignored", *loc, "columns", cname)
    ref = source.path + (f"#{source.parse.sheet}" if source.parse.sheet else "") + (
        source.parse.json_path or "")
    files = sorted((ManifestFile(path=f.path, ref=f.path + (f"#{f.sheet}" if f.sheet else ""), format=f.format,
                                 content_hash=f.content_hash, rows=f.row_count, bad_rows=f.bad_rows,
                                 records=f.records, columns=list(f.columns)) for f in source.files),
                   key=lambda f: f.ref)  # the loader orders a union's records by _source_file, then row
    table = ManifestTable(
        name=name, sources=[source.name], source_path=source.path, source_ref=files[0].ref if files else ref,
        source_format=source.format, source_files=files,
        content_hash=source.content_hash, source_rows=source.row_count, bad_rows=source.parse.bad_rows,
        source_records=source.parse.records, source_columns=[c.name for c in source.columns], staging_table=f"staging.{name}", reject_table=f"rejects.{name}",
        dedup=tov.dedup or ("exact_rows" if source.duplicate_rows else "none"),
    )
    if source.duplicate_rows and table.dedup == "exact_rows":
        manifest.decisions.append(Decision(table=name, what=f"drop {source.duplicate_rows} exact duplicate rows"))
    if tov.max_reject_fraction is not None:
        table.max_reject_fraction = tov.max_reject_fraction
    for col in source.columns:
        cov = col_ovs.get(col.name, ColumnOverride())
        if cov.exclude:
            table.excluded_columns.append(ExcludedColumn(source_column=col.name, reason=cov.exclude))
            manifest.decisions.append(Decision(table=name, column=col.name, what=f"excluded: {cov.exclude}", origin="override"))
            continue
        table.columns.append(_plan_column(source, col, cov, ov, (*loc, "columns", col.name), manifest, name))
    refined = [c.name for c in table.columns]
    if len(set(refined)) < len(refined):
        raise ov.error(f"table {source.name!r}: two columns would share a name", *loc, "columns")
    if "primary_key" in tov.model_fields_set:
        pk = tov.primary_key or []
        for cname in pk:
            if cname not in known_cols:
                raise ov.error(f"the expert's primary key {pk} depends on column {cname!r}, which is not a "
                               f"column of {source.name!r} (any more): edit the primary_key decision", *loc, "primary_key")
        table.primary_key = pk
        table.primary_key_origin = "override" if pk else "none"
        manifest.decisions.append(Decision(table=name, what=f"primary key set to {pk}" if pk else "primary key dropped", origin="override"))
    elif (kept := _kept_key(source, prev, manifest, name)) is not None:
        table.primary_key = kept
        table.primary_key_origin = "previous"
    elif source.primary_key and source.primary_key.llm_verdict != "rejected" and (
        source.primary_key.confidence >= HIGH or source.row_count == 0
    ):
        # An empty table cannot contradict a key named by its columns, so it is declared too.
        table.primary_key = list(source.primary_key.columns)
        table.primary_key_origin = "interpreter"
    elif source.primary_key:
        manifest.decisions.append(Decision(
            table=name, what=f"primary key {source.primary_key.columns} not declared: confidence "
            f"{source.primary_key.confidence:.2f} < {HIGH} (set it in the overrides)"))
    by_source = {c.source_column: c for c in table.columns}
    for cname in table.primary_key:
        if cname not in by_source:
            raise ov.error(f"primary key column {cname!r} of {source.name!r} is excluded", *loc, "primary_key")
    table.primary_key = [by_source[c].name for c in table.primary_key]
    for cname in table.primary_key:
        table.column(cname).nullable = False
    if table.primary_key:
        table.constraints.append(f"PRIMARY KEY ({', '.join(table.primary_key)})")
    return table


def _kept_key(source: Source, prev: ManifestTable | None, manifest: Manifest, table: str) -> list[str] | None:
    """The previous build's primary key (as source columns) when the interpreter now proposes
    another one or none: a key is a contract, and data that breaks it fails key_validity.
    A key whose columns are gone changes, recorded as a drift decision."""
    if prev is None or not prev.primary_key or prev.primary_key_origin not in ("interpreter", "previous"):
        return None
    by_name = {c.name: c.source_column for c in prev.columns}
    cols = [by_name.get(c, c) for c in prev.primary_key]
    proposed = source.primary_key
    if proposed and list(proposed.columns) == cols and proposed.llm_verdict != "rejected" and (
            proposed.confidence >= HIGH or source.row_count == 0):
        return None  # the interpreter agrees: an ordinary interpreter key
    known = {c.name for c in source.columns}
    gone = [c for c in cols if c not in known]
    now = f"{list(proposed.columns)} ({proposed.confidence:.2f}: {proposed.reason})" if proposed else "no key"
    if gone:
        manifest.decisions.append(Decision(
            table=table, origin="drift",
            what=f"primary key {cols} of the previous build dropped: column(s) {gone} no longer exist; "
            f"the interpreter now proposes {now}"))
        return None
    manifest.decisions.append(Decision(
        table=table, origin="previous",
        what=f"primary key {cols} kept from the previous build; the interpreter now proposes {now}. "
        "Data that violates it fails key_validity; set primary_key in the overrides to change it"))
    return cols


def _plan_column(
    source: Source, col: Column, cov: ColumnOverride, ov: OverridesFile, loc: tuple, manifest: Manifest, table: str
) -> ManifestColumn:
    sql_type = col.inferred_type
    if cov.type:
        try:
            sql_type = check_type(cov.type)
        except ValueError as exc:
            raise ov.error(f"column {source.name}.{col.name}: {exc}", *loc, "type") from exc
        manifest.decisions.append(Decision(table=table, column=col.name, what=f"type {col.inferred_type} -> {sql_type}", origin="override"))
    fmt = col.value_format.model_copy(deep=True)
    if cov.trim is not None:
        fmt.trim = cov.trim
    if cov.null_tokens is not None:
        fmt.null_tokens = [t.lower() for t in cov.null_tokens]
    name = snake_case(cov.rename) if cov.rename else col.name
    mc = ManifestColumn(
        name=name, type=sql_type, source=source.name, source_column=col.name,
        original_name=col.original_name, renamed_from=col.name if name != col.name else None,
        semantic_type=col.semantic_type, value_format=fmt,
        category_map=dict(cov.categories or {}), blank_as_null=bool(cov.blank_as_null),
        on_error=cov.on_error or "reject_row",
    )
    if cov.on_error == "null_value":
        manifest.decisions.append(Decision(
            table=table, column=col.name, what="unparseable values -> NULL, row kept, raw value in rejects",
            origin="override"))
    if mc.renamed_from:
        manifest.decisions.append(Decision(table=table, column=col.name, what=f"renamed to {name}", origin="override"))
    if is_text_type(sql_type):
        if fmt.trim:
            mc.normalizations.append("trim surrounding whitespace")
        if fmt.null_tokens:
            mc.normalizations.append(f"null tokens {fmt.null_tokens} and blanks -> NULL")
        if mc.blank_as_null:
            mc.normalizations.append("blank strings -> NULL")
        if mc.category_map:
            mc.normalizations.append(f"category mapping of {len(mc.category_map)} spellings")
    else:
        mc.normalizations.append(f"parse text as {sql_type}; blanks and null tokens -> NULL")
        if fmt.decimal_separator != ".":
            mc.normalizations.append(f"decimal separator {fmt.decimal_separator!r}")
        if fmt.thousands_separator:
            mc.normalizations.append(f"thousands separator {fmt.thousands_separator!r} removed")
        if fmt.currency_symbols:
            mc.normalizations.append(f"currency symbols {fmt.currency_symbols} removed")
        if fmt.percent:
            mc.normalizations.append("percent sign removed")
        if len(fmt.date_formats) > 1:
            mc.normalizations.append(f"dates unified from formats {fmt.date_formats}")
    for step in mc.normalizations:
        manifest.decisions.append(Decision(
            table=table, column=name, what=step,
            origin="override" if (cov.categories or cov.trim is not None or cov.null_tokens or cov.blank_as_null or cov.type) else "interpreter",
        ))
    return mc


def _plan_foreign_keys(
    interp: Interpretation, ov: OverridesFile, manifest: Manifest,
    names: dict[str, str], col_names: dict[tuple[str, str], str], previous: Manifest | None = None,
) -> None:
    by_table = {t.sources[0]: t for t in manifest.tables}
    planned: dict[str, list[tuple[ManifestForeignKey, str, list[str], str]]] = {}
    for fk in interp.foreign_keys:
        src, dst = fk.from_.source, fk.to.source
        if src not in by_table or dst not in by_table or fk.llm_verdict == "rejected":
            continue
        if fk.confidence < HIGH:
            continue
        planned.setdefault(src, []).append((
            ManifestForeignKey(columns=list(fk.from_.columns), ref_table=dst, ref_columns=list(fk.to.columns),
                               confidence=fk.confidence, expected_orphans=fk.orphan_count,
                               blocking=fk.strength == "strong"),
            src, list(fk.from_.columns), dst,
        ))
    apart = {frozenset((a, b)) for g in interp.file_groups for a in g.sources for b in g.sources if a != b}
    _keep_previous_foreign_keys(previous, planned, by_table, col_names, manifest, apart)
    for source, tov in ov.tables.items():
        if source not in by_table:
            continue
        for i, fov in enumerate(tov.foreign_keys or []):
            _apply_fk_override(ov, ("tables", source, "foreign_keys", i), source, fov, planned, by_table, manifest)
    for source, fks in planned.items():
        table = by_table[source]
        for fk, _src, _cols, dst in fks:
            try:
                fk.columns = [col_names[(source, c)] for c in fk.columns]
                fk.ref_columns = [col_names[(dst, c)] for c in fk.ref_columns]
            except KeyError:
                continue  # a column of the key was excluded
            fk.ref_table = names[dst]
            _type_empty_references(interp, manifest, table, source, fk, by_table[dst])
            if fk.expected_orphans and not fk.allow_orphans:
                outcome = ("key_validity will fail" if fk.blocking else
                           "weakly inferred, so reported for review without failing acceptance")
                manifest.decisions.append(Decision(
                    table=table.name, what=f"foreign key {fk.columns} -> {fk.ref_table} has "
                    f"{fk.expected_orphans} orphan rows and no allowance: {outcome}"))
            table.foreign_keys.append(fk)


def _type_empty_references(
    interp: Interpretation, manifest: Manifest, table: ManifestTable, source: str,
    fk: ManifestForeignKey, parent: ManifestTable,
) -> None:
    """A reference column with no values at all has no type of its own: it takes the type of
    the key it references (`original_language_id`, NULL in every row)."""
    src = next((s for s in interp.sources if s.name == source), None)
    columns = {c.name: c for c in table.columns}
    parent_types = {c.name: c.type for c in parent.columns}
    for col_name, ref_name in zip(fk.columns, fk.ref_columns, strict=True):
        col, ref_type = columns.get(col_name), parent_types.get(ref_name)
        if col is None or ref_type is None or col.type == ref_type or src is None:
            continue
        raw = next((c for c in src.columns if c.name == col.source_column), None)
        if raw is not None and raw.distinct_count == 0 and raw.null_fraction >= 1.0:
            manifest.decisions.append(Decision(
                table=table.name, column=col.name,
                what=f"type {col.type} -> {ref_type}: NULL in every row, typed like {parent.name}.{ref_name}"))
            col.type = ref_type


def _keep_previous_foreign_keys(
    previous: Manifest | None, planned: dict[str, list], by_table: dict[str, ManifestTable],
    col_names: dict[tuple[str, str], str], manifest: Manifest, apart: set[frozenset[str]],
) -> None:
    """A foreign key of the previous build that the interpreter no longer proposes stays while
    its columns exist on both sides: orphans then fail key_validity instead of the key vanishing.
    A key between files of one table (`apart`) goes: it was never a key."""
    if previous is None:
        return
    prev_tables = {t.name: t for t in previous.tables}
    for prev in previous.tables:
        src = prev.sources[0]
        if src not in by_table:
            continue
        to_source = {c.name: c.source_column for c in prev.columns}
        for fk in prev.foreign_keys:
            parent = prev_tables.get(fk.ref_table)
            if fk.origin == "override" or parent is None or parent.sources[0] not in by_table:
                continue
            dst = parent.sources[0]
            cols = [to_source.get(c, c) for c in fk.columns]
            parent_source = {c.name: c.source_column for c in parent.columns}
            ref_cols = [parent_source.get(c, c) for c in fk.ref_columns]
            if any(e[2] == cols and e[3] == dst for e in planned.get(src, [])):
                continue
            if frozenset((src, dst)) in apart:
                manifest.decisions.append(Decision(
                    table=by_table[src].name, origin="drift",
                    what=f"foreign key {cols} -> {dst} of the previous build dropped: {src} and {dst} are files "
                    "that may be one table"))
                continue
            missing = [c for c in cols if (src, c) not in col_names] + [c for c in ref_cols if (dst, c) not in col_names]
            if missing:
                manifest.decisions.append(Decision(
                    table=by_table[src].name, origin="drift",
                    what=f"foreign key {cols} -> {dst} of the previous build dropped: column(s) {missing} no longer exist"))
                continue
            planned.setdefault(src, []).append((
                ManifestForeignKey(columns=cols, ref_table=dst, ref_columns=ref_cols, confidence=fk.confidence,
                                   origin="previous", allow_orphans=fk.allow_orphans, orphan_reason=fk.orphan_reason,
                                   blocking=fk.blocking), src, cols, dst))
            manifest.decisions.append(Decision(
                table=by_table[src].name, origin="previous",
                what=f"foreign key {cols} -> {dst} kept from the previous build although the interpreter no "
                "longer proposes it; orphans fail key_validity (drop it in the overrides to change it)"))


def _apply_fk_override(
    ov: OverridesFile, loc: tuple, source: str, fov: FkOverride,
    planned: dict[str, list], by_table: dict[str, ManifestTable], manifest: Manifest,
) -> None:
    table = by_table[source]
    known = {c.source_column for c in table.columns}
    for c in fov.columns:
        if c not in known:
            if fov.references is None:  # nothing to add: a drop or an allowance for a key that is gone
                stale(manifest, ov, f"foreign key column {c!r} is not a column of {source!r}; the override "
                      "is ignored", *loc, "columns")
                return
            raise ov.error(f"the expert's foreign key {fov.columns} -> {fov.references.table} depends on column "
                           f"{c!r}, which is not a column of {source!r} (any more)", *loc, "columns")
    existing = [
        entry for entry in planned.get(source, [])
        if entry[2] == fov.columns and (fov.references is None or entry[3] == fov.references.table)
    ]
    if fov.drop:
        if not existing:
            stale(manifest, ov, f"no foreign key {fov.columns} on {source!r} to drop; the override is ignored", *loc)
            return
        planned[source] = [e for e in planned[source] if e not in existing]
        manifest.decisions.append(Decision(table=table.name, what=f"foreign key {fov.columns} dropped", origin="override"))
        return
    if not existing:
        if fov.references is None:
            raise ov.error(f"no foreign key {fov.columns} on {source!r}; give `references` to add one", *loc)
        ref = fov.references
        if ref.table not in by_table:
            raise ov.error(f"the expert's foreign key {fov.columns} on {source!r} references table {ref.table!r}, "
                           "which the data does not have (any more)", *loc, "references", "table")
        ref_known = {c.source_column for c in by_table[ref.table].columns}
        for c in ref.columns:
            if c not in ref_known:
                raise ov.error(f"table {ref.table!r} has no column {c!r}", *loc, "references", "columns")
        if len(ref.columns) != len(fov.columns):
            raise ov.error("foreign key and referenced columns differ in number", *loc, "references")
        entry = (ManifestForeignKey(columns=list(fov.columns), ref_table=ref.table, ref_columns=list(ref.columns),
                                    origin="override"), source, list(fov.columns), ref.table)
        planned.setdefault(source, []).append(entry)
        existing = [entry]
        manifest.decisions.append(Decision(table=table.name, what=f"foreign key {fov.columns} -> {ref.table} added", origin="override"))
    for fk, *_ in existing:
        fk.blocking = True  # named by the expert: a declared key
    if fov.allow_orphans:
        for fk, *_ in existing:
            fk.allow_orphans = True
            fk.orphan_reason = fov.allow_orphans
        manifest.decisions.append(Decision(table=table.name, what=f"orphans of {fov.columns} allowed: {fov.allow_orphans}", origin="override"))


def _order_and_enforce(manifest: Manifest) -> None:
    """Order tables parents-first and pick the foreign keys the database can enforce.

    A key is declared when it references the parent's whole primary key, expects no
    orphans, and does not close a cycle (DuckDB cannot add a key after creation).
    """
    tables = {t.name: t for t in manifest.tables}
    for table in manifest.tables:
        table.primary_key_enforced = bool(table.primary_key)
        for fk in table.foreign_keys:
            parent = tables[fk.ref_table]
            if fk.ref_table == table.name:
                fk.not_enforced_reason = "self-reference: rows are checked in insert order"
            elif fk.ref_columns != parent.primary_key:
                fk.not_enforced_reason = "does not reference the parent's primary key"
            elif _types(table, fk.columns) != _types(parent, fk.ref_columns):
                fk.not_enforced_reason = "column types differ from the referenced key's"
            elif fk.expected_orphans or fk.allow_orphans:
                fk.not_enforced_reason = f"{fk.expected_orphans} known orphan rows"
            else:
                fk.enforced = True
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(name: str) -> None:
        state[name] = 1
        for fk in tables[name].foreign_keys:
            if not fk.enforced:
                continue
            if state.get(fk.ref_table) == 1:
                fk.enforced = False
                fk.not_enforced_reason = "closes a cycle of foreign keys"
            elif fk.ref_table not in state:
                visit(fk.ref_table)
        state[name] = 2
        order.append(name)

    for name in sorted(tables):
        if name not in state:
            visit(name)
    manifest.tables = [tables[n] for n in order]
    for table in manifest.tables:
        table.constraints = [c for c in table.constraints if not c.startswith("FOREIGN KEY")]
        for fk in table.foreign_keys:
            if fk.enforced:
                table.constraints.append(
                    f"FOREIGN KEY ({', '.join(fk.columns)}) REFERENCES {fk.ref_table} ({', '.join(fk.ref_columns)})")


def _types(table: ManifestTable, columns: list[str]) -> list[str | None]:
    by_name = {c.name: c.type for c in table.columns}
    return [by_name.get(c) for c in columns]


def _blocking_issues(interp: Interpretation, source: Source, table: ManifestTable) -> list[str]:
    """The interpreter's blocking issues about this source's records; one about a column the
    expert excluded no longer applies."""
    excluded = {e.source_column for e in table.excluded_columns}
    return [i.message for i in interp.quality_issues
            if i.blocking and i.source == source.name and i.column not in excluded]


def _reader_stem(interp: Interpretation, source: Source) -> str:
    """The name `read_source` must be given so it names this source as the interpreter did."""
    if source.parse.sheet:
        suffix = "_" + snake_case(source.parse.sheet)
        return source.name[: -len(suffix)] if source.name.endswith(suffix) else source.name
    for other in interp.sources:
        if other.path == source.path and other.parent is None and not other.parse.sheet:
            return other.name
    return source.name
