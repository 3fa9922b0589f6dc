"""The benchmark modules import each other without a circle, lazy (in-function) imports included."""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def bench_imports() -> dict[str, set[str]]:
    """Module name → the bench modules it imports anywhere in its body."""
    modules = {p.stem for p in BENCH.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in BENCH.glob("*.py"):
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level == 1 and node.module:  # from .x import y
                    edges.add(node.module.split(".")[0])
                elif node.level == 1:  # from . import x, y
                    edges.update(a.name for a in node.names)
                elif node.level == 0 and node.module and node.module.split(".")[0] == "bench":
                    parts = node.module.split(".")
                    edges.update([parts[1]] if len(parts) > 1 else [a.name for a in node.names])
            elif isinstance(node, ast.Import):
                edges.update(a.name.split(".")[1] for a in node.names if a.name.startswith("bench."))
        graph[path.stem] = {e for e in edges if e in modules and e != path.stem}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_sees_a_lazy_circle() -> None:
    assert find_cycle({"coldrun": {"core_figures"}, "core_figures": {"coldrun"}}) == [
        "coldrun",
        "core_figures",
        "coldrun",
    ]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_bench_modules_form_no_import_circle() -> None:
    graph = bench_imports()
    assert "coldrun" in graph and "core_figures" in graph
    assert "ours" in graph["coldrun"] and "ours" in graph["core_figures"]  # the shared pieces sit below both
    cycle = find_cycle(graph)
    assert cycle is None, "bench import circle: " + " → ".join(cycle or [])
