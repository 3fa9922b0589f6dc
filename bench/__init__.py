"""Benchmark harness for Context Companion (issue 6): figures with floors measured in the same run.

Run ``python -m bench --help``. See docs/performance.md for what each figure means.
"""
