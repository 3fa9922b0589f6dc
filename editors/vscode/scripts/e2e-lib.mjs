// Helpers the end-to-end suites share (scripts/e2e*.mjs): polling, ports, byte
// comparisons, the recording model stub of tests/agents, the workbench's quick input, starting and stopping code-server.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';

/** User settings that keep a test workbench quiet and offline (both suites add their own). */
export const QUIET_WORKBENCH = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.colorTheme': 'Default Dark Modern',
  'security.workspace.trust.enabled': false,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'git.enabled': false,
  'editor.minimap.enabled': false,
  'window.restoreWindows': 'none',
  // VS Code checks each MCP tool's inputSchema against https://json-schema.org/draft-07/schema, which it
  // downloads; this machine is offline, so point that URL at VS Code's built-in draft-07 copy.
  'json.schemas': [{ url: 'https://json-schema.org/draft-07/schema', schema: { $ref: 'http://json-schema.org/draft-07/schema#' } }],
};

/** The runner's `check`, wrapped so the suite knows afterwards whether any of its checks failed (it then keeps
 *  or prints its logs): `{check, failed}`, `failed()` true once a check threw. */
export function trackFailures(ctx) {
  let failed = false;
  const check = (name, fn, opts) =>
    ctx.check(
      name,
      async () => {
        try {
          await fn();
        } catch (err) {
          failed = true;
          throw err;
        }
      },
      opts,
    );
  return { check, failed: () => failed };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Poll `probe` until it returns a truthy value; throw `what` after `timeoutMs`. Not a timing assertion. */
export async function waitFor(what, probe, timeoutMs = 30_000, everyMs = 250) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) {
      throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${last.message})` : ''}`);
    }
    await sleep(everyMs);
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Length in bytes of the common prefix of two strings' UTF-8 encodings. */
export function commonPrefixBytes(a, b) {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  let i = 0;
  while (i < x.length && i < y.length && x[i] === y[i]) i++;
  return i;
}

/** "97.1% (15963 of 16441 bytes)": the identical leading share of `after` against `before`. */
export function identicalShare(before, after) {
  const same = commonPrefixBytes(before, after);
  const total = Buffer.byteLength(before);
  return { same, total, text: `${((same / total) * 100).toFixed(1)}% (${same} of ${total} bytes)` };
}

// The recording model stub of tests/agents (Python), relaying each request it records as a JSON line.
const STUB_RELAY = `
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
from model_stub import ModelStub
stub = ModelStub()
for name in sys.argv[2:]:
    importlib.import_module(name).install(stub)
stub.start()
print(json.dumps({"url": stub.url}), flush=True)
seen = 0
while True:
    rec = stub.wait_for(lambda r: True, timeout=3600, after=seen)
    seen = rec.seq + 1
    print(json.dumps({"seq": rec.seq, "method": rec.method, "path": rec.path, "body": rec.text}), flush=True)
`;

/**
 * Start the model stub with the route modules `modules` (e.g. ['stub_gemini']); resolves to
 * `{url, requests, process}` once it listens. `requests` fills as the agent calls it.
 */
export async function startStub({ python, agentsDir, modules, env, pidFile }) {
  const child = spawn(python, ['-c', STUB_RELAY, agentsDir, ...modules], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  if (pidFile) fs.appendFileSync(pidFile, `${child.pid}\n`);
  const requests = [];
  let url;
  let buffer = '';
  child.stdout.on('data', (chunk) => {
    buffer += chunk;
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = JSON.parse(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
      if (line.url) url = line.url;
      else requests.push(line);
    }
  });
  await waitFor('the model stub to start', async () => {
    if (child.exitCode !== null) throw new Error(`the model stub exited with ${child.exitCode}`);
    return url;
  });
  return { url, requests, process: child };
}

/** Open the command palette on `page` and run the command with the full label ("Category: Title"). */
export async function runFromPalette(page, label, timeout = 15_000) {
  const box = page.locator('.quick-input-widget .quick-input-box input');
  await page.keyboard.press('Escape');
  await page.keyboard.press('F1');
  await box.waitFor({ state: 'visible', timeout: 10_000 });
  await box.fill(`>${label}`);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: label }).first().waitFor({ state: 'visible', timeout });
  await box.press('Enter');
}

/** The Context Companion status bar entry's text on `page` (icons dropped), or '' when it is not shown. */
export async function statusText(page) {
  return page.evaluate(() => {
    for (const item of document.querySelectorAll('.statusbar-item')) {
      const label = item.getAttribute('aria-label') ?? item.querySelector('[aria-label]')?.getAttribute('aria-label') ?? '';
      if (label.startsWith('Context Companion')) return (item.textContent ?? '').replace(/\s+/g, ' ').trim();
    }
    return '';
  });
}

/** The extension's output channel as VS Code logged it under the user-data folder `userData`. */
export function extensionLog(userData) {
  const found = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.includes('Context Companion')) found.push(full);
    }
  };
  try {
    walk(path.join(userData, 'logs'));
  } catch {
    return '';
  }
  return found.map((f) => `--- ${f}\n${fs.readFileSync(f, 'utf8')}`).join('\n');
}

/**
 * Start a code-server for a suite and wait until it answers /healthz: a config binding 127.0.0.1:`port` without
 * auth, the suite's user-data and extensions folders; each of `before` (extra arguments: `--install-extension
 * X.vsix`, `--uninstall-extension id`) is run first, its last line handed to `log`. `argv`: how to run code-server
 * (`[node, entry]` or `[bin]`); `workspaceTrust`: leave VS Code's workspace trust on. The process leads its own group (stop it with {@link stopCodeServer}); its pid is
 * added to `pidFile` for the suite's clean-up. Resolves to the child process.
 */
export async function launchCodeServer({
  argv,
  config,
  port,
  userData,
  extensions,
  env,
  logFile,
  logFlags = 'w',
  pidFile,
  before = [],
  log = () => {},
  everyMs = 500,
  workspaceTrust = false,
}) {
  fs.writeFileSync(config, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
  const [program, ...first] = argv;
  const common = [...first, '--config', config, '--user-data-dir', userData, '--extensions-dir', extensions];
  for (const args of before) {
    const done = await promisify(execFile)(program, [...common, ...args], { env, timeout: 180_000 });
    log(done.stdout.trim().split('\n').pop());
  }
  const logFd = fs.openSync(logFile, logFlags);
  // workspaceTrust: VS Code's workspace trust stays on (the suite's user settings say how), for Restricted Mode.
  const trust = workspaceTrust ? [] : ['--disable-workspace-trust'];
  const child = spawn(program, [...common, '--disable-telemetry', '--disable-update-check', ...trust], {
    env,
    detached: true,
    stdio: ['ignore', logFd, logFd],
  });
  fs.appendFileSync(pidFile, `${child.pid}\n`);
  await waitFor(
    'code-server to answer /healthz',
    async () => {
      if (child.exitCode !== null) throw new Error(`code-server exited with ${child.exitCode}`);
      return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
    },
    120_000,
    everyMs,
  );
  return child;
}

/** Stop a code-server started by {@link launchCodeServer}: SIGTERM (5 s to go), then SIGKILL to its whole group
 * (the extension host and the language server too). */
export async function stopCodeServer(child) {
  if (!child) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    if (child.exitCode === null && child.signalCode === null) {
      process.kill(-child.pid, 'SIGTERM');
      await Promise.race([exited, sleep(5_000)]);
    }
  } catch {
    /* gone */
  }
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    /* no member left */
  }
}
