"""Project memory: discovery (global / workspace / JIT tiers), imports, glob-scoped rules,
composition under a token cap, live watching, ``addMemory`` and language features.

Pure core: no pygls / lsprotocol here. See :mod:`.store` for the tiers and their precedence.
"""

from __future__ import annotations

from .model import (
    ChangeSummary,
    CodeLens,
    Diagnostic,
    DocumentLink,
    FileAnalysis,
    Hover,
    MemoryBlock,
    MemoryFileInfo,
    MemoryResult,
    Position,
    Range,
    Tier,
)
from .store import MemoryStore
from .watcher import MemoryWatcher
from .writer import add_memory

__all__ = [
    "ChangeSummary",
    "CodeLens",
    "Diagnostic",
    "DocumentLink",
    "FileAnalysis",
    "Hover",
    "MemoryBlock",
    "MemoryFileInfo",
    "MemoryResult",
    "MemoryStore",
    "MemoryWatcher",
    "Position",
    "Range",
    "Tier",
    "add_memory",
]
