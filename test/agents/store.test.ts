// The agents store under the supervisor: its sweep pages through every running agent (by id, 100 a page), not
// the 100 expiring soonest; and a renewal racing the expiry sweep at the moment a month ends is one outcome or
// the other, never a charge for an agent left expired (both take the instance's row first).
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { newId } from '../../src/platform/ids.js';
import { AgentsStore } from '../../src/modules/agents/store.js';
import { agentInstances, agents } from '../../src/modules/agents/tables.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'] });
});
afterAll(async () => app?.close());

it('pages through all running agents, each once', async () => {
  const now = new Date();
  const statuses = [...Array(250).fill('running'), 'stopped', 'deleted', 'pending'] as const;
  const rows = statuses.map((status, i) => ({ id: newId(), status, i }));
  await app.ctx.db.insert(agents).values(rows.map(({ id, status }) => ({ id, userId: 'pager', name: 'a', type: 'runtime_a' as const, spec: 'monthly', status, attempts: 1, createdAt: now, updatedAt: now })));
  await app.ctx.db.insert(agentInstances).values(
    rows.map(({ id, i }) => ({
      id: newId(),
      agentId: id,
      provider: 'local',
      appName: `agent-${i}`,
      url: 'http://127.0.0.1:9',
      cpus: 1,
      memoryMb: 512,
      volumeSizeGb: 1,
      volumeRef: `/nowhere/${i}`,
      sealedToken: 'x',
      // The soonest expiring are not the first ids: a page ordered by expiry would repeat or skip some.
      expiresAt: new Date(now.getTime() + ((i * 7919) % 250) * 60_000),
      createdAt: now,
      updatedAt: now,
    })),
  );
  const store = new AgentsStore(app.ctx.db);
  const seen: string[] = [];
  for (let after: string | null = null, page; (page = await store.runningPage(after, 100)).length > 0; after = page.at(-1)!.agent.id) {
    seen.push(...page.map((row) => row.agent.id));
    if (page.length < 100) break;
  }
  expect(seen).toHaveLength(250);
  expect(new Set(seen)).toEqual(new Set(rows.filter((r) => r.status === 'running').map((r) => r.id)));
});

it('a renewal racing the expiry sweep either renews (charged, running, a month later) or loses (not charged, expired)', async () => {
  const now = new Date();
  const ids = Array.from({ length: 20 }, () => newId());
  await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'racer', cents: 20 * 1000, note: 'test' });
  await app.ctx.db.insert(agents).values(ids.map((id) => ({ id, userId: 'racer', name: 'r', type: 'runtime_a' as const, spec: 'monthly', status: 'running' as const, attempts: 1, createdAt: now, updatedAt: now })));
  await app.ctx.db.insert(agentInstances).values(
    ids.map((agentId, i) => ({ id: newId(), agentId, provider: 'local', appName: `race-${i}`, url: 'http://127.0.0.1:9', cpus: 1, memoryMb: 512, volumeSizeGb: 1, volumeRef: `/nowhere/race-${i}`, sealedToken: 'x', expiresAt: now, createdAt: now, updatedAt: now })),
  );
  const store = new AgentsStore(app.ctx.db);
  const renew = (agentId: string) =>
    app.ctx.db
      .transaction(async (tx) => {
        if (!(await store.renew(tx, agentId, now))) return false;
        await app.ctx.services.credits.spendOnRenewal(tx, 'racer', 1000, agentId);
        return true;
      })
      .catch(() => false);
  await Promise.all(ids.flatMap((id) => [renew(id), store.markExpired(id, now)]));

  const rows = await app.ctx.database.query<{ id: string; status: string; expires_at: Date; charged: number }>(
    sql`select a.id, a.status, i.expires_at, (select count(*)::int from credit_transfers t where t.agent_id = a.id and t.cause = 'agent_renewal') as charged
        from agents a join agent_instances i on i.agent_id = a.id where a.user_id = 'racer'`,
  );
  expect(rows).toHaveLength(20);
  for (const row of rows) {
    const extended = new Date(row.expires_at).getTime() > now.getTime();
    // Charged exactly when extended; an extended month is never left expired (a renewal of an expired agent deploys it again: pending).
    expect({ charged: row.charged === 1, extended }).toEqual({ charged: extended, extended });
    expect(row.status).toBe(extended ? (row.status === 'pending' ? 'pending' : 'running') : 'expired');
  }
});
