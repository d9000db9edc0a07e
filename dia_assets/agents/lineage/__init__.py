"""Lineage of answers and values: which answers read a table or column, and where a value
came from (file, row range, parse). Framework-free; the CLI and the Dagster asset call it."""
