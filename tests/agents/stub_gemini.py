"""gemini API routes for the model stub (to be written)."""

from __future__ import annotations

from model_stub import ModelStub


def install(stub: ModelStub) -> None:
    """Registers this API's routes on ``stub``."""
