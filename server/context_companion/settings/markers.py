"""The marker on every setting that reads or writes a file, opens a port or guards secrets.

The models carry it (``json_schema_extra``); :func:`.provenance.sensitive` lists the marked keys, which
the server enforces for workspace values and docs/configuration.md documents (tests/test_docs.py).
"""

from __future__ import annotations

from typing import Any, Literal

# What a sensitive setting does, and what a workspace may do with it.
Touches = Literal["reads a file", "writes a file", "reads files", "opens a port", "network", "secrets"]
WorkspacePolicy = Literal["inside the workspace", "yes", "no", "add only"]


def marked(touches: Touches, workspace: WorkspacePolicy) -> dict[str, Any]:
    """The ``json_schema_extra`` of a field that reads or writes a file, opens a port or guards secrets."""
    return {"touches": touches, "workspace": workspace}
