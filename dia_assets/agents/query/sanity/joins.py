"""Wrong join key: a join ON a.x = b.y where (x, y) is no key pair the Interpreter knows.

Fires only on strong evidence: both columns are identifiers, and either the two tables are
linked by a known foreign key on other columns, or each column refers to a different entity
(its own foreign key target or primary-key table). A declared or inferred FK pair, PK = PK,
same-named columns, and a pair whose values are included one in the other stay silent."""

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


def _included(a: Ref, b: Ref, know: Knowledge, db: Database, timeout_s: float) -> bool:
    """Every non-NULL value of one column occurs in the other (an FK nobody recorded)."""
    a, b = know.spelled(a), know.spelled(b)
    sql = ("SELECT "
           f"(SELECT COUNT(*) FROM (SELECT DISTINCT {_q(a[1])} AS v FROM {_q(a[0])} WHERE {_q(a[1])} IS NOT NULL) x "
           f"WHERE v NOT IN (SELECT {_q(b[1])} FROM {_q(b[0])} WHERE {_q(b[1])} IS NOT NULL)), "
           f"(SELECT COUNT(*) FROM (SELECT DISTINCT {_q(b[1])} AS v FROM {_q(b[0])} WHERE {_q(b[1])} IS NOT NULL) y "
           f"WHERE v NOT IN (SELECT {_q(a[1])} FROM {_q(a[0])} WHERE {_q(a[1])} IS NOT NULL))")
    try:
        left, right = db.query(sql, 1, timeout_s).rows[0]
    except Exception:
        return True  # no evidence against the pair: stay silent
    return left == 0 or right == 0


def suspicious_pair(a: Ref, b: Ref, know: Knowledge) -> str | None:
    """Why (a, b) looks like a wrong key pair, or None when it is a known or plausible one."""
    if a == b or a[1] == b[1] or know.is_fk_pair(a, b):
        return None
    if know.pk(a[0]) == [a[1]] and know.pk(b[0]) == [b[1]]:
        return None  # PK = PK: one-to-one tables
    if not (know.is_identifier(a) and know.is_identifier(b)):
        return None
    if know.related(a[0], b[0]):
        return f"{a[0]} and {b[0]} are linked by a known key, not by {a[0]}.{a[1]} = {b[0]}.{b[1]}"
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
            if why and not _included(a, b, know, db, timeout_s):
                return Check(name=NAME, passed=False, detail=(
                    f"JOIN ON {cond.sql(dialect=db.dialect)[:80]}: {why}; join on the key pair "
                    "(describe the tables for their foreign keys)"))
    return Check(name=NAME, passed=True, detail="every join uses a known or plausible key pair")
