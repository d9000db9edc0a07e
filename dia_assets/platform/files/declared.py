"""A schema file beside the data: `.sql` with CREATE TABLE and COPY / BULK INSERT / LOAD DATA.

It names the columns of headerless files, gives the declared terminators, and its declared keys
win over inferred ones (`source: declared`). DDL is parsed with sqlglot in whichever dialect
reads it; load statements, which sqlglot reads only in part, with regular expressions.

A schema file is input like any other, and may be hostile: it follows the data files' rules
(a regular file inside the folder, `discover.unsafe_reason`), and its parse is bounded:
`MAX_SCHEMA_TEXT` bytes of statements, `MAX_STATEMENT` bytes per statement for sqlglot (longer
ones are read by the regular expressions only), parentheses nested `MAX_DEPTH` deep at most,
`MAX_SECONDS` in all. What goes past a limit, or fails, is a problem reported for the file
(`schema_file_problems`); the data files are read all the same.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import sqlglot
from sqlglot import exp

from dia_assets.contracts.interpretation import DeclaredColumn, DeclaredForeignKey, DeclaredTable
from dia_assets.platform.files.compressed import data_stem, inner_name
from dia_assets.platform.files.discover import unsafe_reason
from dia_assets.platform.files.encodings import codec_name
from dia_assets.platform.naming import snake_case

DIALECTS = [None, "tsql", "mysql", "postgres"]
_STRING = r"'((?:[^']|'')*)'"
_NAME = r"((?:[\[\]`\"\w.]|\s(?=\.))+)"
BULK = re.compile(rf"BULK\s+INSERT\s+{_NAME}\s+FROM\s+{_STRING}(?:\s+WITH\s*\((.*?)\))?", re.I | re.S)
_END = r"(?=;\s*(?:\n|\Z)|\Z)"  # a statement ends at `;` before a line end (`';'` is a value)
LOAD = re.compile(
    rf"LOAD\s+DATA\s+(?:LOW_PRIORITY\s+|CONCURRENT\s+)?(?:LOCAL\s+)?INFILE\s+{_STRING}"
    rf"(?:\s+(?:REPLACE|IGNORE))?\s+INTO\s+TABLE\s+{_NAME}(.*?){_END}", re.I | re.S,
)
COPY = re.compile(rf"\bCOPY\s+{_NAME}\s*(\([^)]*\))?\s+FROM\s+{_STRING}(.*?){_END}", re.I | re.S)
CREATE = re.compile(rf"\s*CREATE\s+(?:(?:GLOBAL\s+|LOCAL\s+)?TEMP(?:ORARY)?\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?{_NAME}\s*\(",
                    re.I)
_COLS = r"\(([^()]*)\)"
PK = re.compile(rf"PRIMARY\s+KEY\s*(?:CLUSTERED|NONCLUSTERED)?\s*{_COLS}", re.I)
FK = re.compile(rf"FOREIGN\s+KEY\s*{_COLS}\s*REFERENCES\s+{_NAME}\s*(?:{_COLS})?", re.I)
STDIN_COPY = re.compile(r"COPY\b.*\bFROM\s+stdin\s*;", re.I)
MAX_SCHEMA_TEXT = 8 << 20  # bytes of statements read (pg_dump's inline rows are skipped, not counted)
MAX_STATEMENT = 256 << 10  # a longer statement is read by the regular expressions only
MAX_DEPTH = 100  # parentheses nested deeper than this: the statement is not read
MAX_SECONDS = 10.0  # for one schema file
ESCAPES = {"\\n": "\n", "\\r": "\r", "\\t": "\t", "\\0": "\x00", "\\\\": "\\"}


def unescape(text: str) -> str:
    """`\\n` -> newline, `0x0a` -> newline, `''` -> `'`."""
    text = text.replace("''", "'")
    if re.fullmatch(r"0x([0-9a-fA-F]{2})+", text):
        return bytes.fromhex(text[2:]).decode("latin-1")
    return re.sub(r"\\[nrt0\\]", lambda m: ESCAPES[m.group(0)], text)


def bare_name(name: str) -> str:
    """`[Sales].[Customer]` -> `Customer`."""
    return re.split(r"\.", name.strip())[-1].strip("[]`\" ")


def _full(name: str) -> str:
    return ".".join(part.strip("[]`\" ") for part in name.strip().split("."))


def _statements(text: str) -> list[str]:
    text = re.sub(r"(?im)^\s*GO\s*$", ";", text)
    return [s for s in re.split(r";\s*(?:\n|$)", text) if s.strip()]


def _dialects(statement: str) -> list[str | None]:
    """Try the dialect the quoting suggests first: `[x]` T-SQL, backticks MySQL."""
    first = "tsql" if "[" in statement else "mysql" if "`" in statement else "postgres"
    return [first, *(d for d in DIALECTS if d != first)]


def _parse_ddl(statement: str) -> exp.Expression | None:
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)  # "falling back to parsing as a Command" is expected here
    try:
        for dialect in _dialects(statement):
            try:
                tree = sqlglot.parse_one(statement, read=dialect)
            except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
                continue
            if isinstance(tree, exp.Create | exp.Alter):
                return tree
    finally:
        logger.setLevel(level)
    return None


def _table_name(table: exp.Table) -> str:
    return ".".join(p.name for p in (table.args.get("db"), table.this) if p is not None and p.name)


def _foreign_key(fk: exp.ForeignKey) -> DeclaredForeignKey | None:
    ref = fk.args.get("reference")
    target = ref.this if ref is not None else None
    if target is None:
        return None
    table = target.this if isinstance(target, exp.Schema) else target
    ref_cols = [e.name for e in target.expressions] if isinstance(target, exp.Schema) else []
    return DeclaredForeignKey(
        columns=[e.name for e in fk.expressions], ref_source=_table_name(table), ref_columns=ref_cols
    )


def _create(tree: exp.Create, schema_file: str) -> DeclaredTable | None:
    schema = tree.this
    if tree.args.get("kind", "").upper() != "TABLE" or not isinstance(schema, exp.Schema):
        return None
    out = DeclaredTable(table=_table_name(schema.this), schema_file=schema_file)
    for item in schema.expressions:
        if isinstance(item, exp.ColumnDef):
            kind = item.args.get("kind")
            computed = any(isinstance(c.kind, exp.ComputedColumnConstraint) for c in item.args.get("constraints") or [])
            out.columns.append(DeclaredColumn(name=item.name, type=kind.sql() if kind else None, computed=computed))
            for constraint in item.args.get("constraints") or []:
                if isinstance(constraint.kind, exp.PrimaryKeyColumnConstraint):
                    out.primary_key = [item.name]
                if isinstance(constraint.kind, exp.Reference):
                    fk = _foreign_key(exp.ForeignKey(expressions=[item.this], reference=constraint.kind))
                    if fk:
                        out.foreign_keys.append(fk)
        _constraint(item, out)
    return out


def _constraint(item: exp.Expression, out: DeclaredTable) -> None:
    """Table-level PRIMARY KEY / FOREIGN KEY, bare or inside CONSTRAINT name ..."""
    parts = item.expressions if isinstance(item, exp.Constraint) else [item]
    if any(isinstance(p, exp.PrimaryKeyColumnConstraint) for p in parts):
        # T-SQL: CONSTRAINT pk PRIMARY KEY CLUSTERED ([a] ASC, [b] ASC)
        columns = [c.name for p in parts for c in p.find_all(exp.Column)]
        if columns:
            out.primary_key = columns
    for part in parts:
        if isinstance(part, exp.PrimaryKey):
            out.primary_key = [_column_name(e) for e in part.expressions]
        elif isinstance(part, exp.ForeignKey) and (fk := _foreign_key(part)):
            out.foreign_keys.append(fk)


def _column_name(node: exp.Expression) -> str:
    """`[CustomerID] ASC` (an Ordered node) -> `CustomerID`."""
    return node.this.name if isinstance(node, exp.Ordered) else node.name


def _alter(tree: exp.Alter, tables: dict[str, DeclaredTable]) -> None:
    target = tables.get(_table_name(tree.this).lower())
    if target is None:
        return
    for action in tree.args.get("actions") or []:
        for item in action.expressions if isinstance(action, exp.AddConstraint) else [action]:
            _constraint(item, target)


def _body(statement: str, start: int) -> str:
    """The text inside the parenthesis opened just before `start`, quotes respected."""
    depth, quote = 1, ""
    for i in range(start, len(statement)):
        c = statement[i]
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"`":
            quote = c
        elif c == "[":
            quote = "]"
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return statement[start:i]
    return statement[start:]


def _top_level(body: str) -> list[str]:
    """Split at commas outside parentheses and brackets."""
    parts, depth, current = [], 0, ""
    for c in body:
        depth += c in "([" and 1 or 0
        depth -= c in ")]" and 1 or 0
        if c == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += c
    return [p.strip() for p in [*parts, current] if p.strip()]


def _names(text: str) -> list[str]:
    return [n.strip().strip("[]`\"") for n in text.split(",") if n.strip()]


def _create_by_regex(statement: str, schema_file: str) -> DeclaredTable | None:
    """CREATE TABLE that sqlglot cannot read (T-SQL ROWGUIDCOL, ON [PRIMARY], ...): columns and keys."""
    match = CREATE.match(statement)
    if not match:
        return None
    out = DeclaredTable(table=_full(match.group(1)), schema_file=schema_file)
    for item in _top_level(_body(statement, match.end())):
        head = re.match(r"(\[[^\]]+\]|`[^`]+`|\"[^\"]+\"|\w+)\s*(.*)", item, re.S)
        if not head:
            continue
        if head.group(1).upper() in ("CONSTRAINT", "PRIMARY", "FOREIGN", "UNIQUE", "CHECK", "INDEX", "KEY"):
            _constraints_by_regex(item, out)
            continue
        name, rest = head.group(1).strip("[]`\""), head.group(2)
        computed = bool(re.match(r"AS\b", rest, re.I))
        kind = None if computed else (re.match(r"(\[[^\]]+\]|\w+)(\s*\([^)]*\))?", rest) or [None])[0]
        out.columns.append(DeclaredColumn(name=name, type=kind.replace("[", "").replace("]", "").upper()
                                          if kind else None, computed=computed))
        if re.search(r"PRIMARY\s+KEY", rest, re.I):
            out.primary_key = [name]
        ref = re.search(rf"REFERENCES\s+{_NAME}\s*(?:{_COLS})?", rest, re.I)
        if ref:
            out.foreign_keys.append(DeclaredForeignKey(
                columns=[name], ref_source=_full(ref.group(1)), ref_columns=_names(ref.group(2) or "")))
    return out if out.columns else None


def _constraints_by_regex(text: str, out: DeclaredTable) -> None:
    if (pk := PK.search(text)) and not FK.search(text):
        out.primary_key = [re.sub(r"\s+(ASC|DESC)$", "", n, flags=re.I) for n in _names(pk.group(1))]
    for fk in FK.finditer(text):
        out.foreign_keys.append(DeclaredForeignKey(
            columns=_names(fk.group(1)), ref_source=_full(fk.group(2)), ref_columns=_names(fk.group(3) or "")))


def _alter_by_regex(statement: str, tables: dict[str, DeclaredTable]) -> None:
    match = re.match(rf"\s*ALTER\s+TABLE\s+(?:ONLY\s+)?{_NAME}", statement, re.I)
    target = tables.get(_full(match.group(1)).lower()) if match else None
    if target is not None:
        _constraints_by_regex(statement[match.end():], target)


def _option(options: str, *names: str) -> str | None:
    for name in names:
        match = re.search(rf"{name}\s*(?:=|\s)\s*(?:AS\s+)?{_STRING}", options, re.I)
        if match:
            return unescape(match.group(1))
    return None


def _loads(text: str, tables: dict[str, DeclaredTable], schema_file: str) -> None:
    def entry(name: str) -> DeclaredTable:
        key = _full(name).lower()
        if key not in tables:
            tables[key] = DeclaredTable(table=_full(name), schema_file=schema_file)
        return tables[key]

    for m in BULK.finditer(text):
        table, options = entry(m.group(1)), m.group(3) or ""
        table.data_file = m.group(2)
        table.field_terminator = _option(options, "FIELDTERMINATOR")
        table.record_terminator = _option(options, "ROWTERMINATOR")
        first_row = re.search(r"FIRSTROW\s*=\s*(\d+)", options, re.I)
        table.header = bool(first_row and int(first_row.group(1)) > 1)
        widechar = re.search(r"DATAFILETYPE\s*=\s*'widechar'", options, re.I)
        table.encoding = _encoding("utf-16" if widechar else _option(options, "CODEPAGE"))
    for m in LOAD.finditer(text):
        table, options = entry(m.group(2)), m.group(3)
        table.data_file = m.group(1)
        table.field_terminator = _option(options, r"FIELDS\s+TERMINATED\s+BY", r"COLUMNS\s+TERMINATED\s+BY")
        table.record_terminator = _option(options, r"LINES\s+TERMINATED\s+BY")
        table.header = bool(re.search(r"IGNORE\s+[1-9]\d*\s+(LINES|ROWS)", options, re.I))
        charset = re.search(r"CHARACTER\s+SET\s+'?(\w+)", options, re.I)
        table.encoding = _encoding(charset.group(1) if charset else None, mysql=True)
        _column_list(table, re.search(r"\(([^()]*)\)\s*$", options.strip()))
    for m in COPY.finditer(text):
        table, options = entry(m.group(1)), m.group(4)
        table.data_file = m.group(3)
        table.field_terminator = _option(options, "DELIMITER")
        if re.search(r"FORMAT\s*\(?\s*'?csv", options, re.I) and not table.field_terminator:
            table.field_terminator = ","
        elif not table.field_terminator:
            table.field_terminator = "\t"  # PostgreSQL's text format
        table.header = bool(re.search(r"\bHEADER\b(?!\s+(false|off|0))", options, re.I))
        table.encoding = _encoding(_option(options, "ENCODING"))
        _column_list(table, re.match(r"\(([^()]*)\)", m.group(2) or ""))


# MySQL's names that mean something else elsewhere: its latin1 is cp1252.
MYSQL_CHARSETS = {"latin1": "cp1252", "latin5": "iso-8859-9", "latin7": "iso-8859-13", "greek": "iso-8859-7",
                  "ujis": "euc-jp", "euckr": "euc-kr", "utf8mb4": "utf-8", "utf8mb3": "utf-8", "binary": None}


def _encoding(name: str | None, mysql: bool = False) -> str | None:
    """A declared code page as a Python codec name; None when absent or unknown (then detected)."""
    if not name:
        return None
    if mysql and name.lower() in MYSQL_CHARSETS:
        return MYSQL_CHARSETS[name.lower()]
    try:
        return codec_name(name)
    except LookupError:
        return None


def _column_list(table: DeclaredTable, match: re.Match[str] | None) -> None:
    """A load statement's own column list names the file's columns, in file order."""
    if not match:
        return
    names = [c.strip().strip("[]`\"") for c in match.group(1).split(",") if c.strip()]
    types = {c.name.lower(): c.type for c in table.columns}
    table.columns = [DeclaredColumn(name=n, type=types.get(n.lower())) for n in names]


def _schema_text(path: Path) -> tuple[str, bool]:
    """The statements of a schema file, streamed, and whether they went past `MAX_SCHEMA_TEXT`:
    pg_dump's inline rows (COPY ... FROM stdin up to `\\.`) are skipped, so a dump with data costs
    one pass and little memory."""
    out, size, in_data = [], 0, False
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if in_data:
                in_data = line.rstrip("\r\n") != "\\."
                continue
            if STDIN_COPY.match(line.lstrip()):
                in_data = True
                continue
            out.append(line)
            size += len(line)
            if size > MAX_SCHEMA_TEXT:
                return "".join(out), True
    return "".join(out), False


def _depth(statement: str) -> int:
    deepest = depth = 0
    for ch in statement:
        if ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth -= 1
    return deepest


@dataclass
class SchemaFile:
    """What one schema file declares, and what could not be read of it."""

    tables: dict[str, DeclaredTable] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


class _Budget:
    def __init__(self, schema: SchemaFile) -> None:
        self.schema, self.deadline, self.over = schema, time.monotonic() + MAX_SECONDS, False

    def spent(self) -> bool:
        if not self.over and time.monotonic() > self.deadline:
            self.over = True
            self.schema.problems.append(f"reading took over {MAX_SECONDS:.0f} s; the statements after that point "
                                        "were not read")
        return self.over

    def readable(self, statement: str) -> bool:
        if _depth(statement) > MAX_DEPTH:
            self.schema.problems.append(f"a statement nests parentheses over {MAX_DEPTH} deep and was not read "
                                        f"({statement.strip()[:60]!r}...)")
            return False
        return True


def parse_schema_file(path: Path) -> dict[str, DeclaredTable]:
    """Declared tables by lower-cased full name (`sales.customer`)."""
    return read_schema_file(path).tables


def read_schema_file(path: Path) -> SchemaFile:
    """Declared tables, and the problems met, within the limits (module docstring)."""
    schema = SchemaFile()
    raw, cut = _schema_text(path)
    if cut:
        schema.problems.append(f"over {MAX_SCHEMA_TEXT >> 20} MB of statements; only the first "
                               f"{MAX_SCHEMA_TEXT >> 20} MB were read")
    text = re.sub(r"--[^\n]*", "", raw)
    budget = _Budget(schema)
    tables = schema.tables
    statements = _statements(text)
    for statement in statements:
        if not CREATE.match(statement) or budget.spent() or not budget.readable(statement):
            continue
        tree = _parse_ddl(statement) if len(statement) <= MAX_STATEMENT else None
        table = _create(tree, path.name) if isinstance(tree, exp.Create) else _create_by_regex(statement, path.name)
        if table:
            previous = tables.get(table.table.lower())
            tables[table.table.lower()] = table
            if previous:  # a load statement seen first
                table.data_file = previous.data_file
    for statement in statements:
        if not re.match(r"\s*ALTER\s+TABLE\b", statement, re.I) or not re.search(r"\bKEY\b", statement, re.I):
            continue  # only keys are read from ALTER TABLE (pg_dump's OWNER TO and the like are not)
        if budget.spent() or not budget.readable(statement):
            continue
        tree = _parse_ddl(statement) if len(statement) <= MAX_STATEMENT else None
        if isinstance(tree, exp.Alter):
            _alter(tree, tables)
        else:
            _alter_by_regex(statement, tables)
    if not budget.spent():
        _loads(text, tables, path.name)
    return schema


@lru_cache(maxsize=64)
def _cached(path: str, mtime: float, size: int) -> SchemaFile:
    try:
        return read_schema_file(Path(path))
    except Exception as exc:  # noqa: BLE001 - one bad schema file never stops the data files from being read
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        return SchemaFile(problems=[f"could not be read: {type(exc).__name__}: {first}"])


def schema_files(folder: Path) -> list[Path]:
    """The schema files of `folder` that follow the data files' rules: regular files inside it."""
    return sorted(p for p in folder.glob("*") if p.suffix.lower() == ".sql" and unsafe_reason(folder, p) is None)


def _read(path: Path) -> SchemaFile:
    stat = path.stat()
    return _cached(str(path), stat.st_mtime, stat.st_size)


def declared_tables(folder: Path) -> list[DeclaredTable]:
    """Every table the schema files in `folder` declare (shared, cached: copy before changing)."""
    return [t for path in schema_files(folder) for t in _read(path).tables.values()]


def schema_file_problems(root: Path) -> list[tuple[Path, str]]:
    """(schema file, problem) for every schema file under `root` that was not read whole."""
    folders = sorted({p.parent for p in root.rglob("*.sql")} | {root})
    return [(path, problem) for folder in folders for path in schema_files(folder) for problem in _read(path).problems]


def declared_for(data_file: Path) -> DeclaredTable | None:
    """The declaration of `data_file`: named by a load statement, else a table named like the file."""
    tables = declared_tables(data_file.parent)
    if not tables:
        return None
    names = {data_file.name.lower(), inner_name(data_file).lower()}  # `orders.csv` also names `orders.csv.gz`
    for table in tables:
        if table.data_file and re.split(r"[\\/)]", table.data_file)[-1].lower() in names:
            return table.model_copy(deep=True)
    stem = snake_case(data_stem(data_file))
    for table in tables:
        if snake_case(table.table) == stem or snake_case(bare_name(table.table)) == stem:
            return table.model_copy(deep=True)
    return None
