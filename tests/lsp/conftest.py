"""End-to-end fixtures: the real server process driven by a pytest-lsp client."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsp_harness import Harness, fork_servers, start_client
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = [sys.executable, "-m", "context_companion", "serve"]
CHANGED = "contextCompanion/systemInstructionChanged"


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    d = tmp_path / "user-config"
    d.mkdir()
    return d


# What tests/conftest.py's autouse _isolated_env takes away, for servers that outlive one test.
_UNSET = ("XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_DIR")


def _starter(base: Path, config_dir: Path, started: list[LanguageClient], fork: bool = True) -> Callable[..., Any]:
    """``start(workspace, ...)`` for servers whose home is ``base / "home"``; each client started
    is added to ``started`` (shut down by the fixture); ``fork``: see ``lsp_harness.start_client``."""

    async def _start(
        workspace: Path,
        *,
        settings: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        capabilities: str = "visual-studio-code",
        position_encodings: list[str] | None = None,
        configuration: dict[str, Any] | None = None,
        folders: list[Path] | None = None,
        answers_configuration: bool | None = None,
        args: list[str] | None = None,
    ) -> Harness:
        """``configuration``: the client's ``contextCompanion`` section for ``workspace/configuration``;
        the client announces that capability when one is given, or when ``answers_configuration``
        (then a None section is answered as ``[null]``). ``args``: more arguments for ``serve``."""
        home = base / "home"
        home.mkdir(exist_ok=True)
        server_env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_") and k not in _UNSET}
        server_env.update(
            {
                "HOME": str(home),
                "CONTEXT_COMPANION_CONFIG_DIR": str(config_dir),
                "CONTEXT_COMPANION_MEMORY__DEBOUNCE_MS": server_env.get("CC_TEST_DEBOUNCE", "50"),
                "GIT_CONFIG_NOSYSTEM": "1",
            }
        )
        server_env.update(env or {})
        config = ClientServerConfig(server_command=[*SERVER, *(args or [])], server_env=server_env)
        client = await start_client(config, fork=fork)
        started.append(client)
        pulls = configuration is not None if answers_configuration is None else answers_configuration
        if pulls:
            client.set_configuration(configuration, section="contextCompanion")
        harness = Harness(client, workspace, config_dir)
        caps = client_capabilities(capabilities)
        if position_encodings is not None:
            caps.general = t.GeneralClientCapabilities(position_encodings=position_encodings)
        if not pulls and caps.workspace is not None:
            caps.workspace.configuration = False
        folder_list = folders if folders is not None else [workspace]
        result = await client.initialize_session(
            t.InitializeParams(
                capabilities=caps,
                workspace_folders=[t.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folder_list],
                initialization_options=settings,
            )
        )
        harness.init_result = result
        return harness

    return _start


async def _stop_all(started: list[LanguageClient]) -> None:
    for client in started:
        try:
            await asyncio.wait_for(client.shutdown_session(), 10)
        except Exception:
            pass
        await client.stop()


@pytest_asyncio.fixture
async def start(tmp_path: Path, config_dir: Path, request: pytest.FixtureRequest) -> AsyncIterator[Callable[..., Any]]:
    started: list[LanguageClient] = []
    yield _starter(tmp_path, config_dir, started, fork_servers(request))
    await _stop_all(started)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_start(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> AsyncIterator[Callable[..., Any]]:
    """``start`` for a server shared by the tests of a module that do not change its state (each
    test that uses it runs with ``@pytest.mark.asyncio(loop_scope="module")``): one start-up, not
    one per test."""
    base = tmp_path_factory.mktemp("module-server")
    config_dir = base / "user-config"
    config_dir.mkdir()
    started: list[LanguageClient] = []
    yield _starter(base, config_dir, started, fork_servers(request))
    await _stop_all(started)
