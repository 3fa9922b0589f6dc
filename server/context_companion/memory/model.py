"""The value types the memory core hands to the rest of the system (no I/O here).

Positions in :class:`FileAnalysis` are 0-based lines and characters counted in Unicode code
points (Python string indices); the LSP layer converts them to the client's encoding.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Tier = Literal["global", "workspace", "jit", "rule"]
ChangeKind = Literal["memoryChanged", "rulesChanged", "workspaceChanged"]
Severity = Literal["error", "warning", "information", "hint"]


@dataclass(frozen=True, slots=True)
class MemoryFileInfo:
    """One memory or rule file found, whether or not it went into the instruction."""

    path: str  # display path: posix, relative to its workspace folder; "~/..." under home
    abs_path: str
    tier: Tier
    tokens: int  # tokens of the file's rendered block (after imports)
    included: bool
    reason: str
    duplicate_of: str | None = None  # display path of the first inclusion of the same file
    repeats: tuple[tuple[str, str], ...] = ()  # (import as written, display of its first inclusion) left out
    cut: str | None = None  # the cap that cut this file's text ("memory.maxFileBytes (262144): ...")

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "path": self.path,
            "tier": self.tier,
            "tokens": self.tokens,
            "included": self.included,
            "reason": self.reason,
        }
        if self.duplicate_of is not None:
            wire["duplicateOf"] = self.duplicate_of
        if self.cut is not None:
            wire["cut"] = self.cut
        if self.repeats:
            wire["repeatedImports"] = [{"path": p, "duplicateOf": d} for p, d in self.repeats]
        return wire


@dataclass(frozen=True, slots=True)
class MemoryResult:
    """The memory part of the instruction and the account of how it was made."""

    text: str  # blocks joined by one blank line; "" when nothing is included
    files: tuple[MemoryFileInfo, ...]
    dropped: tuple[str, ...]  # display paths dropped by memory.maxTokens
    warnings: tuple[str, ...]
    # For the editor's hints: every file in the instruction as (file key, display), in order, and per
    # considered file how many of them came before it.
    seen: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    seen_at: Mapping[str, int] = field(default_factory=dict, compare=False)

    def seen_before(self, abs_path: str) -> tuple[tuple[str, str], ...]:
        """The files already in the instruction when ``abs_path`` was considered."""
        n = self.seen_at.get(abs_path)
        return () if n is None else self.seen[:n]

    def files_to_wire(self) -> list[dict[str, Any]]:
        return [f.to_wire() for f in self.files]


@dataclass(frozen=True, slots=True)
class MemoryBlock:
    """One memory or rule file's content as composed for the current editor state."""

    path: str  # display path
    abs_path: str
    tier: Tier
    included: bool
    reason: str
    content: str  # imports expanded, frontmatter stripped; "" when skipped or empty
    on_demand: bool  # a JIT file or a glob-scoped rule: applies because of what is open
    for_active: bool = False  # on demand because of the active file (its folder's memory, a rule matching it)
    key: str = ""  # the file itself: symlinks and hard links to one file share it ("": the abs path)
    scope: str = ""  # what in its own text decides where it applies (a rule's mode and globs; a sub-folder)

    @property
    def file_key(self) -> str:
        return self.key or self.abs_path


@dataclass(frozen=True, slots=True)
class ChangedFile:
    """One memory or rule file whose content, presence or inclusion rules changed."""

    path: str  # display path
    abs_path: str
    tier: Tier


@dataclass(frozen=True, slots=True)
class ChangeSummary:
    """What :meth:`MemoryStore.apply_changes` found changed: enough for the caller to decide on a push."""

    changed_files: tuple[str, ...]  # display paths whose content or presence changed
    kind: ChangeKind | None  # None: nothing that matters changed
    # The watch must be rebuilt (MemoryWatcher.reschedule): watch_roots()/flat_watch_roots() differ, or
    # an ignore file or marker changed which directories the watcher descends into.
    watch_changed: bool = False
    files: tuple[ChangedFile, ...] = ()  # the same files with their tier (global, workspace, jit, rule)

    @property
    def tiers(self) -> frozenset[Tier]:
        """Tiers (sections of the memory part) that changed."""
        return frozenset(f.tier for f in self.files)


# --------------------------------------------------------------------------- language features


@dataclass(frozen=True, slots=True)
class Position:
    line: int
    character: int


@dataclass(frozen=True, slots=True)
class Range:
    start: Position
    end: Position

    @classmethod
    def on_line(cls, line: int, start: int, end: int) -> Range:
        return cls(Position(line, start), Position(line, end))


@dataclass(frozen=True, slots=True)
class Diagnostic:
    range: Range
    severity: Severity
    message: str
    code: str  # "import-not-found", "import-cycle", "frontmatter-invalid", ...


@dataclass(frozen=True, slots=True)
class DocumentLink:
    range: Range  # the whole "@path" token
    target: str  # absolute path


@dataclass(frozen=True, slots=True)
class Hover:
    range: Range
    markdown: str


@dataclass(frozen=True, slots=True)
class CodeLens:
    range: Range  # on line 0
    title: str  # "N tokens · included: <reason>" or "not included: <reason>"


@dataclass(frozen=True, slots=True)
class FileAnalysis:
    """Language features of one open memory or rule file, computed from its current text."""

    diagnostics: tuple[Diagnostic, ...] = ()
    links: tuple[DocumentLink, ...] = ()
    hovers: tuple[Hover, ...] = ()
    lens: CodeLens | None = None
