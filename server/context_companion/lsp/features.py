"""Language features on memory and rule files: diagnostics, document links, hover, code lens."""

from __future__ import annotations

from typing import Any


def register(server: Any) -> None:
    return None


def publish(server: Any, uri: str) -> None:
    return None


def schedule_publish(server: Any, uri: str) -> None:
    return None


def clear(server: Any, uri: str) -> None:
    return None
