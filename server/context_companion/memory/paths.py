"""Path helpers shared by the memory modules: normalising, containment and display paths."""

from __future__ import annotations

import os
from pathlib import Path

from ..containment import is_within

__all__ = ["home_display", "is_within", "norm", "posix"]


def norm(path: str | Path) -> str:
    """Absolute and normalised; symlinks are not resolved."""
    return os.path.normpath(os.path.abspath(os.fspath(path)))


def posix(rel: str) -> str:
    return rel.replace(os.sep, "/") if os.sep != "/" else rel


def home_display(abs_path: str, home: str) -> str:
    """``~/...`` for a path under ``home``, else the posix absolute path."""
    if is_within(abs_path, [home]) and abs_path != home:
        return "~/" + posix(os.path.relpath(abs_path, home))
    return posix(abs_path)
