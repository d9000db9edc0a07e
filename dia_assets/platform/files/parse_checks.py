"""The parse checks itself: every file is read right or an issue names it and says what is unsettled.

Checked on the sniffed sample (constant field count, no stray characters at the ends of values, a
header decided by types) and after the read (records in = rows out + rejected lines).
"""

from __future__ import annotations

from dia_assets.contracts.interpretation import QualityIssue
from dia_assets.platform.files.csv_prepare import Prepared, declared_columns
from dia_assets.platform.files.encodings import Detection
from dia_assets.platform.files.header import column_type

VISIBLE = {"\t": "tab", "\n": "\\n", "\r\n": "\\r\\n", "\r": "\\r"}


def show(text: str) -> str:
    return VISIBLE.get(text) or repr(text)


def confidence(prep: Prepared) -> float:
    """1.0 when the sample splits evenly and cleanly and the header was settled by types."""
    value = prep.dialect.consistency if prep.dialect.fields > 1 else 1.0
    if prep.dialect.stray:
        value *= 0.5
    if not prep.header.certain:
        value *= 0.7
    return round(value, 3)


def _issue(source: str, kind: str, message: str, action: str, severity: str = "warning",
           count: int = 0, examples: list[str] | None = None) -> QualityIssue:
    return QualityIssue(source=source, kind=kind, severity=severity, message=message,
                        suggested_action=action, count=count, examples=examples or [])


def reading_issues(prep: Prepared, source: str, file: str, empty_labels: list[int]) -> list[QualityIssue]:
    """What the reader decided that a reviewer should know, and what it is unsure of."""
    out: list[QualityIssue] = []
    d = prep.dialect
    score = confidence(prep)
    if d.fields > 1 and d.consistency < 0.98:
        out.append(_issue(
            source, "parse_uncertain",
            f"{file}: only {d.consistency:.0%} of sampled records have {d.fields} fields with field "
            f"terminator {show(d.delimiter)} and record terminator {show(d.terminator)} "
            f"(confidence {score})",
            "Check the export's terminators; a schema file (.sql) beside the data can declare them.",
        ))
    if d.fields == 1 and _split_lines(prep) >= 0.3:
        out.append(_issue(
            source, "parse_uncertain",
            f"{file}: read as one column: no field terminator splits its records evenly, though "
            f"{_split_lines(prep):.0%} of sampled records hold one (newlines inside unquoted values?)",
            "Check the export's terminators; a schema file (.sql) beside the data can declare them.",
        ))
    if d.stray:
        out.append(_issue(
            source, "parse_uncertain",
            f"{file}: every value of column(s) {d.stray} ends with the same character; the field "
            f"terminator may be longer than {show(d.delimiter)} (confidence {score})",
            "Check the export's field terminator; a schema file (.sql) can declare it.",
            count=len(d.stray),
        ))
    if not prep.header.header:
        declared = bool(declared_columns(prep.declared, d.fields))
        out.append(_issue(
            source, "headerless_file",
            f"{file}: no header row ({prep.header.reason}); columns named "
            + ("from the schema file" if declared else f"column_1..column_{len(prep.raw_names)}"),
            "Name the columns in the overrides, or put a schema file (.sql) beside the data.",
            severity="info",
        ))
    if prep.header.overruled:
        out.append(_issue(
            source, "declared_header_is_data",
            f"{file}: {prep.header.overruled}; line 1 is read as a record, not skipped",
            "None needed if line 1 is a record; if it is a header after all, fix the schema file or the export.",
        ))
    if not prep.header.header and not prep.header.certain:
        out.append(_issue(
            source, "parse_uncertain",
            f"{file}: took the first row as data, but could not settle it: {prep.header.reason} "
            f"(confidence {score})",
            "If the first row is a header, say so in the overrides or add a schema file (.sql).",
        ))
    elif not prep.header.certain:
        out.append(_issue(
            source, "parse_uncertain",
            f"{file}: took the first row as a header, but could not settle it: {prep.header.reason} "
            f"(confidence {score})",
            "If the first row is data, say so in the overrides or add a schema file (.sql).",
        ))
    if empty_labels:
        out.append(_issue(
            source, "empty_column_name",
            f"{file}: header has empty label(s) at column(s) {empty_labels}; named column_N",
            "Name the columns in the overrides or fix the export.",
            count=len(empty_labels),
        ))
    if prep.text.fallback_lines:
        out.extend(encoding_issues(prep.detection, source, file))
    if prep.text.mixed:
        lines = prep.text.first_fallback or []
        out.append(_issue(
            source, "mixed_encoding",
            f"{file}: {prep.text.fallback_lines} line(s) are not UTF-8 and were decoded as {prep.text.fallback} "
            f"(the rest is UTF-8); first at line(s) {lines}",
            "Check those lines; re-export the file in one encoding if they look wrong.",
            count=prep.text.fallback_lines, examples=[f"line {n}" for n in lines],
        ))
    hexes = hex_columns(prep)
    if hexes:
        out.append(_issue(
            source, "hex_binary",
            f"{file}: column(s) {hexes} hold hex-encoded binary (0x...); kept as text, not numbers",
            "None needed; decode in a view if the bytes matter.", severity="info", count=len(hexes),
        ))
    padded = padded_columns(prep)
    if padded:
        out.append(_issue(
            source, "fixed_width_padding",
            f"{file}: column(s) {padded} are padded with trailing spaces to a fixed width; "
            "the profile marks them for trimming (value_format.trim)",
            "None needed; trim in the overrides if the padding matters.",
            severity="info", count=len(padded),
        ))
    return out


def encoding_issues(detection: Detection | None, source: str, file: str) -> list[QualityIssue]:
    """A legacy encoding chosen without confidence: which one, how sure, what came second, and
    the same text as both read it. A declared encoding is taken as given."""
    d = detection
    if d is None or d.declared_in or not d.uncertain:
        return []
    reads = f"reads as {d.language}, " if d.language else ""
    runner = f"; runner-up {d.runner_up} (confidence {d.runner_up_confidence})" if d.runner_up else ""
    broken = f"; {d.undecodable} sampled line(s) do not decode as {d.encoding}" if d.undecodable else ""
    examples = [f"{enc}: {text}" for enc, text in zip((d.encoding, d.runner_up), d.examples, strict=False)]
    return [_issue(
        source, "encoding_uncertain",
        f"{file}: not UTF-8; decoded as {d.encoding} ({reads}confidence {d.confidence}){runner}{broken}",
        "Check its text for wrong letters (the examples show both readings); re-export it as UTF-8, or "
        "declare its code page in a schema file (.sql) beside it: BULK INSERT ... WITH (CODEPAGE = '1250'), "
        "COPY ... ENCODING 'WIN1250' or LOAD DATA ... CHARACTER SET cp1250.",
        examples=examples,
    )]


def _split_lines(prep: Prepared) -> float:
    """Share of sampled records that contain a usual field terminator."""
    records = prep.dialect.records
    if not records:
        return 0.0
    return sum(any(c in r[0] for c in ",;\t|") for r in records) / len(records)


def hex_columns(prep: Prepared) -> list[str]:
    """Columns whose sampled values are all `0x` + hex digits (bulk-copy exports of binary)."""
    records = prep.dialect.records[1 if prep.header.header else 0:]
    out = []
    for index in range(prep.dialect.fields):
        values = [r[index] for r in records if len(r) > index and r[index].strip()]
        if values and column_type(values) == "hex":
            out.append(prep.raw_names[index] if index < len(prep.raw_names) else f"column_{index + 1}")
    return out


def padded_columns(prep: Prepared) -> list[str]:
    """Columns whose values mostly end in spaces and share one width (fixed-width padding)."""
    records = prep.dialect.records[1 if prep.header.header else 0:]
    names = prep.raw_names
    out = []
    for index in range(prep.dialect.fields):
        values = [r[index] for r in records if len(r) > index and r[index]]
        padded = [v for v in values if v.endswith(" ")]
        if len(values) >= 3 and len(padded) >= len(values) * 0.5 and len({len(v) for v in values}) == 1:
            out.append(names[index] if index < len(names) else f"column_{index + 1}")
    return out


def verify_counts(prep: Prepared, source: str, file: str, rows: int, bad: int) -> list[QualityIssue]:
    """Records found while rewriting must all arrive: as rows, as rejected lines, or as the header."""
    if prep.records_written is None:
        return []
    expected = prep.records_written - (1 if prep.header.header else 0)
    if rows + bad == expected:
        return []
    return [_issue(
        source, "parse_uncertain",
        f"{file}: {prep.records_written} records split by {show(prep.dialect.terminator)}, but "
        f"{rows} rows and {bad} rejected lines were read",
        "Check the export's record terminator.", count=abs(expected - rows - bad),
    )]
