// One `tollgate serve` of the checkout at argv[2] (default: this one): spawned, until its api origin's GET /ready
// answers 200, then SIGTERM and its exit. Timed from outside as a whole process (CPU includes anvil's), two
// checkouts side by side, in alternating pairs; the environment names the data (TOLLGATE_DATA_DIR, DATABASE_URL).
//   /usr/bin/time -v node bench/startup/start-stop.mjs /path/to/other/checkout
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const tree = process.argv[2] ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const child = spawn(process.execPath, [path.join(tree, 'bin/tollgate.js'), 'serve'], {
  stdio: ['ignore', 'ignore', 'pipe'],
  env: { LOG_LEVEL: 'warn', API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0', ...process.env },
});
let banner = '';
const api = await new Promise((resolve, reject) => {
  child.stderr.on('data', (chunk) => {
    banner += chunk;
    const match = /^api\s+(http:\/\/\S+)$/m.exec(banner);
    if (match) resolve(match[1]);
  });
  child.once('exit', (code) => reject(new Error(`serve exited (${code}) before it listened:\n${banner}`)));
});
for (;;) {
  const answer = await fetch(`${api}/ready`).catch(() => null);
  if (answer?.status === 200) break;
  await new Promise((resolve) => setTimeout(resolve, 25));
}
child.kill('SIGTERM');
await new Promise((resolve) => child.once('exit', resolve));
