// `tollgate serve` as real processes, for the suites that run a cluster on one PostgreSQL database and one
// chain (test/wallets/policy-cluster.test.ts, test/cluster/): start a node, tell whether a pid still runs,
// kill -9 a node with everything it started, stop one gracefully. Each process started is remembered by
// the NodeProcesses that started it, so afterAll stops every one of them by pid.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { alive } from './processes.js';

export { freePort } from '../wallets/helpers.js';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/tollgate.js');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface ServedProcess {
  child: ChildProcess;
  /** 'SIGKILL' or the exit code. */
  exited: Promise<string | number | null>;
  /** The tail of its stdout and stderr. */
  output: () => string;
  /** The origins it printed once ready (`api`, `facilitator`, …), by name. */
  origins: Record<string, string>;
}

export interface ServeOptions {
  /** Names the node in the error of a start that failed. */
  label: string;
  /** Added to this process's environment. */
  env: Record<string, string>;
  /** `serve --roles …`; every role when omitted. */
  roles?: readonly string[];
}

/** Every serve process started through one instance: stopAll() ends each, by pid. */
export class NodeProcesses {
  readonly started: ServedProcess[] = [];

  /** `tollgate serve` with the options' environment; resolves once it printed its origins and roles. */
  async serve(options: ServeOptions): Promise<ServedProcess> {
    const args = [bin, 'serve', ...(options.roles ? ['--roles', options.roles.join(',')] : [])];
    // WORKER_PORT 0: a worker-only node's listener must not collide with another node's on this machine.
    const child = spawn(process.execPath, args, { env: { ...process.env, WORKER_PORT: '0', ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    // The startup lines are on stderr (stdout is the JSON log): read apart, so a log line cannot split one.
    let banner = '';
    const record = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-20_000);
    };
    child.stdout!.on('data', record);
    child.stderr!.on('data', record);
    const exited = new Promise<string | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
    const served: ServedProcess = { child, exited, output: () => output.slice(-20_000), origins: {} };
    this.started.push(served);
    await new Promise<void>((resolve, reject) => {
      child.stderr!.on('data', (chunk: Buffer) => {
        if (/^roles/m.test((banner += chunk.toString()))) resolve();
      });
      void exited.then((code) => reject(new Error(`${options.label} exited (${code}) before it was ready:\n${output}`)));
    });
    // The startup lines: `<origin>  <url>` for each origin it listens on, before `roles`.
    for (const match of banner.matchAll(/^(api|facilitator|relay|assets)\s+(http\S+)$/gm)) served.origins[match[1]!] = match[2]!;
    return served;
  }

  /** SIGTERM to every process still running (kill -9 after 10 s). */
  async stopAll(): Promise<void> {
    await Promise.all(this.started.map((served) => stop(served).catch(() => undefined)));
  }
}

/** The processes under `pid`, as /proc has them now. */
export function descendantsOf(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  const walk = (parent: number) => (parents.get(parent) ?? []).forEach((child) => (found.push(child), walk(child)));
  walk(pid);
  return found;
}

/** kill -9 of the node and everything it started (children first listed, so none is missed once reparented). */
export async function kill9(node: Pick<ServedProcess, 'child' | 'exited'>): Promise<void> {
  const children = descendantsOf(node.child.pid!);
  process.kill(node.child.pid!, 'SIGKILL');
  for (const pid of children) if (alive(pid)) process.kill(pid, 'SIGKILL');
  expect(await node.exited).toBe('SIGKILL');
}

/** SIGTERM, and kill -9 if it has not exited 10 s later. */
export async function stop(node: Pick<ServedProcess, 'child' | 'exited'>): Promise<void> {
  if (!alive(node.child.pid!)) return;
  node.child.kill('SIGTERM');
  const code = await Promise.race([node.exited, sleep(10_000).then(() => 'timeout' as const)]);
  if (code === 'timeout') await kill9(node);
}
