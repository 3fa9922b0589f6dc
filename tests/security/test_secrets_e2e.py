"""No secret byte reaches any output: the real server (commands and pushes) and the CLI.

A workspace holds every default secret file, each with unique content, and a source file whose
selection holds every credential shape. Every document is opened, made active with a selection
over all of it and cursor context lines, and every output is searched for the secret bytes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from test_secrets import SECRET_BYTES, SECRET_FILES, SHAPES

# The real-server fixtures of tests/lsp (loaded by path: tests/ is not a package).
_spec = importlib.util.spec_from_file_location("_lsp_fixtures", Path(__file__).parent.parent / "lsp" / "conftest.py")
assert _spec is not None and _spec.loader is not None
_lsp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_lsp)
start = _lsp.start
config_dir = _lsp.config_dir

NO_ENV = {"environment": {"placement": "off"}}


def file_secret(name: str) -> str:
    return f"FILESECRET{zlib.crc32(name.encode()):010d}x"


def all_secrets() -> list[str]:
    return [file_secret(n) for n in SECRET_FILES] + SECRET_BYTES


@pytest.fixture
def secret_tree(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("Project memory: run make check.\n")
    for i, name in enumerate(SECRET_FILES):
        # half at the root, half deeper, some with upper-case names: matching ignores case and depth
        rel = name if i % 2 else f"deploy/conf/{name}"
        if i % 3 == 0:
            rel = rel.upper()
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"line one\nVALUE={file_secret(name)}\nline three\n")
    lines = (
        ["def connect():"] + [f"    # {kind}\n    {sample}" for kind, sample in SHAPES.items()] + ["    return None"]
    )
    (ws / "src").mkdir()
    (ws / "src" / "settings.py").write_text("\n".join(lines) + "\n")
    return ws


def leaks(blob: str) -> list[str]:
    return [s for s in all_secrets() if s in blob]


async def test_no_secret_reaches_commands_or_pushes(start, secret_tree):
    h = await start(secret_tree, settings={**NO_ENV, "context": {"cursorContextLines": 20, "maxOpenFiles": 100}})
    outputs: list[Any] = []
    outputs.append(await h.command("contextCompanion.getSystemInstruction", {}))
    docs = sorted(
        str(p.relative_to(secret_tree)) for p in secret_tree.rglob("*") if p.is_file() and ".git" not in p.parts
    )
    for rel in docs:
        text = (secret_tree / rel).read_text()
        uri = h.open(rel, text)
        n = text.count("\n")
        h.cursor(uri, 1, 3, [(0, 0, n, 0)])
        await _settle()
        outputs.append(await h.command("contextCompanion.getTurnContext", {}))
        outputs.append(await h.command("contextCompanion.getTurnContext", {"forceFull": True}))
    # the source file's selection holds every credential shape: redacted, not dropped
    uri = h.open("src/settings.py")
    h.cursor(uri, 2, 0, [(0, 0, 40, 0)])
    await _settle()
    full = await h.command("contextCompanion.getTurnContext", {"forceFull": True})
    selected = full["context"]["activeFile"]["selectedText"]
    for kind in SHAPES:
        assert f"[redacted: {kind}]" in selected, (kind, selected)
    outputs.append(full)
    outputs.append(await h.command("contextCompanion.buildMessages", {"messages": [{"role": "user", "content": "hi"}]}))
    outputs.append(await h.command("contextCompanion.showMemory", {}))
    outputs.append(await h.command("contextCompanion.getSystemInstruction", {}))
    blob = json.dumps(outputs, ensure_ascii=False) + json.dumps(h.pushes, ensure_ascii=False)
    assert leaks(blob) == []
    # the files themselves are still listed (the model may know .env is open, not what it holds)
    assert ".env" in blob.lower()


async def _settle() -> None:
    import asyncio

    await asyncio.sleep(0.05)


def test_no_secret_reaches_cli_output(secret_tree, tmp_path):
    home = tmp_path / "cli-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    env.update({"HOME": str(home), "CONTEXT_COMPANION_CONFIG_DIR": str(home / "cfg")})
    opened = [str(p) for p in secret_tree.rglob("*") if p.is_file() and ".git" not in p.parts]
    blob = ""
    for args in (["instruction", "--json"], ["instruction"], ["memory", "--json"], ["memory"]):
        out = subprocess.run(
            [sys.executable, "-m", "context_companion", *args, "--workspace", str(secret_tree), "--open", *opened],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        blob += out.stdout + out.stderr
    assert "run make check" in blob
    assert leaks(blob) == []
