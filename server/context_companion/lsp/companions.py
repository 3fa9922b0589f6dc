"""Handlers for the agent companions: ``contextCompanion.companionStatus`` (the Gemini CLI
companion's state, :class:`~.gemini.GeminiLink`, and Claude Code's integration,
:class:`~.claude_code_endpoint.ClaudeCodeEndpoint`). Every way out closes every bridge in
:func:`.lifecycle.close`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from ..errors import ParamsError
from .gemini import COMPANION_STATUS

OPEN_LISTENERS = "contextCompanion.openListeners"

if TYPE_CHECKING:
    from .runtime import CompanionServer


def register(ls: CompanionServer) -> None:
    @ls.command(COMPANION_STATUS)
    async def companion_status(*args: Any) -> dict[str, Any]:
        await ls.booted.wait()  # the params models are imported by then
        from ..workspace.params import EmptyParams, parse

        try:
            parse(EmptyParams, args, COMPANION_STATUS)  # as every command: unknown keys are rejected
        except ParamsError as exc:
            raise JsonRpcInvalidParams(message=str(exc)) from None
        await ls.ready.wait()
        await ls.gemini.settled.wait()
        await ls.claude_code.settled.wait()
        return _status(ls)

    @ls.command(OPEN_LISTENERS)
    async def open_listeners(*args: Any) -> dict[str, Any]:
        """A client that started us with ``capabilities.listenOnRequest`` asks for its listeners when
        they may be used: ``{"for": "terminal"}`` (the default) when a terminal opens (Gemini CLI's and
        Claude Code's, which an agent started there looks for at once), ``{"for": "mcp"}`` before it
        starts an MCP client that attaches here. Answered once they listen, with the status."""
        await ls.booted.wait()
        from ..workspace.params import OpenListenersParams, parse

        try:
            params = parse(OpenListenersParams, args, OPEN_LISTENERS)
        except ParamsError as exc:
            raise JsonRpcInvalidParams(message=str(exc)) from None
        await ls.ready.wait()
        if params.for_ == "mcp":
            if ls.mcp is not None:
                await ls.mcp.start(ls)
        else:
            await ls.gemini.settled.wait()
            await ls.claude_code.settled.wait()
            ls.gemini.open()
            ls.claude_code.open(ls)
        return {**_status(ls), "mcp": {"listening": ls.mcp is not None and ls.mcp.listening}}


def _status(ls: CompanionServer) -> dict[str, Any]:
    return {**ls.gemini.status(), "claudeCode": ls.claude_code.status()}
