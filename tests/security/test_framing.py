"""Malformed frames on stdio: the server says so once and reads on at the next Content-Length
header, instead of going deaf for the rest of the session."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys

from context_companion.lsp.framing import FrameReader
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sockets_support import frame, initialize, parse_frames


def _bodies(data: bytes) -> tuple[list[bytes], FrameReader]:
    """Every body FrameReader yields for ``data``, fed through an asyncio stream like stdin,
    with bodies that are not JSON handed back as the transport does."""

    async def run() -> tuple[list[bytes], FrameReader]:
        reader = asyncio.StreamReader(limit=1 << 16)
        reader.feed_data(data)
        reader.feed_eof()
        frames = FrameReader(reader)
        out = []
        while (body := await asyncio.wait_for(frames.next_body(), 5)) is not None:
            try:
                json.loads(body)
            except ValueError as exc:
                frames.unreadable_body(body, exc)
                continue
            out.append(body)
            frames.good_frame()
        return out, frames

    return asyncio.run(run())


# Random bytes rarely spell a header; mix in the pieces that can mislead a frame reader.
PIECES = [b"Content-Length: ", b"content-length:", b"CONTENT-LENGTH: 99999999", b"Content-Length: 5000", b"Content-Length: 60", b"\r\n", b"\n", b"\r", b"0", b"7",
          b"123", b"Content-Type: x", b"{", b'{"jsonrpc": "2.0"}', b":", b" "]  # fmt: skip
GARBAGE = st.lists(st.one_of(st.binary(max_size=40), st.sampled_from(PIECES)), max_size=30).map(b"".join)


def _msg(i: int) -> dict:
    return {"jsonrpc": "2.0", "id": i, "method": "ping", "params": {"text": "x" * i}}


def _raw(i: int) -> bytes:
    return json.dumps(_msg(i)).encode()


def test_lowercase_header_names_and_lf_only_lines_are_read():
    body = _raw(1)
    data = b"content-length: %d\n\n%s" % (
        len(body),
        body,
    ) + b"CONTENT-LENGTH:%d\r\ncontent-type: application/vscode-jsonrpc; charset=utf-8\n\r\n%s" % (len(body), body)
    bodies, frames = _bodies(data)
    assert bodies == [body, body] and frames.skipped == 0


def test_a_too_short_content_length_costs_one_message_not_the_session():
    good = [_raw(i) for i in range(3)]
    bad = _raw(9)
    data = b"Content-Length: %d\r\n\r\n%s" % (len(bad) - 7, bad) + b"".join(
        b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in good
    )
    bodies, frames = _bodies(data)
    assert bodies == good and frames.skipped >= 1


def test_a_too_long_content_length_resumes_at_the_header_it_swallowed():
    good = [_raw(i) for i in range(3)]
    bad = _raw(9)
    tail = b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in good)
    data = b"Content-Length: %d\r\n\r\n%s" % (len(bad) + 30, bad) + tail
    bodies, _ = _bodies(data)
    assert bodies == good


def test_one_warning_per_run_of_garbage(caplog):
    body = _raw(1)
    junk = b"junk line\r\nmore junk\r\nX-Whatever\r\n\r\n"
    with caplog.at_level(logging.WARNING):
        bodies, _ = _bodies(junk + b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    assert bodies == [body]
    warnings = [r for r in caplog.records if "malformed LSP frame" in r.getMessage()]
    assert len(warnings) == 1 and "next Content-Length" in warnings[0].getMessage()


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(garbage=GARBAGE, count=st.integers(1, 4))
def test_valid_messages_after_random_garbage_are_all_read(garbage, count):
    """Whatever bytes come first (including partial headers), once a blank line and valid frames
    follow, every one of those frames is read, and nothing hangs or raises."""
    good = [_raw(i) for i in range(count)]
    # The blank lines end whatever header block the garbage started.
    data = garbage + b"\r\n\r\n\r\n" + b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in good)
    bodies, _ = _bodies(data)
    assert bodies[-count:] == good


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=2000))
def test_random_byte_streams_end_cleanly(data):
    bodies, _ = _bodies(data)
    assert isinstance(bodies, list)


def test_stdio_server_answers_after_garbage_and_a_lowercase_lf_frame(tmp_path, server_env):
    """The attack as a client would make it: a broken frame, then garbage, then an initialize
    with a lowercase header and LF-only lines: the server logs one line and answers it."""
    init = json.dumps(initialize(1, None, tmp_path)).encode()
    shutdown = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}).encode()
    data = (
        b"Content-Length: 20\r\n\r\n{not json at all....}"
        + b"\x00\xff garbage \r\n"
        + b"content-length: %d\n\n%s" % (len(init), init)
        + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        + b"Content-Length: %d\r\n\r\n%s" % (len(shutdown), shutdown)
        + frame({"jsonrpc": "2.0", "method": "exit"})
    )
    done = subprocess.run(
        [sys.executable, "-m", "context_companion", "serve"],
        input=data,
        capture_output=True,
        env=server_env,
        timeout=60,
    )
    replies = {m.get("id"): m for m in parse_frames(done.stdout) if "id" in m and "method" not in m}
    assert "capabilities" in replies[1]["result"], done.stderr
    assert replies[2]["result"] is None
    assert done.returncode == 0
    stderr = done.stderr.decode()
    assert stderr.count("malformed LSP frame") == 1, stderr
    assert "Traceback" not in stderr
