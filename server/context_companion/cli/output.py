"""What every command prints on stderr: a warning, or one line and exit status 2."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

EXIT_USAGE = 2


def warn(args: argparse.Namespace, warning: str) -> None:
    if not getattr(args, "quiet", False):
        sys.stderr.write(f"context-companion: warning: {warning}\n")


def fail(message: str) -> int:
    sys.stderr.write(f"context-companion: {message}\n")
    return EXIT_USAGE
