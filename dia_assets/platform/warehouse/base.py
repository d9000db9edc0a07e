"""What a warehouse is, in one place: a `Dialect` per engine with declared capabilities, one
REGISTRY, and one `Connection` protocol (design review 2026-12-02, §6.2).

Callers ask the dialect what the engine can do (`target_dialect(w).file_based`,
`.incremental_reload`, ...) instead of re-deciding "is this PostgreSQL?" from the target
text. Adding an engine is one module in this package that builds a `Dialect` and calls
`register()`, plus its gate allow-list (`platform/sql/allowlist/<name>.py`), its conformance
test and, when the Schema Creator builds it, its golden SQL (docs/development.md, "Warehouse
engines"; tests/platform/warehouse/test_registry.py checks that nothing is missing)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


class UnknownDialect(KeyError):
    """A dialect name no module of dia_assets/platform/warehouse registered."""

    def __str__(self) -> str:
        return f"unknown SQL dialect {self.args[0]!r} (known: {', '.join(sorted(REGISTRY))})"


class QueryTimeout(RuntimeError):
    pass


@dataclass
class QueryOutput:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False
    elapsed_s: float = 0.0

    @property
    def row_count(self) -> int:
        return len(self.rows)


@dataclass
class ColumnMeta:
    name: str
    type: str


@dataclass
class TableMeta:
    name: str
    columns: list[ColumnMeta] = field(default_factory=list)


class Connection(Protocol):
    """What the agents need from a warehouse. `dialect` is a registered dialect name (also
    its sqlglot name)."""

    dialect: str
    location: str

    def query(self, sql: str, max_rows: int = 200, timeout_s: float = 10.0) -> QueryOutput: ...

    def tables(self) -> list[TableMeta]: ...

    def scratch(self) -> Connection: ...

    def close(self) -> None: ...


# the agent's name for it until every caller says Connection
Database = Connection


@dataclass(frozen=True)
class Dialect:
    """One SQL engine, its differences declared as data (sqlglot's dialect classes, dbt's
    capability dict) rather than re-derived from its name at each call site."""

    name: str
    sqlglot: str
    # what a target for this engine looks like, and how to open one
    claims: Callable[[str], bool] = field(repr=False)
    opener: Callable[..., Connection] = field(repr=False)
    # the owner's connection (privileged, uncapped; the Schema Creator's validation reads and
    # loads, never the agents): a DB-API connection whose `execute(sql).fetchall()` reads
    owner: Callable[[str], Any] | None = field(default=None, repr=False)
    # how the query agent's prompt names the engine, and its SQL idioms (one line each)
    title: str = ""
    prompt_notes: str = ""
    # the file a file-based target names (a prefix such as `sqlite:///` removed)
    local_path: Callable[[str], Path] = field(default=lambda target: Path(target), repr=False)
    # the first bytes of such a file, as (offset, magic): what a file is, whatever its suffix
    file_header: tuple[int, bytes] | None = None
    # the connection can also admit reads of the engine's own catalog (scoring other systems'
    # SQL: `open(..., catalog_reads=True)`)
    catalog_reads: bool = False
    # what a report writes instead of a target holding credentials
    redacted_target: str = ""
    # the widest table the engine holds (None: no limit the Schema Creator must respect)
    max_columns: int | None = None
    # the warehouse is one local file: it must exist to be read, has a content hash, is built as
    # a copy and swapped in, and has leftovers to clean. False: a server (a URL).
    file_based: bool = True
    # the target text may hold credentials (redact it before writing it anywhere)
    credentials_in_target: bool = False
    # the Schema Creator loads it by copying a DuckDB build into it (schema_creator/postgres.py)
    loads_from_duckdb: bool = False
    # the Schema Creator builds this engine itself (else a build at that path writes DuckDB)
    schema_creator_builds: bool = True
    # only changed tables are reloaded (schema_creator/incremental.py)
    incremental_reload: bool = False
    # DDL inside a transaction is undone by its rollback (checked by the conformance suite)
    transactional_ddl: bool = False
    # TRY_CAST/CAST of text is lenient (a bad value becomes NULL instead of failing)
    lenient_cast: bool = True
    # has a strptime that returns NULL on a mismatch (try_strptime)
    has_strptime: bool = True
    default_schema: str = "main"
    asset_kinds: tuple[str, ...] = ()
    # the dbt adapter (`type:` of profiles.yml) that `dia dbt export` writes a project for (its
    # models are the Schema Creator's DuckDB SQL, rendered for the engine where it differs); None: no export
    dbt_adapter: str | None = None
    # where NULLs sort without NULLS FIRST/LAST, as (ascending, descending)
    nulls_first: tuple[bool, bool] = (False, False)
    # the statement that makes unqualified names resolve to these schemas, first one first
    # (a build not installed yet is read where it was built: platform/tables/target.py)
    search_path_sql: Callable[[list[str]], str] = field(
        default=lambda path: "SET search_path TO " + ", ".join('"' + s.replace('"', '""') + '"' for s in path),
        repr=False)
    # layer -> schema of the installed tables, where they are not the layers' own names (Spark's
    # versions); None: the names as written
    installed_schemas: Callable[[str], dict[str, str] | None] | None = field(default=None, repr=False)

    def open(self, target: str | Path, read_only: bool = True, **options: Any) -> Connection:
        return self.opener(target, read_only=read_only, **options)

    def open_owner(self, target: str | Path) -> Any:
        """The owner's read connection (see `owner`); only engines the Schema Creator builds."""
        if self.owner is None:
            raise ValueError(f"{self.name}: no owner connection (the Schema Creator does not build it)")
        return self.owner(str(target))

    @property
    def loads_natively(self) -> bool:
        """The Schema Creator's DuckDB load SQL runs here as written: staging, rejects and the
        typed parse are this engine's own (else they are DuckDB's, copied in)."""
        return self.schema_creator_builds and not self.loads_from_duckdb


REGISTRY: dict[str, Dialect] = {}
# the order targets are classified in: the last registered default-claims any file
_ORDER: list[str] = []


def register(dialect: Dialect, default: bool = False) -> Dialect:
    """Add an engine. `default`: it claims every target no other dialect claims (DuckDB).
    A name sqlglot does not know becomes a sqlglot dialect too (a subclass of `sqlglot`'s), so
    every caller may pass the registered name wherever sqlglot wants a dialect."""
    from sqlglot.dialects.dialect import Dialect as SqlglotDialect

    known = SqlglotDialect.get_or_raise(dialect.sqlglot)
    try:
        SqlglotDialect.get_or_raise(dialect.name)
    except ValueError:
        type(dialect.name, (type(known),), {})
    REGISTRY[dialect.name] = dialect
    if dialect.name in _ORDER:
        _ORDER.remove(dialect.name)
    if default:
        _ORDER.append(dialect.name)
    else:
        _ORDER.insert(0, dialect.name)
    return dialect


def dialect_for(name: str | Dialect) -> Dialect:
    """The registered dialect of that name; UnknownDialect for any other (never a fallback)."""
    if isinstance(name, Dialect):
        return name
    try:
        return REGISTRY[name]
    except KeyError:
        raise UnknownDialect(name) from None


def target_dialect(target: str | Path | None) -> Dialect:
    """The engine a warehouse target names: a PostgreSQL URL or conninfo, a SQLite file
    (`sqlite:///path`, `.sqlite`, `.sqlite3`, `.db`), else a DuckDB file."""
    text = str(target or "")
    for name in _ORDER:
        if REGISTRY[name].claims(text):
            return REGISTRY[name]
    raise UnknownDialect(text)


def sniff_file(path: Path, classified: Dialect | None = None) -> Dialect | None:
    """The file-based engine whose header the file starts with, or None. `classified` (the
    target's own engine) is kept when it declares no header or its header matches: the header
    corrects a suffix (a DuckDB file named `.db`), it does not override a declared engine."""
    try:
        with path.open("rb") as fh:
            head = fh.read(64)
    except OSError:
        return None

    def matches(dialect: Dialect) -> bool:
        offset, magic = dialect.file_header or (0, b"")
        return dialect.file_header is not None and head[offset:offset + len(magic)] == magic

    if classified is not None and (classified.file_header is None or matches(classified)):
        return classified
    return next((REGISTRY[name] for name in _ORDER if matches(REGISTRY[name])), None)


def connect(target: str | Path, read_only: bool = True, **options: Any) -> Connection:
    """Open a warehouse with its engine's least-privilege rules (read-only by default)."""
    return target_dialect(target).open(target, read_only=read_only, **options)


@contextmanager
def opened(target: str | Path) -> Iterator[Connection]:
    db = connect(target)
    try:
        yield db
    finally:
        db.close()


def fetch(cursor: Any, max_rows: int) -> tuple[list[str], list[tuple[Any, ...]], bool]:
    """Columns, at most `max_rows` rows, and whether more were there (the row cap)."""
    columns = [d[0] for d in (cursor.description or [])]
    if not columns:
        return [], [], False
    rows = [tuple(r) for r in cursor.fetchmany(max_rows + 1)]
    return columns, rows[:max_rows], len(rows) > max_rows


def group(rows: list[tuple[Any, ...]]) -> list[TableMeta]:
    tables: dict[str, TableMeta] = {}
    for table, column, dtype in rows:
        tables.setdefault(table, TableMeta(table)).columns.append(ColumnMeta(column, str(dtype)))
    return list(tables.values())


def build_dialect(target: str | Path | None) -> Dialect:
    """The engine the Schema Creator writes at a target: the target's own when it builds that
    engine, else DuckDB (its one generator writes DuckDB SQL; any other file is a DuckDB file)."""
    dialect = target_dialect(target)
    return dialect if dialect.schema_creator_builds else REGISTRY["duckdb"]
