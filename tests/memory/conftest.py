"""Fixtures for the memory core: real temporary trees, a real (tiny, offline) tokenizer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from context_companion.memory import MemoryStore
from context_companion.settings import MemorySettings


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Create ``files`` (posix paths relative to ``root``); a path ending in "/" is a directory."""
    for rel, content in files.items():
        path = root / rel
        if rel.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


@pytest.fixture
def tree() -> Callable[[Path, Mapping[str, str | bytes]], None]:
    return write_tree


@pytest.fixture
def home(tmp_path: Path) -> Path:
    d = tmp_path / "home"
    d.mkdir(exist_ok=True)
    return d


@pytest.fixture
def global_dir(home: Path) -> Path:
    return home / ".config" / "context-companion"


@pytest.fixture
def make_store(tokenizer: Any, home: Path, global_dir: Path) -> Callable[..., MemoryStore]:
    """``make_store(folders, **memory_settings)`` → a loaded store with isolated home/global dirs."""

    def make(folders: list[Path] | Path, *, load: bool = True, **settings: Any) -> MemoryStore:
        if isinstance(folders, Path):
            folders = [folders]
        store = MemoryStore(
            MemorySettings(**settings), folders, count_tokens=tokenizer.count, global_dir=global_dir, home=home
        )
        if load:
            store.load()
        return store

    return make


def included(result: Any) -> list[str]:
    return [f.path for f in result.files if f.included]


def info(result: Any, path: str) -> Any:
    matches = [f for f in result.files if f.path == path]
    assert matches, f"{path} not in {[f.path for f in result.files]}"
    return matches[0]


@pytest.fixture
def helpers() -> Any:
    class H:
        included = staticmethod(included)
        info = staticmethod(info)

    return H
