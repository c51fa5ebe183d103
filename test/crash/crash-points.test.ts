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
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, describe, expect, it } from 'vitest';
import { callAdminSocket } from '../../src/admin/socket.js';
import { CRASH_POINTS, type CrashPoint } from '../../src/platform/crash-points.js';
import { readPaymentRequired, signPayment } from '../../src/x402/client.js';
import { reportCounts } from '../fuzz/tenants.js';
import { mppxCredential } from '../relay/mppx-client.js';
import { jpegOf, storagePayer, uploadForm } from '../storage/helpers.js';
import { freePort } from '../wallets/helpers.js';
import { signAuthorization } from '../x402/support.js';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/tollgate.js');
const USDG: Address = '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168';
const ALLOWED_INTENT_STATES = ['pending', 'settling', 'settled', 'expired', 'failed'];
const transferEvent = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
const usedEvent = parseAbiItem('event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)');

interface Instance {
  child: ChildProcess;
  exited: Promise<number | null>;
  api: string;
  facilitator: string;
  relay: string;
  rpc: string;
}

const dirs: string[] = [];
const databases: string[] = [];
afterAll(async () => {
  dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true }));
  for (const name of databases) await adminQuery(`drop database if exists ${name} with (force)`);
});

async function adminQuery(sql: string) {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

interface Data {
  dataDir: string;
  databaseUrl: string;
  /** The api origin keeps its port across the restart: a payment names its resource URL. */
  apiPort: number;
}

/** A fresh place for one instance's data: a data dir, and a database when DATABASE_URL names a server. */
async function freshData(): Promise<Data> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-crash-'));
  dirs.push(dataDir);
  const apiPort = await freePort();
  const server = process.env.DATABASE_URL;
  if (!server) return { dataDir, databaseUrl: '', apiPort };
  const name = `tollgate_crash_${Math.random().toString(36).slice(2, 10)}`;
  await adminQuery(`create database ${name}`);
  databases.push(name);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return { dataDir, databaseUrl: url.toString(), apiPort };
}

async function serve(data: Data, crashAt?: CrashPoint): Promise<Instance> {
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
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal === 'SIGKILL' ? 137 : code)));
  let output = '';
  const urls = await new Promise<Record<string, string>>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (!/^roles/m.test(output)) return;
      resolve(Object.fromEntries([...output.matchAll(/^(api|facilitator|relay)\s+(\S+)$/gm)].map((m) => [m[1], m[2]])));
    });
    void exited.then(() => reject(new Error(`serve exited early:\n${output}`)));
  });
  const rpc = /devchain (\S+)/.exec(output)![1]!;
  return { child, exited, api: urls.api!, facilitator: urls.facilitator!, relay: urls.relay!, rpc };
}

async function stop(instance: Instance) {
  instance.child.kill('SIGTERM');
  await instance.exited;
}

/** Sends the request the crash point sits in; the process dies under it (or answers, if the point is not on its path). */
async function sendThroughCrash(instance: Instance, request: () => Promise<Response>) {
  const answer = await request().then((r) => r.status, () => 'connection lost' as const);
  const code = await Promise.race([instance.exited, new Promise((resolve) => setTimeout(() => resolve('alive'), 5_000))]);
  return { answer, code };
}

async function admin(dataDir: string, command: string, args: Record<string, unknown>) {
  const result = await callAdminSocket(dataDir, command, args);
  if (result === null) throw new Error(`no admin socket in ${dataDir}`);
  return result as Record<string, string>;
}

async function eventually<T>(check: () => Promise<T | null | undefined | false>, timeoutMs = 20_000): Promise<T | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** What the chain says happened to one authorization: its transfers into payTo. */
async function movedFor(rpc: string, payer: Address, nonce: Hex, payTo: Address) {
  const client = createPublicClient({ transport: http(rpc) });
  const used = await client.getLogs({ address: USDG, event: usedEvent, args: { authorizer: payer, nonce }, fromBlock: 0n });
  const transfers = await client.getLogs({ address: USDG, event: transferEvent, args: { from: payer, to: payTo }, fromBlock: 0n });
  return { used: used.length, transfers: transfers.length, tx: transfers[0]?.transactionHash ?? null };
}

async function settlementRow(instance: Instance, payload: PaymentPayload, requirements: PaymentRequirements) {
  // The facilitator's own word, read back through its API: a settle of the same payload names the transaction.
  const res = await fetch(`${instance.facilitator}/settle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements }),
  });
  return (await res.json()) as { success: boolean; transaction: string; errorReason?: string };
}

const requirementsFor = (payTo: Address): PaymentRequirements => ({
  scheme: 'exact',
  network: 'eip155:4663',
  asset: USDG,
  amount: '100',
  payTo,
  maxTimeoutSeconds: 300,
  extra: { name: 'Global Dollar', version: '1' },
});

const flows: Record<'settle' | 'x402' | 'intent' | 'payAndCall' | 'storage' | 'relay' | 'credits', CrashPoint[]> = {
  credits: CRASH_POINTS.filter((p) => p.startsWith('credits.')),
  relay: CRASH_POINTS.filter((p) => p.startsWith('relay.')),
  storage: CRASH_POINTS.filter((p) => p.startsWith('storage.')),
  payAndCall: CRASH_POINTS.filter((p) => p.startsWith('pay-and-call.')),
  settle: CRASH_POINTS.filter((p) => p.startsWith('settle.')),
  x402: CRASH_POINTS.filter((p) => p.startsWith('x402.')),
  intent: [...CRASH_POINTS.filter((p) => p.startsWith('intent.')), 'settle.after-broadcast', 'settle.after-receipt'],
};
let points = 0;

afterAll(() => reportCounts('crash-points', { points }));

describe('crash points', () => {

  it.each(flows.settle)('facilitator settle killed at %s: one transfer at most, and a moved payment recorded as settled', async (point) => {
    const data = await freshData();
    const first = await serve(data, point);
    const payer = privateKeyToAccount(generatePrivateKey());
    await admin(data.dataDir, 'dev.fund', { address: payer.address, amount: '1' });
    const payTo = privateKeyToAccount(generatePrivateKey()).address;
    const requirements = requirementsFor(payTo);
    const payload = await signAuthorization(payer, requirements);
    const nonce = (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;
    const crash = await sendThroughCrash(first, () =>
      fetch(`${first.facilitator}/settle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements }) }),
    );
    expect(crash).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data);
    try {
      const moved = await movedFor(second.rpc, payer.address, nonce, payTo);
      expect(moved.transfers).toBeLessThanOrEqual(1);
      if (moved.transfers === 1) {
        // The reconciler records it; the one success was never answered, so the honest retry gets it.
        const row = await eventually(async () => {
          const answer = await settlementRow(second, payload, requirements);
          return answer.errorReason === 'settlement_pending' ? null : answer;
        });
        expect(row).toMatchObject({ transaction: moved.tx });
      }
      expect((await movedFor(second.rpc, payer.address, nonce, payTo)).transfers).toBe(moved.transfers);
    } finally {
      await stop(second);
    }
    points += 1;
  }, 120_000);

  it.each(flows.x402)('paid endpoint (ping) killed at %s: charged at most once, never again for a retry', async (point) => {
    const data = await freshData();
    const first = await serve(data, point);
    const payer = privateKeyToAccount(generatePrivateKey());
    await admin(data.dataDir, 'dev.fund', { address: payer.address, amount: '1' });
    const challengeResponse = await fetch(`${first.api}/x402-test/ping`);
    const challenge = readPaymentRequired((n) => challengeResponse.headers.get(n), await challengeResponse.json());
    const { header, payload } = await signPayment(payer, challenge);
    const nonce = (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;
    const payTo = challenge.accepts[0]!.payTo as Address;
    const crash = await sendThroughCrash(first, () => fetch(`${first.api}/x402-test/ping`, { headers: { 'payment-signature': header } }));
    expect(crash).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data);
    try {
      const before = await movedFor(second.rpc, payer.address, nonce, payTo);
      expect(before.transfers).toBeLessThanOrEqual(1);
      // A retry of the same payment never charges twice.
      await fetch(`${second.api}/x402-test/ping`, { headers: { 'payment-signature': header } });
      const after = await movedFor(second.rpc, payer.address, nonce, payTo);
      expect(after.transfers).toBe(1);
      expect(after.used).toBe(1);
    } finally {
      await stop(second);
    }
    points += 1;
  }, 120_000);

  it.each(flows.intent)('intent pay killed at %s: one transfer at most, the intent settled with it after reconcile', async (point) => {
    const data = await freshData();
    const first = await serve(data, point);
    const { token } = await admin(data.dataDir, 'dev.token', { sub: 'crash-merchant' });
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const project = (await (await fetch(`${first.api}/v1/projects`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'crash' }) })).json()) as { data: { project: { id: string }; apiKey: { secret: string } } };
    const payTo = privateKeyToAccount(generatePrivateKey()).address;
    const merchant = (await (await fetch(`${first.api}/v1/projects/${project.data.project.id}/merchants`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'm', payTo }) })).json()) as { data: { id: string } };
    const key = { authorization: `Bearer ${project.data.apiKey.secret}`, 'content-type': 'application/json' };
    const intent = (await (await fetch(`${first.api}/v1/payment-intents`, { method: 'POST', headers: key, body: JSON.stringify({ merchantId: merchant.data.id, amountUsdCents: 150, externalId: 'crash-order' }) })).json()) as { id: string };
    const payer = privateKeyToAccount(generatePrivateKey());
    await admin(data.dataDir, 'dev.fund', { address: payer.address, amount: '5' });
    const payUrl = `${first.api}/v1/payment-intents/${intent.id}/pay`;
    const challengeResponse = await fetch(payUrl, { method: 'POST' });
    const challenge = readPaymentRequired((n) => challengeResponse.headers.get(n), await challengeResponse.json());
    const { header, payload } = await signPayment(payer, challenge);
    const nonce = (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;
    const crash = await sendThroughCrash(first, () => fetch(payUrl, { method: 'POST', headers: { 'payment-signature': header } }));
    expect(crash).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data);
    try {
      const moved = await movedFor(second.rpc, payer.address, nonce, payTo);
      expect(moved.transfers).toBeLessThanOrEqual(1);
      const read = async () => (await (await fetch(`${second.api}/v1/payment-intents/${intent.id}`, { headers: key })).json()) as { status: string; transactionHash: string | null };
      if (moved.transfers === 1) {
        const settled = await eventually(async () => {
          await fetch(`${second.api}/v1/payment-intents/${intent.id}/reconcile`, { method: 'POST', headers: { authorization: key.authorization } });
          const current = await read();
          return current.status === 'settled' ? current : null;
        });
        expect(settled, JSON.stringify(await read())).toMatchObject({ status: 'settled', transactionHash: moved.tx });
      }
      expect(ALLOWED_INTENT_STATES).toContain((await read()).status);
      // Paying again with the same signature never charges twice.
      await fetch(`${second.api}/v1/payment-intents/${intent.id}/pay`, { method: 'POST', headers: { 'payment-signature': header } });
      expect((await movedFor(second.rpc, payer.address, nonce, payTo)).transfers).toBe(moved.transfers);
    } finally {
      await stop(second);
    }
    points += 1;
  }, 120_000);
});

describe('crash points of a paid image upload', () => {
  it.each(flows.storage)('upload killed at %s: one transfer at most; the worker makes the order paid (then a repeat fulfils it) or frees it', async (point) => {
    const data = await freshData();
    const first = await serve(data, point);
    const payer = storagePayer();
    await admin(data.dataDir, 'dev.fund', { address: payer.account.address, amount: '1' });
    const image = await jpegOf(20);
    const key = crypto.randomUUID();
    const post = (api: string, headers: Record<string, string> = {}) =>
      fetch(`${api}/v1/ipfs/upload`, { method: 'POST', headers: { 'idempotency-key': key, ...headers }, body: uploadForm(image) });
    const challengeResponse = await post(first.api);
    expect(challengeResponse.status).toBe(402);
    const required = payer.http.getPaymentRequiredResponse((n) => challengeResponse.headers.get(n), await challengeResponse.json());
    const payload = await payer.http.createPaymentPayload(required);
    const nonce = (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;
    const payTo = required.accepts[0]!.payTo as Address;
    const orderId = new URL(required.resource.url).searchParams.get('orderId')!;
    const crash = await sendThroughCrash(first, () => post(first.api, payer.http.encodePaymentSignatureHeader(payload) as Record<string, string>));
    expect(crash).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data);
    try {
      const order = async () => ((await (await fetch(`${second.api}/v1/ipfs/orders/${orderId}`, { headers: { 'idempotency-key': key } })).json()) as { data: { status: string; transactionHash: string | null } }).data;
      const moved = await movedFor(second.rpc, payer.account.address, nonce, payTo);
      expect(moved.transfers).toBe(point === 'storage.after-claim' ? 0 : 1);
      // Right after the restart the order is still held for its payment; once money moved, the restarted
      // worker may already have found it (a race the test must not lose): paid, never freed or lost.
      const held = (await order()).status;
      if (moved.transfers === 1) expect(['payment_pending', 'paid']).toContain(held);
      else expect(held).toBe('payment_pending');
      if (moved.transfers === 1) {
        const paid = await eventually(async () => ((await order()).status === 'paid' ? order() : null));
        expect(paid, JSON.stringify(await order())).toMatchObject({ status: 'paid', transactionHash: moved.tx });
        expect((await post(second.api)).status).toBe(200);
        expect((await order()).status).toBe('fulfilled');
      } else {
        // Nothing moved: once the authorization's validBefore has passed on chain, the order is free again.
        await chainRpc(second.rpc, 'evm_increaseTime', [3_700]);
        await chainRpc(second.rpc, 'evm_mine', []);
        const freed = await eventually(async () => ((await order()).status === 'awaiting_payment' ? order() : null));
        expect(freed, JSON.stringify(await order())).toMatchObject({ status: 'awaiting_payment', transactionHash: null });
      }
      expect((await movedFor(second.rpc, payer.account.address, nonce, payTo)).transfers).toBe(moved.transfers);
    } finally {
      await stop(second);
    }
    points += 1;
  }, 120_000);
});

describe('crash points of a credit top-up', () => {
  it.each(flows.credits)('top-up killed at %s: one transfer at most; the worker credits it once, or fails it once it can never pay', async (point) => {
    const data = await freshData();
    const first = await serve(data, point);
    const { token } = await admin(data.dataDir, 'dev.token', { sub: 'crash-buyer' });
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const payer = privateKeyToAccount(generatePrivateKey());
    await admin(data.dataDir, 'dev.fund', { address: payer.address, amount: '5' });
    const topUp = (api: string, extra: Record<string, string> = {}) =>
      fetch(`${api}/credits/top-up`, { method: 'POST', headers: { ...headers, ...extra }, body: JSON.stringify({ amountUsdCents: 100 }) });
    const challengeResponse = await topUp(first.api);
    expect(challengeResponse.status).toBe(402);
    const challenge = readPaymentRequired((n) => challengeResponse.headers.get(n), await challengeResponse.json());
    const { header, payload } = await signPayment(payer, challenge);
    const nonce = (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;
    const payTo = challenge.accepts[0]!.payTo as Address;
    const crash = await sendThroughCrash(first, () => topUp(first.api, { 'payment-signature': header }));
    expect(crash).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data);
    try {
      const balance = async () => ((await (await fetch(`${second.api}/credits`, { headers })).json()) as { data: { balanceUsdCents: number } }).data.balanceUsdCents;
      const moved = await movedFor(second.rpc, payer.address, nonce, payTo);
      expect(moved.transfers).toBe(point === 'credits.after-claim' ? 0 : 1);
      if (moved.transfers === 1) {
        expect(await eventually(async () => (await balance()) === 100), 'credited by the worker').toBe(true);
      } else {
        // Nothing moved: once validBefore has passed on chain the top-up fails, and the payment can never credit.
        await chainRpc(second.rpc, 'evm_increaseTime', [3_700]);
        await chainRpc(second.rpc, 'evm_mine', []);
        const refused = await eventually(async () => {
          const again = await topUp(second.api, { 'payment-signature': header });
          return again.status === 409 && ((await again.json()) as { data: { reason: string } }).data.reason === 'payment_authorization_already_used';
        });
        expect(refused, 'the dead authorization is refused').toBe(true);
      }
      // The same payment again never credits or moves twice.
      await topUp(second.api, { 'payment-signature': header });
      await new Promise((resolve) => setTimeout(resolve, 700));
      expect(await balance()).toBe(moved.transfers * 100);
      expect((await movedFor(second.rpc, payer.address, nonce, payTo)).transfers).toBe(moved.transfers);
    } finally {
      await stop(second);
    }
    points += 1;
  }, 120_000);
});

describe('crash points of a relay broadcast', () => {
  it.each(flows.relay)('broadcast killed at %s: the retry with the same key answers the receipt of the one transfer', async (point) => {
    const data = await freshData();
    const first = await serve(data, point);
    const account = privateKeyToAccount(generatePrivateKey());
    await admin(data.dataDir, 'dev.fund', { address: account.address, amount: '1' });
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const built = await mppxCredential({ account, amount: '10000', recipient });
    const nonce = (built.credential.payload as { nonce: Hex }).nonce;
    const broadcast = (relay: string) =>
      fetch(`${relay}/v1/mpp/broadcast`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': 'crash-key-1' }, body: JSON.stringify({ credential: built.serialized, request: built.request }) });
    const crash = await sendThroughCrash(first, () => broadcast(first.relay));
    expect(crash).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data);
    try {
      const moved = await movedFor(second.rpc, account.address, nonce, recipient);
      expect(moved.transfers).toBe(point === 'relay.after-record' ? 0 : 1);
      // The dead request's record is taken over once it is RELAY_TAKEOVER_AFTER_SECONDS old.
      const answer = await eventually(async () => {
        const res = await broadcast(second.relay);
        return res.status === 503 ? null : { status: res.status, body: (await res.json()) as { receipt?: { reference: string } } };
      });
      const after = await movedFor(second.rpc, account.address, nonce, recipient);
      expect(after.transfers).toBe(1);
      expect(answer).toMatchObject({ status: 200, body: { receipt: { reference: after.tx } } });
    } finally {
      await stop(second);
    }
    points += 1;
  }, 120_000);
});

describe('crash points of wallet pay-and-call', () => {
  it.each(flows.payAndCall)('pay-and-call killed at %s: the payment row ends as the chain says, one transfer at most', async (point) => {
    const data = await freshData();
    const first = await serve(data, point);
    const { secret: mgmt } = await admin(data.dataDir, 'mgmt-credential.create', { name: 'crash' });
    const created = (await (await fetch(`${first.api}/v1/wallets`, { method: 'POST', headers: { authorization: `Bearer ${mgmt}`, 'content-type': 'application/json' }, body: JSON.stringify({ externalId: 'crash-agent', name: 'crash' }) })).json()) as {
      data: { wallet: { address: Address; status: string }; credential: { secret: string } };
    };
    expect(created.data.wallet.status).toBe('active');
    const payer = created.data.wallet.address;
    const walletAuth = { authorization: `Bearer ${created.data.credential.secret}`, 'content-type': 'application/json' };
    await admin(data.dataDir, 'dev.fund', { address: payer, amount: '1' });
    const challengeResponse = await fetch(`${first.api}/x402-test/ping`);
    const payTo = readPaymentRequired((n) => challengeResponse.headers.get(n), await challengeResponse.json()).accepts[0]!.payTo as Address;
    // The embedded instance allow-lists its own api origin, so the wallet can pay its ping.
    const body = JSON.stringify({ url: `${first.api}/x402-test/ping`, maxPayment: { network: 'eip155:4663', asset: USDG, amount: '100' } });
    const crash = await sendThroughCrash(first, () => fetch(`${first.api}/v1/wallets/me/pay-and-call`, { method: 'POST', headers: walletAuth, body }));
    expect(crash).toEqual({ answer: 'connection lost', code: 137 });

    const second = await serve(data);
    try {
      const payments = async () => ((await (await fetch(`${second.api}/v1/wallets/me/payments`, { headers: walletAuth })).json()) as { data: { status: string; transaction: string | null; error: string | null }[] }).data;
      const moved = await transfersOf(second.rpc, payer, payTo);
      // Killed before the signature left (reserved, or signed): nothing moved. After the upstream (our ping) answered: it settled.
      expect(moved.transfers).toBe(point === 'pay-and-call.after-upstream' ? 1 : 0);
      // Every signature that left the process has its row: one row, recorded before the crash.
      expect(await payments()).toHaveLength(1);
      if (moved.transfers === 1) {
        // Money moved and the row was not final: the worker finds the transfer on chain.
        const settled = await eventually(async () => ((await payments())[0]!.status === 'settled' ? (await payments())[0] : null));
        expect(settled, JSON.stringify(await payments())).toMatchObject({ status: 'settled', transaction: moved.tx });
      } else {
        // Nothing moved: the payment stays open (never settled) until its authorization can no longer be
        // used; past any validBefore the wallet could have signed, the chain's time makes it failed.
        expect(['pending', 'unknown']).toContain((await payments())[0]!.status);
        await chainRpc(second.rpc, 'evm_increaseTime', [3_700]);
        await chainRpc(second.rpc, 'evm_mine', []);
        const ended = await eventually(async () => ((await payments())[0]!.status === 'failed' ? (await payments())[0] : null));
        expect(ended, JSON.stringify(await payments())).toMatchObject({ status: 'failed', transaction: null });
      }
      expect(await transfersOf(second.rpc, payer, payTo)).toEqual(moved);
    } finally {
      await stop(second);
    }
    points += 1;
  }, 120_000);
});

/** Transfers from the wallet to payTo, and authorizations the wallet has used, as the chain has them. */
async function transfersOf(rpc: string, payer: Address, payTo: Address) {
  const client = createPublicClient({ transport: http(rpc) });
  const used = await client.getLogs({ address: USDG, event: usedEvent, args: { authorizer: payer }, fromBlock: 0n });
  const transfers = await client.getLogs({ address: USDG, event: transferEvent, args: { from: payer, to: payTo }, fromBlock: 0n });
  expect(used.length).toBe(transfers.length);
  return { transfers: transfers.length, tx: transfers[0]?.transactionHash ?? null };
}

async function chainRpc(rpc: string, method: string, params: unknown[]) {
  const response = await fetch(rpc, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const answer = (await response.json()) as { error?: unknown };
  if (answer.error) throw new Error(`${method}: ${JSON.stringify(answer.error)}`);
}
