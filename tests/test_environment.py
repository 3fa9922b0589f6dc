"""The folder tree and environment context."""

from __future__ import annotations

import os
from datetime import date

from context_companion.prompt.environment import environment_context, folder_tree


def make(tree: dict, root):
    for name, value in tree.items():
        if isinstance(value, dict):
            (root / name).mkdir()
            make(value, root / name)
        else:
            (root / name).write_text(value)


def test_tree_is_breadth_first_sorted_and_shows_opaque_dirs(workspace):
    make(
        {
            "src": {"pkg": {"deep.py": ""}, "a.py": ""},
            "node_modules": {"x": {}},
            ".git": {},
            "README.md": "",
            "dist": {},
        },
        workspace,
    )
    text = folder_tree(workspace, 200)
    assert text.splitlines() == [
        f"{workspace}{os.sep}",
        "├── .git/...",
        "├── dist/...",
        "├── node_modules/...",
        "├── src/",
        "│   ├── pkg/",
        "│   │   └── deep.py",
        "│   └── a.py",
        "└── README.md",
    ]


def test_tree_honours_nested_gitignore(workspace):
    make(
        {
            ".gitignore": "*.log\nbuild/\n",
            "a.log": "",
            "build": {"x": ""},
            "sub": {".gitignore": "secret.txt\n", "secret.txt": "", "ok.txt": ""},
        },
        workspace,
    )
    text = folder_tree(workspace, 200)
    assert "a.log" not in text and "build" not in text and "secret.txt" not in text
    assert "ok.txt" in text and ".gitignore" in text


def test_tree_limit_is_breadth_first_and_marks_truncation(workspace):
    make({f"d{i}": {f"f{j}.txt": "" for j in range(5)} for i in range(3)}, workspace)
    text = folder_tree(workspace, 4)
    lines = text.splitlines()[1:]
    entries = [l for l in lines if "..." not in l]
    assert len(entries) == 4  # three folders and one file
    assert "f0.txt" in text and "f1.txt" not in text
    assert text.count("...") >= 2  # truncated d0 and unexplored d1/d2


def test_symlink_loop_is_not_followed(workspace):
    (workspace / "a").mkdir()
    os.symlink(workspace, workspace / "a" / "loop")
    text = folder_tree(workspace, 200)
    assert text.splitlines()[1:] == ["└── a/", "    └── loop"]


def test_environment_context_text(workspace):
    text = environment_context([workspace], date(2026, 1, 2), platform="linux")
    assert "Today's date: Friday, 02 January 2026." in text
    assert "Operating system: linux." in text and f"Workspace folder: {workspace}" in text
    assert environment_context([], date(2026, 1, 2)) == ""
