"""What `dia mcp` serves (tools, resources, lineage), framework-free; the MCP SDK wiring is
dia_assets/cli/mcp_server.py."""
