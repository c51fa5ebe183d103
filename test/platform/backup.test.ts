// Backups that restore (issue 48 item 3, must show): `tollgate backup` of a serving embedded instance under load
// (pay-and-calls, new intents, published events), `tollgate restore` into an empty data dir, `tollgate serve` on it;
// everything made before the backup began is there and usable (every wallet pays, every credential authenticates,
// every intent and event is found, every settled payment's transaction is on the restored chain), and the README
// walkthrough passes on the restored instance.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, dataDirs } from '../helpers/cli.js';
import { NodeProcesses, stop, type ServedProcess } from '../helpers/cluster-nodes.js';
import { repositoryRoot, WALKTHROUGH_OUTPUT, walkthroughScript } from '../helpers/readme.js';

const dirs = dataDirs();
const processes = new NodeProcesses();
afterAll(async () => {
  await processes.stopAll();
  dirs.removeAll();
});

const envOf = (dataDir: string) => ({ TOLLGATE_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'warn', API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `probe`'s first truthy answer, or null once `timeoutMs` has passed. */
async function until<T>(probe: () => Promise<T | null>, timeoutMs: number): Promise<T | null> {
  for (const deadline = Date.now() + timeoutMs; ; ) {
    const value = await probe();
    if (value || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A pay-and-call payment as its wallet lists it once the chain has settled it (the answer carries it pending). */
function settled(base: string, secret: string, id: string) {
  return until(async () => {
    const found = ((await call(base, 'GET', '/v1/wallets/me/payments?limit=100', secret)).body.data as Array<{ id: string; status: string }>).find((p) => p.id === id);
    return found?.status === 'settled' ? found : null;
  }, 30_000);
}

async function call(base: string, method: string, route: string, secret: string, body?: unknown) {
  const response = await fetch(`${base}${route}`, {
    method,
    headers: { authorization: `Bearer ${secret}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

interface Made {
  wallets: Array<{ id: string; secret: string }>;
  intents: string[];
  events: string[];
  payments: Array<{ wallet: string; transaction: string }>;
}

// Embedded by design (DATABASE_URL=''): the PostgreSQL pass would run it again unchanged.
describe.skipIf(Boolean(process.env.DATABASE_URL))('tollgate backup and restore', () => {
  it('backs up under load, restores into an empty data dir, and the restored instance has everything and runs the README walkthrough', { timeout: 600_000 }, async () => {
    const source = dirs.migrated();
    const env = envOf(source);
    let node: ServedProcess = await processes.serve({ label: 'source', env });
    const api = node.origins.api!;
    const mgmt = /^secret: (\S+)$/m.exec((await cli(env, 'mgmt-credential', 'create', '--name', 'backup')).stdout)![1]!;
    const owner = (await cli(env, 'dev', 'token', '--sub', 'backup-owner')).stdout.trim();
    const chainFacts = (await (await fetch(`${api}/dev/chain`)).json()) as { asset: { address: string }; network: string; rpcUrl: string };
    const created = await call(api, 'POST', '/v1/projects', owner, { name: 'backed-up' });
    const projectKey = created.body.data.apiKey.secret as string;
    const projectId = created.body.data.project.id as string;
    const merchant = (await call(api, 'POST', `/v1/projects/${projectId}/merchants`, owner, { name: 'shop', payTo: '0x2222222222222222222222222222222222222222' })).body.data.id as string;
    const queue = (await call(api, 'POST', '/v1/event-queues', projectKey, { name: 'orders' })).body.data.id as string;

    // Everything made, and when its answer came back.
    const made: Made = { wallets: [], intents: [], events: [], payments: [] };
    const at = new Map<string, number>();
    const note = (id: string) => at.set(id, Date.now());
    for (let i = 0; i < 3; i++) {
      const wallet = await call(api, 'POST', '/v1/wallets', mgmt, { externalId: `w${i}`, name: `w${i}` });
      expect(wallet.status).toBe(201);
      made.wallets.push({ id: wallet.body.data.wallet.id, secret: wallet.body.data.credential.secret });
      note(wallet.body.data.wallet.id);
      expect((await cli(env, 'dev', 'fund', wallet.body.data.wallet.address, '5')).code).toBe(0);
    }
    const ping = `${api}/x402-test/ping`;
    const maxPayment = { network: chainFacts.network, asset: chainFacts.asset.address, amount: '100' };

    // The load: three lanes of pay-and-calls, new intents and published events, until told to stop.
    let stopping = false;
    const failures: string[] = [];
    const lanes = [0, 1, 2].map(async (lane) => {
      for (let i = 0; !stopping; i++) {
        const wallet = made.wallets[lane]!;
        const paid = await call(api, 'POST', '/v1/wallets/me/pay-and-call', wallet.secret, { url: ping, maxPayment });
        // Answered on the seller's word (pending, its transaction in settlement): the restored instance must settle it.
        const claimed = paid.body.data?.payment?.settlement?.transaction;
        if (paid.status === 200 && paid.body.data.payment.status === 'pending' && typeof claimed === 'string') {
          made.payments.push({ wallet: wallet.id, transaction: claimed });
          note(claimed);
        } else failures.push(`pay ${paid.status}`);
        const intent = await call(api, 'POST', '/v1/payment-intents', projectKey, { merchantId: merchant, amountUsdCents: 100 + i, externalId: `o-${lane}-${i}` });
        if (intent.status === 201) (made.intents.push(intent.body.id), note(intent.body.id));
        else failures.push(`intent ${intent.status}`);
        const event = await call(api, 'POST', `/v1/event-queues/${queue}/events`, projectKey, { payload: { lane, i } });
        if (event.status === 201) (made.events.push(event.body.data.id), note(event.body.data.id));
        else failures.push(`event ${event.status}`);
      }
    });
    await sleep(6_000);

    const file = path.join(dirs.create(), 'tollgate.tgz');
    const began = Date.now();
    const backup = await cli(env, 'backup', '--out', file);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toMatch(/^backup \S+: \d+ bytes \(database \d+ bytes, chain at block \d+, \d+ data dir files\) in \d+ ms$/m);
    await sleep(3_000);
    stopping = true;
    await Promise.all(lanes);
    expect(failures).toEqual([]);
    const before = (id: string) => at.get(id)! < began;
    const expected = {
      wallets: made.wallets,
      intents: made.intents.filter(before),
      events: made.events.filter(before),
      payments: made.payments.filter((p) => before(p.transaction)),
    };
    expect(expected.payments.length).toBeGreaterThan(3);
    expect(made.payments.length).toBeGreaterThan(expected.payments.length); // the load went on while the backup ran
    console.log(`[backup] before the backup: ${expected.intents.length} intents, ${expected.events.length} events, ${expected.payments.length} payments; ${backup.stdout.trim()}`);
    await stop(node);

    // A data dir that is not empty is refused; a file that is not a backup is refused.
    expect((await cli(env, 'restore', file)).code).toBe(2);
    const target = path.join(dirs.create(), 'restored');
    const notBackup = path.join(dirs.create(), 'not-a-backup.tgz');
    fs.writeFileSync(notBackup, 'nope');
    expect((await cli(envOf(target), 'restore', notBackup)).code).not.toBe(0);
    expect(fs.existsSync(target) ? fs.readdirSync(target).filter((f) => f !== 'lock.sock' && f !== 'instance.json') : []).toEqual([]);

    const restored = await cli(envOf(target), 'restore', file);
    expect(restored.code, restored.stderr).toBe(0);
    node = await processes.serve({ label: 'restored', env: envOf(target) });
    const base = node.origins.api!;

    // Every credential authenticates; every wallet is there, and pays.
    expect((await call(base, 'GET', '/v1/wallets', mgmt)).status).toBe(200);
    expect((await call(base, 'GET', `/v1/projects/${projectId}`, owner)).status).not.toBe(401);
    for (const wallet of expected.wallets) {
      expect((await call(base, 'GET', `/v1/wallets/${wallet.id}`, mgmt)).status).toBe(200);
      const paid = await call(base, 'POST', '/v1/wallets/me/pay-and-call', wallet.secret, { url: `${base}/x402-test/ping`, maxPayment });
      expect(paid.body.data?.payment?.status, JSON.stringify(paid.body)).toBe('pending');
      expect(await settled(base, wallet.secret, paid.body.data.payment.id), JSON.stringify(paid.body)).toMatchObject({ status: 'settled', transaction: paid.body.data.payment.settlement.transaction });
    }
    // Every intent made before the backup.
    for (const id of expected.intents) expect((await call(base, 'GET', `/v1/payment-intents/${id}`, projectKey)).status, `intent ${id}`).toBe(200);
    // Every settled payment: on the wallet's record, and its transaction on the restored chain.
    const chain = ((await (await fetch(`${base}/dev/chain`)).json()) as { rpcUrl: string }).rpcUrl;
    for (const payment of expected.payments) {
      const receipt = await fetch(chain, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getTransactionReceipt', params: [payment.transaction] }) });
      expect(((await receipt.json()) as { result: { status: string } | null }).result?.status, payment.transaction).toBe('0x1');
    }
    // A payment the backup caught before the chain confirmed it (pending) is settled by the restored instance.
    for (const wallet of expected.wallets) {
      const mine = expected.payments.filter((p) => p.wallet === wallet.id);
      const listed = await until(async () => {
        const all = (await call(base, 'GET', '/v1/wallets/me/payments?limit=100', wallet.secret)).body.data as Array<{ transaction: string | null; status: string }>;
        return mine.every((payment) => all.some((p) => p.transaction === payment.transaction && p.status === 'settled')) ? all : null;
      }, 30_000);
      for (const payment of mine) expect(listed?.find((p) => p.transaction === payment.transaction)?.status, payment.transaction).toBe('settled');
    }
    // Every event published before the backup can be claimed (and acked) once.
    const claimed = new Set<string>();
    for (;;) {
      const batch = await call(base, 'POST', `/v1/event-queues/${queue}/claim`, projectKey, { leaseSeconds: 60 });
      if (batch.status !== 200 || !batch.body.data) break;
      claimed.add(batch.body.data.event.id);
      expect((await call(base, 'POST', `/v1/events/${batch.body.data.event.id}/ack`, projectKey, { leaseToken: batch.body.data.leaseToken })).status).toBe(200);
    }
    for (const id of expected.events) expect(claimed.has(id), `event ${id}`).toBe(true);
    // The restore is on the audit trail.
    expect((await cli(envOf(target), 'audit')).stdout).toMatch(/operator:\S+  backup\.restore  \S+tollgate\.tgz  ok/);

    // The README walkthrough, as written, on the restored instance.
    const { stdout } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', walkthroughScript()], {
      cwd: repositoryRoot,
      env: { ...process.env, ...envOf(target), TOLLGATE: base },
      timeout: 180_000,
    });
    for (const line of WALKTHROUGH_OUTPUT) expect(stdout).toMatch(line);
  });
});
