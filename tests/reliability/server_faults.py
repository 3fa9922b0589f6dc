"""Switching on the fault shims of ``shims/sitecustomize.py`` in a server process."""

from __future__ import annotations

from pathlib import Path

SHIMS = Path(__file__).parent / "shims"


def shim_env(*names: str, **extra: str) -> dict[str, str]:
    """Environment that loads ``shims/sitecustomize.py`` in the server with the named shims on."""
    return {"PYTHONPATH": str(SHIMS), "CC_TEST_SHIMS": ",".join(names), **extra}
