"""The operations an agent bridge offers, as plain synchronous methods returning values.

One :class:`Companion` per workspace. It owns the derived pieces (tokenizer, memory store,
instruction engine, editor state, agent sessions) and the :class:`~.snapshot.WorkspaceSnapshot`
they are derived from. It never calls out: a bridge calls in and sends what comes back.

Slow work (reading every memory file, loading an encoding) is split in two so a bridge can run
it off its event loop: ``prepare*`` builds new pieces without touching those in use (thread-safe),
``apply``/``refresh_memory`` swaps them in (fast, on the bridge's loop).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Literal

from ..context.messages import build_messages
from ..context.state import Baseline, EditorSelection, EditorState, RawPosition, uri_to_path
from ..context.turn import TurnContext, next_turn
from ..errors import ContextCompanionError, ParamsError
from ..memory import MemoryResult, MemoryStore, add_memory
from ..memory.explain import Explanation
from ..prompt.compression import compression_prompt
from ..prompt.engine import Instruction, InstructionEngine
from ..prompt.export import Exporter, export_path
from ..settings import Settings
from ..tokens import Tokenizer, encoding_for_model
from .changes import InstructionChanged, MemoryChange, changed_sections
from .sessions import DEFAULT_SESSION, AgentSession, AgentSessions
from .snapshot import WorkspaceSnapshot

log = logging.getLogger(__name__)

Selection = tuple[RawPosition, RawPosition]


@dataclass(frozen=True)
class Prepared:
    """New pieces for a snapshot, built off the loop; None where the current one still fits."""

    snapshot: WorkspaceSnapshot
    tokenizer: Tokenizer | None
    memory: MemoryStore | None


@dataclass(frozen=True)
class Swapped:
    settings_changed: bool
    folders_changed: bool
    memory_replaced: bool  # watch roots may differ: restart the file watcher


@dataclass(frozen=True)
class Refreshed:
    changed: bool
    instruction: Instruction  # the default session's (or the settings' profile's) instruction
    sessions_updated: tuple[str, ...]


def make_tokenizer(settings: Settings) -> Tokenizer:
    tokens = settings.tokens
    model = settings.profile.model
    name = encoding_for_model(model, tokens.encoding) if model else tokens.encoding
    return Tokenizer(name, tokens.encoding_file, allow_download=tokens.allow_download)


class Companion:
    def __init__(
        self,
        snapshot: WorkspaceSnapshot,
        *,
        tokenizer: Tokenizer | None = None,
        home: Path | None = None,
        today: Callable[[], date] = date.today,
    ) -> None:
        self.snapshot = snapshot
        self.home = home
        self.tokenizer = tokenizer or make_tokenizer(snapshot.settings)
        self.memory = self._new_store(snapshot, self.tokenizer)
        self.engine = InstructionEngine(
            snapshot.settings,
            list(snapshot.folders),
            tokenizer=self.tokenizer,
            memory=self.memory,
            environ=snapshot.environ,
            user_dir=snapshot.user_dir,
            today=today,
        )
        self.editor = EditorState(snapshot.settings.context)
        self.sessions = AgentSessions(snapshot.settings.server.max_sessions)
        self._exporter = Exporter()
        self._missed: set[str] | None = None  # file changes seen while a new store loads

    @classmethod
    def open(cls, folders: Sequence[Path], **kwargs: Any) -> Companion:
        """A companion for these folders with the layered settings, loaded. Raises ``SettingsError``."""
        companion = cls(WorkspaceSnapshot.resolve(folders), **kwargs)
        companion.load()
        return companion

    def _new_store(self, snapshot: WorkspaceSnapshot, tokenizer: Tokenizer) -> MemoryStore:
        return MemoryStore(
            snapshot.settings.memory,
            list(snapshot.folders),
            count_tokens=tokenizer.count,
            global_dir=snapshot.user_dir,
            home=self.home,
            exclude=snapshot.settings.context.exclude,
        )

    def load(self) -> None:
        """Load the tokenizer and read every memory file (slow: not for a hot path)."""
        self.tokenizer.load()
        self.memory.load()

    # ------------------------------------------------------------------ snapshot swaps

    def prepare(self, snapshot: WorkspaceSnapshot) -> Prepared:
        """Build what ``snapshot`` needs that the current one does not have. Thread-safe."""
        old = self.snapshot.settings
        new = snapshot.settings
        tokenizer = None
        if (old.tokens, old.profile.model) != (new.tokens, new.profile.model):
            tokenizer = make_tokenizer(new)
            tokenizer.load()
        memory = None
        # Token counts live in the store too, so a new tokenizer means a new store.
        # The exclude list decides which imports may be inlined, so it is part of memory too.
        memory_inputs_changed = (old.memory, old.context.exclude) != (new.memory, new.context.exclude)
        if tokenizer is not None or memory_inputs_changed or snapshot.folders != self.snapshot.folders:
            memory = self._new_store(snapshot, tokenizer or self.tokenizer)
            memory.load()
        return Prepared(snapshot, tokenizer, memory)

    def prepare_memory(self) -> MemoryStore:
        """A freshly read memory store for the current snapshot. Thread-safe."""
        store = self._new_store(self.snapshot, self.tokenizer)
        store.load()
        return store

    def apply(self, prepared: Prepared) -> Swapped:
        """Swap in a prepared snapshot and the pieces built for it."""
        old, new = self.snapshot, prepared.snapshot
        self.snapshot = new
        if prepared.tokenizer is not None:
            self.tokenizer = self.engine.tokenizer = prepared.tokenizer
        if old.settings != new.settings:
            self.engine.update_settings(new.settings)
            self.editor.update_settings(new.settings.context)
            self.sessions.set_limit(new.settings.server.max_sessions)
        if old.folders != new.folders:
            self.engine.set_folders(list(new.folders))
        if prepared.memory is not None:
            self._use_memory(prepared.memory)
        return Swapped(old.settings != new.settings, old.folders != new.folders, prepared.memory is not None)

    def _use_memory(self, store: MemoryStore) -> None:
        self.memory = self.engine.memory = store
        self.engine.invalidate()

    def begin_reload(self) -> None:
        """A new store is being prepared: remember file changes from now on."""
        self._missed = set()

    def end_reload(self) -> set[str]:
        """The prepared store is in: the file changes it may have missed, to apply again."""
        missed, self._missed = self._missed or set(), None
        return missed

    # ------------------------------------------------------------------ editor state

    def did_open(self, uri: str) -> None:
        self.editor.open(uri)

    def did_close(self, uri: str) -> None:
        self.editor.close(uri)

    def did_change_cursor(self, uri: str, position: RawPosition, selections: Sequence[Selection]) -> bool:
        """Record the cursor. True when the active file changed (it feeds JIT memory and rules)."""
        previous = self.editor.active_uri()  # compared as URIs: no parsing per keystroke
        self.editor.set_cursor(uri, position, selections)
        return previous != uri

    def selection(self, texts: Mapping[str, str]) -> EditorSelection | None:
        """The active document's selection (None when there is none to tell, a secret file's, or
        the editor context is off). ``texts`` maps a document URI to its current text."""
        if not self.snapshot.settings.context.enabled:
            return None
        return self.editor.selection(texts.get, self.snapshot.position_encoding)

    def open_documents(self) -> list[tuple[str, str]]:
        """(uri, path) of the open documents an agent may be told about, most recently used
        first: those matching ``context.exclude`` are left out; paths are redacted."""
        if not self.snapshot.settings.context.enabled:
            return []
        editor = self.editor
        return [(uri, editor.clean(uri_to_path(uri))) for uri in editor.open_uris() if not editor.is_excluded(uri)]

    # ------------------------------------------------------------------ instructions

    def _open_paths(self) -> tuple[list[Path], Path | None]:
        paths = [Path(p) for p in self.editor.open_paths()]
        active = self.editor.active_path()
        # untitled: and other non-file documents have no place on disk: they feed no memory tier
        active_path = Path(active) if active and Path(active).is_absolute() else None
        return [p for p in paths if p.is_absolute()], active_path

    def build(self, agent: AgentSession) -> Instruction:
        """The instruction for this session now (cached by its inputs). Raises ``PromptError``."""
        paths, active = self._open_paths()
        return self.engine.build(agent.profile, paths, active)

    def export(self, instruction: Instruction) -> Instruction:
        """Write the instruction where ``writeSystemPromptTo`` says (a no-op when unset)."""
        snap = self.snapshot
        path = export_path(snap.settings, snap.folders, snap.environ)
        return self._exporter.export(instruction, path, roots=(*snap.folders, snap.user_dir))

    def start_session(self, session_id: str, profile: Any = None) -> Instruction:
        agent = self.sessions.get(session_id, profile)
        agent.baseline = Baseline()
        agent.instruction = self.build(agent)
        return agent.instruction

    def end_session(self, session_id: str) -> None:
        """Forget the session. Raises ``ParamsError`` for an unknown id."""
        self.sessions.end(session_id)

    def system_instruction(self, session_id: str) -> Instruction:
        agent = self.sessions.get(session_id)
        agent.instruction = self.build(agent)
        return agent.instruction

    def refresh_memory(self, store: MemoryStore) -> Refreshed:
        """Swap in a store from :meth:`prepare_memory` and rebuild every session's instruction."""
        reference = self.sessions.find(DEFAULT_SESSION) or AgentSession(DEFAULT_SESSION, None)
        before = self.build(reference)
        self._use_memory(store)
        updated = [change.sessions for change in self.rebuild_sessions()]
        current = self.build(reference)
        ids = tuple(sorted(i for group in updated for i in group))
        return Refreshed(current.etag != before.etag or bool(ids), current, ids)

    def initial_history(self, session_id: str) -> list[dict[str, Any]]:
        instruction = self.build(self.sessions.get(session_id))
        if instruction.initial_message:
            return [{"role": "user", "content": instruction.initial_message}]
        return []

    def compression_prompt(self) -> str:
        return compression_prompt()

    # ------------------------------------------------------------------ turn context

    def turn_context(
        self, session_id: str, texts: Mapping[str, str], *, force_full: bool = False, pending_tool_call: bool = False
    ) -> TurnContext:
        """The editor context for the next turn: full the first time, then what changed.
        ``texts`` maps a document URI to its current text (the documents the editor has open)."""
        agent = self.sessions.get(session_id)
        if not self.snapshot.settings.context.enabled:
            return TurnContext("none", None, None)
        state = self.editor.snapshot(texts.get, self.snapshot.position_encoding)
        return next_turn(agent.baseline, state, force_full=force_full, pending_tool_call=pending_tool_call)

    def build_messages(
        self, session_id: str, messages: list[dict[str, Any]], texts: Mapping[str, str], include_turn: bool = True
    ) -> list[dict[str, Any]]:
        agent = self.sessions.get(session_id)
        instruction = agent.instruction = self.build(agent)
        turn_text = self.turn_context(session_id, texts).text if include_turn else None
        return build_messages(instruction.text, messages, turn_text)

    # ------------------------------------------------------------------ memory

    def memory_tokens(self, result: MemoryResult) -> int:
        """Tokens of the memory text as the instruction holds it (the same count as its token report)."""
        from ..prompt.engine import collapse_newlines

        return self.tokenizer.count(collapse_newlines(result.text)) if result.text else 0

    def show_memory(self) -> MemoryResult:
        paths, active = self._open_paths()
        return self.memory.compose(paths, active)

    def explain_memory(self, agent: str, active_file: str | None = None) -> Explanation:
        """Which files ``agent`` would load for the open files (``active_file``, a path or file URI,
        relative to the first folder when not absolute, is taken as the active file)."""
        paths, active = self._open_paths()
        if active_file is not None:
            active = self._resolve_file(active_file)
            paths = [*paths, active]
        interactive = self.snapshot.settings.profile.interactive
        return self.memory.explain(agent, paths, active, interactive=interactive)

    def _resolve_file(self, raw: str) -> Path:
        if raw.startswith("file:"):
            from urllib.parse import unquote, urlparse

            raw = unquote(urlparse(raw).path)
        path = Path(raw).expanduser()
        if not path.is_absolute():
            if not self.snapshot.folders:
                raise ParamsError(f"activeFile: {raw!r} is relative and there is no workspace folder")
            path = self.snapshot.folders[0] / path
        return path

    def add_memory(self, fact: str, scope: Literal["global", "workspace"]) -> tuple[Path, MemoryChange]:
        """Append a fact to the global or workspace AGENTS.md and apply the change at once (a
        watcher sees the write later; the next request should not wait for it)."""
        snap = self.snapshot
        folder = snap.folders[0] if snap.folders else None
        path = add_memory(
            fact,
            scope,
            global_dir=snap.user_dir,
            workspace_folder=folder,
            max_file_bytes=snap.settings.memory.max_file_bytes,
        )
        return path, self.apply_file_changes({str(path)})

    def apply_file_changes(self, paths: Iterable[str]) -> MemoryChange:
        """Files changed on disk: update memory and say what kind of change it was."""
        paths = set(paths)
        if self._missed is not None:
            self._missed.update(paths)
        summary = self.memory.apply_changes(paths)
        # The build cache is keyed on the memory result: an edited memory or rule file needs no
        # invalidation. An ignore file or a new directory can change the folder tree: recompute it.
        if summary.kind == "workspaceChanged":
            self.engine.invalidate()
        return MemoryChange(summary.kind, frozenset(summary.changed_files), summary.roots_changed)

    def rebuild_sessions(self) -> list[InstructionChanged]:
        """Rebuild every started session's instruction; one entry per new instruction, naming the
        sessions that now have it. Sessions whose instruction did not change are left out."""
        groups: dict[str, tuple[Instruction, Instruction | None, list[str]]] = {}
        for agent in self.sessions:
            try:
                new = self.build(agent)
            except ContextCompanionError as exc:
                log.warning("cannot rebuild the instruction of session %s: %s", agent.id, exc)
                continue
            old = agent.instruction
            if old is not None and old.etag == new.etag:
                continue
            agent.instruction = new
            groups.setdefault(new.etag, (new, old, []))[2].append(agent.id)
        return [
            InstructionChanged(new, changed_sections(old, new), tuple(sorted(ids))) for new, old, ids in groups.values()
        ]
