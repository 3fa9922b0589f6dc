"""The operations an agent bridge offers, as plain synchronous methods returning values.

One :class:`Companion` per workspace. It owns the derived pieces (tokenizer, memory store,
instruction engine, editor state, agent sessions) and the :class:`~.snapshot.WorkspaceSnapshot`
they are derived from. It never calls out: a bridge calls in and sends what comes back. What an
agent lacks of that memory and what its hook adds are worked out by :mod:`.agent_delivery` from these
pieces; the editor's files as paths and names come from :mod:`.editor_files`; what a swap returns
is in :mod:`.swaps`.

Slow work (reading every memory file, loading an encoding) is split in two so a bridge can run
it off its event loop: ``prepare*`` builds new pieces without touching those in use (thread-safe),
``apply``/``refresh_memory`` swaps them in (fast, on the bridge's loop).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any, Literal

from ..context.messages import build_messages
from ..context.state import Baseline, EditorSelection, EditorState, RawPosition
from ..context.turn import TurnContext, next_turn, with_memory
from ..errors import ContextCompanionError
from ..memory import MemoryResult, MemoryStore, add_memory
from ..memory.agents import AgentRules
from ..memory.explain import Explanation
from ..memory.rule_budget import RuleBudget
from ..prompt.compression import compression_prompt
from ..prompt.engine import Instruction, InstructionEngine
from ..prompt.export import Exporter, export_path
from ..tokens import Tokenizer
from ..uris import uri_to_path
from .agent_delivery import AgentDelivery
from .agent_memory import AgentMemory, Lacking
from .changes import InstructionChanged, MemoryChange, PrefixStable, changed_sections, prefix_stable
from .editor_files import open_paths, resolve_file
from .hooks import Delivery, HookOutcome, HookRequest, HookSessions
from .sessions import DEFAULT_SESSION, AgentSession, AgentSessions
from .snapshot import WorkspaceSnapshot
from .swaps import Prepared, Refreshed, Swapped, make_tokenizer
from .updates import MemoryUpdate, as_seen, diff, render_updates, tracked

log = logging.getLogger(__name__)

Selection = tuple[RawPosition, RawPosition]


class Companion:
    def __init__(
        self,
        snapshot: WorkspaceSnapshot,
        *,
        tokenizer: Tokenizer | None = None,
        home: Path | None = None,
        today: Callable[[], date] = date.today,
        walk_below: bool | Sequence[str] = True,
        rule_budget: RuleBudget | None = None,
    ) -> None:
        """``rule_budget``: how many rule files a folder's load reads and when it stops (the hook's disk path;
        see :mod:`..memory.rule_budget`). ``walk_below`` not True: the folders' own memory and rules, and of what is below them only the
        sub-directories named (the hook's disk path: no open files, so no sub-folder memory to find but the
        chain down to where the agent runs; see :func:`~..memory.discovery.index_folder`)."""
        self.snapshot = snapshot
        self.home = home
        self.walk_below = walk_below
        self.rule_budget = rule_budget
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
        self.hooks = HookSessions()  # what each agent session's hook was given (context-companion hook)
        self._exporter = Exporter()
        self._missed: set[str] | None = None  # file changes seen while a new store loads
        self._memory_edited = False  # memory changed on disk since the last rebuild_sessions
        self._told: set[str] = set()  # tokenizer warnings logged: each once per process
        self._delivery = AgentDelivery(self)  # what an agent lacks, and what its hook adds

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
            walk_below=self.walk_below,
            rule_budget=self.rule_budget,
        )

    def load(self) -> None:
        """Load the tokenizer and read every memory file (slow: not for a hot path)."""
        self._load_tokenizer(self.tokenizer)
        self.memory.load()

    def _load_tokenizer(self, tokenizer: Tokenizer) -> None:
        """Load it, and tell the user why counts are estimated, once per process: a tokenizer is
        made again on every token settings change, and the same line each time is noise. The record
        is marked ``once_per_machine``: the command line says it once per machine (cli/output.py)."""
        tokenizer.load()
        warning = tokenizer.warning
        if warning is not None and warning not in self._told:
            self._told.add(warning)
            log.warning("%s", warning, extra={"once_per_machine": True})

    # ------------------------------------------------------------------ snapshot swaps

    def prepare(self, snapshot: WorkspaceSnapshot) -> Prepared:
        """Build what ``snapshot`` needs that the current one does not have. Thread-safe."""
        old = self.snapshot.settings
        new = snapshot.settings
        tokenizer = None
        if (old.tokens, old.profile.model) != (new.tokens, new.profile.model):
            tokenizer = make_tokenizer(new)
            self._load_tokenizer(tokenizer)
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
            if old.settings.environment != new.settings.environment:
                for agent in self.sessions:
                    agent.trees = None  # taken again under the new tree settings; any other setting keeps them
        if old.folders != new.folders:
            self.engine.set_folders(list(new.folders))
            self._snapshot_new_folders(old.folders, new.folders)
        if prepared.memory is not None:
            self._use_memory(prepared.memory)
        return Swapped(old.settings != new.settings, old.folders != new.folders, prepared.memory is not None)

    def _snapshot_new_folders(self, old: Sequence[Path], new: Sequence[Path]) -> None:
        """Sessions keep the trees of the folders they had and get one of each added folder."""
        added = [f for f in new if f not in old]
        fresh = self.engine.folder_trees(added) if added else {}
        kept = {str(f) for f in new}
        for agent in self.sessions:
            if agent.trees is not None:
                agent.trees = {k: v for k, v in agent.trees.items() if k in kept} | fresh

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
        return open_paths(self.editor)

    def build(self, agent: AgentSession, *, include_memory: bool | None = None) -> Instruction:
        """The instruction for this session now (cached by its inputs). Raises ``PromptError``.

        The session's folder trees are taken on its first build and kept; with
        ``memory.reload = "session"`` so is its memory composition. ``include_memory``: whether the
        memory files are in it (default: the session's choice)."""
        paths, active = self._open_paths()
        if agent.trees is None:
            agent.trees = self.engine.folder_trees()
        if not (agent.include_memory if include_memory is None else include_memory):
            return self.engine.build(agent.profile, paths, active, trees=agent.trees, include_memory=False)
        memory = None
        if self.snapshot.settings.memory.reload == "session":
            if agent.memory is None:
                self._freeze_memory(agent, paths, active)
            memory = agent.memory
        return self.engine.build(agent.profile, paths, active, trees=agent.trees, memory=memory)

    def _freeze_memory(self, agent: AgentSession, paths: list[Path], active: Path | None) -> None:
        """Keep the memory as composed now in the session's instruction; what its agent then knows
        is that instruction's memory (plus on-demand memory already delivered)."""
        interactive = self._interactive(agent)
        agent.memory = self.engine.compose_memory(paths, active, interactive)
        included = {f.abs_path for f in agent.memory.files if f.included} if agent.memory is not None else set()
        blocks = self.memory.blocks(paths, active, interactive=interactive)
        agent.seen_at_start = as_seen({b.abs_path: b for b in blocks if b.abs_path in included and b.content.strip()})
        agent.seen = {k: v for k, v in agent.seen.items() if k not in included} | agent.seen_at_start

    def export(self, instruction: Instruction) -> Instruction:
        """Write the instruction where ``writeSystemPromptTo`` says (a no-op when unset)."""
        snap = self.snapshot
        path = export_path(snap.settings, snap.folders, snap.environ)
        exported = self._exporter.export(instruction, path, roots=(*snap.folders, snap.user_dir))
        if not snap.refusals:
            return exported
        # The workspace values left out of the settings, said wherever the instruction is shown.
        return dataclasses.replace(exported, warnings=(*snap.refusal_lines(), *exported.warnings))

    def start_session(self, session_id: str, profile: Any = None) -> Instruction:
        agent = self.sessions.get(session_id, profile)
        agent.baseline = Baseline()
        agent.trees, agent.memory, agent.seen, agent.seen_at_start = None, None, {}, {}
        agent.instruction = self.build(agent)
        return agent.instruction

    def end_session(self, session_id: str) -> None:
        """Forget the session. Raises ``ParamsError`` for an unknown id."""
        self.sessions.end(session_id)

    def system_instruction(self, session_id: str, *, include_memory: bool = True) -> Instruction:
        return self.system_instruction_report(session_id, include_memory=include_memory)[0]

    def system_instruction_report(
        self, session_id: str, *, include_memory: bool = True
    ) -> tuple[Instruction, PrefixStable]:
        """The session's instruction now, and how much of the one it was last given it keeps.
        ``include_memory=False``: the session's agent gets the memory files another way; the session
        keeps that choice (its pushes leave them out too) until a call says otherwise."""
        agent = self.sessions.get(session_id)
        previous = agent.instruction
        agent.include_memory = include_memory
        agent.instruction = self.build(agent)
        return agent.instruction, prefix_stable(previous.text if previous else None, agent.instruction.text)

    def refresh_memory(self, store: MemoryStore, environment: bool = False) -> Refreshed:
        """Swap in a store from :meth:`prepare_memory` and rebuild every session's instruction.
        ``environment``: take the folder trees again too. Sessions that keep the memory of their
        start (``memory.reload = "session"``) take it again: this is how edits are applied."""
        reference = self.sessions.find(DEFAULT_SESSION) or AgentSession(DEFAULT_SESSION, None)
        before = self.build(reference)
        self._use_memory(store)
        for agent in self.sessions:
            agent.memory = None
            if environment:
                agent.trees = None
        if environment:
            reference.trees = None
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
        self,
        session_id: str,
        texts: Mapping[str, str],
        *,
        force_full: bool = False,
        pending_tool_call: bool = False,
        editor: bool = True,
        memory: bool = True,
    ) -> TurnContext:
        """The editor context for the next turn: full the first time, then what changed; with the
        memory updates the session's agent has not had yet (see :mod:`.updates`).
        ``texts`` maps a document URI to its current text (the documents the editor has open).
        ``editor=False``: memory updates only; ``memory=False``: the editor context only (the agent
        gets memory another way; the session's record of delivered memory stays as it was)."""
        agent = self.sessions.get(session_id)
        return self.turn_for(
            agent, texts, force_full=force_full, pending_tool_call=pending_tool_call, editor=editor, memory=memory
        )

    def turn_for(
        self,
        agent: AgentSession,
        texts: Mapping[str, str],
        *,
        force_full: bool = False,
        pending_tool_call: bool = False,
        editor: bool = True,
        memory: bool = True,
    ) -> TurnContext:
        """:meth:`turn_context` for a session given as is (one not registered: a read that is no
        agent's turn, and must not evict a session that is)."""
        if pending_tool_call:  # a tool result must follow its call: nothing moves
            return TurnContext("none", None, None)
        turn = TurnContext("none", None, None)
        if editor and self.snapshot.settings.context.enabled:
            state = self.editor.snapshot(texts.get, self.snapshot.position_encoding)
            turn = next_turn(agent.baseline, state, force_full=force_full)
        if not memory:
            return turn
        updates = self.memory_updates(agent, reset=force_full)
        return with_memory(turn, render_updates(updates), [u.to_wire() for u in updates])

    def memory_updates(self, agent: AgentSession, *, reset: bool = False) -> list[MemoryUpdate]:
        """Memory the agent should now know beyond what it was given, and mark it given.

        ``memory.onDemandDelivery = "turn"``: JIT files and glob rules that apply to the open files.
        ``memory.reload = "session"``: also edits to the memory the session's instruction keeps.
        ``reset`` (forceFull: the agent lost its history) sends everything again."""
        settings = self.snapshot.settings.memory
        keep_session = settings.reload == "session"
        if settings.on_demand_delivery == "instruction" and not keep_session:
            return []
        if keep_session and agent.memory is None:
            agent.instruction = self.build(agent)  # freezes the session's memory
        paths, active = self._open_paths()
        blocks = self.memory.blocks(paths, active, interactive=self._interactive(agent))
        now = tracked(blocks, on_demand_only=not keep_session)
        if reset:
            agent.seen = dict(agent.seen_at_start)
        every = {b.abs_path: b for b in blocks}
        updates = diff(agent.seen, now, every, self.tokenizer.count, gone_reason=self.memory.gone_reason)
        agent.seen = as_seen(now)
        return updates

    def turn_delivered(self) -> frozenset[str]:
        """Display paths of the memory files a new session's first turn carries for the open
        files (the files of :meth:`show_memory` that come with the turn, not in the instruction).

        Worked out by :meth:`turn_for` itself, for a session that is no agent's (nothing registered)."""
        probe = AgentSession("\0delivered", None, trees={})  # its instruction is never shown: no tree walk
        return frozenset(u["path"] for u in self.turn_for(probe, {}, editor=False).memory_updates)

    def build_messages(
        self,
        session_id: str,
        messages: list[dict[str, Any]],
        texts: Mapping[str, str],
        include_turn: bool = True,
        include_environment: bool | None = None,
        include_memory: bool = True,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The messages to send, and the memory updates they carry. The environment message
        (``environment.placement = "initialMessage"``) comes first on the first turn (no assistant
        message yet) or when ``include_environment`` says so. ``include_memory=False``: the agent gets
        the memory files another way: neither the instruction nor the turn carries them (as
        :meth:`system_instruction_report` and :meth:`turn_context` with it)."""
        agent = self.sessions.get(session_id)
        agent.include_memory = include_memory
        instruction = agent.instruction = self.build(agent)
        turn = self.turn_context(session_id, texts, editor=include_turn, memory=include_memory)
        if include_environment is None:
            include_environment = not any(m.get("role") == "assistant" for m in messages)
        environment = instruction.initial_message if include_environment else None
        return build_messages(instruction.text, messages, turn.text, environment), list(turn.memory_updates)

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
            active = resolve_file(active_file, self.snapshot.folders)
            paths = [*paths, active]
        interactive = self.snapshot.settings.profile.interactive
        return self.memory.explain(agent, paths, active, interactive=interactive)

    def agent_hook(self, request: HookRequest, *, from_disk: bool = False) -> Delivery:
        """What an agent's hook adds to its next request, committed at once (see :meth:`hook_outcome`)."""
        outcome = self.hook_outcome(request, from_disk=from_disk)
        self.hooks.commit(outcome)
        return outcome.delivery

    def hook_outcome(self, request: HookRequest, *, from_disk: bool = False) -> HookOutcome:
        """What an agent's hook adds to its next request, with the session state it leads to, to commit once
        the hook has it (``self.hooks.commit``): :meth:`.agent_delivery.AgentDelivery.hook_outcome`."""
        return self._delivery.hook_outcome(request, from_disk=from_disk)

    def agent_memory(self, agent: str | AgentRules) -> AgentMemory:
        """The memory ``agent`` (an id or a table) does not read itself, for the open files: see :mod:`.agent_memory`."""
        return self._delivery.agent_memory(agent)

    def hook_plan(
        self, agent: str, files: tuple[list[Path], Path | None] | None = None, *, cwd: str | None = None
    ) -> list[Delivery]:
        """What a new session of ``agent``'s hook would get prompt after prompt, nothing changing, for the editor's
        files (or ``files``: open paths and the active one): :func:`.hooks.delivery_plan`, for ``explain``."""
        return self._delivery.hook_plan(agent, files, cwd=cwd)

    def lacking(
        self,
        agent: str | AgentRules,
        *,
        cwd: str | None = None,
        files: tuple[list[Path], Path | None] | None = None,
    ) -> Lacking:
        """What ``agent`` (an id or a table, running in ``cwd``) lacks of the memory that applies to the open
        files now: the one decision both :meth:`agent_memory` and :meth:`agent_hook` render
        (:meth:`.agent_delivery.AgentDelivery.lacking`)."""
        return self._delivery.lacking(agent, cwd=cwd, files=files)

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
        if summary.kind is not None:
            self._memory_edited = True
        # The build cache is keyed on the memory result: an edited memory or rule file needs no
        # invalidation. An ignore file or a new directory can change the folder tree: recompute it.
        if summary.kind == "workspaceChanged":
            self.engine.invalidate()
        return MemoryChange(summary.kind, frozenset(summary.changed_files), summary.watch_changed)

    def rebuild_sessions(self) -> list[InstructionChanged]:
        """Rebuild the instruction of every session that was given one; one entry per new
        instruction (and previous one), naming the sessions that now have it. Sessions whose
        instruction did not change are left out, except sessions that keep their start's memory
        (``memory.reload = "session"``) while memory on disk now differs: they get an entry with
        ``applied`` false. A session never given an instruction (one that only asked for turn
        contexts so far) has none that could change: it gets the current one when it asks."""
        edited, self._memory_edited = self._memory_edited, False
        groups: dict[tuple[str, str, bool], tuple[Instruction, Instruction, list[str]]] = {}
        for agent in self.sessions:
            old = agent.instruction
            if old is None:
                continue
            try:
                new = self.build(agent)
            except ContextCompanionError as exc:
                log.warning("cannot rebuild the instruction of session %s: %s", agent.id, exc)
                continue
            if old.etag == new.etag:
                if edited and self._memory_kept_apart(agent):
                    groups.setdefault((new.etag, old.etag, False), (new, old, []))[2].append(agent.id)
                continue
            agent.instruction = new
            groups.setdefault((new.etag, old.etag, True), (new, old, []))[2].append(agent.id)
        return [
            InstructionChanged(
                new,
                changed_sections(old, new) if applied else ("memory",),
                tuple(sorted(ids)),
                prefix_stable(old.text, new.text),
                applied,
            )
            for (_etag, _old, applied), (new, old, ids) in groups.items()
        ]

    def _memory_kept_apart(self, agent: AgentSession) -> bool:
        """Whether the session keeps memory that differs from the memory on disk now."""
        if agent.memory is None or self.snapshot.settings.memory.reload != "session":
            return False
        paths, active = self._open_paths()
        current = self.engine.compose_memory(paths, active, self._interactive(agent))
        return current is not None and current.text != agent.memory.text

    def _interactive(self, agent: AgentSession) -> bool:
        """Whether a person watches this session's agent (its profile's, else the settings')."""
        return (agent.profile or self.snapshot.settings.profile).interactive
