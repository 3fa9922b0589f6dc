"""The companion's methods, command and settings are documented where users look."""

from __future__ import annotations

from pathlib import Path

from context_companion.lsp import gemini

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_companion_method_and_command_is_in_the_protocol_doc():
    doc = (DOCS / "protocol.md").read_text()
    for name in (gemini.COMPANION_STATUS, gemini.COMPANION_STARTED, gemini.SHOW_DIFF, gemini.CLOSE_DIFF):
        assert f"### `{name}`" in doc, f"{name} missing from docs/protocol.md"
    for name in (
        "ide/contextUpdate",
        "ide/diffAccepted",
        "ide/diffRejected",
        "ide/diffClosed",
        "openDiff",
        "closeDiff",
    ):
        assert f"`{name}" in doc, name


def test_the_user_guide_covers_both_editors_and_containers():
    guide = (DOCS / "editors" / "gemini-cli.md").read_text()
    for needle in (
        "Neovim",
        "VS Code",
        ":ContextCompanionStatus",
        ":ContextCompanionDiffAccept",
        "SSH_CONNECTION",
        "host.docker.internal",
        "/ide status",
        "companion.geminiCli.enabled",
    ):
        assert needle in guide, needle
