"""Settings and workspace folders, held once, as one immutable value.

A change of either produces a new :class:`WorkspaceSnapshot`; the :class:`~.companion.Companion`
swaps it in as a whole and rebuilds what depends on it (tokenizer, memory store, engine caches).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SettingsError
from ..settings import Settings, editor_layer, user_config_dir, validate_layer
from ..settings.layers import resolve_with_refusals, split_editor
from ..settings.provenance import EDITOR_META, WORKSPACE_TRUSTED, Refusal

PREFIX = "Context Companion: "


@dataclass(frozen=True)
class WorkspaceSnapshot:
    settings: Settings
    folders: tuple[Path, ...] = ()
    position_encoding: str = "utf-16"  # negotiated with the editor; positions arrive in it
    editor_section: Mapping[str, Any] = field(default_factory=dict)  # the editor's layer in force
    # The last invalid editor layer reported, so that the same mistake is not reported twice.
    rejected_section: Mapping[str, Any] | None = None
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ, compare=False)
    user_dir: Path = field(default_factory=user_config_dir)
    # initializationOptions: every later answer of the editor merges over them (one layer).
    init_section: Mapping[str, Any] = field(default_factory=dict)
    # Workspace values left out of the settings (a file outside the workspace, Restricted Mode, ...).
    refusals: tuple[Refusal, ...] = ()

    def refusal_lines(self) -> tuple[str, ...]:
        """One line per value left out, for warnings and messages."""
        return tuple(PREFIX + r.message for r in self.refusals)

    @classmethod
    def resolve(
        cls,
        folders: Sequence[Path],
        editor_section: Mapping[str, Any] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        user_dir: Path | None = None,
        position_encoding: str = "utf-16",
    ) -> WorkspaceSnapshot:
        """Resolve the layered settings for these folders. Raises :class:`SettingsError`."""
        env = os.environ if environ is None else environ
        udir = user_dir if user_dir is not None else user_config_dir()
        resolved = tuple(Path(f).resolve() for f in folders)
        section = dict(editor_section or {})
        settings, refusals = resolve_with_refusals(resolved, section, env, udir)
        return cls(settings, resolved, position_encoding, section, None, env, udir, refusals=refusals)

    def with_editor_section(self, section: Any) -> tuple[WorkspaceSnapshot, str | None]:
        """New editor settings (a ``workspace/configuration`` answer or ``didChangeConfiguration``
        settings), merged over the initialization options key by key (:func:`editor_layer`).
        Returns the next snapshot and a message to show, if any: invalid settings keep the last
        good ones (and are reported once)."""
        if section is None:
            section = {}
        if not isinstance(section, Mapping):
            kind = type(section).__name__
            return self, f"{PREFIX}settings must be an object, got {kind}; keeping the last good settings."
        layer = editor_layer(self.init_section, section)
        try:
            settings, refusals = resolve_with_refusals(self.folders, layer, self.environ, self.user_dir)
        except SettingsError as exc:
            if layer == self.rejected_section:
                return self, None
            rejected = dataclasses.replace(self, rejected_section=layer)
            return rejected, f"{PREFIX}invalid settings, keeping the last good ones: {exc}"
        new = dataclasses.replace(
            self, settings=settings, editor_section=layer, rejected_section=None, refusals=refusals
        )
        return new, None

    def with_folders(self, folders: Sequence[Path]) -> WorkspaceSnapshot:
        """New workspace folders. Their settings files count from now on; when they do not
        validate, the settings in force stay."""
        resolved = tuple(Path(f).resolve() for f in folders)
        try:
            settings, refusals = resolve_with_refusals(resolved, dict(self.editor_section), self.environ, self.user_dir)
        except SettingsError:
            settings, refusals = self.settings, self.refusals
        return dataclasses.replace(self, settings=settings, folders=resolved, refusals=refusals)


def initial_snapshot(
    folders: Sequence[Path],
    init_options: Any,
    position_encoding: str,
    *,
    environ: Mapping[str, str] | None = None,
    user_dir: Path | None = None,
) -> tuple[WorkspaceSnapshot, list[str]]:
    """The first snapshot from the editor's ``initializationOptions``, and messages to show.

    Bad settings never stop the server: it falls back to the other layers, then to defaults.
    """
    errors: list[str] = []
    section: dict[str, Any] = {}
    if isinstance(init_options, Mapping):
        inner = init_options.get("contextCompanion", init_options)
        section = editor_layer(inner, {}) if isinstance(inner, Mapping) else {}
    elif init_options is not None:
        errors.append(f"{PREFIX}initializationOptions must be an object; using the other settings.")
    kw: dict[str, Any] = {"environ": environ, "user_dir": user_dir, "position_encoding": position_encoding}
    try:
        return dataclasses.replace(WorkspaceSnapshot.resolve(folders, section, **kw), init_section=section), errors
    except SettingsError as exc:
        errors.append(f"{PREFIX}invalid settings, using the other layers instead: {exc}")
    env = os.environ if environ is None else environ
    # What the editor said about the workspace's trust still holds (an untrusted workspace's settings
    # file names no file); when that part is malformed too, the workspace counts as untrusted.
    try:
        split_editor(section)
        meta: dict[str, Any] = {k: section[k] for k in EDITOR_META if k in section}
    except SettingsError:
        meta = {WORKSPACE_TRUSTED: False}
    try:  # without the editor's layer and the environment: the bad value may be in either
        fallback = WorkspaceSnapshot.resolve(
            folders, meta, environ={}, user_dir=user_dir, position_encoding=position_encoding
        )
    except SettingsError:
        resolved = tuple(Path(f).resolve() for f in folders)
        fallback = WorkspaceSnapshot(Settings(), resolved, position_encoding, user_dir=user_dir or user_config_dir())
    try:  # the options are at fault only when they fail alone (not a settings file, not the environment)
        validate_layer(split_editor(section)[0], "editor settings")
        kept: Mapping[str, Any] = section  # another layer was: the options stay the editor's layer
    except SettingsError:
        kept = {}  # rejected: the editor's next answer must not be merged over them, or it fails too
    return (
        dataclasses.replace(fallback, editor_section=section, rejected_section=section, environ=env, init_section=kept),
        errors,
    )
