"""Lifecycle handlers: initialize, initialized, configuration and folder changes, shutdown; and
:func:`close`, the one way out every transport ends with (``exit`` included: see ``framing.ExitHere``).

The heavy part of start-up (settings, memory store, watchdog, tiktoken) happens after the
initialize response has gone out: the domain is imported and loaded on a worker thread.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as t
from pygls.capabilities import ServerCapabilitiesBuilder

from ..heap import release_free_memory
from .runtime import reloading

if TYPE_CHECKING:
    from ..workspace.snapshot import WorkspaceSnapshot
    from .runtime import CompanionServer

log = logging.getLogger(__name__)

# Imported on a worker thread after initialize: start-up then costs what a bare pygls server costs.
_HEAVY = ("context_companion.workspace.params", "context_companion.workspace.companion")


def initialize(ls: CompanionServer, params: t.InitializeParams) -> None:
    ls.use_lsp_line_splitting()  # pygls created the workspace just before this handler
    encoding = str(ServerCapabilitiesBuilder.choose_position_encoding(params.capabilities))
    client = params.client_info.name if params.client_info else None
    raw = params.initialization_options
    caps = raw.get("capabilities") if isinstance(raw, dict) else None
    ls.publisher.memory_changed_wanted = isinstance(caps, dict) and caps.get("memoryChanged") is True
    options = ls.gemini.initialize(params.process_id, client, raw)
    ls.claude_code.listen_on_request = ls.gemini.listen_on_request
    ls.boot_task = asyncio.get_running_loop().create_task(_boot(ls, params, options, encoding))


def _initial_folders(params: t.InitializeParams) -> list[Path]:
    from ..uris import uri_to_path

    folders = [Path(uri_to_path(f.uri)) for f in (params.workspace_folders or [])]
    if not folders and params.root_uri:
        folders = [Path(uri_to_path(params.root_uri))]
    elif not folders and params.root_path:
        folders = [Path(params.root_path)]
    return folders


async def _boot(ls: CompanionServer, params: t.InitializeParams, options: Any, encoding: str) -> None:
    for name in _HEAVY:
        await asyncio.to_thread(importlib.import_module, name)
    from ..workspace.companion import Companion
    from ..workspace.snapshot import initial_snapshot

    folders = _initial_folders(params)  # after the answer: the URI helpers are domain code

    snapshot, errors = initial_snapshot(folders, options, encoding)
    for message in errors:
        ls.show_error(message)
    ls.show_refusals(snapshot.refusal_lines())
    companion = Companion(snapshot)
    ls.attach(companion)
    try:
        async with ls.lock:
            await asyncio.to_thread(companion.load)
    except Exception:
        log.exception("start-up failed")
        ls.ready.set()
        await ls.gemini.reconcile(companion)
        await ls.claude_code.reconcile(ls)
        await ls.hooks.reconcile(ls)
        return
    # The watches are in place before the first command is answered (set off the loop).
    await ls.watch.start(companion, ls.files_changed)
    # No session has been given an instruction yet (commands wait for ready): what happened
    # before now is part of the first build, not a change to push later.
    ls.publisher.forget()
    ls.ready.set()
    await asyncio.to_thread(_remove_stale_announcements)
    if ls.mcp is not None and not ls.gemini.listen_on_request:  # else when asked (openListeners)
        await ls.mcp.start(ls)
    await ls.gemini.reconcile(companion)
    await ls.claude_code.reconcile(ls)
    await ls.hooks.reconcile(ls)
    release_free_memory()  # what the start-up's reads and walk freed (a few ms)


async def initialized(ls: CompanionServer, params: t.InitializedParams) -> None:
    await ls.booted.wait()
    await _pull_configuration(ls)


async def did_change_configuration(ls: CompanionServer, params: t.DidChangeConfigurationParams) -> None:
    await ls.booted.wait()
    caps = ls.client_capabilities
    if caps.workspace and caps.workspace.configuration:
        await _pull_configuration(ls)
        return
    settings = params.settings
    if settings is None:
        return  # nothing new: keep what is in force
    if isinstance(settings, dict) and "contextCompanion" in settings:
        settings = settings["contextCompanion"]
    await _apply_settings(ls, settings)


async def did_change_folders(ls: CompanionServer, params: t.DidChangeWorkspaceFoldersParams) -> None:
    from ..uris import uri_to_path

    await ls.booted.wait()
    assert ls.companion is not None
    folders = [Path(uri_to_path(f.uri)) for f in ls.workspace.folders.values()]
    await _swap(ls, ls.companion.snapshot.with_folders(folders))
    ls.publisher.schedule("workspaceChanged")
    await ls.claude_code.reconcile(ls)  # the lock file names the folders
    await ls.hooks.reconcile(ls)  # so does the hooks' discovery file


def _remove_stale_announcements() -> None:
    """Gemini CLI discovery files and Claude Code lock files of servers that are gone (killed,
    crashed): removed at start, whether or not the bridges are on (see docs/reliability.md)."""
    from ..bridges.announcements import remove_stale

    try:
        remove_stale()
    except Exception:  # never worth failing the start-up for
        log.exception("removing stale announcements failed")


def shutdown(ls: CompanionServer, *_: Any) -> None:
    """Cancel the requests in flight; withdraw every announcement now (before the answer goes
    out); the sockets close on the loop."""
    ls.cancel_in_flight()
    _withdraw(ls)


def _withdraw(ls: CompanionServer) -> None:
    ls.watch.stop()
    ls.publisher.cancel()
    if ls.mcp is not None:
        ls.mcp.stop()
    ls.gemini.shutdown()
    ls.claude_code.shutdown()
    ls.hooks.shutdown()


async def close(ls: CompanionServer) -> None:
    """The end of the connection, however it came: ``exit``, end of input (the editor closed our
    stdin or died), SIGTERM, SIGINT. A start-up still running is cancelled; every announcement is
    withdrawn; then each bridge (Gemini CLI companion, Claude Code endpoint, MCP endpoint) is
    stopped in turn and awaited, so nothing is left running for asyncio to tear down (its
    tracebacks). Idempotent."""
    boot = ls.boot_task
    if boot is not None and not boot.done():
        boot.cancel()
        await asyncio.wait({boot})
    _withdraw(ls)  # requests still in flight end with the loop
    await ls.gemini.exit()
    await ls.claude_code.close()
    await ls.hooks.close()
    if ls.mcp is not None:
        await ls.mcp.close()


async def _pull_configuration(ls: CompanionServer) -> None:
    caps = ls.client_capabilities
    if not (caps.workspace and caps.workspace.configuration):
        return
    try:
        result = await ls.workspace_configuration_async(
            t.ConfigurationParams(items=[t.ConfigurationItem(section="contextCompanion")])
        )
    except Exception as exc:
        log.info("workspace/configuration failed: %s", exc)
        return
    section = result[0] if result else None
    if section is not None:
        await _apply_settings(ls, section)


async def _apply_settings(ls: CompanionServer, section: Any) -> None:
    assert ls.companion is not None
    snapshot, error = ls.companion.snapshot.with_editor_section(section)
    if error:
        ls.show_error(error)
    swapped = await _swap(ls, snapshot)
    if swapped:
        ls.publisher.schedule("settingsChanged")
        await ls.claude_code.reconcile(ls)
        await ls.hooks.reconcile(ls)


async def _swap(ls: CompanionServer, snapshot: WorkspaceSnapshot) -> bool:
    """Swap in a new snapshot (new pieces built, and new watches set, on worker threads: the loop
    keeps serving however large a folder is). True when settings changed."""
    companion = ls.companion
    assert companion is not None
    async with ls.lock:  # commands wait for the swap, the new watches included
        prepared = await reloading(ls, lambda: companion.prepare(snapshot))
        swapped = companion.apply(prepared)
        if swapped.memory_replaced:
            await ls.watch.start(companion, ls.files_changed)
    ls.show_refusals(snapshot.refusal_lines())
    await ls.gemini.after_swap(companion, swapped.folders_changed)
    return swapped.settings_changed


HANDLERS: tuple[tuple[str, Callable[..., Any]], ...] = (
    (t.INITIALIZE, initialize),
    (t.INITIALIZED, initialized),
    (t.WORKSPACE_DID_CHANGE_CONFIGURATION, did_change_configuration),
    (t.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS, did_change_folders),
    (t.SHUTDOWN, shutdown),
    # ``exit`` never reaches a handler: every transport reads through framing.ExitHere, which ends
    # the loop there; the transport then runs :func:`close` as at end of input.
)
