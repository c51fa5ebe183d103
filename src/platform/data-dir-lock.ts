// One Tollgate process per data dir. PGlite, the devchain's state file and its orphan reaper, and the
// admin socket all assume they are alone in the data dir, so `serve` (and the CLI when it opens the data
// dir itself) takes this lock before touching anything else there.
//
// The lock is a Unix socket file, <dataDir>/lock.sock, that the holder listens on:
// - the kernel releases it with the process, kill -9 included: a connect to a dead holder's file is
//   refused, so a stale file never blocks a restart (it is removed and taken);
// - it lives on the data dir's filesystem, so it also excludes a process in another container or network
//   namespace that mounts the same volume, and works on macOS. (An abstract-namespace socket is per
//   network namespace and Linux-only; a pid file needs a liveness check that pid reuse defeats, and
//   pid 1 in a restarted container is the usual case.)
// Taking it: listen on a fresh name, then link(2) that socket to lock.sock, an atomic create that fails
// when lock.sock exists. So lock.sock only ever names a listening socket or a dead one (a plain bind would
// show the name before listen(), when a connect is refused as if its holder were dead).
// A dead one is removed under a second such lock, lock.take, held for the moment of the removal: only its
// holder removes a lock.sock it found dead, so that file stays the dead one until removed. The gap left:
// a starter killed in that moment leaves a dead lock.take, which the next starters remove without that
// guard; such a crash and three starters racing within the same milliseconds could let two in.
//
// Beside it, <dataDir>/instance.json records the holder (pid, start time, command, origins) so a refused
// start can name the running instance.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const LOCK_SOCKET = 'lock.sock';
/** Held while removing a dead lock.sock. */
const TAKEOVER_SOCKET = 'lock.take';
export const INSTANCE_RECORD = 'instance.json';
/** A socket's fresh name before it is linked as one of the above: lk-<8 hex>, the longest of them. */
const freshName = () => `lk-${randomBytes(4).toString('hex')}`;
/** sun_path holds 107 bytes and a NUL; libuv silently truncates longer paths, which would lock another name. */
const MAX_SOCKET_PATH = 107;

export interface InstanceRecord {
  pid: number;
  startedAt: string;
  /** `serve`, or the CLI command that opened the data dir itself. */
  command: string;
  roles: string[];
  /** Origins (api, facilitator, …) and the devchain RPC, once listening. */
  urls: Record<string, string>;
  /** Where each listener is bound (not its public URL): the image's HEALTHCHECK probes /ready there (bin/healthcheck.js). */
  listen?: Record<string, string>;
  /** lock.sock's inode when written: a record with another inode is an earlier holder's. */
  lockInode: number;
}

export class DataDirInUseError extends Error {
  /** e.g. `pid 123, started 2026-…, api http://127.0.0.1:8402`. */
  readonly holderDescription: string;

  constructor(
    readonly dataDir: string,
    /** null when the holder has not written its record yet. */
    readonly holder: InstanceRecord | null,
  ) {
    const description = describeHolder(holder);
    super(`data dir ${dataDir} is in use by another Tollgate instance (${description}); stop it first or set TOLLGATE_DATA_DIR to another directory`);
    this.holderDescription = description;
  }
}

export interface DataDirLock {
  readonly dataDir: string;
  /** Adds what the holder knows once it runs (its origins' URLs) to the record. */
  record(update: Partial<Pick<InstanceRecord, 'roles' | 'urls' | 'listen'>>): void;
  /** Lets go of the data dir: the record and the socket file go. Idempotent. */
  release(): Promise<void>;
}

/** Takes the data dir (creating it), or throws DataDirInUseError naming the instance that has it. */
export async function acquireDataDirLock(dataDir: string, holder: { command: string; roles?: string[] }): Promise<DataDirLock> {
  const dir = path.resolve(dataDir);
  if (Buffer.byteLength(path.join(dir, freshName())) > MAX_SOCKET_PATH) {
    throw new Error(`data dir path too long for its lock socket in ${dir} (at most ${MAX_SOCKET_PATH - freshName().length - 1} bytes); use a shorter TOLLGATE_DATA_DIR`);
  }
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const lockPath = path.join(dir, LOCK_SOCKET);
  // A round without an answer saw the file change hands (released, or a dead one removed): try again.
  const giveUpAt = Date.now() + 5_000;
  while (Date.now() < giveUpAt) {
    const held = await listenAs(dir, LOCK_SOCKET);
    if (held) return holdLock(dir, held, holder);
    const state = await probe(lockPath);
    if (state === 'alive') throw new DataDirInUseError(dir, readInstanceRecord(dir));
    if (state === 'dead') await removeDead(dir, lockPath);
  }
  throw new Error(`could not lock data dir ${dir}: ${lockPath} keeps changing hands`);
}

/** Throws DataDirInUseError when a process holds the data dir; creates and changes nothing. */
export async function assertDataDirFree(dataDir: string): Promise<void> {
  const dir = path.resolve(dataDir);
  if ((await probe(path.join(dir, LOCK_SOCKET))) === 'alive') throw new DataDirInUseError(dir, readInstanceRecord(dir));
}

/** The current holder's record, or null when there is none (or it is an earlier, dead holder's). */
export function readInstanceRecord(dataDir: string): InstanceRecord | null {
  const dir = path.resolve(dataDir);
  try {
    const record = JSON.parse(fs.readFileSync(path.join(dir, INSTANCE_RECORD), 'utf8')) as InstanceRecord;
    // The inode tells the holder's record from an earlier one's; inode numbers are reused, so the pid must live too.
    if (record.lockInode !== fs.statSync(path.join(dir, LOCK_SOCKET)).ino) return null;
    process.kill(record.pid, 0);
    return record;
  } catch (error) {
    // EPERM: the pid lives, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? readRecordFile(dir) : null;
  }
}

function readRecordFile(dir: string): InstanceRecord | null {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, INSTANCE_RECORD), 'utf8')) as InstanceRecord;
  } catch {
    return null;
  }
}

function describeHolder(holder: InstanceRecord | null): string {
  if (!holder) return 'its pid is not recorded yet: it is starting';
  const parts = [`pid ${holder.pid}`, `started ${holder.startedAt}`];
  if (holder.command !== 'serve') parts.push(`running \`tollgate ${holder.command}\``);
  else if (holder.urls.api) parts.push(`api ${holder.urls.api}`);
  else if (Object.keys(holder.urls).length > 0) parts.push(Object.entries(holder.urls).map(([name, url]) => `${name} ${url}`)[0]!);
  else parts.push(`roles ${holder.roles.join(',')}, not listening yet`);
  return parts.join(', ');
}

interface Held {
  server: net.Server;
  path: string;
  inode: number;
}

function holdLock(dir: string, held: Held, holder: { command: string; roles?: string[] }): DataDirLock {
  const recordPath = path.join(dir, INSTANCE_RECORD);
  const record: InstanceRecord = {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    command: holder.command,
    roles: holder.roles ?? [],
    urls: {},
    lockInode: held.inode,
  };
  const write = () => {
    const tmp = `${recordPath}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
    fs.renameSync(tmp, recordPath);
  };
  write();
  let released: Promise<void> | null = null;
  return {
    dataDir: dir,
    record(update) {
      Object.assign(record, update);
      if (!released) write();
    },
    release: () =>
      (released ??= (async () => {
        if (readRecordFile(dir)?.pid === process.pid) fs.rmSync(recordPath, { force: true });
        await letGo(held);
      })()),
  };
}

/**
 * Listens on a fresh name in `dir` and links that socket as `name`: null when `name` exists. The fresh
 * name goes once linked, so the socket is reachable through `name` only.
 */
async function listenAs(dir: string, name: string): Promise<Held | null> {
  const fresh = path.join(dir, freshName());
  const server = await new Promise<net.Server>((resolve, reject) => {
    // A prober only needs the connect to succeed.
    const s = net.createServer((socket) => socket.destroy());
    s.once('error', reject);
    s.listen(fresh, () => resolve(s));
  });
  // The lock must never keep the process alive on its own.
  server.unref();
  const target = path.join(dir, name);
  try {
    fs.linkSync(fresh, target);
  } catch (error) {
    // Closing unlinks the fresh name (libuv removes the path it bound).
    await new Promise<void>((resolve) => server.close(() => resolve()));
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return null;
    throw error;
  }
  fs.rmSync(fresh, { force: true });
  return { server, path: target, inode: fs.statSync(target).ino };
}

/** Unlinks our name while still listening (nobody removes a live lock), then closes: never a successor's file. */
async function letGo(held: Held): Promise<void> {
  try {
    if (fs.statSync(held.path).ino === held.inode) fs.rmSync(held.path, { force: true });
  } catch {
    // Already gone.
  }
  await new Promise<void>((resolve) => held.server.close(() => resolve()));
}

/**
 * alive: a process listens (a full backlog or a socket we may not open count as alive: never take a lock
 * we cannot prove dead); dead: nothing listens (its holder died); gone: the file went meanwhile.
 */
function probe(socketPath: string): Promise<'alive' | 'dead' | 'gone'> {
  return new Promise((resolve) => {
    const socket = net.connect(socketPath);
    socket.once('connect', () => {
      socket.destroy();
      resolve('alive');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      socket.destroy();
      resolve(error.code === 'ENOENT' ? 'gone' : error.code === 'ECONNREFUSED' ? 'dead' : 'alive');
    });
  });
}

/**
 * Removes a dead holder's lock.sock while holding lock.take. Only a lock.take holder removes a lock.sock it
 * found dead, and nobody links a new one while that file exists: so it is still the dead one when removed.
 */
async function removeDead(dir: string, lockPath: string): Promise<void> {
  const guard = await listenAs(dir, TAKEOVER_SOCKET);
  if (!guard) {
    // Another starter is removing it now (give it a moment), or died doing so (its lock.take is dead).
    const takeoverPath = path.join(dir, TAKEOVER_SOCKET);
    if ((await probe(takeoverPath)) === 'dead') fs.rmSync(takeoverPath, { force: true });
    else await new Promise((resolve) => setTimeout(resolve, 5));
    return;
  }
  try {
    if ((await probe(lockPath)) === 'dead') fs.rmSync(lockPath, { force: true });
  } finally {
    await letGo(guard);
  }
}
