"""`context-companion hook --agent AGENT` run as an agent runs it: the hook input on stdin, the
environment without CONTEXT_COMPANION_* variables (plus ``env``). Shared by the hook tests."""

from __future__ import annotations

import os
import subprocess
import sys


def run_hook(agent: str, data: bytes, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "context_companion", "hook", "--agent", agent],
        input=data,
        capture_output=True,
        env=full,
        timeout=60,
    )


def connect(endpoint: int | dict, timeout: float = 10):  # type: ignore[no-untyped-def]
    """A connection to the channel an announcement names (its ``socket``, else its ``port``), or to a port."""
    import socket

    if isinstance(endpoint, dict) and endpoint.get("socket"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        for _ in range(1000):
            try:
                from context_companion.procs import SocketPath

                with SocketPath(endpoint["socket"]) as usable:  # longer than sun_path: through its folder
                    sock.connect(usable)
                break
            except BlockingIOError:  # the backlog is full (EAGAIN): the server has not accepted yet
                import time

                time.sleep(0.01)
        return sock
    port = endpoint["port"] if isinstance(endpoint, dict) else endpoint
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


class Channel:
    """The agent hooks' channel spoken by hand, as ``context-companion hook`` speaks it
    (docs/protocol.md, "Agent hooks"): greeting, the server's proof, the request, the answer, the ack."""

    def __init__(self, endpoint: int | dict, timeout: float = 10) -> None:
        """``endpoint``: the channel's announcement (its Unix domain socket, else its port), or a port."""
        self.sock = connect(endpoint, timeout)
        self.lines = self.sock.makefile("rb")

    def send(self, message: object) -> None:
        import json

        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def receive(self) -> dict:
        import json

        line = self.lines.readline()
        assert line, "the server closed the connection"
        answer: dict = json.loads(line)
        return answer

    def greet(self, nonce: str = "ab" * 16) -> dict:
        self.nonce = nonce
        self.send({"hello": "context-companion-hook", "version": 2, "nonce": nonce})
        return self.receive()

    def request(self, token: str, request: dict, greeting: dict, budget_ms: int | None = 5000) -> dict:
        from context_companion import proofs

        message: dict = {
            "proof": proofs.proof(token, proofs.HOOK_CLIENT, greeting["nonce"], self.nonce),
            "request": request,
        }
        if budget_ms is not None:
            message["budgetMs"] = budget_ms
        self.send(message)
        return self.receive()

    def close(self) -> None:
        self.lines.close()
        self.sock.close()


def ask_channel(port: int | dict, token: str, request: dict, *, ack: bool = True) -> dict:
    """One whole exchange: the server's proof checked, the answer acknowledged (or not)."""
    from context_companion import proofs

    channel = Channel(port)
    try:
        greeting = channel.greet()
        assert proofs.check(greeting.get("proof"), token, proofs.HOOK_SERVER, channel.nonce, greeting["nonce"]), (
            greeting
        )
        answer = channel.request(token, request, greeting)
        if ack and "delivery" in answer:
            channel.send({"ack": answer["delivery"]})
        return answer
    finally:
        channel.close()
