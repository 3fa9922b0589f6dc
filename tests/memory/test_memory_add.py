"""add_memory: new file, existing heading, no heading, untouched bytes, atomicity, concurrency, errors."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading

import pytest
from context_companion.errors import FileWriteError, MemoryWriteError
from context_companion.memory import add_memory


def test_creates_file_and_heading_in_the_global_dir(tmp_path):
    gdir = tmp_path / "config" / "context-companion"  # does not exist yet
    path = add_memory("Prefers tabs", global_dir=gdir, workspace_folder=None)
    assert path == gdir / "AGENTS.md"
    assert path.read_bytes() == b"## Added Memories\n- Prefers tabs\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~_umask()
    assert [p.name for p in gdir.iterdir()] == ["AGENTS.md"]  # no temp or lock file left behind


def _umask() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1], 8) for line in fh if line.startswith("Umask:"))


def test_appends_to_an_existing_heading_without_touching_other_bytes(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    original = b"# Project\n\nIntro  \n\n## Added Memories\n- first\n- second\n\n\n## Later section\ntext\n"
    (ws / "AGENTS.md").write_bytes(original)
    add_memory("third", "workspace", global_dir=tmp_path / "g", workspace_folder=ws)
    assert (ws / "AGENTS.md").read_bytes() == original.replace(b"- second\n", b"- second\n- third\n")


def test_heading_at_end_of_file_without_trailing_newline(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_bytes(b"# T\n\n## Added Memories\n- one")
    add_memory("two", "workspace", global_dir=tmp_path, workspace_folder=ws)
    assert (ws / "AGENTS.md").read_bytes() == b"# T\n\n## Added Memories\n- one\n- two\n"


def test_no_heading_appends_a_section_and_keeps_a_missing_final_newline_as_prefix(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_bytes(b"# Notes\nno newline at end")
    add_memory("fact", "workspace", global_dir=tmp_path, workspace_folder=ws)
    data = (ws / "AGENTS.md").read_bytes()
    assert data == b"# Notes\nno newline at end\n\n## Added Memories\n- fact\n"


def test_crlf_file_gets_crlf_and_keeps_its_bytes(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    original = b"# Notes\r\n\r\n## Added Memories\r\n- one\r\n\r\n# Other\r\nx\r\n"
    (ws / "AGENTS.md").write_bytes(original)
    add_memory("two", "workspace", global_dir=tmp_path, workspace_folder=ws)
    assert (ws / "AGENTS.md").read_bytes() == original.replace(b"- one\r\n", b"- one\r\n- two\r\n")
    (ws / "CRLF").mkdir()
    (ws / "CRLF/AGENTS.md").write_bytes(b"# Only\r\ntext\r\n")
    add_memory("x", "workspace", global_dir=tmp_path, workspace_folder=ws / "CRLF")
    assert (ws / "CRLF/AGENTS.md").read_bytes() == b"# Only\r\ntext\r\n\r\n## Added Memories\r\n- x\r\n"


def test_heading_inside_a_code_fence_is_not_the_section(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    original = b"```md\n## Added Memories\n```\n"
    (ws / "AGENTS.md").write_bytes(original)
    add_memory("real", "workspace", global_dir=tmp_path, workspace_folder=ws)
    assert (ws / "AGENTS.md").read_bytes() == original + b"\n## Added Memories\n- real\n"


def test_multi_line_fact_becomes_one_bullet_and_leading_dashes_go(tmp_path):
    path = add_memory("- line one\r\n  line two\n\nline three  ", global_dir=tmp_path, workspace_folder=None)
    assert path.read_text() == "## Added Memories\n- line one line two line three\n"


def test_keeps_mode_and_writes_through_a_symlink(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    real = ws / "docs-AGENTS.md"
    real.write_bytes(b"# R\n")
    real.chmod(0o640)
    os.symlink(real.name, ws / "AGENTS.md")
    add_memory("via link", "workspace", global_dir=tmp_path, workspace_folder=ws)
    assert os.path.islink(ws / "AGENTS.md")
    assert real.read_bytes() == b"# R\n\n## Added Memories\n- via link\n"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640


@pytest.mark.parametrize(
    ("fact", "scope", "folder", "needle"),
    [
        ("", "global", None, "the fact is empty"),
        (" \n\t ", "global", None, "the fact is empty"),
        ("- ", "global", None, "the fact is empty"),
        ("fact", "workspace", None, "needs an open workspace folder"),
        ("fact", "project", None, "unknown scope"),
    ],
)
def test_bad_input_raises_memory_write_error(tmp_path, fact, scope, folder, needle):
    with pytest.raises(MemoryWriteError, match=needle):
        add_memory(fact, scope, global_dir=tmp_path / "g", workspace_folder=folder)
    assert not (tmp_path / "g").exists()


def test_unwritable_location_raises_a_file_write_error_and_leaves_the_file_alone(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("i am a file")
    with pytest.raises(FileWriteError, match="cannot create"):
        add_memory("fact", global_dir=blocker / "sub", workspace_folder=None)
    assert blocker.read_text() == "i am a file"
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws/AGENTS.md").mkdir()
    with pytest.raises(FileWriteError, match="not a regular file"):
        add_memory("fact", "workspace", global_dir=tmp_path, workspace_folder=tmp_path / "ws")
    with pytest.raises(FileWriteError, match="does not exist"):
        add_memory("fact", "workspace", global_dir=tmp_path, workspace_folder=tmp_path / "nope")


def test_read_only_directory_as_unprivileged_user(tmp_path):
    import shutil
    import tempfile
    from pathlib import Path

    d = Path(tempfile.mkdtemp(prefix="cc-add-"))
    try:
        d.chmod(0o755)
        ro = d / "ro"
        ro.mkdir()
        (ro / "AGENTS.md").write_bytes(b"# keep\n")
        (ro / "AGENTS.md").chmod(0o644)
        ro.chmod(0o555)
        dropped = os.geteuid() == 0
        if dropped:
            os.seteuid(65534)
        try:
            with pytest.raises(FileWriteError, match="cannot write: Permission denied"):
                add_memory("fact", "workspace", global_dir=d, workspace_folder=ro)
        finally:
            if dropped:
                os.seteuid(0)
        assert (ro / "AGENTS.md").read_bytes() == b"# keep\n"
        assert sorted(p.name for p in ro.iterdir()) == ["AGENTS.md"]
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_concurrent_threads_lose_nothing(tmp_path):
    gdir = tmp_path / "g"
    gdir.mkdir()
    (gdir / "AGENTS.md").write_bytes(b"# Mine\nkeep this\n")
    facts = [f"fact number {i}" for i in range(40)]
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def worker(chunk: list[str]) -> None:
        try:
            barrier.wait()
            for fact in chunk:
                add_memory(fact, global_dir=gdir, workspace_folder=None)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(facts[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    data = (gdir / "AGENTS.md").read_text()
    assert data.startswith("# Mine\nkeep this\n\n## Added Memories\n")
    bullets = [line[2:] for line in data.splitlines() if line.startswith("- ")]
    assert sorted(bullets) == sorted(facts)
    assert data.count("## Added Memories") == 1


def test_concurrent_processes_lose_nothing(tmp_path):
    gdir = tmp_path / "g"
    script = (
        "import sys; from pathlib import Path; from context_companion.memory import add_memory\n"
        "for i in range(10): add_memory(f'{sys.argv[1]} {i}', global_dir=Path(sys.argv[2]), workspace_folder=None)\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, f"proc{n}", str(gdir)]) for n in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    bullets = [line for line in (gdir / "AGENTS.md").read_text().splitlines() if line.startswith("- ")]
    assert len(bullets) == 40 and len(set(bullets)) == 40


def test_added_memory_shows_up_in_the_store(tmp_path, make_store, global_dir):
    ws = tmp_path / "ws"
    ws.mkdir()
    store = make_store(ws)
    path = add_memory("The API lives in src/api", global_dir=global_dir, workspace_folder=ws)
    summary = store.apply_changes([path])
    assert summary.kind == "memoryChanged"
    assert "- The API lives in src/api" in store.compose([]).text
