"""What an agent lacks of the memory that applies now, decided once for every way we deliver it, and the
snapshot ``getAgentMemory`` renders from that decision.

:func:`lacking` is the one decision. It takes every memory and rule file with its verdict for the editor's
open files (global and workspace memory, sub-folder memory of the open files' folders, the rules that match
them: :meth:`~..memory.MemoryStore.blocks`) and what the agent's :class:`~..memory.agents.AgentRules` table
says it loads itself and how it keeps each file (:mod:`..memory.explain`), and returns a :class:`Lacking`:
the files that apply (included, with text, never a ``context.exclude`` file), each one's ``reading`` by the
agent (``tracked``, ``start``, ``just-in-time``, ``""`` when the table does not say), keyed by absolute path.

Two deliveries read it, each in its own rendering:

- :func:`agent_memory`, a snapshot (VS Code's chat re-reads an extension's contributed instructions file on
  every request): the files the agent never loads (:meth:`Lacking.never_read`). The same editor state and
  memory give the same bytes, so the agent keeps its prompt cache until something really changed.
- :mod:`.hooks`, a per-session difference (``context-companion hook``): the files the agent does not keep
  current itself (:meth:`Lacking.untracked`), those it read once at start held back until they change.

The two policies differ on purpose: a snapshot has no session to remember what an agent read at start, so it
can only leave such a file out; the hooks remember, and send it once it changed. A file the agent reads just in
time (its own tools touch the folder) is left to the agent by the snapshot, as ``explainMemory`` counts it, and
sent by the hooks, which never risk a missed file. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..memory import MemoryBlock
from ..memory.compose import normalised_body, only_headings
from ..memory.explain import Explanation
from ..memory.wording import REASON_GONE, render_block

PREFACE = (
    "Project memory from Context Companion: the memory and rule files that apply to the files open in the "
    "editor and that this chat does not read by itself. Follow them like the rest of these instructions."
)


@dataclass(frozen=True, slots=True)
class Delivered:
    path: str  # display path
    tier: str
    reason: str
    tokens: int

    def to_wire(self) -> dict[str, Any]:
        return {"path": self.path, "tier": self.tier, "reason": self.reason, "tokens": self.tokens}


@dataclass(frozen=True, slots=True)
class AgentMemory:
    agent: str
    text: str  # "" when nothing is left to deliver
    files: tuple[Delivered, ...]
    read_by_agent: tuple[str, ...]  # display paths the agent loads itself (left out here)

    @property
    def etag(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:32]

    def to_wire(self, count: Callable[[str], int]) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "etag": self.etag,
            "text": self.text,
            "tokens": count(self.text) if self.text else 0,
            "files": [f.to_wire() for f in self.files],
            "readByAgent": list(self.read_by_agent),
        }


TRACKED = "tracked"
AT_START = "start"


def _never(_block: MemoryBlock) -> bool:
    return False


def _gone(_path: str) -> str:
    return REASON_GONE


@dataclass(frozen=True, slots=True)
class Lacking:
    """The memory that applies now and how the agent has it (see the module docstring)."""

    every: Mapping[str, MemoryBlock]  # abs path → every memory and rule file with its verdict now
    applies: Mapping[str, MemoryBlock]  # abs path → those that apply: included, with text, not excluded
    reading: Mapping[str, str]  # abs path → how the agent keeps a file it loads itself
    read: tuple[str, ...] = ()  # display paths of the files the agent loads itself, in its order
    # The hook's disk path, when it read only part of a rule folder (memory.rule_budget): one line each to say so
    # (key → text), and the rule folders (abs paths) a file of which, not read this time, is not taken back.
    gone_reason: Callable[[str], str] = _gone  # why a file no longer among ``every`` is no memory now
    notes: Mapping[str, str] = field(default_factory=dict)
    unread: frozenset[str] = frozenset()

    def not_read(self, path: str) -> bool:
        """Whether ``path`` is in a rule folder that was read only in part (it may be there, unread)."""
        return any(path.startswith(folder.rstrip("/\\") + sep) for folder in self.unread for sep in "/\\")

    def never_read(self) -> dict[str, MemoryBlock]:
        """What applies and the agent does not load at all (composition order)."""
        return {p: b for p, b in self.applies.items() if p not in self.reading}

    def tracked(self) -> frozenset[str]:
        """Files the agent reads and keeps current itself (re-read when they change): never ours to send."""
        return frozenset(p for p, how in self.reading.items() if how == TRACKED)

    def untracked(self) -> dict[str, MemoryBlock]:
        """What applies and the agent does not keep current itself (composition order)."""
        own = self.tracked()
        return {p: b for p, b in self.applies.items() if p not in own}

    def read_at_start(self) -> frozenset[str]:
        """Files the agent reads once, when its session starts."""
        return frozenset(p for p, how in self.reading.items() if how == AT_START)


def lacking(
    blocks: Iterable[MemoryBlock],
    explanations: Sequence[Explanation] = (),
    *,
    excluded: Callable[[MemoryBlock], bool] = _never,
    gone_reason: Callable[[str], str] = _gone,
) -> Lacking:
    """The one decision of what an agent lacks. ``blocks``: every memory and rule file with its verdict for the
    editor's files now; ``explanations``: the agent's table applied to them (and, for an agent that loads rules
    for the files attached to its request, that too; the first one's reading wins); ``excluded``: files never
    to deliver (``context.exclude``); ``gone_reason``: why a file given earlier and no longer among ``blocks`` is
    no memory now (deleted, or a setting dropped it)."""
    every = {b.abs_path: b for b in blocks}
    applies = {p: b for p, b in every.items() if b.included and b.content.strip() and not excluded(b)}
    reading: dict[str, str] = {}
    for explanation in explanations:
        for path, how in explanation.reading_of().items():
            reading.setdefault(path, how)
    # A sub-folder file the agent read at start because it runs below that folder applies to its session,
    # whether or not an open file is there: an edit of it must reach the agent.
    for path, how in reading.items():
        block = every.get(path)
        if block is None or how != AT_START or path in applies or block.tier != "jit" or not block.content.strip():
            continue
        if not excluded(block) and not block.reason.startswith("skipped"):
            where = block.path.rsplit("/", 1)[0] + "/"
            applies[path] = replace(block, included=True, reason=f"sub-folder memory of {where}, where the agent runs")
    applies = _one_per_twins(every, applies, reading)
    read = tuple(dict.fromkeys(item.path for e in explanations for item in e.loads))
    return Lacking(every, applies, reading, read, gone_reason)


_RANK = {TRACKED: 0, AT_START: 1}


def _one_per_twins(
    every: Mapping[str, MemoryBlock], applies: dict[str, MemoryBlock], reading: dict[str, str]
) -> dict[str, MemoryBlock]:
    """Copies of one text (a symlink, a hard link, or the same text after imports, e.g. one rule kept in
    two vendors' folders) are one file: when the agent reads any copy itself, that copy stands for all of
    them (each gets its reading, so none is sent for it) and is the one delivered when its reading asks for
    it. ``reading`` is completed in place; the new ``applies`` keeps the composition's order."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    firsts: dict[str, str] = {}
    for path, block in every.items():
        if not block.content.strip():
            continue
        find(path)
        keys = ["f:" + block.file_key]
        if not only_headings(block.content):  # a title left once imports are gone says nothing of its own
            keys.append("t:" + normalised_body(block.content))
        for key in keys:
            other = firsts.setdefault(key, path)
            if other != path:
                parent[find(path)] = find(other)
    groups: dict[str, list[str]] = {}
    for path in parent:
        groups.setdefault(find(path), []).append(path)
    stand_in: dict[str, str] = {}  # path → the agent's own copy standing for it
    for members in groups.values():
        own = [m for m in members if m in reading]
        if len(members) < 2 or not own:
            continue
        mine = min(own, key=lambda m: _RANK.get(reading[m], 2))
        for m in members:
            if m != mine:
                reading[m] = reading[mine]
                stand_in[m] = mine
    if not stand_in:
        return applies
    out: dict[str, MemoryBlock] = {}
    for path, block in applies.items():
        copy = stand_in.get(path)
        if copy is None:
            out.setdefault(path, block)
        elif copy not in applies and copy in every:
            out.setdefault(copy, replace(every[copy], included=True, reason=block.reason))
    return out


def agent_memory(agent: str, lacks: Lacking, count: Callable[[str], int]) -> AgentMemory:
    """The files ``agent`` never loads itself, in the composition's order, rendered as the instruction renders
    them (the snapshot of ``getAgentMemory``)."""
    chosen = list(lacks.never_read().values())
    text = "\n\n".join([PREFACE, *(render_block(b.path, b.content) for b in chosen)]) if chosen else ""
    files = tuple(Delivered(b.path, b.tier, b.reason, count(b.content)) for b in chosen)
    return AgentMemory(agent, text, files, lacks.read)
