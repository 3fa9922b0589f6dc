"""Path helpers shared by the memory modules: normalising, containment and display paths."""

from __future__ import annotations

import os
from pathlib import Path

from ..containment import is_within

__all__ = ["file_key", "home_display", "is_within", "norm", "posix"]


def norm(path: str | Path) -> str:
    """Absolute and normalised; symlinks are not resolved."""
    return os.path.abspath(os.fspath(path))  # abspath normalises already


def posix(rel: str) -> str:
    return rel.replace(os.sep, "/") if os.sep != "/" else rel


def file_key(real: str) -> str:
    """What makes two paths the same file: device and inode (hard links too), else the real path."""
    try:
        st = os.stat(real)
    except OSError:
        return real
    return f"{st.st_dev}:{st.st_ino}"


def home_display(abs_path: str, home: str) -> str:
    """``~/...`` for a path under ``home``, else the posix absolute path."""
    if is_within(abs_path, [home]) and abs_path != home:
        return "~/" + posix(os.path.relpath(abs_path, home))
    return posix(abs_path)
