import fs from 'node:fs';
import { ConfigError, loadConfig } from './config.js';
import { RouteMismatchError } from './route-check.js';
import { probeFacilitator, startPaidServer } from './start.js';

// `npm start` reads ./.env when present (process.loadEnvFile needs Node >= 20.12); real env wins.
if (fs.existsSync('.env')) {
  const fromShell = { ...process.env };
  process.loadEnvFile('.env');
  Object.assign(process.env, fromShell);
}

try {
  const config = loadConfig();
  const running = await startPaidServer(config);
  console.log(`paid-server listening on ${running.url} (public URL ${config.publicUrl})`);
  console.log(`  GET /health   free`);
  console.log(`  GET /weather  ${config.terms.price} atomic units of ${config.terms.asset} on ${config.terms.network}, paid to ${config.payTo}`);
  console.log(`  ${await probeFacilitator(running, config)}`);
  const stop = () => void running.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (error) {
  if (error instanceof ConfigError || error instanceof RouteMismatchError) {
    console.error(error.message);
  } else {
    console.error('paid-server failed to start:', error);
  }
  process.exit(1);
}
