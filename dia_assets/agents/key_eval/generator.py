"""Seeded random relational schemas with known keys, written as CSV exports.

A schema is drawn in three steps, each from the seed alone:

1. A logical model: entities with their keys (integer sequences, text codes, UUIDs, surrogate
   plus business key, composite keys of link, line and history tables), references between them
   (plain, role-named, self-references, 1:1 extensions, composite references), in the shape of
   a normalised application schema, a star or a snowflake.
2. A naming convention for the whole schema: snake, camel, Pascal, upper case; table prefixes on
   every column (`c_custkey`, `ss_item_sk`); key suffixes (`_id`, `_key`, `_sk`, `_code`, ...);
   bare `id` keys; plural tables; `dim_`/`fact_` affixes; abbreviated references (`cust_id`).
3. Data that respects every key, with the coincidences real data has: small integer columns
   (sizes, quantities, ratings, years) whose values all occur in some integer key.

Every primary and foreign key of the model is declared in `truth.json` (the layout of
`../shared/datasets/*/truth.json`), each tagged with the patterns it exercises, so a score can
be broken down by pattern. Nothing here is read by the interpreter.
"""

from __future__ import annotations

import csv
import json
import random
import string
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

# ------------------------------------------------------------------ vocabulary

ENTITIES: tuple[tuple[str, ...], ...] = (
    ("customer",), ("supplier",), ("product",), ("part",), ("invoice",), ("employee",),
    ("department",), ("store",), ("warehouse",), ("region",), ("nation",), ("country",), ("city",),
    ("category",), ("brand",), ("promotion",), ("campaign",), ("account",), ("shipment",),
    ("carrier",), ("vendor",), ("project",), ("task",), ("ticket",), ("agent",), ("course",),
    ("student",), ("instructor",), ("patient",), ("physician",), ("ward",), ("vehicle",),
    ("driver",), ("route",), ("flight",), ("airport",), ("airline",), ("hotel",), ("room",),
    ("guest",), ("member",), ("book",), ("author",), ("publisher",), ("branch",), ("policy",),
    ("claim",), ("contract",), ("tenant",), ("property",), ("device",), ("sensor",), ("machine",),
    ("material",), ("recipe",), ("event",), ("venue",), ("artist",), ("album",), ("track",),
    ("genre",), ("channel",), ("subscription",), ("plan",), ("team",), ("player",), ("season",),
    ("league",), ("school",), ("teacher",), ("currency",), ("language",), ("shift",), ("job",),
    ("skill",), ("incident",), ("asset",), ("location",), ("zone",), ("territory",), ("segment",),
    ("reason",), ("item",), ("client",), ("user",), ("organization",), ("facility",), ("lab",),
    ("ship", "mode"), ("call", "center"), ("web", "site"), ("web", "page"), ("catalog", "page"),
    ("income", "band"), ("household", "demographics"), ("customer", "demographics"),
    ("customer", "address"), ("product", "line"), ("cost", "center"), ("sales", "rep"),
    ("business", "unit"), ("payment", "method"), ("price", "list"), ("tax", "rate"),
    ("work", "order"), ("purchase", "order"), ("sales", "territory"), ("unit", "measure"),
    ("order", "status"), ("product", "category"), ("product", "subcategory"), ("sales", "channel"),
)
FACTS: tuple[tuple[str, ...], ...] = (
    ("sales",), ("returns",), ("inventory",), ("shipments",), ("bookings",), ("visits",),
    ("payments",), ("claims",), ("enrollments",), ("orders",), ("store", "sales"), ("web", "sales"),
    ("catalog", "sales"), ("store", "returns"), ("web", "returns"), ("transactions",), ("readings",),
    ("sessions",), ("deliveries",), ("rentals",),
)
ROLES: tuple[tuple[str, ...], ...] = (
    ("ship",), ("bill",), ("ship", "to"), ("bill", "to"), ("sold",), ("return",), ("primary",),
    ("secondary",), ("origin",), ("destination",), ("home",), ("billing",), ("shipping",),
    ("preferred",), ("original",), ("current",), ("previous",), ("alternate",), ("from",), ("to",),
)
DATE_ROLES: tuple[tuple[str, ...], ...] = (
    ("order", "date"), ("ship", "date"), ("due", "date"), ("sold", "date"), ("return", "date"),
    ("delivery", "date"), ("invoice", "date"), ("start", "date"), ("end", "date"), ("posted", "date"),
)
HIERARCHY: tuple[tuple[str, ...], ...] = (("parent",), ("manager",), ("reports", "to"), ("supervisor",))
EXTENSION_WORDS = ("details", "info", "profile", "ext", "extra", "attributes", "settings", "stats")
LINE_WORDS = (("line", "number"), ("line", "no"), ("seq",), ("line",), ("item", "no"), ("position",))
ATTRIBUTES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("name",), "name"), (("description",), "text"), (("title",), "name"), (("amount",), "money"),
    (("price",), "money"), (("unit", "price"), "money"), (("quantity",), "small"), (("size",), "small"),
    (("rating",), "tiny"), (("priority",), "tiny"), (("year",), "year"), (("age",), "age"),
    (("status",), "category"), (("type",), "category"), (("is", "active"), "bool"), (("flag",), "flag"),
    (("created", "at"), "timestamp"), (("start", "date"), "date"), (("email",), "email"),
    (("phone",), "phone"), (("city",), "city"), (("comment",), "text"), (("discount",), "ratio"),
    (("weight",), "money"), (("count",), "count"), (("score",), "percent"), (("level",), "tiny"),
    (("capacity",), "count"), (("floor",), "small"), (("seats",), "small"), (("duration",), "small"),
    (("balance",), "money"), (("notes",), "text"), (("code",), "shortcode"), (("grade",), "tiny"),
    (("version",), "tiny"), (("quarter",), "tiny"), (("units",), "count"), (("sequence",), "small"),
)
CITIES = ("Lyon", "Porto", "Graz", "Turku", "Leeds", "Ghent", "Bergen", "Kraków", "Brno", "Cork",
          "Malmö", "Split", "Tartu", "Basel", "Bilbao", "Genoa", "Aarhus", "Pécs", "Riga", "Nice")
WORDS = ("red", "quick", "final", "regular", "ironic", "bold", "silent", "even", "express", "pending",
         "careful", "blue", "special", "unusual", "slow", "fluffy", "daring", "brave", "quiet", "calm")


# ------------------------------------------------------------------ model


@dataclass(eq=False)
class Ref:
    """A reference from its table to `parent`'s key."""

    parent: LTable
    role: tuple[str, ...] = ()
    nullable: float = 0.0
    abbreviated: bool = False  # the column abbreviates the parent's name (`cust_id`)
    role_only: bool = False  # the column names a role, not the parent (`manager_id`)
    patterns: set[str] = field(default_factory=set)
    columns: list[str] = field(default_factory=list)  # filled by naming


@dataclass(eq=False)
class LTable:
    words: tuple[str, ...]
    kind: str  # entity | lookup | dim | date_dim | fact | link | line | history | extension
    rows: int
    key: str  # seq | text | uuid | surrogate | date | composite | extension (the base's key) | none
    refs: list[Ref] = field(default_factory=list)
    attrs: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    key_refs: list[Ref] = field(default_factory=list)  # references that are (part of) the key
    extra_key: list[str] = field(default_factory=list)  # own key columns: line | date | degenerate
    base: LTable | None = None  # extension: the table it extends
    pk_patterns: set[str] = field(default_factory=set)
    # filled by naming
    name: str = ""
    prefix: str = ""
    key_columns: list[str] = field(default_factory=list)
    business_column: str = ""
    columns: list[str] = field(default_factory=list)
    attr_columns: list[str] = field(default_factory=list)
    # filled by data
    data: dict[str, list[object]] = field(default_factory=dict)

    @property
    def composite(self) -> bool:
        return len(self.key_refs) + len(self.extra_key) > 1

    def key_values(self) -> list[tuple[object, ...]]:
        return list(zip(*(self.data[c] for c in self.key_columns), strict=True))


@dataclass
class Convention:
    case: str  # snake | camel | pascal | pascal_id | upper
    prefixed: str  # "" | glued (c_custkey) | words (c_customer_sk)
    suffix: str  # id | key | sk | code | no | number | num
    bare_pk: bool  # the primary key is `id`, references `customer_id`
    plural: bool
    affix: tuple[str, str]  # (dimension affix, fact affix), e.g. ("dim_", "fact_"); "" for none
    abbreviate: float  # share of references that abbreviate their parent's name

    def describe(self) -> str:
        parts = [self.case, f"suffix {self.suffix}"]
        if self.prefixed:
            parts.append(f"prefixed ({self.prefixed})")
        if self.bare_pk:
            parts.append("bare id keys")
        if self.plural:
            parts.append("plural tables")
        if any(self.affix):
            parts.append(f"affixes {self.affix}")
        return ", ".join(parts)


@dataclass
class GeneratedSchema:
    seed: int
    shape: str
    convention: Convention
    tables: list[LTable]

    def truth(self) -> dict:
        tables = {}
        for t in self.tables:
            entry: dict = {"csv": f"raw/{t.name}.csv", "row_count": t.rows, "columns": t.columns}
            if t.key != "none":
                entry["primary_key"] = list(t.key_columns)
                entry["primary_key_patterns"] = sorted(t.pk_patterns)
            entry["foreign_keys"] = [
                {"columns": r.columns, "ref_table": r.parent.name, "ref_columns": list(r.parent.key_columns),
                 "patterns": sorted(r.patterns)}
                for r in t.key_refs + t.refs
            ]
            tables[t.name] = entry
        return {"db": f"generated_{self.seed}", "source": {"generator": "dia key_eval", "seed": self.seed,
                "shape": self.shape, "convention": self.convention.describe()}, "tables": tables}


# ------------------------------------------------------------------ the logical model


def generate(seed: int, tables: int | None = None, scale: float = 1.0) -> GeneratedSchema:
    """A schema of `tables` tables (5-40 when not given), named and filled from `seed` alone."""
    rng = random.Random(seed)
    n = tables or rng.randint(5, 40)
    shape = rng.choices(["oltp", "star", "snowflake"], weights=[5, 3, 3])[0]
    conv = _convention(rng, shape)
    model = _Model(rng, n, shape, scale)
    model.build()
    _Namer(rng, conv).name(model.tables)
    for table in model.tables:
        _fill(rng, table, conv)
    return GeneratedSchema(seed, shape, conv, model.tables)


def write_schema(schema: GeneratedSchema, folder: Path) -> Path:
    """Write `raw/<table>.csv` for every table and `truth.json`; returns the raw folder."""
    raw = Path(folder) / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for t in schema.tables:
        with (raw / f"{t.name}.csv").open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(t.columns)
            writer.writerows(zip(*(t.data[c] for c in t.columns), strict=True))
    (Path(folder) / "truth.json").write_text(json.dumps(schema.truth(), indent=1), encoding="utf-8")
    return raw


def _convention(rng: random.Random, shape: str) -> Convention:
    prefixed = rng.choices(["", "glued", "words"], weights=[6, 1, 2] if shape == "oltp" else [4, 1, 4])[0]
    case = "snake" if prefixed else rng.choices(["snake", "camel", "pascal", "pascal_id", "upper"],
                                                weights=[5, 2, 2, 2, 1])[0]
    if prefixed == "glued":
        suffix = rng.choice(["key", "id", "no"])
    elif shape == "oltp":
        suffix = rng.choices(["id", "key", "code", "no", "number", "num"], weights=[10, 2, 1, 1, 1, 1])[0]
    else:
        suffix = rng.choices(["sk", "key", "id"], weights=[3, 3, 2])[0]
    affix = ("", "")
    if shape != "oltp" and not prefixed:
        affix = rng.choice([("", ""), ("dim_", "fact_"), ("", "_fact"), ("d_", "f_"), ("dim_", "")])
    return Convention(
        case=case, prefixed=prefixed, suffix=suffix,
        bare_pk=not prefixed and shape == "oltp" and rng.random() < 0.2,
        plural=not prefixed and rng.random() < 0.4, affix=affix,
        abbreviate=rng.choice([0.0, 0.0, 0.1, 0.3]),
    )


class _Model:
    def __init__(self, rng: random.Random, n: int, shape: str, scale: float) -> None:
        self.rng, self.n, self.shape, self.scale = rng, n, shape, scale
        self.tables: list[LTable] = []
        self.words = list(ENTITIES)
        rng.shuffle(self.words)

    def rows(self, lo: int, hi: int) -> int:
        return max(2, int(self.rng.randint(lo, hi) * self.scale))

    def entity(self, kind: str, lo: int, hi: int, key: str | None = None) -> LTable:
        taken = {t.words for t in self.tables}
        words = next(w for w in self.words if w not in taken)
        self.words.remove(words)
        if key is None:
            key = self.rng.choices(["seq", "text", "uuid"], weights=[12, 4, 1])[0]
        table = LTable(words, kind, self.rows(lo, hi), key)
        table.pk_patterns.add({"seq": "integer_key", "text": "text_key", "uuid": "uuid_key",
                               "surrogate": "surrogate_key", "date": "date_key"}[key])
        self.attrs(table, self.rng.randint(1, 5))
        self.tables.append(table)
        return table

    def attrs(self, table: LTable, count: int) -> None:
        taken = {a for a, _ in table.attrs}
        pool = [a for a in ATTRIBUTES if a[0] not in taken]
        table.attrs.extend(self.rng.sample(pool, min(count, len(pool))))

    def ref(self, child: LTable, parent: LTable, role: tuple[str, ...] = (), nullable: float = 0.0,
            *patterns: str) -> Ref:
        used = {r.role for r in child.refs + child.key_refs if r.parent is parent}
        if role in used or (not role and () in used):
            role = next(r for r in ROLES if r not in used)
        r = Ref(parent, role, nullable, patterns=set(patterns))
        if role:
            r.patterns.add("role_named")
        if parent is child:
            r.patterns.add("self_reference")
        if parent.composite:
            r.patterns.add("composite")
        if parent.key == "surrogate":
            r.patterns.add("surrogate_key")
        if parent.key == "text":
            r.patterns.add("text_key")
        return r

    def add_ref(self, child: LTable, parent: LTable, role: tuple[str, ...] = (), nullable: float = 0.0,
                *patterns: str) -> Ref:
        r = self.ref(child, parent, role, nullable, *patterns)
        child.refs.append(r)
        return r

    def build(self) -> None:
        {"oltp": self.oltp, "star": self.star, "snowflake": self.snowflake}[self.shape]()

    # -------------------------------------------------------------- shapes

    def oltp(self) -> None:
        rng = self.rng
        lookups = [self.entity("lookup", 3, 25, rng.choice(["seq", "seq", "text"])) for _ in range(max(1, self.n // 6))]
        entities = [self.entity("entity", 30, 400) for _ in range(max(2, self.n // 3))]
        for i, e in enumerate(entities):
            for parent in rng.sample(lookups, rng.randint(0, min(2, len(lookups)))):
                self.add_ref(e, parent, (), rng.choice([0.0, 0.0, 0.1]))
            for parent in rng.sample(entities[:i], rng.randint(0, min(2, i))):
                self.add_ref(e, parent, rng.choice([(), (), (), rng.choice(ROLES)]), rng.choice([0.0, 0.05]))
            if rng.random() < 0.15:
                r = self.add_ref(e, e, rng.choice(HIERARCHY), 1.0)  # nullable: roots have none
                r.role_only = True
                r.patterns.add("hierarchy")
        while len(self.tables) < self.n:
            kind = rng.choices(["line", "link", "history", "extension", "entity", "composite_ref"],
                               weights=[3, 3, 2, 2, 2, 2])[0]
            getattr(self, f"add_{kind}")(entities, lookups)

    def add_entity(self, entities: list[LTable], lookups: list[LTable]) -> None:
        e = self.entity("entity", 20, 300)
        for parent in self.rng.sample(entities, min(len(entities), self.rng.randint(1, 2))):
            self.add_ref(e, parent, (), 0.0)
        entities.append(e)

    def add_line(self, entities: list[LTable], lookups: list[LTable]) -> None:
        head = self.rng.choice(entities)
        line = LTable((*head.words[-1:], self.rng.choice(["line", "item", "detail", "entry"])), "line",
                      0, "composite")
        if any(t.words == line.words for t in self.tables):
            return self.add_entity(entities, lookups)
        line.key_refs.append(self.ref(line, head, (), 0.0))
        line.extra_key.append("line")
        line.pk_patterns.update({"composite", "dependent"})
        others = [e for e in entities if e is not head]
        if others:
            self.add_ref(line, self.rng.choice(others), (), 0.0)
        self.attrs(line, self.rng.randint(1, 3))
        self.tables.append(line)
        return None

    def add_link(self, entities: list[LTable], lookups: list[LTable]) -> None:
        if len(entities) < 2:
            return self.add_entity(entities, lookups)
        a, b = self.rng.sample(entities, 2)
        words = (a.words[-1], b.words[-1]) if self.rng.random() < 0.7 else (a.words[-1], b.words[-1], "map")
        if any(t.words == words for t in self.tables):
            return self.add_entity(entities, lookups)
        link = LTable(words, "link", 0, "composite")
        link.key_refs += [self.ref(link, a), self.ref(link, b)]
        link.pk_patterns.update({"composite", "link"})
        if self.rng.random() < 0.5:
            self.attrs(link, 1)
        self.tables.append(link)
        return None

    def add_history(self, entities: list[LTable], lookups: list[LTable]) -> None:
        e = self.rng.choice(entities)
        words = (e.words[-1], self.rng.choice(["history", "log", "assignment"]))
        if any(t.words == words for t in self.tables):
            return self.add_entity(entities, lookups)
        hist = LTable(words, "history", 0, "composite")
        hist.key_refs.append(self.ref(hist, e))
        if self.rng.random() < 0.4 and len(entities) > 1:
            hist.key_refs.append(self.ref(hist, self.rng.choice([x for x in entities if x is not e])))
        hist.extra_key.append("date")
        hist.pk_patterns.update({"composite", "history"})
        hist.attrs.append((("end", "date"), "date"))
        self.attrs(hist, 1)
        self.tables.append(hist)
        return None

    def add_extension(self, entities: list[LTable], lookups: list[LTable]) -> None:
        base = self.rng.choice([e for e in entities if e.key != "uuid"] or entities)
        words = (*base.words, self.rng.choice(EXTENSION_WORDS))
        if any(t.words == words for t in self.tables) or base.kind == "extension":
            return self.add_entity(entities, lookups)
        ext = LTable(words, "extension", 0, "extension", base=base)
        ext.key_refs.append(self.ref(ext, base, (), 0.0, "extension"))
        ext.pk_patterns.add("extension")
        self.attrs(ext, self.rng.randint(1, 4))
        self.tables.append(ext)
        return None

    def add_composite_ref(self, entities: list[LTable], lookups: list[LTable]) -> None:
        targets = [t for t in self.tables if t.composite and t.kind in ("link", "line")]
        if not targets:
            return self.add_link(entities, lookups)
        target = self.rng.choice(targets)
        words = (target.words[-1], self.rng.choice(["shipment", "allocation", "adjustment", "usage", "note"]))
        if any(t.words == words for t in self.tables):
            return self.add_entity(entities, lookups)
        child = LTable(words, "entity", self.rows(20, 300), self.rng.choice(["seq", "seq", "text"]))
        child.pk_patterns.add("integer_key" if child.key == "seq" else "text_key")
        self.add_ref(child, target, (), 0.0)
        self.attrs(child, self.rng.randint(1, 3))
        self.tables.append(child)
        return None

    def dims(self, count: int) -> list[LTable]:
        out = []
        for _ in range(count):
            key = self.rng.choices(["surrogate", "seq", "text"], weights=[4, 3, 1])[0]
            out.append(self.entity("dim", 10, 400, key))
        return out

    def date_dim(self) -> LTable:
        table = LTable(("date",), "date_dim", self.rows(200, 900), "date")
        table.pk_patterns.add("date_key")
        table.attrs = [(("date",), "calendar"), (("year",), "calendar_year"), (("month",), "calendar_month"),
                       (("day", "name"), "calendar_day")]
        self.tables.append(table)
        return table

    def facts(self, dims: list[LTable], dated: LTable, count: int) -> list[LTable]:
        out = []
        for words in self.rng.sample(FACTS, count):
            fact = LTable(words, "fact", self.rows(200, 2000), "none")
            for role in self.rng.sample(DATE_ROLES, self.rng.randint(1, 3)):
                fact.refs.append(self.ref(fact, dated, role[:-1], self.rng.choice([0.0, 0.0, 0.05]), "date_role"))
            for d in self.rng.sample(dims, min(len(dims), self.rng.randint(2, 7))):
                fact.refs.append(self.ref(fact, d, (), self.rng.choice([0.0, 0.0, 0.02]), "star"))
            if self.rng.random() < 0.6:  # a degenerate dimension and a line: the fact's key
                fact.key, fact.extra_key = "composite", ["ticket", "line"]
                fact.pk_patterns.update({"composite", "fact_key"})
            fact.attrs = [(("quantity",), "small"), (("amount",), "money")]
            self.attrs(fact, self.rng.randint(0, 3))
            self.tables.append(fact)
            out.append(fact)
        for d in dims:  # every dimension serves some fact
            if not any(r.parent is d for f in out for r in f.refs):
                fact = self.rng.choice(out)
                fact.refs.append(self.ref(fact, d, (), 0.0, "star"))
        for fact in out:
            if self.rng.random() < 0.3:  # a role-playing dimension
                d = self.rng.choice([r.parent for r in fact.refs if r.parent.kind == "dim"] or dims)
                fact.refs.append(self.ref(fact, d, self.rng.choice(ROLES), 0.05, "star"))
        keyed = [f for f in out if f.key == "composite"]
        if keyed and self.rng.random() < 0.5 and len(self.tables) < self.n:  # returns of a sales fact
            sales = self.rng.choice(keyed)
            words = (*sales.words[:-1], "returns") if sales.words[-1] != "returns" else ("refunds",)
            if not any(t.words == words for t in self.tables):
                ret = LTable(words, "fact", max(2, sales.rows // 5), "none")
                ret.refs.append(self.ref(ret, sales, (), 0.0, "star"))
                ret.refs.append(self.ref(ret, dated, ("return",), 0.0, "date_role"))
                ret.attrs = [(("return", "amount"), "money")]
                self.tables.append(ret)
        return out

    def star(self) -> None:
        dated = self.date_dim()
        nfacts = max(1, min(4, self.n // 6))
        dims = self.dims(max(2, self.n - nfacts - 2))
        for d in self.rng.sample(dims, len(dims) // 4):
            if d.kind == "dim" and self.rng.random() < 0.5 and len(self.tables) < self.n:
                ext = LTable((*d.words, self.rng.choice(EXTENSION_WORDS)), "extension", 0, "extension", base=d)
                ext.key_refs.append(self.ref(ext, d, (), 0.0, "extension"))
                ext.pk_patterns.add("extension")
                self.attrs(ext, 2)
                self.tables.append(ext)
        self.facts(dims, dated, nfacts)

    def snowflake(self) -> None:
        dated = self.date_dim()
        nfacts = max(1, min(3, self.n // 7))
        dims = self.dims(max(3, self.n - nfacts - 2))
        tops = dims[: max(1, len(dims) // 3)]
        for i, d in enumerate(dims[len(tops):]):  # dimensions point at their sub-dimensions
            parent = tops[i % len(tops)]
            self.add_ref(d, parent, (), 0.0, "snowflake")
            if self.rng.random() < 0.2:
                self.add_ref(d, d, self.rng.choice(HIERARCHY), 1.0, "hierarchy").role_only = True
        leaves = dims[len(tops):] or dims
        self.facts(leaves, dated, nfacts)


# ------------------------------------------------------------------ naming


class _Namer:
    def __init__(self, rng: random.Random, conv: Convention) -> None:
        self.rng, self.conv = rng, conv
        self.prefixes: set[str] = set()

    def fmt(self, words: list[str]) -> str:
        words = [w for w in words if w]
        case = self.conv.case
        if case == "snake":
            return "_".join(words)
        if case == "upper":
            return "_".join(words).upper()
        if case == "camel":
            return words[0] + "".join(w.capitalize() for w in words[1:])
        if case == "pascal_id":
            return "".join("ID" if w == "id" else w.capitalize() for w in words)
        return "".join(w.capitalize() for w in words)

    def table_name(self, t: LTable) -> str:
        words = list(t.words)
        if self.conv.prefixed == "glued" and len(words) > 1 and t.kind != "fact":
            words = ["".join(w[:4] if i < len(words) - 1 else w for i, w in enumerate(words))]
        if self.conv.plural and t.kind not in ("fact", "date_dim") and not words[-1].endswith(("s", "info", "ext", "extra")):
            words[-1] = plural(words[-1])
        dim_affix, fact_affix = self.conv.affix
        affix = dim_affix if t.kind in ("dim", "date_dim") else fact_affix if t.kind == "fact" else ""
        if t.kind == "date_dim" and not affix:
            words = ["date", "dim"]
        name = self.fmt(words)
        if affix.endswith("_"):
            name = self.fmt([affix.strip("_"), *words])
        elif affix.startswith("_"):
            name = self.fmt([*words, affix.strip("_")])
        return name

    def prefix(self, t: LTable) -> str:
        if not self.conv.prefixed:
            return ""
        words = t.name.lower().replace("-", "_").split("_")
        options = ["".join(w[0] for w in words), words[0][:2], words[0][:2] + "".join(w[0] for w in words[1:]),
                   words[0][:3]]
        if len(words) == 1 and t.kind == "line":
            options.insert(0, words[0][0])
        for p in options:
            if p not in self.prefixes:
                self.prefixes.add(p)
                return p
        n = 2
        while f"{options[0]}{n}" in self.prefixes:
            n += 1
        self.prefixes.add(f"{options[0]}{n}")
        return f"{options[0]}{n}"

    def col(self, t: LTable, words: list[str]) -> str:
        return self.fmt([t.prefix, *words] if t.prefix else words)

    def entity_words(self, t: LTable, abbreviate: bool) -> list[str]:
        """How a key column names its table: its entity words, or an abbreviation of them."""
        words = list(t.words) if t.kind != "date_dim" else ["date"]
        if self.conv.prefixed == "glued":
            return [abbreviation(words, self.rng) if abbreviate or len(words) > 1 else words[0]]
        if abbreviate:
            return [abbreviation(words, self.rng)]
        return words

    def name(self, tables: list[LTable]) -> None:
        used: set[str] = set()
        for t in tables:
            name = self.table_name(t)
            while name.lower() in used:
                name = self.fmt([name, "x"])
            used.add(name.lower())
            t.name = name
        for t in tables:
            t.prefix = self.prefix(t)
        for t in tables:  # parents first: a reference copies its parent's key names
            self.key(t, tables)
        for t in tables:
            self.columns(t)

    def suffix_words(self, glued_to: list[str] | None = None) -> list[str]:
        if self.conv.prefixed == "glued" and glued_to is not None:
            return [glued_to[-1] + self.conv.suffix]
        return [*(glued_to or []), self.conv.suffix]

    def key(self, t: LTable, tables: list[LTable]) -> None:
        if t.key_columns or t.key == "none" and not t.extra_key:
            return
        if t.key in ("seq", "text", "uuid", "surrogate", "date"):
            if self.conv.bare_pk and t.key != "surrogate":
                t.key_columns = [self.col(t, ["id"])]
            else:
                short = self.conv.prefixed == "glued" and self.rng.random() < 0.5 or (
                    self.conv.prefixed == "words" and len(t.words) > 1 and self.rng.random() < 0.5)
                t.key_columns = [self.col(t, self.suffix_words(self.entity_words(t, short)))]
            if t.key == "surrogate":
                business = "id" if self.conv.suffix != "id" else "code"
                t.business_column = self.col(t, [*self.entity_words(t, False), business])
            return
        cols: list[str] = []
        for r in t.key_refs:
            self.key(r.parent, tables)
            r.columns = self.ref_columns(t, r, {c.lower() for c in cols})
            cols += r.columns
        for extra in t.extra_key:
            words = {"line": list(self.rng.choice(LINE_WORDS)), "date": ["start", "date"],
                     "ticket": ["ticket", "number"]}[extra]
            if extra == "line" and self.conv.prefixed == "glued":
                words = ["".join(words)]
            cols.append(self.col(t, words))
        t.key_columns = cols

    def ref_columns(self, child: LTable, r: Ref, taken: set[str]) -> list[str]:
        """The column(s) of a reference, distinct from `taken` (lower-case names)."""
        for attempt in range(4):
            cols = self._ref_columns(child, r, attempt)
            if not any(c.lower() in taken for c in cols) and len({c.lower() for c in cols}) == len(cols):
                return cols
        r.role = (*r.role, "alt")
        r.patterns.add("role_named")
        return self._ref_columns(child, r, 0)

    def _ref_columns(self, child: LTable, r: Ref, attempt: int) -> list[str]:
        parent = r.parent
        if len(parent.key_columns) > 1:  # a composite reference keeps the parent's key names
            return [self.col(child, [*r.role, *self.strip(parent, c)]) for c in parent.key_columns]
        if r.role_only:
            return [self.col(child, [*r.role, *([] if r.role[-1] == "to" else [self.conv.suffix])])]
        rate = self.conv.abbreviate if not child.prefix else max(self.conv.abbreviate, 0.25 * (len(parent.words) > 1))
        abbreviate = attempt > 0 or r.abbreviated or self.rng.random() < rate
        if attempt > 1:  # two parents share a name: the initials of the whole name tell them apart
            words = [("".join(w[0] for w in parent.words[:-1]) + parent.words[-1][:4]) if len(parent.words) > 1
                     else parent.words[0][: 2 + attempt]]
        else:
            words = self.entity_words(parent, abbreviate) if abbreviate else []
        if abbreviate:
            r.abbreviated = True
            r.patterns.add("abbreviated")
        if child.prefix:
            r.patterns.add("prefixed")
        if self.conv.bare_pk and parent.key != "surrogate":
            return [self.col(child, [*r.role, *(words or self.entity_words(parent, False)), "id"])]
        if child.prefix and not abbreviate:
            return [self.col(child, [*r.role, *self.strip(parent, parent.key_columns[0])])]
        return [self.col(child, [*r.role, *self.suffix_words(words or self.entity_words(parent, False))])]

    def strip(self, t: LTable, column: str) -> list[str]:
        """A column's words without its table's prefix."""
        words = _split(column)
        if t.prefix and words and words[0] == t.prefix:
            words = words[1:]
        return words

    def columns(self, t: LTable) -> None:
        cols = list(t.key_columns)
        if t.business_column:
            cols.append(t.business_column)
        for r in t.refs:
            if not r.columns:
                r.columns = self.ref_columns(t, r, {c.lower() for c in cols})
            cols += [c for c in r.columns if c not in cols]
        seen = {c.lower() for c in cols}
        t.attr_columns = []
        for words, _kind in t.attrs:
            name = self.col(t, list(words))
            while name.lower() in seen:
                name = self.fmt([name, "2"])
            seen.add(name.lower())
            t.attr_columns.append(name)
        t.columns = cols + t.attr_columns


def plural(word: str) -> str:
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


def abbreviation(words: list[str], rng: random.Random) -> str:
    """A short form people write for a table's name: `cust`, `dept`, `cdemo`, `addr`."""
    head = words[-1]
    forms = [head[:4], head[:3], head[0] + "".join(ch for ch in head[1:] if ch not in "aeiou")[:3]]
    if len(words) > 1:
        forms += ["".join(w[0] for w in words[:-1]) + head[:4], "".join(w[0] for w in words)]
    forms = [f for f in forms if len(f) >= 2 and f != head]
    return rng.choice(forms) if forms else head


def _split(column: str) -> list[str]:
    out, word = [], ""
    for ch in column:
        if ch == "_":
            if word:
                out.append(word.lower())
            word = ""
        elif ch.isupper() and word and not word[-1].isupper():
            out.append(word.lower())
            word = ch
        else:
            word += ch
    if word:
        out.append(word.lower())
    return out


# ------------------------------------------------------------------ data


def _fill(rng: random.Random, t: LTable, conv: Convention) -> None:
    """Rows that respect every key; parents are filled before their children."""
    if t.data:
        return
    for r in t.refs + t.key_refs:
        if r.parent is not t:
            _fill(rng, r.parent, conv)
    if t.kind == "extension":
        base = t.key_refs[0].parent
        keys = [k[0] for k in base.key_values()]
        chosen = keys if rng.random() < 0.4 else sorted(rng.sample(keys, max(2, int(len(keys) * rng.uniform(0.3, 0.9)))),
                                                         key=keys.index)
        t.rows = len(chosen)
        t.data[t.key_columns[0]] = chosen
    elif t.key in ("seq", "text", "uuid", "surrogate", "date"):
        _own_key(rng, t)
    elif t.kind in ("line", "link", "history") or t.extra_key:
        _composite_key(rng, t)
    else:
        t.data = {}
    n = t.rows
    for r in t.refs:
        _reference(rng, t, r, n)
    for (words, kind), column in zip(t.attrs, t.attr_columns, strict=True):
        t.data[column] = [_attr(rng, kind, words, i, t) for i in range(n)]
    if t.business_column:
        t.data[t.business_column] = _codes(rng, n, t.words)


def _own_key(rng: random.Random, t: LTable) -> None:
    n, col = t.rows, t.key_columns[0]
    if t.key in ("seq", "surrogate"):
        start = rng.choices([1, 0, 100, 1000, 10000], weights=[12, 2, 1, 2, 1])[0]
        if rng.random() < 0.15:
            values = sorted(rng.sample(range(start, start + int(n * 1.4) + 2), n))
        else:
            values = list(range(start, start + n))
    elif t.key == "text":
        values = _codes(rng, n, t.words)
    elif t.key == "uuid":
        values = [f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-"
                  f"a{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}" for _ in range(n)]
    else:  # a date dimension: julian days or yyyymmdd integers over consecutive days
        first = date(2015, 1, 1) + timedelta(days=rng.randint(0, 1500))
        days = [first + timedelta(days=i) for i in range(n)]
        if rng.random() < 0.5:
            values = [int(d.strftime("%Y%m%d")) for d in days]
        else:
            values = [2415021 + (d - date(1900, 1, 1)).days + 1 for d in days]
        t.data["__days"] = days  # read by the calendar attributes
    if rng.random() < 0.15 and t.key != "date":
        rng.shuffle(values)
    t.data[col] = values


def _codes(rng: random.Random, n: int, words: tuple[str, ...]) -> list[str]:
    style = rng.randint(0, 3)
    stem = words[-1][:3].upper()
    if style == 0:
        return [f"{stem}{i:05d}" for i in range(1, n + 1)]
    if style == 1:
        return [f"{stem}-{i:04d}" for i in rng.sample(range(1, n * 3 + 10), n)]
    if style == 2:
        out: set[str] = set()
        while len(out) < n:
            out.add("".join(rng.choice(string.ascii_uppercase) for _ in range(5)))
        return sorted(out)
    return ["".join(string.ascii_uppercase[(i >> (4 * k)) % 16] for k in range(8))[::-1] + "A" * 8 for i in range(1, n + 1)]


def _composite_key(rng: random.Random, t: LTable) -> None:
    """Rows of a line, link, history or keyed fact table: distinct key tuples."""
    parts: list[list[object]] = []
    if t.kind == "link":
        a, b = (r.parent for r in t.key_refs)
        ka, kb = [k[0] for k in a.key_values()], [k[0] for k in b.key_values()]
        pairs = set()
        target = min(len(ka) * len(kb), rng.randint(40, 600))
        while len(pairs) < target:
            pairs.add((rng.choice(ka), rng.choice(kb)))
        rows = sorted(pairs, key=lambda p: (ka.index(p[0]), kb.index(p[1])))
        parts = [list(x) for x in zip(*rows, strict=True)]
    elif t.kind == "line":
        heads = [k[0] for k in t.key_refs[0].parent.key_values()]
        chosen = rng.sample(heads, max(1, int(len(heads) * rng.uniform(0.5, 1.0))))
        chosen.sort(key=heads.index)
        rows = [(h, i) for h in chosen for i in range(1, rng.randint(1, 5) + 1)]
        parts = [list(x) for x in zip(*rows, strict=True)]
    elif t.kind == "history":
        ents = [k[0] for k in t.key_refs[0].parent.key_values()]
        others = [k[0] for k in t.key_refs[1].parent.key_values()] if len(t.key_refs) > 1 else []
        rows = []
        for e in rng.sample(ents, max(1, int(len(ents) * rng.uniform(0.4, 1.0)))):
            start = date(2010, 1, 1) + timedelta(days=rng.randint(0, 2000))
            for _ in range(rng.randint(1, 3)):
                row = [e] + ([rng.choice(others)] if others else []) + [start.isoformat()]
                rows.append(tuple(row))
                start += timedelta(days=rng.randint(30, 900))
        parts = [list(x) for x in zip(*rows, strict=True)]
    else:  # a fact keyed by ticket and line
        rows, ticket = [], rng.randint(1, 1000)
        while len(rows) < t.rows:
            ticket += rng.randint(1, 3)
            rows += [(ticket, i) for i in range(1, rng.randint(1, 6) + 1)]
        rows = rows[: t.rows]
        parts = [list(x) for x in zip(*rows, strict=True)]
    t.rows = len(parts[0])
    for col, values in zip(t.key_columns, parts, strict=True):
        t.data[col] = values


def _reference(rng: random.Random, t: LTable, r: Ref, n: int) -> None:
    parent = r.parent
    if parent is t:  # a hierarchy: each row points at an earlier row, the first rows at none
        keys = t.data[t.key_columns[0]]
        roots = max(1, n // rng.randint(5, 15))
        values = [None if i < roots else keys[rng.randrange(0, i)] for i in range(n)]
        t.data[r.columns[0]] = values
        return
    keys = parent.key_values()
    pool = rng.sample(keys, max(1, int(len(keys) * rng.uniform(0.3, 1.0)))) if len(keys) > 3 else keys
    skew = rng.random() < 0.5
    values = []
    for _ in range(n):
        if r.nullable and rng.random() < r.nullable:
            values.append((None,) * len(r.columns))
        else:
            values.append(pool[int(len(pool) * rng.random() ** 2)] if skew else rng.choice(pool))
    for i, col in enumerate(r.columns):
        t.data[col] = [v[i] for v in values]


def _attr(rng: random.Random, kind: str, words: tuple[str, ...], i: int, t: LTable) -> object:
    if kind.startswith("calendar"):
        d = t.data["__days"][i]
        return {"calendar": d.isoformat(), "calendar_year": d.year, "calendar_month": d.month,
                "calendar_day": d.strftime("%A")}[kind]
    if kind == "name":
        return f"{rng.choice(WORDS).capitalize()} {t.words[-1]} {i + 1}"
    if kind == "text":
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
    if kind == "money":
        return f"{rng.uniform(1, 5000):.2f}"
    if kind == "ratio":
        return f"{rng.randint(0, 10) / 100:.2f}"
    if kind == "small":
        return rng.randint(1, 50)
    if kind == "tiny":
        return rng.randint(1, 5)
    if kind == "year":
        return rng.randint(1990, 2025)
    if kind == "age":
        return rng.randint(18, 90)
    if kind == "count":
        return rng.randint(0, 1000)
    if kind == "percent":
        return rng.randint(0, 100)
    if kind == "category":
        return rng.choice(["A", "B", "C", "OPEN", "CLOSED", "NEW"][: rng.randint(3, 6)])
    if kind == "bool":
        return rng.choice(["true", "false"])
    if kind == "flag":
        return rng.choice(["Y", "N"])
    if kind == "timestamp":
        return f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00"
    if kind == "date":
        return f"20{rng.randint(10, 24)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind == "email":
        return f"user{rng.randint(1, 10**6)}@example.com"
    if kind == "phone":
        return f"+1-555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
    if kind == "city":
        return rng.choice(CITIES)
    if kind == "shortcode":
        return "".join(rng.choice(string.ascii_uppercase) for _ in range(3))
    raise ValueError(kind)
