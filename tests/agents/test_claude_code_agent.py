"""Claude Code, end to end: the real ``claude`` (pinned in ``tests/agents/claude``) in a Neovim
``:terminal`` with the environment our plugin sets for terminals, against the recording model stub.

What a user sees is checked through what Claude Code sends to its model: it finds our lock file,
connects, and its ``/v1/messages`` request carries the editor's selection and file (also a selection
made before it started); a selection made later reaches the next request without a restart; an edit
it proposes is shown in Neovim through our plugin and the user's accept/reject goes back to it.
"""

from __future__ import annotations

import json
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_cli import ClaudeCode, claude_env, seed_claude_home
from editor_terminal import EditorTerminal
from model_stub import ModelStub, Recorded, common_prefix
from nvim_harness import ACTIVE_FILE_LUA
from stub_anthropic import REPLY_OK, last_user_blocks, tool_use_id

APP = 'def hello():\n    return "hi"\n\n\ndef bye():\n    return "bye"\n'


def user_texts(rec: Recorded) -> list[str]:
    return [str(b.get("text", "")) for b in last_user_blocks(rec.json) if b.get("type") == "text"]


def is_prompt(rec: Recorded, prompt: str) -> bool:
    body = rec.json
    return rec.path == "/v1/messages" and isinstance(body, dict) and prompt in user_texts(rec) and "tools" in body


def ide_context(rec: Recorded, path: Path, any_sentence: bool = False) -> tuple[str, str]:
    """Where in ``messages`` Claude Code put the IDE context naming ``path`` (the last such text
    block): ``("messages[i] role=…", the text from "The user …" on)``; ``("", "")`` when nowhere.
    By default the context is a selection's ("… from <path>"; from there when no "The user" precedes
    it); ``any_sentence``: any sentence naming ``path`` ("opened the file …" too), the block's last,
    from "The user" on (none without it)."""
    found = ("", "")
    for i, message in enumerate(rec.json.get("messages") or []):
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            text = str(block.get("text", "")) if isinstance(block, dict) else ""
            if any_sentence:
                at = text.rfind(str(path))
                start = text.rfind("The user", 0, at) if at != -1 else -1
                if start == -1:
                    continue
            else:
                at = text.find(f"from {path}")
                if at == -1:
                    continue
                start = text.rfind("The user", 0, at)
                if start == -1:
                    start = at
            found = (f"messages[{i}] role={message.get('role')}", text[start:])
    return found


def texts_of(message: dict[str, Any]) -> tuple[str, list[str]]:
    """A message's role and texts, whatever its form (a string, or blocks with or without cache_control)."""
    content = message.get("content")
    if isinstance(content, str):
        return str(message.get("role")), [content]
    texts = [
        str(b["text"]) if b.get("type") == "text" else json.dumps({k: v for k, v in b.items() if k != "cache_control"})
        for b in content
    ]
    return str(message.get("role")), texts


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content)


@pytest.fixture
def editor(tmp_path: Path, model_stub: ModelStub) -> Iterator[EditorTerminal]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("# Project\nKeep functions short.\n", encoding="utf-8")
    (workspace / "app.py").write_text(APP, encoding="utf-8")
    home = tmp_path / "home"
    seed_claude_home(home, workspace)
    ed = EditorTerminal(workspace, home, env=claude_env(model_stub))
    try:
        yield ed
    finally:
        ed.stop()


def test_claude_code_in_a_neovim_terminal_sees_the_editor_and_its_diffs_round_trip(
    editor: EditorTerminal, model_stub: ModelStub, agent_figures: Any
) -> None:
    claude = ClaudeCode().binary()
    version = subprocess.run([str(claude), "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    agent_figures("claude-code", "version", version)
    ws, home = editor.workspace, editor.home

    editor.start(["app.py"])
    # Our server is on by default for Claude Code: it wrote a private lock file in this HOME and the
    # plugin put the terminal variables into vim.env.
    port = editor.wait_lua("return vim.env.CLAUDE_CODE_SSE_PORT", what="CLAUDE_CODE_SSE_PORT in vim.env")
    assert editor.lua("return vim.env.ENABLE_IDE_INTEGRATION") == "true"
    lock = home / ".claude" / "ide" / f"{port}.lock"
    assert lock.is_file(), f"no lock file at {lock}"
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    assert stat.S_IMODE(lock.parent.stat().st_mode) == 0o700
    entry = json.loads(lock.read_text(encoding="utf-8"))
    assert entry["workspaceFolders"] == [str(ws)] and entry["transport"] == "ws" and len(entry["authToken"]) >= 32

    # 1. A selection made BEFORE Claude Code starts: lines 2-3 of app.py, then `:terminal claude`
    #    typed from visual mode (the selection stays the editor's last one).
    editor.send("2GVj", enter=False)
    editor.wait_lua(
        ACTIVE_FILE_LUA + "return f and f.selectedText and f.selectedText:find('return \"hi\"', 1, true) ~= nil",
        what="the server to have the selection",
    )
    editor.send(":", enter=False)
    editor.keys("C-u")
    editor.send(f"botright split | terminal {claude} --permission-mode default")
    editor.send("i", enter=False)
    editor.wait_screen(r"Claude Code v2\.1", timeout=60)
    # Connected through the lock file and told the selection: Claude Code's footer names it.
    editor.wait_screen(r"2 lines selected", timeout=60)

    first_prompt = "What does the selected code do?"
    after = model_stub.next_seq
    editor.send(first_prompt)
    first = model_stub.wait_for(lambda r: is_prompt(r, first_prompt), timeout=60, after=after)
    editor.wait_screen(REPLY_OK, timeout=60)
    where_first, ide_first = ide_context(first, ws / "app.py")
    assert ide_first, f"no IDE context naming app.py in the first request: {first.json['messages']!r}"[:4000]
    assert ide_first.startswith(f"The user selected the lines 2 to 3 from {ws / 'app.py'}"), ide_first
    assert 'return "hi"' in ide_first, ide_first
    system_first = json.dumps(first.json["system"]).encode()
    assert str(ws / "app.py").encode() not in system_first  # the IDE context is not in the system part

    # 2. The user selects something else: it reaches the next request, no restart.
    second = move_then_prompt(
        editor,
        model_stub,
        "5GVj",
        "f.selectedText and f.selectedText:find('def bye', 1, true) ~= nil",
        "the server to have the new selection",
        "And this one?",
    )
    where_second, ide_second = ide_context(second, ws / "app.py")
    assert ide_second.startswith(f"The user selected the lines 5 to 6 from {ws / 'app.py'}"), ide_second
    assert "def bye" in ide_second, ide_second
    system_second = json.dumps(second.json["system"]).encode()
    same = common_prefix(system_first, system_second)
    agent_figures("claude-code", "IDE context lands in", f"{where_first} (1st request), {where_second} (2nd)")
    agent_figures("claude-code", "system part changed by a selection change", system_first != system_second)
    agent_figures(
        "claude-code",
        "identical system prefix",
        f"{100 * same / max(len(system_first), 1):.1f}% of {len(system_first)} B",
    )
    # The earlier turns, their IDE context included, are resent with the same text (only the
    # cache_control marker moves to the newest block): the conversation stays a cacheable prefix.
    history = len(first.json["messages"])
    assert [texts_of(m) for m in second.json["messages"][:history]] == [texts_of(m) for m in first.json["messages"]]
    agent_figures("claude-code", "earlier turns resent with the same text", True)
    agent_figures("claude-code", "IDE context of a later turn", f"its own message: {ide_second[:60]!r}…")
    agent_figures("claude-code", "first IDE context block", ide_first[:160].replace("\n", "\\n"))

    # ... and so does a bare cursor move (no selection): then it is told the open file.
    third = move_then_prompt(
        editor,
        model_stub,
        "gg",
        "f.cursor and f.cursor.line == 1 and f.selectedText == nil",
        "the server to have the cursor on line 1 without a selection",
        "Where am I?",
    )
    _, ide_third = ide_context(third, ws / "app.py", any_sentence=True)
    assert ide_third.startswith(f"The user opened the file {ws / 'app.py'} in the IDE"), ide_third
    system_third = json.dumps(third.json["system"]).encode()
    agent_figures("claude-code", "system part changed by a cursor move", system_second != system_third)

    # 3. An edit it proposes opens in Neovim; accepting it writes the file.
    accepted = ws / "accepted.py"
    wanted = "print('accepted')\n"
    reply = diff_round(editor, model_stub, accepted, wanted, decide="ContextCompanionDiffAccept")
    assert accepted.read_text(encoding="utf-8") == wanted
    assert not reply.get("is_error"), reply
    assert str(accepted) in result_text(reply)
    agent_figures("claude-code", "openDiff accept → tool_result", result_text(reply)[:80])

    # 4. ... and rejecting one leaves the disk alone and tells Claude Code.
    rejected = ws / "rejected.py"
    reply = diff_round(editor, model_stub, rejected, "print('rejected')\n", decide="ContextCompanionDiffReject")
    assert not rejected.exists()
    assert reply.get("is_error") is True, reply
    agent_figures("claude-code", "openDiff reject → tool_result", result_text(reply)[:80])


def move_then_prompt(
    editor: EditorTerminal, stub: ModelStub, keys: str, server_has: str, what: str, prompt: str
) -> Recorded:
    """From Claude Code's terminal (the lower window): leave terminal mode, ``<C-w>k`` to the file,
    type ``keys``, wait until the server's active file ``f`` satisfies ``server_has`` (a Lua
    expression), ``<C-w>j`` and ``i`` back into the terminal, send ``prompt``; returns its request."""
    editor.keys("C-\\", "C-n")
    editor.keys("C-w", "k")
    editor.send(keys, enter=False)
    editor.wait_lua(ACTIVE_FILE_LUA + f"return f and {server_has}", what=what)
    editor.keys("C-w", "j")
    editor.send("i", enter=False)
    after = stub.next_seq
    editor.send(prompt)
    return stub.wait_for(lambda r: is_prompt(r, prompt), timeout=60, after=after)


def diff_round(editor: EditorTerminal, stub: ModelStub, path: Path, content: str, decide: str) -> dict[str, Any]:
    """Makes the stub ask for a Write of ``path``; the diff must open in Neovim through our plugin;
    ``decide`` is typed there. Returns the tool_result Claude Code sends back for that call (after a
    rejection Claude Code waits for the user: it goes with the next prompt)."""
    prompt = "stub:tool Write " + json.dumps({"file_path": str(path), "content": content})
    after = stub.next_seq
    editor.send(prompt)
    call = stub.wait_for(lambda r: is_prompt(r, prompt), timeout=60, after=after)
    assert "Write" in [t.get("name") for t in call.json["tools"]]
    uri = path.as_uri()
    editor.wait_lua(
        f"return require('context_companion.gemini').diffs[{json.dumps(uri)}] ~= nil",
        timeout=60,
        what=f"the diff of {path.name} in Neovim",
    )
    shown = editor.lua(
        f"local d = require('context_companion.gemini').diffs[{json.dumps(uri)}]"
        " return table.concat(vim.api.nvim_buf_get_lines(d.proposed, 0, -1, false), '\\n')"
    )
    assert shown == content.rstrip("\n")
    told = [m["msg"] for m in editor.lua("return _G.t_msgs") if path.name in m["msg"]]
    assert told and told[-1].startswith(f"A proposed change to {path.name} ("), told
    editor.keys("Escape")
    editor.lua(
        f"local d = require('context_companion.gemini').diffs[{json.dumps(uri)}]"
        " vim.api.nvim_set_current_tabpage(d.tab)"
    )
    editor.send(f":{decide}")
    editor.wait_lua(
        f"return require('context_companion.gemini').diffs[{json.dumps(uri)}] == nil", what="the diff view to close"
    )
    # back to the terminal
    editor.lua(
        "for _, w in ipairs(vim.api.nvim_list_wins()) do"
        " if vim.bo[vim.api.nvim_win_get_buf(w)].buftype == 'terminal' then"
        " vim.api.nvim_set_current_tabpage(vim.api.nvim_win_get_tabpage(w)) vim.api.nvim_set_current_win(w) end end"
    )
    editor.send("i", enter=False)
    call_id = tool_use_id(call.seq)
    if decide.endswith("Reject"):
        editor.wait_screen(r"(?i)rejected|doesn.t want|what should claude do", timeout=60)
        editor.send("Never mind.")

    def answered(rec: Recorded) -> bool:
        return any(b.get("tool_use_id") == call_id for b in tool_results_anywhere(rec))

    answer = stub.wait_for(answered, timeout=60, after=call.seq + 1)
    return next(b for b in tool_results_anywhere(answer) if b.get("tool_use_id") == call_id)


def tool_results_anywhere(rec: Recorded) -> list[dict[str, Any]]:
    body = rec.json
    if rec.path != "/v1/messages" or not isinstance(body, dict):
        return []
    out = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            out += [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    return out
