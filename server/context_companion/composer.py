"""The domain facade: settings + tokenizer + memory store + instruction engine for a set of folders.

The CLI builds one per run; the language server's ``Session`` owns one for its lifetime.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any, Callable

from .memory import MemoryStore
from .prompt.engine import Instruction, InstructionEngine
from .settings import AgentProfile, Settings, resolve_settings, user_config_dir
from .tokens import Tokenizer, encoding_for_model

log = logging.getLogger(__name__)


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
        self.memory = self._make_memory(settings)
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
    ) -> "Composer":
        """Resolve the layered settings for these folders, then build. Raises ``SettingsError``."""
        env = os.environ if environ is None else environ
        udir = user_dir if user_dir is not None else user_config_dir()
        settings = resolve_settings(list(workspace_folders), editor_settings, env, udir)
        return cls(settings, workspace_folders, environ=env, user_dir=udir, **kwargs)

    @staticmethod
    def _make_tokenizer(settings: Settings) -> Tokenizer:
        name = encoding_for_model(settings.profile.model, settings.tokens.encoding) if settings.profile.model else settings.tokens.encoding
        return Tokenizer(name, settings.tokens.encoding_file, allow_download=settings.tokens.allow_download)

    def load(self) -> None:
        """Read every memory file and load the tokenizer (slow: not for a hot path)."""
        self.tokenizer.load()
        self.memory.load()

    def load_memory(self) -> None:
        """Re-read every memory and rule file from disk (``refreshMemory``)."""
        self.memory.load()
        self.engine.invalidate()

    def update_settings(self, settings: Settings) -> None:
        """New settings; a new tokenizer or memory store only when what they depend on changed."""
        old = self.settings
        self.settings = settings
        new_tokenizer = (old.tokens, old.profile.model) != (settings.tokens, settings.profile.model)
        if new_tokenizer:
            self.tokenizer = self._make_tokenizer(settings)
            self.tokenizer.load()
            self.engine.tokenizer = self.tokenizer
        if new_tokenizer or old.memory != settings.memory:  # token counts live in the store too
            self.memory = self._make_memory(settings)
            self.memory.load()
            self.engine.memory = self.memory
        self.engine.update_settings(settings)

    def _make_memory(self, settings: Settings) -> MemoryStore:
        return MemoryStore(
            settings.memory, self.folders, count_tokens=self.tokenizer.count, global_dir=self.user_dir, home=self.home
        )

    def set_folders(self, folders: Sequence[Path]) -> None:
        self.folders = [Path(f).resolve() for f in folders]
        self.memory.set_workspace_folders(self.folders)
        self.engine.set_folders(self.folders)

    def build(
        self,
        profile: AgentProfile | None = None,
        open_paths: Sequence[Path] = (),
        active_path: Path | None = None,
    ) -> Instruction:
        return self.engine.build(profile, open_paths, active_path)
