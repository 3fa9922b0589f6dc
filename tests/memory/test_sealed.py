"""The suite is sealed from the machine: a ``.git`` and memory files of every vendor planted in the folders
above the tests' own (as a ``/tmp/.git`` and ``/tmp/AGENTS.md`` of another program made 39 tests of
tests/memory fail) change no test's outcome. tests/conftest.py: ``GIT_CEILING_DIRECTORIES`` names the run's
base folder (our discovery honours it as git does); ``CC_TEST_PLANT_ABOVE`` plants the files above it.

A sample of the tests that failed so runs here in a child pytest; the whole of tests/memory runs the same
way by hand: ``CC_TEST_PLANT_ABOVE=$(mktemp -d) python -m pytest tests/memory`` (add ``CC_TEST_PLANT_UID=54321``
as root for files of another user).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SAMPLE = [
    "test_memory_tiers.py::test_nothing_found_gives_empty_text",
    "test_memory_tiers.py::test_workspace_tier_without_marker_is_the_folder_alone",
    "test_memory_rules.py::test_rule_order_is_by_convention_then_path",
    "test_explain_agents.py::test_claude_code_reads_agents_md_only_without_a_claude_md",
    "test_memory_imports.py::test_each_failure_keeps_the_text_and_gives_a_warning",
]


def run_sample(above: Path, sample: list[str] = SAMPLE, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXT_COMPANION_", "CC_TEST_"))}
    full.pop("GIT_CEILING_DIRECTORIES", None)  # the child seals itself (or not: CC_TEST_NO_CEILING)
    full.update({"CC_TEST_PLANT_ABOVE": str(above), **env})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *(str(HERE / t) for t in sample)],
        capture_output=True,
        text=True,
        env=full,
        timeout=300,
        cwd=HERE.parent.parent,
    )


def test_files_planted_above_the_tests_change_nothing(tmp_path: Path) -> None:
    above = tmp_path / "above"
    sealed = run_sample(above)
    assert sealed.returncode == 0, sealed.stdout[-3000:]
    assert f"{len(SAMPLE)} passed" in sealed.stdout
    assert (above / ".git").is_dir() and (above / "AGENTS.md").is_file()  # they were there
    assert (above / "nested" / "basetemp").is_dir()  # and the run's folders were below them


def test_the_sample_is_sensitive_without_the_seal(tmp_path: Path) -> None:
    """Without the ceiling, this user's planted files above are the project of every sample test."""
    out = run_sample(tmp_path / "above", CC_TEST_NO_CEILING="1")
    assert out.returncode == 1
    assert f"{len(SAMPLE)} failed" in out.stdout, out.stdout[-3000:]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another uid needs root")
def test_files_of_another_user_above_change_nothing_even_without_the_seal(tmp_path: Path) -> None:
    """Another user's files need no ceiling: their ``.git`` is no root, their memory files no memory. (Not the
    explain test: Claude Code itself reads a CLAUDE.md in every folder above, whoever owns it, and explain says
    so; only the ceiling keeps that prediction off the machine's folders.)"""
    ours = [t for t in SAMPLE if not t.startswith("test_explain_agents.py")]
    out = run_sample(tmp_path / "above", ours, CC_TEST_NO_CEILING="1", CC_TEST_PLANT_UID="54321")
    assert out.returncode == 0, out.stdout[-3000:]
    assert f"{len(ours)} passed" in out.stdout


def test_git_ceiling_directories_is_honoured_as_git_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Git's rules: never go up into a folder named there; the start folder itself is always looked at;
    relative entries are ignored; entries after an empty one are taken as written (not resolved)."""
    from context_companion.ownership import find_marker

    subprocess.run(["git", "init", "-q", str(tmp_path / "top")], check=True)
    start = tmp_path / "top" / "a" / "b"
    start.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "top")

    def root(ceiling: str) -> str | None:
        monkeypatch.setenv("GIT_CEILING_DIRECTORIES", ceiling)
        return find_marker(str(start), (".git",)).root

    assert root("") == str(tmp_path / "top")
    assert root(str(tmp_path / "top")) is None  # the ceiling itself is not entered
    assert root(str(tmp_path / "top" / "a")) is None
    assert root(f"relative/path{os.pathsep}{tmp_path / 'elsewhere'}") == str(tmp_path / "top")
    assert root(str(tmp_path / "link")) is None  # resolved: the same folder as top
    assert root(f"{os.pathsep}{tmp_path / 'link'}") == str(tmp_path / "top")  # after an empty entry: as written
    assert find_marker(str(tmp_path / "top"), (".git",)).root == str(tmp_path / "top")  # the start: always
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path / "top"))
    assert find_marker(str(tmp_path / "top"), (".git",)).root == str(tmp_path / "top")
    # Git agrees (its own discovery, the same variable).
    for ceiling in (str(tmp_path / "top" / "a"), str(tmp_path / "link"), f"{os.pathsep}{tmp_path / 'link'}", ""):
        env = {**os.environ, "GIT_CEILING_DIRECTORIES": ceiling}
        git = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=start, env=env, capture_output=True, text=True
        )
        assert (git.stdout.strip() or None) == root(ceiling), ceiling
