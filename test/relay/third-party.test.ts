// A third party against the relay: another payer reusing a payer's Idempotency-Key (in flight, then
// completed), someone naming a payer it cannot sign for, and a client sending more than its share. A key is
// its payer's own: a stranger never gets the payer's answer, never holds the payer's key, and what a refused
// request sent is read on chain: nothing.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relayBroadcasts } from '../../src/modules/relay/tables.js';
import { ManualClock } from '../../src/platform/clock.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { relayerTxCount, transfersForNonce } from '../x402/support.js';
import { credentialFor, expectRelayError, nonceOf, post } from './support.js';

type Receipted = { success: boolean; receipt: { challengeId: string; reference: string } };
type FacilitatorBody = { paymentPayload?: { payload?: { signature?: string; authorization?: { nonce?: string } } } };

describe('another payer, the same Idempotency-Key', () => {
  // Between the relay and the facilitator: forwards everything, and holds the calls a test names until it
  // lets them go (a broadcast caught in flight, its record made and its settle on the way).
  let proxied: TestApp;
  let proxy: http.Server;
  let holds: { path: string; matches: (body: FacilitatorBody) => boolean; arrived: () => void; released: Promise<void>; release: () => void }[] = [];
  beforeAll(async () => {
    proxy = http.createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const raw = Buffer.concat(chunks);
      if (req.method === 'POST') {
        const body = JSON.parse(raw.toString()) as FacilitatorBody;
        const hold = holds.find((h) => h.path === req.url && h.matches(body));
        if (hold) {
          hold.arrived();
          await hold.released;
        }
      }
      const upstream = await fetch(`${proxied.urls.facilitator}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: req.method === 'POST' ? raw : undefined });
      res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(await upstream.text());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    proxied = await buildTestApp({ env: { FACILITATOR_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` } });
  });
  afterAll(async () => {
    for (const hold of holds) hold.release(); // a failed test's held calls
    await proxied?.close();
    proxy?.closeAllConnections();
    await new Promise((resolve) => proxy?.close(resolve));
  });

  /** Holds the facilitator calls on `path` whose body `matches` until `release`; `arrived` once the first comes. */
  function hold(path: '/settle' | '/verify', matches: (body: FacilitatorBody) => boolean) {
    let arrived!: () => void;
    let release!: () => void;
    const arrival = new Promise<void>((resolve) => (arrived = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const entry = { path, matches, arrived, released, release };
    holds.push(entry);
    return {
      arrived: arrival,
      release: () => {
        holds = holds.filter((h) => h !== entry);
        release();
      },
    };
  }
  const nonceIs = (nonce: string) => (body: FacilitatorBody) => body.paymentPayload?.payload?.authorization?.nonce?.toLowerCase() === nonce.toLowerCase();
  const broadcast = (body: unknown, key: string) => post(proxied, '/v1/mpp/broadcast', body, { 'idempotency-key': key });

  it('B sends its credential under A’s key while A’s broadcast is in flight: B gets its own record and receipt, not a 409; A gets A’s', async () => {
    const [a, b] = [await credentialFor(proxied), await credentialFor(proxied)];
    const held = hold('/settle', nonceIs(nonceOf(a)));
    const aAnswer = broadcast(a.body, 'order-shared-in-flight');
    await held.arrived; // A's record is made and its settle is on its way: A's key is in flight

    const bRes = await broadcast(b.body, 'order-shared-in-flight');
    const bBody = (await bRes.json()) as Receipted;
    expect(bRes.status, JSON.stringify(bBody)).toBe(200);
    expect(bBody.receipt.challengeId).toBe(b.challenge.id);
    expect(await transfersForNonce(proxied, b.account.address, nonceOf(b))).toBe(1);
    expect(await transfersForNonce(proxied, a.account.address, nonceOf(a))).toBe(0);

    held.release();
    const aRes = await aAnswer;
    const aBody = (await aRes.json()) as Receipted;
    expect(aRes.status, JSON.stringify(aBody)).toBe(200);
    expect(aBody.receipt.challengeId).toBe(a.challenge.id);
    expect(aBody.receipt.reference).not.toBe(bBody.receipt.reference);
    // Each payer's repeat of the key gets its own answer; one transfer each.
    expect(await broadcast(a.body, 'order-shared-in-flight').then((r) => r.json())).toEqual(aBody);
    expect(await broadcast(b.body, 'order-shared-in-flight').then((r) => r.json())).toEqual(bBody);
    expect(await transfersForNonce(proxied, a.account.address, nonceOf(a))).toBe(1);
    expect(await transfersForNonce(proxied, b.account.address, nonceOf(b))).toBe(1);
  });

  it('B sends its credential under A’s completed key: B’s credential is settled, A’s receipt is never served to B', async () => {
    const [a, b] = [await credentialFor(proxied), await credentialFor(proxied)];
    const aBody = (await broadcast(a.body, 'order-0001').then((r) => r.json())) as Receipted;
    expect(aBody.receipt.challengeId).toBe(a.challenge.id);

    const bRes = await broadcast(b.body, 'order-0001');
    const bBody = (await bRes.json()) as Receipted;
    expect(bRes.status, JSON.stringify(bBody)).toBe(200);
    expect(bBody.receipt.challengeId).toBe(b.challenge.id);
    expect(bBody.receipt.reference).not.toBe(aBody.receipt.reference);
    expect(await transfersForNonce(proxied, b.account.address, nonceOf(b))).toBe(1);
    expect(await broadcast(a.body, 'order-0001').then((r) => r.json())).toEqual(aBody);

    // Within one payer the key keeps its meaning: B's other credential under it is a conflict.
    const again = await credentialFor(proxied, { account: b.account });
    await expectRelayError(await broadcast(again.body, 'order-0001'), 409, 'idempotency_conflict');
    expect(await transfersForNonce(proxied, again.account.address, nonceOf(again))).toBe(0);
  });

  it('someone names A as the payer without A’s signature: refused before anything is written, so A’s key stays A’s', async () => {
    const a = await credentialFor(proxied);
    const payload = a.credential.payload as { signature: string };
    const flipped = `${payload.signature.slice(0, 10)}${payload.signature[10] === '0' ? '1' : '0'}${payload.signature.slice(11)}`;
    const forged = { credential: { ...a.credential, payload: { ...payload, signature: flipped } }, request: a.request };
    // Were a record made for it, it would stand in A's way for as long as its verification takes: hold that.
    const held = hold('/verify', (body) => body.paymentPayload?.payload?.signature === flipped);
    const forgedAnswer = broadcast(forged, 'order-squatted');
    await Promise.race([held.arrived, forgedAnswer]);

    const aRes = await broadcast(a.body, 'order-squatted');
    const aBody = (await aRes.json()) as Receipted;
    held.release();
    expect(aRes.status, JSON.stringify(aBody)).toBe(200);
    expect(aBody.receipt.challengeId).toBe(a.challenge.id);
    await expectRelayError(await forgedAnswer, 422, 'invalid_signature');
    const records = await proxied.ctx.db.select().from(relayBroadcasts).where(eq(relayBroadcasts.payer, a.account.address.toLowerCase()));
    expect(records.map((r) => [r.idempotencyKey, r.status])).toEqual([['order-squatted', 'completed']]);
    expect(await transfersForNonce(proxied, a.account.address, nonceOf(a))).toBe(1);
  });
});

describe('one client past its share', () => {
  // Frozen at the real time (the devchain's), so the fixed window never rolls over mid-test.
  const clock = new ManualClock();
  let limited: TestApp;
  beforeAll(async () => {
    limited = await buildTestApp({ clock, env: { RELAY_BROADCAST_LIMIT_PER_CLIENT: '2', RELAY_VALIDATE_LIMIT_PER_CLIENT: '3' } });
  });
  afterAll(async () => limited?.close());

  const call = (path: 'broadcast' | 'validate', body: unknown, remoteAddress: string, key?: string) =>
    limited.origins.relay!.inject({ method: 'POST', url: `/v1/mpp/${path}`, payload: body as object, headers: key ? { 'idempotency-key': key } : {}, remoteAddress });
  const sentByRelayers = async () => (await Promise.all(limited.ctx.chain.relayers.map((r) => relayerTxCount(limited, r.address)))).reduce((x, y) => x + y, 0);

  it('broadcasts past the limit: 429 rate_limited with Retry-After, in the relay’s shape; nothing is sent; another client has its own budget', async () => {
    for (const key of ['limit-key-1', 'limit-key-2']) {
      const res = await call('broadcast', (await credentialFor(limited)).body, '198.51.100.9', key);
      expect(res.statusCode, res.body).toBe(200);
    }
    const over = await credentialFor(limited);
    const sent = await sentByRelayers();
    const refused = await call('broadcast', over.body, '198.51.100.9', 'limit-key-3');
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual({ success: false, accepted: false, error: { code: 'rate_limited', message: expect.any(String) } });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(await sentByRelayers()).toBe(sent);
    expect(await transfersForNonce(limited, over.account.address, nonceOf(over))).toBe(0);

    expect((await call('broadcast', over.body, '198.51.100.10', 'limit-key-3')).statusCode).toBe(200);
    expect(await transfersForNonce(limited, over.account.address, nonceOf(over))).toBe(1);
  });

  it('validates past their own limit: 429 rate_limited with Retry-After', async () => {
    const built = await credentialFor(limited);
    for (let i = 0; i < 3; i++) expect((await call('validate', built.body, '203.0.113.5')).statusCode).toBe(200);
    const refused = await call('validate', built.body, '203.0.113.5');
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual({ success: false, accepted: false, error: { code: 'rate_limited', message: expect.any(String) } });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect((await call('validate', built.body, '203.0.113.6')).statusCode).toBe(200);
  });
});
