"""Writes never leave the workspace folders and the global memory directory, symlinks included.

The attacker controls the repository the user opens: it can ship ``AGENTS.md`` as a symlink, a
dangling symlink, a folder symlink, and a ``.context-companion.toml`` that aims the instruction
export anywhere. The server must refuse every write that would land outside, create nothing on
the way, and still write through links that stay inside.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from context_companion import fileio
from context_companion.containment import place, real_roots
from context_companion.errors import FileWriteError
from context_companion.memory import add_memory
from sockets_support import RpcFailure

REQUEST_FAILED = -32803
ADD = "contextCompanion.addMemory"


def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws, outside, cfg = tmp_path / "ws", tmp_path / "outside", tmp_path / "cfg"
    for d in (ws, outside, cfg):
        d.mkdir()
    return ws, outside, cfg


def listing(*dirs: Path) -> dict[str, bytes | str]:
    """Every entry below ``dirs`` with its bytes (or link target): proof nothing changed."""
    out: dict[str, bytes | str] = {}
    for d in dirs:
        for root, subdirs, files in os.walk(d):
            for name in subdirs + files:
                p = Path(root) / name
                out[str(p)] = os.readlink(p) if p.is_symlink() else (p.read_bytes() if p.is_file() else "dir")
    return out


def test_addmemory_through_a_symlink_leading_outside_is_refused_and_reader_agrees(tmp_path, stdio):
    ws, outside, _ = tree(tmp_path)
    victim = outside / "victim.md"
    victim.write_bytes(b"# not yours\n")
    victim.chmod(0o600)
    (ws / "AGENTS.md").symlink_to(victim)
    before = listing(ws, outside)
    s = stdio()
    s.initialize(ws)
    with pytest.raises(RpcFailure) as info:
        s.command(ADD, {"fact": "pwned", "scope": "workspace"})
    assert info.value.code == REQUEST_FAILED
    assert str(ws / "AGENTS.md") in info.value.message
    assert "symlink leads outside the workspace" in info.value.message
    assert listing(ws, outside) == before  # victim, link and folder untouched, no temp file
    # The reader gives the same verdict for the same file.
    shown = s.command("contextCompanion.showMemory", {})
    entry = next(f for f in shown["files"] if f["path"] == "AGENTS.md")
    assert entry["included"] is False and "symlink leads outside the workspace" in entry["reason"]
    assert "Traceback" not in s.stderr


@pytest.mark.parametrize("inside", [False, True], ids=["to-outside", "to-inside"])
def test_a_dangling_symlink_is_refused_and_nothing_is_created(tmp_path, stdio, inside):
    ws, outside, _ = tree(tmp_path)
    base = ws if inside else outside
    (ws / "AGENTS.md").symlink_to(base / "new-dir" / "deep" / "AGENTS.md")
    before = listing(ws, outside)
    s = stdio()
    s.initialize(ws)
    with pytest.raises(RpcFailure) as info:
        s.command(ADD, {"fact": "x", "scope": "workspace"})
    assert info.value.code == REQUEST_FAILED
    assert "dangling symlink" in info.value.message and str(ws / "AGENTS.md") in info.value.message
    assert listing(ws, outside) == before
    assert not (base / "new-dir").exists()


def test_global_scope_through_a_link_outside_is_refused(tmp_path, stdio):
    ws, outside, cfg = tree(tmp_path)
    victim = outside / "bashrc"
    victim.write_bytes(b"export PATH=/usr/bin\n")
    (cfg / "AGENTS.md").symlink_to(victim)
    s = stdio()
    s.initialize(ws)
    with pytest.raises(RpcFailure) as info:
        s.command(ADD, {"fact": "alias ls=rm"})
    assert info.value.code == REQUEST_FAILED and str(cfg / "AGENTS.md") in info.value.message
    assert victim.read_bytes() == b"export PATH=/usr/bin\n"


def test_a_link_that_stays_inside_is_written_in_place_keeping_the_link_and_the_mode(tmp_path, stdio):
    ws, _, cfg = tree(tmp_path)
    (ws / "docs").mkdir()
    real = ws / "docs" / "AGENTS.md"
    real.write_bytes(b"# Team\n")
    real.chmod(0o640)
    (ws / "AGENTS.md").symlink_to("docs/AGENTS.md")
    shared = cfg / "shared.md"  # a workspace link into the global memory directory is inside too
    shared.write_bytes(b"# Shared\n")
    s = stdio()
    s.initialize(ws)
    assert s.command(ADD, {"fact": "uses tabs", "scope": "workspace"})["path"] == str(ws / "AGENTS.md")
    assert (ws / "AGENTS.md").is_symlink() and os.readlink(ws / "AGENTS.md") == "docs/AGENTS.md"
    assert real.read_bytes() == b"# Team\n\n## Added Memories\n- uses tabs\n"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert sorted(p.name for p in (ws / "docs").iterdir()) == ["AGENTS.md"]
    (cfg / "AGENTS.md").symlink_to(shared)
    s.command(ADD, {"fact": "global fact"})
    assert shared.read_bytes() == b"# Shared\n\n## Added Memories\n- global fact\n"


def test_the_workspace_folder_opened_through_a_symlink_is_still_inside(tmp_path):
    ws, _, cfg = tree(tmp_path)
    alias = tmp_path / "alias"
    alias.symlink_to(ws)
    path = add_memory("fact", "workspace", global_dir=cfg, workspace_folder=alias)
    assert path == alias / "AGENTS.md" and (ws / "AGENTS.md").read_text() == "## Added Memories\n- fact\n"


def test_the_temporary_file_is_created_exclusively_and_never_followed(tmp_path, monkeypatch):
    """An attacker who guesses the temporary name and plants a symlink there gains nothing."""
    ws, outside, cfg = tree(tmp_path)
    victim = outside / "victim"
    victim.write_bytes(b"keep")
    names = iter(["guessed", "fresh"])
    monkeypatch.setattr(fileio.secrets, "token_hex", lambda n: next(names))
    planted = ws / ".AGENTS.md.guessed.tmp"
    planted.symlink_to(victim)
    add_memory("fact", "workspace", global_dir=cfg, workspace_folder=ws)
    assert victim.read_bytes() == b"keep" and planted.is_symlink()
    assert (ws / "AGENTS.md").read_text() == "## Added Memories\n- fact\n"
    assert not (ws / ".AGENTS.md.fresh.tmp").exists()


def test_export_outside_the_roots_is_refused_with_a_warning(tmp_path, stdio):
    """Even the user's own ``writeSystemPromptTo`` (marked so by the editor: the settings layer lets it
    name a file anywhere) is written only inside the workspace folders and the global directory:
    absolute, through a folder symlink, through a file symlink, nothing is written; the instruction
    is still answered, with a warning naming the path and the reason. (A workspace's own value never
    gets this far: tests/security/test_workspace_settings.py.)"""
    ws, outside, _ = tree(tmp_path)
    (ws / "out").symlink_to(outside, target_is_directory=True)
    (ws / "file-link.md").symlink_to(outside / "rc")
    (outside / "rc").write_bytes(b"rc\n")
    cases = {
        str(outside / "abs.md"): "outside the workspace folders",
        "out/system.md": "a parent folder is a symlink that leads outside",
        "file-link.md": "symlink leads outside the workspace",
    }
    for target, reason in cases.items():
        before = listing(outside)
        s = stdio()
        s.initialize(ws, {"writeSystemPromptTo": target, "userValues": ["writeSystemPromptTo"]})
        result = s.command("contextCompanion.getSystemInstruction", {})
        assert result["text"]
        assert any("cannot export the instruction" in w and reason in w for w in result["warnings"]), result["warnings"]
        assert listing(outside) == before, target
    inside = stdio()
    inside.initialize(ws, {"writeSystemPromptTo": "gen/system.md"})
    text = inside.command("contextCompanion.getSystemInstruction", {})["text"]
    assert (ws / "gen" / "system.md").read_text() == text + "\n"


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda ws, out: (ws / "f").symlink_to(out / "x"), "dangling symlink"),
        (lambda ws, out: (out / "x").write_text("") or (ws / "f").symlink_to(out / "x"), "symlink leads outside"),
        (lambda ws, out: (ws / "d").symlink_to(out) or None, "parent folder is a symlink"),
        (lambda ws, out: (ws / "f").write_text(""), None),
    ],
)
def test_one_containment_function_for_readers_and_writers(tmp_path, make, reason):
    ws, outside, _ = tree(tmp_path)
    make(ws, outside)
    target = ws / "d" / "x" if (ws / "d").exists() else ws / "f"
    roots = real_roots([ws])
    written = place(target, roots, writing=True).refusal
    assert (written is None) if reason is None else (reason in written)
    if reason == "dangling symlink":  # the reader sees a missing file, not a refusal
        assert place(target, roots).refusal is None or "outside" in (place(target, roots).refusal or "")
    else:
        assert place(target, roots).refusal == written
        if written is not None:
            with pytest.raises(FileWriteError, match=str(target)):
                fileio.atomic_write_text(target, "x", roots)
