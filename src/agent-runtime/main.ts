// The agent runtime: one process per hosted agent, with its own port and data directory (its volume).
// Started by a runtime provider (src/modules/agents/local-provider.ts runs it on this machine); it
// imports nothing from the service. Every route but /health needs the bearer token it was started with.
//   AGENT_ID, AGENT_TYPE, INSTANCE_ID, AGENT_RUNTIME_TOKEN, AGENT_RUNTIME_DATA_DIR, AGENT_RUNTIME_PORT (0: any),
//   AGENT_DAILY_TOKEN_BUDGET, AGENT_SERVICE_URL (runtime_b: where its tool pays)
import { timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { TokenBudget } from './budget.js';
import { converse, ProviderError, type ChatMessage, type ProviderCall, type Tool } from './models.js';
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
const budget = new TokenBudget(dataDir, Number(env('AGENT_DAILY_TOKEN_BUDGET')));
// runtime_a is a chat assistant; runtime_b also has a tool: paying for x402 resources from its own wallet.
const tools: Tool[] = agentType === 'runtime_b' ? [payAndCallTool(env('AGENT_SERVICE_URL'), agentId, token.toString())] : [];

/** Today's token budget is spent: no model call until the UTC day turns. */
class BudgetExhausted extends Error {}

interface RuntimeConfig {
  id: string;
  instanceId: string;
  createdAt: string;
  updatedAt: string;
  models: string[] | null;
  botSettings: Record<string, unknown> | null;
}

/** The runtime's configuration lives on its volume: a redeploy on the same volume keeps it (and its id). */
function loadConfig(): RuntimeConfig {
  const file = path.join(dataDir, 'config.json');
  const now = new Date().toISOString();
  const existing = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as RuntimeConfig) : null;
  const config: RuntimeConfig = existing
    ? { ...existing, instanceId, updatedAt: existing.instanceId === instanceId ? existing.updatedAt : now }
    : { id: crypto.randomUUID(), instanceId, createdAt: now, updatedAt: now, models: null, botSettings: null };
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

/** Each session's history is one JSON file on the volume, named by the session's hex (any 1–100 chars are safe). */
const sessionFile = (session: string) => path.join(dataDir, 'sessions', `${Buffer.from(session).toString('hex')}.json`);

function history(session: string): ChatMessage[] {
  const file = sessionFile(session);
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as ChatMessage[]) : [];
}

function saveHistory(session: string, messages: ChatMessage[]): void {
  const file = sessionFile(session);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(messages));
  fs.renameSync(`${file}.tmp`, file);
}

// One chat at a time per session: the history is read, extended and written as a whole.
const sessionQueues = new Map<string, Promise<unknown>>();
function inSession<T>(session: string, fn: () => Promise<T>): Promise<T> {
  const run = (sessionQueues.get(session) ?? Promise.resolve()).then(fn, fn);
  sessionQueues.set(session, run.catch(() => undefined));
  return run;
}

/** The service sends the conversation's new messages and the provider to use; the history is the runtime's. */
async function chat(body: { session: string; messages: ChatMessage[]; provider: ProviderCall }) {
  return inSession(body.session, async () => {
    const messages = [...history(body.session), ...body.messages];
    const reply = await converse(body.provider, messages, tools, (call) => budget.spend(call));
    if (!reply) throw new BudgetExhausted();
    const message: ChatMessage = { role: 'assistant', content: reply.text };
    saveHistory(body.session, [...messages, message]);
    return { message, raw: reply.raw, text: reply.text };
  });
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
    if (request.method === 'GET' && url.pathname === '/config') return send(response, 200, config);
    if (request.method === 'GET' && url.pathname === '/history') return send(response, 200, { messages: history(url.searchParams.get('session') ?? 'main'), raw: null });
    if (request.method === 'POST' && url.pathname === '/chat') return send(response, 200, await chat((await readJson(request)) as Parameters<typeof chat>[0]));
    if (request.method === 'GET' && url.pathname === '/budget') return send(response, 200, budget.status());
    if (request.method === 'PUT' && url.pathname === '/budget') {
      budget.dailyTokens = ((await readJson(request)) as { dailyTokens: number }).dailyTokens;
      return send(response, 200, budget.status());
    }
    return send(response, 404, { error: 'not found' });
  } catch (error) {
    if (error instanceof ProviderError) return send(response, 502, { error: error.message, providerStatus: error.status });
    if (error instanceof BudgetExhausted) return send(response, 429, { error: "today's token budget is spent", ...budget.status() });
    return send(response, 500, { error: (error as Error).message });
  }
});

server.listen(port, '127.0.0.1', () => {
  const { port: bound } = server.address() as { port: number };
  console.log(`agent runtime listening http://127.0.0.1:${bound}`);
});

const stop = () => server.close(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
// Started by a local provider: its IPC channel closes when the service dies; end with it.
if (process.connected) process.once('disconnect', () => process.exit(0));
