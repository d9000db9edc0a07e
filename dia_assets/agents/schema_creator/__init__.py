"""Schema Creator (DIA §3.4): interpretation + expert overrides -> manifest -> warehouse
-> validation report. Framework-free; the Dagster glue lives in `dia_assets.dagster.schema`.

Modules, one concept each: `overrides` (expert YAML), `plan` (manifest), `sqlgen`
(DDL and load SQL), `load` (staging -> refined -> rejects, atomic swap), `postgres`
(copy of a DuckDB build into PostgreSQL in one transaction), `validate` (four axes + test
queries), `lineage` (column lineage from the load SQL), `er` (Mermaid diagram), `dbt_export`
(the warehouse as a dbt project, from the same load SQL), `build` (all
of it, from an interpretation; `dia_assets.pipeline` interprets first). The warehouse connection (`Target`)
and table statistics are shared: `dia_assets.platform.tables`.

A sibling agent imports only the names below, through this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dia_assets.platform.lazy import lazy_exports

if TYPE_CHECKING:
    from dia_assets.agents.schema_creator.lineage import manifest_lineage

# Each name is imported from its module on first use (PEP 562), so importing the package
# (a sibling agent, the Dagster code location) loads none of them until it is used.
_EXPORTS = {
    "manifest_lineage": "dia_assets.agents.schema_creator.lineage",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


__all__ = ["manifest_lineage"]
