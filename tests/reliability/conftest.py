"""Fixtures for the reliability suite.

* ``start`` / ``config_dir`` / ``Harness``: the pytest-lsp end-to-end harness of tests/lsp/conftest.py,
  loaded from its file and re-exported (one definition, two test folders).
* ``spawn``: the real server over :mod:`lsp_pipe_client` (synchronous), for what pytest-lsp cannot do.
* ``module_server``: one server process shared by the many examples of a hypothesis test.
* ``figures``: measured numbers, printed at the end of the run (docs/reliability.md quotes them;
  tests/conftest.py gathers them from every worker).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from lsp_harness import fork_servers  # noqa: E402
from lsp_pipe_client import LspProcess, server_env  # noqa: E402
from run_figures import record_figure  # noqa: E402

_spec = importlib.util.spec_from_file_location("cc_tests_lsp_conftest", HERE.parent / "lsp" / "conftest.py")
assert _spec is not None and _spec.loader is not None
_lsp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_lsp)

start = _lsp.start
config_dir = _lsp.config_dir

FIGURES: dict[str, Any] = {}  # this process's figures; the run's end prints every process's (tests/conftest.py)


class Figures(dict[str, Any]):
    """``figures[name] = value`` records a figure of the running test."""

    def __init__(self, item: pytest.Item) -> None:
        super().__init__(FIGURES)
        self._item = item

    def __setitem__(self, name: str, value: Any) -> None:
        super().__setitem__(name, value)
        FIGURES[name] = value
        record_figure(self._item, "reliability figures", name, value)


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Measured numbers, printed at the end of the run. A test that records figures starts its
    servers with a real exec (not from the fork server): the figures describe the server users run."""
    return Figures(request.node)


class Spawner:
    """Starts server processes in one scratch area and stops them all at the end."""

    def __init__(self, base: Path, fork: bool = True) -> None:
        self.base = base
        self.fork = fork  # False: every server is a real exec (``exec_server``), not forked
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
        kwargs: dict[str, Any] = {
            "stderr_path": self.base / f"server-{n}.stderr",
            "cwd": cwd or self.base,
            "fork": self.fork,
        }
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
def spawn(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Spawner]:
    spawner = Spawner(tmp_path / "servers", fork_servers(request))
    yield spawner
    spawner.stop_all()


@pytest.fixture(scope="module")
def module_spawn(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Spawner]:
    spawner = Spawner(tmp_path_factory.mktemp("module-servers"), fork_servers(request))
    yield spawner
    spawner.stop_all()
