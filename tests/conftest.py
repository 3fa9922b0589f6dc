"""Shared fixtures: an offline tiktoken encoding, isolated user dirs and environment; how the
run is spread over worker processes; the figures tests record, printed at the end of the run."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import forkserver
import pytest
import run_figures
from planted import plant
from token_encodings import make_paragraph_encoding

os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(Path(__file__).parent / ".no-tiktoken-cache"))


def _tools_beside_the_interpreter_first() -> None:
    """The tools the dev install brought (nvim, ruff, lint-imports, context-companion, pipx, uv) sit beside the
    Python that runs the tests: ``.venv/bin/python -m pytest`` from a shell where that environment is not
    activated finds them as an activated one does, before any other copy on PATH. Every test, its servers
    and the programs it starts see this PATH (a test that wants a PATH without them builds its own)."""
    here = str(Path(sys.executable).parent)
    rest = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and d != here]
    os.environ["PATH"] = os.pathsep.join([here, *rest])


_tools_beside_the_interpreter_first()


def make_tiny_encoding(name: str = "tiny_test"):
    """A real tiktoken Encoding: the 256 single bytes plus a few merges (no network)."""
    import tiktoken

    ranks = {bytes([i]): i for i in range(256)}
    for word in (b"th", b"he", b"the", b" t", b" the", b"in", b"er", b"an", b"re", b"on", b"es", b"st"):
        ranks.setdefault(word, len(ranks))
    pat = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    return tiktoken.Encoding(name, pat_str=pat, mergeable_ranks=ranks, special_tokens={})


@pytest.fixture
def tiny_encoding():
    return make_tiny_encoding()


@pytest.fixture
def paragraph_tokenizer():
    """A Tokenizer over o200k_base's pattern (small ranks): it counts by paragraph, as in use."""
    from context_companion.tokens import Tokenizer

    tok = Tokenizer("o200k_base", encoding_obj=make_paragraph_encoding())
    tok.load()
    assert tok._by_paragraph
    return tok


@pytest.fixture
def tokenizer(tiny_encoding):
    from context_companion.tokens import Tokenizer

    return Tokenizer("tiny_test", encoding_obj=tiny_encoding)


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    d = tmp_path / "user-config"
    d.mkdir()
    return d


@pytest.fixture
def workspace(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """An empty folder, ``ws`` unless a test names it (``parametrize("workspace", [...], indirect=True)``)."""
    ws = tmp_path / getattr(request, "param", "ws")
    ws.mkdir()
    return ws


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """No test reads the developer's real config dir or CONTEXT_COMPANION_* variables."""
    for key in list(os.environ):
        if key.startswith("CONTEXT_COMPANION_"):
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("CONTEXT_COMPANION_CONFIG_DIR", str(tmp_path / "home" / ".config" / "context-companion"))
    monkeypatch.setenv("HOME", str(home))
    # Nor git's system or global config (a global excludes file changes what is ignored).
    for key in ("XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    # Gemini CLI 0.61 trusts no folder until the user says so (its folder trust is on by default) and then ignores
    # the folder's settings and memory: the tests' projects stand for folders their user trusted. The tests of
    # folder trust itself take this away (tests/memory/test_explain_agents.py).
    for key in ("GEMINI_RESTRICTED_MODE", "GEMINI_CLI_TRUSTED_FOLDERS_PATH", "QWEN_CODE_TRUSTED_FOLDERS_PATH"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")
    yield


# --------------------------------------------------------------------------- sealed from the machine
# What lies above the tests' own folders is the machine's: a ``/tmp/.git`` and ``/tmp/AGENTS.md`` of another
# program (or user) made tests/memory fail. Every test's tree is below the run's base folder, and nothing above
# it is a project: ``GIT_CEILING_DIRECTORIES`` names it (git's variable; our discovery honours it as git does,
# context_companion/ownership.py), for this process, the servers and hooks it starts, and git itself.
# ``CC_TEST_PLANT_ABOVE=<folder>`` proves it: the run's base folder goes below <folder>, which gets a ``.git``
# and the memory files of every vendor (``CC_TEST_PLANT_UID=<uid>``: owned by that user; root only), and the
# tests must pass all the same (tests/memory/test_sealed.py runs a sample this way).
@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    where = os.environ.get("CC_TEST_PLANT_ABOVE")
    if not where or hasattr(config, "workerinput") or config.option.basetemp is not None:
        return
    root = Path(where).resolve()
    uid = os.environ.get("CC_TEST_PLANT_UID")
    plant(root, int(uid) if uid else None)
    if uid:
        os.chown(root, int(uid), int(uid))  # the folder itself too: the whole of it is theirs
    base = root / "nested" / "basetemp"
    base.parent.mkdir(parents=True, exist_ok=True)
    config.option.basetemp = str(base)


@pytest.fixture(scope="session", autouse=True)
def _sealed_from_above(tmp_path_factory: pytest.TempPathFactory):
    if os.environ.get("CC_TEST_NO_CEILING"):  # tests/memory/test_sealed.py: what a run is without the seal
        yield
        return
    before = os.environ.get("GIT_CEILING_DIRECTORIES")
    os.environ["GIT_CEILING_DIRECTORIES"] = str(tmp_path_factory.getbasetemp())
    yield
    if before is None:
        os.environ.pop("GIT_CEILING_DIRECTORIES", None)
    else:
        os.environ["GIT_CEILING_DIRECTORIES"] = before


def pytest_sessionfinish(session: pytest.Session) -> None:
    forkserver.stop_parent()  # the pre-imported parent of this process's servers, if one was started


# --------------------------------------------------------------------------- workers
# ``python -m pytest`` runs the test files on worker processes (pytest-xdist ``--dist loadfile``: a
# file's tests run in one worker, in order, so module-scoped servers and fixtures stay as they are),
# one per core, at least 2 (the suite waits on servers as much as it computes) and at most 4; a run
# of one file runs in this process. ``-n N`` chooses (``-n 0``: no workers); without pytest-xdist
# everything runs here.


def _workers() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(2, min(cores, 4))


def _one_file(config: pytest.Config) -> bool:
    files = set()
    for arg in config.args:
        path = Path(arg.split("::")[0])
        if not path.is_file():
            return False
        files.add(path.resolve())
    return len(files) <= 1


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    option = config.option
    if option.numprocesses is not None or option.dist != "no" or getattr(option, "tx", None):
        return  # the command line chose
    if option.collectonly or option.usepdb or _one_file(config):
        return
    option.numprocesses = _workers()
    option.dist = "loadfile"


# --------------------------------------------------------------------------- figures


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    run_figures.gather(report)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Every section of figures the run's tests recorded (tests/run_figures.py)."""
    if hasattr(config, "workerinput"):
        return  # a worker: its reports reach the controller, which prints
    for section, figures in run_figures.SECTIONS.items():
        terminalreporter.section(section)
        if section == "real agents: recorded figures":  # names start with the agent: grouped by it
            lines = [f"{name} {value}" for name, value in sorted(figures.items(), key=lambda kv: kv[0][:16])]
        else:
            lines = [f"{name}: {value}" for name, value in figures.items()]
        for line in lines:
            terminalreporter.write_line(line)
    out = os.environ.get("CC_RELIABILITY_FIGURES")
    figures = run_figures.SECTIONS.get("reliability figures")
    if out and figures:
        Path(out).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


@pytest.fixture
def runtime(tmp_path: Path) -> Path:
    """A private runtime folder (``XDG_RUNTIME_DIR`` for the hook and the servers: platformdirs takes only a
    0700 one); the tests of tests/lsp and tests/security have their own."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    return run
