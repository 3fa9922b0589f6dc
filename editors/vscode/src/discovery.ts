/**
 * Finding a running Context Companion server (started with `--tcp`) and its token from the
 * discovery files it writes: `<user runtime dir>/context-companion/server-<pid>-<port>.json`.
 * No `vscode` import: unit-tested in test/discovery.test.ts.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { isAnnouncedProcess } from './processes';

export interface DiscoveryEntry {
  file: string;
  pid: number;
  port: number;
  transport: string;
  workspaceFolders: string[];
  token: string | null;
  /** When the server's process started (`/proc/<pid>/stat` field 22), `null` where the server could not tell. */
  startTime: number | null;
  /** Modification time (ms), to prefer the newest of equally good files. */
  mtimeMs: number;
}

/**
 * Where the server's platformdirs puts the runtime dir on Linux/macOS: `$XDG_RUNTIME_DIR`, else
 * `/run/user/<uid>`, else `<tmp>/runtime-<uid>`. Every candidate is looked at.
 */
export function runtimeDirCandidates(env: NodeJS.ProcessEnv, uid: number, tmpdir: string): string[] {
  const out: string[] = [];
  if (env.XDG_RUNTIME_DIR) out.push(env.XDG_RUNTIME_DIR);
  out.push(`/run/user/${uid}`, path.join(tmpdir, `runtime-${uid}`));
  return [...new Set(out.map((d) => path.join(d, 'context-companion')))];
}

/** The entry in a discovery file's text, or undefined when it is not one. */
export function parseDiscovery(text: string, file: string, mtimeMs: number): DiscoveryEntry | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null) return undefined;
  const r = raw as Record<string, unknown>;
  if (typeof r.pid !== 'number' || typeof r.port !== 'number' || !Array.isArray(r.workspaceFolders)) return undefined;
  return {
    file,
    pid: r.pid,
    port: r.port,
    transport: typeof r.transport === 'string' ? r.transport : '',
    workspaceFolders: r.workspaceFolders.filter((f): f is string => typeof f === 'string'),
    token: typeof r.token === 'string' ? r.token : null,
    startTime: Number.isSafeInteger(r.startTime) ? (r.startTime as number) : null,
    mtimeMs,
  };
}

function contains(folder: string, workspace: string): boolean {
  const rel = path.relative(path.resolve(folder), path.resolve(workspace));
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * The server to attach to for `workspace`: the process announced (`isAnnounced`: alive, this user's, started
 * when the file says: a file left by a killed server names a pid and a port anyone may hold now) whose workspace folders hold
 * the workspace, with the given transport and port (0: any port); the most specific folder first,
 * then the newest file; failing that, a server that has no client (and so no folders) yet.
 */
export function chooseDiscovery(
  entries: readonly DiscoveryEntry[],
  workspace: string,
  isAnnounced: (entry: DiscoveryEntry) => boolean,
  transport = 'tcp',
  port = 0,
): DiscoveryEntry | undefined {
  let best: { depth: number; entry: DiscoveryEntry } | undefined;
  for (const entry of entries) {
    if (entry.transport !== transport || (port !== 0 && entry.port !== port) || !isAnnounced(entry)) continue;
    const depths = entry.workspaceFolders.filter((f) => contains(f, workspace)).map((f) => path.resolve(f).length);
    // A server without folders has had no client yet (they come with initialize): it may be ours.
    if (depths.length === 0 && entry.workspaceFolders.length > 0) continue;
    const depth = depths.length > 0 ? Math.max(...depths) : -1;
    if (!best || depth > best.depth || (depth === best.depth && entry.mtimeMs > best.entry.mtimeMs)) {
      best = { depth, entry };
    }
  }
  return best?.entry;
}

/**
 * Read every discovery file in `dirs` that is a regular file owned by this user and readable by
 * nobody else (a file others could write is not trusted).
 */
export function readDiscoveryFiles(dirs: readonly string[], uid = process.getuid?.() ?? -1): DiscoveryEntry[] {
  const out: DiscoveryEntry[] = [];
  for (const dir of dirs) {
    let names: string[];
    try {
      names = fs.readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      if (!/^server-\d+-\d+\.json$/.test(name)) continue;
      const file = path.join(dir, name);
      try {
        const st = fs.lstatSync(file);
        if (!st.isFile() || (uid >= 0 && st.uid !== uid) || (st.mode & 0o077) !== 0) continue;
        const entry = parseDiscovery(fs.readFileSync(file, 'utf8'), file, st.mtimeMs);
        if (entry) out.push(entry);
      } catch {
        continue;
      }
    }
  }
  return out;
}

/** The running server for `workspace` on this machine, from its discovery file. */
export function findServer(workspace: string, transport = 'tcp', port = 0): DiscoveryEntry | undefined {
  const uid = process.getuid?.() ?? -1;
  const dirs = runtimeDirCandidates(process.env, uid, os.tmpdir());
  const announced = (entry: DiscoveryEntry) => isAnnouncedProcess(entry.pid, entry.startTime, uid);
  return chooseDiscovery(readDiscoveryFiles(dirs, uid), workspace, announced, transport, port);
}
