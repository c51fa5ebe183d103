// `tollgate serve` stopped again and again the ways it is stopped in practice: SIGTERM to the process (a
// supervisor), to its whole process group (Ctrl-C in a terminal, some container runtimes: anvil gets it
// too and must not be restarted), with an idle keep-alive connection and a request still in flight. Every
// time, each port it had (the four origins and anvil's RPC) must refuse connections within 5 s of the
// signal, and the process must have exited 0 by then: by its own stop, not the deadline's kill, and
// without restarting anvil.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { isRunning } from '../helpers/processes.js';
import { migratedDataDir } from '../helpers/database.js';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/tollgate.js');
const dataDir = migratedDataDir('tg-stoploop-');
const STOP_BUDGET_MS = 5_000;
const ITERATIONS = 6;

let current: ChildProcess | null = null;
afterAll(() => {
  // A failed iteration may leave its group behind.
  if (current?.pid && current.exitCode === null) process.kill(-current.pid, 'SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

interface Instance {
  child: ChildProcess;
  exited: Promise<number | null>;
  urls: Record<'api' | 'facilitator' | 'relay' | 'assets' | 'rpc', string>;
  anvilPid: number;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
}

async function start(): Promise<Instance> {
  const child = spawn(process.execPath, [bin, 'serve'], {
    env: { ...process.env, TOLLGATE_DATA_DIR: dataDir, API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0', LOG_LEVEL: 'warn', DATABASE_URL: '' },
    // Its own process group, as a terminal's foreground job or a container's init has.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  current = child;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let output = '';
  // The banner is on stderr (stdout is the JSON log): read apart, so a log line cannot split one.
  let banner = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const urls = await new Promise<Instance['urls']>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      banner += chunk.toString();
      if (!/^roles/m.test(banner)) return;
      const found = Object.fromEntries([...banner.matchAll(/^(api|facilitator|relay|assets)\s+(\S+)$/gm)].map((m) => [m[1], m[2]]));
      resolve({ ...found, rpc: /devchain (\S+)/.exec(banner)![1]! } as Instance['urls']);
    });
    void exited.then((code) => reject(new Error(`serve exited early (${code}):\n${output}`)));
  });
  const anvilPid = Number(fs.readFileSync(path.join(dataDir, 'chain', 'anvil.pid'), 'utf8'));
  return { child, exited, urls, anvilPid, output: () => output };
}

function accepts(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    socket.setTimeout(1_000, () => (socket.destroy(), resolve(true)));
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

/** An idle keep-alive connection (after one answered request) and a request whose body never ends. */
async function holdConnections(urls: Instance['urls']): Promise<net.Socket[]> {
  const open = (url: string) =>
    new Promise<net.Socket>((resolve, reject) => {
      const { hostname, port } = new URL(url);
      const socket = net.connect({ host: hostname, port: Number(port) }, () => resolve(socket));
      socket.once('error', reject);
      // The server cuts these when it stops: expected here.
      socket.on('error', () => {});
    });
  const idle = await open(urls.api);
  const answered = new Promise<void>((resolve) => idle.once('data', () => resolve()));
  idle.write(`GET /health HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n`);
  await answered;
  const stalled = await open(urls.facilitator);
  stalled.write(`POST /verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"paymentPayload":`);
  // Until the server has read that request (else its connection still counts as idle, and closes at once):
  // a moment, and an answer from the same origin that came after it.
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect((await fetch(`${urls.facilitator}/health`)).status).toBe(200);
  return [idle, stalled];
}

describe.skipIf(Boolean(process.env.DATABASE_URL))('tollgate serve on SIGTERM, again and again', () => {
  it(`frees every port and exits 0 within ${STOP_BUDGET_MS} ms, ${ITERATIONS} times`, async () => {
    const timings: string[] = [];
    for (let i = 0; i < ITERATIONS; i += 1) {
      const toGroup = i % 2 === 1;
      const withConnections = i % 4 >= 2;
      const instance = await start();
      expect((await fetch(`${instance.urls.api}/health`)).status).toBe(200);
      const held = withConnections ? await holdConnections(instance.urls) : [];

      const signalledAt = Date.now();
      process.kill(toGroup ? -instance.child.pid! : instance.child.pid!, 'SIGTERM');
      const deadline = signalledAt + STOP_BUDGET_MS;
      const closedAt: Record<string, number> = {};
      for (const [name, url] of Object.entries(instance.urls)) {
        while ((await accepts(url)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
        closedAt[name] = Date.now() - signalledAt;
      }
      const code = await Promise.race([instance.exited, new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now()), 'still running'))]);
      const label = `#${i} ${toGroup ? 'group' : 'process'}${withConnections ? ' +connections' : ''}`;
      timings.push(`${label}: ${JSON.stringify(closedAt)}, exited after ${Date.now() - signalledAt} ms`);
      held.forEach((socket) => socket.destroy());

      for (const [name, url] of Object.entries(instance.urls)) expect(await accepts(url), `${label}: ${name} ${url} still accepts`).toBe(false);
      expect(code, label).toBe(0);
      expect(isRunning(instance.anvilPid), `${label}: anvil pid ${instance.anvilPid} still runs`).toBe(false);
      // The stop finished by itself (the deadline's kill is the last resort), and anvil's exit on the group's
      // signal was not taken for a crash to restart from.
      expect(instance.output(), label).not.toContain('the stop did not finish');
      expect(instance.output(), label).not.toContain('anvil exited unexpectedly');
    }
    console.log(timings.join('\n'));
  }, 150_000);

  it(`a signal while startup waits (on a database that never answers) still ends it within ${STOP_BUDGET_MS} ms`, async () => {
    // A server that accepts connections and never says a word: startup hangs in its first query.
    let connected!: () => void;
    const waitingOnDatabase = new Promise<void>((resolve) => (connected = resolve));
    const silent = net.createServer(() => connected());
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const earlyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-stopearly-'));
    const child = spawn(process.execPath, [bin, 'serve'], {
      env: {
        ...process.env,
        TOLLGATE_DATA_DIR: earlyDir,
        DATABASE_URL: `postgres://tollgate@127.0.0.1:${(silent.address() as net.AddressInfo).port}/tollgate`,
        API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0', LOG_LEVEL: 'warn',
      },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    current = child;
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      // Signalled once startup is waiting on the database (its first connection arrived), not at a guessed
      // moment: on a loaded machine, loading the code alone can outlast any fixed delay, and the budget is
      // for stopping, not for starting.
      await waitingOnDatabase;
      expect(fs.existsSync(path.join(earlyDir, 'instance.json')), 'the data dir lock comes first').toBe(true);
      expect(output, 'it started anyway').not.toMatch(/^roles/m);
      const signalledAt = Date.now();
      child.kill('SIGTERM');
      const code = await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, STOP_BUDGET_MS, 'still running'))]);
      expect(code, `not ended ${Date.now() - signalledAt} ms after the signal`).toBe(0);
    } finally {
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
      silent.close();
      fs.rmSync(earlyDir, { recursive: true, force: true });
    }
  }, 60_000);
});
