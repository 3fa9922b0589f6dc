"""The stdio transport with inputs editors do not send: /dev/null, a file, junk."""

from __future__ import annotations

import os
import subprocess
import sys

SERVER = [sys.executable, "-m", "context_companion", "serve"]


def env(tmp_path):
    e = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    e.update({"HOME": str(tmp_path), "CONTEXT_COMPANION_CONFIG_DIR": str(tmp_path / "cfg")})
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
    assert b"Traceback" not in done.stderr and done.stdout == b""
