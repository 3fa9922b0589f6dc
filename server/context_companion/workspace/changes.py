"""Values describing what changed, computed by the domain and sent by a bridge.

Data flows one way: a file event goes into :meth:`~.companion.Companion.apply_file_changes`,
which returns a :class:`MemoryChange`; :meth:`~.companion.Companion.rebuild_sessions` returns
one :class:`InstructionChanged` per new instruction. The bridge decides when and how to send.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..prompt.engine import Instruction

SYSTEM_INSTRUCTION_CHANGED = "contextCompanion/systemInstructionChanged"
# When several reasons coalesce into one push, the first in this order names it.
# A push names at most this many sessions (all of them when fewer): with many sessions the id
# list would dwarf the rest of the message. ``sessionCount`` always gives the number.
MAX_SESSIONS_LISTED = 16
REASON_ORDER = ("settingsChanged", "workspaceChanged", "rulesChanged", "memoryChanged", "openFilesChanged")


@dataclass(frozen=True)
class MemoryChange:
    """What a batch of file events changed in memory."""

    reason: str | None  # memoryChanged | rulesChanged | workspaceChanged; None: nothing that matters
    files: frozenset[str]
    watch_changed: bool  # the folders to watch, or the directories skipped in them, changed

    @property
    def matters(self) -> bool:
        return self.reason is not None


@dataclass(frozen=True)
class InstructionChanged:
    """Sessions whose instruction became the same new one."""

    instruction: Instruction
    changed_sections: tuple[str, ...]
    sessions: tuple[str, ...]
    prefix_stable: PrefixStable | None = None
    applied: bool = True  # False: memory changed, the sessions keep their start's (memory.reload = "session")

    def to_wire(self, reasons: Iterable[str], files: Iterable[str]) -> dict[str, Any]:
        """The ``contextCompanion/systemInstructionChanged`` params."""
        return {
            "etag": self.instruction.etag,
            "reason": first_reason(reasons),
            "changedFiles": sorted(files),
            "changedSections": list(self.changed_sections),
            "tokens": {"total": self.instruction.tokens.total},
            "sessions": list(self.sessions[:MAX_SESSIONS_LISTED]),
            "sessionCount": len(self.sessions),
            "applied": self.applied,
            "prefixStable": self.prefix_stable or prefix_stable(None, self.instruction.text),
        }


PrefixStable = dict[str, Any]  # {"chars": int, "percent": float}


def prefix_stable(previous: str | None, current: str) -> PrefixStable:
    """How much of the instruction a session was last given starts the new one: the characters at
    the start that are equal, and that number as a percentage of the previous instruction's length
    (what a provider's prompt cache can still reuse). Nothing given before: 0 characters, 0 %."""
    if previous is None:
        return {"chars": 0, "percent": 0.0}
    chars = common_prefix_length(previous, current)
    percent = 100.0 if not previous else round(100.0 * chars / len(previous), 2)
    return {"chars": chars, "percent": percent}


def common_prefix_length(a: str, b: str) -> int:
    """Length of the common prefix, by halving (slices compare in C, not a loop per character)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while hi - lo > 1:  # a[:lo] == b[:lo], a[:hi] != b[:hi]
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def first_reason(reasons: Iterable[str]) -> str:
    given = set(reasons)
    return next((r for r in REASON_ORDER if r in given), min(given, default="memoryChanged"))


def changed_sections(old: Instruction | None, new: Instruction) -> tuple[str, ...]:
    before = {s.id: s.text for s in old.sections} if old is not None else {}
    after = {s.id: s.text for s in new.sections}
    return tuple(sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k)))
