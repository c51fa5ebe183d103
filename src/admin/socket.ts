import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import type { AppContext } from '../context.js';
import { randomUUID } from 'node:crypto';
import type { AdminCommand } from '../modules/module.js';
import { errorText } from '../platform/log-redaction.js';
import { AdminCommandError } from './errors.js';

export interface AdminSocket {
  path: string;
  close(): Promise<void>;
}

export const adminSocketPath = (dataDir: string) => path.join(dataDir, 'admin.sock');
const MAX_BODY = 64 * 1024;
const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** Who calls: the CLI's request id and the operator's login, sent as headers and kept in the audit row. */
export interface AdminCaller {
  requestId: string;
  operator: string;
}

const headerOf = (value: string | string[] | undefined) => (typeof value === 'string' ? value : undefined);

/**
 * The running instance's operator endpoint: a Unix socket with mode 0600, so file permissions
 * are its authentication. `POST /<command>` with a JSON object of arguments.
 */
export async function startAdminSocket(ctx: AppContext, commands: Record<string, AdminCommand>): Promise<AdminSocket> {
  const socketPath = adminSocketPath(ctx.config.dataDir);
  await removeStaleSocket(socketPath);
  const server = http.createServer((request, response) => {
    const reply = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const name = decodeURIComponent((request.url ?? '/').slice(1));
    const command = commands[name];
    if (request.method !== 'POST' || !command) return reply(404, { error: `unknown command ${name}` });
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) request.destroy();
      else chunks.push(chunk);
    });
    request.on('end', async () => {
      try {
        const args = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
        const requestId = headerOf(request.headers['x-request-id']);
        const operator = headerOf(request.headers['x-tollgate-operator'])?.slice(0, 200) || 'unknown';
        const call = { requestId: requestId && REQUEST_ID.test(requestId) ? requestId : randomUUID(), operator, concerns: () => {} };
        reply(200, { result: await command(args, call) });
      } catch (error) {
        if (error instanceof AdminCommandError || error instanceof SyntaxError) return reply(400, { error: error.message });
        ctx.log.error({ err: error, command: name }, 'admin command failed');
        // The CLI prints it: a library's error may quote an RPC URL with its key (log-redaction.ts).
        reply(500, { error: errorText(error) });
      }
    });
  });
  fs.mkdirSync(path.dirname(socketPath), { recursive: true });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(socketPath, resolve));
  fs.chmodSync(socketPath, 0o600);
  return {
    path: socketPath,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A socket file left by a crashed instance answers nothing; remove it so we can listen. */
async function removeStaleSocket(socketPath: string): Promise<void> {
  if (!fs.existsSync(socketPath)) return;
  const alive = await new Promise<boolean>((resolve) => {
    const probe = net.connect(socketPath);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (alive) throw new Error(`another Tollgate instance is serving ${socketPath}`);
  fs.unlinkSync(socketPath);
}

/** Sends a command to a running instance; null when none is listening on the data dir. */
export async function callAdminSocket(dataDir: string, command: string, args: Record<string, unknown>, caller?: AdminCaller): Promise<unknown | null> {
  const socketPath = adminSocketPath(dataDir);
  if (!fs.existsSync(socketPath)) return null;
  return new Promise((resolve, reject) => {
    const request = http.request({ socketPath, path: `/${encodeURIComponent(command)}`, method: 'POST', headers: { 'content-type': 'application/json', ...(caller ? { 'x-request-id': caller.requestId, 'x-tollgate-operator': caller.operator } : {}) } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { result?: unknown; error?: string };
        if (response.statusCode === 200) resolve(body.result);
        else reject(new AdminCommandError(body.error ?? `admin command failed (${response.statusCode})`));
      });
    });
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNREFUSED' || error.code === 'ENOENT') resolve(null);
      else reject(error);
    });
    request.end(JSON.stringify(args));
  });
}
