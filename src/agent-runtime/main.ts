// The agent runtime: one process per hosted agent, with its own port and data directory (its volume).
// Started by a runtime provider (src/modules/agents/local-provider.ts runs it on this machine); it
// imports nothing from the service. Every route but /health needs the bearer token it was started with.
// It keeps no conversation: the service sends each turn's transcript and stores what the turn adds.
//   AGENT_ID, AGENT_TYPE, INSTANCE_ID, AGENT_RUNTIME_TOKEN, AGENT_RUNTIME_DATA_DIR, AGENT_RUNTIME_PORT (0: any),
//   AGENT_RUNTIME_HOST (default 127.0.0.1; 0.0.0.0 on a hosted machine, whose proxy comes over its private network),
//   AGENT_DAILY_TOKEN_BUDGET, AGENT_SERVICE_URL (runtime_b: where its tool pays)
import { timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { cappedGate, TokenBudget, TurnCapReached } from './budget.js';
import { deadlineSignal } from './deadline.js';
import type { Entry, ProviderCall, Sampling, Tool } from './model-types.js';
import { converse } from './models.js';
import { ProviderError } from './wire.js';
import { payAndCallTool } from './pay-tool.js';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) {
    console.error(`agent runtime: ${name} is required`);
    process.exit(2);
  }
  return value;
};

const agentId = env('AGENT_ID');
const agentType = env('AGENT_TYPE');
const instanceId = env('INSTANCE_ID');
const token = Buffer.from(env('AGENT_RUNTIME_TOKEN'));
const dataDir = env('AGENT_RUNTIME_DATA_DIR');
const port = Number(process.env.AGENT_RUNTIME_PORT ?? 0);
const host = process.env.AGENT_RUNTIME_HOST || '127.0.0.1';
const budget = new TokenBudget(dataDir, Number(env('AGENT_DAILY_TOKEN_BUDGET')));
// runtime_a is a chat assistant; runtime_b also has a tool: paying for x402 resources from its own wallet.
const tools: Tool[] = agentType === 'runtime_b' ? [payAndCallTool(env('AGENT_SERVICE_URL'), agentId, token.toString())] : [];

/** Today's token budget cannot cover the next model call: none is made. */
class BudgetExhausted extends Error {}

/** The runtime's record on its volume: a redeploy on the same volume keeps it (and its id). */
function loadConfig() {
  const file = path.join(dataDir, 'config.json');
  const now = new Date().toISOString();
  const existing = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as { id: string; createdAt: string; instanceId: string; updatedAt: string }) : null;
  const config = existing
    ? { ...existing, instanceId, updatedAt: existing.instanceId === instanceId ? existing.updatedAt : now }
    : { id: crypto.randomUUID(), instanceId, createdAt: now, updatedAt: now };
  fs.mkdirSync(dataDir, { recursive: true });
  const temporary = `${file}.${process.pid}`;
  fs.writeFileSync(temporary, JSON.stringify(config, null, 2));
  fs.renameSync(temporary, file);
  return config;
}

const config = loadConfig();

function authorized(request: http.IncomingMessage): boolean {
  const presented = Buffer.from((request.headers.authorization ?? '').replace(/^Bearer /, ''));
  return presented.length === token.length && timingSafeEqual(presented, token);
}

const send = (response: http.ServerResponse, status: number, body: unknown) =>
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

/** A turn runs at most this long (the service waits as long, plus a margin): its model and tool calls are aborted then. */
const TURN_TIMEOUT_MS = 5 * 60_000;

interface ChatRequest {
  /** The session as the service keeps it, already trimmed to the model's context, with the new messages last. */
  transcript: Entry[];
  provider: ProviderCall;
  sampling: Sampling;
  /**
   * The service's turn (its tool payments name it) and the request that asked for it; a turn sold per token carries
   * its cap (`maxTokens`) and `tools: false`: its buyer's words never make the agent pay from its own wallet.
   */
  turn?: { id: string; requestId?: string; maxTokens?: number; tools?: boolean };
}

/**
 * One turn: the model's answer to the transcript, its tool rounds run, with the day's use after it (the
 * service keeps the same count). `cancelled`: the service went away (its connection closed) — the turn stops
 * there, so nothing more is called or paid for a turn nobody will record.
 */
async function turn(body: ChatRequest, cancelled: AbortSignal, onDelta?: (text: string) => void) {
  const signal = deadlineSignal(TURN_TIMEOUT_MS, cancelled);
  const cap = body.turn?.maxTokens;
  const gate = cap === undefined ? budget.gate : cappedGate(budget.gate, cap);
  const outcome = await converse({ ...body, tools: body.turn?.tools === false ? [] : tools, gate, onDelta, signal, turn: { turnId: body.turn?.id, requestId: body.turn?.requestId } });
  if (!outcome) throw new BudgetExhausted();
  return { ...outcome, day: dayOf() };
}

/** The day's use as the budget counts it, which the service mirrors (GET /agents/{id}/usage). */
const dayOf = () => {
  const { day, usedToday } = budget.status();
  return { day, usedToday };
};

/** What a failed turn answers: the provider's failure, the budget, or nothing of ours (internal text stays in the log). */
function failure(error: unknown): { status: number; body: Record<string, unknown> } {
  if (error instanceof ProviderError) return { status: 502, body: { error: error.message, providerStatus: error.status, day: dayOf() } };
  if (error instanceof TurnCapReached) return { status: 413, body: { error: error.message, maxTokens: error.maxTokens, day: dayOf() } };
  if (error instanceof BudgetExhausted) return { status: 429, body: { error: "today's token budget cannot cover this call", ...budget.status(), day: dayOf() } };
  console.error(`agent runtime: turn failed: ${(error as Error).stack ?? String(error)}`);
  return { status: 500, body: { error: 'internal error' } };
}

/**
 * A streamed turn: Server-Sent Events from the first text on (`delta` `{text}`, then `done` with the turn or
 * `error` with its failure). Until then nothing is written, so a turn refused before any text (the budget, the
 * provider) answers its plain status.
 */
async function streamTurn(body: ChatRequest, response: http.ServerResponse, cancelled: AbortSignal): Promise<void> {
  const event = (name: string, data: unknown) => response.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
  const open = () => {
    if (!response.headersSent) response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  };
  try {
    const outcome = await turn(body, cancelled, (text) => {
      open();
      event('delta', { text });
    });
    open();
    event('done', outcome);
  } catch (error) {
    const { status, body: answer } = failure(error);
    if (!response.headersSent) return void send(response, status, answer);
    event('error', { status, ...answer });
  }
  response.end();
}

async function readJson(request: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

const server = http.createServer(async (request, response) => {
  const url = new URL(request.url ?? '/', 'http://runtime');
  if (request.method === 'GET' && url.pathname === '/health') return send(response, 200, { ok: true, agentId, type: agentType, instanceId });
  if (!authorized(request)) return send(response, 401, { error: 'unauthorized' });
  try {
    // The supervisor's probe: this runtime answers with the token the service holds, as the instance it expects.
    if (request.method === 'GET' && url.pathname === '/probe') return send(response, 200, { ok: true, instanceId, volumeId: config.id, dailyTokens: budget.status().dailyTokens });
    if (request.method === 'POST' && url.pathname === '/chat') {
      const body = (await readJson(request)) as ChatRequest;
      // The service's connection closing before the answer is written: it stopped waiting (a shutdown, a crash).
      const cancelled = new AbortController();
      response.once('close', () => {
        if (!response.writableEnded) cancelled.abort();
      });
      if ((request.headers.accept ?? '').includes('text/event-stream')) return await streamTurn(body, response, cancelled.signal);
      return send(response, 200, await turn(body, cancelled.signal));
    }
    if (request.method === 'GET' && url.pathname === '/budget') return send(response, 200, budget.status());
    if (request.method === 'PUT' && url.pathname === '/budget') {
      budget.dailyTokens = ((await readJson(request)) as { dailyTokens: number }).dailyTokens;
      return send(response, 200, budget.status());
    }
    return send(response, 404, { error: 'not found' });
  } catch (error) {
    const { status, body } = failure(error);
    return send(response, status, body);
  }
});

server.listen(port, host, () => {
  const { port: bound } = server.address() as { port: number };
  console.log(`agent runtime listening http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${bound}`);
});

const stop = () => server.close(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
// Started by a local provider: its IPC channel closes when the service dies; end with it.
if (process.connected) process.once('disconnect', () => process.exit(0));
