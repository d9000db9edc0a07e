"""What the sanity checks know without a contract: the Interpreter's keys (declared or
inferred) and semantic types, read from the schema index, and how a column of the SQL tree
resolves to a warehouse table."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlglot import exp

from dia_assets.agents.query.schema import SchemaIndex, TableInfo, stem

Ref = tuple[str, str]  # (table, column), lower case

_ID_NAME = re.compile(r"(^id$|_id$|id$|_no$|_num$|_number$|_code$|_key$|^code$|^key$)")
_WORD = re.compile(r"[a-z0-9]+")


def name_tokens(name: str) -> set[str]:
    """The stemmed words of an identifier (`order_date` -> {order, date})."""
    return {stem(w) for w in _WORD.findall(name.lower().replace("_", " ")) if len(w) > 1}


def question_words(question: str) -> list[str]:
    """The question's words in order, lower case and stemmed (stop words kept: phrases need them)."""
    return [stem(w) for w in _WORD.findall(question.lower())]


def _abbreviates(short: str, long: str) -> bool:
    """`short` is a prefix of `long`, or an abbreviation of it (same first two letters, its
    letters in order: `dept` for `department`, `qty` for `quantity`)."""
    if len(short) < 3 or len(short) > len(long) or short[:2] != long[:2]:
        return False
    rest = iter(long)
    return all(ch in rest for ch in short)


def same_word(word: str, names: set[str]) -> set[str]:
    """The names a question word stands for: equal, or one abbreviating the other."""
    return {n for n in names if n == word or _abbreviates(n, word) or _abbreviates(word, n)}


def id_like(name: str) -> bool:
    return bool(_ID_NAME.search(name.lower()))


@dataclass
class Knowledge:
    """Keys and semantic types per table, case-insensitive."""

    index: SchemaIndex
    fks: set[frozenset[Ref]] = field(default_factory=set)
    fk_cols: dict[Ref, set[str]] = field(default_factory=dict)  # FK column -> referenced tables

    def __post_init__(self) -> None:
        for info in self.index.tables.values():
            for fk in info.foreign_keys:
                left, _, right = fk.partition("->")
                target, _, ref_cols = right.strip().partition(".")
                cols = [c.strip().lower() for c in left.split(",")]
                refs = [c.strip().lower() for c in ref_cols.split(",")]
                for col, ref in zip(cols, refs, strict=False):
                    a, b = (info.name.lower(), col), (target.strip().lower(), ref)
                    self.fks.add(frozenset((a, b)))
                    self.fk_cols.setdefault(a, set()).add(b[0])

    def table(self, name: str) -> TableInfo | None:
        return self.index.tables.get(name) or next(
            (t for t in self.index.tables.values() if t.name.lower() == name.lower()), None)

    def pk(self, table: str) -> list[str]:
        info = self.table(table)
        return [c.lower() for c in info.primary_key] if info else []

    def spelled(self, ref: Ref) -> Ref:
        """(table, column) as the warehouse spells them, for probes that quote names."""
        info = self.table(ref[0])
        col = info.column(ref[1]) if info else None
        return (info.name, col.name) if info is not None and col is not None else ref

    def semantic(self, ref: Ref) -> str:
        info = self.table(ref[0])
        col = info.column(ref[1]) if info else None
        return col.semantic if col is not None else ""

    def is_fk_pair(self, a: Ref, b: Ref) -> bool:
        return frozenset((a, b)) in self.fks

    def related(self, t1: str, t2: str) -> bool:
        """Some known foreign key links the two tables (either way, or a table to itself)."""
        return any({r[0] for r in pair} == {t1, t2} for pair in self.fks)

    def is_identifier(self, ref: Ref) -> bool:
        """A column that names an entity rather than measuring it: a single-column primary key,
        a foreign key column (either end), or an id-named column the Interpreter typed `id`."""
        pk = self.pk(ref[0])
        if pk == [ref[1]] or ref in self.fk_cols or any(ref in pair for pair in self.fks):
            return True
        return self.semantic(ref) == "id" and id_like(ref[1])


def sources(select: exp.Select) -> dict[str, str]:
    """alias -> table name (lower case) for the tables read directly by `select`."""
    return {t.alias_or_name.lower(): t.name.lower() for t in select.find_all(exp.Table)
            if t.find_ancestor(exp.Select) is select and t.name}


def resolve(col: exp.Expression, know: Knowledge, select: exp.Select | None = None) -> Ref | None:
    """(table, column) of a column read straight from a warehouse table, else None."""
    if not isinstance(col, exp.Column) or not col.name:
        return None
    select = select or col.find_ancestor(exp.Select)
    if select is None:
        return None
    src = sources(select)
    if col.table:
        table = src.get(col.table.lower())
    else:
        owners = [t for t in src.values() if (info := know.table(t)) is not None and info.column(col.name)]
        table = owners[0] if len(set(owners)) == 1 else None
    if table is None or know.table(table) is None or know.table(table).column(col.name) is None:  # type: ignore[union-attr]
        return None
    return table, col.name.lower()


def with_clause(tree: exp.Expression) -> exp.Expression | None:
    return tree.args.get("with_") or tree.args.get("with")


def probe_select(select: exp.Select, tree: exp.Expression) -> exp.Select:
    """A copy of `select` that keeps its FROM, joins, WHERE and GROUP BY (and the query's CTEs),
    without projections, order, limit or HAVING: the caller sets the projections."""
    probe = select.copy()
    for arg in ("order", "having", "limit", "offset", "qualify", "distinct", "windows"):
        probe.set(arg, None)
    w = with_clause(tree)
    if w is not None and select is not tree:
        probe.set("with_", w.copy())
    return probe
