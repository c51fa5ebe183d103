// The service for the queue bench, in its own process: api and worker roles over the PostgreSQL
// database run.ts created, with only the modules the bench needs. Sets up a project and its key,
// prints one `BENCH_READY {json}` line, stops on SIGTERM.
//   BENCH_DATABASE_URL: the database; BENCH_ASYNC_LEASES=1: the opt-in async commit of lease changes.
import { eventsModule, eventsModuleWith } from '../../src/modules/events/module.js';
import { projectsModule } from '../../src/modules/projects/routes.js';
import { systemModule } from '../../src/modules/system/routes.js';
import { startBenchServer } from '../bench-server.js';

const asyncLeases = process.env.BENCH_ASYNC_LEASES === '1';
const server = await startBenchServer('queue', {
  roles: ['api', 'worker'],
  factories: [systemModule, projectsModule, asyncLeases ? eventsModuleWith({ asyncLeaseCommits: true }) : eventsModule],
});

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
