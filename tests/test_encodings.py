"""Text in any encoding: each legacy code page is detected, decoded right, and loaded right.

Every file holds real text of its language: a city and a sentence per row. A file that is too
short to decide gets an `encoding_uncertain` issue with its confidence, never silent mojibake.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.interpreter import interpret
from dia_assets.platform.files import encodings
from dia_assets.platform.files.encodings import detect, detect_lines, sample_lines

TEXTS: dict[str, list[tuple[str, str]]] = {
    "cp1252": [("Zürich", "Falsches Üben von Xylophonmusik quält jeden größeren Zwerg."),
               ("Besançon", "Le cœur déçu mais l'âme plutôt naïve, Louÿs rêva de crapaüter en canoë."),
               ("A Coruña", "El pingüino Wenceslao hizo kilómetros bajo exhaustiva lluvia y frío.")],
    "utf-16": [("Kraków", "Zażółć gęślą jaźń; 日本語; Ελληνικά."),
               ("Москва", "Съешь же ещё этих мягких французских булок.")],
    "utf-8-sig": [("Łódź", "Příliš žluťoučký kůň úpěl ďábelské ódy."),
                  ("서울", "나는 유리를 먹을 수 있어요.")],
    "cp1250": [("Łódź", "Zażółć gęślą jaźń."),
               ("Plzeň", "Příliš žluťoučký kůň úpěl ďábelské ódy."),
               ("Győr", "Árvíztűrő tükörfúrógép.")],
    "iso-8859-2": [("Kraków", "Pchnąć w tę łódź jeża lub ośm skrzyń fig."),
                   ("Plzeň", "Příliš žluťoučký kůň úpěl ďábelské ódy."),
                   ("Székesfehérvár", "Árvíztűrő tükörfúrógép.")],
    "cp1251": [("Москва", "Съешь же ещё этих мягких французских булок, да выпей чаю."),
               ("Київ", "Чуєш їх, доцю, га? Кумедна ж ти, прощайся без ґольфів!"),
               ("София", "Жълтата дюля беше щастлива, че пухът, който цъфна, замръзна като гьон.")],
    "koi8-r": [("Санкт-Петербург", "В чащах юга жил бы цитрус? Да, но фальшивый экземпляр!"),
               ("Новосибирск", "Широкая электрификация южных губерний даст мощный толчок подъёму хозяйства."),
               ("Екатеринбург", "Эх, чужак, общий съём цен шляп (юфть) - вдрызг!")],
    "iso-8859-7": [("Αθήνα", "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία."),
                   ("Θεσσαλονίκη", "Γαζίες και μυρτιές δεν θα βρω πια στο χρυσαφί ξέφωτο."),
                   ("Άργος", "Το πουλί πετάει ψηλά πάνω από τη θάλασσα.")],
    "cp1254": [("İstanbul", "Pijamalı hasta yağız şoföre çabucak güvendi."),
               ("Eskişehir", "Küçük çocuklar bahçede oyun oynuyorlar."),
               ("Muğla", "Şu çılgın Türk gençleri ılık sıcak suyu içti.")],
    "cp1257": [("Šiauliai", "Įlinkdama fechtuotojo špaga sublykčiojusi pragręžė apvalų arbūzą."),
               ("Rīga", "Glāžšķūņa rūķīši dzērumā čiepj Baha koncertflīģeļu vākus."),
               ("Klaipėda", "Mūsų šalies sostinė yra gražus miestas.")],
    "shift_jis": [("東京", "私はガラスを食べられます。それは私を傷つけません。"),
                  ("大阪", "いろはにほへと　ちりぬるを　わかよたれそ　つねならむ"),
                  ("京都", "日本語の文章を正しく読み込めるかどうか確認します。")],
    "gb18030": [("北京", "我能吞下玻璃而不伤身体。"),
                ("上海", "今天天气很好，我们一起去公园散步吧。"),
                ("广州", "这是一个测试句子，用来检查中文编码。")],
    "euc-kr": [("서울", "나는 유리를 먹을 수 있어요. 그래도 아프지 않아요."),
               ("부산", "다람쥐 헌 쳇바퀴에 타고파."),
               ("대구", "오늘 날씨가 정말 좋네요.")],
}
LEGACY = [enc for enc in TEXTS if not enc.startswith("utf")]


def csv_bytes(rows: list[tuple[str, str]], encoding: str) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["city", "sentence"])
    writer.writerows(rows)
    return out.getvalue().encode(encoding)


def values(source, column: str) -> set[str]:  # noqa: ANN001
    col = source.column(column)
    return set(col.examples) | {v for v, _ in col.top_values if v is not None}


def reads_the_same(raw: bytes, chosen: str, written: str) -> bool:
    """`chosen` names the written encoding or one that reads these bytes identically
    (cp1253 for Greek without `Ά`, cp1254 for ISO-8859-9 Turkish)."""
    try:
        return raw.decode(chosen) == raw.decode(written)
    except UnicodeDecodeError:
        return False


def issues(interp, kind: str) -> list:  # noqa: ANN001
    return [i for i in interp.quality_issues if i.kind == kind]


@pytest.mark.parametrize("encoding", list(TEXTS))
def test_each_encoding_is_detected_and_decoded(tmp_path: Path, encoding: str) -> None:
    raw = csv_bytes(TEXTS[encoding], encoding)
    (tmp_path / "cities.csv").write_bytes(raw)
    interp = interpret(tmp_path)
    src = interp.source("cities")
    assert src.parse.ok and src.row_count == len(TEXTS[encoding])
    assert src.parse.encoding == encoding or reads_the_same(raw, src.parse.encoding, encoding)
    assert values(src, "city") == {city for city, _ in TEXTS[encoding]}
    assert values(src, "sentence") == {sentence for _, sentence in TEXTS[encoding]}
    assert not issues(interp, "encoding_uncertain")
    if encoding in LEGACY:
        assert src.parse.encoding_confidence is not None and src.parse.encoding_confidence >= encodings.UNSURE


@pytest.mark.parametrize("row", [0, 1, 2])
@pytest.mark.parametrize("encoding", LEGACY)
def test_one_row_city_and_sentence_is_enough(tmp_path: Path, encoding: str, row: int) -> None:
    """The realistic tiny file: a header and one row, a city and one sentence."""
    city, sentence = TEXTS[encoding][row]
    raw = csv_bytes([(city, sentence)], encoding)
    (tmp_path / "one.csv").write_bytes(raw)
    interp = interpret(tmp_path)
    src = interp.source("one")
    assert reads_the_same(raw, src.parse.encoding, encoding), src.parse.encoding
    assert values(src, "city") == {city} and values(src, "sentence") == {sentence}
    assert not issues(interp, "encoding_uncertain")


@pytest.mark.parametrize("encoding", LEGACY)
def test_a_lone_city_is_decoded_right_or_reported_unsure(tmp_path: Path, encoding: str) -> None:
    """A city name alone is often undecidable (`Plzeò` reads as well as `Plzeň`, `Ýstanbul`
    as `İstanbul`): then the file says so, with the confidence and the runner-up, never silently."""
    city = TEXTS[encoding][0][0]
    raw = f"city\n{city}\n".encode(encoding)
    (tmp_path / "town.csv").write_bytes(raw)
    interp = interpret(tmp_path)
    src = interp.source("town")
    unsure = issues(interp, "encoding_uncertain")
    if not reads_the_same(raw, src.parse.encoding, encoding):
        assert unsure, f"{city} read as {src.parse.encoding} without an issue"
    if unsure:
        assert src.parse.encoding_confidence < encodings.UNSURE
        assert f"confidence {src.parse.encoding_confidence}" in unsure[0].message


def test_unsure_decision_is_an_issue_with_confidence_and_both_readings(tmp_path: Path) -> None:
    (tmp_path / "towns.csv").write_bytes("city\nPlzeň\n".encode("cp1250"))
    interp = interpret(tmp_path)
    src = interp.source("towns")
    [issue] = issues(interp, "encoding_uncertain")
    assert issue.severity == "warning" and issue.source == "towns"
    assert "towns.csv" in issue.message and "confidence" in issue.message and "runner-up" in issue.message
    assert src.parse.encoding in issue.message
    assert src.parse.encoding_confidence is not None and src.parse.encoding_confidence < encodings.UNSURE
    readings = " ".join(issue.examples)
    assert "Plzeň" in readings and "Plzeò" in readings  # the two readings a reviewer chooses between
    assert "UTF-8" in issue.suggested_action and "CODEPAGE" in issue.suggested_action


def test_a_schema_file_declares_the_code_page(tmp_path: Path) -> None:
    """The undecidable file of the test above, with its code page declared beside it."""
    (tmp_path / "towns.csv").write_bytes("city\nPlzeň\n".encode("cp1250"))
    (tmp_path / "load.sql").write_text("BULK INSERT towns FROM 'towns.csv' WITH (FIRSTROW = 2, CODEPAGE = '1250');\n")
    interp = interpret(tmp_path)
    src = interp.source("towns")
    assert src.parse.encoding == "cp1250" and values(src, "city") == {"Plzeň"}
    assert not issues(interp, "encoding_uncertain")


def test_mixed_file_decodes_its_legacy_lines_in_the_detected_encoding(tmp_path: Path) -> None:
    """Mostly UTF-8 with some Russian lines in cp1251 (a file appended to by two programs)."""
    utf8 = [("Zürich", "Grüße aus der Schweiz."), ("Kraków", "Zażółć gęślą jaźń.")]
    legacy = [("Москва", "Съешь же ещё этих мягких французских булок, да выпей чаю."),
              ("Новосибирск", "Широкая электрификация южных губерний даст мощный толчок.")]
    raw = csv_bytes(utf8, "utf-8") + csv_bytes(legacy, "cp1251").split(b"\n", 1)[1]
    (tmp_path / "mixed.csv").write_bytes(raw)
    interp = interpret(tmp_path)
    src = interp.source("mixed")
    assert src.parse.encoding == "utf-8+cp1251"
    assert values(src, "city") == {c for c, _ in utf8 + legacy}
    [issue] = issues(interp, "mixed_encoding")
    assert "decoded as cp1251" in issue.message and issue.count == 2


def test_json_lines_in_a_legacy_encoding(tmp_path: Path) -> None:
    rows = [{"city": c, "sentence": s} for c, s in TEXTS["koi8-r"]]
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\nnot json\n"
    (tmp_path / "events.jsonl").write_bytes(text.encode("koi8-r"))
    interp = interpret(tmp_path)
    src = interp.source("events")
    assert src.parse.encoding == "koi8-r" and src.parse.bad_rows == 1
    assert values(src, "city") == {c for c, _ in TEXTS["koi8-r"]}


def test_utf8_files_pay_no_detection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path) -> None:
        raise AssertionError(f"detection ran on UTF-8 file {path}")

    monkeypatch.setattr(encodings, "detect", refuse)
    (tmp_path / "cities.csv").write_bytes(csv_bytes(TEXTS["cp1250"], "utf-8"))
    (tmp_path / "events.jsonl").write_text(json.dumps({"city": "Łódź"}, ensure_ascii=False) + "\n", encoding="utf-8")
    interp = interpret(tmp_path)
    assert interp.source("cities").parse.encoding == "utf-8"
    assert interp.source("events").parse.encoding == "utf-8"


def test_large_file_is_judged_on_a_bounded_sample(tmp_path: Path) -> None:
    """Head plus windows across the file, a bounded number of bytes of non-UTF-8 lines."""
    path = tmp_path / "big.csv"
    line = csv_bytes([TEXTS["cp1251"][0]], "cp1251").split(b"\n", 1)[1]
    path.write_bytes(b"city,sentence\n" + line * (6_000_000 // len(line)))
    lines = sample_lines(path, path.stat().st_size)
    assert sum(len(x) for x in lines) <= encodings.SAMPLE + encodings.MAX_LINE
    assert detect(path).encoding == "cp1251"


def test_candidates_cover_the_code_pages_of_europe_and_east_asia() -> None:
    for name in ("cp1252", "latin-1", "cp1250", "iso-8859-2", "cp1251", "koi8-r", "iso-8859-5", "iso-8859-7",
                 "cp1253", "cp1254", "iso-8859-9", "cp1257", "iso-8859-13", "shift_jis", "cp932", "euc-jp",
                 "gb18030", "big5", "euc-kr", "cp949"):
        assert name in encodings.CANDIDATES


@pytest.mark.parametrize(("encoding", "city", "sentence"), [
    ("euc-jp", "大阪", "私はガラスを食べられます。それは私を傷つけません。"),
    ("big5", "臺北", "我能吞下玻璃而不傷身體。"),
    ("iso-8859-5", "Москва", "Съешь же ещё этих мягких французских булок, да выпей чаю."),
    ("iso-8859-13", "Rīga", "Glāžšķūņa rūķīši dzērumā čiepj Baha koncertflīģeļu vākus."),
])
def test_other_candidates_read_their_languages(encoding: str, city: str, sentence: str) -> None:
    raw = f"{city},{sentence}".encode(encoding)
    found = detect_lines([raw])
    assert reads_the_same(raw, found.encoding, encoding) and not found.uncertain


def test_build_loads_the_original_text_into_the_warehouse(tmp_path: Path) -> None:
    """`dia build` end to end: every table in the DuckDB warehouse holds the exact Unicode text."""
    from dia_assets.pipeline import run

    data = tmp_path / "data"
    data.mkdir()
    for encoding, rows in TEXTS.items():
        (data / f"cities_{encoding.replace('-', '_')}.csv").write_bytes(csv_bytes(rows, encoding))
    result = run(data, tmp_path / "ws")
    con = duckdb.connect(result.load.warehouse, read_only=True)
    try:
        for table in result.manifest.tables:
            encoding = next(e for e in TEXTS if table.source_path == f"cities_{e.replace('-', '_')}.csv")
            got = con.execute(f'SELECT city, sentence FROM "{table.name}"').fetchall()
            assert sorted(got) == sorted(TEXTS[encoding]), encoding
        assert len(result.manifest.tables) == len(TEXTS)
    finally:
        con.close()
