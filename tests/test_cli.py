"""The command line, run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def run(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "context_companion", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full_env,
        timeout=60,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    ws = tmp_path / "proj"
    (ws / ".git").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("Run tests with make check.\n")
    (ws / "api").mkdir()
    (ws / "api" / "AGENTS.md").write_text("Handlers return JSON errors.\n")
    (ws / "api" / "x.py").write_text("")
    return ws


@pytest.fixture
def env(tmp_path: Path) -> dict:
    home = tmp_path / "cli-home"
    home.mkdir()
    return {"HOME": str(home), "CONTEXT_COMPANION_CONFIG_DIR": str(home / "cfg")}


def test_instruction_text_includes_memory(project, env):
    out = run("instruction", "--workspace", str(project), env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip().endswith("--- End of Context from: AGENTS.md ---")
    assert "Run tests with make check." in out.stdout and "Handlers return JSON errors." not in out.stdout


def test_instruction_json_shape_and_open_files(project, env):
    out = run("instruction", "--workspace", str(project), "--open", str(project / "api" / "x.py"), "--json", env=env)
    data = json.loads(out.stdout)
    assert set(data) >= {"text", "etag", "tokens", "memoryFiles", "environmentContext"}
    assert set(data["tokens"]) >= {"total", "encoding", "estimated", "sections"}
    assert all(set(s) == {"id", "tokens"} for s in data["tokens"]["sections"])
    # Memory of the open files is delivered per turn (memory.onDemandDelivery = "turn"), not in the text.
    assert "Handlers return JSON errors." not in data["text"]
    tiers = {f["path"]: (f["tier"], f["included"]) for f in data["memoryFiles"]}
    assert tiers == {"AGENTS.md": ("workspace", True), "api/AGENTS.md": ("jit", False)}
    [update] = data["memoryUpdates"]
    assert update["path"] == "api/AGENTS.md" and "Handlers return JSON errors." in update["content"]
    assert update["reason"] == "active file api/x.py is under api/" and update["tokens"] > 0
    assert data["environmentContext"].startswith("# Environment\nToday's date:")
    assert data["initialMessage"].startswith("Here is the environment I am working in")


def test_instruction_is_deterministic(project, env):
    a = run("instruction", "--workspace", str(project), "--json", env=env)
    b = run("instruction", "--workspace", str(project), "--json", env=env)
    assert json.loads(a.stdout)["etag"] == json.loads(b.stdout)["etag"]


def test_profile_file_and_its_errors(project, env, tmp_path):
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps({"approvalMode": "plan", "tools": ["exit_plan_mode"]}))
    out = run("instruction", "--workspace", str(project), "--profile", str(profile), env=env)
    assert "Planning Mode" in out.stdout and "`exit_plan_mode`" in out.stdout
    profile.write_text("{not json")
    bad = run("instruction", "--workspace", str(project), "--profile", str(profile), env=env)
    assert bad.returncode == 2 and "not valid JSON" in bad.stderr and "Traceback" not in bad.stderr
    missing = run("instruction", "--workspace", str(project), "--profile", str(tmp_path / "none.json"), env=env)
    assert missing.returncode == 2 and "file not found" in missing.stderr


def test_invalid_settings_file_exits_2_naming_file_and_field(project, env):
    (project / ".context-companion.toml").write_text("[environment]\nplacement = 'sideways'\n")
    out = run("instruction", "--workspace", str(project), env=env)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert ".context-companion.toml: environment.placement:" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_missing_template_names_resolved_path(project, env):
    out = run("instruction", "--workspace", str(project), env={**env, "CONTEXT_COMPANION_SYSTEM_MD": "true"})
    assert out.returncode == 2
    assert str(project / ".context-companion" / "system.md") in out.stderr


def test_memory_listing_and_json(project, env):
    out = run("memory", "--workspace", str(project), env=env)
    assert out.returncode == 0
    assert "+ AGENTS.md" in out.stdout and "- api/AGENTS.md" in out.stdout and "1 of 2 files included" in out.stdout
    data = json.loads(
        run("memory", "--workspace", str(project), "--open", str(project / "api" / "x.py"), "--json", env=env).stdout
    )
    assert [f["included"] for f in data["files"]] == [True, True]


def test_compression_prompt_and_usage_errors(env, tmp_path):
    out = run("compression-prompt", env=env)
    assert out.returncode == 0 and "<state_snapshot>" in out.stdout and "ignore" in out.stdout.lower()
    assert run("instruction", "--workspace", str(tmp_path / "nope"), env=env).returncode == 2
    assert run(env=env).returncode == 2
    assert run("serve", "--help", env=env).returncode == 0
