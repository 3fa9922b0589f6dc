"""How many rule files one load may read, and when it must stop: the hook's disk path.

``context-companion hook`` without an editor composes before every prompt, in a fresh process. A
repository with 40,000 ``.cursor/rules/*.mdc`` made that 17-18 s a prompt (each rule is read, its
frontmatter parsed, its globs compiled). A :class:`RuleBudget` given to the index bounds it:

- at most :attr:`RuleBudget.limit` rule files of a folder are read (the first ones in the order the
  index lists them, the same every prompt); the rest are named once, with why (:meth:`notes`);
- the reading stops when :attr:`RuleBudget.expired` says so (the hook's time budget): what was read is
  delivered, and the next prompt starts reading where this one stopped (:attr:`start`, :attr:`next_start`),
  so every file within the limit is read on some prompt, never lost silently.

A rule folder with files left unread is *partial* (:attr:`partial`): a file of it the agent was given and
that was not read this time is not taken back (it may be there still). Pure: the caller brings the clock.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from .formats import BY_FORMAT

T = TypeVar("T", bound=tuple[str, str, str, str])

MIN_READ = 50  # rule files read per prompt even when the time is up, so that the reading always moves on
DEFAULT_LIMIT = 500  # rule files read per folder per prompt (docs/performance.md: ~0.3 ms each from disk)


def _never() -> bool:
    return False


def rule_dir_of(rel: str, fmt: str, base: str) -> str:
    """The rule folder (or file) a rule file at ``rel`` belongs to: ``.cursor/rules``, ``pkg/.claude/rules``."""
    spec = BY_FORMAT.get(fmt)
    if spec is None:
        return rel.rpartition("/")[0] or rel
    return f"{base}/{spec.path}" if base else spec.path


@dataclass
class RuleBudget:
    limit: int = DEFAULT_LIMIT
    expired: Callable[[], bool] = _never
    start: int = 0  # where in the capped list reading starts (a previous prompt stopped there)
    over: dict[tuple[str, str], int] = field(default_factory=dict)  # (folder, rule dir) → files over the limit
    late: dict[tuple[str, str], int] = field(default_factory=dict)  # (folder, rule dir) → not read in time
    partial: set[str] = field(default_factory=set)  # absolute rule folders with files not read
    next_start: int | None = None  # where the next prompt starts reading; None: everything in the limit was read

    def select(self, folder: str, found: Sequence[T]) -> list[T]:
        """The rule files of ``folder`` to read, in reading order: the first :attr:`limit` of ``found``,
        starting at :attr:`start`. The others are counted as over the limit."""
        kept = list(found[: self.limit])
        self._count(self.over, folder, found[self.limit :])
        if kept and self.start % len(kept):
            at = self.start % len(kept)
            kept = kept[at:] + kept[:at]
        return kept

    def stop(self, folder: str, left: Sequence[T], read: int, total: int) -> None:
        """The time ran out with ``left`` not read (``read`` of ``total`` read this time)."""
        self._count(self.late, folder, left)
        self.next_start = (self.start + read) % max(total, 1)

    def _count(self, counts: dict[tuple[str, str], int], folder: str, files: Sequence[T]) -> None:
        by_dir: dict[tuple[str, str], int] = {}
        for _abs, _rel, fmt, base in files:
            key = (fmt, base)
            by_dir[key] = by_dir.get(key, 0) + 1
        for (fmt, base), count in by_dir.items():
            key = (folder, rule_dir_of("", fmt, base))
            counts[key] = counts.get(key, 0) + count
            self.partial.add(_join(folder, key[1]))

    def may_stop(self, read: int) -> bool:
        """Whether to stop now, ``read`` files into this load: the time is up, and at least :data:`MIN_READ`
        were read (a prompt on a loaded machine still moves the reading on)."""
        return read >= MIN_READ and self.expired()

    @property
    def cut(self) -> bool:
        """The time ran out: the next prompt reads on (nothing may be taken as final)."""
        return self.next_start is not None

    def notes(self) -> dict[str, str]:
        """One line per rule folder with files not read, keyed by that folder (``note:`` + its path)."""
        out: dict[str, str] = {}
        for (folder, rule_dir), count in sorted(self.over.items()):
            out[f"note:{_join(folder, rule_dir)}"] = (
                f"Not read: {count:,} more rule file{'s' if count != 1 else ''} in {rule_dir}, over the limit of "
                f"{self.limit:,} rule files a prompt without an editor (open the project in an editor with "
                "Context Companion, or read them yourself when they matter)."
            )
        for (folder, rule_dir), count in sorted(self.late.items()):
            key = f"note:{_join(folder, rule_dir)}:late"
            out[key] = (
                f"Not read in time: {count:,} rule file{'s' if count != 1 else ''} in {rule_dir} "
                "(the hook's time budget ran out); they are read on the next prompts."
            )
        return out


def _join(folder: str, rel: str) -> str:
    return os.path.join(folder, *rel.split("/"))
