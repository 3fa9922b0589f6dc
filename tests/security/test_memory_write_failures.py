"""``addMemory`` when the disk is full, the folder is read-only, or the file would grow too large.

The request was fine, the world was not: the answer is RequestFailed (-32803) with the
operating system's own words and the path, never InvalidParams, never a traceback, and the
file is left exactly as it was.
"""

from __future__ import annotations

import pytest
from sockets_support import RpcFailure, with_shims

REQUEST_FAILED = -32803
ADD = "contextCompanion.addMemory"


@pytest.mark.parametrize(
    ("shim", "os_words"),
    [("disk_full", "No space left on device"), ("deny_write", "Permission denied")],
)
def test_os_failures_answer_request_failed_with_the_os_reason(tmp_path, stdio, server_env, shim, os_words):
    ws = tmp_path / "ws"
    ws.mkdir()
    original = b"# Keep\r\nthese bytes\r\n"
    (ws / "AGENTS.md").write_bytes(original)
    if shim == "deny_write":
        ws.chmod(0o555)
    s = stdio(with_shims(server_env, shim))
    s.initialize(ws)
    try:
        with pytest.raises(RpcFailure) as info:
            s.command(ADD, {"fact": "lost?", "scope": "workspace"})
    finally:
        ws.chmod(0o755)
    assert info.value.code == REQUEST_FAILED
    assert os_words in info.value.message and str(ws / "AGENTS.md") in info.value.message
    assert (ws / "AGENTS.md").read_bytes() == original
    assert sorted(p.name for p in ws.iterdir()) == ["AGENTS.md"]  # no temporary file left
    assert "Traceback" not in s.stderr
    # Bad input is still the client's mistake: InvalidParams.
    with pytest.raises(RpcFailure) as bad:
        s.command(ADD, {"fact": "  "})
    assert bad.value.code == -32602


def test_an_append_over_memory_max_file_bytes_is_refused(tmp_path, stdio):
    ws = tmp_path / "ws"
    ws.mkdir()
    original = b"# Notes\n" + b"x" * 900 + b"\n"
    (ws / "AGENTS.md").write_bytes(original)
    s = stdio()
    s.initialize(ws, {"memory": {"maxFileBytes": 1000}})
    assert s.command(ADD, {"fact": "short", "scope": "workspace"})["path"] == str(ws / "AGENTS.md")
    grown = (ws / "AGENTS.md").read_bytes()
    with pytest.raises(RpcFailure) as info:
        s.command(ADD, {"fact": "y" * 200, "scope": "workspace"})
    assert info.value.code == REQUEST_FAILED
    assert "memory.maxFileBytes (1000)" in info.value.message and str(ws / "AGENTS.md") in info.value.message
    assert (ws / "AGENTS.md").read_bytes() == grown
    # The file the server refused to grow is still read: the fact that fitted is in the instruction.
    assert "- short" in s.command("contextCompanion.showMemory", {})["text"]
