"""The README is what users type first: its release file names carry the release number, its lazy.nvim spec
is the one docs/editors/neovim.md gives (and tests/release runs), and CI runs its install, test and release
commands as written, the two commands of *From a clone* first."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def blocks(text: str, lang: str) -> list[str]:
    return [b.split("```", 1)[0] for b in text.split(f"```{lang}\n")[1:]]


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def test_the_install_section_comes_first_and_names_this_release() -> None:
    from context_companion import __version__

    assert re.findall(r"^## .*", README, re.MULTILINE)[:2] == ["## Install", "## 30-second demo"]
    named = set(re.findall(r"context[_-]companion-(\d+\.\d+\.\d+)", README))
    assert named == {__version__}
    install = section("Install")
    for command in ("code --install-extension", "pipx install", "uv tool install", "context-companion setup"):
        assert command in install, command


def test_the_readme_gives_the_neovim_docs_lazy_spec() -> None:
    docs = (REPO / "docs" / "editors" / "neovim.md").read_text(encoding="utf-8")

    def spec(text: str) -> str:
        (found,) = [b for b in blocks(text, "lua") if "'context-companion/context-companion'" in b]
        return "\n".join(line.split(" --")[0].rstrip() for line in found.splitlines())  # comments aside

    assert spec(README) == spec(docs)


def ci_commands() -> list[str]:
    """The command lines of .ci/run, in order (comments, ``set``, ``cd`` and ``export`` aside)."""
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith(("#", "set ", "cd ", "export "))]


def from_a_clone() -> list[str]:
    (block,) = blocks(section("From a clone"), "sh")
    return [line for line in block.splitlines() if line.strip()]


def test_from_a_clone_is_two_commands_and_ci_runs_them_first_as_written() -> None:
    """One command sets up (a virtual environment in the clone, the dev install) and runs the main job on the clone;
    one runs the default suite. Neither needs ``python`` on PATH, an activated environment or a system pip."""
    setup, tests = from_a_clone()
    assert setup.split(" && ") == [
        "python3 -m venv .venv",
        ".venv/bin/python -m pip install -e '.[dev]'",
        ".venv/bin/context-companion memory",
    ]
    assert tests == ".venv/bin/python -m pytest"
    assert ci_commands()[:2] == [setup, tests]


def test_ci_runs_the_readmes_developing_commands_with_the_clones_environment() -> None:
    ci = set(ci_commands())
    commands = []
    for block in blocks(section("Developing"), "sh"):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith(".venv/bin/") and "bench" not in line.split()[-1]:
                commands += [part.strip() for part in line.split("&&")]
    assert ".venv/bin/python scripts/release.py" in commands
    assert ".venv/bin/python -m pytest -m release tests/release" in commands
    assert ".venv/bin/lint-imports" in commands
    assert [c for c in commands if c not in ci] == []
    # Every Python step after the first runs the clone's environment, by its path.
    assert [c for c in ci_commands()[1:] if c.split()[0] in ("python", "python3", "pip", "ruff", "mypy")] == []


def test_the_first_screen_says_what_this_is_for_and_for_whom_before_any_code() -> None:
    intro = README.split("\n## ", 1)[0]
    assert "```" not in intro
    assert intro.index("For anyone who codes with an AI agent") < intro.index("Context Companion finds")
    for agent in ("Claude Code", "Gemini CLI", "Codex", "GitHub Copilot CLI", "OpenCode", "Qwen Code", "Cline CLI"):
        assert agent in intro, agent


def test_the_command_line_section_names_every_agent_setup_takes() -> None:
    from context_companion.agents import registry
    from context_companion.cli.parser import AGENT_HOOK_IDS, HOOK_AGENTS

    assert "setup --agent AGENT" in section("Command line") and registry.choices() == HOOK_AGENTS
    assert tuple(registry.HOOK_AGENTS) == AGENT_HOOK_IDS
    said = " ".join(section("Command line").split())
    for agent in (
        "`claude-code` (or `claude`)",
        "`gemini-cli` (or `gemini`)",
        "`codex`",
        "`copilot-cli` (or `copilot`)",
    ):
        assert agent in said, agent
    for agent in registry.HOOK_AGENTS:  # every agent setup takes, with the short names users type
        shorts = registry.short_names(agent)
        assert f"`{agent}`" + (f" (or {', '.join(f'`{s}`' for s in shorts)})" if shorts else "") in said, agent
