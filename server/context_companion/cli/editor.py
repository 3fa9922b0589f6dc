"""The editor state a command line describes (``--workspace``, ``--open``, ``--active``, ``--cursor``,
``--selection``, ``--profile``), put into a workspace :class:`~..workspace.companion.Companion`
(:class:`OneShot`), so ``instruction``, ``turn`` and ``memory`` print what a language server client gets."""

from __future__ import annotations

import json
import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from typing import Any

SESSION = "cli"  # the one agent session a command line run starts

# Between the instruction and the memory that comes with the first turn (``instruction``'s text).
TURN_MEMORY_SEPARATOR = (
    "======== Memory that comes with the first turn (delivered with the user's first message, "
    "not part of the system instruction above) ========"
)


def workspace_arg(raw: str | None) -> Path:
    from pathlib import Path

    from ..errors import ContextCompanionError

    path = Path(raw if raw is not None else ".").expanduser()
    if not path.is_dir():
        raise ContextCompanionError(f"--workspace {raw}: not a directory")
    return path.resolve()


def _profile(raw: str | None) -> Any:
    if raw is None:
        return None
    from pathlib import Path

    from ..errors import ProfileError
    from ..settings import parse_profile

    try:
        data = json.loads(Path(raw).expanduser().read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProfileError(raw, "", "file not found") from None
    except OSError as exc:
        raise ProfileError(raw, "", f"cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ProfileError(raw, "", f"not valid JSON: {exc}") from None
    return parse_profile(data, raw)


def _editor_path(flag: str, raw: str, base: Path, workspace: Path) -> Path:
    """An --open/--active path, absolute; one clear error when it does not exist or is outside the folder."""
    from pathlib import Path

    from ..errors import ContextCompanionError

    p = Path(raw).expanduser()
    full = Path(os.path.normpath(p if p.is_absolute() else base / p))
    if not full.exists():
        raise ContextCompanionError(f"{flag} {raw}: no such file ({full})")
    if full.is_dir():
        raise ContextCompanionError(f"{flag} {raw}: a folder, not a file ({full})")
    real = full.resolve()
    if not real.is_relative_to(workspace):  # a symlink inside the folder may lead out of it
        raise ContextCompanionError(f"{flag} {raw}: outside the workspace folder {workspace}")
    return real  # a link as its target, so context.exclude judges the file whose text is read


def editor_files(args: argparse.Namespace, workspace: Path) -> tuple[list[Path], Path | None]:
    """The open files and the active one; relative paths resolve like ``git -C``."""
    base = workspace if args.workspace is not None else type(workspace).cwd()
    opened = [_editor_path("--open", f, base, workspace) for f in args.open]
    active = _editor_path("--active", args.active, base, workspace) if args.active is not None else None
    if active is not None and active not in opened:
        opened.append(active)
    return opened, active if active is not None else (opened[-1] if opened else None)


_POSITION = re.compile(r"^([0-9]{1,9}):([0-9]{1,9})$")
_SELECTION = re.compile(r"^([0-9]{1,9}):([0-9]{1,9})[:-]([0-9]{1,9}):([0-9]{1,9})$")
MAX_ACTIVE_BYTES = 32 * 1024 * 1024  # the active file is read for the lines around the cursor


def _positions(
    args: argparse.Namespace,
) -> tuple[tuple[int, int] | None, tuple[tuple[int, int], tuple[int, int]] | None]:
    """--cursor and --selection as 1-based (line, column) pairs; a one-line error when malformed."""
    from ..errors import ContextCompanionError

    cursor = selection = None
    raw = getattr(args, "cursor", None)
    if raw is not None:
        m = _POSITION.match(raw.strip())
        if m is None or 0 in (int(m[1]), int(m[2])):
            raise ContextCompanionError(f"--cursor {raw}: expected LINE:COL, 1-based (e.g. 12:5)")
        cursor = (int(m[1]), int(m[2]))
    raw = getattr(args, "selection", None)
    if raw is not None:
        m = _SELECTION.match(raw.strip())
        if m is None or 0 in (int(m[1]), int(m[2]), int(m[3]), int(m[4])):
            raise ContextCompanionError(
                f"--selection {raw}: expected START:END as LINE:COL:LINE:COL, 1-based (e.g. 3:1:5:10)"
            )
        selection = ((int(m[1]), int(m[2])), (int(m[3]), int(m[4])))
        if selection[1] < selection[0]:
            raise ContextCompanionError(f"--selection {raw}: END comes before START")
    return cursor, selection


def _active_text(active: Path, workspace: Path) -> str:
    from ..errors import ContextCompanionError
    from ..memory.reading import read_text_file

    shown = os.path.relpath(active, workspace)
    read = read_text_file(str(active), MAX_ACTIVE_BYTES)  # regular files only, never blocks, capped
    if read.text is None:
        why = "no such file" if read.missing else read.skip
        raise ContextCompanionError(f"--active {shown}: {why}, so it has no positions")
    if read.cut is not None:
        raise ContextCompanionError(f"--active {shown}: larger than {MAX_ACTIVE_BYTES // (1024 * 1024)} MiB")
    return read.text


def _check_position(flag: str, raw: str, point: tuple[int, int], lines: list[str], shown: str) -> None:
    from ..errors import ContextCompanionError

    line, col = point
    if line > len(lines):
        count = len(lines)
        raise ContextCompanionError(f"{flag} {raw}: {shown} has {count} line{'' if count == 1 else 's'}")
    width = len(lines[line - 1])
    if col > width + 1:
        raise ContextCompanionError(f"{flag} {raw}: line {line} of {shown} has {width} characters")


class OneShot:
    """A companion whose editor holds the files of the command line, and the texts it was told."""

    def __init__(self, args: argparse.Namespace) -> None:
        from ..context.positions import split_lines
        from ..context.state import RawPosition
        from ..errors import ContextCompanionError
        from ..workspace.companion import Companion
        from ..workspace.snapshot import WorkspaceSnapshot

        workspace = workspace_arg(args.workspace)
        opened, active = editor_files(args, workspace)
        cursor, selection = _positions(args)
        profile = _profile(getattr(args, "profile", None))
        if (cursor or selection) and active is None:
            flag = "--cursor" if cursor else "--selection"
            raise ContextCompanionError(f"{flag}: needs an active file (--active or --open)")
        self.texts: dict[str, str] = {}
        moved: tuple[str, RawPosition, list[tuple[RawPosition, RawPosition]]] | None = None
        if active is not None and (cursor or selection):  # checked before the slow load: errors come at once
            text = _active_text(active, workspace)
            lines = split_lines(text)
            shown = os.path.relpath(active, workspace)
            if cursor is not None:
                _check_position("--cursor", args.cursor, cursor, lines, shown)
            if selection is not None:
                for point in selection:
                    _check_position("--selection", args.selection, point, lines, shown)
            uri = active.as_uri()
            self.texts[uri] = text
            ranges: list[tuple[RawPosition, RawPosition]] = []
            if selection is not None:
                (a, b), (c, d) = selection
                ranges.append((RawPosition(a - 1, b - 1), RawPosition(c - 1, d - 1)))
            line, col = cursor if cursor is not None else selection[1]  # type: ignore[index]  # one is given
            moved = (uri, RawPosition(line - 1, col - 1), ranges)
        # Positions on the command line count characters: the editor state is told code points.
        self.companion = companion = Companion(WorkspaceSnapshot.resolve([workspace], position_encoding="utf-32"))
        companion.load()
        for path in [p for p in opened if p != active] + ([active] if active is not None else []):
            companion.did_open(path.as_uri())  # the active file last: the most recently used, as in an editor
        if moved is not None:
            companion.did_change_cursor(*moved)
        agent = companion.sessions.get(SESSION)
        agent.profile = profile

    def start(self) -> Any:
        """Start the session: its instruction, written where ``writeSystemPromptTo`` says."""
        return self.companion.export(self.companion.start_session(SESSION))

    def turn(self, *, editor: bool = True) -> Any:
        """The session's next turn context (``editor=False``: its memory updates only)."""
        return self.companion.turn_context(SESSION, self.texts, editor=editor)
