"""Wrong join key: a join ON a.x = b.y where (x, y) is no key pair the Interpreter knows.

Fires only on strong evidence: both columns are identifiers, and either the two tables are
linked by a known foreign key on other columns, or each column refers to a different entity
(its own foreign key target or primary-key table). A declared or inferred FK pair, PK = PK,
same-named columns, and a pair shaped like an unrecorded foreign key (one column's values
all occur in the other, which is unique) stay silent."""

from __future__ import annotations

from sqlglot import exp

from dia_assets.agents.query.dialects import Database
from dia_assets.agents.query.sanity.knowledge import Knowledge, Ref, resolve
from dia_assets.contracts.query_result import Check

NAME = "join_key"


def _conjuncts(on: exp.Expression) -> list[exp.Expression]:
    return list(on.flatten()) if isinstance(on, exp.And) else [on]


def _entities(ref: Ref, know: Knowledge) -> set[str]:
    """The tables a key column names: its foreign-key targets, or its own table for its PK."""
    out = set(know.fk_cols.get(ref, set()))
    if know.pk(ref[0]) == [ref[1]]:
        out.add(ref[0])
    return out


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _missing(x: Ref, y: Ref) -> str:
    """SQL: how many distinct non-NULL values of x do not occur in y."""
    xv, yv = f"CAST({_q(x[1])} AS VARCHAR)", f"CAST({_q(y[1])} AS VARCHAR)"  # types may differ
    return (f"(SELECT COUNT(*) FROM (SELECT DISTINCT {xv} AS v FROM {_q(x[0])} WHERE {_q(x[1])} IS NOT NULL) x "
            f"WHERE v NOT IN (SELECT {yv} FROM {_q(y[0])} WHERE {_q(y[1])} IS NOT NULL))")


def _repeats(x: Ref) -> str:
    """SQL: how many non-NULL values of x repeat (0 when x is unique)."""
    return f"(SELECT COUNT({_q(x[1])}) - COUNT(DISTINCT {_q(x[1])}) FROM {_q(x[0])})"


def _unrecorded_fk(a: Ref, b: Ref, know: Knowledge, db: Database, timeout_s: float) -> bool:
    """The pair has the shape of a foreign key nobody recorded: every value of one column
    occurs in the other, and that other column is unique (a key). Integer ids of different
    entities overlap, so inclusion alone is no evidence; inclusion into a unique column is."""
    a, b = know.spelled(a), know.spelled(b)
    sql = f"SELECT {_missing(a, b)}, {_repeats(b)}, {_missing(b, a)}, {_repeats(a)}"
    try:
        a_out, b_rep, b_out, a_rep = db.query(sql, 1, timeout_s).rows[0]
    except Exception:
        return True  # no evidence against the pair: stay silent
    return (a_out == 0 and b_rep == 0) or (b_out == 0 and a_rep == 0)


_NEVER_KEYS = {"postal_code", "phone", "email", "url", "date", "timestamp", "time", "decimal", "currency",
               "percentage", "free_text", "latitude", "longitude"}


def suspicious_pair(a: Ref, b: Ref, know: Knowledge) -> str | None:
    """Why (a, b) looks like a wrong key pair, or None when it is a known or plausible one."""
    if a == b or a[1] == b[1] or know.is_fk_pair(a, b):
        return None
    if know.pk(a[0]) == [a[1]] and know.pk(b[0]) == [b[1]]:
        return None  # PK = PK: one-to-one tables
    ids = know.is_identifier(a), know.is_identifier(b)
    if not any(ids):
        return None
    if know.related(a[0], b[0]) and (all(ids) or {know.semantic(a), know.semantic(b)} & _NEVER_KEYS):
        return f"{a[0]} and {b[0]} are linked by a known key, not by {a[0]}.{a[1]} = {b[0]}.{b[1]}"
    if not all(ids):
        return None
    ea, eb = _entities(a, know), _entities(b, know)
    if ea and eb and not (ea & eb):
        return (f"{a[0]}.{a[1]} identifies {'/'.join(sorted(ea))} but {b[0]}.{b[1]} identifies "
                f"{'/'.join(sorted(eb))}")
    return None


def check_join_keys(tree: exp.Expression, know: Knowledge, db: Database, timeout_s: float) -> Check:
    for join in tree.find_all(exp.Join):
        on = join.args.get("on")
        select = join.find_ancestor(exp.Select)
        if on is None or select is None:
            continue
        for cond in _conjuncts(on):
            if not isinstance(cond, exp.EQ):
                continue
            a, b = resolve(cond.this, know, select), resolve(cond.expression, know, select)
            if a is None or b is None:
                continue
            why = suspicious_pair(a, b, know)
            if why and not _unrecorded_fk(a, b, know, db, timeout_s):
                return Check(name=NAME, passed=False, detail=(
                    f"JOIN ON {cond.sql(dialect=db.dialect)[:80]}: {why}; join on the key pair "
                    "(describe the tables for their foreign keys)"))
    return Check(name=NAME, passed=True, detail="every join uses a known or plausible key pair")
