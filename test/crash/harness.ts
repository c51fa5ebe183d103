// The crash-point suite: `tollgate serve` as a real process, SIGKILLed at each step of each paid flow
// (facilitator settle, a paid endpoint, payment-intent pay, image upload, relay broadcast, credit top-up)
// between verify, broadcast, receipt and commit, and wallet pay-and-call between signing, the upstream's
// answer and the payment row; then restarted on the same data (PGlite data dir or PostgreSQL database, devchain state
// included) and reconciled. Each point must end with: money moved at most once, a moved payment
// recorded as settled (the ledger row; the intent), and every intent in a state the spec allows.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import pg from 'pg';
import { createPublicClient, http, parseAbiItem, type Address, type Hex } from 'viem';
import { afterAll, expect } from 'vitest';
import { callAdminSocket } from '../../src/admin/socket.js';
import { CRASH_POINTS, type CrashPoint } from '../../src/platform/crash-points.js';
import { reportCounts } from '../fuzz/tenants.js';
import { freePort } from '../wallets/helpers.js';
import { pgTemplate, seedDataDir } from '../helpers/database.js';
import { stopOrphanedDevchain } from '../helpers/orphans.js';

export const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/tollgate.js');
export const USDG: Address = '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168';
export const ALLOWED_INTENT_STATES = ['pending', 'settling', 'settled', 'expired', 'failed'];
export const transferEvent = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
export const usedEvent = parseAbiItem('event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)');

export interface Instance {
  child: ChildProcess;
  exited: Promise<number | null>;
  api: string;
  facilitator: string;
  relay: string;
  rpc: string;
}

const dirs: string[] = [];
const databases: string[] = [];

/**
 * Registers, in the calling test file, the removal of every data dir and database it made and its count of
 * points for CI's summary line (a shared module's top level runs once per worker, not once per file).
 */
export function crashHarness(suite: string): { pointDone(): void } {
  let points = 0;
  afterAll(async () => {
    reportCounts(suite, { points });
    for (const dir of dirs) await stopOrphanedDevchain(dir);
    dirs.splice(0).forEach((dir) => fs.rmSync(dir, { recursive: true, force: true }));
    for (const name of databases.splice(0)) await adminQuery(`drop database if exists ${name} with (force)`);
  });
  return { pointDone: () => void (points += 1) };
}

export async function adminQuery(sql: string) {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export interface Data {
  dataDir: string;
  databaseUrl: string;
  /** The api origin keeps its port across the restart: a payment names its resource URL. */
  apiPort: number;
}

/** A fresh place for one instance's data: a data dir, and a database when DATABASE_URL names a server. */
export async function freshData(): Promise<Data> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-crash-'));
  dirs.push(dataDir);
  const apiPort = await freePort();
  const server = process.env.DATABASE_URL;
  if (!server) {
    seedDataDir(dataDir);
    return { dataDir, databaseUrl: '', apiPort };
  }
  const name = `tollgate_crash_${Math.random().toString(36).slice(2, 10)}`;
  // A copy of the run's migrated template: the instance's own migrations then find nothing to do.
  const template = pgTemplate();
  await adminQuery(`create database ${name}${template ? ` template ${template}` : ''}`);
  databases.push(name);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return { dataDir, databaseUrl: url.toString(), apiPort };
}

export async function serve(data: Data, crashAt?: CrashPoint, env: Record<string, string> = {}): Promise<Instance> {
  const child = spawn(process.execPath, [bin, 'serve'], {
    env: {
      ...process.env,
      TOLLGATE_DATA_DIR: data.dataDir,
      DATABASE_URL: data.databaseUrl,
      API_PORT: String(data.apiPort),
      FACILITATOR_PORT: '0',
      RELAY_PORT: '0',
      ASSETS_PORT: '0',
      DEVCHAIN_PORT: '0',
      LOG_LEVEL: 'fatal',
      INDEXER_POLL_MS: '200',
      FACILITATOR_RECONCILE_AFTER_MS: '500',
      STORAGE_RECONCILE_AFTER_SECONDS: '1',
      RELAY_TAKEOVER_AFTER_SECONDS: '1',
      STORAGE_SWEEP_INTERVAL_MS: '300',
      CREDITS_RECONCILE_AFTER_SECONDS: '1',
      CREDITS_SWEEP_INTERVAL_MS: '300',
      TOLLGATE_CRASH_POINT: crashAt ?? '',
      ...env,
    },
    // The banner is on stderr; stdout (the JSON log) goes to the test's output.
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal === 'SIGKILL' ? 137 : code)));
  let output = '';
  const urls = await new Promise<Record<string, string>>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (!/^roles/m.test(output)) return;
      resolve(Object.fromEntries([...output.matchAll(/^(api|facilitator|relay)\s+(\S+)$/gm)].map((m) => [m[1], m[2]])));
    });
    void exited.then(() => reject(new Error(`serve exited early:\n${output}`)));
  });
  const rpc = /devchain (\S+)/.exec(output)![1]!;
  return { child, exited, api: urls.api!, facilitator: urls.facilitator!, relay: urls.relay!, rpc };
}

export async function stop(instance: Instance) {
  instance.child.kill('SIGTERM');
  await instance.exited;
}

/** Sends the request the crash point sits in; the process dies under it (or answers, if the point is not on its path). */
export async function sendThroughCrash(instance: Instance, request: () => Promise<Response>) {
  const answer = await request().then((r) => r.status, () => 'connection lost' as const);
  const code = await Promise.race([instance.exited, new Promise((resolve) => setTimeout(() => resolve('alive'), 5_000))]);
  return { answer, code };
}

export async function admin(dataDir: string, command: string, args: Record<string, unknown>) {
  const result = await callAdminSocket(dataDir, command, args);
  if (result === null) throw new Error(`no admin socket in ${dataDir}`);
  return result as Record<string, string>;
}

export async function eventually<T>(check: () => Promise<T | null | undefined | false>, timeoutMs = 20_000): Promise<T | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** What the chain says happened to one authorization: its transfers into payTo. */
export async function movedFor(rpc: string, payer: Address, nonce: Hex, payTo: Address) {
  const client = createPublicClient({ transport: http(rpc) });
  const used = await client.getLogs({ address: USDG, event: usedEvent, args: { authorizer: payer, nonce }, fromBlock: 0n });
  const transfers = await client.getLogs({ address: USDG, event: transferEvent, args: { from: payer, to: payTo }, fromBlock: 0n });
  return { used: used.length, transfers: transfers.length, tx: transfers[0]?.transactionHash ?? null };
}

export async function settlementRow(instance: Instance, payload: PaymentPayload, requirements: PaymentRequirements) {
  // The facilitator's own word, read back through its API: a settle of the same payload names the transaction.
  const res = await fetch(`${instance.facilitator}/settle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements }),
  });
  return (await res.json()) as { success: boolean; transaction: string; errorReason?: string };
}

export const requirementsFor = (payTo: Address): PaymentRequirements => ({
  scheme: 'exact',
  network: 'eip155:4663',
  asset: USDG,
  amount: '100',
  payTo,
  maxTimeoutSeconds: 300,
  extra: { name: 'Global Dollar', version: '1' },
});

export const flows: Record<'settle' | 'batch' | 'x402' | 'intent' | 'payAndCall' | 'storage' | 'relay' | 'credits', CrashPoint[]> = {
  credits: CRASH_POINTS.filter((p) => p.startsWith('credits.')),
  relay: CRASH_POINTS.filter((p) => p.startsWith('relay.')),
  storage: CRASH_POINTS.filter((p) => p.startsWith('storage.')),
  payAndCall: CRASH_POINTS.filter((p) => p.startsWith('pay-and-call.')),
  settle: CRASH_POINTS.filter((p) => p.startsWith('settle.')),
  batch: CRASH_POINTS.filter((p) => p.startsWith('batch.')),
  x402: CRASH_POINTS.filter((p) => p.startsWith('x402.')),
  intent: [...CRASH_POINTS.filter((p) => p.startsWith('intent.')), 'settle.after-broadcast', 'settle.after-receipt'],
};

/** Transfers from the wallet to payTo, and authorizations the wallet has used, as the chain has them. */
export async function transfersOf(rpc: string, payer: Address, payTo: Address) {
  const client = createPublicClient({ transport: http(rpc) });
  const used = await client.getLogs({ address: USDG, event: usedEvent, args: { authorizer: payer }, fromBlock: 0n });
  const transfers = await client.getLogs({ address: USDG, event: transferEvent, args: { from: payer, to: payTo }, fromBlock: 0n });
  expect(used.length).toBe(transfers.length);
  return { transfers: transfers.length, tx: transfers[0]?.transactionHash ?? null };
}

export async function chainRpc(rpc: string, method: string, params: unknown[]) {
  const response = await fetch(rpc, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const answer = (await response.json()) as { error?: unknown };
  if (answer.error) throw new Error(`${method}: ${JSON.stringify(answer.error)}`);
}
