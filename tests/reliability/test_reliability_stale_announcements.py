"""A server killed with SIGKILL (a crash, the OOM killer, an editor restarting its language server)
leaves its announcements behind: Gemini CLI's discovery file (named after the editor's pid, which
is still alive) and Claude Code's lock file. The next server for the same workspace removes them,
and Gemini CLI's own ``IdeClient`` (gemini-cli-core, pinned in tests/gemini/node), started from a
child shell of the editor as in an editor terminal, connects to the live server every time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import node_packages
from bridge_clients import read_json
from lsp_pipe_client import SERVER

STARTED = "contextCompanion/companionStarted"
ALL_BRIDGES = {"companion": {"geminiCli": {"enabled": True}, "claudeCode": {"enabled": True}}}
NODE_DIR = Path(__file__).resolve().parent.parent / "gemini" / "node"
TRIES = 10


def _announcements(root: Path) -> dict[str, list[Path]]:
    return {
        "gemini": sorted((root / "tmp" / "gemini" / "ide").glob("gemini-ide-server-*.json")),
        "claude": sorted((root / "claude" / "ide").glob("*.lock")),
        "mcp": sorted((root / "run" / "context-companion").glob("server-*.json")),
    }


def _start(spawn: Any, ws: Path, env: dict[str, str]) -> tuple[Any, dict[str, int]]:
    proc = spawn([ws], ALL_BRIDGES, env=env, argv=[*SERVER, "--mcp-endpoint"])
    started = proc.wait_notification(STARTED, 2, timeout=30)
    ports = {k: v["port"] for note in started for k, v in note.items() if v}
    assert set(ports) == {"geminiCli", "claudeCode"}, started
    return proc, ports


def _ports(files: dict[str, list[Path]]) -> dict[str, set[int]]:
    return {
        "gemini": {read_json(p)["port"] for p in files["gemini"]},
        "claude": {int(p.stem) for p in files["claude"]},
        "mcp": {read_json(p)["port"] for p in files["mcp"]},
    }


def test_a_killed_servers_announcements_are_removed_and_gemini_cli_connects_to_the_live_one(spawn, tmp_path):
    node = node_packages.ensure(NODE_DIR, "Gemini CLI's own IDE client (@google/gemini-cli-core)")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("# Project\n", encoding="utf-8")
    for d in ("tmp", "claude", "run"):
        (tmp_path / d).mkdir(mode=0o700)
    env = {
        "TMPDIR": str(tmp_path / "tmp"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
    }

    # A server for this workspace dies without a word, as after a crash.
    dead, _ = _start(spawn, ws, env)
    assert dead.wait_for(lambda: all(_announcements(tmp_path).values()), timeout=30)
    for path in _announcements(tmp_path)["gemini"] + _announcements(tmp_path)["claude"]:
        assert read_json(path)["contextCompanion"]["serverPid"] == dead.proc.pid
    dead.kill()
    dead.proc.wait(10)
    left = _announcements(tmp_path)
    assert [len(left[k]) for k in ("gemini", "claude", "mcp")] == [1, 1, 1], left  # nothing removed them
    # More crashed servers' files, as after an editor restarted its server a few times: copies of
    # the dead server's under other ports (their port refuses too). Gemini CLI picks among
    # same-pid files by directory order, so with these it would rarely find the live one.
    for n in range(1, 4):
        gemini, lock = left["gemini"][0], left["claude"][0]
        shutil.copy2(gemini, gemini.with_name(gemini.name.rsplit("-", 1)[0] + f"-{n}.json"))
        shutil.copy2(lock, lock.with_name(f"{n}.lock"))
    dead_ports = _ports(_announcements(tmp_path))
    assert len(dead_ports["gemini"]) == 1 and len(_announcements(tmp_path)["gemini"]) == 4

    live, ports = _start(spawn, ws, env)
    assert live.wait_for(lambda: len(_announcements(tmp_path)["mcp"]) == 1, timeout=30)
    # Only the live server's announcements remain.
    now = _ports(_announcements(tmp_path))
    assert now["gemini"] == {ports["geminiCli"]}, _announcements(tmp_path)
    assert now["claude"] == {ports["claudeCode"]}, _announcements(tmp_path)
    assert len(now["mcp"]) == 1 and not (now["mcp"] & dead_ports["mcp"]), _announcements(tmp_path)
    assert not (now["gemini"] & dead_ports["gemini"]) and not (now["claude"] & dead_ports["claude"])

    # Gemini CLI's IdeClient, from a child shell of the editor (this process), TRIES times.
    node_env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_CLI_", "CONTEXT_COMPANION_"))}
    node_env.pop("TERM_PROGRAM", None)
    node_env.update(env)
    node_env["HOME"] = str(tmp_path / "home")
    # These machines have /.dockerenv: without this the CLI would dial host.docker.internal.
    node_env["SSH_CONNECTION"] = "127.0.0.1 40000 127.0.0.1 22"
    bash = shutil.which("bash")
    assert bash is not None, "bash is needed to start the client from a shell, as a terminal would"
    # `; exit $?` keeps bash alive as node's parent: the CLI looks for a shell above itself. Each of
    # the TRIES connects reads the discovery files again, as a new `gemini` would (one Node start).
    done = subprocess.run(
        [bash, "-c", f"{node} {NODE_DIR / 'connect_once.mjs'} {TRIES}; exit $?"],
        cwd=ws,
        env=node_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith('{"event"')]
    assert done.returncode == 0 and len(lines) == TRIES, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr[-3000:]}"
    results = [json.loads(line) for line in lines]
    expected = f"http://127.0.0.1:{ports['geminiCli']}/mcp"
    connected = [r for r in results if r["status"] == "connected" and r["url"] == expected]
    assert len(connected) == TRIES, results
