"""`dia mcp`: serve DIA to MCP hosts (stdio, or streamable HTTP on a loopback address with a
bearer token)."""

from __future__ import annotations

from typing import Annotated

import typer

from dia_assets.cli.common import EXIT_USAGE, WorkspaceOpt, fail, use_workspace


def mcp(
    http: Annotated[bool, typer.Option("--http", help="Streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="HTTP address; loopback only (127.0.0.1, localhost, ::1).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", help="HTTP port.")] = 8765,
    no_auth: Annotated[bool, typer.Option(
        "--no-auth", help="HTTP without the bearer token (any local user can then call every tool).")] = False,
    workspace: WorkspaceOpt = None,
) -> None:
    """Serve the warehouse in DIA_WAREHOUSE (default <DIA_WORKSPACE>/warehouse.duckdb) over MCP:
    tools list_tables, describe_table, relationships, list_answers, ask, run_sql, lineage,
    search_memory; resources dia://interpretation, dia://manifest, dia://validation (summaries;
    the whole documents at dia://documents/{name}); prompts explore_warehouse, answer_question.
    Over HTTP every request needs
    `Authorization: Bearer <token>`: the token is generated on the first start, printed once
    and kept in <DIA_WORKSPACE>/mcp_token (mode 0600)."""
    from dia_assets.cli.mcp_server import serve

    use_workspace(workspace)
    try:
        serve("http" if http else "stdio", host=host, port=port, auth=not no_auth)
    except ValueError as err:
        fail(str(err), code=EXIT_USAGE)
    except KeyboardInterrupt:
        pass
