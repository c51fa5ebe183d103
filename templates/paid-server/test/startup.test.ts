import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { describe, expect, it } from 'vitest';
import { RouteMismatchError } from '../src/route-check.js';
import { paidRoutes, weather } from '../src/routes.js';
import { startPaidServer } from '../src/start.js';
import { PAY_TO, stubFacilitator, testConfig } from './helpers.js';

// A seller moved the handler to /weather/:city but left the payment key at `GET /weather`.
const drifted = (app: Express) => {
  app.get('/health', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/weather/:city', weather);
};

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });

const refusesConnections = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(false)));
    socket.once('error', () => resolve(true));
  });

// No database: the template's own server and a stand-in facilitator. The PostgreSQL pass would run it again unchanged.
const noDatabaseTestOnPostgresPass = Boolean(process.env.DATABASE_URL);

describe.skipIf(noDatabaseTestOnPostgresPass)('route keys vs handlers at startup', () => {
  it('without the check, a drifted handler is served unpaid (the failure being prevented)', async () => {
    const config = testConfig();
    const app = express();
    app.use(paymentMiddleware(paidRoutes(config), new x402ResourceServer(stubFacilitator().facilitator).register(config.terms.network, new ExactEvmScheme())));
    drifted(app);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const { port } = server.address() as net.AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/weather/lisbon`);
    server.close();
    expect(res.status).toBe(200); // free weather: what the startup check exists to stop
  });

  it('the template refuses to start with the same drift, and never listens', async () => {
    const port = await freePort();
    const stub = stubFacilitator();
    const attempt = startPaidServer(testConfig({ PORT: String(port) }), { facilitator: stub.facilitator, registerHandlers: drifted, host: '127.0.0.1' });
    await expect(attempt).rejects.toThrow(RouteMismatchError);
    await expect(attempt).rejects.toThrow(/"GET \/weather" has no handler/);
    expect(await refusesConnections(port)).toBe(true);
    expect(stub.calls).toEqual([]);
  });

  it('refuses a handler spelled differently only by case or trailing slash', async () => {
    for (const spelling of ['/Weather', '/weather/']) {
      const start = startPaidServer(testConfig(), {
        facilitator: stubFacilitator().facilitator,
        registerHandlers: (app) => void app.get(spelling, weather),
      });
      await expect(start, spelling).rejects.toThrow(/only by case, slashes or escapes/);
    }
  });

  it('refuses a paid key with no handler at all', async () => {
    const config = testConfig();
    const routes = { ...paidRoutes(config), 'GET /forecast': paidRoutes(config)['GET /weather'] };
    await expect(startPaidServer(config, { facilitator: stubFacilitator().facilitator, routes })).rejects.toThrow(/"GET \/forecast" has no handler/);
  });
});

describe.skipIf(noDatabaseTestOnPostgresPass)('npm start entry (src/server.ts)', () => {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const serverTs = path.join(here, '../src/server.ts');
  const tsxCli = createRequire(import.meta.url).resolve('tsx/cli');

  // Runs in an empty directory so a developer's own .env cannot leak in.
  function run(env: Record<string, string>, untilStdout?: RegExp) {
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'paid-server-'));
    const child = spawn(process.execPath, [tsxCli, serverTs], { cwd, env: { PATH: process.env.PATH ?? '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      child.stdout.on('data', () => {
        if (untilStdout?.test(stdout)) child.kill('SIGTERM');
      });
      child.once('exit', (code) => {
        fs.rmSync(cwd, { recursive: true, force: true });
        resolve({ code, stdout, stderr });
      });
    });
  }

  it('exits 1 with a clear message when X402_PAY_TO is missing', async () => {
    const { code, stderr } = await run({});
    expect(code).toBe(1);
    expect(stderr).toMatch(/Invalid configuration:\n {2}- X402_PAY_TO is required/);
  });

  it('exits 1 when PUBLIC_URL has a path', async () => {
    const { code, stderr } = await run({ X402_PAY_TO: PAY_TO, PUBLIC_URL: 'https://api.example.com/weather' });
    expect(code).toBe(1);
    expect(stderr).toMatch(/PUBLIC_URL must be an origin only/);
  });

  it('starts with a valid config and reports an unreachable facilitator as a warning', async () => {
    const port = await freePort();
    const { stdout } = await run(
      { X402_PAY_TO: PAY_TO.toLowerCase(), PORT: '0', FACILITATOR_URL: `http://127.0.0.1:${port}` },
      /facilitator .*(not ready|settles)/,
    );
    expect(stdout).toMatch(/paid-server listening on http:\/\/localhost:\d+/);
    expect(stdout).toContain(`paid to ${PAY_TO}`);
    expect(stdout).toMatch(/WARNING: facilitator http:\/\/127\.0\.0\.1:\d+ is not ready \(/);
  });
});
