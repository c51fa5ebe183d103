// The relayer's send reaches the chain but its answer is lost (connection dropped). The facilitator
// must not send again: it answers settlement_pending with the hash it signed, and the retry finds
// that transaction mined.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Facilitator } from '../../src/x402/facilitator/facilitator.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { fundedPayer, nonceOf, relayerTxCount, signAuthorization, transfersForNonce } from '../x402/support.js';
import { requirementsFor } from './support.js';

let app: TestApp;
let proxy: http.Server;
let dropSends = false;

beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'] });
  // Forwards JSON-RPC to the devchain; in drop mode a send is forwarded, then its answer thrown away.
  proxy = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    const upstream = await fetch(app.ctx.chain.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const text = await upstream.text();
    if (dropSends && body.includes('eth_sendRawTransaction')) return req.socket.destroy();
    res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(text);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
  await app?.close();
});

it('a send whose answer is lost is settled once, found by the retry', async () => {
  const relayer = privateKeyToAccount(generatePrivateKey());
  await app.ctx.chain.devchain!.fundGas(relayer.address);
  const rpcUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  const facilitator = new Facilitator(
    { db: app.ctx.db, clock: app.ctx.clock, log: app.ctx.log, chain: { ...app.ctx.chain, rpcUrl }, relayer },
    { joinWaitMs: 2_000 },
  );
  const payer = await fundedPayer(app, '1');
  const requirements = requirementsFor(app);
  const payload = await signAuthorization(payer, requirements);

  dropSends = true;
  const first = await facilitator.settle(payload, requirements).finally(() => (dropSends = false));
  expect(first).toMatchObject({ success: false, errorReason: 'settlement_pending' });
  expect(first.transaction).toMatch(/^0x[0-9a-f]{64}$/);
  // The devchain mines a sent transaction just after answering the send: on a loaded machine a read can come first.
  await expect.poll(() => relayerTxCount(app, relayer.address)).toBe(1);

  const retried = await facilitator.settle(payload, requirements);
  expect(retried).toMatchObject({ success: true, transaction: first.transaction });
  expect(await relayerTxCount(app, relayer.address)).toBe(1);
  expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);
});
