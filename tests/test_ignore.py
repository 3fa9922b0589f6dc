"""The gitignore-aware walker: git's whole ignore chain, checked against the real git binary."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from context_companion.ignore import (
    IgnoreFile,
    find_repo,
    global_excludes_path,
    ignore_sources,
    ignore_warnings,
    read_core_excludes_file,
    walk,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

GIT = shutil.which("git")


@pytest.fixture
def _git_binary() -> str:
    """The parity tests compare with git itself: without it they fail (a skip would hide the gap)."""
    if GIT is None:
        pytest.fail("the parity tests need the git binary on PATH (apt-get install git)", pytrace=False)
    return GIT


needs_git = pytest.mark.usefixtures("_git_binary")


def _git_env(home: Path, *, global_config: Path | None, xdg: Path | None) -> dict[str, str]:
    """An environment where no config of this machine reaches git (or us)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "XDG_CONFIG_HOME"))}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", LC_ALL="C")
    if global_config is not None:
        env["GIT_CONFIG_GLOBAL"] = str(global_config)
    if xdg is not None:
        env["XDG_CONFIG_HOME"] = str(xdg)
    return env


def _git(env: dict[str, str], cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert GIT is not None
    return subprocess.run([GIT, *args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True, check=False)


def _git_ignored(env: dict[str, str], cwd: Path, paths: list[str]) -> set[str]:
    proc = _git(env, cwd, "check-ignore", "--no-index", "--stdin", "-z", stdin="\0".join(paths) + "\0")
    assert proc.returncode in (0, 1), proc.stderr
    return {p for p in proc.stdout.split("\0") if p}


def _our_ignored(folder: Path, paths: list[str]) -> set[str]:
    """Verdicts through the walk itself: a path is kept when the walk reaches its directory and
    that directory's rules keep it (a directory is kept when the walk enters it)."""
    rules_of = {listing.rel_dir: listing.rules for listing in walk(folder)}
    out = set()
    for rel in paths:
        parent = rel.rpartition("/")[0]
        is_dir = (folder / rel).is_dir() and not (folder / rel).is_symlink()
        if is_dir:
            if rel not in rules_of:
                out.add(rel)
        elif parent not in rules_of or rules_of[parent].is_ignored(rel, False):
            out.add(rel)
    return out


# --------------------------------------------------------------------------- parity with git


DIR_NAMES = ["a", "b", "build", "src", "node_modules", "deep"]
FILE_NAMES = ["keep.log", "z.log", "f.txt", "AGENTS.md", "#h", "!b", "c", "x1y", "Ab.txt", "q", "b", "build", "f.txt  "]
PATTERNS = [
    "*.log",
    "!keep.log",
    "!z.log",
    "build/",
    "/build",
    "build",
    "a/",
    "!a/",
    "a/b",
    "/a/b/",
    "a/**",
    "!a/**/f.txt",
    "**/b",
    "a/**/c",
    "**/build/",
    "*",
    "!*/",
    "!*.md",
    "# a comment",
    "\\#h",
    "\\!b",
    "!\\!b",
    "f.txt   ",
    "f.txt\\ ",
    "[ab]",
    "[!a]",
    "[a-c]*",
    "[[:upper:]]b.txt",
    "[]a]",
    "?",
    "??*.txt",
    "b/*",
    "*/c",
    "!b/c",
    "src/*.txt",
    "!src/keep.log",
    "node_modules",
    "c/",
    "!build/keep.log",
    "x*y",
    "a/*/",
    "**",
    "/*",
    "!/a",
    "deep/**/q",
    "!deep/",
    "ws/a",
    "q",
    "!q",
    "[z-a]b",
]

segments = st.lists(st.sampled_from(DIR_NAMES), max_size=3).map(tuple)
file_paths = st.lists(st.tuples(st.booleans(), segments, st.sampled_from(FILE_NAMES)), min_size=1, max_size=24)
pattern_lists = st.lists(st.sampled_from(PATTERNS), max_size=6)


def _build(root: Path, specs: list[tuple[bool, tuple[str, ...], str]]) -> list[str]:
    """Create the files (some under ``ws/``); returns every created path, files and dirs, posix."""
    files: set[str] = set()
    dirs: set[str] = set()
    for in_ws, parents, name in specs:
        parts = (["ws"] if in_ws else []) + list(parents)
        rel_dir = "/".join(parts)
        rel = f"{rel_dir}/{name}" if rel_dir else name
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if rel in dirs or any(p in files for p in prefixes):
            continue
        (root / rel_dir).mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
        files.add(rel)
        dirs.update(prefixes)
    return sorted(files | dirs)


@needs_git
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=file_paths,
    ignores=st.dictionaries(st.sampled_from(["", "ws", "a", "ws/a", "ws/b", "ws/a/b", "build"]), pattern_lists),
    info_exclude=pattern_lists,
    global_excludes=pattern_lists,
    config_style=st.sampled_from(["tilde", "xdg-default", "absolute-quoted"]),
)
def test_verdicts_equal_git_check_ignore(specs, ignores, info_exclude, global_excludes, config_style):
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        home, repo = tmp / "home", tmp / "repo"
        home.mkdir()
        repo.mkdir()
        global_config: Path | None = None
        xdg: Path | None = tmp / "xdg"
        if config_style == "xdg-default":
            excludes_file = xdg / "git" / "ignore"  # no core.excludesFile: git's default path
        else:
            global_config = tmp / "gitconfig"
            if config_style == "tilde":
                excludes_file = home / "my-excludes"
                global_config.write_text("[core]\n\texcludesFile = ~/my-excludes ; comment\n")
            else:
                excludes_file = tmp / "ex cl"
                global_config.write_text(f'[user]\n\tname = t\n[Core]\n  ExcludesFile = "{excludes_file}"\n')
        excludes_file.parent.mkdir(parents=True, exist_ok=True)
        excludes_file.write_text("\n".join(global_excludes) + "\n")
        env = _git_env(home, global_config=global_config, xdg=xdg)
        assert _git(env, repo, "init", "-q").returncode == 0
        (repo / ".git" / "info").mkdir(exist_ok=True)
        (repo / ".git" / "info" / "exclude").write_text("\n".join(info_exclude) + "\n")
        paths = _build(repo, specs)
        for rel_dir, lines in ignores.items():
            if (repo / rel_dir).is_file():
                continue  # a file took that name
            (repo / rel_dir).mkdir(parents=True, exist_ok=True)
            (repo / rel_dir / ".gitignore").write_text("\r\n".join(lines) + "\n")
        with mock.patch.dict(os.environ, env, clear=True):
            assert global_excludes_path(find_repo(repo)) == str(excludes_file)
            assert _our_ignored(repo, paths) == _git_ignored(env, repo, paths)
            ws = repo / "ws"
            ws_paths = [p[3:] for p in paths if p.startswith("ws/")]
            # A folder git ignores is still walked when opened (see the module docs): compare
            # only folders git keeps.
            if ws_paths and not _git_ignored(env, repo, ["ws"]):
                assert _our_ignored(ws, ws_paths) == _git_ignored(env, ws, ws_paths)


FIXED_DIRS = ["", "a", "b", "build", "src", "node_modules", "a/b", "a/x/c", "deep/x/y", "ws", "ws/a/b", "src/build"]


@needs_git
@pytest.mark.parametrize("pattern", PATTERNS)
def test_each_pattern_alone_gives_git_verdicts(tmp_path, pattern):
    """Every pattern of the vocabulary, on a fixed tree: in the root and in a nested .gitignore,
    a negation over an info/exclude that ignores everything, seen from the root and from ws/."""
    env = _git_env(tmp_path / "home", global_config=tmp_path / "none", xdg=tmp_path / "xdg")
    repo = tmp_path / "repo"
    repo.mkdir()
    assert _git(env, repo, "init", "-q").returncode == 0
    specs = [(False, tuple(d.split("/")) if d else (), name) for d in FIXED_DIRS for name in FILE_NAMES]
    paths = _build(repo, specs)
    (repo / ".gitignore").write_text(pattern + "\n")
    (repo / "ws" / ".gitignore").write_text(pattern + "\n")
    if pattern.startswith("!"):
        (repo / ".git" / "info" / "exclude").write_text("*\n")
    with mock.patch.dict(os.environ, env, clear=True):
        assert _our_ignored(repo, paths) == _git_ignored(env, repo, paths)
        ws_paths = [p[3:] for p in paths if p.startswith("ws/")]
        if not _git_ignored(env, repo, ["ws"]):
            assert _our_ignored(repo / "ws", ws_paths) == _git_ignored(env, repo / "ws", ws_paths)


@needs_git
def test_linked_worktree_reads_the_shared_info_exclude(tmp_path):
    env = _git_env(tmp_path / "home", global_config=tmp_path / "none", xdg=tmp_path / "xdg")
    main = tmp_path / "main"
    main.mkdir()
    assert _git(env, main, "init", "-q").returncode == 0
    (main / "f").write_text("x")
    _git(env, main, "add", "f")
    assert _git(env, main, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x").returncode == 0
    assert _git(env, main, "worktree", "add", "-q", str(tmp_path / "wt")).returncode == 0
    (main / ".git" / "info" / "exclude").write_text("secret/\n")
    wt = tmp_path / "wt"
    (wt / "secret").mkdir()
    (wt / "secret" / "AGENTS.md").write_text("x")
    (wt / "open").mkdir()
    with mock.patch.dict(os.environ, env, clear=True):
        assert find_repo(wt / "open") is not None
        assert [listing.rel_dir for listing in walk(wt)] == ["", "open"]
        assert _git_ignored(env, wt, ["secret/AGENTS.md"]) == {"secret/AGENTS.md"}


# --------------------------------------------------------------------------- examples


def test_walk_prunes_ignored_dirs_honours_nested_files_and_skips_symlinked_dirs(workspace):
    tmp_path = workspace
    (tmp_path / ".gitignore").write_text("node_modules/\n*.log\n")
    for d in ("src/deep", "node_modules/pkg", "sub", ".git/objects"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "sub" / ".context-companion-ignore").write_text("private/\n")
    (tmp_path / "sub" / "private").mkdir()
    os.symlink(tmp_path, tmp_path / "src" / "loop")
    seen = [l.rel_dir for l in walk(tmp_path)]
    assert seen == ["", "src", "sub", "src/deep"]  # breadth first
    listing = next(l for l in walk(tmp_path) if l.rel_dir == "")
    assert listing.rules.is_ignored("x.log", False) and not listing.rules.is_ignored("x.txt", False)


def test_a_folder_below_the_repository_root_obeys_the_gitignores_above_it(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git" / "info").mkdir(parents=True)
    (repo / ".git" / "info" / "exclude").write_text("scratch/\n")
    (repo / ".gitignore").write_text("vendor/\n/pkg/app/gen/\n")
    app = repo / "pkg" / "app"
    for d in ("vendor/lib", "gen", "out", "scratch", "src"):
        (app / d).mkdir(parents=True)
    (repo / "pkg" / ".gitignore").write_text("app/out/\n")
    with mock.patch.dict(os.environ, {"HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}):
        os.environ.pop("XDG_CONFIG_HOME", None)
        os.environ.pop("GIT_CONFIG_GLOBAL", None)
        assert sorted(listing.rel_dir for listing in walk(app)) == ["", "src"]
        sources = {str(p) for p in ignore_sources(app)}
    assert str(repo / ".gitignore") in sources and str(repo / "pkg" / ".gitignore") in sources
    assert str(repo / ".git" / "info" / "exclude") in sources
    assert str(tmp_path / ".config" / "git" / "ignore") in sources
    assert str(tmp_path / ".gitconfig") in sources
    assert str(app / ".gitignore") not in sources  # inside the folder: the walk itself sees it


def test_an_opened_folder_that_git_ignores_is_still_walked(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("out/\nout/**/*.tmp\n")
    folder = tmp_path / "out" / "site"
    (folder / "docs").mkdir(parents=True)
    with mock.patch.dict(os.environ, {"HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}):
        listings = {listing.rel_dir: listing.rules for listing in walk(folder)}
    assert sorted(listings) == ["", "docs"]
    assert listings["docs"].is_ignored("docs/a.tmp", False)
    assert not listings["docs"].is_ignored("docs/AGENTS.md", False)


def test_symlinked_gitignore_inside_the_tree_is_not_read(tmp_path):
    (tmp_path / "elsewhere").write_text("*\n")
    (tmp_path / "tree" / "sub").mkdir(parents=True)
    os.symlink(tmp_path / "elsewhere", tmp_path / "tree" / ".gitignore")
    assert [listing.rel_dir for listing in walk(tmp_path / "tree")] == ["", "sub"]


def test_too_many_patterns_are_cut_with_a_warning_naming_the_file(workspace, caplog):
    tmp_path = workspace
    (tmp_path / ".gitignore").write_text("".join(f"gen{i}/\n" for i in range(30)) + "\n# tail\nlast/\n")
    for d in ("gen1", "gen4", "gen29", "last"):
        (tmp_path / d).mkdir()
    listings = list(walk(tmp_path, max_patterns=5))
    assert sorted(listing.rel_dir for listing in listings) == ["", "gen29", "last"]
    (warning,) = listings[0].rules.warnings
    assert str(tmp_path / ".gitignore") in warning and "memory.maxIgnorePatterns" in warning and "26" in warning
    assert str(tmp_path / ".gitignore") in caplog.text
    assert not ignore_warnings(listing.rules for listing in walk(tmp_path))  # under the default limit


def test_git_config_values_are_read_like_git(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    cfg = tmp_path / "config"
    cfg.write_text(
        '[core "sub"]\n excludesfile = /nope\n[core]\n\tbare = false\n'
        '\texcludesFile = "/a b/x" # comment\n[alias]\n excludesFile = /nope2\n'
    )
    assert read_core_excludes_file(str(cfg)) == "/a b/x"
    cfg.write_text("[core] excludesfile = ~/ign\\\nore\n")
    assert read_core_excludes_file(str(cfg)) == "~/ignore"
    assert read_core_excludes_file(str(tmp_path / "missing")) is None


def test_many_literal_and_glob_patterns_pick_the_last_match():
    lines = [f"file{i}.txt" for i in range(3000)] + ["*.txt", "!file7.txt", "dir*/", "!dir9/"]
    rules = IgnoreFile(lines, "x")
    assert rules.match("a/file7.txt", False) is False
    assert rules.match("a/file8.txt", False) is True
    assert rules.match("other.md", False) is None
    assert rules.match("dir3", True) is True and rules.match("dir3", False) is None
    assert rules.match("dir9", True) is False


def test_a_huge_ignore_file_is_read_only_up_to_its_byte_cap(tmp_path, monkeypatch, caplog):
    import logging

    import context_companion.ignore.patterns as ignore

    monkeypatch.setattr(ignore, "MAX_IGNORE_FILE_BYTES", 1024)
    lines = ["kept.txt"] + [f"# comment {i:05d}" for i in range(200)] + ["late.txt"]
    (tmp_path / ".gitignore").write_text("\n".join(lines) + "\n")
    with caplog.at_level(logging.WARNING, logger="context_companion.ignore"):
        loaded = ignore.load_ignore_file(str(tmp_path / ".gitignore"))
    assert loaded is not None and loaded.match("kept.txt", False) is True
    assert loaded.match("late.txt", False) is None  # past the cap: never read
    assert any("only its first" in r.message for r in caplog.records)
