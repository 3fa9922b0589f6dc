"""Figures tests record (durations, rates, versions), printed at the end of the run.

A test records one with :func:`record_figure`; it travels with the test's report, from an xdist
worker too, and ``tests/conftest.py`` prints every section at the end (``pytest_terminal_summary``)."""

from __future__ import annotations

from typing import Any

import pytest

PROPERTY = "cc-figure"
SECTIONS: dict[str, dict[str, Any]] = {}  # section title -> figure name -> value, as reports arrive


_SENDABLE = (str, int, float, bool, type(None), list, tuple, dict)  # what a worker can send in a report


def record_figure(item: pytest.Item, section: str, name: str, value: Any) -> None:
    item.user_properties.append((PROPERTY, [section, name, value if isinstance(value, _SENDABLE) else str(value)]))


def gather(report: pytest.TestReport) -> None:
    """Keep the figures a test report carries (the same figure in several reports counts once)."""
    for key, value in report.user_properties:
        if key == PROPERTY:
            section, name, figure = value
            SECTIONS.setdefault(section, {})[name] = figure
