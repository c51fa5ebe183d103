// The service for the queue bench, in its own process: api and worker roles over the PostgreSQL
// database run.ts created, with only the modules the bench needs. Sets up a project and its key,
// prints one `BENCH_READY {json}` line, stops on SIGTERM.
//   BENCH_DATABASE_URL: the database; BENCH_DURABLE_LEASES=1: lease changes commit synchronously too.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { eventsModule, eventsModuleWith } from '../../src/modules/events/module.js';
import { projectsModule } from '../../src/modules/projects/routes.js';
import { systemModule } from '../../src/modules/system/routes.js';
import { startServer } from '../../src/server.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-queue-'));
const config = loadConfig({
  ...process.env,
  TOLLGATE_DATA_DIR: dataDir,
  API_PORT: '0',
  FACILITATOR_PORT: '0',
  RELAY_PORT: '0',
  ASSETS_PORT: '0',
  DEVCHAIN_PORT: '0',
  LOG_LEVEL: 'warn',
  DATABASE_URL: process.env.BENCH_DATABASE_URL!,
});
const asyncLeases = process.env.BENCH_ASYNC_LEASES === '1';
const server = await startServer({
  config,
  roles: ['api', 'worker'],
  adminSocket: false,
  factories: [systemModule, projectsModule, asyncLeases ? eventsModuleWith({ asyncLeaseCommits: true }) : eventsModule],
});
const stop = async () => {
  await server.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());

const api = server.urls.api;
const identity = await server.ctx.devIdentity!.sign('bench-user');
const response = await fetch(`${api}/v1/projects`, {
  method: 'POST',
  headers: { authorization: `Bearer ${identity}`, 'content-type': 'application/json' },
  body: JSON.stringify({ name: 'queue bench' }),
});
if (response.status !== 201) throw new Error(`project: ${response.status} ${await response.text()}`);
const { apiKey } = ((await response.json()) as { data: { apiKey: { secret: string } } }).data;
console.log(`BENCH_READY ${JSON.stringify({ api, apiKey: apiKey.secret, asyncLeases })}`);
