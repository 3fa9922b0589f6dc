"""In-process figures: walk, memory discovery, folder tree, instruction build, token counting.

Each ``fig_*`` function returns a list of :class:`~bench.report.Figure`. Ours and the floor are
sampled alternately so drift (other load on the machine, CPU frequency) hits both alike. An API
that has not landed yet gives a figure marked ``n/a: <why>`` instead of stopping the run.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .floors import plain_folder_tree, pruned_walk
from .generate import Manifest, restore_mutable
from .ours import (
    Unavailable,
    bench_settings,
    bench_tokenizer,
    memory_paths,
    memory_store_class,
    new_store,
    walk_found,
)
from .report import Figure, Target

REPO = Path(__file__).resolve().parent.parent
TARGET_DISCOVERY = Target("ratio_le", 2.0, "≤ 2× floor")
TARGET_FOLDER_TREE = Target("abs_le", 2.0, "≤ 2 ms")
TARGET_REBUILD = Target("ratio_le", 3.0, "≤ 3× floor")
# A rebuild takes well under a millisecond, so one scheduler hiccup moves a median of ten: take
# more samples (ours and the floor alternate, so both get the same machine).
REBUILD_SAMPLES_PER_REPEAT = 8
REBUILD_WARMUP = 10
TARGET_TREES = ("medium", "large")  # issue 3 states the discovery target for the 40k-file workspace


@dataclass
class Context:
    trees: dict[str, tuple[Path, Manifest]]
    repeat: int
    quick: bool
    work: Path
    settings_data: dict[str, Any]  # wire (camelCase) settings used everywhere in the run
    ranks_path: Path | None
    ranks_label: str
    env: dict[str, str]  # environment for child processes
    log: Callable[[str], None] = print
    lsp_tree: str = "small"
    seed: int = 6
    extra: dict[str, Any] = field(default_factory=dict)


def _check_found(found: list[str], man: Manifest, what: str) -> str | None:
    """A short reason when ``found`` is not the correct set of memory files, else None."""
    got = set(found)
    missing = [p for p in man.memory_expected if p not in got]
    decoys = [p for p in man.decoys if p in got]
    if missing or decoys:
        parts = []
        if missing:
            parts.append(f"{len(missing)} memory file(s) not found, e.g. {missing[0]}")
        if decoys:
            parts.append(f"{len(decoys)} ignored decoy(s) found, e.g. {decoys[0]}")
        return f"{what}: " + "; ".join(parts)
    return None


def _ms(seconds: list[float]) -> list[float]:
    return [s * 1000 for s in seconds]


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


# --------------------------------------------------------------------------- walk (info)


def fig_walk(ctx: Context) -> list[Figure]:
    """ignore.walk (matching memory names like the floor does) against the pruned walk, warm."""
    out = []
    for name, (root, man) in ctx.trees.items():
        f = Figure(f"walk.warm.{name}", "walk", "gitignore-aware walk (ignore.walk), warm", "ms", tree=name)
        ours: list[float] = []
        floor: list[float] = []
        walk_found(root)
        pruned_walk(root)  # warm both
        found: list[str] = []
        floor_found: list[str] = []
        for _ in range(max(3, ctx.repeat)):
            t, found = _timed(lambda: walk_found(root))
            ours.append(t)
            t, (_n, floor_found) = _timed(lambda: pruned_walk(root))
            floor.append(t)
        f.set_samples(_ms(ours))
        f.set_floor("pruned walk", _ms(floor))
        f.note = "the walker under memory discovery; no target of its own"
        bad = _check_found(found, man, "ignore.walk")
        if sorted(floor_found) != man.memory_root_pruned:
            bad = (bad + "; " if bad else "") + "floor walk saw an unexpected set of memory files"
        out.append(f.wrong(bad) if bad else f.finish())
    return out


# --------------------------------------------------------------------------- discovery


def _cold_sample(ctx: Context, kind: str, root: Path) -> tuple[float, list[str]]:
    argv = [sys.executable, "-m", "bench.coldrun", kind, str(root)]
    if kind == "memory":
        argv.append(json.dumps(ctx.settings_data))
    try:
        proc = subprocess.run(argv, cwd=REPO, env=ctx.env, capture_output=True, text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"cold {kind} sample did not finish in 300 s") from None
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
        raise Unavailable(f"cold {kind} sample failed (exit {proc.returncode}): {tail}")
    data = json.loads(lines[-1])
    return float(data["seconds"]), list(data["found"])


def fig_discovery(ctx: Context) -> list[Figure]:
    out: list[Figure] = []
    settings = bench_settings(ctx.settings_data)
    for name, (root, man) in ctx.trees.items():
        cold = Figure(f"discovery.cold.{name}", "discovery", "memory discovery, cold (new process)", "ms", tree=name)
        warm = Figure(f"discovery.warm.{name}", "discovery", "memory discovery, warm", "ms", tree=name)
        if name in TARGET_TREES:
            cold.target = warm.target = TARGET_DISCOVERY
        else:
            warm.note = (
                f"no target on a {man.files_visible}-file tree: reading and parsing its memory and rule files "
                "outweighs the walk; the 2× target is for the 40k-file tree and up (issue 3)"
            )
        try:
            memory_store_class()
            tok = bench_tokenizer(settings)
            # warm: a new store per sample in this process, after one load
            found = memory_paths(new_store(settings, root, tok))
            bad = _check_found(found, man, "MemoryStore")
            ours: list[float] = []
            floor: list[float] = []
            for _ in range(ctx.repeat):
                gc.collect()
                t, _store = _timed(lambda: new_store(settings, root, tok))
                ours.append(t)
                del _store
                t, _ = _timed(lambda: pruned_walk(root))
                floor.append(t)
            warm.set_samples(_ms(ours))
            warm.set_floor("pruned walk", _ms(floor))
            out.append(warm.wrong(bad) if bad else warm.finish())
            ours, floor = [], []
            cold_bad = None
            for _ in range(ctx.repeat):
                t, found = _cold_sample(ctx, "memory", root)
                ours.append(t)
                cold_bad = cold_bad or _check_found(found, man, "MemoryStore (cold)")
                t, _ = _cold_sample(ctx, "floor", root)
                floor.append(t)
            cold.set_samples(_ms(ours))
            cold.set_floor("pruned walk", _ms(floor))
            cold.note = "first load in a fresh process (imports excluded); the OS page cache stays warm"
            if cold.target is None:
                cold.note += "; " + warm.note
            out.append(cold.wrong(cold_bad) if cold_bad else cold.finish())
        except Unavailable as exc:
            out += [cold.unavailable(str(exc)), warm.unavailable(str(exc))]
    return out


# --------------------------------------------------------------------------- huge ignore file

TARGET_HUGE_IGNORE = Target("abs_le", 2000.0, "≤ 2 s")
HUGE_IGNORE_LINES = 100_000


def huge_ignore_tree(work: Path, lines: int = HUGE_IGNORE_LINES) -> tuple[Path, list[str], list[str]]:
    """A repository whose root ``.gitignore`` has ``lines`` lines of every kind git users write.

    Returns (root, memory files that must be found, memory files that must not). ``early/`` is
    ignored by a line within the default pattern limit; ``late/`` only by a line past it (not
    applied, so found: the cut is visible).
    """
    root = work / f"huge-ignore-{lines}"
    if not (root / ".gitignore").is_file():
        (root / ".git").mkdir(parents=True, exist_ok=True)
        for d in ("kept/src", "early", "late", "vendor/pkg"):
            (root / d).mkdir(parents=True, exist_ok=True)
            (root / d / "AGENTS.md").write_text(f"# {d}\n")
        (root / "AGENTS.md").write_text("# root\n")
        kinds = (
            "generated/module{i}/output.bin",
            "artifact{i}.o",
            "*.ext{i}",
            "build-{i}-*/",
            "**/cache{i}/**",
            "!keep{i}.txt",
            "/out{i}/",
            "# comment {i}",
            "tmp[0-9]{i}?",
            "docs/**/draft{i}.md",
        )
        body = [kinds[i % len(kinds)].format(i=i) for i in range(lines)]
        body[5_000] = "early/"
        body[50_000] = "late/"
        body.append("vendor/")  # the last line: past the limit too
        (root / ".gitignore").write_text("\n".join(body) + "\n")
    found = ["AGENTS.md", "kept/src/AGENTS.md", "late/AGENTS.md", "vendor/pkg/AGENTS.md"]
    return root, found, ["early/AGENTS.md"]


def fig_huge_ignore(ctx: Context) -> list[Figure]:
    """Memory discovery (store load) in a fresh process on a tree with a 100k-line .gitignore."""
    f = Figure(
        "huge_ignore.start",
        "huge-ignore",
        f"start on a {HUGE_IGNORE_LINES // 1000}k-line .gitignore",
        "ms",
        target=TARGET_HUGE_IGNORE,
    )
    root, expected, decoys = huge_ignore_tree(ctx.work)
    try:
        from context_companion.ignore import IgnoreRules
    except ImportError as exc:
        return [f.unavailable(f"context_companion.ignore not importable ({exc})")]
    ours: list[float] = []
    bad = None
    try:
        for _ in range(1 if ctx.quick else max(3, ctx.repeat)):
            t, found = _cold_sample(ctx, "memory", root)
            ours.append(t)
            missing = [p for p in expected if p not in found]
            leaked = [p for p in decoys if p in found]
            if missing or leaked:
                bad = bad or f"missing {missing}, ignored but found {leaked}"
    except Unavailable as exc:
        return [f.unavailable(str(exc))]
    f.set_samples(_ms(ours))
    warnings = IgnoreRules.for_root(root).warnings
    if not any(str(root / ".gitignore") in w for w in warnings):
        bad = bad or "no warning names the cut .gitignore"
    f.note = (
        "memory store load in a fresh process (imports excluded); each ignore file is read up to "
        "memory.maxIgnorePatterns (10,000) patterns, the rest is cut with a warning"
    )
    return [f.wrong(bad) if bad else f.finish()]


# --------------------------------------------------------------------------- import bomb

TARGET_BOMB_TIME = Target("abs_le", 1000.0, "≤ 1 s")
TARGET_BOMB_MEMORY = Target("abs_le", 50.0, "≤ 50 MB")
BOMB_FILES = 12
BOMB_PAYLOAD_LINES = 3_000  # ~120 KB per file: all of them together are over memory.maxTotalBytes


def import_bomb_tree(work: Path) -> Path:
    """Memory files that import each other: naive expansion grows as files^depth; every file also
    carries ~120 KB of text so that the unique content alone is over the 1 MiB total cap."""
    root = work / "import-bomb"
    if not (root / "AGENTS.md").is_file():
        (root / ".git").mkdir(parents=True, exist_ok=True)
        every = " ".join(f"@b{j}.md" for j in range(BOMB_FILES))
        for i in range(BOMB_FILES):
            payload = "".join(f"B{i} payload line {n} of the import bomb.\n" for n in range(BOMB_PAYLOAD_LINES))
            (root / f"b{i}.md").write_text(f"{every}\n{every}\n{payload}")
        (root / "AGENTS.md").write_text(f"{every}\n")
        (root / "CLAUDE.md").write_text(f"{every}\n@AGENTS.md\n")
        (root / "GEMINI.md").write_text(f"{every}\n@CLAUDE.md\n")
    return root


def _bomb_once(settings: Any, root: Path, tok: Any) -> Any:
    return new_store(settings, root, tok).compose([], None)


def fig_import_bomb(ctx: Context) -> list[Figure]:
    """Load and compose memory on the import bomb: time, and memory allocated (tracemalloc peak)."""
    timed = Figure("import_bomb.load", "import-bomb", "import bomb: load + compose", "ms", target=TARGET_BOMB_TIME)
    memory = Figure(
        "import_bomb.memory", "import-bomb", "import bomb: extra memory (peak)", "MiB", target=TARGET_BOMB_MEMORY
    )
    root = import_bomb_tree(ctx.work)
    try:
        settings = bench_settings(ctx.settings_data)
        tok = bench_tokenizer(settings)
        memory_store_class()
    except Unavailable as exc:
        return [timed.unavailable(str(exc)), memory.unavailable(str(exc))]
    cap = settings.memory.max_total_bytes
    times: list[float] = []
    peaks: list[float] = []
    result = None
    for _ in range(1 if ctx.quick else max(3, ctx.repeat)):
        gc.collect()
        t, result = _timed(lambda: _bomb_once(settings, root, tok))
        times.append(t)
        gc.collect()
        tracemalloc.start()
        try:
            _bomb_once(settings, root, tok)
            peaks.append(tracemalloc.get_traced_memory()[1] / (1024 * 1024))
        finally:
            tracemalloc.stop()
    timed.set_samples(_ms(times))
    memory.set_samples(peaks)
    bad = None
    text = result.text if result is not None else ""
    if cap and len(text.encode("utf-8")) > cap:
        bad = f"memory text {len(text.encode('utf-8'))} bytes, over memory.maxTotalBytes {cap}"
    elif any(text.count(f"B{i} payload line 0 of") > 1 for i in range(BOMB_FILES)):
        bad = "a file was inlined twice"
    elif cap and not any("memory.maxTotalBytes" in w for w in (result.warnings if result is not None else ())):
        bad = "no warning names memory.maxTotalBytes although the content is over it"
    note = (
        f"{BOMB_FILES} files of ~120 KB, each importing every other one twice, from 3 memory files; "
        "fresh store each run (walk, reads, expansion, compose, token counts); memory = tracemalloc peak"
    )
    timed.note = memory.note = note
    return [f.wrong(bad) if bad else f.finish() for f in (timed, memory)]


# --------------------------------------------------------------------------- folder tree


def fig_folder_tree(ctx: Context) -> list[Figure]:
    out = []
    for name, (root, _man) in ctx.trees.items():
        f = Figure(
            f"folder_tree.{name}", "folder-tree", "folder tree (200 items)", "ms", tree=name, target=TARGET_FOLDER_TREE
        )
        try:
            from context_companion.prompt.environment import folder_tree
        except ImportError as exc:
            out.append(f.unavailable(f"context_companion.prompt.environment.folder_tree not importable ({exc})"))
            continue
        text = folder_tree(root, max_items=200)
        plain_folder_tree(root, 200)
        ours, floor = [], []
        for _ in range(max(20, ctx.repeat * 10)):
            t, text = _timed(lambda: folder_tree(root, max_items=200))
            ours.append(t)
            t, _ = _timed(lambda: plain_folder_tree(root, 200))
            floor.append(t)
        f.set_samples(_ms(ours))
        f.set_floor("plain BFS listing", _ms(floor))
        bad = None
        if "node_modules/" in text and "node_modules/..." not in text:
            bad = "node_modules/ listed with its content"
        elif any(d in text for d in ("generated/", "debug-0.log")):
            bad = "an ignored entry is listed"
        elif len(text.splitlines()) < 150:
            bad = f"only {len(text.splitlines())} lines where 200 items fit"
        out.append(f.wrong(bad) if bad else f.finish())
    return out


# --------------------------------------------------------------------------- instruction build


def _engine(settings: Any, root: Path, tok: Any, store: Any) -> Any:
    try:
        from context_companion.prompt.engine import InstructionEngine
    except ImportError as exc:
        raise Unavailable(f"context_companion.prompt.engine.InstructionEngine not importable ({exc})") from None
    return InstructionEngine(settings, [root], tokenizer=tok, memory=store)


def _edited(original: bytes, n: int) -> bytes:
    return original + f"\n- Bench edit {n}: keep this line short.\n".encode()


def fig_build(ctx: Context) -> list[Figure]:
    out: list[Figure] = []
    settings = bench_settings(ctx.settings_data)
    tok = bench_tokenizer(settings)
    for name, (root, man) in ctx.trees.items():
        same = Figure(f"build.unchanged.{name}", "build", "instruction build, nothing changed", "ms", tree=name)
        changed = Figure(
            f"build.changed.{name}",
            "build",
            "instruction build, one memory file changed",
            "ms",
            tree=name,
            target=TARGET_REBUILD,
        )
        try:
            try:
                store = new_store(settings, root, tok)
            except Unavailable as exc:
                store = None
                missing = str(exc)
            engine = _engine(settings, root, tok, store)
            first = engine.build()
            samples = []
            for _ in range(max(20, ctx.repeat * 10)):
                t, inst = _timed(engine.build)
                samples.append(t)
            same.set_samples(_ms(samples))
            if inst.etag != first.etag:
                same.wrong("etag changed although nothing did")
            else:
                same.note = "served from the engine's cache" + (
                    "" if store is not None else f" (without memory: {missing})"
                )
                same.finish()
            out.append(same)
            if store is None:
                out.append(changed.unavailable(missing))
                continue
            target = root / "AGENTS.md"
            original = target.read_bytes()
            ours, floor = [], []
            etags = {first.etag}
            bad = None

            def rebuild() -> Any:
                store.apply_changes([target])
                return engine.build()

            try:
                # Untimed rounds first, as a running server has had: CPython specialises the code it
                # runs often, and the first rounds pay for that (edits numbered apart from the timed ones).
                for k in range(REBUILD_WARMUP):
                    target.write_bytes(_edited(original, -1 - k) if k % 2 == 0 else original)
                    rebuild()
                    _floor_rebuild(target, first.text, tok)
                for i in range(max(5, ctx.repeat * REBUILD_SAMPLES_PER_REPEAT)):
                    data = _edited(original, i) if i % 2 == 0 else original
                    target.write_bytes(data)

                    t, inst = _timed(rebuild)
                    ours.append(t)
                    if i % 2 == 0 and inst.etag in etags:
                        bad = bad or "etag unchanged after a memory file changed"
                    etags.add(inst.etag)
                    # The floor too starts right after a write (the same bytes again): the first system
                    # call on a file just written costs more, and ours has paid it already otherwise.
                    target.write_bytes(data)
                    t, _ = _timed(lambda: _floor_rebuild(target, first.text, tok))
                    floor.append(t)
            finally:
                target.write_bytes(original)
                restore_mutable(root, man)
            changed.set_samples(_ms(ours))
            changed.set_floor("read+splice+count+hash", _ms(floor))
            changed.note = "apply_changes([AGENTS.md]) then build()"
            out.append(changed.wrong(bad) if bad else changed.finish())
        except Unavailable as exc:
            out += [same.unavailable(str(exc)), changed.unavailable(str(exc))]
    return out


def _floor_rebuild(path: Path, old_text: str, tok: Any) -> str:
    """The least a rebuild needs: read the file, count its tokens, splice it into the text, hash."""
    text = path.read_text(encoding="utf-8")
    enc = getattr(tok, "_enc", None)
    if enc is not None:
        len(enc.encode_ordinary(text))
    joined = old_text + "\n\n" + text
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- tokens


def corpus(seed: int, size: int) -> str:
    """Deterministic memory-like text of at least ``size`` characters (independent of the trees run)."""
    import random

    from .generate import memory_text

    rng = random.Random(f"{seed}:token-corpus")
    parts: list[str] = []
    total = 0
    i = 0
    while total < size:
        rel = f"pkg{i}/AGENTS.md"
        block = (
            f"--- Context from: {rel} ---\n{memory_text(rng, f'Guide {i}', 3)}\n--- End of Context from: {rel} ---\n\n"
        )
        parts.append(block)
        total += len(block)
        i += 1
    return "".join(parts)


def instruction_text(ctx: Context, size: int = 40_000) -> str:
    """A 40 KB instruction-like text: rendered memory blocks, cut at ``size`` characters (ASCII)."""
    return corpus(ctx.seed, size)[:size]


def fig_tokens(ctx: Context) -> list[Figure]:
    """Counting a 40 KB text never seen (a tokenizer with empty caches each time), and the same text
    with one paragraph changed (what a rebuild after an edit asks), against encoding it whole."""
    from context_companion.tokens import Tokenizer

    settings = bench_settings(ctx.settings_data)
    cold = Figure("tokens.count.40KB", "tokens", "token count, 40 KB instruction, new", "ms")
    warm = Figure("tokens.count.40KB.edited", "tokens", "token count, 40 KB instruction, one paragraph edited", "ms")
    tok = bench_tokenizer(settings)
    if tok.estimated:
        why = f"tokenizer fell back to the estimator: {tok.reason}"
        return [cold.unavailable(why), warm.unavailable(why)]
    enc = tok._enc
    base = instruction_text(ctx)
    tok.count(base)
    head, _, tail = base.partition("\n\n")
    cold_samples, warm_samples, floor = [], [], []
    for i in range(max(20, ctx.repeat * 10)):
        text = f"{i:06d} " + base  # a new text each time
        fresh = Tokenizer(tok.encoding_name, encoding_obj=enc)  # same encoding, empty caches
        t, n_cold = _timed(lambda: fresh.count(text))
        cold_samples.append(t)
        edited = f"{head} {i:06d}\n\n{tail}"  # the first paragraph changed, the rest as counted before
        t, _ = _timed(lambda: tok.count(edited))
        warm_samples.append(t)
        t, n_floor = _timed(lambda: len(enc.encode_ordinary(text)))
        floor.append(t)
        if n_cold != n_floor:
            return [cold.wrong(f"{n_cold} tokens counted, tiktoken says {n_floor}"), warm]
    cold.set_samples(_ms(cold_samples))
    warm.set_samples(_ms(warm_samples))
    for f in (cold, warm):
        f.set_floor("tiktoken encode", _ms(floor))
    cached, _ = _timed(lambda: tok.count(text))
    cold.note = (
        f"encoding: {ctx.ranks_label}; {len(base.encode()):,} bytes → {tok.count(base):,} tokens; "
        f"counted by paragraph; cached count {cached * 1e6:.0f} µs"
    )
    warm.note = "only the edited paragraph is encoded; the others come from the paragraph cache"
    return [cold.finish(), warm.finish()]


VOCAB_TOKENS = 200_000  # o200k_base's size

# Run in a fresh process: prints the RSS (KiB) that loading the ranks file added, tiktoken imported before.
_LOAD_VOCAB = """
import sys, tiktoken, tiktoken_ext.openai_public as public
from context_companion.tokens import Tokenizer, read_ranks
def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
before = rss()
if sys.argv[1] == "ours":
    tok = Tokenizer("o200k_base", sys.argv[2])
    tok.count("counting once loads the encoding")
    assert not tok.estimated, tok.reason
else:  # tiktoken building o200k_base itself (its pattern, these ranks): it keeps the ranks dict
    ranks = read_ranks(sys.argv[2])
    public.load_tiktoken_bpe = lambda *a, **k: ranks
    enc = tiktoken.Encoding(**public.o200k_base())
    enc.encode_ordinary("counting once loads the encoding")
print(rss() - before)
"""


def vocabulary_file(work: Path, tokens: int = VOCAB_TOKENS) -> Path:
    """A ranks file the size of o200k_base (the 256 bytes, then distinct lowercase words); only its
    size matters here, o200k_base itself is not available offline."""
    path = work / "tokenizer" / f"vocab-{tokens}.tiktoken"
    if path.exists():
        return path
    import random

    from .bpe import write_ranks

    rng = random.Random(tokens)
    ranks = {bytes([b]): b for b in range(256)}
    while len(ranks) < tokens:
        ranks.setdefault(bytes(rng.randrange(97, 123) for _ in range(rng.randint(2, 9))), len(ranks))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_ranks(ranks, path)
    return path


def fig_tokens_memory(ctx: Context) -> list[Figure]:
    """Process memory that loading a 200,000-token encoding adds: ours, against tiktoken.Encoding
    built on the same ranks (which keeps them as a Python dict beside its own tables)."""
    size = 20_000 if ctx.quick else VOCAB_TOKENS
    f = Figure("tokens.memory", "tokens-memory", f"tokenizer memory, {size:,}-token vocabulary", "MiB")
    if not Path("/proc/self/status").exists():
        return [f.unavailable("/proc/self/status not readable (not Linux?)")]
    path = vocabulary_file(ctx.work, size)

    def run(kind: str) -> float:
        out = subprocess.run(
            [sys.executable, "-c", _LOAD_VOCAB, kind, str(path)],
            capture_output=True,
            text=True,
            env=ctx.env,
            timeout=120,
            check=False,
        )
        if out.returncode != 0:
            raise Unavailable(f"{kind}: {out.stderr.strip().splitlines()[-1:]}")
        return int(out.stdout.split()[-1]) / 1024

    try:
        runs = 1 if ctx.quick else min(3, ctx.repeat)
        ours = [run("ours") for _ in range(runs)]
        floor = [run("tiktoken") for _ in range(runs)]
    except Unavailable as exc:
        return [f.unavailable(str(exc))]
    f.set_samples(ours)
    f.set_floor("tiktoken.Encoding", floor)
    f.note = (
        f"RSS a fresh process gains loading a {size:,}-token ranks file (o200k_base's size is {VOCAB_TOKENS:,}; "
        "tiktoken imported before); ours empties the ranks dict tiktoken keeps only for pickling"
    )
    return [f.finish()]


FIGURES: dict[str, Callable[[Context], list[Figure]]] = {
    "walk": fig_walk,
    "discovery": fig_discovery,
    "folder-tree": fig_folder_tree,
    "huge-ignore": fig_huge_ignore,
    "import-bomb": fig_import_bomb,
    "build": fig_build,
    "tokens": fig_tokens,
    "tokens-memory": fig_tokens_memory,
    "cache-day": lambda ctx: _cache_day(ctx),
}


def _cache_day(ctx: Context) -> list[Figure]:
    from .cache_day import figures

    return figures(ctx)


def env_for_children(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    config = work / "config"
    config.mkdir(parents=True, exist_ok=True)
    env["CONTEXT_COMPANION_CONFIG_DIR"] = str(config)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.pop("PYTHONHASHSEED", None)
    # An install has its modules' bytecode (pip compiles them), and so have the floors' libraries in
    # site-packages. With PYTHONDONTWRITEBYTECODE set (as on the development machines) a checkout
    # has none, and every child would compile ours from source while the floors' came compiled:
    # every child (ours and the floors) reads and writes its bytecode in one cache of the run's.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    return env
