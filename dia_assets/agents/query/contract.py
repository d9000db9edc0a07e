"""Shape declaration (DIA §3.5): the output contract is a structured tool call, validated
before anything else runs."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from dia_assets.contracts.query_result import OutputContract
from dia_assets.platform.sql.safety import (
    SQLRefused,
    check_static,
    closest_columns,
)

__all__ = ["OutputContract", "ContractError", "parse_contract"]


class ContractError(ValueError):
    pass


def _columns_of(schema: dict[str, dict[str, str]]) -> set[str]:
    return {c for cols in schema.values() for c in cols} | {f"{t}.{c}" for t, cols in schema.items() for c in cols}


def coerce(args: dict[str, Any]) -> dict[str, Any]:
    """Accept the shorthand models write: `"order": ["n desc"]`, `"filters": ["only ICU"]`,
    `"granularity": "one row per role"`, `"columns": [{"name": ...}]`."""
    args = {k: v for k, v in dict(args).items() if v is not None}
    if isinstance(args.get("granularity"), str):
        args["granularity"] = {"description": args["granularity"]}
    if isinstance(args.get("columns"), list):
        args["columns"] = [c.get("name", "") if isinstance(c, dict) else str(c) for c in args["columns"]]
    order = args.get("order")
    if isinstance(order, str):
        order = [o for o in order.split(",") if o.strip()] if order.strip().lower() not in ("", "none", "unordered") else []
    if isinstance(order, list):
        items = []
        for o in order:
            if isinstance(o, str):
                parts = o.strip().split()
                direction = parts[-1].lower() if len(parts) > 1 and parts[-1].lower() in ("asc", "desc") else "asc"
                items.append({"column": parts[0], "direction": direction})
            else:
                items.append(o)
        args["order"] = items
    if isinstance(args.get("filters"), list):
        args["filters"] = [{"description": f} if isinstance(f, str) else f for f in args["filters"]]
    for item in args.get("order", []):
        if isinstance(item, dict) and isinstance(item.get("direction"), str):
            item["direction"] = item["direction"].lower()
    return args


def parse_contract(args: dict[str, Any], schema: dict[str, dict[str, str]], dialect: str) -> OutputContract:
    """Validate the declared contract; every problem is reported at once."""
    args = coerce(args)
    try:
        contract = OutputContract.model_validate(args)
    except ValidationError as err:
        raise ContractError(f"the contract does not validate: {err.errors(include_url=False)}") from err
    problems: list[str] = []
    names = [c.lower() for c in contract.columns]
    known = _columns_of(schema)
    if contract.kind == "analytical":
        if not contract.columns:
            problems.append("declare the result columns, in order")
        if len(set(names)) != len(names):
            problems.append("result column names must be unique")
        for key in contract.granularity.key_columns:
            if key.lower() not in names:
                problems.append(f"granularity key {key!r} is not one of the declared columns")
        for item in contract.order:
            if item.column.lower() not in names:
                problems.append(f"order column {item.column!r} is not one of the declared columns")
    else:
        if not contract.targets:
            problems.append("a modification declares its target objects (targets)")
        if not contract.post_condition_sql:
            problems.append("a modification declares post_condition_sql: a SELECT whose first value is true when the change holds")
        else:
            # the gate's statement and function rules now; its tables when it runs, against
            # the tables the declared statements leave behind
            try:
                check_static(contract.post_condition_sql, dialect)
            except SQLRefused as err:
                problems.append(f"post_condition_sql must be one read-only SELECT: {err}")
    for flt in contract.filters:
        if not flt.column:
            problems.append(f"filter {flt.description!r} names no column: give the column it constrains "
                            "(and its value), so verification can find the predicate")
        elif flt.column.lower() not in known and flt.column.lower() not in names:
            close = closest_columns(flt.column.split(".")[-1], schema)
            problems.append(
                f"filter column {flt.column!r} is not in the schema"
                + (f" (closest: {', '.join(close)})" if close else "")
            )
    if contract.entity_key and ("." not in contract.entity_key or contract.entity_key.lower() not in known):
        problems.append(f"entity_key {contract.entity_key!r} must be table.column of the schema")
    if problems:
        raise ContractError("; ".join(problems))
    return contract


def describe_contract(contract: OutputContract) -> str:
    if contract.kind == "modification":
        return f"modification of {', '.join(contract.targets)}; post-condition: {contract.post_condition_sql}"
    order = ", ".join(f"{o.column} {o.direction}" for o in contract.order) or "unordered"
    filters = "; ".join(f.description for f in contract.filters) or "none"
    keys = ", ".join(contract.granularity.key_columns) or "-"
    limit = f"; at most {contract.limit} rows" if contract.limit is not None else ""
    return (
        f"columns [{', '.join(contract.columns)}]; one row per {contract.granularity.description or keys} "
        f"(keys {keys}); order {order}; filters: {filters}{limit}"
    )


PARTS = ("columns", "granularity", "order", "filters", "entity_key", "allow_empty", "limit")


def _filter_key(flt: Any) -> str:
    return (flt.column or flt.description).split(".")[-1].lower()


def changed_parts(old: OutputContract, new: OutputContract) -> list[str]:
    """Which parts of the contract a re-declaration changes."""
    out = []
    if [c.lower() for c in old.columns] != [c.lower() for c in new.columns]:
        out.append("columns")
    if sorted(k.lower() for k in old.granularity.key_columns) != sorted(k.lower() for k in new.granularity.key_columns):
        out.append("granularity")
    if [(o.column.lower(), o.direction) for o in old.order] != [(o.column.lower(), o.direction) for o in new.order]:
        out.append("order")
    if [f.model_dump() for f in old.filters] != [f.model_dump() for f in new.filters]:
        out.append("filters")
    for part in ("entity_key", "allow_empty", "limit"):
        if getattr(old, part) != getattr(new, part):
            out.append(part)
    return out


def weakenings(old: OutputContract, new: OutputContract, failed: list[str]) -> list[str]:
    """Ways a revision drops the very declaration a check just failed on: a revision may
    correct a declared fact (a value as stored, a key column), never remove it to pass."""
    problems = []
    failed_filters = {f[len("filter:"):] for f in failed if f.startswith("filter:")}
    new_filters = {_filter_key(f) for f in new.filters}
    for flt in old.filters:
        if flt.description[:60] in failed_filters and _filter_key(flt) not in new_filters:
            problems.append(f"drops the filter {flt.description!r} that verification found unimplemented")
    if "granularity" in failed and not new.granularity.key_columns:
        problems.append("drops the granularity keys that repeated in the result")
    if "ordering" in failed and not new.order:
        problems.append("drops the order the result did not follow")
    if "non_empty" in failed and new.allow_empty and not old.allow_empty:
        problems.append("allows an empty result after the result came back empty")
    if "row_limit" in failed and new.limit is None:
        problems.append("drops the row limit the result exceeded")
    if "join_fanout" in failed and old.entity_key and not new.entity_key:
        problems.append("drops the entity key whose rows the join repeated")
    return problems
