"""The real Gemini CLI (``@google/gemini-cli``, pinned in ``gemini/package.json``) in a real Neovim
``:terminal`` opened through our plugin: what the CLI sends to its model carries the editor context
our server reported, and never an excluded file.

Neovim runs as a TUI in tmux (``editor_terminal.py``) with the plugin and this checkout's server.
The CLI starts in a terminal window of that Neovim, so its environment is what the plugin put into
``vim.env`` and its process tree is a user's. It talks to the recording model stub
(``GOOGLE_GEMINI_BASE_URL``) with a dummy key, from a scratch HOME whose ``~/.gemini/settings.json``
skips every dialog. ``SSH_CONNECTION`` is set because these machines have ``/.dockerenv``, which
otherwise makes the CLI dial ``host.docker.internal`` (docs/editors/gemini-cli.md, "Containers").

Everything the user does is typed into Neovim through tmux (``send-keys``), so CursorMoved and
ModeChanged fire as for a user: ``<C-\\><C-n><C-w>t`` to the file, a motion and ``ve`` to select a
word, ``<C-w>l`` and ``i`` back into the CLI's terminal, then the prompt. Leaving visual mode for the
terminal window keeps the selection the editor last reported (the terminal buffer reports nothing),
so the CLI still gets it, as in VS Code.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from pathlib import Path
from typing import Any

import pytest
from agent_cli import GeminiCli, gemini_env, seed_gemini_home
from editor_terminal import EditorTerminal
from model_stub import ModelStub, Recorded, common_prefix
from nvim_harness import ACTIVE_FILE_LUA

GEMINI_CLI = GeminiCli()
AGENT = "gemini-cli"
SECRET = "sk-stub-do-not-leak-4242"
SETTLE = 1.0  # seconds for the companion's debounced push to reach the CLI after the server has it

APP = 'import os\n\n\ndef greet(name):\n    return f"hello {name}"\n\n\ndef farewell(name):\n    return f"bye {name}"\n'
UTIL = "def helper():\n    return 42\n"

FULL_INTRO = "Here is the user's editor context as a JSON object."
DELTA_INTRO = "Here is a summary of changes in the user's editor context, in JSON format."

# What the plugin puts into the terminals' environment (docs/editors/gemini-cli.md).
ENV_NAMES = (
    "GEMINI_CLI_IDE_SERVER_PORT",
    "GEMINI_CLI_IDE_AUTH_TOKEN",
    "GEMINI_CLI_IDE_WORKSPACE_PATH",
    "GEMINI_CLI_IDE_PID",
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = (tmp_path / "project").resolve()
    (ws / ".git").mkdir(parents=True)
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text(APP, encoding="utf-8")
    (ws / "src" / "util.py").write_text(UTIL, encoding="utf-8")
    (ws / ".env").write_text(f"API_KEY={SECRET}\n", encoding="utf-8")
    # The CLI lists the workspace in its first message by itself; .geminiignore keeps .env out of
    # that listing (and its own file tools), so the only way the file could reach the model here is
    # the editor context our server gives it.
    (ws / ".geminiignore").write_text(".env\n", encoding="utf-8")
    return ws


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = (tmp_path / "home").resolve()
    seed_gemini_home(home)
    return home


def texts(content: Any) -> list[str]:
    return [p["text"] for p in (content or {}).get("parts", []) if isinstance(p, dict) and "text" in p]


def system_text(rec: Recorded) -> str:
    return "\n".join(texts(rec.json.get("systemInstruction")))


def editor_context(rec: Recorded, intro: str) -> tuple[str, dict[str, Any]]:
    """The last of the CLI's editor-context messages of this kind in the request: where it is
    (``contents[i].parts[j]`` of how many) and its JSON."""
    found: tuple[str, dict[str, Any]] | None = None
    contents = rec.json.get("contents", [])
    for i, content in enumerate(contents):
        parts = texts(content)
        for j, text in enumerate(parts):
            if text.startswith(intro):
                assert content.get("role") == "user", f"editor context in a {content.get('role')} turn"
                block = re.search(r"```json\n(.*)\n```", text, re.S)
                assert block, f"no JSON block in the editor context: {text!r}"
                where = f"contents[{i}].parts[{j}] (user turn {i + 1} of {len(contents)}, part {j + 1} of {len(parts)})"
                found = (where, json.loads(block.group(1)))
    assert found is not None, f"no {intro!r} part in the request; contents: {json.dumps(rec.json['contents'])[:3000]}"
    return found


class GeminiInNeovim:
    """The user's moves: select in the file window, prompt in the CLI's terminal window."""

    def __init__(self, editor: EditorTerminal, stub: ModelStub) -> None:
        self.editor, self.stub = editor, stub

    def select(self, keys: list[str], expected: str) -> dict[str, Any]:
        """From the terminal, go to the file window and make a selection with typed keys; returns
        the server's view once it has that selection."""
        mode = self.editor.lua("return vim.api.nvim_get_mode().mode")
        if mode == "t":
            self.editor.keys("C-\\", "C-n")
        elif mode.startswith(("v", "V")):
            self.editor.keys("Escape")
        self.editor.keys("C-w", "t", *keys)  # <C-w>t: the top-left window, the file
        view = self.editor.wait_lua(
            ACTIVE_FILE_LUA + f"if f and f.selectedText == {json.dumps(expected)} then return f end return nil",
            f"the server to have the selection {expected!r}",
        )
        time.sleep(SETTLE)
        return view

    def prompt(self, text: str) -> Recorded:
        """Goes back to the CLI's terminal window (``<C-w>l``, ``i``), types a prompt and returns the
        model request that carries it, once the CLI has shown the answer."""
        after = self.stub.next_seq
        self.editor.keys("C-w", "l", "i")
        self.editor.wait_lua("return vim.api.nvim_get_mode().mode == 't'", "terminal mode in the CLI's window")
        self.editor.send(text)
        rec = self.stub.wait_for(lambda r: r.path.endswith(":streamGenerateContent"), timeout=90, after=after)
        last_user = texts(rec.json["contents"][-1])
        assert last_user and last_user[-1] == text, f"the prompt is not the end of the last user turn: {last_user}"
        self.editor.wait_screen(rf"Stub answer {rec.seq}: noted", timeout=60)
        return rec


def descendants(pid: int) -> list[tuple[bytes, bytes]]:
    """Command line and environment of every process below ``pid`` (Linux /proc)."""
    out: list[tuple[bytes, bytes]] = []
    todo = [pid]
    while todo:
        for child in (Path("/proc") / str(todo.pop()) / "task").glob("*/children"):
            for text in child.read_text().split():
                proc = Path("/proc") / text
                try:
                    out.append((proc.joinpath("cmdline").read_bytes(), proc.joinpath("environ").read_bytes()))
                except OSError:
                    continue
                todo.append(int(text))
    return out


def ide_status(editor: EditorTerminal, open_files: int) -> str:
    """Types ``/ide status`` into the CLI and returns the screen once it reports the connection.
    Enter while the command's completion is still highlighted only completes it: press again.

    The CLI shows its prompt before its connection to the editor is up (it connects in the
    background) and ``/ide status`` lists what the editor last told it: first wait, as a user
    would, for the footer to count the ``open_files`` the editor reported."""
    editor.wait_screen(rf"\b{open_files} open fil", timeout=30)
    editor.send("/ide status", enter=False)
    editor.wait_screen(r"Check status of IDE integration", timeout=30)
    for _ in range(3):
        editor.keys("Enter")
        try:
            return editor.wait_screen(r"Connected to Neovim", timeout=20)
        except AssertionError:
            continue
    return editor.wait_screen(r"Connected to Neovim", timeout=1)


def editor_for(workspace: Path, home: Path, stub: ModelStub) -> EditorTerminal:
    """Neovim with the plugin on ``workspace``; its terminals reach the stub with a dummy key."""
    GEMINI_CLI.install()
    return EditorTerminal(workspace, home, env=gemini_env(stub))


def start_gemini(editor: EditorTerminal, files: list[str], prefix: str = "") -> None:
    """Opens ``files`` and, once the plugin has the companion's environment, runs the CLI in a
    terminal of that Neovim (``prefix`` goes before the command)."""
    editor.start(files)
    editor.wait_lua("return vim.env.GEMINI_CLI_IDE_SERVER_PORT", "the plugin to receive the companion's environment")
    editor.terminal(prefix + shlex.join(GEMINI_CLI.command()))
    editor.wait_screen(r"Type your message", timeout=90)


def test_gemini_cli_in_a_neovim_terminal_sends_the_editor_context(
    model_stub: ModelStub, workspace: Path, home: Path, agent_figures: Any
) -> None:
    app, util, env_file = workspace / "src" / "app.py", workspace / "src" / "util.py", workspace / ".env"
    with editor_for(workspace, home, model_stub) as editor:
        start_gemini(editor, ["src/app.py", "src/util.py", ".env"])

        # 1. The CLI finds the editor: /ide status, typed into the terminal.
        status = ide_status(editor, open_files=2)
        assert "app.py (active)" in status and "util.py" in status, status
        assert ".env" not in status, f"the excluded .env is listed by /ide status:\n{status}"

        # 2. A selection made in Neovim reaches the first request in full.
        gem = GeminiInNeovim(editor, model_stub)
        view = gem.select(["4G", "0", "w", "v", "e"], "greet")
        assert view["cursor"] == {"line": 4, "character": 9}, view  # 1-based: the "t" of "greet"
        first = gem.prompt("Explain the selected function")
        where1, full = editor_context(first, FULL_INTRO)
        assert full["activeFile"] == {"path": str(app), "cursor": {"line": 4, "character": 9}, "selectedText": "greet"}
        assert full["otherOpenFiles"] == [str(util)]

        # 3. A cursor move and a new selection reach the next request, nothing restarted.
        gem.select(["8G", "0", "w", "v", "e"], "farewell")
        second = gem.prompt("Now explain this one")
        where2, delta = editor_context(second, DELTA_INTRO)
        assert delta["changes"]["cursorMoved"] == {"path": str(app), "cursor": {"line": 8, "character": 12}}, delta
        assert delta["changes"]["selectionChanged"] == {"path": str(app), "selectedText": "farewell"}, delta

        # 4. The excluded .env never reaches the model: not its text, not its name.
        for rec in model_stub.requests:
            where = f"{rec.method} {rec.path} (request {rec.seq})"
            assert SECRET not in rec.text, f"the .env secret is in {where}"
            assert str(env_file) not in rec.text, f"the .env path is in {where}"
            assert "───.env" not in rec.text, f"the .env file is listed in {where}"
        assert ".env" not in json.dumps(full) + json.dumps(delta)

        # 5. Where the context lands and what a cursor move does to the system part.
        sys1, sys2 = system_text(first).encode(), system_text(second).encode()
        assert sys1, "the CLI sent no systemInstruction"
        assert FULL_INTRO not in sys1.decode() and DELTA_INTRO not in sys2.decode()
        same = common_prefix(sys1, sys2)
        agent_figures(AGENT, "version", GEMINI_CLI.version())
        agent_figures(AGENT, "editor context (first turn, full) in", where1)
        agent_figures(AGENT, "editor context (next turn, delta) in", where2)
        agent_figures(AGENT, "system part changed by the cursor move", sys1 != sys2)
        agent_figures(AGENT, "identical system prefix", f"{100 * same / max(len(sys1), 1):.1f}% of {len(sys1)} bytes")
        agent_figures(AGENT, "first differing system byte", "none" if sys1 == sys2 else same)
        turns1, turns2 = first.json["contents"], second.json["contents"]
        agent_figures(AGENT, "earlier turns resent unchanged", turns2[: len(turns1)] == turns1)


def test_gemini_cli_finds_neovim_without_the_environment(model_stub: ModelStub, workspace: Path, home: Path) -> None:
    """A terminal without the ``GEMINI_CLI_IDE_*`` variables (one opened before the server started,
    or cleared by a shell profile): the CLI finds the editor by its own walk up the process tree
    and the discovery file the server wrote, and still gets the editor context."""
    app = workspace / "src" / "app.py"
    unset = "".join(f"-u {name} " for name in ENV_NAMES)
    with editor_for(workspace, home, model_stub) as editor:
        start_gemini(editor, ["src/app.py"], prefix=f"env {unset}")
        found = sorted((home / "tmp" / "gemini" / "ide").glob("gemini-ide-server-*.json"))
        assert len(found) == 1, f"expected one discovery file, found {found}"
        cli = descendants(editor.lua("return vim.fn.jobpid(_G.et_term.job)"))
        assert any(b"gemini" in cmd for cmd, _ in cli), f"no gemini process under the terminal: {cli}"
        for cmd, environ in cli:
            assert b"GEMINI_CLI_IDE_" not in environ, f"{cmd!r} has the companion's variables"
        ide_status(editor, open_files=1)
        gem = GeminiInNeovim(editor, model_stub)
        gem.select(["4G", "0", "w", "v", "e"], "greet")
        rec = gem.prompt("Explain the selected function")
        _, full = editor_context(rec, FULL_INTRO)
        assert full["activeFile"] == {"path": str(app), "cursor": {"line": 4, "character": 9}, "selectedText": "greet"}
