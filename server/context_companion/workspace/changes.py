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
    roots_changed: bool  # the set of folders to watch changed

    @property
    def matters(self) -> bool:
        return self.reason is not None


@dataclass(frozen=True)
class InstructionChanged:
    """Sessions whose instruction became the same new one."""

    instruction: Instruction
    changed_sections: tuple[str, ...]
    sessions: tuple[str, ...]

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
        }


def first_reason(reasons: Iterable[str]) -> str:
    given = set(reasons)
    return next((r for r in REASON_ORDER if r in given), min(given, default="memoryChanged"))


def changed_sections(old: Instruction | None, new: Instruction) -> tuple[str, ...]:
    before = {s.id: s.text for s in old.sections} if old is not None else {}
    after = {s.id: s.text for s in new.sections}
    return tuple(sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k)))
