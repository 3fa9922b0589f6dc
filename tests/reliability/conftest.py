"""Fixtures for the reliability suite.

* ``start`` / ``config_dir`` / ``Harness``: the pytest-lsp end-to-end harness of tests/lsp/conftest.py,
  loaded from its file and re-exported (one definition, two test folders).
* ``spawn``: the real server over :mod:`lsp_pipe_client` (synchronous), for what pytest-lsp cannot do.
* ``module_server``: one server process shared by the many examples of a hypothesis test.
* ``figures``: measured numbers, printed at the end of the run (docs/reliability.md quotes them).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from lsp_pipe_client import LspProcess, server_env  # noqa: E402

_spec = importlib.util.spec_from_file_location("cc_tests_lsp_conftest", HERE.parent / "lsp" / "conftest.py")
assert _spec is not None and _spec.loader is not None
_lsp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_lsp)

start = _lsp.start
config_dir = _lsp.config_dir

FIGURES: dict[str, Any] = {}


@pytest.fixture
def figures() -> dict[str, Any]:
    return FIGURES


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for key, value in FIGURES.items():
        terminalreporter.write_line(f"{key}: {value}")
    out = os.environ.get("CC_RELIABILITY_FIGURES")
    if out:
        Path(out).write_text(json.dumps(FIGURES, indent=2) + "\n", encoding="utf-8")


class Spawner:
    """Starts server processes in one scratch area and stops them all at the end."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.home = base / "home"
        self.config_dir = base / "user-config"
        self.home.mkdir(parents=True, exist_ok=True)
        self.config_dir.mkdir(parents=True, exist_ok=True)
        self.started: list[LspProcess] = []

    def __call__(
        self,
        folders: list[Path] | None = None,
        settings: Any = None,
        *,
        env: dict[str, str] | None = None,
        argv: list[str] | None = None,
        initialize: bool = True,
        position_encodings: list[str] | None = None,
        configuration: dict[str, Any] | None = None,
        cwd: Path | None = None,
    ) -> LspProcess:
        n = len(self.started)
        kwargs: dict[str, Any] = {"stderr_path": self.base / f"server-{n}.stderr", "cwd": cwd or self.base}
        if argv is not None:
            kwargs["argv"] = argv
        proc = LspProcess(server_env(self.home, self.config_dir, env), **kwargs)
        self.started.append(proc)
        if configuration is not None:
            proc.configuration["contextCompanion"] = configuration
        if initialize:
            proc.initialize(
                folders or [], settings, position_encodings=position_encodings, configuration=configuration is not None
            )
        return proc

    def stop_all(self) -> None:
        for proc in self.started:
            try:
                proc.stop(timeout=5)
            except Exception:
                proc.kill()


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Spawner]:
    spawner = Spawner(tmp_path / "servers")
    yield spawner
    spawner.stop_all()


@pytest.fixture(scope="module")
def module_spawn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Spawner]:
    spawner = Spawner(tmp_path_factory.mktemp("module-servers"))
    yield spawner
    spawner.stop_all()
