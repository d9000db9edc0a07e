"""`dia mcp`: serve DIA to MCP hosts (stdio, or streamable HTTP on a loopback address)."""

from __future__ import annotations

from typing import Annotated

import typer


def mcp(
    http: Annotated[bool, typer.Option("--http", help="Streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="HTTP address; loopback only (127.0.0.1, localhost, ::1).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8765,
) -> None:
    """Serve the warehouse in DIA_WAREHOUSE (default <DIA_WORKSPACE>/warehouse.duckdb) over MCP:
    tools list_tables, describe_table, ask, run_sql, lineage, search_memory; resources
    dia://interpretation, dia://manifest, dia://validation."""
    from dia_assets.mcp_server import serve

    try:
        serve("http" if http else "stdio", host=host, port=port)
    except ValueError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        pass
