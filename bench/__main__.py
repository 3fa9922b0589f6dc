"""``python -m bench``: every figure with its floor, measured in one run; a table on stdout.

Progress goes to stderr, the table to stdout, ``--json PATH`` writes the figures for comparing
runs, ``--markdown PATH`` the table as Markdown (for docs/performance.md).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from . import core_figures, folder_figures, hook_figures, lsp_figures, mcp_figures, soak
from .bpe import ensure_ranks_file
from .core_figures import Context, env_for_children
from .generate import DEFAULT_SEED, TREES, WORK_DIR, ensure_tree
from .report import (
    Figure,
    machine_info,
    machine_text,
    say,
    table_markdown,
    table_text,
    write_json,
)

GROUPS: list[str] = [
    *core_figures.FIGURES,
    *lsp_figures.FIGURES,
    *folder_figures.FIGURES,
    *mcp_figures.FIGURES,
    *hook_figures.FIGURES,
    *soak.FIGURES,
]
ASYNC_FIGURES = {  # run on one event loop
    **lsp_figures.FIGURES,
    **folder_figures.FIGURES,
    **mcp_figures.FIGURES,
    **hook_figures.FIGURES,
    **soak.FIGURES,
}
OPT_IN = soak.OPT_IN  # run only when named in --only (long)
CORE_TIMEOUT = 900.0  # seconds for one in-process group (all its trees)
LSP_TIMEOUT = 900.0


class UsageError(Exception):
    pass


def _names(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m bench",
        description="Context Companion benchmark: each figure against a floor measured in the same run.",
        epilog=f"Figures: {', '.join(GROUPS)} ({', '.join(OPT_IN)} only with --only).",
    )
    ap.add_argument(
        "--trees", default="small,medium", help="comma-separated trees: small, medium, large (default: small,medium)"
    )
    ap.add_argument("--repeat", type=int, default=5, help="runs per figure (median and min–max of these; default 5)")
    ap.add_argument("--json", type=Path, metavar="PATH", help="write the figures as JSON")
    ap.add_argument("--markdown", type=Path, metavar="PATH", help="write the machine line and table as Markdown")
    ap.add_argument("--only", nargs="+", metavar="FIGURE", help="run only these figures (names or comma lists)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"generator seed (default {DEFAULT_SEED})")
    ap.add_argument(
        "--lsp-tree",
        metavar="TREE",
        help="workspace for the server figures (default: medium if run, else the first tree)",
    )
    ap.add_argument(
        "--encoding-file",
        type=Path,
        metavar="PATH",
        help="a real .tiktoken ranks file (default: a BPE learned from the trees)",
    )
    ap.add_argument(
        "--quick", action="store_true", help="smaller counts for a smoke run; figures are not comparable with full runs"
    )
    ap.add_argument("--strict", action="store_true", help="exit 1 when any figure is MISS, WRONG or ERROR")
    ap.add_argument("--work-dir", type=Path, default=WORK_DIR, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.tree_names = _names([args.trees])
    bad = [t for t in args.tree_names if t not in TREES]
    if bad or not args.tree_names:
        raise UsageError(f"unknown tree(s) {', '.join(bad) or '(none given)'}; expected some of {', '.join(TREES)}")
    if len(set(args.tree_names)) != len(args.tree_names):
        raise UsageError("a tree is listed twice in --trees")
    if not 1 <= args.repeat <= 100:
        raise UsageError("--repeat must be between 1 and 100")
    args.groups = _names(args.only) or [g for g in GROUPS if g not in OPT_IN]
    bad = [g for g in args.groups if g not in GROUPS]
    if bad:
        raise UsageError(f"unknown figure(s) {', '.join(bad)}; expected some of {', '.join(GROUPS)}")
    if args.lsp_tree is None:
        args.lsp_tree = "medium" if "medium" in args.tree_names else args.tree_names[0]
    elif args.lsp_tree not in args.tree_names:
        raise UsageError(f"--lsp-tree {args.lsp_tree} is not among --trees {','.join(args.tree_names)}")
    if args.encoding_file is not None and not args.encoding_file.is_file():
        raise UsageError(f"--encoding-file {args.encoding_file}: no such file")
    return args


def _error_figure(group: str, exc: BaseException) -> Figure:
    f = Figure(f"{group}.error", group, f"{group}: harness or server error", "ms")
    f.verdict = "ERROR"
    f.note = f"{type(exc).__name__}: {str(exc)[:300]}"
    return f


def _run_core(group: str, ctx: Context) -> tuple[list[Figure], bool]:
    """Run one in-process group on a worker thread, bounded by CORE_TIMEOUT. Returns (figures, timed_out)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["figs"] = core_figures.FIGURES[group](ctx)
        except BaseException as exc:
            box["exc"] = exc
            box["tb"] = traceback.format_exc()

    th = threading.Thread(target=target, name=f"bench-{group}", daemon=True)
    th.start()
    th.join(CORE_TIMEOUT)
    if th.is_alive():
        f = Figure(f"{group}.timeout", group, f"{group}: did not finish", "ms")
        f.verdict = "ERROR"
        f.note = f"still running after {CORE_TIMEOUT:.0f} s; the run stops here"
        return [f], True
    if "exc" in box:
        say(box["tb"])
        return [_error_figure(group, box["exc"])], False
    return box["figs"], False


async def _run_lsp(groups: list[str], ctx: Context) -> list[Figure]:
    out: list[Figure] = []
    for group in groups:
        say(f"· {group}")
        try:
            out += await asyncio.wait_for(ASYNC_FIGURES[group](ctx), LSP_TIMEOUT)
        except asyncio.TimeoutError:
            out.append(_error_figure(group, TimeoutError(f"not finished after {LSP_TIMEOUT:.0f} s")))
        except Exception as exc:
            say(traceback.format_exc())
            out.append(_error_figure(group, exc))
    return out


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    info = machine_info(Path(__file__).resolve().parent.parent)
    work: Path = args.work_dir
    work.mkdir(parents=True, exist_ok=True)
    trees = {}
    for name in args.tree_names:
        root, man, reused = ensure_tree(name, args.seed, work, log=say)
        say(
            f"{name}: {'reused' if reused else 'generated'} {root} ({man.files_total:,} files, {man.files_visible:,} visible)"
        )
        trees[name] = (root, man)

    if args.encoding_file is not None:
        ranks_path, ranks_label = args.encoding_file.resolve(), f"ranks file {args.encoding_file.name}"
    else:
        ranks_path, merges = ensure_ranks_file(core_figures.corpus(args.seed, 400_000), work / "tokenizer")
        ranks_label = f"BPE learned from the generated text (256 bytes + {merges} merges, o200k split pattern; o200k_base itself is not available offline)"
    settings_data = {"memory": {"readVendorGlobals": False}, "tokens": {"encodingFile": str(ranks_path)}}
    env = env_for_children(work)
    os.environ["CONTEXT_COMPANION_CONFIG_DIR"] = env[
        "CONTEXT_COMPANION_CONFIG_DIR"
    ]  # no user-level memory in-process either
    ctx = Context(
        trees=trees,
        repeat=args.repeat,
        quick=args.quick,
        work=work,
        settings_data=settings_data,
        ranks_path=ranks_path,
        ranks_label=ranks_label,
        env=env,
        log=say,
        lsp_tree=args.lsp_tree,
        seed=args.seed,
    )

    figures: list[Figure] = []
    aborted = False
    for group in [g for g in GROUPS if g in args.groups and g in core_figures.FIGURES]:
        say(f"· {group}")
        figs, aborted = _run_core(group, ctx)
        figures += figs
        if aborted:
            break
    lsp_groups = [g for g in GROUPS if g in args.groups and g in ASYNC_FIGURES]
    if lsp_groups and not aborted:
        figures += asyncio.run(_run_lsp(lsp_groups, ctx))

    run_info = {
        "trees": {
            n: {"files": m.files_total, "visible": m.files_visible, "digest": m.digest} for n, (_r, m) in trees.items()
        },
        "seed": args.seed,
        "repeat": args.repeat,
        "quick": args.quick,
        "figures": args.groups,
        "lspTree": args.lsp_tree,
        "encoding": ranks_label,
        "seconds": round(time.perf_counter() - started, 1),
        "loadavgEnd": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }
    header = f"Context Companion benchmark — {machine_text(info)}"
    if args.quick:
        header += "\nQUICK RUN: reduced counts, not comparable with full runs"
    busy = [
        x for x in (info.get("loadavg") or [0])[:1] + (run_info["loadavgEnd"] or [0])[:1] if x > (info["cores"] or 1)
    ]
    if busy:
        header += (
            f"\nBUSY MACHINE: 1-minute load {max(busy)} on {info['cores']} cores during the run; "
            "other processes competed for the CPU, so ratios are unreliable"
        )
    scope = (
        f"trees: {', '.join(f'{n} ({m.files_total:,} files)' for n, (_r, m) in trees.items())}; repeat {args.repeat}; "
        f"server figures on {args.lsp_tree}; {run_info['seconds']} s"
    )
    print(header)
    print(scope + "\n")
    print(table_text(figures), flush=True)
    if args.json:
        write_json(args.json, info, run_info, figures)
        say(f"wrote {args.json}")
    if args.markdown:
        md = f"{header}\n\n{scope}\n\n{table_markdown(figures)}\n"
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(md, encoding="utf-8")
        say(f"wrote {args.markdown}")
    if aborted:
        sys.stdout.flush()
        os._exit(3)  # a figure thread is still running: leave without waiting for it
    if args.strict and any(f.verdict in ("MISS", "WRONG", "ERROR") for f in figures):
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
        return run(args)
    except UsageError as exc:
        print(f"python -m bench: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("python -m bench: interrupted", file=sys.stderr)
        return 130
    except (OSError, RuntimeError, ValueError) as exc:
        print(f"python -m bench: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
