/**
 * Processes named in files other programs may have left behind (discovery files, slot locks): alive or gone,
 * when they started, whose they are. A pid alone names nothing for long: a process killed with SIGKILL leaves
 * its files, and its pid may later be another process's, another user's included. No `vscode` import.
 */
import * as fs from 'node:fs';

const code = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | undefined)?.code;

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return code(err) === 'EPERM'; // alive, another user's
  }
}

/** A process now: gone, or alive with its start time (`null` where the system cannot tell). */
export type ProcessState = { alive: false } | { alive: true; startTime: number | null };
export type ProcessProbe = (pid: number) => ProcessState;

/**
 * {@link ProcessProbe} of this machine: `/proc/<pid>/stat` where it can be read (a zombie counts as gone); else
 * (no `/proc`, or another user's process hidden by `hidepid`) the pid alone, by signal 0.
 */
export function probeProcess(pid: number): ProcessState {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return pidAlive(pid) ? { alive: true, startTime: null } : { alive: false };
  }
  // Fields after the command name (which may hold spaces and parentheses): 3 (state) … 22 (starttime).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z' || fields[0] === 'X') return { alive: false };
  const startTime = Number(fields[22 - 3]);
  return { alive: true, startTime: Number.isSafeInteger(startTime) && startTime >= 0 ? startTime : null };
}

/**
 * Whether `pid` is still the process an announcement names: alive, this user's, and started at `startTime`
 * (as the server recorded it). Where `/proc` is missing, a live pid this user may signal counts.
 */
export function isAnnouncedProcess(
  pid: number,
  startTime: number | null,
  uid = process.getuid?.() ?? -1,
  probe: ProcessProbe = probeProcess,
  ownerOf: (pid: number) => number | undefined = procOwner,
): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  const owner = ownerOf(pid);
  if (owner === undefined) {
    // No /proc: the pid alone, and only when it is ours (EPERM: another user's).
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
  if (uid >= 0 && owner !== uid) return false;
  const now = probe(pid);
  return now.alive && startTime !== null && now.startTime === startTime;
}

function procOwner(pid: number): number | undefined {
  try {
    return fs.statSync(`/proc/${pid}`).uid;
  } catch {
    return fs.existsSync('/proc/self') ? -2 : undefined; // with /proc, a missing entry is a gone process
  }
}
