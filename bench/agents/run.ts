// Chat overhead: POST /agents/{id}/chat on a running Tollgate (the compiled build, every role, PGlite in its
// data dir) beside the same chat sent straight to the model provider. The provider is a stand-in of OpenAI's
// chat completions in this process, answering at once, so the difference is what Tollgate adds: the identity
// token check, the agent, key, instance and session reads, unsealing the key, the hop to the agent's runtime
// process and its budget, and storing the turn. Targets: median overhead ≤ 15 ms (JSON); streamed, the time
// to the first delta over a direct streamed call ≤ 20 ms.
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
    const body = JSON.parse(Buffer.concat(chunks).toString()) as { messages: Array<{ content: string }>; stream?: boolean };
    if (body.stream) {
      // OpenAI's stream: the first word at once, then the rest, the usage chunk and [DONE].
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta: object, extra: object = {}) => response.write(`data: ${JSON.stringify({ id: 'chatcmpl-b', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`);
      chunk({ role: 'assistant', content: 'echo: ' });
      chunk({ content: body.messages.at(-1)!.content });
      response.write(`data: ${JSON.stringify({ id: 'chatcmpl-b', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 8, completion_tokens: 3 } })}\n\n`);
      return void response.end('data: [DONE]\n\n');
    }
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
const server = await startProcess(process.execPath, [path.join(root, 'bin/tollgate.js'), 'serve'], env, /^api\s+(http:\/\/\S+)$/m, 'stderr');
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
  /** Milliseconds until the stream's first text arrives (`marker` in a chunk); the rest is drained. */
  const firstDelta = async (url: string, bearer: string, body: unknown, marker: string) => {
    const started = performance.now();
    const response = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify(body) });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let seen = '';
    let at = 0;
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      seen += decoder.decode(read.value, { stream: true });
      if (!at && seen.includes(marker)) at = performance.now() - started;
    }
    if (!at) throw new Error(`no ${marker} in ${url}'s stream: ${seen.slice(0, 300)}`);
    return at;
  };
  const streamedViaTollgate = () => firstDelta(`${api}/agents/${agentId}/chat`, token, { session: `s${(session += 1)}`, messages: [{ role: 'user', content: 'ping' }] }, 'event: delta');
  const streamedDirect = () =>
    firstDelta(`${providerBase}/chat/completions`, API_KEY, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ping' }], max_tokens: 1024, stream: true, stream_options: { include_usage: true } }, '"content":"echo: "');
  const measure = async (fn: () => Promise<number>, n: number) => {
    const times: number[] = [];
    for (let i = 0; i < n; i += 1) times.push(await fn());
    return times;
  };
  await measure(viaTollgate, 50);
  await measure(direct, 50);
  await measure(streamedViaTollgate, 50);
  await measure(streamedDirect, 50);

  console.log(`machine: ${machine()}; ${rounds} rounds × ${chats} sequential chats per side`);
  const compare = async (label: string, directSide: () => Promise<number>, tollgateSide: () => Promise<number>, target: number) => {
    const overheads: number[] = [];
    for (let round = 1; round <= rounds; round += 1) {
      const order = round % 2 ? [directSide, tollgateSide] : [tollgateSide, directSide];
      const [first, second] = [await measure(order[0]!, chats), await measure(order[1]!, chats)];
      const [directTimes, tollgateTimes] = round % 2 ? [first, second] : [second, first];
      const overhead = median(tollgateTimes) - median(directTimes);
      overheads.push(overhead);
      console.log(
        `${label} round ${round}: direct p50 ${median(directTimes).toFixed(2)} ms p99 ${percentile(directTimes, 0.99).toFixed(2)} ms; ` +
          `via Tollgate p50 ${median(tollgateTimes).toFixed(2)} ms p99 ${percentile(tollgateTimes, 0.99).toFixed(2)} ms; overhead ${overhead.toFixed(2)} ms`,
      );
    }
    const m = median(overheads);
    console.log(`${label}: median overhead ${m.toFixed(2)} ms (rounds ${Math.min(...overheads).toFixed(2)}–${Math.max(...overheads).toFixed(2)} ms), target ≤ ${target} ms: ${m <= target ? 'PASS' : 'MISS'}`);
  };
  await compare('json', direct, viaTollgate, 15);
  await compare('stream, time to first delta', streamedDirect, streamedViaTollgate, 20);
} finally {
  await stopProcess(server.child);
  provider.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
