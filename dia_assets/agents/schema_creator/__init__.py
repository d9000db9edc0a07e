"""Schema Creator (DIA §3.4): interpretation + expert overrides -> manifest -> warehouse
-> validation report. Framework-free; the Dagster glue lives in `dia_assets.dagster.schema`.

Modules, one concept each: `overrides` (expert YAML), `plan` (manifest), `sqlgen`
(DDL and load SQL), `load` (staging -> refined -> rejects, atomic swap), `postgres`
(copy of a DuckDB build into PostgreSQL in one transaction), `target` (DuckDB or
PostgreSQL connection), `validate` (four axes + test queries), `lineage`
(column lineage from the load SQL), `er` (Mermaid diagram), `build` (all of it).
"""
