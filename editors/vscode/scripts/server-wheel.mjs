// Put the server wheel the .vsix carries in place: server/context_companion-<version>-py3-none-any.whl,
// <version> being package.json's. The release command places it there before `npm run package`; when it
// is missing, this builds it from the repository (`python3 -m pip wheel --no-deps ../..`; $PYTHON picks
// the interpreter). Fails with one line when the wheel cannot be had, is of another version, or when the
// folder holds a wheel of another version (the .vsix would carry both).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.dirname(new URL('../package.json', import.meta.url).pathname);
const repo = path.resolve(root, '..', '..');
const version = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).version;
const dir = path.join(root, 'server');
const name = `context_companion-${version}-py3-none-any.whl`;
const wheel = path.join(dir, name);

function die(message) {
  console.error(`server-wheel: ${message}`);
  process.exit(1);
}

const others = () => (fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.whl') && f !== name) : []);
if (others().length > 0) {
  die(`${dir} holds ${others().join(', ')} besides ${name}: remove it (the .vsix carries one wheel, of the extension's version ${version})`);
}

if (!fs.existsSync(wheel)) {
  if (!fs.existsSync(path.join(repo, 'pyproject.toml'))) {
    die(`${wheel} is missing and ${repo} is not the repository to build it from: put the server wheel there first`);
  }
  const python = process.env.PYTHON || (process.platform === 'win32' ? 'python' : 'python3');
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-wheel-'));
  console.error(`server-wheel: ${name} is missing: building it with ${python} -m pip wheel --no-deps ${repo}`);
  try {
    execFileSync(python, ['-m', 'pip', 'wheel', '--no-deps', '--disable-pip-version-check', '-q', '--wheel-dir', out, repo], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  } catch (err) {
    die(`building the server wheel with ${python} failed (${err.message.split('\n')[0]}); build it yourself: ${python} -m pip wheel --no-deps -w ${dir} ${repo}`);
  }
  const built = fs.readdirSync(out).filter((f) => f.startsWith('context_companion-') && f.endsWith('.whl'));
  if (!built.includes(name)) {
    die(`the repository builds ${built.join(', ') || 'no wheel'}, not ${name}: the server's version and package.json's differ`);
  }
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(path.join(out, name), wheel);
  fs.rmSync(out, { recursive: true, force: true });
}
const size = fs.statSync(wheel).size;
if (size < 1024) die(`${wheel} is ${size} bytes: not a wheel`);
console.error(`server-wheel: the .vsix carries ${path.relative(root, wheel)} (${Math.round(size / 1024)} KiB)`);
