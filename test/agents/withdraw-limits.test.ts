// A user out to drain our relayer's gas through their agents' wallets: every withdrawal is a transaction the
// relayer pays for (issue 41: 20 one-unit withdrawals cost 14 of them, for the price of one $10 agent). Dust is
// refused, each agent gets AGENT_WITHDRAW_LIMIT_PER_HOUR new withdrawals an hour counted in PostgreSQL, and a
// retry of a withdrawal already made is still answered. Asserted by what the relayer sent and what the wallets
// hold on chain, not by what the service said.
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { relayerTxCount } from '../x402/support.js';

const LIMIT = 3;
const MIN = 10_000n; // AGENT_WITHDRAW_MIN_AMOUNT's default: $0.01 of USDG
const to = '0x000000000000000000000000000000000000bEEF';

let app: TestApp;
let token: string;
/** `dusty` tries amounts below the minimum; `busy` spends its hour; `burst` spends it all at once. */
const agents: Record<'dusty' | 'busy' | 'burst', { id: string; wallet: Address }> = {} as never;

const call = async (method: string, path: string, body?: unknown, key?: string) => {
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) };
  const response = await fetch(`${app.urls.api}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as any };
};
const withdraw = (agent: keyof typeof agents, amount: string | bigint, key?: string) =>
  call('POST', `/agents/${agents[agent].id}/wallet/withdraw`, { to, amount: String(amount) }, key);
const relayerSent = () => relayerTxCount(app, app.ctx.chain.relayer!.address);
const balanceOf = (agent: keyof typeof agents) => app.ctx.chain.devchain!.balanceOf(agents[agent].wallet);
/** The rate counts in fixed UTC-hour windows: a test about one window waits out an hour's last seconds. */
const withinOneWindow = async () => {
  const left = 3_600_000 - (Date.now() % 3_600_000);
  if (left < 15_000) await new Promise((resolve) => setTimeout(resolve, left + 100));
};

beforeAll(async () => {
  app = await buildTestApp({ env: { AGENT_WITHDRAW_LIMIT_PER_HOUR: String(LIMIT) } });
  await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'drainer', cents: 3000, note: 'test' });
  token = await app.identityToken('drainer');
  for (const name of ['dusty', 'busy', 'burst'] as const) agents[name] = { id: (await call('POST', '/agents', { name, type: 'runtime_b' })).body.data.agent.id, wallet: '0x' };
  // The worker deploys them (and gives each its wallet).
  for (let waited = 0; (await call('GET', '/agents')).body.data.some((a: { status: string }) => a.status !== 'running'); waited += 100) {
    if (waited > 45_000) throw new Error('the agents were not deployed');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  for (const agent of Object.values(agents)) agent.wallet = (await call('GET', `/agents/${agent.id}/budget`)).body.data.wallet.address;
  await app.ctx.chain.devchain!.fund(agents.dusty.wallet, '0.025');
  await app.ctx.chain.devchain!.fund(agents.busy.wallet, '1');
  await app.ctx.chain.devchain!.fund(agents.burst.wallet, '1');
}, 90_000);
afterAll(async () => {
  await app?.close();
});

describe('a user draining our gas through agent-wallet withdrawals', () => {
  it('cannot withdraw dust: 400 withdrawal_below_minimum, and nothing is sent', async () => {
    const [sent, balance] = [await relayerSent(), await balanceOf('dusty')];
    const tries: [string, string?][] = [['1'], ['1', 'dust-key-0001'], [String(MIN - 1n)]];
    for (const [amount, key] of tries) {
      const refused = await withdraw('dusty', amount, key);
      expect(refused.status, amount).toBe(400);
      expect(refused.body).toMatchObject({ code: 1000, data: { reason: 'withdrawal_below_minimum', minAmount: String(MIN) } });
    }
    expect(await relayerSent()).toBe(sent);
    expect(await balanceOf('dusty')).toBe(balance);
    // The refusal bound nothing to its key: the same key now withdraws the minimum.
    expect((await withdraw('dusty', MIN, 'dust-key-0001')).body.data.transfer).toMatchObject({ status: 'settled', amount: String(MIN) });
  });

  it('may empty a wallet that holds less than the minimum, and only empty it', async () => {
    expect((await withdraw('dusty', MIN)).body.data.transfer).toMatchObject({ status: 'settled' });
    const left = await balanceOf('dusty');
    expect(left).toBe(5_000n);
    expect((await withdraw('dusty', left - 1n)).body.data).toMatchObject({ reason: 'withdrawal_below_minimum' });
    expect((await withdraw('dusty', left)).body.data.transfer).toMatchObject({ status: 'settled', amount: String(left) });
    expect(await balanceOf('dusty')).toBe(0n);
  });

  it(`gets ${LIMIT} new withdrawals an hour: the next is 429 rate_limited with Retry-After and sends nothing`, async () => {
    await withinOneWindow();
    const [sent, balance] = [await relayerSent(), await balanceOf('busy')];
    const made = [];
    for (let i = 1; i <= LIMIT; i++) {
      const answer = await withdraw('busy', MIN, `busy-key-000${i}`);
      expect(answer.body.data.transfer, JSON.stringify(answer.body)).toMatchObject({ status: 'settled', amount: String(MIN) });
      made.push(answer.body.data.transfer);
    }
    for (const key of ['busy-key-0009', undefined]) {
      const over = await withdraw('busy', MIN, key);
      expect(over.status).toBe(429);
      expect(over.body).toMatchObject({ code: 1009, data: { reason: 'rate_limited', limit: LIMIT, windowSeconds: 3600 } });
      expect(Number(over.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(over.retryAfter)).toBeLessThanOrEqual(3600);
    }
    expect((await relayerSent()) - sent).toBeLessThanOrEqual(LIMIT);
    expect(await balanceOf('busy')).toBe(balance - BigInt(LIMIT) * MIN);

    // A retry of a withdrawal already made is answered from what it made: neither counted nor refused, nothing sent.
    const relayed = await relayerSent();
    for (let i = 0; i < 2; i++) {
      const replay = await withdraw('busy', MIN, 'busy-key-0002');
      expect(replay.status).toBe(200);
      expect(replay.body.data.transfer).toEqual(made[1]);
    }
    // The key with another amount is still the key's conflict, not the hour's.
    expect((await withdraw('busy', MIN + 1n, 'busy-key-0002')).body.data).toMatchObject({ reason: 'idempotency_key_reused' });
    expect(await relayerSent()).toBe(relayed);
    expect(await balanceOf('busy')).toBe(balance - BigInt(LIMIT) * MIN);
  });

  it(`sends at most ${LIMIT} of 20 withdrawals fired at once`, async () => {
    await withinOneWindow();
    const [sent, balance] = [await relayerSent(), await balanceOf('burst')];
    const answers = await Promise.all(Array.from({ length: 20 }, () => withdraw('burst', MIN)));
    expect(answers.filter((a) => a.status === 200).map((a) => a.body.data.transfer.status)).toEqual(Array(LIMIT).fill('settled'));
    expect(answers.filter((a) => a.status === 429)).toHaveLength(20 - LIMIT);
    expect((await relayerSent()) - sent).toBeLessThanOrEqual(LIMIT);
    expect(await balanceOf('burst')).toBe(balance - BigInt(LIMIT) * MIN);
  });
});
