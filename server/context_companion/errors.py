"""The one exception tree of Context Companion.

Every error the domain core raises on purpose derives from :class:`ContextCompanionError`, so
the CLI and the language server can turn it into a one-line message (exit status 2, or a
JSON-RPC ``InvalidParams`` error) instead of a traceback. Anything else that escapes is a bug.
"""

from __future__ import annotations

from pathlib import Path


class ContextCompanionError(Exception):
    """Base class. ``str(error)`` is a one-line, user-facing reason."""


class SettingsError(ContextCompanionError):
    """Raised when a settings layer does not validate.

    Raised by :func:`context_companion.settings.resolve_settings` (and by the server when the
    editor sends settings). ``source`` names the layer (a file path, ``"editor settings"``,
    ``"environment"``), ``field`` the dotted field path in wire (camelCase) spelling, ``reason``
    what is wrong. The server keeps its last good settings when it sees this.
    """

    def __init__(self, source: str, field: str, reason: str) -> None:
        self.source = source
        self.field = field
        self.reason = reason
        where = f"{source}: " if source else ""
        at = f"{field}: " if field else ""
        super().__init__(f"{where}{at}{reason}")


class PromptError(ContextCompanionError):
    """Raised when the instruction cannot be composed as configured.

    For example a contributor of type ``file`` whose file is missing, or a
    ``systemPromptFile`` template that does not exist (the message names the resolved path).
    """


class ProfileError(ContextCompanionError):
    """Raised when an agent profile (``--profile FILE.json`` or a session's ``profile``) is invalid."""

    def __init__(self, source: str, field: str, reason: str) -> None:
        self.source = source
        self.field = field
        self.reason = reason
        super().__init__(f"{source}: {field}: {reason}" if field else f"{source}: {reason}")


class MemoryWriteError(ContextCompanionError):
    """Raised by ``add_memory`` for a request that cannot be right: an empty fact, an unknown
    scope, the workspace scope without a workspace folder. Bridges answer it as InvalidParams."""

    def __init__(self, path: Path | None, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}" if path else reason)


class FileWriteError(ContextCompanionError):
    """Raised when a file the server was asked to write may not or cannot be written.

    The path leads outside the workspace folders and the global memory directory (a symlink, a
    dangling symlink, a parent folder that is a symlink), the operating system refused (disk
    full, permission), or ``addMemory`` would take the file over ``memory.maxFileBytes``. Nothing
    was created or changed. Bridges answer it as RequestFailed (-32803); ``str()`` names the
    path and the reason.
    """

    def __init__(self, path: Path | str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class ParamsError(ContextCompanionError):
    """Raised when a command's or notification's params do not validate, or name an unknown agent
    session. Bridges answer it as invalid params (JSON-RPC -32602); the message names the field."""
