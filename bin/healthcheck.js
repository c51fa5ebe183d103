#!/usr/bin/env node
// The image's HEALTHCHECK: asks the running instance's own /ready, on whichever listener this container runs
// (`serve --roles facilitator` has no api port; `--roles worker` listens on WORKER_PORT). The instance records where
// each listener is bound in $TOLLGATE_DATA_DIR/instance.json; exit 0 on 200 (ready or degraded), 1 otherwise.
// Plain Node, no import of the service: it runs every 10 s.
import fs from 'node:fs';
import path from 'node:path';

const ORDER = ['api', 'facilitator', 'relay', 'assets', 'worker'];

function fail(reason) {
  console.error(`unhealthy: ${reason}`);
  process.exit(1);
}

const file = path.join(path.resolve(process.env.TOLLGATE_DATA_DIR || './.data'), 'instance.json');
let record;
try {
  record = JSON.parse(fs.readFileSync(file, 'utf8'));
} catch (error) {
  fail(`no instance record at ${file} (${error.code ?? error.message}): not started yet, or stopped`);
}
const name = ORDER.find((listener) => record.listen?.[listener]);
if (!name) fail(`the instance (pid ${record.pid}) lists no listener yet: still starting`);
// Bound to 0.0.0.0 or :: in a container: ask over loopback.
const url = new URL('/ready', record.listen[name].replace('//0.0.0.0', '//127.0.0.1').replace('//[::]', '//127.0.0.1'));
try {
  const response = await fetch(url, { signal: AbortSignal.timeout(2_500) });
  if (response.status !== 200) fail(`${name} ${url} answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
} catch (error) {
  fail(`${name} ${url}: ${error.message}`);
}
process.exit(0);
