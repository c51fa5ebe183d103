// The reconciler's work list (x402_settlements_open) is kept by the ledger's own statements: a claim joins it,
// the outcome or a release leaves it, a lost claim race adds nothing. And no index on x402_settlements covers a
// column an update changes, so those updates can stay HOT.
import { sql } from 'drizzle-orm';
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase, type TestDatabase } from '../../../test/helpers/database.js';
import { systemClock } from '../../platform/clock.js';
import { keyOf, SettlementLedger, type NewSettlement } from './ledger.js';

let testDb: TestDatabase;
let ledger: SettlementLedger;

beforeAll(async () => {
  testDb = await openTestDatabase();
  ledger = new SettlementLedger(testDb.database.db, systemClock);
});
afterAll(async () => {
  await testDb?.close();
});

let serial = 0;
function newRow(): NewSettlement {
  serial += 1;
  return {
    network: 'eip155:4663',
    asset: getAddress('0x00000000000000000000000000000000000000cc'),
    payer: getAddress('0x00000000000000000000000000000000000000aa'),
    nonce: `0x${serial.toString(16).padStart(64, '0')}`,
    payTo: getAddress('0x00000000000000000000000000000000000000bb'),
    amount: '100',
    validBefore: '9999999999',
    signature: `0xopen${serial}`,
    payloadHash: `open${serial}`,
    paymentId: null,
    claimToken: crypto.randomUUID(),
    fromBlock: 1,
    request: { serial },
  };
}

const listed = async () => (await testDb.database.query<{ nonce: string }>(sql`select nonce from x402_settlements_open order by nonce`)).map((r) => r.nonce);
const future = () => new Date(Date.now() + 60_000);

describe('the open list', () => {
  it('a claim joins it (once, however many race); the outcome and a release take it out', async () => {
    const [a, b, c] = [newRow(), newRow(), newRow()];
    const claims = await Promise.all([ledger.claim(a), ledger.claim({ ...a, claimToken: crypto.randomUUID() }), ledger.claim(b), ledger.claim(c)]);
    expect(claims.map((x) => x.kind)).toEqual(['claimed', 'exists', 'claimed', 'claimed']);
    expect(await listed()).toEqual([a.nonce, b.nonce, c.nonce]);
    expect((await ledger.listOpen(future(), 50)).map((r) => r.nonce)).toEqual([a.nonce, b.nonce, c.nonce]);

    await ledger.recordBroadcast(keyOf(a), `0x${'ab'.repeat(32)}`);
    expect(await listed()).toContain(a.nonce); // broadcast is still open
    await ledger.finish(keyOf(a), { status: 'failed', response: { success: false, errorReason: 'invalid_transaction_state', transaction: '', network: 'eip155:4663' } });
    await ledger.release(keyOf(b), b.claimToken);
    await ledger.release(keyOf(c), crypto.randomUUID()); // not its claim: it stays
    expect(await listed()).toEqual([c.nonce]);
    expect((await ledger.listOpen(future(), 50)).map((r) => r.nonce)).toEqual([c.nonce]);
  });

  it('no index on x402_settlements covers a column an update changes', async () => {
    const indexes = await testDb.database.query<{ indexdef: string }>(sql`select indexdef from pg_indexes where tablename = 'x402_settlements'`);
    const updated = ['status', 'tx_hash', 'transfer_log_index', 'claim_token', 'claimed_at', 'success_answered_at', 'error_reason', 'error_message', 'response', 'updated_at', 'finished_at'];
    for (const { indexdef } of indexes) for (const column of updated) expect(indexdef).not.toMatch(new RegExp(`\\b${column}\\b`));
    expect(indexes).toHaveLength(3); // primary key, signature, payment id
  });
});
