"""Decide a text column's semantic and SQL type from class counts over a sample.

The counts come from one aggregate query (`sample_class_sql`); the decision is plain
Python so it can be tested value by value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dia_assets.agents.value_parsing import FALSE_WORDS, TRUE_WORDS, sql_list
from dia_assets.contracts.interpretation import SemanticType, ValueFormat
from dia_assets.platform.key_names import id_like
from dia_assets.platform.naming import sql_str

# Share of present values a type must explain; the rest become unparseable values.
THRESHOLD = 0.95

DATE_FORMATS = [
    "%Y-%m-%d", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%Y/%m/%d", "%d-%m-%Y",
    "%d %b %Y", "%d %B %Y", "%b %d, %Y", "%B %d, %Y", "%d-%b-%Y", "%d-%b-%y",
]
TIMESTAMP_FORMATS = [
    "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M",
    "%d/%m/%Y %H:%M", "%m/%d/%Y %H:%M", "%d/%m/%Y %H:%M:%S", "%m/%d/%Y %H:%M:%S",
    "%d.%m.%Y %H:%M",
]
# Mutually exclusive readings of the same text: keep only the better one.
# (`%B` also reads abbreviations, so the abbreviated form wins a tie.)
AMBIGUOUS = [("%d/%m/%Y", "%m/%d/%Y"), ("%d/%m/%Y %H:%M", "%m/%d/%Y %H:%M"),
             ("%d/%m/%Y %H:%M:%S", "%m/%d/%Y %H:%M:%S"), ("%d %b %Y", "%d %B %Y"),
             ("%b %d, %Y", "%B %d, %Y")]

PATTERNS = {
    "int": r"[+-]?\d+",
    "lead0": r"[+-]?0\d+",
    "dec": r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?",
    "exp": r"[+-]?\d*\.?\d+[eE][+-]?\d+",
    "dec_thou": r"[+-]?\d{1,3}(,\d{3})+(\.\d+)?",
    "dec_comma": r"[+-]?(\d+|\d{1,3}(\.\d{3})+),\d+",
    "currency": r"[+-]?\s*([$€£¥]|USD|EUR|GBP)\s*[+-]?[\d.,]*\d|[+-]?[\d.,]*\d\s*([$€£¥]|USD|EUR|GBP)",
    "percent": r"[+-]?[\d.,]*\d\s*%",
    "time": r"\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?",
    "ts_iso": r"\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}(:?\d{2})?|Z)?",
    "ts_tz": r"\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}(:?\d{2})?|Z)",
    "email": r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}",
    "url": r"(https?://|www\.)\S+",
    "phone": r"\+?[\d\s().-]{7,}",
    "code": r"[A-Za-z]{0,6}[-_]?\d{1,12}|[A-Za-z0-9]{2,12}",
    "alnum_code": r"[A-Za-z]{1,6}[-_]?\d{2,12}",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "datelike": r"\d{1,4}[-/. ]\w{1,9}[-/. ,]+\d{2,4}.*|[A-Za-z]{3,9}\.? \d{1,2},? \d{4}",
}

ID_NAMES = {"id", "key", "code", "uuid", "sku", "guid", "ref"}


def id_like_name(name: str) -> bool:
    """Named like an identifier: a key suffix (`_id`, `_sk`, `custkey`: `key_names.id_like`) or a
    short name ending in `id` (`pid`)."""
    return name in ID_NAMES or id_like(name) or name.endswith("id") and len(name) <= 4


def _hint(name: str, *words: str) -> bool:
    tokens = set(name.split("_"))
    return any(w in tokens or name.startswith(w) or name.endswith(w) for w in words)


CURRENCY_MARKS = ("$", "€", "£", "¥", "USD", "EUR", "GBP")


def _contains_any(value: str, *needles: str) -> str:
    return "(" + " OR ".join(f"contains({value}, {sql_str(n)})" for n in needles) + ")"


def _pattern_gates(value: str) -> dict[str, str]:
    """A cheap test each pattern's matches all pass (a character the pattern requires), so
    the regular expression runs only where it can match."""
    comma, colon = _contains_any(value, ","), _contains_any(value, ":")
    return {
        "exp": _contains_any(value, "e", "E"), "dec_thou": comma, "dec_comma": comma,
        "currency": _contains_any(value, *CURRENCY_MARKS), "percent": _contains_any(value, "%"),
        "time": colon, "ts_iso": colon, "ts_tz": colon, "email": _contains_any(value, "@"),
        "url": f"(starts_with({value}, 'http') OR starts_with({value}, 'www.'))",
        "uuid": f"length({value}) = 36",
    }


def _format_gate(value: str, fmt: str) -> str:
    """A value try_strptime can read with `fmt` holds each of its literal characters (spaces
    aside: any whitespace matches them), and a colon only when the format has one."""
    literals = sorted({ch for ch in re.sub("%.", "", fmt) if not ch.isspace()})
    tests = [f"contains({value}, {sql_str(ch)})" for ch in literals]
    if ":" not in literals:
        tests.append(f"NOT contains({value}, ':')")
    return " AND ".join(tests) if tests else "true"


def _gated(gate: str, test: str) -> str:
    """`gate AND test` that skips `test` where the gate fails (in an aggregate's FILTER,
    DuckDB evaluates both sides of an AND on every row; a CASE evaluates its branch only
    where its condition holds)."""
    return f"CASE WHEN {gate} THEN {test} ELSE false END"


def sample_class_sql(value: str = "v", weight: str = "n", datelike: str = "dl") -> list[tuple[str, str]]:
    """(stat name, aggregate SQL) pairs over distinct present values `value` seen `weight`
    times; `datelike` is a precomputed gate so the date formats are tried only where
    they can match. Evaluated once per distinct value, not once per row."""

    def share(cond: str) -> str:
        return f"coalesce(sum({weight}) FILTER ({cond}), 0)"

    gates = _pattern_gates(value)
    stats = [("present", f"sum({weight})")]
    for key, regex in PATTERNS.items():
        if key != "datelike":
            match = f"regexp_full_match({value}, {sql_str(regex)})"
            stats.append((key, share(_gated(gates[key], match) if key in gates else match)))
    words = TRUE_WORDS + FALSE_WORDS
    stats.append(("bool", share(_gated(f"length({value}) <= {max(map(len, words))}",
                                       f"lower({value}) IN {sql_list(words)}"))))
    stats.append(("json", share(_gated(f"({value} LIKE '{{%' OR {value} LIKE '[%')", f"json_valid({value})"))))
    stats.append(("spaces", share(f"contains({value}, ' ')")))
    stats.append(("avg_len", f"sum(length({value}) * {weight}) / sum({weight})"))
    stats.append(("distinct", "count(*)"))
    for prefix, formats in (("date", DATE_FORMATS), ("ts", TIMESTAMP_FORMATS)):
        for i, fmt in enumerate(formats):
            stats.append((f"{prefix}{i}", share(_gated(
                f"{datelike} AND {_format_gate(value, fmt)}", f"try_strptime({value}, {sql_str(fmt)}) IS NOT NULL"))))
    marks = "[$€£¥]|USD|EUR|GBP"
    stats.append(("currency_symbols", f"list(DISTINCT regexp_extract({value}, '{marks}')) "
                  f"FILTER ({_gated(gates.get('currency', 'true'), f'regexp_matches({value}, {sql_str(marks)})')})"))
    stats.append(("currency_comma_decimal",
                  share(_gated(_contains_any(value, ","), f"regexp_full_match({value}, '.*\\d,\\d{{1,2}}\\D*')"))))
    return stats


@dataclass
class TypeDecision:
    semantic_type: SemanticType
    inferred_type: str
    value_format: ValueFormat
    numeric: bool = False  # precision is settled on the full data


def _pick_formats(stats: dict[str, float], formats: list[str], prefix: str) -> list[str]:
    counts = {fmt: stats.get(f"{prefix}{i}", 0) for i, fmt in enumerate(formats)}
    for a, b in AMBIGUOUS:
        if a in counts and b in counts:
            loser = b if counts[a] >= counts[b] else a
            counts[loser] = 0
    chosen = sorted((f for f, n in counts.items() if n > 0), key=lambda f: -counts[f])
    return chosen


def decide(name: str, stats: dict[str, float], rows: int, unique: bool) -> TypeDecision:
    """The narrowest type that explains at least THRESHOLD of the present values."""
    n = stats.get("present", 0)
    fmt = ValueFormat()
    if n == 0:
        return TypeDecision("unknown", "VARCHAR", fmt)

    def share(*keys: str) -> float:
        return sum(stats.get(k, 0) for k in keys) / n

    if share("json") >= THRESHOLD:
        return TypeDecision("json", "VARCHAR", fmt)
    if share("bool") >= THRESHOLD and stats.get("int", 0) == 0:
        fmt.true_values, fmt.false_values = TRUE_WORDS, FALSE_WORDS
        return TypeDecision("boolean", "BOOLEAN", fmt)
    if share("int") >= THRESHOLD:
        if stats.get("lead0", 0) > 0:  # leading zeros are part of a code
            sem: SemanticType = "postal_code" if _hint(name, "zip", "postal", "postcode", "plz") else (
                "id" if unique or id_like_name(name) else "categorical")
            return TypeDecision(sem, "VARCHAR", fmt)
        if _hint(name, "zip", "postal", "postcode", "phone", "fax", "tel", "mobile", "extension", "ext"):
            sem = "postal_code" if _hint(name, "zip", "postal", "postcode") else "phone"
            return TypeDecision(sem, "VARCHAR", fmt)
        sem = "id" if id_like_name(name) else "integer"
        return TypeDecision(sem, "BIGINT", fmt, numeric=True)
    if share("dec") >= THRESHOLD:
        sem = "decimal"
        if _hint(name, "lat", "latitude"):
            sem = "latitude"
        elif _hint(name, "lon", "lng", "long", "longitude"):
            sem = "longitude"
        return TypeDecision(sem, "DOUBLE" if stats.get("exp", 0) else "DECIMAL", fmt, numeric=True)
    if stats.get("dec_comma", 0) > 0 and share("dec_comma", "int") >= THRESHOLD:
        fmt.decimal_separator = ","
        fmt.thousands_separator = "."
        return TypeDecision("decimal", "DECIMAL", fmt, numeric=True)
    if stats.get("dec_thou", 0) > 0 and share("dec_thou", "dec") >= THRESHOLD:
        fmt.thousands_separator = ","
        return TypeDecision("decimal", "DECIMAL", fmt, numeric=True)
    if stats.get("currency", 0) > 0 and share("currency", "dec", "dec_thou") >= THRESHOLD:
        fmt.currency_symbols = sorted(stats.get("currency_symbols", []) or ["$"])  # type: ignore[arg-type]
        comma_decimal = stats.get("currency_comma_decimal", 0) > stats.get("present", 0) / 2
        fmt.decimal_separator, fmt.thousands_separator = (",", ".") if comma_decimal else (".", ",")
        return TypeDecision("currency", "DECIMAL", fmt, numeric=True)
    if stats.get("percent", 0) > 0 and share("percent", "dec") >= THRESHOLD:
        fmt.percent = True
        return TypeDecision("percentage", "DECIMAL", fmt, numeric=True)
    ts_formats = _pick_formats(stats, TIMESTAMP_FORMATS, "ts")
    if ts_formats and share(*[f"ts{TIMESTAMP_FORMATS.index(f)}" for f in ts_formats]) >= THRESHOLD:
        fmt.date_formats = ts_formats
        return TypeDecision("timestamp", "TIMESTAMP", fmt)
    if share("ts_iso") >= THRESHOLD:  # with a UTC offset (`+00`, `+05:30`, `Z`): an instant
        return TypeDecision("timestamp", "TIMESTAMPTZ" if share("ts_tz") >= THRESHOLD else "TIMESTAMP", fmt)
    date_formats = _pick_formats(stats, DATE_FORMATS, "date")
    if date_formats and share(*[f"date{DATE_FORMATS.index(f)}" for f in date_formats]) >= THRESHOLD:
        fmt.date_formats = date_formats
        return TypeDecision("date", "DATE", fmt)
    if share("time") >= THRESHOLD:
        return TypeDecision("time", "TIME", fmt)
    if share("email") >= THRESHOLD:
        return TypeDecision("email", "VARCHAR", fmt)
    if share("url") >= THRESHOLD:
        return TypeDecision("url", "VARCHAR", fmt)
    if _hint(name, "phone", "fax", "tel", "mobile") and share("phone") >= 0.8:
        return TypeDecision("phone", "VARCHAR", fmt)
    if _hint(name, "zip", "postal", "postcode", "plz"):
        return TypeDecision("postal_code", "VARCHAR", fmt)
    if _hint(name, "country"):
        return TypeDecision("country", "VARCHAR", fmt)
    return TypeDecision(_text_semantic(name, stats, rows, unique), "VARCHAR", fmt)


def _text_semantic(name: str, stats: dict[str, float], rows: int, unique: bool) -> SemanticType:
    n = stats["present"]
    distinct = stats.get("distinct", 0)
    avg_len = stats.get("avg_len", 0) or 0
    if stats.get("uuid", 0) / n >= THRESHOLD:
        return "id"
    codes = stats.get("code", 0) / n >= THRESHOLD and avg_len <= 16
    if codes and (unique or id_like_name(name) or stats.get("alnum_code", 0) / n >= THRESHOLD):
        return "id"
    if avg_len > 40 or (stats.get("spaces", 0) / n > 0.5 and distinct > 0.5 * n and avg_len > 15):
        return "free_text"
    if distinct <= max(20, 0.05 * n) or (distinct <= 100 and distinct < 0.5 * n):
        return "categorical"
    if id_like_name(name):
        return "id"
    return "free_text" if stats.get("spaces", 0) / n > 0.3 else "unknown"


SHAPE_SQL = (
    "regexp_replace(regexp_replace(left({v}, 24), '[0-9]', '9', 'g'), '[A-Za-z]', 'A', 'g')"
)


def shape_sql(value: str) -> str:
    """Pattern class of a value: `B00417` -> `A99999`, `2024-01-31` -> `9999-99-99`."""
    return SHAPE_SQL.format(v=value)


_SYMBOLS = re.compile(r"[$€£¥]|USD|EUR|GBP")


def currency_symbols(values: list[str]) -> list[str]:
    return sorted({m.group(0) for v in values for m in _SYMBOLS.finditer(v)})
