"""The README is what users type first: its release file names carry the release number, its lazy.nvim spec
is the one docs/editors/neovim.md gives (and tests/release runs), and CI runs its install, test and release
commands as written."""

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


def test_ci_runs_the_readmes_install_test_and_release_commands() -> None:
    ci = {line.strip() for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()}
    commands = []
    for block in blocks(section("Developing"), "sh"):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith(("python -m pip install", "python -m pytest", "python scripts/", "ruff", "mypy")):
                commands += [part.strip() for part in line.split("&&")]
    assert "python scripts/release.py" in commands and "python -m pytest -m release tests/release" in commands
    assert [c for c in commands if c not in ci] == []
