"""`context-companion setup --agent ...`, run as a user runs it: which file, what it holds after,
and what it never does (lose a key, a hook, a comment or the user's layout, hang on a FIFO, write
a file its agent cannot read, write outside, leave a file behind that `--remove` should take)."""

from __future__ import annotations

import difflib
import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import setup_cli
from context_companion.agents import registry
from hostile_repo import plant_hostile

BIN = Path(sys.executable).parent
EXE = str(BIN / "context-companion")
PLAIN_PATH = "/usr/local/bin:/usr/bin:/bin"  # a PATH without this installation's context-companion


def run(*args: str, env: dict[str, str], executable: str = sys.executable) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXT_COMPANION_", "CLAUDE_", "CODEX_"))}
    full.update(env)
    return subprocess.run(
        [executable, "-m", "context_companion", *args], capture_output=True, text=True, env=full, timeout=30
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return setup_cli.user_env(tmp_path)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "my project"
    folder.mkdir()
    return folder


def ours(agent: str, command: str | None = None) -> dict[str, Any]:
    return {"hooks": [{"type": "command", "command": command or f"{EXE} hook --agent {agent}"}]}


def _run_as_the_agent(command: str, ws: Path, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The hook command setup wrote, run as an agent runs it (``sh -c``) on a prompt in ``ws``."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    hook_input = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": str(ws)})
    return subprocess.run(
        ["sh", "-c", command],
        input=hook_input,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env, "XDG_RUNTIME_DIR": str(runtime)},
        cwd=ws,  # the agent runs its hooks in the project
    )


def setup(ws: Path, env: dict[str, str], agent: str, *more: str) -> subprocess.CompletedProcess[str]:
    return run("setup", "--agent", agent, "--workspace", str(ws), *more, env=env)


def test_claude_code_project_setup_merges_idempotently_and_keeps_the_mode(ws: Path, env: dict[str, str]) -> None:
    settings = ws / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    user_hook = {"matcher": "", "hooks": [{"type": "command", "command": "echo mine"}]}
    settings.write_text(
        json.dumps({"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"UserPromptSubmit": [user_hook]}})
    )
    settings.chmod(0o640)
    original = settings.read_bytes()

    out = setup(ws, env, "claude-code")
    assert out.returncode == 0, out.stderr
    assert out.stdout == (
        f"Claude Code: added the hooks SessionStart, UserPromptSubmit to {settings} "
        f"(command: {EXE} hook --agent claude-code); the file is personal (it names paths of this machine), not for "
        "committing\n"
    )  # Claude Code's project file is not committed: no note about teammates, one line
    data = json.loads(settings.read_text())
    assert data == {
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {"UserPromptSubmit": [user_hook, ours("claude-code")], "SessionStart": [ours("claude-code")]},
    }
    assert "\n" not in settings.read_text()  # the user's one-line file stays one line
    assert stat.S_IMODE(settings.stat().st_mode) == 0o640
    before, mtime = settings.read_bytes(), settings.stat().st_mtime_ns

    again = setup(ws, env, "claude-code")
    assert again.returncode == 0 and "nothing changed" in again.stdout
    assert settings.read_bytes() == before and settings.stat().st_mtime_ns == mtime  # not even rewritten

    removed = setup(ws, env, "claude-code", "--remove")
    assert removed.returncode == 0 and removed.stdout.startswith("Claude Code: removed the hooks")
    assert settings.read_bytes() == original
    assert stat.S_IMODE(settings.stat().st_mode) == 0o640
    nothing = setup(ws, env, "claude-code", "--remove")
    assert "no Context Companion hooks in" in nothing.stdout


GEMINI_SETTINGS = """{
  // Gemini CLI reads comments in its settings.
  "ui": {"theme": "Dracula"},

  /* which memory files it loads */
  "context": {
    "fileName": ["AGENTS.md", "GEMINI.md"]
  },
  "hooks": {
    "BeforeAgent": [
      {"hooks": [{"type": "command", "command": "./scripts/lint-prompt.sh"}]} // the team's own
    ]
  }
}
"""


def test_gemini_settings_keep_their_comments_and_layout_and_come_back_byte_for_byte(
    ws: Path, env: dict[str, str]
) -> None:
    settings = ws / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(GEMINI_SETTINGS)

    dry = setup(ws, env, "gemini-cli", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert settings.read_text() == GEMINI_SETTINGS  # --dry-run writes nothing

    out = setup(ws, env, "gemini-cli")
    assert out.returncode == 0, out.stderr
    text = settings.read_text()
    change = difflib.unified_diff(
        GEMINI_SETTINGS.splitlines(keepends=True),
        text.splitlines(keepends=True),
        str(settings),
        f"{settings} (after setup)",
    )
    assert dry.stdout.startswith("".join(change))  # the dry run showed exactly this change
    changed = [line for line in dry.stdout.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert changed == [
        '-      {"hooks": [{"type": "command", "command": "./scripts/lint-prompt.sh"}]} // the team\'s own'
    ]
    assert '      {"hooks": [{"type": "command", "command": "./scripts/lint-prompt.sh"}]}, // the team\'s own\n' in text
    assert text.startswith(GEMINI_SETTINGS.split('"hooks"')[0])  # nothing before our part moved
    assert f'            "command": "{EXE} hook --agent gemini-cli"\n' in text  # indented like the file

    assert setup(ws, env, "gemini-cli", "--remove").returncode == 0
    assert settings.read_text() == GEMINI_SETTINGS


def test_dry_run_prints_the_change_and_writes_nothing(ws: Path, env: dict[str, str]) -> None:
    out = setup(ws, env, "gemini-cli", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert f"+++ {ws}/.gemini/settings.json (after setup)" in out.stdout
    assert '+    "BeforeAgent": [' in out.stdout and '+    "SessionStart": [' in out.stdout
    assert out.stdout.splitlines()[-2].startswith("Gemini CLI: would add the hooks SessionStart, BeforeAgent to")
    assert out.stdout.splitlines()[-1].startswith("Note: ")
    assert not (ws / ".gemini").exists()


def test_a_file_setup_created_goes_with_remove_and_one_that_held_braces_gets_them_back(
    ws: Path, env: dict[str, str], tmp_path: Path
) -> None:
    assert setup(ws, env, "gemini-cli").returncode == 0
    assert (ws / ".gemini" / "settings.json").is_file()
    gone = setup(ws, env, "gemini-cli", "--remove")
    assert gone.returncode == 0, gone.stderr
    assert "the file is deleted (setup had created it), and so is the empty folder" in gone.stdout
    assert not (ws / ".gemini").exists()  # no 0-byte file that would stop Gemini CLI, no empty folder

    codex = ws / ".codex" / "hooks.json"
    codex.parent.mkdir()
    codex.write_text("{}")
    assert setup(ws, env, "codex").returncode == 0
    assert json.loads(codex.read_text())["hooks"]["UserPromptSubmit"] == [ours("codex")]
    assert setup(ws, env, "codex", "--remove").returncode == 0
    assert codex.read_bytes() == b"{}"

    # A blank file (which Gemini CLI refuses to start on): setup fills it, --remove takes it away.
    blank = ws / ".gemini" / "settings.json"
    blank.parent.mkdir()
    blank.write_text("")
    assert setup(ws, env, "gemini-cli").returncode == 0
    assert setup(ws, env, "gemini-cli", "--remove").returncode == 0
    assert not blank.exists() and blank.parent.is_dir()  # the folder was there before

    # No record (another machine, a cleared state folder): a file holding only our hooks goes.
    assert setup(ws, env, "gemini-cli").returncode == 0
    elsewhere = {**env, "XDG_STATE_HOME": str(tmp_path / "other state")}
    out = setup(ws, elsewhere, "gemini-cli", "--remove")
    assert "it held nothing but these hooks" in out.stdout and not blank.exists()


def test_a_wrapper_around_our_command_is_the_users_and_is_never_touched(ws: Path, env: dict[str, str]) -> None:
    settings = ws / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    wrapper = "my-wrapper.sh && context-companion hook --agent claude-code | tee log"
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [ours("claude-code", wrapper)]}}, indent=2))
    original = settings.read_bytes()

    assert setup(ws, env, "claude-code").returncode == 0
    prompts = json.loads(settings.read_text())["hooks"]["UserPromptSubmit"]
    assert prompts == [ours("claude-code", wrapper), ours("claude-code")]
    removed = setup(ws, env, "claude-code", "--remove")
    assert removed.returncode == 0 and settings.read_bytes() == original

    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [ours("claude-code", wrapper)]}}))
    assert "no Context Companion hooks in" in setup(ws, env, "claude-code", "--remove").stdout


def test_every_form_setup_wrote_is_recognised_and_brought_to_the_portable_one(ws: Path, env: dict[str, str]) -> None:
    settings = ws / ".gemini" / "settings.json"
    settings.parent.mkdir()
    old_absolute = "'/opt/old tools/bin/context-companion' hook --agent gemini-cli"
    old_module = "/usr/bin/python3.11 -m context_companion hook --agent gemini-cli"
    other_agent = "context-companion hook --agent codex"  # not ours here: Gemini's file, Codex's hook
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "BeforeAgent": [ours("gemini-cli", old_absolute), ours("gemini-cli", old_module)],
                    "SessionStart": [ours("gemini-cli", other_agent)],
                }
            },
            indent=4,
        )
    )
    on_path = {**env, "PATH": f"{BIN}:{PLAIN_PATH}"}
    out = setup(ws, on_path, "gemini-cli")
    assert out.returncode == 0, out.stderr
    assert out.stdout == (
        f"Gemini CLI: updated the hooks SessionStart, BeforeAgent in {settings} "
        "(command: context-companion hook --agent gemini-cli)\n"
    )  # the bare command works on a teammate's machine: no note
    bare = ours("gemini-cli", "context-companion hook --agent gemini-cli")
    assert json.loads(settings.read_text()) == {
        "hooks": {"BeforeAgent": [bare], "SessionStart": [ours("gemini-cli", other_agent), bare]}
    }
    assert '\n        "BeforeAgent": [\n' in settings.read_text()  # its four-space indent kept

    assert setup(ws, on_path, "gemini-cli", "--remove").returncode == 0
    assert json.loads(settings.read_text()) == {"hooks": {"SessionStart": [ours("gemini-cli", other_agent)]}}


def test_a_machine_path_in_a_committed_file_is_said_in_one_line_naming_user(ws: Path, env: dict[str, str]) -> None:
    out = setup(ws, env, "codex")
    assert out.returncode == 0, out.stderr
    notes = [line for line in out.stdout.splitlines() if line.startswith("Note: ")]
    assert notes == [
        f"Note: {ws}/.codex/hooks.json now names {EXE}, a path on this machine that teammates may not have if the "
        "file is committed; `setup --agent codex --user` keeps the hooks out of the project (or put "
        "context-companion on PATH and run setup again)."
    ]
    user = run("setup", "--agent", "codex", "--user", env=env)
    assert user.returncode == 0 and "Note: " not in user.stdout


def test_codex_says_the_user_will_review_the_hooks_and_honours_codex_home(tmp_path: Path, env: dict[str, str]) -> None:
    codex_home = tmp_path / "codex home"
    dry = run("setup", "--agent", "codex", "--user", "--dry-run", env={**env, "CODEX_HOME": str(codex_home)})
    assert 'Codex will ask "Hooks need review"' in dry.stdout and not codex_home.exists()
    out = run("setup", "--agent", "codex", "--user", env={**env, "CODEX_HOME": str(codex_home)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1].startswith('Codex will ask "Hooks need review"')
    data = json.loads((codex_home / "hooks.json").read_text())
    assert data == {"hooks": {"SessionStart": [ours("codex")], "UserPromptSubmit": [ours("codex")]}}
    assert "trusted_hash" not in out.stdout and not (codex_home / "config.toml").exists()
    gone = run("setup", "--agent", "codex", "--user", "--remove", env={**env, "CODEX_HOME": str(codex_home)})
    assert gone.returncode == 0 and not codex_home.exists()  # setup made the folder: it goes, being empty


def test_user_settings_follow_claude_config_dir_and_home(tmp_path: Path, env: dict[str, str]) -> None:
    moved = tmp_path / "claude-config"
    assert (
        run("setup", "--agent", "claude-code", "--user", env={**env, "CLAUDE_CONFIG_DIR": str(moved)}).returncode == 0
    )
    assert "UserPromptSubmit" in json.loads((moved / "settings.json").read_text())["hooks"]
    assert run("setup", "--agent", "gemini-cli", "--user", env=env).returncode == 0
    gemini = json.loads((Path(env["HOME"]) / ".gemini" / "settings.json").read_text())
    assert gemini == {"hooks": {"SessionStart": [ours("gemini-cli")], "BeforeAgent": [ours("gemini-cli")]}}


@pytest.mark.parametrize(
    ("agent", "file", "content", "reason"),
    [
        ("gemini-cli", ".gemini/settings.json", '{"hooks": []}', '"hooks" is not an object'),
        ("gemini-cli", ".gemini/settings.json", "[1, 2]", "not a JSON object"),
        (
            "gemini-cli",
            ".gemini/settings.json",
            '{"hooks": {"BeforeAgent": {"a": 1}}}',
            '"hooks.BeforeAgent" is not a list',
        ),
        (
            "gemini-cli",
            ".gemini/settings.json",
            '{\n  "ui": {},\n}\n',
            "line 2, column 11: a trailing comma before '}' (Gemini CLI 0.61 reads comments here but stops at start "
            "on a trailing comma)",
        ),
        (
            "codex",
            ".codex/hooks.json",
            '{\n  // mine\n  "hooks": {}\n}',
            "line 2, column 3: a comment, which plain JSON does not allow (Codex reads this file as plain JSON)",
        ),
        (
            "claude-code",
            ".claude/settings.local.json",
            '{"cleanupPeriodDays": 1e400}',
            "line 1, column 23: the number 1e400 is out of range (JavaScript reads it as Infinity)",
        ),
        (
            "claude-code",
            ".claude/settings.local.json",
            '{"env": {"NAME": "\\ud800"}}',
            "line 1, column 18: a lone surrogate \\ud800 in a string (not Unicode text)",
        ),
        (
            "codex",
            ".codex/hooks.json",
            '{"hooks": {}, "hooks": {"UserPromptSubmit": []}}',
            'the key "hooks" appears twice at the top level (readers disagree on which one counts: keep one)',
        ),
        ("codex", ".codex/hooks.json", b'{"a": "\xff"}', "not UTF-8 text (a bad byte at offset 7)"),
        ("codex", ".codex/hooks.json", "\ufeff{}".encode(), "starts with a byte order mark"),
    ],
)
def test_a_file_it_cannot_edit_is_refused_in_one_line_and_left_untouched(
    ws: Path, env: dict[str, str], agent: str, file: str, content: str | bytes, reason: str
) -> None:
    settings = ws / file
    settings.parent.mkdir()
    data = content if isinstance(content, bytes) else content.encode()
    settings.write_bytes(data)
    for extra in ((), ("--remove",)):
        out = setup(ws, env, agent, *extra)
        assert out.returncode == 2 and out.stdout == ""
        assert len(out.stderr.splitlines()) == 1 and out.stderr.startswith(f"context-companion: {settings}: ")
        assert reason in out.stderr and out.stderr.rstrip().endswith("; left untouched"), out.stderr
        assert settings.read_bytes() == data


def test_a_fifo_or_socket_as_the_settings_file_is_refused_at_once(ws: Path, env: dict[str, str]) -> None:
    settings = ws / ".gemini" / "settings.json"
    settings.parent.mkdir()
    os.mkfifo(settings)
    for extra in ((), ("--remove",), ("--dry-run",)):
        out = setup(ws, env, "gemini-cli", *extra)  # with no writer on the FIFO, a plain open would hang
        assert out.returncode == 2 and out.stdout == ""
        assert (
            out.stderr == f"context-companion: {settings}: a FIFO (named pipe), not a settings file; left untouched\n"
        )
    assert stat.S_ISFIFO(settings.lstat().st_mode) and os.listdir(settings.parent) == ["settings.json"]

    codex = ws / ".codex" / "hooks.json"
    codex.parent.mkdir()
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(codex))
        out = setup(ws, env, "codex")
    assert out.returncode == 2 and "a socket, not a settings file; left untouched" in out.stderr
    assert stat.S_ISSOCK(codex.lstat().st_mode)


def test_dry_run_on_a_file_it_cannot_edit_shows_what_to_add_by_hand(ws: Path, env: dict[str, str]) -> None:
    settings = ws / ".codex" / "hooks.json"
    settings.parent.mkdir()
    settings.write_text('{ /* mine */ "hooks": {} }\n')
    out = setup(ws, env, "codex", "--dry-run")
    assert out.returncode == 2 and "a comment" in out.stderr
    assert out.stdout.startswith(f"# {settings} cannot be merged automatically; add by hand:\n")
    assert json.loads(out.stdout.split("\n", 1)[1]) == {
        "hooks": {"SessionStart": [ours("codex")], "UserPromptSubmit": [ours("codex")]}
    }


def test_never_writes_through_a_symlink_out_of_the_project(ws: Path, tmp_path: Path, env: dict[str, str]) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (ws / ".claude").symlink_to(outside, target_is_directory=True)
    out = setup(ws, env, "claude-code")
    assert out.returncode == 2 and "refused to write" in out.stderr and len(out.stderr.splitlines()) == 1
    assert list(outside.iterdir()) == []

    (outside / "settings.json").write_text("{}")
    (ws / ".gemini").mkdir()
    (ws / ".gemini" / "settings.json").symlink_to(outside / "settings.json")
    out = setup(ws, env, "gemini-cli")
    assert out.returncode == 2 and "refused to write" in out.stderr
    assert (outside / "settings.json").read_text() == "{}"


def test_a_symlinked_settings_file_inside_the_project_is_edited_where_it_points(ws: Path, env: dict[str, str]) -> None:
    shared = ws / "config" / "gemini.json"
    shared.parent.mkdir()
    shared.write_text('{\n  "ui": {}\n}\n')
    (ws / ".gemini").mkdir()
    (ws / ".gemini" / "settings.json").symlink_to(Path("..") / "config" / "gemini.json")
    assert setup(ws, env, "gemini-cli").returncode == 0
    assert (ws / ".gemini" / "settings.json").is_symlink()
    assert json.loads(shared.read_text())["hooks"]["BeforeAgent"] == [ours("gemini-cli")]
    assert setup(ws, env, "gemini-cli", "--remove").returncode == 0
    assert shared.read_text() == '{\n  "ui": {}\n}\n' and (ws / ".gemini" / "settings.json").is_symlink()


def test_the_command_written_runs_from_a_folder_with_spaces(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    """An install in a path with spaces: the command is quoted so the agent's shell runs it."""
    venv = tmp_path / "my tools"
    venv.symlink_to(Path(sys.prefix), target_is_directory=True)  # the same virtualenv, seen through a path with a space
    tools = venv / "bin"
    out = run("setup", "--agent", "claude-code", "--workspace", str(ws), env=env, executable=str(tools / "python"))
    assert out.returncode == 0, out.stderr
    command = json.loads((ws / ".claude" / "settings.local.json").read_text())["hooks"]["UserPromptSubmit"][0]["hooks"][
        0
    ]["command"]
    assert command == f"'{tools}/context-companion' hook --agent claude-code"
    (ws / ".cursorrules").write_text("Spaces are fine.\n")  # a file Claude Code does not read itself
    ran = _run_as_the_agent(command, ws, tmp_path, env)
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr
    assert "Spaces are fine." in json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]


def test_the_bare_command_runs_where_context_companion_is_on_path(
    tmp_path: Path, ws: Path, env: dict[str, str]
) -> None:
    on_path = {**env, "PATH": f"{BIN}:{PLAIN_PATH}"}
    out = setup(ws, on_path, "codex")
    assert out.returncode == 0 and "Note: " not in out.stdout, out.stdout
    command = json.loads((ws / ".codex" / "hooks.json").read_text())["hooks"]["UserPromptSubmit"][0]["hooks"][0][
        "command"
    ]
    assert command == "context-companion hook --agent codex"
    (ws / ".cursorrules").write_text("On PATH.\n")
    ran = _run_as_the_agent(command, ws, tmp_path, on_path)
    assert ran.returncode == 0 and "On PATH." in json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize(
    ("args", "file"),
    [((), ".claude/settings.local.json"), (("--user",), "home/.claude/settings.json")],
    ids=["claude project (not committed)", "claude user"],
)
def test_a_file_of_this_machine_only_names_the_absolute_program_even_when_path_finds_it(
    tmp_path: Path, ws: Path, env: dict[str, str], args: tuple[str, ...], file: str
) -> None:
    """The bare name is for files teams commit; a file no teammate reads (Claude Code's settings.local.json, a
    user settings file) names the program itself: an agent may run its hooks with another PATH than this shell's
    (VS Code 1.139's agent runs Claude Code's hooks with a login shell's PATH, where the bare name failed, 127)."""
    on_path = {**env, "PATH": f"{BIN}:{PLAIN_PATH}"}
    out = setup(ws, on_path, "claude-code", *args)
    assert out.returncode == 0 and "Note: " not in out.stdout, out.stdout
    where = (ws / file) if not args else (tmp_path / file)
    hooks = json.loads(where.read_text())["hooks"]
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["command"] == f"{EXE} hook --agent claude-code"


@pytest.mark.parametrize(
    ("short", "agent", "file"),
    [("claude", "claude-code", ".claude/settings.local.json"), ("Gemini", "gemini-cli", ".gemini/settings.json")],
)
def test_the_short_names_users_type_set_up_the_agent_by_its_id(
    ws: Path, env: dict[str, str], short: str, agent: str, file: str
) -> None:
    """`--agent claude` was refused; it now means claude-code, and the hook written names the id."""
    out = setup(ws, env, short)
    assert out.returncode == 0, out.stderr
    assert f"{EXE} hook --agent {agent}" in (ws / file).read_text()
    bad = setup(ws, env, "vim")
    assert bad.returncode == 2 and "claude-code" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_an_agent_whose_hooks_are_flat_is_one_more_entry_in_the_table() -> None:
    """The next agents (GitHub Copilot CLI's `.github/hooks/*.json`: `{"version": 1, "hooks": {"userPromptSubmitted":
    [{"type": "command", "bash": ...}]}}`) differ only in data: the same merge and removal serve them."""
    from context_companion.agents.model import SettingsHooks
    from context_companion.setup.command import jsonc, merged, removed

    flat = SettingsHooks(
        "copilot-cli",
        "GitHub Copilot CLI",
        ("sessionStart", "userPromptSubmitted"),
        ".github/hooks/context-companion.json",
        None,
        ".copilot",
        "hooks.json",
        comments=False,
        shared=True,
        reads="Copilot CLI reads this file as plain JSON",
        grouped=False,
        command_key="bash",
        handler_fields=(("type", "command"), ("timeoutSec", 10)),
        file_fields=(("version", 1),),
    )
    command = "context-companion hook --agent copilot-cli"
    path = Path("hooks.json")
    mine = {"type": "command", "bash": "./notify.sh"}
    text = json.dumps({"version": 1, "hooks": {"userPromptSubmitted": [mine]}}, indent=2) + "\n"
    done = merged(path, flat, text, command)
    ours_entry = {"type": "command", "timeoutSec": 10, "bash": command}
    assert jsonc.parse(done).root.python() == {
        "version": 1,
        "hooks": {"userPromptSubmitted": [mine, ours_entry], "sessionStart": [ours_entry]},
    }
    assert merged(path, flat, done, command) == done
    assert removed(path, flat, done) == text


def test_remove_without_an_agent_takes_out_every_agents_hooks_set_up_here(ws: Path, env: dict[str, str]) -> None:
    nothing = run("setup", "--remove", "--workspace", str(ws), env=env)
    assert nothing.returncode == 0, nothing.stderr
    assert nothing.stdout == (
        f"No agent's Context Companion hooks are set up in {ws} (none of {', '.join(registry.HOOK_AGENTS)}); "
        "nothing changed\n"
    )
    for agent in ("claude", "copilot", "opencode"):
        assert setup(ws, env, agent).returncode == 0
    (ws / ".gemini").mkdir()
    (ws / ".gemini" / "settings.json").write_text('{"theme": "dark"}\n')  # the user's, no hooks of ours

    out = run("setup", "--remove", "--workspace", str(ws), env=env)
    assert out.returncode == 0, out.stderr
    assert [line.split(" ", 3)[:3] for line in out.stdout.splitlines()] == [
        ["Claude", "Code:", "removed"],
        ["GitHub", "Copilot", "CLI:"],
        ["OpenCode:", "deleted", "the"],
    ]
    assert out.stdout.splitlines()[1].endswith(
        f"the file is deleted (setup had created it), and so are the empty folders {ws}/.github/hooks and {ws}/.github"
    )
    assert sorted(p.name for p in ws.iterdir()) == [".gemini"]
    assert (ws / ".gemini" / "settings.json").read_text() == '{"theme": "dark"}\n'


def test_remove_without_an_agent_reads_every_file_before_it_changes_one(ws: Path, env: dict[str, str]) -> None:
    assert setup(ws, env, "claude-code").returncode == 0
    (ws / ".codex").mkdir()
    (ws / ".codex" / "hooks.json").write_text('{"hooks": {}, // no comments in plain JSON\n}\n')
    out = run("setup", "--remove", "--workspace", str(ws), env=env)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith(f"context-companion: {ws}/.codex/hooks.json: ") and len(out.stderr.splitlines()) == 1
    assert (ws / ".claude" / "settings.local.json").is_file()


def _git(ws: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=ws, env=full, capture_output=True, text=True, timeout=30)


def test_claude_codes_personal_file_is_kept_out_of_git_as_claude_code_does(ws: Path, env: dict[str, str]) -> None:
    """Claude Code appends ``**/.claude/settings.local.json`` to git's global ignore file when it creates the file in
    a repository that does not ignore it; setup says the file is personal and does the same, keeping what is there."""
    ignore = Path(env["HOME"]) / ".config" / "git" / "ignore"
    out = setup(ws, env, "claude")  # not a git repository: said personal, nothing written outside
    assert out.returncode == 0, out.stderr
    assert out.stdout.endswith(
        "(command: ...)".replace("...", f"{EXE} hook --agent claude-code")
        + "; the file is personal (it names paths of this machine), not for committing\n"
    )
    assert len(out.stdout.splitlines()) == 1 and not ignore.exists()

    assert _git(ws, env, "init", "-q").returncode == 0
    ignore.parent.mkdir(parents=True)
    ignore.write_text("*.swp")  # the user's, no newline at the end
    dry = setup(ws, env, "claude", "--dry-run")
    assert dry.stdout.splitlines()[-1].endswith(
        f"would add **/.claude/settings.local.json to git's global ignore file {ignore}, as Claude Code does"
    )
    assert ignore.read_text() == "*.swp"
    out = setup(ws, env, "claude")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        f"Claude Code: already set up (SessionStart, UserPromptSubmit) in {ws}/.claude/settings.local.json; nothing "
        "changed; the file is personal (it names paths of this machine): added "
        f"**/.claude/settings.local.json to git's global ignore file {ignore}, as Claude Code does: git leaves it out "
        "of every repository"
    ]
    assert ignore.read_text() == "*.swp\n**/.claude/settings.local.json\n"
    assert _git(ws, env, "status", "--porcelain", "--untracked-files=all").stdout == ""
    again = setup(ws, env, "claude")
    assert again.stdout.endswith(
        "nothing changed; the file is personal (it names paths of this machine), not for committing\n"
    )
    assert ignore.read_text() == "*.swp\n**/.claude/settings.local.json\n"


def test_claude_codes_personal_file_goes_where_core_excludesfile_says(ws: Path, env: dict[str, str]) -> None:
    assert _git(ws, env, "init", "-q").returncode == 0
    home = Path(env["HOME"])
    (home / ".gitconfig").write_text("[core]\n\texcludesFile = ~/my ignores\n")
    assert setup(ws, env, "claude-code").returncode == 0
    assert (home / "my ignores").read_text() == "**/.claude/settings.local.json\n"
    assert not (home / ".config" / "git").exists()


def test_setup_runs_no_git_in_a_repository_whose_config_names_commands(
    ws: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """A cloned repository's ``.git/config`` may name commands git runs on index reads (``core.fsmonitor``): setup
    keeps Claude Code's personal file out of git by reading the ignore chain and the index itself, running no git."""
    assert _git(ws, env, "init", "-q").returncode == 0
    marker = tmp_path / "fsmonitor-ran"
    with (ws / ".git" / "config").open("a") as config:
        config.write(f"[core]\n\tfsmonitor = touch '{marker}'; false\n")
    assert setup(ws, env, "claude-code").returncode == 0
    ignore = Path(env["HOME"]) / ".config" / "git" / "ignore"
    assert ignore.read_text() == "**/.claude/settings.local.json\n"
    assert not marker.exists()


def test_a_tracked_personal_file_is_named_with_the_command_that_untracks_it(ws: Path, env: dict[str, str]) -> None:
    assert _git(ws, env, "init", "-q").returncode == 0
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.local.json").write_text("{}\n")
    assert _git(ws, env, "add", ".claude/settings.local.json").returncode == 0
    out = setup(ws, env, "claude-code")
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip("\n").endswith(
        ".claude/settings.local.json is tracked by git here, so no ignore rule keeps it out: "
        "`git rm --cached .claude/settings.local.json`"
    )
    assert not (Path(env["HOME"]) / ".config" / "git" / "ignore").exists()


def bare_environment(tmp_path: Path) -> Path:
    """This virtualenv seen through another folder whose ``bin`` holds only ``python``: an install without
    the ``context-companion`` script beside its interpreter, so setup writes the Python fallback."""
    env = tmp_path / "bare env"
    (env / "bin").mkdir(parents=True)
    if sys.prefix != sys.base_prefix:  # a virtualenv: the copy reads its pyvenv.cfg and site-packages
        (env / "pyvenv.cfg").write_text((Path(sys.prefix) / "pyvenv.cfg").read_text())
        for lib in ("lib", "lib64"):
            if (Path(sys.prefix) / lib).exists():
                (env / lib).symlink_to(Path(sys.prefix) / lib, target_is_directory=True)
    # (else a plain installation: Python follows the link to its own prefix and finds the package there)
    (env / "bin" / "python").symlink_to(sys.executable)
    return env / "bin" / "python"


def test_the_planted_package_runs_when_python_imports_from_the_project(tmp_path: Path, ws: Path) -> None:
    """The attack the hook command must not fall for: ``python -m context_companion`` in the project runs the
    project's own ``context_companion/``."""
    plant_hostile(ws, tmp_path / "markers")
    ran = subprocess.run([sys.executable, "-m", "context_companion", "--help"], cwd=ws, capture_output=True, timeout=60)
    assert ran.returncode == 7 and (tmp_path / "markers" / "context_companion___init__.py").exists()


@pytest.mark.parametrize("form", ["script", "python"])
def test_the_hook_command_never_runs_the_projects_python_files(
    tmp_path: Path, ws: Path, env: dict[str, str], form: str
) -> None:
    """setup's hook command, run as the agent runs it (in the project), runs the installed package, whether
    it names the ``context-companion`` script or (no script beside the interpreter) the interpreter itself;
    nothing of the project's ``context_companion/``, ``pydantic/``, ``sitecustomize.py`` or
    ``usercustomize.py`` runs."""
    markers = tmp_path / "markers"
    plant_hostile(ws, markers)
    python = sys.executable if form == "script" else str(bare_environment(tmp_path))
    out = run("setup", "--agent", "claude-code", "--workspace", str(ws), env=env, executable=python)
    assert out.returncode == 0, out.stderr
    command = json.loads((ws / ".claude" / "settings.local.json").read_text())["hooks"]["UserPromptSubmit"][0]["hooks"][
        0
    ]["command"]
    if form == "script":
        assert command == f"{EXE} hook --agent claude-code"
    else:
        assert command.startswith(f"'{python}' -c ") and "-m context_companion" not in command
    (ws / ".cursorrules").write_text("The real package answered.\n")
    ran = _run_as_the_agent(command, ws, tmp_path, env)
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr
    assert "The real package answered." in json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
    assert sorted(p.name for p in markers.iterdir()) == []
    assert setup(ws, env, "claude-code", "--remove").returncode == 0  # the form written is recognised as ours
    assert not (ws / ".claude" / "settings.local.json").exists()  # setup created it, --remove takes it away
