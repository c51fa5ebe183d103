// One round of row-versions.ts against the Tollgate tree at BENCH_TREE (default: this checkout), printed as one
// JSON line: a fresh PostgreSQL database, the tree's facilitator role in-process (its default batching), N settles
// as direct calls, 64 in flight; then the pool is closed (a backend flushes its table statistics as it exits) and
// pg_stat_user_tables is read for the settlement tables.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { databaseUrl, facilitatorBenchEnv, pgAdmin } from '../lib.js';

const tree = path.resolve(process.env.BENCH_TREE ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '../..'));
const settleCount = Number(process.env.BENCH_SETTLE ?? 1000);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 64);
const payerCount = Number(process.env.BENCH_PAYERS ?? 32);
const serverUrl = process.env.DATABASE_URL;
if (!serverUrl) throw new Error('row-versions reads pg_stat_user_tables: set DATABASE_URL to a PostgreSQL server');

const { loadConfig } = await import(path.join(tree, 'src/config.ts'));
const { startServer } = await import(path.join(tree, 'src/server.ts'));
const { openDatabase } = await import(path.join(tree, 'src/platform/db.ts'));
const { runMigrations } = await import(path.join(tree, 'src/platform/migrate.ts'));
const { signAuthorization } = await import(path.join(tree, 'test/x402/support.ts'));

const name = `tollgate_rowversions_${Math.random().toString(16).slice(2, 10)}`;
const admin = pgAdmin(serverUrl);
await admin(`create database ${name}`);
const url = databaseUrl(serverUrl, name);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-rowversions-'));
try {
  const database = await openDatabase({ url, pgliteDir: null, poolSize: 10 });
  await runMigrations(database);
  const config = loadConfig(facilitatorBenchEnv(dataDir));
  const server = await startServer({ config, roles: ['facilitator'], database, ephemeralSecrets: true, adminSocket: false, log: pino({ level: 'warn' }) });
  let ok = 0;
  try {
    const { ctx } = server;
    const payers = Array.from({ length: payerCount }, () => privateKeyToAccount(generatePrivateKey()));
    for (const payer of payers) await ctx.chain.devchain.fund(payer.address, '1000');
    const requirements = ctx.x402.requirements({ url: 'http://bench/resource', description: 'bench', mimeType: 'application/json', amount: '100', payTo: privateKeyToAccount(generatePrivateKey()).address });
    const payloads = await Promise.all(Array.from({ length: settleCount }, (_, i) => signAuthorization(payers[i % payers.length], requirements)));
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(concurrency, payloads.length) }, async () => {
        while (next < payloads.length) if ((await ctx.facilitator.settle(payloads[next++], requirements).catch(() => null))?.success === true) ok += 1;
      }),
    );
  } finally {
    await server.stop();
    await database.close();
  }
  // The pool's backends have exited, so their counters are in; this connection's own flush is forced anyway.
  const stats = await new Promise<unknown>((resolve) => setTimeout(resolve, 500)).then(async () => {
    const read = pgAdmin(url);
    await read('select pg_stat_force_next_flush()');
    return (
      await read(
        `select relname, n_tup_ins::int as ins, n_tup_upd::int as upd, n_tup_hot_upd::int as hot, n_tup_del::int as del
         from pg_stat_user_tables where relname like 'x402_settlements%' order by relname`,
      )
    ).rows;
  });
  console.log(JSON.stringify({ tree, settles: settleCount, ok, tables: stats }));
} finally {
  await admin(`drop database if exists ${name} with (force)`);
  fs.rmSync(dataDir, { recursive: true, force: true });
}
