"""The stdio transport with inputs editors do not send: /dev/null, a file, junk."""

from __future__ import annotations

import json
import os
import subprocess

from lsp_harness import SERVER, ws_execute


def env(tmp_path):
    e = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    run = tmp_path / "run"
    run.mkdir(mode=0o700, exist_ok=True)
    e.update(
        {"HOME": str(tmp_path), "CONTEXT_COMPANION_CONFIG_DIR": str(tmp_path / "cfg"), "XDG_RUNTIME_DIR": str(run)}
    )
    return e


def test_stdin_from_dev_null_exits_cleanly(tmp_path):
    done = subprocess.run(SERVER, stdin=subprocess.DEVNULL, capture_output=True, timeout=30, env=env(tmp_path))
    assert done.returncode == 0
    assert b"Traceback" not in done.stderr and done.stdout == b""


def test_stdin_from_a_file_with_junk_exits_cleanly(tmp_path):
    junk = tmp_path / "in.txt"
    body = b'{"not": "json-rpc"}'
    junk.write_bytes(b"Content-Length: %d\r\n\r\n%s" % (len(body), body) + b"garbage without headers\r\n")
    with junk.open("rb") as fh:
        done = subprocess.run(SERVER, stdin=fh, capture_output=True, timeout=30, env=env(tmp_path))
    assert done.returncode == 0
    assert b"Traceback" not in done.stderr
    # The object is no JSON-RPC request: answered InvalidRequest with a null id, as JSON-RPC says.
    head, _, answer = done.stdout.partition(b"\r\n\r\n")
    assert head.startswith(b"Content-Length: ")
    assert json.loads(answer) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": '"jsonrpc" must be "2.0", got null'},
    }


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen, timeout: float = 20.0) -> None:
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open("/proc/net/tcp") as fh:
            if any(f":{port:04X} " in line and line.split()[3] == "0A" for line in fh):
                return
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def test_websocket_transport_answers_initialize_and_commands(tmp_path):
    import asyncio

    from websockets.asyncio.client import connect

    port = _free_port()
    token_file = tmp_path / "token"
    token_file.write_text("a-test-token-of-some-length\n")
    proc = subprocess.Popen(
        [*SERVER, "--ws", "--port", str(port), "--token-file", str(token_file)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env(tmp_path),
    )
    try:
        _wait_listening(port, proc)

        async def talk() -> tuple[dict, dict]:
            auth = {"Authorization": "Bearer a-test-token-of-some-length"}
            async with connect(f"ws://127.0.0.1:{port}", additional_headers=auth) as ws:
                return await ws_execute(ws, tmp_path, "contextCompanion.getCompressionPrompt", timeout=20)

        init, reply = asyncio.run(talk())
        assert (
            "contextCompanion.getCompressionPrompt"
            in init["result"]["capabilities"]["executeCommandProvider"]["commands"]
        )
        assert "<state_snapshot>" in reply["result"]["text"]
    finally:
        proc.kill()
        proc.wait(10)
