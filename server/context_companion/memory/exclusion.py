"""Which files ``context.exclude`` keeps out of memory imports (secrets: ``.env``, keys, ...).

The one place that decides it, so a shared matcher can replace this one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import PurePosixPath

from pathspec import GitIgnoreSpec


def exclude_matcher(patterns: Sequence[str]) -> Callable[[str], bool]:
    """A test on posix paths relative to a workspace folder (or bare names): does a pattern match?

    Matching is case-insensitive: ``.ENV`` on a case-insensitive file system is ``.env``.
    """
    spec = GitIgnoreSpec.from_lines([p.lower() for p in patterns])

    def excluded(rel: str) -> bool:
        rel = rel.lower().lstrip("/")
        return bool(spec.match_file(rel) or spec.match_file(PurePosixPath(rel).name))

    return excluded
