"""Gemini CLI's own settings loader (``loadSettings`` of the pinned ``@google/gemini-cli``, run by
node) on the files ``setup`` writes and on the ones it refuses, beside how ``explain`` and the hook
read ``context.fileName`` (``agents/gemini_settings.py``): the three must agree, so a file setup edits
is one Gemini CLI starts with, and one it stops on is never written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_cli import GeminiCli, seed_gemini_home
from context_companion.agents.gemini_settings import gemini_file_names

LOAD = r"""
import { readdirSync, readFileSync } from 'node:fs';
const [bundle, workspace] = process.argv.slice(2);
const chunk = readdirSync(bundle).find(
  (f) => f.endsWith('.js') && /export\s*\{[^}]*\bloadSettings\b/.test(readFileSync(`${bundle}/${f}`, 'utf8')),
);
const { loadSettings } = await import(`${bundle}/${chunk}`);
let out;
try {
  const s = loadSettings(workspace);
  const hooks = s.merged.hooks ?? {};
  out = { fileName: s.merged.context?.fileName ?? null, BeforeAgent: hooks.BeforeAgent ?? [], SessionStart: hooks.SessionStart ?? [] };
} catch (e) {
  out = { fatal: String(e.message).split('\n')[0] };
}
console.log(JSON.stringify(out));
"""

COMMENTED = """{
  // Our team's Gemini settings.
  "context": {
    "fileName": ["AGENTS.md", "GEMINI.md"] /* AGENTS.md is shared with Codex */
  },

  "ui": {"theme": "Dracula"}
}
"""


@pytest.fixture(scope="module")
def node() -> str:
    agent = GeminiCli()
    agent.install()
    return str(Path(agent.command()[0]).resolve().parent.parent)  # node_modules/@google/gemini-cli


def gemini_reads(node_package: str, workspace: Path, home: Path) -> dict[str, Any]:
    script = workspace.parent / "load.mjs"
    script.write_text(LOAD, encoding="utf-8")
    done = subprocess.run(
        ["node", str(script), os.path.join(node_package, "bundle"), str(workspace)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(home)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def setup(workspace: Path, home: Path, *more: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    env.update({"HOME": str(home), "XDG_STATE_HOME": str(home / "state"), "PATH": "/usr/bin:/bin"})
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "context_companion",
            "setup",
            "--agent",
            "gemini-cli",
            "--workspace",
            str(workspace),
            *more,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    seed_gemini_home(home)  # folder trust off: the project's settings count
    workspace = tmp_path / "project"
    (workspace / ".gemini").mkdir(parents=True)
    return workspace, home


def test_a_commented_file_setup_edits_is_read_by_gemini_with_our_hooks_and_its_comments(
    node: str, places: tuple[Path, Path]
) -> None:
    workspace, home = places
    settings = workspace / ".gemini" / "settings.json"
    settings.write_text(COMMENTED, encoding="utf-8")
    assert setup(workspace, home).returncode == 0
    ours = [
        {
            "hooks": [
                {
                    "type": "command",
                    "command": f"{Path(sys.executable).parent}/context-companion hook --agent gemini-cli",
                }
            ]
        }
    ]
    seen = gemini_reads(node, workspace, home)
    assert seen == {"fileName": ["AGENTS.md", "GEMINI.md"], "BeforeAgent": ours, "SessionStart": ours}
    assert "/* AGENTS.md is shared with Codex */" in settings.read_text(encoding="utf-8")
    names, _ = gemini_file_names(str(workspace), str(home))
    assert list(names) == seen["fileName"]

    assert setup(workspace, home, "--remove").returncode == 0
    assert settings.read_text(encoding="utf-8") == COMMENTED
    assert gemini_reads(node, workspace, home) == {**seen, "BeforeAgent": [], "SessionStart": []}


def test_a_file_setup_created_leaves_nothing_gemini_stops_on(node: str, places: tuple[Path, Path]) -> None:
    workspace, home = places
    (workspace / ".gemini").rmdir()
    assert setup(workspace, home).returncode == 0
    assert setup(workspace, home, "--remove").returncode == 0
    assert "fatal" not in gemini_reads(node, workspace, home)
    (workspace / ".gemini").mkdir()
    (workspace / ".gemini" / "settings.json").write_text("")  # what --remove used to leave
    assert "fatal" in gemini_reads(node, workspace, home)


@pytest.mark.parametrize(
    ("text", "gemini", "names"),
    [
        ('{\n  "context": {"fileName": ["AGENTS.md"]},\n}\n', "fatal", ("GEMINI.md",)),
        ("\ufeff{}", "fatal", ("GEMINI.md",)),
        ('{"context": {"fileName": "A.md"}, "context": {"fileName": "B.md"}}', "B.md", ("B.md",)),
    ],
)
def test_what_gemini_stops_on_or_reads_its_own_way_setup_refuses_and_explain_reads_alike(
    node: str, places: tuple[Path, Path], text: str, gemini: Any, names: tuple[str, ...]
) -> None:
    workspace, home = places
    settings = workspace / ".gemini" / "settings.json"
    settings.write_text(text, encoding="utf-8")
    seen = gemini_reads(node, workspace, home)
    assert ("fatal" in seen) if gemini == "fatal" else (seen["fileName"] == gemini), seen
    assert gemini_file_names(str(workspace), str(home))[0] == names
    refused = setup(workspace, home)
    assert refused.returncode == 2 and refused.stderr.rstrip().endswith("left untouched")
    assert settings.read_text(encoding="utf-8") == text
