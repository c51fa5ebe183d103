// Chat overhead: POST /agents/{id}/chat on a running Tollgate (the compiled build, every role, PGlite in its
// data dir) beside the same chat sent straight to the model provider. The provider is a stand-in of OpenAI's
// chat completions in this process, answering at once, so the difference is what Tollgate adds: the identity
// token check, the agent and key lookups, unsealing the key, the hop to the agent's runtime process, the
// runtime's history file and its call to the provider. Target: median overhead ≤ 15 ms.
// Sequential requests (latency, not throughput); each chat in a new session, so every call does the same
// work (a growing history would add to both sides). Rounds alternate which side goes first.
// Run: npx tsx bench/agents/run.ts   (BENCH_ROUNDS 5, BENCH_CHATS 200 per side per round)
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { machine, startProcess, stopProcess } from '../lib.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const chats = Number(process.env.BENCH_CHATS ?? 200);
const API_KEY = 'sk-bench-0123456789abcdef';

const provider = http.createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString()) as { messages: Array<{ content: string }> };
    response.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({ id: 'chatcmpl-b', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: `echo: ${body.messages.at(-1)!.content}` }, finish_reason: 'stop' }], usage: { prompt_tokens: 8, completion_tokens: 3 } }),
    );
  });
});
await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
const providerBase = `http://127.0.0.1:${(provider.address() as AddressInfo).port}/v1`;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-agents-'));
const env = {
  ...process.env,
  TOLLGATE_DATA_DIR: dataDir,
  DATABASE_URL: '',
  LOG_LEVEL: 'warn',
  API_PORT: '0',
  FACILITATOR_PORT: '0',
  RELAY_PORT: '0',
  ASSETS_PORT: '0',
  DEVCHAIN_PORT: '0',
  AGENT_OPENAI_BASE_URL: providerBase,
};
const cli = (...args: string[]) => {
  const result = spawnSync(process.execPath, [path.join(root, 'bin/tollgate.js'), ...args], { env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`tollgate ${args.join(' ')}: ${result.stderr}`);
  return result.stdout.trim();
};
const server = await startProcess(process.execPath, [path.join(root, 'bin/tollgate.js'), 'serve'], env, /^api\s+(http:\/\/\S+)$/m);
const api = server.match[1]!;

async function json(method: string, url: string, token: string, body?: unknown) {
  const response = await fetch(url, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const parsed = (await response.json()) as any;
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;

try {
  cli('credits', 'grant', '--sub', 'bench', '--cents', '1000');
  const token = cli('dev', 'token', '--sub', 'bench');
  const agentId = (await json('POST', `${api}/agents`, token, { name: 'bench', type: 'runtime_a' })).data.agent.id as string;
  for (let i = 0; (await json('GET', `${api}/agents`, token)).data[0].status !== 'running'; i += 1) {
    if (i > 300) throw new Error('the agent was not deployed');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await json('PUT', `${api}/agents/${agentId}/providers`, token, { provider: 'openai', apiKey: API_KEY });

  let session = 0;
  const viaTollgate = async () => {
    const started = performance.now();
    await json('POST', `${api}/agents/${agentId}/chat`, token, { session: `s${(session += 1)}`, messages: [{ role: 'user', content: 'ping' }] });
    return performance.now() - started;
  };
  const direct = async () => {
    const started = performance.now();
    await json('POST', `${providerBase}/chat/completions`, API_KEY, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ping' }], max_tokens: 1024 });
    return performance.now() - started;
  };
  const measure = async (fn: () => Promise<number>, n: number) => {
    const times: number[] = [];
    for (let i = 0; i < n; i += 1) times.push(await fn());
    return times;
  };
  await measure(viaTollgate, 50);
  await measure(direct, 50);

  console.log(`machine: ${machine()}; ${rounds} rounds × ${chats} sequential chats per side`);
  const overheads: number[] = [];
  for (let round = 1; round <= rounds; round += 1) {
    const order = round % 2 ? [direct, viaTollgate] : [viaTollgate, direct];
    const [first, second] = [await measure(order[0]!, chats), await measure(order[1]!, chats)];
    const [directTimes, tollgateTimes] = round % 2 ? [first, second] : [second, first];
    const overhead = median(tollgateTimes) - median(directTimes);
    overheads.push(overhead);
    console.log(
      `round ${round}: direct p50 ${median(directTimes).toFixed(2)} ms p99 ${percentile(directTimes, 0.99).toFixed(2)} ms; ` +
        `via Tollgate p50 ${median(tollgateTimes).toFixed(2)} ms p99 ${percentile(tollgateTimes, 0.99).toFixed(2)} ms; overhead ${overhead.toFixed(2)} ms`,
    );
  }
  const m = median(overheads);
  console.log(`median overhead ${m.toFixed(2)} ms (rounds ${Math.min(...overheads).toFixed(2)}–${Math.max(...overheads).toFixed(2)} ms), target ≤ 15 ms: ${m <= 15 ? 'PASS' : 'MISS'}`);
} finally {
  await stopProcess(server.child);
  provider.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
