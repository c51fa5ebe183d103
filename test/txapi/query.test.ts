import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { txapiModule } from '../../src/modules/txapi/module.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { randomAddress, seedPublished } from './seed.js';

let app: TestApp;
const alice = randomAddress();
const bob = randomAddress();
let aliceIds: string[];

beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'], factories: [txapiModule] });
  // alice: 1, 2, 3, 5 (4 missing) on 4663; bob: 1, 2 on 4663 and 1 on another chain.
  aliceIds = await seedPublished(app.ctx.db, [1, 2, 3, 5].map((sequence) => ({ recipient: alice, sequence })));
  await seedPublished(app.ctx.db, [
    { recipient: bob, sequence: 1, blockNumber: 2000 },
    { recipient: bob, sequence: 2, blockNumber: 2001 },
    { recipient: bob, sequence: 1, chainId: 999, blockNumber: 10, blockTimestamp: 1_800_000_000 },
  ]);
});
afterAll(async () => {
  await app?.close();
});

const get = async (url: string) => {
  const response = await app.origins.api!.inject({ method: 'GET', url });
  return { status: response.statusCode, body: response.json() };
};
const sequences = (body: Array<{ attestation: { recipientSequence: string } }>) => body.map((r) => Number(r.attestation.recipientSequence));

describe('GET /x402scan/transactions: cursor', () => {
  it('stops at the first gap: afterSequence=3 returns nothing past 3', async () => {
    const { status, body } = await get(`/x402scan/transactions?recipient=${alice}&chain=eip155:4663&afterSequence=3`);
    expect(status).toBe(200);
    expect(body).toEqual([]);
  });

  it('returns the contiguous run in ascending order, bounded by pageSize', async () => {
    expect(sequences((await get(`/x402scan/transactions?recipient=${alice}&chain=4663&afterSequence=0`)).body)).toEqual([1, 2, 3]);
    expect(sequences((await get(`/x402scan/transactions?recipient=${alice}&chain=4663&afterSequence=0&pageSize=2`)).body)).toEqual([1, 2]);
    expect(sequences((await get(`/x402scan/transactions?recipient=${alice}&chain=4663&afterSequence=1&pageSize=1`)).body)).toEqual([2]);
    expect(sequences((await get(`/x402scan/transactions?recipient=${alice}&chain=4663&afterSequence=4`)).body)).toEqual([5]);
  });

  it('matches the recipient case-insensitively', async () => {
    const lower = await get(`/x402scan/transactions?recipient=${alice.toLowerCase()}&chain=4663&afterSequence=0`);
    const upper = await get(`/x402scan/transactions?recipient=0x${alice.slice(2).toUpperCase()}&chain=4663&afterSequence=0`);
    expect(sequences(lower.body)).toEqual([1, 2, 3]);
    expect(upper.body).toEqual(lower.body);
  });
});

describe('GET /x402scan/transactions: pages', () => {
  it('lists newest first with page and pageSize', async () => {
    expect(sequences((await get(`/x402scan/transactions?recipient=${alice}`)).body)).toEqual([5, 3, 2, 1]);
    expect(sequences((await get(`/x402scan/transactions?recipient=${alice}&pageSize=3&page=2`)).body)).toEqual([1]);
    expect((await get(`/x402scan/transactions?recipient=${alice}&page=9`)).body).toEqual([]);
  });

  it('defaults to the primary chain; chain=all spans every indexed network', async () => {
    const primary = (await get(`/x402scan/transactions?recipient=${bob}`)).body;
    expect(primary.map((r: { chainId: number }) => r.chainId)).toEqual([4663, 4663]);
    const all = (await get(`/x402scan/transactions?recipient=${bob}&chain=all`)).body;
    expect(all.map((r: { chainId: number }) => r.chainId)).toEqual([999, 4663, 4663]);
    const everyone = (await get('/x402scan/transactions?pageSize=100')).body;
    expect(everyone).toHaveLength(6);
    expect(everyone[0].to).toBe(bob);
    expect((await get('/x402scan/transactions')).body).toHaveLength(6);
  });

  it('renders the indexed transaction record', async () => {
    const [record] = (await get(`/x402scan/transactions?recipient=${alice}&pageSize=1`)).body;
    expect(Object.keys(record).sort()).toEqual(
      ['from', 'to', 'transactionHash', 'value', 'tokenAddress', 'tokenSymbol', 'tokenDecimals', 'logIndex', 'authorizationId',
        'blockTimestamp', 'blockNumber', 'facilitator', 'chainId', 'attestation', 'signature', 'signer'].sort(),
    );
    expect(record).toMatchObject({ to: alice, value: '1000', tokenSymbol: 'USDG', tokenDecimals: 6, chainId: 4663, blockNumber: '1005' });
    expect(typeof record.blockTimestamp).toBe('number');
    expect(record.attestation).toEqual({
      paymentId: aliceIds[3],
      payer: record.from,
      recipient: alice,
      recipientSequence: '5',
      token: record.tokenAddress,
      amount: '1000',
    });
  });
});

describe('GET /x402scan/transactions/{paymentId}', () => {
  it('returns one record, case-insensitively; unknown is 404 and malformed is 400', async () => {
    const one = await get(`/x402scan/transactions/${aliceIds[0].toUpperCase().replace('0X', '0x')}`);
    expect(one.status).toBe(200);
    expect(one.body.attestation.paymentId).toBe(aliceIds[0]);
    const missing = await get(`/x402scan/transactions/0x${'ab'.repeat(32)}`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    const malformed = await get('/x402scan/transactions/0x1234');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('invalid_request');
  });
});

describe('bad parameters', () => {
  const cases: Array<[string, string]> = [
    ['recipient=0x123', 'recipient'],
    ['recipient=nope', 'recipient'],
    ['page=0', 'page'],
    ['page=1.5', 'page'],
    ['page=abc', 'page'],
    ['page=101&pageSize=100', 'page'],
    ['page=10001', 'page'],
    ['pageSize=0', 'pageSize'],
    ['pageSize=101', 'pageSize'],
    ['afterSequence=-1&chain=4663', 'afterSequence'],
    ['chain=eth', 'chain'],
    ['chain=eip155:1', 'chain'],
    [`afterSequence=1&chain=4663`, 'afterSequence'],
    [`afterSequence=1&chain=all&recipient=${alice}`, 'afterSequence'],
    [`afterSequence=1&chain=4663&recipient=${alice}&page=2`, 'page'],
  ];
  it.each(cases)('%s → 400 invalid_request naming %s', async (query, param) => {
    const { status, body } = await get(`/x402scan/transactions?${query}`);
    expect(status).toBe(400);
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.message).toContain(param);
    expect(body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ in: 'querystring', path: `/${param}` })]));
  });

  it('afterSequence needs chain named explicitly, even the primary one', async () => {
    const { status, body } = await get(`/x402scan/transactions?recipient=${alice}&afterSequence=2`);
    expect(status).toBe(400);
    expect(body.error.details[0].path).toBe('/afterSequence');
  });
});

describe('GET /x402scan/attestation and OpenAPI', () => {
  it('publishes the signing domain, types and signer; rejects chain=all', async () => {
    const { status, body } = await get('/x402scan/attestation?chain=4663');
    expect(status).toBe(200);
    expect(body.domain).toEqual({ name: 'Tollgate Payment Attestation', version: '2', chainId: 4663 });
    expect(body.primaryType).toBe('PaymentAttestation');
    expect(body.types.PaymentAttestation.map((f: { name: string }) => f.name)).toEqual([
      'paymentId', 'payer', 'recipient', 'recipientSequence', 'token', 'amount',
    ]);
    expect(body.signer).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect((await get('/x402scan/attestation?chain=all')).status).toBe(400);
  });

  it('documents the routes in /openapi.json', async () => {
    const { body } = await get('/openapi.json');
    expect(Object.keys(body.paths)).toEqual(
      expect.arrayContaining(['/x402scan/transactions', '/x402scan/transactions/{paymentId}', '/x402scan/attestation']),
    );
  });
});
