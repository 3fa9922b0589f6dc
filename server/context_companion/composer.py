"""The domain facade: settings + tokenizer + memory store + instruction engine for a set of folders.

The CLI builds one per run; the language server's ``Session`` owns one for its lifetime.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from .memory import MemoryStore
from .prompt.engine import Instruction, InstructionEngine
from .settings import AgentProfile, Settings, resolve_settings, user_config_dir
from .tokens import Tokenizer, encoding_for_model


class Composer:
    def __init__(
        self,
        settings: Settings,
        workspace_folders: Sequence[Path],
        *,
        environ: Mapping[str, str] | None = None,
        user_dir: Path | None = None,
        home: Path | None = None,
        tokenizer: Tokenizer | None = None,
        today: Callable[[], date] = date.today,
    ) -> None:
        self.environ = os.environ if environ is None else environ
        self.user_dir = user_dir if user_dir is not None else user_config_dir()
        self.home = home
        self.folders = [Path(f).resolve() for f in workspace_folders]
        self.settings = settings
        self.tokenizer = tokenizer or self._make_tokenizer(settings)
        self.memory = self._new_store(settings, self.folders, self.tokenizer)
        self.engine = InstructionEngine(
            settings,
            self.folders,
            tokenizer=self.tokenizer,
            memory=self.memory,
            environ=self.environ,
            user_dir=self.user_dir,
            today=today,
        )

    @classmethod
    def from_folders(
        cls,
        workspace_folders: Sequence[Path],
        *,
        editor_settings: Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
        user_dir: Path | None = None,
        **kwargs: Any,
    ) -> Composer:
        """Resolve the layered settings for these folders, then build. Raises ``SettingsError``."""
        env = os.environ if environ is None else environ
        udir = user_dir if user_dir is not None else user_config_dir()
        settings = resolve_settings(list(workspace_folders), editor_settings, env, udir)
        return cls(settings, workspace_folders, environ=env, user_dir=udir, **kwargs)

    @staticmethod
    def _make_tokenizer(settings: Settings) -> Tokenizer:
        name = (
            encoding_for_model(settings.profile.model, settings.tokens.encoding)
            if settings.profile.model
            else settings.tokens.encoding
        )
        return Tokenizer(name, settings.tokens.encoding_file, allow_download=settings.tokens.allow_download)

    def load(self) -> None:
        """Read every memory file and load the tokenizer (slow: not for a hot path)."""
        self.tokenizer.load()
        self.memory.load()

    # The server prepares new pieces on a worker thread (slow: reading every memory file, loading
    # an encoding) and swaps them in on its event loop, so readers never wait on a lock.

    def reload_memory(self, folders: Sequence[Path] | None = None) -> MemoryStore:
        """A freshly loaded store (thread-safe: touches nothing in use). Swap it in with :meth:`use_memory`."""
        folder_list = [Path(f).resolve() for f in folders] if folders is not None else self.folders
        store = self._new_store(self.settings, folder_list, self.tokenizer)
        store.load()
        return store

    def _new_store(self, settings: Settings, folders: Sequence[Path], tokenizer: Tokenizer) -> MemoryStore:
        return MemoryStore(
            settings.memory,
            folders,
            count_tokens=tokenizer.count,
            global_dir=self.user_dir,
            home=self.home,
            exclude=settings.context.exclude,
        )

    def use_memory(self, store: MemoryStore) -> None:
        self.memory = store
        self.engine.memory = store
        self.engine.invalidate()

    def prepare_settings(self, settings: Settings) -> tuple[Tokenizer | None, MemoryStore | None]:
        """What new settings need rebuilt, built off the loop: a tokenizer, a memory store, or neither."""
        old = self.settings
        tokenizer = None
        if (old.tokens, old.profile.model) != (settings.tokens, settings.profile.model):
            tokenizer = self._make_tokenizer(settings)
            tokenizer.load()
        store = None
        if tokenizer is not None or (old.memory, old.context.exclude) != (
            settings.memory,
            settings.context.exclude,
        ):  # token counts live in the store too
            store = self._new_store(settings, self.folders, tokenizer or self.tokenizer)
            store.load()
        return tokenizer, store

    def apply_settings(self, settings: Settings, prepared: tuple[Tokenizer | None, MemoryStore | None]) -> None:
        tokenizer, store = prepared
        self.settings = settings
        if tokenizer is not None:
            self.tokenizer = tokenizer
            self.engine.tokenizer = tokenizer
        if store is not None:
            self.use_memory(store)
        self.engine.update_settings(settings)

    def set_folders(self, folders: Sequence[Path], store: MemoryStore) -> None:
        """New workspace folders, with a store already loaded for them (:meth:`reload_memory`)."""
        self.folders = [Path(f).resolve() for f in folders]
        self.engine.set_folders(self.folders)
        self.use_memory(store)

    def build(
        self,
        profile: AgentProfile | None = None,
        open_paths: Sequence[Path] = (),
        active_path: Path | None = None,
    ) -> Instruction:
        return self.engine.build(profile, open_paths, active_path)
