"""Handlers for the agent companions: ``contextCompanion.companionStatus`` (the Gemini CLI
companion's state, :class:`~.gemini.GeminiLink`, and Claude Code's integration,
:class:`~.claude_code_endpoint.ClaudeCodeEndpoint`). Every way out closes every bridge in
:func:`.lifecycle.close`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from ..errors import ParamsError
from .gemini import COMPANION_STATUS

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
        return {**ls.gemini.status(), "claudeCode": ls.claude_code.status()}
