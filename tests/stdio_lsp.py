"""The least an editor does with ``context-companion serve``: start it, send ``initialize`` over stdio,
read the answer, ask it to shut down. For tests that check an installation, not the protocol (those use
pytest-lsp: ``lsp_harness.py``)."""

from __future__ import annotations

import json
import select
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, Any


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class _Reader:
    """Framed messages from the server's stdout; bytes read past one message are kept for the next."""

    def __init__(self, proc: subprocess.Popen[bytes], deadline: float) -> None:
        assert proc.stdout is not None
        self.proc, self.stdout, self.deadline, self.buf = proc, proc.stdout, deadline, b""

    def _more(self) -> None:
        ready, _, _ = select.select([self.stdout.fileno()], [], [], max(0.0, self.deadline - time.monotonic()))
        if not ready:
            raise AssertionError("the server did not answer in time")
        chunk = self.stdout.read1(65536)  # type: ignore[attr-defined]
        if not chunk:
            raise AssertionError(f"the server closed stdout (exit status {self.proc.poll()})")
        self.buf += chunk

    def message(self) -> dict[str, Any]:
        while b"\r\n\r\n" not in self.buf:
            self._more()
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        length = next(
            int(v) for k, _, v in (h.partition(b":") for h in head.split(b"\r\n")) if k.lower() == b"content-length"
        )
        while len(rest) < length:
            self._more()
            head, _, rest = self.buf.partition(b"\r\n\r\n")
        self.buf = rest[length:]
        return json.loads(rest[:length])


def initialize(
    cmd: list[str], folder: Path, *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 60
) -> dict[str, Any]:
    """Start ``cmd`` (a ``serve`` command), initialize it with ``folder`` as the workspace, shut it
    down; the ``initialize`` result. Fails the test on a crash, an error answer or a hang."""
    with tempfile.TemporaryFile() as log:  # a pipe nobody reads could fill and stall the server
        return _initialize(cmd, folder, env, cwd, timeout, log)


def _initialize(
    cmd: list[str], folder: Path, env: dict[str, str] | None, cwd: Path | None, timeout: float, log: IO[bytes]
) -> dict[str, Any]:
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, cwd=cwd)
    assert proc.stdin is not None
    deadline = time.monotonic() + timeout
    try:
        params = {
            "processId": None,
            "rootUri": folder.as_uri(),
            "capabilities": {},
            "workspaceFolders": [{"uri": folder.as_uri(), "name": folder.name}],
        }
        proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
        proc.stdin.flush()
        reader = _Reader(proc, deadline)
        while (message := reader.message()).get("id") != 1:
            pass
        assert "result" in message, message
        proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        proc.stdin.flush()
        while reader.message().get("id") != 2:
            pass
        proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.close()
        assert proc.wait(timeout=max(1.0, deadline - time.monotonic())) == 0
        return message["result"]
    except (AssertionError, OSError, subprocess.TimeoutExpired) as exc:
        log.seek(0)
        raise AssertionError(
            f"{' '.join(cmd)}: {exc}\nits stderr:\n{log.read().decode(errors='replace')[-4000:]}"
        ) from exc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
