// The supervisor's sweep pages through every running agent (by id, 100 a page), not the 100 expiring soonest:
// 250 running agents are each visited exactly once; stopped and deleted ones are not.
import { afterAll, beforeAll, expect, it } from 'vitest';
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
