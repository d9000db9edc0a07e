"""Real-export reading: every file is read with the right record and field counts, or an issue
names it. The corpus is generated here, one file per reading case, each with its expected counts."""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.interpreter import interpret
from dia_assets.pipeline import run
from dia_assets.platform.files.declared import parse_schema_file
from dia_assets.platform.files.dialect import sniff
from dia_assets.platform.files.header import decide

# A bulk-copy export: `+|` between fields, `&|` + newline between records, XML with newlines,
# a NUL as the empty-string marker, no header; a schema file names the columns.
SCHEMA_SQL = r"""
-- exported by a script
CREATE TABLE [Production].[DocType] (
    [DocTypeID] int NOT NULL,
    [Name] nvarchar(50) NOT NULL,
    CONSTRAINT [PK_DocType] PRIMARY KEY CLUSTERED ([DocTypeID] ASC)
)
GO
CREATE TABLE [Production].[Document] (
    [DocumentID] int NOT NULL,
    [Title] nvarchar(50) NOT NULL,
    [DocTypeID] int NOT NULL,
    [Content] xml NULL,
    [Note] nvarchar(100) NULL,
    CONSTRAINT [PK_Document] PRIMARY KEY CLUSTERED ([DocumentID] ASC)
)
GO
ALTER TABLE [Production].[Document] ADD CONSTRAINT [FK_Document_DocType]
    FOREIGN KEY ([DocTypeID]) REFERENCES [Production].[DocType] ([DocTypeID])
GO
BULK INSERT [Production].[Document] FROM 'C:\export\Document.dat'
    WITH (DATAFILETYPE = 'char', FIELDTERMINATOR = '+|', ROWTERMINATOR = '&|\n', TABLOCK)
GO
BULK INSERT [Production].[DocType] FROM 'C:\export\DocType.dat'
    WITH (FIELDTERMINATOR = '+|', ROWTERMINATOR = '&|\n')
GO
"""


def _document() -> bytes:
    rows = []
    for i in range(1, 13):
        xml = f"<doc id=\"{i}\">\n  <p>Section {i}, part one</p>\n  <p>two</p>\n</doc>" if i % 3 else ""
        note = "\x00" if i % 4 == 0 else ("" if i % 4 == 1 else f"checked by #{i}")
        rows.append(f"{i}+|Document {i}+|{1 + i % 2}+|{xml}+|{note}&|\n")
    return "".join(rows).encode()


def _reviews() -> bytes:
    text = ["Great bike.\nWould buy again.", "Too heavy", "Fine,\nbut the seat\nhurts", "ok"]
    return "".join(
        f"{i}+|{700 + i}+|{text[i % 4]}+|{1 + i % 5}+|2013-0{1 + i % 9}-1{i % 9}&|\n" for i in range(1, 21)
    ).encode()


def _lines(header: str, rows: list[str], sep: str = "\n") -> bytes:
    return (sep.join([header, *rows]) + sep).encode()


# file -> (content, source name, expected records, expected fields)
CORPUS: dict[str, tuple[bytes, str, int, int]] = {
    "schema.sql": (SCHEMA_SQL.encode(), "", 0, 0),
    "Document.dat": (_document(), "document", 12, 5),
    "DocType.dat": (b"1+|Manual&|\n2+|Guide&|\n3+|Sheet&|\n", "doc_type", 3, 2),
    "reviews.txt": (_reviews(), "reviews", 20, 5),
    "headerless.csv": (
        _lines("1,John,2020-01-01", [f"{i},Name {i},2020-02-{i:02d}" for i in range(2, 9)]), "headerless", 8, 3,
    ),
    "double_pipe.csv": (
        _lines("id||name||price", [f"{i}||item {i}||.{90 + i}" for i in range(1, 8)]), "double_pipe", 7, 3,
    ),
    "tilde_pipe.txt": (
        _lines("code~|label~|qty", [f"C{i}~|Label | {i}~|{i * 3}" for i in range(1, 8)]), "tilde_pipe", 7, 3,
    ),
    "tabs.tsv": (_lines("id\tcity\tpop", [f"{i}\tCity {i}\t{i * 1000}" for i in range(1, 6)]), "tabs", 5, 3),
    "semicolons.csv": (
        _lines("id;amount;when", [f"{i};{i},50;2021-01-0{i}" for i in range(1, 7)], sep="\r\n"), "semicolons", 6, 3,
    ),
    "old_mac.csv": (_lines("id,name", [f"{i},n{i}" for i in range(1, 6)], sep="\r"), "old_mac", 5, 2),
    "empty_label.csv": (_lines("id,,amount", [f"{i},x{i},{i}.5" for i in range(1, 5)]), "empty_label", 4, 3),
    "dup_labels.csv": (_lines("id,name,name", [f"{i},a{i},b{i}" for i in range(1, 5)]), "dup_labels", 4, 3),
    "mixed_encoding.csv": (
        b"id,name,city\n1,Jos\xc3\xa9,Z\xc3\xbcrich\n2,Zo\xeb,K\xf6ln\n3,Ana,Lisboa\n4,Ren\xc3\xa9e,Paris\n",
        "mixed_encoding", 4, 3,
    ),
    "hex_blobs.csv": (
        _lines("id,thumbnail,price", [f"{i},0x89504E47{i:04X}0D0A,.{i}7" for i in range(1, 7)]), "hex_blobs", 6, 3,
    ),
    "fixed_width.csv": (
        _lines("code,name,qty", [f"{i:<6},{'Name ' + str(i):<12},{i}" for i in range(1, 7)]), "fixed_width", 6, 3,
    ),
    "Person.dat": (  # `bcp -w`: UTF-16LE without a BOM
        "".join(f"{i}+|Ren\u00e9e {i}+|<Survey>\n<Income>{i}</Income>\n</Survey>+|\x00&|\n"
                for i in range(1, 9)).encode("utf-16-le"),
        "person", 8, 4,
    ),
    "bom_tabs.txt": ("id\tname\n1\tZo\u00eb\n2\tJos\u00e9\n".encode("utf-16"), "bom_tabs", 2, 2),
    "all_text.csv": (_lines("Name,City", ["John,Paris", "Mary,London", "Bob,Rome"]), "all_text", 3, 2),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("exports") / "data"
    data.mkdir()
    for name, (content, *_rest) in CORPUS.items():
        (data / name).write_bytes(content)
    return data


@pytest.fixture(scope="module")
def interp(corpus):
    return interpret(corpus)


def _issues(interp, source: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for q in interp.quality_issues:
        if q.source == source:
            out.setdefault(q.kind, []).append(q)
    return out


@pytest.mark.parametrize("file", [f for f in CORPUS if not f.endswith(".sql")])
def test_each_export_has_its_record_and_field_counts(interp, file):
    _, name, records, fields = CORPUS[file]
    src = interp.source(name)
    assert src.parse.ok, src.parse.errors
    assert (src.row_count, len(src.columns)) == (records, fields), src.parse


def test_no_file_is_silently_wrong(interp):
    """The invariant: counts right, or an issue naming the file says what could not be settled."""
    silent = []
    for file, (_, name, records, fields) in CORPUS.items():
        if file.endswith(".sql"):
            continue
        src = interp.source(name)
        right = (src.row_count, len(src.columns)) == (records, fields)
        flagged = any(file in q.message for q in interp.quality_issues
                      if q.source == name and q.kind in ("parse_uncertain", "unreadable_file", "ragged_rows"))
        if not right and not flagged:
            silent.append(file)
    assert silent == []


def test_bulk_copy_file_uses_schema_names_terminators_nul_and_newlines(interp, corpus):
    src = interp.source("document")
    assert src.parse.delimiter == "+|" and src.parse.record_terminator == "&|\n" and src.parse.rewritten
    assert not src.parse.header
    assert [c.name for c in src.columns] == ["document_id", "title", "doc_type_id", "content", "note"]
    assert src.declared is not None and src.declared.schema_file == "schema.sql"
    assert "headerless_file" in _issues(interp, "document")
    assert "parse_uncertain" not in _issues(interp, "document")
    assert src.column("content").max_length > 40  # the XML with its newlines, whole


def test_declared_keys_win_and_are_marked(interp):
    doc = interp.source("document")
    assert doc.primary_key.columns == ["document_id"] and doc.primary_key.source == "declared"
    assert doc.primary_key.confidence == 1.0 and "schema.sql" in doc.primary_key.reason
    fks = [fk for fk in interp.foreign_keys if fk.from_.source == "document" and fk.from_.columns == ["doc_type_id"]]
    assert len(fks) == 1
    assert fks[0].to.source == "doc_type" and fks[0].to.columns == ["doc_type_id"]
    assert fks[0].source == "declared" and fks[0].evidence == ["declared in schema.sql"]


def test_headerless_file_gets_column_names_and_an_issue(interp):
    src = interp.source("headerless")
    assert [c.name for c in src.columns] == ["column_1", "column_2", "column_3"]
    assert "headerless_file" in _issues(interp, "headerless")
    reviews = interp.source("reviews")
    assert reviews.parse.delimiter == "+|" and not reviews.parse.header
    assert any("\n" in e for e in reviews.column("column_3").examples)


def test_multi_character_and_other_terminators(interp):
    assert interp.source("double_pipe").parse.delimiter == "||"
    assert interp.source("tilde_pipe").parse.delimiter == "~|"
    assert "Label | 1" in interp.source("tilde_pipe").column("label").examples
    assert interp.source("tabs").parse.delimiter == "\t"
    semi = interp.source("semicolons")
    assert semi.parse.delimiter == ";" and semi.parse.record_terminator == "\r\n"
    assert interp.source("old_mac").parse.record_terminator == "\r"


def test_empty_and_duplicated_labels_are_still_a_header(interp):
    src = interp.source("empty_label")
    assert src.parse.header and [c.name for c in src.columns] == ["id", "column_2", "amount"]
    assert _issues(interp, "empty_label")["empty_column_name"][0].count == 1
    dup = interp.source("dup_labels")
    assert dup.parse.header and [c.name for c in dup.columns] == ["id", "name", "name_2"]


def test_mixed_utf8_and_cp1252_lines_decode_each_right(interp):
    src = interp.source("mixed_encoding")
    assert src.parse.encoding == "utf-8+cp1252"
    names = set(src.column("name").examples) | {v for v, _ in src.column("name").top_values}
    assert {"José", "Zoë", "Renée"} <= names
    issue = _issues(interp, "mixed_encoding")["mixed_encoding"][0]
    assert issue.count == 1 and issue.examples == ["line 3"]


def test_decimals_without_leading_zero_and_hex_columns(interp):
    assert interp.source("double_pipe").column("price").inferred_type.startswith("DECIMAL")
    hexes = interp.source("hex_blobs")
    assert hexes.column("thumbnail").inferred_type == "VARCHAR"
    assert "thumbnail" in _issues(interp, "hex_blobs")["hex_binary"][0].message
    assert hexes.column("price").inferred_type.startswith("DECIMAL")


def test_fixed_width_padding_is_flagged(interp):
    issue = _issues(interp, "fixed_width")["fixed_width_padding"][0]
    assert "code" in issue.message and "name" in issue.message


def test_utf16_bulk_copy_without_bom(interp):
    src = interp.source("person")
    assert src.parse.encoding == "utf-16-le" and src.parse.delimiter == "+|"
    assert "Renée 1" in src.column("column_2").examples
    assert any("\n<Income>" in e for e in src.column("column_3").examples)


def test_all_text_header_is_flagged_as_uncertain(interp):
    assert _issues(interp, "all_text")["parse_uncertain"][0].message.startswith("all_text.csv")


def test_schema_creator_loads_bulk_copy_files_with_the_same_counts(interp, corpus, tmp_path):
    result = run(corpus, tmp_path / "ws", interpretation=interp)
    for name in ("document", "doc_type", "reviews", "mixed_encoding"):
        load = result.load.tables[name]
        assert load.staged == interp.source(name).row_count, name
    con = duckdb.connect(result.load.warehouse, read_only=True)
    try:
        notes = dict(con.execute("SELECT document_id, note FROM document").fetchall())
        assert notes[4] == "" and notes[1] is None and notes[2] == "checked by #2"
        assert con.execute("SELECT name FROM mixed_encoding WHERE id = 2").fetchone()[0] == "Zoë"
    finally:
        con.close()


# ---------------------------------------------------------------- units


def test_sniff_prefers_the_longer_terminator_over_stray_characters():
    sample = "".join(f"{i}+|name {i}+|{i * 2}&|\n" for i in range(20))
    dialect = sniff(sample)
    assert (dialect.delimiter, dialect.terminator, dialect.fields, dialect.stray) == ("+|", "&|\n", 3, [])


def test_header_by_types():
    assert not decide([["1", "John", "2020-01-01"], ["2", "Mary", "2020-02-01"]]).header
    assert decide([["id", "name", "born"], ["1", "John", "2020-01-01"]]).header
    assert decide([["id", "", "amount"], ["1", "x", "2.5"], ["2", "y", "3"]]).header
    text = decide([["Name", "City"], ["John", "Paris"], ["Mary", "Rome"]])
    assert text.header and not text.certain


@pytest.mark.parametrize(
    ("sql", "table", "columns", "pk", "fields", "records"),
    [
        ("CREATE TABLE orders (id INT PRIMARY KEY, cust INT, FOREIGN KEY (cust) REFERENCES customers(id));\n"
         "LOAD DATA LOCAL INFILE '/tmp/orders.txt' INTO TABLE orders FIELDS TERMINATED BY '~|' "
         "LINES TERMINATED BY '\\n' (id, cust);", "orders", ["id", "cust"], ["id"], "~|", "\n"),
        ("CREATE TABLE public.t (a integer, b text, PRIMARY KEY (a));\n"
         "COPY public.t (a, b) FROM '/x/t.csv' WITH (FORMAT csv, DELIMITER ';', HEADER false);",
         "public.t", ["a", "b"], ["a"], ";", None),
        ("CREATE TABLE dbo.x ([k] int, [v] varchar(10), CONSTRAINT pk PRIMARY KEY ([k]))\nGO\n"
         "BULK INSERT dbo.x FROM 'x.dat' WITH (FIELDTERMINATOR = '||', ROWTERMINATOR = '0x0a')\nGO",
         "dbo.x", ["k", "v"], ["k"], "||", "\n"),
    ],
)
def test_schema_files_in_each_dialect(tmp_path, sql, table, columns, pk, fields, records):
    path = tmp_path / "schema.sql"
    path.write_text(sql)
    declared = parse_schema_file(path)[table.lower()]
    assert [c.name for c in declared.columns] == columns and declared.primary_key == pk
    assert declared.field_terminator == fields and declared.record_terminator == records


def test_declared_foreign_key_orphans_are_measured(tmp_path):
    (tmp_path / "schema.sql").write_text(
        "CREATE TABLE parent (pid INT PRIMARY KEY, label TEXT);\n"
        "CREATE TABLE child (cid INT PRIMARY KEY, owner INT REFERENCES parent (pid));\n"
    )
    (tmp_path / "parent.csv").write_text("pid,label\n1,a\n2,b\n")
    (tmp_path / "child.csv").write_text("cid,owner\n10,1\n11,2\n12,9\n13,\n")
    result = interpret(tmp_path)
    fk = next(f for f in result.foreign_keys if f.from_.source == "child" and f.from_.columns == ["owner"])
    assert fk.source == "declared" and fk.to.source == "parent" and fk.to.columns == ["pid"]
    assert fk.orphan_count == 1 and fk.orphan_examples == ["9"] and fk.coverage == pytest.approx(2 / 3)
    assert result.source("child").primary_key.source == "declared"


def test_header_decisions_that_cannot_be_settled_say_so():
    dirty = decide([["N/A", "John", "2020-01-01", "5"], ["1", "Mary", "2020-02-01", "6"], ["2", "Ann", "2021-01-01", "7"]])
    assert not dirty.header and not dirty.certain and "2 of 3 typed values fit" in dirty.reason
    assert not decide([["Accounting", "Finance"]]).certain  # one record: header, or one row of data?
    assert decide([["customer_id", "name"]]).certain


# ---------------------------------------------------------------- generated exports

WORDS = ["alpha", "beta", "gamma", "delta", "road", "bike", "seat", "red", "blue", "green", "Paris", "Zoë", "José"]
KINDS = ["int", "dec", "date", "ts", "name", "textc", "hex", "xml", "guid", "flag", "opt"]
DIALECTS = [(",", "\n"), (";", "\r\n"), ("\t", "\n"), ("|", "\n"), ("+|", "&|\n"), ("||", "\n"),
            ("~|", "\r\n"), ("+|", "\n"), (",", "\r")]


def _value(rnd: random.Random, kind: str, i: int, bulk: bool) -> str:
    word = rnd.choice(WORDS)
    return {
        "id": str(i + 1), "int": str(rnd.randint(-50, 5000)), "dec": rnd.choice([".97", "1.5", "12.00", ".5", "3"]),
        "date": f"20{rnd.randint(10, 23)}-0{rnd.randint(1, 9)}-1{rnd.randint(0, 9)}",
        "ts": f"2014-0{rnd.randint(1, 9)}-1{rnd.randint(0, 9)} 00:00:00.000",
        "name": " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 3))), "textc": f"{word}, {word}",
        "hex": "0x" + "".join(rnd.choice("0123456789ABCDEF") for _ in range(rnd.randint(4, 20))),
        "xml": f"<a>\n<b>{word}</b>\n</a>" if bulk else f"<a><b>{word}</b></a>",
        "guid": f"{{{rnd.getrandbits(32):08X}-1234-5678-9ABC-{rnd.getrandbits(48):012X}}}",
        "flag": rnd.choice(["0", "1"]), "opt": rnd.choice(["", "x", "\x00" if bulk else "y"]),
    }[kind]


def _generated(rnd: random.Random, folder: Path, count: int) -> dict[str, tuple[int, int]]:
    """Random exports: dialect, header or not, column kinds, 1 to 200 records, encodings."""
    expected = {}
    for n in range(count):
        delim, term = rnd.choice(DIALECTS)
        bulk = len(delim) > 1 or term == "&|\n"
        kinds = (["id"] if rnd.random() < 0.8 else []) + [rnd.choice(KINDS) for _ in range(rnd.randint(1, 6))]
        kinds += ["name"] * (2 - len(kinds))
        rows = [[_value(rnd, k, i, bulk) for k in kinds] for i in range(rnd.choice([1, 2, 3, 5, 20, 200]))]
        labels = [f"{k}_{j}" if rnd.random() < 0.5 else f"{k.title()}{j}" for j, k in enumerate(kinds)]
        if rnd.random() < 0.2:
            labels[rnd.randrange(len(labels))] = ""
        records = ([labels] if rnd.random() < 0.5 else []) + rows
        if bulk:
            text = "".join(delim.join(r) + term for r in records)
        else:
            buf = io.StringIO()
            csv.writer(buf, delimiter=delim, lineterminator=term).writerows(records)
            text = buf.getvalue()
        cut = rnd.random() < 0.2 and len(records) > 1
        if cut:  # no terminator after the last record: a record cut short, set aside (final_record.py)
            text = text[: -len(term)]
        encoding = rnd.choice(["utf-8", "utf-8", "cp1252", "mixed", "utf-16"])
        if encoding == "mixed":  # every third line cp1252, the rest UTF-8
            raw = b"\n".join(line.encode("cp1252", "replace") if i % 3 == 1 else line.encode()
                              for i, line in enumerate(text.split("\n")))
        else:
            raw = text.encode(encoding, "replace")
        (folder / f"g{n:03d}.csv").write_bytes(raw)
        expected[f"g{n:03d}"] = (len(rows) - cut, len(kinds), cut)
    return expected


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_exports_are_right_or_flagged(tmp_path, seed):
    """Bulk-copy files whose newlines inside values meet a newline terminator cannot be read
    right; they, and unsettled all-text headers, must be named in an issue."""
    expected = _generated(random.Random(seed), tmp_path, 40)
    interp = interpret(tmp_path)
    right, silent = 0, []
    for name, (rows, width, cut) in expected.items():
        src = interp.source(name)
        kinds = {q.kind for q in interp.quality_issues if q.source == name}
        assert ("truncated_record" in kinds) == cut, name
        if (src.row_count, len(src.columns)) == (rows, width):
            right += 1
        elif not kinds & {"parse_uncertain", "ragged_rows", "unreadable_file"}:
            silent.append((name, (src.row_count, len(src.columns)), (rows, width)))
    assert silent == [] and right >= 30


AW_SQL = r"""PRINT '*** Creating Tables';
GO
CREATE TABLE [Person].[Person](
    [BusinessEntityID] [int] NOT NULL,
    [FirstName] [Name] NOT NULL,
    [Demographics] [XML]([Person].[IndividualSurveySchemaCollection]) NULL,
    [rowguid] uniqueidentifier ROWGUIDCOL NOT NULL CONSTRAINT [DF_Person_rowguid] DEFAULT (NEWID()),
    [ModifiedDate] [datetime] NOT NULL CONSTRAINT [DF_Person_ModifiedDate] DEFAULT (GETDATE())
) ON [PRIMARY];
GO
CREATE TABLE [Sales].[SalesOrderHeader](
    [SalesOrderID] [int] IDENTITY (1, 1) NOT FOR REPLICATION NOT NULL,
    [SalesOrderNumber] AS (ISNULL(N'SO' + CONVERT(nvarchar(23), [SalesOrderID]), N'*** ERROR ***')),
    [CustomerID] [int] NOT NULL,
    [ModifiedDate] [datetime] NOT NULL
) ON [PRIMARY];
GO
BULK INSERT [Person].[Person] FROM '$(SqlSamplesSourceDataPath)Person.csv'
WITH (CHECK_CONSTRAINTS, CODEPAGE='ACP', DATAFILETYPE = 'widechar', FIELDTERMINATOR= '+|',
      ROWTERMINATOR = '&|\n', KEEPIDENTITY, TABLOCK);
ALTER TABLE [Person].[Person] WITH CHECK ADD
    CONSTRAINT [PK_Person_BusinessEntityID] PRIMARY KEY CLUSTERED ([BusinessEntityID]) ON [PRIMARY];
GO
ALTER TABLE [Sales].[SalesOrderHeader] ADD
    CONSTRAINT [PK_SalesOrderHeader_SalesOrderID] PRIMARY KEY CLUSTERED ([SalesOrderID]) ON [PRIMARY];
ALTER TABLE [Sales].[SalesOrderHeader] WITH CHECK ADD CONSTRAINT [FK_SalesOrderHeader_Person]
    FOREIGN KEY ([CustomerID]) REFERENCES [Person].[Person]([BusinessEntityID]);
GO
"""


def test_adventureworks_style_install_script(tmp_path):
    """T-SQL sqlglot cannot read (ROWGUIDCOL, ON [PRIMARY]) falls back to a plain reading; a computed
    column is not in the data file; `$(path)Person.csv` names the file; keys come from ALTER TABLE."""
    (tmp_path / "instawdb.sql").write_text(AW_SQL)
    person = "".join(
        f"{i}+|Name {i}+|<Survey>\n  <Income>{i}</Income>\n</Survey>+|{{0000000{i}-AAAA-BBBB-CCCC-DDDDDDDDDDDD}}"
        f"+|2014-01-0{i} 00:00:00&|\n" for i in range(1, 8)
    )
    (tmp_path / "Person.csv").write_bytes(person.encode("utf-16-le"))
    (tmp_path / "SalesOrderHeader.csv").write_text(
        "".join(f"{100 + i}\t{1 + i % 7}\t2014-02-0{1 + i % 9} 00:00:00\n" for i in range(30)))
    result = interpret(tmp_path)
    p = result.source("person")
    assert (p.row_count, [c.name for c in p.columns]) == (
        7, ["business_entity_id", "first_name", "demographics", "rowguid", "modified_date"])
    assert p.primary_key.columns == ["business_entity_id"] and p.primary_key.source == "declared"
    soh = result.source("sales_order_header")
    assert (soh.row_count, [c.name for c in soh.columns]) == (30, ["sales_order_id", "customer_id", "modified_date"])
    fk = next(f for f in result.foreign_keys if f.from_.source == "sales_order_header")
    assert (fk.from_.columns, fk.to.source, fk.to.columns, fk.source) == (
        ["customer_id"], "person", ["business_entity_id"], "declared")
    assert fk.orphan_count == 0


PG_DUMP = "SET statement_timeout = 0;\nSELECT pg_catalog.set_config('search_path', '', false);\nCREATE TABLE public.customer (\n    customer_id integer DEFAULT nextval('public.customer_customer_id_seq'::regclass) NOT NULL,\n    store_id smallint NOT NULL,\n    first_name text NOT NULL,\n    activebool boolean DEFAULT true NOT NULL,\n    create_date date DEFAULT ('now'::text)::date NOT NULL\n);\nALTER TABLE public.customer OWNER TO postgres;\nCREATE TABLE public.store (store_id integer NOT NULL, manager_staff_id smallint NOT NULL);\nCOPY public.customer (customer_id, store_id, first_name, activebool, create_date) FROM stdin;\n1\t1\tMARY\tt\t2006-02-14\n\\.\nALTER TABLE ONLY public.customer\n    ADD CONSTRAINT customer_pkey PRIMARY KEY (customer_id);\nALTER TABLE ONLY public.store\n    ADD CONSTRAINT store_pkey PRIMARY KEY (store_id);\nALTER TABLE ONLY public.customer\n    ADD CONSTRAINT customer_store_id_fkey FOREIGN KEY (store_id) REFERENCES public.store(store_id) ON UPDATE CASCADE ON DELETE RESTRICT;\n"
MYSQLDUMP = '/*!40101 SET NAMES utf8 */;\nDROP TABLE IF EXISTS `orderdetails`;\nCREATE TABLE `orderdetails` (\n  `orderNumber` int(11) NOT NULL,\n  `productCode` varchar(15) NOT NULL,\n  `quantityOrdered` int(11) NOT NULL,\n  PRIMARY KEY (`orderNumber`,`productCode`),\n  KEY `productCode` (`productCode`),\n  CONSTRAINT `orderdetails_ibfk_1` FOREIGN KEY (`orderNumber`) REFERENCES `orders` (`orderNumber`),\n  CONSTRAINT `orderdetails_ibfk_2` FOREIGN KEY (`productCode`) REFERENCES `products` (`productCode`)\n) ENGINE=InnoDB DEFAULT CHARSET=latin1;\n'


@pytest.mark.parametrize(
    ("sql", "table", "pk", "fks"),
    [
        (PG_DUMP, "public.customer", ["customer_id"], [(["store_id"], "public.store", ["store_id"])]),
        (MYSQLDUMP, "orderdetails", ["orderNumber", "productCode"],
         [(["orderNumber"], "orders", ["orderNumber"]), (["productCode"], "products", ["productCode"])]),
    ],
)
def test_schema_dumps(tmp_path, sql, table, pk, fks):
    """pg_dump (keys in ALTER TABLE ONLY, rows inline after COPY ... FROM stdin) and mysqldump."""
    path = tmp_path / "dump.sql"
    path.write_text(sql)
    declared = parse_schema_file(path)[table]
    assert declared.primary_key == pk
    assert [(f.columns, f.ref_source, f.ref_columns) for f in declared.foreign_keys] == fks


def test_declared_keys_that_cannot_be_used_are_reported(tmp_path):
    (tmp_path / "schema.sql").write_text(
        "CREATE TABLE child (cid INT PRIMARY KEY, owner INT REFERENCES missing_parent (pid));\n")
    (tmp_path / "child.csv").write_text("cid,owner\n10,1\n11,2\n")
    result = interpret(tmp_path)
    issue = next(q for q in result.quality_issues if q.kind == "declared_key_unused")
    assert issue.source == "child" and "missing_parent" in issue.message and "no data file" in issue.message


def test_headerless_file_with_a_huge_first_field(tmp_path):
    big = "x" * 200_000
    (tmp_path / "big.csv").write_text(f"1,{big},2020-01-01\n2,small,2020-01-02\n3,tiny,2020-01-03\n")
    src = interpret(tmp_path).source("big")
    assert (src.row_count, len(src.columns), src.parse.header) == (3, 3, False)


def test_declared_primary_key_the_data_contradicts_is_reported(tmp_path):
    (tmp_path / "schema.sql").write_text("CREATE TABLE t (k INT PRIMARY KEY, v TEXT);\n")
    (tmp_path / "t.csv").write_text("k,v\n1,a\n1,b\n2,c\n,d\n")
    result = interpret(tmp_path)
    assert result.source("t").primary_key.source == "declared"
    issue = next(q for q in result.quality_issues if q.kind == "declared_key_violated")
    assert issue.source == "t" and "1 duplicated and 1 missing" in issue.message


def test_nul_bytes_in_a_quoted_csv_are_data(tmp_path):
    """A quoted CSV is no bulk-copy export: a NUL byte, alone or inside a value, is kept as it is."""
    (tmp_path / "q.csv").write_bytes(b'id,name,note\n1,"Smith, J",\x00\n2,"Doe",x\n3,"Roe",\n4,"Ka\x00y",y\n')
    src = interpret(tmp_path).source("q")
    assert src.parse.ok and src.row_count == 4
    assert (src.column("note").blank_count, src.column("note").null_count) == (0, 1)
    assert "Ka\x00y" in src.column("name").examples and "\x00" in src.column("note").examples


def test_nul_marker_far_past_the_sample_is_an_empty_string(tmp_path):
    """The sniffer reads a sample; the whole-file scan (made while hashing) finds a NUL marker
    that first appears megabytes in."""
    body = b"".join(b"%d,name%d,x\n" % (i, i) for i in range(1, 200_001))
    (tmp_path / "late.csv").write_bytes(b"id,name,note\n" + body + b"200001,last,\x00\n")
    src = interpret(tmp_path).source("late")
    assert src.parse.ok and src.row_count == 200_001
    assert src.column("note").blank_count == 1 and src.column("note").null_count == 0


def test_cp1252_line_far_past_the_sample_is_read_again_decoded(tmp_path, monkeypatch):
    """The reader starts on a clean head while the whole file is scanned; a cp1252 byte
    megabytes in makes it read again per line, with the same answer as reading after the scan."""
    body = b"".join(b"%d,name%d,x\n" % (i, i) for i in range(1, 200_001))
    data = tmp_path / "data"
    data.mkdir()
    (data / "late.csv").write_bytes(b"id,name,note\n" + body + "200001,Ren\u00e9e,y\n".encode("cp1252"))
    interp = interpret(data)
    src = interp.source("late")
    assert src.parse.ok and src.row_count == 200_001 and src.parse.encoding == "cp1252" and src.parse.rewritten
    from dia_assets.platform.files import scanned

    # the loader reads the same way: the early read is dropped, the row decoded
    result = run(data, tmp_path / "ws", interpretation=interp)
    assert result.load.tables["late"].staged == 200_001 and result.load.tables["late"].rejected == 0
    con = duckdb.connect(result.load.warehouse, read_only=True)
    try:
        assert con.execute("SELECT name FROM late WHERE id = 200001").fetchone()[0] == "Ren\u00e9e"
    finally:
        con.close()
    monkeypatch.setattr(scanned, "looks_clean", lambda _path: False)  # no early read
    after_scan = interpret(data).source("late")
    assert src.model_dump() == after_scan.model_dump()


def test_timestamps_with_utc_offsets_are_instants(tmp_path):
    """PostgreSQL exports write timestamptz as `2022-06-21 05:31:29+00`: an instant, not text."""
    (tmp_path / "ev.csv").write_text(
        "id,at\n1,2022-06-21 05:31:29+00\n2,2022-06-20 08:30:22.5+00\n3,2022-06-20 10:00:00+05:30\n4,\n")
    col = interpret(tmp_path).source("ev").column("at")
    assert (col.semantic_type, col.inferred_type, col.unparseable_count) == ("timestamp", "TIMESTAMPTZ", 0)
    assert col.min.startswith("2022-06-20 04:30:00")  # +05:30 read as an offset, shown in UTC
