"""The argument parser of ``context-companion`` (every command but ``hook``, which skips argparse)."""

from __future__ import annotations

from ..agents import registry

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import NoReturn

_PATHS_EPILOG = (
    "Relative --open/--active paths resolve against --workspace when it is given (like git -C), otherwise "
    "against the current directory. A path that does not exist or lies outside the workspace folder is an "
    "error (exit status 2)."
)


_POSITIONS_EPILOG = (
    "Positions are 1-based LINE:COL as editors show them (Ln 5, Col 10); a column counts characters "
    "(Unicode code points), and COL may be one past the line's last character. A position outside the "
    "active file is an error (exit status 2)."
)


def _editor_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", default=None, help="workspace folder (default: current directory)")
    parser.add_argument(
        "--open",
        nargs="*",
        action="extend",
        default=[],
        metavar="FILE",
        help="treat these files as open in the editor; may be repeated, every --open adds (relative to --workspace "
        "when given, else the current directory)",
    )
    parser.add_argument(
        "--active",
        default=None,
        metavar="FILE",
        help="the active file (also open; default: the last --open file; resolved like --open)",
    )


def build_parser() -> argparse.ArgumentParser:
    import argparse

    from .. import __version__

    class OneLineErrors(argparse.ArgumentParser):
        """A usage error is one line and exit 2, as every other user error here (argparse prints the usage
        block first; ``--help`` still shows it)."""

        def error(self, message: str) -> NoReturn:
            self.exit(2, f"context-companion: {usage_error(self.prog, message)} (see {self.prog} --help)\n")

    parser = OneLineErrors(
        prog="context-companion",
        description="Keeps an editor-hosted AI agent's system instruction and editor context true.",
    )
    parser.add_argument("--version", action="version", version=f"context-companion {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = sub.add_parser(
        "serve",
        help="run the language server (stdio by default)",
        description="Run the language server an editor starts: LSP over stdin/stdout, or with --tcp/--ws over a "
        "socket that only clients presenting the token may use. It composes the system instruction and the "
        "per-turn editor context, and tells the client when either changes.",
    )
    transport = serve.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default)")
    transport.add_argument(
        "--tcp", action="store_true", help="listen for one LSP client over TCP (its initialize must carry the token)"
    )
    transport.add_argument(
        "--ws", action="store_true", help="listen for one LSP client over WebSocket (token required; needs pygls[ws])"
    )
    serve.add_argument("--host", default=None, help="address to bind with --tcp/--ws (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port for --tcp/--ws (default 2087)")
    serve.add_argument(
        "--token-file",
        default=None,
        metavar="PATH",
        help="with --tcp/--ws: read the token clients must present from PATH (default: a new random token, "
        "written to the discovery file in the user runtime dir)",
    )
    serve.add_argument(
        "--no-auth",
        action="store_true",
        help="UNSAFE: with --tcp/--ws accept any client without a token or Host/Origin checks "
        "(any local process or web page can then read your memory files)",
    )
    serve.add_argument("--log-file", default=None, help="also write the log to this file")
    serve.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-v info, -vv debug)")
    serve.add_argument(
        "--mcp-endpoint",
        action="store_true",
        help="also serve MCP on 127.0.0.1 from the editor's state, for `context-companion mcp --attach`",
    )
    serve.add_argument("--clientProcessId", default=None, help=argparse.SUPPRESS)  # some clients append it

    instr = sub.add_parser(
        "instruction",
        help="print the system instruction for a workspace, then the memory that comes with the first turn",
        description="Print the system instruction. Memory that applies to the open files only (sub-folder "
        "memory files, glob-scoped rules) comes with the first turn, not in the instruction: it is printed "
        "after the instruction, under a separator line that says so (--instruction-only leaves it out).",
        epilog=_PATHS_EPILOG,
    )
    _editor_arguments(instr)
    instr.add_argument("--profile", default=None, help="agent profile JSON file (model, tools, approvalMode, ...)")
    instr.add_argument(
        "--instruction-only",
        action="store_true",
        help="print the system instruction alone, without the memory that comes with the first turn: the bytes "
        "of --json's text, with no newline added",
    )
    instr.add_argument(
        "--json",
        action="store_true",
        help="print JSON with text (the instruction alone), etag, tokens, memoryFiles, memoryUpdates, ...",
    )
    _add_quiet(instr)

    turn = sub.add_parser(
        "turn",
        help="print the first turn's context for these files: editor context plus memory updates",
        description="Print what contextCompanion.getTurnContext returns for a session's first (full) turn "
        "with these files open: the editor context and the memory that comes with it.",
        epilog=_PATHS_EPILOG + " " + _POSITIONS_EPILOG,
    )
    _editor_arguments(turn)
    turn.add_argument(
        "--cursor",
        default=None,
        metavar="LINE:COL",
        help="the cursor in the active file: 1-based line and column, as editors show them (columns count characters)",
    )
    turn.add_argument(
        "--selection",
        default=None,
        metavar="START:END",
        help="the selection in the active file: START and END are LINE:COL each (e.g. 3:1:5:10, or 3:1-5:10); "
        "END is the position after the last selected character; the cursor is at END unless --cursor says otherwise",
    )
    turn.add_argument("--profile", default=None, help="agent profile JSON file (model, tools, approvalMode, ...)")
    turn.add_argument(
        "--json", action="store_true", help="print the getTurnContext result: kind, context, text, memoryUpdates"
    )
    _add_quiet(turn, json_warnings=False)

    mem = sub.add_parser(
        "memory",
        help="show the memory files found, which are included and why",
        description="List the memory files found for this workspace (AGENTS.md, CLAUDE.md, GEMINI.md, glob-scoped "
        "rules, ...), whether each is included in the instruction, comes with the turn or is left out, and why.",
        epilog=_PATHS_EPILOG,
    )
    _editor_arguments(mem)
    mem.add_argument("--json", action="store_true", help="print JSON")
    _add_quiet(mem)

    exp = sub.add_parser(
        "explain",
        help="which memory and rule files an agent would load, and why",
        description="Show which memory and rule files one agent would load in this workspace by its own rules "
        "(read at start, read on demand, not read), and why: what it misses is what the hooks of `setup` add.",
        epilog=_PATHS_EPILOG,
    )
    exp.add_argument(
        "--agent",
        required=True,
        metavar="AGENT",
        help=_EXPLAIN_AGENTS_HELP,
    )
    _editor_arguments(exp)
    exp.add_argument("--json", action="store_true", help="print JSON")
    _add_quiet(exp)

    agents = sub.add_parser(
        "agents",
        help="the agents explain, hook and setup know: ids, names, short names, where setup writes",
        description="List the agents this installation knows: their ids and the short names the commands take, "
        "whether `hook` and `setup` serve them and where setup writes, whether `explain` knows them. With --json, "
        "the answer of contextCompanion.listAgents: an editor without a running server reads its list here.",
    )
    agents.add_argument("--json", action="store_true", help="print JSON")

    sub.add_parser(
        "compression-prompt",
        help="print the prompt for compressing a conversation",
        description="Print the system prompt that asks a model to condense a long conversation into a state "
        "snapshot (goal, constraints, knowledge, files, recent actions, task state), treating the history as data "
        "(contextCompanion.getCompressionPrompt returns the same).",
    )

    mcp = sub.add_parser(
        "mcp",
        help="serve MCP (tools, resources, a prompt) to an agent over stdio or HTTP",
        description="Serve the instruction, the turn context and the memory files to an MCP client (Claude Code, "
        "Codex, Gemini CLI, ...) over stdio, or over Streamable HTTP on 127.0.0.1 with --http. With an editor's "
        "language server running for the workspace it can be a view of that server (--attach).",
    )
    mcp.add_argument("--workspace", default=".", help="workspace folder (default: current directory)")
    mcp.add_argument(
        "--http",
        nargs="?",
        type=int,
        const=0,
        default=None,
        metavar="PORT",
        help="serve Streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio (no PORT or 0: a free port)",
    )
    attach = mcp.add_mutually_exclusive_group()
    attach.add_argument(
        "--attach",
        action="store_true",
        default=None,
        help="be a view of the running language server for this workspace (default: when exactly one runs)",
    )
    attach.add_argument("--no-attach", dest="attach", action="store_false", help="always read the workspace itself")
    mcp.add_argument(
        "--server-pid",
        type=int,
        default=None,
        metavar="PID",
        help="attach to the language server with this process id (an editor passes its own server's; implies --attach)",
    )
    mcp.add_argument("--read-only", action="store_true", help="refuse add_memory")
    mcp.add_argument(
        "--memory-elsewhere",
        action="store_true",
        help="the agent gets the memory files another way (VS Code's chat instructions): the instruction, turn "
        "context and prompt leave them out unless a call passes includeMemory: true",
    )
    mcp.add_argument("-v", "--verbose", action="count", default=0, help="log more on stderr")

    hook = sub.add_parser(
        "hook",
        help="what an agent's hook runs: the memory it does not read itself, once, as JSON on stdout",
        description="Reads the agent's hook input (JSON) on stdin and prints its hook output "
        '({"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}, or the shape another agent '
        "reads), or nothing when nothing is new. Asks the editor's language server for the "
        "folder (open files, active file), or composes from disk when none runs. Always exits 0; a failure prints "
        f"one line on stderr. Set it up with `setup`. Agents: {HOOK_AGENTS}.",
    )
    hook.add_argument("--agent", required=True, metavar="AGENT", help=_HOOK_AGENTS_HELP)

    setup = sub.add_parser(
        "setup",
        help="write the hooks that run `context-companion hook` into an agent's settings",
        description="Adds SessionStart and the per-prompt hook (UserPromptSubmit; Gemini CLI: BeforeAgent) to the "
        "agent's hooks file in the project (Claude Code's .claude/settings.local.json, Gemini CLI's "
        ".gemini/settings.json, Codex's .codex/hooks.json, ...), or with --user to its user settings "
        "(~/.claude/settings.json or $CLAUDE_CONFIG_DIR/settings.json, ~/.gemini/settings.json, "
        "$CODEX_HOME/hooks.json, ...); an agent that loads plugin files instead gets a plugin file of ours "
        "(docs/agents.md names each agent's files). Edits the file in place: only its own entries change, "
        "your layout and comments stay; the command is the bare context-companion when PATH finds this "
        "installation. Refuses a file its agent could not read or would read another way, or a plugin file that "
        "is not ours (exit 2, one line, file untouched). Claude Code's settings.local.json is personal: in a git "
        "repository setup keeps it out of git as Claude Code does (git's global ignore file). --remove without "
        "--agent takes out every agent's hooks set up here.",
    )
    setup.add_argument(
        "--agent",
        default=None,
        metavar="AGENT",
        help=_HOOK_AGENTS_HELP + "; required, except with --remove (then: every agent set up here)",
    )
    setup.add_argument("--workspace", default=None, help="the project folder (default: current directory)")
    setup.add_argument("--user", action="store_true", help="the agent's user settings instead of the project's")
    setup.add_argument(
        "--remove",
        action="store_true",
        help="take out Context Companion's hooks (only those); a file setup created goes too",
    )
    setup.add_argument("--dry-run", action="store_true", help="print the change as a diff, write nothing")
    return parser


AGENT_HOOK_IDS = tuple(registry.HOOK_AGENTS)
HOOK_AGENTS = registry.choices()
_HOOK_AGENTS_HELP = HOOK_AGENTS + "; case does not matter"
# The tables ``explain`` has besides the agents with hooks (memory.agents, not imported here: the server's start
# reads this parser); a short name that is also one of these ids means the table, not the agent with hooks.
_EDITOR_TABLES = {
    "cursor": "",
    "copilot": "GitHub Copilot in the editor",
    "windsurf": "",
    "cline": "the editor extension",
    "continue": "",
    "kiro": "",
    "zed": "",
    "vscode": "",
    "context-companion": "",
}
_EXPLAIN_AGENTS_HELP = ", ".join(
    [
        *(
            f"{a} (or {', '.join(shorts)})" if shorts else a
            for a in registry.HOOK_AGENTS
            for shorts in [[s for s in registry.short_names(a) if s not in _EDITOR_TABLES]]
        ),
        *(f"{a} ({name})" if name else a for a, name in _EDITOR_TABLES.items()),
    ]
)


def usage_error(prog: str, message: str) -> str:
    """argparse's error in the words of every other error here: ``<command> <what>: <reason>``
    (``turn --cursor: expected one argument``), after the one ``context-companion:`` prefix."""
    import re

    command = prog.removeprefix("context-companion").strip()
    choice = re.fullmatch(r"argument COMMAND: invalid choice: '?([^']*)'? \(choose from (.*)\)", message)
    if choice:
        return f"{choice[1]}: unknown command; commands: {choice[2].replace(chr(39), '')}"
    required = re.fullmatch(r"the following arguments are required: (.*)", message)
    if required:
        message = f"{required[1]}: required"
    message = re.sub(r"^argument ([^:]+): ", r"\1: ", message)
    return f"{command} {message}" if command else message


def _add_quiet(sub: argparse.ArgumentParser, *, json_warnings: bool = True) -> None:
    kept = "; --json keeps them in 'warnings'" if json_warnings else ""
    loudness = sub.add_mutually_exclusive_group()
    loudness.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help=f"print no warnings on stderr (errors still print{kept})",
    )
    loudness.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also repeat the warnings said once per machine (token counts are estimated: said the first time only; "
        "--json results say it every time)",
    )
