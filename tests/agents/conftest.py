"""Real agents, end to end: each test runs an agent's own released code against the recording
model stub (``model_stub.py``) and reads the request the agent sent to its model.

These tests install pinned npm packages on first run and drive terminal programs, so they are their
own suite: ``python -m pytest -m agents tests/agents`` (the default ``python -m pytest`` leaves them
out; ``.ci/run`` runs both). Every test here is marked ``agents``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from model_stub import ModelStub

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).is_relative_to(HERE):
            item.add_marker(pytest.mark.agents)


@pytest.fixture
def model_stub() -> Iterator[ModelStub]:
    """A started stub with every API module installed; stopped after the test."""
    import stub_anthropic
    import stub_gemini
    import stub_openai

    stub = ModelStub()
    for module in (stub_gemini, stub_anthropic, stub_openai):
        module.install(stub)
    with stub:
        yield stub
