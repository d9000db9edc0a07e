"""Question-set adapters: files people already have, read from paths they give (no downloads).

| format | file | fields used | gold dialect | order |
|---|---|---|---|---|
| `bird` | `dev.json` (+ `dev_databases/<db>/<db>.sqlite`) | question_id, db_id, question, evidence, SQL, difficulty | sqlite | never (BIRD compares sets) |
| `spider` | `dev.json` (+ `database/<db>/<db>.sqlite`) | db_id, question, query | sqlite | when gold has ORDER BY (Spider's rule) |
| `defog` | sql-eval CSV | db_name, question, query, query_category, instructions | postgres | category `order_by` or the question says order/sort/arrange (sql-eval's rule) |
| `jsonl` | ours, one object a line | id, question, gold_sql (text or list), db, evidence, dialect, difficulty, order_matters, decimals | as given | as given |

defog gold queries list acceptable alternatives the sql-eval way: `;` separates whole
alternative queries, and `{a, b}` in a select list stands for every non-empty subset of the
listed columns; each expansion becomes one acceptable gold query.
"""

from __future__ import annotations

import csv
import itertools
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dia_assets.agents.evaluation.models import EvalInstance

FORMATS = ("auto", "bird", "spider", "defog", "jsonl")


def detect_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return "jsonl"
    if suffix == ".csv":
        return "defog"
    if suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        first = data[0] if isinstance(data, list) and data else {}
        if "SQL" in first:
            return "bird"
        if "query" in first:
            return "spider"
        if "gold_sql" in first:
            return "jsonl"
    raise ValueError(f"cannot tell the format of {path}; pass --format bird|spider|defog|jsonl")


def load_instances(path: str | Path, fmt: str = "auto", limit: int | None = None,
                   dialect: str | None = None) -> list[EvalInstance]:
    """Read a question set; ids are unique (a duplicate is an error). `dialect` overrides the
    gold SQL's dialect (e.g. BIRD mini-dev's PostgreSQL or MySQL gold files)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no question set at {path}")
    fmt = detect_format(path) if fmt == "auto" else fmt
    loader = {"bird": load_bird, "spider": load_spider, "defog": load_defog, "jsonl": load_jsonl}.get(fmt)
    if loader is None:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    items = loader(path)
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise ValueError(f"duplicate instance id {item.id!r} in {path}")
        seen.add(item.id)
        if dialect:
            item.dialect = dialect
    return items[:limit] if limit else items


def default_db(path: str | Path, fmt: str = "auto") -> Path | None:
    """Where the benchmark keeps its databases next to the question file, when it does."""
    path = Path(path)
    fmt = detect_format(path) if fmt == "auto" else fmt
    names = {"bird": ("dev_databases", "databases"), "spider": ("database",)}.get(fmt, ())
    for name in names:
        if (path.parent / name).is_dir():
            return path.parent / name
    return None


def _json_list(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of questions")
    return data


def load_bird(path: Path, dialect: str = "sqlite") -> list[EvalInstance]:
    out = []
    for i, row in enumerate(_json_list(path)):
        out.append(EvalInstance(
            id=str(row.get("question_id", i)), question=row["question"], gold_sql=[row["SQL"]],
            db=row["db_id"], evidence=row.get("evidence") or "", dialect=dialect,
            difficulty=row.get("difficulty"), order_matters=False, source="bird",
        ))
    return out


def has_order_by(sql: str) -> bool:
    """Spider's rule: order matters when the gold query has ORDER BY."""
    return "order by" in re.sub(r"\s+", " ", sql.lower())


def load_spider(path: Path) -> list[EvalInstance]:
    out = []
    for i, row in enumerate(_json_list(path)):
        gold = row["query"]
        out.append(EvalInstance(
            id=str(row.get("question_id", f"spider_{i}")), question=row["question"], gold_sql=[gold],
            db=row["db_id"], dialect="sqlite", difficulty=row.get("difficulty") or row.get("hardness"),
            order_matters=has_order_by(gold), source="spider",
        ))
    return out


_ORDER_WORDS = re.compile(r"\b(order|sort|arrange)\b", re.IGNORECASE)


def expand_defog_gold(query: str) -> list[str]:
    """sql-eval's `get_all_minimal_queries`: `;` alternatives and `{a, b}` column subsets."""
    out: list[str] = []
    for part in query.split(";"):
        part = part.strip()
        if not part:
            continue
        start = part.find("{")
        end = part.find("}", start + 1) if start >= 0 else -1
        if start < 0 or end < 0:
            out.append(part)
            continue
        options = [o.strip() for o in part[start + 1:end].split(",")]
        for r in range(1, len(options) + 1):
            for combo in itertools.combinations(options, r):
                cols = ", ".join(combo)
                right = part[end + 1:].replace("GROUP BY {}", f"GROUP BY {cols}")
                out.append(part[:start] + cols + right)
    return out


def load_defog(path: Path) -> list[EvalInstance]:
    out = []
    with path.open(encoding="utf-8", newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            question = row["question"]
            category = (row.get("query_category") or "").strip()
            out.append(EvalInstance(
                id=f"{row['db_name']}_{i}", question=question, gold_sql=expand_defog_gold(row["query"]),
                db=row["db_name"], evidence=(row.get("instructions") or "").strip(), dialect="postgres",
                difficulty=category or None,
                order_matters=category == "order_by" or bool(_ORDER_WORDS.search(question)),
                source="defog",
            ))
    return out


def load_jsonl(path: Path) -> list[EvalInstance]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{n}: not JSON ({err})") from err
        gold = row.get("gold_sql")
        if isinstance(gold, str):
            gold = [gold]
        if not gold:
            raise ValueError(f"{path}:{n}: gold_sql is missing")
        out.append(EvalInstance(
            id=str(row.get("id") or f"q{n}"), question=row["question"], gold_sql=gold,
            db=str(row.get("db") or ""), evidence=row.get("evidence") or "",
            dialect=row.get("dialect") or "duckdb", difficulty=row.get("difficulty"),
            order_matters=bool(row.get("order_matters", False)), decimals=row.get("decimals"),
            source="jsonl", meta={k: v for k, v in row.items() if k in ("tags", "notes")},
        ))
    return out


# {table: {column: type}}, the types as the target engine's catalog spells them.
Schema = Mapping[str, Mapping[str, str]]


def transpile_gold(sql: str, read: str, write: str, schema: Schema | Callable[[], Schema] | None = None) -> str:
    """The gold query in the database's dialect (sqlglot), unchanged when they agree. `schema`
    (or a function returning it, called only when the target needs it): the database's column
    types, for an engine where the same operator means another thing on other operand types
    (`_TYPED_FIXES`); without it such operators are carried across as written."""
    if _same_dialect(read, write):
        return sql
    import sqlglot

    source, target = _sqlglot_name(read), _sqlglot_name(write)
    tree = sqlglot.parse_one(sql, read=source)
    typed_fix = _TYPED_FIXES.get(target)
    if typed_fix is not None and schema is not None:
        tree = _fix_typed(tree, typed_fix, source, target, schema() if callable(schema) else schema)
    fix = _ENGINE_FIXES.get(target)
    if fix is not None:
        tree = tree.transform(fix)
    return tree.sql(dialect=target)


def _fix_typed(tree: Any, fix: Callable[[Any, Any], Any], read: str, write: str, schema: Schema) -> Any:
    """`fix(node, typed)` over `tree`, `typed` the node's twin with types (sqlglot's `qualify` and
    `annotate_types` over `schema`). The types are worked out on a copy, found again by a mark,
    because qualifying rewrites names, aliases and ORDER BY: only what `fix` changes differs."""
    from sqlglot import exp
    from sqlglot.optimizer.annotate_types import annotate_types
    from sqlglot.optimizer.qualify import qualify
    from sqlglot.schema import MappingSchema

    for i, node in enumerate(tree.walk()):
        node.meta["gold_node"] = i
    # udt: a type sqlglot does not know (Spark's void) is a type of its own, not a parse error
    mapping = MappingSchema({t: {c: exp.DataType.build(ty, dialect=write, udt=True) for c, ty in cols.items()}
                             for t, cols in schema.items()}, dialect=write)
    typed = annotate_types(qualify(tree.copy(), dialect=read, schema=mapping, validate_qualify_columns=False),
                           schema=mapping, dialect=read)
    twins = {n.meta["gold_node"]: n for n in typed.walk() if "gold_node" in n.meta}
    return tree.transform(lambda node: fix(node, twins[node.meta["gold_node"]])
                          if node.meta.get("gold_node") in twins else node)


# Date parts as SQLite's strftime spells them.
_SQLITE_PARTS = {"YEAR": "%Y", "MONTH": "%m", "DAY": "%d", "HOUR": "%H", "MINUTE": "%M", "SECOND": "%S",
                 "DOW": "%w", "DAYOFWEEK": "%w", "DOY": "%j", "DAYOFYEAR": "%j"}
_SQLITE_TRUNC = {"YEAR": "start of year", "MONTH": "start of month", "DAY": "start of day"}


def _sqlite_fix(node: Any) -> Any:
    """What sqlglot leaves unportable for SQLite (no EXTRACT, no date_trunc, no timestamptz):
    date parts through strftime, truncation through date modifiers, timestamps as DATETIME."""
    from sqlglot import exp

    part, value = None, None
    if isinstance(node, exp.Extract):
        part, value = node.this.name.upper(), node.expression
    elif isinstance(node, (exp.Year, exp.Month, exp.Day)):
        part, value = type(node).__name__.upper(), node.this
    if part in _SQLITE_PARTS and value is not None:
        fmt = exp.Anonymous(this="STRFTIME", expressions=[exp.Literal.string(_SQLITE_PARTS[part]), value.copy()])
        return exp.Cast(this=fmt, to=exp.DataType.build("INTEGER"))
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)):
        unit = (node.args.get("unit").name if node.args.get("unit") is not None else "").upper()
        if unit in _SQLITE_TRUNC:
            return exp.Anonymous(this="DATETIME", expressions=[node.this.copy(), exp.Literal.string(_SQLITE_TRUNC[unit])])
    if isinstance(node, exp.Cast) and node.to.this in (exp.DataType.Type.TIMESTAMPTZ, exp.DataType.Type.TIMESTAMPLTZ):
        return exp.Anonymous(this="DATETIME", expressions=[node.this.copy()])
    return node


def _postgres_fix(node: Any) -> Any:
    """PostgreSQL has ROUND(numeric, int) only, and its ROUND(double) rounds half to even where
    DuckDB rounds half away from zero (ROUND(0.5) is 0, not 1): rounding goes through NUMERIC."""
    from sqlglot import exp

    if isinstance(node, exp.Round):
        node.set("this", exp.Cast(this=node.this.copy(), to=exp.DataType.build("NUMERIC")))
    return node


def _spark_fix(node: Any) -> Any:
    """What sqlglot carries across with another meaning on Spark. Spark averages a DECIMAL as a
    DECIMAL of four more digits of scale (80.441216), DuckDB as a DOUBLE (80.4412156862745): the
    average goes through DOUBLE (a DATE difference is a number of days by then: `_spark_typed_fix`,
    given the schema). DuckDB's date_diff('day', a, b) counts the day boundaries crossed, Spark's
    DATEDIFF(DAY, a, b) whole 24-hour days: the days are counted between the two dates."""
    from sqlglot import exp

    if isinstance(node, exp.Avg) and not isinstance(node.this, exp.Distinct):
        node.set("this", exp.Cast(this=node.this.copy(), to=exp.DataType.build("DOUBLE")))
    if isinstance(node, exp.DateDiff) and node.args.get("date_part_boundary") \
            and (node.unit is None or node.unit.name.upper() == "DAY"):
        return exp.DateDiff(this=exp.Cast(this=node.this.copy(), to=exp.DataType.build("DATE")),
                            expression=exp.Cast(this=node.expression.copy(), to=exp.DataType.build("DATE")))
    return node


def _spark_typed_fix(node: Any, typed: Any) -> Any:
    """DuckDB's DATE - DATE is a number of days (so is PostgreSQL's), Spark's an INTERVAL:
    the days are counted by DATEDIFF(end, start). A TIMESTAMP difference is an INTERVAL on
    both engines and a number's a number: both stay."""
    from sqlglot import exp

    if isinstance(node, exp.Sub) and all(side.is_type(exp.DataType.Type.DATE) for side in (typed.left, typed.right)):
        return exp.DateDiff(this=node.left.copy(), expression=node.right.copy())
    return node


_ENGINE_FIXES = {"sqlite": _sqlite_fix, "postgres": _postgres_fix, "spark": _spark_fix}
_TYPED_FIXES = {"spark": _spark_typed_fix}


def _sqlglot_name(dialect: str) -> str:
    d = dialect.lower()
    return {"postgresql": "postgres", "pg": "postgres", "sqlite3": "sqlite"}.get(d, d)


def _same_dialect(a: str, b: str) -> bool:
    return _sqlglot_name(a) == _sqlglot_name(b)
