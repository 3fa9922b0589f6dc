"""MCP figures: ``context-companion mcp`` driven over stdio by the official MCP Python SDK client."""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from .core_figures import REPO, Context
from .report import Figure, Target, percentile

T_MCP_ROUND_TRIP = Target("abs_le", 2.0, "p50 ≤ 2 ms")


async def fig_mcp_round_trip(ctx: Context) -> list[Figure]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.shared.exceptions import MCPDeprecationWarning

    warnings.filterwarnings("ignore", "ping", MCPDeprecationWarning)  # the floor runs on the 2025 handshake

    n = 200 if ctx.quick else 1000
    root = ctx.trees[ctx.lsp_tree][0]
    f = Figure(
        "mcp.instr.p50",
        "mcp-round-trip",
        f"MCP get_system_instruction ifNoneMatch p50, stdio ({n:,} calls)",
        "ms",
        tree=ctx.lsp_tree,
        target=T_MCP_ROUND_TRIP,
    )
    env = dict(ctx.env)
    if ctx.ranks_path is not None:
        env["CONTEXT_COMPANION_TOKENS__ENCODING_FILE"] = str(ctx.ranks_path)
    argv = ["-m", "context_companion", "mcp", "--no-attach", "--workspace", str(root)]
    params = StdioServerParameters(command=sys.executable, args=argv, env=env, cwd=str(REPO))
    runs: list[list[float]] = []
    floor_runs: list[list[float]] = []
    bad = None
    async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
        first = await client.call_tool("get_system_instruction", {})
        etag = (first.structured_content or {}).get("etag")

        async def instr() -> Any:
            return await client.call_tool("get_system_instruction", {"ifNoneMatch": etag})

        async def timed(call: Callable[[], Any], count: int) -> tuple[list[float], Any]:
            out, last = [], None
            for _ in range(count):
                t0 = time.perf_counter()
                last = await call()
                out.append((time.perf_counter() - t0) * 1000)
            return out, last

        await timed(client.send_ping, 50)  # warm-up
        await timed(instr, 50)
        for _ in range(ctx.repeat):
            lat, _ = await timed(client.send_ping, n)
            floor_runs.append(lat)
            lat, last = await timed(instr, n)
            runs.append(lat)
            if bad is None and (last.is_error or (last.structured_content or {}).get("unchanged") is not True):
                bad = "ifNoneMatch with the current etag did not answer unchanged"
    pooled = [x for r in runs for x in r]
    floor = [x for r in floor_runs for x in r]
    f.value = percentile(pooled, 50)
    per_run = [percentile(r, 50) for r in runs]
    f.lo, f.hi, f.samples = min(per_run), max(per_run), per_run
    f.floor_name = "MCP ping"
    f.floor = percentile(floor, 50)
    floor_per_run = [percentile(r, 50) for r in floor_runs]
    f.floor_lo, f.floor_hi = min(floor_per_run), max(floor_per_run)
    f.note = "p50 over all calls pooled; min–max of the per-run p50"
    return [f.wrong(bad) if bad else f.finish()]


FIGURES: dict[str, Callable[[Context], Any]] = {"mcp-round-trip": fig_mcp_round_trip}
