"""Attack: a memory file imports secret or gitignored files, hoping the instruction inlines them.

Through the real CLI, so the whole path (discovery → import expansion → composition → output) is
covered, in text and JSON form: no byte of a secret may reach stdout or stderr, the `@` text stays
as written, and an allowed sample file is still inlined.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SECRETS = {
    ".ENV": "ENV_UPPERCASE_SECRET_1",
    "config/Server.KEY": "KEY_FILE_SECRET_2",
    ".aws/credentials": "AWS_CREDENTIALS_SECRET_3",
    "home-ssh/id_ed25519": "SSH_PRIVATE_SECRET_4",
    "infra/prod.tfvars": "TFVARS_SECRET_5",
    "generated/notes.md": "GITIGNORED_SECRET_6",
}


def _run(ws: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    return subprocess.run(
        [sys.executable, "-m", "context_companion", *args, "--workspace", str(ws)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_imports_of_secret_and_ignored_files_never_reach_cli_output(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    home.mkdir(exist_ok=True)
    imports = "\n".join(f"@./{name}" for name in SECRETS)
    files = {
        **SECRETS,
        ".gitignore": "generated/\n",
        ".env.example": "SAMPLE_VALUE=placeholder",
        "AGENTS.md": f"Project rules.\n{imports}\n@./.env.example\n",
    }
    for name, text in files.items():
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    for args in (("instruction",), ("instruction", "--json"), ("memory",), ("memory", "--json")):
        out = _run(ws, home, *args, "--quiet")
        assert out.returncode == 0, out.stderr
        for secret in SECRETS.values():
            assert secret not in out.stdout and secret not in out.stderr, (args, secret)
        if args[0] == "instruction":
            assert "placeholder" in out.stdout, args  # .env.example is not a secret

    text = json.loads(_run(ws, home, "instruction", "--json", "--quiet").stdout)["text"]
    for name in SECRETS:
        assert f"@./{name}" in text  # the author's text stays as written
