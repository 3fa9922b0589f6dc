"""Switching on the fault shims of ``shims/sitecustomize.py`` in a server process."""

from __future__ import annotations

import os
from pathlib import Path

SHIMS = Path(__file__).parent / "shims"


def shim_env(*names: str, **extra: str) -> dict[str, str]:
    """Environment that loads ``shims/sitecustomize.py`` in the server with the named shims on."""
    # Keep an inherited PYTHONPATH (a checkout run without installing) after the shims.
    path = os.pathsep.join(p for p in (str(SHIMS), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "CC_TEST_SHIMS": ",".join(names), **extra}
