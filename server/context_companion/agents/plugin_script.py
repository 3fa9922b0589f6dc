"""The JavaScript every plugin file of ours shares, whichever agent loads it: the function that runs the hook
command, and the filling of a plugin's template (an agent's module holds its template: where the plugin is called
and how it hands the text to its agent).

``hook(input)`` runs ``COMMAND`` with ``input`` as JSON on stdin in ``input.cwd`` and resolves to the
``hookSpecificOutput.additionalContext`` it printed, or "" when it failed, printed nothing or more than
``MAX_OUTPUT``, or took longer than ``TIMEOUT_MS`` (then it is killed). It needs nothing but Node's
``child_process`` (Bun provides it too).
"""

from __future__ import annotations

TIMEOUT_MS = 10_000
MAX_OUTPUT = 4 * 1024 * 1024

RUNNER = """function hook(input) {
  return new Promise((resolve) => {
    let child = null;
    let done = false;
    let size = 0;
    const chunks = [];
    const finish = (text) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(text);
    };
    const stop = () => {
      try {
        if (child) child.kill("SIGKILL");
      } catch {}
    };
    const timer = setTimeout(() => {
      stop();
      finish("");
    }, TIMEOUT_MS);
    try {
      child = spawn(COMMAND[0], COMMAND.slice(1), { cwd: input.cwd, stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      finish("");
      return;
    }
    child.on("error", () => finish(""));
    child.stdin.on("error", () => {});
    child.stdout.on("data", (chunk) => {
      size += chunk.length;
      if (size > MAX_OUTPUT) {
        stop();
        finish("");
      } else {
        chunks.push(chunk);
      }
    });
    child.on("close", (code) => {
      let text = "";
      try {
        const out = Buffer.concat(chunks).toString("utf8").trim();
        const context = out && code === 0 ? JSON.parse(out)?.hookSpecificOutput?.additionalContext : undefined;
        if (typeof context === "string") text = context;
      } catch {}
      finish(text);
    });
    child.stdin.end(JSON.stringify(input));
  });
}
"""


def fill(template: str, marker: str, command: str) -> str:
    """``template`` (a plugin's JavaScript) with its ``__MARKER__`` line, the shared ``__RUNNER__``, the hook
    ``__COMMAND__`` (setup's hook command, a shell word list) and the bounds filled in."""
    import json
    import shlex

    argv = shlex.split(command)
    return (
        template.replace("__RUNNER__", RUNNER)
        .replace("__MARKER__", marker)
        .replace("__COMMAND__", json.dumps(argv, ensure_ascii=False))
        .replace("__TIMEOUT__", str(TIMEOUT_MS))
        .replace("__MAX_OUTPUT__", f"{MAX_OUTPUT // (1024 * 1024)} * 1024 * 1024")
    )
