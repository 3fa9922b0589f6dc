"""What a bridge gets back when the companion's pieces are rebuilt or swapped (it restarts its file
watcher, pushes the instruction), and the tokenizer the token settings ask for. Values only: the
companion that makes and swaps the pieces is :mod:`.companion`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..memory import MemoryStore
from ..prompt.engine import Instruction
from ..settings import Settings
from ..tokens import Tokenizer, encoding_for_model
from .snapshot import WorkspaceSnapshot


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
