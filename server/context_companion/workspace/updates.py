"""Memory delivered per turn (``memoryUpdates``): what a session's agent has been told, and what is new.

A session remembers, per memory file, the content its agent last received outside the instruction
(or, with ``memory.reload = "session"``, inside the instruction it started with). Each turn the
files that should be known now are compared with that record: a file that starts to apply is sent
in full, one whose content changed is sent again, and one that stops applying gets a one-line notice.
Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..memory import MemoryBlock
from ..memory.wording import REASON_GONE, render_block

Seen = dict[str, tuple[str, str]]  # abs path → (display path, content) the agent was given

MEMORY_PREFACE = (
    "Project memory that applies to the files I am working on now. Follow it like the instructions of "
    "your system prompt; it is not a request."
)
REASON_CHANGED = "changed on disk"
__all__ = ["REASON_CHANGED", "REASON_GONE", "MemoryUpdate", "as_seen", "diff", "removal_notice", "render_updates"]


def _gone(_path: str) -> str:
    return REASON_GONE


@dataclass(frozen=True, slots=True)
class MemoryUpdate:
    path: str  # display path
    reason: str
    content: str  # the file's content, or the one-line notice when it stops applying
    tokens: int
    removed: bool = False
    abs_path: str = ""

    def to_wire(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason, "content": self.content, "tokens": self.tokens}

    def render(self) -> str:
        return self.content if self.removed else render_block(self.path, self.content)


def removal_notice(path: str, reason: str) -> str:
    return f"{path} no longer applies ({reason}): disregard what it said."


def tracked(blocks: Iterable[MemoryBlock], *, on_demand_only: bool) -> dict[str, MemoryBlock]:
    """The files whose content an agent should know now, outside the instruction."""
    return {b.abs_path: b for b in blocks if b.included and b.content.strip() and (b.on_demand or not on_demand_only)}


def _same(content: str) -> str:
    return content


def as_seen(blocks: Mapping[str, MemoryBlock], fingerprint: Callable[[str], str] = _same) -> Seen:
    return {path: (b.path, fingerprint(b.content)) for path, b in blocks.items()}


def diff(
    seen: Mapping[str, tuple[str, str]],
    now: Mapping[str, MemoryBlock],
    every: Mapping[str, MemoryBlock],
    count: Callable[[str], int],
    fingerprint: Callable[[str], str] = _same,
    gone_reason: Callable[[str], str] = _gone,
) -> list[MemoryUpdate]:
    """Updates that take an agent from ``seen`` to ``now``. ``every``: all files considered (for
    the reason a file no longer applies); ``gone_reason``: why a file not among them is no memory now
    (deleted, or a setting dropped it). ``fingerprint``: what ``seen`` holds of a content (the
    content itself, or a hash of it)."""
    updates: list[MemoryUpdate] = []
    for path, block in now.items():
        before = seen.get(path)
        if before is not None and before[1] == fingerprint(block.content):
            continue
        reason = block.reason if before is None else f"{REASON_CHANGED}; {block.reason}"
        updates.append(MemoryUpdate(block.path, reason, block.content, count(block.content), abs_path=path))
    for path, (display, _content) in seen.items():
        if path in now:
            continue
        gone = every.get(path)
        reason = gone.reason if gone is not None and gone.reason else gone_reason(path)
        notice = removal_notice(display, reason)
        updates.append(MemoryUpdate(display, reason, notice, count(notice), removed=True, abs_path=path))
    return updates


def render_updates(updates: Iterable[MemoryUpdate]) -> str:
    """The updates as they appear in the turn context's ``text``."""
    parts = [u.render() for u in updates]
    return "\n\n".join([MEMORY_PREFACE, *parts]) if parts else ""
