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
