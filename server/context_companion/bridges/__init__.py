"""Bridges that serve the workspace core to agents over other protocols than LSP.

- :mod:`.mcp_server`: the MCP tools, resources and prompt (official MCP Python SDK).
- :mod:`.http_host`: a local HTTP endpoint (token, Host check) run inside an asyncio loop.
- :mod:`.mcp_main`: ``context-companion mcp``: standalone over stdio or Streamable HTTP.

A bridge calls ``workspace/`` (the :class:`~context_companion.workspace.companion.Companion`
and the command table), never ``lsp/``. Nothing here is imported by the language server's
start-up path.
"""
