// Agents bought with credits, over real HTTP: the spec's create and list, the 402 on a short balance with
// nothing charged, tenants apart, and the ledger: every movement a transfer with its cause, the kept balance
// equal to the transfers' sum, and 50 concurrent purchases against a balance for 10 buying exactly 10.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { createProjectKey } from '../events/harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'] });
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

const grant = (sub: string, cents: number) => adminCommands(app.ctx, app.modules)['credits.grant']!({ sub, cents, note: 'test grant' });
const agentRows = async (userId: string) =>
  Number((await app.ctx.database.query<{ n: string }>(sql`select count(*)::text as n from agents where user_id = ${userId}`))[0]!.n);
const credits = () => app.ctx.services.credits;

/** The constraint the database named when it refused a statement (drizzle wraps the driver's error). */
async function refusedBy(statement: Promise<unknown>): Promise<string | undefined> {
  const error = await statement.then(() => null, (e: unknown) => e as { cause?: { constraint?: string; message?: string } });
  const cause = error?.cause;
  return cause?.constraint ?? cause?.message?.match(/constraint "([^"]+)"/)?.[1];
}

describe('agents and credits', () => {
  it('refuses a purchase the balance does not cover with 402, charging and creating nothing', async () => {
    const token = await app.identityToken('broke-user');
    const refused = await call('POST', '/agents', token, { name: 'helper', type: 'runtime_a' });
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ code: 1002, data: { reason: 'insufficient_balance', balanceUsdCents: 0, requiredUsdCents: 1000 } });
    expect(await agentRows('broke-user')).toBe(0);
    expect((await call('GET', '/credits', token)).body).toEqual({ code: 0, message: 'ok', data: { balanceUsdCents: 0 } });
  });

  it('buys an agent for 1000 cents: 201 with the agent and the charge, listed with runtimeInstance, the ledger traced', async () => {
    await grant('alice', 2500);
    const token = await app.identityToken('alice');
    const created = await call('POST', '/agents', token, { name: '  Research bot ', type: 'runtime_b' });
    expect(created.status).toBe(201);
    const { agent, charge } = created.body.data;
    expect(charge).toEqual({ amountUsdCents: 1000, balanceAfterUsdCents: 1500 });
    expect(agent).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      userId: 'alice',
      name: 'Research bot',
      type: 'runtime_b',
      spec: 'monthly',
      status: 'pending',
      attempts: 0,
      lastError: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      runtimeInstance: null,
    });
    // The agent as the list and GET /agents/{agentId} show it (and as a renewal answers it).
    const listed = await call('GET', '/agents', token);
    expect(listed.body.data).toEqual([agent]);
    expect((await call('GET', `/agents/${agent.id}`, token)).body.data).toEqual(agent);
    expect((await call('GET', '/credits', token)).body.data).toEqual({ balanceUsdCents: 1500 });

    // Double entry: the grant came in from the grants account, the purchase went out to the agents account.
    const transfers = await credits().store.transfersOf('user:alice');
    expect(transfers.map((t) => [t.cause, t.from_account, t.to_account, Number(t.amount_cents), t.agent_id, t.note])).toEqual([
      ['grant', 'system:grants', 'user:alice', 2500, null, 'test grant'],
      ['agent_purchase', 'user:alice', 'system:agents', 1000, agent.id, null],
    ]);
    expect(await credits().store.ledgerBalance('user:alice')).toBe(1500);

    // Another user sees none of it.
    const other = await app.identityToken('mallory');
    expect((await call('GET', '/agents', other)).body.data).toEqual([]);
    expect((await call('GET', '/credits', other)).body.data).toEqual({ balanceUsdCents: 0 });
  });

  it('validates the body and the credential before anything is charged', async () => {
    await grant('validator', 5000);
    const token = await app.identityToken('validator');
    for (const body of [{ name: '', type: 'runtime_a' }, { name: 'x'.repeat(101), type: 'runtime_a' }, { name: 'ok', type: 'runtime_c' }, { name: 'ok' }, {}]) {
      const answer = await call('POST', '/agents', token, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.code).toBe(1000);
    }
    expect((await call('POST', '/agents', null, { name: 'ok', type: 'runtime_a' })).status).toBe(401);
    // A project API key is not an identity token.
    const projectKey = await createProjectKey(app, 'validator');
    expect((await call('POST', '/agents', projectKey, { name: 'ok', type: 'runtime_a' })).status).toBe(401);
    expect((await call('GET', '/credits', projectKey)).status).toBe(401);
    expect(await agentRows('validator')).toBe(0);
    expect((await call('GET', '/credits', token)).body.data.balanceUsdCents).toBe(5000);
    expect((await call('POST', '/agents', token, { name: 'x'.repeat(100), type: 'runtime_a' })).status).toBe(201);
  });

  it('50 concurrent purchases against a balance for 10 buy exactly 10; the balance ends at 0, never below', async () => {
    await grant('racer', 10_000);
    const token = await app.identityToken('racer');
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => call('POST', '/agents', token, { name: `racer-${i}`, type: 'runtime_a' })));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 402)).toHaveLength(40);
    expect(answers.filter((a) => a.status === 201).map((a) => a.body.data.charge.balanceAfterUsdCents).sort((a, b) => a - b)).toEqual([0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000]);
    expect(await agentRows('racer')).toBe(10);
    expect(await credits().balance('racer')).toBe(0);
    expect(await credits().store.ledgerBalance('user:racer')).toBe(0);
    const purchases = (await credits().store.transfersOf('user:racer')).filter((t) => t.cause === 'agent_purchase');
    expect(new Set(purchases.map((t) => t.agent_id)).size).toBe(10);
  });

  it('the database refuses a negative balance and a second purchase transfer for one agent, whatever the writer', async () => {
    expect(await refusedBy(app.ctx.database.query(sql`update credit_balances set balance_cents = -1 where user_id = 'racer'`))).toBe('credit_balances_non_negative');
    const [purchase] = (await credits().store.transfersOf('user:alice')).filter((t) => t.cause === 'agent_purchase');
    expect(
      await refusedBy(
        app.ctx.database.query(sql`insert into credit_transfers (id, from_account, to_account, amount_cents, cause, agent_id, created_at)
          values (gen_random_uuid(), 'user:alice', 'system:agents', 1000, 'agent_purchase', ${purchase!.agent_id}, now())`),
      ),
    ).toBe('credit_transfers_agent_purchase_unique');
    expect(
      await refusedBy(
        app.ctx.database.query(sql`insert into credit_transfers (id, from_account, to_account, amount_cents, cause, created_at)
          values (gen_random_uuid(), 'system:grants', 'user:alice', 5, 'grant', now())`),
      ),
    ).toBe('credit_transfers_traceable');
  });
});
