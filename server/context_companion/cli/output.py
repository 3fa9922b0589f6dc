"""What every command prints on stderr: a warning, or one line and exit status 2; and which
warnings are said once per machine rather than on every run."""

from __future__ import annotations

import logging
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from pathlib import Path

EXIT_USAGE = 2


def warn(args: argparse.Namespace, warning: str) -> None:
    if not getattr(args, "quiet", False):
        sys.stderr.write(f"context-companion: warning: {warning}\n")


def fail(message: str) -> int:
    sys.stderr.write(f"context-companion: {message}\n")
    return EXIT_USAGE


def told_dir() -> Path:
    """``<user cache dir>/context-companion/told``: one empty file per warning already said here."""
    from pathlib import Path

    from platformdirs import user_cache_dir

    from ..procs import APP_NAME

    return Path(user_cache_dir(APP_NAME, appauthor=False)) / "told"


class OncePerMachine(logging.Filter):
    """Lets a record marked ``once_per_machine`` (the "token counts are estimated" line) through only
    the first time this user sees it on this machine: the demo's eight commands used to say the same
    line eight times. Its text is remembered as a hash in :func:`told_dir`; another text (another
    reason, another setting to fix) is said again. When the cache folder cannot be written the line is
    said every time: repeated is better than lost. ``-v`` turns this filter off."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "once_per_machine", False):
            return True
        import hashlib
        import os

        key = hashlib.sha256(record.getMessage().encode("utf-8", "replace")).hexdigest()[:32]
        try:
            folder = told_dir()
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(folder / key, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            return False  # said before on this machine
        except OSError:
            return True
        os.close(fd)
        return True
