"""The pipe JSON-RPC client against the bare pygls server: the floor must really do the work."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from bench.lsp_figures import DOC_TEXT, cursor_burst, did_open, typing_burst
from bench.rpc import LspClient, RpcError, ServerGone, file_uri, initialize_params

REPO = Path(__file__).resolve().parents[2]
BARE = [sys.executable, str(REPO / "bench" / "bare_server.py")]


async def _bare(tmp_path: Path) -> LspClient:
    client = await LspClient.spawn(BARE, name="bare", cwd=REPO, stderr_path=tmp_path / "bare.log")
    result = await client.request("initialize", initialize_params(tmp_path), timeout=60)
    assert result["capabilities"]["executeCommandProvider"]["commands"] == ["bare.echo"]
    client.notify("initialized", {})
    return client


async def test_bursts_reach_the_bare_server_in_order(tmp_path: Path) -> None:
    client = await _bare(tmp_path)
    try:
        uri = file_uri(tmp_path / "doc.py")
        client.write(did_open(uri, DOC_TEXT))
        frames, final = typing_burst(uri, 300)
        client.write(frames)
        answer = await client.command("bare.echo", {"probe": True, "uri": uri}, timeout=60)
        assert answer["length"] == len(final)
        assert final.startswith(DOC_TEXT) and final.count("\n") == DOC_TEXT.count("\n") + 7  # a newline every 40 keys

        frames, last, selected = cursor_burst(uri, 200)
        client.write(frames)
        answer = await client.command("bare.echo", {"probe": True}, timeout=60)
        assert answer["cursor"] == last
        assert selected.startswith("# bench document line 02")

        assert await client.command("bare.echo", {"n": 7}) == {"echo": {"n": 7}}
        with pytest.raises(RpcError) as err:
            await client.command("no.such.command", {})
        assert err.value.code == -32602
    finally:
        code = await client.close()
    assert code == 0
    assert client.proc.returncode == 0


async def test_a_server_that_dies_fails_pending_requests_instead_of_hanging(tmp_path: Path) -> None:
    client = await LspClient.spawn([sys.executable, "-c", "import sys; sys.stdin.readline(); sys.exit(3)"], name="dies")
    with pytest.raises(ServerGone):
        await client.request("initialize", initialize_params(tmp_path), timeout=30)
    assert await client.close(timeout=5) == 3


async def test_a_silent_server_times_out_and_is_killed(tmp_path: Path) -> None:
    client = await LspClient.spawn([sys.executable, "-c", "import time; time.sleep(60)"], name="silent")
    with pytest.raises(asyncio.TimeoutError):
        await client.request("initialize", initialize_params(tmp_path), timeout=0.5)
    await client.close(timeout=0.5)
    assert client.proc.returncode is not None
