"""The application core every bridge drives: LSP today, MCP and the Gemini CLI companion next.

- :mod:`.snapshot`: :class:`~.snapshot.WorkspaceSnapshot`, settings + folders + position
  encoding, immutable, replaced as a whole.
- :mod:`.sessions`: :class:`~.sessions.AgentSessions`, the registry of agent sessions.
- :mod:`.companion`: :class:`~.companion.Companion`, the operations (instructions, turn context,
  memory) as plain synchronous methods returning values.
- :mod:`.agent_delivery`: :class:`~.agent_delivery.AgentDelivery`, what an agent lacks of the memory
  that applies now and what its hook adds (decided by :mod:`.agent_memory` and :mod:`.hooks`).
- :mod:`.editor_files`: the editor's documents as paths and as the names an agent's text shows.
- :mod:`.swaps`: what rebuilding or swapping the companion's pieces returns to a bridge.
- :mod:`.changes`: what a file change or a rebuild produced (:class:`~.changes.MemoryChange`,
  :class:`~.changes.InstructionChanged`), for a bridge to send.
- :mod:`.commands`: the table of ``contextCompanion.*`` commands (name, params model, function).
- :mod:`.params`: the pydantic params models.

Pure and synchronous; no protocol library is imported here. This package is imported lazily by
the language server (its dependencies cost about 100 ms), so this file imports nothing.
"""
