"""Formula cells a workbook holds without a value.

A sheet is read from the values Excel saved with its formulas (openpyxl `data_only=True`). A
workbook written by a program (openpyxl, some exporters) may carry formulas and no saved values:
every such cell would load as NULL, unannounced. They are found in the sheet XML and named (sheet,
cell, formula). They are not computed: that takes an Excel engine, and a value computed other than
as Excel does would be a silent change; saving the workbook in Excel or LibreOffice stores them.

The check streams each sheet's XML (expat, far cheaper than openpyxl's own parse), and only for a
workbook whose sheets hold a formula at all.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from dia_assets.contracts.interpretation import QualityIssue

FORMULA_TAG = re.compile(rb"<(?:\w+:)?f[\s>/]")
REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
EXAMPLES = 5


@dataclass(frozen=True)
class FormulaCell:
    row: int  # 1-based, as in the sheet
    column: int  # 1-based
    formula: str

    @property
    def coordinate(self) -> str:
        # openpyxl is imported where a workbook is read, not when the code location loads
        from openpyxl.utils.cell import get_column_letter

        return f"{get_column_letter(self.column)}{self.row}"


def unvalued_formulas(path: Path) -> dict[str, list[FormulaCell]]:
    """Sheet title -> its formula cells without a saved value. A formula whose saved value is
    the empty string (`t="str"`) has one."""
    out: dict[str, list[FormulaCell]] = {}
    with zipfile.ZipFile(path) as archive:
        members = set(archive.namelist())
        for title, member in _sheet_parts(archive, members).items():
            if member in members and _has_formula(archive, member):
                cells = _scan_sheet(archive, member)
                if cells:
                    out[title] = cells
    return out


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _sheet_parts(archive: zipfile.ZipFile, members: set[str]) -> dict[str, str]:
    """Sheet title -> the archive member holding its XML (workbook.xml and its relationships)."""
    workbook = "xl/workbook.xml"
    rels_path = "xl/_rels/workbook.xml.rels"
    if workbook not in members or rels_path not in members:
        return {}
    targets = {}
    for rel in ElementTree.fromstring(archive.read(rels_path)):
        target = rel.get("Target", "")
        targets[rel.get("Id")] = target.lstrip("/") if target.startswith("/") else posixpath.normpath(
            posixpath.join("xl", target))
    out = {}
    for element in ElementTree.fromstring(archive.read(workbook)).iter():
        if _local(element.tag) == "sheet":
            part = targets.get(element.get(f"{{{REL_NS}}}id"))
            if part:
                out[element.get("name", "")] = part
    return out


def _has_formula(archive: zipfile.ZipFile, member: str) -> bool:
    """Whether the sheet's XML holds a formula element (a byte scan, no parse)."""
    tail = b""
    with archive.open(member) as fh:
        while block := fh.read(1 << 20):
            if FORMULA_TAG.search(tail + block):
                return True
            tail = block[-8:]
    return False


def _scan_sheet(archive: zipfile.ZipFile, member: str) -> list[FormulaCell]:
    from openpyxl.utils.cell import coordinate_to_tuple, get_column_letter

    out = []
    shared: dict[str, tuple[str, str]] = {}  # shared formula index -> (formula, its cell)
    row = column = 0
    with archive.open(member) as fh:
        for event, element in ElementTree.iterparse(fh, events=("start", "end")):
            tag = _local(element.tag)
            if event == "start":
                if tag == "row":
                    row, column = int(element.get("r") or row + 1), 0
                continue
            if tag == "c":
                ref = element.get("r")
                row, column = coordinate_to_tuple(ref) if ref else (row, column + 1)
                formula = value = None
                for child in element:
                    if _local(child.tag) == "f":
                        formula = child
                    elif _local(child.tag) == "v":
                        value = child.text
                if formula is not None:
                    text = _formula_text(formula, shared, f"{get_column_letter(column)}{row}")
                    if not value and element.get("t") != "str":
                        out.append(FormulaCell(row, column, text))
            elif tag == "row":
                element.clear()
    return out


def _formula_text(formula: ElementTree.Element, shared: dict[str, tuple[str, str]], cell: str) -> str:
    """The formula as written in the cell, a shared formula translated to the cell."""
    text = "=" + (formula.text or "")
    index = formula.get("si")
    if formula.get("t") != "shared" or index is None:
        return text
    if formula.text:
        shared[index] = (text, cell)
        return text
    if index not in shared:
        return "(a shared formula)"
    from openpyxl.formula.translate import Translator, TranslatorError

    try:
        return Translator(shared[index][0], origin=shared[index][1]).translate_formula(cell)
    except TranslatorError:
        return shared[index][0]


def formula_issues(
    source: str, file: str, sheet: str, cells: list[FormulaCell], header_row: int, names: list[str]
) -> list[QualityIssue]:
    """One error per column with formula cells below the header that have no value."""
    from openpyxl.utils.cell import get_column_letter

    by_column: dict[int, list[FormulaCell]] = defaultdict(list)
    for cell in cells:
        if cell.row > header_row:
            by_column[cell.column].append(cell)
    out = []
    for column, found in sorted(by_column.items()):
        name = names[column - 1] if column <= len(names) else None
        shown = [f"{sheet}!{c.coordinate}: {c.formula}" for c in found[:EXAMPLES]]
        out.append(QualityIssue(
            source=source, column=name, kind="formula_without_value", severity="error", blocking=True,
            count=len(found), examples=shown,
            message=f"{file}[{sheet}]: {len(found)} formula cell(s) in column "
            f"{name or get_column_letter(column)!r} have no saved value ({shown[0]}"
            f"{', ...' if len(found) > 1 else ''}); they load as NULL, so the build is not accepted while "
            "they stand",
            suggested_action="Open the workbook in Excel or LibreOffice and save it (that stores the computed "
            "values), or exclude the column in the overrides.",
        ))
    return out
