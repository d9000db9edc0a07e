"""Mermaid ER diagram of the refined tables."""

from __future__ import annotations

import re

from dia_assets.contracts.manifest import Manifest


def _type(sql_type: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", sql_type.split("(")[0].strip()) or "VARCHAR"


def er_diagram(manifest: Manifest) -> str:
    out = ["erDiagram"]
    for table in manifest.tables:
        fk_cols = {c for fk in table.foreign_keys for c in fk.columns}
        out.append(f"    {table.name} {{")
        for col in table.columns:
            keys = [k for k, hit in (("PK", col.name in table.primary_key), ("FK", col.name in fk_cols)) if hit]
            out.append(f"        {_type(col.type)} {col.name}{' ' + ', '.join(keys) if keys else ''}")
        out.append("    }")
    for table in manifest.tables:
        for fk in table.foreign_keys:
            label = ", ".join(fk.columns) + (" (orphans allowed)" if fk.allow_orphans else "")
            out.append(f'    {fk.ref_table} ||--o{{ {table.name} : "{label}"')
    return "\n".join(out) + "\n"
