import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { chooseDiscovery, type DiscoveryEntry, parseDiscovery, readDiscoveryFiles, runtimeDirCandidates } from '../src/discovery';
import { isAnnouncedProcess, probeProcess } from '../src/processes';

function entry(over: Partial<DiscoveryEntry>): DiscoveryEntry {
  return { file: 'f', pid: 100, port: 4000, transport: 'tcp', workspaceFolders: [], token: 't', startTime: 7, mtimeMs: 0, ...over };
}

describe('chooseDiscovery: which running server to attach to', () => {
  const alive = (e: DiscoveryEntry) => e.pid !== 666;

  it('takes the live server whose folders hold the workspace, the most specific folder first', () => {
    const entries = [
      entry({ file: 'outer', workspaceFolders: ['/work'], mtimeMs: 9 }),
      entry({ file: 'inner', workspaceFolders: ['/elsewhere', '/work/proj'], mtimeMs: 1 }),
      entry({ file: 'other', workspaceFolders: ['/work/project-two'] }),
    ];
    assert.equal(chooseDiscovery(entries, '/work/proj/src', alive)?.file, 'inner');
    assert.equal(chooseDiscovery(entries, '/work/proj', alive)?.file, 'inner');
    assert.equal(chooseDiscovery(entries, '/work/other', alive)?.file, 'outer');
  });

  it('skips dead processes, other transports and other ports; prefers the newest of equals', () => {
    const entries = [
      entry({ file: 'dead', pid: 666, workspaceFolders: ['/w'], mtimeMs: 50 }),
      entry({ file: 'ws', transport: 'ws', workspaceFolders: ['/w'], mtimeMs: 40 }),
      entry({ file: 'old', workspaceFolders: ['/w'], mtimeMs: 1, port: 1 }),
      entry({ file: 'new', workspaceFolders: ['/w'], mtimeMs: 2, port: 2 }),
    ];
    assert.equal(chooseDiscovery(entries, '/w', alive)?.file, 'new');
    assert.equal(chooseDiscovery(entries, '/w', alive, 'tcp', 1)?.file, 'old');
    assert.equal(chooseDiscovery(entries, '/w', alive, 'ws')?.file, 'ws');
    assert.equal(chooseDiscovery(entries, '/nowhere', alive), undefined);
    assert.equal(chooseDiscovery(entries, '/w-sibling', alive), undefined);
  });
});

describe('reading discovery files', () => {
  it('parses the server format and rejects anything else', () => {
    const text = JSON.stringify({ pid: 1, port: 2, transport: 'tcp', workspaceFolders: ['/w'], token: 'abc' });
    assert.deepEqual(parseDiscovery(text, 'x', 3), {
      file: 'x', pid: 1, port: 2, transport: 'tcp', workspaceFolders: ['/w'], token: 'abc', startTime: null, mtimeMs: 3,
    });
    assert.equal(parseDiscovery('{"pid": "1"}', 'x', 0), undefined);
    assert.equal(parseDiscovery('not json', 'x', 0), undefined);
  });

  it('looks where platformdirs puts the runtime dir', () => {
    assert.deepEqual(runtimeDirCandidates({ XDG_RUNTIME_DIR: '/run/user/1000' }, 1000, '/tmp'), [
      '/run/user/1000/context-companion',
      '/tmp/runtime-1000/context-companion',
    ]);
    assert.deepEqual(runtimeDirCandidates({}, 7, '/tmp'), ['/run/user/7/context-companion', '/tmp/runtime-7/context-companion']);
  });

  it('ignores files that others can read and files that are not server files', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-discovery-'));
    const body = JSON.stringify({ pid: process.pid, port: 9, transport: 'tcp', workspaceFolders: [dir], token: 'x' });
    fs.writeFileSync(path.join(dir, 'server-1-9.json'), body, { mode: 0o600 });
    fs.writeFileSync(path.join(dir, 'server-2-9.json'), body, { mode: 0o644 });
    fs.chmodSync(path.join(dir, 'server-2-9.json'), 0o644);
    fs.writeFileSync(path.join(dir, 'notes.json'), body, { mode: 0o600 });
    fs.symlinkSync(path.join(dir, 'server-1-9.json'), path.join(dir, 'server-3-9.json'));
    const found = readDiscoveryFiles([dir, path.join(dir, 'missing')]);
    assert.deepEqual(found.map((e) => path.basename(e.file)), ['server-1-9.json']);
    fs.rmSync(dir, { recursive: true });
  });
});

describe('chooseDiscovery: a server that has no client yet', () => {
  it('is taken when no server announces the workspace, after one that does', () => {
    const fresh = entry({ file: 'fresh', workspaceFolders: [], mtimeMs: 99 });
    const mine = entry({ file: 'mine', workspaceFolders: ['/w'], mtimeMs: 1 });
    assert.equal(chooseDiscovery([fresh, mine], '/w', () => true)?.file, 'mine');
    assert.equal(chooseDiscovery([fresh, mine], '/other', () => true)?.file, 'fresh');
  });
});

describe('isAnnouncedProcess: a discovery file is believed only for the process that wrote it', () => {
  const uid = process.getuid?.() ?? -1;
  const started = (probeProcess(process.pid) as { startTime: number | null }).startTime;

  it('believes a live process of this user that started when the file says', () => {
    assert.equal(isAnnouncedProcess(process.pid, started, uid), true);
  });

  it('refuses a pid that started at another time (reused since a killed server wrote the file)', () => {
    assert.equal(isAnnouncedProcess(process.pid, (started ?? 0) + 1, uid), false);
    assert.equal(isAnnouncedProcess(process.pid, null, uid), false);
  });

  it("refuses another user's process and a gone one", () => {
    assert.equal(isAnnouncedProcess(process.pid, started, uid, probeProcess, () => uid + 1), false);
    assert.equal(isAnnouncedProcess(2 ** 22 + 7, 1, uid), false);
    assert.equal(isAnnouncedProcess(-1, 1, uid), false);
  });

  it('parses startTime from the file', () => {
    const text = JSON.stringify({ pid: 5, startTime: 123, port: 1, transport: 'tcp', workspaceFolders: [], token: 'x' });
    assert.equal(parseDiscovery(text, 'f', 0)?.startTime, 123);
    assert.equal(parseDiscovery(JSON.stringify({ pid: 5, port: 1, workspaceFolders: [] }), 'f', 0)?.startTime, null);
  });
});
