// Devchain lifecycle against the real anvil binary: persistence across stop/start, self-restart after
// kill -9, clean shutdown, and the guards around ports, amounts and damaged state files.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPublicClient, http, parseEther, type Address } from 'viem';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveAnvilBinary } from './anvil.js';
import { Devchain, devchainChain, USDG_ADDRESS, type DevchainLogger } from './devchain.js';
import { usdgDeployedBytecode } from './usdg-artifact.js';
import { isRunning } from '../../test/helpers/processes.js';

const PAYEE: Address = '0x000000000000000000000000000000000000bEEF';
const TIMEOUT = { timeout: 60_000 };

let dataDir: string;
let chains: Devchain[] = [];
let messages: string[] = [];
const logger: DevchainLogger = {
  info: (m) => messages.push(`info ${m}`),
  warn: (m) => messages.push(`warn ${m}`),
  error: (m) => messages.push(`error ${m}`),
};

function devchain(dir: string | null = dataDir, port = 0): Devchain {
  const chain = new Devchain({ dataDir: dir, port, logger });
  chains.push(chain);
  return chain;
}

async function answers(rpcUrl: string): Promise<boolean> {
  try {
    const res = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(1_000),
    });
    return ((await res.json()) as { result?: string }).result === '0x1237';
  } catch {
    return false;
  }
}

async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'tollgate-devchain-'));
  messages = [];
});

afterEach(async () => {
  await Promise.all(chains.map((c) => c.stop()));
  chains = [];
  await rm(dataDir, { recursive: true, force: true });
});

// No database: anvil and its state file. The PostgreSQL pass would run it again unchanged.
const noDatabaseTestOnPostgresPass = Boolean(process.env.DATABASE_URL);

describe.skipIf(noDatabaseTestOnPostgresPass)('Devchain', () => {
  it('keeps balances and the token across stop/start, and stop() leaves no process', TIMEOUT, async () => {
    const first = devchain();
    await first.start();
    expect(first.port).toBeGreaterThan(0);
    expect(first.rpcUrl).toBe(`http://127.0.0.1:${first.port}`);
    await first.fund(PAYEE, '12.345678');
    expect(await first.balanceOf(PAYEE)).toBe(12_345_678n);
    const pid = first.pid!;
    await first.stop();
    expect(isRunning(pid)).toBe(false);
    expect(first.pid).toBeUndefined();
    expect(await answers(first.rpcUrl)).toBe(false);
    expect(JSON.parse(await readFile(join(dataDir, 'chain', 'state.json'), 'utf8'))).toHaveProperty('accounts');

    messages = [];
    const second = devchain();
    await second.start();
    expect(messages.filter((m) => m.includes('code placed'))).toEqual([]); // same code: no setCode
    const pub = createPublicClient({ chain: devchainChain(second.rpcUrl), transport: http(second.rpcUrl) });
    expect(await pub.getCode({ address: USDG_ADDRESS })).toBe(usdgDeployedBytecode);
    expect(await second.balanceOf(PAYEE)).toBe(12_345_678n);
    expect(await pub.getBalance({ address: PAYEE })).toBe(parseEther('10'));
    await second.fund(PAYEE, '1');
    expect(await second.balanceOf(PAYEE)).toBe(13_345_678n);
    await second.stop();
  });

  it("anvil's exit seen a moment before this process halts restarts (a signal to the process group) is no crash", TIMEOUT, async () => {
    const chain = devchain(null);
    await chain.start();
    const pid = chain.pid!;
    process.kill(pid, 'SIGTERM');
    await waitFor(() => !isRunning(pid));
    await new Promise((r) => setTimeout(r, 20)); // the exit is seen; this process's own SIGTERM handler runs now
    chain.haltRestarts();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(chain.pid).toBeUndefined();
    expect(messages.filter((m) => m.includes('exited unexpectedly') || m.includes('restarted'))).toEqual([]);
    await chain.stop();
  });

  it('restarts anvil by itself after kill -9, with state from the last interval dump', TIMEOUT, async () => {
    const chain = devchain();
    await chain.start();
    await chain.fund(PAYEE, '5');
    await new Promise((r) => setTimeout(r, 2_500)); // let --state-interval (1 s) dump it
    const oldPid = chain.pid!;
    process.kill(oldPid, 'SIGKILL');
    await waitFor(() => chain.pid !== undefined && chain.pid !== oldPid);
    await waitFor(() => answers(chain.rpcUrl));
    expect(isRunning(oldPid)).toBe(false);
    expect(messages.some((m) => m.startsWith('warn devchain: anvil exited unexpectedly'))).toBe(true);
    expect(await chain.balanceOf(PAYEE)).toBe(5_000_000n);
    await chain.fund(PAYEE, '1');

    const newPid = chain.pid!;
    await chain.stop();
    expect(isRunning(newPid)).toBe(false);
    await new Promise((r) => setTimeout(r, 1_000)); // no restart after stop()
    expect(chain.pid).toBeUndefined();
    expect(await answers(chain.rpcUrl)).toBe(false);
  });

  it('ephemeral mode writes no state file', TIMEOUT, async () => {
    const chain = devchain(null);
    await chain.start();
    expect(chain.statePath).toBeNull();
    await chain.fund(PAYEE, '1');
    await chain.stop();
    const other = devchain(null);
    await other.start();
    expect(await other.balanceOf(PAYEE)).toBe(0n);
  });

  it('recovers from a truncated state file using the last good backup', TIMEOUT, async () => {
    const chain = devchain();
    await chain.start();
    await chain.fund(PAYEE, '7');
    await chain.stop();
    await chain.start(); // this start backs up the good state file
    await chain.stop();
    const statePath = join(dataDir, 'chain', 'state.json');
    await writeFile(statePath, (await readFile(statePath, 'utf8')).slice(0, 500));
    await chain.start();
    expect(await chain.balanceOf(PAYEE)).toBe(7_000_000n);
    expect(messages.some((m) => m.includes('unreadable chain state'))).toBe(true);
  });

  it('stops an orphaned anvil left behind by a killed previous run', TIMEOUT, async () => {
    const statePath = join(dataDir, 'chain', 'state.json');
    await mkdir(join(dataDir, 'chain'), { recursive: true });
    // The orphan binds a port of the OS's choosing (--port 0) and says which: a port picked free first
    // could be taken by another test's process before anvil binds it, and that process would answer.
    const orphan = spawn(resolveAnvilBinary(), ['--port', '0', '--chain-id', '4663', '--state', statePath], { stdio: ['ignore', 'pipe', 'ignore'] });
    const port = await new Promise<number>((resolve, reject) => {
      let output = '';
      orphan.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const listening = output.match(/Listening on [\d.]+:(\d+)/);
        if (listening) resolve(Number(listening[1]));
      });
      orphan.once('exit', () => reject(new Error(`the orphan anvil exited: ${output}`)));
    });
    try {
      await writeFile(join(dataDir, 'chain', 'anvil.pid'), `${orphan.pid}\n`);
      const chain = devchain(dataDir, port);
      await chain.start();
      expect(orphan.exitCode !== null || orphan.signalCode !== null).toBe(true);
      expect(chain.pid).not.toBe(orphan.pid);
      expect(messages.some((m) => m.includes('orphaned anvil'))).toBe(true);
      await chain.fund(PAYEE, '1');
    } finally {
      orphan.kill('SIGKILL');
    }
  });

  it('rejects bad amounts and a busy port', TIMEOUT, async () => {
    const chain = devchain(null);
    await chain.start();
    for (const bad of ['1.1234567', '-1', 'abc', '']) {
      await expect(chain.fund(PAYEE, bad)).rejects.toThrow(/invalid USDG amount/);
    }
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const busyPort = (blocker.address() as AddressInfo).port;
    try {
      await expect(devchain(null, busyPort).start()).rejects.toThrow(/already in use/);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});
