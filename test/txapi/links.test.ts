// Links that hold (issue 43, item 5): one transaction's payments by its hash whatever their age, and the
// newest-first listing paged by a cursor (`before` = the last paymentId read) that neither repeats nor skips
// a record while newer ones are published. Only published records, as everywhere in the transaction API.
import { randomBytes } from 'node:crypto';
import { toHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { txapiModule } from '../../src/modules/txapi/module.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { randomAddress, seedPublished } from './seed.js';

let app: TestApp;
/** Block numbers handed out in order, so every seeded record is newer than the ones before it. */
let block = 5000;

beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'], factories: [txapiModule] });
});
afterAll(async () => {
  await app?.close();
});

const get = async (url: string) => {
  const response = await app.origins.api!.inject({ method: 'GET', url });
  return { status: response.statusCode, body: response.json() };
};
type Record = { transactionHash: string; to: string; chainId: number; logIndex: number; attestation: { paymentId: string; recipientSequence: string } };
const ids = (records: Record[]) => records.map((r) => r.attestation.paymentId);

/** `n` published records, each to a new recipient in its own newer block; answers their paymentIds, oldest first. */
const arrive = (n: number): Promise<string[]> =>
  seedPublished(app.ctx.db, Array.from({ length: n }, () => ({ recipient: randomAddress(), sequence: 1, blockNumber: ++block })));

/** Reads a listing to its end with `before`, calling `between` after each batch (new payments arriving). */
async function walk(query: string, between: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  let before: string | null = null;
  for (let i = 0; i < 50; i++) {
    const { status, body } = await get(`/x402scan/transactions?${query}&pageSize=4${before ? `&before=${before}` : ''}`);
    expect(status).toBe(200);
    if (body.length === 0) return seen;
    seen.push(...ids(body));
    before = body.at(-1).attestation.paymentId;
    await between();
  }
  throw new Error('the cursor never reached the end');
}

describe('GET /x402scan/transactions?before=: newest first by cursor', () => {
  it('pages the newest records while new ones are published: no record twice, none skipped', async () => {
    const first = await arrive(10);
    const expected = [...first].reverse();
    // Page numbers shift under arrivals: page 2 after three new records repeats three of page 1.
    const page1 = ids((await get('/x402scan/transactions?pageSize=4')).body);
    await arrive(3);
    const page2 = ids((await get('/x402scan/transactions?pageSize=4&page=2')).body);
    expect(page2.filter((id) => page1.includes(id))).toHaveLength(3);

    // The cursor from the newest records present now, with arrivals between every batch.
    const newest = ids((await get('/x402scan/transactions?pageSize=100')).body);
    const walked = await walk('chain=eip155:4663', () => arrive(3));
    expect(new Set(walked).size).toBe(walked.length);
    expect(walked).toEqual(newest);
    expect(walked.slice(-expected.length)).toEqual(expected);
  });

  it('keeps its place among records that tie on block and log index (the row id breaks the tie)', async () => {
    const tied = await seedPublished(app.ctx.db, Array.from({ length: 3 }, () => ({ recipient: randomAddress(), sequence: 1, blockNumber: 10_000_000, logIndex: 7 })));
    const one = async (before?: string) => ids((await get(`/x402scan/transactions?pageSize=1${before ? `&before=${before}` : ''}`)).body);
    const a = await one();
    const b = await one(a[0]);
    const c = await one(b[0]);
    expect([...a, ...b, ...c].sort()).toEqual([...tied].sort());
  });

  it('follows the order of each listing: one recipient (by sequence), across chains (by time)', async () => {
    const recipient = randomAddress();
    const mine = await seedPublished(app.ctx.db, [1, 2, 3, 4, 5].map((sequence) => ({ recipient, sequence, blockNumber: ++block })));
    const [newestMine, ...olderMine] = [...mine].reverse();
    expect(ids((await get(`/x402scan/transactions?recipient=${recipient}&before=${newestMine}`)).body)).toEqual(olderMine);
    expect(ids((await get(`/x402scan/transactions?recipient=${recipient}&chain=all&before=${newestMine}&pageSize=2`)).body)).toEqual(olderMine.slice(0, 2));
    const everywhere = ids((await get('/x402scan/transactions?chain=all&pageSize=100')).body);
    const walked = await walk('chain=all', async () => {});
    expect(walked).toEqual(everywhere);
  });

  const cases: Array<[string, string, string]> = [
    ['malformed', 'before=0x1234', 'before'],
    ['unknown', `before=0x${'cd'.repeat(32)}`, 'before'],
    ['with page', `before=0x${'cd'.repeat(32)}&page=2`, 'page'],
    ['with afterSequence', `before=0x${'cd'.repeat(32)}&afterSequence=1&chain=4663&recipient=${randomAddress()}`, 'before'],
  ];
  it.each(cases)('refuses a cursor that is %s: 400 naming %s', async (_what, query, param) => {
    const { status, body } = await get(`/x402scan/transactions?${query}`);
    expect(status).toBe(400);
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ in: 'querystring', path: `/${param}` })]));
  });

  it('refuses a cursor outside the listing, or naming a record not published yet (nothing about it leaks)', async () => {
    const [someoneElses] = await arrive(1);
    const recipient = randomAddress();
    await seedPublished(app.ctx.db, [{ recipient, sequence: 1, blockNumber: ++block }]);
    const outside = await get(`/x402scan/transactions?recipient=${recipient}&before=${someoneElses}`);
    expect(outside.status).toBe(400);
    expect(outside.body.error.details[0].path).toBe('/before');
    const [unpublished] = await seedPublished(app.ctx.db, [{ recipient, sequence: null, blockNumber: ++block }]);
    const hidden = await get(`/x402scan/transactions?before=${unpublished}`);
    expect(hidden.status).toBe(400);
    expect(hidden.body.error.message).toBe((await get(`/x402scan/transactions?before=0x${'ef'.repeat(32)}`)).body.error.message);
  });
});

describe('GET /x402scan/transactions?transactionHash=: a transaction’s payments', () => {
  it('finds a payment by its transaction whatever the number of newer ones, narrowed by recipient', async () => {
    const merchant = randomAddress();
    const hash = toHex(randomBytes(32));
    // A batched settlement: two payments to the merchant and one to someone else, in one transaction.
    const batch = await seedPublished(app.ctx.db, [
      { recipient: merchant, sequence: 1, blockNumber: ++block, transactionHash: hash, logIndex: 2 },
      { recipient: randomAddress(), sequence: 1, blockNumber: block, transactionHash: hash, logIndex: 4 },
      { recipient: merchant, sequence: 2, blockNumber: block, transactionHash: hash, logIndex: 6 },
    ]);
    await seedPublished(app.ctx.db, Array.from({ length: 120 }, (_, i) => ({ recipient: merchant, sequence: 3 + i, blockNumber: ++block })));

    const all = await get(`/x402scan/transactions?transactionHash=${hash}`);
    expect(all.status).toBe(200);
    expect(ids(all.body)).toEqual(batch);
    expect((all.body as Record[]).map((r) => r.logIndex)).toEqual([2, 4, 6]);
    const merchants = await get(`/x402scan/transactions?transactionHash=${hash.toUpperCase().replace('0X', '0x')}&recipient=${merchant.toLowerCase()}&chain=eip155:4663`);
    expect(ids(merchants.body)).toEqual([batch[0], batch[2]]);
    expect(ids((await get(`/x402scan/transactions?transactionHash=${hash}&recipient=${merchant}&pageSize=1&page=2`)).body)).toEqual([batch[2]]);
    expect((await get(`/x402scan/transactions?transactionHash=${hash}&chain=999`)).status).toBe(400); // not an indexed chain
  });

  it('lists only published payments: an unknown or unpublished transaction is an empty list', async () => {
    const hash = toHex(randomBytes(32));
    await seedPublished(app.ctx.db, [{ recipient: randomAddress(), sequence: null, blockNumber: ++block, transactionHash: hash }]);
    expect(await get(`/x402scan/transactions?transactionHash=${hash}`)).toEqual({ status: 200, body: [] });
    expect(await get(`/x402scan/transactions?transactionHash=0x${'12'.repeat(32)}`)).toEqual({ status: 200, body: [] });
  });

  it.each([
    ['transactionHash=0x12', 'transactionHash'],
    [`transactionHash=0x${'12'.repeat(32)}&afterSequence=0&chain=4663&recipient=${randomAddress()}`, 'transactionHash'],
    [`transactionHash=0x${'12'.repeat(32)}&before=0x${'12'.repeat(32)}`, 'before'],
  ])('%s → 400 naming %s', async (query, param) => {
    const { status, body } = await get(`/x402scan/transactions?${query}`);
    expect(status).toBe(400);
    expect(body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: `/${param}` })]));
  });
});
