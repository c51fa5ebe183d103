// What the load needs, made through the public API before the chaos starts (through the balancer, so any
// api node may answer): a project with its key and a merchant, the event queues (published events,
// schedules' events, the project's intent events), the schedules, trading runtimes on paper, wallets for
// pay-and-call, and funded payer keys for the public settles and the uploads.
import { randomUUID } from 'node:crypto';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { expect } from 'vitest';
import { callAdminSocket } from '../../src/admin/socket.js';
import { request, sleep, type Answer } from './client.js';
import type { Cluster } from './topology.js';

export const SCHEDULES = 4;
export const RUNTIMES = 2;

export interface Wallet {
  id: string;
  address: Address;
  secret: string;
}

export interface Fixtures {
  lb: string;
  apiKey: string;
  merchantId: string;
  merchantPayTo: Address;
  queues: { published: string; scheduled: string; intents: string };
  /** Ticks before this instant are not asked of the schedules (they were being registered). */
  schedulesFrom: Date;
  scheduleIds: string[];
  runtimeIds: string[];
  runtimesFrom: Date;
  pingWallets: Wallet[];
  intentWallets: Wallet[];
  publicPayers: PrivateKeyAccount[];
  uploadPayers: PrivateKeyAccount[];
}

/** A setup call must succeed (retried while the node answering it is still warming up). */
async function must(url: string, init: Parameters<typeof request>[1], ok = [200, 201]): Promise<Answer> {
  for (let attempt = 1; ; attempt++) {
    const answer = await request(url, init);
    if (answer.status !== null && ok.includes(answer.status)) return answer;
    if (attempt >= 5) throw new Error(`${init?.method ?? 'POST'} ${url}: ${answer.status} ${JSON.stringify(answer.body)?.slice(0, 500)}`);
    await sleep(500);
  }
}

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

export async function createFixtures(cluster: Cluster): Promise<Fixtures> {
  const lb = cluster.balancer.origin;
  const anyNode = cluster.byRole('api')[0]!;
  const { token } = (await callAdminSocket(anyNode.dataDir, 'dev.token', { sub: 'cluster-owner' })) as { token: string };
  const { secret: mgmt } = (await callAdminSocket(anyNode.dataDir, 'mgmt-credential.create', { name: 'cluster' })) as { secret: string };
  const identity = bearer(token);

  const project = (await must(`${lb}/v1/projects`, { headers: identity, json: { name: 'cluster shop' } })).body.data;
  const apiKey = project.apiKey.secret as string;
  const merchantPayTo = privateKeyToAccount(generatePrivateKey()).address;
  const merchant = (await must(`${lb}/v1/projects/${project.project.id}/merchants`, { headers: identity, json: { name: 'store', payTo: merchantPayTo } })).body.data;

  const queue = async (name: string) => (await must(`${lb}/v1/event-queues`, { headers: bearer(apiKey), json: { name, defaultLeaseSeconds: 10, maxAttempts: 100 } })).body.data.id as string;
  const queues = { published: await queue('published'), scheduled: await queue('scheduled'), intents: await queue('intent-events') };
  await must(`${lb}/v1/projects/${project.project.id}`, { method: 'PATCH', headers: identity, json: { intentEventsQueueId: queues.intents } });

  const schedulesFrom = new Date(Date.now() + 5_000);
  const scheduleIds: string[] = [];
  for (let i = 0; i < SCHEDULES; i++) {
    const created = await must(`${lb}/v1/schedules`, {
      headers: bearer(apiKey),
      json: { queueId: queues.scheduled, externalId: `every-minute-${i}`, name: `every minute ${i}`, schedule: { type: 'cron', expression: '* * * * *' }, payload: { schedule: i } },
    });
    scheduleIds.push(created.body.data.id);
  }

  // Trading on paper: one strategy, one account (an agent wallet), runtimes ticking every minute.
  const strategy = (
    await must(`${lb}/agentic-trading/strategies`, {
      headers: identity,
      json: { name: 'trend', version: { kind: 'quant_signal', schemaVersion: 1, definition: { instructions: 'Trend follow. fast=2 slow=5', universe: ['BTC-USD'], dataSources: ['embedded'], candleInterval: '1m' } } },
    })
  ).body.data;
  const account = (await must(`${lb}/agentic-trading/accounts/agent-wallets`, { headers: identity, json: { name: 'main' } })).body.data;
  const runtimeIds: string[] = [];
  for (let i = 0; i < RUNTIMES; i++) {
    const runtime = await must(`${lb}/agentic-trading/runtimes`, {
      headers: identity,
      json: { strategyVersionId: strategy.latestVersion.id, accountId: account.id, name: `btc ${i}`, cronExpression: '* * * * *', fundLimitUsd: 10_000, maxLeverage: 2, maxDrawdownPercent: 50, idempotencyKey: randomUUID() },
    });
    runtimeIds.push(runtime.body.data.id);
  }

  const wallet = async (name: string): Promise<Wallet> => {
    const created = (await must(`${lb}/v1/wallets`, { headers: bearer(mgmt), json: { externalId: name, name } })).body.data;
    expect(created.wallet.status).toBe('active');
    await cluster.chain.fund(created.wallet.address, '100');
    return { id: created.wallet.id, address: created.wallet.address, secret: created.credential.secret };
  };
  const pingWallets = [await wallet('ping-1'), await wallet('ping-2')];
  const intentWallets = [await wallet('intent-1'), await wallet('intent-2')];
  const payers = async (n: number) => {
    const accounts = Array.from({ length: n }, () => privateKeyToAccount(generatePrivateKey()));
    for (const account of accounts) await cluster.chain.fund(account.address, '1');
    return accounts;
  };
  const publicPayers = await payers(3);
  const uploadPayers = await payers(2);

  // The runtimes are active once the workers registered their schedules.
  const deadline = Date.now() + 30_000;
  for (const id of runtimeIds) {
    for (;;) {
      const status = (await request(`${lb}/agentic-trading/runtimes/${id}`, { headers: identity })).body?.data?.status;
      if (status === 'active') break;
      if (Date.now() > deadline) throw new Error(`runtime ${id} is ${status}, not active`);
      await sleep(250);
    }
  }
  return {
    lb,
    apiKey,
    merchantId: merchant.id,
    merchantPayTo,
    queues,
    schedulesFrom,
    scheduleIds,
    runtimeIds,
    runtimesFrom: new Date(Date.now() + 2_000),
    pingWallets,
    intentWallets,
    publicPayers,
    uploadPayers,
  };
}
