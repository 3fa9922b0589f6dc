"""The same properties end to end: the real server process over stdio, one process per
position encoding shared by all the examples of a test (hypothesis is synchronous, so these use
:mod:`lsp_pipe_client` rather than the async pytest-lsp harness).

* Random incremental edits (multi-line, emoji, surrogate pairs, CRLF; several changes per
  didChange too) are read back through the server: a selection spanning the whole document
  makes ``getTurnContext`` return the server's copy as ``selectedText``. The selected text joins
  lines with LF (CRLF is not kept in the readback; the exact bytes, CRLF included, are checked on
  pygls' TextDocument in test_reliability_properties.py).
* Random editor histories over LSP (open, edit, close, cursor and selections, settings changes,
  pendingToolCall, forceFull): session A's delta applied to A's previous full context equals the
  full context session B is given at the same moment (otherOpenFiles compared as a set).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from context_companion.context.turn import apply_delta
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from lsp_text_model import ENCODINGS, lsp_lines, normalise, pieces_text, units

BOUNDED = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
BASE_SETTINGS = {"environment": {"placement": "off"}, "context": {"maxSelectedChars": 10_000_000, "maxOpenFiles": 1000}}
WHOLE = (0, 0, 10**6, 0)  # a selection from the start to past the end (clamped by the server)
_counter = itertools.count()


@pytest.fixture(scope="module")
def servers(module_spawn, tmp_path_factory):
    ws = tmp_path_factory.mktemp("sync-ws")
    cache: dict[str, Any] = {}

    def get(encoding: str):
        if encoding not in cache:
            proc = module_spawn([ws], BASE_SETTINGS, position_encodings=[encoding])
            cache[encoding] = (proc, ws)
        return cache[encoding]

    return get


def read_back(proc, uri: str) -> str:
    proc.cursor(uri, 0, 0, [WHOLE])
    result = proc.command("contextCompanion.getTurnContext", {"sessionId": "readback", "forceFull": True})
    active = result["context"]["activeFile"]
    assert active["path"].endswith(uri.rsplit("/", 1)[-1])
    return active.get("selectedText", "")


def as_selected(text: str) -> str:
    return "\n".join(content for _, content in lsp_lines(text))


@BOUNDED
@given(data=st.data(), encoding=st.sampled_from(ENCODINGS))
def test_server_copy_after_random_incremental_edits_equals_the_plain_string(servers, data, encoding):
    proc, ws = servers(encoding)
    uri = (ws / f"doc-{next(_counter)}.txt").as_uri()
    text = data.draw(pieces_text, label="initial text")
    proc.open(uri, text)
    version = 1
    try:
        for _ in range(data.draw(st.integers(1, 4), label="notifications")):
            changes = []
            for _ in range(data.draw(st.integers(1, 3), label="changes in one didChange")):
                lines = lsp_lines(text)
                picks = []
                for _ in range(2):
                    line = data.draw(st.integers(0, len(lines) - 1))
                    start, content = lines[line]
                    column = data.draw(st.integers(0, len(content)))
                    picks.append((start + column, line, units(content[:column], encoding)))
                (a, la, ua), (b, lb, ub) = sorted(picks)
                new = data.draw(pieces_text, label="new text")
                text = text[:a] + new + text[b:]
                changes.append(
                    {
                        "range": {"start": {"line": la, "character": ua}, "end": {"line": lb, "character": ub}},
                        "text": new,
                    }
                )
            version += 1
            proc.change(uri, version, changes)
        assert read_back(proc, uri) == as_selected(text)
    finally:
        proc.close_document(uri)


def test_edit_after_a_form_feed_lands_on_the_line_the_client_meant(servers):
    """A form feed is not a line end for the client (LSP: only LF, CRLF, CR): pygls' splitlines()
    counts it as one, so the server's copy drifts from the editor's."""
    proc, ws = servers("utf-16")
    uri = (ws / "formfeed.py").as_uri()
    proc.open(uri, "import os\n\x0c\ndef main():\n    pass\n")
    try:
        # The client's line 2 is "def main():"; rename it.
        proc.change(
            uri,
            2,
            [{"range": {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 8}}, "text": "run"}],
        )
        assert read_back(proc, uri) == "import os\n\x0c\ndef run():\n    pass\n"
    finally:
        proc.close_document(uri)


def test_cursor_lines_count_a_lone_cr_as_a_line_end(servers):
    """LSP counts CR alone as a line end (old Mac files): line 2 is "third"."""
    proc, ws = servers("utf-16")
    uri = (ws / "classic-mac.txt").as_uri()
    proc.open(uri, "first\rsecond\rthird")
    try:
        proc.cursor(uri, 2, 1, [(2, 0, 2, 5)])
        active = proc.command("contextCompanion.getTurnContext", {"sessionId": "cr", "forceFull": True})["context"][
            "activeFile"
        ]
        assert active["cursor"] == {"line": 3, "character": 2}
        assert active["selectedText"] == "third"
    finally:
        proc.close_document(uri)


# ----------------------------------------------------------------------------- editor histories over LSP

NAMES = ["app.py", "lib/é😀.py", "README.md", ".env", "scratch"]
TEXTS = ["", "x", "line one\nline two\nthree", "é😀b\r\n🧑‍💻 end\r\n", "tab\tand 中文\nlast"]

lsp_op = st.one_of(
    st.tuples(st.just("open"), st.sampled_from(NAMES), st.sampled_from(TEXTS)),
    st.tuples(st.just("close"), st.sampled_from(NAMES)),
    st.tuples(st.just("edit"), st.sampled_from(NAMES), st.sampled_from(TEXTS)),
    st.tuples(
        st.just("cursor"),
        st.sampled_from(NAMES),
        st.integers(0, 4),
        st.integers(0, 12),
        st.lists(st.tuples(st.integers(0, 4), st.integers(0, 12), st.integers(0, 4), st.integers(0, 12)), max_size=2),
    ),
    st.tuples(st.just("settings"), st.integers(1, 4), st.integers(0, 2), st.booleans()),
    st.tuples(st.just("turn"), st.sampled_from(["plain", "plain", "forceFull", "pendingToolCall"])),
)


def uri_of(ws: Path, name: str) -> str:
    return "untitled:Untitled-9" if name == "scratch" else (ws / name).as_uri()


@example(
    ops=[
        ("settings", 4, 1, True),
        ("open", "app.py", TEXTS[2]),
        ("cursor", "app.py", 1, 0, []),
        ("turn", "plain"),
        ("settings", 4, 0, True),
    ]
)
@BOUNDED
@given(ops=st.lists(lsp_op, min_size=1, max_size=20))
def test_each_delta_from_get_turn_context_rebuilds_the_next_full_context(servers, ops):
    proc, ws = servers("utf-16")
    n = next(_counter)
    a, b = f"A-{n}", f"B-{n}"
    opened: dict[str, int] = {}

    def configure(max_open: int, context_lines: int, exclude_defaults: bool) -> None:
        context: dict[str, Any] = {
            "maxOpenFiles": max_open,
            "cursorContextLines": context_lines,
            "maxSelectedChars": 40,
        }
        if not exclude_defaults:
            context["exclude"] = []
        # the user's own exclude (a workspace's could not remove the secret patterns)
        settings = {**BASE_SETTINGS, "context": context, "userValues": ["context.exclude"]}
        proc.notify("workspace/didChangeConfiguration", {"settings": settings})

    configure(4, 0, True)
    seen: dict[str, Any] | None = None
    try:
        for op in [*ops, ("turn", "plain")]:
            kind = op[0]
            if kind == "open":
                uri = uri_of(ws, op[1])
                opened[uri] = 1
                proc.open(uri, op[2])
            elif kind == "close":
                uri = uri_of(ws, op[1])
                opened.pop(uri, None)
                proc.close_document(uri)
            elif kind == "edit":
                uri = uri_of(ws, op[1])
                if uri in opened:
                    opened[uri] += 1
                    proc.change(uri, opened[uri], [{"text": op[2]}])
            elif kind == "cursor":
                _, name, line, char, sels = op
                proc.cursor(uri_of(ws, name), line, char, sels)
            elif kind == "settings":
                configure(*op[1:])
            else:
                mode = op[1]
                args: dict[str, Any] = {"sessionId": a}
                if mode == "forceFull":
                    args["forceFull"] = True
                if mode == "pendingToolCall":
                    args["pendingToolCall"] = True
                turn = proc.command("contextCompanion.getTurnContext", args)
                truth = proc.command("contextCompanion.getTurnContext", {"sessionId": b, "forceFull": True})["context"]
                if mode == "pendingToolCall":
                    assert turn == {"kind": "none", "context": None, "text": None, "memoryUpdates": []}
                    continue
                if seen is None or mode == "forceFull":
                    assert turn["kind"] == "full" and turn["context"] == truth
                elif turn["kind"] == "none":
                    assert normalise(truth) == normalise(seen)
                else:
                    assert turn["kind"] == "delta", turn
                    assert normalise(apply_delta(seen, turn["context"]["changes"])) == normalise(truth)
                seen = truth
    finally:
        for uri in opened:
            proc.close_document(uri)
        for sid in (a, b):
            try:
                proc.command("contextCompanion.endSession", {"sessionId": sid})
            except Exception:
                pass
