import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { acquireDataDirLock, DataDirInUseError, INSTANCE_RECORD, LOCK_SOCKET, readInstanceRecord } from './data-dir-lock.js';

const lockModule = path.join(path.dirname(fileURLToPath(import.meta.url)), 'data-dir-lock.ts');
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-lock-'));
const children: ChildProcess[] = [];
let dirs = 0;
const freshDir = () => path.join(root, `d${(dirs += 1)}`);

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

interface Contender {
  child: ChildProcess;
  /** Resolves once the process has loaded the module and waits for go(). */
  ready: Promise<void>;
  go(): void;
  outcome: Promise<string>;
}

/**
 * Another process that tries the lock when told to go, prints `held` or `refused <pid>`, and if it holds
 * the lock keeps it until killed.
 */
function contender(dataDir: string): Contender {
  const code = `
    const { acquireDataDirLock } = await import(${JSON.stringify(lockModule)});
    console.log('ready');
    await new Promise((resolve) => process.stdin.once('data', resolve));
    try {
      const lock = await acquireDataDirLock(${JSON.stringify(dataDir)}, { command: 'serve', roles: ['api'] });
      lock.record({ urls: { api: 'http://127.0.0.1:8402' } });
      console.log('held');
      setInterval(() => {}, 1000);
    } catch (error) {
      console.log(error.holder ? 'refused ' + error.holder.pid : 'refused ' + error.message);
      process.exit(0);
    }`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  let out = '';
  const said = (line: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const match = line.exec(out);
        if (match) resolve(match[0]);
      };
      child.stdout!.on('data', check);
      child.once('exit', (exitCode) => reject(new Error(`contender exited ${exitCode}: ${out}`)));
      check();
    });
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return {
    child,
    ready: said(/^ready$/m).then(() => undefined),
    go: () => child.stdin!.write('go\n'),
    outcome: said(/^(held|refused .*)$/m),
  };
}

/** A contender that goes as soon as it is ready. */
async function holderOf(dataDir: string): Promise<Contender> {
  const c = contender(dataDir);
  await c.ready;
  c.go();
  return c;
}

const exited = (child: ChildProcess) => new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));

// No database: a lock file in a data dir. The PostgreSQL pass would run it again unchanged.
const noDatabaseTestOnPostgresPass = Boolean(process.env.DATABASE_URL);

describe.skipIf(noDatabaseTestOnPostgresPass)('data dir lock', () => {
  it('is exclusive, names its holder, and is free again once released', async () => {
    const dataDir = freshDir();
    const lock = await acquireDataDirLock(dataDir, { command: 'serve', roles: ['api', 'worker'] });
    lock.record({ urls: { api: 'http://127.0.0.1:8402' } });
    const record = readInstanceRecord(dataDir);
    expect(record).toMatchObject({ pid: process.pid, command: 'serve', roles: ['api', 'worker'], urls: { api: 'http://127.0.0.1:8402' } });

    const refused = await acquireDataDirLock(dataDir, { command: 'serve' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DataDirInUseError);
    expect((refused as Error).message).toBe(
      `data dir ${dataDir} is in use by another Tollgate instance (pid ${process.pid}, started ${record!.startedAt}, api http://127.0.0.1:8402); ` +
        'stop it first or set TOLLGATE_DATA_DIR to another directory',
    );

    await lock.release();
    expect(fs.existsSync(path.join(dataDir, LOCK_SOCKET))).toBe(false);
    expect(fs.existsSync(path.join(dataDir, INSTANCE_RECORD))).toBe(false);
    const again = await acquireDataDirLock(dataDir, { command: 'migrate' });
    await again.release();
  });

  it('refuses while another process holds it, and is taken over once that process is killed -9', async () => {
    const dataDir = freshDir();
    const holder = await holderOf(dataDir);
    expect(await holder.outcome).toBe('held');
    const refused = (await acquireDataDirLock(dataDir, { command: 'serve' }).catch((error: unknown) => error)) as DataDirInUseError;
    expect(refused).toBeInstanceOf(DataDirInUseError);
    expect(refused.holder?.pid).toBe(holder.child.pid);
    expect(refused.message).toContain(`api http://127.0.0.1:8402`);

    holder.child.kill('SIGKILL');
    await exited(holder.child);
    // The dead holder's socket file and record are still there: neither blocks the next start.
    expect(fs.existsSync(path.join(dataDir, LOCK_SOCKET))).toBe(true);
    const lock = await acquireDataDirLock(dataDir, { command: 'serve' });
    expect(readInstanceRecord(dataDir)?.pid).toBe(process.pid);
    await lock.release();
  }, 30_000);

  it('lets exactly one of several processes racing for a stale lock have it', async () => {
    const dataDir = freshDir();
    const first = await holderOf(dataDir);
    expect(await first.outcome).toBe('held');
    first.child.kill('SIGKILL');
    await exited(first.child);
    // Every contender has loaded the module before any goes, so they all reach the stale file at once.
    const racers = Array.from({ length: 5 }, () => contender(dataDir));
    await Promise.all(racers.map((r) => r.ready));
    for (const racer of racers) racer.go();
    const outcomes = await Promise.all(racers.map((r) => r.outcome));
    const winners = racers.filter((_, i) => outcomes[i] === 'held');
    expect(winners).toHaveLength(1);
    // Refused naming the winner, or (refused in the instant before it wrote its record) saying it is starting.
    const named = new RegExp(`^refused (${winners[0]!.child.pid}$|data dir .* \\(its pid is not recorded yet: it is starting\\))`);
    for (const outcome of outcomes.filter((o) => o !== 'held')) expect(outcome).toMatch(named);
    // And the winner really holds it: a probe from here is refused too.
    await expect(acquireDataDirLock(dataDir, { command: 'serve' })).rejects.toBeInstanceOf(DataDirInUseError);
  }, 30_000);

  it('lets exactly one of many acquisitions interleaved in one process have a stale lock, round after round', async () => {
    const dataDir = freshDir();
    const first = await holderOf(dataDir);
    expect(await first.outcome).toBe('held');
    first.child.kill('SIGKILL');
    await exited(first.child);
    for (let round = 0; round < 5; round += 1) {
      const results = await Promise.allSettled(Array.from({ length: 10 }, () => acquireDataDirLock(dataDir, { command: 'serve' })));
      const held = results.filter((r): r is PromiseFulfilledResult<Awaited<ReturnType<typeof acquireDataDirLock>>> => r.status === 'fulfilled');
      expect(held).toHaveLength(1);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(DataDirInUseError);
      // Leave it stale again for the next round: the socket file stays, nobody listens on it.
      const lockPath = path.join(dataDir, LOCK_SOCKET);
      fs.linkSync(lockPath, `${lockPath}.keep`);
      await held[0]!.value.release();
      fs.renameSync(`${lockPath}.keep`, lockPath);
    }
  });

  it('refuses a data dir whose socket path would be truncated, instead of locking another name', async () => {
    const dataDir = path.join(root, 'x'.repeat(120));
    await expect(acquireDataDirLock(dataDir, { command: 'serve' })).rejects.toThrow(/too long for its lock socket/);
  });
});
