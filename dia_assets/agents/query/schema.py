"""Schema linking: an index over table and column names, descriptions and sampled values, so
only the tables relevant to a question reach the prompt (DIA §3.5 schema exploration).

Built once per warehouse (a few small queries per table) and reused across questions. The
manifest, when there is one, adds primary keys, foreign keys and semantic types; the index
works from the database alone when there is none.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dia_assets.agents.query.dialects import Database

_WORD = re.compile(r"[a-z0-9]+")
_STOP = {
    "the", "a", "an", "of", "in", "on", "for", "to", "and", "or", "by", "per", "each", "what",
    "which", "who", "how", "many", "much", "is", "are", "was", "were", "do", "does", "did", "we",
    "our", "have", "has", "with", "from", "at", "as", "that", "this", "all", "any", "its", "their",
    "it", "be", "there", "most", "least", "share", "than", "total", "average", "number", "count",
}
SAMPLED_TYPES = ("VARCHAR", "TEXT", "CHAR", "STRING", "CHARACTER", "ENUM")


def stem(word: str) -> str:
    for suffix in ("ies", "es", "s"):
        if len(word) > 4 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def tokens(text: str) -> set[str]:
    out: set[str] = set()
    for word in _WORD.findall(str(text).lower().replace("_", " ")):
        if word not in _STOP and len(word) > 1:
            out.add(stem(word))
    return out


@dataclass
class ColumnInfo:
    name: str
    type: str
    description: str = ""
    samples: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)  # every value of a low-cardinality column (linking)
    semantic: str = ""  # the Interpreter's semantic type (manifest), for sanity checks


@dataclass
class TableInfo:
    name: str
    columns: list[ColumnInfo]
    row_count: int | None = None
    description: str = ""
    primary_key: list[str] = field(default_factory=list)
    foreign_keys: list[str] = field(default_factory=list)  # "col -> table.col"
    split: str = ""  # a part of a wide table split by the Schema Creator: how the parts join

    def column(self, name: str) -> ColumnInfo | None:
        return next((c for c in self.columns if c.name.lower() == name.lower()), None)


@dataclass
class SchemaIndex:
    dialect: str
    tables: dict[str, TableInfo]
    _terms: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)
    _qualify: dict[str, dict[str, str]] | None = field(default=None, repr=False)
    _linker: Any = field(default=None, repr=False)

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def build(
        cls, db: Database, manifest: Any = None, samples: int = 5, sample_max_distinct: int = 50,
        descriptions: dict[str, dict[str, str]] | None = None,
    ) -> SchemaIndex:
        tables: dict[str, TableInfo] = {}
        for meta in db.tables():
            info = TableInfo(meta.name, [ColumnInfo(c.name, c.type) for c in meta.columns])
            tables[meta.name] = info
            try:
                info.row_count = int(db.query(f'SELECT COUNT(*) FROM "{meta.name}"', 1).rows[0][0])
            except Exception:
                info.row_count = None
            for col in info.columns:
                if samples and col.type.upper().startswith(SAMPLED_TYPES):
                    col.values = _sample(db, meta.name, col.name, sample_max_distinct, sample_max_distinct)
                    col.samples = col.values[:samples]
        index = cls(db.dialect, tables)
        if manifest is not None:
            index.apply_manifest(manifest)
        for table, cols in (descriptions or {}).items():
            if table in tables:
                tables[table].description = cols.get("", tables[table].description)
                for name, text in cols.items():
                    col = tables[table].column(name)
                    if col is not None and name:
                        col.description = text
        index._build_terms()
        return index

    def apply_manifest(self, manifest: Any) -> None:
        """Keys and semantic hints from the Schema Creator's manifest (read defensively)."""
        for mt in getattr(manifest, "tables", []) or []:
            info = self.tables.get(getattr(mt, "name", ""))
            if info is None:
                continue
            info.primary_key = list(getattr(mt, "primary_key", []) or [])
            info.foreign_keys = [
                f"{', '.join(fk.columns)} -> {fk.ref_table}.{', '.join(fk.ref_columns)}"
                for fk in getattr(mt, "foreign_keys", []) or []
            ]
            info.split = _split_note(mt)
            sources = getattr(mt, "sources", []) or []
            info.description = info.description or (f"from {', '.join(sources)}" if sources else "")
            for mc in getattr(mt, "columns", []) or []:
                col = info.column(getattr(mc, "name", ""))
                if col is None:
                    continue
                bits = []
                semantic = getattr(mc, "semantic_type", "unknown")
                if semantic and semantic != "unknown":
                    bits.append(semantic)
                    col.semantic = semantic
                original = getattr(mc, "original_name", None) or getattr(mc, "renamed_from", None)
                if original and original != col.name:
                    bits.append(f"was {original!r}")
                col.description = col.description or "; ".join(bits)

    @classmethod
    def load_manifest(cls, path: str | Path | None) -> Any:
        if not path or not Path(path).exists():
            return None
        try:
            from dia_assets.contracts.manifest import Manifest

            return Manifest.read(path)
        except Exception:  # the manifest contract is still moving: link without it
            return None

    def _build_terms(self) -> None:
        for name, info in self.tables.items():
            weights: dict[str, float] = {}

            def add(text: str, weight: float, weights: dict[str, float] = weights) -> None:
                for tok in tokens(text):
                    weights[tok] = max(weights.get(tok, 0.0), weight)

            add(name, 3.0)
            add(info.description, 1.0)
            for col in info.columns:
                add(col.name, 2.0)
                add(col.description, 1.0)
                for value in col.samples:
                    add(value, 1.5)
            self._terms[name] = weights

    def refresh(self) -> None:
        """Rebuild what is derived from the tables (after keys or descriptions were set by hand)."""
        self._terms = {}
        self._linker = None
        self._build_terms()

    def without_values(self) -> SchemaIndex:
        """A copy with no sampled data values (privacy modes): names, types, keys, row counts."""
        import copy

        tables = {}
        for name, info in self.tables.items():
            clone = copy.copy(info)
            clone.columns = [ColumnInfo(c.name, c.type, c.description, semantic=c.semantic) for c in info.columns]
            tables[name] = clone
        index = SchemaIndex(self.dialect, tables)
        index._build_terms()
        return index

    # -- queries --------------------------------------------------------------------------

    def qualify_schema(self) -> dict[str, dict[str, str]]:
        """{table: {column: type}} for sqlglot's qualify (lower case, refined tables only)."""
        if self._qualify is None:
            self._qualify = {t.name.lower(): {c.name.lower(): c.type for c in t.columns} for t in self.tables.values()}
        return self._qualify

    def rank(self, text: str) -> list[tuple[str, float]]:
        query = tokens(text)
        scored = []
        for name, weights in self._terms.items():
            score = sum(weights.get(tok, 0.0) for tok in query)
            # partial matches: "hire" ~ "hired", "overtime" ~ "overtime_hours"
            score += 0.5 * sum(
                1 for tok in query if tok not in weights and len(tok) > 3
                and any(w.startswith(tok) or tok.startswith(w) for w in weights if len(w) > 3)
            )
            if score > 0:
                scored.append((name, score))
        return sorted(scored, key=lambda s: (-s[1], s[0]))

    def linker(self) -> Any:
        """The schema linker (agents/query/linking.py), built on first use: names, meaning
        (WordLlama, when it loads) and the key graph."""
        if self._linker is None:
            from dia_assets.agents.query.linking import Linker

            self._linker = Linker(self, embedder=_embedder())
        return self._linker

    def link(self, question: str, max_tables: int = 6) -> list[str]:
        """The tables a question most likely needs, link tables included (no token budget)."""
        return self.linker().plan(question, full=max_tables).tables

    def search(self, term: str, k: int = 12) -> list[dict[str, Any]]:
        """Matches over table names, column names, descriptions and sampled values."""
        query = tokens(term) or {term.lower()}
        hits: list[tuple[float, dict[str, Any]]] = []
        for info in self.tables.values():
            if tokens(info.name) & query or tokens(info.description) & query:
                hits.append((3.0, {"table": info.name, "match": "table"}))
            for col in info.columns:
                if tokens(col.name) & query:
                    hits.append((2.0, {"table": info.name, "column": col.name, "type": col.type, "match": "column"}))
                elif col.description and tokens(col.description) & query:
                    hits.append((1.0, {"table": info.name, "column": col.name, "match": "description",
                                       "description": col.description}))
                values = [v for v in col.samples if tokens(v) & query or term.lower() in v.lower()]
                if values:
                    hits.append((1.5, {"table": info.name, "column": col.name, "match": "value", "values": values}))
        hits.sort(key=lambda h: -h[0])
        return [h for _, h in hits[:k]]

    def describe(self, name: str) -> dict[str, Any] | None:
        info = self.tables.get(name) or next(
            (t for t in self.tables.values() if t.name.lower() == name.lower()), None
        )
        if info is None:
            return None
        return {
            "table": info.name,
            "rows": info.row_count,
            "description": info.description,
            "primary_key": info.primary_key,
            "foreign_keys": info.foreign_keys,
            "columns": [
                {k: v for k, v in {"name": c.name, "type": c.type, "description": c.description,
                                   "sample_values": c.samples}.items() if v}
                for c in info.columns
            ],
        }

    def render(self, names: list[str]) -> str:
        """Compact schema text for the prompt: one line per table, keys and samples inline."""
        lines = []
        for name in names:
            info = self.tables[name]
            cols = []
            for c in info.columns:
                bit = f"{c.name} {c.type}"
                if c.samples:
                    bit += " e.g. " + "|".join(v[:24] for v in c.samples[:3])
                cols.append(bit)
            head = f"{name} ({info.row_count} rows)" if info.row_count is not None else name
            extra = []
            if info.primary_key:
                extra.append(f"pk {', '.join(info.primary_key)}")
            extra += [f"fk {fk}" for fk in info.foreign_keys]
            extra += [info.split] if info.split else []
            lines.append(f"- {head}: " + "; ".join(cols) + (f" [{'; '.join(extra)}]" if extra else ""))
        return "\n".join(lines)

    def render_compact(self, names: list[str], max_columns: int = 16,
                       prefer: Callable[[str], bool] | None = None) -> str:
        """One short line per table: column names only, keys inline (lower-ranked linked tables).
        A wide table lists its key columns and the `prefer`red ones (those the question names)
        first, up to `max_columns`, and says how many more it has."""
        lines = []
        for name in names:
            info = self.tables[name]
            extra = [f"pk {', '.join(info.primary_key)}"] if info.primary_key else []
            extra += [f"fk {fk.replace(' -> ', '->')}" for fk in info.foreign_keys]
            extra += [info.split] if info.split else []
            cols = [c.name for c in info.columns]
            if len(cols) > max_columns:
                keys = set(info.primary_key) | {c.strip() for fk in info.foreign_keys for c in fk.split("->")[0].split(",")}
                first = [c for c in cols if c in keys or (prefer is not None and prefer(c))][:max_columns]
                shown = set(first + [c for c in cols if c not in first][: max_columns - len(first)])
                cols = [c for c in cols if c in shown] + [f"+{len(info.columns) - len(shown)} more"]
            lines.append(f"- {name}: " + ", ".join(cols) + (f" [{'; '.join(extra)}]" if extra else ""))
        return "\n".join(lines)

    def primary_key(self, table: str) -> list[str]:
        info = self.tables.get(table)
        return info.primary_key if info else []


def _split_note(mt: Any) -> str:
    """A wide table the Schema Creator split into parts (`t`, `t__part2`, ...): one row per key in
    every part, so a question over columns of several parts joins them 1:1 on the key."""
    key = ", ".join(getattr(mt, "primary_key", []) or [])
    first = getattr(mt, "split_of", None)
    parts = list(getattr(mt, "parts", []) or [])
    if first:
        return (f"part {getattr(mt, 'part', '?')} of wide table {first}: one row per {key}, "
                f"join {first} 1:1 USING ({key}) for its other columns")
    if len(parts) > 1:
        return (f"wide table split in {len(parts)} parts ({', '.join(parts)}), one row per {key} in each: "
                f"join them 1:1 USING ({key})")
    return ""


def _embedder() -> Any:
    """WordLlama for linking by meaning; None (names and keys only) when it cannot load."""
    try:
        from dia_assets.platform.embeddings import WordLlamaEmbedder

        return WordLlamaEmbedder()
    except Exception:
        return None


def _sample(db: Database, table: str, column: str, k: int, max_distinct: int) -> list[str]:
    """Most frequent values of a low-cardinality text column (exact counts)."""
    try:
        out = db.query(
            f'SELECT "{column}", COUNT(*) AS n FROM "{table}" WHERE "{column}" IS NOT NULL '
            f'GROUP BY 1 ORDER BY n DESC, 1 LIMIT {max_distinct + 1}',
            max_rows=max_distinct + 1,
        )
    except Exception:
        return []
    if len(out.rows) > max_distinct:  # identifiers and free text: no samples
        return []
    return [str(r[0])[:60] for r in out.rows[:k]]
