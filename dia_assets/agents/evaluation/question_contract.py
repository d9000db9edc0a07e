"""The question contract: what a model reading the question (and its evidence) can declare, so
the verifier bench measures the detection a user gets, not the detection the gold SQL buys.

It is the gold contract (`gold_contract`) narrowed to what the text states:

- shape, kept: the result columns (count and meaning) and the granularity keys (the grain);
- order: only when the text asks for one ("sorted", "ranked", "top", "... first",
  "alphabetically", ...) or states a top-k (a stated limit with a superlative: "the 5 ...
  with the most ..."): the gold's first ORDER BY key, plus later keys the text names after
  "then"; never a tie-breaker the question does not state;
- limit: only when the text states the number (digits or a number word), or 1 for a
  superlative ("the most", "highest", ...);
- filters: only those whose literals all appear in the text, as written or in an obvious
  rendering (a number with thousands separators or as a percentage, a quoted or bare string,
  a date in ISO or words, a year or month for its first or last day, the period an exclusive
  bound closes); a flag (= 1/0, true/false) when the text names its column, negated or not;
  IS [NOT] NULL only when the text names the column and says "without" (IS NULL) or "with",
  "each", "per" (IS NOT NULL) it;
- entity_key: only when the text names the counted entity (its column, or its table when the
  column is a bare key);
- allow_empty: as the gold's result (a model declares a non-empty answer by default).

`narrow` is the whole rule: it never adds anything, so the question contract is always a part
of the gold contract. Tests pin every clause (tests/test_question_contract.py).
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from typing import Any

from dia_assets.agents.evaluation.gold_contract import gold_contract

_NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                 "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
                 "nineteen", "twenty"]
_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december"]
_SUPERLATIVES = re.compile(
    r"\b(most|least|highest|lowest|largest|smallest|biggest|best|worst|top|earliest|latest|oldest|"
    r"newest|youngest|longest|shortest|cheapest|costliest|priciest|greatest|fewest|busiest|"
    r"most recent|maximum|minimum|max|min)\b")
_ORDER_CUES = re.compile(
    r"\b(sort|sorted|sorting|order by|ordered|in (ascending|descending|alphabetical|chronological|"
    r"reverse) order|ascending|descending|alphabetical(ly)?|chronological(ly)?|rank|ranked|ranking|"
    r"top \w+|top|bottom \w+)\b"
    r"|\b(highest|lowest|largest|smallest|biggest|most|least|best|worst|newest|oldest|earliest|latest|"
    r"longest|shortest|cheapest|recent|greatest|fewest|busiest|youngest)\b[\w\s-]{0,24}?\bfirst\b")
_NULL_CUES = re.compile(r"\b(without|no|not|never|missing|unknown|none|empty|null|lack|lacking)\b")
_NOT_NULL_CUES = re.compile(r"\b(with|have|has|having|known|recorded|set|filled|each|every|per|earn|earns|earning|"
                            r"receive|receives|receiving|get|gets|hold|holds)\b")


def stated_text(question: str, evidence: str = "") -> str:
    """The text a model reads, lower-cased with spaces normalised."""
    return " ".join(f"{question} {evidence or ''}".lower().split())


def _token(form: str, text: str, case_text: str | None = None) -> bool:
    """`form` appears in the text as a whole token (not inside a longer word or number)."""
    pattern = r"(?<![\w.])" + re.escape(form) + r"(?![\w]|\.\d)"
    return re.search(pattern, case_text if case_text is not None else text) is not None


def _number_forms(value: float | int) -> set[str]:
    forms: set[str] = set()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        forms |= {str(value), f"{value:,}", f"{value:,}".replace(",", " ")}
        if 0 <= value < len(_NUMBER_WORDS):
            forms.add(_NUMBER_WORDS[value])
        if value >= 1000 and value % 1000 == 0:
            forms.add(f"{value // 1000}k")
    else:
        text = repr(value)
        forms |= {text, text.lstrip("0") if text.startswith("0.") else text, f"{value:,}"}
        if 0 < abs(value) < 1:
            pct = round(value * 100, 6)
            pct_text = str(int(pct)) if float(pct).is_integer() else repr(pct)
            forms |= {f"{pct_text}%", f"{pct_text} %", f"{pct_text} percent"}
    return forms


def _date(value: str) -> dt.date | None:
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})(?:[ t][\d:.]+)?", value.strip().lower())
    if not m:
        return None
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def _date_forms(d: dt.date, op: str | None) -> set[str]:
    month = _MONTHS[d.month - 1]
    forms = {d.isoformat(), d.strftime("%Y/%m/%d"), d.strftime("%m/%d/%Y"), d.strftime("%d/%m/%Y"),
             f"{month} {d.day}, {d.year}", f"{month} {d.day} {d.year}", f"{d.day} {month} {d.year}",
             f"{month[:3]} {d.day}, {d.year}", f"{d.day} {month[:3]} {d.year}"}
    if d.day == 1:
        forms |= {f"{month} {d.year}", f"{month[:3]} {d.year}", d.strftime("%Y-%m")}
        if op == "<":  # an exclusive bound closes the month before it: "in May 1995" < 1995-06-01
            prev = (d - dt.timedelta(days=1))
            pm = _MONTHS[prev.month - 1]
            forms |= {f"{pm} {prev.year}", f"{pm[:3]} {prev.year}", prev.strftime("%Y-%m")}
    if (d + dt.timedelta(days=1)).day == 1:  # a month's last day closes "in May 1995"
        forms |= {f"{month} {d.year}", f"{month[:3]} {d.year}", d.strftime("%Y-%m")}
    if (d.day, d.month) in ((1, 1), (31, 12)):
        forms.add(str(d.year))
    if d.day == 1 and d.month == 1 and op == "<":  # "in 1995" written as < 1996-01-01
        forms.add(str(d.year - 1))
    return forms


def literal_stated(value: Any, text: str, op: str | None = None, case_text: str | None = None) -> bool:
    """Whether a literal (or an obvious rendering of it) appears in the text. `text` is
    lower-cased (see `stated_text`); `case_text` the same text with its case, for codes of one
    or two characters (the letter 'A' is not the article "a")."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (int, float)):
        return any(_token(f, text) for f in _number_forms(value))
    raw = str(value)
    if op in ("like", "ilike", "not like"):
        raw = raw.replace("%", " ").replace("_", " ")
    raw = " ".join(raw.split())
    if not raw:
        return False
    d = _date(raw)
    if d is not None:
        return any(_token(f, text) for f in _date_forms(d, op))
    if re.fullmatch(r"-?\d+(\.\d+)?", raw):
        return literal_stated(float(raw) if "." in raw else int(raw), text, op)
    if len(raw) <= 2:
        source = case_text if case_text is not None else text
        return _token(raw, text, " ".join(source.split()))
    return _token(raw.lower(), text)


def _words(name: str) -> set[str]:
    """The words of a column or table name, without a short table prefix (`c_`, `ps_`), key
    suffixes (`_id`, `key` in `custkey`) and plural endings."""
    name = re.sub(r"([a-z])([A-Z])", r"\1 \2", name.split(".")[-1])
    parts = [p for p in re.split(r"[_\W]+", name.lower()) if p]
    if len(parts) > 1 and len(parts[0]) <= 2:
        parts = parts[1:]
    out = set()
    for p in parts:
        p = re.sub(r"(?<=\w{3})(key|id)$", "", p)
        if p not in ("id", "key", "code", "no", "num", "number") and len(p) > 1:
            out.add(_stem(p))
    return out


def _stem(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


# words that say how a column measures, not what: `commission_pct` is named by "commission"
_MEASURE_WORDS = {"pct", "percent", "amt", "qty", "num", "nbr", "cnt", "flag", "ind", "val"}


def _named(name: str, text: str) -> bool:
    """Every word of the name is in the text (an abbreviation such as `cust` as the start of a
    word: "customers"), a measure suffix (`_pct`, `_amt`, `_qty`) aside."""
    words = _words(name)
    if len(words) > 1:
        words = [w for w in words if w not in _MEASURE_WORDS] or words
    said = {_stem(w) for w in re.findall(r"[a-z0-9]+", text)}
    return bool(words) and all(w in said or (len(w) >= 4 and any(s.startswith(w) for s in said)) for w in words)


def order_asked(text: str) -> bool:
    return _ORDER_CUES.search(text) is not None


def limit_stated(n: int, text: str) -> bool:
    if any(_token(f, text) for f in _number_forms(n)):
        return True
    return n == 1 and _SUPERLATIVES.search(text) is not None


_TRUE = (1, True, "1", "t", "true", "y", "yes")
_FALSE = (0, False, "0", "f", "false", "n", "no")


def _filter_stated(flt: dict[str, Any], text: str, case_text: str) -> bool:
    op = (flt.get("op") or "").lower()
    column = flt.get("column") or ""
    value = flt.get("value")
    if op in ("=", "<>") and not isinstance(value, list) and (value in _TRUE or value in _FALSE):
        # a flag: "discontinued products" states discontinued = 1, "not discontinued" = 0
        negative = (value in _FALSE) != (op == "<>")
        return _named(column, text) and (_NULL_CUES.search(text) is not None) == negative
    if op in ("is null", "is not null"):
        cue = _NULL_CUES if op == "is null" else _NOT_NULL_CUES
        return _named(column, text) and cue.search(text) is not None
    values = value if isinstance(value, list) else [value]
    return bool(values) and all(literal_stated(v, text, op, case_text) for v in values)


def narrow(declared: dict[str, Any], question: str, evidence: str = "") -> dict[str, Any]:
    """The part of a declared (gold) contract that the question's text states (module doc)."""
    text = stated_text(question, evidence)
    case_text = f"{question} {evidence or ''}"
    out = copy.deepcopy(declared)
    order = out.get("order") or []
    kept_order = []
    top_k = out.get("limit") is not None and limit_stated(int(out["limit"]), text)
    if order and (order_asked(text) or (top_k and _SUPERLATIVES.search(text) is not None)):
        kept_order.append(order[0])
        after_then = text.split(" then ", 1)[1] if " then " in text else ""
        for item in order[1:]:
            if not after_then or not _named(item["column"], after_then):
                break
            kept_order.append(item)
    out["order"] = kept_order
    if out.get("limit") is not None and not limit_stated(int(out["limit"]), text):
        out.pop("limit")
    out["filters"] = [f for f in out.get("filters") or [] if _filter_stated(f, text, case_text)]
    entity = out.get("entity_key")
    # the counted entity: its column's words, or its table's when the column is only a key
    if entity and not _named(entity if _words(entity) else entity.split(".")[0], text):
        out.pop("entity_key")
    return out


def question_contract(sql: str, dialect: str, columns: list[str], question: str, evidence: str = "",
                      allow_empty: bool = False) -> dict[str, Any]:
    """The declare_contract arguments a model can know for this question (module doc)."""
    return narrow(gold_contract(sql, dialect, columns, allow_empty), question, evidence)
