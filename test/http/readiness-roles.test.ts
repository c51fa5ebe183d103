// GET /ready per role: a failing check takes a node out (503) only when one of its roles cannot serve
// without it. The chain RPC going away (the devchain stopped under a running node, so its RPC URL
// points at a dead port) degrades an api or assets node, which still serves (200, status degraded),
// and takes a facilitator or relay node out; a dead database takes out every role.
import { afterEach, describe, expect, it } from 'vitest';
import type { Role } from '../../src/platform/server-settings.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

interface ReadyBody {
  code: number;
  message: string;
  data: { ready: boolean; status: string; failing: string[]; checks: Record<string, { ok: boolean; critical: boolean; reason?: string }> };
}

const ready = async (base: string) => {
  const response = await fetch(`${base}/ready`);
  return { status: response.status, body: (await response.json()) as ReadyBody };
};

let app: TestApp | undefined;
afterEach(async () => {
  await app?.close().catch(() => undefined);
  app = undefined;
});

/** A node running `role` alone, and the URL of that role's origin. */
async function node(role: Role): Promise<{ app: TestApp; base: string }> {
  app = await buildTestApp({ roles: [role] });
  return { app, base: app.urls[role as 'api' | 'facilitator' | 'relay' | 'assets'] };
}

/** The devchain stops; the node keeps its RPC URL, now a port nobody answers on. */
async function killChainRpc(target: TestApp): Promise<void> {
  const { rpcUrl } = target.ctx.chain;
  await target.ctx.chain.devchain!.stop();
  const answered = await fetch(rpcUrl, { method: 'POST', body: '{}' }).then(() => true, () => false);
  expect(answered).toBe(false);
}

describe('/ready with the chain RPC down', () => {
  it('an api node answers 200, status degraded, naming the chain (and the relayer it cannot read) as failing and not critical', async () => {
    const { app, base } = await node('api');
    const healthy = await ready(base);
    expect(healthy.status).toBe(200);
    expect(healthy.body).toMatchObject({ code: 0, message: 'ok', data: { ready: true, status: 'ready', failing: [] } });
    expect(healthy.body.data.checks.database).toMatchObject({ ok: true, critical: true });
    expect(healthy.body.data.checks.chain).toMatchObject({ ok: true, critical: false });

    await killChainRpc(app);
    const { status, body } = await ready(base);
    expect(status).toBe(200);
    expect(body.code).toBe(0);
    expect(body.data).toMatchObject({ ready: true, status: 'degraded' });
    expect(body.data.failing).toContain('chain');
    expect(body.message).toBe(`degraded: ${body.data.failing.join(', ')}`);
    expect(body.data.checks.chain).toMatchObject({ ok: false, critical: false });
    expect(body.data.checks.database).toMatchObject({ ok: true, critical: true });
    for (const name of body.data.failing) expect(body.data.checks[name]!.critical, name).toBe(false);
    // Still serving: a route that needs only the database answers.
    expect((await fetch(`${base}/health`)).status).toBe(200);
  }, 60_000);

  it('an assets node answers 200 degraded too', async () => {
    const { app, base } = await node('assets');
    await killChainRpc(app);
    const { status, body } = await ready(base);
    expect(status).toBe(200);
    expect(body.data).toMatchObject({ ready: true, status: 'degraded' });
    expect(body.data.checks.chain).toMatchObject({ ok: false, critical: false });
  }, 60_000);

  it('a facilitator node answers 503, status unready: settling is its job', async () => {
    const { app, base } = await node('facilitator');
    expect((await ready(base)).body.data.status).toBe('ready');

    await killChainRpc(app);
    const { status, body } = await ready(base);
    expect(status).toBe(503);
    expect(body.code).not.toBe(0);
    expect(body.message).toMatch(/^not ready: .*chain/);
    expect(body.data).toMatchObject({ ready: false, status: 'unready' });
    expect(body.data.checks.chain).toMatchObject({ ok: false, critical: true });
    expect(body.data.checks.relayer).toMatchObject({ ok: false, critical: true });
  }, 60_000);

  it('a relay node answers 503: every validate and broadcast reads the chain', async () => {
    const { app, base } = await node('relay');
    await killChainRpc(app);
    const { status, body } = await ready(base);
    expect(status).toBe(503);
    expect(body.data).toMatchObject({ ready: false, status: 'unready' });
    expect(body.data.checks.chain).toMatchObject({ ok: false, critical: true });
  }, 60_000);
});

describe('/ready with the database down', () => {
  it('an api node answers 503, status unready, with the chain still passing', async () => {
    const { app, base } = await node('api');
    await app.testDatabase.database.close();
    const { status, body } = await ready(base);
    expect(status).toBe(503);
    expect(body.message).toBe('not ready: database');
    expect(body.data).toMatchObject({ ready: false, status: 'unready', failing: ['database'] });
    expect(body.data.checks.database).toMatchObject({ ok: false, critical: true });
    expect(body.data.checks.chain).toMatchObject({ ok: true });
  }, 60_000);
});
