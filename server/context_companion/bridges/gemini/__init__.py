"""Gemini CLI's IDE companion, served by the language server for the editor it is attached to.

- :mod:`.companion`: the MCP server (tools ``openDiff``/``closeDiff``, ``ide/*`` notifications).
- :mod:`.context`: the ``ide/contextUpdate`` payload from the editor state.
- :mod:`.discovery`: the discovery file the CLI looks for, and the PID it is named after.

Imported by the language server after start-up (the MCP SDK, starlette and uvicorn are not
light); nothing here imports ``lsp/``.
"""
