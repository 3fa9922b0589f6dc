"""Handlers for the agent companions: ``contextCompanion.companionStatus`` and, at ``exit``,
waiting for the Gemini CLI companion (:class:`~.gemini.GeminiLink`) to close."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types as t

from .gemini import COMPANION_STATUS

if TYPE_CHECKING:
    from .runtime import CompanionServer


def register(ls: CompanionServer) -> None:
    @ls.feature(t.EXIT)
    async def on_exit(*_: Any) -> None:  # pygls awaits it before ending the process
        await ls.gemini.exit()

    @ls.command(COMPANION_STATUS)
    async def companion_status(*_: Any) -> dict[str, Any]:
        await ls.ready.wait()
        await ls.gemini.settled.wait()
        return ls.gemini.status()
