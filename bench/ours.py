"""Our APIs as the benchmark calls them, each import guarded: a missing one makes a figure ``n/a``.

Shared by the in-process figures (:mod:`bench.core_figures`) and the fresh-process samples
(:mod:`bench.coldrun`); it imports neither, so the two never import each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .generate import MEMORY_NAMES


class Unavailable(Exception):
    """The API a figure needs is not there (yet): the figure reads ``n/a: <why>``."""


def bench_settings(data: dict[str, Any]) -> Any:
    from context_companion.settings import Settings

    return Settings.model_validate(data)


def editor_settings(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as an editor sends it: the ranks file the bench names lies outside the trees, which
    only the user's own value may name (``userValues``, docs/protocol.md)."""
    return {**data, "userValues": ["tokens.encodingFile"]}


def bench_tokenizer(settings: Any) -> Any:
    from context_companion.tokens import Tokenizer

    tok = Tokenizer(settings.tokens.encoding, settings.tokens.encoding_file)
    tok.load()
    return tok


def memory_store_class() -> Any:
    try:
        from context_companion.memory import MemoryStore  # type: ignore[attr-defined]
    except ImportError as exc:
        raise Unavailable(f"context_companion.memory.MemoryStore not importable ({exc})") from None
    return MemoryStore


def new_store(settings: Any, root: Path, tok: Any) -> Any:
    store = memory_store_class()(settings.memory, [root], count_tokens=tok.count)
    store.load()
    return store


def memory_paths(store: Any) -> list[str]:
    """Display paths of the memory files (not rules) the store knows, from ``compose([], None)``."""
    result = store.compose([], None)
    return sorted(str(f.path) for f in result.files if str(f.path).rsplit("/", 1)[-1] in MEMORY_NAMES)


def walk_found(root: Path) -> list[str]:
    """Memory files found by ``context_companion.ignore.walk`` (names matched like the floor does)."""
    from context_companion.ignore import walk

    names = frozenset(MEMORY_NAMES)
    found = []
    for listing in walk(root):
        prefix = listing.rel_dir + "/" if listing.rel_dir else ""
        for entry in listing.files:
            if entry.name in names and not listing.rules.is_ignored(prefix + entry.name, False):
                found.append(prefix + entry.name)
    return found
