"""What an agent lacks of the memory that applies to the editor's files now, and what its hook adds to
its next request: the :class:`~.companion.Companion`'s side of :mod:`.agent_memory` and :mod:`.hooks`.

Those two modules decide from values; this one gathers the values from the companion's current pieces
(its snapshot, memory store, editor and hook sessions, read through :class:`Sources` on every call,
since a swap replaces them) and keeps the one thing the decision remembers: the last answer of
:meth:`AgentDelivery.lacking`, by everything it was worked out from.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from ..context.state import EditorState
from ..memory import MemoryStore
from ..memory.agents import AGENTS, AgentRules
from ..memory.rule_budget import RuleBudget
from ..tokens import Tokenizer
from .agent_memory import AgentMemory, Lacking, agent_memory, lacking
from .editor_files import folder_relative, open_paths, shown_files
from .hooks import (
    HOOK_LIMITS,
    HOOK_UNITS,
    PROMPT_EVENTS,
    RESET_SOURCES,
    SESSION_START,
    Delivery,
    HookOutcome,
    HookRequest,
    HookSessions,
    deliver,
    hook_count,
    working_copy,
)
from .snapshot import WorkspaceSnapshot

Files = tuple[list[Path], Path | None]  # the open paths and the active one


class Sources(Protocol):
    """The companion's pieces a decision reads (the companion owns and swaps them)."""

    snapshot: WorkspaceSnapshot
    memory: MemoryStore
    editor: EditorState
    tokenizer: Tokenizer
    hooks: HookSessions
    rule_budget: RuleBudget | None


class AgentDelivery:
    def __init__(self, sources: Sources) -> None:
        self._sources = sources
        self._last: tuple[tuple[Any, ...], Lacking] | None = None  # the last lacking() answer, by what it used

    def hook_outcome(self, request: HookRequest, *, from_disk: bool = False) -> HookOutcome:
        """What an agent's hook adds to its next request (``context-companion hook``; see :mod:`.hooks`),
        with the session state it leads to, to commit once the hook has it (``companion.hooks.commit``).

        ``SessionStart`` with a ``startup``, ``clear`` or ``compact`` source forgets what the session
        was given (its history starts afresh) at once (forgetting too early only sends something again)
        and adds nothing; the prompt event delivers."""
        src = self._sources
        if request.event == SESSION_START:
            if request.source in RESET_SOURCES:
                src.hooks.reset(request.agent, request.session_id)
            return HookOutcome(Delivery(""))
        if request.event not in PROMPT_EVENTS or request.agent not in HOOK_LIMITS:
            return HookOutcome(Delivery(""))
        snap = src.snapshot
        active, open_files = shown_files(open_paths(src.editor), snap.folders, snap.settings.context.exclude)
        base = src.hooks.peek(request.agent, request.session_id)
        state = working_copy(base)
        lacks = self.lacking(request.agent, cwd=request.cwd or None)
        budget = src.rule_budget
        if budget is not None:  # rule files left unread: named once, and never taken back
            lacks = replace(lacks, notes=budget.notes(), unread=frozenset(budget.partial))
        delivery = deliver(
            state,
            lacks,
            limit=HOOK_LIMITS[request.agent],
            count=hook_count(request.agent),
            unit=HOOK_UNITS[request.agent],
            from_disk=from_disk,
            active=active,
            open_files=open_files,
            texts=src.hooks.texts,
            process=request.process,
        )
        return HookOutcome(delivery, (request.agent, request.session_id), base, state)

    def agent_memory(self, agent: str | AgentRules) -> AgentMemory:
        """The memory ``agent`` (an id or a table) does not read itself, for the open files: see :mod:`.agent_memory`."""
        rules = AGENTS[agent] if isinstance(agent, str) else agent
        return agent_memory(rules.id, self.lacking(rules), self._sources.tokenizer.count)

    def hook_plan(self, agent: str, files: Files | None = None, *, cwd: str | None = None) -> list[Delivery]:
        """What a new session of ``agent``'s hook would get prompt after prompt, nothing changing, for the editor's
        files (or ``files``: open paths and the active one): :func:`.hooks.delivery_plan`, for ``explain``."""
        from .hooks import delivery_plan

        paths, active = files if files is not None else open_paths(self._sources.editor)
        folders = self._sources.snapshot.folders
        return delivery_plan(
            self.lacking(agent, cwd=cwd, files=(paths, active)),
            limit=HOOK_LIMITS[agent],
            count=hook_count(agent),
            unit=HOOK_UNITS[agent],
            active=folder_relative(active, folders) if active is not None else None,
            open_files=[folder_relative(p, folders) for p in paths],
        )

    def lacking(self, agent: str | AgentRules, *, cwd: str | None = None, files: Files | None = None) -> Lacking:
        """What ``agent`` (an id or a table, running in ``cwd``) lacks of the memory that applies to the open
        files now: the one decision both :meth:`agent_memory` and :meth:`hook_outcome` render. An agent that
        loads some rules for the files attached to its request (``attached_rules``: VS Code attaches the
        active file once it has a selection) is judged with those too."""
        src = self._sources
        memory, snapshot = src.memory, src.snapshot
        paths, active = files if files is not None else open_paths(src.editor)
        interactive = snapshot.settings.profile.interactive
        rules = AGENTS[agent] if isinstance(agent, str) else agent
        cursor = src.editor.cursor
        selected = bool(rules.attached_rules and active is not None and cursor is not None and cursor.selections)
        memory.blocks(paths, active, interactive=interactive)  # loads the store first: its generation is current
        # The same question as the last time, nothing moved since (the memory, the editor's files, the agent's own
        # settings files): the same answer (O(rule files) to work out: on a tree with 40,000 rules, seconds an
        # unchanged prompt, past the hook's deadline).
        table = memory.agent_table(rules)
        key = (memory, snapshot, memory.generation, table, cwd, tuple(paths), active, selected)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        answer = self._lacking_now(rules, paths, active, interactive, cwd, selected)
        self._last = (key, answer)
        return answer

    def _lacking_now(
        self,
        rules: AgentRules,
        paths: list[Path],
        active: Path | None,
        interactive: bool,
        cwd: str | None,
        selected: bool,
    ) -> Lacking:
        from ..exclusion import exclude_matcher

        memory = self._sources.memory
        blocks = memory.blocks(paths, active, interactive=interactive)
        explanations = [memory.explain(rules, paths, active, interactive=interactive, cwd=cwd)]
        if selected and active is not None:
            attached = AgentRules(rules.id, rules.name, rules.docs, rules=rules.attached_rules)
            explanations.append(memory.explain(attached, [active], active, interactive=interactive))
        secret = exclude_matcher(tuple(self._sources.snapshot.settings.context.exclude)).matches
        return lacking(blocks, explanations, excluded=lambda b: secret(b.path), gone_reason=memory.gone_reason)
