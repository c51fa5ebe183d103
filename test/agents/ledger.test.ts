// GET /credits/ledger over real HTTP: every movement of a user's credits (grant, agent purchase, renewal,
// refund) newest first, signed, with the balance after it; paging with limit and before across ties and a
// clock that goes back, with no gap and no repeat; another user's entries never shown; and a renewal the
// balance does not cover refused with 402 inside the caller's transaction, writing nothing.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { ManualClock } from '../../src/platform/clock.js';
import { ApiError } from '../../src/platform/http/errors.js';
import { newId } from '../../src/platform/ids.js';
import { createProjectKey } from '../events/harness.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

interface Entry {
  id: string;
  amountUsdCents: number;
  balanceAfterUsdCents: number;
  cause: { kind: string; id: string | null };
  createdAt: string;
}

// The transfers' created_at comes from this clock; it is moved by hand so the order is the test's.
const clock = new ManualClock();
let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'], clock });
});
afterAll(async () => app?.close());

async function call(method: string, path: string, token: string | null, body?: unknown) {
  const response = await fetch(`${app.urls.api}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

const credits = () => app.ctx.services.credits;
const grant = (sub: string, cents: number) =>
  adminCommands(app.ctx, app.modules)['credits.grant']!({ sub, cents, note: 'ledger test' }) as Promise<{ transferId: string; balanceUsdCents: number }>;

async function ledger(token: string, query = ''): Promise<Entry[]> {
  const answer = await call('GET', `/credits/ledger${query}`, token);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.body).toMatchObject({ code: 0, message: 'ok' });
  return answer.body.data;
}

async function buyAgent(token: string, name: string): Promise<string> {
  const created = await call('POST', '/agents', token, { name, type: 'runtime_a' });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data.agent.id;
}

const renew = (userId: string, cents: number, agentId: string) => app.ctx.db.transaction((tx) => credits().spendOnRenewal(tx, userId, cents, agentId));

/** Each entry's balance after, less its amount, is the next older entry's balance after; the oldest starts from 0. */
function expectConsistent(entries: Entry[]) {
  entries.forEach((entry, i) => expect(entry.balanceAfterUsdCents - entry.amountUsdCents, `below ${entry.id}`).toBe(entries[i + 1]?.balanceAfterUsdCents ?? 0));
}

describe('the credits ledger', () => {
  it('lists a grant, agent purchases, renewals and a refund newest first, signed, traced to their cause, with the balance after each', async () => {
    const token = await app.identityToken('ledger-alice');
    const granted = await grant('ledger-alice', 5000);
    clock.advance(1000);
    const first = await buyAgent(token, 'first');
    clock.advance(1000);
    const second = await buyAgent(token, 'second');
    clock.advance(1000);
    // The same agent renewed twice: a renewal is not unique per agent.
    const renewed = await renew('ledger-alice', 700, first);
    expect(renewed.balanceCents).toBe(2300);
    clock.advance(1000);
    expect((await renew('ledger-alice', 300, first)).balanceCents).toBe(2000);
    clock.advance(1000);
    const refund = await app.ctx.db.transaction((tx) => credits().refundAgentPurchase(tx, second));
    expect(refund?.balanceCents).toBe(3000);

    const transfers = await credits().store.transfersOf('user:ledger-alice');
    expect(transfers.map((t) => [t.cause, t.from_account, t.to_account, Number(t.amount_cents), t.agent_id])).toEqual([
      ['grant', 'system:grants', 'user:ledger-alice', 5000, null],
      ['agent_purchase', 'user:ledger-alice', 'system:agents', 1000, first],
      ['agent_purchase', 'user:ledger-alice', 'system:agents', 1000, second],
      ['agent_renewal', 'user:ledger-alice', 'system:agents', 700, first],
      ['agent_renewal', 'user:ledger-alice', 'system:agents', 300, first],
      ['refund', 'system:agents', 'user:ledger-alice', 1000, second],
    ]);
    const secondPurchase = transfers[2]!.id;

    const entries = await ledger(token);
    expect(entries.map((e) => [e.id, e.amountUsdCents, e.balanceAfterUsdCents, e.cause])).toEqual([
      [refund!.transferId, 1000, 3000, { kind: 'refund', id: secondPurchase }],
      [transfers[4]!.id, -300, 2000, { kind: 'renewal', id: first }],
      [renewed.transferId, -700, 2300, { kind: 'renewal', id: first }],
      [secondPurchase, -1000, 3000, { kind: 'purchase', id: second }],
      [transfers[1]!.id, -1000, 4000, { kind: 'purchase', id: first }],
      [granted.transferId, 5000, 5000, { kind: 'grant', id: null }],
    ]);
    // Exactly the listed shape: a grant's operator note stays out.
    expect(Object.keys(entries[5]!).sort()).toEqual(['amountUsdCents', 'balanceAfterUsdCents', 'cause', 'createdAt', 'id']);
    expect(entries[5]!.cause).toEqual({ kind: 'grant', id: null });
    const times = entries.map((e) => Date.parse(e.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(entries[0]!.createdAt).toBe(clock.now().toISOString());
    // The newest entry's balance is the balance GET /credits answers, and the kept one.
    expect((await call('GET', '/credits', token)).body.data).toEqual({ balanceUsdCents: entries[0]!.balanceAfterUsdCents });
    expect(await credits().store.ledgerBalance('user:ledger-alice')).toBe(3000);
    expectConsistent(entries);
  });

  it('pages with limit and before across equal and out-of-order times, with no gap and no repeat', async () => {
    const token = await app.identityToken('ledger-pager');
    const base = clock.now().getTime() + 60_000;
    // Many transfers share a created_at (ties go by id), and the clock goes back between some of them: an
    // id-only or a time-only cursor would skip or repeat entries here.
    const offsets = [0, 0, 0, -5000, 3000, 3000, -5000, 0, 1000, -2000];
    const made: { id: string; amount: number; at: number }[] = [];
    for (let i = 0; i < 55; i += 1) {
      const at = base + offsets[i % offsets.length]!;
      clock.set(new Date(at));
      const amount = 1 + ((i * 37) % 101);
      made.push({ id: (await grant('ledger-pager', amount)).transferId, amount, at });
    }
    const oldestFirst = [...made].sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1));
    let running = 0;
    const expected = oldestFirst.map((m) => ({ id: m.id, balance: (running += m.amount) })).reverse();
    // The order really differs from insertion order, and from id order alone.
    expect(expected.map((e) => e.id)).not.toEqual([...made].reverse().map((m) => m.id));
    expect(expected.map((e) => e.id)).not.toEqual(made.map((m) => m.id).sort().reverse());

    const all = await ledger(token, '?limit=100');
    expect(all.map((e) => [e.id, e.balanceAfterUsdCents])).toEqual(expected.map((e) => [e.id, e.balance]));
    expectConsistent(all);
    expect(all[0]!.balanceAfterUsdCents).toBe((await call('GET', '/credits', token)).body.data.balanceUsdCents);

    // The default page is the newest 50.
    expect((await ledger(token)).map((e) => e.id)).toEqual(expected.slice(0, 50).map((e) => e.id));

    const pages: Entry[][] = [];
    let before: string | null = null;
    for (;;) {
      const page: Entry[] = await ledger(token, `?limit=20${before ? `&before=${before}` : ''}`);
      if (page.length === 0) break;
      pages.push(page);
      before = page[page.length - 1]!.id;
    }
    expect(pages.map((p) => p.length)).toEqual([20, 20, 15]);
    // Each page's balances are the whole ledger's, not a sum restarted at the page.
    expect(pages.flat()).toEqual(all);
    expect(await ledger(token, `?limit=1&before=${expected[53]!.id}`)).toEqual([all[54]]);
    // Past the oldest entry: an empty page, not an error.
    expect(await ledger(token, `?before=${expected[54]!.id}`)).toEqual([]);
    clock.set(new Date(base + 10_000));
  });

  it("never shows another user's entries, refuses another user's entry as before, and needs an identity token", async () => {
    // Mallory's entry is older than Bob's: a cursor looked up outside her own ledger would page her from his.
    const malloryGrant = await grant('ledger-mallory', 300);
    clock.advance(1000);
    await grant('ledger-bob', 1200);
    const bob = await app.identityToken('ledger-bob');
    const mallory = await app.identityToken('ledger-mallory');
    const bobEntries = await ledger(bob);
    expect(bobEntries.map((e) => [e.amountUsdCents, e.balanceAfterUsdCents])).toEqual([[1200, 1200]]);
    expect(await ledger(mallory)).toEqual([expect.objectContaining({ id: malloryGrant.transferId, amountUsdCents: 300, balanceAfterUsdCents: 300 })]);
    // Someone who never had credits: an empty ledger.
    expect(await ledger(await app.identityToken('ledger-nobody'))).toEqual([]);

    const foreign = await call('GET', `/credits/ledger?before=${bobEntries[0]!.id}`, mallory);
    expect(foreign.status).toBe(400);
    expect(foreign.body).toMatchObject({ code: 1000, data: { reason: 'unknown_before' } });
    expect(foreign.body.message).toMatch(/not an entry of your ledger/);

    expect((await call('GET', '/credits/ledger', null)).status).toBe(401);
    expect((await call('GET', '/credits/ledger', 'not-a-token')).status).toBe(401);
    const projectKey = await createProjectKey(app, 'ledger-bob');
    expect((await call('GET', '/credits/ledger', projectKey)).status).toBe(401);
  });

  it('answers 400 for a limit outside 1–100 and a before that is not an entry id', async () => {
    await grant('ledger-carol', 100);
    const token = await app.identityToken('ledger-carol');
    for (const query of ['limit=0', 'limit=101', 'limit=-1', 'limit=1.5', 'limit=ten', 'limit=', 'before=nope', 'before=123', `before=${newId()}`]) {
      const answer = await call('GET', `/credits/ledger?${query}`, token);
      expect(answer.status, query).toBe(400);
      expect(answer.body.code, query).toBe(1000);
    }
    expect(await ledger(token, '?limit=1')).toHaveLength(1);
    expect(await ledger(token, '?limit=100')).toHaveLength(1);
  });

  it('refuses a renewal the balance does not cover with 402 inside the caller transaction, writing nothing', async () => {
    await grant('ledger-dave', 1500);
    const token = await app.identityToken('ledger-dave');
    const agentId = await buyAgent(token, 'short');
    const before = await ledger(token);
    expect(before[0]!.balanceAfterUsdCents).toBe(500);

    const refused = await renew('ledger-dave', 1000, agentId).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 402, code: 'insufficient_balance', details: { reason: 'insufficient_balance', balanceUsdCents: 500, requiredUsdCents: 1000 } });

    // A renewal that fits, then one that does not, in one transaction: the 402 rolls back both.
    const rolledBack = app.ctx.db.transaction(async (tx) => {
      expect((await credits().spendOnRenewal(tx, 'ledger-dave', 400, agentId)).balanceCents).toBe(100);
      await credits().spendOnRenewal(tx, 'ledger-dave', 400, agentId);
    });
    await expect(rolledBack).rejects.toMatchObject({ status: 402, details: { balanceUsdCents: 100, requiredUsdCents: 400 } });

    expect(await ledger(token)).toEqual(before);
    expect(await credits().balance('ledger-dave')).toBe(500);
    const renewals = await app.ctx.database.query<{ n: string }>(sql`select count(*)::text as n from credit_transfers where cause = 'agent_renewal' and agent_id = ${agentId}`);
    expect(renewals[0]!.n).toBe('0');
    expect(await credits().store.ledgerBalance('user:ledger-dave')).toBe(500);
  });

  it('is documented in /openapi.json under credits, with its query and a summary', async () => {
    const spec = (await app.origins.api!.inject({ method: 'GET', url: '/openapi.json' })).json();
    const operation = spec.paths['/credits/ledger']?.get;
    expect(operation).toMatchObject({ tags: ['credits'], summary: expect.stringMatching(/credit/i) });
    expect(operation.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`).sort()).toEqual(['query:before', 'query:limit']);
  });
});
