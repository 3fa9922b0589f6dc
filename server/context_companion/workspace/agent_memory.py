"""The memory an agent does not read itself, as one text: what our composition holds for the editor's open
files (global and workspace memory, sub-folder memory of the open files' folders, the rules that match
them), less every file the agent loads on its own (its :class:`~..memory.agents.AgentRules` table, applied
by :mod:`..memory.explain`).

A snapshot, not a diff: the same editor state and memory give the same bytes, so an agent that re-reads it
on every request (VS Code's chat reads an extension's contributed instructions file each time) keeps its
prompt cache until something really changed. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..memory import MemoryBlock
from ..memory.explain import Explanation
from ..memory.wording import render_block

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


def agent_memory(
    blocks: Iterable[MemoryBlock], explanations: Sequence[Explanation], count: Callable[[str], int]
) -> AgentMemory:
    """The included files of ``blocks`` (in the composition's order) that none of ``explanations`` (the
    agent's table, and what it loads for the files attached to its request) says the agent loads, rendered
    as the instruction renders them."""
    read = tuple(dict.fromkeys(item.path for e in explanations for item in e.items if item.loaded))
    loads = set(read)
    chosen = [b for b in blocks if b.included and b.content.strip() and b.path not in loads]
    text = "\n\n".join([PREFACE, *(render_block(b.path, b.content) for b in chosen)]) if chosen else ""
    files = tuple(Delivered(b.path, b.tier, b.reason, count(b.content)) for b in chosen)
    return AgentMemory(explanations[0].agent.id, text, files, read)
