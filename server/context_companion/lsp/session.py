"""The one object that owns the server's mutable state.

Handlers in :mod:`.server` unpack params, call one method here, and convert the result. All
methods run on the event loop thread; slow work (the first index of the workspace, a full
memory refresh) runs on a worker thread under :attr:`Session.lock`, and file-watcher callbacks
arrive through ``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..composer import Composer
from ..context.messages import build_messages
from ..context.state import Baseline, EditorState, RawPosition, uri_to_path
from ..context.turn import TurnContext, next_turn
from ..errors import ContextCompanionError, SettingsError
from ..memory import MemoryWatcher, add_memory
from ..prompt.compression import compression_prompt
from ..prompt.engine import Instruction
from ..settings import AgentProfile, Settings, parse_profile, resolve_settings, user_config_dir
from .params import ParamsError

log = logging.getLogger(__name__)

SYSTEM_INSTRUCTION_CHANGED = "contextCompanion/systemInstructionChanged"
# When several reasons coalesce into one push, the first in this order names it.
REASON_ORDER = ("settingsChanged", "workspaceChanged", "rulesChanged", "memoryChanged", "openFilesChanged")


@dataclass
class AgentSession:
    id: str
    profile: AgentProfile | None  # None: the settings' profile
    instruction: Instruction | None = None  # the last one given (result or push)
    baseline: Baseline = field(default_factory=Baseline)


class Session:
    def __init__(
        self,
        notify: Callable[[str, dict[str, Any]], None],
        show_error: Callable[[str], None],
        text_of: Callable[[str], str | None],
        *,
        environ: Mapping[str, str] | None = None,
        user_dir: Path | None = None,
    ) -> None:
        import os

        self._notify = notify
        self._show_error = show_error
        self._text_of = text_of
        self.environ = os.environ if environ is None else environ
        self.user_dir = user_dir if user_dir is not None else user_config_dir()
        self.folders: list[Path] = []
        self.editor_settings: dict[str, Any] = {}
        self._rejected: dict[str, Any] | None = None  # the last invalid editor settings reported
        self._changed_meanwhile: set[str] | None = None  # file changes seen while a store loads off-loop
        self.settings = Settings()
        self.composer: Composer | None = None
        self.editor = EditorState(self.settings.context)
        self.agents: dict[str, AgentSession] = {}
        self.position_encoding = "utf-16"
        self.lock = asyncio.Lock()
        self.ready = asyncio.Event()
        self.watcher: MemoryWatcher | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending_reasons: set[str] = set()
        self._pending_files: set[str] = set()
        self._push_handle: asyncio.TimerHandle | None = None
        self.after_memory_change: Callable[[], None] | None = None  # e.g. refresh diagnostics

    # ------------------------------------------------------------------ lifecycle

    def initialize(self, folders: Sequence[Path], init_options: Any, position_encoding: str) -> None:
        """Resolve settings (bad ones are reported once; defaults stay) and create the composer."""
        self.folders = [Path(f).resolve() for f in folders]
        self.position_encoding = position_encoding
        if isinstance(init_options, Mapping):
            section = init_options.get("contextCompanion", init_options)
            self.editor_settings = dict(section) if isinstance(section, Mapping) else {}
            self._rejected = self.editor_settings
        elif init_options is not None:
            self._show_error("Context Companion: initializationOptions must be an object; using the other settings.")
        try:
            self.settings = resolve_settings(self.folders, self.editor_settings, self.environ, self.user_dir)
        except SettingsError as exc:
            self._show_error(f"Context Companion: invalid settings, using the other layers instead: {exc}")
            try:
                self.settings = resolve_settings(self.folders, None, {}, self.user_dir)
            except SettingsError:
                self.settings = Settings()
        self.editor.update_settings(self.settings.context)
        self.composer = Composer(self.settings, self.folders, environ=self.environ, user_dir=self.user_dir)

    async def start(self) -> None:
        """Load the tokenizer and memory on a worker thread, then start watching."""
        self._loop = asyncio.get_running_loop()
        assert self.composer is not None
        async with self.lock:
            await asyncio.to_thread(self.composer.load)
        # No session has been given an instruction yet (commands wait for ready): what happened
        # before now is part of the first build, not a change to push later.
        self._pending_reasons.clear()
        self._pending_files.clear()
        self.ready.set()
        self._start_watcher()

    def _start_watcher(self) -> None:
        if self.composer is None or not self.settings.memory.watch:
            return
        self._stop_watcher()
        loop = self._loop
        assert loop is not None
        memory = self.composer.memory

        def on_change(paths: set[str]) -> None:  # watcher thread
            loop.call_soon_threadsafe(self.on_files_changed, paths)

        composer = self.composer
        self.watcher = MemoryWatcher(
            memory.watch_roots(),
            on_change,
            is_relevant=lambda path: composer.memory.is_relevant_path(path),  # the store in use, even after a swap
            debounce_ms=self.settings.memory.debounce_ms,
            flat_roots=memory.flat_watch_roots(),
        )
        try:
            self.watcher.start()
        except Exception as exc:
            log.warning("file watching unavailable (%s); use contextCompanion.refreshMemory", exc)
            self.watcher = None
        else:
            log.info("watching %d folder(s) for memory changes (%s)", len(memory.watch_roots()), self.watcher.mode)

    def _stop_watcher(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None

    def shutdown(self) -> None:
        self._stop_watcher()
        if self._push_handle is not None:
            self._push_handle.cancel()
            self._push_handle = None

    # ------------------------------------------------------------------ settings and folders

    async def apply_editor_settings(self, section: Any) -> str | None:
        """New editor settings; returns an error message (and keeps the last good settings) when invalid."""
        if section is None:
            section = {}
        if not isinstance(section, Mapping):
            return f"Context Companion: settings must be an object, got {type(section).__name__}; keeping the last good settings."
        try:
            settings = resolve_settings(self.folders, dict(section), self.environ, self.user_dir)
        except SettingsError as exc:
            if dict(section) == self._rejected:
                return None  # already reported (e.g. the same bad value in initializationOptions)
            self._rejected = dict(section)
            return f"Context Companion: invalid settings, keeping the last good ones: {exc}"
        self._rejected = None
        self.editor_settings = dict(section)
        if settings != self.settings:
            await self._replace_settings(settings)
            self.schedule_push("settingsChanged")
        return None

    async def _replace_settings(self, settings: Settings) -> None:
        old = self.settings
        self.settings = settings
        self.editor.update_settings(settings.context)
        if self.composer is None:
            return
        composer = self.composer
        async with self.lock:  # a new tokenizer or store is built on a worker thread
            prepared = await self._off_loop(lambda: composer.prepare_settings(settings))
            composer.apply_settings(settings, prepared)
        if old.memory != settings.memory and self._loop is not None:
            self._start_watcher()

    async def set_folders(self, folders: Sequence[Path]) -> None:
        self.folders = [Path(f).resolve() for f in folders]
        if self.composer is not None:
            composer = self.composer
            async with self.lock:
                store = await self._off_loop(lambda: composer.reload_memory(folders=self.folders))
                composer.set_folders(self.folders, store)
            if self._loop is not None:
                self._start_watcher()
        self.schedule_push("workspaceChanged")

    async def _off_loop(self, work: Callable[[], Any]) -> Any:
        """Run slow work on a worker thread; file changes seen meanwhile are replayed after it."""
        self._changed_meanwhile = set()
        try:
            return await asyncio.to_thread(work)
        finally:
            missed, self._changed_meanwhile = self._changed_meanwhile, None
            if missed:
                assert self._loop is not None
                self._loop.call_soon(self.on_files_changed, missed)

    # ------------------------------------------------------------------ documents and cursor

    def did_open(self, uri: str) -> None:
        self.editor.open(uri)
        self._open_set_changed([uri])

    def did_close(self, uri: str) -> None:
        self.editor.close(uri)
        self._open_set_changed([uri])

    def _open_set_changed(self, uris: list[str]) -> None:
        self._pending_files.update(uri_to_path(u) for u in uris)
        self.schedule_push("openFilesChanged")

    def did_change_cursor(
        self, uri: str, position: RawPosition, selections: Sequence[tuple[RawPosition, RawPosition]]
    ) -> None:
        previous = self.editor.active_uri()  # compared as URIs: no parsing per keystroke
        self.editor.set_cursor(uri, position, selections)
        if previous != uri:
            self.schedule_push("openFilesChanged")  # the active file feeds JIT memory and rules

    # ------------------------------------------------------------------ instructions

    def _open_paths(self) -> tuple[list[Path], Path | None]:
        paths = [Path(p) for p in self.editor.open_paths()]
        active = self.editor.active_path()
        # untitled: and other non-file documents have no place on disk: they feed no memory tier
        return [p for p in paths if p.is_absolute()], Path(active) if active and Path(active).is_absolute() else None

    def _build(self, agent: AgentSession) -> Instruction:
        assert self.composer is not None
        paths, active = self._open_paths()
        return self.composer.build(agent.profile, paths, active)

    def agent(self, session_id: str, profile: Any = None) -> AgentSession:
        """The session with this id, started (with ``profile`` or the settings' one) if unknown."""
        agent = self.agents.get(session_id)
        if agent is None:
            parsed = parse_profile(profile, "profile") if profile is not None else None
            agent = self.agents[session_id] = AgentSession(session_id, parsed)
        elif profile is not None:
            agent.profile = parse_profile(profile, "profile")
        return agent

    def start_session(self, session_id: str, profile: Any) -> dict[str, Any]:
        agent = self.agent(session_id, profile)
        agent.baseline = Baseline()
        agent.instruction = self._build(agent)
        return {"sessionId": agent.id, "etag": agent.instruction.etag, "tokens": agent.instruction.tokens.to_wire()}

    def end_session(self, session_id: str) -> dict[str, Any]:
        if self.agents.pop(session_id, None) is None:
            raise ParamsError(f"sessionId: unknown session {session_id!r}")
        return {"ended": session_id}

    def system_instruction(self, session_id: str, if_none_match: str | None) -> dict[str, Any]:
        agent = self.agent(session_id)
        instruction = agent.instruction = self._build(agent)
        if if_none_match is not None and if_none_match == instruction.etag:
            return {"sessionId": agent.id, "etag": instruction.etag, "unchanged": True}
        return {"sessionId": agent.id, "etag": instruction.etag, "unchanged": False, **instruction.to_wire()}

    async def refresh_memory(self) -> dict[str, Any]:
        """Re-read every memory and rule file; rebuild every started session's instruction.

        The ``etag``/``tokens``/``memoryFiles`` of the result are those of the default session
        (built with the settings' profile when no default session was started).
        """
        assert self.composer is not None
        reference = self.agents.get("default") or AgentSession("default", None)
        before = self._build(reference)
        composer = self.composer
        async with self.lock:
            store = await self._off_loop(composer.reload_memory)
            composer.use_memory(store)
        updated = []
        for agent in self.agents.values():
            new = self._build(agent)
            if agent.instruction is None or agent.instruction.etag != new.etag:
                updated.append(agent.id)
            agent.instruction = new
        current = self._build(reference)
        return {
            "changed": current.etag != before.etag or bool(updated),
            "etag": current.etag,
            "tokens": current.tokens.to_wire(),
            "memoryFiles": current.memory_files(),
            "sessionsUpdated": sorted(updated),
        }

    def turn_context(self, session_id: str, force_full: bool, pending_tool_call: bool) -> TurnContext:
        agent = self.agent(session_id)
        if not self.settings.context.enabled:
            return TurnContext("none", None, None)
        state = self.editor.snapshot(self._text_of, self.position_encoding)
        return next_turn(agent.baseline, state, force_full=force_full, pending_tool_call=pending_tool_call)

    def messages(self, session_id: str, messages: list[dict[str, Any]], include_turn: bool) -> dict[str, Any]:
        agent = self.agent(session_id)
        instruction = agent.instruction = self._build(agent)
        turn_text = self.turn_context(session_id, False, False).text if include_turn else None
        return {"messages": build_messages(instruction.text, messages, turn_text)}

    def initial_history(self, session_id: str) -> dict[str, Any]:
        agent = self.agent(session_id)
        instruction = self._build(agent)
        if instruction.initial_message:
            return {"messages": [{"role": "user", "content": instruction.initial_message}]}
        return {"messages": []}

    def show_memory(self) -> dict[str, Any]:
        assert self.composer is not None
        paths, active = self._open_paths()
        result = self.composer.memory.compose(paths, active)
        return {"files": [f.to_wire() for f in result.files], "text": result.text, "warnings": list(result.warnings)}

    def add_memory(self, fact: str, scope: str) -> dict[str, Any]:
        folder = self.folders[0] if self.folders else None
        path = add_memory(fact, scope, global_dir=self.user_dir, workspace_folder=folder)  # type: ignore[arg-type]
        # The watcher will see the write too; apply it now so the next request already has it.
        self.on_files_changed({str(path)})
        return {"path": str(path)}

    @staticmethod
    def compression() -> dict[str, Any]:
        return {"text": compression_prompt()}

    # ------------------------------------------------------------------ changes and push

    def on_files_changed(self, paths: set[str]) -> None:
        """Files changed on disk (from the watcher, already debounced)."""
        if self.composer is None:
            return
        if self._changed_meanwhile is not None:
            self._changed_meanwhile.update(paths)  # a new store is being loaded: apply to it after
        try:
            summary = self.composer.memory.apply_changes(paths)
        except Exception:
            log.exception("applying file changes failed")
            return
        if summary.roots_changed and self.watcher is not None:
            self.watcher.reschedule(self.composer.memory.watch_roots(), self.composer.memory.flat_watch_roots())
        if summary.kind is None:
            return
        # The build cache is keyed on the memory result: an edited memory or rule file needs no
        # invalidation. An ignore file or a new directory can change the folder tree: recompute it.
        if summary.kind == "workspaceChanged":
            self.composer.engine.invalidate()
        if self.after_memory_change is not None:
            self.after_memory_change()
        self._pending_files.update(summary.changed_files)
        self._pending_reasons.add(summary.kind)
        self.flush_push()  # the watcher already debounced: push now

    def schedule_push(self, reason: str) -> None:
        self._pending_reasons.add(reason)
        if self._loop is None or self._push_handle is not None:
            return
        delay = self.settings.memory.debounce_ms / 1000
        self._push_handle = self._loop.call_later(delay, self.flush_push)

    def flush_push(self) -> None:
        if self._push_handle is not None:
            self._push_handle.cancel()
            self._push_handle = None
        reasons, files = self._pending_reasons, self._pending_files
        self._pending_reasons, self._pending_files = set(), set()
        if not reasons or self.composer is None or not self.ready.is_set():
            if reasons and not self.ready.is_set():
                self._pending_reasons |= reasons
            return
        reason = next((r for r in REASON_ORDER if r in reasons), sorted(reasons)[0])
        groups: dict[str, tuple[Instruction, Instruction | None, list[str]]] = {}
        for agent in self.agents.values():
            try:
                new = self._build(agent)
            except ContextCompanionError as exc:
                log.warning("cannot rebuild the instruction of session %s: %s", agent.id, exc)
                continue
            old = agent.instruction
            if old is not None and old.etag == new.etag:
                continue
            agent.instruction = new
            entry = groups.setdefault(new.etag, (new, old, []))
            entry[2].append(agent.id)
        for etag, (new, old, ids) in groups.items():
            self._notify(
                SYSTEM_INSTRUCTION_CHANGED,
                {
                    "etag": etag,
                    "reason": reason,
                    "changedFiles": sorted(files),
                    "changedSections": changed_sections(old, new),
                    "tokens": {"total": new.tokens.total},
                    "sessions": sorted(ids),
                },
            )


def changed_sections(old: Instruction | None, new: Instruction) -> list[str]:
    before = {s.id: s.text for s in old.sections} if old is not None else {}
    after = {s.id: s.text for s in new.sections}
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
