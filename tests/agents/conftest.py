"""Real agents, end to end: each test runs an agent's own released code against the recording
model stub (``model_stub.py``) and reads the request the agent sent to its model.

These tests install pinned npm packages on first run and drive terminal programs, so they are their
own suite: ``python -m pytest -m agents tests/agents`` (the default ``python -m pytest`` leaves them
out; ``.ci/run`` runs both). Every test here is marked ``agents``. The codecompanion.nvim test loads the
pinned codecompanion.nvim + plenary.nvim from ``$COMPANION_TEST_VENDOR`` (the ``shared/vendor``
folder; ``.ci/run`` sets it to ``../shared/vendor``) and fails with one line when it is not set."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from model_stub import ModelStub
from run_figures import record_figure

HERE = Path(__file__).parent
_FIGURES: dict[str, dict[str, Any]] = {}


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


@pytest.fixture
def agent_figures(request: pytest.FixtureRequest) -> Any:
    """``agent_figures(agent, name, value)`` records a figure (version, where our context landed,
    the identical system-prefix share, ...); they print at the end of the run, one block per agent
    (tests/conftest.py gathers them from every worker)."""

    def record(agent: str, name: str, value: Any) -> None:
        _FIGURES.setdefault(agent, {})[name] = value
        record_figure(request.node, "real agents: recorded figures", f"{agent:16} {name:40}", value)

    return record
