"""Writing the finished instruction to a file (``writeSystemPromptTo`` / ``CONTEXT_COMPANION_WRITE_SYSTEM_MD``).

Kept out of :meth:`~.engine.InstructionEngine.build` so that building stays free of writes: the
caller (the CLI, or a bridge answering a request or pushing a change) decides when to export.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..containment import real_roots
from ..errors import FileWriteError
from ..fileio import atomic_write_text
from ..settings import ENV_PREFIX, Settings
from .engine import Instruction

log = logging.getLogger(__name__)

DEFAULT_EXPORT = Path(".context-companion") / "system.generated.md"


def export_path(settings: Settings, folders: Sequence[Path], environ: Mapping[str, str]) -> Path | None:
    """Where the instruction goes, or None when exporting is off. The environment wins over the setting."""
    raw = environ.get(ENV_PREFIX + "WRITE_SYSTEM_MD")
    if raw is None or not raw.strip():
        raw = settings.write_system_prompt_to
    if raw is None or not raw.strip() or raw.strip().lower() in ("0", "false"):
        return None
    base = folders[0] if folders else None
    if raw.strip().lower() in ("1", "true"):
        return (base or Path.cwd()) / DEFAULT_EXPORT
    path = Path(raw.strip()).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    return path


class Exporter:
    """Writes an instruction to its export file, skipping a write that would change nothing."""

    def __init__(self) -> None:
        self._last: tuple[Path, str] | None = None  # (file, etag) last written

    def export(self, instruction: Instruction, path: Path | None, *, roots: Sequence[Path]) -> Instruction:
        """Write ``instruction`` to ``path`` (None: do nothing), which must resolve inside ``roots``
        (the workspace folders and the global memory directory: a settings file in a cloned
        repository must not be able to aim the export at ``~/.bashrc``). A problem becomes a
        warning on the returned instruction, never an exception: the instruction itself is still good."""
        warning = self._write(instruction, path, roots) if path is not None else None
        if warning is None:
            return instruction
        return dataclasses.replace(instruction, warnings=(*instruction.warnings, warning))

    def _write(self, instruction: Instruction, path: Path, roots: Sequence[Path]) -> str | None:
        template = instruction.template
        if template is not None and path.resolve() == Path(template).resolve():
            return f"not exporting the instruction to {path}: that file is the system prompt template"
        if self._last == (path, instruction.etag) and path.exists():
            return None
        try:
            atomic_write_text(path, instruction.text + "\n", real_roots(roots))
        except FileWriteError as exc:
            log.warning("cannot export the instruction to %s", exc)
            return f"cannot export the instruction to {exc}"
        self._last = (path, instruction.etag)
        return None
