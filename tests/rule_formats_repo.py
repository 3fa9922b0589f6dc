"""A repository holding every rule format at the root and in a sub-folder (``pkg/``)."""

from __future__ import annotations

from pathlib import Path

GENERATED = "Use tabs, never spaces.\n"  # one rule generated into three formats

FILES: dict[str, str] = {
    ".git/HEAD": "ref: refs/heads/main\n",
    "AGENTS.md": "ROOT AGENTS\n",
    "AGENTS.override.md": "ROOT OVERRIDE\n",
    "CLAUDE.md": "ROOT CLAUDE\n",
    "GEMINI.md": "ROOT GEMINI\n",
    "pkg/AGENTS.md": "PKG AGENTS\n",
    "pkg/CLAUDE.md": "PKG CLAUDE\n",
    "pkg/mod.py": "import os\n",
    "web/app.ts": "export const x = 1;\n",
    "src/db.sql": "SELECT 1;\n",
    ".context-companion/rules/cc.md": "---\nalwaysApply: true\n---\nCC ALWAYS\n",
    ".cursor/rules/ts.mdc": "---\nglobs: web/**/*.ts\n---\nCURSOR TS\n",
    ".cursor/rules/gen.mdc": "---\nalwaysApply: true\n---\n" + GENERATED,
    "pkg/.cursor/rules/pkg.mdc": "---\nalwaysApply: true\n---\nCURSOR NESTED PKG\n",
    ".cursorrules": "CURSOR LEGACY\n",
    ".github/copilot-instructions.md": "COPILOT REPO\n",
    ".github/instructions/py.instructions.md": "---\napplyTo: '**/*.py'\nexcludeAgent: coding-agent\n---\nCOPILOT PY\n",
    ".github/instructions/review.instructions.md": "---\napplyTo: '**'\nexcludeAgent: code-review\n---\nCOPILOT ALL\n",
    ".claude/rules/root-py.md": "---\npaths: ['*.py']\n---\nCLAUDE TOP PY\n",
    ".claude/rules/any-py.md": "---\npaths: ['**/*.py']\n---\nCLAUDE ANY PY\n",
    ".windsurf/rules/always.md": "---\ntrigger: always_on\n---\n" + GENERATED,
    ".windsurf/rules/ts.md": "---\ntrigger: glob\nglobs: '**/*.ts'\n---\nWINDSURF TS\n",
    ".windsurf/rules/decide.md": "---\ntrigger: model_decision\ndescription: Release steps\n---\nWINDSURF DECIDE\n",
    ".windsurf/rules/manual.md": "---\ntrigger: manual\ndescription: Rarely needed\n---\nWINDSURF MANUAL\n",
    "pkg/.windsurf/rules/pkg.md": "---\ntrigger: always_on\n---\nWINDSURF NESTED PKG\n",
    ".windsurfrules": "WINDSURF LEGACY\n",
    ".clinerules/01-all.md": GENERATED,
    ".clinerules/02-py.md": "---\npaths:\n  - 'pkg/**'\n---\nCLINE PKG\n",
    ".continue/rules/always.md": "---\nname: Always\nalwaysApply: true\n---\nCONTINUE ALWAYS\n",
    ".continue/rules/sql.md": "---\nname: SQL\nregex: '^SELECT'\n---\nCONTINUE SQL REGEX\n",
    ".continue/rules/ts.md": "---\nname: TS\nglobs: web/**\nalwaysApply: false\ndescription: TypeScript rules\n---\nCONTINUE TS\n",
    ".continue/rules/noname.md": "---\ndescription: unnamed\n---\nCONTINUE NONAME\n",
    ".kiro/steering/tech.md": "---\ninclusion: always\n---\nKIRO ALWAYS\n",
    ".kiro/steering/py.md": "---\ninclusion: fileMatch\nfileMatchPattern: '**/*.py'\n---\nKIRO PY\n",
    ".kiro/steering/auto.md": "---\ninclusion: auto\nname: deploy\ndescription: Deploying\n---\nKIRO AUTO\n",
    ".kiro/steering/manual.md": "---\ninclusion: manual\n---\nKIRO MANUAL\n",
    "pkg/.kiro/steering/nested.md": "---\ninclusion: always\n---\nKIRO NESTED (not read)\n",
    ".rules": "ZED RULES\n",
    "AGENT.md": "AGENT DOT MD\n",
    ".junie/guidelines.md": "JUNIE GUIDELINES\n",
    ".roo/rules/01.md": "ROO RULE\n",
    "pkg/.github/copilot-instructions.md": "COPILOT NESTED (not read)\n",
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (relative path → text) under ``root``; returns ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def make_repo(root: Path) -> Path:
    return write_tree(root, FILES)
