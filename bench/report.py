"""Figures, verdicts, the stdout table, the JSON file and the machine description."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

PASS, MISS, NA, WRONG, INFO = "PASS", "MISS", "n/a", "WRONG", "info"


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


@dataclass
class Target:
    """``kind``: ``ratio_le`` / ``ratio_ge`` (against the floor), ``abs_le`` or ``abs_eq`` (against the value)."""

    kind: str
    value: float
    text: str  # as printed, e.g. "≤ 2× walk"

    def check(self, value: float | None, ratio: float | None) -> str:
        if self.kind == "abs_le":
            return NA if value is None else (PASS if value <= self.value else MISS)
        if self.kind == "abs_eq":
            return NA if value is None else (PASS if value == self.value else MISS)
        if ratio is None:
            return NA
        if self.kind == "ratio_le":
            return PASS if ratio <= self.value else MISS
        return PASS if ratio >= self.value else MISS


@dataclass
class Figure:
    id: str  # stable key for comparing runs, e.g. "discovery.cold.medium"
    group: str  # the --only name
    name: str
    unit: str  # "ms", "µs", "msg/s", "MiB"
    tree: str | None = None
    value: float | None = None  # the median (or the named percentile)
    lo: float | None = None
    hi: float | None = None
    samples: list[float] = field(default_factory=list)
    floor_name: str | None = None
    floor: float | None = None
    floor_lo: float | None = None
    floor_hi: float | None = None
    ratio: float | None = None
    target: Target | None = None
    verdict: str = NA
    note: str = ""

    def set_samples(self, samples: list[float], stat: str = "median") -> None:
        self.samples = [float(s) for s in samples]
        if not samples:
            return
        self.value = statistics.median(samples) if stat == "median" else percentile(samples, float(stat[1:]))
        self.lo, self.hi = min(samples), max(samples)

    def set_floor(self, name: str, samples: list[float]) -> None:
        self.floor_name = name
        if samples:
            self.floor = statistics.median(samples)
            self.floor_lo, self.floor_hi = min(samples), max(samples)

    def finish(self) -> Figure:
        if self.verdict in (WRONG,) or (self.verdict == NA and self.note.startswith("n/a")):
            return self
        if self.value is not None and self.floor:
            self.ratio = self.value / self.floor
        if self.value is None:
            self.verdict = NA
        elif self.target is None:
            self.verdict = INFO
        else:
            self.verdict = self.target.check(self.value, self.ratio)
        return self

    def unavailable(self, why: str) -> Figure:
        self.verdict = NA
        self.note = f"n/a: {why}"
        return self

    def wrong(self, why: str) -> Figure:
        self.verdict = WRONG
        self.note = (self.note + "; " if self.note else "") + f"wrong result: {why}"
        if self.value is not None and self.floor:
            self.ratio = self.value / self.floor
        return self


# --------------------------------------------------------------------------- formatting


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit in ("msg/s", "pushes"):
        return f"{value:,.0f}"
    if unit == "MiB":
        return f"{value:.1f}"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _row(f: Figure) -> list[str]:
    rng = f"{fmt(f.lo, f.unit)}–{fmt(f.hi, f.unit)}" if f.lo is not None else "—"
    floor = f"{fmt(f.floor, f.unit)} {f.floor_name}" if f.floor is not None and f.floor_name else "—"
    ratio = f"{f.ratio:.2f}×" if f.ratio is not None else "—"
    target = f.target.text if f.target else "—"
    value = f"{fmt(f.value, f.unit)} {f.unit}" if f.value is not None else "—"
    return [f.name, f.tree or "—", value, rng, floor, ratio, target, f.verdict]


HEAD = ["Figure", "Tree", "Median", "Min–max", "Floor", "Ratio", "Target", "Verdict"]


def _notes(figures: list[Figure]) -> list[tuple[str, str]]:
    """Notes keyed by row numbers; a note shared by several rows is printed once."""
    rows: dict[str, list[int]] = {}
    for i, f in enumerate(figures, 1):
        if f.note:
            rows.setdefault(f.note, []).append(i)
    return [(", ".join(map(str, nums)), note) for note, nums in rows.items()]


def table_text(figures: list[Figure]) -> str:
    rows = [HEAD] + [[f"{i}. {r[0]}", *r[1:]] for i, r in enumerate((_row(f) for f in figures), 1)]
    widths = [max(len(r[c]) for r in rows) for c in range(len(HEAD))]
    lines = []
    for n, r in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=False)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    notes = _notes(figures)
    if notes:
        lines.append("")
        lines.extend(f"  [{i}] {note}" for i, note in notes)
    return "\n".join(lines)


def table_markdown(figures: list[Figure]) -> str:
    def esc(s: str) -> str:
        return s.replace("|", "\\|")

    lines = ["| # | " + " | ".join(HEAD) + " |", "|" + "---|" * (len(HEAD) + 1)]
    for i, f in enumerate(figures, 1):
        lines.append(f"| {i} | " + " | ".join(esc(c) for c in _row(f)) + " |")
    notes = _notes(figures)
    if notes:
        lines.append("")
        lines.extend(f"- [{i}] {esc(note)}" for i, note in notes)
    return "\n".join(lines)


# --------------------------------------------------------------------------- machine


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _mem_total_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError):
        pass
    return None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _git_commit(repo: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine_info(repo: Path) -> dict[str, Any]:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cores": usable,
        "memoryGiB": _mem_total_gib(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "packages": {d: _version(d) for d in ("pygls", "lsprotocol", "tiktoken", "pathspec", "watchdog", "pydantic")},
        "commit": _git_commit(repo),
        "loadavg": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
    }


def machine_text(info: dict[str, Any]) -> str:
    pk = ", ".join(f"{k} {v}" for k, v in info["packages"].items() if v)
    load = f"; load {' '.join(map(str, info['loadavg']))} at the start" if info.get("loadavg") else ""
    return (
        f"{info['cpu']}, {info['cores']} cores, {info['memoryGiB']} GiB RAM; {info['os']}; "
        f"{info['implementation']} {info['python']}; {pk}; commit {info['commit'] or '?'}; {info['date']}{load}"
    )


def write_json(path: Path, info: dict[str, Any], run: dict[str, Any], figures: list[Figure]) -> None:
    data = {
        "schema": 1,
        "machine": info,
        "run": run,
        "figures": [asdict(f) for f in figures],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def say(msg: str) -> None:
    """Progress goes to stderr so stdout holds only the table."""
    print(msg, file=sys.stderr, flush=True)
