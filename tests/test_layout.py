"""The package's shape stays as the developers' guide wants it: modules small enough to read whole, and
comments that give the reason, not a tracker reference a reader of the code cannot follow."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "server" / "context_companion"
COMPANION_MAX_LINES = 600

# "issue 26", "issues 12 and 40", "bug #7", "#123", "gh-45", "point 4": which item of a tracker, not why.
TRACKER_REFERENCE = re.compile(
    r"\b(?:issues?|bugs?|tickets?)\s*#?\s*\d+|(?<![\w&#])#\d+\b|\bgh-\d+\b|\bpoint\s+\d+\b", re.IGNORECASE
)


def comments_and_docstrings(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and every string that stands as a statement (docstrings)."""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            yield node.lineno, node.value.value


def test_the_companion_module_stays_under_600_lines() -> None:
    lines = len((PACKAGE / "workspace" / "companion.py").read_text(encoding="utf-8").splitlines())
    assert lines < COMPANION_MAX_LINES, (
        f"workspace/companion.py has {lines} lines: move a responsibility into a module of workspace/ "
        "(as agent_delivery.py, editor_files.py and swaps.py were)"
    )


def test_the_tracker_reference_pattern_finds_what_it_is_for() -> None:
    found = [
        t
        for t in ("(issue 26)", "Issues 12 and 40", "see #123", "gh-45", "point 4 of the list")
        if TRACKER_REFERENCE.search(t)
    ]
    assert len(found) == 5
    kept = ("an issue with the cache", "&#39; entity", "a UTF-8 code point", "## 2. Heading", "port 8080")
    assert not [t for t in kept if TRACKER_REFERENCE.search(t)]


def test_no_comment_or_docstring_in_the_package_names_an_issue() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, text in comments_and_docstrings(path.read_text(encoding="utf-8")):
            for match in TRACKER_REFERENCE.finditer(text):
                at = line + text.count("\n", 0, match.start())
                offenders.append(f"{path.relative_to(PACKAGE)}:{at}: {match.group(0)!r}")
    assert not offenders, "say why, not which issue:\n" + "\n".join(offenders)


# An agent with hooks is named only in its own module of agents/ (and the registry): everything else reads the
# registry. "Cline", the editor extension with a table in memory/agents.py, may be named; its CLI may not.
AGENT_NAMED = re.compile(
    r"qwen|opencode|copilot[-_ ]cli|cline[-_ ]cli|\bkilo(?!bytes?\b|grams?\b|met(?:er|re)s?\b)|\bdroid\b"
    r"|factory[-_ ]droid",
    re.IGNORECASE,
)
TOP_LEVEL = {
    # the command line, the server and the domain packages
    "agents",
    "bridges",
    "cli",
    "context",
    "hooks",
    "ignore",
    "lsp",
    "memory",
    "prompt",
    "settings",
    "setup",
    "tokens",
    "workspace",
    # small helpers every part may use
    "__init__.py",
    "__main__.py",
    "containment.py",
    "discovery.py",
    "errors.py",
    "exclusion.py",
    "fileio.py",
    "frontmatter.py",
    "heap.py",
    "jsonc.py",
    "ownership.py",
    "procs.py",
    "proofs.py",
    "py.typed",
    "ratelimit.py",
    "redaction.py",
    "uris.py",
}
# What every agent's module defines (docs/architecture.md, "Adding an agent").
AGENT_MODULE_NAMES = ("ID", "NAME", "CHECKED", "EVENTS", "LIMIT", "UNIT", "answer", "rules", "setup_file")


def test_the_agent_name_pattern_finds_what_it_is_for() -> None:
    named = (
        "Qwen Code",
        "QWEN.md",
        ".opencode/plugins",
        "GitHub Copilot CLI",
        "copilot-cli",
        "Kilo CLI",
        ".kilocoderules",
        ".kilo/rules",
        "cline-cli",
        "Cline CLI",
        "Factory Droid",
        "droid exec",
    )
    assert [t for t in named if not AGENT_NAMED.search(t)] == []
    kept = (
        "Cline",
        ".clinerules",
        "GitHub Copilot in the editor",
        "copilot",
        "default_factory",
        "kilobytes",
        "android",
    )
    assert [t for t in kept if AGENT_NAMED.search(t)] == []


def test_no_file_outside_agents_names_an_agent_with_hooks() -> None:
    """A new agent is its module, its registry line, its tests and a docs row: nothing outside agents/ lists it, in
    code, comments or docstrings (write "an agent that starts a new process each turn", or move the fact into the
    agent's module)."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*")):
        rel = path.relative_to(PACKAGE)
        if not path.is_file() or rel.parts[0] == "agents" or "__pycache__" in rel.parts:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in AGENT_NAMED.finditer(line):
                offenders.append(f"{rel}:{number}: {match.group(0)!r}")
    assert not offenders, "name the agent only in its module of agents/:\n" + "\n".join(offenders)


def test_the_top_level_holds_the_cli_the_server_and_the_domain_packages_not_agent_files() -> None:
    found = {p.name for p in PACKAGE.iterdir() if p.name != "__pycache__" and not p.name.endswith(".egg-info")}
    assert found == TOP_LEVEL, (
        f"new at the top level: {sorted(found - TOP_LEVEL)}; gone: {sorted(TOP_LEVEL - found)} (an agent's file goes "
        "into agents/, the hook's into hooks/, setup's into setup/)"
    )


def test_every_registered_agent_has_its_module_with_the_whole_interface() -> None:
    import json

    from context_companion.agents import registry
    from context_companion.agents.model import AgentRules, PluginFile, SettingsHooks

    modules = {p.stem for p in (PACKAGE / "agents").glob("*.py")}
    for agent, name in registry.HOOK_AGENTS.items():
        assert name in modules, f"{agent}: no agents/{name}.py"
        module = registry.load(agent)
        missing = [n for n in AGENT_MODULE_NAMES if not hasattr(module, n)]
        assert not missing, f"agents/{name}.py lacks {missing}"
        assert agent == module.ID
        assert module.UNIT in ("characters", "bytes") and module.LIMIT > 0
        assert set(module.EVENTS.values()) <= {"UserPromptSubmit", "SessionStart"} and module.EVENTS
        rules = module.rules()
        assert isinstance(rules, AgentRules) and rules.id == agent and rules.checked == module.CHECKED
        where = module.setup_file()
        assert isinstance(where, SettingsHooks | PluginFile) and where.id == agent and where.name == module.NAME
        assert "the text" in json.dumps(module.answer("UserPromptSubmit", "the text"))
        for short in registry.short_names(agent):
            assert registry.hook_agent(short.upper()) == agent
    for runner in registry.HOOK_RUNNERS:
        assert hasattr(registry.load(runner), "runs_hooks_of"), runner


def test_every_rule_format_an_agent_names_is_one_memory_knows() -> None:
    """Rule formats are plain names (an agent's module brings its own without an edit elsewhere): each one a table
    names is in memory's list, once."""
    from context_companion.memory.agents import AGENTS
    from context_companion.memory.formats import BY_FORMAT, FORMATS

    assert len(BY_FORMAT) == len(FORMATS), "a format name is listed twice"
    for agent in AGENTS.values():
        named = (*agent.rules, *agent.fallback_rules, *agent.attached_rules, *agent.whole_rules)
        assert [f for f in named if f not in BY_FORMAT] == [], agent.id


def test_an_agents_module_is_light_at_import() -> None:
    """The hook imports the registry and one agent's module before every prompt: constants and functions only, no
    typed rows (``dataclasses``) and nothing of the package's other parts at their module level."""
    import json
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from context_companion.agents import registry\n"
        "for agent in registry.HOOK_AGENTS: registry.load(agent)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    modules = set(json.loads(out.stdout))
    from context_companion.agents import registry

    expected = {"context_companion", "context_companion.agents", "context_companion.agents.registry"} | {
        f"context_companion.agents.{name}" for name in registry.HOOK_AGENTS.values()
    }
    assert {m for m in modules if m.startswith("context_companion")} == expected
    assert "dataclasses" not in modules
