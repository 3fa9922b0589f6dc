"""The ide/contextUpdate payload built from the editor state (the shape Gemini CLI's store expects)."""

from __future__ import annotations

from pathlib import Path

from context_companion.bridges.gemini.context import MAX_SELECTED_BYTES, workspace_state
from context_companion.context.state import EditorState, RawPosition
from context_companion.settings import ContextSettings


def uri(name: str) -> str:
    return Path(f"/w/{name}").as_uri()


def files(state):
    return state["workspaceState"]["openFiles"]


def test_active_first_with_one_based_cursor_in_characters_and_only_it_has_cursor():
    editor = EditorState(ContextSettings())
    texts = {uri("b.py"): "b\n", uri("a.py"): "x = '😀é'\n"}
    editor.open(uri("b.py"))
    editor.open(uri("a.py"))
    # UTF-16: the emoji is two units; character 5 (0-based units) is after it.
    editor.set_cursor(uri("a.py"), RawPosition(0, 7), [(RawPosition(0, 5), RawPosition(0, 8))])
    out = files(workspace_state(editor, texts, "utf-16"))
    assert [f["path"] for f in out] == ["/w/a.py", "/w/b.py"]
    assert out[0]["isActive"] is True
    assert out[0]["cursor"] == {"line": 1, "character": 7}
    assert out[0]["selectedText"] == "😀é"
    assert set(out[1]) == {"path", "timestamp"}
    assert out[0]["timestamp"] > out[1]["timestamp"]
    assert workspace_state(editor, texts)["workspaceState"]["isTrusted"] is True


def test_excluded_and_non_file_documents_never_appear_and_an_excluded_active_file_leaves_none_active():
    editor = EditorState(ContextSettings())
    for name in ("a.py", ".env", "keys/id.pem"):
        editor.open(uri(name))
    editor.open("untitled:Untitled-1")
    editor.set_cursor(uri(".env"), RawPosition(0, 0))
    out = files(workspace_state(editor, {uri(".env"): "K=v\n", uri("a.py"): ""}))
    assert [f["path"] for f in out] == ["/w/a.py"]
    assert "isActive" not in out[0] and "cursor" not in out[0]


def test_at_most_ten_files_strictly_ordered_and_long_selections_cut_with_a_marker():
    editor = EditorState(ContextSettings(max_selected_chars=100_000))
    for i in range(15):
        editor.open(uri(f"f{i}.py"))
    big = "x" * (MAX_SELECTED_BYTES * 2)
    editor.set_cursor(uri("f3.py"), RawPosition(0, 0), [(RawPosition(0, 0), RawPosition(0, len(big)))])
    out = files(workspace_state(editor, {uri("f3.py"): big}))
    assert len(out) == 10 and out[0]["path"] == "/w/f3.py"
    stamps = [f["timestamp"] for f in out]
    assert stamps == sorted(stamps, reverse=True) and len(set(stamps)) == 10
    selected = out[0]["selectedText"]
    assert selected.endswith("... [TRUNCATED]") and len(selected.encode()) <= MAX_SELECTED_BYTES


def test_context_switched_off_sends_an_empty_list():
    editor = EditorState(ContextSettings())
    editor.open(uri("a.py"))
    assert files(workspace_state(editor, {}, enabled=False)) == []


def test_selected_credentials_reach_gemini_cli_redacted():
    editor = EditorState(ContextSettings())
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    texts = {uri("deploy.py"): f"aws_key = '{key}'\n"}
    editor.open(uri("deploy.py"))
    editor.set_cursor(uri("deploy.py"), RawPosition(0, 0), [(RawPosition(0, 0), RawPosition(0, 32))])
    out = files(workspace_state(editor, texts, "utf-16"))
    assert key not in repr(out)
    assert "[redacted: aws-access-key]" in out[0]["selectedText"]


def test_open_diffs_are_capped(tmp_path):
    """A CLI cannot open diff after diff without end: past MAX_OPEN_DIFFS waiting for a decision the
    next is refused with a message; a new proposal for a file already shown still replaces it."""
    import asyncio

    from context_companion.bridges.gemini.companion import MAX_OPEN_DIFFS, DiffAnswer, GeminiCompanion

    class Waiting:
        can_show_diff = True

        async def show_diff(self, uri: str, new_text: str, title: str) -> DiffAnswer:
            await asyncio.Event().wait()  # the user never decides
            return DiffAnswer("rejected")

        async def close_diff(self, uri: str) -> str | None:
            return None

    async def run() -> list[bool]:
        bridge = object.__new__(GeminiCompanion)
        bridge._editor, bridge._diffs = Waiting(), {}
        errors = []
        for i in range(MAX_OPEN_DIFFS + 1):
            result = await bridge._open_diff(None, {"filePath": str(tmp_path / f"f{i}.py"), "newContent": "x"})
            errors.append(bool(result.is_error))
        for diff in bridge._diffs.values():
            diff.task.cancel()
        return errors

    errors = asyncio.run(run())
    assert errors == [False] * MAX_OPEN_DIFFS + [True]
