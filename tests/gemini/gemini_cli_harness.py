"""Context Companion as Gemini CLI's IDE companion, proven with Gemini CLI's own client code.

This script is the editor: a scripted LSP client (pygls) that starts ``context-companion serve``
over stdio, opens files, moves the cursor and answers ``contextCompanion/showDiff``. It then starts
``node node/gemini_client.mjs`` from a child shell of itself, as a terminal of the editor would,
so the CLI's walk up the process tree finds the editor. That script uses
``@google/gemini-cli-core``'s ``IdeClient`` (pinned in node/package.json) and asserts what the CLI
sees. Exit status 0 when every expectation held.

    (cd tests/gemini/node && npm ci) && python tests/gemini/gemini_cli_harness.py
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from lsprotocol import types as t
from pygls.lsp.client import LanguageClient

HERE = Path(__file__).resolve().parent
NODE_DIR = HERE / "node"
STEP_TIMEOUT = 60.0

A_TEXT = "import os\n\n\ndef main():\n    print('hello')\n"
B_TEXT = "x = 1\ny = 2\n"
EDITED = "import os\n\n\ndef main():\n    print('hello, edited by the user')\n"


def plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


class Failure(Exception):
    pass


async def run(root: Path) -> None:
    if not (NODE_DIR / "node_modules" / "@google" / "gemini-cli-core").is_dir():
        raise Failure(f"@google/gemini-cli-core is not installed: run `npm ci` in {NODE_DIR}")
    node = shutil.which("node")
    if node is None:
        raise Failure("node is not on PATH")
    workspace = root / "my proj ünï #1"  # a space, non-ASCII letters, '#': percent-encoded in every URI
    tmpdir = root / "tmp"
    home = root / "home"
    for d in (workspace, tmpdir, home):
        d.mkdir()
    (workspace / "a.py").write_text(A_TEXT)
    (workspace / "b.py").write_text(B_TEXT)
    (workspace / ".env").write_text("API_KEY=do-not-leak\n")

    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_CLI_", "CONTEXT_COMPANION_"))}
    env.pop("TERM_PROGRAM", None)
    env.update({"TMPDIR": str(tmpdir), "HOME": str(home), "CONTEXT_COMPANION_CONFIG_DIR": str(home / "cfg")})

    client = LanguageClient("harness-editor", "1")
    started: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    diffs: list[dict[str, Any]] = []
    answers = [{"outcome": "accepted", "text": EDITED}, {"outcome": "rejected"}]

    @client.feature("contextCompanion/companionStarted")
    def on_started(params: Any) -> None:
        announced = plain(params)
        if not started.done() and "geminiCli" in announced:  # Claude Code's integration has its own key
            started.set_result(announced)

    @client.feature("contextCompanion/showDiff")
    def on_show_diff(params: Any) -> dict[str, Any]:
        diffs.append(plain(params))
        return answers[len(diffs) - 1]

    @client.feature("contextCompanion/closeDiff")
    def on_close_diff(params: Any) -> None:
        return None

    await client.start_io(sys.executable, "-m", "context_companion", "serve", env=env)
    server = client._server  # drain its log so a full pipe never blocks it
    assert server is not None and server.stderr is not None
    drain = asyncio.get_running_loop().create_task(_copy(server.stderr, sys.stderr.buffer))
    node_proc: asyncio.subprocess.Process | None = None
    decoy = tmpdir / "decoy.json"
    try:
        await client.initialize_async(
            t.InitializeParams(
                capabilities=t.ClientCapabilities(),
                process_id=os.getpid(),
                client_info=t.ClientInfo(name="Neovim"),
                workspace_folders=[t.WorkspaceFolder(uri=workspace.as_uri(), name=workspace.name)],
                initialization_options={"capabilities": {"showDiff": True}},
            )
        )
        client.initialized(t.InitializedParams())
        gemini = (await asyncio.wait_for(started, STEP_TIMEOUT))["geminiCli"]
        port = gemini["port"]
        # A second "IDE" for the same folder, of a live process with a larger PID and a dead port:
        # the CLI prefers it unless it finds our file by the PID its walk up the tree yields.
        decoy = tmpdir / "gemini" / "ide" / f"gemini-ide-server-{os.getpid()}-1.json"
        decoy.write_text(
            json.dumps(
                {
                    "port": 1,
                    "workspacePath": str(workspace),
                    "authToken": "x",
                    "ideInfo": {"name": "decoy", "displayName": "Decoy"},
                }
            )
        )
        decoy.chmod(0o600)

        def open_doc(name: str, text: str) -> str:
            uri = (workspace / name).as_uri()
            client.text_document_did_open(
                t.DidOpenTextDocumentParams(t.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
            )
            return uri

        def cursor(uri: str, line: int, char: int, sel: tuple[int, int, int, int] | None = None) -> None:
            params: dict[str, Any] = {"textDocument": {"uri": uri}, "position": {"line": line, "character": char}}
            if sel is not None:
                params["selections"] = [
                    {"start": {"line": sel[0], "character": sel[1]}, "end": {"line": sel[2], "character": sel[3]}}
                ]
            client.protocol.notify("contextCompanion/didChangeCursor", params)

        b_uri = open_doc("b.py", B_TEXT)
        env_uri = open_doc(".env", "API_KEY=do-not-leak\n")
        a_uri = open_doc("a.py", A_TEXT)
        cursor(a_uri, 4, 4, (4, 4, 4, 18))  # "print('hello')" selected
        await _status(client)  # a request after the notifications: they have been handled

        expect = {
            "port": port,
            "first": [
                {
                    "path": str(workspace / "a.py"),
                    "cursor": {"line": 5, "character": 5},
                    "selectedText": "print('hello')",
                },
                {"path": str(workspace / "b.py")},
            ],
            "moved": {"path": str(workspace / "b.py"), "cursor": {"line": 2, "character": 3}},
            "diff": {"path": str(workspace / "a.py"), "proposed": A_TEXT + "main()\n", "edited": EDITED},
        }
        node_env = {
            **env,
            # These machines have /.dockerenv: without this the CLI would dial host.docker.internal.
            "SSH_CONNECTION": "127.0.0.1 40000 127.0.0.1 22",
            "HARNESS_EXPECT": json.dumps(expect),
        }
        script = NODE_DIR / "gemini_client.mjs"
        # `; exit $?` keeps bash alive as the node's parent: the CLI looks for a shell above itself.
        node_proc = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            f"{node} {script}; exit $?",
            cwd=workspace,
            env=node_env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        events = _Events(node_proc)

        await events.expect("connected")
        status = await _status(client)
        if status["connectedClients"] != 1:
            raise Failure(f"companionStatus while the CLI is connected: {status}")
        await events.expect("context")
        await events.expect("move")
        cursor(env_uri, 0, 3)
        await asyncio.sleep(0.2)  # past the debounce: the CLI is told about this state too
        cursor(b_uri, 1, 2)
        events.go()
        await events.expect("moved")
        await events.expect("diffAccepted")
        await events.expect("diffRejected")
        await events.expect("refused")
        done = await events.expect("done")
        code = await asyncio.wait_for(node_proc.wait(), STEP_TIMEOUT)
        if code != 0:
            raise Failure(f"the Gemini CLI client exited with {code}")
        if [d["uri"] for d in diffs] != [a_uri, a_uri] or diffs[0]["newText"] != expect["diff"]["proposed"]:
            raise Failure(f"unexpected showDiff requests: {diffs}")
        print(f"ok: Gemini CLI client connected on port {port}, {done['updates']} context updates, diffs {len(diffs)}")
    finally:
        if node_proc is not None and node_proc.returncode is None:
            node_proc.kill()
        try:
            await asyncio.wait_for(client.shutdown_async(None), 10)
            client.exit(None)
        except Exception:
            pass
        await client.stop()
        drain.cancel()
    leftovers = [p for p in (tmpdir / "gemini" / "ide").glob("*.json") if p.name != decoy.name]
    if leftovers:
        raise Failure(f"discovery files left after shutdown: {leftovers}")


async def _status(client: LanguageClient) -> dict[str, Any]:
    result = await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command="contextCompanion.companionStatus", arguments=[])
    )
    status: dict[str, Any] = plain(result)["geminiCli"]
    return status


async def _copy(reader: asyncio.StreamReader, out: Any) -> None:
    while line := await reader.readline():
        out.write(line)
        out.flush()


class _Events:
    """The node client's JSON lines."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc

    async def expect(self, name: str) -> dict[str, Any]:
        assert self._proc.stdout is not None
        while True:
            line = await asyncio.wait_for(self._proc.stdout.readline(), STEP_TIMEOUT)
            if not line:
                code = await self._proc.wait()
                raise Failure(f"the Gemini CLI client ended (exit {code}) before {name!r} (its stderr is above)")
            if line.startswith(b'{"event"'):
                break
            sys.stderr.write(f"  [node] {line.decode(errors='replace').rstrip()}\n")  # the library's own output
        event: dict[str, Any] = json.loads(line)
        if event.get("event") != name:
            raise Failure(f"expected {name!r} from the Gemini CLI client, got {event}")
        print(f"  {name}", flush=True)
        return event

    def go(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(b'{"go": true}\n')


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="cc-gemini-") as root:
        try:
            asyncio.run(run(Path(root)))
        except Failure as exc:
            print(f"FAILED: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
