"""One cold sample, in a fresh process: ``python -m bench.coldrun KIND ROOT [SETTINGS_JSON]``.

KIND is ``floor`` (the pruned ``os.scandir`` walk), ``walk`` (``context_companion.ignore.walk``)
or ``memory`` (``MemoryStore(...).load()``). Modules are imported and the tokenizer loaded
before the clock starts, so the sample is the first index in a process with empty in-process
caches (the OS page cache is whatever it is: it is never dropped). Prints one JSON line:
``{"seconds": float, "found": [posix relative paths of memory files]}``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .ours import bench_settings, bench_tokenizer, memory_paths, memory_store_class, new_store, walk_found


def main(argv: list[str]) -> int:
    kind, root = argv[0], Path(argv[1])
    if kind == "floor":
        from .floors import pruned_walk

        t0 = time.perf_counter()
        _n, found = pruned_walk(root)
        seconds = time.perf_counter() - t0
    elif kind == "walk":
        import context_companion.ignore  # noqa: F401 - imported before the clock

        t0 = time.perf_counter()
        found = walk_found(root)
        seconds = time.perf_counter() - t0
    elif kind == "memory":
        settings = bench_settings(json.loads(argv[2]))
        tok = bench_tokenizer(settings)
        memory_store_class()  # the import, before the clock
        t0 = time.perf_counter()
        store = new_store(settings, root, tok)
        seconds = time.perf_counter() - t0
        found = memory_paths(store)
    else:
        print(json.dumps({"error": f"unknown kind {kind!r}"}))
        return 2
    print(json.dumps({"seconds": seconds, "found": sorted(found)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
