// The ledger's statements shared by the calls of one turn (a mined batch's settles resume together): each
// call must get exactly the answer it would have got alone. Calls started in one synchronous block share a turn.
// And the reconciler's work list (x402_settlements_open), kept by the ledger's own statements: a claim joins it,
// the outcome or a release leaves it, a lost claim race adds nothing; no index on x402_settlements covers a
// column an update changes, so those updates can stay HOT.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAddress } from 'viem';
import { openTestDatabase, type TestDatabase } from '../../../test/helpers/database.js';
import { PaymentUses } from '../../chain/payment-uses.js';
import { systemClock } from '../../platform/clock.js';
import { keyOf, SettlementLedger, type NewSettlement, type SettlementKey } from './ledger.js';

let testDb: TestDatabase;
let ledger: SettlementLedger;

beforeAll(async () => {
  testDb = await openTestDatabase();
  ledger = new SettlementLedger(testDb.database.db, systemClock);
});
afterAll(async () => {
  await testDb?.close();
});

const PAYER = getAddress('0x00000000000000000000000000000000000000aa');
const PAY_TO = getAddress('0x00000000000000000000000000000000000000bb');
const ASSET = getAddress('0x00000000000000000000000000000000000000cc');
let serial = 0;

function newRow(overrides: Partial<NewSettlement> = {}): NewSettlement {
  serial += 1;
  return {
    network: 'eip155:4663',
    asset: ASSET,
    payer: PAYER,
    nonce: `0x${serial.toString(16).padStart(64, '0')}`,
    payTo: PAY_TO,
    amount: '100',
    validBefore: '9999999999',
    signature: `0xsig${serial}`,
    payloadHash: `hash${serial}`,
    paymentId: null,
    claimToken: crypto.randomUUID(),
    fromBlock: 1,
    request: { serial },
    ...overrides,
  };
}

const TX = `0x${'ab'.repeat(32)}`;
const settled = (logIndex: number) => ({ status: 'settled' as const, transferLogIndex: logIndex, response: { success: true, transaction: TX, network: 'eip155:4663' as const, payer: PAYER } });

async function claimed(row: NewSettlement) {
  const claim = await ledger.claim(row);
  if (claim.kind !== 'claimed') throw new Error(`not claimed: ${claim.kind}`);
  return claim.row;
}

describe('SettlementLedger, calls of one turn', () => {
  it('claims: one INSERT for the turn; a key or payment id claimed twice in it is claimed once', async () => {
    const a = newRow({ paymentId: 'pay_turn_a' });
    const copy = { ...a, claimToken: crypto.randomUUID(), payloadHash: 'other' };
    const sameId = newRow({ paymentId: 'pay_turn_a' });
    const b = newRow();
    const claims = await Promise.all([ledger.claim(a), ledger.claim(copy), ledger.claim(sameId), ledger.claim(b)]);
    expect(claims.map((c) => c.kind)).toEqual(['claimed', 'exists', 'id_conflict', 'claimed']);
    expect(claims[1]).toMatchObject({ row: { claimToken: a.claimToken } });
  });

  it('claims: every column of every row in the turn is stored as given (one statement for the turn, whatever the rows)', async () => {
    const plain = newRow({ amount: '123456789012345678901234567890', validBefore: '18446744073709551616', fromBlock: 9_007_199_254_740_991 });
    const permit = newRow({ kind: 'permit2-exact', token: ASSET, paymentId: 'pay_columns', request: { text: 'quote " comma , brace { backslash \\ ', nested: [1, { deep: null }] } });
    const noRequest = newRow({ request: null });
    const rows = await Promise.all([plain, permit, noRequest].map(claimed));
    for (const [i, given] of [plain, permit, noRequest].entries()) {
      const stored = await ledger.find(given);
      expect(stored).toEqual(rows[i]);
      expect(stored).toMatchObject({ ...given, kind: given.kind ?? 'eip3009', token: given.token ?? null, status: 'claimed', txHash: null, transferLogIndex: null, response: null, finishedAt: null, successAnsweredAt: null });
      expect(stored?.claimedAt).toBeInstanceOf(Date);
      expect(stored?.createdAt).toEqual(stored?.updatedAt);
    }
    // A missing request is SQL null, not JSON null (a takeover tells the two apart).
    const [{ kind }] = await testDb.database.query<{ kind: string | null }>(sql`select jsonb_typeof(request) as kind from x402_settlements where nonce = ${noRequest.nonce}`);
    expect(kind).toBeNull();
  });

  it('outcomes: each open row gets its own; a key finished twice in the turn keeps the first, and a final row is not rewritten', async () => {
    const [a, b, done] = await Promise.all([claimed(newRow()), claimed(newRow()), claimed(newRow())]);
    await ledger.finish(done, { status: 'failed', response: { success: false, errorReason: 'earlier', transaction: '', network: 'eip155:4663' } });
    const failedB = { status: 'failed' as const, response: { success: false, errorReason: 'insufficient_funds', errorMessage: 'no', transaction: '', network: 'eip155:4663' as const } };
    const rows = await Promise.all([
      ledger.finish(a, settled(3)),
      ledger.finish(b, failedB),
      ledger.finish(a, failedB),
      ledger.finish(done, settled(4)),
    ]);
    expect(rows.map((r) => [r.status, r.errorReason, r.transferLogIndex, r.txHash])).toEqual([
      ['settled', null, 3, TX],
      ['failed', 'insufficient_funds', null, null],
      ['settled', null, 3, TX],
      ['failed', 'earlier', null, null],
    ]);
    expect((await ledger.find(b))?.response).toEqual(failedB.response);
    expect((await ledger.find(a))?.finishedAt).toBeInstanceOf(Date);
  });

  it("owners' answers: one success per row, none for a stranger's token or an unsettled row, none where the transfer bought something else", async () => {
    const rows = await Promise.all([0, 1, 2, 3].map(() => claimed(newRow())));
    const [a, b, c, open] = rows as [(typeof rows)[0], (typeof rows)[0], (typeof rows)[0], (typeof rows)[0]];
    // Log 11 already bought something else (another module's grant found it on chain first).
    await new PaymentUses(testDb.database.db).claim({ network: c.network, transactionHash: TX, logIndex: 11, asset: ASSET, payer: PAYER, nonce: c.nonce, payTo: PAY_TO, amount: '100' }, 'intent:pi_else');
    await Promise.all([ledger.finish(a, settled(10)), ledger.finish(b, settled(12)), ledger.finish(c, settled(11))]);
    const answer = (row: { claimToken: string } & SettlementKey, token = row.claimToken) => ledger.answerSuccess(row, { claimToken: token });
    const answers = await Promise.all([answer(a), answer(a), answer(b, crypto.randomUUID()), answer(c), answer(open), answer(b)]);
    expect(answers).toEqual([true, false, false, false, false, true]);
    // The lost one's mark was taken back (its success may still go to nobody else); the won ones hold their transfers.
    expect((await ledger.find(c))?.successAnsweredAt).toBeNull();
    expect((await ledger.find(a))?.successAnsweredAt).toBeInstanceOf(Date);
    const uses = new PaymentUses(testDb.database.db);
    expect(await uses.holder({ network: a.network, transactionHash: TX, logIndex: 10 })).toBe(`x402-settlement:anonymous:${PAYER}:${a.nonce}`);
    expect(await uses.holder({ network: a.network, transactionHash: TX, logIndex: 11 })).toBe('intent:pi_else');
    // Asked again in a later turn: still once.
    expect(await answer(a)).toBe(false);
  });

  it('broadcasts: a turn records each hash, a key sent twice keeps its latest, and a final row is left alone', async () => {
    const [a, b] = await Promise.all([claimed(newRow()), claimed(newRow())]);
    const later = `0x${'cd'.repeat(32)}`;
    await Promise.all([ledger.recordBroadcast(a, TX), ledger.recordBroadcast(b, TX), ledger.recordBroadcast(a, later)]);
    expect(await ledger.find(a)).toMatchObject({ status: 'broadcast', txHash: later });
    expect(await ledger.find(b)).toMatchObject({ status: 'broadcast', txHash: TX });
    await ledger.finish(b, settled(1));
    await ledger.recordBroadcast(b, later);
    expect(await ledger.find(b)).toMatchObject({ status: 'settled', txHash: TX });
  });
});

describe('the open list', () => {
  /** The open list's entries among `rows` (other tests of this file leave rows of their own open). */
  const listed = async (rows: NewSettlement[]) =>
    (await testDb.database.query<{ nonce: string }>(sql`select nonce from x402_settlements_open order by nonce`)).map((r) => r.nonce).filter((n) => rows.some((r) => r.nonce === n));
  const listedOpen = async (rows: NewSettlement[]) => (await ledger.listOpen(new Date(Date.now() + 60_000), 50)).map((r) => r.nonce).filter((n) => rows.some((r) => r.nonce === n));

  it('a claim joins it (once, however many race); the outcome and a release take it out', async () => {
    const [a, b, c] = [newRow(), newRow(), newRow()];
    const claims = await Promise.all([ledger.claim(a), ledger.claim({ ...a, claimToken: crypto.randomUUID() }), ledger.claim(b), ledger.claim(c)]);
    expect(claims.map((x) => x.kind)).toEqual(['claimed', 'exists', 'claimed', 'claimed']);
    expect(await listed([a, b, c])).toEqual([a.nonce, b.nonce, c.nonce]);
    expect(await listedOpen([a, b, c])).toEqual([a.nonce, b.nonce, c.nonce]);

    await ledger.recordBroadcast(keyOf(a), TX);
    expect(await listed([a])).toContain(a.nonce); // broadcast is still open
    await ledger.finish(keyOf(a), { status: 'failed', response: { success: false, errorReason: 'invalid_transaction_state', transaction: '', network: 'eip155:4663' } });
    await ledger.release(keyOf(b), b.claimToken);
    await ledger.release(keyOf(c), crypto.randomUUID()); // not its claim: it stays
    expect(await listed([a, b, c])).toEqual([c.nonce]);
    expect(await listedOpen([a, b, c])).toEqual([c.nonce]);
  });

  it('no index on x402_settlements covers a column an update changes', async () => {
    const indexes = await testDb.database.query<{ indexdef: string }>(sql`select indexdef from pg_indexes where tablename = 'x402_settlements'`);
    const updated = ['status', 'tx_hash', 'transfer_log_index', 'claim_token', 'claimed_at', 'success_answered_at', 'error_reason', 'error_message', 'response', 'updated_at', 'finished_at'];
    for (const { indexdef } of indexes) for (const column of updated) expect(indexdef).not.toMatch(new RegExp(`\\b${column}\\b`));
    expect(indexes).toHaveLength(3); // primary key, signature, payment id
  });
});

describe('reopen (a call a batch starved, sent again alone: execute.ts)', () => {
  it("only the owner's claim, on the batch's own hash, goes back to a claim that sent nothing; the lease starts again", async () => {
    const a = await claimed(newRow());
    const row = (await ledger.find(a))!;
    const batch = `0x${'ef'.repeat(32)}`;
    await ledger.recordBroadcast(a, batch);
    expect(await ledger.reopen(a, crypto.randomUUID(), batch)).toBeNull(); // not its claim
    expect(await ledger.reopen(a, row.claimToken, TX)).toBeNull(); // not the hash it carries now
    const reopened = await ledger.reopen(a, row.claimToken, batch);
    expect(reopened).toMatchObject({ status: 'claimed', txHash: null, claimToken: row.claimToken });
    expect(await ledger.reopen(a, row.claimToken, batch)).toBeNull(); // once
    // A claim that sent nothing: no takeover while its new lease runs, one after it; the new owner's send is recorded as any.
    expect(await ledger.takeOver(a, 60_000, crypto.randomUUID())).toBeNull();
    const other = crypto.randomUUID();
    expect(await ledger.takeOver(a, 0, other)).toMatchObject({ claimToken: other });
    await ledger.recordBroadcast(a, TX);
    expect(await ledger.find(a)).toMatchObject({ status: 'broadcast', txHash: TX });
  });

  it("a verdict read from the batch's hash is not written once the row was reopened, nor after its new send is recorded", async () => {
    const a = await claimed(newRow());
    const row = (await ledger.find(a))!;
    const batch = `0x${'ef'.repeat(32)}`;
    await ledger.recordBroadcast(a, batch);
    const failed = { status: 'failed' as const, response: { success: false, errorReason: 'invalid_exact_evm_transaction_failed', transaction: batch, network: 'eip155:4663' as const }, readWithTxHash: batch };
    await ledger.reopen(a, row.claimToken, batch);
    expect(await ledger.finish(a, failed)).toMatchObject({ status: 'claimed', txHash: null });
    await ledger.recordBroadcast(a, TX);
    expect(await ledger.finish(a, failed)).toMatchObject({ status: 'broadcast', txHash: TX });
    // Read from the hash it carries: written.
    expect(await ledger.finish(a, { ...settled(1), readWithTxHash: TX })).toMatchObject({ status: 'settled', txHash: TX });
  });

  it("in one turn, the owner's outcome is written before a stale verdict of the same row, and both callers get it", async () => {
    const a = await claimed(newRow());
    const batch = `0x${'ef'.repeat(32)}`;
    await ledger.recordBroadcast(a, TX);
    const stale = { status: 'failed' as const, response: { success: false, errorReason: 'invalid_exact_evm_transaction_failed', transaction: batch, network: 'eip155:4663' as const }, readWithTxHash: batch };
    const [fromChain, owners] = await Promise.all([ledger.finish(a, stale), ledger.finish(a, settled(1))]);
    expect(owners).toMatchObject({ status: 'settled', txHash: TX });
    expect(fromChain).toMatchObject({ status: 'settled', txHash: TX });
  });

  it('a final row is never reopened', async () => {
    const a = await claimed(newRow());
    const row = (await ledger.find(a))!;
    await ledger.recordBroadcast(a, TX);
    await ledger.finish(a, settled(1));
    expect(await ledger.reopen(a, row.claimToken, TX)).toBeNull();
    expect(await ledger.find(a)).toMatchObject({ status: 'settled', txHash: TX });
  });
});
