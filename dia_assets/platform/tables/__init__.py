"""The tables of a built warehouse, read back: `Target` (a read connection that speaks DuckDB SQL
to DuckDB or PostgreSQL) and the installed tables' statistics. Not engines: those are
`dia_assets.platform.warehouse`, which imports every module of its folder."""
